"""NumPy indexing and `.at[]` updates compared with NumPy: a table of index expressions (eager and
through make_jaxpr + eval_jaxpr, with the gather count), traced scalar and array indices, JAX's
out-of-bounds policy (reads clamp, updates drop), take / take_along_axis / put_along_axis, a
hypothesis property test, and the error messages."""

from __future__ import annotations

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import morphax as jax
from morphax import lax
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.jaxpr import eval_jaxpr
from morphax._src.core.trace import Tracer
from morphax._src.numpy import (
    array_methods,  # noqa: F401  (installs x[idx] and x.at)
    indexing,
    util,
)
from morphax._src.runtime.array import Array

take, take_along_axis, put_along_axis = indexing.take, indexing.take_along_axis, indexing.put_along_axis


def arr(value, dtype=None):
    """A morphax Array holding `value` with JAX's canonical dtype (int64 -> int32 under x32)."""
    return util.asarray_like(np.asarray(value, dtype))


def canon(dtype):
    return _dtypes.canonicalize_dtype(np.dtype(dtype))


def check(actual, expected, dtype=None, exact=True):
    expected = np.asarray(expected)
    assert isinstance(actual, Array), type(actual)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == (canon(expected.dtype) if dtype is None else np.dtype(dtype)), (
        actual.dtype,
        dtype,
    )
    if exact:
        np.testing.assert_array_equal(np.asarray(actual), expected.astype(actual.dtype))
    else:
        np.testing.assert_allclose(np.asarray(actual), expected.astype(actual.dtype), rtol=1e-6)


def staged(f, *args):
    """(closed jaxpr, outputs of eval_jaxpr) for f traced on `args` and evaluated on them."""
    closed = jax.make_jaxpr(f)(*args)
    out = eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return closed, out[0]


def prim_count(closed, name):
    return sum(e.primitive.name == name for e in closed.jaxpr.eqns)


def prim_names(closed):
    return [e.primitive.name for e in closed.jaxpr.eqns]


# ------------------------------------------------------------------------------------------------
# The index table: (operand shape, index). Each is checked eagerly and under make_jaxpr.

s_ = np.s_
B = np.array
INDEX_CASES = [
    ((5,), s_[1]),
    ((5,), s_[-1]),
    ((5,), s_[-5]),
    ((5,), s_[1:3]),
    ((5,), s_[::-2]),
    ((5,), s_[::-1]),
    ((5,), s_[4:0:-2]),
    ((5,), s_[-2:]),
    ((5,), s_[:-7]),
    ((5,), s_[10:]),
    ((5,), s_[3:1]),
    ((5,), s_[::3]),
    ((5,), s_[None]),
    ((5,), s_[..., None]),
    ((5,), s_[None, 2]),
    ((5,), s_[...]),
    ((5,), s_[()]),
    ((5,), s_[:]),
    ((5,), s_[[0, 2]]),
    ((5,), s_[[-1, 0, -5]]),
    ((5,), s_[[]]),
    ((5,), s_[B([], np.int32)]),
    ((5,), s_[B(3)]),
    ((5,), s_[B([[0, 1], [2, 3]])]),
    ((5,), s_[B([True, False, True, False, True])]),
    ((5,), s_[[True, False, True, False, True]]),
    ((5,), s_[B([False] * 5)]),
    ((5,), s_[True]),
    ((5,), s_[False]),
    ((5,), s_[[4, 4, 4]]),
    ((3, 4), s_[1]),
    ((3, 4), s_[1, 2]),
    ((3, 4), s_[-1, -1]),
    ((3, 4), s_[:, 1]),
    ((3, 4), s_[..., 1]),
    ((3, 4), s_[1, ...]),
    ((3, 4), s_[::2, ::-1]),
    ((3, 4), s_[1:, 1:3]),
    ((3, 4), s_[None, :, None]),
    ((3, 4), s_[:, [0, 2]]),
    ((3, 4), s_[[0, 1], [1, 2]]),
    ((3, 4), s_[[[0], [1]], [1, 2]]),
    ((3, 4), s_[1:, [0, 2], None]),
    ((3, 4), s_[B([True, False, True])]),
    ((3, 4), s_[B([True, False, True]), 1:]),
    ((3, 4), s_[:, B([True, False, True, True])]),
    ((3, 4), s_[B([[True, False, True, False]] * 3)]),
    ((3, 4), s_[[0, 2], ::-1]),
    ((3, 4), s_[::-1, [0, 2]]),
    ((3, 4), s_[[2, 0], 1]),
    ((3, 4), s_[1, [2, 0]]),
    ((3, 4), s_[..., [3, 0]]),
    ((3, 4), s_[[0, 1], None]),
    ((3, 4), s_[None, [0, 1]]),
    ((3, 4), s_[:, True]),
    ((3, 4), s_[[1], True]),
    ((3, 4), s_[B(1), :]),
    ((3, 4), s_[[[0, 1], [2, 0]], [[3], [1]]]),
    ((3, 4), s_[[], :]),
    ((3, 4), s_[B([], np.int32), B([], np.int32)]),
    ((2, 3, 4), s_[:, 1, [0, 1]]),
    ((2, 3, 4), s_[[0, 1], :, 1]),
    ((2, 3, 4), s_[1, :, [0, 1]]),
    ((2, 3, 4), s_[[0, 1], :, [2, 3]]),
    ((2, 3, 4), s_[[0], None, [0]]),
    ((2, 3, 4), s_[None, [0], :, [0]]),
    ((2, 3, 4), s_[:, [[0], [1]], None, [0, 1, 2]]),
    ((2, 3, 4), s_[..., [0, 1], :]),
    ((2, 3, 4), s_[0, ..., 0]),
    ((2, 3, 4), s_[:, ::-1, [3, 1]]),
    ((2, 3, 4), s_[1:, ::2, 1::2]),
    ((2, 3, 4), s_[[1, 0], [2, 0], [3, 1]]),
    ((2, 3, 4), s_[..., None, 1]),
    ((2, 3, 4), s_[B([True, False]), :, B([0, 3])]),
    ((2, 3, 4), s_[B([[True, False, True], [False, True, False]])]),
    ((2, 3, 4), s_[:, B([[True, False, True, False]] * 3)]),
    ((2, 0, 3), s_[1]),
    ((2, 0, 3), s_[:, :, [0, 2]]),
    ((2, 0, 3), s_[[1, 0], :, 1:]),
    ((2, 0, 3), s_[..., None]),
    ((0,), s_[[]]),
    ((0,), s_[:]),
    ((), s_[()]),
    ((), s_[...]),
    ((), s_[None]),
    ((), s_[True]),
    ((), s_[False]),
    ((), s_[None, ..., None]),
]


