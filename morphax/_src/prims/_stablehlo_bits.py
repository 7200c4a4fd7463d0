"""StableHLO rules of the bit-exact primitives: `sort` (JAX's comparator), `top_k`, the
`threefry2x32` cipher as uint32 operations, `rng_bit_generator`, `rng_uniform`, `reduce_precision`,
`mulhi` and an exactly rounded `fma`. Like _stablehlo.py, imports nothing of the compiler: rules
only call methods of the context they are given.
"""

from __future__ import annotations

import math

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.prims._exact_float import two_product
from morphax._src.prims._stablehlo import broadcast_operand, compare_type, i64_array
from morphax._src.prims._stablehlo_expr import Expr, isnan, where, wrap

_BOOL = np.dtype(bool)
_U32, _U64 = np.dtype(np.uint32), np.dtype(np.uint64)


def _binary(ctx, op_name, x, y):
    return ctx.op1(f"stablehlo.{op_name}", [x, y], x)


def _compare(ctx, x, y, direction, ctype):
    attrs = {
        "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
        "compare_type": f"#stablehlo<comparison_type {ctype}>",
    }
    return ctx.op1("stablehlo.compare", [x, y], (x.shape, _BOOL), attrs)


def _select(ctx, pred, x, y):
    return ctx.op1("stablehlo.select", [pred, x, y], x)


# ----------------------------------------------------------------------------- sort and top_k


def _sort_keys(ctx, x):
    """The keys that order the scalar `x` as JAX's comparator does: floats with every zero made
    +0.0 and every NaN +NaN (then compared in total order), complex numbers by (real, imag)."""
    if _dtypes.is_complex(x.dtype):
        part = ((), _dtypes.real_dtype(x.dtype))
        return [
            key
            for op_name in ("stablehlo.real", "stablehlo.imag")
            for key in _sort_keys(ctx, ctx.op1(op_name, [x], part))
        ]
    if not _dtypes.is_floating(x.dtype):
        return [(x, compare_type(x.dtype))]
    zero = ctx.constant(0, x.dtype)
    x = _select(ctx, _compare(ctx, x, zero, "EQ", "FLOAT"), zero, x)
    nan = ctx.constant(np.nan, x.dtype)
    return [(_select(ctx, _compare(ctx, x, x, "NE", "FLOAT"), nan, x), "TOTALORDER")]


def sort(ctx, *operands, dimension, is_stable, num_keys):
    """`stablehlo.sort` with JAX's comparator: lexicographic `<` over the first `num_keys`
    operands' keys (the last key decides only where all earlier ones are equal)."""
    scalars = [((), x.dtype) for x in operands for _ in range(2)]

    def comparator(*args):
        x_keys, y_keys = [], []
        for x, y in zip(args[: 2 * num_keys : 2], args[1 : 2 * num_keys : 2]):
            x_keys += _sort_keys(ctx, x)
            y_keys += _sort_keys(ctx, y)
        less = None
        for (xk, ctype), (yk, _) in zip(x_keys[::-1], y_keys[::-1]):
            lt = _compare(ctx, xk, yk, "LT", ctype)
            if less is not None:
                tie = _binary(ctx, "and", _compare(ctx, xk, yk, "EQ", ctype), less)
                lt = _binary(ctx, "or", lt, tie)
            less = lt
        return [less]

    attrs = {"dimension": f"{int(dimension)} : i64", "is_stable": "true" if is_stable else "false"}
    return ctx.op("stablehlo.sort", operands, operands, attrs, [ctx.region(scalars, comparator)])


def top_k(ctx, x, *, k, axis):
    """`chlo.top_k` along the last axis (XLA's TopK: total order, ties to the lower index), the
    operated axis swapped there and back as JAX does."""
    perm = list(range(len(x.shape)))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    if axis != len(x.shape) - 1:
        x = _transpose(ctx, x, perm)
    shape = (*x.shape[:-1], int(k))
    outs = ctx.op("chlo.top_k", [x], [(shape, x.dtype), (shape, np.int32)], {"k": f"{int(k)} : i64"})
    if axis != len(x.shape) - 1:
        outs = [_transpose(ctx, v, perm) for v in outs]
    return outs


