"""Windowed reductions: reduce_window_sum/max/min behind `lax.reduce_window` (pooling), and
select_and_gather_add / select_and_scatter_add, the pair a max/min window's derivative needs.
References pad and dilate with the identity, then reduce strided windows; max/min select the first
extreme element of each window (NaN counts as extreme), which receives the window's tangent."""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import Zero, is_zero, tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import bdim_to_front
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.trace import Tracer
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims import _stablehlo_windows as hlo_windows
from morphax._src.prims import slicing
from morphax._src.prims._ad import deflinear, linear_in_first
from morphax._src.prims._spec import FLOAT_SPECIALS, Case, TestSpec, random_array
from morphax._src.prims.arithmetic import add as _lax_add
from morphax._src.prims.arithmetic import max as _lax_max
from morphax._src.prims.arithmetic import min as _lax_min
from morphax._src.prims.builders import check_dtype
from morphax._src.prims.compare import ge_p, le_p
from morphax._src.prims.reductions import _compute_dtype, _max_identity, _min_identity

__all__ = [
    "padtype_to_pads",
    "reduce_window",
    "reduce_window_max_p",
    "reduce_window_min_p",
    "reduce_window_shape_tuple",
    "reduce_window_sum_p",
    "select_and_gather_add_p",
    "select_and_scatter_add_p",
]

# ------------------------------------------------------------------------------------------------
# Window arithmetic and NumPy window helpers (shared with convolution).


def dilate_dim(d: int, r: int) -> int:
    return 0 if d == 0 else 1 + r * (d - 1)


