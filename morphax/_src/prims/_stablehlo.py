"""Makers of StableHLO lowering rules for the `stablehlo` slot of primitives, so a common rule is
one line in its primitive's block. A rule is `rule(ctx, *operands, **params) -> [Value]`; `ctx`
(compiler/backends/xla/lowering.py) writes the operations. Imports nothing of the compiler: rules
only call methods of the context they are given.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes


def broadcast_operand(ctx, x, shape):
    """lax's implicit broadcasting of elementwise operands: rank 0 anywhere, size-1 dimensions."""
    if x.shape == tuple(shape):
        return x
    dims = [] if not x.shape else range(len(shape))
    return ctx.broadcast(x, shape, dims)


def elementwise(op_name: str):
    """One StableHLO operation over operands broadcast to the result's shape."""

    def rule(ctx, *xs, **params):
        out = ctx.avals_out[0]
        return [ctx.op1(op_name, [broadcast_operand(ctx, x, out.shape) for x in xs], out)]

    return rule


def extremum(op_name: str, direction: str):
    """max/min: StableHLO's maximum/minimum (NaN propagates); complex operands compare
    lexicographically (real parts, then imaginary), as JAX lowers them."""
    plain = elementwise(op_name)

    def rule(ctx, x, y):
        if not _dtypes.is_complex(x.dtype):
            return plain(ctx, x, y)
        shape = ctx.avals_out[0].shape
        return [
            lexicographic_pick(
                ctx, broadcast_operand(ctx, x, shape), broadcast_operand(ctx, y, shape), direction
            )
        ]

    return rule


def lexicographic_pick(ctx, x, y, direction: str):
    """x where it is greater (GT) or less (LT) than y comparing real parts, then imaginary parts;
    else y (complex operands of one shape)."""
    shape, part = x.shape, np.dtype(f"float{x.dtype.itemsize * 4}")
    rx, ry = (ctx.op1("stablehlo.real", [v], (shape, part)) for v in (x, y))
    ix, iy = (ctx.op1("stablehlo.imag", [v], (shape, part)) for v in (x, y))
    by_real = compare_values(ctx, rx, ry, direction)
    by_imag = compare_values(ctx, ix, iy, direction)
    pick_x = ctx.op1("stablehlo.select", [compare_values(ctx, rx, ry, "EQ"), by_imag, by_real], by_real)
    return ctx.op1("stablehlo.select", [pick_x, x, y], x)


def compare_type(dtype) -> str:
    if _dtypes.is_inexact(dtype):
        return "FLOAT"
    if _dtypes.is_bool(dtype) or _dtypes.is_unsigned(dtype):
        return "UNSIGNED"
    return "SIGNED"


def compare_values(ctx, x, y, direction: str, shape=None):
    """`x <direction> y` elementwise, as a bool Value (`direction`: EQ, NE, LT, LE, GT, GE)."""
    shape = tuple(shape if shape is not None else (x.shape if x.shape else y.shape))
    x, y = broadcast_operand(ctx, x, shape), broadcast_operand(ctx, y, shape)
    attrs = {
        "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
        "compare_type": f"#stablehlo<comparison_type {compare_type(x.dtype)}>",
    }
    return ctx.op1("stablehlo.compare", [x, y], (shape, np.dtype(bool)), attrs)


def compare(direction: str):
    def rule(ctx, x, y, **params):
        return [compare_values(ctx, x, y, direction, ctx.avals_out[0].shape)]

    return rule


def same_as_operand(ctx, x, **params):
    """The operand itself (copy, barriers and hints without effect on values)."""
    return [x]


def reduction(op_name: str, identity):
    """A reduction over `axes` with one combining operation; `identity(dtype)` is its initial
    value."""

    direction = {"stablehlo.maximum": "GT", "stablehlo.minimum": "LT"}.get(op_name)

    def rule(ctx, x, *, axes, **params):
        out = ctx.avals_out[0]
        init = ctx.constant(identity(x.dtype), x.dtype)
        if direction and _dtypes.is_complex(x.dtype):  # lexicographic, as JAX's max/min
            scalar = ((), x.dtype)
            body = ctx.region([scalar, scalar], lambda a, b: [lexicographic_pick(ctx, a, b, direction)])
        else:
            body = ctx.scalar_region(x.dtype, op_name)
        attrs = {"dimensions": _i64_array(axes)}
        return [ctx.op1("stablehlo.reduce", [x, init], out, attrs, [body])]

    return rule


