"""`morphax.scipy.signal`: convolution and correlation (direct, and by FFT), detrending, and the
windowed-FFT spectral estimates (stft/istft, welch, csd), mirroring ``jax.scipy.signal``. The
direct forms are one lax convolution; the FFT form pads to the full output size and crops to the
mode's window. The spectral functions cut the signal into overlapping segments with one gather
and rebuild it (istft) by overlap-add."""

from __future__ import annotations

import functools
import warnings

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import util as _util
from morphax._src.numpy.creation import concrete_int

__all__ = [
    "convolve",
    "convolve2d",
    "correlate",
    "correlate2d",
    "csd",
    "detrend",
    "fftconvolve",
    "istft",
    "stft",
    "welch",
]

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


# --- windowed-FFT spectral estimates ------------------------------------------------------------


def _named_window(window, n, dtype, fun):
    if isinstance(window, str) and window == "hann":
        # SciPy's default: the periodic Hann window sin(pi k / n)^2, made here without SciPy
        win = np.ones(1) if n == 1 else np.sin(np.pi * np.arange(n) / n) ** 2
    else:
        try:
            from scipy.signal import get_window
        except ImportError as err:  # pragma: no cover - scipy is a dependency
            raise ImportError(f"{fun}: scipy must be installed to use window={window!r}") from err
        win = get_window(window, n)
    return jnp.asarray(win, dtype)


def _segment_window(fun, window, nperseg, input_length, dtype):
    """The window as an array and the segment length: a named window takes `nperseg` (the whole
    input when None, and at most the input); an array window sets it."""
    real = _dtypes.real_dtype(dtype)
    if isinstance(window, (str, tuple)):
        n = input_length if nperseg is None else nperseg
        if n > input_length:
            warnings.warn(
                f"{fun}: nperseg={n} is greater than input_length={input_length}, using nperseg={input_length}",
                stacklevel=3,
            )
            n = input_length
        return _named_window(window, n, real, fun), n
    _util.check_arraylike(fun, window)
    win = jnp.asarray(window)
    win = win.astype(_dtypes.to_complex_dtype(dtype) if jnp.iscomplexobj(win) else real)
    if win.ndim != 1:
        raise ValueError(f"{fun}: window must be 1-D, got shape {win.shape}")
    if input_length < win.size:
        raise ValueError(
            f"{fun}: window (length {win.size}) is longer than the input signal ({input_length})"
        )
    if nperseg is not None and nperseg != win.size:
        raise ValueError(f"{fun}: nperseg={nperseg} differs from the length of window ({win.size})")
    return win, win.size


def _odd_ext(x, n):
    """x extended by n points at each end of its last axis by point reflection about the ends."""
    if n < 1:
        return x
    if n > x.shape[-1] - 1:
        raise ValueError(
            f"The extension length n ({n}) is too big. It must not exceed x.shape[axis]-1, which is {x.shape[-1] - 1}."
        )
    left = 2 * x[..., :1] - jnp.flip(x[..., 1 : n + 1], -1)
    right = 2 * x[..., -1:] - jnp.flip(x[..., -n - 1 : -1], -1)
    return jnp.concatenate([left, x, right], axis=-1)


def _pad_last(mode):
    def pad(x, n):
        return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], mode)

    return pad


_EXTENSIONS = {
    "even": _pad_last("reflect"),
    "odd": _odd_ext,
    "constant": _pad_last("edge"),
    "zeros": _pad_last("constant"),
    None: lambda x, n: x,
}


def _windowed_fft(x, win, detrend_func, nperseg, noverlap, nfft, twosided):
    """The FFTs of the detrended, windowed segments of x's last axis: shape (..., segments, freqs)."""
    step = nperseg - noverlap
    count = (x.shape[-1] - nperseg) // step + 1
    index = np.arange(count)[:, None] * step + np.arange(nperseg)
    segments = detrend_func(x[..., index]) * win
    if twosided:
        return jnp.fft.fft(segments, n=nfft)
    return jnp.fft.rfft(segments.real, n=nfft)