def _is_advanced(idx):
    items = idx if isinstance(idx, tuple) else (idx,)
    return any(
        isinstance(i, (list, bool, np.bool_))
        or (isinstance(i, np.ndarray) and (i.ndim > 0 or i.dtype == bool))
        for i in items
    )


def _ids(cases):
    return [f"{shape}-{idx!r}".replace(" ", "") for shape, idx in cases]


def _operand(shape, dtype=np.float32):
    size = int(np.prod(shape))
    return (np.arange(size) * 3 % 7 + np.arange(size) / 4).reshape(shape).astype(dtype)


def test_table_is_large():
    assert len(INDEX_CASES) >= 60


@pytest.mark.parametrize("shape,idx", INDEX_CASES, ids=_ids(INDEX_CASES))
def test_getitem_eager_and_staged(shape, idx):
    a = _operand(shape)
    expected = a[idx]
    x = arr(a)
    check(x[idx], expected)
    closed, out = staged(lambda x: x[idx], x)
    check(out, expected)
    gathers = prim_count(closed, "gather")
    if _is_advanced(idx) and expected.size:
        assert gathers == 1, closed
    else:
        assert gathers <= (1 if _is_advanced(idx) else 0), closed


def _split_arrays(idx):
    """The integer index arrays of `idx` (to be passed as traced arguments) and a rebuilder."""
    items = idx if isinstance(idx, tuple) else (idx,)
    slots = [
        k
        for k, i in enumerate(items)
        if isinstance(i, (list, np.ndarray)) and np.asarray(i).dtype.kind in "iu" and np.asarray(i).size
    ]

    def rebuild(arrays):
        out = list(items)
        for k, a in zip(slots, arrays):
            out[k] = a
        return tuple(out) if isinstance(idx, tuple) else out[0]

    return [np.asarray(items[k]) for k in slots], rebuild


TRACEABLE = [c for c in INDEX_CASES if _split_arrays(c[1])[0]]


@pytest.mark.parametrize("shape,idx", TRACEABLE, ids=_ids(TRACEABLE))
def test_getitem_traced_index_arrays(shape, idx):
    a = _operand(shape)
    arrays, rebuild = _split_arrays(idx)
    x = arr(a)
    f = lambda x, *ii: x[rebuild(ii)]  # noqa: E731
    closed, out = staged(f, x, *[arr(i) for i in arrays])
    check(out, a[idx])
    # 0-d traced indices alone take the dynamic_slice path; anything else is one gather.
    advanced = _is_advanced(idx) and not all(i.ndim == 0 for i in arrays)
    assert prim_count(closed, "gather") == (1 if advanced and a[idx].size else 0), closed


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, np.float16, np.complex64])
@pytest.mark.parametrize("idx", [s_[1], s_[::-1, [0, 2]], s_[B([True, False, True])], s_[None, 1:, 2]])
def test_getitem_dtypes(dtype, idx):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    x = arr(a)
    check(x[idx], a[idx], dtype=dtype)
    _, out = staged(lambda x: x[idx], x)
    check(out, a[idx], dtype=dtype)


