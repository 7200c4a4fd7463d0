"""Unary elementwise primitives: math, rounding, bit counting, complex parts.

Each primitive is one declaration (see `_helpers`) with its lax wrapper right beside it.
Later issues add jvp/batch/lower rules into these same blocks. Imports the core only.
"""

from __future__ import annotations

import numpy as np

from morphax._src.prims._helpers import unary_elementwise

__all__ = ["sin", "sin_p"]

sin_p = unary_elementwise("sin", np.sin, dtypes="inexact")


def sin(x):
    """Elementwise sine."""
    return sin_p.bind(x)
