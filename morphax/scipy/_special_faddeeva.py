"""The Faddeeva function and its real relatives for `morphax.scipy.special`: wofz (w(z) =
exp(-z^2) erfc(-iz)), erfcx (exp(x^2) erfc(x), real or complex) and Dawson's integral dawsn.
Private: import from `morphax.scipy.special`.

wofz is Weideman's (1994) rational approximation with N = 32 terms in the upper half-plane,
reflected to the lower one by w(-z) = 2 exp(-z^2) - w(z); the real erfcx is exp(x^2) erfc(x)
until exp(x^2) would overflow and its asymptotic series beyond; dawsn is Cody, Paciorek and
Thacher's (1970) rational approximations on three ranges of |x|. These are JAX's algorithms, and
all three differentiate by their closed-form derivatives (custom JVPs), as in JAX.
"""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax.scipy._special_gamma import _const, _inexact, _real_only

_TWO_OVER_SQRT_PI = 2.0 / np.sqrt(np.pi)

# Weideman's L = sqrt(N / sqrt(2)) for N = 32, and the coefficients of his degree-31 polynomial in
# Z = (L + iz) / (L - iz), highest degree first: w(z) = 2 p(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz)).
_WEIDEMAN_L = 4.7568284600108841
_WEIDEMAN_COEFS = np.array([
    -1.3034426067909105e-12, 3.7411838373738471e-12, 8.030427700497756e-12, -2.1543593557490879e-11,
    -5.5442449963237932e-11, 1.165824698850374e-10, 4.1537441121999766e-10, -5.2310202114920615e-10,
    -3.2080151339721323e-09, 8.1248864216535907e-10, 2.3797556530014025e-08, 2.2930438438915445e-08,
    -1.4813078929137642e-07, -4.1840763750512053e-07, 4.2558331397138446e-07, 4.4015317312832251e-06,
    6.8210319443575151e-06, -2.1409619201999998e-05, -0.00013075449254579421, -0.00024532980270038237,
    0.00039259136070109705, 0.0045195411053493093, 0.019006155784845501, 0.057304403529837282,
    0.14060716226893755, 0.29544451071508743, 0.54601397206393376, 0.9019254893648001,
    1.3455441692345449, 1.8256696296324815, 2.2635372999002676, 2.5722534081245696,
])  # fmt: skip


def _weideman(z):
    """w(z) for Im z >= 0."""
    iz = lax.complex(-lax.imag(z), lax.real(z))
    denominator = _WEIDEMAN_L - iz
    big_z = (_WEIDEMAN_L + iz) / denominator
    p = jnp.polyval(jnp.asarray(_WEIDEMAN_COEFS, dtype=z.dtype), big_z)
    return 2 * p / (denominator * denominator) + (1 / np.sqrt(np.pi)) / denominator


@morphax.custom_jvp
def _faddeeva(z):
    upper = lax.imag(z) >= 0
    reflected = jnp.where(upper, z, -z)
    w_upper = _weideman(reflected)
    return jnp.where(upper, w_upper, 2 * lax.exp(-(z * z)) - w_upper)


# w'(z) = -2 z w(z) + 2i / sqrt(pi)
_faddeeva.defjvps(lambda g, ans, z: g * (-2 * z * ans + 1j * _TWO_OVER_SQRT_PI))


def wofz(z):
    """The Faddeeva function w(z) = exp(-z^2) erfc(-iz); real input is promoted to complex."""
    (z,) = _inexact("wofz", z)
    z = z.astype(jnp.result_type(z, np.complex64))
    return _faddeeva(z)


# The asymptotic series of erfcx(x) sqrt(pi) x in t = 1/x^2: sum_k (-1)^k (2k - 1)!! / 2^k t^k,
# highest degree first (the last `nterms` are used).
_ERFCX_ASYMPTOTIC = [7918.06640625, -1055.7421875, 162.421875, -29.53125, 6.5625, -1.875, 0.75, -0.5, 1.0]


def _erfcx_real(x):
    # The first omitted term at the switch point (sqrt(log(max))) is ~1e-21 with 9 terms in
    # float64 and ~5e-9 with 5 in float32: both below the dtype's epsilon.
    nterms = 9 if x.dtype == np.float64 else 5
    large = x > np.sqrt(np.log(np.finfo(x.dtype).max))
    safe = jnp.where(large, _const(x, 1.0), x)
    direct = lax.exp(safe * safe) * lax.erfc(safe)
    t = 1 / (x * x)
    asymptotic = jnp.polyval(np.array(_ERFCX_ASYMPTOTIC[-nterms:], x.dtype), t) / (x * np.sqrt(np.pi))
    return jnp.where(large, asymptotic, direct)


@morphax.custom_jvp
def _erfcx(x):
    if x.dtype in (np.float32, np.float64):
        return _erfcx_real(x)
    return _erfcx_real(x.astype(np.float32)).astype(x.dtype)  # half precisions, via float32


