"""`morphax.lax`: the primitives' Python wrappers (thin re-export of `morphax._src.prims.lax_api`)."""

from morphax._src.control_flow.conditionals import *  # noqa: F401,F403
from morphax._src.control_flow.loops import *  # noqa: F401,F403
from morphax._src.control_flow.reduce import *  # noqa: F401,F403
from morphax._src.control_flow.solvers import *  # noqa: F401,F403
from morphax._src.control_flow.while_loop import *  # noqa: F401,F403
from morphax._src.prims.lax_api import *  # noqa: F401,F403
from morphax.lax import linalg as linalg  # noqa: E402
