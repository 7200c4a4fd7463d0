"""`morphax.nn`: activation functions, mirroring ``jax.nn`` (thin re-export of `morphax._src.nn`)."""

from morphax._src.nn.functions import *  # noqa: F401,F403
from morphax._src.nn.functions import __all__  # noqa: F401
