"""Polynomials, window functions, vectorize, bit packing and NumPy host utilities (printing,
save/load, from* constructors), plus a few extra scalar types. The ufunc class lives in
ufunc_objects.py."""

from __future__ import annotations

import functools
import importlib
import math
import re

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.trace import Tracer
from morphax._src.numpy import (
    creation,
    linalg,
    manipulation,
    products,
    reductions,
    ufuncs,
    util,
)
from morphax._src.numpy.scalar_types import _scalar_type

__all__ = [
    "polyval", "polyadd", "polysub", "polymul", "polyder", "polyint", "polydiv", "poly", "polyfit",
    "roots", "bartlett", "blackman", "hamming", "hanning", "kaiser", "vectorize",
    "packbits", "unpackbits", "array_repr", "array_str", "get_printoptions", "set_printoptions",
    "printoptions", "save", "savez", "load", "frombuffer", "fromfile", "fromiter", "fromstring",
    "from_dlpack", "ComplexWarning",
]  # fmt: skip


def _shape(x):
    return tuple(np.shape(x))


def _is_concrete(*xs):
    return not any(isinstance(x, Tracer) for x in xs)


# ------------------------------------------------------------------------------------------------
# Polynomials.


def _poly1d(name, *args, inexact=False):
    util.check_arraylike(name, *args)
    out = util.promote_dtypes_inexact(*args) if inexact else util.promote_dtypes(*args)
    for a in out:
        if len(_shape(a)) != 1:
            raise ValueError(f"{name}: input must be one-dimensional, got shape {_shape(a)}")
    return out


def _zeros(n, dtype):
    return creation.zeros((n,), dtype=dtype)


def _pad_front(a, n):
    if n == 0:
        return a
    return manipulation.concatenate([_zeros(n, a.dtype), a])


def _convolve_full(a, b):
    """Full 1-D convolution as a sum of shifted, scaled copies (static lengths)."""
    m = _shape(a)[0]
    out = None
    for i in range(m):
        term = ufuncs.multiply(a[i], b)
        parts = [p for p in (_zeros(i, term.dtype), term, _zeros(m - 1 - i, term.dtype)) if _shape(p)[0]]
        term = manipulation.concatenate(parts) if len(parts) > 1 else parts[0]
        out = term if out is None else ufuncs.add(out, term)
    return out


def _trim_leading_zeros(a):
    if not _is_concrete(a):
        raise ValueError("trim_leading_zeros=True requires concrete (non-traced) input")
    host = np.asarray(a)
    nz = np.flatnonzero(host)
    start = int(nz[0]) if nz.size else _shape(a)[0] - 1
    return a[start:] if _shape(a)[0] else a


def polyval(p, x, *, unroll: int = 16):
    """Evaluate the polynomial with coefficients ``p`` (highest degree first) at ``x`` (Horner)."""
    del unroll
    util.check_arraylike("polyval", p, x)
    p, x = util.promote_dtypes(p, x)  # as in JAX: integer inputs give an integer result
    if len(_shape(p)) < 1:
        raise ValueError("polyval: p must have at least one dimension")
    y = creation.zeros_like(x, shape=manipulation.broadcast_shapes(_shape(p)[1:], _shape(x)))
    for i in range(_shape(p)[0]):
        y = ufuncs.add(ufuncs.multiply(y, x), p[i])
    return y


def _polyaddsub(name, op, a1, a2):
    a1, a2 = _poly1d(name, a1, a2)
    n1, n2 = _shape(a1)[0], _shape(a2)[0]
    n = max(n1, n2)
    return op(_pad_front(a1, n - n1), _pad_front(a2, n - n2))


def polyadd(a1, a2):
    """Sum of two polynomials."""
    return _polyaddsub("polyadd", ufuncs.add, a1, a2)


