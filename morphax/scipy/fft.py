"""`morphax.scipy.fft`: the discrete cosine transform of type 2 and its inverse, mirroring
``jax.scipy.fft`` (computed with one FFT of the even/odd-interleaved signal per axis)."""

from __future__ import annotations

import math
import operator

import numpy as np

import morphax.numpy as jnp
from morphax._src.numpy import util as _util

__all__ = ["dct", "dctn", "idct", "idctn"]


def _check(name, type, norm):  # noqa: A002 - SciPy's name
    if type != 2:
        raise NotImplementedError("Only DCT type 2 is implemented.")
    if norm is not None and norm not in ("backward", "ortho"):
        raise ValueError(f"jax.scipy.fft.{name}: {norm=!r} is not implemented")


def _pad_to(x, n, axis):
    """`x` zero-padded (or cropped) to length `n` along `axis`."""
    if n is None or n == x.shape[axis]:
        return x
    if n < x.shape[axis]:
        return jnp.take(x, np.arange(n), axis=axis)
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, n - x.shape[axis])
    return jnp.pad(x, widths)


def _ortho_scale(x, axis):
    n = x.shape[axis]
    factor = np.full(n, 2.0)
    factor[0] = 4.0
    shape = [1] * x.ndim
    shape[axis] = n
    return x / jnp.sqrt(jnp.asarray(factor.reshape(shape) * n, dtype=x.dtype))


def _twiddle(n, axis, ndim, dtype):
    k = np.arange(n).reshape([n if a == axis else 1 for a in range(ndim)])
    return jnp.exp(jnp.asarray(-0.5j * np.pi * k / n, dtype=dtype))


def dct(x, type=2, n=None, axis=-1, norm=None):  # noqa: A002
    """The type-2 DCT along `axis` (zero-padded to `n`), scaled as SciPy's "backward" or "ortho"."""
    _check("dct", type, norm)
    _util.check_arraylike("dct", x)
    x = jnp.asarray(x)
    if jnp.iscomplexobj(x):
        return dct(x.real, n=n, axis=axis, norm=norm) + 1j * dct(x.imag, n=n, axis=axis, norm=norm)
    (x,) = _util.promote_dtypes_inexact(x)
    axis = _util.canonicalize_axis(axis, x.ndim, "dct")
    x = _pad_to(x, n, axis)
    length = x.shape[axis]
    evens = jnp.take(x, np.arange(0, length, 2), axis=axis)
    odds = jnp.flip(jnp.take(x, np.arange(1, length, 2), axis=axis), axis=axis)
    spectrum = jnp.fft.fft(jnp.concatenate([evens, odds], axis=axis), axis=axis)
    out = 2 * (spectrum * _twiddle(length, axis, x.ndim, spectrum.dtype)).real
    return _ortho_scale(out, axis) if norm == "ortho" else out


def idct(x, type=2, n=None, axis=-1, norm=None):  # noqa: A002
    """The inverse of `dct` (the type-3 DCT, scaled to undo it)."""
    _check("idct", type, norm)
    _util.check_arraylike("idct", x)
    x = jnp.asarray(x)
    if jnp.iscomplexobj(x):
        return idct(x.real, n=n, axis=axis, norm=norm) + 1j * idct(x.imag, n=n, axis=axis, norm=norm)
    (x,) = _util.promote_dtypes_inexact(x)
    axis = _util.canonicalize_axis(axis, x.ndim, "idct")
    x = _pad_to(x, n, axis)
    length = x.shape[axis]
    if norm is None or norm == "backward":
        x = _ortho_scale(x, axis)
    x = _ortho_scale(x, axis)
    w = _twiddle(length, axis, x.ndim, jnp.result_type(x.dtype, np.complex64))
    v = jnp.fft.ifft(x.astype(w.dtype) / w * 2 * length, axis=axis).real
    half = math.ceil(length / 2)
    out_index = np.empty(length, dtype=np.int64)
    out_index[0::2] = np.arange(half)
    out_index[1::2] = np.arange(length - 1, half - 1, -1)
    return jnp.take(v, out_index, axis=axis)


def _axes_and_sizes(x, s, axes):
    if s is not None:
        try:
            s = list(s)
        except TypeError:
            s = [operator.index(s)]
        if len(s) > x.ndim:
            raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(s)}")
    if axes is None:
        axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
    else:
        axes = tuple(_util.canonicalize_axis(a, x.ndim, "dctn") for a in np.atleast_1d(axes))
    return axes, (s if s is not None else [None] * len(axes))


def dctn(x, type=2, s=None, axes=None, norm=None):  # noqa: A002
    """The type-2 DCT over several axes (one axis after another)."""
    _check("dctn", type, norm)
    x = jnp.asarray(x)
    axes, sizes = _axes_and_sizes(x, s, axes)
    for axis, n in zip(axes, sizes):
        x = dct(x, n=n, axis=axis, norm=norm)
    return x


def idctn(x, type=2, s=None, axes=None, norm=None):  # noqa: A002
    """The inverse of `dctn`."""
    _check("idctn", type, norm)
    x = jnp.asarray(x)
    axes, sizes = _axes_and_sizes(x, s, axes)
    for axis, n in zip(axes, sizes):
        x = idct(x, n=n, axis=axis, norm=norm)
    return x
