"""`morphax.numpy`: the NumPy API on morphax arrays, mirroring ``jax.numpy``.

Thin re-export of `morphax._src.numpy`; importing it also installs the array methods
(operators, ``.sum()``, ``.at[]``...) on `Array` and on tracers.
"""

import sys as _sys

import numpy as _np

from morphax._src.core.dtypes import (  # noqa: F401
    can_cast,
    finfo,
    iinfo,
    issubdtype,
)
from morphax._src.core.promotion import promote_types, result_type  # noqa: F401
from morphax._src.numpy.array_editing import *  # noqa: F401,F403
from morphax._src.numpy.bit_packing import *  # noqa: F401,F403
from morphax._src.numpy.calculus import *  # noqa: F401,F403
from morphax._src.numpy.composed_ufuncs import *  # noqa: F401,F403
from morphax._src.numpy.convolve import *  # noqa: F401,F403
from morphax._src.numpy.creation import *  # noqa: F401,F403
from morphax._src.numpy.diagonals import *  # noqa: F401,F403
from morphax._src.numpy.host_io import *  # noqa: F401,F403
from morphax._src.numpy.index_tricks import *  # noqa: F401,F403
from morphax._src.numpy.indexing import *  # noqa: F401,F403
from morphax._src.numpy.manipulation import *  # noqa: F401,F403
from morphax._src.numpy.padding import *  # noqa: F401,F403
from morphax._src.numpy.polynomials import *  # noqa: F401,F403
from morphax._src.numpy.products import *  # noqa: F401,F403
from morphax._src.numpy.reductions import *  # noqa: F401,F403
from morphax._src.numpy.rounding import *  # noqa: F401,F403
from morphax._src.numpy.scalar_types import *  # noqa: F401,F403
from morphax._src.numpy.searching import *  # noqa: F401,F403
from morphax._src.numpy.statistics import *  # noqa: F401,F403
from morphax._src.numpy.type_predicates import *  # noqa: F401,F403
from morphax._src.numpy.ufunc_objects import *  # noqa: F401,F403
from morphax._src.numpy.ufuncs import *  # noqa: F401,F403
from morphax._src.numpy.vectorize import *  # noqa: F401,F403
from morphax._src.numpy.windows import *  # noqa: F401,F403
from morphax._src.runtime.array import Array as ndarray  # noqa: F401

# NB: np.dtype itself, as in JAX; it reads the string "bfloat16" (and the other ml_dtypes names)
# only once ml_dtypes is loaded, which `import morphax` leaves to the first use of such a type
# (jnp.bfloat16, or any morphax function given dtype="bfloat16"); JAX loads it at import.
dtype = _np.dtype
pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
euler_gamma = _np.euler_gamma
newaxis = None

# The jax.numpy ufunc objects (add, multiply, maximum...: callables with reduce/accumulate/at/
# reduceat/outer) take the place of the plain functions of the same names.
# Last: Array and Tracer methods forward to the functions of this namespace.
from morphax._src.api.eager_compiled import compiled_when_eager as _compiled_when_eager  # noqa: E402
from morphax._src.numpy import array_methods as _array_methods  # noqa: E402
from morphax._src.numpy import searching as _searching  # noqa: E402
from morphax._src.numpy.reductions import var as _var  # noqa: E402
from morphax._src.numpy.ufunc_objects import (  # noqa: E402,F401  (after ufuncs.*: these names win)
    add,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    logaddexp,
    logaddexp2,
    logical_and,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    multiply,
    negative,
    subtract,
)
from morphax.numpy import fft as fft  # noqa: E402
from morphax.numpy import linalg as linalg  # noqa: E402,F401

# Called eagerly, one compiled program per signature, as JAX's jit-decorated reductions (the
# variance of a (1000, 1000) array: one native pass, not five NumPy ones).
var = _compiled_when_eager(
    _var,
    static_argnums=(1, 2, 3, 4, 5),
    static_argnames=("axis", "dtype", "out", "ddof", "keepdims", "correction"),
)
# where(c, x, y) is JAX's jit-decorated _where: one compiled program when called eagerly, a
# nested jit[name=_where] equation under a trace.
_searching._where_jit = _compiled_when_eager(_searching._where, inline=False)

_array_methods.install_all(_sys.modules[__name__])

from morphax._src.numpy import scalar_types as _scalar_types  # noqa: E402


def __getattr__(name):
    # jnp.bfloat16 and the other ml_dtypes types are made, and ml_dtypes imported, at first use.
    if name in _scalar_types.LAZY_NAMES:
        return getattr(_scalar_types, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_scalar_types.LAZY_NAMES})
