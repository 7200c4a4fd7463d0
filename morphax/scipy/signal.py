"""`morphax.scipy.signal`: convolution and correlation (direct, and by FFT) and detrending,
mirroring ``jax.scipy.signal``. The direct forms are one lax convolution; the FFT form pads to
the full output size and crops to the mode's window."""

from __future__ import annotations

import functools

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.numpy import util as _util

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "detrend", "fftconvolve"]

_MODES = ("full", "same", "valid")


def _convolve_nd(in1, in2, mode, precision):
    if mode not in _MODES:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    _util.check_arraylike("convolve", in1, in2)
    in1, in2 = _util.promote_dtypes_inexact(jnp.asarray(in1), jnp.asarray(in2))
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 must have the same number of dimensions")
    if in1.size == 0 or in2.size == 0:
        raise ValueError(
            f"zero-size arrays not supported in convolutions, got shapes {in1.shape} and {in2.shape}."
        )
    no_swap = all(a >= b for a, b in zip(in1.shape, in2.shape))
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    if not (no_swap or swap):
        raise ValueError("One input must be smaller than the other in every dimension.")
    original_kernel = in2.shape
    if swap:
        in1, in2 = in2, in1
    kernel = in2.shape
    in2 = jnp.flip(in2)
    if mode == "valid":
        padding = [(0, 0)] * len(kernel)
    elif mode == "same":
        padding = [(k - 1 - (ko - 1) // 2, k - ko + (ko - 1) // 2) for k, ko in zip(kernel, original_kernel)]
    else:
        padding = [(k - 1, k - 1) for k in kernel]
    out = lax.conv_general_dilated(
        in1[None, None], in2[None, None], (1,) * len(kernel), padding, precision=precision
    )
    return out[0, 0]


def convolve(in1, in2, mode="full", method="auto", precision=None):
    """The N-dimensional convolution of in1 and in2 ("full", "same" as in1, or "valid")."""
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method not in ("direct", "auto"):
        raise ValueError(f"Got {method=}; expected 'auto', 'fft', or 'direct'.")
    return _convolve_nd(in1, in2, mode, precision)


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """The N-dimensional cross-correlation: convolution with the flipped conjugate of in2."""
    in2 = jnp.asarray(in2)
    return convolve(in1, jnp.flip(in2.conj()), mode, precision=precision, method=method)


def _two_d(name, in1, in2, boundary, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-D convolution (zero boundary)."""
    _two_d("convolve2d", in1, in2, boundary, fillvalue)
    return _convolve_nd(in1, in2, mode, precision)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-D cross-correlation (zero boundary), with SciPy's placement of the "same" and
    "valid" windows."""
    _two_d("correlate2d", in1, in2, boundary, fillvalue)
    in1, in2 = jnp.asarray(in1), jnp.asarray(in2)
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    same_shape = in1.shape == in2.shape
    if mode == "same" or (mode == "valid" and not (swap and not same_shape)) or (mode == "full" and not swap):
        return jnp.flip(_convolve_nd(jnp.flip(in1), in2.conj(), mode, precision))
    if mode == "valid":
        return _convolve_nd(jnp.flip(in2), in1.conj(), mode, precision)
    return _convolve_nd(jnp.flip(in2), in1.conj(), mode, precision).conj()


def _fftconvolve_one(in1, in2, mode):
    full = tuple(a + b - 1 for a, b in zip(in1.shape, in2.shape))
    if mode == "valid":
        no_swap = all(a >= b for a, b in zip(in1.shape, in2.shape))
        swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
        if not (no_swap or swap):
            raise ValueError(
                "For 'valid' mode, One input must be at least as large as the other in every dimension."
            )
        if swap:
            in1, in2 = in2, in1
    if all(a == 1 or b == 1 for a, b in zip(in1.shape, in2.shape)):
        conv = in1 * in2
    elif jnp.iscomplexobj(in1):
        conv = jnp.fft.ifftn(jnp.fft.fftn(in1, full) * jnp.fft.fftn(in2, full), full)
    else:
        conv = jnp.fft.irfftn(jnp.fft.rfftn(in1, full) * jnp.fft.rfftn(in2, full), full)
    if mode == "full":
        out = full
    elif mode == "same":
        out = in1.shape
    else:
        out = tuple(a - b + 1 for a, b in zip(in1.shape, in2.shape))
    starts = tuple((f - o) // 2 for f, o in zip(full, out))
    return lax.slice(conv, starts, tuple(s + o for s, o in zip(starts, out)))


def fftconvolve(in1, in2, mode="full", axes=None):
    """The convolution by FFT over `axes` (default all; the others are batch axes of equal size)."""
    _util.check_arraylike("fftconvolve", in1, in2)
    in1, in2 = _util.promote_dtypes_inexact(jnp.asarray(in1), jnp.asarray(in2))
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in _MODES:
        raise ValueError("mode must be one of ['same', 'full', 'valid']")
    fn = functools.partial(_fftconvolve_one, mode=mode)
    if axes is None:
        return fn(in1, in2)
    axes = tuple(_util.canonicalize_axis(a, in1.ndim, "fftconvolve") for a in np.atleast_1d(axes))
    mapped = sorted(set(range(in1.ndim)) - set(axes))
    if any(in1.shape[i] != in2.shape[i] for i in mapped):
        raise ValueError(f"mapped axes must have same shape; got {in1.shape=} {in2.shape=} {axes=}")
    for ax in mapped:
        fn = morphax.vmap(fn, in_axes=ax, out_axes=ax)
    return fn(in1, in2)


def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):  # noqa: A002 - SciPy's name
    """`data` minus its mean ("constant") or its least-squares line on each piece between the
    breakpoints `bp` ("linear")."""
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    (data,) = _util.promote_dtypes_inexact(jnp.asarray(data))
    if type == "constant":
        return data - data.mean(axis, keepdims=True)
    n = data.shape[axis]
    breaks = np.sort(np.unique(np.r_[0, bp, n]))
    if breaks[0] < 0 or breaks[-1] > n:
        raise ValueError("Breakpoints must be non-negative and less than length of data along given axis.")
    moved = jnp.moveaxis(data, axis, 0)
    shape = moved.shape
    flat = moved.reshape(n, -1)
    for lo, hi in zip(breaks[:-1], breaks[1:]):
        points = hi - lo
        design = jnp.stack(
            [jnp.ones(points, flat.dtype), jnp.arange(1, points + 1, dtype=flat.dtype) / points], axis=1
        )
        coef = jnp.linalg.lstsq(design, flat[lo:hi])[0]
        flat = flat.at[lo:hi].add(-jnp.matmul(design, coef, precision=lax.Precision.HIGHEST))
    return jnp.moveaxis(flat.reshape(shape), 0, axis)
