"""The generated primitive matrix: every registered primitive, over its spec's cases (shapes x
dtypes x special values), evaluated eagerly and through make_jaxpr + check_jaxpr + eval_jaxpr,
compared with its NumPy reference (values, dtype and shape) and with its abstract evaluation."""

from __future__ import annotations

import dataclasses
import zlib

import ml_dtypes
import numpy as np
import pytest

import morphax  # noqa: F401  (registers the catalogue)
from morphax._src.api.tracing import make_jaxpr
from morphax._src.core.avals import get_aval
from morphax._src.core.jaxpr import check_jaxpr, eval_jaxpr
from morphax._src.core.primitive import registry


def _all_cases():
    out = []
    for name in sorted(registry):
        prim = registry[name]
        if prim.test_spec is None:
            continue
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        for case in prim.test_spec.cases(rng):
            out.append(pytest.param(prim, case, id=f"{name}-{case.name}"))
    return out


CASES = _all_cases()


def _reference(prim, case):
    with np.errstate(all="ignore"):
        out = prim.impl(*case.args, **case.params)
    return list(out) if prim.multiple_results else [out]


def _expected_avals(prim, case):
    out = prim.abstract_eval(*[get_aval(a) for a in case.args], **case.params)
    return list(out) if prim.multiple_results else [out]


def _assert_matches(got, want, aval, tol):
    got = np.asarray(got)
    assert got.shape == aval.shape, f"shape {got.shape} != abstract {aval.shape}"
    assert got.dtype == aval.dtype, f"dtype {got.dtype} != abstract {aval.dtype}"
    want = np.asarray(want)
    assert want.shape == aval.shape, f"reference shape {want.shape} != abstract {aval.shape}"
    want = want.astype(aval.dtype)
    if aval.dtype.type.__module__.startswith("ml_dtypes"):
        # NumPy's testing helpers do not understand bfloat16/float8 (nan handling); widen exactly.
        got, want = got.astype(np.float32), want.astype(np.float32)
    if tol:
        np.testing.assert_allclose(
            got.astype(np.float64) if got.dtype.kind != "c" else got, want, rtol=tol, atol=tol
        )
    else:
        np.testing.assert_array_equal(got, want)


def _tol(prim, case):
    spec = prim.test_spec
    if spec.tol is None:
        return 0
    for a in case.args:
        t = spec.tol.get(np.asarray(a).dtype.name)
        if t is not None:
            return t
    return 0


def test_catalogue_has_specs():
    missing = [name for name, p in registry.items() if p.test_spec is None and not p.higher_order]
    assert not missing, f"primitives without a test spec: {missing}"


@pytest.mark.parametrize("prim,case", CASES)
def test_eager(prim, case):
    want = _reference(prim, case)
    avals = _expected_avals(prim, case)
    got = prim.bind(*case.args, **case.params)
    got = list(got) if prim.multiple_results else [got]
    assert len(got) == len(want) == len(avals)
    for g, w, a in zip(got, want, avals):
        assert g.weak_type == a.weak_type
        _assert_matches(g, w, a, _tol(prim, case))


@pytest.mark.parametrize("prim,case", CASES)
def test_staged(prim, case):
    want = _reference(prim, case)
    avals = _expected_avals(prim, case)

    def f(*args):
        return prim.bind(*args, **case.params)

    closed = make_jaxpr(f)(*case.args)
    check_jaxpr(closed.jaxpr)
    assert [e.primitive for e in closed.jaxpr.eqns] == [prim]
    assert [a.shape for a in closed.out_avals] == [a.shape for a in avals]
    got = eval_jaxpr(closed.jaxpr, closed.consts, *case.args)
    for g, w, a in zip(got, want, avals):
        _assert_matches(g, w, a, _tol(prim, case))


def _xla_available():
    from morphax._src.compiler.backends import get_backend

    return get_backend("xla").available()


@pytest.mark.parametrize("prim,case", CASES)
def test_xla(prim, case):
    """The `xla` column: the primitive alone, lowered to StableHLO and run by XLA's CPU plugin
    (skipped without a PJRT plugin, and for primitives that do not lower yet: docs/xla_backend.md
    lists them)."""
    if not _xla_available():
        pytest.skip("no PJRT plugin (pip install --no-deps lammps-jax-pjrt-cpu)")
    if prim.stablehlo is None and prim.call_jaxpr_param is None:
        pytest.skip(f"{prim.name} has no StableHLO lowering yet")
    known = _XLA_SPECIAL_VALUES.get(prim.name)
    if known and any(case.name.startswith(p) for p in known[0]):
        pytest.xfail(known[1])
    on_tpu = _xla_platform() == "tpu"
    if on_tpu:
        differs = _TPU_DIFFERS.get(prim.name)
        if differs and any(case.name.startswith(p) for p in differs[0]):
            pytest.xfail(differs[1])
        if prim.name == "rng_bit_generator" and "DEFAULT" in str(case.params):
            pytest.xfail(
                "RNG_DEFAULT is the TPU's own generator (JAX's bits differ from the CPU's the same way)"
            )
    wants = [_reference(prim, case)]
    if on_tpu:
        wants = _as_the_tpu_computes(prim, case, wants[0])
    avals = _expected_avals(prim, case)

    def f(*args):
        return prim.bind(*args, **case.params)

    got = morphax.jit(f, backend="xla")(*case.args)
    got = list(got) if prim.multiple_results else [got]
    if prim.name == "sort" and not case.params["is_stable"]:
        # Elements equal in every key may come out in either order (the TPU's sort swaps some):
        # compare each row's (keys..., payloads...) tuples as sorted lists.
        got = _tie_order_free(got, case.params["dimension"])
        wants = [_tie_order_free(w, case.params["dimension"]) for w in wants]
    for k, want in enumerate(wants):  # the first expectation that holds
        try:
            for g, w, a in zip(got, want, avals):
                _assert_matches(g, w, a, _xla_tol(prim, case, a))
            return
        except AssertionError:
            if k < len(wants) - 1:
                continue
            if not (on_tpu and prim.name in ("dot_general", "conv_general_dilated")):
                raise
            if avals[0].dtype.kind != "c":
                raise
            _assert_within_gauss_bound(prim, case, got[0], wants[-1][0])


