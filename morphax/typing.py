"""`morphax.typing` (`jax.typing`): static type annotations for arrays and dtypes.

- `ArrayLike`: anything that converts implicitly to an array: `morphax.Array` (tracers included),
  `numpy.ndarray`, NumPy scalars and Python `bool`/`int`/`float`/`complex`. Lists, tuples and
  strings are not array-like (as in JAX). It is a `typing.Union`, so `isinstance(x, ArrayLike)`
  works at run time.
- `DTypeLike`: anything that names a dtype: a string (`"float32"`), a scalar type (`float`,
  `numpy.int32`, `morphax.numpy.float32`), a `numpy.dtype`, or an object with a `dtype` attribute.
- `StaticScalar`, `Shape`, `DimSize`, `DType`, `SupportsDType`, `DuckTypedArray`: the pieces the
  two are built from, and JAX's names for shapes and duck-typed arrays.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from morphax._src.runtime.array import Array

DType = np.dtype


@typing.runtime_checkable
class SupportsDType(Protocol):
    """Anything with a `dtype` attribute (an array, `morphax.numpy.float32`, a ShapeDtypeStruct)."""

    @property
    def dtype(self, /) -> DType: ...


class DuckTypedArray(Protocol):
    """Anything with `shape` and `dtype` (what `eval_shape` and `zeros_like` accept)."""

    @property
    def dtype(self) -> DType: ...

    @property
    def shape(self) -> Shape: ...


# Scalars that convert to an array without a dtype of their own choosing being lost.
StaticScalar = np.bool_ | np.number | bool | int | float | complex

ArrayLike = Array | np.ndarray | StaticScalar

DTypeLike = str | type[Any] | np.dtype | SupportsDType

DimSize = int | Any
Shape = Sequence[DimSize]

__all__ = [
    "ArrayLike",
    "DTypeLike",
    "DType",
    "DimSize",
    "DuckTypedArray",
    "Shape",
    "StaticScalar",
    "SupportsDType",
]
