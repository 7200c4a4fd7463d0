"""`morphax.nn`: activation functions and attention, mirroring ``jax.nn`` (thin re-export of
`morphax._src.nn`)."""

from morphax._src.nn.attention import dot_product_attention  # noqa: F401
from morphax._src.nn.functions import *  # noqa: F401,F403
from morphax._src.nn.functions import __all__ as _function_names
from morphax._src.nn.scaled_matmul import get_scaled_dot_general_config, scaled_dot_general, scaled_matmul  # noqa: F401
from morphax.nn import initializers  # noqa: F401

__all__ = [
    *_function_names,
    "dot_product_attention",
    "get_scaled_dot_general_config",
    "scaled_dot_general",
    "scaled_matmul",
]
