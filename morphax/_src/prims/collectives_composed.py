"""More named-axis collectives: pbroadcast, pswapaxes, pcast, psend/precv and ragged_all_to_all,
composed from those in `collectives` (all_gather, all_to_all, ppermute, axis_index), so they work
under vmap's named axes and differentiate and batch through those primitives' rules."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core.avals import get_aval
from morphax._src.prims import arithmetic
from morphax._src.prims._shape_util import as_lax_array
from morphax._src.prims.arithmetic import add, div, mul, sub
from morphax._src.prims.bitwise import bitwise_and
from morphax._src.prims.collectives import (
    _env_size,
    _names_tuple,
    _single_name,
    all_gather,
    all_to_all,
    axis_index,
    ppermute,
)
from morphax._src.prims.compare import ge, le, lt
from morphax._src.prims.conversion import broadcasted_iota, convert_element_type, full, iota
from morphax._src.prims.dynamic_slicing import dynamic_slice_in_dim
from morphax._src.prims.gather_scatter_add import gather
from morphax._src.prims.gather_scatter_dims import GatherDimensionNumbers, GatherScatterMode
from morphax._src.prims.reductions import reduce_max
from morphax._src.prims.selection import clamp, select
from morphax._src.prims.shape import broadcast_in_dim, expand_dims, reshape
from morphax._src.prims.slicing import index_in_dim
from morphax._src.prims.tokens import Token

__all__ = ["pbroadcast", "pcast", "precv", "psend", "pswapaxes", "ragged_all_to_all"]


def pbroadcast(x, axis_name, source):
    """Every member receives the value `x` (a pytree) has on member `source` of the named axis."""
    name = _single_name(axis_name, "pbroadcast")
    size = _env_size(name, "pbroadcast")
    source = int(source)
    if not 0 <= source < size:
        raise ValueError(f"pbroadcast: source {source} is out of range for axis {name!r} of size {size}.")
    return pytree.tree_map(
        lambda v: index_in_dim(all_gather(as_lax_array(v), name), source, 0, keepdims=False), x
    )


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swap the named axis with array axis `axis` (whose size must be the axis size): member i
    receives, along `axis`, the i-th slices of every member. ``all_to_all(x, axis_name, axis, axis)``."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


_PCAST_TO = ("unreduced", "reduced", "varying")


def pcast(x, axis_name, *, to):
    """Cast `x` to be varying (or reduced/unreduced) over the named axes. vmap tracks no such type,
    so the value is returned unchanged once the axes are known to be bound."""
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"axis_name={axis_name!r} must be a tuple or a str. Got {axis_name}")
    if not axis_name:
        return x
    if to not in _PCAST_TO:
        raise ValueError(f"Got unexpected `to` value. Allowed `to` values are: {set(_PCAST_TO)}")
    for n in _names_tuple(axis_name, "pcast"):
        _env_size(n, "pcast")
    return x


def _perm(perm):
    return tuple((int(s), int(t)) for s, t in perm)


def psend(x, axis_name, perm):
    """Send `x` (a pytree) along `perm` ((source, destination) pairs); returns the token the
    matching `precv` (same axis and perm) receives from."""
    name = _single_name(axis_name, "psend")
    perm = _perm(perm)
    return Token(ppermute(x, name, perm), (name, perm))


def precv(token, out_shape, axis_name, perm):
    """Receive, from the `psend` whose token this is, the value sent along `perm`: member d gets
    member s's value for each (s, d) pair and zeros otherwise. `out_shape` (ShapeDtypeStructs or
    arrays) must describe that value."""
    name = _single_name(axis_name, "precv")
    perm = _perm(perm)
    if not isinstance(token, Token):
        raise TypeError(
            f"precv: token must be a token (from psend or create_token), got {type(token).__name__}"
        )
    if token.channel != (name, perm):
        raise NotImplementedError(
            "precv receives here only from the token of a psend over the same axis_name and perm (the "
            "pair is a ppermute); for other patterns use lax.ppermute(x, axis_name, perm) directly."
        )
    got_leaves, got_tree = pytree.tree_flatten(token.payload)
    want_leaves, want_tree = pytree.tree_flatten(out_shape)
    got = [(tuple(get_aval(v).shape), np.dtype(get_aval(v).dtype)) for v in got_leaves]
    want = [(tuple(s.shape), np.dtype(s.dtype)) for s in want_leaves]
    if got_tree != want_tree or got != want:
        raise TypeError(
            f"precv: out_shape {[(s, d.name) for s, d in want]} does not describe what the psend sent "
            f"({[(s, d.name) for s, d in got]})."
        )
    return token.payload


def _take_rows(x, rows):
    """``x[rows]`` along axis 0, for an integer vector `rows` already in bounds."""
    shape = get_aval(x).shape
    dn = GatherDimensionNumbers(
        offset_dims=tuple(range(1, len(shape))), collapsed_slice_dims=(0,), start_index_map=(0,)
    )
    return gather(
        x,
        expand_dims(rows, (1,)),
        dn,
        (1,) + tuple(shape[1:]),
        mode=GatherScatterMode.PROMISE_IN_BOUNDS,
    )


def ragged_all_to_all(
    operand,
    output,
    input_offsets,
    send_sizes,
    output_offsets,
    recv_sizes,
    *,
    axis_name,
    axis_index_groups=None,
):
    """Exchange ragged slices between the members of the named axis (JAX's semantics): the K slices
    (K a multiple of the axis size N) split into N runs of K/N, run j going to member j. Slice t of
    sender i, ``operand[input_offsets[t]:][:size]``, lands on the receiver at its row
    ``output_offsets[t]`` (the sender's value), with size the receiver's ``recv_sizes`` entry for it;
    other rows keep `output`. Overlapping writes are undefined (here the later slice wins)."""
    if axis_index_groups is not None:
        raise NotImplementedError("ragged_all_to_all: axis_index_groups is not supported under vmap.")
    name = _single_name(axis_name, "ragged_all_to_all")
    n = _env_size(name, "ragged_all_to_all")
    operand, output = as_lax_array(operand), as_lax_array(output)
    vecs = [as_lax_array(v) for v in (input_offsets, send_sizes, output_offsets, recv_sizes)]
    oa, outa = get_aval(operand), get_aval(output)
    if oa.ndim < 1 or oa.shape[1:] != outa.shape[1:] or oa.dtype != outa.dtype:
        raise TypeError(
            "ragged_all_to_all: operand and output must have the same dtype and the same shape after the "
            f"leading axis, got {oa.str_short()} and {outa.str_short()}."
        )
    names = ("input_offsets", "send_sizes", "output_offsets", "recv_sizes")
    for nm, v in zip(names, vecs):
        a = get_aval(v)
        if a.ndim != 1 or not _dtypes.is_integer(a.dtype):
            raise TypeError(f"ragged_all_to_all: {nm} must be a 1-D integer array, got {a.str_short()}.")
    k = get_aval(vecs[0]).shape[0]
    if any(get_aval(v).shape[0] != k for v in vecs) or k % n:
        raise ValueError(
            "ragged_all_to_all: input_offsets, send_sizes, output_offsets and recv_sizes must have the same "
            f"length, a multiple of the size {n} of axis {name!r}; got {[get_aval(v).shape for v in vecs]}."
        )
    spd = k // n
    in_off, _, out_off, recv = [convert_element_type(v, np.int32) for v in vecs]
    me = axis_index(name)
    # Sender i's slices for me: its run `me` of input_offsets / output_offsets; the receiving slot
    # for (i, s) is my recv_sizes[i * spd + s].
    start = mul(me, np.int32(spd))
    src = reshape(dynamic_slice_in_dim(all_gather(in_off, name), start, spd, axis=1), (k,))
    dst = reshape(dynamic_slice_in_dim(all_gather(out_off, name), start, spd, axis=1), (k,))
    m = outa.shape[0]
    rows = broadcasted_iota(np.int32, (m, k), 0)
    lo = broadcast_in_dim(dst, (m, k), (1,))
    hi = broadcast_in_dim(add(dst, recv), (m, k), (1,))
    hit = bitwise_and(le(lo, rows), lt(rows, hi))
    # The (last) slice writing each output row, or -1 for rows no slice writes.
    slot = reduce_max(select(hit, broadcasted_iota(np.int32, (m, k), 1), full((m, k), -1, np.int32)), (1,))
    has = ge(slot, np.int32(0))
    slot = arithmetic.max(slot, np.int32(0))
    row = iota(np.int32, m)
    src_row = add(_take_rows(src, slot), sub(row, _take_rows(dst, slot)))
    src_row = clamp(np.int32(0), src_row, np.int32(max(oa.shape[0] - 1, 0)))
    sender = div(slot, np.int32(spd))
    if oa.shape[0] == 0:
        return output
    everyone = all_gather(operand, name)  # (n, rows, ...)
    flat = reshape(everyone, (n * oa.shape[0],) + oa.shape[1:])
    vals = _take_rows(flat, add(mul(sender, np.int32(oa.shape[0])), src_row))
    return select(broadcast_in_dim(has, outa.shape, (0,)), vals, output)
