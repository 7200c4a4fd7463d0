"""checkify's automatic checks, one rule per primitive in the interpreter's table: NaN outputs of
floating-point primitives (`nan_checks`), integer or float division by zero (`div_checks`), and
out-of-bounds indices of gather, dynamic_slice, dynamic_update_slice and the scatters
(`index_checks`, whatever the indexing mode, as in JAX). The primitive lists follow JAX's.
"""

from __future__ import annotations

import numpy as np

from morphax._src.checkify.errors import DivisionByZeroError, NaNError, OOBError, assert_func
from morphax._src.checkify.interpreter import error_checks
from morphax._src.core.avals import get_aval
from morphax._src.core.dtypes import issubdtype
from morphax._src.higher_order.reduce import reduce_p
from morphax._src.higher_order.solvers import custom_linear_solve_p
from morphax._src.prims import lax_api as L

__all__ = ["nan_primitives"]


def _any(x):
    shape = get_aval(x).shape
    return L.reduce_or(x, tuple(range(len(shape)))) if shape else x


# ----------------------------------------------------------------------------------------------- NaN


def check_nans(prim, error, enabled, out):
    """`error` updated with a NaNError of `prim` if any floating-point output holds a NaN."""
    if NaNError not in enabled:
        return error
    outs = out if prim.multiple_results else [out]
    flags = [_any(L.ne(o, o)) for o in outs if issubdtype(get_aval(o).dtype, np.inexact)]
    # NB: JAX adds a never-set NaN slot for integer results too; skipping them changes no answer.
    if not flags:  # integer (or key) results cannot hold a NaN
        return error
    any_nan = flags[0]
    for f in flags[1:]:
        any_nan = L.bitwise_or(any_nan, f)
    return assert_func(error, any_nan, NaNError(None, prim.name))


def _nan_rule(prim):
    def rule(error, enabled, *args, **params):
        out = prim.bind(*args, **params)
        return check_nans(prim, error, enabled, out), out

    return rule


# The primitives that can produce a NaN (JAX's list, less those morphax lacks).
nan_primitives = [
    L.acos_p, L.acosh_p, L.add_p, L.asin_p, L.asinh_p, L.atan2_p, L.atan_p, L.atanh_p,
    L.bessel_i0e_p, L.bessel_i1e_p, L.cbrt_p, L.conv_general_dilated_p, L.cos_p, L.cosh_p,
    L.cumlogsumexp_p, L.cummax_p, L.cummin_p, L.cumprod_p, L.cumsum_p, L.digamma_p,
    L.dot_general_p, L.erf_inv_p, L.erf_p, L.erfc_p, L.exp_p, L.expm1_p, L.fft_p,
    L.igamma_grad_a_p, L.igamma_p, L.igammac_p, L.integer_pow_p, L.lgamma_p, L.log1p_p, L.log_p,
    L.logistic_p, L.mul_p, L.pad_p, L.pow_p, L.psum_p, L.reduce_prod_p, L.reduce_sum_p,
    L.reduce_window_sum_p, L.regularized_incomplete_beta_p, L.rem_p, L.rng_uniform_p, L.rsqrt_p,
    L.sin_p, L.sinh_p, L.sqrt_p, L.sub_p, L.tan_p, L.tanh_p, reduce_p, custom_linear_solve_p,
]  # fmt: skip

for _prim in nan_primitives:
    error_checks[_prim] = _nan_rule(_prim)


# -------------------------------------------------------------------------------------- division


def _div_rule(error, enabled, x, y, **params):
    # Any zero divisor is reported, float or integer (JAX's rule); then the quotient's NaNs.
    if DivisionByZeroError in enabled:
        error = assert_func(error, _any(L.eq(y, L.full((), 0, get_aval(y).dtype))), DivisionByZeroError(None))
    out = L.div_p.bind(x, y, **params)
    return check_nans(L.div_p, error, enabled, out), out


error_checks[L.div_p] = _div_rule


# ------------------------------------------------------------------------------- out of bounds


def _i32(values):
    return np.asarray(values, dtype=np.int32)


def oob_payload(oob_mask, indices, dims_map, operand_shape):
    """int32[3]: the first out-of-bounds index (row-major over `indices`), the operand axis it
    indexes (`dims_map` by position in the last axis of `indices`) and that axis's size."""
    shape = get_aval(indices).shape
    n = int(np.prod(shape))
    flags = L.convert_element_type(L.reshape(oob_mask, (n,)), np.int32)
    flat_idx = L.argmax(flags, 0, np.int32)  # the first True (0 when none is)
    position = L.rem(flat_idx, np.int32(shape[-1])) if shape else np.int32(0)
    axes = _i32(dims_map)
    sizes = _i32([operand_shape[a] for a in dims_map])
    axis = L.dynamic_index_in_dim(axes, position, 0, keepdims=False)
    size = L.dynamic_index_in_dim(sizes, position, 0, keepdims=False)
    flat_indices = L.convert_element_type(L.reshape(indices, (n,)), np.int32)
    index = L.dynamic_index_in_dim(flat_indices, flat_idx, 0, keepdims=False)
    return L.concatenate([L.reshape(v, (1,)) for v in (index, axis, size)], 0)


