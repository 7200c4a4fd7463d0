"""`morphax.nn.initializers`: functions ``init(key, shape, dtype=None)`` that draw initial
parameters, and the builders that make them (variance scaling and its named cases, orthogonal,
delta orthogonal, constants).

Every initializer draws through `morphax.random` with JAX's sequence of calls (the same splits,
the same samplers, the same arithmetic afterwards), so a key gives the numbers JAX gives: the
PRNG is bit-compatible, and the scaling is one multiply in the parameters' dtype.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import creation, manipulation, ufuncs, util
from morphax._src.random import distributions, prng, transformed_samplers
from morphax._src.random.keys import KeyArray

__all__ = [
    "Initializer",
    "constant",
    "delta_orthogonal",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "kaiming_normal",
    "kaiming_uniform",
    "lecun_normal",
    "lecun_uniform",
    "normal",
    "ones",
    "orthogonal",
    "truncated_normal",
    "uniform",
    "variance_scaling",
    "xavier_normal",
    "xavier_uniform",
    "zeros",
]


class Initializer(Protocol):
    """What the builders return: ``init(key, shape, dtype=None, out_sharding=None) -> Array``."""

    def __call__(self, key, shape, dtype=None, out_sharding=None): ...


def _raw(key):
    """The uint32 data of a key (typed keys are accepted as in JAX)."""
    return key._value() if isinstance(key, KeyArray) else key


def _float(dtype):
    return _dtypes.default_float_dtype() if dtype is None else dtype


def _no_sharding(name, out_sharding):
    if out_sharding is not None:
        raise NotImplementedError(
            f"nn.initializers.{name}: out_sharding needs the sharding API (one device here)."
        )


def _const(value, dtype):
    """`value` as an array of the parameters' dtype (JAX's ``jnp.array(value, dtype)``)."""
    return creation.array(value, dtype)


def _scaled(x, factor, dtype):
    """x * factor, the factor first made an array of the parameters' dtype (as JAX multiplies)."""
    return ufuncs.multiply(x, _const(factor, dtype))


def zeros(key, shape, dtype=None, out_sharding=None):
    """Zeros of `shape` (the key is unused)."""
    _no_sharding("zeros", out_sharding)
    return creation.zeros(shape, _float(dtype))


def ones(key, shape, dtype=None, out_sharding=None):
    """Ones of `shape` (the key is unused)."""
    _no_sharding("ones", out_sharding)
    return creation.ones(shape, _float(dtype))


def constant(value, dtype=None):
    """An initializer filling arrays with `value`."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding("constant", out_sharding)
        return creation.full(shape, value, dtype=_float(dtype))

    return init


def uniform(scale=1e-2, dtype=None):
    """An initializer drawing uniformly from [0, scale)."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding("uniform", out_sharding)
        dtype = _float(dtype)
        return _scaled(distributions.uniform(_raw(key), shape, dtype), scale, dtype)

    return init


def normal(stddev=1e-2, dtype=None):
    """An initializer drawing from a centred normal with standard deviation `stddev`."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding("normal", out_sharding)
        dtype = _float(dtype)
        return _scaled(distributions.normal(_raw(key), shape, dtype), stddev, dtype)

    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """An initializer drawing a standard normal truncated to (lower, upper), then scaled by
    `stddev` (without the variance correction variance_scaling applies)."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding("truncated_normal", out_sharding)
        dtype = _float(dtype)
        return _scaled(distributions.truncated_normal(_raw(key), lower, upper, shape, dtype), stddev, dtype)

    return init


def _size(shape, axes):
    return shape[axes] if isinstance(axes, int) else math.prod(shape[i] for i in axes)


