"""Public dtype utilities, mirroring ``jax.dtypes``.

Thin re-export of ``morphax._src.core.dtypes``; the implementation and its caches live there.
"""

import numpy as np

from morphax._src.core import dtypes as _core_dtypes
from morphax._src.core.dtypes import ML_DTYPE_NAMES as _ML_DTYPE_NAMES
from morphax._src.core.dtypes import (
    ExtendedDType,
    TypePromotionError,
    can_cast,
    canonicalize_dtype,
    check_user_dtype_supported,
    dtype,
    extended,
    finfo,
    float0,
    iinfo,
    is_python_scalar,
    is_weakly_typed,
    issubdtype,
    itemsize_bits,
    scalar_type_of,
)
from morphax._src.core.promotion import promote_types, result_type  # noqa: F401
from morphax._src.random.keys import prng_key  # noqa: E402  (the key dtypes' category)


def __getattr__(name):
    # bfloat16, float8_*, int4... come from ml_dtypes, imported at their first use (not with morphax).
    # They are the scalar types (`ml_dtypes.bfloat16`), as in JAX, so isinstance(x, dtypes.bfloat16)
    # works; np.dtype(dtypes.bfloat16) gives the dtype.
    if name in _ML_DTYPE_NAMES:
        return np.dtype(getattr(_core_dtypes, name)).type
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ExtendedDType",
    "TypePromotionError",
    "can_cast",
    "canonicalize_dtype",
    "check_user_dtype_supported",
    "dtype",
    "extended",
    "finfo",
    "float0",
    "iinfo",
    "prng_key",
    "is_python_scalar",
    "is_weakly_typed",
    "issubdtype",
    "itemsize_bits",
    "promote_types",
    "result_type",
    "scalar_type_of",
]
__all__ += _ML_DTYPE_NAMES  # bound lazily: see __getattr__


def __dir__():
    return sorted({*globals(), *_ML_DTYPE_NAMES})
