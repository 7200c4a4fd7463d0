"""Gather and the scatter family as C loops (backends/c/indexing.py, the C backend's `opaque`
hook): every case of the primitives' test specs compared bit for bit with their NumPy references,
edge cases of the index conversion and of min/max/add rounding, and the training patterns
(embedding lookups and their gradients, take_along_axis, x.at[i] updates in every mode, integer
label cross-entropy) through jit on the C backend against the NumPy backend."""

import zlib

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.compiler.backends import get_backend
from morphax._src.compiler.backends.c import indexing
from morphax._src.core import dtypes
from morphax._src.core.primitive import Kind, registry
from morphax._src.prims.gather_scatter_add import gather_p, scatter_add_p
from morphax._src.prims.gather_scatter_dims import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
)
from morphax._src.prims.scatter import scatter_max_p, scatter_min_p, scatter_mul_p, scatter_p

C = get_backend("c")
pytestmark = pytest.mark.skipif(not C.available(), reason="no working C compiler")

SCATTERS = (scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p)


def _eqn(prim, args, params):
    jaxpr = morphax.make_jaxpr(lambda *a: prim.bind(*a, **params))(*args)
    (eqn,) = [e for e in jaxpr.jaxpr.eqns if e.primitive is prim]
    return eqn


def _same(got, want, where):
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, where
    if got.dtype.kind in "fc" or got.dtype == dtypes.bfloat16:
        nan = np.isnan(got) & np.isnan(want)  # NaN payloads: any NaN where the reference has one
        n = got.dtype.itemsize
        same = (
            got.view(np.uint8).reshape(got.shape + (n,)) == want.view(np.uint8).reshape(want.shape + (n,))
        ).all(-1)
        bad = ~(same | nan)
        assert not bad.any(), f"{where}: differs at {np.argwhere(bad)[:5].tolist()}:\n{got}\n{want}"
    else:
        np.testing.assert_array_equal(got, want, err_msg=where)


def _native_vs_reference(prim, args, params, where):
    """Run the hook's callable and the reference on `args`; False when the hook declined."""
    eqn = _eqn(prim, args, params)
    fn = C.opaque(eqn)
    if fn is None:
        return False
    # What the program would hold (without x64, int64 operands are traced as int32).
    args = [np.asarray(a).astype(v.aval.dtype) for a, v in zip(args, eqn.invars)]
    (got,) = fn(*args)
    with np.errstate(all="ignore"):
        want = prim.impl(*args, **params)
    _same(got, want, where)
    return True


# ------------------------------------------------------------------------ the test specs


@pytest.mark.parametrize("prim", (gather_p, *SCATTERS), ids=lambda p: p.name)
def test_spec_cases_match_the_reference_bit_for_bit(prim):
    rng = np.random.default_rng(zlib.crc32(prim.name.encode()))
    with np.errstate(all="ignore"):
        cases = list(prim.test_spec.cases(rng))
    supported = 0
    for case in cases:
        if _native_vs_reference(prim, case.args, case.params, f"{prim.name}[{case.name}]"):
            supported += 1
        else:  # only what the module documents as unsupported falls back
            assert prim is scatter_mul_p and np.asarray(case.args[0]).dtype.kind == "c", case.name
    assert supported >= len(cases) * 0.8


def test_other_scatter_kind_primitives_are_not_taken():
    # dynamic_update_slice is a SCATTER-kind layout op: not this hook's.
    (dus,) = [p for p in registry.values() if p.kind is Kind.SCATTER and p not in SCATTERS]
    case = dus.test_spec.cases(np.random.default_rng(0))[0]
    assert C.opaque(_eqn(dus, case.args, case.params)) is None


# --------------------------------------------------------------------------- edge cases


def _gdn(offset, collapsed, start_map, obatch=(), ibatch=()):
    return GatherDimensionNumbers(offset, collapsed, start_map, obatch, ibatch)


def _scatter_params(dimension_numbers, mode):
    """A scatter's params: no update computation, indices neither sorted nor unique."""
    return dict(
        dimension_numbers=dimension_numbers,
        indices_are_sorted=False,
        unique_indices=False,
        mode=mode,
        update_jaxpr=None,
        update_consts=(),
    )


