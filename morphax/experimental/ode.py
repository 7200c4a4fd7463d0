"""`morphax.experimental.ode` (JAX's `jax.experimental.ode`): `odeint`, an adaptive Dormand-Prince
5(4) Runge-Kutta integrator, differentiable in reverse mode by the adjoint method.

The solver is JAX's algorithm (its defaults and its arguments): Dormand and Prince's embedded pair
(Math. Comp. 46, 1986) with the error estimate of the 4th-order solution, Hairer, Norsett and
Wanner's initial step (Solving ODEs I, II.4), a step-size controller with safety 0.9 that grows a
step at most 10x and shrinks a rejected one at least 5x, and outputs at the requested times read off
a 4th-order polynomial fitted to each accepted step (dense output through the step's midpoint).
The reverse pass integrates the adjoint system backwards between consecutive output times
(Chen et al. 2018, Appendix C), so memory does not grow with the number of steps.

Under `jit` the whole solve (the scan over output times, the while loop of steps inside it, the
stages of each step) is one compiled program; the user's function is inlined into it.
"""

from __future__ import annotations

import functools
import weakref

import numpy as np

import morphax.numpy as jnp
from morphax import lax
from morphax._src.api.autodiff import closure_convert, custom_vjp, vjp
from morphax._src.api.jit import jit
from morphax._src.api.vmap import vmap
from morphax._src.core.trace import Tracer
from morphax._src.extend.tracing import valid_jaxtype
from morphax._src.flatten_util import ravel_pytree
from morphax._src.numpy.util import promote_dtypes_inexact
from morphax._src.tree_util import tree_leaves, tree_map

# Dormand-Prince 5(4): stage times, stage weights (row i gives stage i+1 from stages 0..i),
# the 5th-order solution's weights (equal to the last row: the 7th stage is f at the new point,
# reused as the next step's first stage), and the difference of the 5th- and 4th-order weights.
_NODES = (1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_STAGE_WEIGHTS = (
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
_SOLUTION_WEIGHTS = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
_ERROR_WEIGHTS = (
    35 / 384 - 1951 / 21600,
    0.0,
    500 / 1113 - 22642 / 50085,
    125 / 192 - 451 / 720,
    -2187 / 6784 + 12231 / 42400,
    11 / 84 - 649 / 6300,
    -1 / 60,
)
# The solution at the step's midpoint, as weights of the seven stages (Shampine's dense output).
_MIDPOINT_WEIGHTS = (
    6025192743 / 30085553152 / 2,
    0.0,
    51252292925 / 65400821598 / 2,
    -2691868925 / 45128329728 / 2,
    187940372067 / 1594534317056 / 2,
    -1776094331 / 19743644256 / 2,
    11237099 / 235043384 / 2,
)


def _combine(weights, stages):
    """sum_j weights[j] * stages[j], skipping zero weights (an unrolled dot over the stages)."""
    total = None
    for w, k in zip(weights, stages):
        if w != 0.0:
            term = w * k
            total = term if total is None else total + term
    return total


def _dopri_step(fun, y, f, t, dt):
    """One Dormand-Prince step from (t, y) with f = fun(y, t): the 5th-order solution, f there,
    the error estimate and the seven stages."""
    h = dt.astype(f.dtype)
    stages = [f]
    for node, weights in zip(_NODES, _STAGE_WEIGHTS):
        stages.append(fun(y + h * _combine(weights, stages), t + dt * node))
    y_next = y + h * _combine(_SOLUTION_WEIGHTS, stages)
    error = h * _combine(_ERROR_WEIGHTS, stages)
    return y_next, stages[-1], error, stages


def _dense_output(y0, y1, stages, dt):
    """Coefficients (highest power first) of the quartic p on [0, 1] with p(0) = y0, p(1) = y1,
    p(1/2) = the midpoint solution, and slopes dt*f at both ends."""
    h = dt.astype(y0.dtype)
    y_mid = y0 + h * _combine(_MIDPOINT_WEIGHTS, stages)
    d0, d1 = h * stages[0], h * stages[-1]
    return jnp.stack(
        [
            -2.0 * d0 + 2.0 * d1 - 8.0 * y0 - 8.0 * y1 + 16.0 * y_mid,
            5.0 * d0 - 3.0 * d1 + 18.0 * y0 + 14.0 * y1 - 32.0 * y_mid,
            -4.0 * d0 + d1 - 11.0 * y0 - 5.0 * y1 + 16.0 * y_mid,
            d0,
            y0,
        ]
    )


def _first_step(fun, t0, y0, f0, order, rtol, atol):
    """Hairer-Norsett-Wanner's starting step: a step that moves y by about 1% of its scale, refined
    by one trial evaluation so the second derivative's change stays within tolerance."""
    y0, f0 = promote_dtypes_inexact(y0, f0)
    scale = (atol + jnp.abs(y0) * rtol).astype(y0.dtype)
    d0 = jnp.linalg.norm(y0 / scale)
    d1 = jnp.linalg.norm(f0 / scale)
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    f1 = fun(y0 + h0.astype(y0.dtype) * f0, t0 + h0)
    d2 = jnp.linalg.norm((f1 - f0) / scale) / h0
    h1 = jnp.where(
        (d1 <= 1e-15) & (d2 <= 1e-15),
        jnp.maximum(1e-6, h0 * 1e-3),
        (0.01 / jnp.maximum(d1, d2)) ** (1.0 / (order + 1.0)),
    )
    return jnp.minimum(100.0 * h0, h1)


def _error_ratio(error, rtol, atol, y0, y1):
    """The RMS over components of error / (atol + rtol * max(|y0|, |y1|)): <= 1 accepts a step."""
    tolerance = (atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))).astype(error.dtype)
    ratio = error / tolerance
    squared = ratio.real**2 + ratio.imag**2 if jnp.iscomplexobj(ratio) else ratio**2
    return jnp.sqrt(jnp.mean(squared))


