"""`morphax.interpreters.ad` (`jax.interpreters.ad`): forward- and reverse-mode rules. (the module is morphax._src.interpreters.ad)."""

from morphax._src.interpreters.ad import *  # noqa: F401,F403
from morphax._src.interpreters.ad import __all__  # noqa: F401
