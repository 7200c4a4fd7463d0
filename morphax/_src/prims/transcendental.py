"""Unary transcendental primitives: exp/log, trigonometric and hyperbolic, roots, special functions.

The ones JAX gives an ``accuracy`` param (exp, log, sin, sqrt, ...) carry it unchanged; NumPy has
a single implementation, so the reference ignores it. SciPy supplies erf/erfc/erf_inv/lgamma/
digamma/polygamma, computed in float32 for the 16-bit floats. `polygamma` exists so that digamma's
derivative (and so on) is itself differentiable. Rules are written with the lax functions of
`arithmetic.py` and `unary.py`, which this module imports.
"""

from __future__ import annotations

import enum
import math

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import aval_of
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.lazy_import import LazyModule
from morphax._src.core.values import make_array
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._ad import defjvp
from morphax._src.prims._operands import lax_binary_operands
from morphax._src.prims._spec import (
    BINARY_SHAPES,
    Case,
    TestSpec,
    binary_cases,
    random_array,
    unary_cases,
)
from morphax._src.prims.arithmetic import add, div, integer_pow, mul, square, sub
from morphax._src.prims.builders import (
    as_arrays,
    binary_elementwise,
    broadcasting_shape,
    check_class,
    concat_cases,
    elementwise_primitive,
    elementwise_unop,
    with_params,
)
from morphax._src.prims.compare import eq
from morphax._src.prims.conversion import convert_element_type, full_like
from morphax._src.prims.selection import select
from morphax._src.prims.unary import neg
from morphax._src.prims.xla_float32_log import log1p_f32

_sp = LazyModule("scipy.special")  # imported at first use, so `import morphax` stays fast

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
    "polygamma",
    "polygamma_p",
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
    "pow_p",
    "pow",
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


def _with_accuracy(name, fn, dtypes, cases=None, **spec_kw):
    """A primitive taking JAX's ``accuracy`` param; every test case passes ``accuracy=None``
    (`cases`, if given, replaces the generated unary cases)."""

    def impl(x, *, accuracy):
        return fn(x)

    def check(x, *, accuracy):
        _check_accuracy(name, accuracy)

    cases = with_params(cases or unary_cases(dtypes, **spec_kw), accuracy=None)
    prim = elementwise_unop(name, impl, dtypes, check=check, spec=TestSpec(cases=cases))
    # jnp binds these without `accuracy`, lax with it: the default makes both the same equation
    # (so CSE merges them); printed jaxprs hide it, as JAX's do.
    prim.param_defaults = {"accuracy": None}
    prim.print_hidden_defaults = {"accuracy": None}
    prim.ready_impl = fn
    return prim


def _plain(name, fn, dtypes, **spec_kw):
    return elementwise_unop(name, fn, dtypes, spec=TestSpec(cases=unary_cases(dtypes, **spec_kw)))


def _jvp(prim, partial):
    """A unary rule from ``partial(g, ans, x)``; the ``accuracy`` param leaves the derivative alone."""
    defjvp(prim, lambda g, ans, x, **params: partial(g, ans, x))


def _in_float32(fn):
    """Run `fn` in float32 for float16/bfloat16 (SciPy has no loops for them) and round back."""

    def impl(x):
        (x,) = as_arrays(x)
        if _dtypes.is_16bit_float(x.dtype):
            return np.asarray(fn(x.astype(np.float32))).astype(x.dtype)
        return np.asarray(fn(x)).astype(x.dtype)

    return impl


# ---------------------------------------------------------------------------------------------
# Exponentials and logarithms.


# NB: the references are NumPy's (nearly correctly rounded), not XLA's polynomials, so float32
# results can differ from JAX's in the last bit; the PRNG's normal sampler uses XLA's own log1p
# order (xla_float32_log.py) where JAX's bits depend on it.
def _exp2_stablehlo(ctx, x, **params):
    # exp(x * ln 2), as JAX lowers it (StableHLO has no exp2).
    ln2 = ctx.constant(np.log(2), x.dtype, x.shape)
    return [ctx.op1("stablehlo.exponential", [ctx.op1("stablehlo.multiply", [ln2, x], x)], x)]


