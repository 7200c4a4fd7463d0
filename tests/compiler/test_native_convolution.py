"""Convolutions inside native segments (backends/c/convolution.py: im2col + BLAS, phases for lhs
dilation). Every case is compared with a direct float64 NumPy evaluation written here from the
definition (windows of the padded, dilated input times the kernel), and gradients with the numpy
backend; the segment counters show the convolution ran in C."""

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.compiler.backends import get_backend
from morphax._src.compiler.backends.c import blas, convolution
from morphax._src.prims.conv_layouts import conv_dimension_numbers

pytestmark = pytest.mark.skipif(
    not get_backend("c").available() or not blas.available(), reason="no C compiler or no BLAS"
)
RNG = np.random.default_rng(5)


def _direct(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, specs, groups=1, batch_groups=1):
    """conv_general_dilated from its definition, one output position at a time, in float64."""
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, specs)
    x = np.transpose(lhs, dn.lhs_spec).astype(np.float64)
    w = np.transpose(rhs, dn.rhs_spec).astype(np.float64)
    nsp = x.ndim - 2
    dilated = np.zeros(x.shape[:2] + tuple((n - 1) * d + 1 for n, d in zip(x.shape[2:], lhs_dilation)))
    dilated[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in lhs_dilation)] = x
    for axis, (lo, hi) in enumerate(padding, start=2):
        width = [(0, 0)] * dilated.ndim
        width[axis] = (max(lo, 0), max(hi, 0))
        dilated = np.pad(dilated, width)
        size = dilated.shape[axis]
        dilated = np.take(dilated, np.arange(max(-lo, 0), size - max(-hi, 0)), axis=axis)
    n, c = x.shape[:2]
    o, i = w.shape[:2]
    reach = [(k - 1) * r + 1 for k, r in zip(w.shape[2:], rhs_dilation)]
    space = [(p - e) // s + 1 for p, e, s in zip(dilated.shape[2:], reach, strides)]
    out = np.zeros((n // batch_groups, o, *space))
    per_group = o // (groups * batch_groups)
    for position in np.ndindex(*space):
        window = dilated[
            (slice(None), slice(None))
            + tuple(slice(p * s, p * s + e, r) for p, s, e, r in zip(position, strides, reach, rhs_dilation))
        ]
        for f in range(o):
            g = f // per_group
            part = window
            if groups > 1:
                part = window[:, g * i : (g + 1) * i]
            if batch_groups > 1:
                part = window[g * (n // batch_groups) : (g + 1) * (n // batch_groups)]
            out[(slice(None), f) + position] = np.sum(part * w[f], axis=tuple(range(1, 2 + nsp)))
    return np.transpose(out, np.argsort(dn.out_spec))


def _shape(spec: str, sizes: dict) -> tuple:
    return tuple(sizes[ch] for ch in spec)


# (name, specs, lhs sizes, rhs sizes, strides, padding, lhs_dilation, rhs_dilation, groups, batch_groups)
CASES = [
    ("nhwc-same", ("NHWC", "HWIO", "NHWC"), dict(N=2, H=9, W=7, C=3), dict(H=3, W=3, I=3, O=5),
     (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 1, 1),
    ("nchw-strided", ("NCHW", "OIHW", "NCHW"), dict(N=3, C=4, H=10, W=11), dict(O=6, I=4, H=3, W=2),
     (2, 3), ((0, 0), (0, 0)), (1, 1), (1, 1), 1, 1),
    ("lhs-and-rhs-dilation", ("NHWC", "HWIO", "NHWC"), dict(N=2, H=6, W=5, C=3), dict(H=3, W=2, I=3, O=4),
     (1, 1), ((2, 1), (1, 2)), (2, 2), (1, 2), 1, 1),
    ("stride-3-lhs-dilation-negative-pad", ("NCHW", "OIHW", "NHWC"), dict(N=2, C=2, H=7, W=8),
     dict(O=3, I=2, H=4, W=3), (3, 2), ((-1, 2), (1, -2)), (2, 3), (1, 1), 1, 1),
    ("holes-no-tap-reaches", ("NWC", "WIO", "NWC"), dict(N=2, W=5, C=2), dict(W=1, I=2, O=3),
     (1,), ((0, 0),), (3,), (1,), 1, 1),
    ("feature-groups", ("NHWC", "HWIO", "NHWC"), dict(N=2, H=6, W=6, C=6), dict(H=3, W=3, I=2, O=9),
     (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 3, 1),
    ("depthwise", ("NCHW", "OIHW", "NCHW"), dict(N=2, C=4, H=5, W=5), dict(O=4, I=1, H=3, W=3),
     (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 4, 1),
    ("batch-groups", ("NHWC", "HWIO", "NHWC"), dict(N=4, H=5, W=4, C=3), dict(H=2, W=2, I=3, O=6),
     (1, 1), ((0, 1), (1, 0)), (1, 1), (1, 1), 1, 2),
    ("scattered-layout", ("HNWC", "WIOH", "CWNH"), dict(N=2, H=6, W=5, C=3), dict(H=2, W=3, I=3, O=4),
     (1, 2), ((1, 0), (0, 1)), (1, 1), (2, 1), 1, 1),
    ("1d", ("NCW", "OIW", "NWC"), dict(N=3, C=2, W=20), dict(O=4, I=2, W=5), (2,), ((2, 2),), (1,), (3,), 1, 1),
    ("3d", ("NDHWC", "DHWIO", "NDHWC"), dict(N=2, D=4, H=5, W=4, C=2), dict(D=2, H=3, W=2, I=2, O=3),
     (1, 2, 1), ((0, 1), (1, 1), (1, 0)), (1, 1, 2), (1, 1, 1), 1, 1),
    ("no-spatial-dimensions", ("NC", "OI", "NC"), dict(N=5, C=3), dict(O=4, I=3), (), (), (), (), 1, 1),
    ("many-blocks", ("NHWC", "HWIO", "NHWC"), dict(N=2, H=24, W=24, C=64), dict(H=3, W=3, I=64, O=4),
     (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 1, 1),
]  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_native_convolution_matches_its_definition(case, dtype):
    _, specs, lhs_sizes, rhs_sizes, strides, padding, lhs_dil, rhs_dil, groups, batch_groups = case
    lhs = RNG.standard_normal(_shape(specs[0], lhs_sizes)).astype(dtype)
    rhs = RNG.standard_normal(_shape(specs[1], rhs_sizes)).astype(dtype)

    def f(a, b):
        # Kernels on both sides, so the convolution sits inside a segment between them.
        out = lax.conv_general_dilated(
            a * 1.0, b * 1.0, strides, padding, lhs_dil, rhs_dil, specs,
            feature_group_count=groups, batch_group_count=batch_groups,
        )  # fmt: skip
        return out + 0.0

    with morphax.enable_x64(dtype == np.float64):
        jitted = morphax.jit(f, backend="c")
        got = np.asarray(jitted(lhs, rhs))
        compiled = jitted.lower(lhs, rhs).compile()
    want = _direct(lhs, rhs, strides, padding, lhs_dil, rhs_dil, specs, groups, batch_groups)
    assert got.dtype == dtype and got.shape == want.shape
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert compiled.num_segments == 1
    assert "im2col + GEMM" in compiled.as_text()


def _cnn_loss(params, x, y):
    k1, k2, w = params
    dn = ("NHWC", "HWIO", "NHWC")
    h = jnp.maximum(lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn), 0.0)
    h = jnp.maximum(lax.conv_general_dilated(h, k2, (2, 2), "SAME", dimension_numbers=dn), 0.0)
    logits = h.reshape(h.shape[0], -1) @ w
    return -jnp.mean(jnp.sum(y * morphax.nn.log_softmax(logits), axis=-1))


def _cnn_args(batch=4, size=12):
    params = [
        (RNG.standard_normal((3, 3, 1, 4)) * 0.3).astype(np.float32),
        (RNG.standard_normal((3, 3, 4, 8)) * 0.1).astype(np.float32),
        (RNG.standard_normal(((size // 2) ** 2 * 8, 10)) * 0.05).astype(np.float32),
    ]
    x = RNG.standard_normal((batch, size, size, 1)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[RNG.integers(0, 10, batch)]
    return params, x, y


def test_cnn_training_step_is_one_segment_and_matches_the_numpy_backend():
    """The forward convolutions and the transposed ones their gradients produce (lhs dilation for
    the strided one's input gradient, rhs dilation for its kernel gradient) all run in C."""

    def step(params, x, y):
        loss, grads = morphax.value_and_grad(_cnn_loss)(params, x, y)
        return loss, [p - 0.01 * g for p, g in zip(params, grads)]

    args = _cnn_args()
    compiled = morphax.jit(step, backend="c").lower(*args).compile()
    assert compiled.num_segments == 1
    assert compiled.as_text().count("im2col + GEMM") == 5
    got = morphax.jit(step, backend="c")(*args)
    want = morphax.jit(step, backend="numpy")(*args)
    for g, w in zip(morphax.tree_util.tree_leaves(got), morphax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_convolution_gradients_under_vmap_match_a_python_loop():
    params, x, y = _cnn_args(batch=3, size=8)
    per_example = morphax.jit(
        morphax.vmap(morphax.grad(lambda p, x, y: _cnn_loss(p, x[None], y[None])), in_axes=(None, 0, 0)),
        backend="c",
    )
    got = per_example(params, x, y)
    grad = morphax.jit(morphax.grad(_cnn_loss), backend="numpy")
    for b in range(3):
        want = grad(params, x[b : b + 1], y[b : b + 1])
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g[b]), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_working_memory_is_bounded_by_blocks_not_the_whole_im2col_matrix():
    lhs = morphax.ShapeDtypeStruct((64, 128, 128, 64), np.float32)
    rhs = morphax.ShapeDtypeStruct((3, 3, 64, 64), np.float32)
    jaxpr = morphax.make_jaxpr(
        lambda a, b: lax.conv_general_dilated(
            a, b, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
    )(lhs, rhs)
    form = convolution.conv_form(jaxpr.jaxpr.eqns[0])
    whole = 64 * 128 * 128 * 9 * 64 * 4  # 2.4 GB of im2col rows
    assert form["placement"] == "rows"  # channels-last: BLAS writes the output in place
    assert form["scratch"] <= 2 * convolution.BLOCK_BYTES and whole > 500 * 2 * convolution.BLOCK_BYTES


def test_integer_and_half_precision_convolutions_stay_python_steps():
    lhs = RNG.integers(-3, 3, (2, 5, 5, 2)).astype(np.int32)
    rhs = RNG.integers(-3, 3, (3, 3, 2, 3)).astype(np.int32)
    f = lambda a, b: (
        lax.conv_general_dilated(a + 1, b, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) + 1
    )  # noqa: E731
    compiled = morphax.jit(f, backend="c").lower(lhs, rhs).compile()
    assert compiled.num_segments == 2
    want = _direct(lhs + 1, rhs, (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), ("NHWC", "HWIO", "NHWC")) + 1
    np.testing.assert_array_equal(np.asarray(morphax.jit(f, backend="c")(lhs, rhs)), want.astype(np.int32))
