"""The dtype names libraries import from JAX's internal `jax._src.dtypes` (the module
`morphax.compat` maps that name to): every name of morphax's dtype module (`finfo`, `extended`,
`ExtendedDType`, `TypePromotionError`, `issubdtype`, ...) plus `DType` and `supports_inf`."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _core_dtypes

DType = np.dtype


def supports_inf(dtype) -> bool:
    """Whether values of `dtype` can be infinite: the complex types and the floating ones except
    the float8 formats without infinities (e4m3fn, e4m3fnuz, e5m2fnuz, e8m0fnu, ...)."""
    dtype = np.dtype(dtype)
    if not _core_dtypes.is_inexact(dtype):
        return False
    if _core_dtypes.is_complex(dtype):
        return True
    with np.errstate(all="ignore"):
        return bool(np.isinf(np.array(np.inf).astype(dtype).astype(np.float32)))


def __getattr__(name):
    return getattr(_core_dtypes, name)
