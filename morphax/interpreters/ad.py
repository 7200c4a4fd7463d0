"""`morphax.interpreters.ad` (`jax.interpreters.ad`): forward- and reverse-mode rules, defined in
morphax._src.interpreters.ad (which is also `jax._src.interpreters.ad` under morphax.compat)."""

from morphax._src.interpreters.ad import *  # noqa: F401,F403
from morphax._src.interpreters.ad import __all__  # noqa: F401