def _assert_within_gauss_bound(prim, case, got, want):
    """A complex dot or convolution on a TPU at the default precision: three real products of
    bfloat16-rounded sums of the parts (Gauss's trick), whose error is relative to the sum of the
    terms' magnitudes, not to the result (the parts of a result cancel where the terms do not).
    Each element within 2^-6 of sum |x| |w| over its terms, the parts' magnitudes added (four
    roundings of 2^-9 and a factor two for the sums), or the test fails."""

    def magnitudes(a):
        a = np.asarray(a)
        return (np.abs(a.real) + np.abs(a.imag)).astype(a.dtype) if a.dtype.kind == "c" else np.abs(a)

    scale = np.abs(
        np.asarray(_reference(prim, dataclasses.replace(case, args=tuple(map(magnitudes, case.args))))[0])
    )
    error = np.abs(np.asarray(got).astype(np.complex128) - np.asarray(want).astype(np.complex128))
    bound = 2.0**-6 * scale + 1e-6
    worst = np.unravel_index(np.argmax(error - bound), error.shape)
    assert np.all(error <= bound), (
        f"{prim.name} on the TPU: |got - want| = {error[worst]:.3g} at {worst} exceeds 2^-6 * "
        f"{scale[worst]:.3g} (got {got[worst]}, want {want[worst]})"
    )


# Special values where the TPU's own arithmetic gives another answer, JAX's included (it lowers
# these primitives to the same StableHLO operations).
_TPU_DIFFERS = {
    **{
        name: (
            ("complex64-specials",),
            f"the TPU's complex {name} gives NaN at infinite or huge parts (XLA's expansion of "
            f"stablehlo.{name} there; JAX lowers to the same operation)",
        )
        for name in ("tanh", "rsqrt")
    },
    "rem": (
        ("float32-specials", "float16-specials", "bfloat16-specials"),
        "the TPU's remainder loses digits for large quotients (rem(1e6, pi) = 2.75, not 2.7562) "
        "and gives NaN for an infinite divisor",
    ),
    "igammac": (
        ("float16-specials", "bfloat16-specials"),
        "igammac(1e6, 1e6) is 10.15 on the TPU (0.49987 on the CPU): the chip's float32 "
        "transcendentals break the continued fraction at huge arguments (see docs/tpu.md)",
    ),
}


def _as_the_tpu_computes(prim, case, want):
    """The results a TPU may give, most likely first, where its arithmetic is not the CPU's."""
    if prim.name == "reduce_precision" and case.params["mantissa_bits"] == 0:
        # With no mantissa bit left to mark a NaN, the TPU rounds NaN to infinity (the CPU keeps
        # NaN; JAX gives each chip's answer).
        x = np.asarray(case.args[0])
        return [[np.where(np.isnan(x), np.copysign(np.inf, x), want[0])]]
    if prim.name == "fma":
        # Not fused on the TPU: a product that overflows is infinite before the addend comes
        # (fma(3e38, 3e38, -inf) is NaN there, -inf when fused).
        a, b, c = (np.asarray(x) for x in case.args)
        with np.errstate(all="ignore"):
            product = (a * b).astype(want[0].dtype)
            unfused = (product + c).astype(want[0].dtype)
        return [[np.where(np.isinf(product), unfused, want[0])]]
    if prim.name in ("dot_general", "conv_general_dilated"):
        rounded = _as_the_mxu_multiplies(prim, case)
        if rounded is not case:
            return [_reference(prim, rounded), want]
    return [want]


def _tie_order_free(operands, dimension):
    """The sort's outputs with the elements of each slice along `dimension` put in lexicographic
    order of all the operands: the same for any order of ties."""
    moved = [np.moveaxis(np.asarray(o), dimension, -1) for o in operands]
    flat = [m.reshape(-1, m.shape[-1]) for m in moved]
    out = [np.empty_like(f) for f in flat]
    for r in range(flat[0].shape[0]):
        order = np.lexsort(
            [f[r].astype(np.float64) if f.dtype.kind != "c" else f[r].real for f in flat[::-1]]
        )
        for o, f in zip(out, flat):
            o[r] = f[r][order]
    return [np.moveaxis(o.reshape(m.shape), -1, dimension) for o, m in zip(out, moved)]


