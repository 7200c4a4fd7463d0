"""`conv_general_dilated`: XLA's N-d convolution with layouts (dimension numbers), strides, padding,
lhs/rhs dilation and feature/batch groups, plus the wrappers `conv` and `conv_with_general_padding`.
Dimension numbers and shapes are in conv_layouts.py, conv_transpose and the patches in
conv_composites.py.

The reference pads and dilates the input, takes strided windows and runs one batched matmul per
group (float16/bfloat16 accumulate in float32, integers wrap, bool is or-of-ands, as in `dot`).
"""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import Zero, aval_of, is_undefined_primal, is_zero
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims import _stablehlo_windows as hlo_windows
from morphax._src.prims._ad import defbilinear
from morphax._src.prims._spec import Case, TestSpec, random_array
from morphax._src.prims.conv_layouts import (
    ConvDimensionNumbers,
    _take,
    _untake,
    conv_dimension_numbers,
    conv_shape_tuple,
)
from morphax._src.prims.conversion import convert_element_type
from morphax._src.prims.dot import _float_accumulator, canonicalize_precision
from morphax._src.prims.shape import reshape, rev
from morphax._src.prims.windowed import (
    dilate_dim,
    pad_dilate_np,
    padtype_to_pads,
    transpose_padding,
    windows_np,
)

__all__ = [
    "ConvGeneralDilatedDimensionNumbers",
    "conv_general_dilated_p",
    "conv_general_dilated",
    "conv",
    "conv_with_general_padding",
]


ConvGeneralDilatedDimensionNumbers = tuple | ConvDimensionNumbers | None


conv_general_dilated_p = Primitive("conv_general_dilated")
conv_general_dilated_p.stablehlo = hlo_windows.conv_general_dilated


conv_general_dilated_p.kind = Kind.OPAQUE


_NAME = "conv_general_dilated"


def _check_ints(what, values, n, minimum):
    if len(values) != n:
        raise ValueError(f"{_NAME}: {what} must have one entry per spatial dimension ({n}), got {values}.")
    if any(v < minimum for v in values):
        raise ValueError(f"{_NAME}: {what} must be >= {minimum}, got {values}.")


def _preferred_dtype(dt, preferred):
    if preferred is None:
        return dt
    pref = np.dtype(preferred)
    if not (_dtypes.is_integer(dt) and _dtypes.is_floating(pref)):
        for test in (_dtypes.is_integer, _dtypes.is_floating, _dtypes.is_complex):
            if test(dt) and not test(pref):
                raise TypeError(
                    f"{_NAME}: input type {dt.name} is incompatible with preferred_element_type {pref.name}; "
                    "the compatible combinations are (integral, integral), (integral, floating), "
                    "(floating, floating) and (complex, complex)."
                )
        if _dtypes.is_integer(dt) and not _dtypes.is_unsigned(dt) and _dtypes.is_unsigned(pref):
            raise TypeError(f"{_NAME}: `preferred_element_type` must have the same signedness as {dt.name}.")
    if pref.itemsize < dt.itemsize:
        raise TypeError(
            f"{_NAME}: `preferred_element_type` must not be narrower than the original type, got {pref.name} for "
            f"{dt.name}."
        )
    return pref