def _i64_array(values) -> str:
    values = [int(v) for v in values]
    return "array<i64: " + ", ".join(map(str, values)) + ">" if values else "array<i64>"


i64_array = _i64_array


def lowest(dtype):
    """The identity of max: -inf for floats, the smallest integer, False."""
    dtype = np.dtype(dtype)
    if _dtypes.is_bool(dtype):
        return False
    if _dtypes.is_inexact(dtype):
        return -np.inf
    return np.iinfo(dtype).min


def all_ones(dtype):
    """The identity of bitwise and: every bit set (True for bool)."""
    dtype = np.dtype(dtype)
    if _dtypes.is_bool(dtype):
        return True
    return np.iinfo(dtype).max if _dtypes.is_unsigned(dtype) else -1


def highest(dtype):
    dtype = np.dtype(dtype)
    if _dtypes.is_bool(dtype):
        return True
    if _dtypes.is_inexact(dtype):
        return np.inf
    return np.iinfo(dtype).max


# ----------------------------------------------------------------------------- layout


def reshape(ctx, x, *, new_sizes=None, dimensions=None, **params):
    if dimensions is not None:  # lax.reshape's `dimensions`: a transpose first
        x = transpose(ctx, x, permutation=dimensions)[0]
    out = ctx.avals_out[0]
    return [ctx.op1("stablehlo.reshape", [x], out)]


def transpose(ctx, x, *, permutation, **params):
    shape = tuple(x.shape[p] for p in permutation)
    attrs = {"permutation": i64_array(permutation)}
    return [ctx.op1("stablehlo.transpose", [x], (shape, x.dtype), attrs)]


def broadcast_in_dim(ctx, x, *, shape, broadcast_dimensions, **params):
    return [ctx.broadcast(x, shape, broadcast_dimensions)]


def slice_(ctx, x, *, start_indices, limit_indices, strides=None, **params):
    strides = strides or (1,) * len(start_indices)
    attrs = {
        "start_indices": i64_array(start_indices),
        "limit_indices": i64_array(limit_indices),
        "strides": i64_array(strides),
    }
    return [ctx.op1("stablehlo.slice", [x], ctx.avals_out[0], attrs)]


def concatenate(ctx, *xs, dimension, **params):
    return [ctx.op1("stablehlo.concatenate", xs, ctx.avals_out[0], {"dimension": f"{int(dimension)} : i64"})]


def pad(ctx, x, padding_value, *, padding_config, **params):
    lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
    attrs = {
        "edge_padding_low": i64_array(lo),
        "edge_padding_high": i64_array(hi),
        "interior_padding": i64_array(interior),
    }
    return [ctx.op1("stablehlo.pad", [x, padding_value], ctx.avals_out[0], attrs)]


def rev(ctx, x, *, dimensions, **params):
    return [ctx.op1("stablehlo.reverse", [x], x, {"dimensions": i64_array(dimensions)})]


def _index_scalars(ctx, starts):
    """Start indices as scalars of one integer type (StableHLO wants them alike): their own when
    they agree (an unsigned index stays unsigned: 2**32 - 1 is past the end, not -1), else int64.
    8- and 16-bit indices widen to 32 bits first, keeping their sign: a TPU read a negative int16
    start as a large unsigned one (it clamped -3 to the end, not to 0)."""
    starts = [_widened_index(ctx, s) for s in starts]
    if len({s.dtype for s in starts}) <= 1:
        return starts
    return [ctx.convert(s, np.int64) for s in starts]


def _widened_index(ctx, s):
    if s.dtype.itemsize >= 4:
        return s
    return ctx.convert(s, np.int32 if s.dtype.kind == "i" else np.uint32)


def dynamic_slice(ctx, x, *starts, slice_sizes, **params):
    attrs = {"slice_sizes": i64_array(slice_sizes)}
    return [ctx.op1("stablehlo.dynamic_slice", [x, *_index_scalars(ctx, starts)], ctx.avals_out[0], attrs)]


def dynamic_update_slice(ctx, x, update, *starts, **params):
    return [ctx.op1("stablehlo.dynamic_update_slice", [x, update, *_index_scalars(ctx, starts)], x)]