def _starts_vector(starts):
    # Start indices as one vector (JAX promotes them to a common type the same way).
    dtype = np.result_type(*[get_aval(s).dtype for s in starts])
    return L.concatenate([L.reshape(L.convert_element_type(s, dtype), (1,)) for s in starts], 0)


def _window_oob(error, prim_name, operand_shape, starts, window):
    """`error` updated for a window of sizes `window` placed at `starts` in `operand_shape`."""
    if not starts:
        return error
    idx = _starts_vector(starts)
    dtype = get_aval(idx).dtype
    upper = np.asarray([d - w for d, w in zip(operand_shape, window)], dtype=dtype)
    mask = L.bitwise_or(L.lt(idx, np.zeros(len(starts), dtype)), L.gt(idx, upper))
    payload = oob_payload(mask, idx, range(len(operand_shape)), operand_shape)
    return assert_func(error, _any(mask), OOBError(None, prim_name, operand_shape, payload))


def _dynamic_slice_rule(error, enabled, operand, *starts, **params):
    out = L.dynamic_slice_p.bind(operand, *starts, **params)
    if OOBError in enabled:
        shape = tuple(get_aval(operand).shape)
        error = _window_oob(error, "dynamic_slice", shape, starts, params["slice_sizes"])
    return error, out


def _dynamic_update_slice_rule(error, enabled, operand, update, *starts, **params):
    out = L.dynamic_update_slice_p.bind(operand, update, *starts, **params)
    if OOBError in enabled:
        shape = tuple(get_aval(operand).shape)
        error = _window_oob(error, "dynamic_update_slice", shape, starts, get_aval(update).shape)
    return error, out


error_checks[L.dynamic_slice_p] = _dynamic_slice_rule
error_checks[L.dynamic_update_slice_p] = _dynamic_update_slice_rule


def _indices_oob(indices, operand_shape, index_map, window):
    """(any out of bounds, mask) for index vectors along the last axis of `indices` addressing
    the operand axes `index_map`, each a window of sizes `window` (per operand axis)."""
    idx_aval = get_aval(indices)
    dtype = idx_aval.dtype
    upper = [operand_shape[a] - window[a] for a in index_map]
    upper = np.minimum(np.asarray(upper, np.int64), np.iinfo(dtype).max).astype(dtype)
    shape = tuple(idx_aval.shape)
    upper = L.broadcast_in_dim(upper, shape, (len(shape) - 1,))
    mask = L.bitwise_or(L.lt(indices, L.full(shape, 0, dtype)), L.gt(indices, upper))
    return _any(mask), mask


def _gather_rule(error, enabled, operand, indices, **params):
    out = L.gather_p.bind(operand, indices, **params)
    if OOBError not in enabled:
        return error, out
    dnums = params["dimension_numbers"]
    shape = tuple(get_aval(operand).shape)
    if not get_aval(indices).shape or not dnums.start_index_map:
        return error, out
    failed, mask = _indices_oob(indices, shape, dnums.start_index_map, params["slice_sizes"])
    payload = oob_payload(mask, indices, dnums.start_index_map, shape)
    return assert_func(error, failed, OOBError(None, "gather", shape, payload)), out


error_checks[L.gather_p] = _gather_rule


def _scatter_rule(prim):
    def rule(error, enabled, operand, indices, updates, **params):
        out = prim.bind(operand, indices, updates, **params)
        if OOBError not in enabled:
            return error, out
        dnums = params["dimension_numbers"]
        shape = tuple(get_aval(operand).shape)
        if not get_aval(indices).shape or not dnums.scatter_dims_to_operand_dims:
            return check_nans(prim, error, enabled, out), out
        # The window each update writes: size 1 along inserted (and batching) axes, else the
        # update's window axes in order. NB: JAX's rule leaves batching axes out of this count
        # and fails on scatters vmap has given batching axes; counting them checks those too.
        upd_shape = get_aval(updates).shape
        window, pos = [], 0
        singles = set(dnums.inserted_window_dims) | set(getattr(dnums, "operand_batching_dims", ()))
        for i in range(len(shape)):
            if i in singles:
                window.append(1)
            else:
                window.append(upd_shape[dnums.update_window_dims[pos]])
                pos += 1
        failed, mask = _indices_oob(indices, shape, dnums.scatter_dims_to_operand_dims, window)
        payload = oob_payload(mask, indices, dnums.scatter_dims_to_operand_dims, shape)
        error = assert_func(error, failed, OOBError(None, prim.name, shape, payload))
        return check_nans(prim, error, enabled, out), out

    return rule


for _prim in (L.scatter_p, L.scatter_add_p, L.scatter_mul_p, L.scatter_min_p, L.scatter_max_p):
    error_checks[_prim] = _scatter_rule(_prim)
