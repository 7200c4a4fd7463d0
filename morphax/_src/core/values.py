"""Making concrete array values from layers below the runtime.

The runtime registers its `Array` constructor here at import, so primitives and numpy code can
create constants (e.g. a weakly typed Python scalar converted to float32) without importing it.
"""

from __future__ import annotations

import numpy as np

_factory = [None]


def register_array_factory(fn) -> None:
    _factory[0] = fn


def make_array(value, dtype=None, weak_type: bool = False):
    """A concrete, ready morphax Array holding `value` (converted to `dtype` when given)."""
    arr = np.asarray(value, dtype=dtype)
    return _factory[0](arr, weak_type)
