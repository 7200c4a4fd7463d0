"""`morphax.nn.dot_product_attention`: softmax(Q K^T * scale + bias, masked) V per head, with
grouped-query heads, boolean and causal masks, sliding windows and padded sequence lengths.

Shapes use JAX's letters: B batch, T query length, S key/value length, N query heads, K key/value
heads (N a multiple of K; each key/value head serves G = N // K query heads), H head size. The
computation is JAX's "xla" implementation written with einsum: logits in at least float32,
masked logits replaced by a large finite negative number (so a fully masked row is a uniform
average, not NaN), the softmax in float32.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.core.promotion import promote_types
from morphax._src.nn.functions import softmax
from morphax._src.numpy import creation, manipulation, products, reductions, ufuncs, util
from morphax._src.prims import lax_api as L

__all__ = ["dot_product_attention"]

_NAME = "dot_product_attention"


def _as_4d(name, t):
    """`t` as an array of rank 4 (leading axes of size 1 added; JAX's (T, N, H) form)."""
    t = util.asarray_like(t)
    nd = len(get_aval(t).shape)
    if nd > 4:
        raise ValueError(f"{_NAME}: {name} must have at most 4 dimensions, got shape {get_aval(t).shape}.")
    return manipulation.expand_dims(t, tuple(range(4 - nd))) if nd < 4 else t


def _check(t, name, shape, dtype):
    """JAX's checks: rank, dtype when given, and every size that is not -1."""
    if t is None:
        return
    aval = get_aval(t)
    if len(aval.shape) != len(shape):
        raise ValueError(f"{_NAME}: {name} ndim should be {len(shape)}, but got {len(aval.shape)}")
    if dtype is not None and aval.dtype != dtype:
        raise ValueError(f"{_NAME}: {name} dtype should be {np.dtype(dtype)}, but got {aval.dtype}")
    if any(want not in (-1, got) for want, got in zip(shape, aval.shape)):
        raise ValueError(f"{_NAME}: {name} shape should be {list(shape)}: but got {aval.shape}")


def _grouped(t, n_kv, groups):
    """A (B|1, N|1, T|1, S|1) bias or mask as (B|1, K|1, G|1, T|1, S|1), head n = k * G + g."""
    if t is None:
        return None
    b, n, tt, s = get_aval(t).shape
    if n == 1:
        return manipulation.reshape(t, (b, 1, 1, tt, s))
    if n != n_kv * groups:
        raise ValueError(f"{_NAME}: bias and mask need 1 or {n_kv * groups} heads, got {n}.")
    return manipulation.reshape(t, (b, n_kv, groups, tt, s))


def _combined_mask(mask, is_causal, local_window_size, q_lengths, kv_lengths, T, S):
    """Where the logits take part, broadcastable to (B, K, G, T, S), or None for everywhere."""
    parts = [] if mask is None else [mask]
    q_pos = L.broadcasted_iota(_dtypes.int32, (T, S), 0)
    k_pos = L.broadcasted_iota(_dtypes.int32, (T, S), 1)
    if is_causal:
        parts.append(ufuncs.less_equal(k_pos, q_pos))
    if local_window_size is not None:
        left, right = local_window_size
        in_window = ufuncs.logical_and(
            ufuncs.less_equal(q_pos, ufuncs.add(k_pos, left)),
            ufuncs.greater_equal(q_pos, ufuncs.subtract(k_pos, right)),
        )
        parts.append(in_window)
    if q_lengths is not None:
        rows = ufuncs.less(creation.arange(T)[None, :], q_lengths[:, None])  # (B, T)
        parts.append(rows[:, None, None, :, None])
    if kv_lengths is not None:
        cols = ufuncs.less(creation.arange(S)[None, :], kv_lengths[:, None])  # (B, S)
        parts.append(cols[:, None, None, None, :])
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = ufuncs.logical_and(out, p)
    return out


def dot_product_attention(
    query,
    key,
    value,
    bias=None,
    mask=None,
    *,
    scale=None,
    is_causal=False,
    query_seq_lengths=None,
    key_value_seq_lengths=None,
    local_window_size=None,
    implementation=None,
    return_residual=False,
):
    """Scaled dot-product attention per head: ``softmax(Q K^T * scale + bias) V``.

    `query` is (B, T, N, H) or (T, N, H); `key` and `value` are (B, S, K, H) or (S, K, H) with N a
    multiple of K (grouped-query attention; K == 1 is multi-query). `bias` (added) and `mask`
    (bool, True takes part) broadcast to (B, N, T, S); `is_causal` keeps keys at or before each
    query; `local_window_size` (an int or (left, right)) keeps keys within that window of the
    query; `query_seq_lengths` / `key_value_seq_lengths` (int32, shape (B,)) mask padding, and
    padded query rows come out zero. `scale` defaults to 1/sqrt(H). With `return_residual`, also
    returns the logsumexp of each row of masked logits, shape (B, T, N) (or (T, N)), without
    gradient. `implementation` may be None or "xla" (the computation here); "cudnn" needs a GPU.
    """
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise NotImplementedError(
                f"{_NAME}: implementation='cudnn' needs an NVIDIA GPU; use None or 'xla'."
            )
        raise ValueError(f"Unsupported implementation option: {implementation}")
    util.check_arraylike(_NAME, query, key, value)
    out_shape = get_aval(util.asarray_like(query)).shape
    q, k, v = (_as_4d(n, t) for n, t in (("query", query), ("key", key), ("value", value)))
    bias = None if bias is None else _as_4d("bias", bias)
    mask = None if mask is None else _as_4d("mask", mask)
    q_lengths = None if query_seq_lengths is None else util.asarray_like(query_seq_lengths)
    kv_lengths = None if key_value_seq_lengths is None else util.asarray_like(key_value_seq_lengths)
    if isinstance(local_window_size, (int, np.integer)):
        local_window_size = (int(local_window_size), int(local_window_size))

    B, S, K, H = get_aval(k).shape
    _check(v, "value", (B, S, K, H), get_aval(k).dtype)
    _check(q, "query", (B, -1, -1, H), get_aval(k).dtype)
    _check(mask, "mask", (-1,) * 4, np.dtype(bool))
    _check(bias, "bias", (-1,) * 4, None)
    _check(q_lengths, "query_seq_lengths", (B,), np.dtype(np.int32))
    _check(kv_lengths, "key_value_seq_lengths", (B,), np.dtype(np.int32))
    T, N = get_aval(q).shape[1:3]
    if N % K:
        raise ValueError(
            f"{_NAME}: the number of query heads must be a multiple of key/value heads, but got {N} vs {K}"
        )
    G = N // K
    scale = 1.0 / np.sqrt(H) if scale is None else scale

    dtype = get_aval(k).dtype
    logits_dtype = promote_types(get_aval(q).dtype, np.float32)
    q = manipulation.reshape(q, (B, T, K, G, H))
    logits = products.einsum("BTKGH,BSKH->BKGTS", q, k, preferred_element_type=logits_dtype)
    logits = ufuncs.multiply(logits, util.convert_element_type(scale, logits_dtype, False))
    if bias is not None:
        logits = util.convert_element_type(ufuncs.add(logits, _grouped(bias, K, G)), logits_dtype, False)
    keep = _combined_mask(_grouped(mask, K, G), is_causal, local_window_size, q_lengths, kv_lengths, T, S)
    if keep is not None:
        # A large finite negative (within float32's range, where the softmax runs) rather than
        # -inf: a row with every logit masked averages uniformly instead of dividing 0 by 0.
        big = -0.7 * min(float(_dtypes.finfo(logits_dtype).max), float(np.finfo(np.float32).max))
        logits = ufuncs.where(keep, logits, util.convert_element_type(big, logits_dtype, False))
    logits32 = util.convert_element_type(logits, np.float32, False)
    probs = util.convert_element_type(softmax(logits32, axis=-1), dtype, False)
    encoded = products.einsum("BKGTS,BSKH->BTKGH", probs, v)
    encoded = manipulation.reshape(encoded, (B, T, N, H))
    if q_lengths is not None:
        rows = ufuncs.less(creation.arange(T)[None, :], q_lengths[:, None])
        encoded = ufuncs.multiply(encoded, util.convert_element_type(rows[:, :, None, None], dtype, False))
    encoded = manipulation.reshape(encoded, out_shape)
    if not return_residual:
        return encoded
    lse = util.convert_element_type(reductions.logsumexp(logits32, axis=-1), dtype, False)  # (B, K, G, T)
    lse = manipulation.reshape(manipulation.transpose(lse, (0, 3, 1, 2)), out_shape[:-1])
    return encoded, L.stop_gradient(lse)
