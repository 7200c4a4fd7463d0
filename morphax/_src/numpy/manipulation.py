"""Shape manipulation (reshape, transpose, concatenate, split, broadcast, tile, roll...). Rounding
and closeness tests live in rounding.py.

Shapes, axes and split points are static: they are read on the host and never traced; data
always flows through primitives, so everything here works under `make_jaxpr`.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from morphax._src import errors
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.core.trace import Tracer
from morphax._src.core.values import make_array
from morphax._src.numpy import ufuncs, util
from morphax._src.numpy.creation import broadcast_to, canonicalize_shape, concrete_int, concrete_value
from morphax._src.prims import lax_api as L
from morphax._src.runtime.array import Array

__all__ = [
    "reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "swapaxes", "moveaxis",
    "squeeze", "expand_dims", "concatenate", "concat", "stack", "hstack", "vstack", "dstack",
    "column_stack", "split", "array_split", "hsplit", "vsplit", "dsplit", "broadcast_to",
    "broadcast_arrays", "broadcast_shapes", "atleast_1d", "atleast_2d", "atleast_3d", "flip",
    "fliplr", "flipud", "tile", "repeat", "roll", "rot90", "shape", "ndim", "size",
]  # fmt: skip


def _shape(x):
    return get_aval(x).shape


def _static_ints(value, fun_name, argname):
    """An int or a sequence of ints, concrete, as a tuple."""
    value = concrete_value(value, f"It arose in the {fun_name} argument '{argname}'.")
    if isinstance(value, (int, np.integer)) or np.ndim(value) == 0:
        return (operator.index(value),)
    return tuple(operator.index(v) for v in value)


# ----------------------------------------------------------------------------- reshape / ravel


def _compute_newshape(in_shape, newshape, fun_name="reshape"):
    size = int(np.prod(in_shape, dtype=np.int64))
    if isinstance(newshape, (int, np.integer)) or (hasattr(newshape, "shape") and np.ndim(newshape) == 0):
        newshape = (newshape,)
    try:
        dims = [operator.index(d) for d in newshape]
    except TypeError:
        raise TypeError(
            f"{fun_name}: shapes must be 1D sequences of concrete values of integer type, got {newshape!r}. "
            "If using `jit`, make the shape a static argument (static_argnums)."
        ) from None
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1:
        raise ValueError(f"{fun_name}: can only specify one unknown dimension (-1), got shape {tuple(dims)}")
    if any(d < -1 for d in dims):
        raise ValueError(f"{fun_name}: negative dimensions are not allowed, got shape {tuple(dims)}")
    if unknown:
        known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise TypeError(
                f"cannot reshape array of shape {tuple(in_shape)} (size {size}) into shape {tuple(dims)}"
            )
        dims[unknown[0]] = size // known
    if int(np.prod(dims, dtype=np.int64)) != size:
        raise TypeError(
            f"cannot reshape array of shape {tuple(in_shape)} (size {size}) into shape {tuple(dims)} "
            f"(size {int(np.prod(dims, dtype=np.int64))})"
        )
    return tuple(dims)


def _lax_reshape(x, shape):
    return x if _shape(x) == tuple(shape) else L.reshape(x, tuple(shape))


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Give `a` a new shape with the same size; one entry may be -1 (inferred)."""
    if newshape is not None:
        if shape is not None:
            raise TypeError("reshape: pass only one of 'shape' and the deprecated 'newshape'")
        shape = newshape
    if shape is None:
        raise TypeError("reshape: missing required argument 'shape'")
    a = util.checked_array("reshape", a)
    new = _compute_newshape(_shape(a), shape)
    if order == "C":
        return _lax_reshape(a, new)
    if order == "F":
        # Column-major reshape is a row-major reshape of the reversed axes.
        return transpose(_lax_reshape(transpose(a), new[::-1]))
    if order == "A":
        raise NotImplementedError("reshape: order='A' is not supported (arrays have no memory layout)")
    raise ValueError(f"reshape: order must be one of 'C', 'F' or 'A', got {order!r}")


