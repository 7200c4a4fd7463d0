"""Native segments (compiler/segments.py, backends/c/program.py): runs of fused kernels and BLAS
matmuls execute as one C call with their intermediates in a scratch arena. Results are compared
with the numpy backend and NumPy; the segment counters are what issue 14 asks to assert."""

import itertools
import threading

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.compiler import segments
from morphax._src.compiler.backends import get_backend
from morphax._src.compiler.backends.c import blas, build

pytestmark = pytest.mark.skipif(
    not get_backend("c").available() or not blas.available(), reason="no C compiler or no BLAS"
)
RNG = np.random.default_rng(11)


def _compiled(f, *args):
    return morphax.jit(f, backend="c").lower(*args).compile()


def _both(f, *args, rtol=2e-5, atol=2e-5):
    got = morphax.jit(f, backend="c")(*args)
    want = morphax.jit(f, backend="numpy")(*args)
    for g, w in zip(morphax.tree_util.tree_leaves(got), morphax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)
    return got


def _mlp_loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jnp.maximum(x @ w1 + b1, 0.0)
    logits = h @ w2 + b2
    return -jnp.mean(jnp.sum(y * morphax.nn.log_softmax(logits), axis=-1))


def _mlp_args(batch=16, d_in=20, d_hidden=32, classes=5):
    params = (
        (RNG.standard_normal((d_in, d_hidden)).astype(np.float32) * 0.1, np.zeros(d_hidden, np.float32)),
        (RNG.standard_normal((d_hidden, classes)).astype(np.float32) * 0.1, np.zeros(classes, np.float32)),
    )
    x = RNG.standard_normal((batch, d_in)).astype(np.float32)
    y = np.eye(classes, dtype=np.float32)[RNG.integers(0, classes, batch)]
    return params, x, y


def test_mlp_training_step_is_one_segment():
    def step(params, x, y):
        loss, grads = morphax.value_and_grad(_mlp_loss)(params, x, y)
        return loss, morphax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

    args = _mlp_args()
    compiled = _compiled(step, *args)
    assert compiled.num_segments == 1
    assert compiled.num_kernels >= 3
    # The intermediates share an arena smaller than all of them side by side.
    assert 0 < compiled.scratch_bytes
    text = compiled.as_text()
    assert "# 1 native segment: " in text and "mx_matmul_float" in text
    _both(step, *args)


def test_per_example_gradients_are_one_segment():
    def loss(w, x, y):
        return jnp.log1p(jnp.exp(-y * jnp.dot(x, w)))

    per_example = morphax.vmap(morphax.grad(loss), in_axes=(None, 0, 0))
    w = RNG.standard_normal(30).astype(np.float32)
    x = RNG.standard_normal((64, 30)).astype(np.float32)
    y = np.sign(RNG.standard_normal(64)).astype(np.float32)
    assert _compiled(per_example, w, x, y).num_segments == 1
    _both(per_example, w, x, y)


def test_a_step_without_native_code_splits_the_program():
    # The sort runs in Python between two native segments.
    def f(a, b):
        h = jnp.tanh(a @ b)
        s = jnp.sort(h, axis=1)
        return jnp.sum(s @ b.T * 2.0)

    a = RNG.standard_normal((6, 5)).astype(np.float32)
    b = RNG.standard_normal((5, 5)).astype(np.float32)
    compiled = _compiled(f, a, b)
    assert compiled.num_segments == 2
    assert "# 2 native segments: " in compiled.as_text()
    _both(f, a, b)


def _dot_cases():
    # (lhs shape, rhs shape, dimension numbers): batch dims anywhere, size-1 and size-0 extents,
    # several contracting or free dims, vectors.
    yield (4, 3), (3, 5), (((1,), (0,)), ((), ()))
    yield (3, 4), (3, 5), (((0,), (0,)), ((), ()))
    yield (4, 3), (5, 3), (((1,), (1,)), ((), ()))
    yield (3, 4), (5, 3), (((0,), (1,)), ((), ()))
    yield (7,), (7,), (((0,), (0,)), ((), ()))
    yield (4, 7), (7,), (((1,), (0,)), ((), ()))
    yield (7,), (7, 4), (((0,), (0,)), ((), ()))
    yield (2, 4, 3), (2, 3, 5), (((2,), (1,)), ((0,), (0,)))
    yield (4, 2, 3), (3, 2, 5), (((2,), (0,)), ((1,), (1,)))
    yield (2, 3, 4, 6), (2, 3, 5, 6), (((3,), (3,)), ((0, 1), (0, 1)))  # attention scores
    yield (2, 3, 4, 5), (2, 3, 5, 6), (((3,), (2,)), ((0, 1), (0, 1)))
    yield (4, 3, 2), (3, 2, 5), (((1, 2), (0, 1)), ((), ()))
    yield (1, 3), (3, 1), (((1,), (0,)), ((), ()))
    yield (4, 1), (1, 5), (((1,), (0,)), ((), ()))
    yield (4, 0), (0, 5), (((1,), (0,)), ((), ()))
    yield (0, 3), (3, 5), (((1,), (0,)), ((), ()))
    yield (1, 4, 3), (1, 3, 5), (((2,), (1,)), ((0,), (0,)))
    # Not BLAS-shaped over the buffers as they lie: stays a Python step. The contracting dims
    # around a free one are not one strided axis; a batch dim innermost leaves no unit stride.
    yield (3, 4, 2), (3, 2, 5), (((0, 2), (0, 1)), ((), ()))
    yield (3, 4, 2), (2, 5, 4), (((1,), (2,)), ((2,), (0,)))