exp_p = _with_accuracy("exp", np.exp, "inexact")
exp_p.stablehlo = hlo.elementwise("stablehlo.exponential")
exp2_p = _with_accuracy("exp2", np.exp2, "inexact")
exp2_p.stablehlo = _exp2_stablehlo
expm1_p = _with_accuracy("expm1", np.expm1, "inexact")
expm1_p.stablehlo = hlo.elementwise("stablehlo.exponential_minus_one")
log_p = _with_accuracy("log", np.log, "inexact", domain=(0.1, 5.0))
log_p.stablehlo = hlo.elementwise("stablehlo.log")
log1p_p = _with_accuracy("log1p", np.log1p, "inexact", domain=(-0.9, 5.0))
log1p_p.stablehlo = hlo.elementwise("stablehlo.log_plus_one")
tanh_p = _with_accuracy("tanh", np.tanh, "inexact")
tanh_p.stablehlo = hlo.elementwise("stablehlo.tanh")


def _logistic_impl(x):
    (x,) = as_arrays(x)
    if _dtypes.is_complex(x.dtype):
        return np.divide(1, np.add(1, np.exp(np.negative(x))))
    # expit never overflows: logistic(+-100) is exactly 1 and a tiny positive number. Narrow
    # floats go through float64 and round once (SciPy's float32 loop loses the subnormal tail).
    if x.dtype.itemsize < 8:
        return _sp.expit(x.astype(np.float64)).astype(x.dtype)
    return _sp.expit(x)


logistic_p = _with_accuracy(
    "logistic",
    _logistic_impl,
    "inexact",
    specials=(0.0, -0.0, 1.0, -1.0, 100.0, -100.0, np.inf, -np.inf, np.nan),
)


def _logistic_stablehlo(ctx, x, **params):
    # 1 / (1 + exp(-x)), as JAX lowers it (its results, bit for bit): XLA's own logistic differs
    # in the last bits, and on a TPU gives NaN for complex arguments of large negative real part
    # where this gives 0.
    one = ctx.constant(1, x.dtype, x.shape)
    e = ctx.op1("stablehlo.exponential", [ctx.op1("stablehlo.negate", [x], x)], x)
    return [ctx.op1("stablehlo.divide", [one, ctx.op1("stablehlo.add", [one, e], x)], x)]


logistic_p.stablehlo = _logistic_stablehlo


_jvp(exp_p, lambda g, ans, x: mul(g, ans))
_jvp(exp2_p, lambda g, ans, x: mul(g, mul(math.log(2.0), ans)))
_jvp(expm1_p, lambda g, ans, x: mul(g, add(ans, 1)))
_jvp(log_p, lambda g, ans, x: div(g, x))
_jvp(log1p_p, lambda g, ans, x: div(g, add(x, 1)))
# (g + g tanh) (1 - tanh) = g (1 - tanh**2).
_jvp(tanh_p, lambda g, ans, x: mul(add(g, mul(g, ans)), sub(1, ans)))
_jvp(logistic_p, lambda g, ans, x: mul(g, mul(ans, sub(1, ans))))


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
sin_p.stablehlo = hlo.elementwise("stablehlo.sine")
cos_p = _with_accuracy("cos", np.cos, "inexact")
cos_p.stablehlo = hlo.elementwise("stablehlo.cosine")
# Random points stay between the poles at +-pi/2 (the specials still cover the rest).
tan_p = _with_accuracy("tan", np.tan, "inexact", domain=(-1.3, 1.3))
tan_p.stablehlo = hlo.elementwise("stablehlo.tan")
asin_p = _plain("asin", np.arcsin, "inexact", domain=(-0.99, 0.99))
asin_p.stablehlo = hlo.elementwise("chlo.asin")
acos_p = _plain("acos", np.arccos, "inexact", domain=(-0.99, 0.99))
acos_p.stablehlo = hlo.elementwise("chlo.acos")
atan_p = _plain("atan", np.arctan, "inexact")
atan_p.stablehlo = hlo.elementwise("chlo.atan")
sinh_p = _plain("sinh", np.sinh, "inexact")
sinh_p.stablehlo = hlo.elementwise("chlo.sinh")
cosh_p = _plain("cosh", np.cosh, "inexact")
cosh_p.stablehlo = hlo.elementwise("chlo.cosh")
asinh_p = _plain("asinh", np.arcsinh, "inexact")
asinh_p.stablehlo = hlo.elementwise("chlo.asinh")
acosh_p = _plain("acosh", np.arccosh, "inexact", domain=(1.0, 5.0))
acosh_p.stablehlo = hlo.elementwise("chlo.acosh")
atanh_p = _plain("atanh", np.arctanh, "inexact", domain=(-0.99, 0.99))
atanh_p.stablehlo = hlo.elementwise("chlo.atanh")
_jvp(sin_p, lambda g, ans, x: mul(g, cos(x)))
_jvp(cos_p, lambda g, ans, x: neg(mul(g, sin(x))))
_jvp(tan_p, lambda g, ans, x: mul(g, add(1, square(ans))))
_jvp(asin_p, lambda g, ans, x: mul(g, rsqrt(sub(1, square(x)))))
_jvp(acos_p, lambda g, ans, x: mul(g, neg(rsqrt(sub(1, square(x))))))
_jvp(atan_p, lambda g, ans, x: div(g, add(1, square(x))))
_jvp(sinh_p, lambda g, ans, x: mul(g, cosh(x)))
_jvp(cosh_p, lambda g, ans, x: mul(g, sinh(x)))
_jvp(asinh_p, lambda g, ans, x: mul(g, rsqrt(add(square(x), 1))))
_jvp(acosh_p, lambda g, ans, x: mul(g, rsqrt(mul(sub(x, 1), add(x, 1)))))
_jvp(atanh_p, lambda g, ans, x: mul(integer_pow(add(1, x), -1), div(g, sub(1, x))))


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

