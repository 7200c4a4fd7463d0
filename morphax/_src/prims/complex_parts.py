"""Complex parts: `real`, `imag`, `conj` and `complex`, which builds a complex number from its
parts. They are linear and transpose to each other under JAX's plain (non-conjugating) pairing,
so they live together.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import Zero, is_zero
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._ad import deflinear, linear_operand_ct
from morphax._src.prims._operands import lax_binary_operands
from morphax._src.prims._spec import (
    Case,
    TestSpec,
    binary_cases,
    unary_cases,
)
from morphax._src.prims.builders import (
    as_arrays,
    broadcasting_shape,
    check_class,
    concat_cases,
    elementwise_primitive,
    elementwise_unop,
    same_dtypes,
)
from morphax._src.prims.unary import neg

__all__ = ["complex_p", "complex", "real_p", "imag_p", "real", "imag", "conj_p", "conj"]


# JAX builds complex numbers from float32 or float64 parts only.
_COMPLEX_PARTS = (lambda d: np.dtype(d) in (_dtypes.float32, _dtypes.float64), "float32 or float64")


def _complex_abstract_eval(x, y):
    check_class("complex", x.dtype, _COMPLEX_PARTS, "x")
    check_class("complex", y.dtype, _COMPLEX_PARTS, "y")
    dt = same_dtypes("complex", (x, y))
    shape = broadcasting_shape("complex", x, y)
    return ShapedArray(shape, _dtypes.to_complex_dtype(dt), x.weak_type and y.weak_type)


def _complex_impl(x, y):
    x, y = as_arrays(x, y)
    # Assign the parts: x + 1j * y would turn an infinite y into nan + inf j.
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), _dtypes.to_complex_dtype(x.dtype))
    out.real, out.imag = x, y
    return out


complex_p = elementwise_primitive(
    "complex", _complex_impl, _complex_abstract_eval, TestSpec(cases=binary_cases(dtype_list=("float32",)))
)
complex_p.stablehlo = hlo.elementwise("stablehlo.complex")


def _complex_transpose(ct, x, y):
    # <ct, tx + i ty> = real(ct) tx - imag(ct) ty under the plain (non-conjugating) pairing.
    dense = not is_zero(ct)
    return [
        linear_operand_ct(x, real(ct) if dense else ct),
        linear_operand_ct(y, neg(imag(ct)) if dense else ct),
    ]


deflinear(complex_p, _complex_transpose)


def complex(x, y):  # noqa: A001 - JAX's name
    """Elementwise ``x + i y`` from float32 (float64) parts, giving complex64 (complex128)."""
    return complex_p.bind(*lax_binary_operands("complex", x, y))


def _complex_special_cases(rng):
    vals = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan], dtype=np.float32)
    re, im = np.meshgrid(vals, vals)
    z = np.empty(re.size, np.complex64)
    z.real, z.imag = re.ravel(), im.ravel()
    return [Case((z,), {}, "complex64-specials")]


real_p = elementwise_unop(
    "real",
    lambda x: np.real(x).copy(),
    "complex",
    out_dtype=_dtypes.real_dtype,
    spec=TestSpec(cases=concat_cases(unary_cases("complex"), _complex_special_cases)),
)
real_p.stablehlo = hlo.elementwise("stablehlo.real")


imag_p = elementwise_unop(
    "imag",
    lambda x: np.imag(x).copy(),
    "complex",
    out_dtype=_dtypes.real_dtype,
    spec=TestSpec(cases=concat_cases(unary_cases("complex"), _complex_special_cases)),
)
imag_p.stablehlo = hlo.elementwise("stablehlo.imag")


# Linear; transposes use the plain (non-conjugating) pairing, JAX's convention for complex values:
# real(t) pairs with ct as complex(ct, 0) does with t, imag(t) as complex(0, -ct) does.
deflinear(real_p, lambda ct, x: [ct if is_zero(ct) else complex(ct, 0.0)])
deflinear(imag_p, lambda ct, x: [ct if is_zero(ct) else complex(0.0, neg(ct))])


def real(x):
    """Elementwise real part of a complex array (complex64 -> float32)."""
    return real_p.bind(x)


def imag(x):
    """Elementwise imaginary part of a complex array (complex64 -> float32)."""
    return imag_p.bind(x)


# JAX's conj accepts complex dtypes and the two component dtypes (float32, float64), not f16/bf16.
_CONJ_CLASS = (
    lambda d: _dtypes.is_complex(d) or np.dtype(d) in (_dtypes.float32, _dtypes.float64),
    "complexfloating, float32 or float64",
)


def _conj_impl(x, *, input_dtype):
    (x,) = as_arrays(x)
    if _dtypes.is_complex(x.dtype):
        return np.conj(x)
    return x.astype(_dtypes.to_complex_dtype(x.dtype))


def _conj_cases(rng):
    base = concat_cases(
        unary_cases("complex"), _complex_special_cases, unary_cases("float", dtype_list=("float32",))
    )
    return [Case(c.args, {"input_dtype": c.args[0].dtype}, c.name) for c in base(rng)]


conj_p = elementwise_unop(
    "conj",
    _conj_impl,
    _CONJ_CLASS,
    out_dtype=_dtypes.to_complex_dtype,
    spec=TestSpec(cases=_conj_cases),
)


def _conj_stablehlo(ctx, x, *, input_dtype):
    # complex(real(x), -imag(x)), as JAX lowers it; a real operand gets a zero imaginary part.
    part = (x.shape, _dtypes.real_dtype(ctx.avals_out[0].dtype))
    if _dtypes.is_complex(x.dtype):
        re, im = ctx.op1("stablehlo.real", [x], part), ctx.op1("stablehlo.imag", [x], part)
        im = ctx.op1("stablehlo.negate", [im], part)
    else:
        re, im = x, ctx.constant(0, x.dtype, x.shape)
    return [ctx.op1("stablehlo.complex", [re, im], ctx.avals_out[0])]


conj_p.stablehlo = _conj_stablehlo


def _conj_transpose(ct, x, *, input_dtype):
    if is_zero(ct):
        return [Zero(x.aval)]
    # A real input was widened to complex: its cotangent is the real part.
    return [conj(ct) if _dtypes.is_complex(input_dtype) else real(ct)]


deflinear(conj_p, _conj_transpose)


def conj(x):
    """Elementwise complex conjugate; a float32/float64 input gives the matching complex dtype."""
    return conj_p.bind(x, input_dtype=get_aval(x).dtype)