def _sdn(window, inserted, to_operand, obatch=(), ibatch=()):
    return ScatterDimensionNumbers(window, inserted, to_operand, obatch, ibatch)


def _extreme_indices(idx_dtype, n):
    info = np.iinfo(idx_dtype)
    vals = [
        0,
        1,
        2,
        3,
        4,
        5,
        6,
        info.max,
        info.max - 1,
        info.min,
        info.min + 1,
        -1,
        -2,
        2**31,
        2**32 + 1,
        2**63,
    ]
    vals = [v for v in vals if info.min <= v <= info.max]
    return np.array([vals[k % len(vals)] for k in range(n)], idx_dtype).reshape(n, 1)


INDEX_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
MODES = (GatherScatterMode.FILL_OR_DROP, GatherScatterMode.CLIP, GatherScatterMode.PROMISE_IN_BOUNDS)


@pytest.fixture
def x64():
    with morphax.enable_x64():
        yield


@pytest.mark.parametrize("idx_dtype", INDEX_DTYPES)
def test_extreme_indices_clamp_fill_and_drop_as_the_reference(idx_dtype, x64):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    idx = _extreme_indices(np.dtype(idx_dtype), 24)
    for mode in MODES:
        params = dict(
            dimension_numbers=_gdn((1,), (0,), (0,)),
            slice_sizes=(1, 3),
            indices_are_sorted=False,
            unique_indices=False,
            mode=mode,
            fill_value=-1.5 if mode == GatherScatterMode.FILL_OR_DROP else None,
        )
        assert _native_vs_reference(gather_p, (x, idx), params, f"gather {idx_dtype} {mode}")
        # A window of 2 rows: the start bound is 3, not 4.
        params = dict(params, dimension_numbers=_gdn((1, 2), (), (0,)), slice_sizes=(2, 3))
        assert _native_vs_reference(gather_p, (x, idx), params, f"gather-window {idx_dtype} {mode}")
        u = rng.standard_normal((24, 3)).astype(np.float32)
        for prim in SCATTERS:
            sparams = _scatter_params(_sdn((1,), (0,), (0,)), mode)
            assert _native_vs_reference(prim, (x, idx, u), sparams, f"{prim.name} {idx_dtype} {mode}")
            u2 = rng.standard_normal((24, 2, 3)).astype(np.float32)
            sparams = dict(sparams, dimension_numbers=_sdn((1, 2), (), (0,)))
            assert _native_vs_reference(prim, (x, idx, u2), sparams, f"{prim.name}-window {idx_dtype} {mode}")


def _specials(dtype, shape, rng):
    vals = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, -1.0, 1e-3, 65504.0, 3.0, 0.1])
    with np.errstate(all="ignore"):
        return rng.choice(vals, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", ("float32", "float64", "float16", "bfloat16"))
def test_float_scatters_on_special_values_and_many_duplicates(dtype):
    dt = np.dtype(getattr(dtypes, dtype, None) or dtype)
    rng = np.random.default_rng(1)
    params = _scatter_params(_sdn((), (0,), (0,)), GatherScatterMode.FILL_OR_DROP)
    idx = rng.integers(-1, 9, size=(400, 1)).astype(np.int32)  # ~50 updates per position
    for values in ("specials", "random"):
        if values == "specials":
            x, u = _specials(dt, (8,), rng), _specials(dt, (400,), rng)
        else:
            x = rng.standard_normal(8).astype(dt)
            u = (rng.standard_normal(400) * 10.0 ** rng.integers(-3, 3, 400)).astype(dt)
        for prim in SCATTERS:
            assert _native_vs_reference(prim, (x, idx, u), params, f"{prim.name} {dtype} {values}")


@pytest.mark.parametrize(
    "dtype", ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool")
)
def test_integer_scatters_wrap_as_the_reference(dtype, x64):
    rng = np.random.default_rng(2)
    params = _scatter_params(_sdn((), (0,), (0,)), GatherScatterMode.CLIP)
    if dtype == "bool":
        x, u = rng.integers(0, 2, 6).astype(bool), rng.integers(0, 2, 300).astype(bool)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, 6, endpoint=True, dtype=dtype)
        u = rng.integers(info.min, info.max, 300, endpoint=True, dtype=dtype)
    idx = rng.integers(-2, 8, size=(300, 1)).astype(np.int64)
    for prim in SCATTERS:
        assert _native_vs_reference(prim, (x, idx, u), params, f"{prim.name} {dtype}")


