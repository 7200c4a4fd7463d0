"""Making concrete array values from layers below the runtime.

The runtime registers its `Array` class here at import, so primitives and numpy code can create
constants (e.g. a weakly typed Python scalar converted to float32) and recognise concrete arrays
without importing it.
"""

from __future__ import annotations

import itertools

import numpy as np

_factory = [None]
_array_type: list = [()]

# A clock that ticks when a staging trace starts and when a constant is made while some
# transformation is tracing. JAX inlines a scalar constant made inside a trace as a literal
# (`x + jnp.asarray(3.0)` prints `add a 3.0:f32[]`) but keeps a jax.Array the traced function
# closes over as a constvar, also a scalar one (`c = jnp.asarray(2.0)` outside: `add b a`);
# equinox's closure_convert counts on the closed-over one being a const. Only the constants
# `make_array` makes while tracing are stamped (`_made_at`, by the runtime's factory): eager
# operations never pay for the stamp.
tick = itertools.count().__next__


def register_array_type(cls, factory) -> None:
    """The runtime's concrete array class and its constructor ``factory(ndarray, weak_type)``."""
    _array_type[0] = cls
    _factory[0] = factory


def is_concrete_array(x) -> bool:
    """Whether `x` is a runtime Array (a concrete value, ready or pending; not a tracer)."""
    cls = _array_type[0]
    # The class's own hierarchy only: `isinstance(x, Array)` also accepts tracers and key arrays.
    return isinstance(cls, type) and type.__instancecheck__(cls, x)


def make_array(value, dtype=None, weak_type: bool = False):
    """A concrete, ready morphax Array holding `value` (converted to `dtype` when given)."""
    arr = np.asarray(value, dtype=dtype)
    return _factory[0](arr, weak_type)
