"""Lax functions taking a Python scalar computation: the generic `reduce` (`reduce_p` carries the
traced computation and reduces in log2(n) pairwise rounds of adjacent elements, the init joining
once on the left: the left fold for associative computations) and `scatter_apply`. JAX's monoids
(lax.add/max/... with their identity) bind reduce_sum/reduce_max/... instead.
"""

from __future__ import annotations

import math

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import AxisData, bdim_to_front
from morphax._src.core.jaxpr import ClosedJaxpr, jaxpr_as_fun
from morphax._src.core.memo import memoized
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.trace import Tracer
from morphax._src.higher_order.host_eval import run_closed_jaxpr
from morphax._src.higher_order.while_loop import while_loop
from morphax._src.prims import _stablehlo_windows as hlo_windows
from morphax._src.prims import lax_api as lax
from morphax._src.prims._shape_util import as_lax_array
from morphax._src.prims._spec import Case, TestSpec, random_array
from morphax._src.prims.conversion import _convert_element_type
from morphax._src.transforms import ad
from morphax._src.transforms.batching import batch_flat_fun
from morphax._src.transforms.staging import trace_to_jaxpr

__all__ = ["reduce", "reduce_p", "scatter_apply"]


# ------------------------------------------------------------------------------------------------
# Tracing the user's computation on scalars.


def _trace_scalar_fun(name, fun, in_avals, in_tree):
    """Trace ``fun`` on scalar avals (flat, regrouped by `in_tree`); returns (closed, out_tree)."""
    box = {}

    def flat(*args):
        out = fun(*pytree.tree_unflatten(in_tree, list(args)))
        leaves, box["tree"] = pytree.tree_flatten(out)
        return [as_lax_array(x) for x in leaves]

    closed = trace_to_jaxpr(flat, list(in_avals))
    if any(isinstance(c, Tracer) for c in closed.consts):
        raise NotImplementedError(
            f"{name}: the computation closes over a traced value; pass it through the operands instead "
            "(JAX does not support this either)."
        )
    return closed, box["tree"]


def _vectorized(closed: ClosedJaxpr, *args):
    """The scalar jaxpr applied elementwise to equally shaped arrays (vmapped over the flat size)."""
    shape = get_aval(args[0]).shape
    size = math.prod(shape)
    flat = [lax.reshape(a, (size,)) for a in args]
    outs = batch_flat_fun(jaxpr_as_fun(closed), AxisData(size), [0] * len(flat))(*flat)
    return [lax.reshape(o, shape) for o in outs]


# ------------------------------------------------------------------------------------------------
# reduce_p


def _tree_reduce(closed, dimensions, *args):
    """The reduction written with primitives: (operands..., init_values...) -> results."""
    n = len(args) // 2
    xs, inits = list(args[:n]), list(args[n:])
    shape = get_aval(xs[0]).shape
    dims = tuple(sorted(dimensions))
    kept = tuple(i for i in range(len(shape)) if i not in dims)
    out_shape = tuple(shape[i] for i in kept)
    rows, cols = math.prod(shape[d] for d in dims), math.prod(out_shape)
    if rows == 0 or cols == 0:
        return [lax.broadcast_in_dim(i, out_shape, ()) for i in inits]
    # Reduced axes first (row-major order of the reduced elements), flattened: (rows, cols).
    xs = [lax.reshape(lax.transpose(x, dims + kept), (rows, cols)) for x in xs]
    while rows > 1:
        half = rows // 2
        even = [lax.slice(x, (0, 0), (2 * half, cols), (2, 1)) for x in xs]
        odd = [lax.slice(x, (1, 0), (2 * half, cols), (2, 1)) for x in xs]
        pairs = _vectorized(closed, *even, *odd)
        if rows % 2:  # the last element waits for a later round
            pairs = [lax.concatenate([p, lax.slice_in_dim(x, rows - 1, rows)], 0) for p, x in zip(pairs, xs)]
        xs, rows = pairs, half + rows % 2
    inits = [lax.broadcast_in_dim(i, (1, cols), ()) for i in inits]
    return [lax.reshape(r, out_shape) for r in _vectorized(closed, *inits, *xs)]


reduce_p = Primitive("reduce", multiple_results=True)
# Folds its jaxpr over the reduced axes: a loop with the jaxpr as body (not a REDUCE kernel op).
reduce_p.kind = Kind.LOOP
reduce_p.stablehlo = hlo_windows.reduce


