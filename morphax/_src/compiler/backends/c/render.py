"""Rendering fused kernels to C: one function per kernel, named after the program, with locals
named after the jaxpr variables they hold (`v_c` for the printed jaxpr's `c`) and a comment listing
the equations it fuses.

C's traps are JAX's defined answers here: signed arithmetic wraps (done in unsigned types), integer
division and remainder by zero and INT_MIN / -1 give XLA's results, shifts by >= the bit width
give 0 (or the sign), float -> int conversions saturate (NaN -> 0). No undefined behaviour.
"""

from __future__ import annotations

import hashlib
import math
import os

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.index_expr import IndexExpr

CODEGEN_VERSION = "1"

_STORAGE = {
    np.dtype(np.bool_): "uint8_t",
    np.dtype(np.int8): "int8_t",
    np.dtype(np.int16): "int16_t",
    np.dtype(np.int32): "int32_t",
    np.dtype(np.int64): "int64_t",
    np.dtype(np.uint8): "uint8_t",
    np.dtype(np.uint16): "uint16_t",
    np.dtype(np.uint32): "uint32_t",
    np.dtype(np.uint64): "uint64_t",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}
# float16 and bfloat16 are stored as their bits and computed in float32, rounded back to their
# own precision after every operation (as XLA on CPU, and NumPy / ml_dtypes per ufunc call).
_NARROW = {np.dtype(_dtypes.float16): ("mx_f16_to_f32", "mx_f32_to_f16", "mx_f64_to_f16")}
_NARROW[np.dtype(_dtypes.bfloat16)] = ("mx_bf16_to_f32", "mx_f32_to_bf16", "mx_f64_to_bf16")
_STORAGE.update({d: "uint16_t" for d in _NARROW})
DTYPES = frozenset(_STORAGE)
# Reductions and arg-reductions accumulate in the storage dtype: not the narrow floats.
REDUCE_DTYPES = DTYPES - set(_NARROW)

# Math kernel ops: (float32 function, float64 function). The mx_ functions are morphax's own
# vectorizable implementations (mathlib.h, with their measured ulp bounds); sqrt/floor/ceil are
# single instructions under -fno-math-errno. erf_inv in float32 is XLA's algorithm bit for bit,
# as the reference (random.normal is bit-identical to JAX through it).
_MATH = {
    "exp": ("mx_expf", "mx_exp"),
    "exp2": ("mx_exp2f", "mx_exp2"),
    "expm1": ("mx_expm1f", "mx_expm1"),
    "log": ("mx_logf", "mx_log"),
    "log1p": ("mx_log1pf", "mx_log1p"),
    "tanh": ("mx_tanhf", "mx_tanh"),
    "logistic": ("mx_logisticf", "mx_logistic"),
    "sin": ("mx_sinf", "mx_sin"),
    "cos": ("mx_cosf", "mx_cos"),
    "tan": ("mx_tanf", "mx_tan"),
    "asin": ("mx_asinf", "mx_asin"),
    "acos": ("mx_acosf", "mx_acos"),
    "atan": ("mx_atanf", "mx_atan"),
    "sinh": ("mx_sinhf", "mx_sinh"),
    "cosh": ("mx_coshf", "mx_cosh"),
    "asinh": ("mx_asinhf", "mx_asinh"),
    "acosh": ("mx_acoshf", "mx_acosh"),
    "atanh": ("mx_atanhf", "mx_atanh"),
    "erf": ("mx_erff", "mx_erf"),
    "erfc": ("mx_erfcf", "mx_erfc"),
    "erf_inv": ("mx_xla_erf_invf", "mx_erf_inv"),
    "lgamma": ("mx_lgammaf", "mx_lgamma"),
    "digamma": ("mx_digammaf", "mx_digamma"),
    "cbrt": ("mx_cbrtf", "mx_cbrt"),
    "rsqrt": ("mx_rsqrtf", "mx_rsqrt"),
    "sqrt": ("sqrtf", "sqrt"),
    "floor": ("floorf", "floor"),
    "ceil": ("ceilf", "ceil"),
    "atan2": ("mx_atan2f", "mx_atan2"),
    "pow": ("mx_powf", "mx_pow"),
    "nextafter": ("nextafterf", "nextafter"),
}
_ARITH = {"add": "+", "sub": "-", "mul": "*"}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_BITWISE = {"and": "&", "or": "|", "xor": "^"}
_FLOAT_ONLY = set(_MATH) | {"is_finite", "round"}
_INT_ONLY = {"shift_left", "shift_right_logical", "shift_right_arithmetic", "population_count", "clz"}
_ANY = {
    "neg",
    "abs",
    "sign",
    "max",
    "min",
    "div",
    "rem",
    "square",
    "integer_pow",
    "copy",
    "stop_gradient",
    "name",
}
_ANY |= set(_ARITH) | set(_COMPARE)
_STRUCTURAL = {
    "select_n",
    "clamp",
    "convert_element_type",
    "bitcast_convert_type",
    "iota",
    "threefry2x32",
    "not",
}
_STRUCTURAL |= set(_BITWISE)
ELEMENTWISE_OPS = frozenset(_FLOAT_ONLY | _INT_ONLY | _ANY | _STRUCTURAL)
REDUCE_OPS = frozenset({"reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or"})


def ctype(dtype) -> str:
    """The C type holding a value of `dtype` in memory."""
    return _STORAGE[np.dtype(dtype)]


def compute_dtype(dtype) -> np.dtype:
    """The dtype a value is computed in: float32 for the narrow floats, else its own."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype in _NARROW else dtype


def widen(code: str, dtype) -> str:
    """A loaded (stored) value of `dtype` as its compute type."""
    narrow = _NARROW.get(np.dtype(dtype))
    return f"{narrow[0]}({code})" if narrow else code


def narrow_store(code: str, dtype) -> str:
    """A computed value of `dtype` as its storage bits."""
    narrow = _NARROW.get(np.dtype(dtype))
    return f"{narrow[1]}({code})" if narrow else code


def round_to(code: str, dtype) -> str:
    """A float32 result rounded to `dtype`'s precision (the narrow floats), as a float32."""
    narrow = _NARROW.get(np.dtype(dtype))
    return f"{narrow[0]}({narrow[1]}({code}))" if narrow else code


