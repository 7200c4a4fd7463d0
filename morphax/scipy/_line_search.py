"""The strong-Wolfe line search behind `morphax.scipy.optimize.minimize` (BFGS and L-BFGS):
bracketing by doubling, then zoom by safeguarded cubic / quadratic interpolation or bisection
(Nocedal & Wright, *Numerical Optimization*, Algorithms 3.5 and 3.6). Every branch is a select
inside `lax.while_loop`, so the search is jittable and batches under vmap.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.numpy import util as _util

_HIGHEST = lax.Precision.HIGHEST


def _pick(pred, new: dict, old: NamedTuple) -> dict:
    """The fields of `new`, each taken from `new` where `pred` holds and from `old` elsewhere."""
    return {k: jnp.where(pred, v, getattr(old, k)) for k, v in new.items()}


def _cubic_minimizer(a, fa, fpa, b, fb, c, fc):
    """The minimizer of the cubic through (a, fa) with slope fpa at a, (b, fb) and (c, fc)."""
    db, dc = b - a, c - a
    rhs_b = fb - fa - fpa * db
    rhs_c = fc - fa - fpa * dc
    denom = (db * dc) ** 2 * (db - dc)
    cub = (dc**2 * rhs_b - db**2 * rhs_c) / denom
    quad = (-(dc**3) * rhs_b + db**3 * rhs_c) / denom
    return a + (-quad + jnp.sqrt(quad * quad - 3.0 * cub * fpa)) / (3.0 * cub)


def _quadratic_minimizer(a, fa, fpa, b, fb):
    """The minimizer of the parabola through (a, fa) with slope fpa at a, and (b, fb)."""
    db = b - a
    curv = (fb - fa - fpa * db) / (db * db)
    return a - fpa / (2.0 * curv)


class _Zoom(NamedTuple):
    done: object
    failed: object
    j: object
    a_lo: object
    phi_lo: object
    dphi_lo: object
    a_hi: object
    phi_hi: object
    dphi_hi: object
    a_rec: object  # the previous a_hi or a_lo: the third point of the cubic
    phi_rec: object
    a_star: object
    phi_star: object
    dphi_star: object
    g_star: object
    nfev: object
    ngev: object


def _zoom(phi_dphi, sufficient_decrease_fails, curvature_holds, lo, hi, g0, skip):
    """Shrink the bracket [lo, hi] (each (a, phi, dphi)) to a step satisfying both strong Wolfe
    conditions. Runs no iteration when `skip` (the caller evaluates both zooms and selects)."""
    a_lo, phi_lo, dphi_lo = lo
    a_hi, phi_hi, dphi_hi = hi
    real = phi_lo.dtype
    state = _Zoom(
        done=jnp.array(False),
        failed=jnp.array(False),
        j=0,
        a_lo=a_lo,
        phi_lo=phi_lo,
        dphi_lo=dphi_lo,
        a_hi=a_hi,
        phi_hi=phi_hi,
        dphi_hi=dphi_hi,
        a_rec=(a_lo + a_hi) / 2.0,
        phi_rec=(phi_lo + phi_hi) / 2.0,
        a_star=jnp.array(1.0, real),
        phi_star=phi_lo,
        dphi_star=dphi_lo,
        g_star=g0,
        nfev=0,
        ngev=0,
    )
    # Brackets narrower than this stop the zoom as failed (the step is then not Wolfe).
    narrowest = 1e-5 if np.finfo(real).bits < 64 else 1e-10

    def body(s: _Zoom) -> _Zoom:
        width = s.a_hi - s.a_lo
        left, right = jnp.minimum(s.a_hi, s.a_lo), jnp.maximum(s.a_hi, s.a_lo)
        # NB: JAX compares the signed width (a_hi - a_lo) here, so every bracket entered or left
        # with a_hi < a_lo counts as collapsed and the search fails (jax-ml/jax#40228; BFGS then
        # stops with status 3 on Rosenbrock's function); the bracket's length is what matters.
        failed = s.failed | (jnp.abs(width) <= narrowest)
        # Interpolants are trusted only well inside the bracket (20% / 10% margins).
        cubic = _cubic_minimizer(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi, s.a_rec, s.phi_rec)
        use_cubic = (s.j > 0) & (cubic > left + 0.2 * width) & (cubic < right - 0.2 * width)
        quad = _quadratic_minimizer(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi)
        use_quad = ~use_cubic & (quad > left + 0.1 * width) & (quad < right - 0.1 * width)
        a_j = jnp.where(use_cubic, cubic, jnp.where(use_quad, quad, (s.a_lo + s.a_hi) / 2.0))
        phi_j, dphi_j, g_j = phi_dphi(a_j)
        phi_j, dphi_j, g_j = phi_j.astype(real), dphi_j.astype(real), g_j.astype(s.g_star.dtype)

        new_hi = sufficient_decrease_fails(a_j, phi_j) | (phi_j >= s.phi_lo)
        accept = curvature_holds(dphi_j) & ~new_hi
        flip = ~new_hi & ~accept & (dphi_j * (s.a_hi - s.a_lo) >= 0.0)
        new_lo = ~new_hi & ~accept
        s = s._replace(
            **_pick(new_hi, dict(a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=s.a_hi, phi_rec=s.phi_hi), s)
        )
        s = s._replace(
            done=s.done | accept,
            **_pick(accept, dict(a_star=a_j, phi_star=phi_j, dphi_star=dphi_j, g_star=g_j), s),
        )
        s = s._replace(
            **_pick(
                flip, dict(a_hi=s.a_lo, phi_hi=s.phi_lo, dphi_hi=s.dphi_lo, a_rec=s.a_hi, phi_rec=s.phi_hi), s
            )
        )
        s = s._replace(**_pick(new_lo & ~flip, dict(a_rec=s.a_lo, phi_rec=s.phi_lo), s))
        s = s._replace(**_pick(new_lo, dict(a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j), s))
        j = s.j + 1
        # 30 zoom steps, more than SciPy's 10, as JAX allows.
        return s._replace(j=j, failed=failed | (j >= 30), nfev=s.nfev + 1, ngev=s.ngev + 1)

    return lax.while_loop(lambda s: ~s.done & ~skip & ~s.failed, body, state)


class _Search(NamedTuple):
    done: object
    failed: object
    i: object
    a_prev: object
    phi_prev: object
    dphi_prev: object
    nfev: object
    ngev: object
    a_star: object
    phi_star: object
    dphi_star: object
    g_star: object


class LineSearchResults(NamedTuple):
    """What `line_search` found: `a_k` the step, `f_k` / `g_k` the value and gradient there,
    `status` 0 (strong Wolfe step found), 1 (zoom failed) or 3 (maxiter reached)."""

    failed: object
    nit: object
    nfev: object
    ngev: object
    k: object
    a_k: object
    f_k: object
    g_k: object
    status: object


def line_search(f, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1=1e-4, c2=0.9, maxiter=20):
    """A step along descent direction `pk` from `xk` satisfying the strong Wolfe conditions
    with constants c1 (sufficient decrease) and c2 (curvature)."""
    xk, pk = _util.promote_dtypes_inexact(xk, pk)

    def phi_dphi(t):
        phi, g = morphax.value_and_grad(f)(xk + jnp.asarray(t, pk.dtype) * pk)
        return phi, jnp.real(jnp.dot(g, pk, precision=_HIGHEST)), g

    given = old_fval is not None and gfk is not None
    if given:
        phi_0 = jnp.asarray(old_fval)
        dphi_0 = jnp.real(jnp.dot(gfk, pk, precision=_HIGHEST))
    else:
        phi_0, dphi_0, gfk = phi_dphi(0.0)
    real = phi_0.dtype
    dphi_0 = dphi_0.astype(real)
    if old_old_fval is not None:
        # Nocedal & Wright (3.60): the step that would repeat the last decrease, capped at 1.
        guess = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
        first = jnp.where(guess > 1, jnp.array(1.0, real), guess.astype(real))
    else:
        first = jnp.array(1.0, real)

    def sufficient_decrease_fails(a, phi):
        return phi > phi_0 + c1 * a * dphi_0

    def curvature_holds(dphi):
        return jnp.abs(dphi) <= -c2 * dphi_0

    count0 = 0 if given else 1
    state = _Search(
        done=jnp.array(False),
        failed=jnp.array(False),
        # Nocedal & Wright count from 1 (SciPy from 0, scipy/scipy#12157); JAX follows the book.
        i=1,
        a_prev=jnp.array(0.0, real),
        phi_prev=phi_0,
        dphi_prev=dphi_0,
        nfev=count0,
        ngev=count0,
        a_star=jnp.array(0.0, real),
        phi_star=phi_0,
        dphi_star=dphi_0,
        g_star=gfk,
    )

    def body(s: _Search) -> _Search:
        a_i = jnp.where(s.i == 1, first, s.a_prev * 2.0)  # no upper bound: keep doubling
        phi_i, dphi_i, g_i = phi_dphi(a_i)
        phi_i, dphi_i = phi_i.astype(real), dphi_i.astype(real)
        overshot = sufficient_decrease_fails(a_i, phi_i) | ((phi_i >= s.phi_prev) & (s.i > 1))
        accept = curvature_holds(dphi_i) & ~overshot
        uphill = (dphi_i >= 0.0) & ~overshot & ~accept
        prev, here = (s.a_prev, s.phi_prev, s.dphi_prev), (a_i, phi_i, dphi_i)
        zoom_a = _zoom(phi_dphi, sufficient_decrease_fails, curvature_holds, prev, here, gfk, ~overshot)
        zoom_b = _zoom(phi_dphi, sufficient_decrease_fails, curvature_holds, here, prev, gfk, ~uphill)
        star = ("a_star", "phi_star", "dphi_star", "g_star")
        s = s._replace(
            nfev=s.nfev + 1 + zoom_a.nfev + zoom_b.nfev,
            ngev=s.ngev + 1 + zoom_a.ngev + zoom_b.ngev,
            done=s.done | overshot | accept | uphill,
            failed=s.failed | (overshot & zoom_a.failed) | (uphill & zoom_b.failed),
        )
        s = s._replace(**_pick(overshot, {k: getattr(zoom_a, k) for k in star}, s))
        s = s._replace(**_pick(accept, dict(a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i), s))
        s = s._replace(**_pick(uphill, {k: getattr(zoom_b, k) for k in star}, s))
        return s._replace(i=s.i + 1, a_prev=a_i, phi_prev=phi_i, dphi_prev=dphi_i)

    s = lax.while_loop(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body, state)
    status = jnp.where(s.failed, 1, jnp.where(s.i > maxiter, 3, 0))
    step = s.a_star
    if np.finfo(real).bits != 64:
        # Below 64 bits a vanishing step would freeze the optimizer: floor its size at 1e-8.
        step = jnp.where(jnp.abs(step) < 1e-8, jnp.sign(step) * 1e-8, step)
    return LineSearchResults(
        failed=s.failed | ~s.done,
        nit=s.i - 1,
        nfev=s.nfev,
        ngev=s.ngev,
        k=s.i,
        a_k=step,
        f_k=s.phi_star,
        g_k=s.g_star,
        status=status,
    )
