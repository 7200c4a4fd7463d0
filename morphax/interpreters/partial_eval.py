"""`morphax.interpreters.partial_eval` (`jax.interpreters.partial_eval`): staging and partial
evaluation, defined in morphax._src.interpreters.partial_eval (also
`jax._src.interpreters.partial_eval` under morphax.compat)."""

from morphax._src.interpreters.partial_eval import *  # noqa: F401,F403
from morphax._src.interpreters.partial_eval import __all__  # noqa: F401
