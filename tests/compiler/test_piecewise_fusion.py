"""pad, concatenate and dynamic_slice inside fused kernels. pad and concatenate have piecewise
maps (each output element is a guarded load of one operand, or the padding value);
dynamic_slice has a dynamic index map (a load at offsets read from its start operands when the
kernel starts, clamped as XLA does). None of them is materialized by its NumPy reference.
Compared with NumPy on both backends, for random configurations: negative (cropping) and interior
padding, size-0 pieces, start indices out of range in both directions, several dtypes."""

import itertools

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.compiler.backends import get_backend

HAS_C = get_backend("c").available()
BACKENDS = ["numpy", pytest.param("c", marks=pytest.mark.skipif(not HAS_C, reason="no C compiler"))]


def _reference_pad(x, value, config):
    """lax.pad's meaning, written independently: place, then crop."""
    out_shape = []
    for n, (lo, hi, interior) in zip(x.shape, config):
        out_shape.append(lo + hi + (n + (n - 1) * interior if n else 0))
    out = np.full([max(d, 0) for d in out_shape], value, dtype=x.dtype)
    for idx in itertools.product(*[range(n) for n in x.shape]):
        pos = tuple(lo + i * (interior + 1) for i, (lo, _, interior) in zip(idx, config))
        if all(0 <= p < d for p, d in zip(pos, out.shape)):
            out[pos] = x[idx]
    return out


def _pad_configs(rng, shape):
    for _ in range(6):
        config = []
        for n in shape:
            interior = int(rng.integers(0, 3))
            span = n + max(n - 1, 0) * interior
            lo = int(rng.integers(-min(span, 2), 3))
            hi = int(rng.integers(-min(span + lo, 2) if span + lo > 0 else 0, 3))
            config.append((lo, hi, interior))
        yield tuple(config)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 2), (0, 3)])
def test_pad_fused_with_its_neighbours_matches_numpy(backend, shape):
    rng = np.random.default_rng(len(shape) * 7 + sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    for config in _pad_configs(rng, shape):

        def f(x, config=config):
            return jnp.exp(lax.pad(jnp.sin(x) * 2.0, np.float32(-1.5), config)) + 1.0

        want = np.exp(_reference_pad(np.sin(x) * np.float32(2.0), np.float32(-1.5), config)) + 1.0
        got = np.asarray(morphax.jit(f, backend=backend)(x))
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=str(config))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.float16, np.float64])
def test_pad_and_concatenate_of_every_dtype_are_exact(backend, dtype):
    rng = np.random.default_rng(3)
    with morphax.enable_x64(dtype == np.float64):
        a = (rng.integers(0, 2, (3, 4)) if dtype == np.bool_ else rng.integers(0, 50, (3, 4))).astype(dtype)
        b = a[:1] if dtype == np.bool_ else (a[:2] + 1).astype(dtype)
        pad_value = np.asarray(1, dtype)

        def f(a, b):
            padded = lax.pad(a, pad_value, ((1, 0, 1), (0, -1, 0)))
            return padded, jnp.concatenate([a, b, a], axis=0)

        padded, joined = morphax.jit(f, backend=backend)(a, b)
        np.testing.assert_array_equal(
            np.asarray(padded), _reference_pad(a, pad_value, ((1, 0, 1), (0, -1, 0)))
        )
        np.testing.assert_array_equal(np.asarray(joined), np.concatenate([a, b, a], axis=0))
        assert np.asarray(joined).dtype == np.dtype(dtype)


@pytest.mark.parametrize("backend", BACKENDS)
def test_concatenate_along_each_axis_with_empty_and_broadcast_pieces(backend):
    rng = np.random.default_rng(5)
    for axis in range(3):
        shapes = []
        for n in (2, 0, 3):
            s = [2, 3, 4]
            s[axis] = n
            shapes.append(tuple(s))
        parts = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        zeros_shape = list(shapes[0])

        def f(a, b, c, axis=axis, zeros_shape=tuple(zeros_shape)):
            return jnp.tanh(jnp.concatenate([a, b, jnp.zeros(zeros_shape, jnp.float32), c * 3.0], axis=axis))

        want = np.tanh(
            np.concatenate([parts[0], parts[1], np.zeros(zeros_shape, np.float32), parts[2] * 3], axis)
        )
        got = np.asarray(morphax.jit(f, backend=backend)(*parts))
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=f"axis {axis}")


