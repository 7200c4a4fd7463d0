"""Unary transcendental primitives: exp/log, trigonometric and hyperbolic, roots, special functions.

The ones JAX gives an ``accuracy`` param (exp, log, sin, sqrt, ...) carry it unchanged; NumPy has
a single implementation, so the reference ignores it. SciPy supplies erf/erfc/erf_inv/lgamma/digamma,
computed in float32 for the 16-bit floats. Imports the core only.
"""

from __future__ import annotations

import enum

import numpy as np
import scipy.special as _sp

from morphax._src.core import dtypes as _dtypes
from morphax._src.prims._spec import TestSpec, unary_cases
from morphax._src.prims._helpers import as_arrays, concat_cases, elementwise_unop, with_params

__all__ = [
    "AccuracyMode",
    "Tolerance",
    "acos",
    "acos_p",
    "acosh",
    "acosh_p",
    "asin",
    "asin_p",
    "asinh",
    "asinh_p",
    "atan",
    "atan_p",
    "atanh",
    "atanh_p",
    "cbrt",
    "cbrt_p",
    "cos",
    "cos_p",
    "cosh",
    "cosh_p",
    "digamma",
    "digamma_p",
    "erf",
    "erf_inv",
    "erf_inv_p",
    "erf_p",
    "erfc",
    "erfc_p",
    "exp",
    "exp2",
    "exp2_p",
    "exp_p",
    "expm1",
    "expm1_p",
    "lgamma",
    "lgamma_p",
    "log",
    "log1p",
    "log1p_p",
    "log_p",
    "logistic",
    "logistic_p",
    "rsqrt",
    "rsqrt_p",
    "sin",
    "sin_p",
    "sinh",
    "sinh_p",
    "sqrt",
    "sqrt_p",
    "tan",
    "tan_p",
    "tanh",
    "tanh_p",
]


class Tolerance:
    """Requested accuracy of a unary function: two of atol, rtol, ulps (all non-negative)."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol = atol
        self.rtol = rtol
        self.ulps = ulps


class AccuracyMode(enum.Enum):
    HIGHEST = 1
    DEFAULT = 2


def _check_accuracy(name, accuracy):
    if accuracy is not None and not isinstance(accuracy, (Tolerance, AccuracyMode)):
        raise TypeError(
            f"{name}: accuracy must be None, a lax.Tolerance or a lax.AccuracyMode, got {accuracy!r}."
        )


def _with_accuracy(name, fn, dtypes, **spec_kw):
    """A primitive taking JAX's ``accuracy`` param; every test case passes ``accuracy=None``."""

    def impl(x, *, accuracy=None):
        return fn(x)

    def check(x, *, accuracy=None):
        _check_accuracy(name, accuracy)

    cases = with_params(unary_cases(dtypes, **spec_kw), accuracy=None)
    prim = elementwise_unop(name, impl, dtypes, check=check, spec=TestSpec(cases=cases))
    prim.print_hidden_defaults = {"accuracy": None}
    return prim


def _plain(name, fn, dtypes, **spec_kw):
    return elementwise_unop(name, fn, dtypes, spec=TestSpec(cases=unary_cases(dtypes, **spec_kw)))


def _in_float32(fn):
    """Run `fn` in float32 for float16/bfloat16 (SciPy has no loops for them) and round back."""

    def impl(x):
        (x,) = as_arrays(x)
        if x.dtype in (_dtypes.float16, _dtypes.bfloat16):
            return np.asarray(fn(x.astype(np.float32))).astype(x.dtype)
        return np.asarray(fn(x)).astype(x.dtype)

    return impl


# ---------------------------------------------------------------------------------------------
# Exponentials and logarithms.

exp_p = _with_accuracy("exp", np.exp, "inexact")
exp2_p = _with_accuracy("exp2", np.exp2, "inexact")
expm1_p = _with_accuracy("expm1", np.expm1, "inexact")
log_p = _with_accuracy("log", np.log, "inexact", domain=(0.1, 5.0))
log1p_p = _with_accuracy("log1p", np.log1p, "inexact", domain=(-0.9, 5.0))
tanh_p = _with_accuracy("tanh", np.tanh, "inexact")


def _logistic_impl(x):
    (x,) = as_arrays(x)
    if _dtypes.is_complex(x.dtype):
        return np.divide(1, np.add(1, np.exp(np.negative(x))))
    # expit never overflows: logistic(+-100) is exactly 1 and a tiny positive number.
    return _in_float32(_sp.expit)(x)


logistic_p = _with_accuracy(
    "logistic",
    _logistic_impl,
    "inexact",
    specials=(0.0, -0.0, 1.0, -1.0, 100.0, -100.0, np.inf, -np.inf, np.nan),
)


def exp(x, *, accuracy=None):
    """Elementwise ``e ** x``."""
    return exp_p.bind(x, accuracy=accuracy)


def exp2(x, *, accuracy=None):
    """Elementwise ``2 ** x``."""
    return exp2_p.bind(x, accuracy=accuracy)


def expm1(x, *, accuracy=None):
    """Elementwise ``e ** x - 1``, accurate near 0."""
    return expm1_p.bind(x, accuracy=accuracy)


def log(x, *, accuracy=None):
    """Elementwise natural logarithm."""
    return log_p.bind(x, accuracy=accuracy)


def log1p(x, *, accuracy=None):
    """Elementwise ``log(1 + x)``, accurate near 0."""
    return log1p_p.bind(x, accuracy=accuracy)