def _detrend_function(detrend_type):
    if isinstance(detrend_type, str):
        return functools.partial(detrend, type=detrend_type, axis=-1)
    if callable(detrend_type):
        # NB: a callable receives segments (..., segments, samples) and detrends the last axis, as
        # in SciPy's welch and csd; JAX moves an axis first and so detrends across segments.
        return detrend_type
    if not detrend_type:
        return lambda d: d
    raise ValueError(
        f"Unsupported detrend type: {detrend_type!r}; expected False, 'constant', 'linear' or a callable"
    )


def _spectral(
    fun,
    x,
    y,
    fs,
    window,
    nperseg,
    noverlap,
    nfft,
    detrend_type,
    return_onesided,
    scaling,
    axis,
    mode,
    boundary=None,
    padded=False,
):
    """SciPy's _spectral_helper: frequencies, segment times and the (cross) spectra of x (and y),
    the frequency axis at `axis` and the segments last. `mode` is "psd" or "stft"."""
    if boundary not in _EXTENSIONS:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: {list(_EXTENSIONS)}")
    axis = concrete_int(axis, f"{fun}: axis")
    if y is None:
        _util.check_arraylike(fun, x)
        (x,) = _util.promote_dtypes_inexact(jnp.asarray(x))
        axis = _util.canonicalize_axis(axis, x.ndim, fun)
        outer = x.shape[:axis] + x.shape[axis + 1 :]
    else:
        _util.check_arraylike(fun, x, y)
        x, y = _util.promote_dtypes_inexact(jnp.asarray(x), jnp.asarray(y))
        if x.ndim != y.ndim:
            raise ValueError(f"{fun}: x and y must have the same rank, got shapes {x.shape} and {y.shape}")
        axis = _util.canonicalize_axis(axis, x.ndim, fun)
        try:
            outer = np.broadcast_shapes(
                x.shape[:axis] + x.shape[axis + 1 :], y.shape[:axis] + y.shape[axis + 1 :]
            )
        except ValueError as err:
            raise ValueError(
                f"{fun}: x and y cannot be broadcast together: shapes {x.shape} and {y.shape}"
            ) from err
    result_dtype = _dtypes.to_complex_dtype(x.dtype)
    freq_dtype = _dtypes.real_dtype(result_dtype)
    if nperseg is not None:
        nperseg = concrete_int(nperseg, f"{fun}: nperseg")
        if nperseg < 1:
            raise ValueError(f"{fun}: nperseg must be a positive integer, got {nperseg}")
    win, nperseg = _segment_window(fun, window, nperseg, x.shape[axis], x.dtype)
    noverlap = nperseg // 2 if noverlap is None else concrete_int(noverlap, f"{fun}: noverlap")
    nfft = nperseg if nfft is None else concrete_int(nfft, f"{fun}: nfft")
    if x.size == 0 or (y is not None and y.size == 0):
        shape = x.shape if y is None else outer[:axis] + (min(x.shape[axis], y.shape[axis]),) + outer[axis:]
        return jnp.zeros(shape, freq_dtype), jnp.zeros(shape, freq_dtype), jnp.zeros(shape, result_dtype)
    x = jnp.moveaxis(x, axis, -1)
    if y is not None:
        y = jnp.moveaxis(y, axis, -1)
        # the shorter signal is zero-padded to the longer's length
        length = max(x.shape[-1], y.shape[-1])
        x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, length - x.shape[-1])])
        y = jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, length - y.shape[-1])])
    if nfft < nperseg:
        raise ValueError(f"{fun}: nfft ({nfft}) must be greater than or equal to nperseg ({nperseg}).")
    if noverlap >= nperseg:
        raise ValueError(f"{fun}: noverlap ({noverlap}) must be less than nperseg ({nperseg}).")
    step = nperseg - noverlap
    signals = [x] if y is None else [x, y]
    signals = [_EXTENSIONS[boundary](s, nperseg // 2) for s in signals]
    if padded:
        # zero-pad to a whole number of segments
        extra = (-(signals[0].shape[-1] - nperseg) % step) % nperseg
        signals = [jnp.pad(s, [(0, 0)] * (s.ndim - 1) + [(0, extra)]) for s in signals]
    detrend_func = _detrend_function(detrend_type)
    if scaling == "density":
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == "spectrum":
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling!r}; expected 'density' or 'spectrum'")
    if mode == "stft":
        scale = jnp.sqrt(scale)
    twosided = not return_onesided
    if not twosided and any(jnp.iscomplexobj(s) for s in signals):
        warnings.warn("Input data is complex, switching to return_onesided=False", stacklevel=3)
        twosided = True
    freqs = (jnp.fft.fftfreq if twosided else jnp.fft.rfftfreq)(nfft, 1 / fs, dtype=freq_dtype)
    spectra = [_windowed_fft(s, win, detrend_func, nperseg, noverlap, nfft, twosided) for s in signals]
    if y is not None:
        result = spectra[0].conj() * spectra[1]
    elif mode == "psd":
        result = spectra[0].conj() * spectra[0]
    else:
        result = spectra[0]
    result = result * scale
    if not twosided and mode == "psd":
        # one-sided power: every bin but DC (and Nyquist, for even nfft) counts twice
        end = None if nfft % 2 else -1
        result = result.at[..., 1:end].multiply(2)
    length = signals[0].shape[-1]
    time = jnp.arange(nperseg / 2, length - nperseg / 2 + 1, step, dtype=freq_dtype) / fs
    if boundary is not None:
        time = time - (nperseg / 2) / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = result.real
    return freqs, time, jnp.moveaxis(result, -1, axis)


def stft(
    x,
    fs=1.0,
    window="hann",
    nperseg=256,
    noverlap=None,
    nfft=None,
    detrend=False,
    return_onesided=True,
    boundary="zeros",
    padded=True,
    axis=-1,
):
    """The short-time Fourier transform of x along `axis`: (frequencies, segment times, Zxx), with
    Zxx's frequencies at `axis` and its segments last. `boundary` extends the signal by half a
    segment at each end ("zeros", "even", "odd", "constant" or None); `padded` zero-pads it to
    whole segments."""
    return _spectral(
        "stft",
        x,
        None,
        fs,
        window,
        nperseg,
        noverlap,
        nfft,
        detrend,
        return_onesided,
        "spectrum",
        axis,
        "stft",
        boundary,
        padded,
    )


def _median_bias(n):
    """The median of n chi-squared(2) periodograms over their mean (Allen et al. 2012, appendix B)."""
    even = np.arange(2.0, n, 2)
    return 1 + np.sum(1.0 / (even + 1) - 1.0 / even)


def csd(
    x,
    y,
    fs=1.0,
    window="hann",
    nperseg=None,
    noverlap=None,
    nfft=None,
    detrend="constant",
    return_onesided=True,
    scaling="density",
    axis=-1,
    average="mean",
):
    """Welch's estimate of the cross power spectral density of x and y: (frequencies, Pxy). `y`
    None gives the power spectral density of x. A `nperseg` of None takes the whole signal as one
    segment (as JAX does; SciPy takes 256)."""
    if average not in ("mean", "median"):
        raise ValueError(f'average must be "median" or "mean", got {average}')
    freqs, _, pxy = _spectral(
        "csd", x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, "psd"
    )
    if y is not None:
        pxy = pxy + 0j  # complex even where x and y are real
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] == 1:
            pxy = pxy[..., 0]
        elif average == "median":
            bias = _median_bias(pxy.shape[-1])
            if jnp.iscomplexobj(pxy):
                pxy = jnp.median(pxy.real, axis=-1) + 1j * jnp.median(pxy.imag, axis=-1)
            else:
                pxy = jnp.median(pxy, axis=-1)
            pxy = pxy / jnp.asarray(bias, pxy.dtype)
        else:
            pxy = pxy.mean(axis=-1)
    return freqs, pxy