def polysub(a1, a2):
    """Difference of two polynomials."""
    return _polyaddsub("polysub", ufuncs.subtract, a1, a2)


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    """Product of two polynomials."""
    a1, a2 = _poly1d("polymul", a1, a2, inexact=True)
    if trim_leading_zeros and _shape(a1)[0] > 1:
        a1 = _trim_leading_zeros(a1)
    if trim_leading_zeros and _shape(a2)[0] > 1:
        a2 = _trim_leading_zeros(a2)
    if _shape(a1)[0] == 0:
        a1 = _zeros(1, a1.dtype)
    if _shape(a2)[0] == 0:
        a2 = _zeros(1, a2.dtype)
    return _convolve_full(a1, a2)


def polyder(p, m: int = 1):
    """The ``m``-th derivative of a polynomial."""
    (p,) = _poly1d("polyder", p, inexact=True)
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    for _ in range(m):
        n = _shape(p)[0]
        if n <= 1:
            return _zeros(0, p.dtype)
        coef = creation.arange(n - 1, 0, -1, dtype=p.dtype)
        p = ufuncs.multiply(p[:-1], coef)
    return p


def polyint(p, m: int = 1, k=None):
    """The ``m``-th antiderivative of a polynomial, with integration constants ``k``."""
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    (p,) = _poly1d("polyint", p, inexact=True)
    if k is None:
        k = _zeros(m, p.dtype)
    k = manipulation.atleast_1d(creation.asarray(k))
    if _shape(k)[0] == 1 and m > 1:
        k = manipulation.broadcast_to(k, (m,))
    if _shape(k)[0] < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    k = util.convert_element_type(k, p.dtype)
    for i in range(m):
        n = _shape(p)[0]
        p = manipulation.concatenate(
            [ufuncs.divide(p, creation.arange(n, 0, -1, dtype=p.dtype)), manipulation.reshape(k[i], (1,))]
        )
    return p


def polydiv(u, v, *, trim_leading_zeros: bool = False):
    """Quotient and remainder of polynomial division (remainder keeps ``u``'s length)."""
    u, v = _poly1d("polydiv", u, v, inexact=True)
    m, n = _shape(u)[0] - 1, _shape(v)[0] - 1
    scale = ufuncs.divide(1.0, v[0])
    q = []
    for k in range(0, m - n + 1):
        d = ufuncs.multiply(scale, u[k])
        q.append(d)
        seg = ufuncs.subtract(u[k : k + n + 1], ufuncs.multiply(d, v))
        parts = [u[:k], seg, u[k + n + 1 :]]
        u = manipulation.concatenate([p for p in parts if _shape(p)[0]])
    q = manipulation.stack(q) if q else _zeros(1, u.dtype)
    if trim_leading_zeros:
        if not _is_concrete(u):
            raise ValueError("trim_leading_zeros=True requires concrete (non-traced) input")
        host = np.asarray(u)
        tol = math.sqrt(float(np.finfo(host.dtype).eps))
        idx = np.flatnonzero(np.abs(host) > tol)
        u = u[int(idx[0]) :] if idx.size else u[-1:]
    return q, u


def poly(seq_of_zeros):
    """Coefficients of the monic polynomial with the given roots (or a square matrix's eigenvalues)."""
    util.check_arraylike("poly", seq_of_zeros)
    (seq,) = util.promote_dtypes_inexact(seq_of_zeros)
    sh = _shape(seq)
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        seq = linalg.eigvals(seq)
    elif len(sh) == 1:
        pass
    elif len(sh) == 0 or (len(sh) == 2 and sh[0] == 0):
        return creation.ones((1,), dtype=seq.dtype)
    else:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    a = creation.ones((1,), dtype=seq.dtype)
    for k in range(_shape(seq)[0]):
        a = _convolve_full(
            a, manipulation.stack([creation.ones((), dtype=seq.dtype), ufuncs.negative(seq[k])])
        )
    return a


