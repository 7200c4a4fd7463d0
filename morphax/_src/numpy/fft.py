"""`morphax.numpy.fft`: NumPy's discrete Fourier transforms on the `fft` primitive, with JAX's
signatures and dtypes (float32 input gives complex64; `irfft`/`hfft` give float32).

The primitive transforms trailing axes only, so other `axes` are moved there and back; `n`/`s`
crop or zero-pad the input first. `norm` scales the result ("backward", "ortho", "forward").
"""

from __future__ import annotations

import math
import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.core.values import make_array
from morphax._src.numpy import creation, manipulation, ufuncs, util
from morphax._src.prims import lax_api as L
from morphax._src.prims.fft import FftType

__all__ = [
    "fft",
    "ifft",
    "fft2",
    "ifft2",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfft2",
    "irfft2",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]

_NORMS = ("backward", "ortho", "forward")


def _shape(x):
    return get_aval(x).shape


def _norm_scale(func_name: str, norm, lengths) -> float | None:
    """The factor `norm` applies on top of the primitive (whose inverse transforms divide by N);
    None when there is nothing to multiply."""
    if norm is None or norm == "backward":
        return None
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm!r}; should be "backward", "ortho" or "forward".')
    total = float(math.prod(lengths))
    if total == 0:
        return None  # an empty result: nothing to scale
    inverse = func_name.startswith("i")
    if norm == "ortho":
        return math.sqrt(total) if inverse else 1.0 / math.sqrt(total)
    return total if inverse else 1.0 / total


def _check_axis_1d(full_name: str, axis):
    if isinstance(axis, (list, tuple)):
        raise ValueError(
            f"{full_name} does not support multiple axes. Please use {full_name}n. Got axis = {axis!r}."
        )


def _fft_core(func_name: str, kind: FftType, a, s, axes, norm):
    full_name = f"numpy.fft.{func_name}"
    util.check_arraylike(full_name, a)
    arr = util.asarray_like(a)
    ndim = len(_shape(arr))
    if kind == FftType.RFFT and _dtypes.is_16bit_float(get_aval(arr).dtype):
        # The primitive's RFFT is float32/float64 only; half floats go up, as the complex
        # transforms take them to complex64.
        arr = util.convert_element_type(arr, _dtypes.float32)
    if s is not None:
        try:
            s = tuple(operator.index(n) for n in s)
        except TypeError:
            raise TypeError(f"{full_name}: s must be a sequence of ints, got {s!r}.") from None
        if any(n <= 0 for n in s):
            raise ValueError(f"{full_name}: the transform lengths must be positive, got {s}.")
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError(f"{full_name}: s and axes have different lengths ({len(s)} and {len(axes)}).")
    moved = axes is not None
    if axes is None:
        count = ndim if s is None else len(s)
        if count > ndim:
            raise ValueError(f"{full_name}: s={s} names more axes than the input has (shape {_shape(arr)}).")
        axes = tuple(range(ndim - count, ndim))
    else:
        axes = tuple(util.canonicalize_axis(ax, ndim, full_name, "axes") for ax in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{full_name} does not support repeated axes. Got axes {axes}.")
    trailing = tuple(range(ndim - len(axes), ndim))
    if moved:
        arr = manipulation.moveaxis(arr, axes, trailing)
    shape = _shape(arr)
    if s is not None:
        target = list(shape)
        for ax, n in zip(trailing, s):
            target[ax] = n
        if kind == FftType.IRFFT:
            target[-1] = target[-1] // 2 + 1
        if tuple(target) != shape:
            # Crop (negative high padding) or zero-pad each transformed axis to its length.
            zero = make_array(0, get_aval(arr).dtype)
            arr = L.pad(arr, zero, [(0, t - d, 0) for t, d in zip(target, shape)])
        lengths = s
    elif kind == FftType.IRFFT and trailing:
        lengths = tuple(shape[ax] for ax in trailing[:-1]) + (max(0, 2 * (shape[-1] - 1)),)
    else:
        lengths = tuple(shape[ax] for ax in trailing)
    out = L.fft(arr, kind, lengths)
    scale = _norm_scale(func_name, norm, lengths)
    if scale is not None:
        out = ufuncs.multiply(out, scale)
    if moved:
        out = manipulation.moveaxis(out, trailing, axes)
    return out


def _fft_core_1d(func_name, kind, a, n, axis, norm):
    _check_axis_1d(f"numpy.fft.{func_name}", axis)
    return _fft_core(func_name, kind, a, None if n is None else [n], None if axis is None else [axis], norm)


def _fft_core_2d(func_name, kind, a, s, axes, norm):
    if len(axes) != 2:
        raise ValueError(f"numpy.fft.{func_name} only supports 2 axes. Got axes = {axes!r}.")
    return _fft_core(func_name, kind, a, s, axes, norm)


def fft(a, n=None, axis=-1, norm=None):
    """One-dimensional discrete Fourier transform along `axis` (cropped or zero-padded to `n`)."""
    return _fft_core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis=-1, norm=None):
    """One-dimensional inverse discrete Fourier transform along `axis`."""
    return _fft_core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis=-1, norm=None):
    """Real-input transform along `axis`: the n // 2 + 1 non-negative frequency bins."""
    return _fft_core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis=-1, norm=None):
    """Inverse of `rfft`: `n` real outputs (default 2 * (a.shape[axis] - 1))."""
    return _fft_core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n=None, axis=-1, norm=None):
    """Transform of a Hermitian-symmetric signal given by its first half: a real spectrum."""
    _check_axis_1d("numpy.fft.hfft", axis)
    conj_a = ufuncs.conj(a)
    nn = (_shape(conj_a)[axis] - 1) * 2 if n is None else n
    return ufuncs.multiply(_fft_core_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm), nn)


