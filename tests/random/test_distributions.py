"""Samplers beyond the golden entries: statistical sanity at fixed keys (so every threshold below
is checked against one deterministic draw, chosen loose enough to be far from flaky under any
correct generator), argument handling, dtypes, shapes, both threefry modes, tracing and grad."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import morphax
import morphax.numpy as jnp
from morphax import random
from morphax._src.core.jaxpr import eval_jaxpr

N = 100_000
# Five standard errors of the sample mean / variance at N draws: a correct sampler fails such a
# bound with probability about 6e-7 per check.
Z = 5.0
# Kolmogorov-Smirnov: reject only below this p-value (fixed keys, so the result never varies).
KS_MIN_P = 1e-3


@pytest.fixture(params=[True, False], ids=["partitionable", "original"])
def mode(request):
    old = morphax.config.threefry_partitionable
    morphax.config.update("jax_threefry_partitionable", request.param)
    yield request.param
    morphax.config.update("jax_threefry_partitionable", old)


def _np(x):
    return np.asarray(x)


# ------------------------------------------------------------------------------------- statistics


def test_uniform_moments_and_ks(mode):
    u = _np(random.uniform(random.PRNGKey(1), (N,))).astype(np.float64)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < Z * np.sqrt(1 / 12 / N)
    # Var of the sample variance of U(0,1): (1/80 - 1/144) / N.
    assert abs(u.var() - 1 / 12) < Z * np.sqrt((1 / 80 - 1 / 144) / N)
    assert stats.kstest(u, "uniform").pvalue > KS_MIN_P


def test_normal_moments_and_ks(mode):
    x = _np(random.normal(random.PRNGKey(2), (N,))).astype(np.float64)
    assert np.isfinite(x).all()
    assert abs(x.mean()) < Z / np.sqrt(N)
    assert abs(x.var() - 1.0) < Z * np.sqrt(2 / N)
    assert stats.kstest(x, "norm").pvalue > KS_MIN_P


def test_uniform_range_and_bounds_arrays():
    key = random.PRNGKey(3)
    u = _np(random.uniform(key, (1000,), minval=-2.0, maxval=5.0))
    assert u.min() >= -2.0 and u.max() < 5.0
    lo = jnp.array([0.0, 10.0, -5.0])
    u2 = _np(random.uniform(key, (400, 3), minval=lo, maxval=lo + 1.0))
    assert ((u2 >= _np(lo)) & (u2 < _np(lo) + 1)).all()
    with pytest.raises(ValueError, match="broadcast"):
        random.uniform(key, (3,), minval=jnp.zeros((2, 3)))
    with pytest.raises(ValueError, match="float"):
        random.uniform(key, (3,), dtype=jnp.int32)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_uniform_and_normal_small_floats(dtype):
    key = random.PRNGKey(4)
    u = random.uniform(key, (2000,), dtype=dtype)
    assert u.dtype == jnp.dtype(dtype)
    uf = _np(u).astype(np.float32)
    assert uf.min() >= 0 and uf.max() < 1 and abs(uf.mean() - 0.5) < 0.05
    n = _np(random.normal(key, (2000,), dtype=dtype)).astype(np.float32)
    assert np.isfinite(n).all() and abs(n.mean()) < 0.15 and abs(n.std() - 1) < 0.1


def test_x64_default_float_and_normal():
    with morphax.enable_x64():
        x = random.normal(random.PRNGKey(5), (N,))
        assert x.dtype == np.float64
        x = _np(x)
    assert abs(x.mean()) < Z / np.sqrt(N) and abs(x.var() - 1) < Z * np.sqrt(2 / N)


def test_complex_normal():
    z = _np(random.normal(random.PRNGKey(6), (N,), jnp.complex64))
    assert z.dtype == np.complex64
    # Real and imaginary parts are independent with variance 1/2 each.
    assert abs(z.real.var() - 0.5) < 0.02 and abs(z.imag.var() - 0.5) < 0.02
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 0.02


def test_truncated_normal_in_bounds():
    x = _np(random.truncated_normal(random.PRNGKey(7), -1.0, 2.0, (N,)))
    assert x.min() > -1.0 and x.max() < 2.0
    want = stats.truncnorm(-1.0, 2.0)
    assert abs(x.mean() - want.mean()) < Z * want.std() / np.sqrt(N)
    lo = jnp.array([-1.0, 0.0])
    shaped = _np(random.truncated_normal(random.PRNGKey(7), lo, 3.0))
    assert shaped.shape == (2,)


def test_gumbel_exponential_rademacher():
    g = _np(random.gumbel(random.PRNGKey(8), (N,))).astype(np.float64)
    assert abs(g.mean() - np.euler_gamma) < Z * (np.pi / np.sqrt(6)) / np.sqrt(N)
    e = _np(random.exponential(random.PRNGKey(9), (N,))).astype(np.float64)
    assert e.min() >= 0 and abs(e.mean() - 1) < Z / np.sqrt(N)
    assert stats.kstest(e, "expon").pvalue > KS_MIN_P
    r = _np(random.rademacher(random.PRNGKey(10), (1000,)))
    assert r.dtype == np.int32 and set(np.unique(r)) == {-1, 1}


# ---------------------------------------------------------------------------------------- randint


def test_randint_uniform_over_range(mode):
    r = _np(random.randint(random.PRNGKey(11), (N,), 3, 13))
    assert r.dtype == np.int32 and r.min() == 3 and r.max() == 12
    counts = np.bincount(r - 3, minlength=10)
    assert stats.chisquare(counts).pvalue > KS_MIN_P


def test_randint_edge_ranges():
    key = random.PRNGKey(12)
    assert (_np(random.randint(key, (10,), 5, 5)) == 5).all()  # empty range gives minval
    assert (_np(random.randint(key, (10,), 5, 2)) == 5).all()
    full = _np(random.randint(key, (5000,), 0, 256, jnp.uint8))
    assert full.dtype == np.uint8 and full.max() > 250 and full.min() < 5
    i8 = _np(random.randint(key, (5000,), -128, 127, jnp.int8))
    assert i8.min() == -128 and i8.max() == 126
    big = _np(random.randint(key, (1000,), -(2**31), 2**31 - 1))
    assert big.min() < -(2**30) and big.max() > 2**30
    per_row = _np(random.randint(key, (500, 3), jnp.array([0, 10, 20]), jnp.array([1, 12, 30])))
    assert (per_row[:, 0] == 0).all() and set(np.unique(per_row[:, 1])) == {10, 11}
    assert per_row[:, 2].min() >= 20 and per_row[:, 2].max() < 30
    with pytest.raises(TypeError, match="integer"):
        random.randint(key, (3,), 0, 5, jnp.float32)


# ------------------------------------------------------------------------------ bernoulli & choice


def test_bernoulli(mode):
    b = _np(random.bernoulli(random.PRNGKey(13), 0.3, (N,)))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < Z * np.sqrt(0.21 / N)
    p = jnp.array([0.0, 1.0, 0.5])
    bp = _np(random.bernoulli(random.PRNGKey(13), p))
    assert bp.shape == (3,) and not bp[0] and bp[1]
    with pytest.raises(TypeError, match="floating"):
        random.bernoulli(random.PRNGKey(13), jnp.array([1, 0]))


def test_choice_variants():
    key = random.PRNGKey(14)
    c = _np(random.choice(key, 5, (N,)))
    assert stats.chisquare(np.bincount(c, minlength=5)).pvalue > KS_MIN_P
    a = jnp.arange(10) * 10
    no_rep = _np(random.choice(key, a, (10,), replace=False))
    assert sorted(no_rep.tolist()) == list(range(0, 100, 10))
    p = jnp.array([0.1, 0.0, 0.9])
    cp = _np(random.choice(key, 3, (N,), p=p))
    freq = np.bincount(cp, minlength=3) / N
    assert freq[1] == 0 and abs(freq[2] - 0.9) < Z * np.sqrt(0.09 / N)
    cpn = _np(random.choice(key, 4, (3,), replace=False, p=jnp.array([0.1, 0.2, 0.3, 0.4])))
    assert len(set(cpn.tolist())) == 3
    m = jnp.arange(12).reshape(3, 4)
    cols = _np(random.choice(key, m, (2,), axis=1))
    assert cols.shape == (3, 2) and (cols[1] - cols[0] == 4).all()
    assert _np(random.choice(key, 3, (0,))).shape == (0,)
    with pytest.raises(ValueError, match="larger sample"):
        random.choice(key, 3, (4,), replace=False)


# ------------------------------------------------------------------------- permutation & categorical


def test_permutation_variants(mode):
    key = random.PRNGKey(15)
    p = _np(random.permutation(key, 1000))
    assert sorted(p.tolist()) == list(range(1000)) and (p != np.arange(1000)).any()
    x = jnp.arange(12).reshape(3, 4)
    rows = _np(random.permutation(key, x, axis=1))
    assert (np.sort(rows, axis=1) == np.arange(12).reshape(3, 4)).all()
    assert (rows - rows[:, :1] == rows[0] - rows[0, 0]).all()  # same column shuffle for every row
    ind = _np(random.permutation(key, x, axis=1, independent=True))
    assert (np.sort(ind, axis=1) == np.arange(12).reshape(3, 4)).all()
    f = _np(random.permutation(key, jnp.array([1.5, 2.5, 3.5])))
    assert sorted(f.tolist()) == [1.5, 2.5, 3.5]
    assert _np(random.permutation(key, 1)).tolist() == [0]
    with pytest.raises(TypeError, match="integer"):
        random.permutation(key, 3.0)


def test_categorical_frequencies_and_shapes(mode):
    logits = jnp.log(jnp.array([0.2, 0.3, 0.5]))
    c = _np(random.categorical(random.PRNGKey(16), logits, shape=(N,)))
    freq = np.bincount(c, minlength=3) / N
    assert np.abs(freq - [0.2, 0.3, 0.5]).max() < Z * np.sqrt(0.25 / N)
    lg = jnp.zeros((2, 3))
    assert random.categorical(random.PRNGKey(16), lg).shape == (2,)
    assert random.categorical(random.PRNGKey(16), lg, axis=0).shape == (3,)
    assert random.categorical(random.PRNGKey(16), lg, shape=(5, 2)).shape == (5, 2)
    no_rep = _np(random.categorical(random.PRNGKey(16), jnp.zeros(4), shape=(4,), replace=False))
    assert sorted(no_rep.tolist()) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="broadcast"):
        random.categorical(random.PRNGKey(16), lg, shape=(5, 3))


# -------------------------------------------------------------------------------- keys and modes


def test_split_keys_are_distinct_and_modes_differ():
    key = random.PRNGKey(0)
    keys = _np(random.split(key, 100))
    assert len({tuple(k) for k in keys}) == 100
    with morphax.config._override("jax_threefry_partitionable", False):
        old = _np(random.split(key, 100))
    assert not np.array_equal(keys, old)
    assert random.split(key, (2, 3, 4)).shape == (2, 3, 4, 2)
    assert random.split(key, 0).shape == (0, 2)


def test_fold_in_and_bits_arguments():
    key = random.PRNGKey(0)
    assert not np.array_equal(_np(random.fold_in(key, 1)), _np(random.fold_in(key, 2)))
    np.testing.assert_array_equal(_np(random.fold_in(key, jnp.uint32(3))), _np(random.fold_in(key, 3)))
    with pytest.raises(TypeError, match="scalar"):
        random.fold_in(key, jnp.arange(2))
    with pytest.raises(ValueError, match="unsigned"):
        random.bits(key, (2,), jnp.int32)
    assert random.bits(key).shape == () and random.bits(key).dtype == np.uint32
    assert random.bits(key, (0, 3)).shape == (0, 3)


def test_numpy_key_is_accepted():
    key = np.array([0, 42], np.uint32)
    np.testing.assert_array_equal(
        _np(random.uniform(key, (4,))), _np(random.uniform(random.PRNGKey(42), (4,)))
    )


# ---------------------------------------------------------------------------- transformations


DISTS = {
    "gumbel": lambda k: random.gumbel(k, (4,)),
    "exponential": lambda k: random.exponential(k, (4,)),
    "truncated_normal": lambda k: random.truncated_normal(k, -1.0, 1.0, (4,)),
    "choice_p": lambda k: random.choice(k, 3, (5,), p=jnp.array([0.2, 0.3, 0.5])),
    "choice_no_replace": lambda k: random.choice(k, 6, (3,), replace=False),
    "permutation_2d": lambda k: random.permutation(k, jnp.arange(6).reshape(2, 3), axis=1),
    "rademacher": lambda k: random.rademacher(k, (5,)),
    "normal_complex": lambda k: random.normal(k, (3,), jnp.complex64),
    "randint_u8": lambda k: random.randint(k, (5,), 0, 256, jnp.uint8),
}


@pytest.mark.parametrize("name", list(DISTS))
def test_staged_matches_eager(mode, name):
    key = random.PRNGKey(21)
    closed = morphax.make_jaxpr(DISTS[name])(key)
    (staged,) = eval_jaxpr(closed.jaxpr, closed.consts, key)
    np.testing.assert_array_equal(_np(staged), _np(DISTS[name](key)))


def test_grad_through_samplers():
    key = random.PRNGKey(22)
    eps = _np(random.normal(key, (3,)))
    g = morphax.grad(lambda s: jnp.sum(s * random.normal(key, (3,)) + 1.0))(2.0)
    np.testing.assert_allclose(float(g), eps.sum(), rtol=1e-6)
    g2 = morphax.grad(lambda m: jnp.sum(random.uniform(key, (3,), minval=m, maxval=m + 1.0)))(0.5)
    assert float(g2) == pytest.approx(3.0)