def test_getitem_keeps_weak_type():
    x = util.asarray_like(2.0)
    y = lax.broadcast_in_dim(x, (3,), ())
    assert y.weak_type
    assert y[1].weak_type and y[[0, 1]].weak_type and y[None, ::2].weak_type


def test_basic_indexing_lowers_to_slicing_primitives():
    x = arr(_operand((4, 5)))
    closed, _ = staged(lambda x: x[1:3, ::-2], x)
    assert set(prim_names(closed)) <= {"slice", "rev"}
    closed, _ = staged(lambda x: x[2, None], x)
    assert set(prim_names(closed)) <= {"slice", "squeeze", "broadcast_in_dim"}
    closed, _ = staged(lambda x: x[...], x)
    assert prim_names(closed) == []


# ------------------------------------------------------------------------------------------------
# Traced scalar indices: dynamic_slice, negative wrap, clamping.


def test_traced_scalar_index_uses_dynamic_slice():
    a = _operand((4, 3))
    x = arr(a)
    closed = jax.make_jaxpr(lambda x, i: x[i])(x, arr(1))
    names = prim_names(closed)
    assert "dynamic_slice" in names and "gather" not in names, closed
    for i in range(-4, 4):
        _, out = staged(lambda x, i: x[i], x, arr(i))
        check(out, a[i])
        check(x[arr(i)], a[i])


def test_traced_scalar_index_mixed_with_slices_and_none():
    a = _operand((4, 5, 3))
    x = arr(a)
    for i, j in [(0, 0), (-1, 2), (3, -3), (2, 1)]:
        closed, out = staged(lambda x, i, j: x[i, ::-2, None, j], x, arr(i), arr(j))
        check(out, a[i, ::-2, None, j])
        assert prim_count(closed, "dynamic_slice") == 1 and prim_count(closed, "gather") == 0


def test_traced_scalar_index_out_of_bounds_clamps():
    a = _operand((4,))
    x = arr(a)
    for i, want in [(7, 3), (-9, 0), (100, 3)]:
        _, out = staged(lambda x, i: x[i], x, arr(i))
        check(out, a[want])


def test_traced_index_array_out_of_bounds_clamps():
    a = _operand((5, 2))
    x = arr(a)
    idx = np.array([7, -1, -6, 2, 5])
    want = np.clip(np.where(idx < 0, idx + 5, idx), 0, 4)
    check(x[arr(idx)], a[want])
    _, out = staged(lambda x, i: x[i], x, arr(idx))
    check(out, a[want])


def test_traced_scalar_with_index_array_makes_one_gather():
    a = _operand((3, 4))
    x = arr(a)
    closed, out = staged(lambda x, i: x[i, [0, 3, 1]], x, arr(-1))
    check(out, a[-1, [0, 3, 1]])
    assert prim_count(closed, "gather") == 1 and prim_count(closed, "dynamic_slice") == 0


def test_index_dtypes():
    a = _operand((6,))
    x = arr(a)
    for dt in (np.int8, np.uint8, np.int16, np.uint32, np.int32):
        idx = np.array([5, 0, 3], dt)
        check(x[idx], a[idx])
        check(x[arr(idx)], a[idx])
        check(x[arr(np.array(2, dt))], a[2])


def test_list_containing_traced_scalars():
    a = _operand((5,))
    x = arr(a)
    closed, out = staged(lambda x, i, j: x[[i, j]], x, arr(4), arr(-2))
    check(out, a[[4, -2]])
    assert prim_count(closed, "gather") == 1


def test_gather_flags_forwarded():
    x = arr(_operand((5,)))
    closed = jax.make_jaxpr(lambda x: x.at[[0, 1]].get(unique_indices=True, indices_are_sorted=True))(x)
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "gather"]
    assert eqn.params["unique_indices"] and eqn.params["indices_are_sorted"]


# ------------------------------------------------------------------------------------------------
# .at[] updates


def _np_update(a, idx, v, op):
    """NumPy reference with accumulate-on-duplicates semantics (ufunc.at); `set` is assignment."""
    out = a.copy()
    if op == "set":
        out[idx] = v
    else:
        getattr(np, {"add": "add", "multiply": "multiply", "min": "minimum", "max": "maximum"}[op]).at(
            out, idx, v
        )
    return out


AT_CASES = [
    ((5,), s_[1]),
    ((5,), s_[-1]),
    ((5,), s_[[0, 0, 3]]),
    ((5,), s_[[-1, 4, -1, 0]]),
    ((5,), s_[1:4]),
    ((5,), s_[::-2]),
    ((5,), s_[B([True, False, True, True, False])]),
    ((5,), s_[...]),
    ((5,), s_[[]]),
    ((3, 4), s_[1]),
    ((3, 4), s_[:, 1]),
    ((3, 4), s_[[0, 2, 0], [1, 1, 1]]),
    ((3, 4), s_[1:, [0, 2, 0]]),
    ((3, 4), s_[::-1, ::2]),
    ((3, 4), s_[None, [2, 0]]),
    ((3, 4), s_[[[0], [2]], [3, 0]]),
    ((3, 4), s_[:, True]),
    ((2, 3, 4), s_[:, 1, [0, 1, 0]]),
    ((2, 3, 4), s_[[1, 0], :, [2, 2]]),
    ((2, 3, 4), s_[..., ::-3]),
    ((2, 3, 4), s_[1, 1:, None, [3, 3]]),
]


