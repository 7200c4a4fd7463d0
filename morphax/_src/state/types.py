"""The types of mutable array references as JAX's internal `jax._src.state.types` names them:
`AbstractRef` (a reference's abstract value) and `TransformedRef`'s base, `Ref`."""

from morphax._src.core.state_types import AbstractRef, Ref

__all__ = ["AbstractRef", "Ref"]
