"""`morphax.extend.linear_util` (`jax.extend.linear_util`): `WrappedFun`, a function with a stack
of transformations applied when it is called, and the ways to build one."""

from morphax._src.extend.linear_util import (
    Store,
    StoreException,
    WrappedFun,
    cache,
    merge_linear_aux,
    transformation,
    transformation2,
    transformation_with_aux,
    transformation_with_aux2,
    wrap_init,
)

__all__ = [
    "Store",
    "StoreException",
    "WrappedFun",
    "cache",
    "merge_linear_aux",
    "transformation",
    "transformation2",
    "transformation_with_aux",
    "transformation_with_aux2",
    "wrap_init",
]
