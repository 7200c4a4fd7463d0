"""The sine/cosine and Fresnel integrals of `morphax.scipy.special`: sici (Si(x) = integral_0^x
sin t / t dt and Ci(x) = gamma + log x + integral_0^x (cos t - 1) / t dt) and fresnel (S(x), C(x)
= integral_0^x sin, cos(pi t^2 / 2) dt). Private: import from `morphax.scipy.special`.

Both are Cephes' (sici.c; fresnl.c, with the single-precision fresnlf coefficients in float32),
as in JAX: rational approximations near 0, the auxiliary functions f and g times sin and cos
further out, and the leading asymptotic term far out. Both differentiate by their integrands
(custom JVPs, as in JAX).
"""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax.scipy._special_gamma import _const, _inexact

# Cephes' sici.c, highest degree first: Si = x SN(x^2)/SD(x^2) and
# Ci = gamma + log x + x^2 CN(x^2)/CD(x^2) for x <= 4; the auxiliary f = FN(z)/(x FD(z)) and
# g = z GN(z)/GD(z) with z = 1/x^2 on (4, 8] and (8, inf).
_SI_N = [-8.39167827910303881427e-11, 4.62591714427012837309e-8, -9.75759303843632795789e-6,
         9.76945438170435310816e-4, -4.13470316229406538752e-2, 1.00000000000000000302e0]  # fmt: skip
_SI_D = [2.03269266195951942049e-12, 1.27997891179943299903e-9, 4.41827842801218905784e-7,
         9.96412122043875552487e-5, 1.42085239326149893930e-2, 9.99999999999999996984e-1]  # fmt: skip
_CI_N = [2.02524002389102268789e-11, -1.35249504915790756375e-8, 3.59325051419993077021e-6,
         -4.74007206873407909465e-4, 2.89159652607555242092e-2, -1.00000000000000000080e0]  # fmt: skip
_CI_D = [4.07746040061880559506e-12, 3.06780997581887812692e-9, 1.23210355685883423679e-6,
         3.17442024775032769882e-4, 5.10028056236446052392e-2, 4.00000000000000000080e0]  # fmt: skip
_F4_N = [4.23612862892216586994e0, 5.45937717161812843388e0, 1.62083287701538329132e0,
         1.67006611831323023771e-1, 6.81020132472518137426e-3, 1.08936580650328664411e-4,
         5.48900223421373614008e-7]  # fmt: skip
_F4_D = [1.0, 8.16496634205391016773e0, 7.30828822505564552187e0, 1.86792257950184183883e0,
         1.78792052963149907262e-1, 7.01710668322789753610e-3, 1.10034357153915731354e-4,
         5.48900252756255700982e-7]  # fmt: skip
_G4_N = [8.71001698973114191777e-2, 6.11379109952219284151e-1, 3.97180296392337498885e-1,
         7.48527737628469092119e-2, 5.38868681462177273157e-3, 1.61999794598934024525e-4,
         1.97963874140963632189e-6, 7.82579040744090311069e-9]  # fmt: skip
_G4_D = [1.0, 1.64402202413355338886e0, 6.66296701268987968381e-1, 9.88771761277688796203e-2,
         6.22396345441768420760e-3, 1.73221081474177119497e-4, 2.02659182086343991969e-6,
         7.82579218933534490868e-9]  # fmt: skip
_F8_N = [4.55880873470465315206e-1, 7.13715274100146711374e-1, 1.60300158222319456320e-1,
         1.16064229408124407915e-2, 3.49556442447859055605e-4, 4.86215430826454749482e-6,
         3.20092790091004902806e-8, 9.41779576128512936592e-11, 9.70507110881952024631e-14]  # fmt: skip
_F8_D = [1.0, 9.17463611873684053703e-1, 1.78685545332074536321e-1, 1.22253594771971293032e-2,
         3.58696481881851580297e-4, 4.92435064317881464393e-6, 3.21956939101046018377e-8,
         9.43720590350276732376e-11, 9.70507110881952025725e-14]  # fmt: skip
_G8_N = [6.97359953443276214934e-1, 3.30410979305632063225e-1, 3.84878767649974295920e-2,
         1.71718239052347903558e-3, 3.48941165502279436777e-5, 3.47131167084116673800e-7,
         1.70404452782044526189e-9, 3.85945925430276600453e-12, 3.14040098946363334640e-15]  # fmt: skip
_G8_D = [1.0, 1.68548898811011640017e0, 4.87852258695304967486e-1, 4.67913194259625806320e-2,
         1.90284426674399523638e-3, 3.68475504442561108162e-5, 3.57043223443740838771e-7,
         1.72693748966316146736e-9, 3.87830166023954706752e-12, 3.14040098946363335242e-15]  # fmt: skip


def _ratio(p, q, t):
    return jnp.polyval(np.array(p, t.dtype), t) / jnp.polyval(np.array(q, t.dtype), t)


