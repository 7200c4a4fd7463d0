"""The Array surface: every method and operator the foundations issue lists, on Arrays and on
tracers, compared with NumPy (values and JAX dtypes)."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp

X = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)
I = np.array([[3, -7, 2], [5, 0, 9]], np.int32)

METHOD_CASES = [
    ("sum", (), {}),
    ("sum", (0,), {}),
    ("mean", (), {"axis": 1}),
    ("max", (), {}),
    ("min", (), {"axis": 0}),
    ("prod", (), {}),
    ("argmax", (), {}),
    ("argmin", (), {"axis": 1}),
    ("reshape", ((3, 2),), {}),
    ("reshape", (3, 2), {}),
    ("transpose", (), {}),
    ("transpose", ((1, 0),), {}),
    ("squeeze", (), {}),
    ("flatten", (), {}),
    ("ravel", (), {}),
    ("clip", (-1.0, 2.0), {}),
    ("round", (), {}),
    ("cumsum", (), {"axis": 1}),
    ("conj", (), {}),
    ("all", (), {}),
    ("any", (), {"axis": 0}),
    ("std", (), {}),
    ("var", (), {"axis": 1}),
    ("astype", (np.int32,), {}),
    ("copy", (), {}),
    ("diagonal", (), {}),
    ("diagonal", (1,), {}),
    ("trace", (), {}),
    ("ptp", (), {"axis": 1}),
    ("sort", (), {}),
    ("argsort", (), {"axis": 0}),
    ("argpartition", (1,), {}),
    ("repeat", (2,), {"axis": 0}),
    ("take", (np.array([2, 0]),), {"axis": 1}),
    ("compress", (np.array([True, False, True]),), {"axis": 1}),
    ("view", (np.int32,), {}),
    ("view", (np.uint8,), {}),
    ("view", (np.float16,), {}),
]


@pytest.mark.parametrize(
    "name,args,kwargs", METHOD_CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(METHOD_CASES)]
)
def test_methods_match_numpy(name, args, kwargs):
    got = getattr(jnp.asarray(X), name)(*args, **kwargs)
    # NumPy's ndarray sorts in place and has no ptp method: use its functions for those.
    want = (
        getattr(np, name)(X, *args, **kwargs)
        if name in ("sort", "ptp")
        else getattr(X, name)(*args, **kwargs)
    )
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    traced = morphax.make_jaxpr(lambda x: getattr(x, name)(*args, **kwargs))(X)
    assert traced.out_avals[0].shape == np.shape(want)


def test_dot_real_imag_item_tolist_properties():
    x = jnp.asarray(X)
    np.testing.assert_allclose(x.dot(x.T), X @ X.T, rtol=1e-6)
    np.testing.assert_array_equal(x.real, X)
    np.testing.assert_array_equal(x.imag, np.zeros_like(X))
    assert x[0, 1].item() == -2.0 and x.tolist() == X.tolist()
    assert x.T.shape == (3, 2) and x.mT.shape == (3, 2)
    assert (x.shape, x.ndim, x.size, x.itemsize, x.nbytes) == ((2, 3), 2, 6, 4, 24)


BINOPS = [
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.floordiv,
    operator.mod,
    operator.pow,
    operator.eq,
    operator.ne,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
]
INT_BINOPS = [operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift]


@pytest.mark.parametrize("op", BINOPS, ids=lambda o: o.__name__)
def test_binary_operators_and_reflected_forms(op):
    a, b = np.abs(X) + 0.5, np.float32(1.5)
    np.testing.assert_allclose(np.asarray(op(jnp.asarray(a), b)), op(a, b), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(op(b, jnp.asarray(a))), op(b, a), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(op(jnp.asarray(a), jnp.asarray(a))), op(a, a), rtol=1e-5)


@pytest.mark.parametrize("op", INT_BINOPS, ids=lambda o: o.__name__)
def test_integer_operators(op):
    a, b = np.abs(I), np.int32(2)
    np.testing.assert_array_equal(np.asarray(op(jnp.asarray(a), 2)), op(a, b))
    np.testing.assert_array_equal(np.asarray(op(2, jnp.asarray(a))), op(b, a))


def test_unary_operators_and_matmul():
    x = jnp.asarray(X)
    np.testing.assert_array_equal(np.asarray(-x), -X)
    np.testing.assert_array_equal(np.asarray(+x), X)
    np.testing.assert_array_equal(np.asarray(abs(x)), np.abs(X))
    np.testing.assert_array_equal(np.asarray(~jnp.asarray(I)), ~I)
    np.testing.assert_allclose(np.asarray(x @ x.T), X @ X.T, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(X.T @ x), X.T @ X, rtol=1e-6)


def test_python_scalars_are_weak_in_operators():
    h = jnp.ones(3, jnp.float16)
    assert (h * 2.0).dtype == np.float16 and (2 + h).dtype == np.float16
    assert (jnp.ones(3, jnp.int8) + 1).dtype == np.int8
    assert (jnp.ones(3, jnp.int8) + 1.0).dtype == np.float32


def test_integer_power_broadcasts():
    a, b = np.arange(4, dtype=np.int32).reshape(4, 1), np.arange(5, dtype=np.int32).reshape(1, 5)
    got = jnp.power(jnp.asarray(a), jnp.asarray(b))
    np.testing.assert_array_equal(np.asarray(got), a**b)
    assert got.dtype == np.int32


def test_searchsorted_choose_nonzero_flat_and_host_methods():
    a = jnp.asarray(np.sort(X.ravel()))
    np.testing.assert_array_equal(
        a.searchsorted(np.float32([0.0, 3.5])), np.sort(X.ravel()).searchsorted([0.0, 3.5])
    )
    idx = jnp.asarray(np.array([0, 1, 1], np.int32))
    np.testing.assert_array_equal(idx.choose([X[0], X[1]]), np.array([0, 1, 1]).choose([X[0], X[1]]))
    rows, cols = jnp.asarray(I).nonzero(size=6)
    np.testing.assert_array_equal(np.stack([rows, cols])[:, :5], np.stack(I.nonzero()))
    x = jnp.asarray(X)
    assert x.tobytes() == X.tobytes()
    np.testing.assert_array_equal(x.clone(), X)
    np.testing.assert_array_equal(
        jnp.asarray(np.arange(8, dtype=np.uint8)).view(np.float32),
        np.arange(8, dtype=np.uint8).view(np.float32),
    )
    with pytest.raises(NotImplementedError, match="flatten"):
        x.flat  # noqa: B018
    with pytest.raises(ValueError, match="cannot be viewed"):
        jnp.ones(3, jnp.uint8).view(jnp.float32)


# Every method and property of a concrete JAX 0.10.2 Array that is about values (the
# device/sharding/buffer runtime API is separate), which morphax Arrays and tracers must have.
JAX_VALUE_METHODS = (
    "T all any argmax argmin argpartition argsort astype at choose clip compress conj conjugate copy cumprod "
    "cumsum diagonal dot dtype flatten imag item itemsize mT max mean min nbytes ndim nonzero prod ptp ravel "
    "real repeat reshape round searchsorted shape size sort squeeze std sum swapaxes take tolist trace "
    "transpose var view weak_type"
).split()


def test_every_value_method_of_jax_arrays_exists_on_arrays_and_tracers():
    x = jnp.asarray(X)
    assert [n for n in JAX_VALUE_METHODS if not hasattr(x, n)] == []
    seen = []
    morphax.jit(lambda t: seen.append([n for n in JAX_VALUE_METHODS if not hasattr(t, n)]) or t)(x)
    assert seen == [[]]