def _bits(dtype) -> int:
    return np.dtype(dtype).itemsize * 8


def _wide_unsigned(dtype) -> str:
    # Arithmetic type for wrapping integer math: never promoted to (signed) int, so no overflow UB.
    return "uint64_t" if _bits(dtype) == 64 else "uint32_t"


def _same_unsigned(dtype) -> str:
    return {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t"}[_bits(dtype)]


def _int_min(dtype) -> str:
    if _dtypes.is_unsigned(dtype) or _dtypes.is_bool(dtype):
        return "0"
    return {8: "INT8_MIN", 16: "INT16_MIN", 32: "INT32_MIN", 64: "INT64_MIN"}[_bits(dtype)]


def _int_max(dtype) -> str:
    b = _bits(dtype)
    if _dtypes.is_unsigned(dtype):
        return {8: "UINT8_MAX", 16: "UINT16_MAX", 32: "UINT32_MAX", 64: "UINT64_MAX"}[b]
    return {8: "INT8_MAX", 16: "INT16_MAX", 32: "INT32_MAX", 64: "INT64_MAX"}[b]


def literal(value, dtype) -> str:
    """A C literal of `dtype` for `value` (exact: floats in hexadecimal)."""
    dtype = np.dtype(dtype)
    value = np.asarray(value, dtype).item()
    if dtype == np.bool_:
        return "1" if value else "0"
    if _dtypes.is_floating(dtype):
        suffix = "f" if dtype == np.float32 else ""
        if math.isnan(value):
            return f'__builtin_nan{suffix}("")'
        if math.isinf(value):
            return f"{'-' if value < 0 else ''}__builtin_inf{suffix}()"
        return f"({float(value).hex()}{suffix})"
    if _dtypes.is_unsigned(dtype):
        return f"(({ctype(dtype)}){value}u{'LL' if _bits(dtype) == 64 else ''})"
    if value == np.iinfo(dtype).min:
        return _int_min(dtype)
    return f"(({ctype(dtype)}){value}{'LL' if _bits(dtype) == 64 else ''})"


# ------------------------------------------------------------------------------------------ ops


def supports(op: str, in_dtypes, out_dtypes, params) -> bool:
    """Whether an elementwise `op` on these dtypes renders to C."""
    dts = [np.dtype(d) for d in (*in_dtypes, *out_dtypes)]
    if any(d not in DTYPES for d in dts) or op not in ELEMENTWISE_OPS:
        return False
    operand = np.dtype(in_dtypes[0]) if in_dtypes else np.dtype(out_dtypes[0])
    if op in _FLOAT_ONLY and not _dtypes.is_floating(operand):
        return False
    if op in _INT_ONLY and not _dtypes.is_integer(operand):
        return False
    if op in _ARITH or op in ("div", "rem", "neg", "abs", "sign", "square", "integer_pow"):
        return not _dtypes.is_bool(operand)
    if op == "round":
        return params.get("rounding_method", 0) in (0, 1) or hasattr(params.get("rounding_method"), "value")
    if op == "nextafter":  # the next float16 is not the next float32 rounded
        return operand not in _NARROW
    if op == "bitcast_convert_type":  # same width only: each element's bits, reinterpreted
        out = np.dtype(out_dtypes[0])
        return operand.itemsize == out.itemsize and not _dtypes.is_bool(operand) and not _dtypes.is_bool(out)
    return True


def expr(op: str, args: list, node, arg_dtypes: list) -> str:
    """The C expression computing `op` on the C expressions `args`."""
    t = node.dtype
    a = args[0] if args else None
    adt = np.dtype(arg_dtypes[0]) if arg_dtypes else None
    if op in _MATH:
        f32, f64 = _MATH[op]
        fn = f32 if adt == np.float32 else f64
        return f"{fn}({', '.join(args)})"
    if op in _ARITH:
        if _dtypes.is_floating(t):
            return f"({a} {_ARITH[op]} {args[1]})"
        w = _wide_unsigned(t)
        return f"(({ctype(t)})(({w}){a} {_ARITH[op]} ({w}){args[1]}))"
    if op in _COMPARE:
        return f"(({a}) {_COMPARE[op]} ({args[1]}))"
    if op in _BITWISE:
        return f"(({ctype(t)})(({a}) {_BITWISE[op]} ({args[1]})))"
    if op == "not":
        return f"(({ctype(t)})!({a}))" if _dtypes.is_bool(t) else f"(({ctype(t)})~({a}))"
    if op in ("copy", "stop_gradient", "name"):  # the identity when evaluated
        return a
    if op == "square":
        return expr("mul", [a, a], node, arg_dtypes)
    if op == "neg":
        if _dtypes.is_floating(t):
            return f"(-{a})"
        return f"(({ctype(t)})(0u - ({_wide_unsigned(t)}){a}))"
    if op == "abs":
        if _dtypes.is_floating(t):
            return f"{'fabsf' if t == np.float32 else 'fabs'}({a})"
        if _dtypes.is_unsigned(t):
            return a
        return f"(({a}) < 0 ? ({ctype(t)})(0u - ({_wide_unsigned(t)}){a}) : ({a}))"
    if op == "sign":
        if _dtypes.is_floating(t):
            one = literal(1, t)
            return f"(({a}) > 0 ? {one} : ({a}) < 0 ? -{one} : ({a}))"
        if _dtypes.is_unsigned(t):
            return f"(({ctype(t)})(({a}) != 0))"
        return f"(({ctype(t)})((({a}) > 0) - (({a}) < 0)))"
    if op in ("max", "min"):
        b = args[1]
        if _dtypes.is_floating(t):
            fn = "mxk_max" if op == "max" else "mxk_min"
            return f"{fn}{'f' if t == np.float32 else ''}({a}, {b})"
        cmp = ">" if op == "max" else "<"
        return f"(({a}) {cmp} ({b}) ? ({a}) : ({b}))"
    if op == "div":
        if _dtypes.is_floating(t):
            return f"({a} / {args[1]})"
        return f"MXK_IDIV({ctype(t)}, {_int_min(t)}, {a}, {args[1]})"
    if op == "rem":
        if _dtypes.is_floating(t):
            return f"{'fmodf' if t == np.float32 else 'fmod'}({a}, {args[1]})"
        return f"MXK_IREM({ctype(t)}, {_int_min(t)}, {a}, {args[1]})"
    if op == "is_finite":
        return f"((uint8_t)isfinite({a}))"
    if op == "round":
        method = node.params.get("rounding_method", 0)
        method = getattr(method, "value", method)
        fn = ("roundf", "rintf") if t == np.float32 else ("round", "rint")
        return f"{fn[int(method)]}({a})"
    if op == "integer_pow":
        return _integer_pow(a, int(node.params["y"]), t)
    if op in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):
        return _shift(op, a, args[1], t)
    if op == "population_count":
        fn = "__builtin_popcountll" if _bits(t) == 64 else "__builtin_popcount"
        return f"(({ctype(t)}){fn}(({_same_unsigned(t)}){a}))"
    if op == "clz":
        b = _bits(t)
        if b == 64:
            return f"(({ctype(t)})(({a}) == 0 ? 64 : __builtin_clzll((uint64_t){a})))"
        return (
            f"(({ctype(t)})(({a}) == 0 ? {b} : __builtin_clz((uint32_t)({_same_unsigned(t)}){a}) - {32 - b}))"
        )
    if op == "select_n":
        which, cases = a, args[1:]
        if len(cases) == 1:
            return cases[0]
        if _dtypes.is_bool(adt):
            return f"(({which}) ? ({cases[1]}) : ({cases[0]}))"
        out = cases[-1]
        for k in range(len(cases) - 2, -1, -1):
            test = f"({which}) <= 0" if k == 0 else f"({which}) == {k}"
            out = f"({test} ? ({cases[k]}) : {out})"
        return out
    if op == "clamp":
        lo, x, hi = args
        if _dtypes.is_floating(t):
            sfx = "f" if t == np.float32 else ""
            return f"mxk_clamp{sfx}({lo}, {x}, {hi})"
        c = ctype(t)
        return f"({{ {c} lo_ = {lo}, hi_ = {hi}, t_ = ({x}) < lo_ ? lo_ : ({x}); t_ > hi_ ? hi_ : t_; }})"
    if op == "convert_element_type":
        return _convert(a, adt, t)
    if op == "iota":
        return f"(({ctype(t)})i{int(node.params['dimension'])})"
    raise NotImplementedError(f"C rendering of kernel op {op!r}")