def _shape_rule(lhs, rhs, p):
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise TypeError(
            f"{_NAME}: lhs and rhs must have the same rank (at least 2), got {lhs.str_short()} and {rhs.str_short()}."
        )
    dn = p["dimension_numbers"]
    for which, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), dn):
        if sorted(spec) != list(range(lhs.ndim)):
            raise TypeError(
                f"{_NAME}: dimension_numbers.{which} {spec} is not a permutation of range({lhs.ndim})."
            )
    nsp = lhs.ndim - 2
    _check_ints("window_strides", p["window_strides"], nsp, 1)
    _check_ints("lhs_dilation", p["lhs_dilation"], nsp, 1)
    _check_ints("rhs_dilation", p["rhs_dilation"], nsp, 1)
    if len(p["padding"]) != nsp:
        raise ValueError(
            f"{_NAME}: padding must hold one (low, high) pair per spatial dimension, got {p['padding']}."
        )
    fg, bg = p["feature_group_count"], p["batch_group_count"]
    if fg < 1 or bg < 1 or (fg > 1 and bg > 1):
        raise ValueError(
            f"{_NAME}: feature_group_count ({fg}) and batch_group_count ({bg}) must be positive and at most one "
            "of them greater than 1."
        )
    lt, rt = _take(lhs.shape, dn.lhs_spec), _take(rhs.shape, dn.rhs_spec)
    n, c, o, i = lt[0], lt[1], rt[0], rt[1]
    problems = []
    if c % fg or c // fg != i:
        problems.append(
            f"lhs feature dimension size ({c}) must equal feature_group_count ({fg}) times the rhs input "
            f"feature dimension size ({i})"
        )
    if o % fg:
        problems.append(
            f"rhs output feature dimension size ({o}) must be a multiple of feature_group_count ({fg})"
        )
    if n % bg:
        problems.append(f"lhs batch dimension size ({n}) must be a multiple of batch_group_count ({bg})")
    if o % bg:
        problems.append(
            f"rhs output feature dimension size ({o}) must be a multiple of batch_group_count ({bg})"
        )
    if problems:
        raise ValueError(f"{_NAME}: {'; '.join(problems)} (lhs {lhs.str_short()}, rhs {rhs.str_short()}).")
    dil = tuple(dilate_dim(d, a) for d, a in zip(lt[2:], p["lhs_dilation"]))
    ker = tuple(dilate_dim(k, r) for k, r in zip(rt[2:], p["rhs_dilation"]))
    out = conv_shape_tuple((n, c) + dil, (o, i) + ker, p["window_strides"], p["padding"], bg)
    return _untake(out, dn.out_spec)


def _conv_abstract_eval(lhs, rhs, **params):
    if lhs.dtype != rhs.dtype:
        raise TypeError(
            f"lax.{_NAME} requires arguments to have the same dtypes, got {lhs.dtype.name}, {rhs.dtype.name}."
        )
    shape = _shape_rule(lhs, rhs, params)
    dtype = _preferred_dtype(lhs.dtype, params["preferred_element_type"])
    return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


def _conv_impl(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
               feature_group_count, batch_group_count, precision, preferred_element_type):  # fmt: skip
    out_dt = _preferred_dtype(lhs.dtype, preferred_element_type)
    dn = dimension_numbers
    out_c = conv_shape_tuple(
        (lhs.shape[dn.lhs_spec[0]], 0)
        + tuple(dilate_dim(lhs.shape[a], d) for a, d in zip(dn.lhs_spec[2:], lhs_dilation)),
        (rhs.shape[dn.rhs_spec[0]], 0)
        + tuple(dilate_dim(rhs.shape[a], d) for a, d in zip(dn.rhs_spec[2:], rhs_dilation)),
        window_strides,
        padding,
        batch_group_count,
    )
    x = np.transpose(lhs, dn.lhs_spec)
    w = np.transpose(rhs, dn.rhs_spec)
    if _dtypes.is_bool(out_dt) or _dtypes.is_integer(out_dt):
        # Exact 64-bit accumulation, wrapped once at the end (the same ring map as XLA's steps).
        acc = np.dtype(np.int64)
        x, w = x.astype(out_dt).astype(acc), w.astype(out_dt).astype(acc)
    else:
        src = lhs.dtype if _dtypes.is_inexact(lhs.dtype) else out_dt
        acc = _float_accumulator(src, out_dt)
        x, w = x.astype(src).astype(acc), w.astype(src).astype(acc)
    if 0 in out_c or 0 in w.shape[1:]:
        res = np.zeros(out_c, acc)
    else:
        res = _grouped_matmul(
            x,
            w,
            out_c,
            window_strides,
            padding,
            lhs_dilation,
            rhs_dilation,
            feature_group_count,
            batch_group_count,
        )
    if _dtypes.is_bool(out_dt):
        res = res != 0
    elif _dtypes.is_complex(res.dtype) and not _dtypes.is_complex(out_dt):
        res = res.real
    res = np.transpose(res, np.argsort(dn.out_spec))
    return np.ascontiguousarray(res.astype(out_dt))


