"""Typed keys (`random.key`): dtype ``key<fry>``, shapes without the key words, indexing and
reshaping, key_data / wrap_key_data / key_impl, every sampler taking them, split/fold_in/clone
returning them, and jit / vmap over key arrays; JAX's repr when JAX is installed."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import random


@pytest.fixture(params=[True, False], ids=["partitionable", "original"])
def mode(request):
    old = morphax.config.threefry_partitionable
    morphax.config.update("jax_threefry_partitionable", request.param)
    yield request.param
    morphax.config.update("jax_threefry_partitionable", old)


def _data(k):
    return np.asarray(random.key_data(k))


def test_key_basics():
    k = random.key(0)
    assert isinstance(k, random.KeyArray)
    assert k.shape == () and k.ndim == 0 and k.size == 1 and k.itemsize == 8
    assert k.dtype.name == "key<fry>" and str(k.dtype) == "key<fry>" and repr(k.dtype) == "key<fry>"
    assert isinstance(k.dtype, random.PRNGKeyDtype) and k.dtype == random.key_dtype()
    assert jnp.issubdtype(k.dtype, random.prng_key) and jnp.issubdtype(k.dtype, morphax.dtypes.extended)
    assert not jnp.issubdtype(jnp.float32, random.prng_key)
    assert repr(k) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"
    np.testing.assert_array_equal(_data(k), np.asarray(random.PRNGKey(0)))
    np.testing.assert_array_equal(_data(random.key(2**40 + 5)), np.asarray(random.PRNGKey(2**40 + 5)))
    assert random.key_impl(k) == "threefry2x32" and random.key_impl(random.PRNGKey(0)) == "threefry2x32"
    assert random.key(1, impl="threefry2x32").dtype == k.dtype


def test_split_fold_in_clone_return_typed_keys(mode):
    k = random.key(42)
    raw = random.PRNGKey(42)
    ks = random.split(k, 3)
    assert isinstance(ks, random.KeyArray) and ks.shape == (3,)
    np.testing.assert_array_equal(_data(ks), np.asarray(random.split(raw, 3)))
    ks2 = random.split(k, (2, 4))
    assert ks2.shape == (2, 4) and random.key_data(ks2).shape == (2, 4, 2)
    np.testing.assert_array_equal(_data(ks2), np.asarray(random.split(raw, (2, 4))))
    f = random.fold_in(k, 7)
    assert isinstance(f, random.KeyArray) and f.shape == ()
    np.testing.assert_array_equal(_data(f), np.asarray(random.fold_in(raw, 7)))
    c = random.clone(k)
    assert isinstance(c, random.KeyArray)
    np.testing.assert_array_equal(_data(c), _data(k))
    # Raw keys in, raw keys out.
    assert not isinstance(random.split(raw), random.KeyArray)


def test_indexing_and_reshaping():
    ks = random.split(random.key(0), (2, 3))
    d = _data(ks)
    np.testing.assert_array_equal(_data(ks[0]), d[0])
    np.testing.assert_array_equal(_data(ks[1, 2]), d[1, 2])
    np.testing.assert_array_equal(_data(ks[:, 1]), d[:, 1])
    np.testing.assert_array_equal(_data(ks[..., 1]), d[..., 1, :])
    np.testing.assert_array_equal(_data(ks[None]), d[None])
    np.testing.assert_array_equal(_data(ks[jnp.array([1, 0])]), d[[1, 0]])
    assert ks[0, 0].shape == () and ks[:, 1:].shape == (2, 2) and ks[..., 1].shape == (2,)
    with pytest.raises(IndexError):
        ks[0, 0, 0]
    assert ks.reshape(3, 2).shape == (3, 2) and ks.reshape((-1,)).shape == (6,)
    np.testing.assert_array_equal(_data(ks.ravel()), d.reshape(6, 2))
    np.testing.assert_array_equal(_data(ks.T), d.transpose(1, 0, 2))
    assert ks[:1].squeeze().shape == (3,)
    assert len(ks) == 2 and [k.shape for k in ks] == [(3,), (3,)]
    with pytest.raises(TypeError):
        len(random.key(0))


def test_wrap_key_data_round_trip_and_errors():
    data = random.key_data(random.split(random.key(5), 4))
    ks = random.wrap_key_data(data)
    assert ks.shape == (4,) and ks.dtype == random.key_dtype()
    np.testing.assert_array_equal(_data(ks), np.asarray(data))
    np.testing.assert_array_equal(_data(random.wrap_key_data(np.array([1, 2], np.uint32))), [1, 2])
    with pytest.raises(TypeError, match="uint32"):
        random.wrap_key_data(jnp.zeros(2))
    with pytest.raises(TypeError, match=r"\(2,\)"):
        random.wrap_key_data(jnp.zeros(3, jnp.uint32))
    with pytest.raises(TypeError):
        random.wrap_key_data(ks)
    with pytest.raises(NotImplementedError):
        random.key(0, impl="rbg")


def test_key_arrays_refuse_arithmetic_and_numpy():
    k = random.key(0)
    with pytest.raises(TypeError, match="key<fry>"):
        k + 1
    with pytest.raises(TypeError, match="key_data"):
        np.asarray(k)
    ks = random.split(k, 3)
    np.testing.assert_array_equal(np.asarray(ks == ks[1]), [False, True, False])
    np.testing.assert_array_equal(np.asarray(ks != ks[1]), [True, False, True])
    with pytest.raises(ValueError, match="single key"):
        random.normal(ks)


# Every sampler with a typed key gives what it gives with the same raw key.
SAMPLERS = {
    "bits": lambda k: random.bits(k, (3,)),
    "uniform": lambda k: random.uniform(k, (3,)),
    "normal": lambda k: random.normal(k, (3,)),
    "truncated_normal": lambda k: random.truncated_normal(k, -1.0, 1.0, (3,)),
    "randint": lambda k: random.randint(k, (3,), 0, 10),
    "bernoulli": lambda k: random.bernoulli(k, 0.3, (3,)),
    "rademacher": lambda k: random.rademacher(k, (3,)),
    "gumbel": lambda k: random.gumbel(k, (3,)),
    "exponential": lambda k: random.exponential(k, (3,)),
    "categorical": lambda k: random.categorical(k, jnp.zeros(4), shape=(3,)),
    "permutation": lambda k: random.permutation(k, 6),
    "choice": lambda k: random.choice(k, 5, (3,), replace=False),
    "gamma": lambda k: random.gamma(k, 1.5, (3,)),
    "loggamma": lambda k: random.loggamma(k, 0.5, (3,)),
    "beta": lambda k: random.beta(k, 1.0, 2.0, (3,)),
    "dirichlet": lambda k: random.dirichlet(k, jnp.ones(3)),
    "chisquare": lambda k: random.chisquare(k, 2.0, (3,)),
    "f": lambda k: random.f(k, 2.0, 3.0, (3,)),
    "t": lambda k: random.t(k, 3.0, (3,)),
    "generalized_normal": lambda k: random.generalized_normal(k, 1.0, (3,)),
    "ball": lambda k: random.ball(k, 2),
    "poisson": lambda k: random.poisson(k, 4.0, (3,)),
    "binomial": lambda k: random.binomial(k, 10.0, 0.3, (3,)),
    "multinomial": lambda k: random.multinomial(k, 10.0, jnp.ones(3) / 3),
    "geometric": lambda k: random.geometric(k, 0.5, (3,)),
    "pareto": lambda k: random.pareto(k, 2.0, (3,)),
    "weibull_min": lambda k: random.weibull_min(k, 1.0, 2.0, (3,)),
    "rayleigh": lambda k: random.rayleigh(k, 1.0, (3,)),
    "maxwell": lambda k: random.maxwell(k, (3,)),
    "double_sided_maxwell": lambda k: random.double_sided_maxwell(k, 0.0, 1.0, (3,)),
    "lognormal": lambda k: random.lognormal(k, 1.0, (3,)),
    "triangular": lambda k: random.triangular(k, 0.0, 0.5, 1.0, (3,)),
    "wald": lambda k: random.wald(k, 1.0, (3,)),
    "laplace": lambda k: random.laplace(k, (3,)),
    "logistic": lambda k: random.logistic(k, (3,)),
    "cauchy": lambda k: random.cauchy(k, (3,)),
    "orthogonal": lambda k: random.orthogonal(k, 3),
    "multivariate_normal": lambda k: random.multivariate_normal(k, jnp.zeros(2), jnp.eye(2)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_samplers_accept_typed_keys(name):
    fn = SAMPLERS[name]
    np.testing.assert_array_equal(np.asarray(fn(random.key(3))), np.asarray(fn(random.PRNGKey(3))))


def test_dtype_none_and_mode_none_mean_defaults():
    k = random.key(0)
    assert random.randint(k, (2,), 0, 5, None).dtype == jnp.int32
    assert random.rademacher(k, (2,), None).dtype == jnp.int32
    np.testing.assert_array_equal(
        np.asarray(random.gumbel(k, (2,), None, None)), np.asarray(random.gumbel(k, (2,)))
    )
    np.testing.assert_array_equal(
        np.asarray(random.categorical(k, jnp.zeros(3), mode=None)),
        np.asarray(random.categorical(k, jnp.zeros(3))),
    )


def test_jit_with_typed_keys_in_and_out(mode):
    k = random.key(9)
    split = morphax.jit(lambda k: random.split(k, 4))(k)
    assert isinstance(split, random.KeyArray) and split.shape == (4,)
    np.testing.assert_array_equal(_data(split), _data(random.split(k, 4)))
    x = morphax.jit(lambda k: random.normal(k, (5,)))(k)
    np.testing.assert_array_equal(np.asarray(x), np.asarray(random.normal(k, (5,))))
    # A key array in a pytree, and a key produced and consumed inside one jitted function.
    out = morphax.jit(lambda d: random.uniform(random.fold_in(d["k"], 1), (2,)))({"k": k})
    np.testing.assert_array_equal(np.asarray(out), np.asarray(random.uniform(random.fold_in(k, 1), (2,))))


def test_vmap_over_key_arrays(mode):
    ks = random.split(random.key(1), 5)
    out = morphax.vmap(lambda k: random.normal(k, (3,)))(ks)
    assert out.shape == (5, 3)
    for i in range(5):
        np.testing.assert_array_equal(np.asarray(out[i]), np.asarray(random.normal(ks[i], (3,))))
    # Keys out of vmap stay typed, batched on the leading axis.
    sub = morphax.vmap(lambda k: random.split(k, 2))(ks)
    assert isinstance(sub, random.KeyArray) and sub.shape == (5, 2)
    np.testing.assert_array_equal(_data(sub[3]), _data(random.split(ks[3], 2)))
    # A 2-D key array, mapped over its second axis, with a rejection sampler inside.
    ks2 = random.split(random.key(2), (2, 3))
    g = morphax.vmap(morphax.vmap(lambda k: random.gamma(k, 2.0, (2,))), in_axes=1)(ks2)
    assert g.shape == (3, 2, 2)
    np.testing.assert_array_equal(np.asarray(g[2, 1]), np.asarray(random.gamma(ks2[1, 2], 2.0, (2,))))


def test_tracer_repr_and_grad_with_typed_key():
    seen = []
    morphax.jit(lambda k: seen.append(repr(k)) or random.uniform(k))(random.key(0))
    assert seen == ["Traced<key<fry>[]>"]
    g = morphax.grad(lambda s, k: jnp.sum(random.normal(k, (4,)) * s))(2.0, random.key(0))
    assert float(g) == pytest.approx(float(jnp.sum(random.normal(random.key(0), (4,)))))


def test_repr_matches_jax():
    jax = pytest.importorskip("jax")
    assert repr(random.key(0)) == repr(jax.random.key(0))
    assert repr(random.split(random.key(0), 3)) == repr(jax.random.split(jax.random.key(0), 3))
    assert repr(random.split(random.key(0), (2, 2))) == repr(jax.random.split(jax.random.key(0), (2, 2)))
    assert str(random.key_dtype()) == str(jax.random.key_dtype())
