"""`io_callback`: an impure host function with declared result types, as a primitive with its
rules (`jax.experimental.io_callback`). Unlike `pure_callback` it is never dropped, merged or
reordered with other effects when `ordered`; under vmap it runs once per batch element, in order;
it cannot be differentiated."""

from __future__ import annotations

import numpy as np

from morphax._src.core import pytree
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.effects import debug_effect, ordered_debug_effect
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.values import make_array
from morphax._src.higher_order.callbacks import (
    HostCallback,
    _as_array,
    _checked_call,
    callback_failure,
    check_callable,
    check_results,
    flat_host_call,
    run_callback,
)

io_callback_p = Primitive("io_callback", multiple_results=True)
io_callback_p.kind = Kind.EFFECT
io_callback_p.higher_order = True  # impl sees the Arrays themselves, as the callbacks' do
io_callback_p.has_side_effects = True
io_callback_p.calls_host = True
io_callback_p.effect_rule = lambda *, ordered, **_: {ordered_debug_effect if ordered else debug_effect}


def _io_callback_impl(*args, callback, result_avals, sharding, ordered):
    # As pure_callback's: JAX runs it as a compiled program even eagerly, so errors are runtime errors.
    outs = run_callback(_checked_call, (callback, [_as_array(x) for x in args], result_avals))
    return [make_array(o, a.dtype, weak_type=a.weak_type) for o, a in zip(outs, result_avals)]


def _io_callback_abstract_eval(*avals, callback, result_avals, sharding, ordered):
    return list(result_avals)


def _io_callback_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


def _io_callback_transpose(cts, *args, **params):
    raise ValueError("IO callbacks do not support transpose.")


def _io_callback_batch(vals, dims, *, axis_data, callback, result_avals, sharding, ordered):
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    size = axis_data.size
    batched = tuple(d is not None for d in dims)
    vals = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]

    def per_element(*args):
        # One call per batch element, in order (JAX maps the callback over the batch).
        rows = [
            check_results(callback(*[a[i] if b else a for a, b in zip(args, batched)]), result_avals)
            for i in range(size)
        ]
        if not rows:
            return [np.zeros((0,) + a.shape, a.dtype) for a in result_avals]
        return [np.stack(col) for col in zip(*rows)] if result_avals else []

    looped = HostCallback(
        per_element, ("io_sequential", callback, batched, size), f"sequential({callback!r})"
    )
    batched_avals = tuple(a.update(shape=(size,) + a.shape) for a in result_avals)
    outs = io_callback_p.bind(
        *vals, callback=looped, result_avals=batched_avals, sharding=sharding, ordered=False
    )
    return outs, [0] * len(outs)


io_callback_p.impl = _io_callback_impl
io_callback_p.host_error = callback_failure
io_callback_p.abstract_eval = _io_callback_abstract_eval
io_callback_p.jvp = _io_callback_jvp
io_callback_p.transpose = _io_callback_transpose
io_callback_p.batch = _io_callback_batch
io_callback_p.differentiable = False


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered: bool = False, **kwargs):
    """Call an impure host function on the arguments (Arrays) and return its results as Arrays of
    the declared `result_shape_dtypes` (a pytree of ShapeDtypeStruct-likes). The call happens
    even when its results are unused; with ``ordered=True`` calls run in program order."""
    check_callable("io_callback", callback)
    leaves, result_avals, out_tree, host = flat_host_call(
        "io_callback", callback, args, kwargs, result_shape_dtypes
    )
    outs = io_callback_p.bind(
        *leaves, callback=host, result_avals=result_avals, sharding=sharding, ordered=ordered
    )
    return pytree.tree_unflatten(out_tree, outs)


__all__ = ["io_callback", "io_callback_p"]