@pytest.mark.parametrize("op", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("shape,idx", AT_CASES, ids=_ids(AT_CASES))
def test_at_updates_match_numpy(shape, idx, op):
    a = _operand(shape)
    rng = np.random.default_rng(0)
    target_shape = a[idx].shape
    v = rng.integers(-3, 4, size=target_shape).astype(np.float32)
    expected = _np_update(a, idx, v, op)
    x = arr(a)
    check(getattr(x.at[idx], op)(v), expected)
    _, out = staged(lambda x, v: getattr(x.at[idx], op)(v), x, arr(v))
    check(out, expected)


@pytest.mark.parametrize("shape,idx", AT_CASES, ids=_ids(AT_CASES))
def test_at_scalar_values_broadcast(shape, idx):
    a = _operand(shape)
    check(arr(a).at[idx].set(7.0), _np_update(a, idx, 7.0, "set"))
    check(arr(a).at[idx].add(2), _np_update(a, idx, 2.0, "add"))
    check(arr(a).at[idx].subtract(2), _np_update(a, idx, -2.0, "add"))


def test_at_uses_one_scatter():
    x = arr(_operand((3, 4)))
    for op, name in [
        ("set", "scatter"),
        ("add", "scatter-add"),
        ("mul", "scatter-mul"),
        ("min", "scatter-min"),
        ("max", "scatter-max"),
    ]:
        closed = jax.make_jaxpr(lambda x, op=op: getattr(x.at[[0, 0], 1:], op)(2.0))(x)
        assert prim_count(closed, name) == 1, closed
        assert prim_count(closed, "gather") == 0


def test_at_set_duplicates_last_wins():
    x = arr(np.zeros(4, np.float32))
    check(x.at[[1, 1, 1]].set([1.0, 2.0, 3.0]), np.array([0, 3, 0, 0], np.float32))
    _, out = staged(lambda x, v: x.at[arr([3, 0, 3])].set(v), x, arr(np.array([1.0, 2.0, 5.0], np.float32)))
    check(out, np.array([2, 0, 0, 5], np.float32))


def test_at_out_of_bounds_updates_are_dropped():
    a = _operand((5,))
    x = arr(a)
    idx = np.array([0, 5, -6, 7, -1, 2])
    keep = (idx >= -5) & (idx < 5)
    v = np.arange(6, dtype=np.float32) + 10
    for op in ["set", "add", "multiply", "min", "max"]:
        check(getattr(x.at[idx], op)(v), _np_update(a, idx[keep], v[keep], op))
        _, out = staged(lambda x, i, op=op: getattr(x.at[i], op)(v), x, arr(idx))
        check(out, _np_update(a, idx[keep], v[keep], op))
    # static Python ints out of bounds are dropped too (only reads raise)
    check(x.at[9].set(1.0), a)
    check(x.at[-9].add(1.0), a)
    _, out = staged(lambda x, i: x.at[i].set(0.0), x, arr(11))
    check(out, a)


def test_at_clip_and_promise_modes():
    a = _operand((5,))
    x = arr(a)
    idx = np.array([7, -9, 2])
    clipped = np.clip(np.where(idx < 0, idx + 5, idx), 0, 4)
    check(x.at[idx].set([1.0, 2.0, 3.0], mode="clip"), _np_update(a, clipped, [1.0, 2.0, 3.0], "set"))
    check(x.at[idx].add(1.0, mode="clip"), _np_update(a, clipped, 1.0, "add"))
    check(x.at[9].set(-1.0, mode="clip"), _np_update(a, 4, -1.0, "set"))
    check(x.at[[0, 2]].add(1.0, mode="promise_in_bounds"), _np_update(a, [0, 2], 1.0, "add"))
    check(x.at[[0, 9]].set(1.0, mode="drop"), _np_update(a, [0], 1.0, "set"))
    check(x.at[[0, 9]].set(1.0, mode=lax.GatherScatterMode.FILL_OR_DROP), _np_update(a, [0], 1.0, "set"))


def test_at_values_cast_to_operand_dtype():
    x = arr(np.arange(4))
    out = x.at[1].set(2.5)
    check(out, [0, 2, 2, 3], dtype=np.int32)
    out = arr(np.zeros(3, np.float16)).at[0].add(1e-3)
    assert out.dtype == np.float16
    out = arr(np.zeros(3, np.bool_)).at[1].set(1)
    check(out, [False, True, False], dtype=np.bool_)
    weak = lax.broadcast_in_dim(util.asarray_like(1.0), (3,), ())
    assert weak.at[0].set(np.float32(2)).weak_type


def test_at_values_broadcasting():
    a = _operand((3, 4))
    x = arr(a)
    check(x.at[:, 1:3].set(np.array([1.0, 2.0])), _np_update(a, s_[:, 1:3], [1.0, 2.0], "set"))
    check(x.at[0].set(np.ones((1, 1, 4))), _np_update(a, 0, 1.0, "set"))
    with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)|\(4,\)"):
        x.at[0].set(np.ones(3))


