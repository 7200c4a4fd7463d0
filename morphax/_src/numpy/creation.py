"""Array creation: `array`/`asarray`, constant fills, `eye`, `arange`, `linspace` and friends.

Host inputs (lists, NumPy arrays) are converted on the host and become constant Arrays of the
canonical dtype; everything computed from possibly traced values uses primitives (iota,
broadcast_in_dim), so the functions behave the same eagerly and under `make_jaxpr`.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from morphax._src import errors
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.core.promotion import result_type
from morphax._src.core.trace import Tracer
from morphax._src.core.values import is_concrete_array, make_array
from morphax._src.numpy import ufuncs, util
from morphax._src.prims import lax_api as L
from morphax._src.runtime import guards
from morphax._src.runtime.array import Array
from morphax._src.transforms import staging

__all__ = [
    "array", "asarray", "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
    "empty_like", "eye", "identity", "arange", "linspace", "logspace", "geomspace", "astype", "copy",
]  # fmt: skip

_PY_SCALARS = (builtins.bool, int, float, complex)


# ------------------------------------------------------------------------------------- helpers


def concrete_value(x, context: str):
    """The host value of `x`; a traced `x` with no known value raises the concretization error
    with `context` (which should name the function and argument)."""
    if isinstance(x, Tracer):
        v = x.to_concrete_value()
        if v is None:
            raise errors.ConcretizationTypeError(x, context)
        return np.asarray(v)
    if isinstance(x, Array):
        return np.asarray(x)
    return x


def concrete_int(x, context: str) -> int:
    """`operator.index(x)` for Python ints, NumPy ints and concrete integer arrays."""
    x = concrete_value(x, context)
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{context}: expected an integer, got {x!r}") from None


def canonicalize_shape(shape, fun_name: str) -> tuple:
    """An int or a sequence of concrete non-negative ints, as a tuple."""
    if isinstance(shape, (int, np.integer)) or (hasattr(shape, "shape") and np.ndim(shape) == 0):
        shape = (shape,)
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(
            f"{fun_name}: shapes must be 1D sequences of concrete values of integer type, got {shape!r}. "
            "If using `jit`, make the shape a static argument (static_argnums)."
        ) from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{fun_name}: negative dimensions are not allowed, got shape {dims}")
    return dims


def _user_dtype(dtype, fun_name, default=None):
    """The canonical dtype for an explicit `dtype=` argument (warning on x32 truncation)."""
    if dtype is None:
        return default
    _dtypes.check_user_dtype_supported(dtype, fun_name)
    return _dtypes.canonicalize_dtype(_dtypes.dtype(dtype))


def _fill_scalar(value, dtype, weak_type):
    """The fill value in `dtype`. A Python int goes through NumPy's integer (int64, or uint64
    above it) and wraps into a narrower integer dtype, as JAX's lax.full: jnp.full(2, 300,
    dtype=uint8) is [44, 44], jnp.full(2, 2**40) is int32 zeros; a float dtype takes it as is."""
    if type(value) is int and (_dtypes.is_integer(dtype) or _dtypes.is_bool(dtype)):
        host = np.array(value)
        if host.dtype == object:  # beyond int64/uint64
            raise OverflowError(
                f"full: fill value {value} is beyond the 64-bit integers; no integer dtype holds it"
            )
        return make_array(host.astype(dtype), dtype, weak_type)
    return util.convert_element_type(value, dtype, weak_type)


def _fill(shape, value, dtype, weak_type=False):
    """A `shape` array of the scalar `value` (possibly traced) as one broadcast_in_dim."""
    scalar = _fill_scalar(value, dtype, weak_type)
    if get_aval(scalar).shape != ():
        raise TypeError(f"fill value must be a scalar, got shape {get_aval(scalar).shape}")
    if shape == ():
        return scalar
    return L.broadcast_in_dim(scalar, tuple(shape), ())


def _is_leaf_array(x):
    # Not isinstance(x, Array): that hook (tracers are Arrays) costs every Python scalar a call.
    return type(x) is Array or isinstance(x, Tracer)


def _leaves(obj, out):
    """Flatten nested lists/tuples (not arrays) into `out`."""
    if isinstance(obj, (list, tuple)):
        for elt in obj:
            _leaves(elt, out)
    else:
        out.append(obj)
    return out


def _host_numeric(x, fun_name):
    """A leaf that is neither a morphax array nor a Python/NumPy number, as a NumPy array."""
    try:
        arr = np.asarray(x)
    except Exception as e:  # noqa: BLE001 - report the original problem with our context
        raise TypeError(
            f"{fun_name}: cannot convert object of type {type(x).__name__} to an array: {e}"
        ) from None
    if (
        arr.dtype.kind not in "biufc"
        and not _dtypes.is_bfloat16(arr.dtype)
        and not _dtypes.is_floating(arr.dtype)
    ):
        raise TypeError(
            f"{fun_name}: unsupported input of type {type(x).__name__} with dtype {arr.dtype}; "
            "only numeric and boolean arrays are supported."
        )
    return arr


# -------------------------------------------------------------------------------- array/asarray


def _array(obj, dtype, ndmin, fun_name):
    if hasattr(obj, "__jax_array__"):
        obj = obj.__jax_array__()
    if isinstance(getattr(obj, "dtype", None), _dtypes.ExtendedDType) and not isinstance(obj, np.ndarray):
        # A typed key array is an array already (JAX returns it as it is); it converts to no
        # other dtype.
        if dtype is not None and dtype != obj.dtype:
            want = getattr(dtype, "dtype", dtype)
            raise ValueError(
                f"{fun_name}: cannot convert_element_type from {obj.dtype} to {want}; "
                "random.key_data(keys) gives a key array's integer data."
            )
        return obj
    dt = _user_dtype(dtype, fun_name)
    if _is_leaf_array(obj):
        out = obj if dt is None else util.convert_element_type(obj, dt, False)
    elif type(obj) in _PY_SCALARS:
        if type(obj) is int and dt is not None and _dtypes.is_integer(dt):
            _check_int_fits(obj, dt, fun_name)  # an explicit dtype does not wrap (as NumPy)
        weak = dt is None and _dtypes.is_weakly_typed(obj)
        out = util.convert_element_type(obj, dt or _dtypes.python_scalar_dtype(obj), weak)
    elif isinstance(obj, (np.ndarray, np.generic)):
        _dtypes.dtype(obj.dtype)  # rejects object/string arrays with JAX's message
        dt = dt or _dtypes.canonicalize_dtype(obj.dtype)
        # A copy: the caller may mutate its NumPy array later.
        out = make_array(np.array(obj, dtype=dt), dt, False)
    elif isinstance(obj, (list, tuple)):
        out = _array_from_sequence(obj, dt, fun_name)
    elif obj is None:
        raise TypeError(f"{fun_name}: None is not a valid value for an array")
    else:
        arr = _host_numeric(obj, fun_name)
        dt = dt or _dtypes.canonicalize_dtype(arr.dtype)
        out = make_array(arr.astype(dt, copy=False), dt, False)
    nd = get_aval(out).ndim
    if ndmin > nd:
        shape = (1,) * (ndmin - nd) + get_aval(out).shape
        out = L.broadcast_in_dim(out, shape, tuple(range(ndmin - nd, ndmin)))
    return out


def _check_int_fits(x: int, dt, fun_name):
    info = _dtypes.iinfo(dt)
    if not info.min <= x <= info.max:
        raise OverflowError(
            f"{fun_name}: Python int {x} out of bounds for {np.dtype(dt).name} (range {info.min} to "
            f"{info.max}); pass a wider dtype, or wrap explicitly with jnp.asarray(x).astype(dtype)."
        )


def _array_from_sequence(obj, dt, fun_name):
    leaves = _leaves(obj, [])
    converted = []
    for leaf in leaves:
        if leaf is None:
            raise TypeError(f"{fun_name}: None is not a valid value for an array")
        if hasattr(leaf, "__jax_array__"):
            leaf = leaf.__jax_array__()
        if not (
            _is_leaf_array(leaf) or type(leaf) in _PY_SCALARS or isinstance(leaf, (np.ndarray, np.generic))
        ):
            leaf = _host_numeric(leaf, fun_name)
        converted.append(leaf)
    if dt is None:
        # Python scalars are weak here, so [np.float16(1), 2.0] stays float16 as in JAX.
        dt = result_type(*converted) if converted else _dtypes.default_float_dtype()
    if not any(_is_leaf_array(x) for x in converted):
        try:
            host = np.array(obj, dtype=dt)
        except OverflowError as e:
            raise OverflowError(f"{fun_name}: {e} (values do not fit in {dt.name})") from None
        return make_array(host, dt, False)
    # Some elements are morphax arrays (maybe traced): convert each and stack with primitives.
    if not obj:
        return make_array(np.zeros((0,), dt), dt, False)
    elements = [_array(elt, dt, 0, fun_name) for elt in obj]
    shapes = {tuple(np.shape(e)) for e in elements}
    if len(shapes) != 1:
        raise ValueError(
            f"{fun_name}: the elements have different shapes {sorted(shapes)}: an array needs one "
            "shape for all of them (pad or stack them to one shape first)"
        )
    (shape,) = shapes
    rows = [L.broadcast_in_dim(e, (1,) + shape, tuple(range(1, len(shape) + 1))) for e in elements]
    return rows[0] if len(rows) == 1 else L.concatenate(rows, 0)


def array(object, dtype=None, copy=True, order="K", ndmin=0):  # noqa: A002 - NumPy's name
    """Create an array from an array, scalar or (nested) sequence; Python scalars give weak types."""
    if order is not None and order not in ("K", "C", "A"):
        raise NotImplementedError(f"array: only order='K' (or 'C') is supported, got order={order!r}")
    ndmin = concrete_int(ndmin, "array: 'ndmin' argument")
    if guards.active and guards.is_host_value(object):
        guards.host_to_device(object, explicit=False, what="jnp.array")
    if copy and _is_leaf_array(object):
        # A new buffer, as JAX's `copy` primitive gives: the result may be donated while the
        # input is still used (optax copies parameters into optimizer state this way).
        object = L.copy_p.bind(object)
    return _lift(_array(object, dtype, ndmin, "array"))


def _lift(out):
    """Under `jit` / `make_jaxpr`, a new concrete array is lifted into the trace, as JAX's
    `jnp.array` does (`lax.stage`, `device_put`): a jaxpr closing over it then holds it as a
    constvar (JAX's jaxprs inline a closed-over value as a literal only when it is a Python or
    NumPy scalar)."""
    return staging.lift(out) if is_concrete_array(out) else out


def asarray(a, dtype=None, order=None, *, copy=None, device=None):
    """Like `array`, without copying arrays that already have the requested dtype."""
    if order is not None and order not in ("K", "C", "A"):
        raise NotImplementedError(f"asarray: only order='K' (or 'C') is supported, got order={order!r}")
    if guards.active and guards.is_host_value(a):
        guards.host_to_device(a, explicit=False, what="jnp.asarray")
    if copy and _is_leaf_array(a):
        a = L.copy_p.bind(a)  # as `array(copy=True)`
    out = _array(a, dtype, 0, "asarray")
    return _lift(out) if device is None else _on(out, device)


def astype(x, dtype, /, *, copy=False, device=None):
    """Convert `x` to `dtype` (complex to real keeps the real part); the result is strongly typed."""
    util.check_arraylike("astype", x)
    dt = _user_dtype(dtype, "astype")
    if dt is None:
        raise TypeError("astype: dtype must not be None")
    x = util.asarray_like(x)
    if _dtypes.is_complex(get_aval(x).dtype) and not _dtypes.is_complex(dt):
        x = ufuncs.real(x)
    return _on(util.convert_element_type(x, dt, False), device)


def copy(a, order=None):
    """A copy of `a` (arrays are immutable, so this only converts)."""
    util.check_arraylike("copy", a)
    return array(a, copy=True, order=order)


def _on(out, device):
    """`out` put on `device` (a Device or Sharding; committed, as device_put) when one is given, as
    JAX's creation functions do. NB: under a trace the placement is left to the enclosing call."""
    if device is None or type(out) is not Array:
        return out
    from morphax._src.runtime.placement import put

    return put(out, device)


