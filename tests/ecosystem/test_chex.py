"""chex, unmodified, on morphax through `morphax.compat` (skipped where chex is absent): a chex
dataclass is a pytree under jit, vmap and grad; the shape/type/value asserts pass and fail where
they do under JAX (values checked against NumPy); `assert_max_traces` counts the traces of a
morphax-jitted function."""

from __future__ import annotations

import importlib
import importlib.util

import numpy as np
import pytest

if importlib.util.find_spec("chex") is None:
    pytest.skip("chex is not installed (pip install --no-deps chex)", allow_module_level=True)

import morphax.compat

# Bound by the fixture below, once jax is mapped onto morphax.
chex = jax = jnp = Linear = None


@pytest.fixture(scope="module", autouse=True)
def _libraries():
    """Map jax onto morphax for this module's tests only (installed at collection it would make
    other modules see a jax already imported), import the libraries through it, then unmap it."""
    global chex, jax, jnp, Linear
    was_installed = morphax.compat.is_installed()
    morphax.compat.install()
    chex, jax, jnp = (importlib.import_module(m) for m in ("chex", "jax", "jax.numpy"))

    @chex.dataclass
    class Linear:
        w: chex.Array
        b: chex.Array

    yield
    if not was_installed:
        morphax.compat.uninstall()


def test_chex_dataclass_is_a_pytree_under_transformations():
    rng = np.random.default_rng(0)
    w, b, x = rng.normal(size=(3, 2)), rng.normal(size=2), rng.normal(size=(5, 3))
    params = Linear(w=jnp.asarray(w, jnp.float32), b=jnp.asarray(b, jnp.float32))
    assert len(jax.tree.leaves(params)) == 2

    def loss(p, x):
        return jnp.sum((x @ p.w + p.b) ** 2)

    grads = jax.jit(jax.grad(loss))(params, jnp.asarray(x, jnp.float32))
    assert isinstance(grads, Linear)
    r = x @ w + b
    np.testing.assert_allclose(np.asarray(grads.w), 2 * x.T @ r, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(grads.b), 2 * r.sum(0), rtol=1e-5)
    batched = jax.vmap(lambda p: p.w.sum() + p.b.sum())(Linear(w=jnp.ones((4, 3, 2)), b=jnp.ones((4, 2))))
    np.testing.assert_array_equal(np.asarray(batched), [8.0] * 4)
    replaced = params.replace(b=jnp.zeros(2))
    chex.assert_trees_all_equal(replaced.w, params.w)


def test_asserts_pass_and_fail_as_under_jax():
    a = jnp.ones((3, 2))
    chex.assert_shape(a, (3, 2))
    chex.assert_shape([a, jnp.ones((3, 5))], (3, None))
    chex.assert_rank(a, 2)
    chex.assert_type(a, jnp.float32)
    chex.assert_equal_shape([a, a + 1])
    chex.assert_tree_all_finite({"a": a})
    chex.assert_trees_all_close(Linear(w=a, b=jnp.zeros(2)), Linear(w=a + 1e-7, b=jnp.zeros(2)))
    chex.assert_trees_all_equal_shapes(Linear(w=a, b=a), Linear(w=2 * a, b=a))
    with pytest.raises(AssertionError, match="assert_shape"):
        chex.assert_shape(a, (2, 2))
    with pytest.raises(AssertionError):
        chex.assert_trees_all_close(a, a + 1e-2)
    with pytest.raises(AssertionError):
        chex.assert_tree_all_finite(jnp.asarray([1.0, np.nan]))
    with pytest.raises(AssertionError):
        chex.assert_type(a, jnp.int32)

    def inside(x):  # static checks on tracers
        chex.assert_shape(x, (3,))
        chex.assert_rank(x, 1)
        return x * 2

    np.testing.assert_array_equal(np.asarray(jax.jit(inside)(jnp.ones(3))), [2.0] * 3)
    assert jax.vmap(inside)(jnp.ones((4, 3))).shape == (4, 3)


def test_assert_max_traces_counts_morphax_jit_traces():
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def double(x):
        return x * 2

    double(jnp.ones(3))
    double(jnp.ones(3) * 5)  # same shape: no retrace
    with pytest.raises(AssertionError, match="traced > 1 times"):
        double(jnp.ones(4))

    def add_one(x):
        return x + 1

    add_one_jit = jax.jit(chex.assert_max_traces(add_one, n=2))
    add_one_jit(1.0)
    add_one_jit(jnp.ones(2))
    with pytest.raises(AssertionError):
        add_one_jit(jnp.ones(3))
    chex.clear_trace_counter()


def test_set_n_cpu_devices_before_and_after_the_devices_exist():
    # chex reads jax._src.xla_bridge._backends to tell whether the devices exist yet; in a fresh
    # process the request takes effect, afterwards a different count is refused (as under JAX).
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import morphax.compat
        morphax.compat.install()
        import chex, jax
        chex.set_n_cpu_devices(3)
        print(len(jax.devices()))
        try:
            chex.set_n_cpu_devices(2)
        except RuntimeError as e:
            print("refused", "already available" in str(e))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "refused", "True"]
