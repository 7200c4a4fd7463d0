"""`morphax.interpreters.partial_eval` (`jax.interpreters.partial_eval`): staging a function and (the module is morphax._src.interpreters.partial_eval)."""

from morphax._src.interpreters.partial_eval import *  # noqa: F401,F403
from morphax._src.interpreters.partial_eval import __all__  # noqa: F401
