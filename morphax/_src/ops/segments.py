"""`morphax.ops.segment_sum` / `segment_prod` / `segment_max` / `segment_min`: reduce the rows of
`data` that share a segment id, as JAX does, with one scatter into an array of the reduction's
identity.

Ids outside [0, num_segments) are dropped (mode None or "drop"; JAX does not wrap negative ids
here, unlike indexing) or clamped ("clip"). With `bucket_size`, rows are first reduced in
buckets of that many consecutive rows and the buckets then reduced, which keeps long float sums
and products more accurate.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.numpy import creation, reductions, util
from morphax._src.prims import lax_api as L

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]


def _identity(kind, dtype):
    if kind == "add":
        return 0
    if kind == "mul":
        return 1
    if _dtypes.is_bool(dtype):
        return kind == "min"
    if _dtypes.is_integer(dtype):
        info = _dtypes.iinfo(dtype)
        return info.max if kind == "min" else info.min
    return np.inf if kind == "min" else -np.inf


_SCATTERS = {"add": L.scatter_add, "mul": L.scatter_mul, "min": L.scatter_min, "max": L.scatter_max}
_REDUCERS = {"add": reductions.sum, "mul": reductions.prod, "min": reductions.min, "max": reductions.max}


def _segment_reduce(
    name, kind, data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size, mode
):
    util.check_arraylike(name, data, segment_ids)
    data, segment_ids = util.asarray_like(data), util.asarray_like(segment_ids)
    data_aval, ids_aval = get_aval(data), get_aval(segment_ids)
    if not _dtypes.is_integer(ids_aval.dtype):
        raise TypeError(f"{name}: segment_ids must have an integer dtype, got {ids_aval.dtype}.")
    if ids_aval.ndim != 1 or not data_aval.shape or data_aval.shape[0] != ids_aval.shape[0]:
        raise ValueError(
            f"{name}: segment_ids must be one id per row of data (shape ({data_aval.shape[:1]},)), got "
            f"segment_ids of shape {ids_aval.shape} for data of shape {data_aval.shape}."
        )
    if num_segments is None:
        try:
            num_segments = int(np.max(np.asarray(segment_ids))) + 1 if ids_aval.shape[0] else 0
        except Exception as err:  # a tracer: the count would be data-dependent
            raise TypeError(
                f"{name}: num_segments must be given (a Python int) when segment_ids is traced, e.g. "
                "under jit; pass it as a static argument."
            ) from err
    num_segments = int(num_segments)
    if num_segments < 0:
        raise ValueError("num_segments must be non-negative.")
    mode = L.GatherScatterMode.FILL_OR_DROP if mode is None else L.GatherScatterMode.from_any(mode)
    dtype = data_aval.dtype
    rows = data_aval.shape[1:]
    window = tuple(range(1, data_aval.ndim))
    flags = dict(indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices), mode=mode)
    if bucket_size is None:
        out = creation.full((num_segments,) + rows, _identity(kind, dtype), dtype=dtype)
        dnums = L.ScatterDimensionNumbers(
            update_window_dims=window, inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
        )
        return _SCATTERS[kind](out, segment_ids[:, None], data, dnums, **flags)
    n = ids_aval.shape[0]
    buckets = -(-n // int(bucket_size))
    out = creation.full((buckets, num_segments) + rows, _identity(kind, dtype), dtype=dtype)
    bucket_of = L.div(
        L.iota(ids_aval.dtype, n), util.convert_element_type(int(bucket_size), ids_aval.dtype, False)
    )
    indices = L.concatenate([bucket_of[:, None], segment_ids[:, None]], 1)
    dnums = L.ScatterDimensionNumbers(
        update_window_dims=window, inserted_window_dims=(0, 1), scatter_dims_to_operand_dims=(0, 1)
    )
    out = _SCATTERS[kind](out, indices, data, dnums, **flags)
    return util.convert_element_type(_REDUCERS[kind](out, axis=0), dtype, False)


def _segment_op(name, kind, what):
    def segment(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                bucket_size=None, mode=None, out_sharding=None):  # fmt: skip
        if out_sharding is not None:
            raise NotImplementedError(f"{name}: out_sharding needs the sharding API (one device here).")
        return _segment_reduce(
            name, kind, data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size, mode
        )

    segment.__name__ = segment.__qualname__ = name
    segment.__doc__ = (
        f"The {what} of the rows of `data` in each segment: ``out[i]`` reduces the rows ``j`` with "
        "``segment_ids[j] == i``, for i in range(num_segments) (default: the largest id + 1, which "
        "needs concrete ids). Empty segments hold the identity; out-of-range ids are dropped (mode "
        "None/'drop') or clamped ('clip')."
    )
    return segment


segment_sum = _segment_op("segment_sum", "add", "sum")
segment_prod = _segment_op("segment_prod", "mul", "product")
segment_max = _segment_op("segment_max", "max", "maximum")
segment_min = _segment_op("segment_min", "min", "minimum")