class _ComputeNode:
    """A node seen at its compute dtype (the narrow floats compute in float32)."""

    __slots__ = ("op", "params", "dtype")

    def __init__(self, node):
        self.op, self.params, self.dtype = node.op, node.params, compute_dtype(node.dtype)


def _node_expr(node, args: list, arg_dtypes: list) -> str:
    """The C expression of an op node, at the compute dtype, rounded to the node's own dtype."""
    dst = np.dtype(node.dtype)
    if node.op == "convert_element_type" and dst in _NARROW:
        # Convert once from double (exact for every source but int64 > 2^53): no double rounding.
        return f"{_NARROW[dst][0]}({_NARROW[dst][2]}((double)({args[0]})))"
    if node.op == "bitcast_convert_type":
        src = np.dtype(arg_dtypes[0])
        bits = f"{_NARROW[src][1]}({args[0]})" if src in _NARROW else args[0]
        code = f"({{ {ctype(src)} s_ = {bits}; {ctype(dst)} r_; memcpy(&r_, &s_, sizeof r_); r_; }})"
        return widen(code, dst)
    if node.op == "integer_pow" and dst in _NARROW:
        return _integer_pow(args[0], int(node.params["y"]), np.dtype(np.float32), rounding=dst)
    computed = [compute_dtype(d) for d in arg_dtypes]
    code = expr(node.op, args, _ComputeNode(node), computed)
    if dst in _NARROW and node.op not in (
        "select_n",
        "max",
        "min",
        "neg",
        "abs",
        "copy",
        "stop_gradient",
        "name",
    ):
        code = round_to(code, dst)
    return code


def _integer_pow(a: str, y: int, t, rounding=None) -> str:
    """Square-and-multiply in the operand's type, in the reference's order (a GNU statement
    expression of straight-line products)."""
    if y == 0:
        return literal(1, t)
    c = ctype(t)
    if _dtypes.is_floating(t):
        mul = lambda p, q: round_to(f"{p} * {q}", rounding) if rounding is not None else f"{p} * {q}"  # noqa: E731
    else:
        w = _wide_unsigned(t)
        mul = lambda p, q: f"({c})(({w}){p} * ({w}){q})"  # noqa: E731
    stmts, acc, base, k, n = [f"{c} t0 = {a};"], None, "t0", 1, abs(y)
    while n:
        if n & 1:
            if acc is None:
                acc = base
            else:
                stmts.append(f"{c} t{k} = {mul(acc, base)};")
                acc, k = f"t{k}", k + 1
        n >>= 1
        if n:
            stmts.append(f"{c} t{k} = {mul(base, base)};")
            base, k = f"t{k}", k + 1
    value = f"{literal(1, t)} / {acc}" if y < 0 else acc
    return f"({{ {' '.join(stmts)} {value}; }})"