# --------------------------------------------------------------------------------------- fills


def zeros(shape, dtype=None, *, device=None):
    """An array of zeros (default dtype float32, or float64 under x64)."""
    dt = _user_dtype(dtype, "zeros", _dtypes.default_float_dtype())
    return _on(_fill(canonicalize_shape(shape, "zeros"), 0, dt), device)


def ones(shape, dtype=None, *, device=None):
    """An array of ones."""
    dt = _user_dtype(dtype, "ones", _dtypes.default_float_dtype())
    return _on(_fill(canonicalize_shape(shape, "ones"), 1, dt), device)


def empty(shape, dtype=None, *, device=None):
    """Like `zeros`: arrays are immutable, so there is nothing to leave uninitialized."""
    dt = _user_dtype(dtype, "empty", _dtypes.default_float_dtype())
    return _on(_fill(canonicalize_shape(shape, "empty"), 0, dt), device)


def full(shape, fill_value, dtype=None, *, device=None):
    """An array filled with `fill_value`; a Python scalar fill without `dtype` gives a weak type
    (as lax.full does in JAX). Non-scalar fills broadcast to `shape`."""
    util.check_arraylike("full", fill_value)
    dt = _user_dtype(dtype, "full")
    if np.ndim(fill_value) == 0:
        shape = canonicalize_shape(shape, "full")
        weak = dt is None and _dtypes.is_weakly_typed(fill_value)
        return _on(_fill(shape, fill_value, dt or result_type(fill_value), weak), device)
    return _on(broadcast_to(asarray(fill_value, dtype=dt), shape), device)


