"""What every distribution module shares: argument checking and promotion to one inexact dtype."""

from __future__ import annotations

from morphax._src.numpy import util as _util


def promote(name, *args):
    """The arguments as arrays of one inexact dtype (integers promote to the default float)."""
    _util.check_arraylike(name, *args)
    return _util.promote_dtypes_inexact(*args)