def ravel(a, order="C"):
    """The elements of `a` as a 1-D array."""
    a = util.checked_array("ravel", a)
    return reshape(a, (int(np.prod(_shape(a), dtype=np.int64)),), order=order)


# ----------------------------------------------------------------------------------- axes


def transpose(a, axes=None):
    """Permute the axes (reverse them when `axes` is None)."""
    a = util.checked_array("transpose", a)
    nd = len(_shape(a))
    if axes is None:
        perm = tuple(range(nd))[::-1]
    else:
        axes = _static_ints(axes, "transpose", "axes")
        if len(axes) != nd:
            raise ValueError(f"transpose: axes {axes} don't match array of shape {_shape(a)}")
        perm = tuple(util.canonicalize_axis(i, nd, "transpose", "axes") for i in axes)
        if sorted(perm) != list(range(nd)):
            raise ValueError(f"transpose: repeated axis in axes {axes} for array of shape {_shape(a)}")
    if perm == tuple(range(nd)):
        return a
    return L.transpose(a, perm)


def permute_dims(a, /, axes):
    return transpose(a, axes)


def matrix_transpose(x, /):
    """Swap the last two axes."""
    x = util.checked_array("matrix_transpose", x)
    nd = len(_shape(x))
    if nd < 2:
        raise ValueError(f"matrix_transpose: x must have at least 2 dimensions, got shape {_shape(x)}")
    return transpose(x, (*range(nd - 2), nd - 1, nd - 2))


def swapaxes(a, axis1, axis2):
    """Interchange two axes."""
    a = util.checked_array("swapaxes", a)
    nd = len(_shape(a))
    i = util.canonicalize_axis(axis1, nd, "swapaxes", "axis1")
    j = util.canonicalize_axis(axis2, nd, "swapaxes", "axis2")
    perm = list(range(nd))
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def moveaxis(a, source, destination):
    """Move axes `source` to positions `destination` (ints or equal-length sequences)."""
    a = util.checked_array("moveaxis", a)
    nd = len(_shape(a))
    src = _static_ints(source, "moveaxis", "source")
    dst = _static_ints(destination, "moveaxis", "destination")
    if len(src) != len(dst):
        raise ValueError(
            f"moveaxis: source and destination must have the same number of elements, got {src} and {dst}"
        )
    src = tuple(util.canonicalize_axis(s, nd, "moveaxis", "source") for s in src)
    dst = tuple(util.canonicalize_axis(d, nd, "moveaxis", "destination") for d in dst)
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"moveaxis: repeated axis in source {source} or destination {destination}")
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


def squeeze(a, axis=None):
    """Remove size-1 axes (all of them, or those in `axis`, which must have size 1)."""
    a = util.checked_array("squeeze", a)
    shp = _shape(a)
    if axis is None:
        dims = tuple(i for i, d in enumerate(shp) if d == 1)
    else:
        dims = util.canonicalize_axes(_static_ints(axis, "squeeze", "axis"), len(shp), "squeeze")
        bad = [i for i in dims if shp[i] != 1]
        if bad:
            raise ValueError(
                "squeeze: cannot select an axis to squeeze out which has size not equal to one, "
                f"got shape={shp} and dimensions={dims}"
            )
    return L.squeeze(a, dims) if dims else a


def expand_dims(a, axis):
    """Insert size-1 axes at the positions `axis` (int or tuple) of the result."""
    a = util.checked_array("expand_dims", a)
    shp = _shape(a)
    axes = _static_ints(axis, "expand_dims", "axis")
    out_nd = len(shp) + len(axes)
    dims = [util.canonicalize_axis(i, out_nd, "expand_dims") for i in axes]
    if len(set(dims)) != len(dims):
        raise ValueError(f"expand_dims: repeated axis in {axis}")
    it = iter(shp)
    out_shape = tuple(1 if i in dims else next(it) for i in range(out_nd))
    kept = tuple(i for i in range(out_nd) if i not in dims)
    return L.broadcast_in_dim(a, out_shape, kept)


