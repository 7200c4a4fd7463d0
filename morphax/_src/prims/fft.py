"""`fft`: XLA's fast Fourier transform over the trailing `len(fft_lengths)` axes of its operand.

Four kinds (`FftType`): complex FFT/IFFT (IFFT scales by 1/N), real-to-complex RFFT (keeps the
n//2+1 non-redundant bins of the last axis) and its inverse IRFFT. The reference is `numpy.fft`
in double precision, rounded to JAX's result dtype. All four are linear (JVP: the fft of the tangent).
"""

from __future__ import annotations

import enum
import math

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import Zero, is_zero
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.values import make_array
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._ad import deflinear
from morphax._src.prims._spec import Case, TestSpec, random_array
from morphax._src.prims.arithmetic import mul
from morphax._src.prims.complex_parts import conj
from morphax._src.prims.conversion import convert_element_type
from morphax._src.prims.shape import broadcast_in_dim

__all__ = ["FftType", "fft", "fft_p"]


class FftType(enum.IntEnum):
    """Which transform `lax.fft` performs (JAX's numbering)."""

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


_FFT_TYPE_NAMES = {
    "fft": FftType.FFT,
    "ifft": FftType.IFFT,
    "rfft": FftType.RFFT,
    "irfft": FftType.IRFFT,
}


def _complex_dtype(dt) -> np.dtype:
    return np.dtype(np.complex128 if np.dtype(dt) in (_dtypes.float64, _dtypes.complex128) else np.complex64)


def _real_dtype(dt) -> np.dtype:
    return np.dtype(np.float64 if np.dtype(dt) == _dtypes.complex128 else np.float32)


# ------------------------------------------------------------------------------------------------
# The primitive.


def _fft_stablehlo(ctx, x, *, fft_type, fft_lengths):
    kind = ("FFT", "IFFT", "RFFT", "IRFFT")[int(fft_type)]
    attrs = {"fft_type": f"#stablehlo<fft_type {kind}>", "fft_length": hlo.i64_array(fft_lengths)}
    return [ctx.op1("stablehlo.fft", [x], ctx.avals_out[0], attrs)]


fft_p = Primitive("fft")
fft_p.stablehlo = _fft_stablehlo
fft_p.kind = Kind.OPAQUE


def _out_shape_dtype(x: ShapedArray, fft_type, fft_lengths):
    k = len(fft_lengths)
    if not isinstance(fft_type, FftType):
        raise TypeError(f"fft: fft_type must be an FftType, got {fft_type!r}.")
    if not k:
        raise ValueError(
            "fft: fft_lengths must name at least one axis (lax.fft returns rank-0 requests as is)."
        )
    if k > len(x.shape):
        raise ValueError(
            f"fft: input shape {x.shape} must have at least as many dimensions as fft_lengths {fft_lengths}."
        )
    lead, minor = x.shape[:-k], x.shape[-k:]
    if fft_type == FftType.RFFT:
        if x.dtype not in (_dtypes.float32, _dtypes.float64):
            raise ValueError(f"fft: RFFT input must be float32 or float64, got {x.dtype.name}.")
        if minor != fft_lengths:
            raise ValueError(
                f"fft: RFFT input shape {x.shape} minor dimensions must be equal to fft_lengths {fft_lengths}."
            )
        return lead + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,), _complex_dtype(x.dtype)
    if not _dtypes.is_complex(x.dtype):
        raise ValueError(f"fft: {fft_type.name} input must be complex64 or complex128, got {x.dtype.name}.")
    if fft_type == FftType.IRFFT:
        want = fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
        if minor != want:
            raise ValueError(
                f"fft: IRFFT input shape {x.shape} minor dimensions must be {want}: all fft_lengths "
                f"{fft_lengths} but the last, then fft_lengths[-1] // 2 + 1."
            )
        return lead + fft_lengths, _real_dtype(x.dtype)
    if minor != fft_lengths:
        raise ValueError(
            f"fft: {fft_type.name} input shape {x.shape} minor dimensions must be equal to fft_lengths "
            f"{fft_lengths}."
        )
    return x.shape, x.dtype


def _fft_abstract_eval(x, *, fft_type, fft_lengths):
    shape, dtype = _out_shape_dtype(x, fft_type, fft_lengths)
    return ShapedArray(shape, dtype)


def _fft_impl(x, *, fft_type, fft_lengths):
    x = np.asarray(x)
    shape, dtype = _out_shape_dtype(ShapedArray(x.shape, x.dtype), fft_type, fft_lengths)
    if x.size == 0 or math.prod(shape) == 0 or 0 in fft_lengths:
        # numpy.fft refuses zero-length transforms; a sum over nothing is zero.
        return np.zeros(shape, dtype)
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    # Double precision, rounded once to the result dtype.
    wide = x.astype(np.float64 if fft_type == FftType.RFFT else np.complex128)
    if fft_type == FftType.FFT:
        out = np.fft.fftn(wide, axes=axes)
    elif fft_type == FftType.IFFT:
        out = np.fft.ifftn(wide, axes=axes)
    elif fft_type == FftType.RFFT:
        out = np.fft.rfftn(wide, axes=axes)
    else:
        out = np.fft.irfftn(wide, s=fft_lengths, axes=axes)
    return np.asarray(out).astype(dtype)


fft_p.impl = _fft_impl
fft_p.abstract_eval = _fft_abstract_eval


# ------------------------------------------------------------------------------------------------
# Derivatives. Transposes are with respect to the plain (non-conjugating) bilinear form
# Re(sum(a * b)), JAX's convention: the unnormalized DFT matrix is symmetric, so FFT and IFFT are
# their own transposes. RFFT and IRFFT are only real-linear; their transposes fold the Hermitian
# symmetry of the half spectrum into a per-bin weight along the last axis: bins 0 and n/2 (for
# even n) appear once in the full spectrum, the others twice.


