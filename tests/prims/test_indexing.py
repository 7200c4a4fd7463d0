"""Independent checks of gather and the scatter family: XLA's semantics spelled out as plain
Python loops over index tuples (hand-written and hypothesis-generated cases), known answers for
the fill/clip modes, jaxpr spelling, and bad-input errors."""

from __future__ import annotations

import itertools

import hypothesis.strategies as st
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings

import morphax as jax
from morphax import lax
from morphax.lax import GatherDimensionNumbers as GDN
from morphax.lax import GatherScatterMode as Mode
from morphax.lax import ScatterDimensionNumbers as SDN

# ------------------------------------------------------------------------------------------------
# Loop references, written from the XLA operation semantics rather than from the implementation.


def _fits(start, size, window):
    return 0 <= start <= size - window


def loop_gather(operand, indices, dn, slice_sizes, mode, fill=None):
    operand = np.asarray(operand)
    indices = np.asarray(indices).astype(np.int64)
    batch_shape = indices.shape[:-1]
    window_axes = [
        d
        for d in range(operand.ndim)
        if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims
    ]
    out_rank = len(batch_shape) + len(window_axes)
    shape = []
    bi, wi = iter(batch_shape), iter(slice_sizes[d] for d in window_axes)
    for i in range(out_rank):
        shape.append(next(wi) if i in dn.offset_dims else next(bi))
    out = np.empty(shape, operand.dtype)
    for out_idx in itertools.product(*(range(s) for s in shape)):
        b = tuple(out_idx[i] for i in range(out_rank) if i not in dn.offset_dims)
        w = [out_idx[i] for i in dn.offset_dims]
        vec = indices[b]
        start = [0] * operand.ndim
        for k, d in enumerate(dn.start_index_map):
            start[d] = int(vec[k])
        for od, idim in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
            start[od] = b[idim]
        ok = all(_fits(start[d], operand.shape[d], slice_sizes[d]) for d in dn.start_index_map)
        for d in dn.start_index_map:
            start[d] = min(max(start[d], 0), operand.shape[d] - slice_sizes[d])
        full = list(start)
        for d, o in zip(window_axes, w):
            full[d] += o
        if mode == Mode.FILL_OR_DROP and not ok:
            out[out_idx] = fill
        else:
            out[out_idx] = operand[tuple(full)]
    return out


def loop_scatter(operand, indices, updates, dn, mode, combine):
    """Apply each update in row-major order of `updates`; a window that does not fit is dropped
    (FILL_OR_DROP) or its start clamped (CLIP)."""
    out = np.array(operand, copy=True)
    indices = np.asarray(indices).astype(np.int64)
    updates = np.asarray(updates)
    window_axes = [
        d for d in range(out.ndim) if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims
    ]
    window = [1] * out.ndim
    for d, ud in zip(window_axes, dn.update_window_dims):
        window[d] = updates.shape[ud]
    for u_idx in itertools.product(*(range(s) for s in updates.shape)):
        b = tuple(u_idx[i] for i in range(updates.ndim) if i not in dn.update_window_dims)
        w = [u_idx[i] for i in dn.update_window_dims]
        vec = indices[b]
        start = [0] * out.ndim
        for k, d in enumerate(dn.scatter_dims_to_operand_dims):
            start[d] = int(vec[k])
        for od, idim in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims):
            start[od] = b[idim]
        ok = all(_fits(start[d], out.shape[d], window[d]) for d in dn.scatter_dims_to_operand_dims)
        if mode == Mode.CLIP:
            for d in dn.scatter_dims_to_operand_dims:
                start[d] = min(max(start[d], 0), out.shape[d] - window[d])
        elif not ok:
            continue
        full = list(start)
        for d, o in zip(window_axes, w):
            full[d] += o
        full = tuple(full)
        out[full] = combine(out[full], updates[u_idx])
    return out


COMBINE = {
    "scatter": (lax.scatter, lambda old, new: new),
    "add": (lax.scatter_add, lambda old, new: old + new),
    "mul": (lax.scatter_mul, lambda old, new: old * new),
    "min": (lax.scatter_min, lambda old, new: np.minimum(old, new)),
    "max": (lax.scatter_max, lambda old, new: np.maximum(old, new)),
}


def _eq(got, want):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------------------------------------
# gather: the jnp indexing patterns.

