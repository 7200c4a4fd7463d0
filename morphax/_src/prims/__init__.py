"""The primitive catalogue: importing this package registers every primitive."""

from morphax._src.prims import (  # noqa: F401
    binary,
    bitwise,
    collectives,
    compare,
    conversion,
    convolution,
    dot,
    fft,
    indexing,
    linalg,
    prng,
    reductions,
    scatter,
    selection,
    shape,
    slicing,
    sorting,
    transcendental,
    unary,
    windowed,
)
