"""`morphax.interpreters.mlir` (`jax.interpreters.mlir`): lowerings of user primitives, defined in
morphax._src.interpreters.mlir (also `jax._src.interpreters.mlir` under morphax.compat)."""

from morphax._src.interpreters.mlir import *  # noqa: F401,F403
from morphax._src.interpreters.mlir import __all__  # noqa: F401