def _bin_weights(like, n: int, fn):
    """`fn(multiplicity)` for each half-spectrum bin, broadcast along the last axis of `like`."""
    aval = get_aval(like)
    mult = np.full((n // 2 + 1,), 2.0)
    mult[0] = 1.0
    if n % 2 == 0:
        mult[-1] = 1.0
    w = make_array(fn(mult), aval.dtype)
    return broadcast_in_dim(w, aval.shape, (len(aval.shape) - 1,))


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    if is_zero(ct):
        return [Zero(x.aval)]
    n_total = math.prod(fft_lengths)
    n = fft_lengths[-1]
    if fft_type in (FftType.FFT, FftType.IFFT):
        return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]
    if fft_type == FftType.RFFT:
        # <RFFT x, c> = sum_j x_j Re(sum_k c_k w^{jk}) over the half spectrum. IRFFT of
        # conj(c) / multiplicity rebuilds exactly that sum, divided by N.
        weighted = mul(conj(ct), _bin_weights(ct, n, lambda m: n_total / m))
        return [fft_p.bind(weighted, fft_type=FftType.IRFFT, fft_lengths=fft_lengths)]
    # IRFFT: x_j = Re(sum_k mult_k y_k w^{-jk}) / N, so y's cotangent is conj(RFFT(t)) * mult / N.
    spec = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
    return [conj(mul(spec, _bin_weights(spec, n, lambda m: m / n_total)))]


deflinear(fft_p, _fft_transpose)


def _fft_batch(vals, dims, *, axis_data, fft_type, fft_lengths):
    # The transform acts on trailing axes, so the batch axis goes first.
    (x,), (d,) = vals, dims
    return fft_p.bind(moveaxis(x, d, 0), fft_type=fft_type, fft_lengths=fft_lengths), 0


fft_p.batch = _fft_batch


# ------------------------------------------------------------------------------------------------
# Test spec: each kind over one, two and three trailing axes, even and odd lengths, size-1 and
# empty batch axes. The first cases cycle through the four kinds (the gradient matrix samples the
# first few).


def _fft_cases(rng):
    configs = (
        # (kind, input shape, fft_lengths)
        (FftType.FFT, (2, 4), (4,)),
        (FftType.IFFT, (3, 5), (5,)),
        (FftType.RFFT, (2, 6), (6,)),
        (FftType.IRFFT, (2, 3), (5,)),
        (FftType.FFT, (2, 3, 4), (3, 4)),
        (FftType.IFFT, (2, 3, 2), (2, 3, 2)),
        (FftType.RFFT, (3, 4), (3, 4)),
        (FftType.IRFFT, (2, 3, 3), (3, 4)),
        (FftType.FFT, (1,), (1,)),
        (FftType.IFFT, (6,), (6,)),
        (FftType.RFFT, (2, 2, 3, 5), (2, 3, 5)),
        (FftType.IRFFT, (4, 2), (2,)),
        (FftType.IRFFT, (3, 1), (1,)),
        (FftType.RFFT, (1, 1), (1,)),
        (FftType.FFT, (0, 3), (3,)),
        (FftType.RFFT, (0, 4), (4,)),
    )
    out = []
    for kind, shape, lengths in configs:
        dts = ("float32",) if kind == FftType.RFFT else ("complex64",)
        for dt in dts:
            x = random_array(rng, shape, dt)
            params = {"fft_type": kind, "fft_lengths": lengths}
            out.append(Case((x,), params, f"{kind.name}-{dt}{list(shape)}-{lengths}"))
    return out


fft_p.test_spec = TestSpec(cases=_fft_cases, tol={"complex64": 1e-4, "float32": 1e-4})


# ------------------------------------------------------------------------------------------------
# The lax wrapper.


def _parse_fft_type(fft_type) -> FftType:
    if isinstance(fft_type, FftType):
        return fft_type
    if isinstance(fft_type, str):
        # JAX's spellings: all lower case or all upper case.
        kind = (
            _FFT_TYPE_NAMES.get(fft_type.lower())
            if fft_type in (fft_type.lower(), fft_type.upper())
            else None
        )
        if kind is None:
            raise ValueError(
                f"Unknown FFT type {fft_type!r}: use 'fft', 'ifft', 'rfft' or 'irfft' (or lax.FftType)."
            )
        return kind
    raise TypeError(
        f"Unknown FFT type value {fft_type!r}: use a lax.FftType or one of 'fft', 'ifft', 'rfft', 'irfft'."
    )


def fft(x, fft_type, fft_lengths):
    """The `fft_type` transform over the trailing ``len(fft_lengths)`` axes of `x`.

    RFFT takes real input (integers become the default float); the others take complex input
    (real input is widened to complex). An empty `fft_lengths` returns the converted input.
    """
    kind = _parse_fft_type(fft_type)
    dt = get_aval(x).dtype
    if kind == FftType.RFFT:
        if _dtypes.is_complex(dt):
            raise ValueError("lax.fft: only real valued inputs supported for rfft, got a complex input.")
        target = _dtypes.to_inexact_dtype(dt)
    else:
        target = _complex_dtype(_dtypes.to_inexact_dtype(dt))
    x = convert_element_type(x, target)
    try:
        lengths = tuple(int(n) for n in fft_lengths)
    except TypeError:
        raise TypeError(f"lax.fft: fft_lengths must be a sequence of ints, got {fft_lengths!r}.") from None
    if not lengths:
        return x
    return fft_p.bind(x, fft_type=kind, fft_lengths=lengths)