def _as_the_mxu_multiplies(prim, case):
    """The case whose NumPy reference is what a TPU's matrix unit computes: a dot or a convolution
    at the default precision multiplies the operands rounded to bfloat16 (one pass, float32
    accumulation), as JAX's does; `precision=HIGHEST` keeps float32, and so do products XLA
    leaves to the vector unit (an outer product, a vector times a matrix). Modelled exactly, the
    comparison keeps JAX's TPU tolerances."""
    if case.params.get("precision") not in (None, (None, None)):
        return case

    def rounded(a):
        a = np.asarray(a)
        if a.dtype.kind == "c":
            return (rounded(a.real) + 1j * rounded(a.imag)).astype(a.dtype)
        if a.dtype in (np.float32, np.float16):
            return a.astype(ml_dtypes.bfloat16).astype(a.dtype)
        return a

    return dataclasses.replace(case, args=tuple(rounded(a) for a in case.args))


def _xla_tol(prim, case, aval):
    from morphax._src.core.primitive import Kind

    tol = _tol(prim, case)
    # Arithmetic rounds XLA's way (scatter-mul's complex products, the generic reduce's order of
    # combination too); moving data stays exact.
    if _xla_platform() == "tpu" and prim.kind not in (Kind.LAYOUT, Kind.GATHER):
        if prim.name in ("dot_general", "conv_general_dilated") and aval.dtype.kind == "c":
            # Complex products at the default precision: three real bfloat16 products of sums
            # of the parts (Gauss's trick), which the rounding model above does not follow.
            tol = max(tol, _XLA_ULPS["bfloat16"])
        elif aval.dtype.kind == "c":  # x / |x| and the like, rounded the chip's way
            tol = max(tol, _TPU_TOLERANCE["complex64"])
    if prim.kind not in (Kind.LAYOUT, Kind.GATHER) and prim.test_spec.differentiable:
        tol = max(tol, _XLA_ULPS.get(aval.dtype.name, 0))
        if _xla_platform() == "tpu":  # the `tpu` column: JAX's own tests' tolerances on a TPU
            tol = max(tol, _TPU_TOLERANCE.get(aval.dtype.name, 0))
    return tol


# JAX's test_util.default_tolerance() on a TPU: float32 and complex64 loosened to 1e-3 (the
# chip's transcendentals and its bfloat16-pass matmuls), the others as on the CPU.
_TPU_TOLERANCE = {"float32": 1e-3, "complex64": 1e-3, "float16": 1e-3, "bfloat16": 1e-2}


def _xla_platform():
    from morphax._src.compiler.backends import get_backend

    backend = get_backend("xla")
    return backend.platform() if backend._client is not None else None


# Cases whose special values (poles, infinities, NaN parts of complex numbers) XLA defines
# otherwise than the NumPy reference; JAX 0.10.2 on the CPU gives XLA's values, e.g. lgamma(-inf)
# is inf there and -inf in the reference, digamma(0) is -inf there and nan in the reference. The
# reference is what eager morphax computes: docs/xla_backend.md lists these differences.
_XLA_SPECIAL_VALUES = {
    name: (prefixes, "XLA's special values differ from the NumPy reference (JAX gives XLA's)")
    for name, prefixes in {
        "digamma": ("float32-specials", "float16-specials", "bfloat16-specials"),
        "lgamma": ("float32-specials", "float16-specials", "bfloat16-specials"),
        "polygamma": ("float32-specials",),
        "zeta": ("float32-specials", "bfloat16-specials"),
        "exp2": ("complex64-specials",),
        "expm1": ("complex64-specials",),
        "integer_pow": ("complex64-specials",),
        "pow": ("complex64-specials",),
    }.items()
}
# The incomplete gamma family as JAX computes it (its series and continued fraction in float32,
# ported as JAX writes them): igamma(0, x) is NaN there and 1 in the (SciPy) reference, and at
# a = x = 1e6 JAX's float32 result is about 1% off the exact value the reference gives.
_XLA_SPECIAL_VALUES.update(
    {
        name: (prefixes, "JAX's incomplete gamma algorithm differs from SciPy's at these values")
        for name, prefixes in {
            "igamma": ("float32-specials", "float16-specials", "bfloat16-specials"),
            "igammac": ("float32-specials",),
            "igamma_grad_a": ("float32-specials",),
            "random_gamma_grad": ("float32-specials",),
        }.items()
    }
)

# XLA computes floating-point results its own way: its transcendental functions, complex products
# and quotients, summation order and reciprocal of a broadcast divisor differ from NumPy's by a few
# units in the last place. Integer, bool and bit-level results stay exact.
_XLA_ULPS = {
    "float64": 1e-13,
    "complex128": 1e-13,
    "float32": 4e-6,
    "complex64": 4e-6,
    "float16": 4e-3,
    "bfloat16": 3e-2,
}
