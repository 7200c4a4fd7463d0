"""Test specs: how the generated test matrix exercises each primitive.

A spec yields `Case`s (concrete NumPy operands + params) over the standard shape matrix
(scalar, vector, matrix, broadcasting pairs, size-0 and size-1 axes) and the dtypes a primitive
accepts, plus its special values. Used only by tests and docs; imports numpy and dtypes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from morphax._src.core import dtypes as _dtypes

# Dtypes exercised for each dtype class (x32 mode: the canonical ones).
DTYPES_FOR_CLASS = {
    "float": ("float32", "float16", "bfloat16"),
    "inexact": ("float32", "float16", "bfloat16", "complex64"),
    "complex": ("complex64",),
    "numeric": ("float32", "bfloat16", "int32", "uint8", "int8", "complex64"),
    "signed": ("float32", "int32", "int8", "complex64"),
    "real": ("float32", "int32", "uint32", "bool"),
    "real_numeric": ("float32", "float16", "int32", "uint16", "int8"),
    "integer": ("int32", "uint32", "int8", "uint8", "int16"),
    "int_or_bool": ("int32", "uint32", "int8", "uint8", "bool"),
    "any": ("float32", "int32", "bool", "complex64", "uint8"),
}

UNARY_SHAPES = ((), (3,), (2, 3), (0,), (1, 4), (2, 0, 3))
BINARY_SHAPES = (
    ((), ()),
    ((3,), (3,)),
    ((2, 3), (2, 3)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((1, 3), (2, 3)),
    ((2, 1), (1, 3)),
    ((0,), (0,)),
    ((0, 3), (1, 3)),
)

FLOAT_SPECIALS = (0.0, -0.0, 1.0, -1.0, np.pi, -np.pi, np.inf, -np.inf, np.nan, 1e6, -1e6, 0.5)


@dataclasses.dataclass(frozen=True)
class Case:
    args: tuple
    params: dict
    name: str

    def __repr__(self):
        return self.name


@dataclasses.dataclass
class TestSpec:
    """`cases(rng)` yields Cases; `tol` overrides comparison tolerance per dtype name;
    `grad_order` / `domain` serve the autodiff tests added later."""

    cases: Callable[[np.random.Generator], list]
    tol: dict | None = None
    grad_order: int = 2
    differentiable: bool = True


def random_array(rng, shape, dtype, domain=None):
    dt = _dtypes.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if _dtypes.is_integer(dt):
        info = np.iinfo(dt)
        lo, hi = domain if domain is not None else (-10, 10)
        lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
        return rng.integers(lo, hi + 1, size=shape).astype(dt)
    lo, hi = domain if domain is not None else (-3.0, 3.0)
    if _dtypes.is_complex(dt):
        re = rng.uniform(lo, hi, size=shape)
        im = rng.uniform(lo, hi, size=shape)
        return (re + 1j * im).astype(dt)
    return rng.uniform(lo, hi, size=shape).astype(dt)


def _special_array(dtype, specials):
    dt = _dtypes.dtype(dtype)
    if _dtypes.is_inexact(dt):
        return np.array(specials, dtype=np.float64).astype(dt)
    return None


def unary_cases(
    dtypes="inexact",
    *,
    domain=None,
    specials=FLOAT_SPECIALS,
    shapes=UNARY_SHAPES,
    params=None,
    dtype_list=None,
):
    """Cases for a one-operand elementwise primitive."""
    names = dtype_list or DTYPES_FOR_CLASS[dtypes]
    param_sets = params or [{}]

    def cases(rng):
        out = []
        for dt in names:
            for p in param_sets:
                for shape in shapes:
                    out.append(
                        Case((random_array(rng, shape, dt, domain),), dict(p), f"{dt}{list(shape)}{p or ''}")
                    )
                special = _special_array(dt, specials) if specials else None
                if special is not None:
                    out.append(Case((special,), dict(p), f"{dt}-specials{p or ''}"))
        return out

    return cases


def binary_cases(
    dtypes="numeric",
    *,
    domain=None,
    rhs_domain=None,
    specials=FLOAT_SPECIALS,
    shapes=BINARY_SHAPES,
    dtype_list=None,
    params=None,
):
    """Cases for a two-operand elementwise primitive, including lax broadcasting pairs and, for
    inexact dtypes, every pairing of the special values."""
    names = dtype_list or DTYPES_FOR_CLASS[dtypes]
    param_sets = params or [{}]

    def cases(rng):
        out = []
        for dt in names:
            for p in param_sets:
                for sx, sy in shapes:
                    x = random_array(rng, sx, dt, domain)
                    y = random_array(rng, sy, dt, rhs_domain if rhs_domain is not None else domain)
                    out.append(Case((x, y), dict(p), f"{dt}{list(sx)}{list(sy)}{p or ''}"))
                special = _special_array(dt, specials) if specials else None
                if special is not None:
                    xs, ys = np.meshgrid(special, special)
                    out.append(Case((xs.ravel(), ys.ravel()), dict(p), f"{dt}-specials{p or ''}"))
                elif _dtypes.is_integer(_dtypes.dtype(dt)):
                    # Integer edge cases: zero divisors, extremes, negative operands.
                    info = np.iinfo(_dtypes.dtype(dt))
                    vals = np.array(
                        sorted(
                            {
                                0,
                                1,
                                2,
                                7,
                                int(info.max),
                                int(info.min),
                                int(info.min) + 1,
                                min(-1, 0) if info.min < 0 else 3,
                                -7 if info.min < 0 else 5,
                            }
                        )
                    )
                    vals = vals.astype(_dtypes.dtype(dt))
                    xs, ys = np.meshgrid(vals, vals)
                    out.append(Case((xs.ravel(), ys.ravel()), dict(p), f"{dt}-edges{p or ''}"))
        return out

    return cases


def explicit_cases(fn):
    """Wrap a hand-written generator `fn(rng) -> list[Case]`."""
    return fn
