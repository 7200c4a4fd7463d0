"""The quasi-Newton minimizers behind `morphax.scipy.optimize.minimize`: BFGS with a dense
inverse-Hessian estimate (Nocedal & Wright, Algorithm 6.1) and limited-memory BFGS with the
two-loop recursion (Algorithm 7.4/7.5, complex variables as in Sorber et al. 2012). Each is one
`lax.while_loop` over a NamedTuple state, so it runs under jit and vmap.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax.scipy._line_search import line_search

_HIGHEST = lax.Precision.HIGHEST


def _dot(a, b):
    return jnp.dot(a, b, precision=_HIGHEST)


class BFGSState(NamedTuple):
    converged: object
    failed: object
    k: object
    nfev: object
    ngev: object
    nhev: object
    x_k: object
    f_k: object
    g_k: object
    H_k: object  # noqa: N815 - the inverse Hessian estimate, H in Nocedal & Wright
    old_old_fval: object
    status: object
    line_search_status: object


def minimize_bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
    """BFGS from `x0` until ``norm(grad, ord=norm) < gtol`` or `maxiter` (200 * size) steps."""
    if maxiter is None:
        maxiter = np.size(x0) * 200
    n = x0.shape[0]
    f_0, g_0 = morphax.value_and_grad(fun)(x0)
    state = BFGSState(
        converged=jnp.linalg.norm(g_0, ord=norm) < gtol,
        failed=jnp.array(False),
        k=0,
        nfev=1,
        ngev=1,
        nhev=0,
        x_k=x0,
        f_k=f_0,
        g_k=g_0,
        H_k=jnp.eye(n, dtype=x0.dtype),
        # A fictitious previous value that makes the first line search start at a sensible step.
        old_old_fval=f_0 + jnp.linalg.norm(g_0) / 2,
        status=0,
        line_search_status=0,
    )

    def body(s: BFGSState) -> BFGSState:
        p_k = -_dot(s.H_k, s.g_k)
        ls = line_search(
            fun,
            s.x_k,
            p_k,
            old_fval=s.f_k,
            old_old_fval=s.old_old_fval,
            gfk=s.g_k,
            maxiter=line_search_maxiter,
        )
        s_k = ls.a_k * p_k
        y_k = ls.g_k - s.g_k
        rho = jnp.reciprocal(_dot(y_k, s_k))
        # H+ = (I - rho s y^T) H (I - rho y s^T) + rho s s^T; skipped when y^T s = 0.
        w = jnp.eye(n, dtype=rho.dtype) - rho * jnp.outer(s_k, y_k)
        h_next = _dot(_dot(w, s.H_k), w.T) + rho * jnp.outer(s_k, s_k)
        return s._replace(
            converged=jnp.linalg.norm(ls.g_k, ord=norm) < gtol,
            failed=ls.failed,
            k=s.k + 1,
            nfev=s.nfev + ls.nfev,
            ngev=s.ngev + ls.ngev,
            x_k=s.x_k + s_k,
            f_k=ls.f_k,
            g_k=ls.g_k,
            H_k=jnp.where(jnp.isfinite(rho), h_next, s.H_k),
            old_old_fval=s.f_k,
            line_search_status=ls.status,
        )

    s = lax.while_loop(lambda s: ~s.converged & ~s.failed & (s.k < maxiter), body, state)
    # 0 converged, 1 out of iterations, 2 + the line search's status when it failed, -1 otherwise.
    status = jnp.where(
        s.converged, 0, jnp.where(s.k == maxiter, 1, jnp.where(s.failed, 2 + s.line_search_status, -1))
    )
    return s._replace(status=status)


class LBFGSState(NamedTuple):
    converged: object
    failed: object
    k: object
    nfev: object
    ngev: object
    x_k: object
    f_k: object
    g_k: object
    s_history: object
    y_history: object
    rho_history: object
    gamma: object
    status: object
    ls_status: object


def minimize_lbfgs(
    fun,
    x0,
    maxiter=None,
    norm=np.inf,
    maxcor=10,
    ftol=2.220446049250313e-09,
    gtol=1e-05,
    maxfun=None,
    maxgrad=None,
    maxls=20,
):
    """L-BFGS from `x0` with `maxcor` correction pairs. Stops when ``norm(grad) < gtol``
    (converged) or with status 1 (maxiter), 2 (maxfun), 3 (maxgrad), 4 (the value fell by less
    than `ftol`) or 5 (line search failed)."""
    n = len(x0)
    dtype = x0.dtype
    if maxiter is None and maxfun is None and maxgrad is None:
        maxiter = n * 200
    maxiter, maxfun, maxgrad = (np.inf if m is None else m for m in (maxiter, maxfun, maxgrad))
    f_0, g_0 = morphax.value_and_grad(fun)(x0)
    real = f_0.dtype
    state = LBFGSState(
        converged=jnp.array(False),
        failed=jnp.array(False),
        k=0,
        nfev=1,
        ngev=1,
        x_k=x0,
        f_k=f_0,
        g_k=g_0,
        s_history=jnp.zeros((maxcor, n), dtype),
        y_history=jnp.zeros((maxcor, n), dtype),
        rho_history=jnp.zeros((maxcor,), dtype),
        gamma=jnp.array(1.0, dtype),
        status=0,
        ls_status=0,
    )

    def body(s: LBFGSState) -> LBFGSState:
        p_k = _two_loop_direction(s)
        ls = line_search(fun, s.x_k, p_k, old_fval=s.f_k, gfk=s.g_k, maxiter=maxls)
        s_k = ls.a_k.astype(p_k.dtype) * p_k
        y_k = ls.g_k - s.g_k
        ys = jnp.real(_dot(y_k, s_k))
        status = 0
        status = jnp.where(s.f_k - ls.f_k < ftol, 4, status)
        status = jnp.where(s.ngev >= maxgrad, 3, status)
        status = jnp.where(s.nfev >= maxfun, 2, status)
        status = jnp.where(s.k >= maxiter, 1, status)
        status = jnp.where(ls.failed, 5, status)
        converged = jnp.linalg.norm(ls.g_k, ord=norm) < gtol
        return s._replace(
            converged=converged,
            failed=(status > 0) & ~converged,
            k=s.k + 1,
            nfev=s.nfev + ls.nfev,
            ngev=s.ngev + ls.ngev,
            x_k=(s.x_k + s_k).astype(dtype),
            f_k=ls.f_k.astype(real),
            g_k=ls.g_k.astype(s.g_k.dtype),
            s_history=_push(s.s_history, s_k),
            y_history=_push(s.y_history, y_k),
            rho_history=_push(s.rho_history, jnp.reciprocal(ys).astype(dtype)),
            # The initial inverse Hessian gamma I, gamma = s^T y / y^T y (Nocedal & Wright 7.20).
            gamma=(ys / jnp.real(_dot(jnp.conj(y_k), y_k))).astype(dtype),
            status=jnp.where(converged, 0, status),
            ls_status=ls.status,
        )

    return lax.while_loop(lambda s: ~s.converged & ~s.failed, body, state)


def _push(history, new):
    """Drop the oldest entry (row 0) and append `new` as the last row."""
    return jnp.roll(history, -1, axis=0).at[-1].set(new)


def _two_loop_direction(s: LBFGSState):
    """-H_k g_k from the stored pairs (newest last), without forming H_k."""
    m = s.rho_history.shape[0]
    used = jnp.minimum(s.k, m)
    dtype = s.rho_history.dtype

    def newest_first(j, carry):
        q, alphas = carry
        i = m - 1 - j
        a_i = s.rho_history[i] * jnp.real(_dot(jnp.conj(s.s_history[i]), q)).astype(dtype)
        return q - a_i * jnp.conj(s.y_history[i]), alphas.at[i].set(a_i)

    q, alphas = lax.fori_loop(0, used, newest_first, (-jnp.conj(s.g_k), jnp.zeros_like(s.rho_history)))
    r = s.gamma * q

    def oldest_first(j, r):
        i = m - used + j
        b_i = s.rho_history[i] * jnp.real(_dot(s.y_history[i], r)).astype(dtype)
        return r + (alphas[i] - b_i) * s.s_history[i]

    return lax.fori_loop(0, used, oldest_first, r)