# ---------------------------------------------------------------------------- joining arrays


def _unstack(x):
    """The rows of `x` along axis 0, as a list (static slices)."""
    shp = _shape(x)
    out = []
    for i in range(shp[0]):
        row = L.slice(x, (i,) + (0,) * (len(shp) - 1), (i + 1,) + shp[1:])
        out.append(L.reshape(row, shp[1:]))
    return out


def _concat_checked(arrays, axis, fun_name):
    shapes = [_shape(x) for x in arrays]
    nd = len(shapes[0])
    if any(len(s) != nd for s in shapes):
        raise ValueError(
            f"{fun_name}: all the input arrays must have the same number of dimensions, got shapes "
            f"{', '.join(str(s) for s in shapes)}"
        )
    for s in shapes[1:]:
        if s[:axis] + s[axis + 1 :] != shapes[0][:axis] + shapes[0][axis + 1 :]:
            raise ValueError(
                f"{fun_name}: all the input array dimensions except for the concatenation axis ({axis}) "
                f"must match exactly, got shapes {', '.join(str(s) for s in shapes)}"
            )
    if len(arrays) == 1:
        return arrays[0]
    return L.concatenate(list(arrays), axis)


def concatenate(arrays, axis=0, dtype=None):
    """Join arrays along an existing axis (axis=None flattens them first); dtypes promote."""
    if isinstance(arrays, (Array, Tracer, np.ndarray)):
        arr = util.asarray_like(arrays)
        shp = _shape(arr)
        if len(shp) == 0:
            raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
        if axis is None:
            return ravel(arr) if dtype is None else _to_dtype(ravel(arr), dtype, "concatenate")
        ax = util.canonicalize_axis(axis, len(shp) - 1, "concatenate")
        # Rows of `arr` joined along `ax` = move axis 0 next to `ax`, then merge the two.
        moved = moveaxis(arr, 0, ax)
        new_shape = shp[1 : ax + 1] + (shp[0] * shp[ax + 1],) + shp[ax + 2 :]
        out = _lax_reshape(moved, new_shape)
        return out if dtype is None else _to_dtype(out, dtype, "concatenate")
    arrays = list(arrays)
    util.check_arraylike("concatenate", *arrays)
    if not arrays:
        raise ValueError("concatenate: need at least one array to concatenate")
    if axis is None:
        return concatenate([ravel(a) for a in arrays], 0, dtype)
    if any(np.ndim(a) == 0 for a in arrays):
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    if dtype is None:
        arrays = util.promote_dtypes(*arrays)
    else:
        arrays = [_to_dtype(a, dtype, "concatenate") for a in arrays]
    ax = util.canonicalize_axis(axis, len(_shape(arrays[0])), "concatenate")
    return _concat_checked(arrays, ax, "concatenate")


def concat(arrays, /, *, axis=0):
    return concatenate(arrays, axis)


def _to_dtype(x, dtype, fun_name):
    from morphax._src.numpy.creation import asarray

    return asarray(x, dtype=dtype)


def stack(arrays, axis=0, out=None, dtype=None):
    """Join same-shape arrays along a new axis."""
    if out is not None:
        raise NotImplementedError("stack: the 'out' argument is not supported")
    if isinstance(arrays, (Array, Tracer, np.ndarray)):
        arr = util.asarray_like(arrays)
        ax = util.canonicalize_axis(axis, len(_shape(arr)), "stack")
        out = moveaxis(arr, 0, ax)
        return out if dtype is None else _to_dtype(out, dtype, "stack")
    arrays = list(arrays)
    if not arrays:
        raise ValueError("stack: need at least one array to stack")
    util.check_arraylike("stack", *arrays)
    shapes = {tuple(np.shape(a)) for a in arrays}
    if len(shapes) != 1:
        raise ValueError(
            f"stack: all input arrays must have the same shape, got {', '.join(str(np.shape(a)) for a in arrays)}"
        )
    ax = util.canonicalize_axis(axis, len(shapes.pop()) + 1, "stack")
    if dtype is None:
        arrays = util.promote_dtypes(*arrays)
    else:
        arrays = [_to_dtype(a, dtype, "stack") for a in arrays]
    return _concat_checked([expand_dims(a, ax) for a in arrays], ax, "stack")