def _reduce_abstract_eval(*avals, computation, jaxpr, dimensions):
    n = len(avals) // 2
    if not n or len(avals) % 2:
        raise TypeError(f"reduce takes operands and as many initial values, got {len(avals)} arguments")
    ops, inits = avals[:n], avals[n:]
    if any(a.shape for a in inits):
        raise ValueError(f"reduce found non-scalar initial value: {[a.shape for a in inits]}")
    if [a.dtype for a in ops] != [a.dtype for a in inits]:
        raise TypeError(
            "reduce operand dtypes should match corresponding initial value dtypes, got "
            f"operands={[a.str_short() for a in ops]} and initial_values={[a.str_short() for a in inits]}"
        )
    if len({a.shape for a in ops}) > 1:
        raise ValueError(f"reduce operands must all have the same shape, got {[a.shape for a in ops]}")
    shape = ops[0].shape
    if len(set(dimensions)) != len(dimensions) or not all(
        isinstance(d, (int, np.integer)) and 0 <= d < len(shape) for d in dimensions
    ):
        raise ValueError(
            f"reduce: dimensions {dimensions} must be distinct axes in [0, {len(shape)}) of operands of "
            f"shape {shape}"
        )
    if len(jaxpr.out_avals) != n:
        raise TypeError(f"reduce: the computation must return {n} value(s), got {len(jaxpr.out_avals)}")
    out_shape = tuple(d for i, d in enumerate(shape) if i not in dimensions)
    return [ShapedArray(out_shape, a.dtype, a.weak_type and i.weak_type) for a, i in zip(ops, inits)]


def _reduce_impl(*args, computation, jaxpr, dimensions):
    # The tree, staged once per (computation, dimensions, operand types) and run on host values.
    args = [np.asarray(a) for a in args]
    key = ("reduce_plan", dimensions, tuple((a.shape, a.dtype) for a in args))

    def build():
        avals = [ShapedArray(a.shape, a.dtype, False) for a in args]
        return trace_to_jaxpr(lambda *a: _tree_reduce(jaxpr, dimensions, *a), avals)

    # Memoized on the computation's jaxpr (core/memo.py), so the plan is freed with it.
    return run_closed_jaxpr(memoized(jaxpr, key, build), args)


def _reduce_jvp(primals, tangents, *, computation, jaxpr, dimensions):
    # Differentiate the tree (JAX does the same, but refuses initial-value tangents; here they
    # are exact since the initial value enters once).
    return ad.jvp_flat(lambda *a: _tree_reduce(jaxpr, dimensions, *a), primals, tangents)


def _reduce_batch(vals, dims, *, axis_data, computation, jaxpr, dimensions):
    n = len(vals) // 2
    if all(d is None for d in dims[n:]):
        ops = [bdim_to_front(v, d, axis_data.size) for v, d in zip(vals[:n], dims[:n])]
        new_dims = tuple(d + 1 for d in dimensions)
        return reduce_p.bind(*ops, *vals[n:], computation=computation, jaxpr=jaxpr, dimensions=new_dims), [
            0
        ] * n
    # Batched initial values: the per-example tree, vectorized. NB: JAX raises NotImplementedError.
    fun = batch_flat_fun(lambda *a: _tree_reduce(jaxpr, dimensions, *a), AxisData(axis_data.size), list(dims))
    return fun(*vals), [0] * n


reduce_p.abstract_eval = _reduce_abstract_eval
reduce_p.impl = _reduce_impl
reduce_p.jvp = _reduce_jvp
reduce_p.batch = _reduce_batch


def _jaxpr_of(fun, dtypes):
    avals = [ShapedArray((), np.dtype(d), False) for d in dtypes]
    one = 0 if len(dtypes) == 1 else (0,) * len(dtypes)
    return _trace_scalar_fun("reduce", fun, avals * 2, pytree.tree_structure((one, one)))[0]


# Computations for the generated matrices, traced once so every draw shares the same jaxprs.
_SPEC_FUNS = {}


def _spec_jaxpr(name, fun, dtypes):
    key = (name, tuple(dtypes))
    if key not in _SPEC_FUNS:
        _SPEC_FUNS[key] = (fun, _jaxpr_of(fun, dtypes))
    return _SPEC_FUNS[key]


