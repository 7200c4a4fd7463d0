"""`morphax.lax`: the primitives' Python wrappers (thin re-export of `morphax._src.prims.lax_api`)."""

from morphax._src.higher_order.conditionals import *  # noqa: F401,F403
from morphax._src.higher_order.loops import *  # noqa: F401,F403
from morphax._src.higher_order.reduce import *  # noqa: F401,F403
from morphax._src.higher_order.solvers import *  # noqa: F401,F403
from morphax._src.higher_order.while_loop import *  # noqa: F401,F403
from morphax._src.prims.lax_api import *  # noqa: F401,F403
from morphax._src.sharding.constraint import with_sharding_constraint  # noqa: F401
from morphax.lax import linalg as linalg  # noqa: E402
