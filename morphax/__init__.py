"""morphax: JAX's programming model (differentiate, vectorize, compile) in pure Python on NumPy.

Public modules are thin re-exports of `morphax._src`; see README.md for a tour.
"""

from morphax._src import runtime as _runtime  # noqa: F401  (installs the eager trace)
from morphax._src.runtime import eager as _eager  # noqa: F401
from morphax._src import prims as _prims  # noqa: F401
from morphax._src.config import config
from morphax._src.api import ShapeDtypeStruct, make_jaxpr
from morphax._src.runtime.array import Array
from morphax import lax

__version__ = "0.1.0"

__all__ = ["Array", "ShapeDtypeStruct", "config", "lax", "make_jaxpr"]