def _sici_nonnegative(x):
    """(Si, Ci) for x >= 0 (nan passes through)."""
    near = x <= 4
    xs = jnp.where(near & (x > 0), x, _const(x, 1.0))
    t = xs * xs
    si_near = xs * _ratio(_SI_N, _SI_D, t)
    ci_near = np.euler_gamma + jnp.log(xs) + t * _ratio(_CI_N, _CI_D, t)
    si_near = jnp.where(x == 0, _const(x, 0.0), si_near)
    ci_near = jnp.where(x == 0, _const(x, -np.inf), ci_near)

    # Si = pi/2 - f cos x - g sin x and Ci = f sin x - g cos x; beyond 1e9 f ~ 1/x and g ~ 0.
    middle = (x > 4) & (x <= 1e9)
    xm = jnp.where(middle, x, _const(x, 5.0))
    z = 1 / (xm * xm)
    f = jnp.where(xm < 8, _ratio(_F4_N, _F4_D, z), _ratio(_F8_N, _F8_D, z)) / xm
    g = z * jnp.where(xm < 8, _ratio(_G4_N, _G4_D, z), _ratio(_G8_N, _G8_D, z))
    s, c = jnp.sin(x), jnp.cos(x)
    si_far = np.pi / 2 - jnp.where(middle, f * c + g * s, c / x)
    ci_far = jnp.where(middle, f * s - g * c, s / x)
    si_far = jnp.where(x == np.inf, _const(x, np.pi / 2), si_far)
    ci_far = jnp.where(x == np.inf, _const(x, 0.0), ci_far)
    return jnp.where(near, si_near, si_far), jnp.where(near, ci_near, ci_far)


@morphax.custom_jvp
def _sici(x):
    si, ci = _sici_nonnegative(jnp.abs(x))
    # Si is odd; Ci(-x) is taken as Ci(|x|) (the real part of the principal branch), nan at -inf.
    return jnp.sign(x) * si, jnp.where(x == -np.inf, _const(x, np.nan), ci)


@_sici.defjvp
def _sici_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return _sici(x), (jnp.sinc(x / np.pi) * x_dot, jnp.cos(x) / x * x_dot)


def sici(x):
    """The sine and cosine integrals (Si(x), Ci(x)) of real x."""
    (x,) = _inexact("sici", x)
    if jnp.iscomplexobj(x):
        raise ValueError(f"Argument `x` to sici must be real-valued. Got dtype {x.dtype}.")
    return _sici(x)


# Cephes' fresnl.c (float64) and fresnlf (float32), highest degree first: S = x^3 SN(x^4)/SD(x^4)
# and C = x CN(x^4)/CD(x^4) for x^2 < 2.5625; the auxiliary f = 1 - u FN(u)/FD(u) and
# g = t GN(u)/GD(u), t = 1/(pi x^2), u = t^2, up to x = 36974; the float32 set has no
# denominators.
_FRESNEL64 = dict(
    sn=[-2.99181919401019853726e3, 7.08840045257738576863e5, -6.29741486205862506537e7,
        2.54890880573376359104e9, -4.42979518059697779103e10, 3.18016297876567817986e11],
    sd=[1.0, 2.81376268889994315696e2, 4.55847810806532581675e4, 5.17343888770096400730e6,
        4.19320245898111231129e8, 2.24411795645340920940e10, 6.07366389490084639049e11],
    cn=[-4.98843114573573548651e-8, 9.50428062829859605134e-6, -6.45191435683965050962e-4,
        1.88843319396703850064e-2, -2.05525900955013891793e-1, 9.99999999999999998822e-1],
    cd=[3.99982968972495980367e-12, 9.15439215774657478799e-10, 1.25001862479598821474e-7,
        1.22262789024179030997e-5, 8.68029542941784300606e-4, 4.12142090722199792936e-2,
        1.00000000000000000118e0],
    fn=[4.21543555043677546506e-1, 1.43407919780758885261e-1, 1.15220955073585758835e-2,
        3.45017939782574027900e-4, 4.63613749287867322088e-6, 3.05568983790257605827e-8,
        1.02304514164907233465e-10, 1.72010743268161828879e-13, 1.34283276233062758925e-16,
        3.76329711269987889006e-20],
    fd=[1.0, 7.51586398353378947175e-1, 1.16888925859191382142e-1, 6.44051526508858611005e-3,
        1.55934409164153020873e-4, 1.84627567348930545870e-6, 1.12699224763999035261e-8,
        3.60140029589371370404e-11, 5.88754533621578410010e-14, 4.52001434074129701496e-17,
        1.25443237090011264384e-20],
    gn=[5.04442073643383265887e-1, 1.97102833525523411709e-1, 1.87648584092575249293e-2,
        6.84079380915393090172e-4, 1.15138826111884280931e-5, 9.82852443688422223854e-8,
        4.45344415861750144738e-10, 1.08268041139020870318e-12, 1.37555460633261799868e-15,
        8.36354435630677421531e-19, 1.86958710162783235106e-22],
    gd=[1.0, 1.47495759925128324529e0, 3.37748989120019970451e-1, 2.53603741420338795122e-2,
        8.14679107184306179049e-4, 1.27545075667729118702e-5, 1.04314589657571990585e-7,
        4.60680728146520428211e-10, 1.10273215066240270757e-12, 1.38796531259578871258e-15,
        8.39158816283118707363e-19, 1.86958710162783236342e-22],
)  # fmt: skip
_FRESNEL32 = dict(
    sn=[1.647629463788700e-9, -1.522754752581096e-7, 8.424748808502400e-6, -3.120693124703272e-4,
        7.244727626597022e-3, -9.228055941124598e-2, 5.235987735681432e-1],
    cn=[1.416802502367354e-8, -1.157231412229871e-6, 5.387223446683264e-5, -1.604381798862293e-3,
        2.818489036795073e-2, -2.467398198317899e-1, 9.999999760004487e-1],
    fn=[-1.903009855649792e12, 1.355942388050252e11, -4.158143148511033e9, 7.343848463587323e7,
        -8.732356681548485e5, 8.560515466275470e3, -1.032877601091159e2, 2.999401847870011e0],
    gn=[-1.860843997624650e11, 1.278350673393208e10, -3.779387713202229e8, 6.492611570598858e6,
        -7.787789623358162e4, 8.602931494734327e2, -1.493439396592284e1, 9.999841934744914e-1],
)  # fmt: skip


