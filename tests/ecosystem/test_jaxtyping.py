"""jaxtyping, unmodified, on morphax through `morphax.compat` (skipped where jaxtyping is absent):
shape and dtype annotations are checked on arrays and on tracers, under jit and vmap, with
`jaxtyped` and beartype (where installed) and with jaxtyping's own isinstance checks."""

from __future__ import annotations

import importlib
import importlib.util

import numpy as np
import pytest

if importlib.util.find_spec("jaxtyping") is None:
    pytest.skip("jaxtyping is not installed (pip install --no-deps jaxtyping)", allow_module_level=True)

import morphax.compat

# Bound by the fixture below, once jax is mapped onto morphax.
jaxtyping = jax = jnp = Array = Float = Int = Shaped = jaxtyped = None


@pytest.fixture(scope="module", autouse=True)
def _libraries():
    """Map jax onto morphax for this module's tests only (installed at collection it would make
    other modules see a jax already imported), import the libraries through it, then unmap it."""
    global jaxtyping, jax, jnp, Array, Float, Int, Shaped, jaxtyped
    was_installed = morphax.compat.is_installed()
    morphax.compat.install()
    jaxtyping, jax, jnp = (importlib.import_module(m) for m in ("jaxtyping", "jax", "jax.numpy"))
    Array, Float, Int, Shaped, jaxtyped = (
        jaxtyping.Array,
        jaxtyping.Float,
        jaxtyping.Int,
        jaxtyping.Shaped,
        jaxtyping.jaxtyped,
    )
    yield
    if not was_installed:
        morphax.compat.uninstall()


def test_isinstance_checks_on_arrays_and_tracers():
    x = jnp.ones((2, 3))
    assert isinstance(x, Float[Array, "2 3"]) and isinstance(x, Shaped[Array, "a b"])
    assert not isinstance(x, Int[Array, "2 3"]) and not isinstance(x, Float[Array, "3"])
    assert isinstance(jnp.arange(3), Int[Array, " n"])
    seen = {}

    def f(v):
        seen["jit"] = isinstance(v, Float[Array, "2 3"]) and not isinstance(v, Float[Array, "3 2"])
        return v

    jax.jit(f)(x)
    jax.vmap(lambda row: seen.update(vmap=isinstance(row, Float[Array, "3"])) or row)(x)
    assert seen == {"jit": True, "vmap": True}


def test_jaxtyped_binds_dimensions_across_arguments_under_jit():
    @jaxtyped(typechecker=None)
    def same_shapes(a, b):
        assert isinstance(a, Float[Array, "batch n"])
        return isinstance(b, Float[Array, "batch n"])

    assert bool(jax.jit(same_shapes)(jnp.ones((2, 3)), jnp.ones((2, 3))))
    assert not bool(jax.jit(same_shapes)(jnp.ones((2, 3)), jnp.ones((4, 3))))


def test_jaxtyped_with_beartype_under_jit():
    beartype = pytest.importorskip("beartype").beartype

    @jax.jit
    @jaxtyped(typechecker=beartype)
    def matvec(a: Float[Array, "m n"], x: Float[Array, " n"]) -> Float[Array, " m"]:  # noqa: F722
        return a @ x

    rng = np.random.default_rng(0)
    a, x = rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=2).astype(np.float32)
    np.testing.assert_allclose(np.asarray(matvec(jnp.asarray(a), jnp.asarray(x))), a @ x, rtol=1e-6)
    with pytest.raises(jaxtyping.TypeCheckError):
        matvec(jnp.ones((3, 2)), jnp.ones(3))
    with pytest.raises(jaxtyping.TypeCheckError):
        matvec(jnp.ones((3, 2), jnp.int32), jnp.ones(2, jnp.int32))
