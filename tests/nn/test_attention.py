"""`nn.dot_product_attention` against a float64 NumPy loop over batches and heads: grouped
heads, bias, boolean/causal/window masks, padded lengths, the logsumexp residual, the unbatched
form; under jit, vmap and grad (float64 finite differences); and JAX's input checks."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.nn as nn
import morphax.numpy as jnp
from morphax.test_util import check_grads

B, T, S, N, K, H = 2, 5, 7, 4, 2, 8


def _inputs(seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(B, T, N, H)).astype(dtype)
    k = rng.normal(size=(B, S, K, H)).astype(dtype)
    v = rng.normal(size=(B, S, K, H)).astype(dtype)
    return q, k, v


def _reference(q, k, v, bias=None, mask=None, scale=None, causal=False, window=None, q_len=None, kv_len=None):
    """One softmax per (batch, head, query) in float64; a fully masked row averages uniformly
    (JAX masks with a large finite negative number, not -inf)."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    b, t, n, h = q.shape
    s, kh = k.shape[1], k.shape[2]
    scale = 1 / np.sqrt(h) if scale is None else scale
    out = np.zeros_like(q)
    lse = np.zeros((b, t, n))
    for bi in range(b):
        for ni in range(n):
            ki = ni // (n // kh)
            logits = q[bi, :, ni] @ k[bi, :, ki].T * scale
            if bias is not None:
                logits = logits + np.broadcast_to(bias, (b, n, t, s))[bi, ni]
            keep = np.ones((t, s), bool)
            if mask is not None:
                keep &= np.broadcast_to(mask, (b, n, t, s))[bi, ni]
            tq, sk = np.meshgrid(np.arange(t), np.arange(s), indexing="ij")
            if causal:
                keep &= sk <= tq
            if window is not None:
                keep &= (tq <= sk + window[0]) & (tq >= sk - window[1])
            if q_len is not None:
                keep &= tq < q_len[bi]
            if kv_len is not None:
                keep &= sk < kv_len[bi]
            logits = np.where(keep, logits, -0.7 * np.finfo(np.float32).max)
            m = logits.max(-1, keepdims=True)
            p = np.exp(logits - m)
            lse[bi, :, ni] = np.log(p.sum(-1)) + m[:, 0]
            p /= p.sum(-1, keepdims=True)
            out[bi, :, ni] = p @ v[bi, :, ki]
            if q_len is not None:
                out[bi, q_len[bi] :, ni] = 0
    return out, lse


def _close(got, want, tol=2e-5):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol, atol=tol)


def test_grouped_query_attention_matches_the_reference():
    q, k, v = _inputs()
    _close(nn.dot_product_attention(q, k, v), _reference(q, k, v)[0])
    # multi-query (one key/value head) and multi-head (K == N)
    _close(nn.dot_product_attention(q, k[:, :, :1], v[:, :, :1]), _reference(q, k[:, :, :1], v[:, :, :1])[0])
    kk, vv = np.repeat(k, 2, axis=2), np.repeat(v, 2, axis=2)
    _close(nn.dot_product_attention(q, kk, vv, scale=0.3), _reference(q, kk, vv, scale=0.3)[0])


@pytest.mark.parametrize("bias_shape", [(1, N, T, S), (B, 1, T, S), (B, N, T, S)])
@pytest.mark.parametrize("causal", [False, True])
def test_bias_mask_and_causal(bias_shape, causal):
    q, k, v = _inputs(1)
    rng = np.random.default_rng(2)
    bias = rng.normal(size=bias_shape).astype(np.float32)
    mask = rng.random((B, 1, T, S)) > 0.3
    got = nn.dot_product_attention(q, k, v, bias=bias, mask=mask, is_causal=causal)
    _close(got, _reference(q, k, v, bias=bias, mask=mask, causal=causal)[0])


def test_windows_padding_and_the_residual():
    q, k, v = _inputs(3)
    q_len, kv_len = np.array([3, 5], np.int32), np.array([7, 2], np.int32)
    got, res = nn.dot_product_attention(
        q,
        k,
        v,
        local_window_size=(1, 2),
        query_seq_lengths=q_len,
        key_value_seq_lengths=kv_len,
        return_residual=True,
    )
    want, lse = _reference(q, k, v, window=(1, 2), q_len=q_len, kv_len=kv_len)
    _close(got, want)
    _close(res, lse, 1e-4)
    assert res.shape == (B, T, N)
    # an int window is symmetric
    _close(nn.dot_product_attention(q, k, v, local_window_size=2), _reference(q, k, v, window=(2, 2))[0])


def test_unbatched_inputs_and_fully_masked_rows():
    q, k, v = _inputs(4)
    got = nn.dot_product_attention(q[0], k[0], v[0], is_causal=True)
    assert got.shape == (T, N, H)
    _close(got, _reference(q[:1], k[:1], v[:1], causal=True)[0][0])
    nothing = np.zeros((1, 1, T, S), bool)
    out = nn.dot_product_attention(q, k, v, mask=nothing)
    assert np.all(np.isfinite(np.asarray(out)))  # uniform average, not 0/0
    _close(out, _reference(q, k, v, mask=nothing)[0])


def test_bfloat16_inputs_compute_logits_and_softmax_in_float32():
    q, k, v = _inputs(5)
    got = nn.dot_product_attention(*(jnp.asarray(a, jnp.bfloat16) for a in (q, k, v)))
    assert got.dtype == jnp.bfloat16
    _close(np.asarray(got.astype(jnp.float32)), _reference(q, k, v)[0], 5e-2)


def test_jit_vmap_and_gradients():
    q, k, v = _inputs(6)
    bias = np.random.default_rng(7).normal(size=(1, N, T, S)).astype(np.float32)

    def f(q, k, v):
        return nn.dot_product_attention(q, k, v, bias=bias, is_causal=True)

    want = _reference(q, k, v, bias=bias, causal=True)[0]
    _close(morphax.jit(f)(q, k, v), want)
    per_example = morphax.vmap(lambda q, k, v: f(q[None], k[None], v[None])[0])(q, k, v)
    _close(per_example, want)
    small = [a[:1, :3, :2, :4].astype(np.float64) for a in (q, k, v)]
    small[1], small[2] = small[1][:, :, :1], small[2][:, :, :1]
    # The softmax runs in float32 even for float64 inputs (as in JAX), so the derivatives are
    # float32-accurate: finite differences with a wider step and a float32-sized tolerance.
    with morphax.enable_x64():
        check_grads(
            lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True),
            small,
            order=2,
            eps=1e-3,
            atol=5e-3,
            rtol=5e-3,
        )


def test_bad_input_is_reported_like_jax():
    q, k, v = _inputs()
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        nn.dot_product_attention(q[:, :, :3], k, v)
    with pytest.raises(ValueError, match="value shape"):
        nn.dot_product_attention(q, k, v[:, :3])
    with pytest.raises(ValueError, match="mask dtype should be bool"):
        nn.dot_product_attention(q, k, v, mask=np.ones((1, 1, T, S), np.float32))
    with pytest.raises(ValueError, match="query_seq_lengths dtype"):
        nn.dot_product_attention(q, k, v, query_seq_lengths=np.array([1.0, 2.0]))
    with pytest.raises(NotImplementedError, match="cudnn"):
        nn.dot_product_attention(q, k, v, implementation="cudnn")
