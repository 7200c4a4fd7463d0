"""What a Ref index means, on values: the functional reads and writes the state primitives
discharge to (lax operations, so they run and differentiate under every transformation), and
the NumPy versions their eager references use.

Basic indices (integers, slices, dynamic integer scalars) are windows: a static one is a
lax.slice, a dynamic one a dynamic_slice (which clamps its starts, JAX's rule for dynamic ref
indices); strided slices take every step-th element of the window and are written back through
an interior pad. Integer-array (advanced) indices follow NumPy's layout; each element of the
result is read from, or written to, one flat position of the ref, with jnp's out-of-bounds rule
(reads clamp, writes drop, negatives wrap first). Imports the core and the lax wrappers only.
"""

from __future__ import annotations

import math

import numpy as np

from morphax._src.core.avals import get_aval
from morphax._src.core.state_types import advanced_layout, indexed_shape, is_advanced, numpy_index
from morphax._src.prims.arithmetic import add, mul
from morphax._src.prims.bitwise import bitwise_and
from morphax._src.prims.compare import ge, lt
from morphax._src.prims.conversion import broadcasted_iota, convert_element_type, full
from morphax._src.prims.dynamic_slicing import dynamic_slice, dynamic_update_slice
from morphax._src.prims.gather_scatter_add import gather, scatter_add
from morphax._src.prims.gather_scatter_dims import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
)
from morphax._src.prims.scatter import scatter
from morphax._src.prims.selection import clamp, select
from morphax._src.prims.shape import broadcast_in_dim, expand_dims, reshape
from morphax._src.prims.slicing import pad
from morphax._src.prims.slicing import slice as lax_slice

__all__ = ["eager_add", "eager_read", "eager_write", "index_add", "index_read", "index_write"]


# ------------------------------------------------------------------------------ basic windows


def _window(tree, dyn):
    vals = iter(dyn)
    starts, spans, steps = [], [], []
    for e in tree:
        if e[0] == "int":
            starts.append(e[1])
            spans.append(1)
            steps.append(1)
        elif e[0] == "dyn":
            starts.append(next(vals))
            spans.append(1)
            steps.append(1)
        else:
            _, start, size, step = e
            starts.append(start)
            spans.append((size - 1) * step + 1 if size else 0)
            steps.append(step)
    return starts, spans, steps


def _read_window(x, starts, spans):
    if all(type(s) is int for s in starts):
        if list(starts) == [0] * len(starts) and tuple(spans) == tuple(get_aval(x).shape):
            return x
        return lax_slice(x, starts, [s + n for s, n in zip(starts, spans)])
    return dynamic_slice(x, starts, spans)


def _basic_read(x, tree, dyn):
    shape = get_aval(x).shape
    starts, spans, steps = _window(tree, dyn)
    w = _read_window(x, starts, spans)
    if any(s != 1 for s in steps):
        w = lax_slice(w, [0] * len(spans), spans, steps)
    out_shape = indexed_shape(shape, tree)
    if tuple(get_aval(w).shape) != out_shape:
        w = reshape(w, out_shape)
    return w


def _basic_write(x, tree, dyn, val):
    aval = get_aval(x)
    starts, spans, steps = _window(tree, dyn)
    sizes = [1 if e[0] != "slice" else e[2] for e in tree]
    if 0 in sizes:
        return x
    if tuple(get_aval(val).shape) != tuple(sizes):
        val = reshape(val, sizes)
    if any(s != 1 for s in steps):
        config = [(0, 0, s - 1) for s in steps]
        dense = pad(val, np.zeros((), aval.dtype), config)
        mask = pad(full(sizes, True), False, config)
        val = select(mask, dense, _read_window(x, starts, spans))
    if all(type(s) is int and s == 0 for s in starts) and tuple(spans) == tuple(aval.shape):
        return val
    return dynamic_update_slice(x, val, starts)


# --------------------------------------------------------------------------- advanced indices


def _flat_positions(shape, tree, dyn, for_write):
    """(flat position in the ref of each element of ``ref[idx]``, int32 of the result's shape;
    for writes, a mask of the elements whose indices are in bounds, else None)."""
    out_shape = indexed_shape(shape, tree)
    bshape, in_place = advanced_layout(tree)
    slices = [k for k, e in enumerate(tree) if e[0] == "slice"]
    first = next(k for k, e in enumerate(tree) if e[0] != "slice")
    order = [("s", k) for k in slices if in_place and k < first]
    order += [("b", i) for i in range(len(bshape))]
    order += [("s", k) for k in slices if not in_place or k > first]
    dim_of = {key: pos for pos, key in enumerate(order)}
    b_dims = tuple(dim_of[("b", i)] for i in range(len(bshape)))
    strides = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
    i32 = np.dtype(np.int32)
    flat, valid, offset = None, None, 0
    vals = iter(dyn)
    for k, (e, d) in enumerate(zip(tree, shape)):
        if e[0] == "int":
            offset += e[1] * strides[k]
            continue
        if e[0] == "slice":
            _, start, _, step = e
            coord = add(
                mul(broadcasted_iota(i32, out_shape, dim_of[("s", k)]), np.int32(step)), np.int32(start)
            )
        else:
            a = convert_element_type(next(vals), i32)
            a = select(lt(a, np.int32(0)), add(a, np.int32(d)), a)
            if for_write:
                ok = bitwise_and(ge(a, np.int32(0)), lt(a, np.int32(d)))
            else:
                a = clamp(np.int32(0), a, np.int32(d - 1))
            a_shape = tuple(get_aval(a).shape)
            lead = len(bshape) - len(a_shape)
            to_out = tuple(b_dims[lead + j] for j in range(len(a_shape)))
            coord = broadcast_in_dim(a, out_shape, to_out)
            if for_write:
                ok = broadcast_in_dim(ok, out_shape, to_out)
                valid = ok if valid is None else bitwise_and(valid, ok)
        term = mul(coord, np.int32(strides[k])) if strides[k] != 1 else coord
        flat = term if flat is None else add(flat, term)
    if offset:
        flat = add(flat, np.int32(offset))
    return flat, valid


