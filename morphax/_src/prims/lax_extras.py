"""The remaining `jax.lax` names: primitives `reduce_precision`, `mulhi`, `optimization_barrier` and
`split`, and the functions JAX composes from other operations (stack, tile, approx_max_k via
top_k...). The random-bit primitives are in `lax_rng`; the generic `reduce` lives in control_flow.
Imports the core and the primitive families only.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core.avals import get_aval
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.values import make_array
from morphax._src.prims._ad import Zero, _lax, defjvp_zero, deflinear, instantiate, is_zero
from morphax._src.prims._helpers import binary_elementwise, elementwise_unop
from morphax._src.prims._shape_util import as_lax_array, canonical_axis, canonical_shape, fresh
from morphax._src.prims._spec import Case, TestSpec, binary_cases, random_array, unary_cases

__all__ = [
    "approx_max_k",
    "approx_min_k",
    "batch_matmul",
    "broadcast_like",
    "broadcast_shapes",
    "collapse",
    "dtype",
    "empty",
    "index_take",
    "mulhi",
    "mulhi_p",
    "optimization_barrier",
    "optimization_barrier_p",
    "reduce_precision",
    "reduce_precision_p",
    "scatter_sub",
    "shape_as_value",
    "split",
    "split_p",
    "stack",
    "tile",
    "unstack",
]

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

# ------------------------------------------------------------------------------------------------
# reduce_precision: XLA's ReducePrecision, computed on the bit pattern. The mantissa rounds to
# nearest even (adding half an ulp of the target, minus one unless the kept last bit is set, then
# truncating); exponents beyond the target range become signed infinity, those at or below its
# smallest normal exponent signed zero; NaN inputs stay NaN.


def _reduce_precision_bits(x, exponent_bits, mantissa_bits):
    dt = x.dtype
    nbits = dt.itemsize * 8
    m_src = int(_dtypes.finfo(dt).nmant)
    e_src = nbits - 1 - m_src
    ut = _UINT[dt.itemsize]
    one = ut(1)
    bits = np.array(x, copy=True, order="C").view(ut)
    if mantissa_bits < m_src:
        shift = ut(m_src - mantissa_bits)
        last = one << shift
        kept_last = (bits & last) >> shift
        bits = (bits + kept_last + ((last >> one) - one)) & ~(last - one)
    if exponent_bits < e_src:
        sign = one << ut(nbits - 1)
        exp_mask = ut(((1 << e_src) - 1) << m_src)
        bias, reduced_bias = (1 << (e_src - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        exponent = bits & exp_mask
        signed_zero = bits & sign
        over = exponent > ut((bias + reduced_bias) << m_src)
        under = exponent <= ut((bias - reduced_bias) << m_src)
        bits = np.where(over, signed_zero | exp_mask, np.where(under, signed_zero, bits))
    return np.asarray(bits, ut).view(dt)


def _reduce_precision_impl(x, *, exponent_bits, mantissa_bits):
    x = np.asarray(x)
    dt = x.dtype
    with np.errstate(over="ignore"):
        if dt in (_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.bfloat16):
            out = _reduce_precision_bits(x, exponent_bits, mantissa_bits)
        else:  # float8 and friends: their encodings differ (no inf, unsigned zero); go via float32
            wide = x.astype(np.float32)
            out = _reduce_precision_bits(wide, exponent_bits, mantissa_bits).astype(dt)
        nan = np.isnan(x.astype(np.float32) if dt.itemsize < 4 else x)
        if dt == _dtypes.bfloat16 and (exponent_bits < 8 or mantissa_bits < 23):
            # XLA CPU rounds bfloat16 in float32 and converts back, which quiets every NaN to the
            # canonical pattern (sign kept); JAX's results show exactly that. A rounding that is a
            # no-op in float32 is simplified away, so the NaN payload survives then.
            canon = (x.view(np.uint16) & np.uint16(0x8000)) | np.uint16(0x7FC0)
            return np.where(nan, canon.view(dt), out)
        return np.where(nan, x, out)


def _check_precision_bits(x, *, exponent_bits, mantissa_bits):
    if not isinstance(exponent_bits, (int, np.integer)) or exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
    if not isinstance(mantissa_bits, (int, np.integer)) or mantissa_bits < 0:
        raise ValueError(f"reduce_precision: mantissa_bits must be non-negative; got {mantissa_bits}")


_PRECISION_SPECIALS = (
    0.0,
    -0.0,
    1.0,
    -1.0,
    np.inf,
    -np.inf,
    np.nan,
    1e-6,
    -3e-5,
    65504.0,
    65520.0,
    1.00390625,
    1.01171875,
    1.5,
    2.5e-38,
    1e-40,
    3.4e38,
    0.1,
    1e4,
    -7.3e-3,
)

reduce_precision_p = elementwise_unop(
    "reduce_precision",
    _reduce_precision_impl,
    "float",
    check=_check_precision_bits,
    spec=TestSpec(
        # (11, 52) comes first: it is the identity for every dtype here, so the derivative matrix
        # (which runs in float64) sees a function whose finite differences are meaningful.
        cases=unary_cases(
            "float",
            specials=_PRECISION_SPECIALS,
            params=[
                {"exponent_bits": e, "mantissa_bits": m}
                for e, m in ((11, 52), (8, 23), (5, 10), (8, 7), (4, 3), (2, 1), (1, 0), (3, 0))
            ],
        )
    ),
)
deflinear(
    reduce_precision_p,
    lambda ct, x, **params: [Zero(x.aval) if is_zero(ct) else reduce_precision_p.bind(ct, **params)],
)


def reduce_precision(operand, exponent_bits, mantissa_bits):
    """Round `operand` to a float format with `exponent_bits` and `mantissa_bits` (XLA's
    ReducePrecision), keeping the dtype: round to nearest even, overflow to inf, NaN kept."""
    try:
        exponent_bits, mantissa_bits = operator.index(exponent_bits), operator.index(mantissa_bits)
    except TypeError:
        raise TypeError(
            "reduce_precision: exponent_bits and mantissa_bits must be concrete Python ints, got "
            f"{exponent_bits!r} and {mantissa_bits!r}."
        ) from None
    return reduce_precision_p.bind(
        as_lax_array(operand), exponent_bits=exponent_bits, mantissa_bits=mantissa_bits
    )


# ------------------------------------------------------------------------------------------------
# mulhi: the high half of the double-width integer product.

_LO32 = np.uint64(0xFFFFFFFF)


def _mulhi_u64(a, b):
    # Schoolbook product on 32-bit halves: no partial product or carry sum exceeds 64 bits.
    s32 = np.uint64(32)
    a_lo, a_hi, b_lo, b_hi = a & _LO32, a >> s32, b & _LO32, b >> s32
    lo_hi, hi_lo = a_lo * b_hi, a_hi * b_lo
    cross = ((a_lo * b_lo) >> s32) + (lo_hi & _LO32) + (hi_lo & _LO32)
    return a_hi * b_hi + (lo_hi >> s32) + (hi_lo >> s32) + (cross >> s32)


def _mulhi_impl(x, y):
    x, y = np.asarray(x), np.asarray(y)
    dt = x.dtype
    bits = dt.itemsize * 8
    signed = not _dtypes.is_unsigned(dt)
    with np.errstate(over="ignore"):
        if bits < 64:
            wide = np.int64 if signed else np.uint64
            return np.asarray((x.astype(wide) * y.astype(wide)) >> wide(bits)).astype(dt)
        xu, yu = np.broadcast_arrays(x.view(np.uint64), y.view(np.uint64))
        hi = _mulhi_u64(xu, yu)
        if signed:
            # Two's complement: hi(x*y) = hi_unsigned - (x<0 ? y : 0) - (y<0 ? x : 0), mod 2^64.
            zero = np.uint64(0)
            hi = hi - np.where(x < 0, yu, zero) - np.where(y < 0, xu, zero)
        return np.asarray(hi).view(dt)


mulhi_p = binary_elementwise(
    "mulhi", _mulhi_impl, dtypes="integer", spec=TestSpec(cases=binary_cases("integer"), differentiable=False)
)
defjvp_zero(mulhi_p)


def mulhi(x, y, /):
    """Elementwise multiply-high: the upper N bits of the 2N-bit product of N-bit integers."""
    from morphax._src.prims._operands import lax_binary_operands

    return mulhi_p.bind(*lax_binary_operands("mulhi", x, y))


# ------------------------------------------------------------------------------------------------
# optimization_barrier: the identity on any number of operands. Compilers may not move work across
# it; here it only has to survive every transformation as itself.

optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)
# The identity, run as one node so nothing fuses across it. Not an EFFECT: like JAX's it has no
# side effects, so an unused barrier may be dropped.
optimization_barrier_p.kind = Kind.OPAQUE
optimization_barrier_p.abstract_eval = lambda *avals: list(avals)
optimization_barrier_p.impl = lambda *xs: [fresh(x) for x in xs]
optimization_barrier_p.batch = lambda vals, dims, *, axis_data: (
    optimization_barrier_p.bind(*vals),
    list(dims),
)


def _barrier_jvp(primals, tangents):
    # Two barriers: the primal one must stay known when linearizing, the tangent one is linear.
    out = optimization_barrier_p.bind(*primals)
    live = [t for t in tangents if not is_zero(t)]
    it = iter(optimization_barrier_p.bind(*live) if live else [])
    return out, [t if is_zero(t) else next(it) for t in tangents]


def _barrier_transpose(cts, *args):
    live = [instantiate(ct) for ct, a in zip(cts, args) if not is_zero(ct)]
    it = iter(optimization_barrier_p.bind(*live) if live else [])
    return [ct if is_zero(ct) else next(it) for ct in cts]


optimization_barrier_p.jvp = _barrier_jvp
optimization_barrier_p.transpose = _barrier_transpose


def _barrier_cases(rng):
    out = []
    for dts in (("float32",), ("int32",), ("bool",), ("float32", "int32"), ("float32", "bfloat16", "bool")):
        for shape in ((), (3,), (2, 3), (0, 2)):
            args = tuple(random_array(rng, shape, dt) for dt in dts)
            out.append(Case(args, {}, f"{'+'.join(dts)}{list(shape)}"))
    return out


optimization_barrier_p.test_spec = TestSpec(cases=_barrier_cases)


def optimization_barrier(operand, /):
    """The pytree `operand` unchanged, behind a barrier compilers may not move work across."""
    leaves, tree = pytree.tree_flatten(operand)
    if not leaves:
        return operand
    return pytree.tree_unflatten(tree, optimization_barrier_p.bind(*[as_lax_array(x) for x in leaves]))


# ------------------------------------------------------------------------------------------------
# split: consecutive pieces of `sizes` along `axis`.

split_p = Primitive("split", multiple_results=True)
# Data movement into several results (each a slice): no single-result index_map.
split_p.kind = Kind.LAYOUT


def _split_abstract_eval(x, *, sizes, axis):
    if not isinstance(axis, (int, np.integer)) or not 0 <= axis < x.ndim:
        raise ValueError(f"split: axis {axis} is out of bounds for an operand of type {x.str_short()}")
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
    if x.shape[axis] != sum(sizes):
        raise ValueError(
            f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the operand shape {list(x.shape)}"
        )
    return [x.update(shape=x.shape[:axis] + (s,) + x.shape[axis + 1 :]) for s in sizes]


def _split_impl(x, *, sizes, axis):
    return [fresh(p) for p in np.split(x, np.cumsum(sizes)[:-1].astype(int), axis=axis)]


def _split_transpose(cts, x, *, sizes, axis):
    if all(is_zero(ct) for ct in cts):
        return [Zero(x.aval)]
    return [_lax().concatenate([instantiate(ct) for ct in cts], axis)]


def _split_cases(rng):
    out = []
    configs = (
        ((5,), (2, 3), 0),
        ((2, 4), (1, 3), 1),
        ((4, 3), (0, 4, 0), 0),
        ((2, 6, 1), (2, 2, 2), 1),
        ((3,), (3,), 0),
        ((0, 2), (0,), 0),
        ((2, 5), (5,), 1),
    )
    for dt in ("float32", "int32", "bool", "complex64", "bfloat16"):
        for shape, sizes, axis in configs:
            x = random_array(rng, shape, dt)
            out.append(Case((x,), {"sizes": sizes, "axis": axis}, f"{dt}{list(shape)}{sizes}@{axis}"))
    return out


split_p.abstract_eval = _split_abstract_eval
split_p.impl = _split_impl
split_p.test_spec = TestSpec(cases=_split_cases)
split_p.batch = lambda vals, dims, *, axis_data, sizes, axis: (
    split_p.bind(vals[0], sizes=sizes, axis=axis + (axis >= dims[0])),
    [dims[0]] * len(sizes),
)
deflinear(split_p, _split_transpose)


def split(operand, sizes, axis=0):
    """Split `operand` along `axis` into consecutive pieces of the given `sizes` (which sum to the
    axis length)."""
    operand = as_lax_array(operand)
    axis = canonical_axis(axis, len(get_aval(operand).shape), "split")
    sizes = tuple(operator.index(s) for s in sizes)
    return split_p.bind(operand, sizes=sizes, axis=axis)


# ------------------------------------------------------------------------------------------------
# Compositions (JAX builds these from other operations, or they need no primitive here).


def _approx_output_size(n, rank, k, recall_target, aggregate_to_topk, override):
    """XLA's ApproxTopKReductionOutputSize: how many candidates the approximate search keeps."""
    if aggregate_to_topk:
        return k
    tiling = 1024 if rank == 1 else 128
    if n <= tiling:
        return n
    if override >= 0 and n > override:
        raise ValueError(
            f"reduction_input_size_override: {override} should be greater equals to operands[reduction_dim]: {n}"
        )
    logical = override if override >= 0 else n
    if k == 1:
        return tiling
    if recall_target == 1.0:
        return n
    if not 0.0 < recall_target <= 1.0:
        raise ValueError("recall_target should range in (0,1]")
    m = min(max(int((1.0 - k) / math.log(recall_target)), tiling), n)
    ratio = logical // m
    log2_reduction = ratio.bit_length() - 1 if ratio else 0  # floor(log2), 0 for 0
    if log2_reduction == 0:
        return n
    whole = n // tiling
    log2_reduction = min(log2_reduction, (whole - 1).bit_length() if whole else 0)  # ceil(log2)
    chunks = -(-n // tiling)
    return -(-chunks // (1 << log2_reduction)) * tiling


def _approx_top_k(name, operand, k, reduction_dimension, recall_target, override, aggregate_to_topk, is_max):
    operand = as_lax_array(operand)
    aval = get_aval(operand)
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    if not aval.shape:
        raise TypeError(f"approx_top_k operand must have >= 1 dimension, got {aval.shape}")
    axis = canonical_axis(reduction_dimension, aval.ndim, name)
    if aval.shape[axis] < k:
        raise ValueError(f"k must be smaller than the size of reduction_dim {aval.shape[axis]}, got {k}")
    if not _dtypes.is_floating(aval.dtype):
        raise ValueError("operand must be a floating type")
    size = _approx_output_size(aval.shape[axis], aval.ndim, k, recall_target, aggregate_to_topk, override)
    # XLA's CPU fallback sorts exactly and keeps `size` entries; top_k does that. The smallest
    # entries are the largest of the negation (exact), which also puts NaN last, as sort does.
    L = _lax()
    if is_max:
        return L.top_k(operand, size, axis=axis)
    values, indices = L.top_k(L.neg(operand), size, axis=axis)
    return L.neg(values), indices


def approx_max_k(
    operand,
    k,
    reduction_dimension=-1,
    recall_target=0.95,
    reduction_input_size_override=-1,
    aggregate_to_topk=True,
):
    """The `k` largest values along `reduction_dimension` (descending) and their int32 indices. On
    CPU the search is exact; with ``aggregate_to_topk=False`` XLA's candidate count is returned."""
    return _approx_top_k(
        "approx_max_k",
        operand,
        k,
        reduction_dimension,
        recall_target,
        reduction_input_size_override,
        aggregate_to_topk,
        True,
    )


def approx_min_k(
    operand,
    k,
    reduction_dimension=-1,
    recall_target=0.95,
    reduction_input_size_override=-1,
    aggregate_to_topk=True,
):
    """The `k` smallest values along `reduction_dimension` (ascending) and their int32 indices."""
    return _approx_top_k(
        "approx_min_k",
        operand,
        k,
        reduction_dimension,
        recall_target,
        reduction_input_size_override,
        aggregate_to_topk,
        False,
    )


def scatter_sub(
    operand,
    scatter_indices,
    updates,
    dimension_numbers,
    *,
    indices_are_sorted=False,
    unique_indices=False,
    mode=None,
):
    """Subtract `updates` from `operand` at the selected windows; duplicates accumulate. Computed as
    scatter-add of the negated updates: IEEE subtraction is addition of the negation, and integers
    wrap the same way, so values and derivatives equal a dedicated scatter-sub."""
    L = _lax()
    operand = as_lax_array(operand)
    dt = get_aval(operand).dtype
    if _dtypes.is_bool(dt):
        raise TypeError("scatter_sub does not accept dtype bool: subtraction needs a number type.")
    updates = (
        make_array(updates, dt, weak_type=True)
        if _dtypes.is_python_scalar(updates)
        else as_lax_array(updates)
    )
    if get_aval(updates).dtype != dt:
        raise TypeError(
            f"scatter_sub: operand and updates must have the same dtype, got {dt.name} and "
            f"{get_aval(updates).dtype.name}. Cast the updates with lax.convert_element_type."
        )
    return L.scatter_add(
        operand,
        scatter_indices,
        L.neg(updates),
        dimension_numbers,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )


def index_take(src, idxs, axes):
    """``src`` indexed by the 1-d integer arrays `idxs` along `axes` (one per axis, taken together;
    negative indices wrap), the remaining axes kept: JAX's gather-based helper."""
    L = _lax()
    src = as_lax_array(src)
    shape = get_aval(src).shape
    axes = tuple(operator.index(a) for a in axes)
    idxs = [as_lax_array(i) for i in idxs]
    indices = L.concatenate([L.expand_dims(i, (1,)) for i in idxs], 1)
    dt = get_aval(indices).dtype
    bound = make_array(np.array([shape[a] for a in axes]).astype(dt), dt)
    bound = L.broadcast_in_dim(bound, get_aval(indices).shape, (1,))
    indices = L.rem(L.add(L.rem(indices, bound), bound), bound)  # a floor modulus
    slice_sizes = tuple(1 if i in axes else d for i, d in enumerate(shape))
    dnums = L.GatherDimensionNumbers(
        offset_dims=tuple(range(1, len(shape) - len(axes) + 1)),
        collapsed_slice_dims=axes,
        start_index_map=axes,
    )
    return L.gather(src, indices, dnums, slice_sizes)


def collapse(operand, start_dimension, stop_dimension=None):
    """Merge axes ``[start_dimension, stop_dimension)`` into one (row-major)."""
    operand = as_lax_array(operand)
    shape = get_aval(operand).shape
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    if hi < lo:
        raise ValueError(
            f"Invalid dimension range passed to collapse: {shape}[{start_dimension}:{stop_dimension}]"
        )
    return _lax().reshape(operand, shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])


def stack(operands, axis=0):
    """Join equally shaped arrays along a new axis."""
    arrays = [as_lax_array(x) for x in operands]
    if not arrays:
        raise ValueError("lax.stack requires at least one operand.")
    avals = [get_aval(a) for a in arrays]
    if len({a.shape for a in avals}) > 1:
        raise ValueError(
            f"All input arrays must have the same shape. Got {', '.join(str(a.shape) for a in avals)}."
        )
    if len({a.dtype for a in avals}) > 1:
        raise TypeError(
            f"lax.stack requires arguments to have the same dtypes, got {', '.join(a.dtype.name for a in avals)}."
        )
    axis = canonical_axis(axis, avals[0].ndim + 1, "stack")
    L = _lax()
    return L.concatenate([L.expand_dims(a, (axis,)) for a in arrays], axis)


def unstack(x, axis=0):
    """The slices of `x` along `axis`, as a tuple of arrays with that axis removed."""
    x = as_lax_array(x)
    shape = get_aval(x).shape
    if not shape:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
    axis = canonical_axis(axis, len(shape), "unstack")
    if shape[axis] == 0:
        return ()
    L = _lax()
    return tuple(L.squeeze(p, (axis,)) for p in split(x, (1,) * shape[axis], axis))


def tile(operand, reps):
    """Repeat `operand` ``reps[i]`` times along each axis i."""
    operand = as_lax_array(operand)
    shape = get_aval(operand).shape
    reps = tuple(operator.index(r) for r in reps)
    if len(reps) != len(shape):
        raise TypeError(
            f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} and x.ndim={len(shape)}."
        )
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: reps must be non-negative, got {reps}.")
    if not shape:
        return operand
    L = _lax()
    spread = tuple(v for r, d in zip(reps, shape) for v in (r, d))
    y = L.broadcast_in_dim(operand, spread, tuple(range(1, 2 * len(shape), 2)))
    return L.reshape(y, tuple(r * d for r, d in zip(reps, shape)))


