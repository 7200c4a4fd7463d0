"""The backend column of the primitive matrix: every ELEMENTWISE and REDUCE primitive and every
LAYOUT primitive the backend reads through an index map, a piecewise or a dynamic map
(bit-exact), on every case of its test spec (shapes incl. size-0 and size-1 axes, dtypes, special values), compiled by
the native backend and compared with the reference backend (the primitive's NumPy meaning):
bit-exact for integer, bitwise, comparison and selection ops, within a few ulp for the math.
The cases of one primitive compile as one program (one C compile per primitive)."""

import zlib

import numpy as np
import pytest

import morphax
from morphax._src.compiler.backends import get_backend
from morphax._src.compiler.compile import _optimize
from morphax._src.core import dtypes
from morphax._src.core.primitive import Kind, registry

C = get_backend("c")
pytestmark = pytest.mark.skipif(not C.available(), reason="no working C compiler")

# Ops computed by the C library (later our own math functions): compared within MATH_ULP.
MATH_OPS = {
    "exp", "exp2", "expm1", "log", "log1p", "tanh", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "cbrt", "atan2", "pow", "logistic",
    "rsqrt", "integer_pow", "reduce_sum", "reduce_prod", "div", "erf_inv",
}  # fmt: skip
MATH_ULP = 4
# SciPy's float64 gammaln and psi (the references) are themselves off by up to ~26 ulp near their
# minimum and zeros (checked with mpmath; mathlib.h's versions are within 4.4 ulp there).
SPECIAL_OPS = {"lgamma": 64, "digamma": 64}


def _prims():
    out = []
    for name, prim in sorted(registry.items()):
        fused_layout = prim.kind is Kind.LAYOUT and (
            prim.index_map or prim.piecewise_map or prim.dynamic_index_map
        )
        if (
            (prim.kind in (Kind.ELEMENTWISE, Kind.REDUCE) or fused_layout)
            and prim.test_spec is not None
            and not prim.higher_order
        ):
            out.append(pytest.param(prim, id=name))
    return out


def _spec_cases(prim):
    rng = np.random.default_rng(zlib.crc32(prim.name.encode()))
    with np.errstate(all="ignore"):  # specials like 1e6 overflow float16 on purpose
        return list(prim.test_spec.cases(rng))


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in units in the last place between float arrays of one dtype (NaN==NaN: 0)."""
    itype = {4: np.int32, 8: np.int64, 2: np.int16}[a.dtype.itemsize]
    lowest = np.iinfo(itype).min
    ia, ib = a.view(itype), b.view(itype)
    # Map the sign-magnitude bit patterns onto a monotonic integer line (no overflow: for a
    # negative pattern, lowest - pattern lies in (lowest, 0]); distances in float64.
    ia = np.where(ia < 0, lowest - ia, ia).astype(np.float64)
    ib = np.where(ib < 0, lowest - ib, ib).astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    return np.where(both_nan, 0, np.abs(ia - ib))


def _check(op, got, want, where):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, where
    floating = got.dtype.kind == "f" or got.dtype in (dtypes.bfloat16,)
    if floating and (op in MATH_OPS or op in SPECIAL_OPS) and got.size:
        assert (np.isnan(got) == np.isnan(want)).all(), f"{where}: NaN positions differ"
        worst = int(_ulp_distance(got, want).max())
        tol = SPECIAL_OPS.get(op, MATH_ULP) if op not in ("reduce_sum", "reduce_prod") else 1 << 12
        assert worst <= tol, f"{where}: {worst} ulp (allowed {tol})"
    elif floating or got.dtype.kind == "c":
        np.testing.assert_array_equal(got, want, err_msg=where)  # NaN == NaN here
        assert (np.signbit(got.real) == np.signbit(want.real)).all(), f"{where}: signs of zeros differ"
    else:
        np.testing.assert_array_equal(got, want, err_msg=where)


def _run_all_cases(prim, cases):
    params = [c.params for c in cases]
    sizes = [len(c.args) for c in cases]
    flat = [a for c in cases for a in c.args]

    def f(*args):
        outs, k = [], 0
        for p, n in zip(params, sizes):
            out = prim.bind(*args[k : k + n], **p)
            outs.append(list(out) if prim.multiple_results else [out])
            k += n
        return outs

    native = morphax.jit(f, backend="c").lower(*flat).compile()
    ref = morphax.jit(f, backend="numpy")(*flat)
    return native, native(*flat), ref


def _compare_all_cases(prim, cases):
    """Every case of `prim` on the native backend against the reference (`_check`)."""
    _, got, want = _run_all_cases(prim, cases)
    for case, g_outs, w_outs in zip(cases, got, want):
        for g, w in zip(g_outs, w_outs):
            _check(prim.kernel_op, g, w, f"{prim.name}[{case.name}]")


@pytest.mark.parametrize("prim", _prims())
def test_native_backend_matches_the_reference(prim):
    cases = _spec_cases(prim)
    if not cases:
        pytest.skip("no cases")
    _compare_all_cases(prim, cases)


@pytest.mark.parametrize("prim", _prims())
def test_supported_cases_are_fused(prim):
    # Every case the backend claims to support is lowered to a kernel, not left opaque.
    cases = _spec_cases(prim)
    claimed = 0
    for case in cases:
        jaxpr = morphax.make_jaxpr(lambda *a, case=case: prim.bind(*a, **case.params))(*case.args)
        optimized = _optimize(jaxpr)  # what the compiler sees (constant folding may remove it)
        eqns = [e for e in optimized.jaxpr.eqns if e.primitive is prim]
        claimed += sum(C.caps.supports(e) for e in eqns)
    if not claimed:
        pytest.skip(f"the native backend fuses no case of {prim.name} (runs its reference)")
    native, _, _ = _run_all_cases(prim, cases)
    assert native.num_kernels >= 1


def _widened(case):
    """`case` with float32 operands as float64 and int32 as int64 (its x64 twin)."""
    wide = {np.dtype(np.float32): np.float64, np.dtype(np.int32): np.int64, np.dtype(np.uint32): np.uint64}
    args = tuple(
        a.astype(wide[a.dtype]) if isinstance(a, np.ndarray) and a.dtype in wide else a for a in case.args
    )
    return type(case)(args, case.params, case.name + "-x64")


@pytest.mark.parametrize("prim", _prims())
def test_native_backend_matches_the_reference_with_x64(prim):
    # The same cases in 64-bit types (double math functions, int64 wrapping), with x64 on.
    with morphax.enable_x64(True):
        cases = []
        for case in _spec_cases(prim):
            wide = _widened(case)
            try:
                morphax.eval_shape(lambda *a, p=wide.params: prim.bind(*a, **p), *wide.args)
            except (TypeError, ValueError):
                continue  # a case whose params name 32-bit types (e.g. a new_dtype) stays x32-only
            cases.append(wide)
        if not cases:
            pytest.skip("no 64-bit cases")
        _compare_all_cases(prim, cases)
