"""Top-level names beyond the transformations: ds, fwd_and_bwd, live_arrays, make_user_context,
Device and memory, checked against NumPy, vjp and JAX 0.10.2's documented behaviour."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax._src.api.jit import trace_counters

X = np.arange(12.0, dtype=np.float32).reshape(3, 4)


def test_ds_slices_like_jax():
    x = jnp.arange(10.0)
    # JAX 0.10.2: ds(2) is Slice(start=0, size=2, stride=1); ds(1, 3, 2) takes 1, 3, 5
    assert morphax.ds(2) == morphax.ds(0, 2, 1)
    np.testing.assert_array_equal(x[morphax.ds(1, 3)], [1, 2, 3])
    np.testing.assert_array_equal(x[morphax.ds(1, 3, 2)], [1, 3, 5])
    np.testing.assert_array_equal(jnp.asarray(X)[1, morphax.ds(1, 2)], X[1, 1:3])
    # a traced start
    take = morphax.jit(lambda m, i: m[:, morphax.ds(i, 2)])
    for i in range(3):
        np.testing.assert_array_equal(take(X, i), X[:, i : i + 2])
    np.testing.assert_array_equal(morphax.vmap(lambda i: jnp.asarray(X)[0, morphax.ds(i, 2)])(np.arange(3)),
                                  np.stack([X[0, i : i + 2] for i in range(3)]))  # fmt: skip
    with pytest.raises(TypeError, match="size must be a static"):
        morphax.ds(0, -1)


def test_fwd_and_bwd_matches_vjp_and_compiles_bwd_once():
    rng = np.random.default_rng(0)
    x, w = (rng.normal(size=(3, 3)).astype(np.float32) for _ in range(2))
    ct = rng.normal(size=(3, 3)).astype(np.float32)

    def f(x, w):
        return jnp.sin(x @ w)

    want = morphax.vjp(f, x, w)[1](ct)
    fwd, bwd = morphax.fwd_and_bwd(f, argnums=(0, 1))
    before = trace_counters.traces
    for _ in range(3):
        y, residuals = fwd(x, w)
        got = bwd(residuals, ct)
    assert trace_counters.traces - before == 2  # one trace of fwd, one of bwd
    np.testing.assert_allclose(y, np.sin(x @ w), rtol=1e-6)
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=1e-6)
    fwd1, bwd1 = morphax.fwd_and_bwd(f, argnums=1, jitted=False)
    _, residuals = fwd1(x, w)
    np.testing.assert_allclose(bwd1(residuals, ct), want[1], rtol=1e-6)
    fwd2, bwd2 = morphax.fwd_and_bwd(lambda v: (jnp.sum(v**2), v * 2), argnums=0, has_aux=True)
    value, residuals, aux = fwd2(jnp.ones(2))
    assert value == 2.0
    np.testing.assert_array_equal(aux, [2, 2])
    np.testing.assert_array_equal(bwd2(residuals, 1.0), [2, 2])
    with pytest.raises(TypeError, match="bwd takes the residuals fwd returned"):
        bwd(None, ct)


def test_live_arrays_sees_new_arrays_and_not_deleted_ones():
    a = jnp.arange(5.0) + 1
    assert any(x is a for x in morphax.live_arrays())
    a.delete()
    assert not any(x is a for x in morphax.live_arrays())


def test_user_context_is_part_of_the_jit_cache_key():
    ctx = morphax.make_user_context(default_value=None)
    f = morphax.jit(lambda x: x * 2)
    before = trace_counters.traces
    f(1.0)
    with ctx(1):
        f(1.0)
        f(1.0)
    with ctx(2):
        f(1.0)
    with ctx(1):
        f(1.0)
    f(1.0)
    assert trace_counters.traces - before == 3  # None, 1, 2
    with pytest.raises(TypeError):
        ctx([1])  # not hashable


def test_device_and_memory():
    (dev,) = morphax.devices()
    assert isinstance(dev, morphax.Device)
    assert (dev.platform, dev.id, dev.process_index) == ("cpu", 0, 0)
    assert [s.name for s in morphax.memory.Space] == ["Device", "Host", "Any"]


def test_jaxpr_effects_of_debug_prints():
    def f(x):
        morphax.debug.print("{}", x)
        return x

    def g(x):
        morphax.debug.print("{}", x, ordered=True)
        return x

    effects = lambda fun: {type(e) for e in morphax.make_jaxpr(fun)(1.0).effects}  # noqa: E731
    assert effects(f) == {morphax.debug.DebugEffect}
    assert effects(g) == {morphax.debug.OrderedDebugEffect}
    assert effects(morphax.jit(f)) == {morphax.debug.DebugEffect}  # through a carried jaxpr
    assert effects(lambda x: morphax.lax.cond(x > 0, g, lambda y: y, x)) == {morphax.debug.OrderedDebugEffect}
    assert effects(lambda x: x + 1) == set()


def test_vjp_function_is_a_pytree_with_refs():
    def f(x, w):
        return jnp.sin(x) * w

    ones = jnp.ones(3)
    _, f_vjp = morphax.vjp(f, ones, ones)
    # the pullback passes through jit as residual arrays
    gx, gw = morphax.jit(lambda pullback, ct: pullback(ct))(f_vjp, ones)
    np.testing.assert_allclose(gx, np.cos(1.0) * np.ones(3), rtol=1e-6)
    np.testing.assert_allclose(gw, np.sin(1.0) * np.ones(3), rtol=1e-6)
    # JAX 0.10.2's answers for the same program
    skipped, gw = f_vjp.with_refs(morphax.ad.DontWant(), morphax.ad.GradValue())(ones)
    assert skipped == morphax.ad.DidntWant()
    np.testing.assert_allclose(gw, [0.84147096] * 3, rtol=1e-6)
    ref = morphax.new_ref(jnp.zeros(3))
    marker, _ = f_vjp.with_refs(ref, morphax.ad.GradValue())(ones)
    assert marker == morphax.ad.GradRef()
    np.testing.assert_allclose(ref[...], [0.5403023] * 3, rtol=1e-6)
    f_vjp.with_refs(ref, morphax.ad.DontWant())(ones)
    np.testing.assert_allclose(ref[...], [1.0806046] * 3, rtol=1e-6)
    with pytest.raises(TypeError, match="structure of the primal inputs"):
        f_vjp.with_refs(ref)
    with pytest.raises(TypeError, match="takes one cotangent argument"):
        f_vjp(ones, ones)


def test_scipy_and_experimental_are_attributes_loaded_on_first_use():
    # As `import jax; jax.scipy.special.erf(...)`: the submodules are attributes of the package,
    # imported on first access (so `import morphax` does not pay for them).
    code = (
        "import sys, morphax\n"
        "print('morphax.scipy' in sys.modules)\n"
        "print(round(float(morphax.scipy.special.erf(0.5)), 6), 'scipy' in dir(morphax))\n"
        "print(morphax.experimental.__name__)\n"
        "try:\n    morphax.not_a_name\nexcept AttributeError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "False",
        "0.5205 True",
        "morphax.experimental",
        "module 'morphax' has no attribute 'not_a_name'",
    ]