def _next_step(dt, ratio, safety=0.9, grow=10.0, shrink=0.2, order=5.0):
    """The step after one of size dt with error ratio `ratio`: safety * ratio^(-1/order) * dt,
    at most grow * dt, and for a rejected step (ratio > 1) at most shrink * dt smaller."""
    floor = jnp.where(ratio < 1, 1.0, shrink)
    factor = jnp.minimum(grow, jnp.maximum(ratio ** (-1.0 / order) * safety, floor))
    return jnp.where(ratio == 0, dt * grow, dt * factor)


def _solve_flat(fun, rtol, atol, mxstep, hmax, y0, ts, *args):
    """The solution at every time of `ts` of y' = fun(y, t, *args), y(ts[0]) = y0 (1-D)."""

    def f(y, t):
        return fun(y, t, *args)

    def to_time(carry, target):
        def unfinished(state):
            count, _, _, t, dt, _, _ = state
            return (t < target) & (count < mxstep) & (dt > 0)

        def attempt(state):
            count, y, fy, t, dt, t_prev, poly = state
            y_new, f_new, error, stages = _dopri_step(f, y, fy, t, dt)
            ratio = _error_ratio(error, rtol, atol, y, y_new)
            accepted = ratio <= 1.0
            dt_next = jnp.clip(_next_step(dt, ratio), min=0.0, max=hmax)
            poly_new = _dense_output(y, y_new, stages, dt)
            keep = lambda new, old: jnp.where(accepted, new, old)  # noqa: E731
            return (
                count + 1,
                keep(y_new, y),
                keep(f_new, fy),
                keep(t + dt, t),
                dt_next,
                keep(t, t_prev),
                keep(poly_new, poly),
            )

        _, *carry = lax.while_loop(unfinished, attempt, (0, *carry))
        _, _, t, _, t_prev, poly = carry
        # The last accepted step spans [t_prev, t] and contains the target.
        s = ((target - t_prev) / (t - t_prev)).astype(poly.dtype)
        return tuple(carry), jnp.polyval(poly, s)

    f0 = f(y0, ts[0])
    dt0 = jnp.clip(_first_step(f, ts[0], y0, f0, 4, rtol, atol), min=0.0, max=hmax)
    poly0 = jnp.stack([y0] * 5)
    _, ys = lax.scan(to_time, (y0, f0, ts[0], dt0, ts[0], poly0), ts[1:])
    return jnp.concatenate((y0[None], ys))


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _solve(fun, rtol, atol, mxstep, hmax, y0, ts, *args):
    return _solve_flat(fun, rtol, atol, mxstep, hmax, y0, ts, *args)


