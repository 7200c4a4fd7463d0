"""`morphax.scipy.signal` against `scipy.signal`, in float32 and float64 (complex where SciPy takes
it): convolve/correlate by both methods and every mode, the 2-D forms (zero boundary) with either
operand larger, fftconvolve over axes, detrend with breakpoints, stft/istft with every boundary
extension, welch/csd with both averages and scalings; check_grads of convolve, fftconvolve and
stft; jit and vmap; JAX's errors."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest
import scipy.signal as ss

import morphax
import morphax.numpy as jnp
from morphax.scipy import signal as ms
from morphax.test_util import check_grads

rng = np.random.default_rng(0)
SIGNAL = rng.normal(size=(3, 40))
COMPLEX = rng.normal(size=(3, 40)) + 1j * rng.normal(size=(3, 40))
DTYPES = [np.float32, np.float64]
MODES = ["full", "same", "valid"]


def _tol(dtype):
    return 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-11


def _close(got, want, dtype, scale=1.0):
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    np.testing.assert_allclose(np.asarray(got), want, rtol=_tol(dtype), atol=_tol(dtype) * scale)


def _complex_of(dtype):
    return np.complex64 if dtype == np.float32 else np.complex128


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_convolve_and_correlate(mode, dtype):
    cases = [
        (rng.normal(size=9), rng.normal(size=4)),
        (rng.normal(size=3), rng.normal(size=8)),  # the second operand is the larger
        (rng.normal(size=(5, 6)), rng.normal(size=(2, 3))),
        (rng.normal(size=(4, 3, 5)), rng.normal(size=(2, 2, 3))),
    ]
    with morphax.enable_x64(dtype == np.float64):
        for a, b in cases:
            a, b = a.astype(dtype), b.astype(dtype)
            for method in ("direct", "fft", "auto"):
                _close(ms.convolve(a, b, mode, method), ss.convolve(a, b, mode, method="direct"), dtype, 10)
                _close(ms.correlate(a, b, mode, method), ss.correlate(a, b, mode, method="direct"), dtype, 10)
        a = (rng.normal(size=7) + 1j * rng.normal(size=7)).astype(_complex_of(dtype))
        b = (rng.normal(size=3) - 1j * rng.normal(size=3)).astype(_complex_of(dtype))
        for method in ("direct", "fft"):
            _close(ms.convolve(a, b, mode, method), ss.convolve(a, b, mode), _complex_of(dtype), 10)
            _close(ms.correlate(a, b, mode, method), ss.correlate(a, b, mode), _complex_of(dtype), 10)
        # integers are promoted to the default float
        ints = np.arange(6)
        _close(ms.convolve(ints, ints[:3], mode), ss.convolve(ints, ints[:3], mode), dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_convolve2d_and_correlate2d(mode, dtype):
    with morphax.enable_x64(dtype == np.float64):
        for sa, sb in (((6, 7), (3, 2)), ((2, 3), (5, 4)), ((4, 4), (4, 4)), ((5, 3), (1, 3))):
            a, b = rng.normal(size=sa).astype(dtype), rng.normal(size=sb).astype(dtype)
            _close(ms.convolve2d(a, b, mode), ss.convolve2d(a, b, mode), dtype, 10)
            _close(ms.correlate2d(a, b, mode), ss.correlate2d(a, b, mode), dtype, 10)
        a = (rng.normal(size=(5, 4)) + 1j * rng.normal(size=(5, 4))).astype(_complex_of(dtype))
        b = (rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))).astype(_complex_of(dtype))
        _close(ms.convolve2d(a, b, mode), ss.convolve2d(a, b, mode), _complex_of(dtype), 10)
        _close(ms.correlate2d(a, b, mode), ss.correlate2d(a, b, mode), _complex_of(dtype), 10)
        _close(ms.correlate2d(b, a, mode), ss.correlate2d(b, a, mode), _complex_of(dtype), 10)


def test_two_d_boundaries_and_errors():
    a, b = rng.normal(size=(4, 4)), rng.normal(size=(2, 2))
    # only the zero fill of SciPy's boundaries, as in JAX
    for boundary, fillvalue in (("wrap", 0), ("symm", 0), ("fill", 1.5)):
        with pytest.raises(NotImplementedError, match="boundary='fill', fillvalue=0"):
            ms.convolve2d(a, b, boundary=boundary, fillvalue=fillvalue)
        with pytest.raises(NotImplementedError, match="boundary='fill', fillvalue=0"):
            ms.correlate2d(a, b, boundary=boundary, fillvalue=fillvalue)
    with pytest.raises(ValueError, match="2-dimensional"):
        ms.convolve2d(a[0], b[0])
    with pytest.raises(ValueError, match="mode must be one of"):
        ms.convolve(a, b, mode="circular")
    with pytest.raises(ValueError, match="expected 'auto', 'fft', or 'direct'"):
        ms.convolve(a, b, method="overlap-add")
    with pytest.raises(ValueError, match="same number of dimensions"):
        ms.convolve(a, b[0])
    with pytest.raises(ValueError, match="smaller than the other in every dimension"):
        ms.convolve(np.ones((2, 5)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="zero-size"):
        ms.convolve(np.ones(3), np.ones(0))
    with pytest.raises(TypeError):
        ms.convolve([1.0, 2.0], np.ones(2))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fftconvolve(mode, dtype):
    with morphax.enable_x64(dtype == np.float64):
        a, b = SIGNAL.astype(dtype), rng.normal(size=(3, 7)).astype(dtype)
        _close(ms.fftconvolve(a, b, mode), ss.fftconvolve(a, b, mode), dtype, 10)
        _close(ms.fftconvolve(a, b, mode, axes=1), ss.fftconvolve(a, b, mode, axes=1), dtype, 10)
        _close(ms.fftconvolve(a.T, b.T, mode, axes=[0]), ss.fftconvolve(a.T, b.T, mode, axes=[0]), dtype, 10)
        _close(ms.fftconvolve(b[:1], a, mode), ss.fftconvolve(b[:1], a, mode), dtype, 10)
        c = COMPLEX[:, :9].astype(_complex_of(dtype))
        _close(ms.fftconvolve(c, b, mode), ss.fftconvolve(c, b, mode), _complex_of(dtype), 10)
    with pytest.raises(ValueError, match="mapped axes must have same shape"):
        ms.fftconvolve(np.ones((3, 5)), np.ones((2, 3)), axes=1)
    with pytest.raises(ValueError, match="same dimensionality"):
        ms.fftconvolve(np.ones((3, 5)), np.ones(3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_detrend(dtype):
    data = (SIGNAL + np.linspace(0, 5, 40)).astype(dtype)
    with morphax.enable_x64(dtype == np.float64):
        for kwargs in (
            {},
            {"type": "constant"},
            {"type": "linear", "bp": [10, 25]},
            {"type": "linear", "axis": 0},
            {"type": "constant", "axis": 0},
        ):
            _close(ms.detrend(data, **kwargs), ss.detrend(data.astype(np.float64), **kwargs), dtype, 10)
        _close(
            ms.detrend(np.arange(8)),
            ss.detrend(np.arange(8.0)),
            np.float64 if dtype == np.float64 else np.float32,
        )
    with pytest.raises(ValueError, match="'linear' or 'constant'"):
        ms.detrend(data, type="quadratic")
    with pytest.raises(ValueError, match="Breakpoints"):
        ms.detrend(data, bp=[50])
    with pytest.raises(NotImplementedError, match="overwrite_data"):
        ms.detrend(data, overwrite_data=True)


STFT_CASES = [
    {"nperseg": 16},
    {"nperseg": 15, "noverlap": 4, "nfft": 20},
    {"nperseg": 16, "boundary": "odd"},
    {"nperseg": 16, "boundary": "even", "padded": False},
    {"nperseg": 12, "boundary": "constant", "detrend": "linear"},
    {"nperseg": 16, "boundary": None, "return_onesided": False},
    {"nperseg": 8, "window": ("tukey", 0.3), "fs": 100.0},
    {"nperseg": 10, "window": np.hamming(10), "detrend": lambda d: d - d.mean(-1, keepdims=True)},
]


@pytest.mark.parametrize("case", range(len(STFT_CASES)))
@pytest.mark.parametrize("dtype", DTYPES)
def test_stft(case, dtype):
    kwargs = STFT_CASES[case]
    with morphax.enable_x64(dtype == np.float64):
        got = ms.stft(SIGNAL.astype(dtype), **kwargs)
        want = ss.stft(SIGNAL, **kwargs)
        _close(got[0], want[0], dtype, 100)
        _close(got[1], want[1], dtype, 100)
        _close(got[2], want[2], _complex_of(dtype))
        if callable(kwargs.get("detrend")):
            return  # SciPy's stft hands a callable the segments with their axes moved
        # along another axis: frequencies at that axis, segments last
        got = ms.stft(SIGNAL.T.astype(dtype), axis=0, **kwargs)[2]
        _close(got, ss.stft(SIGNAL.T, axis=0, **kwargs)[2], _complex_of(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_stft_complex_and_defaults(dtype):
    with morphax.enable_x64(dtype == np.float64):
        c = COMPLEX.astype(_complex_of(dtype))
        with pytest.warns(UserWarning, match="complex"):
            got = ms.stft(c, nperseg=16)
        with pytest.warns(UserWarning, match="complex"):
            want = ss.stft(COMPLEX, nperseg=16)
        _close(got[2], want[2], _complex_of(dtype))
        _close(ms.stft(c, nperseg=16, return_onesided=False)[2], want[2], _complex_of(dtype))
        # the default nperseg=256 shrinks to a shorter signal, with a warning (as SciPy)
        with pytest.warns(UserWarning, match="nperseg=256 is greater"):
            got = ms.stft(SIGNAL.astype(dtype))
        with pytest.warns(UserWarning, match="nperseg = 40"):
            want = ss.stft(SIGNAL)
        _close(got[2], want[2], _complex_of(dtype))


ISTFT_CASES = [
    {"nperseg": 16},
    {"nperseg": 15, "noverlap": 4},
    {"nperseg": 16, "noverlap": 0, "window": "boxcar"},
    {"nperseg": 8, "nfft": 12},
    {"nperseg": 10, "window": ("tukey", 0.5), "fs": 8.0},
    {"nperseg": 16, "boundary": None},
]


@pytest.mark.parametrize("case", range(len(ISTFT_CASES)))
@pytest.mark.parametrize("dtype", DTYPES)
def test_istft(case, dtype):
    kwargs = dict(ISTFT_CASES[case])
    boundary = kwargs.pop("boundary", "zeros")
    _, _, zxx = ss.stft(SIGNAL, boundary=boundary, **kwargs)
    with morphax.enable_x64(dtype == np.float64):
        time, x = ms.istft(zxx.astype(_complex_of(dtype)), boundary=boundary is not None, **kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SciPy's NOLA check warns near unextended ends
            want_time, want_x = ss.istft(zxx, boundary=boundary is not None, **kwargs)
        _close(time, want_time, dtype, 100)
        _close(x, want_x, dtype)
        if boundary is not None:
            # stft then istft gives the signal back
            _close(ms.istft(ms.stft(SIGNAL.astype(dtype), **kwargs)[2], **kwargs)[1][:, :40], SIGNAL, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_istft_axes_and_two_sided(dtype):
    _, _, zxx = ss.stft(SIGNAL.T, nperseg=16, axis=0)  # (freqs, 3, segments)
    with morphax.enable_x64(dtype == np.float64):
        got = ms.istft(zxx.astype(_complex_of(dtype)), nperseg=16, time_axis=-1, freq_axis=0)[1]
        _close(got, ss.istft(zxx, nperseg=16, time_axis=-1, freq_axis=0)[1], dtype)
        moved = np.moveaxis(zxx, 0, -1)  # (3, segments, freqs)
        got = ms.istft(moved.astype(_complex_of(dtype)), nperseg=16, time_axis=1, freq_axis=2)[1]
        _close(got, ss.istft(moved, nperseg=16, time_axis=1, freq_axis=2)[1], dtype)
        with pytest.warns(UserWarning, match="complex"):
            _, _, zc = ss.stft(COMPLEX, nperseg=16)
        got = ms.istft(zc.astype(_complex_of(dtype)), nperseg=16, input_onesided=False)[1]
        _close(got, ss.istft(zc, nperseg=16, input_onesided=False)[1], _complex_of(dtype))
        # a complex window, both ways
        win = (np.hanning(10)[1:-1] + 0.1) * np.exp(0.3j * np.arange(8))
        got = ms.stft(SIGNAL.astype(dtype), window=win, nperseg=8, return_onesided=False)[2]
        zw = ss.stft(SIGNAL, window=win, nperseg=8, return_onesided=False)[2]
        _close(got, zw, _complex_of(dtype))
        got = ms.istft(zw.astype(_complex_of(dtype)), window=win, input_onesided=False)[1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SciPy's NOLA check misjudges a complex window
            want = ss.istft(zw, window=win, input_onesided=False)[1]
        _close(got, want, _complex_of(dtype))


WELCH_CASES = [
    {"nperseg": 16},
    {"nperseg": 16, "average": "median", "scaling": "spectrum"},
    {"nperseg": 9, "detrend": "linear", "return_onesided": False},
    {"nperseg": 16, "window": "hamming", "nfft": 33, "fs": 10.0},
    {"nperseg": 12, "noverlap": 0, "detrend": False},
    {"window": np.hanning(20), "average": "median"},
]


@pytest.mark.parametrize("case", range(len(WELCH_CASES)))
@pytest.mark.parametrize("dtype", DTYPES)
def test_welch_and_csd(case, dtype):
    kwargs = WELCH_CASES[case]
    y = rng.normal(size=(3, 33))
    with morphax.enable_x64(dtype == np.float64):
        got, want = ms.welch(SIGNAL.astype(dtype), **kwargs), ss.welch(SIGNAL, **kwargs)
        _close(got[0], want[0], dtype, 10)
        _close(got[1], want[1], dtype)
        got = ms.welch(SIGNAL.T.astype(dtype), axis=0, **kwargs)[1]
        _close(got, ss.welch(SIGNAL.T, axis=0, **kwargs)[1], dtype)
        # y shorter than x is zero-padded; a single row broadcasts against x's rows (SciPy cannot
        # do both at once)
        for other in (y, np.pad(y[:1], [(0, 0), (0, 7)])):
            got, want = (
                ms.csd(SIGNAL.astype(dtype), other.astype(dtype), **kwargs),
                ss.csd(SIGNAL, other, **kwargs),
            )
            _close(got[1], want[1], _complex_of(dtype))
        # y=None is the power spectral density of x, real
        got = ms.csd(SIGNAL.astype(dtype), None, **kwargs)[1]
        _close(got, ss.welch(SIGNAL, **kwargs)[1], dtype)
        c = COMPLEX.astype(_complex_of(dtype))
        one_sided = kwargs.get("return_onesided", True)
        with pytest.warns(UserWarning, match="complex") if one_sided else contextlib.nullcontext():
            got = ms.csd(c, c[::-1], **kwargs)[1]
        _close(got, ss.csd(COMPLEX, COMPLEX[::-1], **kwargs)[1], _complex_of(dtype))


def test_welch_conventions():
    # JAX's default nperseg is the whole signal (SciPy's is 256): one segment, one periodogram
    x = rng.normal(size=300).astype(np.float32)
    freqs, pxx = ms.welch(x)
    assert freqs.shape == pxx.shape == (151,) and pxx.dtype == np.float32
    np.testing.assert_allclose(np.asarray(pxx), ss.welch(x, nperseg=300)[1], rtol=1e-4, atol=1e-6)
    # integers are promoted; an empty signal gives empty outputs
    _close(ms.welch(np.arange(32) % 5, nperseg=8)[1], ss.welch(np.arange(32) % 5, nperseg=8)[1], np.float32)
    with pytest.warns(UserWarning, match="nperseg=256"):
        f, t, z = ms.stft(np.zeros((2, 0)))
    assert f.shape == t.shape == z.shape == (2, 0) and z.dtype == np.complex64


def test_spectral_jit_and_vmap():
    x = SIGNAL.astype(np.float32)
    stft = morphax.jit(lambda v: ms.stft(v, nperseg=16)[2])
    _close(stft(x), ss.stft(SIGNAL, nperseg=16)[2], np.complex64)
    istft = morphax.jit(lambda z: ms.istft(z, nperseg=16)[1])
    _close(istft(stft(x))[:, :40], SIGNAL, np.float32)
    welch = morphax.vmap(lambda v: ms.welch(v, nperseg=16)[1])
    _close(welch(x), ss.welch(SIGNAL, nperseg=16)[1], np.float32)
    csd = morphax.vmap(lambda a, b: ms.csd(a, b, nperseg=16, average="median")[1], in_axes=(0, None))
    _close(csd(x, x[0]), ss.csd(SIGNAL, SIGNAL[0], nperseg=16, average="median")[1], np.complex64)
    fs_traced = morphax.jit(lambda v, fs: ms.welch(v, fs=fs, nperseg=16))(x, np.float32(4.0))
    _close(fs_traced[0], ss.welch(SIGNAL, fs=4.0, nperseg=16)[0], np.float32, 10)
    _close(fs_traced[1], ss.welch(SIGNAL, fs=4.0, nperseg=16)[1], np.float32)
    z = ms.stft(x, nperseg=16)[2]
    _close(
        morphax.vmap(lambda zz: ms.istft(zz, nperseg=16)[1])(z),
        np.asarray(ms.istft(z, nperseg=16)[1]),
        np.float32,
    )


def test_convolution_jit_and_vmap():
    a, b = SIGNAL.astype(np.float32), rng.normal(size=(3, 5)).astype(np.float32)
    conv = morphax.vmap(lambda u, v: ms.convolve(u, v, "same"))
    _close(conv(a, b), np.stack([ss.convolve(u, v, "same") for u, v in zip(a, b)]), np.float32, 10)
    corr = morphax.vmap(lambda u: ms.correlate(u, b[0], "valid", method="fft"))
    _close(corr(a), np.stack([ss.correlate(u, b[0], "valid") for u in a]), np.float32, 10)
    _close(morphax.jit(ms.convolve2d)(a, b), ss.convolve2d(a, b), np.float32, 10)
    _close(
        morphax.jit(lambda u, v: ms.correlate2d(u, v, "same"))(a, b),
        ss.correlate2d(a, b, "same"),
        np.float32,
        10,
    )
    _close(morphax.jit(ms.fftconvolve, static_argnames="mode")(a, b, mode="valid"), ss.fftconvolve(a, b, "valid"),
           np.float32, 10)  # fmt: skip
    _close(morphax.vmap(ms.detrend)(a), ss.detrend(SIGNAL), np.float32, 10)
    _close(morphax.jit(lambda v: ms.detrend(v, bp=[20]))(a), ss.detrend(SIGNAL, bp=[20]), np.float32, 10)
    _close(morphax.vmap(lambda u: ms.convolve2d(u, b[:2, :2]))(a.reshape(3, 5, 8)),
           np.stack([ss.convolve2d(u, b[:2, :2]) for u in SIGNAL.reshape(3, 5, 8)]), np.float32, 10)  # fmt: skip


def test_derivatives():
    with morphax.enable_x64():
        a, b = rng.normal(size=7), rng.normal(size=3)
        for mode in MODES:
            check_grads(
                lambda u, v, mode=mode: ms.convolve(u, v, mode), (a, b), order=2, modes=("fwd", "rev")
            )
            check_grads(
                lambda u, v, mode=mode: ms.fftconvolve(u, v, mode), (a, b), order=2, modes=("fwd", "rev")
            )
        check_grads(lambda u: ms.correlate2d(u, b[:2, None] * b[None]), (rng.normal(size=(4, 5)),), order=1)
        x = rng.normal(size=(2, 24))
        for kwargs in (
            {},
            {"boundary": "odd", "detrend": "linear"},
            {"boundary": "even", "return_onesided": False},
        ):
            check_grads(
                lambda v, kwargs=kwargs: ms.stft(v, nperseg=8, **kwargs)[2],
                (x,),
                order=1,
                modes=("fwd", "rev"),
            )
        check_grads(lambda v: ms.welch(v, nperseg=8)[1], (x,), order=1, modes=("fwd", "rev"))
        z = ms.stft(x, nperseg=8)[2]
        check_grads(lambda v: ms.istft(v, nperseg=8)[1], (z,), order=1, modes=("fwd", "rev"))


def test_spectral_errors():
    x = SIGNAL
    with pytest.raises(ValueError, match="Unknown boundary option"):
        ms.stft(x, nperseg=8, boundary="periodic")
    with pytest.raises(ValueError, match="noverlap"):
        ms.stft(x, nperseg=8, noverlap=8)
    with pytest.raises(ValueError, match="nfft"):
        ms.welch(x, nperseg=8, nfft=4)
    with pytest.raises(ValueError, match="positive integer"):
        ms.stft(x, nperseg=0)
    with pytest.raises(ValueError, match="Unknown scaling"):
        ms.welch(x, nperseg=8, scaling="power")
    with pytest.raises(ValueError, match='"median" or "mean"'):
        ms.csd(x, x, nperseg=8, average="max")
    with pytest.raises(ValueError, match="Unsupported detrend type"):
        ms.welch(x, nperseg=8, detrend=True)
    with pytest.raises(ValueError, match="window must be 1-D"):
        ms.welch(x, window=np.ones((2, 4)))
    with pytest.raises(ValueError, match="differs from the length of window"):
        ms.welch(x, window=np.ones(8), nperseg=6)
    with pytest.raises(ValueError, match="longer than the input"):
        ms.welch(x[:, :5], window=np.ones(8))
    with pytest.raises(ValueError, match="same rank"):
        ms.csd(x, x[0], nperseg=8)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        ms.csd(x, x[:2], nperseg=8)
    with pytest.raises(ValueError, match="at least 2d"):
        ms.istft(jnp.ones(5, jnp.complex64))
    with pytest.raises(ValueError, match="differing time and frequency"):
        ms.istft(jnp.ones((5, 4), jnp.complex64), time_axis=0, freq_axis=-2)
    with pytest.raises(ValueError, match="must be longer than nperseg"):
        ms.istft(jnp.ones((5, 4), jnp.complex64), nperseg=8, nfft=6)
    with pytest.raises(ValueError, match="window must be 1-D of length"):
        ms.istft(jnp.ones((5, 4), jnp.complex64), window=np.ones(5))