def _sin_cos_half_pi_square(x):
    """sin(pi x^2 / 2) and cos(pi x^2 / 2) without the rounding error of forming x^2 first: with
    s = x mod 2, x^2 / 2 = s (x - s/2) mod 2 (SciPy's sinpi/cospi reduction)."""
    x = jnp.abs(x)
    s = jnp.fmod(x, 2.0)
    r = jnp.fmod(s * (x - s / 2), 2.0)
    sin = jnp.where(
        r < 0.5, jnp.sin(np.pi * r), jnp.where(r > 1.5, jnp.sin(np.pi * (r - 2)), -jnp.sin(np.pi * (r - 1)))
    )
    cos = jnp.where(
        r == 0.5, _const(x, 0.0), jnp.where(r < 1, -jnp.sin(np.pi * (r - 0.5)), jnp.sin(np.pi * (r - 1.5)))
    )
    return sin, cos


def _fresnel_real(xx):
    double = xx.dtype == np.float64
    c = _FRESNEL64 if double else _FRESNEL32

    def poly(name, t):
        return jnp.polyval(np.array(c[name], xx.dtype), t)

    x = jnp.abs(xx)
    small = x * x < 2.5625
    xs = jnp.where(small, x, _const(x, 1.0))
    t4 = xs**4
    s_small = xs**3 * poly("sn", t4) / (poly("sd", t4) if double else 1)
    c_small = xs * poly("cn", t4) / (poly("cd", t4) if double else 1)

    sin, cos = _sin_cos_half_pi_square(x)
    xo = jnp.where(small | ~jnp.isfinite(x), _const(x, 2.0), x)
    t = 1 / (np.pi * xo * xo)
    u = t * t
    f = 1 - u * poly("fn", u) / (poly("fd", u) if double else 1)
    g = t * poly("gn", u) / (poly("gd", u) if double else 1)
    s_other = 0.5 - (f * cos + g * sin) / (np.pi * xo)
    c_other = 0.5 + (f * sin - g * cos) / (np.pi * xo)
    # Beyond 36974 the auxiliary functions are 1 and 1/(pi x^2) to the precision; float32 Cephes
    # returns the limit 1/2 there.
    if double:
        s_large = 0.5 - cos / (np.pi * xo)
        c_large = 0.5 + sin / (np.pi * xo)
    else:
        s_large = c_large = _const(x, 0.5)
    large = x > 36974.0
    infinite = jnp.isinf(x)
    s = jnp.where(infinite, 0.5, jnp.where(small, s_small, jnp.where(large, s_large, s_other)))
    cc = jnp.where(infinite, 0.5, jnp.where(small, c_small, jnp.where(large, c_large, c_other)))
    sign = jnp.where(xx < 0, -1.0, 1.0).astype(xx.dtype)
    return jnp.where(jnp.isnan(xx), xx, sign * s), jnp.where(jnp.isnan(xx), xx, sign * cc)


@morphax.custom_jvp
def _fresnel(x):
    if x.dtype in (np.float32, np.float64):
        return _fresnel_real(x)
    s, c = _fresnel_real(x.astype(np.float32))  # half precisions, through float32
    return s.astype(x.dtype), c.astype(x.dtype)


@_fresnel.defjvp
def _fresnel_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    sin, cos = _sin_cos_half_pi_square(x)
    return _fresnel(x), (sin * x_dot, cos * x_dot)


def fresnel(x):
    """The Fresnel integrals (S(x), C(x)) of real x (Cephes' accuracy is stated on [-10, 10])."""
    (x,) = _inexact("fresnel", x)
    if jnp.iscomplexobj(x):
        raise NotImplementedError("Support for complex-valued inputs is not implemented yet.")
    return _fresnel(x)
