"""Block-scaled products: `scaled_matmul` against its definition in float64 NumPy;
`scaled_dot_general` against dot_general within the quantization error, its quantized operands
against the dequantized reference, shapes for general dimension numbers, and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.nn as nn
import morphax.numpy as jnp
from morphax._src.nn.scaled_matmul import _quantize


def test_scaled_matmul_is_the_documented_product():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3, 8)).astype(np.float32), rng.normal(size=(2, 5, 8)).astype(np.float32)
    sa, sb = (
        rng.uniform(0.5, 2, size=(2, 3, 2)).astype(np.float32),
        rng.uniform(0.5, 2, size=(2, 5, 2)).astype(np.float32),
    )
    want = np.einsum("bmk,bnk->bmn", a * np.repeat(sa, 4, -1), b * np.repeat(sb, 4, -1), dtype=np.float64)
    got = nn.scaled_matmul(a, b, sa, sb)
    assert got.dtype == jnp.float32 and got.shape == (2, 3, 5)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    assert nn.scaled_matmul(a, b, sa, sb, preferred_element_type=jnp.bfloat16).dtype == jnp.bfloat16
    # float8 operands with power-of-two e8m0 scales, the mxfp8 layout
    q = jnp.asarray(a).astype(jnp.float8_e4m3fn)
    s = jnp.ones((2, 3, 1), jnp.float8_e8m0fnu)
    np.testing.assert_allclose(
        np.asarray(nn.scaled_matmul(q, q, s, s)),
        np.einsum("bmk,bnk->bmn", *[np.asarray(q, np.float64)] * 2),
        rtol=1e-6,
    )
    with pytest.raises(ValueError, match="3-dimensional"):
        nn.scaled_matmul(a[0], b, sa, sb)
    with pytest.raises(ValueError, match="matching batch"):
        nn.scaled_matmul(a, b[:1], sa, sb)


@pytest.mark.parametrize("mode", ["mxfp8", "nvfp4"])
def test_quantized_blocks_dequantize_close_to_the_operand(mode):
    x = np.random.default_rng(1).normal(size=(2, 4, 64)).astype(np.float32) * 3
    cfg = nn.get_scaled_dot_general_config(mode)
    q, s = _quantize(jnp.asarray(x), cfg)
    assert q.dtype == cfg.data_type and s.dtype == cfg.scale_type
    back = np.asarray(q, np.float64) * np.repeat(np.asarray(s, np.float64), cfg.block_size, -1)
    rel = np.abs(back - x).max() / np.abs(x).max()
    assert rel < (0.07 if mode == "mxfp8" else 0.25)
    if mode == "mxfp8":  # power-of-two scales: every block's largest element fits the format
        assert np.all(np.abs(np.asarray(q, np.float64)) <= 448)


@pytest.mark.parametrize("mode", ["mxfp8", "nvfp4"])
def test_scaled_dot_general_approximates_dot_general(mode):
    rng = np.random.default_rng(2)
    lhs, rhs = rng.normal(size=(3, 16, 64)).astype(np.float32), rng.normal(size=(3, 8, 64)).astype(np.float32)
    dn = (((2,), (2,)), ((0,), (0,)))
    configs = [nn.get_scaled_dot_general_config(mode)] * 3
    got = nn.scaled_dot_general(lhs, rhs, dn, configs=configs)
    want = np.einsum("bmk,bnk->bmn", lhs, rhs, dtype=np.float64)
    assert got.shape == (3, 16, 8) and got.dtype == jnp.float32
    err = np.abs(np.asarray(got) - want).max() / np.abs(want).max()
    assert err < (0.05 if mode == "mxfp8" else 0.3)
    # equal to the product of the dequantized operands (the quantization is the only error)
    ql, sl = _quantize(jnp.asarray(lhs), configs[0])
    qr, sr = _quantize(jnp.asarray(rhs), configs[1])
    if mode == "mxfp8":
        deq = lambda q, s: np.asarray(q, np.float64) * np.repeat(np.asarray(s, np.float64), 32, -1)  # noqa: E731
        np.testing.assert_allclose(
            np.asarray(got), np.einsum("bmk,bnk->bmn", deq(ql, sl), deq(qr, sr)), rtol=2e-5, atol=1e-4
        )


def test_dimension_numbers_without_batch_and_gradients():
    rng = np.random.default_rng(3)
    # every axis a multiple of the block size: the gradients contract over the kept axes
    lhs, rhs = rng.normal(size=(64, 32)).astype(np.float32), rng.normal(size=(96, 64)).astype(np.float32)
    dn = (((0,), (1,)), ((), ()))
    configs = [nn.get_scaled_dot_general_config("mxfp8")] * 3
    out = nn.scaled_dot_general(lhs, rhs, dn, configs=configs)
    assert out.shape == (32, 96)
    exact = lhs.T @ rhs.T
    np.testing.assert_allclose(np.asarray(out), exact, atol=0.05 * np.abs(exact).max())
    f = lambda a, b: jnp.sum(nn.scaled_dot_general(a, b, dn, configs=configs) ** 2)  # noqa: E731
    ga, gb = morphax.grad(f, argnums=(0, 1))(lhs, rhs)
    g = 2 * exact
    want_a, want_b = rhs.T @ g.T, g.T @ lhs.T
    assert ga.shape == lhs.shape and gb.shape == rhs.shape
    np.testing.assert_allclose(np.asarray(ga), want_a, atol=0.1 * np.abs(want_a).max())
    np.testing.assert_allclose(np.asarray(gb), want_b, atol=0.1 * np.abs(want_b).max())
    plain = nn.scaled_dot_general(lhs, rhs, dn)  # no configs: lax.dot_general
    np.testing.assert_allclose(np.asarray(plain), exact, rtol=1e-5, atol=1e-5)
    jitted = morphax.jit(lambda a, b: nn.scaled_dot_general(a, b, dn, configs=configs))(lhs, rhs)
    # The same quantized operands; the jitted product is a BLAS call on transposed operands, the
    # eager one NumPy's on copies: OpenBLAS may order the sums differently (1 ulp on AVX2 hosts).
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(out), rtol=1e-6, atol=1e-6)


def test_configs_and_errors():
    cfg = nn.get_scaled_dot_general_config("nvfp4", jnp.array([0.5], jnp.float32))
    assert (cfg.mode, cfg.block_size) == ("nvfp4", 16) and float(cfg.global_scale[0]) == 0.5
    with pytest.raises(ValueError, match="Unsupported mode"):
        nn.get_scaled_dot_general_config("int8")
    with pytest.raises(TypeError, match="preferred_element_type"):
        nn.scaled_dot_general(
            np.ones((1, 2, 32), np.float32), np.ones((1, 2, 32), np.float32), (((2,), (2,)), ((0,), (0,))),
            preferred_element_type=jnp.int32, configs=[cfg] * 3,
        )  # fmt: skip