def _transpose(ctx, x, perm):
    shape = tuple(x.shape[p] for p in perm)
    return ctx.op1("stablehlo.transpose", [x], (shape, x.dtype), {"permutation": i64_array(perm)})


# ----------------------------------------------------------------------------- threefry2x32


def threefry2x32(rotations, parity):
    """Threefry-2x32 (20 rounds) of the broadcast operands as uint32 adds, xors and rotations
    (two shifts and an or), as JAX's `_threefry2x32_lowering` builds it."""

    def rule(ctx, key1, key2, x1, x2):
        shape = ctx.avals_out[0].shape
        k1, k2, v0, v1 = (broadcast_operand(ctx, v, shape) for v in (key1, key2, x1, x2))
        consts = {}

        def const(value):
            if value not in consts:
                consts[value] = ctx.constant(np.uint32(value), _U32, shape)
            return consts[value]

        def rotate_left(v, r):
            left = _binary(ctx, "shift_left", v, const(r))
            return _binary(ctx, "or", left, _binary(ctx, "shift_right_logical", v, const(32 - r)))

        ks = (k1, k2, _binary(ctx, "xor", _binary(ctx, "xor", k1, k2), const(int(parity))))
        v0, v1 = _binary(ctx, "add", v0, ks[0]), _binary(ctx, "add", v1, ks[1])
        for block in range(5):
            for r in rotations[block % 2]:
                v0 = _binary(ctx, "add", v0, v1)
                v1 = _binary(ctx, "xor", rotate_left(v1, r), v0)
            v0 = _binary(ctx, "add", v0, ks[(block + 1) % 3])
            v1 = _binary(ctx, "add", _binary(ctx, "add", v1, ks[(block + 2) % 3]), const(block + 1))
        return [v0, v1]

    return rule


# ----------------------------------------------------------------------------- XLA's generators


def rng_bit_generator(ctx, key, *, shape, dtype, algorithm, out_sharding):
    """`stablehlo.rng_bit_generator` on the key as uint64[2] (a uint32[4] key bitcast, as JAX
    does); leading key dimensions (from vmap) are independent generators, run in a loop."""
    alg = {"RNG_DEFAULT": "DEFAULT", "RNG_THREE_FRY": "THREE_FRY", "RNG_PHILOX": "PHILOX"}[algorithm.name]
    attrs = {"rng_algorithm": f"#stablehlo<rng_algorithm {alg}>"}
    shape, dtype = tuple(shape), np.dtype(dtype)

    def generate(k):
        wide = k
        if k.dtype == _U32:
            pairs = ctx.op1("stablehlo.reshape", [k], ((2, 2), _U32))
            wide = ctx.op1("stablehlo.bitcast_convert", [pairs], ((2,), _U64))
        new, bits = ctx.op("stablehlo.rng_bit_generator", [wide], [wide, (shape, dtype)], attrs)
        if k.dtype == _U32:
            pairs = ctx.op1("stablehlo.bitcast_convert", [new], ((2, 2), _U32))
            new = ctx.op1("stablehlo.reshape", [pairs], k)
        return [new, bits]

    batch = key.shape[:-1]
    if not batch:
        return generate(key)
    return _map_rows(ctx, generate, key, [(key.shape[-1:], key.dtype), (shape, dtype)], batch)


def _map_rows(ctx, fn, x, row_avals, batch):
    """`fn` applied to each row of `x` (its leading `batch` dimensions flattened) in a
    `stablehlo.while`, the results stacked back into those dimensions."""
    n, i32 = math.prod(batch), np.dtype(np.int32)
    rows = ctx.op1("stablehlo.reshape", [x], ((n, *x.shape[len(batch) :]), x.dtype))
    bufs = [ctx.constant(0, dt, (n, *s)) for s, dt in row_avals]
    start = [ctx.constant(0, i32), rows, *bufs]
    carried = [(v.shape, v.dtype) for v in start]

    def test(i, *rest):
        return [_compare(ctx, i, ctx.constant(n, i32), "LT", "SIGNED")]

    def step(i, rows, *bufs):
        zero = ctx.constant(0, i32)
        tail = rows.shape[1:]
        attrs = {"slice_sizes": i64_array((1, *tail))}
        at = [i, *[zero] * len(tail)]
        row = ctx.op1("stablehlo.dynamic_slice", [rows, *at], ((1, *tail), rows.dtype), attrs)
        outs = fn(ctx.op1("stablehlo.reshape", [row], (tail, rows.dtype)))
        new = []
        for buf, y in zip(bufs, outs):
            y = ctx.op1("stablehlo.reshape", [y], ((1, *y.shape), y.dtype))
            start = [i, *[zero] * (len(y.shape) - 1)]
            new.append(ctx.op1("stablehlo.dynamic_update_slice", [buf, y, *start], buf))
        return [_binary(ctx, "add", i, ctx.constant(1, i32)), rows, *new]

    regions = [ctx.region(carried, test), ctx.region(carried, step)]
    results = ctx.op("stablehlo.while", start, carried, None, regions)[2:]
    return [ctx.op1("stablehlo.reshape", [r], ((*batch, *r.shape[1:]), r.dtype)) for r in results]


