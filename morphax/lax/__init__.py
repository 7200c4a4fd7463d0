"""`morphax.lax`: the primitives' Python wrappers (thin re-export of `morphax._src.prims.lax_api`)."""

from morphax._src.prims.lax_api import *  # noqa: F401,F403
