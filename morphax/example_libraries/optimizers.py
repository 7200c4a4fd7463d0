"""`optimizers`: first-order optimizers as triples of pure functions, as in JAX's
example_libraries.

An optimizer is ``(init_fun, update_fun, get_params)``: ``init_fun(params)`` makes the state,
``update_fun(step, grads, state)`` takes one step, ``get_params(state)`` reads the parameters.
Rules are written for one array (`optimizer` lifts them to pytrees); the state is an
`OptimizerState` pytree, so it passes through jit. Step sizes may be numbers or schedules
``step -> size`` (`constant`, `exponential_decay`, `inverse_time_decay`, `polynomial_decay`,
`piecewise_constant`).
"""

from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable
from typing import Any, NamedTuple

import morphax
import morphax.numpy as jnp

__all__ = [
    "JoinPoint", "Optimizer", "OptimizerState", "adagrad", "adam", "adamax", "clip_grads", "constant",
    "exponential_decay", "inverse_time_decay", "l2_norm", "make_schedule", "momentum", "nesterov",
    "optimizer", "pack_optimizer_state", "piecewise_constant", "polynomial_decay", "rmsprop",
    "rmsprop_momentum", "sgd", "sm3", "unpack_optimizer_state",
]  # fmt: skip

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
morphax.tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]),
)

Params = Any
Schedule = Callable[[int], float]


class Optimizer(NamedTuple):
    init_fn: Callable
    update_fn: Callable
    params_fn: Callable


def optimizer(opt_maker):
    """Lift an optimizer written for single arrays, ``opt_maker(*args) -> (init, update,
    get_params)``, to one over pytrees of arrays (state packed into an OptimizerState)."""

    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat, tree = morphax.tree.flatten(x0_tree)
            states = [morphax.tree.flatten(init(x0)) for x0 in x0_flat]
            return OptimizerState([s for s, _ in states], tree, [t for _, t in states])

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grad_flat, grad_tree_def = morphax.tree.flatten(grad_tree)
            if grad_tree_def != tree:
                raise TypeError(
                    "optimizer update function was passed a gradient tree that did not match the parameter tree "
                    f"structure with which it was initialized: parameter tree {tree} and grad tree {grad_tree_def}."
                )
            states = [morphax.tree.unflatten(s, f) for s, f in zip(subtrees, states_flat)]
            new = [morphax.tree.flatten(update(i, g, s)) for g, s in zip(grad_flat, states)]
            for subtree, (_, subtree2) in zip(subtrees, new):
                if subtree2 != subtree:
                    raise TypeError(
                        "optimizer update function produced an output structure that did not match its input "
                        f"structure: input {subtree} and output {subtree2}."
                    )
            return OptimizerState([f for f, _ in new], tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            states = [morphax.tree.unflatten(s, f) for s, f in zip(subtrees, states_flat)]
            return morphax.tree.unflatten(tree, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: x -= step_size(i) * g."""
    step_size = make_schedule(step_size)
    return (lambda x0: x0), (lambda i, g, x: x - step_size(i) * g), (lambda x: x)


@optimizer
def momentum(step_size, mass):
    """SGD with momentum: v = mass * v + g; x -= step_size(i) * v."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    return (lambda x0: (x0, jnp.zeros_like(x0))), update, (lambda state: state[0])


@optimizer
def nesterov(step_size, mass):
    """SGD with Nesterov momentum: v = mass * v + g; x -= step_size(i) * (mass * v + g)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    return (lambda x0: (x0, jnp.zeros_like(x0))), update, (lambda state: state[0])


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad (Duchi et al. 2011) with momentum on the scaled gradient."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        inv_sqrt = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m

    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0))), update, (lambda state: state[0])


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: a running mean of squared gradients scales each step."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq = state
        avg_sq = avg_sq * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq + eps), avg_sq

    return (lambda x0: (x0, jnp.zeros_like(x0))), update, (lambda state: state[0])


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum on the scaled step."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq, mom = state
        avg_sq = avg_sq * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq + eps)
        return x - mom, avg_sq, mom

    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0))), update, (lambda state: state[0])


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma and Ba 2015): bias-corrected first and second moment estimates."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        mhat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        vhat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v

    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0))), update, (lambda state: state[0])


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax: Adam with the infinity norm in place of the second moment."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        return x - (step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps), m, u

    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0))), update, (lambda state: state[0])


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al. 2019): one accumulator per axis of each parameter instead of one per
    entry, the entry's bound the minimum over its axes' accumulators."""
    step_size = make_schedule(step_size)

    def splice(seq, i, x):
        out = list(seq)
        out[i : i + 1] = x
        return out

    def broadcast_into(ndim, x, axis):
        return x[tuple(splice([None] * ndim, axis, [slice(None)]))]

    def init(x0):
        shape = x0.shape
        x0 = jnp.atleast_1d(x0)
        return x0, jnp.zeros_like(x0), [jnp.zeros(n, dtype=x0.dtype) for n in x0.shape], shape

    def update(i, g, state):
        x, m, vs, shape = state
        vs = [broadcast_into(g.ndim, v, k) for k, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
        inv_sqrt = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        vs = [accum.max(tuple(splice(range(x.ndim), j, []))) for j in range(x.ndim)]
        return x, m, vs, shape

    def get_params(state):
        x, _, _, shape = state
        return x.reshape(shape)

    return init, update, get_params


# ------------------------------------------------------------------------------------- schedules


def constant(step_size) -> Schedule:
    """The same step size at every step."""
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate) -> Schedule:
    """step_size * decay_rate ** (i / decay_steps)."""
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False) -> Schedule:
    """step_size / (1 + decay_rate * i / decay_steps), the ratio floored with `staircase`."""
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0) -> Schedule:
    """From step_size to final_step_size over decay_steps along (1 - i / decay_steps) ** power."""

    def schedule(step_num):
        step_num = jnp.minimum(step_num, decay_steps)
        return (1 - step_num / decay_steps) ** power * (step_size - final_step_size) + final_step_size

    return schedule


def piecewise_constant(boundaries, values) -> Schedule:
    """values[k] for steps in (boundaries[k-1], boundaries[k]]; one more value than boundaries."""
    boundaries, values = jnp.array(boundaries), jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule) -> Schedule:
    """A schedule from a schedule or a number."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# ----------------------------------------------------------------------------------- utilities


def l2_norm(tree):
    """The Euclidean norm of all the leaves of `tree` together."""
    leaves = morphax.tree.leaves(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """Scale the gradients down so that their joint l2 norm is at most `max_norm`."""
    norm = l2_norm(grad_tree)
    return morphax.tree.map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """Marks the boundary between the parameter tree and each parameter's state subtree."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """The optimizer state as one pytree (parameters' tree of JoinPoints holding each state), for
    saving; `pack_optimizer_state` undoes it."""
    states_flat, tree_def, subtree_defs = opt_state
    subtrees = [morphax.tree.unflatten(d, s) for d, s in zip(subtree_defs, states_flat)]
    return morphax.tree.unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree):
    """The OptimizerState of a tree made by `unpack_optimizer_state`."""
    sentinels, tree_def = morphax.tree.flatten(marked_pytree)
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        raise TypeError("pack_optimizer_state: every leaf must be a JoinPoint from unpack_optimizer_state.")
    flat = [morphax.tree.flatten(s.subtree) for s in sentinels]
    return OptimizerState([f for f, _ in flat], tree_def, [d for _, d in flat])