def _numpy_dtype(a):
    """`a.dtype` as a NumPy dtype; None when `a` has none or an extended one (key arrays)."""
    dtype = getattr(a, "dtype", None)
    if dtype is None:
        return None
    try:
        return np.dtype(dtype)
    except TypeError:
        return None


def _like(fun_name, a, fill_value, dtype, shape):
    dt = _user_dtype(dtype, fun_name)
    if not isinstance(a, (Array, Tracer)) and hasattr(a, "shape") and _numpy_dtype(a) is not None:
        # Anything with a shape and a dtype serves as the prototype (a ShapeDtypeStruct, a
        # NumPy array), as in JAX; only a real weakly typed array makes the result weak.
        weak = False
        dt = dt or _dtypes.canonicalize_dtype(_numpy_dtype(a))
        shape = tuple(a.shape) if shape is None else canonicalize_shape(shape, fun_name)
    else:
        util.check_arraylike(fun_name, a)
        # The result is weak only if it takes its dtype from a weakly typed `a`.
        weak = dt is None and _dtypes.is_weakly_typed(a)
        dt = dt or result_type(a)
        shape = np.shape(a) if shape is None else canonicalize_shape(shape, fun_name)
    if np.ndim(fill_value) != 0:
        return broadcast_to(asarray(fill_value, dtype=dt), shape)
    return _fill(tuple(shape), fill_value, dt, weak)


