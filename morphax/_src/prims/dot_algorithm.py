"""`DotAlgorithm` and `DotAlgorithmPreset`: JAX's explicit dot-product algorithms, accepted as the
`precision` of `dot_general` (and the functions built on it). Like `Precision` they are recorded in
the jaxpr only: the NumPy reference always accumulates as `dot_general` documents. No imports
from the rest of morphax beyond the dtype table, so `dot` can import this module.
"""

from __future__ import annotations

import enum
import functools
from typing import NamedTuple

import numpy as np

from morphax._src.core import dtypes as _dtypes

__all__ = ["DotAlgorithm", "DotAlgorithmPreset"]


class DotAlgorithm(NamedTuple):
    """A dot algorithm: the types the operands are rounded to, the accumulation type, and (for
    algorithms emulating a wider type) how many components and primitive products they use."""

    lhs_precision_type: object
    rhs_precision_type: object
    accumulation_type: object
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


_F16, _F32, _F64 = np.float16, np.float32, np.float64


@functools.cache
def _narrow_types():
    """(bfloat16's scalar type, the float8 dtypes), from ml_dtypes: imported at the first query
    of a preset's types, not with morphax."""
    f8 = (
        _dtypes.float8_e4m3fn,
        _dtypes.float8_e5m2,
        _dtypes.float8_e5m2fnuz,
        _dtypes.float8_e4m3fnuz,
        _dtypes.float8_e4m3b11fnuz,
    )
    return _dtypes.bfloat16.type, tuple(d for d in f8 if d is not None)


@functools.cache
def _table():
    """name -> (accumulation type, supported lhs/rhs input types); None: any / not fixed."""
    bf16 = _narrow_types()[0]
    return {
        "DEFAULT": (None, None),
        "ANY_F8_ANY_F8_F32": (_F32, None),
        "ANY_F8_ANY_F8_F32_FAST_ACCUM": (_F32, None),
        "ANY_F8_ANY_F8_ANY": (None, None),
        "ANY_F8_ANY_F8_ANY_FAST_ACCUM": (None, None),
        "F16_F16_F16": (_F16, (_F16,)),
        "F16_F16_F32": (_F32, (_F16,)),
        "BF16_BF16_BF16": (bf16, (bf16, _F32)),
        "BF16_BF16_F32": (_F32, (bf16, _F32)),
        "BF16_BF16_F32_X3": (_F32, (_F32,)),
        "BF16_BF16_F32_X6": (_F32, (_F32,)),
        "BF16_BF16_F32_X9": (_F32, (_F32,)),
        "TF32_TF32_F32": (_F32, (_F32,)),
        "TF32_TF32_F32_X3": (_F32, (_F32,)),
        "F32_F32_F32": (_F32, (_F32,)),
        "F64_F64_F64": (_F64, (_F64,)),
    }


class DotAlgorithmPreset(enum.Enum):
    """Named dot algorithms (``LHS_RHS_ACCUM``); pass a member, or its name as a string, as the
    `precision` of a dot product."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self):
        return f"{type(self).__name__}.{self.name}"

    def __str__(self):
        return self.name

    @property
    def accumulation_type(self):
        return _table()[self.name][0]

    @property
    def supported_lhs_types(self):
        return _table()[self.name][1]

    @property
    def supported_rhs_types(self):
        return _table()[self.name][1]

    def supported_output_types(self, lhs_dtype, rhs_dtype):
        """The result types the algorithm can produce for these operand types (None: any)."""
        name = self.name
        if name.startswith("ANY_F8_ANY_F8_F32"):
            bf16, f8 = _narrow_types()
            return (_F32, _F16, bf16) + tuple(d.type for d in f8)
        both = {np.dtype(lhs_dtype), np.dtype(rhs_dtype)}
        # The narrow output exists only when both operands already have that type.
        if name == "F16_F16_F32":
            return (_F32, _F16) if both == {np.dtype(_F16)} else (_F32,)
        if name == "BF16_BF16_F32":
            bf16 = _narrow_types()[0]
            return (_F32, bf16) if both == {np.dtype(bf16)} else (_F32,)
        acc = self.accumulation_type
        return None if acc is None else (acc,)


def as_dot_algorithm(precision):
    """The algorithm `precision` names (a DotAlgorithm, a preset, or a preset's exact name), or
    None when it is not an algorithm (then it is a `Precision` spelling or invalid)."""
    if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        return precision
    if isinstance(precision, str) and precision in DotAlgorithmPreset.__members__:
        return DotAlgorithmPreset[precision]
    return None