_PYTHON_STEPS = [(((0, 2), (0, 1)), ((), ())), (((1,), (2,)), ((2,), (0,)))]


def _einsum(lhs, rhs, numbers):
    (lc, rc), (lb, rb) = numbers
    letters = iter("abcdefghijklmnop")
    ls = [next(letters) for _ in lhs.shape]
    rs = [None] * rhs.ndim
    for a, b in zip((*lc, *lb), (*rc, *rb)):
        rs[b] = ls[a]
    rs = [s or next(letters) for s in rs]
    out = [ls[d] for d in lb]
    out += [ls[d] for d in range(lhs.ndim) if d not in lc and d not in lb]
    out += [rs[d] for d in range(rhs.ndim) if d not in rc and d not in rb]
    return np.einsum(f"{''.join(ls)},{''.join(rs)}->{''.join(out)}", lhs, rhs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(_dot_cases()), ids=str)
def test_matmul_forms_match_einsum(case, dtype):
    lhs_shape, rhs_shape, numbers = case
    lhs = RNG.standard_normal(lhs_shape).astype(dtype)
    rhs = RNG.standard_normal(rhs_shape).astype(dtype)

    def f(a, b):
        # A kernel on each side, so the matmul sits inside a segment between them.
        return lax.dot_general(a * 2.0, b + 1.0, numbers) - 1.0

    with morphax.enable_x64(dtype == np.float64):
        got = morphax.jit(f, backend="c")(lhs, rhs)
        compiled = _compiled(f, lhs, rhs)
    want = _einsum(lhs.astype(np.float64) * 2, rhs.astype(np.float64) + 1, numbers) - 1
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)
    assert np.asarray(got).dtype == dtype
    native = case[2] not in _PYTHON_STEPS
    assert compiled.num_segments == (1 if native else 2)


def test_integer_matmuls_stay_python_steps():
    a = RNG.integers(-5, 5, (3, 4)).astype(np.int32)
    b = RNG.integers(-5, 5, (4, 2)).astype(np.int32)
    compiled = _compiled(lambda a, b: (a + 1) @ b + 1, a, b)
    assert compiled.num_segments == 2
    got = morphax.jit(lambda a, b: (a + 1) @ b + 1, backend="c")(a, b)
    np.testing.assert_array_equal(np.asarray(got), (a + 1) @ b + 1)


def test_scratch_plan_never_overlaps_live_values():
    rng = np.random.default_rng(3)
    for _ in range(200):
        blocks = []
        for key in range(rng.integers(1, 12)):
            first = int(rng.integers(0, 10))
            blocks.append((key, int(rng.integers(0, 1200)), first, first + int(rng.integers(0, 5))))
        offsets, total = segments.plan_scratch(blocks)
        spans = []
        for key, nbytes, first, last in blocks:
            lo = offsets[key]
            assert lo % segments.ALIGNMENT == 0
            hi = lo + max(nbytes, 1)
            assert hi <= total
            spans.append((lo, hi, first, last))
        for (lo1, hi1, f1, l1), (lo2, hi2, f2, l2) in itertools.combinations(spans, 2):
            if f1 <= l2 and f2 <= l1:  # alive together: disjoint memory
                assert hi1 <= lo2 or hi2 <= lo1
        # Never more than all blocks side by side.
        assert total <= sum(segments._round_up(max(n, 1)) for _, n, _, _ in blocks)


def test_concurrent_calls_use_separate_scratch():
    def f(a, b):
        return jnp.tanh(a @ b) @ b.T + a

    jitted = morphax.jit(f, backend="c")
    inputs = [
        (RNG.standard_normal((32, 24)).astype(np.float32), RNG.standard_normal((24, 24)).astype(np.float32))
        for _ in range(8)
    ]
    want = [np.tanh(a @ b) @ b.T + a for a, b in inputs]
    jitted(*inputs[0]).block_until_ready()
    errors = []

    def worker(k):
        for _ in range(20):
            got = np.asarray(jitted(*inputs[k]))
            if not np.allclose(got, want[k], rtol=1e-4, atol=1e-4):
                errors.append(k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_failing_compiler_runs_segments_with_numpy(monkeypatch):
    def failing(*args, **kwargs):
        raise build.CompileError("cc: simulated failure")

    monkeypatch.setattr(build, "load", failing)
    monkeypatch.setattr(build, "cached", lambda key: None)
    args = _mlp_args(batch=5, d_in=7, d_hidden=6, classes=3)

    def step(params, x, y):
        return morphax.value_and_grad(_mlp_loss)(params, x, y)

    with pytest.warns(UserWarning, match="C compiler failed"):
        got = morphax.jit(step, backend="c")(*args)
    want = morphax.jit(step, backend="numpy")(*args)
    for g, w in zip(morphax.tree_util.tree_leaves(got), morphax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)


def test_nested_calls_are_inlined_into_one_segment():
    # A nested jit and a custom_jvp function (logaddexp) compile into the caller's segment.
    inner = morphax.jit(lambda a, b: jnp.tanh(a @ b))

    def f(a, b):
        return jnp.sum(jnp.logaddexp(inner(a, b), 1.0) @ b)

    a = RNG.standard_normal((6, 5)).astype(np.float32)
    b = RNG.standard_normal((5, 5)).astype(np.float32)
    compiled = _compiled(morphax.grad(f), a, b)
    assert compiled.num_segments == 1
    assert "call" not in compiled.as_text().split("# the program, run by the executor")[1]
    _both(morphax.grad(f), a, b)