def zeros_like(a, dtype=None, shape=None, *, device=None):
    """Zeros with the shape and dtype of `a` (either may be overridden)."""
    return _on(_like("zeros_like", a, 0, dtype, shape), device)


def ones_like(a, dtype=None, shape=None, *, device=None):
    """Ones with the shape and dtype of `a`."""
    return _on(_like("ones_like", a, 1, dtype, shape), device)


def empty_like(prototype, dtype=None, shape=None, *, device=None):
    """Like `zeros_like`."""
    return _on(_like("empty_like", prototype, 0, dtype, shape), device)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    """`fill_value` with the shape and dtype of `a`."""
    util.check_arraylike("full_like", fill_value)
    return _on(_like("full_like", a, fill_value, dtype, shape), device)


# --------------------------------------------------------------------------------- eye / ranges


def eye(N, M=None, k=0, dtype=None, *, device=None):  # noqa: N803 - NumPy's names
    """A 2-D array with ones on diagonal `k` (k may be traced)."""
    n = concrete_int(N, "'N' argument of jnp.eye()")
    m = n if M is None else concrete_int(M, "'M' argument of jnp.eye()")
    if n < 0 or m < 0:
        raise ValueError(f"eye: negative dimensions are not allowed, got N={n} and M={m}")
    dt = _user_dtype(dtype, "eye", _dtypes.default_float_dtype())
    util.check_arraylike("eye", k)
    idx = _dtypes.int32
    rows = L.broadcasted_iota(idx, (n, m), 0)
    cols = L.broadcasted_iota(idx, (n, m), 1)
    k = util.asarray_like(k) if isinstance(k, (Array, Tracer)) else operator.index(k)
    on_diag = ufuncs.equal(ufuncs.add(rows, k), cols)
    return _on(util.convert_element_type(on_diag, dt, False), device)


