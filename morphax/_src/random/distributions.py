"""Samplers built on `prng.random_bits`, following JAX's algorithms step for step so the bits
agree: uniform's mantissa trick, normal by erf_inv, randint's two-word remainder, the sort-based
shuffle, Gumbel-max categorical. Everything is primitives, so samplers trace and differentiate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from morphax._src.api.eager_compiled import compiled_when_eager
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.core.values import make_array
from morphax._src.numpy import creation as _creation
from morphax._src.numpy import indexing as _indexing
from morphax._src.numpy import manipulation as _manip
from morphax._src.numpy import reductions as _red
from morphax._src.numpy import ufuncs as _uf
from morphax._src.numpy import util as _util
from morphax._src.prims import lax_api as L
from morphax._src.prims import random_keys as _rk
from morphax._src.prims.arithmetic import fma
from morphax._src.random.prng import check_key, is_key_value, key_row, random_bits, split

__all__ = [
    "bernoulli",
    "categorical",
    "choice",
    "exponential",
    "gumbel",
    "normal",
    "permutation",
    "rademacher",
    "randint",
    "truncated_normal",
    "uniform",
]

_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}


def _const(value, dtype):
    return make_array(np.asarray(value).astype(dtype), dtype)


def _shape_of(x):
    return get_aval(x).shape if not isinstance(x, (int, float, bool, complex)) else ()


def _check_shape(name, shape, *param_shapes):
    """JAX's rule: parameters broadcast against `shape` without growing it."""
    if not param_shapes:
        return
    try:
        result = np.broadcast_shapes(shape, *param_shapes)
    except ValueError:
        result = None
    if result != tuple(shape):
        raise ValueError(
            f"{name} parameter shapes must be broadcast-compatible with shape argument, and the result of "
            f"broadcasting the shapes must equal the shape argument, but got result {result} for shape "
            f"argument {tuple(shape)}."
        )


def _float_dtype(name, dtype, *, allow_complex=False):
    _dtypes.check_user_dtype_supported(dtype, name)
    dt = _dtypes.canonicalize_dtype(dtype)
    ok = _dtypes.is_inexact(dt) if allow_complex else _dtypes.is_floating(dt)
    if not ok:
        kind = "a float or complex" if allow_complex else "a float"
        raise ValueError(f"dtype argument to `{name}` must be {kind} dtype, got {dt}")
    return dt


def _to_dtype_full(x, dtype, shape):
    """`x` converted to `dtype` (not weak); non-scalars broadcast to `shape` (lax ops broadcast
    scalars themselves, and the values are the same as JAX's rank-broadcast)."""
    if isinstance(x, (np.ndarray, np.generic)):
        x = _util.asarray_like(x)
    x = _util.convert_element_type(x, dtype)
    xs = get_aval(x).shape
    return x if not xs or xs == tuple(shape) else _manip.broadcast_to(x, shape)


# ---------------------------------------------------------------------------------------- uniform


def _unit_floats(key, shape, dtype):
    """Uniform floats in [0, 1) of `shape` and `dtype` from the key's bits, as JAX draws them."""
    finfo = _dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    # Formats with under 8 mantissa bits (float8, bfloat16) still draw a full byte, as JAX.
    rng_bits = 8 if nmant < 8 else nbits
    uint_dtype = _UINT[nbits]
    bits = random_bits(key, rng_bits, shape)
    if rng_bits != nbits:
        bits = L.convert_element_type(bits, uint_dtype)
    # Random mantissa under the exponent of 1.0 gives a float in [1, 2); subtract 1 for [0, 1).
    one_bits = np.array(1.0, dtype).view(uint_dtype)
    float_bits = L.bitwise_or(
        L.shift_right_logical(bits, make_array(rng_bits - nmant, uint_dtype)),
        make_array(one_bits, uint_dtype),
    )
    return L.sub(L.bitcast_convert_type(float_bits, dtype), _const(1.0, dtype))


def _uniform(key, shape, dtype, minval, maxval):
    nbits = _dtypes.finfo(dtype).bits
    if nbits not in _UINT:
        raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}.")
    _check_shape("uniform", shape, _shape_of(minval), _shape_of(maxval))
    minval = _to_dtype_full(minval, dtype, shape)
    maxval = _to_dtype_full(maxval, dtype, shape)
    floats = _unit_floats(key, shape, dtype)
    if np.dtype(dtype).itemsize >= 4:
        # XLA's CPU compiler fuses this multiply and add into one rounding; so do we, for JAX's bits
        # (the 16-bit formats keep two, as their arithmetic goes through float32 there).
        scaled = fma(floats, L.sub(maxval, minval), minval)
    else:
        scaled = L.add(L.mul(floats, L.sub(maxval, minval)), minval)
    return L.max(minval, scaled)