def stride_dim(d: int, window: int, stride: int) -> int:
    return 0 if d < window else (d - window) // stride + 1


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """(low, high) pairs for the 'SAME', 'SAME_LOWER' or 'VALID' padding of each spatial dim."""
    if not isinstance(padding, str):
        raise TypeError(f"padtype_to_pads: padding must be 'SAME', 'SAME_LOWER' or 'VALID', got {padding!r}.")
    kind = padding.upper()
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"Unknown padding type: {padding!r}; use 'SAME', 'SAME_LOWER' or 'VALID'.")
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        if int(s) < 1:
            raise ValueError(
                f"padtype_to_pads: window_strides must be >= 1 in every dimension to compute "
                f"{padding!r} padding, got {tuple(window_strides)}."
            )
        out = -(-int(n) // int(s))
        total = max((out - 1) * int(s) + int(k) - int(n), 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if kind == "SAME" else (big, small))
    return pads


def pad_dilate_np(x, fill, axes, pads, dilation):
    """`x` with `fill` between elements (dilation) and at the edges (pads; negative ones crop)
    along `axes`: the input a window op actually slides over."""
    config = [(0, 0, 1)] * x.ndim
    for ax, (lo, hi), r in zip(axes, pads, dilation):
        config[ax] = (lo, hi, r)
    grown = [max(lo, 0) + max(hi, 0) + dilate_dim(n, r) for (lo, hi, r), n in zip(config, x.shape)]
    out = np.full(grown, fill, dtype=x.dtype)
    out[
        tuple(slice(max(lo, 0), max(lo, 0) + dilate_dim(n, r), r) for (lo, hi, r), n in zip(config, x.shape))
    ] = x
    return out[tuple(slice(max(-lo, 0), g - max(-hi, 0)) for (lo, hi, _), g in zip(config, grown))]


def unpad_dilate_np(y, axes, pads, dilation, shape):
    """Inverse of `pad_dilate_np`: the entries of `y` where the original elements sit (zeros for
    elements the padding cropped)."""
    index, take = [], []
    for ax in range(len(shape)):
        lo, r = 0, 1
        if ax in axes:
            j = axes.index(ax)
            lo, r = pads[j][0], dilation[j]
        pos = np.arange(shape[ax]) * r + lo
        ok = (pos >= 0) & (pos < y.shape[ax])
        index.append(np.nonzero(ok)[0])
        take.append(pos[ok])
    out = np.zeros(shape, y.dtype)
    out[np.ix_(*index)] = y[np.ix_(*take)]
    return out


def windows_np(xp, axes, window, strides, window_dilation):
    """Strided windows of `xp` over `axes`: shape (..., out positions at `axes` ..., *window)."""
    eff = [dilate_dim(k, r) for k, r in zip(window, window_dilation)]
    v = np.lib.stride_tricks.sliding_window_view(xp, eff, axis=tuple(axes))
    sel = [slice(None)] * xp.ndim
    for ax, s in zip(axes, strides):
        sel[ax] = slice(None, None, s)
    return v[tuple(sel) + tuple(slice(None, None, r) for r in window_dilation)]


def transpose_padding(in_shape, window, strides, out_shape, padding, in_dilation, window_dilation):
    """Padding of the convolution that maps an output cotangent back onto the input: its windows
    (the flipped kernel, stride `in_dilation`, cotangent dilated by `strides`) must visit exactly the
    input positions each output position read."""
    pads = []
    for n, k, s, o, (lo, _), a, r in zip(
        in_shape, window, strides, out_shape, padding, in_dilation, window_dilation
    ):
        before = dilate_dim(k, r) - 1 - lo
        pads.append((before, dilate_dim(n, a) + dilate_dim(k, r) - 1 - dilate_dim(o, s) - before))
    return pads


_WINDOW = ("window_dimensions", "window_strides", "padding", "base_dilation", "window_dilation")


def _window_shape(name, shape, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    """Output shape of a window op over an operand of `shape`, with JAX's checks."""
    nd = len(shape)
    for what, vals in (
        ("window_dimensions", window_dimensions),
        ("window_strides", window_strides),
        ("base_dilation", base_dilation),
        ("window_dilation", window_dilation),
    ):
        if len(vals) != nd:
            raise TypeError(f"{name}: {what} must have one entry per operand dimension ({nd}), got {vals}.")
        if any(v < 1 for v in vals):
            raise TypeError(f"{name}: {what} must contain only positive sizes, got {vals}.")
    if len(padding) != nd or any(len(p) != 2 for p in padding):
        raise TypeError(
            f"{name}: padding must hold one (low, high) pair per operand dimension ({nd}), got {padding}."
        )
    padded = [dilate_dim(n, b) + lo + hi for n, b, (lo, hi) in zip(shape, base_dilation, padding)]
    if any(p < 0 for p in padded):
        raise ValueError(
            f"{name}: negative padding {padding} removes more than the (base-dilated) operand of shape {tuple(shape)}."
        )
    return tuple(
        stride_dim(p, dilate_dim(k, r), s)
        for p, k, r, s in zip(padded, window_dimensions, window_dilation, window_strides)
    )


def reduce_window_shape_tuple(
    operand_shape, window_dimensions, window_strides, padding, base_dilation=None, window_dilation=None
):
    """The output shape of a reduce_window, by JAX's arithmetic alone: a dimension the window does
    not fit (including a placeholder such as stax's -1 batch) is 0. The primitive itself checks
    its operands (`_window_shape`)."""
    nd = len(operand_shape)
    base_dilation = base_dilation or (1,) * nd
    window_dilation = window_dilation or (1,) * nd
    return tuple(
        stride_dim(dilate_dim(n, b) + lo + hi, dilate_dim(k, r), s)
        for n, b, (lo, hi), k, r, s in zip(
            operand_shape, base_dilation, padding, window_dimensions, window_dilation, window_strides
        )
    )


def _identity(kind, dt):
    if kind == "sum":
        return 0
    return _max_identity(dt) if kind == "max" else _min_identity(dt)


def _windows(x, fill, params):
    """Padded strided windows of `x` (shape (*out, *window)), or None when there are none."""
    out = _window_shape("window", x.shape, *(params[k] for k in _WINDOW))
    if 0 in out or x.ndim == 0:
        return None, out
    axes = tuple(range(x.ndim))
    xp = pad_dilate_np(x, fill, axes, params["padding"], params["base_dilation"])
    return windows_np(
        xp, axes, params["window_dimensions"], params["window_strides"], params["window_dilation"]
    ), out


# ------------------------------------------------------------------------------------------------
# reduce_window_{sum,max,min}.


def _reduce_window(kind, dtypes):
    prim = Primitive(f"reduce_window_{kind}")
    prim.kind = Kind.OPAQUE
    name = prim.name

    def abstract_eval(x, **params):
        check_dtype(name, x.dtype, dtypes)
        return ShapedArray(_window_shape(name, x.shape, *(params[k] for k in _WINDOW)), x.dtype, x.weak_type)

    def impl(x, **params):
        dt = x.dtype
        # Integer sums wrap in the operand dtype; narrow floats widen (exactly) to float32.
        cdt = _compute_dtype(dt)
        ident = np.array(_identity(kind, dt)).astype(cdt)
        win, out = _windows(x.astype(cdt), ident, params)
        if x.ndim == 0:
            return np.array(x, copy=True)
        if win is None:
            return np.full(out, ident).astype(dt)
        red = tuple(range(x.ndim, 2 * x.ndim))
        if kind == "sum":
            r = np.sum(win, axis=red, dtype=cdt)
        else:
            r = (np.max if kind == "max" else np.min)(win, axis=red)
        return np.ascontiguousarray(np.asarray(r).astype(dt))

    def batch(vals, dims, *, axis_data, **params):
        (x,), (d,) = vals, dims
        return prim.bind(x, **_with_unit_window(params, d)), d

    prim.abstract_eval = abstract_eval
    prim.impl = impl
    prim.batch = batch
    return prim


def _with_unit_window(params, d):
    """Params with a trivial window (size 1, stride 1, no padding or dilation) inserted at axis d."""
    unit = {
        "window_dimensions": 1,
        "window_strides": 1,
        "padding": (0, 0),
        "base_dilation": 1,
        "window_dilation": 1,
    }
    new = dict(params)
    for k, v in unit.items():
        new[k] = tuple(params[k][:d]) + (v,) + tuple(params[k][d:])
    return new


reduce_window_sum_p = _reduce_window("sum", "numeric")
reduce_window_sum_p.stablehlo = hlo_windows.reduce_window("stablehlo.add", lambda dtype: 0)
reduce_window_max_p = _reduce_window("max", "any")
reduce_window_max_p.stablehlo = hlo_windows.reduce_window("stablehlo.maximum", hlo.lowest)
reduce_window_min_p = _reduce_window("min", "any")
reduce_window_min_p.stablehlo = hlo_windows.reduce_window("stablehlo.minimum", hlo.highest)


def _reduce_window_sum_transpose(ct, operand, **params):
    # Each input element receives the cotangents of the windows that read it: the cotangent
    # spread out by the strides and summed over windows (an all-ones transposed convolution).
    aval = operand.aval
    if is_zero(ct):
        return [Zero(aval)]
    nd = len(aval.shape)
    pads = transpose_padding(
        aval.shape,
        params["window_dimensions"],
        params["window_strides"],
        get_aval(ct).shape,
        params["padding"],
        params["base_dilation"],
        params["window_dilation"],
    )
    config = tuple((lo, hi, s - 1) for (lo, hi), s in zip(pads, params["window_strides"]))
    spread = slicing.pad(ct, np.zeros((), get_aval(ct).dtype), config)
    res = reduce_window_sum_p.bind(
        spread,
        window_dimensions=params["window_dimensions"],
        window_strides=params["base_dilation"],
        padding=((0, 0),) * nd,
        base_dilation=(1,) * nd,
        window_dilation=params["window_dilation"],
    )
    return [res]


deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)


def _chooser_jvp(prim, select_prim):
    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, **params)
        out = tangent_aval(get_aval(ans))
        if is_zero(t) or out.dtype == _dtypes.float0:
            return ans, Zero(out)
        return ans, select_and_gather_add_p.bind(t, x, select_prim=select_prim, **params)

    prim.jvp = jvp


