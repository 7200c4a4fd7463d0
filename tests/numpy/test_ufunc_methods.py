"""`ufunc.at` and `ufunc.reduceat` of morphax.numpy's ufunc objects (jnp.add, jnp.multiply,
jnp.maximum, jnp.minimum, jnp.subtract...) and of frompyfunc-made ufuncs, against NumPy's
np.<ufunc>.at / np.<ufunc>.reduceat, eagerly, under jit (traced indices), vmap and check_grads."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax.test_util import check_grads


def _affine(x, y):
    return x * 2 + y  # neither associative nor commutative: order of application matters


def _assoc(x, y):
    return x + y + x * y  # associative: (1 + x)(1 + y) - 1


# name -> (morphax ufunc, NumPy reference ufunc working on float arrays)
UFUNCS = {
    "add": (jnp.add, np.add),
    "multiply": (jnp.multiply, np.multiply),
    "maximum": (jnp.maximum, np.maximum),
    "minimum": (jnp.minimum, np.minimum),
    "subtract": (jnp.subtract, np.subtract),
    "logaddexp": (jnp.logaddexp, np.logaddexp),
    "pyfunc-affine": (jnp.frompyfunc(_affine, 2, 1), np.frompyfunc(_affine, 2, 1)),
    "pyfunc-assoc": (jnp.frompyfunc(_assoc, 2, 1, identity=0), np.frompyfunc(_assoc, 2, 1, identity=0)),
}
NAMES = list(UFUNCS)


def rng():
    return np.random.default_rng(7)


def distinct(r, *shape):
    """Distinct, well-separated values (no ties for maximum/minimum)."""
    n = int(np.prod(shape))
    return ((r.permutation(n) + r.uniform(0.1, 0.4, n) - n / 2) / n).reshape(shape).astype(np.float32)


def np_at(ref, a, indices, b=None):
    out = np.array(a, dtype=object if isinstance(ref, np.ufunc) and ref.types == ["OO->O"] else a.dtype)
    if b is None:
        ref.at(out, indices)
    else:
        ref.at(out, indices, b)
    return out.astype(a.dtype)


def np_reduceat(ref, a, indices, axis=0):
    out = ref.reduceat(a.astype(object) if ref.types == ["OO->O"] else a, indices, axis=axis)
    return np.asarray(out).astype(a.dtype)


def close(got, want, tol=2e-5):
    got = np.asarray(got)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# ---- ufunc objects -------------------------------------------------------------------------------


def test_ufunc_objects():
    for name in ["add", "multiply", "subtract", "maximum", "minimum", "logical_and", "logical_or",
                 "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2",
                 "negative"]:  # fmt: skip
        u = getattr(jnp, name)
        assert isinstance(u, jnp.ufunc), name
        assert u.__name__ == name
        for method in ("reduce", "accumulate", "outer", "at", "reduceat"):
            assert callable(getattr(u, method))
    assert jnp.add.identity == 0 and jnp.multiply.identity == 1 and jnp.maximum.identity is None
    assert jnp.add.nin == 2 and jnp.negative.nin == 1
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    close(jnp.add(x, 1.0), x + 1)
    close(jnp.add.reduce(x, axis=1), x.sum(1))
    close(jnp.multiply.accumulate(x + 1, axis=1), np.cumprod(x + 1, axis=1))
    close(jnp.maximum.reduce(x, axis=None), x.max())
    assert jnp.logical_and.reduce(np.array([True, False])).dtype == np.bool_
    close(morphax.jit(jnp.add)(x, x), 2 * x)


# ---- at ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_at_repeated_indices(name):
    u, ref = UFUNCS[name]
    r = rng()
    a, b = distinct(r, 6), distinct(r, 8)
    idx = np.array([1, 3, 1, 1, 0, 5, 3, -1])
    close(u.at(a, idx, b, inplace=False), np_at(ref, a, idx, b))
    close(u.at(a, idx, np.float32(0.5), inplace=False), np_at(ref, a, idx, np.float32(0.5)))


@pytest.mark.parametrize("name", NAMES)
def test_at_multidimensional_indices(name):
    u, ref = UFUNCS[name]
    r = rng()
    a = distinct(r, 4, 5)
    rows, cols = np.array([[0, 2], [0, 0]]), np.array([[1, 4], [1, 1]])
    b = distinct(r, 2, 2)
    close(u.at(a, (rows, cols), b, inplace=False), np_at(ref, a, (rows, cols), b))
    # A slice with an index array: b broadcasts against a[indices] (shape (4, 3)).
    idx = (slice(None), np.array([2, 0, 2]))
    b2 = distinct(r, 3)
    close(u.at(a, idx, b2, inplace=False), np_at(ref, a, idx, b2))
    # A row index alone updates whole rows, once per occurrence.
    b3 = distinct(r, 3, 5)
    close(u.at(a, np.array([3, 1, 3]), b3, inplace=False), np_at(ref, a, np.array([3, 1, 3]), b3))


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "subtract"])
def test_at_integers(name):
    u, ref = UFUNCS[name]
    a = np.arange(-3, 5, dtype=np.int32)
    idx = np.array([0, 7, 0, 2, 7, 7])
    b = np.array([2, -1, 3, 4, 5, -2], np.int32)
    got = u.at(a, idx, b, inplace=False)
    assert got.dtype == np.int32
    close(got, np_at(ref, a, idx, b))


def test_at_dtypes_follow_jax():
    # add/multiply keep a's dtype; maximum/minimum take the promoted dtype (as JAX's do).
    a = np.arange(4, dtype=np.int32)
    assert jnp.add.at(a, np.array([0, 0]), 2, inplace=False).dtype == np.int32
    got = jnp.maximum.at(a, np.array([0, 0]), np.float32(2.5), inplace=False)
    assert got.dtype == np.float32
    close(got, [2.5, 1, 2, 3])
    flags = np.array([False, True, False])
    close(jnp.add.at(flags, np.array([0, 0, 2]), True, inplace=False), [True, True, True])
    close(jnp.multiply.at(flags, np.array([1]), False, inplace=False), [False, False, False])
    close(jnp.maximum.at(flags, np.array([2, 2]), True, inplace=False), [False, True, True])


def test_at_unary_and_errors():
    a = np.arange(5, dtype=np.float32)
    # negative applied once per occurrence: twice is the identity.
    close(jnp.negative.at(a, np.array([0, 1, 1, 3, 1]), inplace=False), [0, -1, 2, -3, 4])
    with pytest.raises(NotImplementedError, match="inplace"):
        jnp.add.at(a, np.array([0]), 1.0)
    with pytest.raises(ValueError):
        jnp.add.at(a, np.array([0]), inplace=False)
    with pytest.raises(ValueError):
        jnp.negative.at(a, np.array([0]), 1.0, inplace=False)
    close(jnp.add.at(a, np.zeros((0,), np.int32), 1.0, inplace=False), a)


@pytest.mark.parametrize("name", NAMES)
def test_at_jit_traced_indices(name):
    u, ref = UFUNCS[name]
    r = rng()
    a, b = distinct(r, 3, 4), distinct(r, 5)
    idx = np.array([2, 0, 2, 2, 1])
    f = morphax.jit(lambda a, i, b: u.at(a, (i, i + 1), b, inplace=False))
    close(f(a, idx, b), np_at(ref, a, (idx, idx + 1), b))


@pytest.mark.parametrize("name", NAMES)
def test_at_vmap(name):
    u, ref = UFUNCS[name]
    r = rng()
    a, b = distinct(r, 3, 6), distinct(r, 3, 5)
    idx = np.array([[1, 1, 0, 5, 1], [2, 3, 3, 3, 2], [0, 0, 0, 0, 4]])
    want = np.stack([np_at(ref, a[k], idx[k], b[k]) for k in range(3)])
    close(morphax.vmap(lambda a, i, b: u.at(a, i, b, inplace=False))(a, idx, b), want)
    # Batched values only (shared indices), and batched indices only (shared array).
    want = np.stack([np_at(ref, a[0], idx[0], b[k]) for k in range(3)])
    close(morphax.vmap(lambda b: u.at(a[0], idx[0], b, inplace=False))(b), want)
    want = np.stack([np_at(ref, a[0], idx[k], b[0]) for k in range(3)])
    close(morphax.vmap(lambda i: u.at(a[0], i, b[0], inplace=False))(idx), want)


@pytest.mark.parametrize("name", NAMES)
def test_at_grads(name):
    u, _ = UFUNCS[name]
    r = rng()
    with morphax.enable_x64():
        a, b = distinct(r, 6).astype(np.float64), distinct(r, 7).astype(np.float64)
        idx = np.array([1, 3, 1, 1, 0, 5, 3])
        check_grads(lambda a, b: u.at(a, idx, b, inplace=False), (a, b), order=2, modes=("fwd", "rev"))
        check_grads(
            morphax.jit(lambda a, b: u.at(a, (idx,), b, inplace=False)), (a, b), order=1, modes=("fwd", "rev")
        )


# ---- reduceat ------------------------------------------------------------------------------------

INDEX_SETS = {
    "increasing": [0, 2, 5],
    "repeats": [0, 3, 3, 6],
    "decreasing-steps": [0, 4, 1, 5, 5, 2],
    "single": [3],
    "every": [0, 1, 2, 3, 4, 5, 6],
}


@pytest.mark.parametrize("kind", list(INDEX_SETS))
@pytest.mark.parametrize("name", NAMES)
def test_reduceat_1d_and_axes(name, kind):
    u, ref = UFUNCS[name]
    r = rng()
    idx = np.array(INDEX_SETS[kind])
    a = distinct(r, 7)
    close(u.reduceat(a, idx), np_reduceat(ref, a, idx), tol=1e-4)
    a3 = distinct(r, 2, 7, 3)
    close(u.reduceat(a3, idx, axis=1), np_reduceat(ref, a3, idx, axis=1), tol=1e-4)
    a2 = distinct(r, 7, 4)
    close(u.reduceat(a2, idx), np_reduceat(ref, a2, idx), tol=1e-4)


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "subtract"])
def test_reduceat_integers_and_dtype(name):
    u, ref = UFUNCS[name]
    a = np.arange(1, 10, dtype=np.int32).reshape(3, 3) % 4 - 1
    idx = np.array([0, 2, 1])
    got = u.reduceat(a, idx, axis=1)
    assert got.dtype == np.int32
    close(got, ref.reduceat(a, idx, axis=1))
    got = u.reduceat(a, idx, axis=0, dtype=np.float32)
    assert got.dtype == np.float32
    close(got, ref.reduceat(a, idx, axis=0, dtype=np.float32))


def test_reduceat_logical():
    a = np.array([True, False, True, True, False])
    idx = np.array([0, 2, 4])
    for u, ref in [(jnp.logical_and, np.logical_and), (jnp.logical_or, np.logical_or)]:
        got = u.reduceat(a, idx)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(np.asarray(got), ref.reduceat(a, idx))
    x = np.array([5, 3, 6, 12, 7], np.int32)
    np.testing.assert_array_equal(
        np.asarray(jnp.bitwise_xor.reduceat(x, idx)), np.bitwise_xor.reduceat(x, idx)
    )


def test_reduceat_errors():
    a = np.arange(6, dtype=np.float32)
    with pytest.raises(IndexError):
        jnp.add.reduceat(a, np.array([0, 6]))
    with pytest.raises(IndexError):
        jnp.add.reduceat(a, np.array([-1, 2]))
    with pytest.raises(ValueError):
        jnp.add.reduceat(np.float32(1), np.array([0]))
    with pytest.raises(ValueError):
        jnp.add.reduceat(a, np.array([[0, 1]]))
    with pytest.raises(TypeError):
        jnp.add.reduceat(a, np.array([0.0, 1.0]))
    with pytest.raises(ValueError):
        jnp.add.reduceat(a, np.array([0]), axis=None)
    with pytest.raises(ValueError):
        jnp.negative.reduceat(a, np.array([0]))
    assert jnp.add.reduceat(np.zeros((3, 2), np.float32), np.zeros((0,), np.int32)).shape == (0, 2)


@pytest.mark.parametrize("name", NAMES)
def test_reduceat_jit_traced_indices(name):
    u, ref = UFUNCS[name]
    r = rng()
    a = distinct(r, 7, 3)
    idx = np.array([0, 4, 1, 5, 5, 2])
    close(morphax.jit(lambda a, i: u.reduceat(a, i))(a, idx), np_reduceat(ref, a, idx), tol=1e-4)
    close(
        morphax.jit(lambda a, i: u.reduceat(a, i, axis=1))(a.T, idx),
        np_reduceat(ref, a.T, idx, axis=1),
        tol=1e-4,
    )


@pytest.mark.parametrize("name", NAMES)
def test_reduceat_vmap(name):
    u, ref = UFUNCS[name]
    r = rng()
    a = distinct(r, 3, 7, 2)
    idx = np.array([[0, 4, 1, 5], [0, 2, 2, 6], [3, 1, 0, 0]])
    want = np.stack([np_reduceat(ref, a[k], idx[k]) for k in range(3)])
    close(morphax.vmap(lambda a, i: u.reduceat(a, i))(a, idx), want, tol=1e-4)
    want = np.stack([np_reduceat(ref, a[k], idx[0]) for k in range(3)])
    close(morphax.vmap(lambda a: u.reduceat(a, idx[0]), in_axes=2, out_axes=2)(a.transpose(1, 2, 0)),
          want.transpose(1, 2, 0), tol=1e-4)  # fmt: skip
    want = np.stack([np_reduceat(ref, a[0], idx[k]) for k in range(3)])
    close(morphax.vmap(lambda i: u.reduceat(a[0], i))(idx), want, tol=1e-4)


@pytest.mark.parametrize("name", NAMES)
def test_reduceat_grads(name):
    u, _ = UFUNCS[name]
    r = rng()
    with morphax.enable_x64():
        a = distinct(r, 7, 2).astype(np.float64)
        idx = np.array([0, 4, 1, 5, 5, 2])
        check_grads(lambda a: u.reduceat(a, idx), (a,), order=2, modes=("fwd", "rev"))
        check_grads(morphax.jit(lambda a: u.reduceat(a, idx, axis=0)), (a,), order=1, modes=("fwd", "rev"))


# ---- optional: the same calls through JAX (the package itself never imports jax) ------------------


def test_matches_jax_when_installed():
    jax_numpy = pytest.importorskip("jax.numpy")
    r = rng()
    a, b = distinct(r, 6), distinct(r, 5)
    idx = np.array([1, 3, 1, 1, 0])
    for name in ["add", "multiply", "maximum", "minimum", "subtract"]:
        ours, theirs = getattr(jnp, name), getattr(jax_numpy, name)
        close(ours.at(a, idx, b, inplace=False), np.asarray(theirs.at(a, idx, b, inplace=False)))
        seg = np.array([0, 2, 2, 4])
        close(ours.reduceat(a, seg), np.asarray(theirs.reduceat(a, seg)))