def _fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    """(fan_in, fan_out): the input and output sizes times the receptive field, which is every
    axis that is not an input, output or batch axis (a convolution kernel's spatial axes)."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(
            f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor with "
            "default in_axis. Must be at least 2D or specify in_axis explicitly."
        )
    in_size, out_size, batch_size = _size(shape, in_axis), _size(shape, out_axis), _size(shape, batch_axis)
    receptive_field = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field, out_size * receptive_field


def _complex_uniform(key, shape, dtype):
    """Uniform on the unit-variance disk of the complex plane (radius sqrt(2 u), angle 2 pi u')."""
    keys = prng.split(_raw(key))
    key_r, key_theta = prng.key_row(keys, 0), prng.key_row(keys, 1)
    real = np.array(0, dtype).real.dtype
    dtype = _dtypes.to_complex_dtype(real)
    r = util.convert_element_type(
        ufuncs.sqrt(ufuncs.multiply(2, distributions.uniform(key_r, shape, real))), dtype, False
    )
    theta = ufuncs.multiply(
        2 * np.pi, util.convert_element_type(distributions.uniform(key_theta, shape, real), dtype, False)
    )
    return ufuncs.multiply(r, ufuncs.exp(ufuncs.multiply(1j, theta)))


def _complex_truncated_normal(key, upper, shape, dtype):
    """A centred unit-variance complex normal with its modulus truncated to `upper` (inverse
    CDF of the modulus), at a uniform angle."""
    keys = prng.split(_raw(key))
    key_r, key_theta = prng.key_row(keys, 0), prng.key_row(keys, 1)
    real = np.array(0, dtype).real.dtype
    dtype = _dtypes.to_complex_dtype(real)
    tail = ufuncs.subtract(1, ufuncs.exp(_const(-(upper**2), dtype)))
    t = ufuncs.multiply(
        tail, util.convert_element_type(distributions.uniform(key_r, shape, real), dtype, False)
    )
    r = ufuncs.sqrt(ufuncs.negative(ufuncs.log(ufuncs.subtract(1, t))))
    theta = ufuncs.multiply(
        2 * np.pi, util.convert_element_type(distributions.uniform(key_theta, shape, real), dtype, False)
    )
    return ufuncs.multiply(r, ufuncs.exp(ufuncs.multiply(1j, theta)))


# The standard deviation of a unit normal truncated to (-2, 2), and of the complex one truncated
# to modulus 2: dividing by them makes the truncated draws have the requested variance.
_TRUNCATED_STD = 0.87962566103423978
_COMPLEX_TRUNCATED_STD = 0.95311164380491208


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """An initializer whose draws have variance ``scale / n``, n the fan `mode` names ("fan_in",
    "fan_out", "fan_avg" or "fan_geo_avg"), from a "truncated_normal" (cut at 2 standard
    deviations), "normal" or "uniform" distribution (a disk for complex dtypes)."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding("variance_scaling", out_sharding)
        shape = tuple(int(d) for d in shape)
        dtype = _float(dtype)
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            denominator = fan_in
        elif mode == "fan_out":
            denominator = fan_out
        elif mode == "fan_avg":
            denominator = (fan_in + fan_out) / 2
        elif mode == "fan_geo_avg":
            denominator = (fan_in * fan_out) ** 0.5
        else:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        variance = _const(scale / denominator, dtype)
        floating = _dtypes.issubdtype(dtype, np.floating)
        if distribution == "truncated_normal":
            if floating:
                stddev = ufuncs.true_divide(ufuncs.sqrt(variance), _const(_TRUNCATED_STD, dtype))
                return ufuncs.multiply(distributions.truncated_normal(_raw(key), -2, 2, shape, dtype), stddev)
            stddev = ufuncs.true_divide(ufuncs.sqrt(variance), _const(_COMPLEX_TRUNCATED_STD, dtype))
            return ufuncs.multiply(_complex_truncated_normal(key, 2, shape, dtype), stddev)
        if distribution == "normal":
            return ufuncs.multiply(distributions.normal(_raw(key), shape, dtype), ufuncs.sqrt(variance))
        if distribution == "uniform":
            if floating:
                draws = distributions.uniform(_raw(key), shape, dtype, -1)
                return ufuncs.multiply(draws, ufuncs.sqrt(ufuncs.multiply(3, variance)))
            return ufuncs.multiply(_complex_uniform(key, shape, dtype), ufuncs.sqrt(variance))
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

    return init


def _named_scaling(name, scale, mode, distribution, paper):
    def builder(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
        return variance_scaling(scale, mode, distribution, in_axis=in_axis, out_axis=out_axis,
                                batch_axis=batch_axis, dtype=dtype)  # fmt: skip

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = (
        f"The {paper} initializer: variance_scaling({scale}, {mode!r}, {distribution!r}) along the "
        "given input, output and batch axes."
    )
    return builder


glorot_uniform = _named_scaling("glorot_uniform", 1.0, "fan_avg", "uniform", "Glorot (Xavier) uniform")
glorot_normal = _named_scaling("glorot_normal", 1.0, "fan_avg", "truncated_normal", "Glorot (Xavier) normal")
lecun_uniform = _named_scaling("lecun_uniform", 1.0, "fan_in", "uniform", "LeCun uniform")
lecun_normal = _named_scaling("lecun_normal", 1.0, "fan_in", "truncated_normal", "LeCun normal")
he_uniform = _named_scaling("he_uniform", 2.0, "fan_in", "uniform", "He (Kaiming) uniform")
he_normal = _named_scaling("he_normal", 2.0, "fan_in", "truncated_normal", "He (Kaiming) normal")
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """An initializer of (scaled) matrices with orthonormal columns or rows (whichever side is
    smaller) along `column_axis` and the product of the other axes."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding("orthogonal", out_sharding)
        dtype = _float(dtype)
        shape = tuple(int(d) for d in shape)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if any(d == 0 for d in shape):
            return creation.zeros(shape, dtype)
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        q = transformed_samplers.orthogonal(_raw(key), n_rows, (), dtype, n_cols)
        q = manipulation.reshape(q, tuple(np.delete(shape, column_axis)) + (n_cols,))
        q = manipulation.moveaxis(q, -1, column_axis)
        return ufuncs.multiply(_const(scale, dtype), q)

    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """An initializer for 1D, 2D or 3D convolution kernels (shape (k..., in, out), in <= out):
    zero except an orthogonal matrix at the centre tap, so the convolution starts as an
    orthogonal map (Xiao et al. 2018)."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding("delta_orthogonal", out_sharding)
        dtype = _float(dtype)
        shape = tuple(int(d) for d in shape)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return creation.zeros(shape, dtype).at[centre].set(matrix)

    return init