# ------------------------------------------------------------------------------------------------
# select_and_gather_add(tangents, operand): per window, the tangent at the operand's selected
# (first max for ge, first min for le) element. select_and_scatter_add(source, operand): its
# transpose, adding each window's source value at that element. Both are linear in the first
# operand; the selection is piecewise constant in the operand.


def _selected(x, select_prim, params):
    """Flat indices (into the padded operand) of each window's selected element, and that shape."""
    ge = select_prim is ge_p
    cdt = _compute_dtype(x.dtype)
    ident = np.array(_max_identity(x.dtype) if ge else _min_identity(x.dtype)).astype(cdt)
    win, out = _windows(x.astype(cdt), ident, params)
    axes = tuple(range(x.ndim))
    padded = tuple(
        dilate_dim(n, b) + lo + hi
        for n, b, (lo, hi) in zip(x.shape, params["base_dilation"], params["padding"])
    )
    if x.ndim == 0:
        return np.zeros((), np.intp), padded
    if win is None:
        return np.zeros(out, np.intp), padded
    flat = win.reshape(out + (-1,))
    k = np.argmax(flat, axis=-1) if ge else np.argmin(flat, axis=-1)
    offs = np.unravel_index(k, params["window_dimensions"])
    grid = np.indices(out, sparse=True)
    coords = [grid[a] * params["window_strides"][a] + offs[a] * params["window_dilation"][a] for a in axes]
    return np.ravel_multi_index(coords, padded), padded


