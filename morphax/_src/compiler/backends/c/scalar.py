"""C for one element of a fused kernel: the storage and compute types of each dtype, literals,
the C expression of every kernel op, and the prelude of helpers (with the math library) every
generated file starts with. `render.py` builds the loops around these.

C's traps are JAX's defined answers here: signed arithmetic wraps (done in unsigned types), integer
division and remainder by zero and INT_MIN / -1 give XLA's results, shifts by >= the bit width
give 0 (or the sign), float -> int conversions saturate (NaN -> 0). No undefined behaviour.
"""

from __future__ import annotations

import math
import os

import numpy as np

from morphax._src.core import dtypes as _dtypes

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
_STORAGE.update({d: "uint16_t" for d in _NARROW})
DTYPES = set(_STORAGE)  # bfloat16 joins when ml_dtypes is loaded (below)
# Reductions and arg-reductions accumulate in the storage dtype: not the narrow floats.
REDUCE_DTYPES = frozenset(DTYPES - set(_NARROW))


def _add_bfloat16():
    # bfloat16 exists only once ml_dtypes is imported, which `import morphax` leaves for later.
    bf16 = np.dtype(_dtypes.bfloat16)
    _NARROW[bf16] = ("mx_bf16_to_f32", "mx_f32_to_bf16", "mx_f64_to_bf16")
    _STORAGE[bf16] = "uint16_t"
    DTYPES.add(bf16)


_dtypes.when_ml_dtypes_loaded(_add_bfloat16)

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
    # One rounding (C99's fma is correctly rounded; -ffp-contract=off keeps it the only fused op).
    "fma": ("fmaf", "fma"),
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


def local_ctype(dtype) -> str:
    """The C type of a kernel's local holding a value of `dtype`: its compute type, except that
    booleans (0 or 1, stored as bytes) are computed as 32-bit ints, because GCC does not
    vectorize a loop that turns a float comparison's byte into a float (relu's derivative)."""
    dtype = np.dtype(dtype)
    return "int32_t" if dtype == np.bool_ else ctype(compute_dtype(dtype))


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
    if op in ("nextafter", "fma"):  # float16 results are not float32 results rounded
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
