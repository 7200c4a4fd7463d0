"""Donated buffers (issue 13, memory): a jitted function with `donate_argnums` writes an output into
the donated input's memory when a fused kernel can (compiler/donation.py) and nothing else
references that memory (runtime/dispatch.py). Never at the cost of a wrong answer: a view the
user holds, a NumPy array the input was created from, or a read at another index keep the copy."""

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax._src.compiler.backends import get_backend

pytestmark = pytest.mark.skipif(not get_backend("c").available(), reason="no working C compiler")


def _owned(values) -> morphax.Array:
    """An array whose buffer morphax computed (nothing else refers to it), ready."""
    x = jnp.asarray(np.asarray(values, np.float32)) * 1.0
    return x.block_until_ready()


def _address(x) -> int:
    return x._buf.ctypes.data


@pytest.mark.parametrize("n", [7, 300_000])  # run inline, and queued on the stream
def test_an_elementwise_output_takes_the_donated_buffer(n):
    f = morphax.jit(lambda x, y: (x * 2.0 + y, jnp.sum(y)), donate_argnums=0, backend="c")
    x, y = _owned(np.linspace(-1, 1, n)), _owned(np.arange(n))
    want = np.asarray(x) * 2.0 + np.asarray(y)
    before = _address(x)
    out, total = f(x, y)
    out.block_until_ready()
    assert x.is_deleted()
    assert _address(out) == before
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
    np.testing.assert_allclose(float(total), np.arange(n, dtype=np.float64).sum(), rtol=1e-5)


def test_a_training_loop_reuses_its_parameters_while_calls_queue():
    def step(w, g):
        return w - 0.1 * g * jnp.cos(w)

    donated = morphax.jit(step, donate_argnums=0, backend="c")
    plain = morphax.jit(step, backend="c")
    g = _owned(np.linspace(0, 1, 200_000))
    w_d = _owned(np.linspace(-2, 2, 200_000))
    w_p = _owned(np.linspace(-2, 2, 200_000))
    addresses = set()
    for _ in range(20):
        w_d = donated(w_d, g)  # the previous step's output: usually still pending here
        w_p = plain(w_p, g)
        addresses.add(_address(w_d.block_until_ready()) if _ % 5 == 4 else None)
    np.testing.assert_array_equal(np.asarray(w_d), np.asarray(w_p))
    addresses.discard(None)
    # Reusing keeps the parameters in at most the two buffers that alternate between steps.
    assert len(addresses) <= 2


def test_a_view_the_user_holds_is_never_overwritten():
    f = morphax.jit(lambda x: x + 1.0, donate_argnums=0, backend="c")
    x = _owned([1.0, 2.0, 3.0])
    view = np.asarray(x)
    out = f(x)
    np.testing.assert_array_equal(view, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(out), [2.0, 3.0, 4.0])


def test_a_numpy_array_put_on_the_device_is_never_overwritten():
    f = morphax.jit(lambda x: x * 10.0, donate_argnums=0, backend="c")
    host = np.arange(5, dtype=np.float32)
    x = morphax.device_put(host)  # may share the NumPy array's memory
    out = f(x)
    np.testing.assert_array_equal(host, np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(out), np.arange(5, dtype=np.float32) * 10)


def test_a_buffer_two_arrays_share_is_never_overwritten():
    f = morphax.jit(lambda x: x - 1.0, donate_argnums=0, backend="c")
    from morphax._src.runtime.array import Array

    x = _owned([5.0, 6.0])
    twin = Array(x._buf)  # as internal code may wrap one buffer twice
    out = f(x)
    np.testing.assert_array_equal(np.asarray(twin), [5.0, 6.0])
    np.testing.assert_array_equal(np.asarray(out), [4.0, 5.0])


def test_reads_at_another_index_keep_a_fresh_output():
    # x.T read while x's buffer would be written: the kernel must not write in place. The result
    # is copied into x's buffer after the run, so it still ends there, as under JAX 0.10.2.
    from morphax._src.compiler.compile import compile_jaxpr

    f = morphax.jit(lambda x: x + x.T, donate_argnums=0, backend="c")
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    x = _owned(a)
    before = _address(x)
    out = f(x)
    np.testing.assert_array_equal(np.asarray(out), a + a.T)
    assert _address(out) == before
    closed = morphax.make_jaxpr(lambda x: x + x.T)(a)
    assert "outs=" not in compile_jaxpr(closed, "f", "c", donate=(0,)).source


def test_an_input_an_opaque_step_reads_is_not_reused():
    # dot_general's NumPy result could be a view that outlives the kernel: no reuse of x.
    f = morphax.jit(lambda x, w: jnp.tanh(x @ w) + x, donate_argnums=0, backend="c")
    rng = np.random.default_rng(0)
    a, w = rng.standard_normal((3, 3)).astype(np.float32), rng.standard_normal((3, 3)).astype(np.float32)
    out = f(_owned(a), _owned(w))
    np.testing.assert_allclose(np.asarray(out), np.tanh(a @ w) + a, rtol=1e-5, atol=1e-6)


def test_outputs_of_other_shapes_and_dtypes_do_not_take_the_buffer():
    f = morphax.jit(lambda x: (x.astype(jnp.int32), jnp.sum(x, axis=0)), donate_argnums=0, backend="c")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = _owned(a)
    before = _address(x)
    as_int, col = f(x)
    assert _address(as_int) != before and _address(col) != before
    np.testing.assert_array_equal(np.asarray(as_int), a.astype(np.int32))
    np.testing.assert_array_equal(np.asarray(col), a.sum(axis=0))


def test_the_numpy_backend_consumes_donated_arrays_and_copies_the_output_in():
    f = morphax.jit(lambda x: x * 3.0, donate_argnums=0, backend="numpy")
    x = _owned([1.0, 2.0])
    before = _address(x)
    out = f(x)
    assert x.is_deleted()
    assert _address(out) == before
    np.testing.assert_array_equal(np.asarray(out), [3.0, 6.0])


def test_the_plan_is_shown_in_the_program():
    from morphax._src.compiler.compile import compile_jaxpr

    closed = morphax.make_jaxpr(lambda x, y: jnp.exp(x) * y)(np.ones(4, np.float32), np.ones(4, np.float32))
    with pytest.warns(UserWarning, match="Some donated buffers were not usable: float32"):
        executable = compile_jaxpr(closed, "f", "c", donate=(0, 1))
    assert executable.donated == (0,)  # one output: the first donated input takes it
    assert "outs=" in executable.source and "if p in reuse" in executable.source
    assert "restrict in_a" not in executable.as_text()  # the aliased pair is not restrict