def _check_select(name, a, x, select_prim, params, a_shape_is_out):
    if select_prim not in (ge_p, le_p):
        raise ValueError(f"{name}: select_prim must be lax.ge_p or lax.le_p, got {select_prim!r}.")
    out = _window_shape(name, x.shape, *(params[k] for k in _WINDOW))
    want = out if a_shape_is_out else x.shape
    if a.shape != want:
        what = "source must have the window output shape" if a_shape_is_out else "tangents must match operand"
        raise TypeError(f"{name}: {what} {want}, got {a.str_short()} for operand {x.str_short()}.")
    return out


select_and_gather_add_p = Primitive("select_and_gather_add")
select_and_gather_add_p.kind = Kind.OPAQUE
select_and_gather_add_p.stablehlo = hlo_windows.select_and_gather_add


def _gather_abstract_eval(t, x, *, select_prim, **params):
    out = _check_select("select_and_gather_add", t, x, select_prim, params, False)
    return ShapedArray(out, t.dtype, t.weak_type)


def _gather_impl(t, x, *, select_prim, **params):
    idx, padded = _selected(x, select_prim, params)
    if x.ndim == 0:
        return np.array(t, copy=True)
    tp = pad_dilate_np(t, 0, tuple(range(t.ndim)), params["padding"], params["base_dilation"])
    return np.ascontiguousarray(tp.reshape(-1)[idx]) if tp.size else np.zeros(idx.shape, t.dtype)


select_and_gather_add_p.abstract_eval = _gather_abstract_eval
select_and_gather_add_p.impl = _gather_impl


select_and_scatter_add_p = Primitive("select_and_scatter_add")
select_and_scatter_add_p.kind = Kind.OPAQUE
select_and_scatter_add_p.stablehlo = hlo_windows.select_and_scatter_add


def _scatter_abstract_eval(s, x, *, select_prim, **params):
    _check_select("select_and_scatter_add", s, x, select_prim, params, True)
    return ShapedArray(x.shape, s.dtype, s.weak_type)


def _scatter_impl(s, x, *, select_prim, **params):
    idx, padded = _selected(x, select_prim, params)
    if x.ndim == 0:
        return np.array(s, copy=True)
    cdt = _compute_dtype(s.dtype)
    acc = np.zeros(int(np.prod(padded, dtype=np.int64)), cdt)
    np.add.at(acc, idx.reshape(-1), s.astype(cdt).reshape(-1))
    res = unpad_dilate_np(
        acc.reshape(padded), tuple(range(x.ndim)), params["padding"], params["base_dilation"], x.shape
    )
    return np.ascontiguousarray(res.astype(s.dtype))


select_and_scatter_add_p.abstract_eval = _scatter_abstract_eval
select_and_scatter_add_p.impl = _scatter_impl


def _gather_transpose(ct, t, x, **params):
    if is_zero(ct):
        return [Zero(t.aval), None]
    return [select_and_scatter_add_p.bind(ct, x, **params), None]


def _scatter_transpose(ct, s, x, **params):
    if is_zero(ct):
        return [Zero(s.aval), None]
    return [select_and_gather_add_p.bind(ct, x, **params), None]


linear_in_first(select_and_gather_add_p, _gather_transpose)
linear_in_first(select_and_scatter_add_p, _scatter_transpose)


def _select_batcher(prim):
    def rule(vals, dims, *, axis_data, select_prim, **params):
        a, x = (bdim_to_front(v, d, axis_data.size) for v, d in zip(vals, dims))
        return prim.bind(a, x, select_prim=select_prim, **_with_unit_window(params, 0)), 0

    prim.batch = rule


_select_batcher(select_and_gather_add_p)
_select_batcher(select_and_scatter_add_p)
_chooser_jvp(reduce_window_max_p, ge_p)
_chooser_jvp(reduce_window_min_p, le_p)


# ------------------------------------------------------------------------------------------------
# Test specs. The float32 cases come first (the derivative matrix takes the first few) and have
# a real element in every window, so finite differences never meet an all-padding window.

_CONFIGS = (
    ("pool2x2", (4, 6), (2, 2), (2, 2), ((0, 0), (0, 0)), None, None),
    ("same-pad", (5,), (3,), (1,), ((1, 1),), None, None),
    ("window-dilation", (2, 5, 4), (1, 3, 2), (1, 2, 1), ((0, 0), (1, 2), (0, 1)), None, (1, 1, 2)),
    ("base-dilation-negative-pad", (3, 4), (2, 2), (1, 1), ((1, 0), (-1, 1)), (2, 1), None),
    ("scalar", (), (), (), (), None, None),
    ("zero-size", (0, 3), (1, 2), (1, 1), ((0, 0), (0, 0)), None, None),
    ("window-too-big", (2, 3), (3, 1), (1, 1), ((0, 0), (0, 0)), None, None),
)


def _params(cfg):
    _, shape, wd, ws, pad, bd, wdl = cfg
    nd = len(shape)
    return dict(
        window_dimensions=wd,
        window_strides=ws,
        padding=pad,
        base_dilation=bd or (1,) * nd,
        window_dilation=wdl or (1,) * nd,
    )


def _window_cases(dtype_list, specials):
    def cases(rng):
        out = []
        for dt in dtype_list:
            for cfg in _CONFIGS:
                out.append(Case((random_array(rng, cfg[1], dt),), _params(cfg), f"{dt}-{cfg[0]}"))
        if specials:
            sp = np.array(FLOAT_SPECIALS, np.float64).astype(np.float32).reshape(3, 4)
            cfg = ("", (3, 4), (2, 2), (1, 2), ((0, 1), (1, 0)), None, None)
            out.append(Case((sp,), _params(cfg), "float32-specials"))
        return out

    return cases


reduce_window_sum_p.test_spec = TestSpec(
    cases=_window_cases(("float32", "float16", "bfloat16", "int32", "int8", "uint8", "complex64"), False),
    tol={"float16": 1e-2, "bfloat16": 1e-2},
)
for _p in (reduce_window_max_p, reduce_window_min_p):
    _p.test_spec = TestSpec(
        cases=_window_cases(("float32", "float16", "bfloat16", "int32", "int8", "uint8", "bool"), True)
    )


