"""The primitive catalogue: importing this package registers every primitive."""

from morphax._src.prims import (  # noqa: F401
    binary,
    conversion,
    dot,
    indexing,
    reductions,
    shape,
    sorting,
    unary,
)
