"""`morphax.extend` (`jax.extend`): the surface for libraries that extend morphax.

- `core`: `Primitive` (define an operation with its own rules), jaxpr types and trace helpers;
- `linear_util`: `WrappedFun` and its transformations;
- `backend`: the backends and devices computations run on;
- `source_info_util`: where traced operations come from (names only: morphax keeps none).
"""

from morphax.extend import backend, core, linear_util, source_info_util

__all__ = ["backend", "core", "linear_util", "source_info_util"]