def uniform(key, shape=(), dtype=float, minval=0.0, maxval=1.0):
    """Uniform floats in [minval, maxval) of `shape` and `dtype` (default float32, float64 in x64)."""
    key = check_key("uniform", key)
    dtype = _float_dtype("uniform", dtype)
    shape = _creation.canonicalize_shape(shape, "uniform")
    return _uniform_compiled(key, shape, dtype, minval, maxval)


# ----------------------------------------------------------------------------------------- normal


def _normal_uniform(key, shape, dtype, minval, maxval):
    """`_uniform` as JAX writes it for `normal` (its text in make_jaxpr: the bounds broadcast to
    the rank, then a multiply and an add). For normal's bounds maxval - minval is exactly 2 in
    every float format (2 - epsneg rounds to even), so the product is exact and the add rounds
    once, as the fused multiply-add of `_uniform` does: the same bits."""
    rank = len(shape)
    if rank:
        minval = L.broadcast_in_dim(minval, (1,) * rank, ())
        maxval = L.broadcast_in_dim(maxval, (1,) * rank, ())
    floats = _unit_floats(key, shape, dtype)
    return L.max(minval, L.add(L.mul(floats, L.sub(maxval, minval)), minval))


_normal_uniform.__name__ = _normal_uniform.__qualname__ = "_uniform"  # JAX's name in the jaxpr


def _normal_real(key, shape, dtype):
    # The open interval (-1, 1): erf_inv(-1) would be -inf. The bounds are values of `dtype`,
    # arguments of the nested _uniform as in JAX.
    lo = np.array(-(1.0 - float(_dtypes.finfo(dtype).epsneg)), dtype)
    u = _normal_uniform_jit(key, shape, dtype, lo, np.array(1.0, dtype))
    return L.mul(_const(np.sqrt(2), dtype), L.erf_inv(u))


def normal(key, shape=(), dtype=float):
    """Standard normal samples: ``sqrt(2) * erf_inv(u)`` for u uniform in (-1, 1); complex dtypes
    get independent real and imaginary parts of variance 1/2 each."""
    key = check_key("normal", key)
    shape = _creation.canonicalize_shape(shape, "normal")
    dtype = _float_dtype("normal", dtype, allow_complex=True)
    if not is_key_value(key):
        key = _rk.random_wrap(key)  # as JAX: a raw key becomes a typed one before sampling
    return _normal_jit(key, shape, dtype)


def _normal(key, shape, dtype):
    if _dtypes.is_complex(dtype):
        real = _dtypes.real_dtype(dtype)
        k_re, k_im = (key_row(split(key), i) for i in range(2))
        re = L.convert_element_type(_normal_real_jit(k_re, shape, real), dtype)
        im = L.convert_element_type(_normal_real_jit(k_im, shape, real), dtype)
        z = L.add(re, L.mul(_const(1j, dtype), im))
        return L.div(z, _const(np.sqrt(2), dtype))
    return _normal_real_jit(key, shape, dtype)


def truncated_normal(key, lower, upper, shape=None, dtype=float):
    """Normal samples conditioned on (lower, upper): erf_inv of a uniform between erf(lower/sqrt2)
    and erf(upper/sqrt2), clipped into the open interval."""
    key = check_key("truncated_normal", key)
    dtype = _float_dtype("truncated_normal", dtype)
    if shape is None:
        shape = np.broadcast_shapes(_shape_of(lower), _shape_of(upper))
    else:
        shape = _creation.canonicalize_shape(shape, "truncated_normal")
        _check_shape("truncated_normal", shape, _shape_of(lower), _shape_of(upper))
    return _truncated_normal_compiled(key, shape, dtype, lower, upper)


