"""The primitive catalogue: importing this package registers every primitive."""

from morphax._src.prims import (  # noqa: F401
    binary,
    bitwise,
    collectives,
    compare,
    conversion,
    dot,
    indexing,
    prng,
    reductions,
    scatter,
    selection,
    shape,
    slicing,
    sorting,
    transcendental,
    unary,
)
