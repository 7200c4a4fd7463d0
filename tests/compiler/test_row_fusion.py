"""Row fusion (compiler/row_fusion.py): consecutive row-wise kernels over the same rows run as one
loop over the rows. The same bits as the kernels run one after the other (row fusion off), for
reductions of every kind and dtype with NaN and infinities in the rows; kernels that read another
member's rows out of place, or write a donated input's buffer, stay out of the group."""

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.compiler import compile as compile_mod
from morphax._src.compiler import row_fusion, segments
from morphax._src.compiler.backends import get_backend

pytestmark = pytest.mark.skipif(not get_backend("c").available(), reason="no working C compiler")

RNG = np.random.default_rng(7)


def _fresh_compile(monkeypatch):
    monkeypatch.setattr(compile_mod, "_generation", compile_mod._generation + 1)


def _compiled(f, *args):
    return morphax.jit(f, backend="c").lower(*args).compile()


def _groups(compiled) -> list:
    """The kernels of each row group, as the generated C's comment lists them."""
    text = compiled.as_text()
    out = []
    for block in text.split("row by row over")[1:]:
        header = block.split("*/")[0]
        out.append([ln.split(":")[0].strip(" *") for ln in header.splitlines() if ln.endswith(": fuses")])
    return out


def _with_and_without_rows(monkeypatch, f, *args):
    """(compiled with row fusion, its outputs, the outputs with row fusion off)."""
    fused = _compiled(f, *args)
    got = fused(*args)
    monkeypatch.setattr(segments, "row_groups", lambda steps, excluded=frozenset(): [])
    _fresh_compile(monkeypatch)
    apart = _compiled(f, *args)
    assert not _groups(apart)
    want = apart(*args)
    monkeypatch.undo()
    _fresh_compile(monkeypatch)
    return fused, got, want


def _assert_same_bits(got, want):
    for g, w in zip(morphax.tree_util.tree_leaves(got), morphax.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g.reshape(-1).view(np.uint8), w.reshape(-1).view(np.uint8))


def _with_specials(x):
    x = x.copy()
    if x.dtype.kind == "f":
        x[1, 5] = np.nan
        x[2, :] = -np.inf
        x[3, 7] = np.inf
        x[4, 9] = -0.0
    return x


def _xent(logits, labels):
    return -jnp.mean(jnp.sum(_log_softmax(logits) * labels, axis=-1))


def _log_softmax(x):
    return x - morphax.nn.logsumexp(x, axis=1, keepdims=True)


def _layer_norm(x, g, b):
    mean = jnp.mean(x, axis=1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5) * g + b


