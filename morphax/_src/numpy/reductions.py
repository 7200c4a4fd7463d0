"""Reductions (sum, mean, max, argmax, var...), cumulative reductions and `logsumexp`, with
JAX's dtype rules: sums of bools and small integers accumulate in the default integer, means of
integers are floats, float16 accumulates in float32, and results are never weakly typed.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.numpy import ufuncs, util
from morphax._src.numpy.creation import broadcast_to, concrete_value
from morphax._src.prims import lax_api as L

__all__ = [
    "sum", "prod", "max", "min", "amax", "amin", "all", "any", "mean", "var", "std", "argmax",
    "argmin", "cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "ptp", "count_nonzero",
    "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "logsumexp",
]  # fmt: skip

_LAX_REDUCE = {
    "sum": "reduce_sum",
    "prod": "reduce_prod",
    "max": "reduce_max",
    "min": "reduce_min",
    "and": "reduce_and",
    "or": "reduce_or",
}
_COMBINE = {
    "sum": ufuncs.add,
    "prod": ufuncs.multiply,
    "max": ufuncs.maximum,
    "min": ufuncs.minimum,
    "and": ufuncs.logical_and,
    "or": ufuncs.logical_or,
}
# For bool operands each arithmetic reduction is a logical one.
_BOOL_KIND = {"sum": "or", "prod": "and", "max": "or", "min": "and", "and": "and", "or": "or"}


def _identity(kind, dtype):
    """The value that leaves `kind` unchanged, in `dtype` (masked-out elements become this)."""
    if kind in ("and", "or"):
        return kind == "and"
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if _dtypes.is_integer(dtype):
        info = _dtypes.iinfo(dtype)
        return int(info.min) if kind == "max" else int(info.max)
    return -np.inf if kind == "max" else np.inf


def reduction_axes(name, shape, axis):
    """Sorted non-negative axes to reduce; `axis` must be concrete: None, an int, or a sequence
    of ints (a tuple, list, range or 1-D array, as JAX takes)."""
    nd = len(shape)
    if axis is None:
        return tuple(range(nd))
    axis = concrete_value(axis, f"It arose in the axis argument to jnp.{name}().")
    axes = [operator.index(a) for a in util.axis_sequence(axis)]
    out = []
    for a in axes:
        if not -nd <= a < nd:
            raise ValueError(f"{name}: axis {a} is out of bounds for array of dimension {nd}")
        out.append(a % nd)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: duplicate value in 'axis': {axis}")
    return tuple(sorted(out))


def _promote_integer(dt):
    """JAX's accumulation dtype for sum/prod/cumsum: at least the default int width."""
    if _dtypes.is_bool(dt):
        return _dtypes.default_int_dtype()
    if _dtypes.is_unsigned(dt):
        return dt if dt.itemsize >= _dtypes.default_uint_dtype().itemsize else _dtypes.default_uint_dtype()
    if _dtypes.is_integer(dt):
        return dt if dt.itemsize >= _dtypes.default_int_dtype().itemsize else _dtypes.default_int_dtype()
    return dt


def _upcast_f16(dt):
    return _dtypes.float32 if _dtypes.is_16bit_float(dt) else dt


def _user_dtype(dtype, name):
    if dtype is None:
        return None
    _dtypes.check_user_dtype_supported(dtype, name)
    return _dtypes.canonicalize_dtype(_dtypes.dtype(dtype))