@pytest.mark.skipif(not HAS_C, reason="no C compiler")
def test_padding_and_its_consumers_are_one_kernel():
    x = np.ones((16, 16), np.float32)

    def f(x):
        return jnp.tanh(lax.pad(x, np.float32(0), ((1, 1, 0), (1, 1, 0))) * 0.5)

    compiled = morphax.jit(f, backend="c").lower(x).compile()
    assert compiled.num_kernels == 1, compiled.as_text()
    assert "pad[" in compiled.as_text()  # named in the kernel's comment: it is fused, not called


@pytest.mark.skipif(not HAS_C, reason="no C compiler")
def test_gradient_of_a_padded_concatenation_matches_finite_differences():
    from morphax.test_util import check_grads

    def f(x, y):
        return jnp.sum(jnp.sin(jnp.concatenate([lax.pad(x, 0.0, ((1, 2, 1),)), y])) ** 2)

    x = np.linspace(-1, 1, 4)
    y = np.linspace(0, 2, 3)
    with morphax.enable_x64(True):
        check_grads(morphax.jit(f), (x, y), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int8, np.uint32, np.int64])
def test_dynamic_slice_clamps_its_starts_like_xla(backend, index_dtype):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((5, 8)).astype(np.float32)
    info = np.iinfo(index_dtype)
    starts = [(0, 0), (1, 2), (4, 7), (3, 5), (info.max, info.max), (info.min, 1), (2, info.min)]
    with morphax.enable_x64(index_dtype == np.int64):

        def f(x, i, j):
            return jnp.exp(lax.dynamic_slice(x * 2.0, (i, j), (2, 3))) - 1.0

        jitted = morphax.jit(f, backend=backend)
        for i, j in starts:
            i0 = min(max(int(i), 0), 5 - 2)
            j0 = min(max(int(j), 0), 8 - 3)
            want = np.exp(x[i0 : i0 + 2, j0 : j0 + 3] * np.float32(2.0)) - 1.0
            got = jitted(x, np.asarray(i, index_dtype), np.asarray(j, index_dtype))
            np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, err_msg=f"starts {(i, j)}")


@pytest.mark.skipif(not HAS_C, reason="no C compiler")
def test_dynamic_slice_and_its_consumers_are_one_kernel_without_a_copy():
    x = np.arange(64, dtype=np.float32).reshape(8, 8)

    def f(x, i):
        return jnp.tanh(lax.dynamic_slice(x, (i, np.int32(1)), (4, 4)) * 0.5)

    compiled = morphax.jit(f, backend="c").lower(x, np.int32(2)).compile()
    text = compiled.as_text()
    # Two kernels: the wrapper's wrap of a negative start (a scalar select), then the window read
    # straight from x with tanh in the same loop.
    assert compiled.num_kernels == 2, text
    fused = [k for k in text.split("/* ") if "dynamic_slice[" in k]
    assert len(fused) == 1 and "tanh" in fused[0], text
    got = compiled(x, np.int32(2))
    np.testing.assert_allclose(np.asarray(got), np.tanh(x[2:6, 1:5] * 0.5), rtol=2e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_slice_in_a_loop_body(backend):
    # fori_loop reading a moving window: the body compiles with the offset read each iteration.
    x = np.arange(20, dtype=np.float32)

    def f(x):
        def body(i, acc):
            return acc + jnp.sum(lax.dynamic_slice(x, (i,), (3,)) ** 2)

        return lax.fori_loop(0, 18, body, np.float32(0))

    want = sum(float(np.sum(x[i : i + 3] ** 2)) for i in range(18))
    np.testing.assert_allclose(float(morphax.jit(f, backend=backend)(x)), want, rtol=1e-6)