# Real random operands are positive (the specials cover negatives, 0 and inf), so derivative
# checks on the spec's cases stay off the branch point; complex ones cover the whole plane.
_ROOT_CASES = concat_cases(unary_cases("float", domain=(0.1, 5.0)), unary_cases("complex"))
sqrt_p = _with_accuracy("sqrt", np.sqrt, "inexact", cases=_ROOT_CASES)
sqrt_p.stablehlo = hlo.elementwise("stablehlo.sqrt")
rsqrt_p = _with_accuracy("rsqrt", lambda x: np.divide(1, np.sqrt(x)), "inexact", cases=_ROOT_CASES)
rsqrt_p.stablehlo = hlo.elementwise("stablehlo.rsqrt")


def _cbrt_reference(x):
    # NumPy's float32 cbrt is vectorized differently per CPU (-27 -> -2.9999998 on some):
    # computing in float64 and rounding once gives the correctly rounded root on every machine.
    x = np.asarray(x)
    if x.dtype.itemsize < 8:
        return np.cbrt(x.astype(np.float64)).astype(x.dtype)
    return np.cbrt(x)


cbrt_p = _with_accuracy("cbrt", _cbrt_reference, "float")
cbrt_p.stablehlo = hlo.elementwise("stablehlo.cbrt")
_jvp(sqrt_p, lambda g, ans, x: mul(g, div(0.5, ans)))
_jvp(rsqrt_p, lambda g, ans, x: mul(g, mul(-0.5, div(ans, x))))
_jvp(cbrt_p, lambda g, ans, x: mul(g, mul(1.0 / 3.0, integer_pow(ans, -2))))


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

erf_p = _plain("erf", _in_float32(_sp.deferred("erf")), "float")
erf_p.stablehlo = hlo.elementwise("chlo.erf")
erfc_p = _plain("erfc", _in_float32(_sp.deferred("erfc")), "float")
erfc_p.stablehlo = hlo.elementwise("chlo.erfc")
# XLA's float32 ErfInv: Giles' single-precision polynomial ("Approximating the erfinv function",
# 2010) in w = -log1p(-x^2) (that log1p also in XLA's operation order), each Horner step one
# fused multiply-add. Matching it bit for bit makes random.normal reproduce JAX's numbers exactly.
_GILES_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)  # fmt: skip
_GILES_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)  # fmt: skip


def _erf_inv_giles_f32(x):
    f32 = np.float32
    x = np.asarray(x, f32)
    w = -log1p_f32(-x * x)
    small = w < f32(5)
    w = np.where(small, w - f32(2.5), np.sqrt(w) - f32(3)).astype(f32)
    p = np.where(small, f32(_GILES_SMALL[0]), f32(_GILES_LARGE[0])).astype(f32)
    w64 = w.astype(np.float64)
    for a, b in zip(_GILES_SMALL[1:], _GILES_LARGE[1:]):
        c = np.where(small, f32(a), f32(b)).astype(np.float64)
        # A float32 x float32 product is exact in float64, so this rounds once, like an fma.
        p = (c + p.astype(np.float64) * w64).astype(f32)
    out = p * x
    return np.where(np.abs(x) == f32(1), x * f32(np.inf), out)


def _erf_inv_impl(x):
    (x,) = as_arrays(x)
    if x.dtype == np.float64:
        return _sp.erfinv(x)
    return _erf_inv_giles_f32(x).astype(x.dtype)


