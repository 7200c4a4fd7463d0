"""`morphax.debug.inspect_array_sharding`: call back with an array's sharding, eagerly at once,
and under jit when the program is prepared for its inputs' shardings (once per compiled program
and input shardings, as JAX calls back while compiling), through the `inspect_sharding`
primitive, which sharding propagation (propagation.py) answers."""

from __future__ import annotations

import threading

from morphax._src.core import pytree
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.values import is_concrete_array
from morphax._src.prims._spec import TestSpec


class ShardingCallback:
    """The user's callback as a primitive parameter (hashed by identity); `fire` calls it once
    per program preparation that has not yet reported this value."""

    def __init__(self, fn):
        self.fn = fn
        self._fired = False
        self._lock = threading.Lock()

    def fire(self, sharding, *, again=False):
        with self._lock:
            if self._fired and not again:
                return
            self._fired = True
        self.fn(sharding)

    def __repr__(self):
        return f"ShardingCallback({getattr(self.fn, '__name__', self.fn)!r})"


inspect_sharding_p = Primitive("inspect_sharding", multiple_results=True)
inspect_sharding_p.kind = Kind.EFFECT
# Kept though it has no outputs: the callback is its point.
inspect_sharding_p.has_side_effects = True
inspect_sharding_p.param_defaults = {}
inspect_sharding_p.abstract_eval = lambda x, *, sharding_callback: []
inspect_sharding_p.test_spec = TestSpec(cases=lambda rng: [], differentiable=False)


def _impl(x, *, sharding_callback):
    # Reached when propagation did not run first (nothing placed): one default device holds it.
    from morphax._src.runtime import placement

    sharding_callback.fire(placement.single(placement.default_device()))
    return []


def _jvp(primals, tangents, *, sharding_callback):
    inspect_sharding_p.bind(*primals, sharding_callback=sharding_callback)
    return [], []


def _batch(vals, dims, *, axis_data, sharding_callback):
    inspect_sharding_p.bind(*vals, sharding_callback=sharding_callback)
    return [], []


inspect_sharding_p.impl = _impl
inspect_sharding_p.jvp = _jvp
inspect_sharding_p.transpose = lambda cts, x, *, sharding_callback: [None]
inspect_sharding_p.batch = _batch


def inspect_array_sharding(value, *, callback):
    """Call `callback(sharding)` for each array of the pytree `value`: at once for concrete arrays,
    and, inside jit, when the program is prepared for its inputs' shardings."""
    for leaf in pytree.tree_leaves(value):
        if is_concrete_array(leaf):
            callback(leaf.sharding)
        else:
            inspect_sharding_p.bind(leaf, sharding_callback=ShardingCallback(callback))