def iota(ctx, *, dtype, shape, dimension, **params):
    return [
        ctx.op1("stablehlo.iota", [], (tuple(shape), dtype), {"iota_dimension": f"{int(dimension)} : i64"})
    ]


# ----------------------------------------------------------------------------- conversions


def convert_element_type(ctx, x, *, new_dtype, **params):
    new_dtype = np.dtype(new_dtype)
    if x.dtype == new_dtype:
        return [x]
    if new_dtype == np.bool_:  # nonzero is True (a plain convert would keep the low bit)
        return [compare_values(ctx, x, ctx.constant(0, x.dtype, x.shape), "NE")]
    if _dtypes.is_complex(x.dtype) and not _dtypes.is_complex(new_dtype):
        x = ctx.op1("stablehlo.real", [x], (x.shape, np.dtype(f"float{x.dtype.itemsize * 4}")))
    return [ctx.convert(x, new_dtype)]


def bitcast_convert_type(ctx, x, *, new_dtype, **params):
    return [ctx.op1("stablehlo.bitcast_convert", [x], ctx.avals_out[0])]


# ----------------------------------------------------------------------------- reductions and dot


def argminmax(direction: str):
    """argmax (direction GT) or argmin (LT) along one axis: a two-operand reduce over values and
    their indices; NaN counts as the extreme value and ties go to the first index, as in JAX."""

    def rule(ctx, x, *, axes, index_dtype, **params):
        (axis,) = axes
        out = ctx.avals_out[0]
        index_dtype = np.dtype(index_dtype)
        indices = ctx.op1(
            "stablehlo.iota", [], (x.shape, index_dtype), {"iota_dimension": f"{int(axis)} : i64"}
        )
        start = lowest(x.dtype) if direction == "GT" else highest(x.dtype)
        inits = [ctx.constant(start, x.dtype), ctx.constant(0, index_dtype)]

        def body(x, x_i, y, y_i):
            # x is the running result (XLA passes the accumulator first): it stays when it is
            # better, or NaN (so the first NaN wins), or equal with the smaller index.
            keep = compare_values(ctx, x, y, direction, ())
            if _dtypes.is_inexact(x.dtype):
                keep = ctx.op1("stablehlo.or", [keep, compare_values(ctx, x, x, "NE", ())], keep)
            tie = ctx.op1(
                "stablehlo.and",
                [compare_values(ctx, x, y, "EQ", ()), compare_values(ctx, x_i, y_i, "LT", ())],
                keep,
            )
            keep_index = ctx.op1("stablehlo.or", [keep, tie], keep)
            return [
                ctx.op1("stablehlo.select", [keep, x, y], x),
                ctx.op1("stablehlo.select", [keep_index, x_i, y_i], x_i),
            ]

        scalars = [((), x.dtype), ((), index_dtype)]
        region = ctx.region(scalars + scalars, body)
        shapes = [(out.shape, x.dtype), (out.shape, index_dtype)]
        attrs = {"dimensions": i64_array(axes)}
        return [ctx.op("stablehlo.reduce", [x, indices, *inits], shapes, attrs, [region])[1]]

    return rule


def dot_general(ctx, lhs, rhs, *, dimension_numbers, preferred_element_type=None, **params):
    (lc, rc), (lb, rb) = dimension_numbers
    out = ctx.avals_out[0]
    if lhs.dtype != rhs.dtype:
        lhs, rhs = ctx.convert(lhs, out.dtype), ctx.convert(rhs, out.dtype)
    fields = [
        ("lhs_batching_dimensions", lb),
        ("rhs_batching_dimensions", rb),
        ("lhs_contracting_dimensions", lc),
        ("rhs_contracting_dimensions", rc),
    ]
    text = ", ".join(f"{k} = [{', '.join(str(int(d)) for d in v)}]" for k, v in fields if len(v))
    attrs = {"dot_dimension_numbers": f"#stablehlo.dot<{text}>"}
    config = precision_config(params.get("precision"))
    if config:
        attrs["precision_config"] = config
    return [ctx.op1("stablehlo.dot_general", [lhs, rhs], out, attrs)]