def identity(n, dtype=None):
    """The n x n identity matrix."""
    return eye(n, dtype=dtype)


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """Evenly spaced values; the arguments must be concrete (the result's length depends on them)."""
    return _on(_arange(start, stop, step, dtype), device)


def _arange(start, stop, step, dtype):
    _dtypes.check_user_dtype_supported(dtype, "arange")
    util.check_arraylike("arange", start)
    only_stop = stop is None and step is None
    start = concrete_value(
        start, f"It arose in the jnp.arange argument '{'stop' if only_stop else 'start'}'."
    )
    if stop is not None:
        util.check_arraylike("arange", stop)
        stop = concrete_value(stop, "It arose in the jnp.arange argument 'stop'.")
    if step is not None:
        util.check_arraylike("arange", step)
        step = concrete_value(step, "It arose in the jnp.arange argument 'step'.")
    for name, val in (("stop" if only_stop else "start", start), ("stop", stop), ("step", step)):
        if val is not None and np.ndim(val) != 0:
            raise ValueError(f"arange: arguments must be scalars; got {name}={val}")
    if dtype is None:
        dt = result_type(start, *(x for x in (stop, step) if x is not None))
    else:
        dt = _dtypes.canonicalize_dtype(_dtypes.dtype(dtype))
    if only_stop:
        n = int(np.ceil(start)) if not _dtypes.is_integer(np.result_type(start)) else operator.index(start)
        return L.iota(dt, builtins.max(n, 0))
    if step is None and start == 0:
        return L.iota(dt, builtins.max(int(np.ceil(stop)), 0))
    if step is not None and step == 0:
        raise ValueError("arange: step must not be zero (division by zero)")
    vals = [x.item() if isinstance(x, (np.ndarray, np.generic)) else x for x in (start, stop, step)]
    host = np.arange(vals[0], vals[1], vals[2], dtype=dt)
    return make_array(host, dt, False)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """`num` evenly spaced samples from `start` to `stop` (arrays allowed; traceable)."""
    num = concrete_int(num, "'num' argument of jnp.linspace")
    axis = concrete_int(axis, "'axis' argument of jnp.linspace")
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative.")
    util.check_arraylike("linspace", start, stop)
    dt = _user_dtype(dtype, "linspace") or _dtypes.to_inexact_dtype(result_type(start, stop))
    work = _dtypes.to_inexact_dtype(dt)
    start, stop = asarray(start, dtype=work), asarray(stop, dtype=work)
    bshape = tuple(np.broadcast_shapes(get_aval(start).shape, get_aval(stop).shape))
    start, stop = broadcast_to(start, bshape), broadcast_to(stop, bshape)
    axis = util.canonicalize_axis(axis, len(bshape) + 1, "linspace")
    out_shape = bshape[:axis] + (num,) + bshape[axis:]
    bdims = tuple(d for d in range(len(out_shape)) if d != axis)
    div = num - 1 if endpoint else num
    if num == 0:
        out = _fill(out_shape, 0, work)
        delta = asarray(np.nan, dtype=work)
    elif div > 0:
        real = _dtypes.real_dtype(work)
        # t runs over [0, 1] (endpoint) in the real dtype; the ends are then exact.
        t = ufuncs.true_divide(
            L.broadcasted_iota(real, out_shape, axis), util.convert_element_type(div, real)
        )
        t = util.convert_element_type(t, work)
        # Scalar bounds broadcast inside the arithmetic; array bounds get the sample axis first.
        lo = start if not bshape else L.broadcast_in_dim(start, out_shape, bdims)
        hi = stop if not bshape else L.broadcast_in_dim(stop, out_shape, bdims)
        out = ufuncs.add(ufuncs.multiply(lo, ufuncs.subtract(1, t)), ufuncs.multiply(hi, t))
        if retstep:
            delta = ufuncs.true_divide(ufuncs.subtract(stop, start), util.convert_element_type(div, work))
    else:  # one sample
        out = L.broadcast_in_dim(start, out_shape, bdims)
        if retstep:
            delta = asarray(np.nan, dtype=work) if endpoint else ufuncs.subtract(stop, start)
    if _dtypes.is_integer(dt) and not _dtypes.is_integer(get_aval(out).dtype):
        out = ufuncs.floor(out)
    out = _on(util.convert_element_type(out, dt, False), device)
    return (out, delta) if retstep else out


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop)``."""
    dt = _user_dtype(dtype, "logspace") or _dtypes.to_inexact_dtype(result_type(start, stop))
    work = _dtypes.to_inexact_dtype(dt)
    exps = linspace(start, stop, num, endpoint=endpoint, dtype=work, axis=axis)
    return util.convert_element_type(ufuncs.power(util.convert_element_type(base, work), exps), dt, False)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Samples evenly spaced on a log scale between `start` and `stop` (same sign, nonzero)."""
    util.check_arraylike("geomspace", start, stop)
    dt = _user_dtype(dtype, "geomspace") or _dtypes.to_inexact_dtype(result_type(start, stop))
    work = _dtypes.to_inexact_dtype(dt)
    start, stop = asarray(start, dtype=work), asarray(stop, dtype=work)
    sign = ufuncs.sign(start)
    logs = [ufuncs.log10(ufuncs.true_divide(v, sign)) for v in (start, stop)]
    res = logspace(logs[0], logs[1], num, endpoint=endpoint, base=10.0, dtype=work, axis=0)
    res = ufuncs.multiply(sign, res)
    if axis != 0:  # the samples' axis, built first, moves into place
        nd = len(np.shape(res))
        res = L.transpose(res, tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, nd)))
    return util.convert_element_type(res, dt, False)


def broadcast_to(array, shape):
    """Broadcast `array` to `shape` by NumPy's rules (no data is copied on the host)."""
    a = util.checked_array("broadcast_to", array)
    shape = canonicalize_shape(shape, "broadcast_to")
    shp = tuple(np.shape(a))
    if shp == shape:
        return a
    nlead = len(shape) - len(shp)
    if nlead < 0:
        raise ValueError(f"Cannot broadcast to shape with fewer dimensions: arr_shape={shp} shape={shape}")
    if any(d != 1 and d != t for d, t in zip(shp, shape[nlead:])):
        raise ValueError(f"Incompatible shapes for broadcasting: {shp} and requested shape {shape}")
    return L.broadcast_in_dim(a, shape, tuple(range(nlead, len(shape))))