def rng_uniform(ctx, a, b, *, shape):
    """XLA's stateful `stablehlo.rng` (UNIFORM) between scalar bounds; bounds broadcast against
    `shape` (from vmap) scale draws in [0, 1) or reduce wide integer draws. As in the reference,
    a draw that is not in [a, b) (every draw when b <= a) is a."""
    shape, dt = tuple(shape), a.dtype
    attrs = {"rng_distribution": "#stablehlo<rng_distribution UNIFORM>"}
    dims = ctx.constant(np.array(shape, np.int64))
    lo, hi = broadcast_operand(ctx, a, shape), broadcast_operand(ctx, b, shape)
    if not a.shape and not b.shape:
        draws = ctx.op1("stablehlo.rng", [a, b, dims], (shape, dt), attrs)
    elif _dtypes.is_floating(dt):
        zero, one = ctx.constant(0, dt), ctx.constant(1, dt)
        u = ctx.op1("stablehlo.rng", [zero, one, dims], (shape, dt), attrs)
        draws = _binary(ctx, "add", lo, _binary(ctx, "multiply", u, _binary(ctx, "subtract", hi, lo)))
    else:
        top = ctx.constant(np.iinfo(dt).max, dt)
        r = ctx.op1("stablehlo.rng", [ctx.constant(0, dt), top, dims], (shape, dt), attrs)
        span = _binary(ctx, "maximum", _binary(ctx, "subtract", hi, lo), ctx.constant(1, dt, shape))
        draws = _binary(ctx, "add", lo, _binary(ctx, "remainder", r, span))
    ctype = compare_type(dt)
    ok = _binary(ctx, "and", _compare(ctx, draws, hi, "LT", ctype), _compare(ctx, lo, draws, "LE", ctype))
    return [_select(ctx, ok, draws, lo)]


# ----------------------------------------------------------------------------- bit arithmetic


def reduce_precision(ctx, x, *, exponent_bits, mantissa_bits):
    attrs = {"exponent_bits": f"{int(exponent_bits)} : i32", "mantissa_bits": f"{int(mantissa_bits)} : i32"}
    return [ctx.op1("stablehlo.reduce_precision", [x], x, attrs)]


def mulhi(ctx, x, y):
    """The high half of the double-width product: one wide multiply below 64 bits, else the
    schoolbook product of 32-bit halves in uint64 (less the two's complement corrections)."""
    out = ctx.avals_out[0]
    x, y = broadcast_operand(ctx, x, out.shape), broadcast_operand(ctx, y, out.shape)
    dt, bits = out.dtype, out.dtype.itemsize * 8
    signed = not _dtypes.is_unsigned(dt)
    if bits < 64:
        wide = np.dtype(np.int64 if signed else np.uint64)
        prod = _binary(ctx, "multiply", ctx.convert(x, wide), ctx.convert(y, wide))
        shift = "shift_right_arithmetic" if signed else "shift_right_logical"
        return [ctx.convert(_binary(ctx, shift, prod, ctx.constant(bits, wide, out.shape)), dt)]
    xu, yu = (ctx.op1("stablehlo.bitcast_convert", [v], (v.shape, _U64)) if signed else v for v in (x, y))
    s32, lo32 = ctx.constant(32, _U64, out.shape), ctx.constant(0xFFFFFFFF, _U64, out.shape)

    def add(*vs):
        acc = vs[0]
        for v in vs[1:]:
            acc = _binary(ctx, "add", acc, v)
        return acc

    def mul(a, b):
        return _binary(ctx, "multiply", a, b)

    def hi(v):
        return _binary(ctx, "shift_right_logical", v, s32)

    def lo(v):
        return _binary(ctx, "and", v, lo32)

    a_lo, a_hi, b_lo, b_hi = lo(xu), hi(xu), lo(yu), hi(yu)
    lo_hi, hi_lo = mul(a_lo, b_hi), mul(a_hi, b_lo)
    cross = add(hi(mul(a_lo, b_lo)), lo(lo_hi), lo(hi_lo))
    result = add(mul(a_hi, b_hi), hi(lo_hi), hi(hi_lo), hi(cross))
    if not signed:
        return [result]
    zero = ctx.constant(0, dt, out.shape)
    zero_u = ctx.constant(0, _U64, out.shape)
    for neg, other in ((x, yu), (y, xu)):
        fix = _select(ctx, _compare(ctx, neg, zero, "LT", "SIGNED"), other, zero_u)
        result = _binary(ctx, "subtract", result, fix)
    return [ctx.op1("stablehlo.bitcast_convert", [result], out)]