erf_inv_p = elementwise_unop(
    "erf_inv",
    _erf_inv_impl,
    "float",
    spec=TestSpec(
        cases=concat_cases(
            unary_cases("float", domain=(-0.99, 0.99), specials=None),
            unary_cases("float", shapes=(), specials=_ERF_INV_SPECIALS),
        )
    ),
)
erf_inv_p.stablehlo = hlo.elementwise("chlo.erf_inv")
lgamma_p = _plain(
    "lgamma", _in_float32(_sp.deferred("gammaln")), "float", domain=(0.1, 5.0), specials=_SPECIAL_FN_SPECIALS
)
lgamma_p.stablehlo = hlo.elementwise("chlo.lgamma")
digamma_p = _plain(
    "digamma", _in_float32(_digamma), "float", domain=(0.1, 5.0), specials=_SPECIAL_FN_SPECIALS
)
digamma_p.stablehlo = hlo.elementwise("chlo.digamma")


def _polygamma_f(m, x):
    m, x = np.broadcast_arrays(m, x)
    valid = (m >= 0) & (m == np.floor(m))  # m must be a non-negative integer (else nan, as XLA)
    mi = np.where(valid, m, 0)
    with np.errstate(all="ignore"):
        out = np.where(mi == 0, _digamma(x), _sp.polygamma(mi.astype(np.int64), x))
    # At the poles (x a non-positive integer) XLA's Hurwitz zeta gives +inf for even m + 1 and nan
    # otherwise; SciPy gives +-inf throughout. m == 0 is digamma (nan at its poles).
    poles = (x <= 0) & (x == np.floor(x))
    odd_m = np.remainder(mi, 2) == 1
    out = np.where(poles & (mi > 0), np.where(odd_m, np.inf, np.nan), out)
    return np.where(valid, out, np.nan)


def _polygamma_impl(m, x):
    m, x = as_arrays(m, x)
    if _dtypes.is_16bit_float(x.dtype):
        return _polygamma_f(m.astype(np.float32), x.astype(np.float32)).astype(x.dtype)
    return _polygamma_f(m, x).astype(x.dtype)


def _polygamma_cases(rng):
    out = []
    for dt in ("float32", "float16", "bfloat16"):
        for sm, sx in (((), ()), ((), (3,)), ((2, 3), (2, 3)), ((2, 1), (1, 3)), ((2, 3), ()), ((0,), (0,))):
            m = rng.integers(0, 4, size=sm).astype(dt)
            x = random_array(rng, sx, dt, (0.1, 5.0))
            out.append(Case((m, x), {}, f"{dt}{list(sm)}{list(sx)}"))
    ms = np.array([0.0, 1.0, 2.0, 3.0, 4.0, -1.0, 0.5, np.nan], np.float32)
    xs = np.array([0.0, -0.0, -1.0, -2.0, -0.5, 0.5, 1.0, 2.5, 10.0, np.inf, np.nan], np.float32)
    mm, xx = np.meshgrid(ms, xs)
    out.append(Case((mm.ravel(), xx.ravel()), {}, "float32-specials"))
    return out


polygamma_p = binary_elementwise(
    "polygamma", _polygamma_impl, dtypes="float", spec=TestSpec(cases=_polygamma_cases)
)
polygamma_p.stablehlo = hlo.elementwise("chlo.polygamma")


def _polygamma_m_partial(g, ans, m, x):
    raise ValueError("polygamma: differentiation with respect to the order m is not supported.")


_jvp(erf_p, lambda g, ans, x: mul(2.0 / math.sqrt(math.pi), mul(g, exp(neg(square(x))))))
_jvp(erfc_p, lambda g, ans, x: mul(-2.0 / math.sqrt(math.pi), mul(g, exp(neg(square(x))))))
_jvp(erf_inv_p, lambda g, ans, x: mul(math.sqrt(math.pi) / 2.0, mul(g, exp(square(ans)))))
_jvp(lgamma_p, lambda g, ans, x: mul(g, digamma(x)))
_jvp(digamma_p, lambda g, ans, x: mul(g, polygamma(1.0, x)))
defjvp(polygamma_p, _polygamma_m_partial, lambda g, ans, m, x: mul(g, polygamma(add(m, 1), x)))
# The order m is an integer-valued float with no derivative, which the generated derivative matrix
# (it perturbs every float operand) cannot skip: the x-derivative is checked in
# tests/prims/test_elementwise_ad.py instead.
polygamma_p.test_spec.grad_order = 0


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