X53 = np.arange(15, dtype=np.float32).reshape(5, 3)
ALL_MODES = (Mode.FILL_OR_DROP, Mode.CLIP)


def test_gather_scalar_index_row():
    dn = GDN(offset_dims=(0,), collapsed_slice_dims=(0,), start_index_map=(0,))
    out = lax.gather(X53, np.array([2], np.int32), dn, (1, 3))
    _eq(out, X53[2])


def test_gather_index_array_rows_with_oob():
    dn = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    idx = np.array([[0], [4], [-1], [5], [2]], np.int32)
    # JAX: the default mode is PROMISE_IN_BOUNDS, which clamps (the -1 is not wrapped by lax.gather).
    _eq(lax.gather(X53, idx, dn, (1, 3)), X53[[0, 4, 0, 4, 2]])
    fill = lax.gather(X53, idx, dn, (1, 3), mode="fill")
    want = np.stack([X53[0], X53[4], np.full(3, np.nan, np.float32), np.full(3, np.nan, np.float32), X53[2]])
    _eq(fill, want)
    clip = lax.gather(X53, idx, dn, (1, 3), mode="clip")
    _eq(clip, X53[[0, 4, 0, 4, 2]])
    custom = lax.gather(X53, idx, dn, (1, 3), mode="fill", fill_value=-1.0)
    _eq(custom, np.where(np.isnan(want), np.float32(-1), want))


def test_gather_columns_and_points():
    x = np.arange(15, dtype=np.int32).reshape(3, 5)
    cols = np.array([[4], [0], [7], [-3]], np.int32)
    dn = GDN(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,))
    for mode in ALL_MODES:
        _eq(
            lax.gather(x, cols, dn, (3, 1), mode=mode),
            loop_gather(x, cols, dn, (3, 1), mode, np.iinfo(np.int32).min),
        )
    _eq(lax.gather(x, cols[:2], dn, (3, 1)), x[:, [4, 0]])
    pts = np.array([[0, 1], [2, 4], [3, 0], [1, -1]], np.int32)
    dn2 = GDN(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1))
    got = lax.gather(x, pts, dn2, (1, 1), mode="fill")
    _eq(got, np.array([x[0, 1], x[2, 4], np.iinfo(np.int32).min, np.iinfo(np.int32).min], np.int32))
    _eq(lax.gather(x, pts, dn2, (1, 1), mode=Mode.CLIP), np.array([x[0, 1], x[2, 4], x[2, 0], x[1, 0]]))


def test_gather_slices_fill_checks_whole_window():
    # A window of 3 starting at 4 of 6 runs past the end: filled, although its start is in range.
    x = np.arange(6, dtype=np.float32)
    dn = GDN(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))
    idx = np.array([[0], [3], [4]], np.int32)
    got = np.asarray(lax.gather(x, idx, dn, (3,), mode="fill"))
    _eq(got[:2], np.array([[0, 1, 2], [3, 4, 5]], np.float32))
    assert np.isnan(got[2]).all()
    # The default (PROMISE_IN_BOUNDS) clamps the start so the window fits, as XLA does.
    _eq(np.asarray(lax.gather(x, idx, dn, (3,)))[2], np.array([3, 4, 5], np.float32))
    _eq(np.asarray(lax.gather(x, idx, dn, (3,), mode="clip"))[2], np.array([3, 4, 5], np.float32))