def test_at_subtract_divide_power():
    a = _operand((5,)) + 1
    x = arr(a)
    idx = [0, 2, 2]
    expected = a.copy()
    np.subtract.at(expected, idx, 1.5)
    check(x.at[idx].subtract(1.5), expected)
    expected = a.copy()
    np.divide.at(expected, idx, 2.0)
    check(x.at[idx].divide(2.0), expected, exact=False)
    expected = a.copy()
    np.power.at(expected, [1, 3], 2.0)
    check(x.at[[1, 3]].power(2.0), expected, exact=False)
    # integer divide gives floats (true_divide), as in JAX
    out = arr(np.arange(4)).at[1].divide(2)
    check(out, [0, 0.5, 2, 3], dtype=np.float32)
    out = arr(np.arange(4)).at[2].power(3)
    check(out, [0, 1, 8, 3], dtype=np.int32)
    _, out = staged(lambda x: x.at[idx].divide(2.0), x)
    check(out, a / np.array([2, 1, 4, 1, 1], np.float32), exact=False)


def test_at_apply():
    a = _operand((5,))
    x = arr(a)
    expected = a.copy()
    expected[[1, 3]] = np.sin(expected[[1, 3]])
    out = x.at[[1, 3]].apply(lambda v: lax.sin(v))
    check(out, expected, exact=False)
    _, out = staged(lambda x: x.at[::2].apply(lambda v: lax.neg(v)), x)
    expected = a.copy()
    expected[::2] *= -1
    check(out, expected)


def test_at_get_modes():
    a = _operand((4, 3))
    x = arr(a)
    check(x.at[1].get(), a[1])
    check(x.at[[0, 7]].get(), a[[0, 3]])
    check(x.at[[0, 7]].get(mode="clip"), a[[0, 3]])
    got = x.at[[0, 7, -5]].get(mode="fill")
    assert np.isnan(np.asarray(got)[1:]).all()
    np.testing.assert_array_equal(np.asarray(got)[0], a[0])
    check(x.at[[0, 7]].get(mode="fill", fill_value=-1.0), np.stack([a[0], np.full(3, -1.0, np.float32)]))
    check(x.at[9].get(mode="fill", fill_value=5.0), np.full(3, 5.0, np.float32))
    check(x.at[9].get(mode="clip"), a[3])
    xi = arr(np.arange(4))
    check(xi.at[[9]].get(mode="fill"), [np.iinfo(np.int32).min])
    _, out = staged(lambda x, i: x.at[i].get(mode="fill", fill_value=0.0), x, arr(-1))
    check(out, a[-1])
    _, out = staged(lambda x, i: x.at[i].get(mode="fill", fill_value=0.0), x, arr(4))
    check(out, np.zeros(3, np.float32))


def test_at_with_traced_index_and_values():
    a = _operand((4, 3))
    x = arr(a)
    f = lambda x, i, v: x.at[i, 1:].add(v)  # noqa: E731
    closed, out = staged(f, x, arr(np.array([3, -1, 0])), arr(np.ones((3, 2), np.float32)))
    check(out, _np_update(a, s_[[3, -1, 0], 1:], np.ones((3, 2), np.float32), "add"))
    assert prim_count(closed, "scatter-add") == 1


def test_at_repr_and_noop_on_empty():
    x = arr(_operand((3,)))
    assert "IndexUpdate" in repr(x.at) and "IndexUpdateRef" in repr(x.at[0])
    check(x.at[[]].set(1.0), np.asarray(x))
    check(arr(np.zeros((0, 2), np.float32)).at[:, 1].add(1.0), np.zeros((0, 2), np.float32))


# ------------------------------------------------------------------------------------------------
# take / take_along_axis / put_along_axis


def test_take_matches_numpy():
    a = _operand((3, 4, 2))
    x = arr(a)
    for axis in (None, 0, 1, -1):
        for idx in ([0, 1], [[1, 0], [1, 1]], 1, [-1, -2]):
            check(take(x, arr(idx), axis=axis), np.take(a, idx, axis=axis))
            _, out = staged(lambda x, i, axis=axis: take(x, i, axis=axis), x, arr(idx))
            check(out, np.take(a, idx, axis=axis))
    check(take(a, np.array([1, 0])), np.take(a, [1, 0]))
    with pytest.raises(TypeError, match="take"):
        take(a, [1, 0])
    check(take(np.arange(4), np.array([3, 0], np.int8)), [3, 0])