def test_batched_dimension_numbers_from_vmap():
    # vmap turns these into operand_batching_dims / window axes in front of batch axes.
    rng = np.random.default_rng(3)
    tables = rng.standard_normal((3, 7, 4)).astype(np.float32)
    ids = rng.integers(-3, 10, size=(3, 5)).astype(np.int32)
    ups = rng.standard_normal((3, 5, 4)).astype(np.float32)

    def per_example(t, i, u):
        return t[i], t.at[i].add(u), t.at[i].set(u), t.at[i].max(u), t.at[i].get(mode="fill", fill_value=2.0)

    for axes in ((0, 0, 0), (0, None, None), (None, 0, 0), (1, 1, 0)):
        args = [
            a if ax in (None, 0) else np.moveaxis(a, 0, ax).copy() for a, ax in zip((tables, ids, ups), axes)
        ]
        args = [a[0] if ax is None else a for a, ax in zip(args, axes)]
        f = morphax.vmap(per_example, in_axes=axes)
        got = morphax.jit(f, backend="c")(*args)
        want = morphax.jit(f, backend="numpy")(*args)
        for g, w in zip(got, want):
            _same(g, w, f"vmap {axes}")


def test_unsupported_equations_fall_back():
    x = np.zeros(4, np.complex64)
    idx = np.zeros((2, 1), np.int32)
    params = _scatter_params(_sdn((), (0,), (0,)), GatherScatterMode.FILL_OR_DROP)
    assert C.opaque(_eqn(scatter_mul_p, (x, idx, np.ones(2, np.complex64)), params)) is None
    assert C.opaque(_eqn(lax.sin_p, (np.ones(3, np.float32),), {"accuracy": None})) is None


# ------------------------------------------------------------------- training patterns


def _c_and_numpy(f, *args, expect_native=True):
    """f jitted on the C backend and on the NumPy backend; asserts the hook ran on the C side."""
    compiled = morphax.jit(f, backend="c").lower(*args).compile()
    before = indexing.stats["calls"]
    got = morphax.tree_util.tree_map(np.asarray, compiled(*args))  # waits for the result
    if expect_native:
        assert indexing.stats["calls"] > before, "the native gather/scatter did not run"
        assert "_native_" in compiled.as_text()
    want = morphax.jit(f, backend="numpy")(*args)
    return got, want


def _tree_same(got, want, where):
    g_leaves, w_leaves = morphax.tree_util.tree_leaves(got), morphax.tree_util.tree_leaves(want)
    assert len(g_leaves) == len(w_leaves)
    for g, w in zip(g_leaves, w_leaves):
        _same(g, w, where)


def test_embedding_lookup_and_its_gradient():
    rng = np.random.default_rng(4)
    table = rng.standard_normal((1000, 64)).astype(np.float32)
    ids = rng.integers(0, 1000, size=(32, 16)).astype(np.int32)
    ids[0, :4] = 7  # repeated ids accumulate in the gradient

    w = rng.standard_normal((32, 16, 64)).astype(np.float32)

    def loss(t, i, w):
        # d/dt is the scatter-add of w: exact, so compared bit for bit (the value's reduction
        # order is the fused kernel's, compared within rounding).
        return jnp.sum(t[i] * w)

    got, want = _c_and_numpy(lambda t, i: t[i], table, ids)
    _tree_same(got, want, "lookup")
    got, want = _c_and_numpy(morphax.value_and_grad(loss), table, ids, w)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    _same(got[1], want[1], "lookup grad")


def test_take_along_axis():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 100)).astype(np.float32)
    idx = rng.integers(0, 100, size=(64, 3)).astype(np.int32)
    got, want = _c_and_numpy(lambda x, i: jnp.take_along_axis(x, i, axis=1), x, idx)
    _tree_same(got, want, "take_along_axis")
    rows = rng.integers(0, 64, size=(5, 100)).astype(np.int32)
    got, want = _c_and_numpy(lambda x, i: jnp.take_along_axis(x, i, axis=0), x, rows)
    _tree_same(got, want, "take_along_axis axis 0")