def _shift(op: str, a: str, b: str, t) -> str:
    w = _bits(t)
    oob = f"((int64_t)({b}) < 0 || (int64_t)({b}) >= {w})"
    if op == "shift_left":
        return f"({oob} ? ({ctype(t)})0 : ({ctype(t)})(({_wide_unsigned(t)}){a} << ({b})))"
    if op == "shift_right_logical":
        return f"({oob} ? ({ctype(t)})0 : ({ctype(t)})(({_same_unsigned(t)}){a} >> ({b})))"
    # Arithmetic shifts read the bits as signed, unsigned operands too (XLA's semantics).
    sgn = {8: "int8_t", 16: "int16_t", 32: "int32_t", 64: "int64_t"}[w]
    return f"({oob} ? ({ctype(t)})(({sgn})({a}) < 0 ? -1 : 0) : ({ctype(t)})(({sgn})({a}) >> ({b})))"


def _convert(a: str, src, dst) -> str:
    if src == dst:
        return a
    if _dtypes.is_bool(dst):
        return f"((uint8_t)(({a}) != 0))"
    if _dtypes.is_integer(dst) and _dtypes.is_floating(src):
        hi = f"({float(np.iinfo(dst).max) + 1.0!r})"
        lo = f"({float(np.iinfo(dst).min)!r})"
        return (
            f"(({a}) != ({a}) ? ({ctype(dst)})0 : (double)({a}) >= {hi} ? {_int_max(dst)} : "
            f"(double)({a}) < {lo} ? {_int_min(dst)} : ({ctype(dst)})({a}))"
        )
    return f"(({ctype(dst)})({a}))"


_MATHLIB = os.path.join(os.path.dirname(__file__), "mathlib.h")
with open(_MATHLIB) as _fh:
    MATHLIB = _fh.read()
MATHLIB_HASH = hashlib.sha256(MATHLIB.encode()).hexdigest()
with open(__file__, "rb") as _fh:
    # The renderer's own text: the disk cache is keyed by a description of the program, not the
    # rendered source, so any change here (helpers, prelude, rendering) must change the key.
    RENDERER_HASH = hashlib.sha256(_fh.read() + MATHLIB.encode()).hexdigest()

PRELUDE = (
    MATHLIB
    + r"""
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Order-preserving integer keys of float bits (-0 < +0; NaNs sort outside +-inf), so float
   max/min reductions run as integer max/min, which vectorize. The map is its own inverse. */
static inline int32_t mxk_key32(float x) {
  int32_t b; memcpy(&b, &x, 4); return b ^ ((b >> 31) & 0x7fffffff);
}
static inline float mxk_unkey32(int32_t k) {
  int32_t b = k ^ ((k >> 31) & 0x7fffffff); float x; memcpy(&x, &b, 4); return x;
}
static inline int64_t mxk_key64(double x) {
  int64_t b; memcpy(&b, &x, 8); return b ^ ((b >> 63) & 0x7fffffffffffffffLL);
}
static inline double mxk_unkey64(int64_t k) {
  int64_t b = k ^ ((k >> 63) & 0x7fffffffffffffffLL); double x; memcpy(&x, &b, 8); return x;
}

/* max/min as XLA: NaN from either side wins; max(-0, +0) = +0 and min = -0 in either order.
   Written as selects on integer keys so loops calling them stay vectorizable. */
static inline float mxk_maxf(float a, float b) {
  const float m = mxk_key32(a) > mxk_key32(b) ? a : b;
  const float n = b != b ? b : m;
  return a != a ? a : n;
}
static inline double mxk_max(double a, double b) {
  const double m = mxk_key64(a) > mxk_key64(b) ? a : b;
  const double n = b != b ? b : m;
  return a != a ? a : n;
}
static inline float mxk_minf(float a, float b) {
  const float m = mxk_key32(a) < mxk_key32(b) ? a : b;
  const float n = b != b ? b : m;
  return a != a ? a : n;
}
static inline double mxk_min(double a, double b) {
  const double m = mxk_key64(a) < mxk_key64(b) ? a : b;
  const double n = b != b ? b : m;
  return a != a ? a : n;
}
/* clamp as XLA: min(max(x, lo), hi) with NaN propagating and ties taking the bound. */
static inline float mxk_clampf(float lo, float x, float hi) {
  float t = x != x ? x : lo != lo ? lo : x > lo ? x : lo;
  return t != t ? t : hi != hi ? hi : t < hi ? t : hi;
}
static inline double mxk_clamp(double lo, double x, double hi) {
  double t = x != x ? x : lo != lo ? lo : x > lo ? x : lo;
  return t != t ? t : hi != hi ? hi : t < hi ? t : hi;
}
/* Integer division and remainder with XLA's answers where C traps: x / 0 = -1 (all ones),
   x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0. */
#define MXK_IDIV(T, TMIN, a, b) \
  ((b) == 0 ? (T)-1 : ((TMIN) != 0 && (a) == (T)(TMIN) && (b) == (T)-1) ? (T)(a) : (T)((a) / (b)))
#define MXK_IREM(T, TMIN, a, b) \
  ((b) == 0 ? (T)(a) : ((TMIN) != 0 && (b) == (T)-1) ? (T)0 : (T)((a) % (b)))

/* Threefry-2x32, 20 rounds (Salmon et al. 2011), as JAX's threefry2x32: straight-line code with
   constant rotations, so loops calling it vectorize. */
static inline void mxk_threefry2x32(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1,
                                    uint32_t *o0, uint32_t *o1) {
  const uint32_t k2 = k0 ^ k1 ^ 0x1BD11BDAu;
  uint32_t v0 = x0 + k0, v1 = x1 + k1;
  v0 += v1; v1 = ((v1 << 13) | (v1 >> 19)) ^ v0;
  v0 += v1; v1 = ((v1 << 15) | (v1 >> 17)) ^ v0;
  v0 += v1; v1 = ((v1 << 26) | (v1 >> 6)) ^ v0;
  v0 += v1; v1 = ((v1 << 6) | (v1 >> 26)) ^ v0;
  v0 += k1; v1 += k2 + 1u;
  v0 += v1; v1 = ((v1 << 17) | (v1 >> 15)) ^ v0;
  v0 += v1; v1 = ((v1 << 29) | (v1 >> 3)) ^ v0;
  v0 += v1; v1 = ((v1 << 16) | (v1 >> 16)) ^ v0;
  v0 += v1; v1 = ((v1 << 24) | (v1 >> 8)) ^ v0;
  v0 += k2; v1 += k0 + 2u;
  v0 += v1; v1 = ((v1 << 13) | (v1 >> 19)) ^ v0;
  v0 += v1; v1 = ((v1 << 15) | (v1 >> 17)) ^ v0;
  v0 += v1; v1 = ((v1 << 26) | (v1 >> 6)) ^ v0;
  v0 += v1; v1 = ((v1 << 6) | (v1 >> 26)) ^ v0;
  v0 += k0; v1 += k1 + 3u;
  v0 += v1; v1 = ((v1 << 17) | (v1 >> 15)) ^ v0;
  v0 += v1; v1 = ((v1 << 29) | (v1 >> 3)) ^ v0;
  v0 += v1; v1 = ((v1 << 16) | (v1 >> 16)) ^ v0;
  v0 += v1; v1 = ((v1 << 24) | (v1 >> 8)) ^ v0;
  v0 += k1; v1 += k2 + 4u;
  v0 += v1; v1 = ((v1 << 13) | (v1 >> 19)) ^ v0;
  v0 += v1; v1 = ((v1 << 15) | (v1 >> 17)) ^ v0;
  v0 += v1; v1 = ((v1 << 26) | (v1 >> 6)) ^ v0;
  v0 += v1; v1 = ((v1 << 6) | (v1 >> 26)) ^ v0;
  v0 += k2; v1 += k0 + 5u;
  *o0 = v0;
  *o1 = v1;
}
"""
)


