"""Sorting primitives: variadic lexicographic `sort` and `top_k`.

`sort` orders like JAX: floats compare with -0.0 == +0.0 and every NaN after +inf, complex
numbers by (real, imag), ties keep their input order. `top_k` follows XLA's TopK: a total order
(+0.0 above -0.0, NaN above +inf), ties broken toward the lower index. Imports the core only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import Zero, is_zero, tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims import _stablehlo_bits as hlo_bits
from morphax._src.prims._shape_util import axis_of_shape
from morphax._src.prims._spec import FLOAT_SPECIALS, Case, TestSpec, random_array
from morphax._src.prims.builders import check_dtype
from morphax._src.prims.conversion import broadcasted_iota
from morphax._src.prims.gather_scatter_add import gather
from morphax._src.prims.gather_scatter_dims import GatherDimensionNumbers, GatherScatterMode
from morphax._src.prims.shape import broadcast_in_dim, reshape

__all__ = ["sort", "sort_key_val", "sort_p", "top_k", "top_k_p"]


def _sort_keys(x: np.ndarray) -> list:
    """The NumPy keys (most significant first) that order `x` as JAX's sort comparator does."""
    dt = x.dtype
    if _dtypes.is_complex(dt):
        return _sort_keys(np.ascontiguousarray(x.real)) + _sort_keys(np.ascontiguousarray(x.imag))
    if _dtypes.is_floating(dt):
        # Widening is exact; then -0.0 -> +0.0 and every NaN -> +NaN, as JAX canonicalizes before
        # comparing. NumPy's sorts already put NaN last and treat the zeros as equal.
        y = x.astype(np.float64 if dt == _dtypes.float64 else np.float32)
        y = np.where(y == 0, np.zeros((), y.dtype), y)
        return [np.where(np.isnan(y), np.array(np.nan, y.dtype), y)]
    if _dtypes.is_bool(dt):
        return [x.astype(np.uint8)]
    if dt.type.__module__.startswith("ml_dtypes"):  # int4/uint4 and friends
        return [x.astype(np.int64)]
    return [x]


# ------------------------------------------------------------------------------------------------
# Derivatives: both primitives permute (a selection of) their inputs along an axis, so tangents
# are gathered with the same permutation.


def _take_along_axis(x, idx, axis):
    """``x`` gathered at the integer positions `idx` along `axis` (idx has x's shape except along
    `axis`): one gather whose other axes are batching axes."""
    ndim = len(get_aval(x).shape)
    others = tuple(d for d in range(ndim) if d != axis)
    dnums = GatherDimensionNumbers(
        offset_dims=(),
        collapsed_slice_dims=(axis,),
        start_index_map=(axis,),
        operand_batching_dims=others,
        start_indices_batching_dims=others,
    )
    idx = reshape(idx, tuple(get_aval(idx).shape) + (1,))
    return gather(x, idx, dnums, (1,) * ndim, mode=GatherScatterMode.PROMISE_IN_BOUNDS)


# ------------------------------------------------------------------------------------------------
# sort

sort_p = Primitive("sort", multiple_results=True)
sort_p.kind = Kind.OPAQUE
sort_p.stablehlo = hlo_bits.sort


def _sort_abstract_eval(*operands, dimension, is_stable, num_keys):
    if not operands:
        raise TypeError("sort requires at least one operand")
    shape = operands[0].shape
    if any(o.shape != shape for o in operands[1:]):
        raise TypeError(
            "sort: arguments must have equal shapes, got "
            f"{', '.join(o.str_short() for o in operands)}. Broadcast them to one shape first."
        )
    if not (isinstance(dimension, (int, np.integer)) and 0 <= dimension < len(shape)):
        raise ValueError(
            f"sort: dimension {dimension} is out of bounds for operands of shape {shape} (sort needs "
            "rank >= 1 and a non-negative dimension below the rank)."
        )
    if not (isinstance(num_keys, (int, np.integer)) and 1 <= num_keys <= len(operands)):
        raise ValueError(
            f"sort: num_keys={num_keys} must be between 1 and the number of operands ({len(operands)})"
        )
    return [ShapedArray(o.shape, o.dtype, o.weak_type) for o in operands]


def _sort_impl(*operands, dimension, is_stable, num_keys):
    keys = []
    for x in operands[:num_keys]:
        keys.extend(_sort_keys(x))
    # np.lexsort is stable and sorts by the LAST key first, so the most significant goes last.
    # A stable order is also a valid result for is_stable=False.
    perm = np.lexsort(keys[::-1], axis=dimension)
    return [np.take_along_axis(x, perm, axis=dimension) for x in operands]


sort_p.impl = _sort_impl
sort_p.abstract_eval = _sort_abstract_eval


