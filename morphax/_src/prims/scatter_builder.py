"""How every scatter primitive is built: one abstract eval with shape checks that name the
argument, a NumPy reference per combiner, generated test cases, the batching rule, and the lax
wrapper with JAX's signature (`_scatter_primitive`, `_scatter_wrapper`). The primitives themselves
are in `gather_scatter_add.py` (scatter-add, gather's transpose) and `scatter.py` (the others).
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import Zero, aval_of, is_undefined_primal, is_zero, tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.values import make_array
from morphax._src.prims._spec import Case, TestSpec, random_array
from morphax._src.prims.conversion import full
from morphax._src.prims.gather_scatter_dims import (
    SCATTER_FIELDS,
    GatherScatterMode,
    ScatterDimensionNumbers,
    _broadcast_at,
    _check_indices,
    _grid,
    _insert_paired,
    _insertion_window,
    _normalize_scatter_dnums,
    _oob_indices,
    _shift,
    _starts,
    check_dimension_numbers,
)

__all__ = []


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
    check_dimension_numbers(name, operand, indices, dn, SCATTER_FIELDS, updates.ndim, ctx)
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
    # The sortedness/uniqueness promises and the update jaxpr do not change the result.
    def impl(operand, indices, updates, *, dimension_numbers, mode, **_):
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


def _filled(shape, value, dtype):
    return full(tuple(shape), value, dtype)


def def_scatter_jvp(prim, tangent):
    """Set `prim.jvp` for a scatter: bind it, and unless no tangent flows (or the output is not
    inexact, a symbolic zero then) give ``tangent(ans, primals, t_operand, t_updates, params)``."""

    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        out = tangent_aval(get_aval(ans))
        t_op, _, t_up = tangents
        if out.dtype == _dtypes.float0 or (is_zero(t_op) and is_zero(t_up)):
            return ans, Zero(out)
        return ans, tangent(ans, primals, t_op, t_up, params)

    prim.jvp = jvp


def def_scatter_transpose(prim, cotangents):
    """Set `prim.transpose` for a scatter linear in (operand, updates) jointly: never in the
    indices; a symbolic zero cotangent gives symbolic zeros; otherwise
    ``cotangents(ct, indices, op_aval, up_aval, linear_op, linear_up, params)`` gives the
    operand's and the updates' cotangents (None for one that is not linear)."""

    def transpose(ct, operand, indices, updates, **params):
        if is_undefined_primal(indices):
            raise ValueError(f"{prim.name}: cannot transpose with respect to the (integer) indices")
        linear_op, linear_up = is_undefined_primal(operand), is_undefined_primal(updates)
        op_aval, up_aval = aval_of(operand), aval_of(updates)
        if is_zero(ct):
            return [Zero(op_aval) if linear_op else None, None, Zero(up_aval) if linear_up else None]
        op_ct, up_ct = cotangents(ct, indices, op_aval, up_aval, linear_op, linear_up, params)
        return [op_ct, None, up_ct]

    prim.transpose = transpose


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