def _reduction(
    name,
    a,
    kind,
    *,
    axis=None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=None,
    where=None,
    has_identity=True,
    promote_integers=False,
    upcast_f16=False,
    preproc=None,
):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    util.check_arraylike(name, a)
    dt = _user_dtype(dtype, name)
    if initial is None and not has_identity and where is not None:
        raise ValueError(
            f"reduction operation {name} does not have an identity, so to use a where mask one has to "
            "specify 'initial'"
        )
    a = util.asarray_like(a)
    if preproc is not None:
        a = preproc(a)
    shape = get_aval(a).shape
    axes = reduction_axes(name, shape, axis)
    if initial is None and not has_identity and builtins.any(shape[d] == 0 for d in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    result_dtype = dt if dt is not None else get_aval(a).dtype
    if dt is None and promote_integers:
        result_dtype = _promote_integer(result_dtype)
    work = _upcast_f16(result_dtype) if upcast_f16 else result_dtype
    a = util.convert_element_type(a, work, False)
    if _dtypes.is_bool(work):
        kind = _BOOL_KIND[kind]
    ident = util.convert_element_type(_identity(kind, work), work)
    if where is not None:
        a = ufuncs.where(broadcast_to(where, shape), a, ident)
    result = getattr(L, _LAX_REDUCE[kind])(a, axes) if axes else a
    if initial is not None:
        # Scalars convert on the host; only array initial values need a conversion in the program.
        init = util.convert_element_type(
            initial if np.ndim(initial) == 0 and not hasattr(initial, "aval") else util.asarray_like(initial),
            work,
            False,
        )
        if get_aval(init).shape != ():
            raise ValueError(
                f"{name}: initial value must be a scalar, got array of shape {get_aval(init).shape}"
            )
        result = _COMBINE[kind](init, result)
    if keepdims and axes:
        # As JAX: lax.expand_dims, a broadcast_in_dim (not a reshape) in the jaxpr.
        result = L.expand_dims(result, axes)
    return util.convert_element_type(result, result_dtype, False)


def _accumulation(name: str, doc: str):
    def accumulate(
        a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, promote_integers=True
    ):
        return _reduction(
            name,
            a,
            name,
            axis=axis,
            dtype=dtype,
            out=out,
            keepdims=keepdims,
            initial=initial,
            where=where,
            promote_integers=promote_integers,
            upcast_f16=True,
        )

    accumulate.__name__ = accumulate.__qualname__ = name
    accumulate.__doc__ = doc
    return accumulate


sum = _accumulation(
    "sum", "Sum over `axis`; bools and small integers accumulate in the default integer dtype."
)  # noqa: A001
prod = _accumulation("prod", "Product over `axis` (integer promotion as `sum`).")


def _extremum(name: str, what: str):
    def extremum(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        return _reduction(
            name,
            a,
            name,
            axis=axis,
            out=out,
            keepdims=keepdims,
            initial=initial,
            where=where,
            has_identity=False,
        )

    extremum.__name__ = extremum.__qualname__ = name
    extremum.__doc__ = f"{what} over `axis`; empty reductions and masks need `initial`."
    return extremum


max = _extremum("max", "Maximum")  # noqa: A001
min = _extremum("min", "Minimum")  # noqa: A001


amax = max
amin = min


def _to_bool(x):
    return x if _dtypes.is_bool(get_aval(x).dtype) else ufuncs.not_equal(x, 0)


def all(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """True where every element (along `axis`) is nonzero."""
    return _reduction("all", a, "and", axis=axis, out=out, keepdims=keepdims, where=where, preproc=_to_bool)


def any(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """True where some element (along `axis`) is nonzero."""
    return _reduction("any", a, "or", axis=axis, out=out, keepdims=keepdims, where=where, preproc=_to_bool)


def _count(name, a, axes, keepdims, where, dtype):
    """How many elements each output averages over, in `dtype`."""
    shape = get_aval(a).shape
    if where is None:
        n = int(np.prod([shape[i] for i in axes], dtype=np.int64))
        return util.convert_element_type(n, dtype)

    return sum(broadcast_to(where, shape), axes, dtype=dtype, keepdims=keepdims)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean; integer and bool inputs give the default float dtype."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.mean is not supported.")
    util.check_arraylike("mean", a)
    a = util.asarray_like(a)
    dt = _user_dtype(dtype, "mean")
    result_dtype = dt if dt is not None else _dtypes.to_inexact_dtype(get_aval(a).dtype)
    work = _upcast_f16(result_dtype) if _dtypes.is_inexact(result_dtype) else result_dtype
    axes = reduction_axes("mean", get_aval(a).shape, axis)
    total = sum(a, axes, dtype=work, keepdims=keepdims, where=where)
    # lax division: true division for floats, truncating for an explicit integer dtype (as JAX).
    quotient = L.div_p.bind(total, _count("mean", a, axes, keepdims, where, work))
    return util.convert_element_type(quotient, result_dtype, False)


def _var_dtypes(a_dtype, dtype):
    if dtype is not None:
        if _dtypes.is_complex(a_dtype) and not _dtypes.is_complex(dtype):
            raise ValueError(
                "var: a real dtype argument is not supported for complex input (the variance of complex "
                f"values is real, but dtype={dtype.name} was requested for a {a_dtype.name} array)"
            )
        return _upcast_f16(dtype), dtype
    if not _dtypes.is_inexact(a_dtype):
        dt = _dtypes.to_inexact_dtype(a_dtype)  # float32 for int32 even in x64 mode, as in JAX
        return dt, dt
    return _upcast_f16(a_dtype), _dtypes.real_dtype(a_dtype)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    """Variance, sum(|x - mean|^2) / (N - ddof); complex input gives a real result."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.var is not supported.")
    if correction is None:
        correction = ddof
    elif ddof != 0:
        raise ValueError("var: ddof and correction can't be provided simultaneously.")
    util.check_arraylike("var", a)
    a = util.asarray_like(a)
    work, result_dtype = _var_dtypes(get_aval(a).dtype, _user_dtype(dtype, "var"))
    a = util.convert_element_type(a, work, False)
    axes = reduction_axes("var", get_aval(a).shape, axis)
    centered = ufuncs.subtract(a, mean(a, axes, dtype=work, keepdims=True, where=where))
    if _dtypes.is_complex(work):
        sq = ufuncs.real(ufuncs.multiply(centered, ufuncs.conjugate(centered)))
    else:
        sq = ufuncs.multiply(centered, centered)
    sq_dtype = get_aval(sq).dtype
    if where is None and isinstance(correction, (int, float, np.integer, np.floating)):
        # Static count: the normalizer is a constant computed here rather than in the program.
        n = int(np.prod([get_aval(a).shape[i] for i in axes], dtype=np.int64))
        normalizer = util.convert_element_type(n - correction, sq_dtype)
    else:
        normalizer = ufuncs.subtract(
            _count("var", a, axes, keepdims, where, sq_dtype), util.convert_element_type(correction, sq_dtype)
        )
    total = sum(sq, axes, dtype=sq_dtype, keepdims=keepdims, where=where)
    return util.convert_element_type(ufuncs.true_divide(total, normalizer), result_dtype, False)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    """Standard deviation, the square root of `var`."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.std is not supported.")
    return ufuncs.sqrt(var(a, axis, dtype, None, ddof, keepdims, where=where, correction=correction))


def _arg_reduce(name, lax_name, a, axis, out, keepdims):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    util.check_arraylike(name, a)
    a = util.asarray_like(a)
    shape = get_aval(a).shape
    if axis is None:
        a = L.reshape(a, (int(np.prod(np.shape(a), dtype=np.int64)),))
        ax = 0
    else:
        (ax,) = reduction_axes(name, shape, operator.index(concrete_value(axis, f"jnp.{name} axis")))
    if get_aval(a).shape[ax] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    result = getattr(L, lax_name)(a, ax, _dtypes.default_int_dtype())
    if keepdims:
        result = L.expand_dims(result, tuple(range(len(shape))) if axis is None else (ax,))
    return result


def argmax(a, axis=None, out=None, keepdims=None):
    """Index of the first maximum (NaN counts as the maximum), as the default int dtype."""
    return _arg_reduce("argmax", "argmax", a, axis, out, keepdims)


def argmin(a, axis=None, out=None, keepdims=None):
    """Index of the first minimum (NaN counts as the minimum)."""
    return _arg_reduce("argmin", "argmin", a, axis, out, keepdims)


def _cumulative(name, lax_name, a, axis, dtype, out, promote_integers=False):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    util.check_arraylike(name, a)
    a = util.asarray_like(a)
    dt = _user_dtype(dtype, name)
    if axis is None or get_aval(a).ndim == 0:
        a = L.reshape(a, (int(np.prod(np.shape(a), dtype=np.int64)),))
    ax = 0 if axis is None else axis
    (ax,) = reduction_axes(name, get_aval(a).shape, operator.index(concrete_value(ax, f"jnp.{name} axis")))
    src = get_aval(a).dtype
    if dt is None:
        # As in JAX: the input dtype (cumsum/cumprod keep small integers), except that bools
        # accumulate as the default int; `promote_integers` (cumulative_sum) widens small integers.
        work = _promote_integer(src) if promote_integers or _dtypes.is_bool(src) else src
        out_dtype = work
    elif _dtypes.is_bool(dt):
        # Bool output: accumulate the truth values (a != 0, so that e.g. -1 and 1 cannot cancel)
        # as integers, then convert back.
        if not _dtypes.is_bool(src):
            a = ufuncs.not_equal(a, 0)
        work, out_dtype = _promote_integer(dt), dt
    else:
        work = out_dtype = dt
    result = getattr(L, lax_name)(util.convert_element_type(a, work, False), ax)
    return util.convert_element_type(result, out_dtype, False)


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along `axis` (flattened when None)."""
    return _cumulative("cumsum", "cumsum", a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along `axis` (flattened when None)."""
    return _cumulative("cumprod", "cumprod", a, axis, dtype, out)


def _cumsum_promoting(x, axis, dtype):
    """JAX's cumulative_sum accumulates small integers in the default integer width."""
    return _cumulative("cumulative_sum", "cumsum", x, axis, dtype, None, promote_integers=True)


def _with_initial(fun, x, axis, dtype, include_initial, ident):
    out = fun(x, axis, dtype)
    if not include_initial:
        return out
    aval = get_aval(out)
    ax = axis % aval.ndim if aval.ndim else 0
    pad_shape = aval.shape[:ax] + (1,) + aval.shape[ax + 1 :]
    first = L.broadcast_in_dim(util.convert_element_type(ident, aval.dtype), pad_shape, ())
    return L.concatenate([first, out], ax)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Array-API cumulative sum; `axis` is required unless `x` is 1-D."""
    util.check_arraylike("cumulative_sum", x)
    if axis is None:
        if np.ndim(x) != 1:
            raise ValueError(f"cumulative_sum: axis must be given for arrays of ndim {np.ndim(x)} != 1")
        axis = 0
    return _with_initial(_cumsum_promoting, x, axis, dtype, include_initial, 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    util.check_arraylike("cumulative_prod", x)
    if axis is None:
        if np.ndim(x) != 1:
            raise ValueError(f"cumulative_prod: axis must be given for arrays of ndim {np.ndim(x)} != 1")
        axis = 0
    return _with_initial(cumprod, x, axis, dtype, include_initial, 1)


def ptp(a, axis=None, out=None, keepdims=False):
    """Range (max - min) along `axis`."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.ptp is not supported.")
    return ufuncs.subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def count_nonzero(a, axis=None, keepdims=False):
    """Number of nonzero elements (default int dtype)."""
    util.check_arraylike("count_nonzero", a)
    return sum(ufuncs.not_equal(a, 0), axis, dtype=_dtypes.default_int_dtype(), keepdims=keepdims)


# ---------------------------------------------------------------------------------- nan-aware


def _is_inexact(a):
    return _dtypes.is_inexact(get_aval(util.asarray_like(a)).dtype)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """`sum` treating NaN as zero."""
    util.check_arraylike("nansum", a)
    a = ufuncs.where(ufuncs.isnan(a), 0, a) if _is_inexact(a) else a
    return sum(a, axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """`prod` treating NaN as one."""
    util.check_arraylike("nanprod", a)
    a = ufuncs.where(ufuncs.isnan(a), 1, a) if _is_inexact(a) else a
    return prod(a, axis, dtype, out, keepdims, initial, where)


def _nan_extremum(name, fun, fill, a, axis, out, keepdims, initial, where):
    util.check_arraylike(name, a)
    if not _is_inexact(a):
        return fun(a, axis, out, keepdims, initial, where)
    nan = ufuncs.isnan(a)
    res = fun(ufuncs.where(nan, fill, a), axis, out, keepdims, initial, where)
    if initial is not None:
        return res
    # An all-NaN slice has no non-NaN extremum: NumPy (and JAX) give NaN there.
    all_nan = all(nan, axis, keepdims=keepdims, where=where)
    return ufuncs.where(all_nan, np.nan, res)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """`max` ignoring NaN (NaN where a slice is all NaN)."""
    return _nan_extremum("nanmax", max, -np.inf, a, axis, out, keepdims, initial, where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """`min` ignoring NaN (NaN where a slice is all NaN)."""
    return _nan_extremum("nanmin", min, np.inf, a, axis, out, keepdims, initial, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """`mean` over the non-NaN elements."""
    util.check_arraylike("nanmean", a)
    if not _is_inexact(a):
        return mean(a, axis, dtype, out, keepdims, where=where)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.nanmean is not supported.")
    a = util.asarray_like(a)
    dt = _user_dtype(dtype, "nanmean") or get_aval(a).dtype
    count = sum(ufuncs.logical_not(ufuncs.isnan(a)), axis, keepdims=keepdims, where=where)
    total = nansum(a, axis, dtype=dt, keepdims=keepdims, where=where)
    return ufuncs.true_divide(total, util.convert_element_type(count, dt))


# --------------------------------------------------------------------------------- logsumexp


def _stop_gradient(x):
    # Treat the shift as a constant for autodiff, once stop_gradient exists in lax.
    fn = getattr(L, "stop_gradient", None)
    return x if fn is None else fn(x)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """log(sum(b * exp(a))) over `axis`, computed stably by shifting by the maximum.

    With `return_sign`, returns (log|sum|, sign(sum)); otherwise a negative sum gives NaN.
    """
    if b is not None:
        a, b = util.promote_args_inexact("logsumexp", a, b)
        a = ufuncs.where(ufuncs.not_equal(b, 0), a, -np.inf)
    else:
        (a,) = util.promote_args_inexact("logsumexp", a)
    shape = get_aval(a).shape
    axes = reduction_axes("logsumexp", shape, axis)
    amax = max(ufuncs.real(a), axes, keepdims=keepdims, where=where, initial=-np.inf)
    # An infinite maximum would make a - amax NaN; shift by 0 there instead.
    amax = _stop_gradient(ufuncs.where(ufuncs.isfinite(amax), amax, 0))
    amax_b = amax if keepdims or not axes else L.expand_dims(amax, axes)
    exp_a = ufuncs.exp(ufuncs.subtract(a, util.convert_element_type(amax_b, get_aval(a).dtype)))
    if b is not None:
        exp_a = ufuncs.multiply(exp_a, b)
    sumexp = sum(exp_a, axes, keepdims=keepdims, where=where)
    sign = ufuncs.sign(sumexp)
    if return_sign or not _dtypes.is_complex(get_aval(sumexp).dtype):
        sumexp = ufuncs.absolute(sumexp)
    out = ufuncs.add(ufuncs.log(sumexp), util.convert_element_type(amax, get_aval(sumexp).dtype))
    if return_sign:
        return out, sign
    if b is not None and not _dtypes.is_complex(get_aval(out).dtype):
        out = ufuncs.where(ufuncs.less(sign, 0), np.nan, out)
    return out