def _truncated_normal(key, shape, dtype, lower, upper):
    sqrt2 = _const(np.sqrt(2), dtype)
    lower = _util.convert_element_type(_util.asarray_like(lower), dtype)
    upper = _util.convert_element_type(_util.asarray_like(upper), dtype)
    a = L.erf(_uf.true_divide(lower, sqrt2))
    b = L.erf(_uf.true_divide(upper, sqrt2))
    u = _uniform(key, shape, dtype, a, b)
    out = _uf.multiply(sqrt2, L.erf_inv(u))
    lo = L.nextafter(L.stop_gradient(lower), _const(np.inf, dtype))
    hi = L.nextafter(L.stop_gradient(upper), _const(-np.inf, dtype))
    return _uf.clip(out, lo, hi)


# One compiled program per (shape, dtype) when called eagerly, as JAX's jit-decorated samplers:
# 10^6 normals as native code, not threefry and erf_inv primitive by primitive through NumPy.
_uniform_compiled = compiled_when_eager(_uniform, static_argnums=(1, 2))
# normal's three, as JAX's: nested jit equations under a trace (the compiler inlines them), one
# compiled program when called eagerly.
_normal_jit = compiled_when_eager(_normal, static_argnums=(1, 2), inline=False)
_normal_real_jit = compiled_when_eager(_normal_real, static_argnums=(1, 2), inline=False)
_normal_uniform_jit = compiled_when_eager(_normal_uniform, static_argnums=(1, 2), inline=False)
_truncated_normal_compiled = compiled_when_eager(_truncated_normal, static_argnums=(1, 2))


# ---------------------------------------------------------------------------------------- randint


def _convert_and_clip_integer(val, dtype):
    """`val` converted to the integer `dtype`, clipping to its range instead of wrapping."""
    dtype = _dtypes.canonicalize_dtype(dtype)
    val_dtype = get_aval(val).dtype
    if val_dtype == dtype:
        return val
    lo = max(int(np.iinfo(dtype).min), int(np.iinfo(val_dtype).min))
    hi = min(int(np.iinfo(dtype).max), int(np.iinfo(val_dtype).max))
    clipped = L.clamp(make_array(lo, val_dtype), val, make_array(hi, val_dtype))
    return L.convert_element_type(clipped, dtype)


def _as_int_array(x):
    x = _util.asarray_like(x)
    if not _dtypes.is_integer(get_aval(x).dtype):
        x = _util.convert_element_type(x, _dtypes.default_int_dtype())
    return x