def _select_cases(first_is_out):
    def cases(rng):
        out = []
        for dt in ("float32", "float16", "bfloat16"):
            for sel in (ge_p, le_p):
                for cfg in _CONFIGS[:5]:
                    params = dict(_params(cfg), select_prim=sel)
                    x = random_array(rng, cfg[1], dt)
                    shape = (
                        _window_shape("spec", cfg[1], *(params[k] for k in _WINDOW))
                        if first_is_out
                        else cfg[1]
                    )
                    a = random_array(rng, shape, dt)
                    out.append(Case((a, x), params, f"{dt}-{sel}-{cfg[0]}"))
        return out

    return cases


select_and_gather_add_p.test_spec = TestSpec(cases=_select_cases(False))
select_and_scatter_add_p.test_spec = TestSpec(
    cases=_select_cases(True), tol={"float16": 1e-2, "bfloat16": 1e-2}
)


# ------------------------------------------------------------------------------------------------
# lax.reduce_window.

_MONOIDS = {
    _lax_add: ("sum", reduce_window_sum_p),
    _lax_max: ("max", reduce_window_max_p),
    _lax_min: ("min", reduce_window_min_p),
}


def _is_identity(init, kind, dtype) -> bool:
    if isinstance(init, Tracer):
        return False
    try:
        v = np.asarray(init)
    except Exception:  # noqa: BLE001 - anything not concrete is treated as a general init value
        return False
    if v.shape:
        return False
    # JAX recognises the monoid by the init value's own type too: -inf starts a max over integers
    # (equinox's MaxPool does this), so the init is not folded in (it does not fit the dtype).
    with np.errstate(all="ignore"):
        if v.dtype.kind in "biufc" and bool(v == _identity(kind, v.dtype)):
            return True
        return bool(v == _identity(kind, dtype))


def reduce_window(
    operand,
    init_value,
    computation,
    window_dimensions,
    window_strides,
    padding,
    base_dilation=None,
    window_dilation=None,
):
    """Reduce each window of `operand` with `computation` (lax.add, lax.max or lax.min), starting
    from `init_value`; `padding` is 'SAME', 'VALID' or (low, high) pairs."""
    from morphax._src.prims._shape_util import as_lax_array

    if computation not in _MONOIDS:
        raise NotImplementedError(
            f"reduce_window: computation {computation!r} is not supported; morphax implements reduce_window for "
            "lax.add, lax.max and lax.min."
        )
    if isinstance(operand, (tuple, list)):
        raise NotImplementedError(
            "reduce_window: pytrees of operands are not supported; pass a single array."
        )
    kind, prim = _MONOIDS[computation]
    operand = as_lax_array(operand)
    aval = get_aval(operand)
    nd = aval.ndim
    window_dimensions = tuple(operator.index(k) for k in window_dimensions)
    window_strides = tuple(operator.index(s) for s in window_strides)
    base_dilation = (1,) * nd if base_dilation is None else tuple(operator.index(b) for b in base_dilation)
    window_dilation = (
        (1,) * nd if window_dilation is None else tuple(operator.index(r) for r in window_dilation)
    )
    if isinstance(padding, str):
        eff = [dilate_dim(k, r) for k, r in zip(window_dimensions, window_dilation)]
        padding = padtype_to_pads(aval.shape, eff, window_strides, padding)
    padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    out = prim.bind(
        operand,
        window_dimensions=window_dimensions,
        window_strides=window_strides,
        padding=padding,
        base_dilation=base_dilation,
        window_dilation=window_dilation,
    )
    if _is_identity(init_value, kind, aval.dtype):
        return out
    # XLA folds the init value in once per window (padding holds the identity).
    return computation(out, init_value)
