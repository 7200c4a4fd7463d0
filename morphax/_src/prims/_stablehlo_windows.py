"""Makers of StableHLO lowering rules for windowed primitives: reduce_window_*, the cumulative scans
(a reduce_window over the whole axis, as JAX lowers them on CPU), select_and_gather_add and
select_and_scatter_add (a variadic reduce_window picks each window's first extreme element by its
index), the generic `reduce` (its jaxpr as the region) and conv_general_dilated.
"""

from __future__ import annotations

import math

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.prims._stablehlo import compare_values, highest, i64_array, lowest, precision_config


def padding_attr(pads) -> str:
    """(low, high) pairs as the `dense<[[lo, hi], ...]> : tensor<Nx2xi64>` StableHLO wants."""
    pads = [(int(lo), int(hi)) for lo, hi in pads]
    if not pads:
        return "dense<> : tensor<0x2xi64>"
    rows = ", ".join(f"[{lo}, {hi}]" for lo, hi in pads)
    return f"dense<[{rows}]> : tensor<{len(pads)}x2xi64>"


def _window_attrs(window_dimensions, window_strides, padding, base_dilation, window_dilation):
    return {
        "window_dimensions": i64_array(window_dimensions),
        "window_strides": i64_array(window_strides),
        "base_dilations": i64_array(base_dilation),
        "window_dilations": i64_array(window_dilation),
        "padding": padding_attr(padding),
    }


def _narrow(dtype) -> bool:
    dtype = np.dtype(dtype)
    return _dtypes.is_floating(dtype) and dtype.itemsize < 4


def _compute_dtype(dtype):
    """float16/bfloat16 accumulate in float32 and round once, as the NumPy references do."""
    return np.dtype(np.float32) if _narrow(dtype) else np.dtype(dtype)


def _reduce_window_op(ctx, x, init, combine, out_shape, attrs):
    """One reduce_window of `x` from the scalar `init`; `combine(a, b)` builds the region's body."""
    region = ctx.region([((), x.dtype)] * 2, lambda a, b: [combine(a, b)])
    return ctx.op1("stablehlo.reduce_window", [x, init], (out_shape, x.dtype), attrs, [region])


def _binary(ctx, op_name):
    return lambda a, b: ctx.op1(op_name, [a, b], a)


def _logaddexp(ctx):
    """log(e^a + e^b) as JAX lowers it: max + log1p(e^-|a - b|), or a + b when a - b is NaN (both
    infinite with one sign, or a NaN operand)."""

    def combine(a, b):
        hi = ctx.op1("stablehlo.maximum", [a, b], a)
        diff = ctx.op1("stablehlo.subtract", [a, b], a)
        undefined = compare_values(ctx, diff, diff, "NE", ())
        total = ctx.op1("stablehlo.add", [a, b], a)
        neg = ctx.op1("stablehlo.negate", [ctx.op1("stablehlo.abs", [diff], a)], a)
        rest = ctx.op1("stablehlo.log_plus_one", [ctx.op1("stablehlo.exponential", [neg], a)], a)
        smooth = ctx.op1("stablehlo.add", [hi, rest], a)
        return ctx.op1("stablehlo.select", [undefined, total, smooth], a)

    return combine


def _complex_extremum(ctx, direction):
    """max/min of complex scalars: by real parts, then imaginary parts (as JAX lowers them; XLA's
    own maximum of complex numbers compares real parts only)."""

    def combine(a, b):
        part = np.dtype(f"float{a.dtype.itemsize * 4}")
        ra, rb = (ctx.op1("stablehlo.real", [v], ((), part)) for v in (a, b))
        ia, ib = (ctx.op1("stablehlo.imag", [v], ((), part)) for v in (a, b))
        by_real = compare_values(ctx, ra, rb, direction, ())
        by_imag = compare_values(ctx, ia, ib, direction, ())
        pick_a = ctx.op1(
            "stablehlo.select", [compare_values(ctx, ra, rb, "EQ", ()), by_imag, by_real], by_real
        )
        return ctx.op1("stablehlo.select", [pick_a, a, b], a)

    return combine


_COMBINERS = {"logaddexp": _logaddexp}
_COMPLEX_DIRECTIONS = {"stablehlo.maximum": "GT", "stablehlo.minimum": "LT"}


def _combiner(ctx, op_name, dtype):
    if op_name in _COMPLEX_DIRECTIONS and _dtypes.is_complex(dtype):
        return _complex_extremum(ctx, _COMPLEX_DIRECTIONS[op_name])
    return _COMBINERS[op_name](ctx) if op_name in _COMBINERS else _binary(ctx, op_name)