def test_take_modes():
    a = _operand((5,))
    x = arr(a)
    idx = np.array([0, 6, -1, -7])
    out = np.asarray(take(x, idx))
    np.testing.assert_array_equal(out[[0, 2]], a[[0, -1]])
    assert np.isnan(out[[1, 3]]).all()
    check(take(x, idx, mode="fill", fill_value=-2.0), np.where((idx >= -5) & (idx < 5), a[idx % 5], -2.0))
    check(take(x, idx, mode="clip"), np.take(a, idx, mode="clip"))
    check(take(x, idx, mode="wrap"), np.take(a, idx, mode="wrap"))
    check(take(arr(np.arange(5)), idx), np.where((idx >= -5) & (idx < 5), idx % 5, np.iinfo(np.int32).min))
    check(take(arr(np.arange(5, dtype=np.uint8)), np.array([9])), [255], dtype=np.uint8)
    check(take(arr(np.zeros(2, bool)), np.array([3])), [True])
    _, out = staged(lambda x, i: take(x, i, mode="wrap"), x, arr(idx))
    check(out, np.take(a, idx, mode="wrap"))


def test_take_errors():
    x = arr(_operand((3,)))
    with pytest.raises(NotImplementedError, match="out"):
        take(x, np.array([0]), out=np.zeros(1))
    with pytest.raises(NotImplementedError, match="raise"):
        take(x, np.array([0]), mode="raise")
    with pytest.raises(ValueError, match="mode"):
        take(x, np.array([0]), mode="bogus")
    with pytest.raises(TypeError, match="float32"):
        take(x, arr([0.0]))
    with pytest.raises(TypeError, match="take"):
        take([1, 2], np.array([0]))
    with pytest.raises(ValueError, match="axis 2"):
        take(x, np.array([0]), axis=2)
    out = np.asarray(take(arr(np.zeros((0,), np.float32)), np.array([0, 1])))
    assert out.shape == (2,) and np.isnan(out).all()
    with pytest.raises(IndexError):
        take(arr(np.zeros((0,), np.float32)), np.array([0]), mode="clip")


def test_take_along_axis_matches_numpy():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 4, 5)).astype(np.float32)
    x = arr(a)
    for axis in (0, 1, 2, -1):
        idx = np.argsort(a, axis=axis)
        check(take_along_axis(x, arr(idx), axis), np.take_along_axis(a, idx, axis))
        _, out = staged(lambda x, i, axis=axis: take_along_axis(x, i, axis), x, arr(idx))
        check(out, np.take_along_axis(a, idx, axis))
        assert (
            prim_count(
                jax.make_jaxpr(lambda x, i, axis=axis: take_along_axis(x, i, axis))(x, arr(idx)), "gather"
            )
            == 1
        )
    idx = rng.integers(-4, 4, size=(1, 2, 5))  # broadcasts along axis 0, negatives wrap
    check(take_along_axis(x, arr(idx), 1), np.take_along_axis(a, idx % 4, 1))
    check(
        take_along_axis(arr(a[:1]), arr(np.zeros((3, 4, 1), int)), 2),
        np.take_along_axis(a[:1], np.zeros((3, 4, 1), int), 2),
    )
    flat_idx = np.array([3, 59, 0])
    check(take_along_axis(x, arr(flat_idx), None), np.take_along_axis(a, flat_idx, None))


def test_take_along_axis_out_of_bounds():
    a = _operand((2, 3))
    x = arr(a)
    idx = np.array([[0, 5], [-4, 2]])
    out = np.asarray(take_along_axis(x, arr(idx), 1))
    assert np.isnan(out[0, 1]) and np.isnan(out[1, 0]) and out[0, 0] == a[0, 0] and out[1, 1] == a[1, 2]
    clipped = np.clip(np.where(idx < 0, idx + 3, idx), 0, 2)
    check(take_along_axis(x, arr(idx), 1, mode="clip"), np.take_along_axis(a, clipped, 1))
    check(
        take_along_axis(x, arr(idx), 1, fill_value=0.0),
        np.where([[1, 0], [0, 1]], np.take_along_axis(a, clipped, 1), 0),
    )


def test_take_along_axis_errors():
    x = arr(_operand((2, 3)))
    with pytest.raises(ValueError, match="same number of dimensions"):
        take_along_axis(x, arr([0, 1]), 1)
    with pytest.raises(ValueError, match="single dimension"):
        take_along_axis(x, arr([[0]]), None)
    with pytest.raises(TypeError, match="integer"):
        take_along_axis(x, arr([[0.0]]), 1)
    with pytest.raises(ValueError, match="broadcast"):
        take_along_axis(x, arr(np.zeros((3, 1), int)), 1)
    with pytest.raises(ValueError, match="mode"):
        take_along_axis(x, arr([[0]]), 1, mode="wrap")


