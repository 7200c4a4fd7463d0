"""`morphax.interpreters.batching` (`jax.interpreters.batching`): vmap rules, defined in
morphax._src.interpreters.batching (also `jax._src.interpreters.batching` under morphax.compat)."""

from morphax._src.interpreters.batching import *  # noqa: F401,F403
from morphax._src.interpreters.batching import __all__  # noqa: F401