@pytest.mark.parametrize(
    "dtype,fill",
    [
        (np.float32, np.nan),
        (ml_dtypes.bfloat16, np.nan),
        (np.int32, np.iinfo(np.int32).min),
        (np.int8, -128),
        (np.uint8, 255),
        (np.uint32, np.iinfo(np.uint32).max),
        (np.bool_, True),
        (np.complex64, np.nan),
    ],
)
def test_gather_default_fill_values(dtype, fill):
    x = np.zeros((3,), dtype)
    dn = GDN(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    got = lax.gather(x, np.array([[7]], np.int32), dn, (1,), mode="fill")
    want = np.array([fill]).astype(dtype)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(np.asarray(got).astype(np.complex128), want.astype(np.complex128))


def test_gather_batching_dims_take_along_axis():
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    idx = np.array([[[1], [4]], [[0], [0]], [[3], [2]]], np.int32)
    dn = GDN(
        offset_dims=(),
        collapsed_slice_dims=(1,),
        start_index_map=(1,),
        operand_batching_dims=(0,),
        start_indices_batching_dims=(0,),
    )
    _eq(lax.gather(x, idx, dn, (1, 1)), np.take_along_axis(x, idx[..., 0], axis=1))


def test_gather_jaxpr_spelling_and_weak_type():
    dn = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    closed = jax.make_jaxpr(lambda x, i: lax.gather(x, i, dn, (1, 3), mode="fill"))(
        X53, np.zeros((2, 1), np.int32)
    )
    text = str(closed)
    # JAX 0.10's layout: one parameter per line once the equation is too long for one.
    assert "gather[\n" in text
    assert "dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), " in text
    assert "fill_value=nan" in text and "mode=GatherScatterMode.FILL_OR_DROP" in text
    assert "slice_sizes=(1, 3)" in text
    clip = str(
        jax.make_jaxpr(lambda x, i: lax.gather(x, i, dn, (1, 3), mode="clip"))(
            X53, np.zeros((2, 1), np.int32)
        )
    )
    assert "fill_value=None" in clip and "mode=GatherScatterMode.CLIP" in clip
    default = str(jax.make_jaxpr(lambda x, i: lax.gather(x, i, dn, (1, 3)))(X53, np.zeros((2, 1), np.int32)))
    assert "fill_value=None" in default and "mode=GatherScatterMode.PROMISE_IN_BOUNDS" in default
    weak = lax.gather(lax.mul(X53, 1.0), np.zeros((2, 1), np.int32), dn, (1, 3))
    assert not weak.weak_type
    # A weakly typed operand stays weak (Python scalar broadcast through the gather).
    w = jax.make_jaxpr(lambda i: lax.gather(1.0, i, GDN((), (), ()), ()))(np.zeros((2, 0), np.int32))
    assert w.out_avals[0].weak_type and w.out_avals[0].shape == (2,)


def test_gather_mode_parsing():
    assert Mode.from_any(None) is Mode.FILL_OR_DROP
    assert Mode.from_any("drop") is Mode.FILL_OR_DROP and Mode.from_any("fill") is Mode.FILL_OR_DROP
    assert Mode.from_any("clip") is Mode.CLIP
    assert Mode.from_any("promise_in_bounds") is Mode.PROMISE_IN_BOUNDS
    with pytest.raises(ValueError, match="Unknown gather mode"):
        Mode.from_any("wrap")


# ------------------------------------------------------------------------------------------------
# Hypothesis: random gathers and scatters against the loops.


def _draw_batching(draw, shape, index_map, batch):
    """Maybe pair one operand axis outside the index map with one index batch axis (resizing
    that batch axis to match)."""
    free = [d for d in range(len(shape)) if d not in index_map]
    if not free or not batch or not draw(st.booleans()):
        return (), ()
    od = draw(st.sampled_from(free))
    idim = draw(st.integers(0, len(batch) - 1))
    batch[idim] = shape[od]
    return (od,), (idim,)


@st.composite
def gather_problems(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    nmap = draw(st.integers(0, rank))
    start_map = tuple(draw(st.permutations(range(rank)))[:nmap])
    collapsed = tuple(sorted(draw(st.sets(st.sampled_from(start_map), max_size=nmap)))) if nmap else ()
    batch = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 2)))]
    obatch, ibatch = _draw_batching(draw, shape, start_map, batch)
    slice_sizes = tuple(
        1 if d in collapsed or d in obatch else draw(st.integers(0, shape[d])) for d in range(rank)
    )
    batch = tuple(batch)
    n_offset = rank - len(collapsed) - len(obatch)
    out_rank = len(batch) + n_offset
    offset_dims = tuple(sorted(draw(st.permutations(range(out_rank)))[:n_offset]))
    idx = draw(
        st.lists(
            st.integers(-2, 5), min_size=int(np.prod(batch + (nmap,))), max_size=int(np.prod(batch + (nmap,)))
        )
    )
    indices = np.array(idx, np.int32).reshape(batch + (nmap,))
    mode = draw(st.sampled_from(ALL_MODES))
    return shape, GDN(offset_dims, collapsed, start_map, obatch, ibatch), slice_sizes, indices, mode