def test_put_along_axis():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(3, 4)).astype(np.float32)
    x = arr(a)
    idx = np.argmax(a, axis=1)[:, None]
    expected = a.copy()
    np.put_along_axis(expected, idx, 0.0, axis=1)
    check(put_along_axis(x, arr(idx), 0.0, 1, inplace=False), expected)
    _, out = staged(
        lambda x, i, v: put_along_axis(x, i, v, 1, inplace=False), x, arr(idx), arr(np.float32(0))
    )
    check(out, expected)
    vals = np.arange(3, dtype=np.float32)[:, None]
    expected = a.copy()
    np.put_along_axis(expected, idx, vals, axis=1)
    check(put_along_axis(x, arr(idx), vals, 1, inplace=False), expected)
    expected = a.copy()
    np.put_along_axis(expected, np.array([0, 11]), 9.0, axis=None)
    check(put_along_axis(x, arr([0, 11]), 9.0, None, inplace=False), expected)
    # out-of-bounds writes are dropped
    check(
        put_along_axis(x, arr([[7], [0], [1]]), 5.0, 1, inplace=False),
        np.where((np.arange(4) == np.array([[-1], [0], [1]])), 5.0, a),
    )
    with pytest.raises(ValueError, match="inplace=False"):
        put_along_axis(x, arr(idx), 0.0, 1)


def test_all_names():
    assert set(indexing.__all__) >= {"take", "take_along_axis", "put_along_axis"}
    assert "getitem" not in indexing.__all__ and "AtIndexer" not in indexing.__all__


# ------------------------------------------------------------------------------------------------
# Property test: random operands and mixed indices vs NumPy with JAX's out-of-bounds policy.