# -------------------------------------------------------------------------------------- kernels


def _strides(shape) -> list:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def _offset_expr(index, shape):
    """The row-major offset of `index` (IndexExprs) into an array of `shape`, as an IndexExpr."""
    total = IndexExpr.lift(0)
    for i, st in zip(index, _strides(shape)):
        total = total + IndexExpr.lift(i) * st
    return total


def _offset(index, shape, loop_names) -> str:
    """C expression of the row-major offset of `index` (IndexExprs) into an array of `shape`."""
    if not shape:
        return "0"
    return _offset_expr(index, shape).to_c(loop_names)


_REDUCE_INIT = {
    "reduce_sum": lambda t: literal(0, t),
    "reduce_prod": lambda t: literal(1, t),
    "reduce_and": lambda t: literal(1, t) if _dtypes.is_bool(t) else f"(({ctype(t)})~({ctype(t)})0)",
    "reduce_or": lambda t: literal(0, t),
    "reduce_max": lambda t: literal(-np.inf, t) if _dtypes.is_floating(t) else _int_min(t),
    "reduce_min": lambda t: literal(np.inf, t) if _dtypes.is_floating(t) else _int_max(t),
}


def reduce_supported(op: str, dtype, out_dtype) -> bool:
    dtype, out_dtype = np.dtype(dtype), np.dtype(out_dtype)
    if dtype not in REDUCE_DTYPES or out_dtype not in REDUCE_DTYPES:
        return False
    if op in ("argmax", "argmin"):
        # Values are compared as doubles: exact for every dtype up to 32 bits and float64.
        return _dtypes.is_integer(out_dtype) and (dtype.itemsize <= 4 or dtype == np.float64)
    if op not in REDUCE_OPS or out_dtype != dtype:
        return False
    if op in ("reduce_and", "reduce_or"):
        return _dtypes.is_integer(dtype) or _dtypes.is_bool(dtype)
    return not _dtypes.is_bool(dtype) or op in ("reduce_max", "reduce_min")


def _combine(op: str, acc: str, v: str, t) -> str:
    fake = type("N", (), {"dtype": np.dtype(t), "params": {}})()
    if op == "reduce_sum":
        return expr("add", [acc, v], fake, [t, t])
    if op == "reduce_prod":
        return expr("mul", [acc, v], fake, [t, t])
    if op == "reduce_max":
        return expr("max", [acc, v], fake, [t, t])
    if op == "reduce_min":
        return expr("min", [acc, v], fake, [t, t])
    if op == "reduce_and":
        return f"(({ctype(t)})(({acc}) & ({v})))"
    return f"(({ctype(t)})(({acc}) | ({v})))"


# Threads pay off only for enough work: memory-bound loops of a few hundred thousand elements
# run faster on one core than a thread team costs to wake (and far slower when another process
# holds the other cores). Work is elements times ops, a transcendental counting as 20.
PARALLEL_WORK = 4_000_000
PARALLEL_MIN_ELEMENTS = 1 << 16
TILE = 32


def _worth_threads(kernel, size: int, min_elements: int) -> bool:
    if size < min_elements:
        return False
    weight = sum(20 if n.op in _MATH else 1 for n in kernel.nodes)
    return size * weight >= PARALLEL_WORK


def _strided_inner_load(loads, in_shapes, domain) -> bool:
    """Whether some load walks its buffer with a stride > 1 along the innermost loop (a transpose):
    such kernels are tiled so both the load and the store stay in cache."""
    inner = f"i{len(domain) - 1}"
    names = {f"i{d}": f"i{d}" for d in range(len(domain))}
    for ld in loads:
        shape = in_shapes[ld.slot]
        if not shape:
            continue
        total = IndexExpr.lift(0)
        for i, st in zip(ld.index, _strides(shape)):
            total = total + IndexExpr.lift(i) * st
        for atom, coeff in total.terms:
            if getattr(atom, "name", None) == inner and abs(coeff) > 1:
                return True
    del names
    return False