def ihfft(a, n=None, axis=-1, norm=None):
    """Inverse of `hfft`: the first half of the Hermitian spectrum of a real signal."""
    _check_axis_1d("numpy.fft.ihfft", axis)
    util.check_arraylike("numpy.fft.ihfft", a)
    arr = util.asarray_like(a)
    nn = _shape(arr)[axis] if n is None else n
    out = _fft_core_1d("ihfft", FftType.RFFT, arr, n, axis, norm)
    return ufuncs.multiply(ufuncs.conj(out), 1 / nn)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional discrete Fourier transform over `axes`."""
    return _fft_core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional inverse discrete Fourier transform over `axes`."""
    return _fft_core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional real-input transform (the last of `axes` is halved)."""
    return _fft_core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """Inverse of `rfft2`."""
    return _fft_core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def fftn(a, s=None, axes=None, norm=None):
    """N-dimensional discrete Fourier transform over `axes` (all axes by default)."""
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """N-dimensional inverse discrete Fourier transform."""
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """N-dimensional real-input transform (the last of `axes` is halved)."""
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """Inverse of `rfftn`."""
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


# ------------------------------------------------------------------------------------------------
# Frequencies and shifts.


def _check_freq_args(func_name, n, d):
    if isinstance(n, (list, tuple)):
        raise ValueError(f"The n argument of numpy.fft.{func_name} only takes an int. Got n = {list(n)}.")
    if isinstance(d, (list, tuple)):
        raise ValueError(
            f"The d argument of numpy.fft.{func_name} only takes a single value. Got d = {list(d)}."
        )
    return creation.concrete_int(n, f"numpy.fft.{func_name}: n")


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of an `n`-point `fft` with sample spacing `d`: [0, 1, ..., -1] / (d * n)."""
    n = _check_freq_args("fftfreq", n, d)
    out_dtype = _dtypes.default_float_dtype() if dtype is None else _dtypes.canonicalize_dtype(dtype)
    dt = _dtypes.real_dtype(_dtypes.to_inexact_dtype(out_dtype))
    k = (np.arange(n) + n // 2) % n - n // 2 if n else np.zeros((0,))
    result = ufuncs.true_divide(make_array(k.astype(dt), dt), creation.asarray(d * n, dtype=dt))
    return creation.astype(result, out_dtype)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of an `n`-point `rfft`: [0, 1, ..., n // 2] / (d * n)."""
    n = _check_freq_args("rfftfreq", n, d)
    dt = _dtypes.default_float_dtype() if dtype is None else _dtypes.canonicalize_dtype(dtype)
    k = creation.arange(0, n // 2 + 1, dtype=dt)
    return ufuncs.true_divide(k, creation.asarray(d * n, dtype=dt))


def _shifts(x, axes, sign):
    shape = _shape(x)
    if axes is None:
        axes = tuple(range(len(shape)))
        return [sign * (d // 2) for d in shape], axes
    if isinstance(axes, (int, np.integer)):
        return sign * (shape[axes] // 2), axes
    return [sign * (shape[ax] // 2) for ax in axes], axes


def fftshift(x, axes=None):
    """Move the zero-frequency bin to the centre of each of `axes` (all by default)."""
    util.check_arraylike("numpy.fft.fftshift", x)
    x = util.asarray_like(x)
    shift, axes = _shifts(x, axes, 1)
    if axes == ():
        return x  # a rank-0 input has nothing to shift
    return manipulation.roll(x, shift, axes)


def ifftshift(x, axes=None):
    """Inverse of `fftshift` (they differ for odd lengths)."""
    util.check_arraylike("numpy.fft.ifftshift", x)
    x = util.asarray_like(x)
    shift, axes = _shifts(x, axes, -1)
    if axes == ():
        return x  # a rank-0 input has nothing to shift
    return manipulation.roll(x, shift, axes)