@st.composite
def _index_problems(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    bshape = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    kinds = draw(st.lists(st.sampled_from(["slice", "int", "array", "full"]), min_size=ndim, max_size=ndim))
    items = []
    for n, kind in zip(shape, kinds):
        if kind == "slice":
            start = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            step = draw(st.sampled_from([None, 1, 2, -1, -2, 3]))
            items.append(slice(start, stop, step))
        elif kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
        elif kind == "array":
            keep = draw(st.integers(0, len(bshape)))
            sub = tuple(s if draw(st.booleans()) else 1 for s in bshape[len(bshape) - keep :])
            # 0-d NumPy indices are static like Python ints (out of bounds raises), so keep them in range.
            lo, hi = (-2 * n, 2 * n) if sub else (-n, n - 1)
            vals = draw(st.lists(st.integers(lo, hi), min_size=int(np.prod(sub)), max_size=int(np.prod(sub))))
            items.append(np.array(vals, np.int32).reshape(sub))
        else:
            items.append(slice(None))
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    return shape, tuple(items)


def _clip_index(shape, idx):
    """Array indices normalized (negative + n) then clamped into range, as JAX's reads do."""
    out, dim = [], 0
    for i in idx:
        if i is None:
            out.append(i)
            continue
        n = shape[dim]
        if isinstance(i, np.ndarray):
            i = np.clip(np.where(i < 0, i + n, i), 0, n - 1)
        out.append(i)
        dim += 1
    return tuple(out)


def _reference_scatter(a, idx, v, op):
    """Apply updates one element at a time (row-major over the updates), dropping any whose
    advanced indices are out of bounds, as JAX's default FILL_OR_DROP scatter does."""
    shape = a.shape
    clipped = _clip_index(shape, idx)
    positions = np.arange(a.size).reshape(shape)[clipped]
    arrays, dim, valid = [], 0, None
    adv_pos, out_dims_before = [], 0
    for k, i in enumerate(idx):
        if i is None:
            continue
        n = shape[dim]
        if isinstance(i, (np.ndarray, int)):
            ok = np.asarray((i >= -n) & (i < n))
            arrays.append(ok)
            adv_pos.append(k)
        dim += 1
    b = np.broadcast_shapes(*[x.shape for x in arrays]) if arrays else ()
    valid_b = np.ones(b, bool)
    for ok in arrays:
        valid_b = valid_b & ok
    adjacent = adv_pos == list(range(adv_pos[0], adv_pos[-1] + 1)) if adv_pos else True
    if adv_pos and adjacent:
        out_dims_before = sum(1 for i in idx[: adv_pos[0]] if i is None or isinstance(i, slice))
    rest = positions.ndim - len(b)
    valid = valid_b.reshape((1,) * out_dims_before + b + (1,) * (rest - out_dims_before))
    valid = np.broadcast_to(valid, positions.shape)
    out = a.copy().reshape(-1)
    v = np.broadcast_to(v, positions.shape)
    for p, ok, val in zip(positions.reshape(-1), valid.reshape(-1), v.reshape(-1)):
        if ok:
            out[p] = val if op == "set" else out[p] + val
    return out.reshape(shape)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(_index_problems())
def test_property_getitem_and_updates(problem):
    shape, idx = problem
    a = _operand(shape)
    x = arr(a)
    expected = a[_clip_index(shape, idx)]
    check(x[idx], expected)
    if any(isinstance(i, np.ndarray) and i.ndim for i in idx):
        assert prim_count(jax.make_jaxpr(lambda x: x[idx])(x), "gather") == (1 if expected.size else 0)
    v = (np.arange(expected.size, dtype=np.float32) + 100).reshape(expected.shape)
    check(x.at[idx].set(v), _reference_scatter(a, idx, v, "set"))
    check(x.at[idx].add(v), _reference_scatter(a, idx, v, "add"))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(_index_problems())
def test_property_traced_index_arrays(problem):
    shape, idx = problem
    a = _operand(shape)
    arrays, rebuild = _split_arrays(idx)
    f = lambda x, *ii: x[rebuild(ii)]  # noqa: E731
    _, out = staged(f, arr(a), *[arr(i) for i in arrays])
    check(out, a[_clip_index(shape, idx)])


# ------------------------------------------------------------------------------------------------
# Errors


def test_item_assignment_error_points_to_at():
    x = arr(_operand((3,)))
    with pytest.raises(TypeError, match=r"\.at\["):
        x[0] = 1

    def f(x):
        x[0] = 1
        return x

    with pytest.raises(TypeError, match=r"\.at\["):
        jax.make_jaxpr(f)(x)


def test_float_index_errors():
    x = arr(_operand((3,)))
    with pytest.raises(TypeError, match="float32"):
        x[arr([0.0, 1.0])]
    with pytest.raises(TypeError, match="float64"):
        x[np.array([1.0])]
    with pytest.raises(TypeError, match="float"):
        x[1.0]
    with pytest.raises(TypeError, match="float32"):
        jax.make_jaxpr(lambda x, i: x[i])(x, arr(np.float32(1)))
    with pytest.raises(TypeError, match="float32"):
        x.at[arr([0.5])].set(1.0)
    with pytest.raises(TypeError, match="str"):
        x["a"]
    with pytest.raises(TypeError):
        x[1:2.5]


def test_too_many_indices():
    x = arr(_operand((3, 4)))
    with pytest.raises(IndexError, match=r"\(3, 4\)"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match=r"\(3, 4\)"):
        x[[0], [0], 0]
    with pytest.raises(IndexError, match=r"\(\)"):
        arr(1.0)[0]
    with pytest.raises(IndexError, match=r"\(3, 4\)"):
        x.at[0, 1, 2].set(0.0)


def test_static_int_out_of_bounds_clamps():
    # JAX 0.10: a static int out of bounds reads clamped (a dynamic_slice), it does not raise;
    # only an integer into an empty axis does. (tests/compat/test_behaviour_indexing.py has more.)
    a = _operand((3, 4))
    x = arr(a)
    check(x[3], a[2])
    check(x[0, -5], a[0, 0])
    check(x[[0, 1], 4], a[[0, 1], 3])
    assert "dynamic_slice" in str(jax.make_jaxpr(lambda x: x[5])(x))
    with pytest.raises(IndexError, match="size 0"):
        arr(np.zeros((0, 2)))[[0]]


def test_traced_boolean_mask_error():
    x = arr(_operand((3,)))
    with pytest.raises(IndexError, match="size=") as info:
        jax.make_jaxpr(lambda x: x[x > 1])(x)
    assert "jnp.where" in str(info.value) and "concrete" in str(info.value)
    assert isinstance(info.value, indexing.NonConcreteBooleanIndexError)
    with pytest.raises(IndexError, match="size="):
        jax.make_jaxpr(lambda x: x.at[x > 1].set(0.0))(x)
    # A concrete mask works eagerly.
    a = _operand((3,))
    check(x[x > 1], a[a > 1])


def test_other_index_errors():
    x = arr(_operand((3, 4)))
    with pytest.raises(IndexError, match="ellipsis"):
        x[..., ...]
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[np.array([True, False])]
    with pytest.raises(IndexError, match="shape mismatch"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="static"):
        jax.make_jaxpr(lambda x, i: x[i:])(x, arr(1))
    with pytest.raises(ValueError, match="step"):
        x[::0]
    with pytest.raises(ValueError, match="mode"):
        x.at[0].set(1.0, mode="wrap")
    with pytest.raises(ValueError, match="mode"):
        x.at[0].get(mode="nonsense")
    with pytest.raises(ValueError, match="x.at\\[idx\\].set.*\\(2,\\).*\\(4,\\)"):
        x.at[0].set([1.0, 2.0])
    with pytest.raises(TypeError, match="x.at\\[idx\\].add"):
        x.at[0].add("a")


def test_concrete_array_slice_bounds_are_accepted():
    a = _operand((5,))
    x = arr(a)
    check(x[arr(1) : arr(4)], a[1:4])
    assert isinstance(arr(1), Array) and not isinstance(arr(1), Tracer)