def _sort_cases(rng):
    out = []
    base = {"is_stable": True, "num_keys": 1}
    shapes = (((3,), 0), ((2, 5), 1), ((2, 5), 0), ((0,), 0), ((1,), 0), ((2, 0, 3), 2), ((3, 4, 2), 1))
    for dt in ("float32", "float16", "bfloat16", "int32", "uint8", "int8", "bool", "complex64"):
        for shape, dim in shapes:
            x = random_array(rng, shape, dt, (-3, 3))
            out.append(Case((x,), dict(base, dimension=dim), f"{dt}{list(shape)}@{dim}"))
        if _dtypes.is_floating(np.dtype(dt)):
            sp = np.array(FLOAT_SPECIALS + (-np.nan, 0.0, np.nan, -0.0), np.float64).astype(dt)
            out.append(Case((sp,), dict(base, dimension=0), f"{dt}-specials"))
            payload = np.arange(sp.size, dtype=np.int32)
            out.append(Case((sp, payload), dict(base, dimension=0), f"{dt}-specials-with-payload"))
    # Several operands, lexicographic over num_keys of them; duplicates test stability.
    k1 = rng.integers(0, 3, size=(4, 6)).astype(np.int32)
    k2 = rng.integers(0, 2, size=(4, 6)).astype(np.float32)
    v = rng.standard_normal((4, 6)).astype(np.float32)
    for nk in (1, 2, 3):
        for stable in (True, False):
            out.append(
                Case(
                    (k1, k2, v),
                    {"dimension": 1, "is_stable": stable, "num_keys": nk},
                    f"3ops-k{nk}-s{stable}",
                )
            )
    out.append(Case((k1, v), {"dimension": 0, "is_stable": True, "num_keys": 1}, "2ops-dim0"))
    c = np.array([1 + 2j, 1 + 1j, np.nan + 0j, 0 + 5j, complex(1, np.nan), -1 + 0j], np.complex64)
    out.append(Case((c,), dict(base, dimension=0), "complex-nan"))
    return out


sort_p.test_spec = TestSpec(cases=_sort_cases, differentiable=True)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    # Sort an iota along with the operands (never a key) to learn the permutation.
    shape = get_aval(primals[0]).shape
    iota = broadcasted_iota(np.dtype(np.int32), shape, dimension)
    outs = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    perm = outs[-1]
    out_t = []
    for o, t in zip(outs[:-1], tangents):
        aval = tangent_aval(get_aval(o))
        if is_zero(t) or aval.dtype == _dtypes.float0:
            out_t.append(Zero(aval))
        else:
            out_t.append(_take_along_axis(t, perm, dimension))
    return list(outs[:-1]), out_t


sort_p.jvp = _sort_jvp


def _sort_batch(vals, dims, *, axis_data, dimension, is_stable, num_keys):
    # Every operand gets its batch axis where the first batched one has it (unbatched operands
    # are broadcast there); the sorted dimension moves past it.
    bd = next(d for d in dims if d is not None)
    size = axis_data.size
    ops = []
    for v, d in zip(vals, dims):
        if d is None:
            shape = tuple(get_aval(v).shape)
            rank = len(shape) + 1
            bdims = tuple(i for i in range(rank) if i != bd)
            v = broadcast_in_dim(v, shape[:bd] + (size,) + shape[bd:], bdims)
        else:
            v = moveaxis(v, d, bd)
        ops.append(v)
    dim = dimension + (dimension >= bd)
    outs = sort_p.bind(*ops, dimension=dim, is_stable=is_stable, num_keys=num_keys)
    return list(outs), [bd] * len(outs)


