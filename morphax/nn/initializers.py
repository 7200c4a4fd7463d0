"""`morphax.nn.initializers`: parameter initializers, mirroring ``jax.nn.initializers`` (same numbers
for the same key). Thin re-export of `morphax._src.nn.initializers`."""

from morphax._src.nn.initializers import *  # noqa: F401,F403
from morphax._src.nn.initializers import __all__  # noqa: F401
