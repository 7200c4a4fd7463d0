"""Every lax wrapper and primitive object in one namespace (what `morphax.lax` re-exports and
what the numpy layer calls)."""

from morphax._src.prims.binary import *  # noqa: F401,F403
from morphax._src.prims.bitwise import *  # noqa: F401,F403
from morphax._src.prims.collectives import *  # noqa: F401,F403
from morphax._src.prims.collectives_composed import *  # noqa: F401,F403
from morphax._src.prims.compare import *  # noqa: F401,F403
from morphax._src.prims.compiler_hints import *  # noqa: F401,F403
from morphax._src.prims.composites import *  # noqa: F401,F403
from morphax._src.prims.concatenate import *  # noqa: F401,F403
from morphax._src.prims.conv_composites import *  # noqa: F401,F403
from morphax._src.prims.conv_layouts import *  # noqa: F401,F403
from morphax._src.prims.conv_local import *  # noqa: F401,F403
from morphax._src.prims.conversion import *  # noqa: F401,F403
from morphax._src.prims.convolution import *  # noqa: F401,F403
from morphax._src.prims.dot import *  # noqa: F401,F403
from morphax._src.prims.dot_algorithm import *  # noqa: F401,F403
from morphax._src.prims.fft import *  # noqa: F401,F403
from morphax._src.prims.indexing import *  # noqa: F401,F403
from morphax._src.prims.lax_rng import *  # noqa: F401,F403
from morphax._src.prims.linalg import *  # noqa: F401,F403
from morphax._src.prims.pad import *  # noqa: F401,F403
from morphax._src.prims.prng import *  # noqa: F401,F403
from morphax._src.prims.ragged_dot import *  # noqa: F401,F403
from morphax._src.prims.reduce_precision import *  # noqa: F401,F403
from morphax._src.prims.reductions import *  # noqa: F401,F403
from morphax._src.prims.scaled_dot import *  # noqa: F401,F403
from morphax._src.prims.scatter import *  # noqa: F401,F403
from morphax._src.prims.selection import *  # noqa: F401,F403
from morphax._src.prims.shape import *  # noqa: F401,F403
from morphax._src.prims.slicing import *  # noqa: F401,F403
from morphax._src.prims.sorting import *  # noqa: F401,F403
from morphax._src.prims.special import *  # noqa: F401,F403
from morphax._src.prims.tokens import *  # noqa: F401,F403
from morphax._src.prims.transcendental import *  # noqa: F401,F403
from morphax._src.prims.unary import *  # noqa: F401,F403
from morphax._src.prims.windowed import *  # noqa: F401,F403