def _tiled_loops(kernel, domain, par, body, store_lines, loop_names) -> list:
    """The last two loops in TILE x TILE blocks (threads over the outermost loop)."""
    rank = len(domain)
    a, b = rank - 2, rank - 1
    lines, indent = [], "  "
    for d in range(a):
        if d == 0 and par:
            lines.append(f"{indent}#pragma omp parallel for")
        lines.append(f"{indent}for (int64_t i{d} = 0; i{d} < {domain[d]}; i{d}++) {{")
        indent += "  "
    if a == 0 and par:
        lines.append(f"{indent}#pragma omp parallel for")
    lines.append(f"{indent}for (int64_t t{a} = 0; t{a} < {domain[a]}; t{a} += {TILE}) {{")
    lines.append(f"{indent}  for (int64_t t{b} = 0; t{b} < {domain[b]}; t{b} += {TILE}) {{")
    indent += "    "
    for d in (a, b):
        end = f"(t{d} + {TILE} < {domain[d]} ? t{d} + {TILE} : {domain[d]})"
        if d == b:
            lines.append(f"{indent}#pragma omp simd")
        lines.append(f"{indent}for (int64_t i{d} = t{d}; i{d} < {end}; i{d}++) {{")
        indent += "  "
    stmts, local = body(indent, loop_names, False)
    lines += stmts + store_lines(indent, local, loop_names, False)
    for _ in range(rank + 2):
        indent = indent[:-2]
        lines.append(f"{indent}}}")
    lines.append("}")
    return lines


def render_kernel(kernel, names_ctx, threads_threshold: int = PARALLEL_MIN_ELEMENTS) -> str:
    """The C function for `kernel`. `names_ctx` (a jaxpr name context) names the variables as the
    printed program does: `in_a` points at input `a`, `v_c` holds `c`."""
    names = names_ctx.name
    domain = kernel.domain
    rank = len(domain)
    size = int(np.prod(domain, dtype=np.int64)) if domain else 1
    red_axes = tuple(sorted(a % rank for a in kernel.reduce_axes)) if rank else ()
    has_iota = any(n.op == "iota" for n in kernel.nodes)
    loads = [n.params["load"] for n in kernel.nodes if n.op == "load"]
    in_shapes = [tuple(v.aval.shape) for v in kernel.inputs]
    identity = tuple(IndexExpr.var(f"i{d}", n) for d, n in enumerate(domain))
    linear = _offset_expr(identity, domain)
    flat = (
        not any(st.reduce for st in kernel.stores)
        and not has_iota
        and all(
            _offset_expr(ld.index, in_shapes[ld.slot]) == linear
            or all(IndexExpr.lift(i).is_const for i in ld.index)
            for ld in loads
        )
    )
    lines = []
    comment = kernel.describe(names_ctx).replace("*/", "* /")
    lines.append(
        f"/* {kernel.name}: fuses\n" + "\n".join(f" *   {ln}" for ln in comment.splitlines()) + "\n */"
    )
    lines.append(f"void {kernel.name}(void *const *restrict buf) {{")
    pointers = {}
    for slot, v in enumerate(kernel.inputs):
        p = f"in_{names(v)}"
        pointers[slot] = p
        t = ctype(v.aval.dtype)
        lines.append(f"  const {t} *restrict {p} = (const {t} *)buf[{slot}];")
    outs = []
    for k, store in enumerate(kernel.stores):
        p = f"out_{names(store.var)}"
        t = ctype(store.var.aval.dtype)
        outs.append(p)
        lines.append(f"  {t} *restrict {p} = (({t} *)buf[{len(kernel.inputs) + k}]);")
    loop_names = {f"i{d}": f"i{d}" for d in range(rank)}
    flat_names = {f"i{d}": "i" for d in range(rank)}

    def body(indent: str, index_names: dict, flat_index: bool, phase: int = 0) -> list:
        out = []
        local = {}
        used = set()
        for nid, node in enumerate(kernel.nodes):
            if node.phase != phase:
                continue
            name = (
                f"{'x' if node.op == 'load' else 'v'}_{names(node.var)}"
                if node.var is not None
                else f"t{nid}"
            )
            if name in used:
                name = f"{name}_{nid}"
            used.add(name)
            local[nid] = name
            if node.op == "load":
                ld = node.params["load"]
                shape = in_shapes[ld.slot]
                if flat_index and shape:
                    all_const = all(IndexExpr.lift(i).is_const for i in ld.index)
                    off = _offset(ld.index, shape, index_names) if all_const else "i"
                else:
                    off = _offset(ld.index, shape, index_names)
                ct = ctype(compute_dtype(node.dtype))
                out.append(f"{indent}const {ct} {name} = {widen(f'{pointers[ld.slot]}[{off}]', node.dtype)};")
            elif node.op == "reduced":  # the epilogue reads a finished reduction
                p = f"out_{names(node.params['var'])}"
                epi = kernel.epilogue_domain
                off = _offset(tuple(IndexExpr.var(f"i{d}", n) for d, n in enumerate(epi)), epi, index_names)
                ct = ctype(compute_dtype(node.dtype))
                out.append(f"{indent}const {ct} {name} = {widen(f'{p}[{off}]', node.dtype)};")
            elif node.op == "const":
                value = literal(
                    np.asarray(node.params["value"], node.dtype).astype(compute_dtype(node.dtype)),
                    compute_dtype(node.dtype),
                )
                out.append(f"{indent}const {ctype(compute_dtype(node.dtype))} {name} = {value};")
            elif node.op == "result":
                out.append(f"{indent}const uint32_t {name} = {local[node.args[0]]}_{node.params['index']};")
            elif node.dtype is None:  # a multiple-result op (threefry2x32)
                args = [local[a] for a in node.args]
                out.append(f"{indent}uint32_t {name}_0, {name}_1;")
                out.append(f"{indent}mxk_threefry2x32({', '.join(args)}, &{name}_0, &{name}_1);")
            else:
                args = [local[a] for a in node.args]
                code = _node_expr(node, args, [kernel.nodes[a].dtype for a in node.args])
                out.append(f"{indent}const {ctype(compute_dtype(node.dtype))} {name} = {code};")
        return out, local

    def store_lines(indent, local, index_names, flat_index, phase: int = 0) -> list:
        out = []
        dom = domain if phase == 0 else kernel.epilogue_domain
        ident = identity if phase == 0 else tuple(IndexExpr.var(f"i{d}", n) for d, n in enumerate(dom))
        for p, store in zip(outs, kernel.stores):
            if store.reduce is not None or kernel.nodes[store.node].phase != phase:
                continue
            off = "i" if flat_index else _offset(ident, dom, index_names)
            out.append(f"{indent}{p}[{off}] = {narrow_store(local[store.node], store.var.aval.dtype)};")
        return out

    par = _worth_threads(kernel, size, threads_threshold)
    if flat:
        lines.append(f"  const int64_t n = {size};")
        lines.append("  #pragma omp parallel for simd" if par else "  #pragma omp simd")
        lines.append("  for (int64_t i = 0; i < n; i++) {")
        stmts, local = body("    ", flat_names, True)
        lines += stmts + store_lines("    ", local, flat_names, True)
        lines.append("  }")
        lines.append("}")
        return "\n".join(lines)

    # Nested loops over the domain. Each reduction accumulates in memory (`m_<out>`: the output
    # itself, or wider scratch); a suffix of reduced axes accumulates into locals first
    # (vectorizable), other reduced axes straight into memory.
    kept = [d for d in range(rank) if d not in red_axes]
    out_shape = tuple(domain[d] for d in kept)
    out_size = int(np.prod(out_shape, dtype=np.int64)) if out_shape else 1
    accs = [
        _Accumulator(p, s, out_size, red_axes) for p, s in zip(outs, kernel.stores) if s.reduce is not None
    ]
    for acc in accs:
        lines += acc.setup()
    suffix_start = rank
    while suffix_start > 0 and (suffix_start - 1) in red_axes:
        suffix_start -= 1
    out_index = tuple(IndexExpr.var(f"i{d}", domain[d]) for d in kept)
    off = _offset(out_index, out_shape, loop_names)
    if not accs and rank >= 2 and _strided_inner_load(loads, in_shapes, domain):
        return "\n".join(lines + _tiled_loops(kernel, domain, par, body, store_lines, loop_names))
    indent = "  "
    outer_par = par and rank > 0 and 0 not in red_axes and domain[0] > 1
    for d in range(rank):
        if accs and d == suffix_start:
            for acc in accs:
                lines += acc.locals(indent)
        if d == 0 and outer_par and rank == 1 and not accs:
            lines.append(f"{indent}#pragma omp parallel for simd")  # the only loop: both
        elif d == 0 and outer_par:
            lines.append(f"{indent}#pragma omp parallel for")
        elif d == rank - 1:
            clause = _simd_reduction(accs) if d >= suffix_start else ""
            if clause is not None:
                lines.append(f"{indent}#pragma omp simd{clause}")
        lines.append(f"{indent}for (int64_t i{d} = 0; i{d} < {domain[d]}; i{d}++) {{")
        indent += "  "
    stmts, local = body(indent, loop_names, False)
    lines += stmts + store_lines(indent, local, loop_names, False)
    for acc in accs:
        if suffix_start < rank:
            lines += acc.into_local(indent, local[acc.store.node])
        else:
            lines += acc.into_memory(indent, local[acc.store.node], off)
    for d in range(rank - 1, -1, -1):
        indent = indent[:-2]
        lines.append(f"{indent}}}")
        if accs and d == suffix_start:
            for acc in accs:
                lines += acc.local_into_memory(indent, off)
    for acc in accs:
        lines += acc.finish()
    if any(n.phase == 1 for n in kernel.nodes):
        lines += _epilogue(kernel, body, store_lines)
    lines.append("}")
    return "\n".join(lines)


