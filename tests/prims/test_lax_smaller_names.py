"""The smaller `jax.lax` names: dot algorithms (accepted as dot precisions), ragged dots (three
modes), the unshared convolution, tokens, sharding/composite/platform/stage/dce_sink utilities and
the extra named-axis collectives (pbroadcast, pswapaxes, pcast, psend/precv, ragged_all_to_all).

Oracles are NumPy loops written here; derivatives go through check_grads (finite differences);
vmap is compared with a Python loop and jit with eager. JAX, when installed, is an extra oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax, vmap
from morphax._src.core.primitive import registry
from morphax._src.passes.dce import dce
from morphax._src.prims.tokens import Token
from morphax.test_util import check_grads

RNG = np.random.default_rng(0)

NEW_NAMES = (
    "custom_linear_solve custom_root ragged_dot ragged_dot_general RaggedDotDimensionNumbers "
    "conv_general_dilated_local DotAlgorithm DotAlgorithmPreset DotDimensionNumbers PrecisionLike after_all "
    "create_token with_sharding_constraint composite platform_dependent dce_sink stage pbroadcast pcast "
    "pswapaxes psend precv ragged_all_to_all"
).split()


def _rand(shape, dtype=np.float32, seed=None):
    rng = RNG if seed is None else np.random.default_rng(seed)
    return rng.normal(size=shape).astype(dtype)


def close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(
        np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol
    )


def test_names_exist():
    missing = [n for n in NEW_NAMES if not hasattr(lax, n)]
    assert not missing


# ------------------------------------------------------------------------------- dot algorithms

PRESETS = (
    "DEFAULT ANY_F8_ANY_F8_F32 ANY_F8_ANY_F8_F32_FAST_ACCUM ANY_F8_ANY_F8_ANY ANY_F8_ANY_F8_ANY_FAST_ACCUM "
    "F16_F16_F16 F16_F16_F32 BF16_BF16_BF16 BF16_BF16_F32 BF16_BF16_F32_X3 BF16_BF16_F32_X6 BF16_BF16_F32_X9 "
    "TF32_TF32_F32 TF32_TF32_F32_X3 F32_F32_F32 F64_F64_F64"
).split()


def test_preset_members_and_properties():
    assert list(lax.DotAlgorithmPreset.__members__) == PRESETS
    p = lax.DotAlgorithmPreset.F16_F16_F32
    assert repr(p) == "DotAlgorithmPreset.F16_F16_F32" and str(p) == "F16_F16_F32"
    assert p.accumulation_type is np.float32 and p.supported_lhs_types == (np.float16,)
    assert p.supported_output_types(np.float16, np.float16) == (np.float32, np.float16)
    assert p.supported_output_types(np.float32, np.float32) == (np.float32,)
    assert lax.DotAlgorithmPreset.DEFAULT.accumulation_type is None
    a = lax.DotAlgorithm(np.float16, np.float16, np.float32)
    assert a.lhs_component_count == 1 and a.allow_imprecise_accumulation is False
    hash(a)


@pytest.mark.parametrize(
    "precision",
    [
        lax.DotAlgorithmPreset.F32_F32_F32,
        "BF16_BF16_F32",
        "DEFAULT",
        lax.DotAlgorithm(np.float32, np.float32, np.float32),
    ],
    ids=str,
)
def test_dot_general_accepts_algorithms(precision):
    x, y = _rand((2, 3)), _rand((3, 4))
    dn = (((1,), (0,)), ((), ()))
    out = lax.dot_general(x, y, dn, precision=precision)
    close(out, x @ y)
    assert out.dtype == np.float32
    close(lax.dot(x, y, precision=precision), x @ y)
    close(morphax.jit(lambda a, b: lax.dot(a, b, precision=precision))(x, y), x @ y)
    close(vmap(lambda a: lax.dot(a, y, precision=precision))(x), x @ y)
    jaxpr = str(morphax.make_jaxpr(lambda a, b: lax.dot(a, b, precision=precision))(x, y))
    assert "precision=" in jaxpr
    check_grads(lambda a, b: lax.dot(a, b, precision=precision), (x, y), order=2)


def test_precision_like_and_dimension_numbers_aliases():
    assert lax.DotAlgorithmPreset in lax.PrecisionLike.__args__
    assert lax.Precision in lax.PrecisionLike.__args__
    assert lax.DotDimensionNumbers.__origin__ is tuple
    with pytest.raises(ValueError):
        lax.dot(np.ones(3), np.ones(3), precision="f32_f32_f32")


# ------------------------------------------------------------------------------------ ragged dot


def ragged_ref(lhs, rhs, gs):
    out = np.zeros((lhs.shape[0], rhs.shape[2]), np.float64)
    start = 0
    for i, c in enumerate(gs):
        stop = min(start + int(c), lhs.shape[0])
        out[start:stop] = lhs[start:stop].astype(np.float64) @ rhs[i].astype(np.float64)
        start = stop
    return out


GROUPS = ([2, 1, 3], [0, 4, 3], [7, 0, 0], [1, 1, 1], [5, 4, 3], [0, 0, 0])


@pytest.mark.parametrize("gs", GROUPS, ids=str)
def test_ragged_dot_vs_loop(gs):
    lhs, rhs = _rand((7, 3)), _rand((3, 3, 2))
    gs = np.array(gs, np.int32)
    out = lax.ragged_dot(lhs, rhs, gs)
    assert out.shape == (7, 2) and out.dtype == np.float32
    close(out, ragged_ref(lhs, rhs, gs))
    close(morphax.jit(lax.ragged_dot)(lhs, rhs, gs), ragged_ref(lhs, rhs, gs))


def test_ragged_dot_dtypes_and_groups_isolated():
    lhs, rhs, gs = _rand((7, 3)), _rand((3, 3, 2)), np.array([3, 4, 0], np.int32)
    li, ri = (lhs * 3).astype(np.int8), (rhs * 3).astype(np.int8)
    out = lax.ragged_dot(li, ri, gs)
    assert out.dtype == np.int8
    np.testing.assert_array_equal(out, ragged_ref(li, ri, gs).astype(np.int64).astype(np.int8))
    out = lax.ragged_dot(li, ri, gs, preferred_element_type=np.int32)
    assert out.dtype == np.int32
    assert lax.ragged_dot(lhs.astype(jnp.bfloat16), rhs.astype(jnp.bfloat16), gs).dtype == jnp.bfloat16
    # An inf in an empty group's weights reaches no row.
    rhs2 = rhs.copy()
    rhs2[2] = np.inf
    close(lax.ragged_dot(lhs, rhs2, gs), ragged_ref(lhs, rhs, gs))


def test_ragged_dot_grads_vmap():
    lhs, rhs, gs = _rand((7, 3)), _rand((3, 3, 2)), np.array([2, 1, 3], np.int32)
    check_grads(lambda a, b: lax.ragged_dot(a, b, gs), (lhs, rhs), order=2)
    lhs_b, rhs_b = _rand((4, 7, 3)), _rand((4, 3, 3, 2))
    gs_b = np.array([[2, 1, 3], [0, 4, 3], [7, 0, 0], [1, 1, 1]], np.int32)
    got = vmap(lax.ragged_dot)(lhs_b, rhs_b, gs_b)
    close(got, np.stack([ragged_ref(lhs_b[i], rhs_b[i], gs_b[i]) for i in range(4)]))
    got = vmap(lax.ragged_dot, in_axes=(None, 0, None))(lhs, rhs_b, gs)
    close(got, np.stack([ragged_ref(lhs, rhs_b[i], gs) for i in range(4)]))
    got = vmap(lambda g: lax.ragged_dot(lhs, rhs, g))(gs_b)
    close(got, np.stack([ragged_ref(lhs, rhs, g) for g in gs_b]))


R = lax.RaggedDotDimensionNumbers


def test_ragged_general_noncontracting_with_batch_and_outer_dims():
    # [b, m, k] x [g, b, k, n], group_sizes [b, g]
    lhs, rhs = _rand((2, 7, 3)), _rand((3, 2, 3, 4))
    gs = np.array([[2, 1, 3], [0, 4, 3]], np.int32)
    dn = R((((2,), (2,)), ((0,), (1,))), (1,), (0,))
    out = lax.ragged_dot_general(lhs, rhs, gs, dn)
    want = np.stack([ragged_ref(lhs[b], rhs[:, b], gs[b]) for b in range(2)])
    close(out, want)
    close(
        lax.ragged_dot_general(lhs, rhs, gs[0], dn),
        np.stack([ragged_ref(lhs[b], rhs[:, b], gs[0]) for b in range(2)]),
    )
    check_grads(lambda a, b: lax.ragged_dot_general(a, b, gs, dn), (lhs, rhs), order=1)
    # An outer non-contracting dim x: [x, m, k] x [g, k, n], group_sizes [x, g].
    rhs2 = _rand((3, 3, 4))
    dn2 = R((((2,), (1,)), ((), ())), (1,), (0,))
    out = lax.ragged_dot_general(lhs, rhs2, gs, dn2)
    close(out, np.stack([ragged_ref(lhs[x], rhs2, gs[x]) for x in range(2)]))
    # The ragged dim after another free dim of lhs, rhs group dim last.
    lhs3 = _rand((7, 2, 3))
    rhs3 = np.moveaxis(rhs2, 0, 2).copy()  # [k, n, g]
    dn3 = R((((2,), (0,)), ((), ())), (0,), (2,))
    out = lax.ragged_dot_general(lhs3, rhs3, gs[0], dn3)
    want = np.stack([ragged_ref(lhs3[:, j], rhs2, gs[0]) for j in range(2)], axis=1)
    close(out, want)


def test_ragged_general_contracting():
    lhs, rhs = _rand((3, 7)), _rand((7, 2))
    gs = np.array([2, 1, 3], np.int32)
    dn = R((((1,), (0,)), ((), ())), (1,), ())
    out = lax.ragged_dot_general(lhs, rhs, gs, dn)
    assert out.shape == (3, 3, 2)
    start = 0
    for i, c in enumerate(gs):
        close(out[i], lhs[:, start : start + c].astype(np.float64) @ rhs[start : start + c])
        start += c
    check_grads(lambda a, b: lax.ragged_dot_general(a, b, gs, dn), (lhs, rhs), order=2)
    # With a batch dim and per-batch groups: [b, m, k] x [b, k, n] -> [g, b, m, n].
    lhs_b, rhs_b = _rand((2, 3, 7)), _rand((2, 7, 2))
    gs_b = np.array([[2, 1, 3], [7, 0, 0]], np.int32)
    dn_b = R((((2,), (1,)), ((0,), (0,))), (2,), ())
    out = lax.ragged_dot_general(lhs_b, rhs_b, gs_b, dn_b)
    assert out.shape == (3, 2, 3, 2)
    for b in range(2):
        start = 0
        for i, c in enumerate(gs_b[b]):
            close(out[i, b], lhs_b[b][:, start : start + c].astype(np.float64) @ rhs_b[b][start : start + c])
            start += c
    got = vmap(lambda a, b, g: lax.ragged_dot_general(a, b, g, dn), out_axes=1)(lhs_b[:, :, :7], rhs_b, gs_b)
    close(got, out)


def test_ragged_general_batch_mode_is_dot_general():
    lhs, rhs = _rand((5, 3, 4)), _rand((5, 4, 2))
    dn = R((((2,), (1,)), ((0,), (0,))), (0,), ())
    close(
        lax.ragged_dot_general(lhs, rhs, np.array([2, 1], np.int32), dn), np.einsum("bmk,bkn->bmn", lhs, rhs)
    )


def test_ragged_errors():
    lhs, rhs = _rand((7, 3)), _rand((3, 3, 2))
    with pytest.raises(TypeError, match="group_sizes.dtype is subtype of np.integer"):
        lax.ragged_dot(lhs, rhs, np.ones(3, np.float32))
    with pytest.raises(TypeError, match="expected rhs group dimension size to be 2, got 3"):
        lax.ragged_dot(lhs, rhs, np.ones(2, np.int32))
    with pytest.raises(TypeError, match="expected group_sizes to have shape"):
        lax.ragged_dot(lhs, rhs, np.ones((2, 3), np.int32))
    with pytest.raises(TypeError, match="exactly one rhs group dimension"):
        lax.ragged_dot_general(lhs, rhs[0], np.ones(3, np.int32), R((((1,), (0,)), ((), ())), (0,), ()))
    with pytest.raises(NotImplementedError, match="group_offset"):
        lax.ragged_dot(lhs, rhs, np.ones(3, np.int32), group_offset=np.array([1]))


def test_ragged_jax_oracle():
    jax = pytest.importorskip("jax")
    lhs, rhs = _rand((2, 7, 3)), _rand((3, 2, 3, 4))
    gs = np.array([[2, 1, 3], [0, 4, 3]], np.int32)
    dn = R((((2,), (2,)), ((0,), (1,))), (1,), (0,))
    jdn = jax.lax.RaggedDotDimensionNumbers((((2,), (2,)), ((0,), (1,))), (1,), (0,))
    close(lax.ragged_dot_general(lhs, rhs, gs, dn), jax.lax.ragged_dot_general(lhs, rhs, gs, jdn), atol=1e-5)
    lhs2, rhs2, gs2 = _rand((3, 7)), _rand((7, 2)), np.array([2, 1, 3], np.int32)
    dn2 = R((((1,), (0,)), ((), ())), (1,), ())
    jdn2 = jax.lax.RaggedDotDimensionNumbers((((1,), (0,)), ((), ())), (1,), ())
    close(lax.ragged_dot_general(lhs2, rhs2, gs2, dn2), jax.lax.ragged_dot_general(lhs2, rhs2, gs2, jdn2))


# ---------------------------------------------------------------------- conv_general_dilated_local


def _pads(in_sizes, k_eff, strides, padding):
    if not isinstance(padding, str):
        return list(padding)
    if padding == "VALID":
        return [(0, 0)] * len(in_sizes)
    out = []
    for n, k, s in zip(in_sizes, k_eff, strides):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        out.append(
            (total // 2, total - total // 2) if padding == "SAME" else (total - total // 2, total // 2)
        )
    return out


def local_ref(lhs, rhs, strides, padding, filt, lhs_dil=(1, 1), rhs_dil=(1, 1)):
    """NCHW lhs, OIHW-style rhs [O, C*kh*kw, Ho, Wo]: a direct loop over outputs and windows."""
    n, c, h, w = lhs.shape
    # lhs dilation inserts zeros between input elements.
    hd, wd = (h - 1) * lhs_dil[0] + 1, (w - 1) * lhs_dil[1] + 1
    dil = np.zeros((n, c, hd, wd))
    dil[:, :, :: lhs_dil[0], :: lhs_dil[1]] = lhs
    k_eff = [(k - 1) * d + 1 for k, d in zip(filt, rhs_dil)]
    (pt, pb), (pl, pr) = _pads((hd, wd), k_eff, strides, padding)
    full = np.zeros((n, c, hd + pt + pb, wd + pl + pr))
    # Negative padding crops.
    src = dil[:, :, max(-pt, 0) : hd - max(-pb, 0), max(-pl, 0) : wd - max(-pr, 0)]
    full[:, :, max(pt, 0) : max(pt, 0) + src.shape[2], max(pl, 0) : max(pl, 0) + src.shape[3]] = src
    ho = (full.shape[2] - k_eff[0]) // strides[0] + 1
    wo = (full.shape[3] - k_eff[1]) // strides[1] + 1
    o = rhs.shape[0]
    assert rhs.shape == (o, c * filt[0] * filt[1], ho, wo), rhs.shape
    out = np.zeros((n, o, ho, wo))
    for y in range(ho):
        for x in range(wo):
            for ci in range(c):
                for i in range(filt[0]):
                    for j in range(filt[1]):
                        v = full[:, ci, y * strides[0] + i * rhs_dil[0], x * strides[1] + j * rhs_dil[1]]
                        wgt = rhs[:, ci * filt[0] * filt[1] + i * filt[1] + j, y, x]
                        out[:, :, y, x] += v[:, None] * wgt[None, :]
    return out


def _out_hw(h, w, strides, padding, filt, lhs_dil=(1, 1), rhs_dil=(1, 1)):
    hd, wd = (h - 1) * lhs_dil[0] + 1, (w - 1) * lhs_dil[1] + 1
    k_eff = [(k - 1) * d + 1 for k, d in zip(filt, rhs_dil)]
    (pt, pb), (pl, pr) = _pads((hd, wd), k_eff, strides, padding)
    return (hd + pt + pb - k_eff[0]) // strides[0] + 1, (wd + pl + pr - k_eff[1]) // strides[1] + 1


LOCAL_CONFIGS = [
    ((1, 1), "VALID", (2, 2), (1, 1), (1, 1)),
    ((2, 1), "SAME", (3, 2), (1, 1), (1, 1)),
    ((1, 2), ((1, 0), (2, 1)), (2, 3), (1, 1), (2, 1)),
    ((1, 1), ((1, 1), (0, 1)), (2, 2), (2, 1), (1, 1)),
    ((1, 1), "VALID", (2, 2), (1, 1), (1, 2)),
]


@pytest.mark.parametrize("strides,padding,filt,lhs_dil,rhs_dil", LOCAL_CONFIGS, ids=str)
def test_conv_local_vs_loop(strides, padding, filt, lhs_dil, rhs_dil):
    lhs = _rand((2, 3, 5, 6))
    ho, wo = _out_hw(5, 6, strides, padding, filt, lhs_dil, rhs_dil)
    rhs = _rand((4, 3 * filt[0] * filt[1], ho, wo))
    kw = dict(lhs_dilation=lhs_dil, rhs_dilation=rhs_dil)
    out = lax.conv_general_dilated_local(lhs, rhs, strides, padding, filt, **kw)
    close(out, local_ref(lhs, rhs, strides, padding, filt, lhs_dil, rhs_dil), rtol=1e-4, atol=1e-4)
    jitted = morphax.jit(lambda a, b: lax.conv_general_dilated_local(a, b, strides, padding, filt, **kw))
    close(jitted(lhs, rhs), out, rtol=1e-5, atol=1e-5)


def test_conv_local_nhwc_layout():
    # ('NHWC', 'HWIO', 'NHWC'): rhs [Ho, Wo, C*kh*kw, O]; the window order is the kernel string's (H, W).
    lhs = _rand((2, 3, 5, 6))
    filt, strides = (2, 3), (1, 2)
    ho, wo = _out_hw(5, 6, strides, "SAME", filt)
    rhs = _rand((4, 3 * 6, ho, wo))
    want = local_ref(lhs, rhs, strides, "SAME", filt)
    out = lax.conv_general_dilated_local(
        np.transpose(lhs, (0, 2, 3, 1)),
        np.transpose(rhs, (2, 3, 1, 0)),
        strides,
        "SAME",
        filt,
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )
    close(out, np.transpose(want, (0, 2, 3, 1)), rtol=1e-4, atol=1e-4)


def test_conv_local_grads_and_vmap():
    lhs = _rand((2, 2, 4, 5))
    filt, strides = (2, 2), (1, 2)
    ho, wo = _out_hw(4, 5, strides, "VALID", filt)
    rhs = _rand((3, 2 * 4, ho, wo))

    def f(a, b):
        return lax.conv_general_dilated_local(a, b, strides, "VALID", filt)

    check_grads(f, (lhs, rhs), order=2, atol=5e-3, rtol=5e-3)
    lhs_b = _rand((3, 2, 2, 4, 5))
    close(vmap(f, in_axes=(0, None))(lhs_b, rhs), np.stack([f(x, rhs) for x in lhs_b]), rtol=1e-5, atol=1e-5)
    rhs_b = _rand((3, 3, 8, ho, wo))
    close(vmap(f, in_axes=(None, 0))(lhs, rhs_b), np.stack([f(lhs, r) for r in rhs_b]), rtol=1e-5, atol=1e-5)


def test_conv_local_errors():
    lhs = _rand((1, 2, 4, 4))
    with pytest.raises(TypeError, match="rhs must have shape"):
        lax.conv_general_dilated_local(lhs, _rand((3, 7, 3, 3)), (1, 1), "VALID", (2, 2))
    with pytest.raises(ValueError, match="Unsupported precision"):
        lax.conv_general_dilated_local(
            lhs, _rand((3, 8, 3, 3)), (1, 1), "VALID", (2, 2), precision=lax.DotAlgorithmPreset.F32_F32_F32
        )


def test_conv_local_jax_oracle():
    jax = pytest.importorskip("jax")
    lhs = _rand((2, 5, 6, 3))
    dn = ("NHWC", "OIWH", "NWHC")
    filt = (2, 3)  # in the rhs string's spatial order: W then H
    args = dict(
        window_strides=(1, 2), padding="SAME", filter_shape=filt, rhs_dilation=(2, 1), dimension_numbers=dn
    )
    patches = jax.lax.conv_general_dilated_patches(
        lhs, filt, (1, 2), "SAME", rhs_dilation=(2, 1), dimension_numbers=dn
    )
    # out layout NWHC: patches (N, Wo, Ho, C*k); rhs OIWH: (O, I, Wo, Ho).
    rhs = _rand((4, patches.shape[3], patches.shape[1], patches.shape[2]))
    close(
        lax.conv_general_dilated_local(lhs, rhs, **args),
        jax.lax.conv_general_dilated_local(lhs, rhs, **args),
        rtol=1e-4,
        atol=1e-4,
    )


# ------------------------------------------------------------------------------------------ tokens


def test_tokens():
    t = lax.create_token()
    assert isinstance(t, Token) and lax.create_token(3) is not t
    assert isinstance(lax.after_all(t, lax.create_token()), Token)
    assert isinstance(lax.after_all(), Token)
    with pytest.raises(TypeError, match="Arguments to after_all must be tokens"):
        lax.after_all(1.0)
    y, tok = morphax.jit(lambda x, tk: (x + 1, lax.after_all(tk, lax.create_token())))(1.0, t)
    assert float(y) == 2.0 and isinstance(tok, Token)
    ys, tok = vmap(lambda x: (x * 2, lax.create_token()))(np.arange(3.0))
    close(ys, [0, 2, 4])
    assert isinstance(tok, Token) and tok.block_until_ready() is tok
    g = morphax.grad(lambda x: (lax.after_all(lax.create_token()), x**2)[1])(3.0)
    assert float(g) == 6.0


# ------------------------------------------------------------------- sharding, composite, platform, ...


def test_with_sharding_constraint_and_stage_are_identities():
    x = {"a": np.arange(3.0, dtype=np.float32), "b": 2.0}
    out = lax.with_sharding_constraint(x, None)
    close(out["a"], x["a"])
    assert out["b"].weak_type
    one = morphax.sharding.SingleDeviceSharding(morphax.devices()[0])
    close(morphax.grad(lambda v: lax.with_sharding_constraint(v, one).sum())(x["a"]), np.ones(3))
    s = lax.stage(1.0)
    assert hasattr(s, "_buf") and s.dtype == np.float32 and s.weak_type
    close(lax.stage(np.arange(3)), np.arange(3))
    assert morphax.jit(lambda v: lax.stage(v) * 2)(3.0) == 6.0


def test_composite_calls_the_decomposition_under_transformations():
    tan = lax.composite(lambda x: lax.sin(x) / lax.cos(x), name="my.tan")
    x = np.array([0.0, 0.3, 1.0], np.float32)
    close(tan(x), np.tan(x), rtol=1e-6)
    close(morphax.jit(tan)(x), np.tan(x), rtol=1e-6)
    close(vmap(tan)(x), np.tan(x), rtol=1e-6)
    close(vmap(morphax.grad(tan))(x), 1 / np.cos(x) ** 2, rtol=1e-5)
    check_grads(tan, (x,), order=2)
    s = lax.composite(lambda x, *, axis: x.sum(axis), name="my.sum", version=2)
    close(s(np.ones((2, 3)), axis=1), [3.0, 3.0])
    with pytest.raises(TypeError):
        lax.composite(lambda x: x, name=3)


def test_platform_dependent():
    x = np.float32(2.0)
    assert float(lax.platform_dependent(x, cpu=lambda v: v + 1, default=lambda v: v - 1)) == 3.0
    assert float(lax.platform_dependent(x, cuda=lambda v: v + 1, default=lambda v: v - 1)) == 1.0
    assert lax.platform_dependent(cpu=lambda: 3) == 3
    assert float(lax.platform_dependent(x, 1.0, cpu=lambda a, b: a + b)) == 3.0
    f = lambda v: lax.platform_dependent(v, cpu=lambda u: u**2, tpu=lambda u: u)  # noqa: E731
    assert float(morphax.grad(f)(x)) == 4.0
    close(vmap(f)(np.arange(3.0)), [0.0, 1.0, 4.0])
    assert float(morphax.jit(f)(x)) == 4.0
    with pytest.raises(NotImplementedError, match="no branch for the platform 'cpu'"):
        lax.platform_dependent(x, cuda=lambda v: v)


def test_dce_sink_keeps_its_operand_alive():
    def f(x):
        lax.dce_sink(jnp.sin(x) * 2)
        return x + 1

    assert lax.dce_sink(1.0) is None
    closed = morphax.make_jaxpr(f)(1.0)
    names = [e.primitive.name for e in dce(closed).jaxpr.eqns]
    assert names == ["sin", "mul", "dce_sink", "add"]
    # Without the sink the sin is dead code.
    names = [
        e.primitive.name for e in dce(morphax.make_jaxpr(lambda x: (jnp.sin(x), x + 1)[1])(1.0)).jaxpr.eqns
    ]
    assert names == ["add"]
    assert float(morphax.jit(f)(1.0)) == 2.0
    assert float(morphax.grad(f)(1.0)) == 1.0
    close(vmap(f)(np.arange(3.0)), [1.0, 2.0, 3.0])
    lax.dce_sink({"a": np.ones(2), "b": 1}, prevent_mlir_dce=True)
    assert registry["dce_sink"].has_side_effects


# ------------------------------------------------------------------------------------- collectives


def _vm(f, **kw):
    return vmap(f, axis_name="i", **kw)


def test_pbroadcast():
    x = _rand((4, 3))
    got = _vm(lambda v: lax.pbroadcast(v, "i", 2))(x)
    close(got, np.broadcast_to(x[2], (4, 3)))
    x[1, 0] = np.inf  # other members' inf/nan does not leak into the broadcast value
    close(_vm(lambda v: lax.pbroadcast(v, "i", 2))(x), np.broadcast_to(x[2], (4, 3)))
    close(
        _vm(lambda v: lax.pbroadcast(v, "i", 0), in_axes=None, axis_size=4)(x[0]),
        np.broadcast_to(x[0], (4, 3)),
    )
    # Gradient: member `source` receives every member's cotangent; the others none.
    x = _rand((4, 3))
    w = _rand((4, 3))
    g = morphax.grad(lambda v: (_vm(lambda u: lax.pbroadcast(u, "i", 1))(v) * w).sum())(x)
    want = np.zeros((4, 3))
    want[1] = w.sum(0)
    close(g, want)
    check_grads(lambda v: _vm(lambda u: lax.pbroadcast(u, "i", 3))(v), (x,), order=2)
    close(morphax.jit(_vm(lambda u: lax.pbroadcast({"a": u}, "i", 1)["a"]))(x), np.broadcast_to(x[1], (4, 3)))
    with pytest.raises(ValueError, match="out of range"):
        _vm(lambda u: lax.pbroadcast(u, "i", 4))(x)


def test_pswapaxes():
    x = _rand((3, 3, 2))
    got = _vm(lambda v: lax.pswapaxes(v, "i", 0))(x)
    close(got, np.swapaxes(x, 0, 1))
    got = _vm(lambda v: lax.pswapaxes(v, "i", 1))(np.swapaxes(x, 1, 2).copy())
    close(got, np.transpose(np.swapaxes(x, 1, 2), (2, 1, 0)))
    check_grads(lambda v: _vm(lambda u: lax.pswapaxes(u, "i", 0))(v), (x,), order=1)


def test_pcast():
    x = _rand((3, 2))
    close(_vm(lambda v: lax.pcast(v, "i", to="varying"))(x), x)
    close(_vm(lambda v: lax.pcast(v, ("i",), to="reduced"))(x), x)
    assert lax.pcast(1.0, (), to="varying") == 1.0
    with pytest.raises(ValueError, match="Allowed `to` values"):
        _vm(lambda v: lax.pcast(v, "i", to="bogus"))(x)
    with pytest.raises(TypeError, match="must be a tuple or a str"):
        lax.pcast(x, {"i"}, to="varying")
    with pytest.raises(NameError, match="unbound axis name: j"):
        _vm(lambda v: lax.pcast(v, "j", to="varying"))(x)


def test_psend_precv():
    x = _rand((3, 2))
    perm = [(0, 1), (1, 2)]

    def f(v):
        tok = lax.psend(v, "i", perm)
        return lax.precv(tok, jnp.zeros_like(v), "i", perm)

    want = np.zeros((3, 2))
    want[1], want[2] = x[0], x[1]
    close(_vm(f)(x), want)
    close(morphax.jit(_vm(f))(x), want)
    check_grads(_vm(f), (x,), order=1)
    with pytest.raises(NotImplementedError, match="ppermute"):
        _vm(lambda v: lax.precv(lax.create_token(), v, "i", perm))(x)
    with pytest.raises(TypeError, match="does not describe"):
        _vm(lambda v: lax.precv(lax.psend(v, "i", perm), jnp.zeros(3), "i", perm))(x)


def ragged_a2a_ref(operand, output, in_off, send, out_off, recv):
    """JAX's documented semantics, per receiver, with NumPy on the stacked members."""
    n, k = in_off.shape
    spd = k // n
    result = output.astype(np.float64).copy()
    for j in range(n):
        for i in range(n):
            for s in range(spd):
                t = j * spd + s
                size = recv[j, i * spd + s]
                dst = out_off[i, t]
                result[j, dst : dst + size] = operand[i, in_off[i, t] : in_off[i, t] + size]
    return result