def empty(shape, dtype, *, out_sharding=None):
    """An array of `shape` whose values are unspecified (zeros here, as XLA CPU gives)."""
    return _lax().full(canonical_shape(shape, "empty"), 0, dtype, sharding=out_sharding)


def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over matching leading (batch) axes: (..., m, k) @ (..., k, n)."""
    ln, rn = len(get_aval(lhs).shape), len(get_aval(rhs).shape)
    if min(ln, rn) < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {ln}, {rn}")
    if ln != rn:
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {ln}, {rn}")
    batch = tuple(range(ln - 2))
    return _lax().dot_general(lhs, rhs, (((ln - 1,), (rn - 2,)), (batch, batch)), precision=precision)


def broadcast_shapes(*shapes):
    """The shape NumPy broadcasting gives `shapes` (ValueError when they are incompatible)."""
    shapes = [tuple(operator.index(d) for d in s) for s in shapes]
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for dims in zip(*[(1,) * (rank - len(s)) + s for s in shapes]):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_like(arr, like_arr):
    """`arr` broadcast (NumPy rules) to the shape of `like_arr`."""
    arr = as_lax_array(arr)
    aval, target = get_aval(arr), get_aval(like_arr).shape
    lead = len(target) - aval.ndim
    if lead < 0 or any(d not in (1, t) for d, t in zip(aval.shape, target[lead:])):
        raise ValueError(
            f"Incompatible types for broadcasting: input type={aval.str_short()} and requested type="
            f"{aval.update(shape=target).str_short()}"
        )
    if aval.shape == target:
        return arr
    return _lax().broadcast_in_dim(arr, target, tuple(range(lead, len(target))))


def dtype(x):
    """The (canonical) dtype of an array, scalar, or dtype-like `x`."""
    return _dtypes.dtype(x, canonicalize=True)


def shape_as_value(shape):
    """`shape` as an integer vector (int32 unless a size needs 64 bits)."""
    big = any(d > np.iinfo(np.int32).max for d in shape)
    dt = np.dtype(np.int64 if big else np.int32)
    if not shape:
        return _lax().full((0,), 0, dt)
    return np.asarray(shape, dtype=dt)
