"""Making concrete array values from layers below the runtime.

The runtime registers its `Array` class here at import, so primitives and numpy code can create
constants (e.g. a weakly typed Python scalar converted to float32) and recognise concrete arrays
without importing it.
"""

from __future__ import annotations

import numpy as np

_factory = [None]
_array_type: list = [()]


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