def polygamma(m, x):
    """Elementwise polygamma function of order `m` (a non-negative integer value, else nan) at `x`:
    the (m + 1)-th derivative of ``log Gamma``; ``polygamma(0, x)`` is digamma."""
    return polygamma_p.bind(*lax_binary_operands("polygamma", m, x))


def _pow_abstract_eval(x, y):
    check_class("pow", x.dtype, "inexact", "x (the base)")
    check_class("pow", y.dtype, "numeric", "y (the exponent)")
    if not (_dtypes.is_integer(y.dtype) or y.dtype == x.dtype):
        raise TypeError(
            "the first argument to pow must have an inexact dtype (float or complex), and the second "
            "argument must have an inexact or integer dtype, and two inexact dtypes must match, but got "
            f"{x.dtype.name} and {y.dtype.name} respectively."
        )
    return ShapedArray(broadcasting_shape("pow", x, y), x.dtype, x.weak_type and y.weak_type)


def _pow_stablehlo(ctx, x, y):
    # An integer exponent is converted to the base's dtype first, as XLA (and the reference) do.
    return hlo.elementwise("stablehlo.power")(ctx, x, ctx.convert(y, x.dtype))


def _pow_impl(x, y):
    x, y = as_arrays(x, y)
    # XLA converts an integer exponent to the base's dtype, then takes pow in that dtype.
    return np.power(x, y.astype(x.dtype))


def _pow_int_exponent_cases(rng):
    out = []
    for dt in ("float32", "bfloat16", "complex64"):
        for sx, sy in BINARY_SHAPES:
            x = random_array(rng, sx, dt)
            y = random_array(rng, sy, "int32", (-4, 4))
            out.append(Case((x, y), {}, f"{dt}{list(sx)}-int32{list(sy)}"))
    return out


pow_p = elementwise_primitive(
    "pow",
    _pow_impl,
    _pow_abstract_eval,
    TestSpec(
        cases=concat_cases(
            binary_cases("inexact", domain=(0.1, 3.0), rhs_domain=(-3.0, 3.0)),
            binary_cases("inexact", shapes=(((3,), (3,)),)),
            _pow_int_exponent_cases,
        )
    ),
)
pow_p.stablehlo = _pow_stablehlo


def _pow_x_partial(g, ans, x, y):
    y_dtype = aval_of(y).dtype
    if _dtypes.is_integer(y_dtype):
        # y * x**(y - 1), exactly 0 where y == 0 (JAX selects 0 there). The exponent becomes 0
        # there instead of -1, so the unused value is never inf and cannot leak nan into
        # higher derivatives.
        y_is_0 = convert_element_type(eq(y, 0), y_dtype)
        x_pow = pow(x, add(sub(y, 1), y_is_0))
        return mul(g, mul(convert_element_type(y, aval_of(x).dtype), x_pow))
    return mul(g, mul(y, pow(x, sub(y, 1))))


def _pow_y_partial(g, ans, x, y):
    # log(x) * x**y, taking log(1) = 0 where x == 0 (JAX's choice: 0 ** y has no y-derivative there).
    x_safe = select(eq(x, 0), full_like(x, 1), x)
    return mul(g, mul(log(x_safe), ans))


# An integer exponent has a float0 (symbolic Zero) tangent, so its partial is never called.
defjvp(pow_p, _pow_x_partial, _pow_y_partial)


def _pow_operands(x, y):
    # A Python int exponent stays an integer (JAX keeps pow(x, 2) an int exponent); other Python
    # scalars take the array operand's dtype, and a Python base of an integer exponent array
    # becomes the default inexact dtype of its kind.
    x_scalar, y_scalar = _dtypes.is_python_scalar(x), _dtypes.is_python_scalar(y)
    if y_scalar and not x_scalar:
        if type(y) is not int:
            y = make_array(y, get_aval(x).dtype, weak_type=True)
    elif x_scalar and not y_scalar:
        y_dtype = get_aval(y).dtype
        if _dtypes.is_inexact(y_dtype):
            x = make_array(x, y_dtype, weak_type=True)
        else:
            kind = _dtypes.default_complex_dtype() if type(x) is complex else _dtypes.default_float_dtype()
            x = make_array(x, kind, weak_type=True)
    return x, y


def pow(x, y):  # noqa: A001 - JAX's name
    """Elementwise ``x ** y`` for inexact ``x``; ``y`` has x's dtype or any integer dtype."""
    return pow_p.bind(*_pow_operands(x, y))