def reduce_window(op_name: str, identity):
    """reduce_window_sum/max/min: one reduce_window starting from `identity(dtype)`; narrow floats
    sum in float32."""

    def rule(ctx, x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
        out = ctx.avals_out[0]
        if not x.shape:
            return [x]
        if 0 in out.shape:
            return [ctx.constant(0, out.dtype, out.shape)]
        dtype = _compute_dtype(x.dtype) if op_name == "stablehlo.add" else x.dtype
        xc = ctx.convert(x, dtype)
        init = ctx.constant(identity(x.dtype), dtype)
        attrs = _window_attrs(window_dimensions, window_strides, padding, base_dilation, window_dilation)
        res = _reduce_window_op(ctx, xc, init, _combiner(ctx, op_name, dtype), out.shape, attrs)
        return [ctx.convert(res, x.dtype)]

    return rule


def cumulative(op_name: str, identity):
    """cumsum/cumprod/cummax/cummin/cumlogsumexp: a reduce_window whose window spans the axis,
    padded with `identity(dtype)` before the axis (after it when `reverse`); narrow floats
    accumulate in float32. `op_name` is a StableHLO operation or "logaddexp"."""

    def rule(ctx, x, *, axis, reverse):
        if 0 in x.shape:
            return [x]
        n, nd = x.shape[axis], len(x.shape)
        dtype = _compute_dtype(x.dtype)
        xc = ctx.convert(x, dtype)
        init = ctx.constant(identity(x.dtype), dtype)
        window = [1] * nd
        window[axis] = n
        pads = [(0, 0)] * nd
        pads[axis] = (0, n - 1) if reverse else (n - 1, 0)
        attrs = _window_attrs(window, [1] * nd, pads, [1] * nd, [1] * nd)
        res = _reduce_window_op(ctx, xc, init, _combiner(ctx, op_name, dtype), x.shape, attrs)
        return [ctx.convert(res, x.dtype)]

    return rule


# ----------------------------------------------------------------------------- the generic reduce


def reduce(ctx, *operands, computation, jaxpr, dimensions):
    """`stablehlo.reduce` over all operands at once; the region is the computation's jaxpr, whose
    inputs (accumulators, then elements) are laid out as the region's arguments are. Where one
    element is reduced the initial values still join once (XLA would take the init for an identity
    and drop it): one map per result."""
    n = len(operands) // 2
    scalars = [((), v.dtype) for v in operands[n:]]
    shape = operands[0].shape
    if math.prod(shape[d] for d in dimensions) == 1:
        inits = [ctx.broadcast(v, shape) for v in operands[n:]]
        attrs = {"dimensions": i64_array(range(len(shape)))}
        outs = []
        for k, aval in enumerate(ctx.avals_out):
            one = ctx.region(scalars * 2, lambda *args, k=k: [ctx.lower_jaxpr(jaxpr, args)[k]])
            mapped = ctx.op1("stablehlo.map", [*inits, *operands[:n]], (shape, aval.dtype), attrs, [one])
            outs.append(ctx.op1("stablehlo.reshape", [mapped], aval))
        return outs
    region = ctx.region(scalars * 2, lambda *args: ctx.lower_jaxpr(jaxpr, args))
    attrs = {"dimensions": i64_array(dimensions)}
    return ctx.op("stablehlo.reduce", operands, ctx.avals_out, attrs, [region])


# ----------------------------------------------------------------------------- select_and_*


def _picks_first(ctx, direction, a, ai, b, bi):
    """Whether (a, index ai) wins over (b, bi): the more extreme value (NaN counts as the most
    extreme), the smaller index between equal values (or two NaNs)."""
    pick = compare_values(ctx, a, b, direction, ())
    tie = compare_values(ctx, a, b, "EQ", ())
    if _dtypes.is_inexact(a.dtype):
        a_nan, b_nan = compare_values(ctx, a, a, "NE", ()), compare_values(ctx, b, b, "NE", ())
        b_num = compare_values(ctx, b, b, "EQ", ())
        nan_wins = ctx.op1("stablehlo.and", [a_nan, b_num], pick)
        pick = ctx.op1("stablehlo.or", [pick, nan_wins], pick)
        tie = ctx.op1("stablehlo.or", [tie, ctx.op1("stablehlo.and", [a_nan, b_nan], tie)], tie)
    first = ctx.op1("stablehlo.and", [tie, compare_values(ctx, ai, bi, "LT", ())], tie)
    return ctx.op1("stablehlo.or", [pick, first], pick)


def _pad_dilate(ctx, x, fill, padding, base_dilation):
    """`x` dilated and padded with the scalar `fill` (negative padding crops): the array the
    windows slide over."""
    lo, hi = zip(*padding)
    attrs = {
        "edge_padding_low": i64_array(lo),
        "edge_padding_high": i64_array(hi),
        "interior_padding": i64_array([b - 1 for b in base_dilation]),
    }
    shape = tuple(
        (0 if n == 0 else 1 + b * (n - 1)) + lo + hi
        for n, b, (lo, hi) in zip(x.shape, base_dilation, padding)
    )
    return ctx.op1("stablehlo.pad", [x, ctx.constant(fill, x.dtype)], (shape, x.dtype), attrs)


def _selection(ctx, x, extra, select_prim, params):
    """Per window of the padded `x`: the flat index (into the padded shape) of its first extreme
    element, and the value of each array in `extra` (padded with 0) there."""
    direction = "GT" if select_prim.name == "ge" else "LT"
    fill = lowest(x.dtype) if direction == "GT" else highest(x.dtype)
    xp = _pad_dilate(ctx, x, fill, params["padding"], params["base_dilation"])
    size = math.prod(xp.shape)
    idx_t = np.dtype(np.int32 if size < 2**31 - 1 else np.int64)
    flat = ctx.op1("stablehlo.iota", [], ((size,), idx_t), {"iota_dimension": "0 : i64"})
    idx = ctx.op1("stablehlo.reshape", [flat], (xp.shape, idx_t))
    extras = [_pad_dilate(ctx, e, 0, params["padding"], params["base_dilation"]) for e in extra]
    ins = [xp, idx, *extras]
    inits = [ctx.constant(fill, x.dtype), ctx.constant(np.iinfo(idx_t).max, idx_t)]
    inits += [ctx.constant(0, e.dtype) for e in extras]

    def body(*args):
        k = len(ins)
        (a, ai, *ae), (b, bi, *be) = args[:k], args[k:]
        take_a = _picks_first(ctx, direction, a, ai, b, bi)
        return [ctx.op1("stablehlo.select", [take_a, u, v], u) for u, v in zip((a, ai, *ae), (b, bi, *be))]

    region = ctx.region([((), v.dtype) for v in ins] * 2, body)
    nd = len(x.shape)
    attrs = _window_attrs(
        params["window_dimensions"],
        params["window_strides"],
        [(0, 0)] * nd,
        [1] * nd,
        params["window_dilation"],
    )
    results = [(_out_shape(xp.shape, params), v.dtype) for v in ins]
    chosen = ctx.op("stablehlo.reduce_window", [*ins, *inits], results, attrs, [region])
    return chosen[1], chosen[2:], xp.shape


def _out_shape(padded, params):
    return tuple(
        0 if p < (k - 1) * r + 1 else (p - (k - 1) * r - 1) // s + 1
        for p, k, r, s in zip(
            padded, params["window_dimensions"], params["window_dilation"], params["window_strides"]
        )
    )


def select_and_gather_add(ctx, t, x, *, select_prim, **params):
    """Per window, the tangent at the operand's selected element (carried through the window
    reduction beside the operand and its index)."""
    out = ctx.avals_out[0]
    if not x.shape:
        return [t]
    if 0 in out.shape:
        return [ctx.constant(0, out.dtype, out.shape)]
    _, (chosen,), _ = _selection(ctx, x, [t], select_prim, params)
    return [chosen]


def select_and_scatter_add(ctx, s, x, *, select_prim, **params):
    """Each window's source value added at its selected element: the selected flat indices
    scattered into the padded operand's shape, whose padding is then cut away (narrow floats add
    in float32)."""
    out = ctx.avals_out[0]
    if not x.shape:
        return [s]
    if 0 in s.shape or 0 in x.shape:
        return [ctx.constant(0, out.dtype, out.shape)]
    undilated = all(d == 1 for d in (*params["base_dilation"], *params["window_dilation"]))
    if (
        undilated
        and all(lo >= 0 and hi >= 0 for lo, hi in params["padding"])
        and _tpu_can_lay_out(ctx, params)
    ):
        return [_select_and_scatter(ctx, s, x, select_prim, params, out)]
    index, _, padded = _selection(ctx, x, [], select_prim, params)
    m, size = math.prod(s.shape), math.prod(padded)
    dtype = _compute_dtype(s.dtype)
    updates = ctx.op1("stablehlo.reshape", [ctx.convert(s, dtype)], ((m,), dtype))
    indices = ctx.op1("stablehlo.reshape", [index], ((m, 1), index.dtype))
    zeros = ctx.constant(0, dtype, (size,))
    dims = "#stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>"
    attrs = {"indices_are_sorted": "false", "scatter_dimension_numbers": dims, "unique_indices": "false"}
    add = ctx.scalar_region(dtype, "stablehlo.add")
    summed = ctx.op1("stablehlo.scatter", [zeros, indices, updates], ((size,), dtype), attrs, [add])
    grid = ctx.op1("stablehlo.reshape", [summed], (padded, dtype))
    # Undo the edge padding (a negative pad crops, a positive one restores cropped zeros), then
    # keep every base_dilation-th element.
    dilation = params["base_dilation"]
    undone = _pad_dilate(ctx, grid, 0, [(-lo, -hi) for lo, hi in params["padding"]], [1] * len(padded))
    attrs = {
        "start_indices": i64_array([0] * len(padded)),
        "limit_indices": i64_array(undone.shape),
        "strides": i64_array(dilation),
    }
    res = ctx.op1("stablehlo.slice", [undone], (x.shape, dtype), attrs)
    return [ctx.convert(res, out.dtype)]


def _tpu_can_lay_out(ctx, params) -> bool:
    """A TPU runs `select_and_scatter` only when the layout XLA picks puts two dimensions of
    window 1 and stride 1 minor-most ("not implemented for TPU" otherwise): a max pool's batch and
    feature dimensions are such; a pool over every dimension of a matrix takes the scatter."""
    if ctx.platform != "tpu":
        return True
    plain = [w == 1 and st == 1 for w, st in zip(params["window_dimensions"], params["window_strides"])]
    return sum(plain) >= 2


def _select_and_scatter(ctx, s, x, select_prim, params, out):
    """select_and_scatter_add as XLA's own `select_and_scatter`, as JAX lowers it (a max pool's
    gradient; a TPU runs it natively, where the flat scatter above is slow): each window keeps
    its current pick unless a later element is more extreme (NaN the most), so the first extreme
    element wins; padding is never picked."""
    direction = "GE" if select_prim.name == "ge" else "LE"
    dtype = _compute_dtype(s.dtype)

    def select(a, b):
        keep = compare_values(ctx, a, b, direction, ())
        if _dtypes.is_inexact(a.dtype):
            keep = ctx.op1("stablehlo.or", [keep, compare_values(ctx, a, a, "NE", ())], keep)
        return [keep]

    # One precision throughout (XLA refuses a mix): a narrow float operand widens exactly.
    operand = ctx.convert(x, dtype) if _narrow(x.dtype) else x
    select_region = ctx.region([((), operand.dtype)] * 2, select)
    add_region = ctx.scalar_region(dtype, "stablehlo.add")
    attrs = {
        "window_dimensions": i64_array(params["window_dimensions"]),
        "window_strides": i64_array(params["window_strides"]),
        "padding": padding_attr(params["padding"]),
    }
    res = ctx.op1(
        "stablehlo.select_and_scatter",
        [operand, ctx.convert(s, dtype), ctx.constant(0, dtype)],
        (x.shape, dtype),
        attrs,
        [select_region, add_region],
    )
    return ctx.convert(res, out.dtype)


# ----------------------------------------------------------------------------- convolution


def _conv_layout(spec, first: str, second: str) -> str:
    labels = [""] * len(spec)
    labels[spec[0]], labels[spec[1]] = first, second
    for k, axis in enumerate(spec[2:]):
        labels[axis] = str(k)
    return "[" + ", ".join(labels) + "]"


def conv_general_dilated(
    ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
    feature_group_count, batch_group_count, precision, preferred_element_type,
):  # fmt: skip
    """`stablehlo.convolution` with the dimension numbers as layout strings; the operands are
    converted to the result's type first (integers then wrap, a preferred wider type accumulates
    in it); bool convolves as int32, true where the sum is nonzero."""
    out = ctx.avals_out[0]
    if 0 in out.shape:
        return [ctx.constant(0, out.dtype, out.shape)]
    dtype = np.dtype(np.int32) if _dtypes.is_bool(out.dtype) else out.dtype
    lhs, rhs = ctx.convert(lhs, dtype), ctx.convert(rhs, dtype)
    lspec, rspec, ospec = dimension_numbers
    layout = (
        f"{_conv_layout(lspec, 'b', 'f')}x{_conv_layout(rspec, 'o', 'i')}->{_conv_layout(ospec, 'b', 'f')}"
    )
    attrs = {"dimension_numbers": f"#stablehlo.conv<{layout}>"}
    if window_strides:
        attrs.update(
            window_strides=i64_array(window_strides),
            padding=padding_attr(padding),
            lhs_dilation=i64_array(lhs_dilation),
            rhs_dilation=i64_array(rhs_dilation),
        )
    attrs.update(
        feature_group_count=f"{int(feature_group_count)} : i64",
        batch_group_count=f"{int(batch_group_count)} : i64",
    )
    config = precision_config(precision)
    if config:  # HIGHEST keeps float32 products exact on a TPU (bfloat16 passes otherwise)
        attrs["precision_config"] = config
    res = ctx.op1("stablehlo.convolution", [lhs, rhs], (out.shape, dtype), attrs)
    if _dtypes.is_bool(out.dtype):
        res = compare_values(ctx, res, ctx.constant(0, dtype, out.shape), "NE")
    return [res]
