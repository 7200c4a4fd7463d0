"""`morphax.numpy.linalg`: NumPy's linear algebra, mirroring ``jax.numpy.linalg`` (thin re-export
of `morphax._src.numpy.linalg`)."""

from morphax._src.api.eager_compiled import compiled_when_eager as _compiled_when_eager
from morphax._src.numpy.linalg import *  # noqa: F401,F403
from morphax._src.numpy.linalg import norm as _norm

# As JAX's jit-decorated norm: one compiled program per signature called eagerly, a nested
# jit[name=norm] equation under a trace.
norm = _compiled_when_eager(
    _norm, static_argnums=(1, 2, 3), static_argnames=("ord", "axis", "keepdims"), inline=False
)