sort_p.batch = _sort_batch


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort along `dimension`. A sequence of operands is sorted together, lexicographically by the
    first `num_keys` of them; the result is then a tuple."""
    if isinstance(operand, Sequence):
        if len(operand) == 0:
            raise TypeError("sort requires at least one operand")
        if not 1 <= num_keys <= len(operand):
            raise ValueError(f"sort: num_keys={num_keys} must be between 1 and len(operand)={len(operand)}")
        dim = axis_of_shape("sort", dimension, get_aval(operand[0]).shape)
        return tuple(sort_p.bind(*operand, dimension=dim, is_stable=bool(is_stable), num_keys=int(num_keys)))
    if num_keys != 1:
        raise ValueError(f"sort: num_keys={num_keys} must equal 1 for a single operand.")
    dim = axis_of_shape("sort", dimension, get_aval(operand).shape)
    return sort_p.bind(operand, dimension=dim, is_stable=bool(is_stable), num_keys=1)[0]


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """Sort `keys` along `dimension` and apply the same permutation to `values`."""
    k, v = sort([keys, values], dimension=dimension, is_stable=is_stable, num_keys=1)
    return k, v


# ------------------------------------------------------------------------------------------------
# top_k

top_k_p = Primitive("top_k", multiple_results=True)
top_k_p.kind = Kind.OPAQUE
top_k_p.stablehlo = hlo_bits.top_k


def _topk_abstract_eval(operand, *, k, axis):
    check_dtype("top_k", operand.dtype, "real")
    if operand.ndim == 0:
        raise TypeError(f"top_k: operand must have at least 1 dimension, got {operand.str_short()}")
    if not (isinstance(axis, (int, np.integer)) and 0 <= axis < operand.ndim):
        raise ValueError(f"top_k: axis {axis} is out of bounds for an operand of type {operand.str_short()}")
    if not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"top_k: k must be a non-negative integer, got {k!r}")
    if operand.shape[axis] < k:
        raise ValueError(
            f"top_k: k={k} must be no larger than the size of axis {axis} of the operand, whose shape "
            f"is {operand.shape}."
        )
    shape = operand.shape[:axis] + (int(k),) + operand.shape[axis + 1 :]
    return [
        ShapedArray(shape, operand.dtype, operand.weak_type),
        ShapedArray(shape, np.dtype(np.int32), False),
    ]


def _total_order_key(x: np.ndarray) -> np.ndarray:
    """An int64 key whose order is IEEE total order: -NaN < -inf < ... < -0.0 < +0.0 < ... < +NaN."""
    if _dtypes.is_floating(x.dtype):
        if x.dtype == _dtypes.float64:
            bits = x.view(np.int64)
            return np.where(bits < 0, -(bits & np.int64(0x7FFFFFFFFFFFFFFF)) - 1, bits)
        bits = x.astype(np.float32).view(np.int32).astype(np.int64)  # widening keeps sign and NaN
        return np.where(bits < 0, -(bits & 0x7FFFFFFF) - 1, bits)
    if _dtypes.is_bool(x.dtype):
        return x.astype(np.int64)
    return x if x.dtype == np.uint64 else x.astype(np.int64)


def _topk_impl(operand, *, k, axis):
    key = _total_order_key(operand)
    # Descending by value, ascending by index on ties: a stable sort on the bitwise complement of
    # the key (order reversing, and unlike negation it cannot overflow), then by index.
    n = operand.shape[axis]
    idx = np.broadcast_to(
        np.arange(n, dtype=np.int64).reshape((n,) + (1,) * (operand.ndim - axis - 1)), operand.shape
    )
    perm = np.lexsort((idx, ~key), axis=axis)
    perm = np.take(perm, np.arange(k), axis=axis)
    return [np.take_along_axis(operand, perm, axis=axis), perm.astype(np.int32)]


top_k_p.impl = _topk_impl
top_k_p.abstract_eval = _topk_abstract_eval


def _topk_cases(rng):
    out = []
    configs = (
        ((5,), 2, 0),
        ((5,), 5, 0),
        ((5,), 0, 0),
        ((3, 6), 3, 1),
        ((6, 3), 2, 0),
        ((1,), 1, 0),
        ((2, 0), 0, 1),
        ((2, 4, 3), 2, 1),
    )
    for dt in ("float32", "float16", "bfloat16", "int32", "uint8", "int8", "uint32", "bool"):
        for shape, k, axis in configs:
            x = random_array(rng, shape, dt, (-3, 3))
            out.append(Case((x,), {"k": k, "axis": axis}, f"{dt}{list(shape)}k={k}@{axis}"))
        if _dtypes.is_floating(np.dtype(dt)):
            sp = np.array(FLOAT_SPECIALS + (-0.0, 0.0, np.nan, 1.0), np.float64).astype(dt)
            out.append(Case((sp,), {"k": 8, "axis": 0}, f"{dt}-specials"))
    return out


top_k_p.test_spec = TestSpec(cases=_topk_cases)


def _top_k_jvp(primals, tangents, *, k, axis):
    (operand,), (t,) = primals, tangents
    values, indices = top_k_p.bind(operand, k=k, axis=axis)
    aval = tangent_aval(get_aval(values))
    idx_t = Zero(tangent_aval(get_aval(indices)))
    if is_zero(t) or aval.dtype == _dtypes.float0:
        return [values, indices], [Zero(aval), idx_t]
    return [values, indices], [_take_along_axis(t, indices, axis), idx_t]


top_k_p.jvp = _top_k_jvp


def _top_k_batch(vals, dims, *, axis_data, k, axis):
    # The batch axis stays put; the operated axis moves past it.
    (x,), (d,) = vals, dims
    return list(top_k_p.bind(x, k=k, axis=axis + (axis >= d))), [d, d]


top_k_p.batch = _top_k_batch


def top_k(operand, k: int, *, axis: int = -1):
    """The `k` largest entries along `axis` (descending) and their int32 indices; ties keep the
    lower index first and NaN counts as larger than +inf."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"top_k: k must be a static Python int, got {k!r}")
    dt = get_aval(operand).dtype
    if _dtypes.is_complex(dt):
        raise ValueError(
            f"top_k is not compatible with complex inputs (got an operand of dtype {dt}): take the "
            "real part or the magnitude first."
        )
    ax = axis_of_shape("top_k", axis, get_aval(operand).shape) if get_aval(operand).shape else axis
    # A list [values, indices], as JAX returns (its annotation says tuple; the value is a list).
    return list(top_k_p.bind(operand, k=int(k), axis=ax))