def _solve_fwd(fun, rtol, atol, mxstep, hmax, y0, ts, *args):
    ys = _solve_flat(fun, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _solve_bwd(fun, rtol, atol, mxstep, hmax, residuals, ys_bar):
    """The adjoint method: between consecutive output times, integrate backwards (in negated time,
    so the solver still steps forwards) the state, its adjoint a = dL/dy, and the accumulating
    gradients of the arguments and of the start time; each output's cotangent joins a there."""
    ys, ts, args = residuals

    def augmented(state, minus_t, *args):
        y, a, _, _ = state
        y_dot, pullback = vjp(fun, y, -minus_t, *args)
        # d/ds of (y, a, t-gradient, arg gradients) in s = -t.
        a_dot, t_dot, *args_dot = pullback(a)
        return (-y_dot, a_dot, t_dot, tuple(args_dot))

    def back_one(carry, i):
        a, t0_bar, args_bar = carry
        # Moving output time ts[i] moves ys[i] at rate f(ys[i], ts[i]).
        t_bar = jnp.dot(fun(ys[i], ts[i], *args), ys_bar[i]).real
        t0_bar = t0_bar - t_bar
        _, a, t0_bar, args_bar = odeint(
            augmented,
            (ys[i], a, t0_bar, args_bar),
            jnp.stack([-ts[i], -ts[i - 1]]),
            *args,
            rtol=rtol,
            atol=atol,
            mxstep=mxstep,
            hmax=hmax,
        )
        a, t0_bar, args_bar = tree_map(lambda x: x[1], (a, t0_bar, args_bar))
        return (a + ys_bar[i - 1], t0_bar, args_bar), t_bar

    start = (ys_bar[-1], jnp.zeros((), ts.dtype), tuple(tree_map(jnp.zeros_like, args)))
    (y0_bar, t0_bar, args_bar), ts_bar_rev = lax.scan(back_one, start, jnp.arange(len(ts) - 1, 0, -1))
    ts_bar = jnp.concatenate([t0_bar[None], ts_bar_rev[::-1]])
    return (y0_bar, ts_bar, *args_bar)


_solve.defvjp(_solve_fwd, _solve_bwd)


def _raveled(fun, unravel):
    """fun on pytrees as a function of a flat state vector (and flat derivative)."""

    @functools.wraps(fun)
    def flat(y_flat, t, *args):
        return ravel_pytree(fun(unravel(y_flat), t, *args))[0]

    return flat


@functools.partial(jit, static_argnums=(0, 1, 2, 3, 4))
def _odeint_program(fun, rtol, atol, mxstep, hmax, y0, ts, *args):
    y0_flat, unravel = ravel_pytree(y0)
    ys = _solve(_raveled(fun, unravel), rtol, atol, mxstep, hmax, y0_flat, ts, *args)
    return vmap(unravel)(ys)


# closure_convert's result for a function and argument types, reused while neither changes, so
# repeated eager calls of odeint with the same function hit jit's cache (a fresh converted
# function each call would retrace and recompile the solver). Entries die with the function.
_converted: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _convert(func, y0, t0, args):
    def signature(tree):
        return tuple((np.shape(x), jnp.result_type(x)) for x in tree_leaves(tree))

    key = (signature((y0, t0, args)), str(tree_map(lambda _: 0, (y0, args))))
    try:
        cached = _converted.get(func, {}).get(key)
    except TypeError:  # an unhashable or non-weakrefable callable
        cached = None
    if cached is not None:
        return cached
    converted, consts = closure_convert(func, y0, t0, *args)
    if not any(isinstance(c, Tracer) for c in consts):
        try:
            _converted.setdefault(func, {})[key] = (converted, consts)
        except TypeError:
            pass
    return converted, consts


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=np.inf, hmax=np.inf):
    """Solve y' = func(y, t, *args) from y(t[0]) = y0 and return y at every time of `t`.

    func: the derivative, with the same structure as `y0` (an array or a pytree of arrays).
    t: a 1-D array of strictly increasing float times. args: arrays or pytrees of arrays passed
    to `func` (differentiable). rtol, atol: the local error tolerances of each step. mxstep: the
    most steps taken towards each output time. hmax: the largest step.
    Returns the solution with a leading axis of len(t): the same structure as `y0`.
    Differentiable in reverse mode (by the adjoint method), and under jit and vmap.
    """
    for leaf in tree_leaves(args):
        if not valid_jaxtype(leaf):
            raise TypeError(f"The contents of odeint *args must be arrays or scalars, but got {leaf!r}.")
    dtype = getattr(t, "dtype", None)
    if dtype is None or not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(
            f"odeint: t must be an array of floats (e.g. jnp.linspace(0., 1., 11)), but got {t!r}."
        )
    converted, consts = _convert(func, y0, t[0], args)
    return _odeint_program(converted, rtol, atol, mxstep, hmax, y0, t, *args, *consts)


__all__ = ["odeint"]