def _grouped_matmul(x, w, out_c, strides, padding, lhs_dilation, rhs_dilation, fg, bg):
    """x (N, C, *sp), w (O, I, *k) canonical: im2col, then one matmul per (batch or feature) group."""
    nsp = x.ndim - 2
    sp = tuple(range(2, 2 + nsp))
    xp = pad_dilate_np(x, 0, sp, padding, lhs_dilation)
    win = windows_np(xp, sp, w.shape[2:], strides, rhs_dilation)  # (N, C, *o, *k)
    n, c = x.shape[:2]
    o, i = w.shape[:2]
    groups = fg * bg  # one of them is 1
    nb, og = n // bg, o // groups
    out_sp, ksz = out_c[2:], int(np.prod(w.shape[2:], dtype=np.int64))
    psz = int(np.prod(out_sp, dtype=np.int64))
    # (bg, nb, fg, i, *o, *k) -> (groups, nb * P, K * i): each row lists the taps, and under each
    # tap the input features, in the order the native backend's im2col uses (so jit and eager
    # sum in the same order).
    win = win.reshape((bg, nb, fg, i) + out_sp + w.shape[2:])
    perm = (0, 2, 1) + tuple(range(4, 4 + nsp)) + tuple(range(4 + nsp, 4 + 2 * nsp)) + (3,)
    cols = np.ascontiguousarray(np.transpose(win, perm)).reshape(groups, nb * psz, ksz * i)
    kern = w.reshape((groups, og, i, ksz)).transpose(0, 3, 2, 1).reshape(groups, ksz * i, og)
    res = np.matmul(cols, kern)  # (groups, nb * P, og)
    res = res.reshape((groups, nb) + out_sp + (og,))
    res = np.transpose(res, (1, 0, 2 + nsp) + tuple(range(2, 2 + nsp)))
    return res.reshape((nb, o) + out_sp)


conv_general_dilated_p.impl = _conv_impl


conv_general_dilated_p.abstract_eval = _conv_abstract_eval


def _conv_cost(lhs, rhs, **p):
    """XLA's count: two flops per product of a kernel tap with an input element that exists (taps
    over padding or lhs-dilation holes do not count), per output batch and feature."""
    dn = p["dimension_numbers"]
    lt, rt = _take(lhs.shape, dn.lhs_spec), _take(rhs.shape, dn.rhs_spec)
    out = _take(_shape_rule(lhs, rhs, p), dn.out_spec)
    taps = 1
    for d in range(len(lt) - 2):
        size, k, lo = lt[2 + d], rt[2 + d], p["padding"][d][0]
        stride, ldil, rdil = p["window_strides"][d], p["lhs_dilation"][d], p["rhs_dilation"][d]
        extent = dilate_dim(size, ldil)
        taps *= sum(
            1
            for o in range(out[2 + d])
            for t in range(k)
            if 0 <= (x := o * stride - lo + t * rdil) < extent and x % ldil == 0
        )
    return {"flops": 2 * out[0] * out[1] * rt[1] * taps}


conv_general_dilated_p.cost_rule = _conv_cost


