"""XLA's scatter family apart from scatter-add: `scatter`, `scatter-mul`, `scatter-min` and
`scatter-max`, with their derivative rules (written with gather, scatter-add, select_n and
arithmetic, so they compose to any order). The shared builder is in `scatter_builder.py`;
dimension numbers and modes in `gather_scatter_dims.py`.

References build the full grid of operand positions with NumPy fancy indexing; scatters
accumulate duplicates in the row-major order of the updates (ufunc.at), and plain `scatter` lets
the last such update win (deterministically, which the derivative rules rely on).
"""

from __future__ import annotations

import numpy as np

from morphax._src.core.ad_util import Zero, instantiate, is_undefined_primal, is_zero
from morphax._src.core.avals import get_aval
from morphax._src.prims import _stablehlo_indexing as hlo_indexing
from morphax._src.prims import arithmetic
from morphax._src.prims.arithmetic import add, div, mul
from morphax._src.prims.compare import eq
from morphax._src.prims.conversion import iota
from morphax._src.prims.gather_scatter_add import _inverse_gather, scatter_add_p
from morphax._src.prims.scatter_builder import (
    _ANY,
    _ARITH,
    _ORDERED,
    _filled,
    _scatter_primitive,
    _scatter_wrapper,
    def_scatter_jvp,
    def_scatter_transpose,
)
from morphax._src.prims.selection import select_n
from morphax._src.prims.shape import broadcast_in_dim, reshape

__all__ = [
    "scatter_p",
    "scatter",
    "scatter_mul_p",
    "scatter_mul",
    "scatter_min_p",
    "scatter_min",
    "scatter_max_p",
    "scatter_max",
]


def _winning_updates(indices, updates_shape, operand_shape, params):
    """Bool mask over the updates of a plain scatter: True for the elements that are in its output
    (among duplicates the last one wins; dropped ones lose). Found by scattering an id per update
    window and reading the ids back, which the deterministic scatter makes exact."""
    dn = params["dimension_numbers"]
    i32 = np.dtype(np.int32)
    ids_shape = tuple(1 if d in dn.update_window_dims else n for d, n in enumerate(updates_shape))
    ids = add(reshape(iota(i32, int(np.prod(ids_shape, dtype=np.int64))), ids_shape), 1)
    if ids_shape != tuple(updates_shape):
        ids = broadcast_in_dim(ids, tuple(updates_shape), tuple(range(len(updates_shape))))
    written = scatter_p.bind(_filled(operand_shape, 0, i32), indices, ids, **params)
    return eq(ids, _inverse_gather(written, indices, updates_shape, params, 0))


scatter_p = _scatter_primitive("scatter", None, _ANY)
scatter_p.stablehlo = hlo_indexing.scatter()
scatter = _scatter_wrapper(
    scatter_p,
    """Write `updates` into `operand` at the windows `scatter_indices` select. Out-of-bounds
    windows are dropped (mode None/'drop') or clamped ('clip'); among duplicate targets the update
    that is last in row-major order wins (XLA leaves this unspecified).""",
)


def _scatter_tangent(ans, primals, t_op, t_up, params):
    # Linear in (operand, updates) jointly: the same update wins each position for the tangent
    # as for the value, and untouched positions keep the operand's tangent.
    return scatter_p.bind(instantiate(t_op), primals[1], instantiate(t_up), **params)


def _scatter_cotangents(ct, indices, op_aval, up_aval, undef_op, undef_up, params):
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
            up_ct = select_n(won, _filled(up_aval.shape, 0, get_aval(ct).dtype), up_ct)
    return op_ct, up_ct