@settings(max_examples=150, deadline=None)
@given(gather_problems())
def test_gather_matches_loop(problem):
    shape, dn, slice_sizes, indices, mode = problem
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    got = lax.gather(x, indices, dn, slice_sizes, mode=mode)
    _eq(got, loop_gather(x, indices, dn, slice_sizes, mode, np.nan))


@st.composite
def scatter_problems(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    nmap = draw(st.integers(0, rank))
    to_operand = tuple(draw(st.permutations(range(rank)))[:nmap])
    inserted = tuple(sorted(draw(st.sets(st.sampled_from(to_operand), max_size=nmap)))) if nmap else ()
    batch = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 2)))]
    obatch, ibatch = _draw_batching(draw, shape, to_operand, batch)
    batch = tuple(batch)
    window_axes = [d for d in range(rank) if d not in inserted and d not in obatch]
    window = tuple(draw(st.integers(0, shape[d])) for d in window_axes)
    upd_rank = len(batch) + len(window)
    window_dims = tuple(sorted(draw(st.permutations(range(upd_rank)))[: len(window)]))
    wi, bi = iter(window), iter(batch)
    upd_shape = tuple(next(wi) if i in window_dims else next(bi) for i in range(upd_rank))
    n = int(np.prod(batch + (nmap,)))
    indices = np.array(draw(st.lists(st.integers(-2, 5), min_size=n, max_size=n)), np.int32).reshape(
        batch + (nmap,)
    )
    mode = draw(st.sampled_from(ALL_MODES))
    kind = draw(st.sampled_from(sorted(COMBINE)))
    return shape, SDN(window_dims, inserted, to_operand, obatch, ibatch), upd_shape, indices, mode, kind


@settings(max_examples=150, deadline=None)
@given(scatter_problems())
def test_scatter_matches_loop(problem):
    shape, dn, upd_shape, indices, mode, kind = problem
    rng = np.random.default_rng(0)
    x = rng.integers(-5, 6, size=shape).astype(np.int32)
    u = rng.integers(-5, 6, size=upd_shape).astype(np.int32)
    fn, combine = COMBINE[kind]
    _eq(fn(x, indices, u, dn, mode=mode), loop_scatter(x, indices, u, dn, mode, combine))


# ------------------------------------------------------------------------------------------------
# scatter: duplicates, out of bounds, known answers.

ROWS = SDN(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
POINTS = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))


def test_scatter_add_duplicates_accumulate_and_oob_dropped():
    x = np.zeros(4, np.float32)
    idx = np.array([[1], [1], [3], [4], [-1], [1]], np.int32)
    u = np.array([1, 2, 3, 100, 200, 4], np.float32)
    _eq(lax.scatter_add(x, idx, u, POINTS), np.array([0, 7, 0, 3], np.float32))
    # CLIP sends 4 -> 3 and -1 -> 0.
    _eq(lax.scatter_add(x, idx, u, POINTS, mode="clip"), np.array([200, 7, 0, 103], np.float32))


def test_scatter_set_last_update_wins():
    x = np.zeros(3, np.int32)
    idx = np.array([[2], [0], [2], [2], [0]], np.int32)
    u = np.array([1, 2, 3, 4, 5], np.int32)
    _eq(lax.scatter(x, idx, u, POINTS), np.array([5, 0, 4], np.int32))


def test_scatter_mul_min_max_known():
    x = np.array([2.0, 3.0, 4.0], np.float32)
    idx = np.array([[0], [0], [2], [9]], np.int32)
    u = np.array([5.0, -1.0, np.nan, 0.0], np.float32)
    _eq(lax.scatter_mul(x, idx, u, POINTS), np.array([-10.0, 3.0, np.nan], np.float32))
    _eq(lax.scatter_min(x, idx, u, POINTS), np.array([-1.0, 3.0, np.nan], np.float32))
    _eq(lax.scatter_max(x, idx, u, POINTS), np.array([5.0, 3.0, np.nan], np.float32))


def test_scatter_int_add_wraps_and_bool_add_is_or():
    x = np.array([120, 0], np.int8)
    _eq(
        lax.scatter_add(x, np.array([[0], [0]], np.int32), np.array([5, 10], np.int8), POINTS),
        np.array([-121, 0], np.int8),
    )
    b = np.array([False, False, True])
    _eq(
        lax.scatter_add(b, np.array([[0], [0], [2]], np.int32), np.array([True, True, False]), POINTS),
        np.array([True, False, True]),
    )


