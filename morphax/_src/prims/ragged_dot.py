"""`ragged_dot` / `ragged_dot_general` (lhs split along one dimension into consecutive groups of
`group_sizes`, as JAX defines them) and the dot type aliases. Composed from `dot_general` and masks
built from `group_sizes`, so every rule comes from the primitives used; a row never reads another
group's weights (their inf/nan stay out)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Union

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.prims._shape_util import as_lax_array
from morphax._src.prims.arithmetic import sub
from morphax._src.prims.bitwise import bitwise_and
from morphax._src.prims.compare import le, lt
from morphax._src.prims.conversion import broadcasted_iota, convert_element_type, full_like
from morphax._src.prims.dot import Precision, dot_general
from morphax._src.prims.dot_algorithm import DotAlgorithm, DotAlgorithmPreset
from morphax._src.prims.reductions import cumsum, reduce_or, reduce_sum
from morphax._src.prims.selection import select
from morphax._src.prims.shape import broadcast_in_dim, transpose

__all__ = [
    "DotDimensionNumbers",
    "PrecisionLike",
    "RaggedDotDimensionNumbers",
    "ragged_dot",
    "ragged_dot_general",
]

DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]]
PrecisionLike = Union[  # noqa: UP007 - JAX spells the alias with typing.Union
    None,
    str,
    Precision,
    tuple[str, str],
    tuple[Precision, Precision],
    DotAlgorithm,
    DotAlgorithmPreset,
]


@dataclasses.dataclass(frozen=True, init=False)
class RaggedDotDimensionNumbers:
    """`dot_dimension_numbers` as for `dot_general`, the lhs ragged dimension (one) and the rhs
    group dimensions (one when the ragged dimension is non-contracting, none otherwise)."""

    dot_dimension_numbers: tuple
    lhs_ragged_dimensions: tuple
    rhs_group_dimensions: tuple

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        dn = tuple(tuple(tuple(int(d) for d in dims) for dims in pair) for pair in dot_dimension_numbers)
        object.__setattr__(self, "dot_dimension_numbers", dn)
        object.__setattr__(self, "lhs_ragged_dimensions", tuple(int(d) for d in lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", tuple(int(d) for d in rhs_group_dimensions))


_BASIC = RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))


def ragged_dot(
    lhs,
    rhs,
    group_sizes,
    precision=None,
    preferred_element_type=None,
    group_offset=None,
    out_sharding=None,
):
    """``lhs[m, k]``, ``rhs[g, k, n]``, ``group_sizes[g]`` -> ``[m, n]``: rows of `lhs` in group i
    (consecutive, in order) multiply ``rhs[i]``; rows past ``sum(group_sizes)`` are zero."""
    return ragged_dot_general(
        lhs,
        rhs,
        group_sizes,
        _BASIC,
        precision=precision,
        preferred_element_type=preferred_element_type,
        group_offset=group_offset,
        out_sharding=out_sharding,
    )


def _mode(lhs_ndim, ragged, lc, lb):
    free = [d for d in range(lhs_ndim) if d not in lc and d not in lb]
    if ragged in free:
        return "noncontracting"
    if ragged in lc:
        return "contracting"
    if ragged in lb:
        return "batch"
    raise TypeError(
        f"lhs_ragged_dim {ragged} not found in lhs_noncontracting {free}, lhs_contracting {list(lc)}, or "
        f"lhs_batch {list(lb)}."
    )


def _prefix(mode, ndim, ragged, batch, contract):
    """The lhs (or rhs) dims that index group_sizes before its group axis: [b..., x..., g]."""
    free = [d for d in range(ndim) if d not in contract and d not in batch]
    if mode == "noncontracting":
        return list(batch) + free[: free.index(ragged)]
    if mode == "contracting":
        return list(batch) + list(contract)[: list(contract).index(ragged)]
    return list(batch)[: list(batch).index(ragged)]


def _check_range(d, ndim, what, arg):
    if not 0 <= d < ndim:
        raise TypeError(
            f"ragged_dot_general requires {what} numbers to be nonnegative and less than the number of axes of "
            f"the {arg} value, got {d} for {arg} of rank {ndim}."
        )


def _group_mask(group_sizes, size):
    """bool ``[..., size, g]``: position p (along the ragged dimension) is in group i."""
    gs = convert_element_type(group_sizes, np.int32)
    gshape = get_aval(gs).shape
    shape = gshape[:-1] + (size, gshape[-1])
    dims = tuple(range(len(gshape) - 1)) + (len(shape) - 1,)
    ends = cumsum(gs, axis=len(gshape) - 1)
    starts = broadcast_in_dim(sub(ends, gs), shape, dims)
    ends = broadcast_in_dim(ends, shape, dims)
    pos = broadcasted_iota(np.int32, shape, len(shape) - 2)
    return bitwise_and(le(starts, pos), lt(pos, ends))


def _place(x, shape, positions):
    """Broadcast `x` into `shape` with its axis i at output axis ``positions[i]`` (any order)."""
    order = sorted(range(len(positions)), key=lambda i: positions[i])
    if order != list(range(len(order))):
        x = transpose(x, tuple(order))
    return broadcast_in_dim(x, tuple(shape), tuple(sorted(positions)))


def _masked(mask, x):
    return select(mask, x, full_like(x, 0))


def ragged_dot_general(
    lhs,
    rhs,
    group_sizes,
    ragged_dot_dimension_numbers,
    precision=None,
    preferred_element_type=None,
    group_offset=None,
    out_sharding=None,
):
    """Ragged `dot_general` in JAX's three modes, by where the lhs ragged dimension is:
    non-contracting ``[b.., m.., k..], [g, b.., k.., n..] -> [b.., m.., n..]``; contracting
    ``[b.., m.., k..], [b.., k.., n..] -> [g, b.., m.., n..]``; batch (a plain dot_general).
    `group_sizes` is ``[g]`` or ``[b.., x.., g]`` with x the lhs dims of the same kind outer to
    the ragged one."""
    if group_offset is not None:
        raise NotImplementedError(
            "ragged_dot_general: group_offset is not supported; slice group_sizes (and rhs) to the groups "
            "to compute instead."
        )
    lhs, rhs, group_sizes = as_lax_array(lhs), as_lax_array(rhs), as_lax_array(group_sizes)
    la, ra, ga = get_aval(lhs), get_aval(rhs), get_aval(group_sizes)
    dn = ragged_dot_dimension_numbers
    if not isinstance(dn, RaggedDotDimensionNumbers):
        raise TypeError(
            f"ragged_dot_general: ragged_dot_dimension_numbers must be a RaggedDotDimensionNumbers, got {dn!r}."
        )
    if not _dtypes.is_integer(ga.dtype):
        raise TypeError("ragged_dot_general requires that group_sizes.dtype is subtype of np.integer.")
    if len(dn.lhs_ragged_dimensions) != 1:
        raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension.")
    ragged = dn.lhs_ragged_dimensions[0]
    _check_range(ragged, la.ndim, "lhs ragged dimension", "lhs")
    (lc, rc), (lb, rb) = dn.dot_dimension_numbers
    mode = _mode(la.ndim, ragged, lc, lb)
    if ga.ndim == 0:
        raise TypeError("expected rank of group_sizes to be >=1.")
    l_prefix = _prefix(mode, la.ndim, ragged, lb, lc)
    if ga.ndim != 1:
        want = tuple(la.shape[i] for i in l_prefix) + (ga.shape[-1],)
        if ga.shape != want:
            raise TypeError(f"expected group_sizes to have shape {want}, got {ga.shape}.")
    g = ga.shape[-1]
    groups = dn.rhs_group_dimensions
    if mode != "noncontracting" and groups:
        raise TypeError(
            "ragged_dot_general requires zero group dimensions in the rhs when lhs ragged dimension is "
            "contracting or batch."
        )
    params = dict(
        precision=precision, preferred_element_type=preferred_element_type, out_sharding=out_sharding
    )
    if mode == "batch":
        return dot_general(lhs, rhs, ((lc, rc), (lb, rb)), **params)

    if mode == "contracting":
        # Each group's product reads only its own slice of the contracting dim: mask both operands
        # per group and make the group a leading batch dimension.
        rr = rc[list(lc).index(ragged)]
        r_prefix = _prefix(mode, ra.ndim, rr, rb, rc)
        operands = []
        for x, aval, prefix, rdim in ((lhs, la, l_prefix, ragged), (rhs, ra, r_prefix, rr)):
            shape = (g,) + aval.shape
            mask = _group_mask(group_sizes, aval.shape[rdim])
            lead = [1 + p for p in prefix] if ga.ndim != 1 else []
            mask = _place(mask, shape, lead + [1 + rdim, 0])
            wide = broadcast_in_dim(x, shape, tuple(range(1, len(shape))))
            operands.append(_masked(mask, wide))

        def inc(dims):
            return tuple(d + 1 for d in dims)

        dims = ((inc(lc), inc(rc)), ((0,) + inc(lb), (0,) + inc(rb)))
        return dot_general(*operands, dims, **params)

    # Non-contracting: the rhs group dim is one more free dim of the product; each row keeps the
    # entry of its own group (rows past the last group keep none: zero).
    if len(groups) != 1:
        raise TypeError(
            "ragged_dot_general requires exactly one rhs group dimension when lhs ragged dimension is "
            "noncontracting."
        )
    gdim = groups[0]
    _check_range(gdim, ra.ndim, "rhs group dimension", "rhs")
    if gdim in rb or gdim in rc:
        raise TypeError(
            "ragged_dot_general requires rhs group dimension numbers to be distinct from contracting and "
            "batch dimensions."
        )
    if ra.shape[gdim] != g:
        raise TypeError(f"expected rhs group dimension size to be {g}, got {ra.shape[gdim]}.")
    full = dot_general(lhs, rhs, ((lc, rc), (lb, rb)), **params)
    shape = get_aval(full).shape
    nb = len(lb)
    lfree = [d for d in range(la.ndim) if d not in lc and d not in lb]
    rfree = [d for d in range(ra.ndim) if d not in rc and d not in rb]
    ragged_pos = nb + lfree.index(ragged)
    g_pos = nb + len(lfree) + rfree.index(gdim)
    lead = list(range(nb)) + [nb + j for j in range(lfree.index(ragged))] if ga.ndim != 1 else []
    mask = _place(_group_mask(group_sizes, la.shape[ragged]), shape, lead + [ragged_pos, g_pos])
    picked = _masked(mask, full)
    if _dtypes.is_bool(get_aval(full).dtype):
        return reduce_or(picked, (g_pos,))
    return reduce_sum(picked, (g_pos,))