def _argmax_pair(a, b):
    # (value, index) pairs: the larger value wins, ties keep the earlier (left) one.
    take_a = lax.ge(a[0], b[0])
    return lax.select(take_a, a[0], b[0]), lax.select(take_a, a[1], b[1])


def _reduce_cases(rng):
    out = []
    shapes_dims = (
        ((), ()),
        ((5,), (0,)),
        ((2, 3), (1,)),
        ((2, 3), (0, 1)),
        ((3, 4), (0,)),
        ((2, 0, 3), (1,)),
        ((2, 7, 3), (1,)),
        ((4, 1, 3), (2, 0)),
    )
    kinds = (
        ("mul", lambda a, b: lax.mul(a, b), ("float32", "int32"), 1),
        ("smooth", lambda a, b: lax.add(lax.add(a, b), lax.mul(a, b)), ("float32",), 0.0),
        ("max", lambda a, b: lax.max(a, b), ("float32", "int8", "bfloat16"), None),
    )
    for name, fun, dts, init in kinds:
        for dt in dts:
            fn, closed = _spec_jaxpr(name, fun, (dt,))
            for shape, dims in shapes_dims:
                domain = (-2, 2) if dt == "int32" else ((0.5, 1.5) if name == "mul" else (-1.0, 1.0))
                x = random_array(rng, shape, dt, domain)
                iv = np.asarray(random_array(rng, (), dt) if init is None else init, dt)
                params = {"computation": fn, "jaxpr": closed, "dimensions": dims}
                out.append(Case((x, iv), params, f"{name}-{dt}{list(shape)}{dims}"))
    fn, closed = _spec_jaxpr("argmax", _argmax_pair, ("float32", "int32"))
    for shape, dims in shapes_dims:
        x = random_array(rng, shape, "float32")
        idx = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
        params = {"computation": fn, "jaxpr": closed, "dimensions": dims}
        inits = (np.float32(-np.inf), np.int32(-1))
        out.append(Case((x, idx) + inits, params, f"argmax-pair{list(shape)}{dims}"))
    return out


reduce_p.test_spec = TestSpec(cases=_reduce_cases)


def _monoid_identity(computation, dt):
    """The identity init value for which `computation` on `dt` is a built-in reduction, with it."""
    intlike = _dtypes.is_bool(dt) or _dtypes.is_integer(dt)
    floating = _dtypes.is_inexact(dt)
    if computation is lax.add:
        return 0, lax.reduce_sum
    if computation is lax.mul:
        return 1, lax.reduce_prod
    if computation is lax.max:
        return (-np.inf if floating else (False if _dtypes.is_bool(dt) else np.iinfo(dt).min)), lax.reduce_max
    if computation is lax.min:
        return (np.inf if floating else (True if _dtypes.is_bool(dt) else np.iinfo(dt).max)), lax.reduce_min
    if intlike and computation is lax.bitwise_or:
        return 0, lax.reduce_or
    if intlike and computation is lax.bitwise_xor:
        return 0, lax.reduce_xor
    if intlike and computation is lax.bitwise_and:
        return (True if _dtypes.is_bool(dt) else np.array(-1).astype(dt)), lax.reduce_and
    return None, None


def _concrete(x):
    if isinstance(x, Tracer):
        try:
            return x.to_concrete_value()
        except Exception:  # noqa: BLE001 - any tracer that cannot say is not concrete
            return None
    return x


def _monoid_reducer(computation, inits):
    if len(inits) != 1:
        return None
    val = _concrete(inits[0])
    if val is None or np.shape(val) != ():
        return None
    identity, reducer = _monoid_identity(computation, get_aval(inits[0]).dtype)
    if reducer is None or not np.equal(np.asarray(val), identity):
        return None
    return reducer


def reduce(operands, init_values, computation, dimensions, out_sharding=None):
    """Reduce `operands` (a pytree of equally shaped arrays) over `dimensions` with the
    `computation` (x_tree, y_tree) -> tree, starting from the scalar `init_values` (same tree).

    lax.add/mul/max/min/bitwise_* with their identity bind the built-in reductions; any other
    computation is traced to a jaxpr and reduced by pairwise rounds (an associative computation
    gives the left fold)."""
    flat_ops, op_tree = pytree.tree_flatten(operands)
    flat_inits, init_tree = pytree.tree_flatten(init_values)
    if op_tree != init_tree:
        raise ValueError(
            f"Operands must have the same tree structure as init_values: {op_tree} vs. {init_tree}"
        )
    if len(flat_ops) != len(flat_inits):
        raise ValueError(
            f"Must have same total number of operands as init_values:  {len(flat_ops)} vs. {len(flat_inits)}"
        )
    dimensions = tuple(int(d) for d in dimensions)
    reducer = _monoid_reducer(computation, flat_inits)
    if reducer is not None:
        weak = _dtypes.is_weakly_typed(flat_ops[0]) and _dtypes.is_weakly_typed(flat_inits[0])
        out = reducer(as_lax_array(flat_ops[0]), dimensions)
        return pytree.tree_unflatten(op_tree, [_convert_element_type(out, get_aval(out).dtype, weak)])
    ops = [as_lax_array(x) for x in flat_ops]
    inits = [as_lax_array(x) for x in flat_inits]
    init_avals = [get_aval(i) for i in inits]
    if any(a.shape for a in init_avals):
        raise ValueError(f"reduce found non-scalar initial value: {[a.shape for a in init_avals]}")
    tree2 = pytree.tree_structure((pytree.tree_unflatten(init_tree, [0] * len(inits)),) * 2)
    closed, out_tree = _trace_scalar_fun("reduce", computation, init_avals * 2, tree2)
    outs = closed.out_avals
    if out_tree != init_tree or any(o.shape or o.dtype != a.dtype for o, a in zip(outs, init_avals)):
        raise TypeError(
            f"reduce: the computation must return scalars with the structure and dtypes of init_values "
            f"({init_tree}, {[a.dtype.name for a in init_avals]}), got {out_tree} of "
            f"{[o.str_short() for o in outs]}"
        )
    out = reduce_p.bind(*ops, *inits, computation=computation, jaxpr=closed, dimensions=dimensions)
    return pytree.tree_unflatten(op_tree, out)


# ------------------------------------------------------------------------------------------------
# scatter_apply


def scatter_apply(
    operand,
    scatter_indices,
    func,
    dimension_numbers,
    *,
    update_shape=(),
    indices_are_sorted=False,
    unique_indices=False,
    mode=None,
):
    """``operand`` with the scalar function `func` applied at the positions a scatter with these
    indices, dimension numbers and `update_shape` would write; a position hit k times gets func
    applied k times (XLA's semantics, as JAX's scatter with an update computation).

    The hit counts come from a scatter-add of ones; then func is applied, elementwise, to the
    positions still owed an application, in rounds (a while loop; one select when
    `unique_indices`). Differentiable forward; in reverse only with `unique_indices`."""
    operand = as_lax_array(operand)
    aval = get_aval(operand)
    closed, out_tree = _trace_scalar_fun(
        "scatter_apply", func, [ShapedArray((), aval.dtype, aval.weak_type)], pytree.tree_structure((0,))
    )
    outs = closed.out_avals
    if len(outs) != 1 or outs[0].shape or outs[0].dtype != aval.dtype:
        raise TypeError(
            f"scatter_apply: func must map a {aval.dtype.name} scalar to a {aval.dtype.name} scalar, got "
            f"{[o.str_short() for o in outs]}"
        )
    if math.prod(aval.shape) == 0:
        return operand
    i32 = np.dtype(np.int32)
    ones = lax.full(tuple(update_shape), 1, i32)
    counts = lax.scatter_add(
        lax.full(aval.shape, 0, i32),
        scatter_indices,
        ones,
        dimension_numbers,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )

    def apply_where(x, mask):
        return lax.select(mask, _vectorized(closed, x)[0], x)

    zero = lax.full(aval.shape, 0, i32)
    if unique_indices:
        return apply_where(operand, lax.gt(counts, zero))
    rounds = lax.reduce_max(counts, tuple(range(len(aval.shape))))

    def body(carry):
        i, x = carry
        return lax.add(i, np.int32(1)), apply_where(
            x, lax.gt(counts, lax.broadcast_in_dim(i, aval.shape, ()))
        )

    _, out = while_loop(lambda c: lax.lt(c[0], rounds), body, (np.int32(0), operand))
    return out