def_scatter_jvp(scatter_p, _scatter_tangent)
def_scatter_transpose(scatter_p, _scatter_cotangents)
scatter_mul_p = _scatter_primitive("scatter-mul", np.multiply, _ARITH)
scatter_mul_p.stablehlo = hlo_indexing.scatter("mul")
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
    dt = get_aval(updates).dtype
    shape = get_aval(updates).shape
    zero_u, one_u = _filled(shape, 0, dt), _filled(shape, 1, dt)
    is0 = eq(updates, zero_u)
    safe = select_n(is0, updates, one_u)
    prod_nonzero = scatter_mul_p.bind(_filled(operand_shape, 1, dt), indices, safe, **params)
    n_zero = scatter_add_p.bind(
        _filled(operand_shape, 0, dt), indices, select_n(is0, zero_u, one_u), **params
    )
    q = _inverse_gather(prod_nonzero, indices, shape, params)
    z = _inverse_gather(n_zero, indices, shape, params)
    one_zero = select_n(is0, zero_u, q)
    return select_n(eq(z, zero_u), select_n(eq(z, one_u), zero_u, one_zero), div(q, safe))


def _scatter_mul_tangent(ans, primals, t_op, t_up, params):
    operand, indices, updates = primals
    out_t = None if is_zero(t_op) else scatter_mul_p.bind(t_op, indices, updates, **params)
    if not is_zero(t_up):
        # d out[p] = operand[p] * sum over updates u into p of t_up[u] * prod_{v != u} updates[v].
        # With unique indices the product of the others is 1 (JAX's rule); otherwise it is
        # computed exactly. NB: JAX raises NotImplementedError there.
        weighted = t_up
        if not params["unique_indices"]:
            weighted = mul(t_up, _others_product(indices, updates, get_aval(operand).shape, params))
        dt = get_aval(ans).dtype
        spread = scatter_add_p.bind(_filled(get_aval(operand).shape, 0, dt), indices, weighted, **params)
        term = mul(operand, spread)
        out_t = term if out_t is None else add(out_t, term)
    return out_t


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


def_scatter_jvp(scatter_mul_p, _scatter_mul_tangent)
scatter_mul_p.transpose = _scatter_mul_transpose
scatter_min_p = _scatter_primitive("scatter-min", np.minimum, _ORDERED)
scatter_min_p.stablehlo = hlo_indexing.scatter("min")
scatter_min = _scatter_wrapper(
    scatter_min_p,
    """Elementwise minimum of `operand` and `updates` at the selected windows (NaN propagates).""",
)


def _scatter_extremum_jvp(prim):
    """JVP of scatter-min/max: every output element takes the tangent of whichever operand element
    and updates attain it; ties share it equally (as reduce_max does)."""

    def tangent(ans, primals, t_op, t_up, params):
        operand, indices, updates = primals
        t_op, t_up = instantiate(t_op), instantiate(t_up)
        dt = get_aval(ans).dtype
        op_shape, up_shape = get_aval(operand).shape, get_aval(updates).shape
        zero_op, one_op = _filled(op_shape, 0, dt), _filled(op_shape, 1, dt)
        zero_up, one_up = _filled(up_shape, 0, dt), _filled(up_shape, 1, dt)
        # Dropped updates read NaN back, which equals nothing.
        won = eq(updates, _inverse_gather(ans, indices, up_shape, params, np.nan))
        kept = eq(operand, ans)
        count = scatter_add_p.bind(
            select_n(kept, zero_op, one_op), indices, select_n(won, zero_up, one_up), **params
        )
        share = div(one_op, arithmetic.max(count, one_op))
        out_t = select_n(kept, zero_op, mul(t_op, share))
        up_t = select_n(won, zero_up, mul(t_up, _inverse_gather(share, indices, up_shape, params)))
        return add(out_t, scatter_add_p.bind(zero_op, indices, up_t, **params))

    def_scatter_jvp(prim, tangent)


_scatter_extremum_jvp(scatter_min_p)
scatter_max_p = _scatter_primitive("scatter-max", np.maximum, _ORDERED)
scatter_max_p.stablehlo = hlo_indexing.scatter("max")
scatter_max = _scatter_wrapper(
    scatter_max_p,
    """Elementwise maximum of `operand` and `updates` at the selected windows (NaN propagates).""",
)


_scatter_extremum_jvp(scatter_max_p)
