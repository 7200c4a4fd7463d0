"""`morphax.interpreters.batching` (`jax.interpreters.batching`): vmap rules. (the module is morphax._src.interpreters.batching)."""

from morphax._src.interpreters.batching import *  # noqa: F401,F403
from morphax._src.interpreters.batching import __all__  # noqa: F401
