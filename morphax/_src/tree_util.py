"""What libraries import from JAX's internal `jax._src.tree_util` (the module `morphax.compat`
maps that name to): `_registry`, the table of pytree node types by exact type (the built-in
containers and every registered class), and the public pytree functions."""

from morphax._src.core.pytree_api import *  # noqa: F403 - the public pytree functions, as JAX's module has them
from morphax._src.core.pytree_registry import _registry  # noqa: F401
