"""float32 `log` and `log1p` evaluated with the operation order of XLA's CPU code generator.

XLA computes float32 logarithms with a Cephes polynomial (not libm), so its results differ from
NumPy's in the last bit for about a fifth of all inputs. The PRNG's normal sampler reaches its
output through `log1p` inside erf_inv; computing that step like XLA is what makes morphax's
normal draws equal JAX's bit for bit. Every fused multiply-add is emulated in float64: a float32
product is exact there, so the sum rounds once to float64 and then to float32 (a double rounding
that can differ from a true fma only on exact float64 ties, which these polynomials do not hit
in practice: checked against JAX on millions of random bit patterns in tests/prims).

Denormal inputs count as zero, as XLA's CPU code runs with flush-to-zero.
"""

from __future__ import annotations

import numpy as np

_F32 = np.float32
_TINY = np.finfo(np.float32).tiny

# Cephes' single-precision log: log(1 + f) ~ f - f^2/2 + f^3 P(f) on [sqrt(1/2) - 1, sqrt(2) - 1].
_LOG_P = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
          -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)  # fmt: skip
_LOG_Q1 = -2.12194440e-4  # ln 2 = Q2 + Q1, Q2 exact in a few bits so e * Q2 is exact.
_LOG_Q2 = 0.693359375
_SQRT_HALF = 0.707106781186547524

# Cephes' log1p rational approximation on |x| < sqrt(2) - 1 (highest degree first).
_LOG1P_NUM = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1, 6.5787325942061044846969e0,
              2.9911919328553073277375e1, 6.0949667980987787057556e1, 5.7112963590585538103336e1,
              2.0039553499201281259648e1)  # fmt: skip
_LOG1P_DEN = (1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1, 2.2176239823732856465394e2,
              3.0909872225312059774938e2, 2.1642788614495947685003e2, 6.0118660497603843919306e1)  # fmt: skip
_LOG1P_SMALL = 0.41421356237309504880

# The coefficients as XLA holds them: rounded to float32 (then widened for the float64 steps).
_LOG_P32 = tuple(float(_F32(c)) for c in _LOG_P)
_LOG_Q1_32 = float(_F32(_LOG_Q1))
_LOG1P_NUM32 = tuple(float(_F32(c)) for c in _LOG1P_NUM)
_LOG1P_DEN32 = tuple(float(_F32(c)) for c in _LOG1P_DEN)


_CHUNK = 1 << 14  # elements per block: the float64 temporaries stay in cache


def _round(v, buf32):
    """Round the float64 array `v` to float32 precision in place (via the float32 buffer)."""
    np.copyto(buf32, v, casting="same_kind")
    np.copyto(v, buf32)
    return v


def _fma_into(acc, b, c, buf32):
    """acc <- float32 fma(acc, b, c). The float32 product is exact in float64, so only the sum
    rounds (to float64, then to float32)."""
    np.multiply(acc, b, out=acc)
    np.add(acc, c, out=acc)
    return _round(acc, buf32)


def _blocks(x, kernel):
    """Apply `kernel(x64_block, buf32) -> float64 block` to a flat float32 array blockwise."""
    flat = np.ascontiguousarray(x, _F32).reshape(-1)
    out = np.empty(flat.shape, _F32)
    buf = np.empty(min(_CHUNK, max(flat.size, 1)), _F32)
    for start in range(0, flat.size, _CHUNK):
        block = flat[start : start + _CHUNK]
        out[start : start + block.size] = kernel(block.astype(np.float64), buf[: block.size])
    return out.reshape(np.shape(x))


def _log_kernel(x, buf):
    # x: positive normal float32 values held in float64.
    m, e = np.frexp(x)
    e = e.astype(np.float64)
    # Move the mantissa from [1/2, 1) to [sqrt(1/2), sqrt(2)) and take 1 off (exact steps).
    low = m < _SQRT_HALF
    f = m - 1.0
    f += np.where(low, m, 0.0)
    e -= low
    f2 = _round(f * f, buf)
    f3 = _round(f2 * f, buf)
    # The degree-8 polynomial in three interleaved Horner chains, as XLA evaluates it.
    chains = []
    for i in (0, 3, 6):
        acc = np.full_like(f, _LOG_P32[i])
        _fma_into(acc, f, _LOG_P32[i + 1], buf)
        chains.append(_fma_into(acc, f, _LOG_P32[i + 2], buf))
    y = _fma_into(_fma_into(chains[0], f3, chains[1], buf), f3, chains[2], buf)
    y = _fma_into(y, f3, _round(e * _LOG_Q1_32, buf), buf)
    out = _fma_into(f2, -0.5, f, buf)
    out = _round(out + y, buf)
    return _fma_into(e, _LOG_Q2, out, buf)  # e * Q2 is exact; one rounding


def log_f32(x):
    """Natural log of a float32 array, bit-identical to XLA's CPU code."""
    x = np.asarray(x, _F32)
    normal = (x >= _F32(_TINY)) & (x < _F32(np.inf))
    out = np.where(np.isnan(x) | (x == _F32(np.inf)), x, _F32(np.nan))
    out = np.where(np.abs(x) < _F32(_TINY), _F32(-np.inf), out)
    if normal.any():
        out[normal] = _blocks(x[normal], _log_kernel)
    return out


def _log1p_small_kernel(x, buf):
    num = np.full_like(x, _LOG1P_NUM32[0])
    den = np.full_like(x, _LOG1P_DEN32[0])
    for a, b in zip(_LOG1P_NUM32[1:], _LOG1P_DEN32[1:]):
        _fma_into(num, x, a, buf)
        _fma_into(den, x, b, buf)
    ratio = _round(num / den, buf)
    x2 = _round(x * x, buf)
    cubic = _round(_round(x * x2, buf) * ratio, buf)
    return _round(x + _round(x2 * -0.5 + cubic, buf), buf)


def log1p_f32(x):
    """log(1 + x) of a float32 array, bit-identical to XLA's CPU code: a rational function near
    zero and the logarithm of 1 + x elsewhere."""
    x = np.asarray(x, _F32)
    x = np.where(np.abs(x) < _F32(_TINY), np.copysign(_F32(0), x), x)  # flush denormals to +-0
    small = np.abs(x) < _F32(_LOG1P_SMALL)
    out = np.empty_like(x)
    if small.any():
        out[small] = _blocks(x[small], _log1p_small_kernel)
    large = ~small
    if large.any():
        with np.errstate(all="ignore"):
            out[large] = log_f32(x[large] + _F32(1))
    return out