_GATHER_DN = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
_SCATTER_DN = ScatterDimensionNumbers(
    update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)


def _advanced_read(x, tree, dyn):
    shape = tuple(get_aval(x).shape)
    flat, _ = _flat_positions(shape, tree, dyn, False)
    if math.prod(shape) == 0:
        return full(indexed_shape(shape, tree), 0, get_aval(x).dtype)
    return gather(
        reshape(x, (math.prod(shape),)),
        expand_dims(flat, (-1,)),
        _GATHER_DN,
        (1,),
        mode=GatherScatterMode.CLIP,
    )


def _advanced_write(x, tree, dyn, val, combine):
    shape = tuple(get_aval(x).shape)
    n = math.prod(shape)
    if n == 0 or math.prod(indexed_shape(shape, tree)) == 0:
        return x
    flat, valid = _flat_positions(shape, tree, dyn, True)
    flat = select(valid, flat, full(get_aval(flat).shape, n, np.int32))  # out of bounds: dropped
    out = combine(
        reshape(x, (n,)), expand_dims(flat, (-1,)), val, _SCATTER_DN, mode=GatherScatterMode.FILL_OR_DROP
    )
    return reshape(out, shape)


# ------------------------------------------------------------------------- functional meaning


def index_read(x, tree, dyn):
    """``x[idx]`` for a ref indexer: the functional meaning of `get`."""
    return _advanced_read(x, tree, dyn) if is_advanced(tree) else _basic_read(x, tree, dyn)


def index_write(x, tree, dyn, val):
    """`x` with ``x[idx]`` replaced by `val`: the functional meaning of `swap`."""
    val = convert_element_type(val, get_aval(x).dtype)
    if is_advanced(tree):
        return _advanced_write(x, tree, dyn, val, scatter)
    return _basic_write(x, tree, dyn, val)


def index_add(x, tree, dyn, val):
    """`x` with `val` added at ``x[idx]`` (repeated positions add up): `addupdate`."""
    val = convert_element_type(val, get_aval(x).dtype)
    if is_advanced(tree):
        return _advanced_write(x, tree, dyn, val, scatter_add)
    return _basic_write(x, tree, dyn, add(_basic_read(x, tree, dyn), val))


# ---------------------------------------------------------------------- NumPy (eager) meaning


def eager_read(buf: np.ndarray, tree, dyn) -> np.ndarray:
    return np.array(buf[numpy_index(buf.shape, tree, dyn)], dtype=buf.dtype)


def _flat_targets(buf, tree, dyn, val):
    """(flat positions, values) of an advanced write, out-of-bounds entries dropped."""
    where = numpy_index(buf.shape, tree, dyn, for_write=True)
    adv = [k for k, e in enumerate(tree) if e[0] != "slice"]
    grid = np.arange(buf.size).reshape(buf.shape)
    # One position past the end of each advanced axis holds -1: out-of-bounds entries land there.
    grid = np.pad(grid, [(0, 1) if k in adv else (0, 0) for k in range(buf.ndim)], constant_values=-1)
    flat = grid[where]
    keep = flat >= 0
    return flat[keep], np.broadcast_to(val, flat.shape)[keep]


def eager_write(buf: np.ndarray, tree, dyn, val) -> None:
    """``buf[idx] = val`` in place, with the ref's index semantics."""
    if not is_advanced(tree):
        buf[numpy_index(buf.shape, tree, dyn)] = val
        return
    flat, vals = _flat_targets(buf, tree, dyn, val)
    buf.reshape(-1)[flat] = vals


def eager_add(buf: np.ndarray, tree, dyn, val) -> None:
    """``buf[idx] += val`` in place (repeated positions add up)."""
    if not is_advanced(tree):
        where = numpy_index(buf.shape, tree, dyn)
        buf[where] = (buf[where] + val).astype(buf.dtype, copy=False)
        return
    flat, vals = _flat_targets(buf, tree, dyn, val)
    np.add.at(buf.reshape(-1), flat, vals.astype(buf.dtype, copy=False))
