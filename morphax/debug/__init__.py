"""`morphax.debug`: print and inspect values from inside transformed functions (`jax.debug`).

`print` and `callback` run at execution time with concrete values, also under jit, vmap and grad.
"""

from morphax._src.api.debugging import breakpoint
from morphax._src.api.debugging import debug_callback as callback
from morphax._src.api.debugging import debug_log as log
from morphax._src.api.debugging import debug_print as print
from morphax._src.core.effects import DebugEffect, OrderedDebugEffect
from morphax._src.sharding.inspect import inspect_array_sharding
from morphax._src.sharding.visualize import visualize_array_sharding, visualize_sharding

__all__ = [
    "DebugEffect",
    "OrderedDebugEffect",
    "breakpoint",
    "callback",
    "inspect_array_sharding",
    "log",
    "print",
    "visualize_array_sharding",
    "visualize_sharding",
]
