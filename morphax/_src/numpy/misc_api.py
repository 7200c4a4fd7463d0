"""Polynomials, window functions, vectorize/ufunc, bit packing and NumPy host utilities (printing,
save/load, from* constructors), plus a few extra scalar types."""

from __future__ import annotations

import functools
import importlib
import math
import re

import numpy as np

from morphax._src.control_flow.loops import fori_loop
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.core.trace import Tracer
from morphax._src.numpy import (
    creation,
    indexing,
    linalg,
    linalg_basic,
    manipulation,
    reductions,
    searching,
    ufuncs,
    util,
)
from morphax._src.numpy.scalar_types import _scalar_type
from morphax._src.prims import lax_api as L

__all__ = [
    "polyval", "polyadd", "polysub", "polymul", "polyder", "polyint", "polydiv", "poly", "polyfit",
    "roots", "bartlett", "blackman", "hamming", "hanning", "kaiser", "vectorize", "frompyfunc", "ufunc",
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
        vbase = linalg.inv(linalg_basic.dot(ufuncs.conjugate(lhs).T, lhs))
        vbase = ufuncs.divide(vbase, linalg_basic.outer(scale, scale))
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
# vectorize / ufunc.

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


_AT_INPLACE = (
    "Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace like np.ufunc.at(). "
    "Instead, you can pass inplace=False and capture the result; e.g. "
    "arr = jnp.add.at(arr, ind, val, inplace=False)"
)


class ufunc:
    """A universal function wrapping a scalar function of ``nin`` inputs and ``nout`` outputs, with
    ``reduce``/``accumulate``/``reduceat``/``outer``/``at`` for binary single-output ufuncs.

    ``call``, ``reduce``, ``accumulate``, ``at`` and ``reduceat`` optionally give faster
    implementations than the generic ones built from ``func`` (as ``jnp.add`` does with
    ``sum``, ``cumsum`` and a scatter-add)."""

    def __init__(
        self,
        func,
        /,
        nin: int,
        nout: int,
        *,
        name: str | None = None,
        nargs=None,
        identity=None,
        call=None,
        reduce=None,
        accumulate=None,
        at=None,
        reduceat=None,
    ):
        self._func = func
        self.nin = int(nin)
        self.nout = int(nout)
        self.nargs = int(nargs) if nargs is not None else self.nin
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self.__doc__ = getattr(func, "__doc__", None)
        self._call = call
        self._reduce = reduce
        self._accumulate = accumulate
        self._at = at
        self._reduceat = reduceat
        self._vectorized = None

    def __repr__(self):
        return f"<jnp.ufunc '{self.__name__}'>"

    def _key(self):
        return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, ufunc) and self._key() == other._key()

    def __call__(self, *args, out=None, where=None):
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        if len(args) != self.nin:
            raise TypeError(
                f"{self.__name__}() takes {self.nin} positional argument(s) but {len(args)} were given"
            )
        if self._call is not None:
            return self._call(*args)
        if self._vectorized is None:
            self._vectorized = vectorize(self._func)
        return self._vectorized(*args)

    def _check_binary(self, method):
        if self.nin != 2:
            raise ValueError(f"{method} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{method} only supported for functions returning a single value")

    def _result_dtype(self, *xs):
        """The dtype this ufunc gives for operands of the dtypes of `xs` (abstract evaluation)."""
        eval_shape = importlib.import_module("morphax._src.api").eval_shape
        avals = [get_aval(x) for x in xs]
        ones = [util.convert_element_type(creation.ones(()), v.dtype, v.weak_type) for v in avals]
        return eval_shape(self, *ones).dtype

    def _reduce_axis(self, a, axis, initial):
        n = _shape(a)[axis]
        items = [manipulation.squeeze(x, axis) for x in manipulation.split(a, n, axis=axis)] if n else []
        if initial is None:
            if not items:
                if self.identity is None:
                    raise ValueError("zero-size array to reduction operation with no identity")
                return creation.full(_shape(a)[:axis] + _shape(a)[axis + 1 :], self.identity, dtype=a.dtype)
            acc, items = items[0], items[1:]
        else:
            acc = creation.full(_shape(a)[:axis] + _shape(a)[axis + 1 :], initial, dtype=a.dtype)
        for x in items:
            acc = self(acc, x)
        return acc

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
        """Reduce ``a`` along ``axis`` by repeated application of this binary ufunc."""
        self._check_binary("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        util.check_arraylike(f"{self.__name__}.reduce", a)
        if self._reduce is not None:
            return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)
        if where is not None:
            raise NotImplementedError(f"where argument of {self.__name__}.reduce()")
        a = creation.asarray(a, dtype=dtype)
        nd = len(_shape(a))
        axes = tuple(range(nd)) if axis is None else util.canonicalize_axes(axis, nd)
        result = a
        for ax in sorted(axes, reverse=True):
            result = self._reduce_axis(result, ax, initial if ax == min(axes) else None)
        if keepdims:
            result = manipulation.reshape(
                result, tuple(1 if i in axes else s for i, s in enumerate(_shape(a)))
            )
        return result

    def accumulate(self, a, axis: int = 0, dtype=None, out=None):
        """Cumulative application of this binary ufunc along ``axis``."""
        self._check_binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        util.check_arraylike(f"{self.__name__}.accumulate", a)
        if self._accumulate is not None:
            return self._accumulate(a, axis=axis, dtype=dtype)
        a = creation.asarray(a, dtype=dtype)
        axis = util.canonicalize_axis(axis, len(_shape(a)))
        n = _shape(a)[axis]
        if n == 0:
            return a
        items = [manipulation.squeeze(x, axis) for x in manipulation.split(a, n, axis=axis)]
        acc = items[0]
        outs = [acc]
        for x in items[1:]:
            acc = self(acc, x)
            outs.append(acc)
        return manipulation.stack(outs, axis=axis)

    def outer(self, A, B, /):  # noqa: N803 - NumPy's names
        """Apply this binary ufunc to all pairs of elements of ``A`` and ``B``."""
        self._check_binary("outer")
        util.check_arraylike(f"{self.__name__}.outer", A, B)
        A, B = creation.asarray(A), creation.asarray(B)
        A = manipulation.reshape(A, _shape(A) + (1,) * len(_shape(B)))
        return self(A, B)

    def at(self, a, indices, b=None, /, *, inplace: bool = True):
        """A copy of ``a`` with ``a[indices] = ufunc(a[indices], b)`` applied unbuffered: an element
        named several times by ``indices`` is updated once per occurrence, in order (like
        ``np.ufunc.at``). JAX arrays are immutable, so ``inplace=False`` is required."""
        if inplace:
            raise NotImplementedError(_AT_INPLACE)
        if self.nout != 1:
            raise ValueError("at only supported for functions returning a single value")
        if (b is None) != (self.nin == 1):
            raise ValueError(
                f"{self.__name__}.at: {'no' if self.nin == 1 else 'a'} second operand b is needed "
                f"for a ufunc with nin={self.nin}"
            )
        args = () if b is None else (b,)
        util.check_arraylike(f"{self.__name__}.at", a, *args)
        if self._at is not None:
            return self._at(a, indices, *args)
        return _at_unbuffered(self, a, indices, *args)

    def reduceat(self, a, indices, axis: int = 0, dtype=None, out=None):
        """Reductions of the slices ``a[indices[i]:indices[i + 1]]`` along ``axis`` (the last one runs
        to the end; where ``indices[i] >= indices[i + 1]`` the result is ``a[indices[i]]``), as
        ``np.ufunc.reduceat``. Concrete out-of-range indices raise IndexError; traced ones clip.
        ``dtype`` sets the dtype the reduction runs in (NumPy's meaning)."""
        self._check_binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        util.check_arraylike(f"{self.__name__}.reduceat", a, indices)
        a = creation.asarray(a)
        indices = creation.asarray(indices)
        if len(_shape(a)) == 0:
            raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape={_shape(a)}")
        if len(_shape(indices)) != 1:
            raise ValueError(
                f"reduceat: indices must be one-dimensional, got indices.shape={_shape(indices)}"
            )
        if not _dtypes.issubdtype(indices.dtype, np.integer):
            raise TypeError(f"reduceat: indices must be integers, got dtype {indices.dtype}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        axis = util.canonicalize_axis(axis, len(_shape(a)))
        n = _shape(a)[axis]
        if _is_concrete(indices):
            host = np.asarray(indices)
            bad = host[(host < 0) | (host >= n)]
            if bad.size:
                raise IndexError(f"index {int(bad[0])} out-of-bounds in {self.__name__}.reduceat [0, {n})")
        a = util.convert_element_type(a, dtype if dtype is not None else self._result_dtype(a, a))
        x = manipulation.moveaxis(a, axis, 0)
        if _shape(indices)[0] == 0 or n == 0:
            if _shape(indices)[0]:
                raise IndexError(f"{self.__name__}.reduceat: indices into an empty axis")
            return manipulation.moveaxis(x[:0], 0, axis)
        starts = util.convert_element_type(indices, np.int32)
        ends = manipulation.concatenate([starts[1:], creation.full((1,), n, dtype=np.int32)])
        impl = self._reduceat if self._reduceat is not None else _reduceat_fold
        return manipulation.moveaxis(impl(self, x, starts, ends), 0, axis)


# ---- ufunc.at: scatter primitives ---------------------------------------------------------------


def _flat_positions(shape, indices):
    """The flat positions in an array of `shape` of the elements `x[indices]` selects, in the order
    `x[indices]` lists them (out-of-bounds entries get `size`, one past the end)."""
    size = math.prod(shape)
    ids = manipulation.reshape(creation.arange(size, dtype=np.int32), shape)
    return ids.at[indices].get(mode="fill", fill_value=size)


def _at_unbuffered(uf, a, indices, *args):
    """`ufunc.at` for any ufunc: rounds of gather, apply, scatter. The k-th occurrence of a position
    among the flattened `indices` is updated in round k, so repeated positions see every earlier
    update; the rounds run as one loop primitive (their count is the largest multiplicity when the
    indices are concrete, their number otherwise)."""
    a = creation.asarray(a)
    args = tuple(creation.asarray(b) for b in args)
    dtype = uf._result_dtype(a, *args)
    a = util.convert_element_type(a, dtype)
    pos = _flat_positions(_shape(a), indices)
    args = tuple(util.convert_element_type(manipulation.broadcast_to(b, _shape(pos)), dtype) for b in args)
    k = math.prod(_shape(pos))
    size = math.prod(_shape(a))
    if k == 0 or size == 0:
        return a
    pos = manipulation.ravel(pos)
    args = tuple(manipulation.ravel(b) for b in args)
    flat = manipulation.ravel(a)

    # Occurrence rank of each entry among the entries naming the same position (stable order).
    order = searching.argsort(pos, stable=True)
    sorted_pos = indexing.take(pos, order)
    iota = creation.arange(k, dtype=np.int32)
    run_start = ufuncs.where(
        manipulation.concatenate(
            [creation.ones((1,), bool), ufuncs.not_equal(sorted_pos[1:], sorted_pos[:-1])]
        ),
        iota,
        0,
    )
    rank_sorted = ufuncs.subtract(iota, L.cummax(run_start, axis=0))
    rank = creation.zeros((k,), np.int32).at[order].set(rank_sorted, unique_indices=True)
    rounds = int(np.max(np.asarray(rank))) + 1 if _is_concrete(rank) else k
    gather_pos = ufuncs.minimum(pos, size - 1)

    def one_round(r, flat):
        target = ufuncs.where(ufuncs.equal(rank, r), pos, size)  # other ranks: out of bounds, dropped
        new = uf(indexing.take(flat, gather_pos), *args)
        return flat.at[target].set(util.convert_element_type(new, dtype), mode="drop")

    flat = one_round(0, flat) if rounds == 1 else fori_loop(0, rounds, one_round, flat)
    return manipulation.reshape(flat, _shape(a))


def _scatter_at(method, promote=False, fallback=None):
    """`ufunc.at` as one scatter primitive (`x.at[indices].<method>(b)`), which combines repeated
    indices itself. `promote`: the result takes the ufunc's dtype (JAX's maximum/minimum); otherwise
    `a` keeps its dtype, booleans going through int32 as in JAX's add/multiply."""

    def at(a, indices, b):
        a, b = creation.asarray(a), creation.asarray(b)
        if promote:
            a, b = util.promote_dtypes(a, b)
            if a.dtype == np.bool_:
                return _at_unbuffered(fallback, a, indices, b)
        elif a.dtype == np.bool_:
            a32 = util.convert_element_type(a, np.int32)
            b32 = util.convert_element_type(ufuncs.not_equal(b, False), np.int32)
            out = getattr(a32.at[indices], method)(b32)
            return util.convert_element_type(out, np.bool_)
        return getattr(a.at[indices], method)(b)

    return at


# ---- ufunc.reduceat: segment reductions ---------------------------------------------------------


def _bcast_rows(v, x):
    """(m,) `v` reshaped to broadcast against (m, ...) `x`."""
    return manipulation.reshape(v, _shape(v) + (1,) * (len(_shape(x)) - 1))


def _reduceat_fold(uf, x, starts, ends):
    """Any binary ufunc (associative or not): a fold over the axis, as one loop primitive; segment i
    takes ``x[j]`` for ``starts[i] < j < ends[i]`` into its running value, in order."""
    n = _shape(x)[0]
    out = indexing.take(x, starts, axis=0, mode="clip")

    def body(j, out):
        inside = ufuncs.logical_and(ufuncs.less(starts, j), ufuncs.less(j, ends))
        row = manipulation.broadcast_to(indexing.take(x, manipulation.reshape(j, (1,)), axis=0), _shape(out))
        return ufuncs.where(_bcast_rows(inside, out), uf(out, row), out)

    return fori_loop(1, n, body, out) if n > 1 else out


def _reduceat_segments(uf, x, starts, ends):
    """Associative binary ufuncs: segment reductions over power-of-two blocks. Level l holds the
    reductions of every block ``x[j : j + 2**l]`` (built from level l-1 in one vectorized step);
    segment i, of length ``ends[i] - starts[i]`` (1 where that is not positive), combines the blocks
    of the binary digits of its length, left to right. log2(n) gathers per segment, no loop over
    elements, exact order of the operands (only the grouping differs from a left fold)."""
    n = _shape(x)[0]
    length = ufuncs.where(ufuncs.less(starts, ends), ufuncs.subtract(ends, starts), 1)
    levels = [x]
    while 2 ** len(levels) <= n:
        prev, half = levels[-1], 2 ** (len(levels) - 1)
        m = n - 2 * half + 1
        levels.append(uf(prev[:m], prev[half : half + m]))
    pos = starts
    acc = has = None
    for lvl in range(len(levels) - 1, -1, -1):
        width = 2**lvl
        bit = ufuncs.not_equal(ufuncs.bitwise_and(length, width), 0)
        block = indexing.take(levels[lvl], ufuncs.clip(pos, 0, n - width), axis=0)
        b = _bcast_rows(bit, block)
        if acc is None:
            acc, has = block, bit
        else:
            both = _bcast_rows(ufuncs.logical_and(bit, has), block)
            acc = ufuncs.where(both, uf(acc, block), ufuncs.where(b, block, acc))
            has = ufuncs.logical_or(has, bit)
        pos = ufuncs.add(pos, ufuncs.multiply(util.convert_element_type(bit, np.int32), width))
    return acc


def frompyfunc(func, /, nin: int, nout: int, *, identity=None):
    """Create a ``ufunc`` from an arbitrary (array-traceable) scalar function."""
    return ufunc(func, nin, nout, identity=identity)


# ---- The ufunc objects of morphax.numpy (add, multiply, ...) -------------------------------------


def _reduction(fn, takes_dtype=True):
    def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        kw = {"keepdims": keepdims, "where": where}
        if initial is not None:
            kw["initial"] = initial
        if takes_dtype:
            return fn(a, axis=axis, dtype=dtype, **kw)
        return fn(a if dtype is None else creation.asarray(a, dtype=dtype), axis=axis, **kw)

    return reduce


def _bool_reduction(fn):
    def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        if initial is not None:
            raise NotImplementedError("initial argument of a logical ufunc's reduce()")
        out = fn(a, axis=axis, keepdims=keepdims, where=where)
        return out if dtype is None else util.convert_element_type(out, dtype)

    return reduce


def _make_ufunc(name, nin, identity=None, reduce=None, accumulate=None, at=None, associative=True):
    fn = getattr(ufuncs, name)
    return ufunc(
        fn,
        nin,
        1,
        name=name,
        identity=identity,
        call=fn,
        reduce=reduce,
        accumulate=accumulate,
        at=at,
        reduceat=_reduceat_segments if (associative and nin == 2) else None,
    )


add = _make_ufunc("add", 2, 0, _reduction(reductions.sum), reductions.cumsum, _scatter_at("add"))
multiply = _make_ufunc(
    "multiply", 2, 1, _reduction(reductions.prod), reductions.cumprod, _scatter_at("multiply")
)
subtract = _make_ufunc("subtract", 2, at=_scatter_at("subtract"), associative=False)
maximum = _make_ufunc("maximum", 2, reduce=_reduction(reductions.max, takes_dtype=False))
minimum = _make_ufunc("minimum", 2, reduce=_reduction(reductions.min, takes_dtype=False))
maximum._at = _scatter_at("max", promote=True, fallback=maximum)
minimum._at = _scatter_at("min", promote=True, fallback=minimum)
logical_and = _make_ufunc("logical_and", 2, True, _bool_reduction(reductions.all))
logical_or = _make_ufunc("logical_or", 2, False, _bool_reduction(reductions.any))
logical_xor = _make_ufunc("logical_xor", 2, False)
bitwise_and = _make_ufunc("bitwise_and", 2, -1)
bitwise_or = _make_ufunc("bitwise_or", 2, 0)
bitwise_xor = _make_ufunc("bitwise_xor", 2, 0)
logaddexp = _make_ufunc("logaddexp", 2, -np.inf)
logaddexp2 = _make_ufunc("logaddexp2", 2, -np.inf)
negative = _make_ufunc("negative", 1, associative=False)

# The names morphax.numpy binds to these objects (after the plain functions of ufuncs.py).
UFUNC_OBJECTS = (
    "add", "multiply", "subtract", "maximum", "minimum", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2", "negative",
)  # fmt: skip


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