_erfcx.defjvps(lambda g, ans, x: g * (2 * x * ans - _TWO_OVER_SQRT_PI))


def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x), which neither overflows nor
    underflows for large x; complex x goes through the Faddeeva function, erfcx(z) = w(iz)."""
    (x,) = _inexact("erfcx", x)
    if jnp.iscomplexobj(x):
        return _faddeeva(lax.complex(-lax.imag(x), lax.real(x)))
    return _erfcx(x)


# Cody, Paciorek and Thacher's rational approximations, highest degree first: dawsn(x) =
# x P(x^2) / Q(x^2) on [0, 3.25), and 0.5/x (1 + t P(t) / Q(t)) with t = 1/x^2 on [3.25, 6.25)
# and [6.25, inf).
_DAWSN_SMALL_P = [1.13681498971755972054e-11, 8.49262267667473811108e-10, 1.94434204175553054283e-8,
                  9.53151741254484363489e-7, 3.07828309874913200438e-6, 3.52513368520288738649e-4,
                  -8.50149846724410912031e-4, 4.22618223005546594270e-2, -9.17480371773452345351e-2,
                  9.99999999999999994612e-1]  # fmt: skip
_DAWSN_SMALL_Q = [2.40372073066762605484e-11, 1.48864681368493396752e-9, 5.21265281010541664570e-8,
                  1.27258478273186970203e-6, 2.32490249820789513991e-5, 3.25524741826057911661e-4,
                  3.48805814657162590916e-3, 2.79448531198828973716e-2, 1.58874241960120565368e-1,
                  5.74918629489320327824e-1, 1.00000000000000000539e0]  # fmt: skip
_DAWSN_MIDDLE_P = [5.08955156417900903354e-1, -2.44754418142697847934e-1, 9.41512335303534411857e-2,
                   -2.18711255142039025206e-2, 3.66207612329569181322e-3, -4.23209114460388756528e-4,
                   3.59641304793896631888e-5, -2.14640351719968974225e-6, 9.10010780076391431042e-8,
                   -2.40274520828250956942e-9, 3.59233385440928410398e-11]  # fmt: skip
_DAWSN_MIDDLE_Q = [1.00000000000000000000e0, -6.31839869873368190192e-1, 2.36706788228248691528e-1,
                   -5.31806367003223277662e-2, 8.48041718586295374409e-3, -9.47996768486665330168e-4,
                   7.81025592944552338085e-5, -4.55875153252442634831e-6, 1.89100358111421846170e-7,
                   -4.91324691331920606875e-9, 7.18466403235734541950e-11]  # fmt: skip
_DAWSN_LARGE_P = [-5.90592860534773254987e-1, 6.29235242724368800674e-1, -1.72858975380388136411e-1,
                  1.64837047825189632310e-2, -4.86827613020462700845e-4]  # fmt: skip
_DAWSN_LARGE_Q = [1.00000000000000000000e0, -2.69820057197544900361e0, 1.73270799045947845857e0,
                  -3.93708582281939493482e-1, 3.44278924041233391079e-2, -9.73655226040941223894e-4]  # fmt: skip


def _dawsn_real(x):
    coef = lambda c: np.array(c, x.dtype)  # noqa: E731
    ax = jnp.abs(x)
    small, middle = ax < 3.25, (ax >= 3.25) & (ax < 6.25)
    # Each range is evaluated at a harmless stand-in outside itself, so that a polynomial that
    # overflows there (inf / inf) leaves no nan behind in the gradient or the select.
    one = _const(x, 1.0)
    xs = jnp.where(small, ax, one)
    small_value = xs * jnp.polyval(coef(_DAWSN_SMALL_P), xs * xs) / jnp.polyval(coef(_DAWSN_SMALL_Q), xs * xs)

    def tail(in_range, p, q):
        xt = jnp.where(in_range, ax, one)
        t = 1 / (xt * xt)
        return (0.5 / xt) * (1 + t * jnp.polyval(coef(p), t) / jnp.polyval(coef(q), t))

    middle_value = tail(middle, _DAWSN_MIDDLE_P, _DAWSN_MIDDLE_Q)
    large_value = tail(ax >= 6.25, _DAWSN_LARGE_P, _DAWSN_LARGE_Q)
    # dawsn is odd; sign(0) = 0 is right since dawsn(0) = 0.
    return jnp.sign(x) * jnp.where(small, small_value, jnp.where(middle, middle_value, large_value))


@morphax.custom_jvp
def _dawsn(x):
    if x.dtype in (np.float32, np.float64):
        return _dawsn_real(x)
    return _dawsn_real(x.astype(np.float32)).astype(x.dtype)


_dawsn.defjvps(lambda g, ans, x: g * (1 - 2 * x * ans))


def dawsn(x):
    """Dawson's integral exp(-x^2) * integral_0^x exp(t^2) dt (real x)."""
    (x,) = _inexact("dawsn", x)
    _real_only("dawsn", x)
    return _dawsn(x)