def _vander(x, n):
    cols = []
    col = creation.ones_like(x)
    for _ in range(n):
        cols.append(col)
        col = ufuncs.multiply(col, x)
    return manipulation.stack(cols[::-1], axis=1)


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov=False):
    """Least-squares polynomial fit (coefficients highest degree first)."""
    util.check_arraylike("polyfit", x, y)
    deg = int(deg)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    x, y = util.promote_dtypes_inexact(x, y)
    if len(_shape(x)) != 1:
        raise TypeError("expected 1D vector for x")
    if _shape(x)[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if len(_shape(y)) not in (1, 2):
        raise TypeError("expected 1D or 2D array for y")
    if _shape(x)[0] != _shape(y)[0]:
        raise TypeError("expected x and y to have same length")
    order = deg + 1
    if rcond is None:
        rcond = _shape(x)[0] * float(np.finfo(np.dtype(_dtypes.real_dtype(x.dtype))).eps)
    lhs = _vander(x, order)
    rhs = y
    if w is not None:
        util.check_arraylike("polyfit", w)
        (w,) = util.promote_dtypes_inexact(w)
        if len(_shape(w)) != 1 or _shape(w)[0] != _shape(x)[0]:
            raise TypeError("expected a 1-d weight vector of the same length as x")
        lhs = ufuncs.multiply(lhs, w[:, None])
        rhs = ufuncs.multiply(rhs, w if len(_shape(rhs)) == 1 else w[:, None])
    scale = ufuncs.sqrt(reductions.sum(ufuncs.multiply(lhs, ufuncs.conjugate(lhs)).real, axis=0))
    scale = util.convert_element_type(scale, lhs.dtype)
    lhs = ufuncs.divide(lhs, scale[None, :])
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = ufuncs.divide(c, scale if len(_shape(c)) == 1 else scale[:, None])
    if full:
        return c, resids, rank, s, creation.asarray(rcond)
    if cov:
        vbase = linalg.inv(products.dot(ufuncs.conjugate(lhs).T, lhs))
        vbase = ufuncs.divide(vbase, products.outer(scale, scale))
        if cov == "unscaled":
            fac = creation.asarray(1.0, dtype=_dtypes.real_dtype(x.dtype))
        else:
            if _shape(x)[0] <= order:
                raise ValueError("the number of data points must exceed order to scale the covariance matrix")
            fac = ufuncs.divide(resids, _shape(x)[0] - order)
            if len(_shape(y)) == 1:
                fac = fac[0]
        if len(_shape(y)) == 1:
            return c, ufuncs.multiply(vbase, fac)
        return c, ufuncs.multiply(vbase[:, :, None], fac)
    return c


def roots(p, *, strip_zeros: bool = True):
    """Roots of a polynomial via the eigenvalues of its companion matrix (complex result)."""
    (p,) = _poly1d("roots", p, inexact=True)
    num_trailing = 0
    if strip_zeros:
        if not _is_concrete(p):
            raise ValueError(
                "roots with strip_zeros=True requires a concrete (non-traced) input; "
                "pass strip_zeros=False to use it under jit"
            )
        host = np.asarray(p)
        nz = np.flatnonzero(host)
        if nz.size == 0:
            return creation.zeros((0,), dtype=_dtypes.to_complex_dtype(p.dtype))
        p = p[int(nz[0]) : int(nz[-1]) + 1]
        num_trailing = _shape(host)[0] - int(nz[-1]) - 1
    n = _shape(p)[0]
    cdt = _dtypes.to_complex_dtype(p.dtype)
    if n < 2:
        r = creation.zeros((0,), dtype=cdt)
    else:
        first = ufuncs.divide(ufuncs.negative(p[1:]), p[0])[None, :]
        if n > 2:
            rest = manipulation.concatenate(
                [creation.eye(n - 2, dtype=p.dtype), creation.zeros((n - 2, 1), dtype=p.dtype)], axis=1
            )
            a = manipulation.concatenate([first, rest], axis=0)
        else:
            a = first
        r = util.convert_element_type(linalg.eigvals(a), cdt)
    if num_trailing:
        r = manipulation.concatenate([r, creation.zeros((num_trailing,), dtype=cdt)])
    return r


# ------------------------------------------------------------------------------------------------
# Window functions.


def _float():
    return _dtypes.canonicalize_dtype(np.float64)


def _cos_window(M, coefs):
    M = int(M)
    dt = _float()
    if M < 1:
        return creation.zeros((0,), dtype=dt)
    if M == 1:
        return creation.ones((1,), dtype=dt)
    n = creation.arange(1 - M, M, 2, dtype=dt)
    out = creation.full((M,), coefs[0], dtype=dt)
    for j, c in enumerate(coefs[1:], start=1):
        out = ufuncs.add(out, ufuncs.multiply(c, ufuncs.cos(ufuncs.multiply(n, j * math.pi / (M - 1)))))
    return out


def bartlett(M: int):
    """The Bartlett (triangular) window."""
    M = int(M)
    dt = _float()
    if M < 1:
        return creation.zeros((0,), dtype=dt)
    if M == 1:
        return creation.ones((1,), dtype=dt)
    n = creation.arange(1 - M, M, 2, dtype=dt)
    return ufuncs.subtract(1.0, ufuncs.absolute(ufuncs.divide(n, M - 1)))


def blackman(M: int):
    """The Blackman window."""
    return _cos_window(M, (0.42, 0.5, 0.08))


def hamming(M: int):
    """The Hamming window."""
    return _cos_window(M, (0.54, 0.46))


def hanning(M: int):
    """The Hann window."""
    return _cos_window(M, (0.5, 0.5))


def _i0_series(x, terms=60):
    q = ufuncs.square(ufuncs.multiply(x, 0.5))
    term = creation.ones_like(x)
    out = term
    for k in range(1, terms):
        term = ufuncs.multiply(term, ufuncs.divide(q, float(k * k)))
        out = ufuncs.add(out, term)
    return out


def kaiser(M: int, beta):
    """The Kaiser window with shape parameter ``beta``."""
    M = int(M)
    dt = _float()
    if M < 1:
        return creation.zeros((0,), dtype=dt)
    if M == 1:
        return creation.ones((1,), dtype=dt)
    beta = util.convert_element_type(beta, dt)
    n = ufuncs.subtract(creation.arange(0, M, dtype=dt), (M - 1) / 2.0)
    arg = ufuncs.sqrt(ufuncs.subtract(1.0, ufuncs.square(ufuncs.divide(n, (M - 1) / 2.0))))
    return ufuncs.divide(_i0_series(ufuncs.multiply(beta, arg)), _i0_series(beta))


# ------------------------------------------------------------------------------------------------
# vectorize.

_DIM = r"\w+"
_CORE = rf"(?:{_DIM}(?:,{_DIM})*)?"
_ARG = rf"\({_CORE}\)"
_ARGLIST = rf"{_ARG}(?:,{_ARG})*"
_SIGNATURE = rf"^{_ARGLIST}->{_ARGLIST}$"


def _parse_signature(signature):
    sig = signature.replace(" ", "")
    if not re.match(_SIGNATURE, sig):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = sig.split("->")

    def parse(s):
        return [tuple(re.findall(_DIM, a)) for a in re.findall(_ARG, s)]

    return parse(ins), parse(outs)


def vectorize(pyfunc, *, excluded=frozenset(), signature: str | None = None):
    """Define a vectorized function (NumPy-style broadcasting) built on ``vmap``."""
    excluded = frozenset(excluded)
    for e in excluded:
        if not isinstance(e, (int, str)):
            raise TypeError(f"jax.numpy.vectorize can only exclude integer or string arguments, got {e!r}")
        if isinstance(e, int) and e < 0:
            raise ValueError(f"excluded={excluded!r} contains negative numbers")
    parsed = _parse_signature(signature) if signature is not None else None

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        vmap = importlib.import_module("morphax._src.vmap_api").vmap
        static_pos = {i: a for i, a in enumerate(args) if i in excluded or a is None}
        dyn_pos = [i for i in range(len(args)) if i not in static_pos]
        static_kw = {k: v for k, v in kwargs.items() if k in excluded}
        dyn_kw = [k for k in kwargs if k not in excluded]
        dyn_vals = [creation.asarray(args[i]) for i in dyn_pos] + [
            creation.asarray(kwargs[k]) for k in dyn_kw
        ]
        if parsed is None:
            in_core = [()] * len(dyn_vals)
        else:
            in_core_sig = parsed[0]
            if len(in_core_sig) != len(dyn_pos):
                raise TypeError(
                    f"wrong number of positional arguments: expected {len(in_core_sig)}, got {len(dyn_pos)}"
                )
            in_core = list(in_core_sig) + [()] * len(dyn_kw)
        sizes: dict = {}
        batch_shapes = []
        for v, core in zip(dyn_vals, in_core):
            sh = _shape(v)
            if len(sh) < len(core):
                raise ValueError(
                    f"input with shape {sh} does not have enough dimensions for all core dimensions {core}"
                )
            core_sh = sh[len(sh) - len(core) :]
            for d, s in zip(core, core_sh):
                if sizes.setdefault(d, s) != s:
                    raise ValueError(f"inconsistent size for core dimension {d!r}: {s} vs {sizes[d]}")
            batch_shapes.append(sh[: len(sh) - len(core)])
        bshape = manipulation.broadcast_shapes(*batch_shapes) if batch_shapes else ()
        dyn_vals = [
            manipulation.broadcast_to(v, tuple(bshape) + _shape(v)[len(b) :])
            for v, b in zip(dyn_vals, batch_shapes)
        ]

        def core_fn(*vals):
            pos = dict(static_pos)
            pos.update(zip(dyn_pos, vals[: len(dyn_pos)]))
            kw = dict(static_kw)
            kw.update(zip(dyn_kw, vals[len(dyn_pos) :]))
            out = pyfunc(*[pos[i] for i in range(len(args))], **kw)
            if parsed is not None:
                out_core = parsed[1]
                outs = out if isinstance(out, tuple) else (out,)
                if len(out_core) != 1 and (not isinstance(out, tuple) or len(outs) != len(out_core)):
                    raise ValueError(f"wrong number of output arguments: expected {len(out_core)}")
                for o, core in zip(outs, out_core):
                    if len(np.shape(o)) != len(core):
                        raise ValueError(
                            f"output shape {np.shape(o)} does not match core dimensions {core} "
                            f"on vectorized function with excluded={excluded!r} and signature={signature!r}"
                        )
                    for d, s in zip(core, np.shape(o)):
                        if d in sizes and sizes[d] != s:
                            raise ValueError(f"inconsistent size for core dimension {d!r}: {s} vs {sizes[d]}")
            return out

        f = core_fn
        for _ in range(len(bshape)):
            f = vmap(f)
        return f(*dyn_vals)

    return wrapped


# ------------------------------------------------------------------------------------------------
# Bit packing.


def packbits(a, axis: int | None = None, bitorder: str = "big"):
    """Pack the elements of a boolean/integer array into the bits of a uint8 array."""
    util.check_arraylike("packbits", a)
    a = creation.asarray(a)
    if not (_dtypes.issubdtype(a.dtype, np.integer) or _dtypes.issubdtype(a.dtype, np.bool_)):
        raise TypeError("Expected an input array of integer or boolean data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    bits = util.convert_element_type(ufuncs.not_equal(a, 0), np.uint8)
    if axis is None:
        bits = manipulation.ravel(bits)
        axis = 0
    axis = util.canonicalize_axis(axis, len(_shape(bits)))
    bits = manipulation.moveaxis(bits, axis, -1)
    n = _shape(bits)[-1]
    rem = (-n) % 8
    if rem:
        bits = manipulation.concatenate(
            [bits, creation.zeros(_shape(bits)[:-1] + (rem,), dtype=np.uint8)], axis=-1
        )
    bits = manipulation.reshape(bits, _shape(bits)[:-1] + ((n + rem) // 8, 8))
    shifts = np.arange(7, -1, -1) if bitorder == "big" else np.arange(8)
    weights = creation.asarray((1 << shifts).astype(np.uint8))
    packed = reductions.sum(ufuncs.multiply(bits, weights), axis=-1, dtype=np.uint8)
    return manipulation.moveaxis(packed, -1, axis)


def unpackbits(a, axis: int | None = None, count: int | None = None, bitorder: str = "big"):
    """Unpack the bits of a uint8 array into a uint8 array of 0s and 1s."""
    util.check_arraylike("unpackbits", a)
    a = creation.asarray(a)
    if a.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    shifts = np.arange(7, -1, -1) if bitorder == "big" else np.arange(8)
    shifts = creation.asarray(shifts.astype(np.uint8))
    bits = ufuncs.bitwise_and(ufuncs.right_shift(a[..., None], shifts), creation.asarray(1, dtype=np.uint8))
    if axis is None:
        bits = manipulation.ravel(bits)
        axis = 0
    else:
        axis = util.canonicalize_axis(axis, len(_shape(a)))
        bits = manipulation.moveaxis(bits, axis, -2)
        bits = manipulation.reshape(bits, _shape(bits)[:-2] + (_shape(bits)[-2] * 8,))
        bits = manipulation.moveaxis(bits, -1, axis)
    if count is not None:
        count = int(count)
        n = _shape(bits)[axis]
        if count > n:
            pad_shape = list(_shape(bits))
            pad_shape[axis] = count - n
            bits = manipulation.concatenate(
                [bits, creation.zeros(tuple(pad_shape), dtype=np.uint8)], axis=axis
            )
        else:
            idx = [slice(None)] * len(_shape(bits))
            idx[axis] = slice(None, count)
            bits = bits[tuple(idx)]
    return bits


# ------------------------------------------------------------------------------------------------
# Host utilities (delegated to NumPy).


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """The string ``repr`` of an array, spelled ``Array(...)``."""
    s = np.array_repr(np.asarray(creation.asarray(arr)), max_line_width, precision, suppress_small)
    return "Array" + s[len("array") :] if s.startswith("array") else s


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """The string form of an array's values."""
    return np.array_str(np.asarray(creation.asarray(a)), max_line_width, precision, suppress_small)


get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions


def _to_host(x):
    return np.asarray(x) if hasattr(x, "__array__") and not isinstance(x, np.ndarray) else x


def save(file, arr, allow_pickle: bool = True):
    """Save an array to a ``.npy`` file (via NumPy)."""
    return np.save(file, np.asarray(arr), allow_pickle=allow_pickle)


def savez(file, *args, **kwds):
    """Save several arrays into an uncompressed ``.npz`` file (via NumPy)."""
    return np.savez(file, *[_to_host(a) for a in args], **{k: _to_host(v) for k, v in kwds.items()})


def load(file, *args, **kwargs):
    """Load arrays from ``.npy``/``.npz`` files (via NumPy); a single array comes back as an Array."""
    out = np.load(file, *args, **kwargs)
    if type(out) is np.ndarray:
        if out.dtype == np.dtype("V2") or out.dtype.kind not in "biufc":
            return out
        return creation.asarray(out)
    return out


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0):
    """An array from a bytes-like buffer (via NumPy)."""
    return creation.asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromfile(*args, **kwargs):
    """An array from a file's data (via NumPy)."""
    return creation.asarray(np.fromfile(*args, **kwargs))


def fromiter(*args, **kwargs):
    """An array from an iterable (via NumPy)."""
    return creation.asarray(np.fromiter(*args, **kwargs))


def fromstring(string, dtype=float, count: int = -1, *, sep: str):
    """An array from text data (via NumPy)."""
    return creation.asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def from_dlpack(x, /, *, device=None, copy=None):
    """An array from an object exporting the DLPack protocol (via NumPy)."""
    del device
    return creation.asarray(np.from_dlpack(x), copy=copy)


ComplexWarning = np.exceptions.ComplexWarning


# ------------------------------------------------------------------------------------------------
# Extra ml_dtypes scalar types.

try:
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover
    _ml_dtypes = None

for _name in ("float6_e2m3fn", "float6_e3m2fn", "int1", "uint1"):
    if _ml_dtypes is not None and hasattr(_ml_dtypes, _name):
        globals()[_name] = _scalar_type(getattr(_ml_dtypes, _name), _name)
        __all__.append(_name)
del _name