def precision_config(precision) -> str | None:
    """`precision_config` of a dot or convolution: the (lhs, rhs) Precision pair, as JAX writes it
    (None when both are DEFAULT: XLA's own choice, bfloat16 passes on a TPU). A DotAlgorithm preset
    is not written yet: the plugin's default applies."""
    if precision is None:
        return None
    pair = precision if isinstance(precision, (tuple, list)) else (precision, precision)
    names = [getattr(p, "name", None) for p in pair]
    if (
        len(names) != 2
        or any(n not in ("DEFAULT", "HIGH", "HIGHEST") for n in names)
        or names == ["DEFAULT"] * 2
    ):
        return None
    return "[" + ", ".join(f"#stablehlo<precision {n}>" for n in names) + "]"


# ----------------------------------------------------------------------------- control flow


def cond(ctx, index, *args, branches, **params):
    """`stablehlo.case` over the branches (an index past the last takes the last, as lax.switch
    clamps it anyway); each region computes its branch on the operands of the equation."""
    index = ctx.convert(index, np.int32)
    regions = [ctx.region([], lambda b=branch: ctx.lower_jaxpr(b, args)) for branch in branches]
    return ctx.op("stablehlo.case", [index], ctx.avals_out, None, regions)


def while_loop(ctx, *operands, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts, **params):
    """`stablehlo.while` carrying the constants of both bodies with the loop's own carry."""
    cc, bc = cond_nconsts, cond_nconsts + body_nconsts
    carried = [(v.shape, v.dtype) for v in operands]

    def test(*values):
        return ctx.lower_jaxpr(cond_jaxpr, [*values[:cc], *values[bc:]])

    def step(*values):
        return [*values[:bc], *ctx.lower_jaxpr(body_jaxpr, [*values[cc:bc], *values[bc:]])]

    regions = [ctx.region(carried, test), ctx.region(carried, step)]
    return ctx.op("stablehlo.while", operands, carried, None, regions)[bc:]


def scan(ctx, *operands, jaxpr, length, reverse, num_consts, num_carry, **params):
    """A `stablehlo.while` over a counter: step i reads slice i (length-1-i in reverse) of each
    scanned operand and writes its outputs into slice i of the stacked results."""
    consts, init, xs = (
        operands[:num_consts],
        operands[num_consts : num_consts + num_carry],
        operands[num_consts + num_carry :],
    )
    y_avals = ctx.avals_out[num_carry:]
    i32 = np.dtype(np.int32)
    ys0 = [ctx.constant(0, a.dtype, a.shape) for a in y_avals]
    if length == 0:  # the body never runs (and its slices of empty xs would not type-check)
        return [*init, *ys0]
    start = [ctx.constant(0, i32), *consts, *init, *xs, *ys0]
    carried = [(v.shape, v.dtype) for v in start]
    n_c, n_x = num_consts, len(xs)

    def test(i, *rest):
        return [compare_values(ctx, i, ctx.constant(length, i32), "LT", ())]

    def step(i, *rest):
        cs, carry = rest[:n_c], rest[n_c : n_c + num_carry]
        xs_now, ys = rest[n_c + num_carry : n_c + num_carry + n_x], rest[n_c + num_carry + n_x :]
        at = ctx.op1("stablehlo.subtract", [ctx.constant(length - 1, i32), i], i) if reverse else i
        zero = ctx.constant(0, i32)
        slices = []
        for x in xs_now:
            piece = ctx.op1(
                "stablehlo.dynamic_slice",
                [x, at, *[zero] * (len(x.shape) - 1)],
                ((1, *x.shape[1:]), x.dtype),
                {"slice_sizes": i64_array((1, *x.shape[1:]))},
            )
            slices.append(ctx.op1("stablehlo.reshape", [piece], (x.shape[1:], x.dtype)))
        outs = ctx.lower_jaxpr(jaxpr, [*cs, *carry, *slices])
        new_ys = []
        for buf, y in zip(ys, outs[num_carry:]):
            row = ctx.op1("stablehlo.reshape", [y], ((1, *y.shape), y.dtype))
            new_ys.append(
                ctx.op1("stablehlo.dynamic_update_slice", [buf, row, at, *[zero] * len(y.shape)], buf)
            )
        one = ctx.constant(1, i32)
        return [ctx.op1("stablehlo.add", [i, one], i), *cs, *outs[:num_carry], *xs_now, *new_ys]

    regions = [ctx.region(carried, test), ctx.region(carried, step)]
    results = ctx.op("stablehlo.while", start, carried, None, regions)
    carry_out = results[1 + n_c : 1 + n_c + num_carry]
    return [*carry_out, *results[1 + n_c + num_carry + n_x :]]