def randint(key, shape, minval, maxval, dtype=int):
    """Integers uniform in [minval, maxval) (JAX's slightly biased two-word remainder method)."""
    key = check_key("randint", key)
    _dtypes.check_user_dtype_supported(dtype, "randint")
    dtype = _dtypes.canonicalize_dtype(dtype)
    shape = _creation.canonicalize_shape(shape, "randint")
    if not _dtypes.is_integer(dtype):
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    _util.check_arraylike("randint", minval, maxval)
    _check_shape("randint", shape, _shape_of(minval), _shape_of(maxval))
    minval, maxval = _as_int_array(minval), _as_int_array(maxval)
    # maxval may exceed the dtype (randint(k, s, 0, 256, uint8)): the span is then one more.
    dtype_max = _convert_and_clip_integer(make_array(np.iinfo(dtype).max, dtype), get_aval(maxval).dtype)
    maxval_out_of_range = L.gt(_manip.broadcast_to(maxval, shape), _manip.broadcast_to(dtype_max, shape))
    minval = _manip.broadcast_to(_convert_and_clip_integer(minval, dtype), shape)
    maxval = _manip.broadcast_to(_convert_and_clip_integer(maxval, dtype), shape)
    nbits = np.iinfo(dtype).bits
    if nbits not in _UINT:
        raise TypeError(f"randint only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}.")
    unsigned = _UINT[nbits]

    keys = split(key)
    k1, k2 = (key_row(keys, i) for i in range(2))
    higher_bits = random_bits(k1, nbits, shape)
    lower_bits = random_bits(k2, nbits, shape)

    one = L.broadcast_in_dim(make_array(1, unsigned), shape, ())
    span = L.convert_element_type(L.sub(maxval, minval), unsigned)
    span = L.select_n(L.le(maxval, minval), span, one)  # empty range: always minval
    span = L.select_n(L.bitwise_and(maxval_out_of_range, L.gt(maxval, minval)), span, L.add(span, one))
    # Reduce the double-width number hi * 2**nbits + lo modulo span without overflow:
    # 2**nbits % span is computed as (2**(nbits/2) % span)**2 % span.
    multiplier = L.rem(L.broadcast_in_dim(make_array(2 ** (nbits // 2), unsigned), shape, ()), span)
    multiplier = L.rem(L.mul(multiplier, multiplier), span)
    offset = L.add(L.mul(L.rem(higher_bits, span), multiplier), L.rem(lower_bits, span))
    offset = L.rem(offset, span)
    return L.add(minval, L.convert_element_type(offset, dtype))


# ------------------------------------------------------------------------------ bernoulli & co.


_HALF = np.float32(0.5)


def bernoulli(key, p=_HALF, shape=None, mode="low"):
    """Booleans that are True with probability `p` (``uniform < p``)."""
    key = check_key("bernoulli", key)
    if mode not in ("low", "high"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    if mode == "high":
        raise NotImplementedError("bernoulli(mode='high') is not implemented yet; use mode='low'")
    p = _util.asarray_like(p)
    dtype = _dtypes.canonicalize_dtype(get_aval(p).dtype)
    if not _dtypes.is_floating(dtype):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
    p = _util.convert_element_type(p, dtype)
    if shape is None:
        shape = get_aval(p).shape
    else:
        shape = _creation.canonicalize_shape(shape, "bernoulli")
        _check_shape("bernoulli", shape, get_aval(p).shape)
    return L.lt(_uniform(key, shape, dtype, 0.0, 1.0), _manip.broadcast_to(p, shape))


def rademacher(key, shape=(), dtype=int):
    """Random -1 or +1 with equal probability."""
    key = check_key("rademacher", key)
    dtype = _dtypes.canonicalize_dtype(dtype)
    shape = _creation.canonicalize_shape(shape, "rademacher")
    b = L.convert_element_type(bernoulli(key, 0.5, shape), dtype)
    return _uf.subtract(_uf.multiply(2, b), 1)


def gumbel(key, shape=(), dtype=float, mode="low"):
    """Standard Gumbel samples ``-log(-log(u))``, u uniform in [tiny, 1)."""
    key = check_key("gumbel", key)
    dtype = _float_dtype("gumbel", dtype)
    shape = _creation.canonicalize_shape(shape, "gumbel")
    if mode not in ("low", "high"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    if mode == "high":
        raise NotImplementedError("gumbel(mode='high') is not implemented yet; use mode='low'")
    return _gumbel(key, shape, dtype)


def _gumbel(key, shape, dtype):
    u = _uniform(key, shape, dtype, float(_dtypes.finfo(dtype).tiny), 1.0)
    return L.neg(L.log(L.neg(L.log(u))))


def exponential(key, shape=(), dtype=float):
    """Exponential(1) samples ``-log1p(-u)``."""
    key = check_key("exponential", key)
    dtype = _float_dtype("exponential", dtype)
    shape = _creation.canonicalize_shape(shape, "exponential")
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    return L.neg(L.log1p(L.neg(u)))


def categorical(key, logits, axis=-1, shape=None, replace=True, mode="low"):
    """Class indices drawn with probabilities softmax(logits) along `axis` (Gumbel-max)."""
    key = check_key("categorical", key)
    _util.check_arraylike("categorical", logits)
    logits = _creation.asarray(logits)
    lshape = get_aval(logits).shape
    ndim = len(lshape)
    if not -ndim <= axis < ndim:
        raise ValueError(f"categorical: axis {axis} is out of bounds for logits of shape {lshape}")
    if axis >= 0:
        axis -= ndim
    batch_shape = lshape[: ndim + axis] + lshape[ndim + axis + 1 :]
    if shape is None:
        shape = batch_shape
    else:
        shape = _creation.canonicalize_shape(shape, "categorical")
        _check_shape("categorical", shape, batch_shape)
    if mode not in ("low", "high"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    if mode == "high":
        raise NotImplementedError("categorical(mode='high') is not implemented yet; use mode='low'")
    dtype = get_aval(logits).dtype
    if not _dtypes.is_floating(dtype):
        raise TypeError(f"categorical: logits must be a float array, got dtype {dtype}")
    prefix = shape[: len(shape) - len(batch_shape)]
    if replace:
        lg_shape = list(shape[len(shape) - len(batch_shape) :])
        lg_shape.insert(axis % ndim, lshape[axis])
        g = _gumbel(key, (*prefix, *lg_shape), dtype)
        x = _uf.add(g, L.expand_dims(logits, tuple(range(len(prefix)))) if prefix else logits)
        return _red.argmax(x, axis=axis)
    k = math.prod(prefix)
    if k > lshape[axis]:
        raise ValueError(
            f"Number of samples without replacement ({k}) cannot exceed number of categories ({lshape[axis]})."
        )
    x = _uf.add(logits, _gumbel(key, lshape, dtype))
    _, idx = L.top_k(_manip.moveaxis(x, axis, -1), k)
    return _manip.reshape(_manip.moveaxis(idx, -1, 0), shape)


# -------------------------------------------------------------------------------- permutation & co.


def _shuffle(key, x, axis):
    # Sorting by random 32-bit keys; enough rounds that all keys of one round are distinct
    # with high probability (JAX's exponent 3 analysis).
    size = math.prod(get_aval(x).shape)
    num_rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(num_rounds):
        keys = split(key)
        key, subkey = (key_row(keys, i) for i in range(2))
        sort_keys = random_bits(subkey, 32, get_aval(x).shape)
        _, x = L.sort_key_val(sort_keys, x, axis)
    return x


def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``arange(x)`` (int x) or of `x` along `axis` (all lanes alike
    unless `independent`)."""
    key = check_key("permutation", key)
    _util.check_arraylike("permutation", x)
    x = _util.asarray_like(x)
    ndim = len(get_aval(x).shape)
    axis = _util.canonicalize_axis(axis, ndim or 1, "permutation")
    if not ndim:
        if not _dtypes.is_integer(get_aval(x).dtype):
            raise TypeError("x must be an integer or at least 1-dimensional")
        n = _creation.concrete_int(x, "argument x of random.permutation()")
        return _shuffle(key, _creation.arange(n), axis)
    if independent or ndim == 1:
        return _shuffle(key, x, axis)
    ind = _shuffle(key, _creation.arange(get_aval(x).shape[axis]), 0)
    return _indexing.take(x, ind, axis, unique_indices=True)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Samples from `a` (an array, or ``arange(a)`` for an int) along `axis`, with or without
    replacement, uniformly or with probabilities `p`."""
    key = check_key("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of random.choice must be a sequence, got {shape}")
    _util.check_arraylike("choice", a)
    arr = _util.asarray_like(a)
    ashape = get_aval(arr).shape
    if not ashape:
        n_inputs = _creation.concrete_int(arr, "The error occurred in random.choice()")
    else:
        axis = _util.canonicalize_axis(axis, len(ashape), "choice")
        n_inputs = ashape[axis]
    shape = tuple(shape)
    n_draws = math.prod(shape)
    if n_draws == 0:
        return _creation.zeros(shape, dtype=get_aval(arr).dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(
            f"Cannot take a larger sample (size {n_draws}) than population (size {n_inputs}) when 'replace=False'"
        )
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if not ashape else _indexing.take(arr, ind, axis)
        else:
            perm = permutation(key, n_inputs if not ashape else arr, axis)
            result = L.slice_in_dim(perm, 0, n_draws, axis=axis)
    else:
        _util.check_arraylike("choice", p)
        (p_arr,) = _util.promote_dtypes_inexact(p)
        if get_aval(p_arr).shape != (n_inputs,):
            raise ValueError(
                "p must be None or a 1D vector with the same size as a.shape[axis]. "
                f"p has shape {get_aval(p_arr).shape} and a.shape[axis] is {n_inputs}."
            )
        p_dtype = get_aval(p_arr).dtype
        if replace:
            p_cuml = _red.cumsum(p_arr)
            total = L.reshape(L.slice(p_cuml, (n_inputs - 1,), (n_inputs,)), ())
            r = _uf.multiply(total, _uf.subtract(1, _uniform(key, shape, p_dtype, 0.0, 1.0)))
            # searchsorted(p_cuml, r, side='left') on a sorted vector: how many entries are < r.
            less = _uf.less(p_cuml, L.expand_dims(r, (len(shape),)))
            ind = _red.sum(less, axis=-1, dtype=_dtypes.default_int_dtype())
        else:
            # Gumbel top-k: the k largest of log p + Gumbel noise, a draw without replacement.
            g = _uf.add(_gumbel(key, (n_inputs,), p_dtype), _uf.log(p_arr))
            ind = L.convert_element_type(L.top_k(g, n_draws)[1], _dtypes.default_int_dtype())
        result = ind if not ashape else _indexing.take(arr, ind, axis)
    out_shape = shape if not ashape else ashape[:axis] + shape + ashape[axis + 1 :]
    return _manip.reshape(result, out_shape)
