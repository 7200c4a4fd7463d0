"""The names libraries import from JAX's internal `jax._src.ad_util` (the module
`morphax.compat` maps that name to): lineax binds `stop_gradient_p` directly, and custom rules
use the symbolic zero and its helpers."""

from __future__ import annotations

from morphax._src.core.ad_util import Zero, instantiate, is_undefined_primal, zeros_like_aval
from morphax._src.extend.primitives import add_tangents as add_jaxvals
from morphax._src.prims.conversion import stop_gradient_p

__all__ = ["Zero", "add_jaxvals", "instantiate", "is_undefined_primal", "stop_gradient_p", "zeros_like_aval"]
