"""The primitive catalogue: importing this package registers every primitive."""

from morphax._src.prims import (  # noqa: F401
    binary,
    bitwise,
    compare,
    conversion,
    dot,
    indexing,
    prng,
    reductions,
    scatter,
    shape,
    slicing,
    sorting,
    transcendental,
    unary,
)
