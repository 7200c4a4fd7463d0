"""`morphax.ad_checkpoint`: rematerialization (`checkpoint` / `remat`), its policies, `checkpoint_name`
and `print_saved_residuals` (thin re-export of `morphax._src.higher_order.remat`)."""

from morphax._src.higher_order.remat import (  # noqa: F401
    Offloadable,
    Recompute,
    Saveable,
    checkpoint,
    checkpoint_name,
    checkpoint_policies,
    print_saved_residuals,
    remat,
)

__all__ = [
    "Offloadable",
    "Recompute",
    "Saveable",
    "checkpoint",
    "checkpoint_name",
    "checkpoint_policies",
    "print_saved_residuals",
    "remat",
]
