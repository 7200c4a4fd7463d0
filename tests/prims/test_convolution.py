"""conv_general_dilated against a direct NumPy loop (one output element at a time) for NCHW/NHWC
layouts, 1-D/2-D/3-D, strides, SAME/VALID/explicit padding, lhs/rhs dilation, feature and batch
groups; its derivatives (check_grads, both operands), vmap against a loop, jit against eager, the
wrappers (conv, conv_with_general_padding, conv_transpose, patches) and bad-input errors."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

import morphax
from morphax import lax
from morphax.test_util import check_grads

RNG = np.random.default_rng(7)


def _rand(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _canon(x, spec, spatial_order):
    """Transpose `x` from layout string `spec` to (batch/out, feature/in, *spatial in kernel order)."""
    first, second = ("O", "I") if "O" in spec else ("N", "C")
    return np.transpose(x, [spec.index(first), spec.index(second)] + [spec.index(c) for c in spatial_order])


def _same_pads(in_sp, k_eff, strides, lower=False):
    pads = []
    for n, k, s in zip(in_sp, k_eff, strides):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        small, big = total // 2, total - total // 2
        pads.append((big, small) if lower else (small, big))
    return pads


def conv_loop(lhs, rhs, strides, padding, lhs_dil=None, rhs_dil=None, dn=None, fg=1, bg=1):
    """The textbook definition, one output element at a time, in float64."""
    nsp = lhs.ndim - 2
    dn = dn or ("NC" + "HWD"[:nsp], "OI" + "HWD"[:nsp], "NC" + "HWD"[:nsp])
    order = [c for c in dn[1] if c not in "OI"]
    x = _canon(lhs.astype(np.float64), dn[0], order)
    w = _canon(rhs.astype(np.float64), dn[1], order)
    lhs_dil = lhs_dil or (1,) * nsp
    rhs_dil = rhs_dil or (1,) * nsp
    n, c = x.shape[:2]
    o, i = w.shape[:2]
    in_sp, k_sp = x.shape[2:], w.shape[2:]
    k_eff = [(k - 1) * r + 1 for k, r in zip(k_sp, rhs_dil)]
    if isinstance(padding, str):
        if padding == "VALID":
            padding = [(0, 0)] * nsp
        else:
            padding = _same_pads(in_sp, k_eff, strides, lower=padding == "SAME_LOWER")
    dil_sp = [(d - 1) * a + 1 for d, a in zip(in_sp, lhs_dil)]
    out_sp = [
        max(0, (d + lo + hi - k) // s + 1) for d, (lo, hi), k, s in zip(dil_sp, padding, k_eff, strides)
    ]
    nb = n // bg
    out = np.zeros((nb, o) + tuple(out_sp))
    og = o // (fg * bg)
    for b, f in itertools.product(range(nb), range(o)):
        g = f // og  # the feature (or batch) group this output feature belongs to
        src_n = g * nb + b if bg > 1 else b
        for pos in itertools.product(*map(range, out_sp)):
            acc = 0.0
            for ci in range(i):
                src_c = g * i + ci if fg > 1 else ci
                for kpos in itertools.product(*map(range, k_sp)):
                    idx = []
                    for p, k, s, r, (lo, _), a, size in zip(
                        pos, kpos, strides, rhs_dil, padding, lhs_dil, in_sp
                    ):
                        q = p * s + k * r - lo  # position in the dilated input
                        if q < 0 or q % a or q // a >= size:
                            break
                        idx.append(q // a)
                    else:
                        acc += x[(src_n, src_c) + tuple(idx)] * w[(f, ci) + kpos]
            out[(b, f) + pos] = acc
    out_order = [dn[2].index("N"), dn[2].index("C")] + [dn[2].index(ch) for ch in order]
    return np.transpose(out, np.argsort(out_order))


# name, lhs shape, rhs shape, strides, padding, keyword arguments of conv_general_dilated
CASES = [
    ("nchw-valid", (2, 3, 6, 5), (4, 3, 3, 2), (1, 1), "VALID", {}),
    ("nchw-same-stride2", (2, 3, 7, 6), (4, 3, 3, 3), (2, 2), "SAME", {}),
    ("nchw-same-lower", (1, 2, 6, 5), (3, 2, 2, 2), (1, 2), "SAME_LOWER", {}),
    ("nchw-explicit", (2, 2, 5, 5), (3, 2, 3, 2), (2, 1), [(1, 2), (0, 1)], {}),
    ("nchw-negative-pad", (1, 2, 6, 6), (2, 2, 2, 2), (1, 1), [(-1, 1), (2, -2)], {}),
    (
        "nhwc-same",
        (2, 6, 5, 3),
        (3, 3, 3, 4),
        (1, 1),
        "SAME",
        dict(dimension_numbers=("NHWC", "HWIO", "NHWC")),
    ),
    (
        "nhwc-stride-rhs-dilation",
        (2, 7, 7, 2),
        (2, 3, 2, 3),
        (2, 1),
        [(1, 1), (2, 0)],
        dict(dimension_numbers=("NHWC", "HWIO", "NHWC"), rhs_dilation=(2, 3)),
    ),
    ("nchw-lhs-dilation", (1, 2, 4, 3), (2, 2, 3, 3), (1, 1), [(2, 2), (1, 1)], dict(lhs_dilation=(2, 3))),
    (
        "nchw-both-dilations-stride",
        (2, 1, 5, 4),
        (2, 1, 2, 3),
        (2, 3),
        [(1, 0), (0, 2)],
        dict(lhs_dilation=(2, 1), rhs_dilation=(1, 2)),
    ),
    ("1d-nch", (3, 2, 9), (4, 2, 3), (2,), "SAME", {}),
    ("1d-nwc", (2, 8, 3), (3, 3, 5), (1,), [(2, 1)], dict(dimension_numbers=("NWC", "WIO", "NWC"))),
    (
        "depthwise-nhwc",
        (2, 5, 5, 3),
        (3, 3, 1, 6),
        (1, 1),
        "SAME",
        dict(dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=3),
    ),
    ("groups-nchw", (2, 4, 5, 4), (6, 2, 2, 2), (1, 2), "VALID", dict(feature_group_count=2)),
    ("batch-groups", (4, 3, 5, 4), (6, 3, 2, 2), (1, 1), "VALID", dict(batch_group_count=2)),
    (
        "mixed-layouts",
        (5, 2, 2, 4),
        (2, 3, 3, 2),
        (1, 1),
        "SAME",
        dict(dimension_numbers=("HNCW", "IHWO", "NWHC")),
    ),
    ("3d", (1, 2, 4, 3, 4), (2, 2, 2, 2, 3), (1, 2, 1), "SAME", {}),
]


def _call(lhs, rhs, strides, padding, kw):
    return lax.conv_general_dilated(lhs, rhs, strides, padding, **kw)


def _loop(lhs, rhs, strides, padding, kw):
    return conv_loop(
        lhs, rhs, strides, padding, kw.get("lhs_dilation"), kw.get("rhs_dilation"), kw.get("dimension_numbers"),
        kw.get("feature_group_count", 1), kw.get("batch_group_count", 1),
    )  # fmt: skip


@pytest.mark.parametrize("name,ls,rs,strides,padding,kw", CASES, ids=[c[0] for c in CASES])
def test_matches_direct_loop(name, ls, rs, strides, padding, kw):
    lhs, rhs = _rand(ls), _rand(rs)
    got = _call(lhs, rhs, strides, padding, kw)
    want = _loop(lhs, rhs, strides, padding, kw)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    # Shape helper agrees; integer operands accumulate exactly.
    li, ri = RNG.integers(-5, 6, ls).astype(np.int32), RNG.integers(-5, 6, rs).astype(np.int32)
    np.testing.assert_array_equal(
        np.asarray(_call(li, ri, strides, padding, kw)), _loop(li, ri, strides, padding, kw)
    )


@pytest.mark.parametrize("name,ls,rs,strides,padding,kw", CASES, ids=[c[0] for c in CASES])
def test_grads_first_order(name, ls, rs, strides, padding, kw):
    with morphax.enable_x64():
        lhs, rhs = _rand(ls, np.float64), _rand(rs, np.float64)
        check_grads(lambda x, w: _call(x, w, strides, padding, kw), (lhs, rhs), order=1, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("index", [0, 6, 8, 11, 13])
def test_grads_second_order(index):
    _, ls, rs, strides, padding, kw = CASES[index]
    with morphax.enable_x64():
        lhs, rhs = _rand(ls, np.float64), _rand(rs, np.float64)
        check_grads(lambda x, w: _call(x, w, strides, padding, kw), (lhs, rhs), order=2, atol=1e-6, rtol=1e-6)
        # Each operand alone, as in a network layer (the other closed over).
        check_grads(lambda x: _call(x, rhs, strides, padding, kw), (lhs,), order=2, atol=1e-6, rtol=1e-6)
        check_grads(lambda w: _call(lhs, w, strides, padding, kw), (rhs,), order=2, atol=1e-6, rtol=1e-6)


def test_gradient_of_a_sum_is_a_correlation():
    # d/dx sum(conv(x, w)) at each input position is the sum of the kernel taps that reach it.
    x, w = _rand((1, 1, 4)), _rand((1, 1, 2))
    g = morphax.grad(lambda x: lax.conv_general_dilated(x, w, (1,), "VALID").sum())(x)
    want = np.array([w[0, 0, 0], w[0, 0, 0] + w[0, 0, 1], w[0, 0, 0] + w[0, 0, 1], w[0, 0, 1]])
    np.testing.assert_allclose(np.asarray(g)[0, 0], want, rtol=1e-6)


VMAP_CASES = [0, 3, 5, 7, 11, 12, 13, 14]


@pytest.mark.parametrize("index", VMAP_CASES, ids=[CASES[i][0] for i in VMAP_CASES])
@pytest.mark.parametrize("axes", [(0, None), (None, 0), (0, 0), (2, 1), (-1, None), (None, -1)])
def test_vmap_matches_loop(index, axes):
    _, ls, rs, strides, padding, kw = CASES[index]
    b = 3
    lhs = _rand(ls) if axes[0] is None else np.stack([_rand(ls) for _ in range(b)], axes[0])
    rhs = _rand(rs) if axes[1] is None else np.stack([_rand(rs) for _ in range(b)], axes[1])

    def f(x, w):
        return _call(x, w, strides, padding, kw)

    got = morphax.vmap(f, in_axes=axes)(lhs, rhs)
    want = np.stack(
        [
            np.asarray(f(lhs if axes[0] is None else np.take(lhs, k, axes[0]),
                         rhs if axes[1] is None else np.take(rhs, k, axes[1])))
            for k in range(b)
        ]
    )  # fmt: skip
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_per_example_gradients_and_vmap_of_grad():
    with morphax.enable_x64():
        x = _rand((4, 2, 5, 5), np.float64)
        w = _rand((3, 2, 3, 3), np.float64)

        def loss(w, xi):
            y = lax.conv_general_dilated(xi[None], w, (1, 1), "SAME", feature_group_count=1)
            return (y**2).sum()

        got = morphax.vmap(morphax.grad(loss), in_axes=(None, 0))(w, x)
        want = np.stack([np.asarray(morphax.grad(loss)(w, x[k])) for k in range(4)])
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)
        # Reverse-over-vmap: the batched conv's transposes.
        g = morphax.grad(lambda w: morphax.vmap(lambda xi: loss(w, xi))(x).sum())(w)
        np.testing.assert_allclose(np.asarray(g), want.sum(0), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("index", [0, 5, 11, 13])
def test_jit_matches_eager(index):
    _, ls, rs, strides, padding, kw = CASES[index]
    lhs, rhs = _rand(ls), _rand(rs)

    def f(x, w):
        return _call(x, w, strides, padding, kw)

    # Not bit for bit: the jitted convolution is im2col + one BLAS GEMM, the eager one NumPy's
    # products over other operand layouts, and OpenBLAS's kernels (on AVX2 hosts, its Haswell
    # small-matrix paths) may sum the same products in another order: a few ulp apart.
    want = np.asarray(f(lhs, rhs))
    np.testing.assert_allclose(
        np.asarray(morphax.jit(f)(lhs, rhs)), want, rtol=1e-5, atol=1e-6 * np.abs(want).max()
    )
    g = morphax.grad(lambda x, w: f(x, w).sum(), argnums=(0, 1))
    for a, e in zip(morphax.jit(g)(lhs, rhs), g(lhs, rhs)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-6, atol=1e-6)


def test_dtypes_and_preferred_element_type():
    x = np.full((1, 1, 4), 100, np.int8)
    w = np.ones((1, 1, 2), np.int8)
    assert np.asarray(lax.conv_general_dilated(x, w, (1,), "VALID")).tolist() == [[[-56, -56, -56]]]  # wraps
    wide = lax.conv_general_dilated(x, w, (1,), "VALID", preferred_element_type=np.int32)
    assert wide.dtype == np.int32 and np.asarray(wide).tolist() == [[[200, 200, 200]]]
    b = lax.conv_general_dilated(
        np.array([[[True, False, False]]]), np.array([[[True, True]]]), (1,), "VALID"
    )
    assert b.dtype == np.bool_ and np.asarray(b).tolist() == [[[True, False]]]
    import ml_dtypes

    bf = np.dtype(ml_dtypes.bfloat16)
    xb, wb = _rand((1, 2, 5)).astype(bf), _rand((2, 2, 3)).astype(bf)
    out = lax.conv_general_dilated(xb, wb, (1,), "SAME", preferred_element_type=np.float32)
    assert out.dtype == np.float32
    want = conv_loop(xb.astype(np.float32), wb.astype(np.float32), (1,), "SAME")
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6, atol=1e-6)
    # The cotangent of a bfloat16 operand is bfloat16 even when the output was float32.
    g = morphax.grad(
        lambda a: lax.conv_general_dilated(a, wb, (1,), "SAME", preferred_element_type=np.float32).sum()
    )
    assert g(xb).dtype == bf


def test_wrappers():
    x, w = _rand((2, 3, 6, 5)), _rand((4, 3, 3, 2))
    np.testing.assert_allclose(np.asarray(lax.conv(x, w, (1, 2), "SAME")), conv_loop(x, w, (1, 2), "SAME"),
                               rtol=1e-5, atol=1e-5)  # fmt: skip
    got = lax.conv_with_general_padding(x, w, (2, 1), [(1, 1), (0, 2)], (1, 2), (2, 1))
    want = conv_loop(x, w, (2, 1), [(1, 1), (0, 2)], (1, 2), (2, 1))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    dn = lax.conv_dimension_numbers(x.shape, w.shape, ("NHWC", "HWIO", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert lax.conv_dimension_numbers(x.shape, w.shape, None) == ((0, 1, 2, 3),) * 3
    assert lax.padtype_to_pads((7, 6), (3, 3), (2, 2), "SAME") == [(1, 1), (0, 1)]
    assert lax.padtype_to_pads((6,), (4,), (1,), "SAME_LOWER") == [(2, 1)]
    assert lax.conv_general_shape_tuple((2, 5, 6, 3), (3, 3, 3, 4), (1, 1), "SAME", ("NHWC", "HWIO", "NHWC")) == (
        2, 5, 6, 4,
    )  # fmt: skip


def test_conv_transpose_is_the_gradient_of_conv():
    # With transpose_kernel, conv_transpose applies the transpose of the strided conv (Keras
    # Conv2DTranspose): <conv(x, w), y> == <x, conv_transpose(y, w)>.
    dn = ("NHWC", "HWIO", "NHWC")
    x, w = _rand((2, 8, 8, 3)), _rand((3, 3, 3, 4))
    y = lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=dn)
    ct = _rand(y.shape)
    back = lax.conv_transpose(ct, w, (2, 2), "SAME", dimension_numbers=dn, transpose_kernel=True)
    assert back.shape == x.shape
    _, pullback = morphax.vjp(
        lambda x: lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=dn), x
    )
    np.testing.assert_allclose(np.asarray(back), np.asarray(pullback(ct)[0]), rtol=1e-5, atol=1e-5)


def test_conv_general_dilated_patches():
    x = _rand((2, 3, 5, 4))
    p = lax.conv_general_dilated_patches(x, (2, 3), (1, 1), "VALID")
    assert p.shape == (2, 3 * 6, 4, 2)
    p = np.asarray(p).reshape(2, 3, 2, 3, 4, 2)  # (N, C, kh, kw, H, W)
    for i, j, a, b in itertools.product(range(2), range(3), range(4), range(2)):
        np.testing.assert_array_equal(p[:, :, i, j, a, b], x[:, :, a + i, b + j])


def test_errors():
    x, w = _rand((1, 2, 5)), _rand((3, 2, 2))
    with pytest.raises(TypeError, match="same dtypes"):
        lax.conv_general_dilated(x, w.astype(np.float16), (1,), "VALID")
    with pytest.raises(ValueError, match="feature_group_count"):
        lax.conv_general_dilated(x, w, (1,), "VALID", feature_group_count=2)
    with pytest.raises(ValueError, match="batch_group_count"):
        lax.conv_general_dilated(x, w, (1,), "VALID", batch_group_count=2)
    with pytest.raises(ValueError, match="window_strides"):
        lax.conv_general_dilated(x, w, (1, 1), "VALID")
    with pytest.raises(TypeError, match="exactly once"):
        lax.conv_general_dilated(x, w, (1,), "VALID", dimension_numbers=("NNW", "OIW", "NCW"))
    with pytest.raises(TypeError, match="ndim to be equal"):
        lax.conv_general_dilated(x, w[0], (1,), "VALID")
    with pytest.raises(ValueError, match="String padding is not implemented"):
        lax.conv_general_dilated(x, w, (1,), "SAME", lhs_dilation=(2,))
    with pytest.raises(ValueError, match="Unknown padding"):
        lax.conv_general_dilated(x, w, (1,), "FULL")


def test_matches_jax_on_random_configurations():
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(3)
    for _ in range(4):  # each configuration compiles in JAX (seconds)
        nsp = int(rng.integers(1, 3))
        fg = int(rng.choice([1, 1, 2]))
        bg = 1 if fg > 1 else int(rng.choice([1, 2]))
        i, og, nb = (int(v) for v in rng.integers(1, 3, 3))
        ls = (nb * bg, i * fg) + tuple(int(v) for v in rng.integers(3, 7, nsp))
        rs = (og * fg * bg, i) + tuple(int(v) for v in rng.integers(1, 4, nsp))
        kw = dict(
            lhs_dilation=tuple(int(v) for v in rng.integers(1, 3, nsp)),
            rhs_dilation=tuple(int(v) for v in rng.integers(1, 3, nsp)),
            feature_group_count=fg,
            batch_group_count=bg,
        )
        strides = tuple(int(v) for v in rng.integers(1, 3, nsp))
        pads = [tuple(int(v) for v in rng.integers(-1, 3, 2)) for _ in range(nsp)]
        x, w = _rand(ls), _rand(rs)
        try:
            want = jax.lax.conv_general_dilated(x, w, strides, pads, **kw)
        except Exception:  # noqa: BLE001 - configurations JAX rejects (e.g. over-cropping padding)
            continue
        got = lax.conv_general_dilated(x, w, strides, pads, **kw)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
        if 0 in want.shape:
            continue
        ct = _rand(want.shape)
        jg = jax.vjp(
            functools.partial(jax.lax.conv_general_dilated, window_strides=strides, padding=pads, **kw), x, w
        )
        mg = morphax.vjp(
            functools.partial(lax.conv_general_dilated, window_strides=strides, padding=pads, **kw), x, w
        )
        for a, b in zip(mg[1](ct), jg[1](ct)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-4)
