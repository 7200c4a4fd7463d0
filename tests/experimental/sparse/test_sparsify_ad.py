"""experimental.sparse.sparsify (dense functions run on sparse arrays) and the sparse-aware
derivatives (grad, value_and_grad, jacfwd, jacrev with respect to the stored data), against the
dense computation and JAX 0.10.2's results."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax.experimental import sparse


def _rand(shape, density=0.4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape).astype(np.float32)
    return x * (rng.random(shape) < density)


M = _rand((4, 5))
N = _rand((4, 5), seed=3)
V = np.random.default_rng(1).normal(size=(5,)).astype(np.float32)

FUNCS = {
    "matvec": lambda x: x @ V,
    "scale_add": lambda x: 2 * x + x,
    "mul_dense": lambda x: x * V,
    "transpose_matmul": lambda x: x.T @ jnp.ones(4),
    "sum_axis": lambda x: x.sum(0),
    "neg_sin": lambda x: -jnp.sin(x),
    "abs_sqrt": lambda x: jnp.sqrt(jnp.abs(x)),
    "square": lambda x: x**2,
    "reshape": lambda x: x.reshape(20),
    "slice": lambda x: x[1:3, ::2],
    "index": lambda x: x[2],
    "nested_jit": lambda x: morphax.jit(lambda y: y * 3.0)(x),
    "gram": lambda x: x @ x.T,
    "astype": lambda x: x.astype(np.float16),
    "concat": lambda x: jnp.concatenate([x, x], axis=1),
    "expand": lambda x: x[None],
}


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_sparsify_matches_dense(name):
    f = FUNCS[name]
    s = sparse.BCOO.fromdense(M)
    out = sparse.sparsify(f)(s)
    want = f(jnp.asarray(M))
    got = out.todense() if isinstance(out, sparse.JAXSparse) else out
    np.testing.assert_allclose(
        np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=1e-3, atol=1e-5
    )
    jitted = morphax.jit(sparse.sparsify(f))(s)
    got_j = jitted.todense() if isinstance(jitted, sparse.JAXSparse) else jitted
    np.testing.assert_allclose(
        np.asarray(got_j, np.float32), np.asarray(want, np.float32), rtol=1e-3, atol=1e-5
    )


def test_sparsify_keeps_sparsity_and_two_sparse_operands():
    a, b = sparse.BCOO.fromdense(M), sparse.BCOO.fromdense(N)
    out = sparse.sparsify(lambda x, y: x * y + x)(a, b)
    assert isinstance(out, sparse.BCOO)
    np.testing.assert_allclose(out.todense(), M * N + M, rtol=1e-6)
    # JAX 0.10.2: sparsify(lambda x: x * 2 + x) keeps nse=3 for a 3-element BCOO
    s3 = sparse.BCOO.fromdense(np.array([[0, 1, 0], [2, 0, 3]], np.float32))
    assert sparse.sparsify(lambda x: x * 2 + x)(s3).nse == 3
    # a pytree of sparse and dense arguments
    out2 = sparse.sparsify(lambda d: d["m"] @ d["v"])({"m": a, "v": V})
    np.testing.assert_allclose(out2, M @ V, rtol=1e-5, atol=1e-6)
    bc = sparse.sparsify(lambda x: x @ V)(sparse.BCSR.fromdense(M))
    np.testing.assert_allclose(bc, M @ V, rtol=1e-5, atol=1e-6)


def test_sparsify_missing_rule_names_the_primitive():
    s = sparse.BCOO.fromdense(M)
    with pytest.raises(NotImplementedError, match="sparse rule for exp"):
        sparse.sparsify(jnp.exp)(s)
    with pytest.raises(NotImplementedError, match="sparse rule for cumsum"):
        sparse.sparsify(lambda x: lax.cumsum(x, 0))(s)


def test_sparsify_under_grad_and_vmap():
    s = sparse.BCOO.fromdense(M)

    def loss(data):
        x = sparse.BCOO((data, s.indices), shape=s.shape)
        return jnp.sum(sparse.sparsify(lambda y: jnp.sin(y) @ V)(x) ** 2)

    g = morphax.grad(loss)(s.data)
    dense_g = morphax.grad(lambda m: jnp.sum((jnp.sin(m) @ V) ** 2))(M)
    rows, cols = np.asarray(s.indices).T
    np.testing.assert_allclose(g, np.asarray(dense_g)[rows, cols], rtol=1e-4, atol=1e-5)
    datas = np.stack([s.data, 2 * s.data])
    out = morphax.vmap(
        lambda d: sparse.sparsify(lambda y: y @ V)(sparse.BCOO((d, s.indices), shape=s.shape))
    )(datas)
    np.testing.assert_allclose(out, np.stack([M, 2 * M]) @ V, rtol=1e-5, atol=1e-5)


def test_sparse_grad_matches_jax():
    # JAX 0.10.2: sparse.grad(lambda X, y: X @ y)(BCOO.fromdense(arange(6.)), ones(6)) is
    # BCOO(float32[6], nse=5) with data ones: the gradient in the sparsity pattern's subspace.
    X = sparse.BCOO.fromdense(jnp.arange(6.0))
    g = sparse.grad(lambda X, y: X @ y)(X, jnp.ones(6))
    assert isinstance(g, sparse.BCOO) and g.shape == (6,) and g.nse == 5
    np.testing.assert_array_equal(g.data, np.ones(5))
    np.testing.assert_array_equal(g.indices, X.indices)
    v, g2 = sparse.value_and_grad(lambda X, y: X @ y, argnums=(0, 1))(X, 2 * jnp.ones(6))
    assert float(v) == 30.0
    np.testing.assert_array_equal(g2[0].data, 2 * np.ones(5))
    np.testing.assert_array_equal(g2[1], np.arange(6.0))
    (gh, aux) = sparse.grad(lambda X: (jnp.sum(X.data**2), 7), has_aux=True)(X)
    np.testing.assert_array_equal(gh.data, 2 * np.arange(1.0, 6.0))
    assert aux == 7


@pytest.mark.parametrize("jac", ["jacfwd", "jacrev", "jacobian"])
def test_sparse_jacobians_match_jax_layout(jac):
    # JAX 0.10.2: sparse.jacfwd(lambda X: X @ ones(3))(BCOO 2x3 with nse=3) is
    # BCOO(float32[2, 2, 3], nse=3, n_batch=1): data (2, 3), indices (2, 3, 2).
    s = sparse.BCOO.fromdense(np.array([[0, 1, 0], [2, 0, 3]], np.float32))
    J = getattr(sparse, jac)(lambda X: X @ jnp.ones(3))(s)
    assert isinstance(J, sparse.BCOO)
    assert J.shape == (2, 2, 3) and J.n_batch == 1
    assert J.data.shape == (2, 3) and J.indices.shape == (2, 3, 2)
    dense_J = morphax.jacfwd(lambda m: m @ jnp.ones(3))(jnp.asarray(s.todense()))
    mask = np.asarray(s.todense()) != 0
    np.testing.assert_allclose(J.todense(), np.asarray(dense_J) * mask)


def test_sparsify_control_flow():
    s = sparse.BCOO.fromdense(M)

    def loop(x):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))[1]

    out = sparse.sparsify(loop)(s)
    assert isinstance(out, sparse.BCOO)
    np.testing.assert_allclose(out.todense(), 8 * M)

    def branch(p, x):
        return lax.cond(p, lambda y: y * 2.0, lambda y: -y, x)

    for p in (True, False):
        np.testing.assert_allclose(sparse.sparsify(branch)(p, s).todense(), 2 * M if p else -M)
        np.testing.assert_allclose(morphax.jit(sparse.sparsify(branch))(p, s).todense(), 2 * M if p else -M)

    def scanned(x):
        return lax.scan(lambda c, w: (c * w, (c @ V).sum()), x, jnp.arange(1.0, 4.0))

    carry, ys = sparse.sparsify(scanned)(s)
    np.testing.assert_allclose(carry.todense(), 6 * M, rtol=1e-6)
    np.testing.assert_allclose(ys, [(M @ V).sum() * k for k in (1, 1, 2)], rtol=1e-5)


def test_sparsified_training_loop_matches_dense():
    # A whole program written for dense arrays: logistic regression by gradient descent in a
    # fori_loop (grad inside the loop), run by sparsify on a sparse design matrix and by jit.
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 60).astype(np.float32)
    X = (rng.normal(size=(60, 8)) + labels[:, None]).astype(np.float32)
    X[rng.random(X.shape) < 0.6] = 0

    def loss(w, X, y):
        logits = X @ w[1:] + w[0]
        return jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)

    def fit(X, y):
        step = lambda i, w: w - 0.5 * morphax.grad(loss)(w, X, y)  # noqa: E731
        return lax.fori_loop(0, 50, step, jnp.zeros(X.shape[1] + 1))

    dense = morphax.jit(fit)(X, labels)
    sp = morphax.jit(sparse.sparsify(fit))(sparse.BCOO.fromdense(X), labels)
    np.testing.assert_allclose(sp, dense, rtol=1e-4, atol=1e-5)
    assert float(loss(dense, X, labels)) < float(loss(jnp.zeros(9), X, labels))