def _split(x, axis, n):
    """Split `axis` (size n*m) into (n, m) at positions axis, axis + 1."""
    shape = get_aval(x).shape
    return reshape(x, shape[:axis] + (n, shape[axis] // n) + shape[axis + 1 :])


def _merge(x, src, dst):
    """Fold axis `src` into axis `dst` as its major part; returns the array and the merged axis."""
    shape = get_aval(x).shape
    d = dst - (src < dst)
    x = moveaxis(x, src, d)
    new = list(shape[:src] + shape[src + 1 :])
    new[d] = shape[src] * shape[dst]
    return reshape(x, tuple(new)), d


def _swap(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _matching(x, dtype):
    return x if get_aval(x).dtype == dtype else convert_element_type(x, dtype)


def _conv_transpose_rule(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                         dimension_numbers, feature_group_count, batch_group_count, precision,
                         preferred_element_type):  # fmt: skip
    undef_l, undef_r = is_undefined_primal(lhs), is_undefined_primal(rhs)
    if undef_l and undef_r:
        raise ValueError(f"{_NAME}: cannot transpose with respect to both operands (it is bilinear)")
    if is_zero(ct):
        return [Zero(lhs.aval) if undef_l else None, Zero(rhs.aval) if undef_r else None]
    lspec, rspec, ospec = dimension_numbers
    l_aval, r_aval, ct_aval = aval_of(lhs), aval_of(rhs), get_aval(ct)
    l_sp, r_sp, o_sp = (
        _take(l_aval.shape, lspec[2:]),
        _take(r_aval.shape, rspec[2:]),
        _take(ct_aval.shape, ospec[2:]),
    )
    common = dict(precision=precision, preferred_element_type=None)
    if undef_l:
        # Cotangent convolved with the flipped kernel; the kernel's in/out features swap roles, and
        # with groups each group's out features become in features of the matching group.
        w = _matching(rhs, ct_aval.dtype)
        groups = max(feature_group_count, batch_group_count)
        if groups > 1:
            w = _split(w, rspec[0], groups)
            w, _ = _merge(w, rspec[0], rspec[1] + (rspec[1] > rspec[0]))
        w = rev(w, tuple(rspec[2:]))
        pads = transpose_padding(l_sp, r_sp, window_strides, o_sp, padding, lhs_dilation, rhs_dilation)
        res = conv_general_dilated_p.bind(
            ct,
            w,
            window_strides=tuple(lhs_dilation),
            padding=tuple(pads),
            lhs_dilation=tuple(window_strides),
            rhs_dilation=tuple(rhs_dilation),
            dimension_numbers=ConvDimensionNumbers(ospec, _swap(rspec), lspec),
            feature_group_count=groups,
            batch_group_count=1,
            **common,
        )
        if batch_group_count > 1:
            # The groups came out as the major part of the features; they belong to the batch.
            res = _split(res, lspec[1], batch_group_count)
            res, _ = _merge(res, lspec[1], lspec[0] + (lspec[0] > lspec[1]))
        return [_matching(res, l_aval.dtype), None]
    if ct_aval.size == 0:
        return [None, Zero(rhs.aval)]
    # rhs: the input's batch is contracted against the cotangent's; feature groups become batch
    # groups and vice versa.
    x = _matching(lhs, ct_aval.dtype)
    lo = [p[0] for p in padding]
    hi = [
        dilate_dim(o, s) - dilate_dim(n, a) + dilate_dim(k, r) - 1 - p_lo
        for o, s, n, a, k, r, p_lo in zip(o_sp, window_strides, l_sp, lhs_dilation, r_sp, rhs_dilation, lo)
    ]
    res = conv_general_dilated_p.bind(
        x,
        ct,
        window_strides=tuple(rhs_dilation),
        padding=tuple(zip(lo, hi)),
        lhs_dilation=tuple(lhs_dilation),
        rhs_dilation=tuple(window_strides),
        dimension_numbers=ConvDimensionNumbers(_swap(lspec), _swap(ospec), _swap(rspec)),
        feature_group_count=batch_group_count,
        batch_group_count=feature_group_count,
        **common,
    )
    return [None, _matching(res, r_aval.dtype)]


defbilinear(conv_general_dilated_p, _conv_transpose_rule)


def _conv_batch(
    vals, dims, *, axis_data, dimension_numbers, feature_group_count, batch_group_count, **params
):
    # Fold the vmapped axis into the convolution: both batched -> one more feature group (or batch
    # group) per example; lhs only -> more batch; rhs only -> more output features. Within existing
    # groups the vmapped axis goes inside each group so the grouping stays major.
    lhs, rhs = vals
    dl, dr = dims
    lspec, rspec, ospec = dimension_numbers
    v = axis_data.size

    def at(spec_axis, d):
        return spec_axis + (spec_axis >= d)

    fg, bg = feature_group_count, batch_group_count
    if dl is not None and dr is not None:
        if bg > 1:
            lhs, _ = _merge(lhs, dl, at(lspec[0], dl))
            bg *= v
        else:
            lhs, _ = _merge(lhs, dl, at(lspec[1], dl))
            fg *= v
        rhs, _ = _merge(rhs, dr, at(rspec[0], dr))
        out = _bind(lhs, rhs, dimension_numbers, fg, bg, params)
        return _split(out, ospec[1], v), ospec[1]
    if dl is not None:
        n = at(lspec[0], dl)
        if bg > 1:
            lhs = _split(lhs, n, bg)  # (bg, nb) at n, n + 1
            d = dl + (dl > n)
            lhs, m = _merge(lhs, d, n + 1)
            lhs, _ = _merge(lhs, m - 1, m)
        else:
            lhs, _ = _merge(lhs, dl, n)
        out = _bind(lhs, rhs, dimension_numbers, fg, bg, params)
        return _split(out, ospec[0], v), ospec[0]
    o = at(rspec[0], dr)
    groups = fg * bg
    if groups == 1:
        rhs, _ = _merge(rhs, dr, o)
        out = _bind(lhs, rhs, dimension_numbers, fg, bg, params)
        return _split(out, ospec[1], v), ospec[1]
    rhs = _split(rhs, o, groups)  # (groups, og) at o, o + 1
    d = dr + (dr > o)
    rhs, m = _merge(rhs, d, o + 1)
    rhs, _ = _merge(rhs, m - 1, m)
    out = _bind(lhs, rhs, dimension_numbers, fg, bg, params)
    f = ospec[1]
    out = _split(_split(out, f, groups), f + 1, v)  # (groups, v, og) at f, f + 1, f + 2
    out, _ = _merge(out, f, f + 2)
    return out, f


def _bind(lhs, rhs, dn, fg, bg, params):
    return conv_general_dilated_p.bind(
        lhs, rhs, dimension_numbers=dn, feature_group_count=fg, batch_group_count=bg, **params
    )


conv_general_dilated_p.batch = _conv_batch


def _spec_case(
    rng, dt, name, ls, rs, strides, padding, lhs_dil=None, rhs_dil=None, dn=None, fg=1, bg=1, pref=None
):
    dnums = conv_dimension_numbers(ls, rs, dn)
    nsp = len(ls) - 2
    params = dict(
        window_strides=tuple(strides),
        padding=tuple(tuple(p) for p in padding),
        lhs_dilation=tuple(lhs_dil or (1,) * nsp),
        rhs_dilation=tuple(rhs_dil or (1,) * nsp),
        dimension_numbers=dnums,
        feature_group_count=fg,
        batch_group_count=bg,
        precision=None,
        preferred_element_type=None if pref is None else np.dtype(pref),
    )
    args = (random_array(rng, ls, dt), random_array(rng, rs, dt))
    return Case(args, params, f"{dt}-{name}")


_NCHW = ("NCHW", "OIHW", "NCHW")


_NHWC = ("NHWC", "HWIO", "NHWC")


# name, lhs shape, rhs shape, strides, padding, other parameters; the first two run for every dtype,
# the next two also for complex64, the rest for float32 only.
_CONV_CONFIGS = (
    ("nchw-stride-pad", (2, 3, 5, 6), (4, 3, 3, 2), (2, 1), ((1, 1), (0, 1)), dict(dn=_NCHW)),
    (
        "nhwc-depthwise-dilated",
        (2, 5, 6, 4),
        (3, 3, 1, 8),
        (1, 1),
        ((1, 1), (2, 2)),
        dict(rhs_dil=(2, 1), dn=_NHWC, fg=4),
    ),
    ("1d-lhs-dilation-negative-pad", (2, 2, 5), (3, 2, 3), (2,), ((-1, 2),), dict(lhs_dil=(2,))),
    ("batch-groups", (4, 2, 5), (6, 2, 2), (1,), ((1, 0),), dict(bg=2)),
    (
        "groups-odd-layout",
        (6, 3, 6),
        (3, 3, 4),
        (2,),
        ((0, 1),),
        dict(dn=("WNC", "IWO", "CNW"), fg=2, rhs_dil=(2,)),
    ),
    ("3d", (1, 2, 3, 4, 3), (2, 2, 2, 2, 2), (1, 2, 1), ((0, 0), (1, 0), (0, 1)), {}),
    ("no-spatial", (3, 4), (5, 4), (), (), {}),
    ("zero-batch", (0, 2, 4), (3, 2, 2), (1,), ((0, 0),), {}),
    ("window-too-big", (1, 1, 2), (1, 1, 3), (1,), ((0, 0),), {}),
)


def _conv_cases(rng):
    # float32 first: the derivative matrix takes the first few float cases, so they vary the most.
    out = []
    for dt in ("float32", "float16", "bfloat16", "int32", "int8", "uint8", "complex64", "bool"):
        n = {"float32": len(_CONV_CONFIGS), "complex64": 4}.get(dt, 2)
        for name, ls, rs, strides, pads, kw in _CONV_CONFIGS[:n]:
            out.append(_spec_case(rng, dt, name, ls, rs, strides, pads, **kw))
    for src, pref in (("int8", "int32"), ("bfloat16", "float32"), ("int8", "float32")):
        name = f"preferred-{pref}"
        out.append(
            _spec_case(rng, src, name, (1, 2, 4, 4), (3, 2, 2, 2), (1, 1), ((1, 0), (0, 1)), pref=pref)
        )
    return out


conv_general_dilated_p.test_spec = TestSpec(cases=_conv_cases, tol={"float16": 1e-2, "bfloat16": 1e-2})


def _operand(x):
    from morphax._src.prims._shape_util import as_lax_array

    return as_lax_array(x)


def _check_positive_ints(arg, value):
    try:
        vals = tuple(operator.index(v) for v in value)
    except TypeError:
        raise TypeError(
            f"conv_general_dilated: {arg} must be a sequence of integers (one per spatial dimension), "
            f"got {value!r}."
        ) from None
    if any(v < 1 for v in vals):
        raise ValueError(
            f"conv_general_dilated: {arg} must be >= 1 in every spatial dimension, got {vals}. "
            f"Use 1 for no {'stride' if arg == 'window_strides' else 'dilation'} in a dimension."
        )


def conv_general_dilated(
    lhs,
    rhs,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    feature_group_count=1,
    batch_group_count=1,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
):
    """General N-d convolution (XLA's Conv) with layouts, strides, padding ('SAME', 'SAME_LOWER',
    'VALID' or (low, high) pairs), lhs (transposed-conv) and rhs (atrous) dilation, and groups."""
    if out_sharding is not None:
        # NB: JAX places the result by `out_sharding` (explicit-sharding meshes); morphax's
        # convolution has no sharding rule yet, so only the default (None) is accepted.
        raise NotImplementedError(
            f"conv_general_dilated: out_sharding={out_sharding!r} is not supported; leave it None and "
            "place the result with morphax.sharding.reshard if needed."
        )
    lhs, rhs = _operand(lhs), _operand(rhs)
    ls, rs = get_aval(lhs).shape, get_aval(rhs).shape
    dn = conv_dimension_numbers(ls, rs, dimension_numbers)
    nsp = len(ls) - 2
    if lhs_dilation is None:
        lhs_dilation = (1,) * nsp
    elif isinstance(padding, str) and any(d != 1 for d in lhs_dilation):
        raise ValueError(
            "String padding is not implemented for transposed convolution using this op. Please either exactly "
            "specify the required padding or use conv_transpose."
        )
    if rhs_dilation is None:
        rhs_dilation = (1,) * nsp
    # Checked here, before 'SAME' padding divides by the strides (a bare ZeroDivisionError else).
    for arg, value in (
        ("window_strides", window_strides),
        ("lhs_dilation", lhs_dilation),
        ("rhs_dilation", rhs_dilation),
    ):
        _check_positive_ints(arg, value)
    if isinstance(padding, str):
        kernel = [dilate_dim(k, r) for k, r in zip(_take(rs, dn.rhs_spec)[2:], rhs_dilation)]
        padding = padtype_to_pads(_take(ls, dn.lhs_spec)[2:], kernel, window_strides, padding)
    else:
        try:
            padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
        except (TypeError, ValueError):
            raise ValueError(
                f"padding argument to conv_general_dilated should be a string or a sequence of (low, high) pairs, "
                f"got {padding}"
            ) from None
    pref = None if preferred_element_type is None else _dtypes.canonicalize_dtype(preferred_element_type)
    return conv_general_dilated_p.bind(
        lhs,
        rhs,
        window_strides=tuple(int(s) for s in window_strides),
        padding=tuple(padding),
        lhs_dilation=tuple(int(d) for d in lhs_dilation),
        rhs_dilation=tuple(int(d) for d in rhs_dilation),
        dimension_numbers=dn,
        feature_group_count=operator.index(feature_group_count),
        batch_group_count=operator.index(batch_group_count),
        precision=canonicalize_precision(precision),
        preferred_element_type=pref,
    )


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """NCHW/OIHW convolution with 'SAME'/'VALID' (or explicit) padding."""
    return conv_general_dilated(
        lhs, rhs, window_strides, padding, precision=precision, preferred_element_type=preferred_element_type
    )


def conv_with_general_padding(
    lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=None, preferred_element_type=None
):
    """NCHW/OIHW convolution with explicit padding and lhs/rhs dilation."""
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )
