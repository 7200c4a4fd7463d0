"""XLA's scatter family: `scatter`, `scatter-add`, `scatter-mul`, `scatter-min`, `scatter-max`,
with their derivative rules. Dimension numbers, modes and the shared shape checks live in
`indexing.py` next to gather, the scatters' inverse.

References build the full grid of operand positions with NumPy fancy indexing; scatters
accumulate duplicates in the row-major order of the updates (ufunc.at), and plain `scatter` lets
the last such update win (deterministically, which the derivative rules rely on).
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.values import make_array
from morphax._src.prims._ad import Zero, _lax, aval_of, instantiate, is_undefined_primal, is_zero
from morphax._src.prims._batching import moveaxis
from morphax._src.prims._spec import Case, TestSpec, random_array
from morphax._src.prims.indexing import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    _broadcast_at,
    _check_batching,
    _check_dims,
    _check_disjoint,
    _check_index_map,
    _check_indices,
    _grid,
    _insert_paired,
    _insertion_window,
    _normalize_scatter_dnums,
    _oob_indices,
    _shift,
    _starts,
    gather_p,
)

__all__ = [
    "scatter",
    "scatter_p",
    "scatter_add",
    "scatter_add_p",
    "scatter_mul",
    "scatter_mul_p",
    "scatter_min",
    "scatter_min_p",
    "scatter_max",
    "scatter_max_p",
]

# ------------------------------------------------------------------------------------------------
# scatter family


def _scatter_abstract_eval(
    name,
    operand,
    indices,
    updates,
    *,
    dimension_numbers,
    indices_are_sorted,
    unique_indices,
    mode,
    update_jaxpr,
    update_consts,
):
    dn = dimension_numbers
    ctx = f"operand {operand.str_short()}, indices {indices.str_short()}, updates {updates.str_short()}, {dn}"
    if not isinstance(dn, ScatterDimensionNumbers):
        raise TypeError(f"{name}: dimension_numbers must be a ScatterDimensionNumbers, got {dn!r}")
    if not isinstance(mode, GatherScatterMode):
        raise TypeError(f"{name}: mode must be a GatherScatterMode, got {mode!r}")
    _check_indices(name, indices, ctx)
    if operand.dtype != updates.dtype:
        raise TypeError(
            f"{name}: operand and updates must have the same dtype, got {operand.dtype.name} and "
            f"{updates.dtype.name} ({ctx}). Cast the updates with lax.convert_element_type."
        )
    _check_dims(name, dn.update_window_dims, updates.ndim, "update_window_dims", ctx)
    _check_dims(name, dn.inserted_window_dims, operand.ndim, "inserted_window_dims", ctx)
    _check_disjoint(
        name,
        dn.inserted_window_dims,
        dn.operand_batching_dims,
        "inserted_window_dims",
        "operand_batching_dims",
        ctx,
    )
    _check_batching(
        name,
        operand,
        indices,
        dn.operand_batching_dims,
        dn.scatter_indices_batching_dims,
        "scatter_indices_batching_dims",
        ctx,
    )
    _check_index_map(
        name,
        dn.scatter_dims_to_operand_dims,
        dn.operand_batching_dims,
        indices,
        operand,
        "scatter_dims_to_operand_dims",
        ctx,
    )
    n_window = operand.ndim - len(dn.inserted_window_dims) - len(dn.operand_batching_dims)
    if len(dn.update_window_dims) != n_window:
        raise TypeError(
            f"{name}: the operand has {operand.ndim} axes, so len(update_window_dims) + "
            "len(inserted_window_dims) + len(operand_batching_dims) must equal it "
            f"({len(dn.update_window_dims)} + {len(dn.inserted_window_dims)} + "
            f"{len(dn.operand_batching_dims)}) ({ctx})."
        )
    batch = indices.shape[:-1]
    scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
    if tuple(updates.shape[d] for d in scatter_dims) != batch:
        raise TypeError(
            f"{name}: the non-window axes of updates {tuple(updates.shape[d] for d in scatter_dims)} must "
            f"match the index batch shape {batch} (indices shape minus its last axis) ({ctx})."
        )
    window_axes = [
        d
        for d in range(operand.ndim)
        if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims
    ]
    for ud, od in zip(dn.update_window_dims, window_axes):
        if updates.shape[ud] > operand.shape[od]:
            raise TypeError(
                f"{name}: update window axis {ud} (size {updates.shape[ud]}) exceeds operand axis {od} "
                f"(size {operand.shape[od]}) ({ctx})."
            )
    return ShapedArray(operand.shape, operand.dtype, operand.weak_type)


def _scatter_targets(operand_shape, indices, updates_shape, dn, mode):
    """Flat operand positions aligned with updates.ravel(), and which updates are applied."""
    nbatch = indices.ndim - 1
    window_axes = [
        d
        for d in range(len(operand_shape))
        if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims
    ]
    window_shape = [updates_shape[d] for d in dn.update_window_dims]
    window = [1] * len(operand_shape)
    for d, s in zip(window_axes, window_shape):
        window[d] = s
    starts, valid = _starts(
        indices,
        operand_shape,
        dn.scatter_dims_to_operand_dims,
        dn.operand_batching_dims,
        dn.scatter_indices_batching_dims,
        window,
        clamp=mode == GatherScatterMode.CLIP,
    )
    if mode == GatherScatterMode.CLIP:
        valid = np.ones_like(valid)  # every clamped window fits
    grid = _grid(starts, window_axes, window_shape, nbatch)
    valid = np.broadcast_to(
        valid.reshape(valid.shape + (1,) * len(window_shape)), tuple(indices.shape[:-1]) + tuple(window_shape)
    )
    # Reorder batch + window axes into the updates' own axis order.
    w, b = iter(range(nbatch, nbatch + len(window_shape))), iter(range(nbatch))
    perm = [next(w) if i in dn.update_window_dims else next(b) for i in range(len(updates_shape))]
    valid = np.transpose(valid, perm).ravel()
    grid = [np.transpose(g, perm).ravel()[valid] for g in grid]
    flat = np.ravel_multi_index(grid, operand_shape) if grid else np.zeros(int(valid.sum()), np.int64)
    return flat, valid


def _scatter_impl_for(ufunc):
    def impl(
        operand,
        indices,
        updates,
        *,
        dimension_numbers,
        indices_are_sorted,
        unique_indices,
        mode,
        update_jaxpr,
        update_consts,
    ):
        flat, valid = _scatter_targets(operand.shape, indices, updates.shape, dimension_numbers, mode)
        out = np.array(operand, copy=True, order="C")  # reshape(-1) below must be a view
        view = out.reshape(-1)
        vals = updates.ravel()[valid]
        if ufunc is None:
            # Plain scatter: among duplicates the last update (row-major order of `updates`) wins.
            rev = flat[::-1]
            _, first = np.unique(rev, return_index=True)
            last = len(flat) - 1 - first
            view[flat[last]] = vals[last]
        else:
            ufunc.at(view, flat, vals)
        return out

    return impl


def _sdn(window, inserted, to_operand, obatch=(), ibatch=()):
    return ScatterDimensionNumbers(window, inserted, to_operand, obatch, ibatch)


def _scatter_cases_for(dtype_list):
    def cases(rng):
        out = []
        modes = (GatherScatterMode.FILL_OR_DROP, GatherScatterMode.CLIP)
        patterns = (
            # name, operand shape, indices shape, index bound, updates shape, dnums
            ("x[i]", (5, 3), (1,), 5, (3,), _sdn((0,), (0,), (0,))),
            ("x[idx]", (5, 3), (6, 1), 5, (6, 3), _sdn((1,), (0,), (0,))),
            ("x[:,idx]", (3, 5), (4, 1), 5, (3, 4), _sdn((0,), (1,), (1,))),
            ("x[i,j]", (4, 5), (6, 2), 4, (6,), _sdn((), (0, 1), (0, 1))),
            ("vec-dups", (4,), (7, 1), 4, (7,), _sdn((), (0,), (0,))),
            ("windows", (6,), (3, 1), 6, (3, 2), _sdn((1,), (), (0,))),
            ("window-first", (5, 3), (4, 1), 5, (3, 4), _sdn((0,), (0,), (0,))),
            ("batched", (3, 5), (3, 2, 1), 5, (3, 2), _sdn((), (1,), (1,), (0,), (0,))),
            ("empty", (5, 3), (0, 1), 5, (0, 3), _sdn((1,), (0,), (0,))),
        )
        for dt in dtype_list:
            for name, oshape, ishape, bound, ushape, dn in patterns:
                x = random_array(rng, oshape, dt)
                u = random_array(rng, ushape, dt)
                for mode in modes:
                    idx = _oob_indices(rng, ishape, bound)
                    params = dict(
                        dimension_numbers=dn,
                        indices_are_sorted=False,
                        unique_indices=False,
                        mode=mode,
                        update_jaxpr=None,
                        update_consts=(),
                    )
                    out.append(Case((x, idx, u), params, f"{dt}-{name}-{mode.name}"))
                idx = _oob_indices(rng, ishape, bound, oob=False)
                params = dict(
                    dimension_numbers=dn,
                    indices_are_sorted=False,
                    unique_indices=False,
                    mode=GatherScatterMode.PROMISE_IN_BOUNDS,
                    update_jaxpr=None,
                    update_consts=(),
                )
                out.append(Case((x, idx, u), params, f"{dt}-{name}-PROMISE"))
        return out

    return cases


def _scatter_primitive(name, ufunc, dtype_list):
    prim = Primitive(name)
    prim.kind = Kind.SCATTER

    def abstract_eval(operand, indices, updates, **params):
        return _scatter_abstract_eval(name, operand, indices, updates, **params)

    prim.impl = _scatter_impl_for(ufunc)
    prim.abstract_eval = abstract_eval
    prim.test_spec = TestSpec(cases=_scatter_cases_for(dtype_list))
    prim.batch = _scatter_batch_for(prim)
    return prim


def _scatter_batch_for(prim):
    """Batching rule of a scatter. An unbatched operand is broadcast first (each batch member
    writes its own copy). With unbatched indices the operand's batch axis becomes one more window
    axis, matched by a window axis of the updates; with batched indices it becomes a paired
    batching axis, matched by a scatter axis of the updates. Output batch axis: the operand's."""

    def rule(vals, dims, *, axis_data, dimension_numbers, **params):
        operand, indices, updates = vals
        d_op, d_idx, d_up = dims
        size = axis_data.size
        dn = dimension_numbers
        up_rank = len(get_aval(updates).shape) - (d_up is not None)
        if d_op is None:
            operand, d_op = _broadcast_at(operand, 0, size), 0
        op_rank = len(get_aval(operand).shape) - 1
        common = dict(
            inserted_window_dims=_shift(dn.inserted_window_dims, d_op),
            scatter_dims_to_operand_dims=_shift(dn.scatter_dims_to_operand_dims, d_op),
        )
        if d_idx is None:
            window = [
                d
                for d in range(op_rank)
                if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims
            ]
            k = sum(1 for w in window if w < d_op)
            lo, hi = _insertion_window(dn.update_window_dims, k, up_rank)
            if d_up is None:
                updates, p = _broadcast_at(updates, lo, size), lo
            elif lo <= d_up <= hi:
                p = d_up
            else:
                updates, p = moveaxis(updates, d_up, lo), lo
            new_dn = ScatterDimensionNumbers(
                update_window_dims=tuple(sorted(_shift(dn.update_window_dims, p) + (p,))),
                operand_batching_dims=_shift(dn.operand_batching_dims, d_op),
                scatter_indices_batching_dims=dn.scatter_indices_batching_dims,
                **common,
            )
            return prim.bind(operand, indices, updates, dimension_numbers=new_dn, **params), d_op
        if d_up is None:
            updates, d_up = _broadcast_at(updates, 0, size), 0
        uwd = _shift(dn.update_window_dims, d_up)
        # The updates' batch axis is their j-th scatter axis, so it pairs with index batch axis j.
        j = d_up - sum(1 for w in uwd if w < d_up)
        indices = moveaxis(indices, d_idx, j)
        obd, sib = _insert_paired(
            _shift(dn.operand_batching_dims, d_op), _shift(dn.scatter_indices_batching_dims, j), d_op, j
        )
        new_dn = ScatterDimensionNumbers(
            update_window_dims=uwd, operand_batching_dims=obd, scatter_indices_batching_dims=sib, **common
        )
        return prim.bind(operand, indices, updates, dimension_numbers=new_dn, **params), d_op

    return rule


def _bind_scatter(
    prim, operand, scatter_indices, updates, dimension_numbers, indices_are_sorted, unique_indices, mode
):
    if _dtypes.is_python_scalar(updates):
        updates = make_array(updates, get_aval(operand).dtype, weak_type=True)
    return prim.bind(
        operand,
        scatter_indices,
        updates,
        dimension_numbers=_normalize_scatter_dnums(prim.name, dimension_numbers),
        indices_are_sorted=bool(indices_are_sorted),
        unique_indices=bool(unique_indices),
        mode=GatherScatterMode.from_any(mode),
        update_jaxpr=None,
        update_consts=(),
    )


# ------------------------------------------------------------------------------------------------
# Derivative helpers. Every rule below is written with primitives (gather/scatter themselves,
# select_n, arithmetic), so rules compose to any order and transpose under reverse mode.


def _inverse_gather(x, indices, updates_shape, params, fill_value=0):
    """Gather from operand-shaped `x`, for every element of the updates, the element it is
    scattered to: the gather with the "same" dimension numbers and mode. Under FILL_OR_DROP the
    updates the scatter drops read `fill_value`."""
    dn = params["dimension_numbers"]
    gdn = GatherDimensionNumbers(
        offset_dims=dn.update_window_dims,
        collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims,
    )
    window = iter(updates_shape[d] for d in dn.update_window_dims)
    slice_sizes = tuple(
        1 if d in dn.inserted_window_dims or d in dn.operand_batching_dims else next(window)
        for d in range(len(aval_of(x).shape))
    )
    mode = params["mode"]
    return gather_p.bind(
        x,
        indices,
        dimension_numbers=gdn,
        slice_sizes=slice_sizes,
        indices_are_sorted=params["indices_are_sorted"],
        unique_indices=params["unique_indices"],
        mode=mode,
        fill_value=fill_value if mode == GatherScatterMode.FILL_OR_DROP else None,
    )


def _filled(shape, value, dtype):
    return _lax().full(tuple(shape), value, dtype)


def _winning_updates(indices, updates_shape, operand_shape, params):
    """Bool mask over the updates of a plain scatter: True for the elements that are in its output
    (among duplicates the last one wins; dropped ones lose). Found by scattering an id per update
    window and reading the ids back, which the deterministic scatter makes exact."""
    L = _lax()
    dn = params["dimension_numbers"]
    i32 = np.dtype(np.int32)
    ids_shape = tuple(1 if d in dn.update_window_dims else n for d, n in enumerate(updates_shape))
    ids = L.add(L.reshape(L.iota(i32, int(np.prod(ids_shape, dtype=np.int64))), ids_shape), 1)
    if ids_shape != tuple(updates_shape):
        ids = L.broadcast_in_dim(ids, tuple(updates_shape), tuple(range(len(updates_shape))))
    written = scatter_p.bind(_filled(operand_shape, 0, i32), indices, ids, **params)
    return L.eq(ids, _inverse_gather(written, indices, updates_shape, params, 0))


def _zero_tangent(ans, *tangents):
    """The symbolic zero output tangent when no tangent flows (or the output is not inexact)."""
    out = tangent_aval(get_aval(ans))
    if out.dtype == _dtypes.float0 or all(is_zero(t) for t in tangents):
        return Zero(out)
    return None


def _linear_avals(operand, updates):
    return aval_of(operand), aval_of(updates)


_ANY = ("float32", "bfloat16", "int32", "uint8", "bool", "complex64")
_ARITH = ("float32", "float16", "bfloat16", "int32", "int8", "uint8", "complex64", "bool")
_ORDERED = ("float32", "bfloat16", "int32", "uint8", "int8", "bool")


def _scatter_wrapper(prim, doc: str):
    """The lax function binding `prim` (one of the scatter family): JAX's signature, named after
    the primitive, with its own docstring."""

    def wrapper(
        operand,
        scatter_indices,
        updates,
        dimension_numbers,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
    ):
        return _bind_scatter(
            prim,
            operand,
            scatter_indices,
            updates,
            dimension_numbers,
            indices_are_sorted,
            unique_indices,
            mode,
        )

    wrapper.__name__ = wrapper.__qualname__ = prim.name.replace("-", "_")
    wrapper.__doc__ = doc
    return wrapper


scatter_p = _scatter_primitive("scatter", None, _ANY)


scatter = _scatter_wrapper(
    scatter_p,
    """Write `updates` into `operand` at the windows `scatter_indices` select. Out-of-bounds
    windows are dropped (mode None/'drop') or clamped ('clip'); among duplicate targets the update
    that is last in row-major order wins (XLA leaves this unspecified).""",
)


def _scatter_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    ans = scatter_p.bind(operand, indices, updates, **params)
    t_op, _, t_up = tangents
    zero = _zero_tangent(ans, t_op, t_up)
    if zero is not None:
        return ans, zero
    # Linear in (operand, updates) jointly: the same update wins each position for the tangent
    # as for the value, and untouched positions keep the operand's tangent.
    return ans, scatter_p.bind(instantiate(t_op), indices, instantiate(t_up), **params)


def _scatter_transpose(ct, operand, indices, updates, **params):
    if is_undefined_primal(indices):
        raise ValueError("scatter: cannot transpose with respect to the (integer) indices")
    undef_op, undef_up = is_undefined_primal(operand), is_undefined_primal(updates)
    op_aval, up_aval = _linear_avals(operand, updates)
    if is_zero(ct):
        return [Zero(op_aval) if undef_op else None, None, Zero(up_aval) if undef_up else None]
    L = _lax()
    op_ct = up_ct = None
    if undef_op:
        # Overwritten positions do not depend on the operand: scatter zeros over them.
        zeros = _filled(up_aval.shape, 0, get_aval(ct).dtype)
        op_ct = scatter_p.bind(ct, indices, zeros, **params)
    if undef_up:
        up_ct = _inverse_gather(ct, indices, up_aval.shape, params)
        if not params["unique_indices"]:
            # Only the update that won a contested position reaches the output.
            won = _winning_updates(indices, up_aval.shape, op_aval.shape, params)
            up_ct = L.select_n(won, _filled(up_aval.shape, 0, get_aval(ct).dtype), up_ct)
    return [op_ct, None, up_ct]


scatter_p.jvp = _scatter_jvp
scatter_p.transpose = _scatter_transpose


scatter_add_p = _scatter_primitive("scatter-add", np.add, _ARITH)


scatter_add = _scatter_wrapper(
    scatter_add_p,
    """Add `updates` into `operand` at the selected windows; duplicates accumulate.""",
)


def _scatter_add_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    ans = scatter_add_p.bind(operand, indices, updates, **params)
    t_op, _, t_up = tangents
    zero = _zero_tangent(ans, t_op, t_up)
    if zero is not None:
        return ans, zero
    if is_zero(t_up):
        return ans, t_op
    return ans, scatter_add_p.bind(instantiate(t_op), indices, t_up, **params)


def _scatter_add_transpose(ct, operand, indices, updates, **params):
    # Linear in both: the operand passes the cotangent through; each update reads it back from
    # where it was added (a dropped update reads 0: it never reached the output).
    if is_undefined_primal(indices):
        raise ValueError("scatter-add: cannot transpose with respect to the (integer) indices")
    undef_op, undef_up = is_undefined_primal(operand), is_undefined_primal(updates)
    op_aval, up_aval = _linear_avals(operand, updates)
    if is_zero(ct):
        return [Zero(op_aval) if undef_op else None, None, Zero(up_aval) if undef_up else None]
    up_ct = _inverse_gather(ct, indices, up_aval.shape, params) if undef_up else None
    return [ct if undef_op else None, None, up_ct]


scatter_add_p.jvp = _scatter_add_jvp
scatter_add_p.transpose = _scatter_add_transpose


scatter_mul_p = _scatter_primitive("scatter-mul", np.multiply, _ARITH)


scatter_mul = _scatter_wrapper(
    scatter_mul_p,
    """Multiply `operand` by `updates` at the selected windows; duplicates accumulate.""",
)


def _others_product(indices, updates, operand_shape, params):
    """For each update, the product of the other updates multiplied into the same position,
    exact when some of them are zero: with no zero there it is (product of all) / own value; with
    exactly one, only the zero update sees a nonzero product (of the rest); with more, it is 0.
    The value (so first derivatives) is exact everywhere; the zero cases are selected, so higher
    derivatives at points where duplicate updates are exactly 0 miss the zero factors' terms."""
    L = _lax()
    dt = get_aval(updates).dtype
    shape = get_aval(updates).shape
    zero_u, one_u = _filled(shape, 0, dt), _filled(shape, 1, dt)
    is0 = L.eq(updates, zero_u)
    safe = L.select_n(is0, updates, one_u)
    prod_nonzero = scatter_mul_p.bind(_filled(operand_shape, 1, dt), indices, safe, **params)
    n_zero = scatter_add_p.bind(
        _filled(operand_shape, 0, dt), indices, L.select_n(is0, zero_u, one_u), **params
    )
    q = _inverse_gather(prod_nonzero, indices, shape, params)
    z = _inverse_gather(n_zero, indices, shape, params)
    one_zero = L.select_n(is0, zero_u, q)
    return L.select_n(L.eq(z, zero_u), L.select_n(L.eq(z, one_u), zero_u, one_zero), L.div(q, safe))


def _scatter_mul_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    ans = scatter_mul_p.bind(operand, indices, updates, **params)
    t_op, _, t_up = tangents
    zero = _zero_tangent(ans, t_op, t_up)
    if zero is not None:
        return ans, zero
    L = _lax()
    out_t = None if is_zero(t_op) else scatter_mul_p.bind(t_op, indices, updates, **params)
    if not is_zero(t_up):
        # d out[p] = operand[p] * sum over updates u into p of t_up[u] * prod_{v != u} updates[v].
        # With unique indices the product of the others is 1 (JAX's rule); otherwise it is
        # computed exactly. NB: JAX raises NotImplementedError there.
        weighted = t_up
        if not params["unique_indices"]:
            weighted = L.mul(t_up, _others_product(indices, updates, get_aval(operand).shape, params))
        dt = get_aval(ans).dtype
        spread = scatter_add_p.bind(_filled(get_aval(operand).shape, 0, dt), indices, weighted, **params)
        term = L.mul(operand, spread)
        out_t = term if out_t is None else L.add(out_t, term)
    return ans, out_t


def _scatter_mul_transpose(ct, operand, indices, updates, **params):
    # Linear in the operand only (out = operand * scattered product of the updates).
    if is_undefined_primal(updates) or is_undefined_primal(indices):
        raise NotImplementedError(
            "scatter-mul is linear only in its operand: its transpose with respect to the updates is "
            "not defined (its JVP never produces such a linear use)."
        )
    if is_zero(ct):
        return [Zero(operand.aval), None, None]
    return [scatter_mul_p.bind(ct, indices, updates, **params), None, None]


scatter_mul_p.jvp = _scatter_mul_jvp
scatter_mul_p.transpose = _scatter_mul_transpose


scatter_min_p = _scatter_primitive("scatter-min", np.minimum, _ORDERED)


scatter_min = _scatter_wrapper(
    scatter_min_p,
    """Elementwise minimum of `operand` and `updates` at the selected windows (NaN propagates).""",
)


def _scatter_extremum_jvp(prim):
    """JVP of scatter-min/max: every output element takes the tangent of whichever operand element
    and updates attain it; ties share it equally (as reduce_max does)."""

    def jvp(primals, tangents, **params):
        operand, indices, updates = primals
        ans = prim.bind(operand, indices, updates, **params)
        t_op, _, t_up = tangents
        zero = _zero_tangent(ans, t_op, t_up)
        if zero is not None:
            return ans, zero
        L = _lax()
        t_op, t_up = instantiate(t_op), instantiate(t_up)
        dt = get_aval(ans).dtype
        op_shape, up_shape = get_aval(operand).shape, get_aval(updates).shape
        zero_op, one_op = _filled(op_shape, 0, dt), _filled(op_shape, 1, dt)
        zero_up, one_up = _filled(up_shape, 0, dt), _filled(up_shape, 1, dt)
        # Dropped updates read NaN back, which equals nothing.
        won = L.eq(updates, _inverse_gather(ans, indices, up_shape, params, np.nan))
        kept = L.eq(operand, ans)
        count = scatter_add_p.bind(
            L.select_n(kept, zero_op, one_op), indices, L.select_n(won, zero_up, one_up), **params
        )
        share = L.div(one_op, L.max(count, one_op))
        out_t = L.select_n(kept, zero_op, L.mul(t_op, share))
        up_t = L.select_n(won, zero_up, L.mul(t_up, _inverse_gather(share, indices, up_shape, params)))
        return ans, L.add(out_t, scatter_add_p.bind(zero_op, indices, up_t, **params))

    prim.jvp = jvp
    return jvp


_scatter_extremum_jvp(scatter_min_p)


scatter_max_p = _scatter_primitive("scatter-max", np.maximum, _ORDERED)


scatter_max = _scatter_wrapper(
    scatter_max_p,
    """Elementwise maximum of `operand` and `updates` at the selected windows (NaN propagates).""",
)


_scatter_extremum_jvp(scatter_max_p)