def _epilogue(kernel, body, store_lines) -> list:
    """Loops over the reduced domain running the phase-1 nodes on the finished reductions."""
    epi = kernel.epilogue_domain
    lines, indent = [], "  "
    names = {f"i{d}": f"i{d}" for d in range(len(epi))}
    for d, n in enumerate(epi):
        if d == len(epi) - 1:
            lines.append(f"{indent}#pragma omp simd")
        lines.append(f"{indent}for (int64_t i{d} = 0; i{d} < {n}; i{d}++) {{")
        indent += "  "
    if not epi:
        lines.append(f"{indent}{{")
        indent += "  "
    stmts, local = body(indent, names, False, phase=1)
    lines += stmts + store_lines(indent, local, names, False, phase=1)
    for _ in range(max(len(epi), 1)):
        indent = indent[:-2]
        lines.append(f"{indent}}}")
    return lines


class _Accumulator:
    """The C of one reduction output `p`: setup, per-element combine, finish."""

    def __init__(self, p, store, out_size, red_axes):
        self.p, self.store, self.out_size = p, store, out_size
        self.op = store.reduce
        self.out_dt = np.dtype(store.var.aval.dtype)
        self.arg = self.op in ("argmax", "argmin")
        if self.arg:
            # The loop variable of the reduced axis (none when it has size 1: the index is 0).
            self.index_var = f"i{red_axes[0]}" if red_axes else "0"
        self.acc_dt = _acc_dtype(self.op, self.out_dt) if not self.arg else None
        # Float max/min over a suffix of axes accumulate an order-preserving integer key of the
        # bits (-0 < +0, as XLA's max) plus a NaN flag: integer max vectorizes, NaN rules don't.
        self.keyed = self.op in ("reduce_max", "reduce_min") and self.out_dt in (
            np.dtype(np.float32),
            np.dtype(np.float64),
        )
        self.bits = 32 if self.out_dt == np.float32 else 64

    def setup(self) -> list:
        p, n = self.p, max(self.out_size, 1)
        if self.arg:
            return [
                f"  int64_t *restrict mi_{p} = (int64_t *)malloc(sizeof(int64_t) * {n});",
                f"  double *restrict mv_{p} = (double *)malloc(sizeof(double) * {n});",
                f"  if (!mi_{p} || !mv_{p}) {{ free(mi_{p}); free(mv_{p}); return; }}",
                f"  for (int64_t o = 0; o < {self.out_size}; o++) mi_{p}[o] = -1;",
            ]
        a = self.acc_dt
        if a != self.out_dt:
            head = [
                f"  {ctype(a)} *restrict m_{p} = ({ctype(a)} *)malloc(sizeof({ctype(a)}) * {n});",
                f"  if (!m_{p}) return;",
            ]
        else:
            head = [f"  {ctype(a)} *restrict m_{p} = {p};"]
        return head + [
            f"  for (int64_t o = 0; o < {self.out_size}; o++) m_{p}[o] = {_REDUCE_INIT[self.op](a)};"
        ]

    def _take(self, best: str, v: str) -> str:
        # argmax/argmin: NaN beats everything and the first one wins; ties keep the first index.
        cmp = ">" if self.op == "argmax" else "<"
        return f"(({best}) == ({best}) && (({v}) != ({v}) || ({v}) {cmp} ({best})))"

    def locals(self, indent) -> list:
        p = self.p
        if self.arg:
            return [f"{indent}int64_t li_{p} = -1;", f"{indent}double lv_{p} = 0;"]
        if self.keyed:
            b, start = self.bits, "-__builtin_inf()" if self.op == "reduce_max" else "__builtin_inf()"
            return [
                f"{indent}int{b}_t acc_{p} = mxk_key{b}({start});",
                f"{indent}uint8_t nan_{p} = 0;",
            ]
        return [f"{indent}{ctype(self.acc_dt)} acc_{p} = {_REDUCE_INIT[self.op](self.acc_dt)};"]

    def into_local(self, indent, v) -> list:
        p = self.p
        if self.arg:
            return [
                f"{indent}if (li_{p} < 0 || {self._take(f'lv_{p}', f'(double)({v})')}) "
                f"{{ lv_{p} = (double)({v}); li_{p} = {self.index_var}; }}"
            ]
        if self.keyed:
            cmp = ">" if self.op == "reduce_max" else "<"
            return [
                f"{indent}{{ const int{self.bits}_t k_ = mxk_key{self.bits}({v}); "
                f"acc_{p} = k_ {cmp} acc_{p} ? k_ : acc_{p}; nan_{p} |= ({v}) != ({v}); }}"
            ]
        val = v if self.acc_dt == self.out_dt else f"(({ctype(self.acc_dt)}){v})"
        return [f"{indent}acc_{p} = {_combine(self.op, f'acc_{p}', val, self.acc_dt)};"]

    def into_memory(self, indent, v, off) -> list:
        p = self.p
        if self.arg:
            return [
                f"{indent}if (mi_{p}[{off}] < 0 || {self._take(f'mv_{p}[{off}]', f'(double)({v})')}) "
                f"{{ mv_{p}[{off}] = (double)({v}); mi_{p}[{off}] = {self.index_var}; }}"
            ]
        val = v if self.acc_dt == self.out_dt else f"(({ctype(self.acc_dt)}){v})"
        return [f"{indent}m_{p}[{off}] = {_combine(self.op, f'm_{p}[{off}]', val, self.acc_dt)};"]

    def local_into_memory(self, indent, off) -> list:
        p = self.p
        if self.arg:
            # The suffix holds the only reduced axis: this local is the whole answer.
            return [f"{indent}mi_{p}[{off}] = li_{p};"]
        if self.keyed:
            t = ctype(self.out_dt)
            value = f'(nan_{p} ? ({t})__builtin_nan("") : mxk_unkey{self.bits}(acc_{p}))'
            return [f"{indent}m_{p}[{off}] = {_combine(self.op, f'm_{p}[{off}]', value, self.out_dt)};"]
        return [f"{indent}m_{p}[{off}] = {_combine(self.op, f'm_{p}[{off}]', f'acc_{p}', self.acc_dt)};"]

    def finish(self) -> list:
        p, t = self.p, ctype(self.out_dt)
        if self.arg:
            return [
                f"  for (int64_t o = 0; o < {self.out_size}; o++) {p}[o] = ({t})mi_{p}[o];",
                f"  free(mi_{p});",
                f"  free(mv_{p});",
            ]
        if self.acc_dt != self.out_dt:
            return [
                f"  for (int64_t o = 0; o < {self.out_size}; o++) {p}[o] = ({t})m_{p}[o];",
                f"  free(m_{p});",
            ]
        return []


def _acc_dtype(reduce: str, dtype) -> np.dtype:
    """The accumulator type: float32 sums accumulate in float64, so a sum of millions of
    elements stays accurate (NumPy's pairwise summation is the oracle); others in their own type."""
    dtype = np.dtype(dtype)
    if reduce == "reduce_sum" and dtype == np.float32:
        return np.dtype(np.float64)
    return dtype


def _simd_reduction(accs):
    """The clause for an innermost loop that accumulates into locals: floating sums and
    products vectorize with OpenMP's reduction; max/min (NaN rules), arg reductions and integer
    accumulators (which wrap through unsigned casts) are left to the compiler (None: no pragma)."""
    ops = {"reduce_sum": "+", "reduce_prod": "*"}
    parts = []
    for acc in accs:
        if acc.keyed:
            parts.append(f" reduction({acc.op[7:]}:acc_{acc.p}) reduction(|:nan_{acc.p})")
            continue
        op = ops.get(acc.op)
        if op is None or not _dtypes.is_floating(acc.out_dt):
            return None
        parts.append(f" reduction({op}:acc_{acc.p})")
    return "".join(parts)
