"""The lax names of composites, reduce_precision, mulhi, split, lax_rng and control_flow.reduce against independent oracles (NumPy,
Python big integers, loops, known-answer vectors, finite differences), with bit-exact JAX
comparisons when jax is installed."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import morphax
import morphax.lax as lax
import morphax.numpy as jnp
from morphax.test_util import check_grads

RNG = np.random.default_rng(0)
DN1 = lax.ScatterDimensionNumbers(
    update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
DN_ROWS = lax.ScatterDimensionNumbers(
    update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)


def _jax():
    return pytest.importorskip("jax")


def _u(x, dt):
    return np.asarray(x).view({2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dt).itemsize])


# --------------------------------------------------------------------------------- reduce_precision


def test_reduce_precision_matches_narrow_float_rounding():
    # Rounding float32 to (8, 7) is a float32 -> bfloat16 conversion (round to nearest even, inf on
    # overflow); (5, 10) is float16 rounding where float16 has normal numbers.
    x = RNG.integers(0, 2**32, size=50000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = x[np.isfinite(x)]
    got = np.asarray(lax.reduce_precision(x, 8, 7))
    want = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(_u(got, np.float32), _u(want, np.float32))
    normal = (np.abs(x) >= 2.0**-14) | (x == 0)
    got = np.asarray(lax.reduce_precision(x, 5, 10))[normal]
    with np.errstate(over="ignore"):
        want = x[normal].astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(_u(got, np.float32), _u(want, np.float32))


def test_reduce_precision_underflow_nan_and_identity():
    x = np.array([1e-40, -1e-40, 1e-5, -3e-6, np.nan, -np.nan, 70000.0, -1e30, 1.0], np.float32)
    got = np.asarray(lax.reduce_precision(x, 5, 10))
    np.testing.assert_array_equal(got[:2], [0.0, 0.0])
    assert np.signbit(got[1]) and not np.signbit(got[0])
    assert got[2] == np.float32(np.float16(1e-5)) or got[2] == 0  # below f16's normal range: flushed
    assert np.isnan(got[4]) and np.isnan(got[5])
    assert got[6] == np.inf and got[7] == -np.inf and got[8] == 1.0
    y = RNG.normal(size=100).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(lax.reduce_precision(y, 8, 23)), y)
    assert np.asarray(lax.reduce_precision(jnp.float16(3.0), 5, 10)).dtype == np.float16


def test_reduce_precision_derivatives_and_errors():
    x = jnp.asarray(np.array([1.1, 2.3], np.float32))
    t = jnp.asarray(np.array([1.0001, 3.7], np.float32))
    _, tan = morphax.jvp(lambda v: lax.reduce_precision(v, 5, 3), (x,), (t,))
    np.testing.assert_array_equal(np.asarray(tan), np.asarray(lax.reduce_precision(t, 5, 3)))
    g = morphax.grad(lambda v: lax.reduce_precision(v, 8, 7).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), [1.0, 1.0])
    with pytest.raises(ValueError, match="exponent_bits must be positive"):
        lax.reduce_precision(x, 0, 3)
    with pytest.raises(ValueError, match="mantissa_bits must be non-negative"):
        lax.reduce_precision(x, 5, -1)
    with pytest.raises(TypeError, match="reduce_precision"):
        lax.reduce_precision(jnp.arange(3), 5, 3)


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32"])
def test_reduce_precision_bit_exact_vs_jax(dt):
    jax = _jax()
    dt = np.dtype(dt)
    if dt.itemsize == 2:
        x = np.arange(2**16, dtype=np.uint16).view(dt)
    else:
        x = RNG.integers(0, 2**32, size=40000, dtype=np.uint64).astype(np.uint32).view(dt)
    for e, m in ((5, 10), (8, 7), (4, 3), (2, 1), (1, 0), (3, 0), (11, 52), (6, 4)):
        want = np.asarray(jax.lax.reduce_precision(x, e, m))
        got = np.asarray(lax.reduce_precision(x, e, m))
        np.testing.assert_array_equal(_u(got, dt), _u(want, dt), err_msg=f"{dt} e={e} m={m}")


# ------------------------------------------------------------------------------------------ mulhi


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "uint16", "int32", "uint32"])
def test_mulhi_vs_big_integers(dt):
    info = np.iinfo(dt)
    edges = np.array([info.min, info.min + 1, -1 if info.min else 1, 0, 1, 2, info.max, info.max - 1], dt)
    x = np.concatenate([np.repeat(edges, len(edges)), RNG.integers(info.min, info.max, 200, endpoint=True)])
    y = np.concatenate([np.tile(edges, len(edges)), RNG.integers(info.min, info.max, 200, endpoint=True)])
    x, y = x.astype(dt), y.astype(dt)
    bits = info.bits
    want = np.array([(int(a) * int(b)) >> bits for a, b in zip(x, y)])  # floor shift: signed-correct
    got = lax.mulhi(jnp.asarray(x), jnp.asarray(y))
    assert np.asarray(got).dtype == np.dtype(dt)
    np.testing.assert_array_equal(np.asarray(got).astype(np.int64), want)


@pytest.mark.parametrize("dt", ["int64", "uint64"])
def test_mulhi_64_bit(dt):
    with morphax.enable_x64():
        info = np.iinfo(dt)
        vals = [info.min, info.min + 1, -1 if info.min else 1, 0, 1, 3, info.max, info.max // 3]
        vals += [int(v) for v in RNG.integers(info.min, info.max, 50, dtype=dt, endpoint=True)]
        x = np.array([a for a in vals for _ in vals], dt)
        y = np.array([b for _ in vals for b in vals], dt)
        got = np.asarray(lax.mulhi(jnp.asarray(x), jnp.asarray(y)))
        want = np.array([(int(a) * int(b)) >> 64 for a, b in zip(x, y)], dtype=object)
        assert [int(v) for v in got] == [int(w) for w in want]


def test_mulhi_vs_jax_and_rules():
    jax = _jax()
    x = RNG.integers(-(2**31), 2**31, 300).astype(np.int32)
    y = RNG.integers(-(2**31), 2**31, 300).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(lax.mulhi(x, y)), np.asarray(jax.lax.mulhi(x, y)))
    u, v = x.view(np.uint32), y.view(np.uint32)
    np.testing.assert_array_equal(np.asarray(lax.mulhi(u, v)), np.asarray(jax.lax.mulhi(u, v)))
    got = morphax.vmap(lax.mulhi)(jnp.asarray(x.reshape(3, 100)), jnp.asarray(y.reshape(3, 100)))
    np.testing.assert_array_equal(np.asarray(got).ravel(), np.asarray(lax.mulhi(x, y)))
    with pytest.raises(TypeError, match="mulhi"):
        lax.mulhi(jnp.ones(3), jnp.ones(3))


# --------------------------------------------------------------------- optimization_barrier, split


def test_optimization_barrier_is_identity_under_transforms():
    tree = {"a": jnp.arange(3.0), "b": (jnp.int32(4), 2.0)}
    out = lax.optimization_barrier(tree)
    assert morphax.tree_util.tree_structure(out) == morphax.tree_util.tree_structure(tree)
    np.testing.assert_array_equal(np.asarray(out["a"]), [0.0, 1.0, 2.0])
    assert lax.optimization_barrier(()) == ()

    def f(x):
        y = lax.optimization_barrier((jnp.sin(x), x * 2))
        return (y[0] * y[1]).sum()

    x = jnp.asarray(np.array([0.3, -1.2, 2.0]))
    check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(np.asarray(morphax.jit(f)(x)), np.asarray(f(x)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(morphax.vmap(f)(x[:, None])), [f(x[i : i + 1]) for i in range(3)])
    assert "optimization_barrier" in str(morphax.make_jaxpr(f)(x))


def test_split_values_grads_and_errors():
    x = RNG.normal(size=(3, 7)).astype(np.float32)
    parts = lax.split(x, (2, 0, 5), axis=-1)
    for got, want in zip(parts, np.split(x, [2, 2], axis=1)):
        np.testing.assert_array_equal(np.asarray(got), want)
    jaxpr = str(morphax.make_jaxpr(lambda v: lax.split(v, (3, 4), 1))(x))
    assert "split[" in jaxpr and "axis=1" in jaxpr

    def f(v):
        a, b = lax.split(v, (1, 2), 0)
        return (jnp.sin(a).sum() * b).sum()

    check_grads(f, (jnp.asarray(x.astype(np.float64)),), order=2, modes=("fwd", "rev"))
    with pytest.raises(ValueError, match="Sum of sizes 4"):
        lax.split(jnp.arange(5), (2, 2))
    with pytest.raises(ValueError, match="nonnegative"):
        lax.split(jnp.arange(5), (-1, 6))


# --------------------------------------------------------------------------------- rng_bit_generator


def test_philox_known_answers():
    # Random123's philox4x32_10 vectors: the first block uses counter = key word 1, high = key word 0.
    for key, want in (
        ([0, 0, 0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
        ([0xFFFFFFFF] * 4, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ):
        for alg in (lax.RandomAlgorithm.RNG_PHILOX, lax.RandomAlgorithm.RNG_DEFAULT):
            _, bits = lax.rng_bit_generator(jnp.asarray(np.array(key, np.uint32)), (4,), algorithm=alg)
            np.testing.assert_array_equal(np.asarray(bits), np.array(want, np.uint32))


def test_threefry_uses_the_threefry_cipher_on_counters():
    key = np.array([11, 22, 33, 0], np.uint32)
    new_key, bits = lax.rng_bit_generator(key, (6,), algorithm=lax.RandomAlgorithm.RNG_THREE_FRY)
    # Counters 33, 34, 35 (the state word), each giving two adjacent 32-bit values.
    w0, w1 = lax.threefry2x32(
        np.uint32(11), np.uint32(22), np.array([33, 34, 35], np.uint32), np.zeros(3, np.uint32)
    )
    np.testing.assert_array_equal(np.asarray(bits), np.stack([np.asarray(w0), np.asarray(w1)], 1).ravel())
    np.testing.assert_array_equal(np.asarray(new_key), [11, 22, 36, 0])
    _, small = lax.rng_bit_generator(key, (6,), dtype=np.uint8, algorithm=1)
    np.testing.assert_array_equal(np.asarray(small), np.asarray(bits).astype(np.uint8))


def test_rng_bit_generator_vmap_jit_and_errors():
    keys = RNG.integers(0, 2**32, size=(3, 4), dtype=np.uint64).astype(np.uint32)
    for alg in lax.RandomAlgorithm:
        fn = lambda k: lax.rng_bit_generator(k, (2, 5), algorithm=alg)  # noqa: B023
        got_k, got_b = morphax.vmap(fn)(jnp.asarray(keys))
        for i in range(3):
            k, b = fn(jnp.asarray(keys[i]))
            np.testing.assert_array_equal(np.asarray(got_k[i]), np.asarray(k))
            np.testing.assert_array_equal(np.asarray(got_b[i]), np.asarray(b))
        jk, jb = morphax.jit(fn)(jnp.asarray(keys[0]))
        np.testing.assert_array_equal(np.asarray(jb), np.asarray(fn(jnp.asarray(keys[0]))[1]))
    with pytest.raises(TypeError, match="unsupported dtype int32"):
        lax.rng_bit_generator(keys[0], (3,), dtype=np.int32)
    with pytest.raises(TypeError, match="uint32\\[4\\]"):
        lax.rng_bit_generator(keys[0][:2], (3,))
    assert str(lax.RandomAlgorithm.RNG_PHILOX) == "RNG_PHILOX"


def test_rng_bit_generator_bit_exact_vs_jax():
    jax = _jax()
    rng = np.random.default_rng(5)
    key = rng.integers(0, 2**32, size=4, dtype=np.uint64).astype(np.uint32)
    wraps = np.array([key[0], key[1], 0xFFFFFFFF, 0xFFFFFFFF], np.uint32)  # the counter wraps

    def same(k, shape, dt, alg):
        wk, wb = jax.lax.rng_bit_generator(k, shape, dtype=dt, algorithm=jax.lax.RandomAlgorithm(alg))
        gk, gb = lax.rng_bit_generator(k, shape, dtype=dt, algorithm=alg)
        what = f"{k} {shape} {np.dtype(dt).name} {alg}"
        np.testing.assert_array_equal(np.asarray(gk), np.asarray(wk), err_msg=what)
        np.testing.assert_array_equal(np.asarray(gb), np.asarray(wb), err_msg=what)
        assert np.asarray(gb).dtype == np.asarray(wb).dtype

    shapes = [(), (5,), (6,), (3, 5), (4, 1, 3), (0,)]
    dts = (np.uint32, np.uint8, np.uint16)
    for j, shape in enumerate(shapes):
        for alg in (0, 1, 2):
            same(key, shape, dts[j % 3], alg)
            if j < 3:
                same(wraps, shape, np.uint32, alg)
    jax.config.update("jax_enable_x64", True)
    try:
        with morphax.enable_x64():
            for shape in ((5,), (2, 3)):
                for alg in (0, 1, 2):
                    same(key, shape, np.uint64, alg)
            same(key.view(np.uint64), (7,), np.uint64, 1)  # the uint64[2] form of the key
    finally:
        jax.config.update("jax_enable_x64", False)


# -------------------------------------------------------------------------------------- rng_uniform


def test_rng_uniform_range_and_statistics():
    x = np.asarray(lax.rng_uniform(-2.0, 3.0, (20000,)))
    assert x.dtype == np.float32 and x.min() >= -2.0 and x.max() < 3.0
    assert abs(x.mean() - 0.5) < 0.05 and abs(x.var() - 25 / 12) < 0.1
    assert not np.array_equal(x, np.asarray(lax.rng_uniform(-2.0, 3.0, (20000,))))
    i = np.asarray(lax.rng_uniform(jnp.int32(-3), jnp.int32(4), (5000,)))
    assert i.dtype == np.int32 and set(np.unique(i)) == set(range(-3, 4))
    h = np.asarray(lax.rng_uniform(jnp.bfloat16(1.0), jnp.bfloat16(2.0), (2000,)))
    assert h.astype(np.float32).max() < 2.0
    np.testing.assert_array_equal(np.asarray(lax.rng_uniform(5.0, 1.0, (3,))), [5.0, 5.0, 5.0])
    j = np.asarray(morphax.jit(lambda: lax.rng_uniform(0.0, 1.0, (1000,)))())
    assert 0.0 <= j.min() and j.max() < 1.0
    with pytest.raises(ValueError, match="identical dtypes"):
        lax.rng_uniform(0.0, 1, (3,))
    with pytest.raises(ValueError, match="must be scalars"):
        lax.rng_uniform(jnp.zeros(2), 1.0, (3,))


def test_rng_uniform_vmap_and_derivative():
    lo = jnp.asarray(np.array([0.0, 10.0, -5.0], np.float32))
    out = np.asarray(morphax.vmap(lambda a: lax.rng_uniform(a, a + 1.0, (4, 2)))(lo))
    assert out.shape == (3, 4, 2)
    for k in range(3):
        assert (out[k] >= float(lo[k])).all() and (out[k] < float(lo[k]) + 1).all()
    # A sample is a + u (b - a): d/da = 1 - u, d/db = u, with u read off the sample.
    a, b = jnp.float32(1.0), jnp.float32(3.0)
    s, ta = morphax.jvp(lambda a: lax.rng_uniform(a, b, (50,)), (a,), (jnp.float32(1.0),))
    np.testing.assert_allclose(np.asarray(ta), (3.0 - np.asarray(s)) / 2.0, rtol=1e-6)


# ------------------------------------------------------------------------------------------ reduce


def _loop_fold(x, init, fn, axis):
    x = np.moveaxis(np.asarray(x), axis, 0)
    acc = np.full(x.shape[1:], init, x.dtype)
    for row in x:
        acc = fn(acc, row)
    return acc


def test_reduce_recognizes_monoids():
    x = jnp.arange(10.0)
    for fn, init, prim in (
        (lax.add, 0.0, "reduce_sum"),
        (lax.mul, 1.0, "reduce_prod"),
        (lax.max, -np.inf, "reduce_max"),
        (lax.min, np.inf, "reduce_min"),
    ):
        jaxpr = str(morphax.make_jaxpr(lambda v: lax.reduce(v, init, fn, (0,)))(x))  # noqa: B023
        assert prim in jaxpr and "reduce[" not in jaxpr
    ints = jnp.arange(6)
    for fn, init, prim in ((lax.bitwise_and, -1, "reduce_and"), (lax.bitwise_or, 0, "reduce_or")):
        assert prim in str(morphax.make_jaxpr(lambda v: lax.reduce(v, init, fn, (0,)))(ints))  # noqa: B023
    # A non-identity init goes through the general primitive and joins once.
    assert "reduce[" in str(morphax.make_jaxpr(lambda v: lax.reduce(v, 1.0, lax.add, (0,)))(x))
    assert float(lax.reduce(x, 1.0, lax.add, (0,))) == 46.0
    assert lax.reduce(jnp.ones(3), 0, lax.add, (0,)).dtype == np.float32


@pytest.mark.parametrize(
    "shape,dims", [((7,), (0,)), ((3, 5), (1,)), ((3, 5), (0,)), ((2, 3, 4), (0, 2)), ((4, 0), (0,))]
)
def test_reduce_general_matches_left_fold(shape, dims):
    x = RNG.uniform(0.5, 1.5, size=shape).astype(np.float32)

    def comp(a, b):
        return a * b + 0.0 * a  # not recognized as a monoid

    got = np.asarray(lax.reduce(x, np.float32(2.0), comp, dims))
    kept = tuple(np.delete(shape, dims))
    rows = int(np.prod([shape[d] for d in dims]))
    flat = np.moveaxis(x, dims, tuple(range(len(dims)))).reshape((rows,) + kept)
    want = _loop_fold(flat, 2.0, lambda a, b: a * b, 0)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_reduce_multiple_operands_and_pytrees():
    x = RNG.normal(size=(4, 9)).astype(np.float32)
    x[1, 3] = x[1, 7] = 5.0  # a tie: the earlier index wins, as in a left fold

    def argmax(a, b):
        take = a[0] >= b[0]
        return jnp.where(take, a[0], b[0]), jnp.where(take, a[1], b[1])

    idx = np.broadcast_to(np.arange(9, dtype=np.int32), x.shape)
    vals, ids = lax.reduce((x, idx), (np.float32(-np.inf), np.int32(0)), argmax, (1,))
    np.testing.assert_array_equal(np.asarray(ids), np.argmax(x, 1))
    np.testing.assert_array_equal(np.asarray(vals), x.max(1))
    out = lax.reduce({"s": x}, {"s": np.float32(1.0)}, lambda a, b: {"s": a["s"] + b["s"]}, (0, 1))
    np.testing.assert_allclose(float(out["s"]), x.sum() + 1.0, rtol=1e-5)
    jitted = morphax.jit(lambda v: lax.reduce((v, idx), (np.float32(-np.inf), np.int32(0)), argmax, (1,)))(x)
    np.testing.assert_array_equal(np.asarray(jitted[1]), np.argmax(x, 1))


def test_reduce_derivatives_including_the_initial_value():
    x = jnp.asarray(RNG.uniform(0.5, 1.5, size=(3, 5)))
    with morphax.enable_x64():
        x = jnp.asarray(np.asarray(x, np.float64))

        def f(v, i):
            return lax.reduce(v, i, lambda a, b: a * b + a * 0.0, (1,))

        check_grads(f, (x, jnp.float64(1.3)), order=2, modes=("fwd", "rev"))
        g = morphax.grad(lambda i: f(x, i).sum())(jnp.float64(2.0))
        np.testing.assert_allclose(float(g), float(np.prod(np.asarray(x), 1).sum()), rtol=1e-10)


def test_reduce_vmap_with_batched_initial_values():
    x = RNG.normal(size=(3, 4, 5)).astype(np.float32)
    inits = np.array([0.0, 1.0, -2.0], np.float32)

    def f(v, i):
        return lax.reduce(v, i, lambda a, b: jnp.maximum(a, b) + 0.0, (1,))

    got = morphax.vmap(f)(x, inits)
    want = np.stack([np.maximum(x[k].max(1), inits[k]) for k in range(3)])
    np.testing.assert_array_equal(np.asarray(got), want)
    got = morphax.vmap(f, in_axes=(2, None))(x, np.float32(0.5))
    np.testing.assert_array_equal(np.asarray(got), np.maximum(np.moveaxis(x, 2, 0).max(2), 0.5))


def test_reduce_errors():
    x = jnp.ones(3)
    with pytest.raises(ValueError, match="same tree structure"):
        lax.reduce(x, (0.0, 0.0), lax.add, (0,))
    with pytest.raises(TypeError, match="initial value dtypes"):
        lax.reduce(x, 0, lambda a, b: a + b, (0,))
    with pytest.raises(ValueError, match="non-scalar initial value"):
        lax.reduce(x, jnp.zeros(2), lambda a, b: a + b, (0,))
    with pytest.raises(ValueError, match="dimensions"):
        lax.reduce(x, 0.0, lambda a, b: a + b, (1,))
    with pytest.raises(TypeError, match="computation must return"):
        lax.reduce(x, 0.0, lambda a, b: (a + b).astype(jnp.int32), (0,))


def test_reduce_vs_jax():
    jax = _jax()
    x = RNG.normal(size=(4, 6)).astype(np.float32)
    for init, fn, dims in ((1.0, lambda a, b: a + b, (0,)), (-1.0, lambda a, b: jnp.maximum(a, b), (0, 1))):
        jfn = (lambda a, b: a + b) if init == 1.0 else (lambda a, b: jax.numpy.maximum(a, b))
        want = np.asarray(jax.lax.reduce(x, np.float32(init), jfn, dims))
        np.testing.assert_allclose(np.asarray(lax.reduce(x, np.float32(init), fn, dims)), want, rtol=1e-6)


# ------------------------------------------------------------------------------ scatter_apply / sub


def _loop_scatter_apply(x, idx, fn, mode):
    out = np.array(x, copy=True)
    for (i,) in idx:
        if mode == "clip":
            i = min(max(i, 0), len(x) - 1)
        elif not 0 <= i < len(x):
            continue
        out[i] = fn(out[i])
    return out


@pytest.mark.parametrize("mode", [None, "clip"])
def test_scatter_apply_applies_once_per_hit(mode):
    x = RNG.normal(size=6).astype(np.float32)
    idx = np.array([[0], [2], [2], [9], [-1], [2], [5]], np.int32)
    got = lax.scatter_apply(jnp.asarray(x), idx, lambda v: v * 2 + 1, DN1, update_shape=(7,), mode=mode)
    np.testing.assert_allclose(
        np.asarray(got), _loop_scatter_apply(x, idx, lambda v: v * 2 + 1, mode), rtol=1e-6
    )
    jitted = morphax.jit(lambda v: lax.scatter_apply(v, idx, jnp.sin, DN1, update_shape=(7,), mode=mode))(x)
    np.testing.assert_allclose(np.asarray(jitted), _loop_scatter_apply(x, idx, np.sin, mode), rtol=1e-6)
    batched = morphax.vmap(lambda v: lax.scatter_apply(v, idx, jnp.cos, DN1, update_shape=(7,), mode=mode))(
        np.stack([x, -x])
    )
    np.testing.assert_allclose(np.asarray(batched[1]), _loop_scatter_apply(-x, idx, np.cos, mode), rtol=1e-6)


def test_scatter_apply_windows_and_derivatives():
    X = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    idx = np.array([[1], [1], [3]], np.int32)
    got = lax.scatter_apply(X, idx, lambda v: v + 10, DN_ROWS, update_shape=(3, 2))
    want = X.copy()
    want[1, :2] += 20
    want[3, :2] += 10
    np.testing.assert_array_equal(np.asarray(got), want)
    # Forward mode through the rounds; reverse mode with unique indices.
    x = jnp.asarray(np.array([0.1, 0.2, 0.3, 0.4]))
    dup = np.array([[1], [1], [3]], np.int32)
    _, t = morphax.jvp(
        lambda v: lax.scatter_apply(v, dup, jnp.sin, DN1, update_shape=(3,)), (x,), (jnp.ones(4),)
    )
    want_t = [1.0, np.cos(np.sin(0.2)) * np.cos(0.2), 1.0, np.cos(0.4)]
    np.testing.assert_allclose(np.asarray(t), want_t, rtol=1e-6)
    uniq = np.array([[0], [2]], np.int32)
    g = morphax.grad(
        lambda v: lax.scatter_apply(v, uniq, jnp.sin, DN1, update_shape=(2,), unique_indices=True).sum()
    )(x)
    np.testing.assert_allclose(np.asarray(g), [np.cos(0.1), 1.0, np.cos(0.3), 1.0], rtol=1e-6)


def test_scatter_sub_matches_numpy_and_differentiates():
    x = RNG.normal(size=5).astype(np.float32)
    u = RNG.normal(size=6).astype(np.float32)
    idx = np.array([[0], [2], [2], [7], [4], [0]], np.int32)
    want = x.copy()
    for (i,), v in zip(idx, u):
        if 0 <= i < 5:
            want[i] -= v
    np.testing.assert_allclose(np.asarray(lax.scatter_sub(x, idx, u, DN1)), want, rtol=1e-6)
    w = np.array([250, 2], np.uint8)
    got = lax.scatter_sub(w, np.array([[0], [0]], np.int32), np.array([3, 4], np.uint8), DN1)
    np.testing.assert_array_equal(np.asarray(got), [243, 2])
    with morphax.enable_x64():
        f = lambda a, b: lax.scatter_sub(a, idx, b, DN1)  # noqa: E731
        check_grads(f, (jnp.asarray(x.astype(np.float64)), jnp.asarray(u.astype(np.float64))), order=2)
    with pytest.raises(TypeError, match="bool"):
        lax.scatter_sub(np.array([True]), np.array([[0]]), np.array([True]), DN1)


def test_scatter_family_vs_jax():
    jax = _jax()
    x = RNG.normal(size=6).astype(np.float32)
    idx = np.array([[0], [2], [2], [9], [-1], [5]], np.int32)
    u = RNG.normal(size=6).astype(np.float32)
    jdn = jax.lax.ScatterDimensionNumbers((), (0,), (0,))
    np.testing.assert_allclose(
        np.asarray(lax.scatter_sub(x, idx, u, DN1)),
        np.asarray(jax.lax.scatter_sub(x, idx, u, jdn)),
        rtol=1e-6,
    )
    for mode in (None, "clip"):
        want = jax.lax.scatter_apply(x, idx, lambda v: v * 3 - 1, jdn, update_shape=(6,), mode=mode)
        got = lax.scatter_apply(x, idx, lambda v: v * 3 - 1, DN1, update_shape=(6,), mode=mode)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


# -------------------------------------------------------------------------------- approx_max/min_k


def test_approx_top_k_is_exact_on_cpu():
    x = RNG.normal(size=(3, 40)).astype(np.float32)
    v, i = lax.approx_max_k(x, 5)
    np.testing.assert_array_equal(np.asarray(v), -np.sort(-x, 1)[:, :5])
    np.testing.assert_array_equal(np.take_along_axis(x, np.asarray(i), 1), np.asarray(v))
    v, i = lax.approx_min_k(x.T, 3, reduction_dimension=0)
    np.testing.assert_array_equal(np.asarray(v), np.sort(x.T, 0)[:3])
    assert np.asarray(i).dtype == np.int32
    # Without aggregation the candidate count is XLA's (all of a short axis, fewer of a long one).
    assert lax.approx_max_k(x, 5, aggregate_to_topk=False)[0].shape == (3, 40)
    assert lax.approx_max_k(jnp.zeros((2, 1000)), 5, aggregate_to_topk=False)[0].shape == (2, 256)
    assert lax.approx_max_k(jnp.zeros((2, 5000)), 5, aggregate_to_topk=False)[0].shape == (2, 256)
    nan = np.array([1.0, np.nan, 3.0, -1.0], np.float32)
    np.testing.assert_array_equal(np.asarray(lax.approx_min_k(nan, 3)[0]), [-1.0, 1.0, 3.0])
    check_grads(
        lambda v: lax.approx_max_k(v, 3)[0], (jnp.asarray(x[0].astype(np.float32)),), order=1, atol=1e-2
    )
    with pytest.raises(ValueError, match="floating"):
        lax.approx_max_k(jnp.arange(4), 2)
    with pytest.raises(ValueError, match="k must be positive"):
        lax.approx_max_k(x, 0)


def test_approx_top_k_vs_jax():
    jax = _jax()
    for n, k in ((40, 5), (1000, 7), (5000, 3), (300, 1)):
        x = RNG.normal(size=(2, n)).astype(np.float32)
        for agg in (True, False):
            for mine, theirs in (
                (lax.approx_max_k, jax.lax.approx_max_k),
                (lax.approx_min_k, jax.lax.approx_min_k),
            ):
                gv, gi = mine(x, k, aggregate_to_topk=agg)
                wv, wi = theirs(x, k, aggregate_to_topk=agg)
                assert gv.shape == wv.shape
                np.testing.assert_array_equal(np.asarray(gv), np.asarray(wv))
                np.testing.assert_array_equal(np.asarray(gi), np.asarray(wi))


# --------------------------------------------------------------------------------- small helpers


def test_shape_helpers_match_numpy():
    x = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(lax.collapse(x, 1)), x.reshape(2, 12))
    np.testing.assert_array_equal(np.asarray(lax.collapse(x, 0, 2)), x.reshape(6, 4))
    np.testing.assert_array_equal(np.asarray(lax.collapse(x, -2)), x.reshape(2, 12))
    with pytest.raises(ValueError, match="Invalid dimension range"):
        lax.collapse(x, 2, 1)
    for axis in (0, 1, -1, 3):
        np.testing.assert_array_equal(np.asarray(lax.stack([x, 2 * x], axis)), np.stack([x, 2 * x], axis))
    for axis in (0, 2, -2):
        got = lax.unstack(x, axis)
        assert len(got) == x.shape[axis]
        for g, w in zip(got, np.moveaxis(x, axis, 0)):
            np.testing.assert_array_equal(np.asarray(g), w)
    assert lax.unstack(jnp.ones((0, 2))) == ()
    np.testing.assert_array_equal(np.asarray(lax.tile(x, (2, 1, 3))), np.tile(x, (2, 1, 3)))
    assert lax.tile(x, (0, 1, 1)).shape == (0, 3, 4)
    with pytest.raises(TypeError, match="reps length"):
        lax.tile(x, (2,))
    with pytest.raises(ValueError, match="same shape"):
        lax.stack([jnp.ones(2), jnp.ones(3)])
    with pytest.raises(TypeError, match="same dtypes"):
        lax.stack([jnp.ones(2), jnp.ones(2, jnp.int32)])
    assert lax.stack([1.0, 2.0]).weak_type

    def f(v):
        a = lax.stack(lax.unstack(v, 1)[::-1], 0)
        return (lax.tile(a, (2, 1, 1)) ** 2).sum()

    with morphax.enable_x64():
        check_grads(f, (jnp.asarray(x.astype(np.float64)),), order=2, modes=("fwd", "rev"))


def test_index_take_and_batch_matmul():
    src = np.arange(24).reshape(2, 3, 4)
    got = lax.index_take(src, (np.array([0, 1, -1]), np.array([2, 5, 3])), (1, 2))
    np.testing.assert_array_equal(np.asarray(got), src[:, [0, 1, 2], [2, 1, 3]].T)
    np.testing.assert_array_equal(np.asarray(lax.index_take(src, (np.array([1, 0]),), (0,))), src[[1, 0]])
    a = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    b = RNG.normal(size=(2, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(lax.batch_matmul(a, b)), a @ b, rtol=1e-5)
    with pytest.raises(ValueError, match="at least 2D"):
        lax.batch_matmul(np.ones(4), np.ones((4, 5)))
    with pytest.raises(ValueError, match="same ndim"):
        lax.batch_matmul(a, b[0])


def test_broadcast_dtype_and_value_helpers():
    for shapes in (((3, 1), (4,)), ((1,), (2, 3, 1), (3, 4)), ((),), ()):
        assert lax.broadcast_shapes(*shapes) == np.broadcast_shapes(*shapes)
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
        lax.broadcast_shapes((3, 1), (4, 1))
    out = lax.broadcast_like(1.0, jnp.ones((2, 3)))
    assert out.shape == (2, 3) and out.weak_type
    np.testing.assert_array_equal(
        np.asarray(lax.broadcast_like(np.arange(3), np.ones((2, 3)))), [[0, 1, 2]] * 2
    )
    with pytest.raises(ValueError, match="Incompatible types for broadcasting"):
        lax.broadcast_like(np.ones(3), np.ones((2, 4)))
    assert (
        lax.dtype(1.0) == np.float32 and lax.dtype(np.zeros(3)) == np.float32 and lax.dtype(int) == np.int32
    )
    assert lax.dtype(jnp.zeros(2, jnp.bfloat16)) == ml_dtypes.bfloat16
    with pytest.raises(TypeError, match="Cannot determine dtype"):
        lax.dtype([1, 2])
    v = lax.shape_as_value((2, 3))
    assert isinstance(v, np.ndarray) and v.dtype == np.int32 and list(v) == [2, 3]
    assert lax.shape_as_value(()).shape == (0,)
    e = lax.empty((2, 3), jnp.float32)
    assert e.shape == (2, 3) and e.dtype == np.float32
    assert lax.empty(4, "int32").shape == (4,)