def _int_rows(x):
    top = jnp.max(x, axis=1, keepdims=True)
    where = jnp.argmax(x, axis=1)
    low = jnp.min(x - top, axis=1)
    return where, low, (x - top) * 3 + jnp.sum(x, axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_value_and_grad_runs_as_one_row_group(monkeypatch, dtype):
    logits = _with_specials((RNG.standard_normal((512, 300)) * 3).astype(dtype))
    labels = np.eye(300, dtype=dtype)[RNG.integers(0, 300, 512)]
    vg = morphax.value_and_grad(_xent)
    fused, got, want = _with_and_without_rows(monkeypatch, vg, logits, labels)
    (group,) = _groups(fused)
    assert len(group) == fused.num_kernels - 1, fused.as_text()  # all but the scalar mean
    _assert_same_bits(got, want)
    clean = logits[5:]
    value, grad = vg(clean, labels[5:])
    shifted = clean - clean.max(1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    np.testing.assert_allclose(float(value), -np.mean(np.sum(logp * labels[5:], 1)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(grad), (np.exp(logp) - labels[5:]) / len(clean), atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_rows_same_bits(monkeypatch, dtype):
    x = _with_specials(RNG.standard_normal((256, 384)).astype(dtype))
    g, b = (RNG.standard_normal(384).astype(dtype) for _ in range(2))
    fused, got, want = _with_and_without_rows(monkeypatch, _layer_norm, x, g, b)
    assert _groups(fused), fused.as_text()
    _assert_same_bits(got, want)
    mean = x[5:].mean(1, keepdims=True)
    ref = (x[5:] - mean) / np.sqrt(((x[5:] - mean) ** 2).mean(1, keepdims=True) + 1e-5) * g + b
    np.testing.assert_allclose(np.asarray(got)[5:], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_integer_max_argmax_min_sum_rows_same_bits(monkeypatch, dtype):
    x = RNG.integers(0, 100, (300, 257)).astype(dtype)
    fused, got, want = _with_and_without_rows(monkeypatch, _int_rows, x)
    assert _groups(fused), fused.as_text()
    _assert_same_bits(got, want)
    np.testing.assert_array_equal(np.asarray(got[0]), np.argmax(x, 1))


def test_a_kernel_reading_another_row_stays_out_of_the_group(monkeypatch):
    """The second kernel reads the row sums in reverse row order: row i needs row R-1-i, which a
    row group would not have computed yet. The third reads the second's rows in place: those two
    run as a group, the first (the sums) before it."""
    x = RNG.standard_normal((300, 400)).astype(np.float32)

    def f(x):
        s = jnp.sum(jnp.exp(x), axis=1)
        out = x * jnp.flip(s)[:, None]
        return out - jnp.max(out, axis=1, keepdims=True)

    fused, got, want = _with_and_without_rows(monkeypatch, f, x)
    _assert_same_bits(got, want)
    flipped = np.exp(x.astype(np.float64)).sum(1)[::-1]
    out = x * flipped[:, None]
    np.testing.assert_allclose(np.asarray(got), out - out.max(1, keepdims=True), rtol=1e-5, atol=1e-3)
    (group,) = _groups(fused)
    assert len(group) == 2 and fused.num_kernels == 3, fused.as_text()
    first = fused.as_text().split(": fuses")[0].rsplit("/* ", 1)[1]
    assert first not in group  # the kernel computing the sums


def test_a_kernel_writing_a_donated_buffer_stays_out_of_the_group():
    """`out` may take the donated `x`'s buffer (it runs after x's last reader); in a row group it
    would overwrite rows of x the row sums of the reversed x still have to read."""
    f = morphax.jit(lambda x, y: jnp.exp(y) + jnp.sum(jnp.flip(x, 0), axis=1)[:, None], donate_argnums=0)
    x_host = RNG.standard_normal((512, 300)).astype(np.float32)
    y = RNG.standard_normal((512, 300)).astype(np.float32)
    want = np.exp(y) + x_host[::-1].astype(np.float64).sum(1)[:, None]
    for _ in range(3):
        x = (jnp.asarray(x_host) * 1.0).block_until_ready()
        np.testing.assert_allclose(np.asarray(f(x, y)), want, rtol=1e-5, atol=1e-5)


def test_cluster_moves_a_kernel_past_an_independent_step():
    """The gradient's elementwise pass comes after the scalar mean in program order; it joins the
    row sums' group because it does not read the mean."""
    logits = RNG.standard_normal((512, 300)).astype(np.float32)
    labels = np.eye(300, dtype=np.float32)[RNG.integers(0, 300, 512)]
    fused = _compiled(morphax.value_and_grad(_xent), logits, labels)
    (group,) = _groups(fused)
    assert len(group) >= 4


def test_short_rows_and_single_rows_are_not_grouped():
    x = RNG.standard_normal((4000, 8)).astype(np.float32)
    assert not _groups(_compiled(_log_softmax, x))  # rows too short to pay
    y = RNG.standard_normal((1, 5000)).astype(np.float32)
    assert not _groups(_compiled(_log_softmax, y))
    assert row_fusion.MIN_ROW_ELEMENTS > 8


def test_kernels_sharing_no_buffer_are_not_grouped(monkeypatch):
    """Two row-wise kernels over the same 300 rows that read different inputs: interleaving their
    rows would save no memory traffic, so each keeps its own loops."""
    x = RNG.standard_normal((300, 400)).astype(np.float32)
    y = RNG.standard_normal((300, 500)).astype(np.float32)

    def f(x, y):
        return jnp.sum(jnp.sin(x), axis=1), jnp.exp(y) * 2.0

    fused, got, want = _with_and_without_rows(monkeypatch, f, x, y)
    assert fused.num_kernels == 2 and not _groups(fused), fused.as_text()
    _assert_same_bits(got, want)
    np.testing.assert_allclose(np.asarray(got[1]), np.exp(y) * 2.0, rtol=1e-6)
