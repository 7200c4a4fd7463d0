"""`morphax.interpreters.mlir` (`jax.interpreters.mlir`): lowerings of user primitives. (the module is morphax._src.interpreters.mlir)."""

from morphax._src.interpreters.mlir import *  # noqa: F401,F403
from morphax._src.interpreters.mlir import __all__  # noqa: F401
