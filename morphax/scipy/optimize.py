"""`morphax.scipy.optimize`: unconstrained minimization mirroring ``jax.scipy.optimize``:
`minimize` with BFGS and the experimental L-BFGS (gradients by autodiff, a strong-Wolfe line
search, jittable and batchable), returning `OptimizeResults`. The algorithms live in
`morphax.scipy._quasi_newton` and `morphax.scipy._line_search`.
"""

from __future__ import annotations

from typing import NamedTuple

import morphax.numpy as jnp
from morphax._src.numpy import util as _util
from morphax.scipy._quasi_newton import minimize_bfgs, minimize_lbfgs

__all__ = ["OptimizeResults", "minimize"]


class OptimizeResults(NamedTuple):
    """The outcome of `minimize`.

    x: the solution found; success: converged without a line-search failure; status: 0
    converged, 1 maxiter reached, 3 zoom failed, 4 saddle point, 5 line search out of iterations,
    -1 undefined (BFGS; L-BFGS has its own codes); fun, jac: the value and gradient at x;
    hess_inv: BFGS's inverse-Hessian estimate (None for L-BFGS); nfev, njev: evaluations of the
    objective and its gradient; nit: iterations.
    """

    x: object
    success: object
    status: object
    fun: object
    jac: object
    hess_inv: object
    nfev: object
    njev: object
    nit: object


_LBFGS = "l-bfgs-experimental-do-not-rely-on-this"


def minimize(fun, x0, args=(), *, method, tol=None, options=None):
    """Minimize ``fun(x, *args)`` (a real scalar) from the 1-D `x0` with ``method="BFGS"`` or
    ``"l-bfgs-experimental-do-not-rely-on-this"``. `options` go to the solver: ``maxiter``,
    ``norm``, ``gtol``, ``line_search_maxiter`` (BFGS); ``maxiter``, ``norm``, ``maxcor``,
    ``ftol``, ``gtol``, ``maxfun``, ``maxgrad``, ``maxls`` (L-BFGS)."""
    options = dict(options or {})
    if not isinstance(args, tuple):
        raise TypeError(f"morphax.scipy.optimize.minimize: args must be a tuple, got {args!r}")
    if not isinstance(method, str):
        raise TypeError(f"morphax.scipy.optimize.minimize: method must be a string, got {method!r}")
    _util.check_arraylike("minimize", x0)
    (x0,) = _util.promote_dtypes_inexact(x0)
    if x0.ndim != 1:
        raise ValueError(
            f"morphax.scipy.optimize.minimize: x0 must be a 1-D array, got shape {x0.shape}; "
            "ravel it (and unravel inside fun), e.g. with morphax.flatten_util.ravel_pytree."
        )
    if tol is not None:
        # NB: JAX ignores `tol`; here it sets the gradient tolerance as SciPy does, unless the
        # options give one.
        options.setdefault("gtol", tol)

    def objective(x):
        return fun(x, *args)

    kind = method.lower()
    if kind == "bfgs":
        r = minimize_bfgs(objective, x0, **options)
        return OptimizeResults(
            x=r.x_k,
            success=r.converged & ~r.failed,
            status=r.status,
            fun=r.f_k,
            jac=r.g_k,
            hess_inv=r.H_k,
            nfev=r.nfev,
            njev=r.ngev,
            nit=r.k,
        )
    if kind == _LBFGS:
        r = minimize_lbfgs(objective, x0, **options)
        return OptimizeResults(
            x=r.x_k,
            success=r.converged & jnp.logical_not(r.failed),
            status=r.status,
            fun=r.f_k,
            jac=r.g_k,
            hess_inv=None,
            nfev=r.nfev,
            njev=r.ngev,
            nit=r.k,
        )
    raise ValueError(
        f"morphax.scipy.optimize.minimize: method {method!r} not recognized; use 'BFGS' or '{_LBFGS}'"
    )