# ----------------------------------------------------------------------------- fused multiply-add


def fma(ctx, a, b, c):
    """`a * b + c` rounded once, as the reference computes it (StableHLO has no fma): narrower
    formats multiply exactly in float64 and add rounding to odd (then to float32, also to odd),
    so the last rounding is the only one; float64 splits the product exactly (Dekker).

    On a TPU (no float64) it is what JAX writes where morphax binds fma (the samplers: JAX's
    `u * (hi - lo) + lo`): a multiply and an add, whose rounding XLA's TPU compiler decides as it
    does for JAX's program, so the numbers are JAX's on that chip."""
    out = ctx.avals_out[0]
    if ctx.platform == "tpu":
        a, b, c = (broadcast_operand(ctx, v, out.shape) for v in (a, b, c))
        return [ctx.op1("stablehlo.add", [ctx.op1("stablehlo.multiply", [a, b], out), c], out)]
    a, b, c = wrap(ctx, a, b, c, shape=out.shape)
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    if out.dtype.itemsize < 8:
        s = _round_to_odd_sum(a.astype(f64) * b.astype(f64), c.astype(f64))
        if out.dtype != f32:  # to float32 rounding to odd, so the 16-bit rounding is the only one
            r = s.astype(f32)
            inexact = r.astype(f64).ne(s) & r.op("is_finite", dtype=_BOOL)
            toward = where(s > r.astype(f64), r.like(np.inf), -np.inf)
            s = where(inexact & _is_even(r), _next_after(r, toward), r)
        result = s.astype(out.dtype)
    else:
        p, e = two_product(a, b)
        hi = p + c
        v = hi - p
        lo = (p - (hi - v)) + (c - v)
        result = hi + _round_to_odd_sum(lo, e)
        plain = a * b + c
        # An exact zero takes its sign from p + c; non-finite products and sums from the plain sum.
        exact_zero = result.eq(0) & lo.eq(0) & e.eq(0)
        finite = result.op("is_finite", dtype=_BOOL) & p.op("is_finite", dtype=_BOOL)
        result = where(exact_zero | ~(finite & hi.op("is_finite", dtype=_BOOL)), plain, result)
    # A NaN addend comes through unchanged unless a product operand is NaN too.
    keep_c = isnan(c) & ~isnan(a) & ~isnan(b)
    return [where(keep_c, c, result).value]


def _is_even(x):
    unsigned = np.dtype(f"uint{x.dtype.itemsize * 8}")
    return (x.bitcast(unsigned) & 1).eq(0)


def _next_after(x, toward):
    return Expr(x.ctx, x.ctx.op1("chlo.next_after", [x.value, toward.value], x.value))


def _round_to_odd_sum(x, y):
    """x + y with its last bit set where the sum is inexact (TwoSum's error is nonzero)."""
    s = x + y
    v = s - x
    err = (x - (s - v)) + (y - v)
    nudge = s.op("is_finite", dtype=_BOOL) & err.ne(0) & _is_even(s)
    return where(nudge, _next_after(s, where(err > 0, s.like(np.inf), -np.inf)), s)
