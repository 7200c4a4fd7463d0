"""NumPy indexing: `x[idx]`, functional updates via `x.at[idx]`, and take / take_along_axis /
put_along_axis. Basic indices lower to slice/rev/squeeze/broadcast_in_dim (dynamic_slice for traced
scalars), advanced ones to one gather or scatter planned by `_index_plan`. JAX's out-of-bounds
policy, static Python ints included: reads clamp (an out-of-bounds static int becomes a
dynamic_slice start, as in JAX, so checkify sees it), updates are dropped, and mode='fill' reads
return the fill value. Default reads are PROMISE_IN_BOUNDS gathers: clamped forward, while their
transpose (a scatter-add) drops the cotangent of an out-of-bounds index, as JAX's does."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from morphax._src.config import config
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.core.values import make_array
from morphax._src.errors import NonConcreteBooleanIndexError
from morphax._src.numpy import ready_shortcuts, ufuncs, util
from morphax._src.numpy._index_plan import (
    DYNINT,
    INT,
    NONE,
    SLICE,
    Plan,
    _as_index_dtype,
    _has_array_leaf,
    _stack_sequence,
    apply_static_slices,
    normalize_dynamic,
    parse_index,
)
from morphax._src.prims import lax_api as L
from morphax._src.runtime.array import Array

__all__ = ["take", "take_along_axis", "put_along_axis"]

_MODE_NAMES = ("clip", "fill", "drop", "promise_in_bounds")


def _parse_mode(mode, fun: str):
    """None stays None (the caller's default); strings and GatherScatterMode become the enum."""
    if mode is None:
        return None
    if isinstance(mode, L.GatherScatterMode):
        return mode
    if isinstance(mode, str) and mode in _MODE_NAMES:
        return L.GatherScatterMode.from_any(mode)
    raise ValueError(
        f"{fun}: unknown out-of-bounds mode {mode!r}; expected one of {', '.join(_MODE_NAMES)} or None."
    )


def _default_fill(dtype):
    """What an out-of-bounds 'fill' read returns by default (as lax.gather does)."""
    if _dtypes.is_inexact(dtype):
        return np.nan
    if _dtypes.is_bool(dtype):
        return True
    info = _dtypes.iinfo(dtype)
    return info.max if _dtypes.is_unsigned(dtype) else info.min


def _full(shape, value, aval):
    const = make_array(np.asarray(value).astype(aval.dtype), aval.dtype, aval.weak_type)
    return L.broadcast_in_dim(const, tuple(shape), ())


def _insert_axes(y, parsed):
    if not parsed.inserted:
        return y
    keep = tuple(d for d in range(len(parsed.shape)) if d not in parsed.inserted)
    return L.broadcast_in_dim(y, parsed.shape, keep)


# ------------------------------------------------------------------------------- x[idx]


@dataclasses.dataclass(frozen=True)
class Slice:
    """`size` elements from `start` (which may be traced) every `stride`: what `morphax.ds` makes.

    As an index, a concrete start is the slice ``start:start + size * stride:stride``; a traced
    one takes the elements ``start + stride * arange(size)`` (clamped at the ends like any
    array index)."""

    start: Any
    size: int
    stride: int = 1

    def __post_init__(self):
        if not isinstance(self.size, (int, np.integer)) or self.size < 0:
            raise TypeError(f"ds: size must be a static non-negative int, got {self.size!r}")
        if not isinstance(self.stride, (int, np.integer)) or self.stride < 1:
            raise TypeError(f"ds: stride must be a static positive int, got {self.stride!r}")

    def as_index(self):
        start = self.start
        if isinstance(start, (int, np.integer)):
            return slice(int(start), int(start) + self.size * self.stride, self.stride)
        return L.add(L.mul(L.iota(get_aval(start).dtype, self.size), self.stride), start)


def ds(start, size=None, stride=None):
    """A `Slice` of `size` elements from `start` by `stride` (JAX's ``jax.ds``); as with
    ``range``, one argument is the size (``ds(n)`` is ``ds(0, n)``)."""
    if size is None:
        start, size = 0, start
    return Slice(start, size, 1 if stride is None else stride)


def getitem(arr, idx):
    """`arr[idx]` with NumPy semantics; out-of-bounds array indices clamp (JAX's default)."""
    if isinstance(idx, Slice) or (isinstance(idx, tuple) and any(isinstance(i, Slice) for i in idx)):
        idx = tuple(
            i.as_index() if isinstance(i, Slice) else i for i in (idx if isinstance(idx, tuple) else (idx,))
        )
    return _rewriting_take(arr, idx)


def _rewriting_take(
    arr, idx, *, mode=None, fill_value=None, unique_indices=False, indices_are_sorted=False, normalize=True
):
    arr = util.asarray_like(arr)
    aval = get_aval(arr)
    gmode = _parse_mode(mode, "indexing")
    fill = gmode == L.GatherScatterMode.FILL_OR_DROP
    check = config.check_static_indices and gmode in (None, L.GatherScatterMode.PROMISE_IN_BOUNDS)
    parsed = parse_index(
        aval.shape, idx, clip_ints=gmode == L.GatherScatterMode.CLIP, check_ints=check, wrap_ints=normalize
    )
    y = _insert_axes(arr, parsed)
    if not parsed.has_array and not (fill and parsed.has_int):
        return _basic_take(y, parsed, normalize)
    y, shape = apply_static_slices(y, parsed.entries, parsed.shape)
    plan = Plan(shape, parsed.entries)
    if plan.empty_axis_indexed:
        if not fill:
            d = next(d for d in plan.collapsed if shape[d] == 0)
            raise IndexError(f"index is out of bounds for axis {d} with size 0 (array shape {aval.shape})")
        out = _full(plan.gather_shape, _default_fill(aval.dtype) if fill_value is None else fill_value, aval)
    elif 0 in plan.gather_shape:
        out = _full(plan.gather_shape, 0, aval)
    else:
        out = _gather(
            y,
            plan,
            gmode or L.GatherScatterMode.PROMISE_IN_BOUNDS,
            fill_value,
            unique_indices,
            indices_are_sorted,
            normalize,
        )
    if plan.none_dims:
        keep = tuple(d for d in range(len(plan.result_shape)) if d not in plan.none_dims)
        out = L.broadcast_in_dim(out, plan.result_shape, keep)
    return out


def _gather(y, plan, mode, fill_value, unique_indices, indices_are_sorted, normalize=True):
    indices, index_map = plan.indices(normalize)
    dnums = L.GatherDimensionNumbers(
        offset_dims=plan.offset_dims, collapsed_slice_dims=plan.collapsed, start_index_map=index_map
    )
    return L.gather(
        y,
        indices,
        dnums,
        plan.slice_sizes,
        indices_are_sorted=bool(indices_are_sorted),
        unique_indices=bool(unique_indices),
        mode=mode,
        fill_value=fill_value,
    )


def _basic_take(y, parsed, normalize):
    """Only slices, ints and None: static slicing, one dynamic_slice for traced scalars, squeeze."""
    entries = parsed.entries
    idx_dtype = _dtypes.default_int_dtype()
    for e in entries:
        if e.kind == INT and parsed.shape[e.dim] == 0:
            raise IndexError(f"index is out of bounds for axis {e.dim} with size 0")
        if e.kind == INT and not 0 <= e.value < parsed.shape[e.dim]:
            # Out of bounds: a constant dynamic_slice start, normalized once and clamped there (as
            # JAX does). Any value past the index dtype's range clamps alike, so saturate to it.
            # NB: JAX raises OverflowError for a static index past int32 (x64 off) instead.
            info = np.iinfo(idx_dtype)
            e.kind, e.value = DYNINT, np.asarray(min(max(e.value, int(info.min)), int(info.max)), idx_dtype)
    y, shape = apply_static_slices(y, entries, parsed.shape, ints=True)
    dyn = [e for e in entries if e.kind == DYNINT]
    if dyn:
        # One dynamic_slice for every traced scalar index; it wraps negative starts once and clamps.
        starts, sizes = [0] * len(shape), list(shape)
        for e in dyn:
            if shape[e.dim] == 0:
                raise IndexError(f"index is out of bounds for axis {e.dim} with size 0")
            starts[e.dim] = util.convert_element_type(e.value, idx_dtype, get_aval(e.value).weak_type)
            sizes[e.dim] = 1
        y = L.dynamic_slice(y, starts, sizes, allow_negative_indices=normalize)
    squeezed = tuple(e.dim for e in entries if e.kind in (INT, DYNINT))
    if squeezed:
        y = L.squeeze(y, squeezed)
    if any(e.kind == NONE for e in entries):
        final, keep = [], []
        for e in entries:
            if e.kind == NONE:
                final.append(1)
            elif e.kind == SLICE:
                keep.append(len(final))
                final.append(e.count)
        y = L.broadcast_in_dim(y, tuple(final), tuple(keep))
    return y


# ------------------------------------------------------------------------------- x.at[idx]


def _broadcast_values(y, shape, fun):
    """Values broadcast to the indexed shape (extra leading length-1 axes are dropped, as NumPy
    assignment allows)."""
    ys = tuple(get_aval(y).shape)
    shape = tuple(shape)
    if len(ys) > len(shape):
        lead = len(ys) - len(shape)
        if any(s != 1 for s in ys[:lead]):
            raise ValueError(
                f"{fun}: cannot broadcast update values of shape {ys} to the indexed shape {shape}"
            )
        ys = ys[lead:]
        y = L.reshape(y, ys)
    try:
        ok = np.broadcast_shapes(ys, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{fun}: cannot broadcast update values of shape {ys} to the indexed shape {shape}")
    if ys != shape:
        y = L.broadcast_in_dim(y, shape, tuple(range(len(shape) - len(ys), len(shape))))
    return y


_SCATTERS = {
    "set": "scatter",
    "add": "scatter_add",
    "mul": "scatter_mul",
    "min": "scatter_min",
    "max": "scatter_max",
}


def _as_values(fun, values):
    """Update values: arrays, scalars, or (as JAX allows) lists and tuples of them."""
    if isinstance(values, (list, tuple)):
        values = _stack_sequence(values) if _has_array_leaf(values) else np.asarray(values)
    util.check_arraylike(fun, values)
    if isinstance(values, np.ndarray) and values.dtype.kind not in "biufc":
        raise TypeError(f"{fun}: update values must be numeric or bool, got dtype {values.dtype}")
    return util.asarray_like(values)


def _scatter_update(
    x, idx, values, op, *, mode=None, unique_indices=False, indices_are_sorted=False, fun=None, normalize=True
):
    fun = fun or f"x.at[idx].{op}"
    values = _as_values(fun, values)
    x = util.asarray_like(x)
    xa = get_aval(x)
    values = util.convert_element_type(values, xa.dtype, xa.weak_type)
    smode = _parse_mode(mode, fun) or L.GatherScatterMode.FILL_OR_DROP
    parsed = parse_index(xa.shape, idx, clip_ints=smode == L.GatherScatterMode.CLIP, wrap_ints=normalize)
    plan = Plan(parsed.shape, parsed.entries)
    values = _broadcast_values(values, plan.result_shape, fun)
    if op == "sub":
        values, op = L.neg(values), "add"
    if 0 in plan.gather_shape or plan.empty_axis_indexed:
        return x
    if plan.none_dims:
        values = L.squeeze(values, plan.none_dims)
    operand = _insert_axes(x, parsed)
    indices, index_map = plan.indices(normalize)
    dnums = L.ScatterDimensionNumbers(
        update_window_dims=plan.offset_dims,
        inserted_window_dims=plan.collapsed,
        scatter_dims_to_operand_dims=index_map,
    )
    out = getattr(L, _SCATTERS[op])(
        operand,
        indices,
        values,
        dnums,
        indices_are_sorted=bool(indices_are_sorted),
        unique_indices=bool(unique_indices),
        mode=smode,
    )
    if parsed.inserted:
        out = L.reshape(out, xa.shape)
    return out


def _ones_like(x):
    aval = get_aval(x)
    return _full(aval.shape, 1, aval)


class _IndexUpdateRef:
    """`x.at[idx]`: functional updates of the elements `x[idx]` would read (see `AtIndexer`)."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(
        self,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        fill_value=None,
        wrap_negative_indices=True,
    ):
        """`x[idx]`, with a choice of out-of-bounds `mode` ('fill' returns `fill_value`). With
        `wrap_negative_indices=False` a negative index is out of bounds (as JAX)."""
        return _rewriting_take(
            self.array,
            self.index,
            mode=mode,
            fill_value=fill_value,
            unique_indices=unique_indices,
            indices_are_sorted=indices_are_sorted,
            normalize=bool(wrap_negative_indices),
        )

    def _update(self, op, values, indices_are_sorted, unique_indices, mode, name, wrap=True):
        return _scatter_update(
            self.array,
            self.index,
            values,
            op,
            mode=mode,
            unique_indices=unique_indices,
            indices_are_sorted=indices_are_sorted,
            fun=f"x.at[idx].{name}",
            normalize=bool(wrap),
        )

    def set(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """`x[idx] = values`; with repeated indices the last update wins."""
        if mode is None and wrap_negative_indices is True and type(self.array) is Array:
            out = ready_shortcuts.static_set(self.array, self.index, values)
            if out is not None:  # ints and slices of a ready array: set on a NumPy copy
                return out
        return self._update(
            "set", values, indices_are_sorted, unique_indices, mode, "set", wrap_negative_indices
        )

    def add(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """`x[idx] += values`; repeated indices accumulate (like `np.add.at`)."""
        return self._update(
            "add", values, indices_are_sorted, unique_indices, mode, "add", wrap_negative_indices
        )

    def subtract(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """`x[idx] -= values`; repeated indices accumulate."""
        return self._update(
            "sub", values, indices_are_sorted, unique_indices, mode, "subtract", wrap_negative_indices
        )

    def multiply(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """`x[idx] *= values`; repeated indices accumulate."""
        return self._update(
            "mul", values, indices_are_sorted, unique_indices, mode, "multiply", wrap_negative_indices
        )

    mul = multiply

    def min(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """`x[idx] = minimum(x[idx], values)`."""
        return self._update(
            "min", values, indices_are_sorted, unique_indices, mode, "min", wrap_negative_indices
        )

    def max(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """`x[idx] = maximum(x[idx], values)`."""
        return self._update(
            "max", values, indices_are_sorted, unique_indices, mode, "max", wrap_negative_indices
        )

    def divide(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """`x[idx] /= values`, as JAX computes it: `x / ones_like(x).at[idx].mul(values)`, so the
        result has `true_divide`'s dtype (integers give floats) and repeated indices compound."""
        x = util.asarray_like(self.array)
        scale = self._ones_times(
            x, values, indices_are_sorted, unique_indices, mode, "divide", wrap_negative_indices
        )
        return ufuncs.true_divide(x, scale)

    def power(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """`x[idx] **= values`, as JAX computes it: `x ** ones_like(x).at[idx].mul(values)`."""
        x = util.asarray_like(self.array)
        exponent = self._ones_times(
            x, values, indices_are_sorted, unique_indices, mode, "power", wrap_negative_indices
        )
        return ufuncs.power(x, exponent)

    def _ones_times(self, x, values, indices_are_sorted, unique_indices, mode, method, wrap=True):
        """ones_like(x).at[idx].mul(values): the per-element divisor or exponent of divide/power."""
        return _scatter_update(
            _ones_like(x),
            self.index,
            values,
            "mul",
            mode=mode,
            unique_indices=unique_indices,
            indices_are_sorted=indices_are_sorted,
            fun=f"x.at[idx].{method}",
            normalize=bool(wrap),
        )

    def apply(
        self, func, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """`func` applied to the indexed elements. Unlike `ufunc.at`, a location named several
        times is transformed once (read, transform, write back)."""
        x = util.asarray_like(self.array)
        xa = get_aval(x)
        wrap = bool(wrap_negative_indices)
        smode = _parse_mode(mode, "x.at[idx].apply") or L.GatherScatterMode.FILL_OR_DROP
        parsed = parse_index(
            xa.shape, self.index, clip_ints=smode == L.GatherScatterMode.CLIP, wrap_ints=wrap
        )
        plan = Plan(parsed.shape, parsed.entries)
        if 0 in plan.gather_shape or plan.empty_axis_indexed:
            return x
        operand = _insert_axes(x, parsed)
        current = _gather(
            operand, plan, L.GatherScatterMode.CLIP, None, unique_indices, indices_are_sorted, wrap
        )
        new = util.convert_element_type(util.asarray_like(func(current)), xa.dtype, xa.weak_type)
        new = _broadcast_values(new, plan.gather_shape, "x.at[idx].apply")
        indices, index_map = plan.indices(wrap)
        dnums = L.ScatterDimensionNumbers(
            update_window_dims=plan.offset_dims,
            inserted_window_dims=plan.collapsed,
            scatter_dims_to_operand_dims=index_map,
        )
        out = L.scatter(
            operand,
            indices,
            new,
            dnums,
            indices_are_sorted=bool(indices_are_sorted),
            unique_indices=bool(unique_indices),
            mode=smode,
        )
        return L.reshape(out, xa.shape) if parsed.inserted else out


class AtIndexer:
    """The `x.at` property: `x.at[idx].set(v)` and friends return updated copies of `x`."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


# ------------------------------------------------------------------------------- take & friends


def _check_int_indices(fun, indices):
    dt = get_aval(indices).dtype
    if _dtypes.is_bool(dt):
        return util.convert_element_type(indices, _dtypes.default_int_dtype(), False)
    if not _dtypes.is_integer(dt):
        raise TypeError(f"{fun}: indices must have an integer dtype, got {dt.name}")
    return indices


def take(
    a,
    indices,
    axis=None,
    out=None,
    mode=None,
    unique_indices=False,
    indices_are_sorted=False,
    fill_value=None,
):
    """Elements of `a` at `indices` along `axis` (flattened when None). Default mode is 'fill'
    (out-of-bounds reads give NaN, INT_MIN, UINT_MAX or True); also 'clip' and 'wrap'."""
    if out is not None:
        raise NotImplementedError(
            "The 'out' argument to jnp.take is not supported (morphax arrays are immutable)."
        )
    util.check_arraylike("take", a, indices)
    a = util.asarray_like(a)
    indices = _check_int_indices("take", util.asarray_like(indices))
    shape = get_aval(a).shape
    if axis is None:
        a = L.reshape(a, (int(np.prod(shape, dtype=np.int64)),))
        ax = 0
    else:
        ax = util.canonicalize_axis(axis, len(shape), "take")
    n = get_aval(a).shape[ax]
    normalize = True
    if mode is None or mode == "fill":
        gmode = "fill"
    elif mode == "raise":
        raise NotImplementedError(
            "The 'raise' mode to jnp.take is not supported; use 'fill', 'clip' or 'wrap'."
        )
    elif mode == "wrap":
        if n == 0:
            raise IndexError("take: cannot wrap indices into an empty axis")
        indices = ufuncs.remainder(indices, make_array(n, get_aval(indices).dtype, False))
        gmode, normalize = "clip", False
    elif mode in ("clip", "promise_in_bounds"):
        gmode, normalize = mode, False
    else:
        raise ValueError(f"take: invalid mode {mode!r}; expected 'fill', 'clip' or 'wrap'.")
    idx = (slice(None),) * ax + (indices,)
    return _rewriting_take(
        a,
        idx,
        mode=gmode,
        fill_value=fill_value,
        unique_indices=unique_indices,
        indices_are_sorted=indices_are_sorted,
        normalize=normalize,
    )


def _along_axis_index(fun, arr_shape, indices, ax):
    """The advanced index equivalent to `take_along_axis`: `indices` on `ax`, aranges elsewhere."""
    ishape = get_aval(indices).shape
    nd = len(arr_shape)
    idx = []
    for d in range(nd):
        if d == ax:
            idx.append(indices)
            continue
        a, i = arr_shape[d], ishape[d]
        if a != i and a != 1 and i != 1:
            raise ValueError(
                f"{fun}: indices of shape {ishape} cannot be broadcast against the array of shape "
                f"{tuple(arr_shape)} (dimension {d})"
            )
        size = i if a == 1 else a
        shape = [1] * nd
        shape[d] = size
        idx.append(np.zeros(shape, np.intp) if a == 1 else np.arange(size).reshape(shape))
    return tuple(idx)


def _along_axis_args(fun, arr, indices, axis):
    util.check_arraylike(fun, arr, indices)
    arr = util.asarray_like(arr)
    indices = util.asarray_like(indices)
    dt = get_aval(indices).dtype
    if not _dtypes.is_integer(dt):
        raise TypeError(f"{fun}: indices must have an integer dtype, got {dt.name}")
    ia, aa = get_aval(indices), get_aval(arr)
    if axis is None:
        if ia.ndim != 1:
            raise ValueError(
                f"{fun}: when axis=None, indices must have a single dimension, got shape {ia.shape}"
            )
        arr = L.reshape(arr, (aa.size,))
        ax = 0
    else:
        if ia.ndim != aa.ndim:
            raise ValueError(
                f"{fun}: indices and arr must have the same number of dimensions; got indices of shape "
                f"{ia.shape} and arr of shape {aa.shape}"
            )
        ax = util.canonicalize_axis(axis, aa.ndim, fun)
    return arr, _along_axis_index(fun, get_aval(arr).shape, indices, ax)


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
    """`arr` gathered at `indices` along `axis` (shapes broadcast elsewhere), like NumPy's; the
    default out-of-bounds mode is 'fill' (negative indices wrap first)."""
    arr, idx = _along_axis_args("take_along_axis", arr, indices, axis)
    if (
        mode is not None
        and mode not in ("fill", "clip", "promise_in_bounds")
        and not isinstance(mode, L.GatherScatterMode)
    ):
        raise ValueError(f"take_along_axis: invalid mode {mode!r}; expected 'fill' or 'clip'.")
    mode = "fill" if mode is None else mode
    shape, ishape = get_aval(arr).shape, np.shape(indices)
    if axis is not None and len(shape) > 1 and 0 not in shape and 0 not in ishape:
        ax = util.canonicalize_axis(axis, len(shape), "take_along_axis")
        if all(n == m for d, (n, m) in enumerate(zip(shape, ishape)) if d != ax):
            return _take_along_batched(arr, indices, ax, mode, fill_value)
    return _rewriting_take(arr, idx, mode=mode, fill_value=fill_value)


def _take_along_batched(arr, indices, ax, mode, fill_value):
    """take_along_axis where `indices` has `arr`'s size on every other dimension: one gather whose
    other dimensions are batching dimensions (each index reads within its own row), as JAX builds
    it. A program split over those dimensions then gathers from each device's own block
    (sharding/spmd.py), and its gradient is a scatter-add of the same form."""
    shape = get_aval(arr).shape
    idx = normalize_dynamic(_as_index_dtype(util.asarray_like(indices)), shape[ax])  # negatives wrap
    others = tuple(d for d in range(len(shape)) if d != ax)
    dnums = L.GatherDimensionNumbers(
        offset_dims=(),
        collapsed_slice_dims=(ax,),
        start_index_map=(ax,),
        operand_batching_dims=others,
        start_indices_batching_dims=others,
    )
    starts = L.broadcast_in_dim(idx, (*get_aval(idx).shape, 1), tuple(range(len(shape))))
    return L.gather(
        arr,
        starts,
        dnums,
        (1,) * len(shape),
        mode=_parse_mode(mode, "take_along_axis"),
        fill_value=fill_value,
    )


def put_along_axis(arr, indices, values, axis, inplace=True, mode=None):
    """A copy of `arr` with `values` written at `indices` along `axis` (JAX: pass inplace=False).
    Out-of-bounds indices are dropped unless mode='clip'."""
    if inplace:
        raise ValueError(
            "put_along_axis cannot modify arrays in-place, because morphax arrays are immutable. "
            "Pass inplace=False to instead return an updated array."
        )
    util.check_arraylike("put_along_axis", arr, indices, values)
    shape = get_aval(util.asarray_like(arr)).shape
    flat, idx = _along_axis_args("put_along_axis", arr, indices, axis)
    out = _scatter_update(flat, idx, values, "set", mode=mode, fun="put_along_axis")
    return L.reshape(out, shape) if axis is None else out


# Re-exported for users who want to catch it (JAX spells it jax.errors.NonConcreteBooleanIndexError).
NonConcreteBooleanIndexError = NonConcreteBooleanIndexError
