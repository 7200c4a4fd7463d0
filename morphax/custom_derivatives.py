"""`morphax.custom_derivatives`: user-defined derivative rules, mirroring ``jax.custom_derivatives``."""

from morphax._src.api.autodiff import closure_convert, custom_gradient  # noqa: F401
from morphax._src.higher_order.custom_calls import custom_jvp_call_p, custom_vjp_call_p  # noqa: F401
from morphax._src.higher_order.linear_call import linear_call  # noqa: F401
from morphax._src.transforms.custom import (  # noqa: F401
    CustomVJPPrimal,
    SymbolicZero,
    custom_jvp,
    custom_vjp,
    custom_vjp_primal_tree_values,
    zero_from_primal,
)

__all__ = [
    "CustomVJPPrimal",
    "SymbolicZero",
    "closure_convert",
    "custom_gradient",
    "custom_jvp",
    "custom_jvp_call_p",
    "custom_vjp",
    "custom_vjp_call_p",
    "custom_vjp_primal_tree_values",
    "linear_call",
    "zero_from_primal",
]