def test_ragged_all_to_all_doc_example():
    op = np.array([[1, 2, 2], [3, 4, 0]], np.float32)
    out = np.zeros((2, 4), np.float32)
    args = [
        np.array(a, np.int32)
        for a in ([[0, 1], [0, 1]], [[1, 2], [1, 1]], [[0, 0], [1, 2]], [[1, 1], [2, 1]])
    ]
    f = _vm(lambda *a: lax.ragged_all_to_all(*a, axis_name="i"))
    close(f(op, out, *args), [[1, 3, 0, 0], [2, 2, 4, 0]])
    close(morphax.jit(f)(op, out, *args), [[1, 3, 0, 0], [2, 2, 4, 0]])


def test_ragged_all_to_all_random_and_grads():
    rng = np.random.default_rng(3)
    n, spd, rows, m = 3, 2, 6, 8
    k = n * spd
    # Sizes consistent between senders and receivers; non-overlapping destinations per receiver.
    size = rng.integers(0, 3, size=(n, k)).astype(np.int32)  # size[i, t]: sender i, slice t
    in_off = np.zeros((n, k), np.int32)
    out_off = np.zeros((n, k), np.int32)
    recv = np.zeros((n, k), np.int32)
    for i in range(n):
        in_off[i] = np.minimum(np.cumsum(np.r_[0, size[i][:-1]]), rows - 2)
        size[i] = np.minimum(size[i], rows - in_off[i])
    for j in range(n):
        pos = 0
        for i in range(n):
            for s in range(spd):
                t = j * spd + s
                out_off[i, t] = pos
                recv[j, i * spd + s] = size[i, t]
                pos += size[i, t]
    operand = rng.normal(size=(n, rows, 2)).astype(np.float32)
    output = rng.normal(size=(n, m, 2)).astype(np.float32)
    f = _vm(lambda *a: lax.ragged_all_to_all(*a, axis_name="i"))
    got = f(operand, output, in_off, size, out_off, recv)
    close(got, ragged_a2a_ref(operand, output, in_off, size, out_off, recv))
    check_grads(lambda a, b: f(a, b, in_off, size, out_off, recv), (operand, output), order=2)


def test_ragged_all_to_all_errors():
    op, out = np.ones((2, 3), np.float32), np.zeros((2, 4), np.float32)
    bad = np.zeros((2, 3), np.int32)
    with pytest.raises(ValueError, match="multiple of the size 2"):
        _vm(lambda *a: lax.ragged_all_to_all(*a, axis_name="i"))(op, out, bad, bad, bad, bad)
    with pytest.raises(TypeError, match="same dtype"):
        _vm(lambda *a: lax.ragged_all_to_all(*a, axis_name="i"))(op, out.astype(np.int32), *[bad[:, :2]] * 4)
    with pytest.raises(NameError, match="unbound axis name"):
        lax.ragged_all_to_all(op[0], out[0], bad[0, :2], bad[0, :2], bad[0, :2], bad[0, :2], axis_name="i")