def test_scatter_rows_and_python_scalar_update():
    x = np.zeros((3, 2), np.float32)
    got = lax.scatter_add(x, np.array([[2], [0], [2]], np.int32), np.ones((3, 2), np.float32), ROWS)
    _eq(got, np.array([[1, 1], [0, 0], [2, 2]], np.float32))
    dn = SDN(update_window_dims=(), inserted_window_dims=(0, 1), scatter_dims_to_operand_dims=(0, 1))
    got = lax.scatter(x, np.array([1, 1], np.int32), 7.0, dn)
    _eq(got, np.array([[0, 0], [0, 7], [0, 0]], np.float32))


def test_scatter_window_past_end_dropped_whole():
    x = np.zeros(5, np.int32)
    dn = SDN(update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,))
    u = np.array([[1, 1, 1], [2, 2, 2]], np.int32)
    idx = np.array([[0], [3]], np.int32)  # the second window would cover 3..5: dropped whole
    _eq(lax.scatter_add(x, idx, u, dn), np.array([1, 1, 1, 0, 0], np.int32))
    _eq(lax.scatter_add(x, idx, u, dn, mode="clip"), np.array([1, 1, 3, 2, 2], np.int32))


def test_scatter_jaxpr_spelling():
    text = str(
        jax.make_jaxpr(lambda x, i, u: lax.scatter_add(x, i, u, POINTS))(
            np.zeros(4, np.float32), np.zeros((2, 1), np.int32), np.zeros(2, np.float32)
        )
    )
    assert "scatter-add[\n" in text
    assert "dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), " in text
    assert "mode=GatherScatterMode.FILL_OR_DROP" in text and "update_jaxpr=None" in text


# ------------------------------------------------------------------------------------------------
# Bad inputs.


def test_gather_bad_dimension_numbers():
    idx = np.zeros((2, 1), np.int32)
    with pytest.raises(TypeError, match=r"gather: start_index_map has 2 entries.*f32\[5,3\]"):
        lax.gather(X53, idx, GDN((1,), (0,), (0, 1)), (1, 3))
    with pytest.raises(TypeError, match="gather: every operand axis must be an offset dim"):
        lax.gather(X53, idx, GDN((1,), (), (0,)), (1, 3))
    with pytest.raises(TypeError, match="gather: collapsed axis 0 must have slice size 1"):
        lax.gather(X53, idx, GDN((1,), (0,), (0,)), (2, 3))
    with pytest.raises(TypeError, match=r"gather: slice size 4 for operand axis 1 must lie in \[0, 3\]"):
        lax.gather(X53, idx, GDN((1,), (0,), (0,)), (1, 4))
    with pytest.raises(TypeError, match="gather: indices must have an integer dtype, got float32"):
        lax.gather(X53, idx.astype(np.float32), GDN((1,), (0,), (0,)), (1, 3))
    with pytest.raises(TypeError, match="gather: offset_dims in dimension_numbers must be sorted"):
        lax.gather(np.zeros((2, 3), np.float32), np.zeros((4, 0), np.int32), GDN((1, 0), (), ()), (2, 3))
    with pytest.raises(TypeError, match="gather: indices must have at least 1 dimension"):
        lax.gather(X53, np.int32(0), GDN((0,), (0,), (0,)), (1, 3))


def test_scatter_bad_inputs():
    x = np.zeros((5, 3), np.float32)
    idx = np.zeros((2, 1), np.int32)
    with pytest.raises(
        TypeError, match=r"scatter-add: operand and updates must have the same dtype, got float32 and int32"
    ):
        lax.scatter_add(x, idx, np.zeros((2, 3), np.int32), ROWS)
    with pytest.raises(
        TypeError,
        match=r"scatter: the non-window axes of updates \(4,\) must match the index batch shape \(2,\)",
    ):
        lax.scatter(x, idx, np.zeros((4, 3), np.float32), ROWS)
    with pytest.raises(TypeError, match="scatter-max: update window axis 1 .size 4. exceeds operand axis 1"):
        lax.scatter_max(x, idx, np.zeros((2, 4), np.float32), ROWS)
    with pytest.raises(TypeError, match="scatter-mul: scatter_dims_to_operand_dims has 1 entries"):
        lax.scatter_mul(x, np.zeros((2, 2), np.int32), np.zeros((2, 3), np.float32), ROWS)