def _as_list(tup, fun_name):
    if isinstance(tup, (Array, Tracer, np.ndarray)):
        arr = util.asarray_like(tup)
        if len(_shape(arr)) == 0:
            raise ValueError(f"{fun_name}: expected a sequence of arrays, got a 0-d array")
        return _unstack(arr)
    tup = list(tup)
    util.check_arraylike(fun_name, *tup)
    return tup


def hstack(tup, dtype=None):
    """Join along axis 1 (axis 0 for 1-D inputs)."""
    arrs = [atleast_1d(a) for a in _as_list(tup, "hstack")]
    if not arrs:
        raise ValueError("hstack: need at least one array to concatenate")
    return concatenate(arrs, 0 if len(_shape(arrs[0])) == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    """Join along axis 0 after making every input at least 2-D."""
    return concatenate([atleast_2d(a) for a in _as_list(tup, "vstack")], 0, dtype=dtype)


def dstack(tup, dtype=None):
    """Join along axis 2 after making every input at least 3-D."""
    return concatenate([atleast_3d(a) for a in _as_list(tup, "dstack")], 2, dtype=dtype)


def column_stack(tup):
    """Stack 1-D arrays as columns (2-D inputs are joined along axis 1)."""
    cols = []
    for a in _as_list(tup, "column_stack"):
        a = util.asarray_like(a)
        if len(_shape(a)) < 2:
            a = transpose(atleast_2d(a))
        cols.append(a)
    return concatenate(cols, 1)


# -------------------------------------------------------------------------------- splitting


def _split(fun_name, ary, indices_or_sections, axis, uneven):
    ary = util.checked_array(fun_name, ary)
    shp = _shape(ary)
    axis = util.canonicalize_axis(axis, len(shp), fun_name)
    size = shp[axis]
    ios = indices_or_sections
    if isinstance(ios, (list, tuple)) or (hasattr(ios, "shape") and np.ndim(ios) > 0):
        idx = np.asarray(concrete_value(ios, f"It arose in the {fun_name} argument 'indices_or_sections'."))
        points = [0, *(operator.index(i) for i in idx.tolist()), size]
    else:
        n = concrete_int(ios, f"{fun_name}: 'indices_or_sections' argument")
        if n <= 0:
            raise ValueError(f"{fun_name}: number of sections must be larger than 0, got {n}")
        if not uneven and size % n:
            raise ValueError(
                f"{fun_name}: array split does not result in an equal division: axis {axis} of size {size} "
                f"into {n} sections"
            )
        each, extra = divmod(size, n)
        sizes = [each + 1] * extra + [each] * (n - extra)
        points = [0, *np.cumsum(sizes).tolist()]
    out = []
    for st, end in zip(points[:-1], points[1:]):
        # Python slice semantics, as NumPy: negative points count from the end, all are clipped.
        st, end, _ = slice(st, end).indices(size)
        end = builtins.max(st, end)
        start_idx = [0] * len(shp)
        limit = list(shp)
        start_idx[axis], limit[axis] = st, end
        out.append(ary if (st, end) == (0, size) else L.slice(ary, tuple(start_idx), tuple(limit)))
    return out


def split(ary, indices_or_sections, axis=0):
    """Split into equal sections (an int that must divide the axis) or at the given indices."""
    return _split("split", ary, indices_or_sections, axis, uneven=False)


def array_split(ary, indices_or_sections, axis=0):
    """Like `split`, but a section count need not divide the axis (the first sections are longer)."""
    return _split("array_split", ary, indices_or_sections, axis, uneven=True)


def hsplit(ary, indices_or_sections):
    a = util.checked_array("hsplit", ary)
    if len(_shape(a)) == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return _split("hsplit", a, indices_or_sections, 1 if len(_shape(a)) > 1 else 0, uneven=False)


def vsplit(ary, indices_or_sections):
    a = util.checked_array("vsplit", ary)
    if len(_shape(a)) < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return _split("vsplit", a, indices_or_sections, 0, uneven=False)


def dsplit(ary, indices_or_sections):
    a = util.checked_array("dsplit", ary)
    if len(_shape(a)) < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return _split("dsplit", a, indices_or_sections, 2, uneven=False)


# ------------------------------------------------------------------------------- broadcasting


def broadcast_shapes(*shapes):
    """The NumPy broadcast of the given shapes (a tuple)."""
    shapes = [canonicalize_shape(s, "broadcast_shapes") for s in shapes]
    if not shapes:
        return ()
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None


def broadcast_arrays(*args):
    """All arguments broadcast to their common shape (a list)."""
    util.check_arraylike("broadcast_arrays", *args)
    shp = broadcast_shapes(*[np.shape(a) for a in args])
    return [broadcast_to(a, shp) for a in args]


def _atleast(fun_name, nd, arys):
    outs = []
    for a in arys:
        a = util.checked_array(fun_name, a)
        shp = _shape(a)
        if len(shp) < nd:
            if nd == 3 and len(shp) == 1:
                new = (1, shp[0], 1)
            elif nd == 3 and len(shp) == 2:
                new = shp + (1,)
            else:
                new = (1,) * (nd - len(shp)) + shp
            a = L.reshape(a, new)
        outs.append(a)
    return outs[0] if len(outs) == 1 else outs


def atleast_1d(*arys):
    """Each input with at least one dimension (a list when given several)."""
    return _atleast("atleast_1d", 1, arys)


def atleast_2d(*arys):
    return _atleast("atleast_2d", 2, arys)


def atleast_3d(*arys):
    """1-D (N,) becomes (1, N, 1) and 2-D (M, N) becomes (M, N, 1), as in NumPy."""
    return _atleast("atleast_3d", 3, arys)


# ---------------------------------------------------------------- flip / tile / repeat / roll


def flip(m, axis=None):
    """Reverse the order of elements along `axis` (all axes when None)."""
    m = util.checked_array("flip", m)
    axes = util.canonicalize_axes(
        None if axis is None else _static_ints(axis, "flip", "axis"), len(_shape(m)), "flip"
    )
    return L.rev(m, axes) if axes else m


def fliplr(m):
    m = util.checked_array("fliplr", m)
    if len(_shape(m)) < 2:
        raise ValueError(f"fliplr: input must be at least 2-D, got shape {_shape(m)}")
    return flip(m, 1)


def flipud(m):
    m = util.checked_array("flipud", m)
    if len(_shape(m)) < 1:
        raise ValueError("flipud: input must be at least 1-D")
    return flip(m, 0)


def tile(A, reps):  # noqa: N803 - NumPy's name
    """Repeat the whole of `A` `reps` times along each axis."""
    a = util.checked_array("tile", A)
    reps = _static_ints(reps, "tile", "reps")
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: negative repetitions are not allowed, got reps={reps}")
    shp = _shape(a)
    d = builtins.max(len(reps), len(shp))
    shp_p = (1,) * (d - len(shp)) + shp
    reps_p = (1,) * (d - len(reps)) + reps
    # Broadcast to (r0, s0, r1, s1, ...) then merge each pair: one broadcast, one reshape.
    inter = tuple(v for pair in zip(reps_p, shp_p) for v in pair)
    dims = tuple(2 * i + 1 for i in range(d - len(shp), d))
    tiled = L.broadcast_in_dim(a, inter, dims)
    return L.reshape(tiled, tuple(r * s for r, s in zip(reps_p, shp_p)))


def _take_axis(x, indices, axis):
    """x gathered at `indices` (1-D int32, in bounds) along `axis`."""
    xm = moveaxis(x, axis, 0)
    rest = _shape(xm)[1:]
    n = get_aval(indices).shape[0]
    if n == 0 or _shape(xm)[0] == 0:
        aval = get_aval(x)
        zero = util.convert_element_type(0, aval.dtype, aval.weak_type)
        return L.broadcast_in_dim(zero, _shape(x)[:axis] + (n,) + _shape(x)[axis + 1 :], ())
    dnums = L.GatherDimensionNumbers(
        offset_dims=tuple(range(1, 1 + len(rest))), collapsed_slice_dims=(0,), start_index_map=(0,)
    )
    idx = L.reshape(indices, (n, 1))
    out = L.gather(xm, idx, dnums, (1,) + rest, mode=L.GatherScatterMode.PROMISE_IN_BOUNDS)
    return moveaxis(out, 0, axis)


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """Repeat each element `repeats` times (an int, or one count per element along `axis`)."""
    a = util.checked_array("repeat", a)
    if axis is None:
        a, axis = ravel(a), 0
    shp = _shape(a)
    axis = util.canonicalize_axis(axis, len(shp), "repeat")
    n = shp[axis]
    total = (
        None
        if total_repeat_length is None
        else concrete_int(total_repeat_length, "repeat: 'total_repeat_length'")
    )
    if isinstance(repeats, Tracer) and repeats.to_concrete_value() is None:
        if total is None:
            raise errors.ConcretizationTypeError(
                repeats,
                "It arose in the jnp.repeat argument 'repeats': traced repeats need a static "
                "'total_repeat_length=' (the output size must be known while tracing).",
            )
        return _repeat_traced(a, repeats, axis, n, total)
    if not isinstance(repeats, (list, tuple)):
        util.check_arraylike("repeat", repeats)
    reps = np.asarray(concrete_value(repeats, "It arose in the jnp.repeat argument 'repeats'."))
    if reps.dtype.kind not in "iub":
        raise TypeError(f"repeat: repeats must be integers, got dtype {reps.dtype}")
    if np.any(reps < 0):
        raise ValueError(f"repeat: repeats may not contain negative values, got {reps.tolist()}")
    if reps.ndim == 0 or reps.shape == (1,):
        r = int(reps.reshape(()))
        if total is None or total == n * r:
            # Insert a new axis after `axis`, broadcast it to r, merge: no gather needed.
            inter = shp[: axis + 1] + (r,) + shp[axis + 1 :]
            dims = tuple(range(axis + 1)) + tuple(range(axis + 2, len(shp) + 1))
            b = L.broadcast_in_dim(a, inter, dims)
            return L.reshape(b, shp[:axis] + (n * r,) + shp[axis + 1 :])
        reps = np.full((n,), r)
    if reps.ndim != 1 or reps.shape[0] != n:
        raise ValueError(
            f"repeat: repeats has shape {reps.shape}, but axis {axis} of the array has length {n}"
        )
    idx = np.repeat(np.arange(n), reps)
    if total is not None:
        # JAX's contract: truncate, or pad by repeating the final element.
        idx = idx[:total] if idx.size >= total else np.concatenate([idx, np.full(total - idx.size, n - 1)])
    return _take_axis(a, make_array(idx.astype(np.int32), np.int32), axis)


def _repeat_traced(a, repeats, axis, n, total):
    reps = util.convert_element_type(util.asarray_like(repeats), _dtypes.int32)
    if get_aval(reps).shape == ():
        reps = L.broadcast_in_dim(reps, (n,), ())
    if get_aval(reps).shape != (n,):
        raise ValueError(f"repeat: repeats has shape {get_aval(reps).shape}, but the axis has length {n}")
    if n == 0 or total == 0:
        return _take_axis(a, make_array(np.zeros((total if n else 0,), np.int32), np.int32), axis)
    # Mark where each element's run ends; a running count of the marks is the source index.
    ends = L.cumsum(reps, 0)
    marks = L.broadcast_in_dim(util.convert_element_type(0, _dtypes.int32), (total,), ())
    ones = L.broadcast_in_dim(util.convert_element_type(1, _dtypes.int32), (n - 1,), ())
    dnums = L.ScatterDimensionNumbers(
        update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    starts = L.reshape(L.slice(ends, (0,), (n - 1,)), (n - 1, 1))
    marks = L.scatter_add(marks, starts, ones, dnums, mode=L.GatherScatterMode.FILL_OR_DROP)
    idx = L.cumsum(marks, 0)
    return _take_axis(a, idx, axis)


def roll(a, shift, axis=None):
    """Shift elements cyclically along `axis` (flattened when None); shifts may be traced."""
    a = util.checked_array("roll", a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), _shape(a))
    shp = _shape(a)
    axes = _static_ints(axis, "roll", "axis")
    traced = isinstance(shift, Tracer) and shift.to_concrete_value() is None
    if traced:
        shifts = util.convert_element_type(shift, _dtypes.int32)
        nshift = int(np.prod(get_aval(shifts).shape, dtype=np.int64))
        flat = L.reshape(shifts, (nshift,))
        shift_list = [L.reshape(L.slice(flat, (i,), (i + 1,)), ()) for i in range(nshift)]
    else:
        shift_list = [int(s) for s in np.ravel(concrete_value(shift, "roll"))]
    try:
        pairs = np.broadcast_arrays(np.arange(len(shift_list)), np.asarray(axes))
    except ValueError:
        raise ValueError(
            f"roll: shift and axis must have compatible lengths, got {len(shift_list)} and {axes}"
        ) from None
    for si, ax in zip(*[p.ravel().tolist() for p in pairs]):
        ax = util.canonicalize_axis(ax, len(shp), "roll")
        n = shp[ax]
        if n == 0:
            continue
        s = shift_list[si]
        if traced:
            # Slide a window of length n over [a, a]; its start is (-s) mod n.
            doubled = L.concatenate([a, a], ax)
            start = ufuncs.remainder(ufuncs.negative(s), n)
            zero = util.convert_element_type(0, _dtypes.int32)
            starts = [start if i == ax else zero for i in range(len(shp))]
            a = L.dynamic_slice(doubled, starts, shp)
            continue
        s %= n
        if s == 0:
            continue
        lo, hi = [0] * len(shp), list(shp)
        hi[ax] = n - s
        head = L.slice(a, tuple(lo), tuple(hi))
        lo[ax], hi[ax] = n - s, n
        tail = L.slice(a, tuple(lo), tuple(hi))
        a = L.concatenate([tail, head], ax)
    return a


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees `k` times in the plane of `axes`."""
    m = util.checked_array("rot90", m)
    axes = _static_ints(axes, "rot90", "axes")
    if len(axes) != 2:
        raise ValueError(f"rot90: len(axes) must be 2, got {axes}")
    nd = len(_shape(m))
    a0, a1 = (util.canonicalize_axis(ax, nd, "rot90", "axes") for ax in axes)
    if a0 == a1:
        raise ValueError(f"rot90: axes must be different, got {axes}")
    k = concrete_int(k, "rot90: 'k' argument") % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(m, a1), perm)
    return flip(transpose(m, perm), a1)


def shape(a):
    """The shape of an array, scalar or nested list (a tuple)."""
    return tuple(np.shape(a))


def ndim(a):
    return int(np.ndim(a))


def size(a, axis=None):
    """The number of elements (along `axis` when given)."""
    shp = np.shape(a)
    if axis is None:
        return int(np.prod(shp, dtype=np.int64))
    axes = util.canonicalize_axes(_static_ints(axis, "size", "axis"), len(shp), "size")
    return int(np.prod([shp[i] for i in axes], dtype=np.int64))