def test_at_updates_with_repeated_indices():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((10, 3)).astype(np.float32)
    i = np.array([1, 3, 1, 1, 9, 0, 3], np.int32)
    v = rng.standard_normal((7, 3)).astype(np.float32)
    for name, f in {
        "add": lambda x, i, v: x.at[i].add(v),
        "set": lambda x, i, v: x.at[i].set(v),
        "mul": lambda x, i, v: x.at[i].multiply(v),
        "min": lambda x, i, v: x.at[i].min(v),
        "max": lambda x, i, v: x.at[i].max(v),
        "add-scalar": lambda x, i, v: x.at[i, 1].add(2.5),
    }.items():
        got, want = _c_and_numpy(f, x, i, v)
        _tree_same(got, want, name)


@pytest.mark.parametrize("mode", ("fill", "clip", "drop", "promise_in_bounds", None))
def test_out_of_bound_indices_in_every_mode(mode):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    i = np.array([0, 5, 6, 100, -1, -6, -7, -1000, 2**31 - 1, -(2**31)], np.int32)
    v = rng.standard_normal((10, 4)).astype(np.float32)
    if mode != "promise_in_bounds":
        extra = {"fill_value": -3.0} if mode == "fill" else {}
        got, want = _c_and_numpy(lambda x, i: x.at[i].get(mode=mode, **extra), x, i)
        _tree_same(got, want, f"get {mode}")
    got, want = _c_and_numpy(lambda x, i, v: x.at[i].add(v, mode=mode), x, i, v)
    _tree_same(got, want, f"add {mode}")
    got, want = _c_and_numpy(lambda x, i, v: x.at[i].set(v, mode=mode), x, i, v)
    _tree_same(got, want, f"set {mode}")
    u = np.array([2**40, 2**63 + 5, 3, 7], np.uint64)
    with morphax.enable_x64():
        got, want = _c_and_numpy(lambda x, u: x.at[u].get(mode=mode or "fill", fill_value=9.0), x, u)
    _tree_same(got, want, f"uint64 get {mode}")


def test_integer_label_cross_entropy_value_and_grad():
    rng = np.random.default_rng(8)
    logits = rng.standard_normal((4096, 1000)).astype(np.float32)
    labels = rng.integers(0, 1000, size=4096).astype(np.int32)

    def loss(logits, labels):
        lse = morphax.nn.logsumexp(logits, axis=1)
        picked = jnp.take_along_axis(logits, labels[:, None], axis=1)[:, 0]
        return jnp.mean(lse - picked)

    got, want = _c_and_numpy(morphax.value_and_grad(loss), logits, labels)
    # The fused kernels (logsumexp) may differ from NumPy by an ulp; the gather/scatter are exact.
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), rtol=1e-5, atol=1e-10)


def test_one_hot_and_onehot_gradient():
    rng = np.random.default_rng(9)
    labels = rng.integers(0, 10, size=50).astype(np.int32)
    w = rng.standard_normal((10, 5)).astype(np.float32)

    def f(w, labels):
        return jnp.sum(morphax.nn.one_hot(labels, 10) @ w) + jnp.sum(w[labels] ** 2)

    got, want = _c_and_numpy(morphax.value_and_grad(f), w, labels)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-6)
    _same(got[1], want[1], "one_hot grad")


def test_complex64_and_complex128_scatter_adds_get_their_own_kernels():
    # The native kernels are cached by name: complex64 and complex128 scatter-adds once shared
    # one (the first built), so the second dtype was added with the other's element width.
    dnums = lax.ScatterDimensionNumbers(
        update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    idx = np.array([[1], [1], [3]], np.int32)  # int32 in both modes: only the width differs
    add = morphax.jit(lambda x, u: lax.scatter_add(x, idx, u, dnums))
    for dt in (np.complex64, np.complex128):
        with morphax.enable_x64(dt == np.complex128):
            x = np.arange(5).astype(dt) * (1 + 2j)
            u = np.array([1 + 1j, 2 - 1j, -3j], dt)
            want = x.copy()
            np.add.at(want, [1, 1, 3], u)
            got = add(x, u)
            assert got.dtype == dt
            np.testing.assert_array_equal(np.asarray(got), want)
