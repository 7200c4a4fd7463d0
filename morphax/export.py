"""Public ``morphax.export``: JAX's ``jax.export`` API (export a jitted function, call it,
serialize it, symbolic shapes). Re-exports only, from ``morphax._src.export``."""

from morphax._src.export.conventions import (
    DisabledSafetyCheck,
    default_export_platform,
    maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version,
)
from morphax._src.export.dim_expr import is_symbolic_dim
from morphax._src.export.exported import Exported, deserialize, export
from morphax._src.export.shape_specs import SymbolicScope, symbolic_args_specs, symbolic_shape
from morphax._src.export.tree_serialization import (
    register_namedtuple_serialization,
    register_pytree_node_serialization,
)

__all__ = [
    "DisabledSafetyCheck",
    "Exported",
    "export",
    "deserialize",
    "register_pytree_node_serialization",
    "register_namedtuple_serialization",
    "maximum_supported_calling_convention_version",
    "minimum_supported_calling_convention_version",
    "default_export_platform",
    "SymbolicScope",
    "is_symbolic_dim",
    "symbolic_shape",
    "symbolic_args_specs",
]
