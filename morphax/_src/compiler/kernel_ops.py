"""The compiler's vocabulary of kernel operations and their NumPy meaning.

Each ELEMENTWISE or REDUCE primitive names its operation (`Primitive.kernel_op`); the meaning of
that operation is the primitive's reference implementation, found here through the metadata
(never by primitive name). Backends render the same names to their own code; the reference is
the oracle their tests compare with.
"""

from __future__ import annotations

from morphax._src.core.primitive import Kind, registry

_by_op: dict = {}


def _table() -> dict:
    if not _by_op:
        for prim in list(registry.values()):
            op = getattr(prim, "kernel_op", None)
            if op is not None and prim.kind in (Kind.ELEMENTWISE, Kind.REDUCE):
                _by_op[op] = prim
    return _by_op


def reference(op: str):
    """The NumPy implementation of kernel op `op` (arrays in, array or tuple out, params as kwargs)."""
    try:
        return _table()[op].impl
    except KeyError:
        raise KeyError(f"no primitive declares kernel_op {op!r}") from None