def tanh(x, *, accuracy=None):
    """Elementwise hyperbolic tangent."""
    return tanh_p.bind(x, accuracy=accuracy)


def logistic(x, *, accuracy=None):
    """Elementwise ``1 / (1 + exp(-x))``, finite for every finite x."""
    return logistic_p.bind(x, accuracy=accuracy)


# ---------------------------------------------------------------------------------------------
# Trigonometric and hyperbolic functions.

sin_p = _with_accuracy("sin", np.sin, "inexact")
cos_p = _with_accuracy("cos", np.cos, "inexact")
tan_p = _with_accuracy("tan", np.tan, "inexact")
asin_p = _plain("asin", np.arcsin, "inexact", domain=(-0.99, 0.99))
acos_p = _plain("acos", np.arccos, "inexact", domain=(-0.99, 0.99))
atan_p = _plain("atan", np.arctan, "inexact")
sinh_p = _plain("sinh", np.sinh, "inexact")
cosh_p = _plain("cosh", np.cosh, "inexact")
asinh_p = _plain("asinh", np.arcsinh, "inexact")
acosh_p = _plain("acosh", np.arccosh, "inexact", domain=(1.0, 5.0))
atanh_p = _plain("atanh", np.arctanh, "inexact", domain=(-0.99, 0.99))


def sin(x, *, accuracy=None):
    """Elementwise sine."""
    return sin_p.bind(x, accuracy=accuracy)


def cos(x, *, accuracy=None):
    """Elementwise cosine."""
    return cos_p.bind(x, accuracy=accuracy)


def tan(x, accuracy=None):
    """Elementwise tangent (``accuracy`` is positional here, as in JAX)."""
    return tan_p.bind(x, accuracy=accuracy)


def asin(x):
    """Elementwise arc sine."""
    return asin_p.bind(x)


def acos(x):
    """Elementwise arc cosine."""
    return acos_p.bind(x)


def atan(x):
    """Elementwise arc tangent."""
    return atan_p.bind(x)


def sinh(x):
    """Elementwise hyperbolic sine."""
    return sinh_p.bind(x)


def cosh(x):
    """Elementwise hyperbolic cosine."""
    return cosh_p.bind(x)


def asinh(x):
    """Elementwise inverse hyperbolic sine."""
    return asinh_p.bind(x)


def acosh(x):
    """Elementwise inverse hyperbolic cosine."""
    return acosh_p.bind(x)


def atanh(x):
    """Elementwise inverse hyperbolic tangent."""
    return atanh_p.bind(x)


# ---------------------------------------------------------------------------------------------
# Roots.

sqrt_p = _with_accuracy("sqrt", np.sqrt, "inexact")
rsqrt_p = _with_accuracy("rsqrt", lambda x: np.divide(1, np.sqrt(x)), "inexact")
cbrt_p = _with_accuracy("cbrt", np.cbrt, "float")


def sqrt(x, *, accuracy=None):
    """Elementwise square root."""
    return sqrt_p.bind(x, accuracy=accuracy)


def rsqrt(x, *, accuracy=None):
    """Elementwise ``1 / sqrt(x)``."""
    return rsqrt_p.bind(x, accuracy=accuracy)


def cbrt(x, *, accuracy=None):
    """Elementwise real cube root (floating dtypes only; negative inputs give negative roots)."""
    return cbrt_p.bind(x, accuracy=accuracy)


# ---------------------------------------------------------------------------------------------
# Special functions (floating dtypes only).


def _digamma(x):
    out = _sp.psi(x)
    # XLA returns nan at the poles (0 and the negative integers); SciPy gives -inf at 0.
    poles = (x <= 0) & (x == np.floor(x))
    return np.where(poles, np.nan, out)


_SPECIAL_FN_SPECIALS = (0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, -2.5, np.inf, -np.inf, np.nan, 1e6)
_ERF_INV_SPECIALS = (0.0, -0.0, 0.5, -0.5, 0.999, 1.0, -1.0, 1.5, np.inf, np.nan)

erf_p = _plain("erf", _in_float32(_sp.erf), "float")
erfc_p = _plain("erfc", _in_float32(_sp.erfc), "float")
erf_inv_p = elementwise_unop(
    "erf_inv",
    _in_float32(_sp.erfinv),
    "float",
    spec=TestSpec(
        cases=concat_cases(
            unary_cases("float", domain=(-0.99, 0.99), specials=None),
            unary_cases("float", shapes=(), specials=_ERF_INV_SPECIALS),
        )
    ),
)
lgamma_p = _plain(
    "lgamma", _in_float32(_sp.gammaln), "float", domain=(0.1, 5.0), specials=_SPECIAL_FN_SPECIALS
)
digamma_p = _plain(
    "digamma", _in_float32(_digamma), "float", domain=(0.1, 5.0), specials=_SPECIAL_FN_SPECIALS
)


def erf(x):
    """Elementwise error function."""
    return erf_p.bind(x)


def erfc(x):
    """Elementwise complementary error function ``1 - erf(x)``."""
    return erfc_p.bind(x)


def erf_inv(x):
    """Elementwise inverse error function (+-inf at +-1, nan outside [-1, 1])."""
    return erf_inv_p.bind(x)


def lgamma(x):
    """Elementwise ``log |Gamma(x)|``."""
    return lgamma_p.bind(x)


def digamma(x):
    """Elementwise digamma function (nan at 0 and the negative integers)."""
    return digamma_p.bind(x)