def welch(
    x,
    fs=1.0,
    window="hann",
    nperseg=None,
    noverlap=None,
    nfft=None,
    detrend="constant",
    return_onesided=True,
    scaling="density",
    axis=-1,
    average="mean",
):
    """Welch's estimate of the power spectral density of x: (frequencies, Pxx), the mean (or
    bias-corrected median) of the periodograms of overlapping windowed segments."""
    freqs, pxx = csd(
        x,
        None,
        fs=fs,
        window=window,
        nperseg=nperseg,
        noverlap=noverlap,
        nfft=nfft,
        detrend=detrend,
        return_onesided=return_onesided,
        scaling=scaling,
        axis=axis,
        average=average,
    )
    return freqs, pxx.real


def _overlap_add(frames, step):
    """The frames (..., count, length) summed into one signal, frame k starting at sample k * step."""
    count, length = frames.shape[-2:]
    index = np.arange(count)[:, None] * step + np.arange(length)
    total = step * (count - 1) + length
    return jnp.zeros(frames.shape[:-2] + (total,), frames.dtype).at[..., index].add(frames)


def istft(
    Zxx,
    fs=1.0,
    window="hann",
    nperseg=None,
    noverlap=None,
    nfft=None,
    input_onesided=True,
    boundary=True,
    time_axis=-1,
    freq_axis=-2,
):
    """The inverse of `stft`: (sample times, x), the segments' inverse FFTs windowed again and
    overlap-added, divided by the overlap-added squared window."""
    _util.check_arraylike("istft", Zxx)
    Zxx = jnp.asarray(Zxx)
    if Zxx.ndim < 2:
        raise ValueError(f"istft: Input stft must be at least 2d!, got shape {Zxx.shape}")
    freq_axis = _util.canonicalize_axis(freq_axis, Zxx.ndim, "istft", "freq_axis")
    time_axis = _util.canonicalize_axis(time_axis, Zxx.ndim, "istft", "time_axis")
    if freq_axis == time_axis:
        raise ValueError("istft: Must specify differing time and frequency axes!")
    Zxx = Zxx.astype(_dtypes.to_complex_dtype(Zxx.dtype))
    n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
    nperseg = n_default if nperseg is None else concrete_int(nperseg, "istft: nperseg")
    if nperseg < 1:
        raise ValueError(f"istft: nperseg must be a positive integer, got {nperseg}")
    if nfft is None:
        # an odd segment length was transformed without padding
        nfft = n_default + 1 if input_onesided and nperseg == n_default + 1 else n_default
    else:
        nfft = concrete_int(nfft, "istft: nfft")
    if nfft < nperseg:
        raise ValueError(f"istft: FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    # NB: noverlap=0 means no overlap, as in SciPy (JAX's `noverlap or nperseg // 2` takes half)
    noverlap = nperseg // 2 if noverlap is None else concrete_int(noverlap, "istft: noverlap")
    if noverlap >= nperseg:
        raise ValueError(f"istft: noverlap ({noverlap}) must be less than nperseg ({nperseg}).")
    step = nperseg - noverlap
    outer = [i for i in range(Zxx.ndim) if i not in (time_axis, freq_axis)]
    Zxx = jnp.transpose(Zxx, outer + [time_axis, freq_axis])
    # NB: the inverse FFT has length nfft (JAX passes the user's nfft, and fails for odd nperseg)
    frames = (jnp.fft.irfft if input_onesided else jnp.fft.ifft)(Zxx, n=nfft, axis=-1)[..., :nperseg]
    real = _dtypes.real_dtype(frames.dtype)
    if isinstance(window, (str, tuple)):
        win = _named_window(window, nperseg, real, "istft")
    else:
        _util.check_arraylike("istft", window)
        win = jnp.asarray(window)
        win = win.astype(_dtypes.to_complex_dtype(real) if jnp.iscomplexobj(win) else real)
        if win.shape != (nperseg,):
            raise ValueError(f"istft: window must be 1-D of length nperseg={nperseg}, got shape {win.shape}")
    frames = frames * win.sum()  # undoes stft's "spectrum" scaling
    x = _overlap_add(frames * win, step)
    norm = _overlap_add(jnp.broadcast_to(win * win, frames.shape[-2:]), step)
    if boundary:
        # NB: sliced to the end explicitly, so that nperseg=1 keeps its samples (SciPy's and
        # JAX's [n // 2:-(n // 2)] is empty there)
        cut = nperseg // 2
        x, norm = x[..., cut : x.shape[-1] - cut], norm[cut : norm.shape[-1] - cut]
    # (a complex window's norm is ordered by its real part, as NumPy orders complex numbers)
    x = x / jnp.where(jnp.real(norm) > 1e-10, norm, 1.0)
    if x.ndim > 1 and time_axis != Zxx.ndim - 1:
        x = jnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    time = jnp.arange(x.shape[0], dtype=real) / fs
    return time, x
