"""experimental.sparse BCSR, COO, CSR and CSC against the dense computation (values and
gradients with respect to the data, under jit and vmap), and conversions from and to SciPy's
sparse matrices."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import morphax
import morphax.numpy as jnp
from morphax.experimental import sparse


def _rand(shape, density=0.4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape).astype(np.float32)
    return x * (rng.random(shape) < density)


M = _rand((5, 6))
V = np.random.default_rng(1).normal(size=(6,)).astype(np.float32)
B = np.random.default_rng(2).normal(size=(6, 3)).astype(np.float32)


@pytest.mark.parametrize("shape,n_batch,n_dense", [((5, 6), 0, 0), ((2, 5, 6), 1, 0), ((5, 6, 2), 0, 1)])
def test_bcsr_roundtrip(shape, n_batch, n_dense):
    X = _rand(shape)
    s = sparse.BCSR.fromdense(X, n_batch=n_batch, n_dense=n_dense)
    assert (s.n_batch, s.n_dense) == (n_batch, n_dense)
    np.testing.assert_array_equal(s.todense(), X)
    np.testing.assert_array_equal(s.to_bcoo().todense(), X)
    np.testing.assert_array_equal(
        sparse.BCSR.from_bcoo(sparse.BCOO.fromdense(X, n_batch=n_batch, n_dense=n_dense)).todense(), X
    )
    padded = sparse.bcsr_fromdense(X, nse=s.nse + 2, n_batch=n_batch, n_dense=n_dense)
    np.testing.assert_array_equal(padded.todense(), X)


def test_bcsr_matches_jax_layout():
    # JAX 0.10.2: BCSR.fromdense([[0,1,0],[2,0,3]]): indices [1,0,2], indptr [0,1,3].
    s = sparse.BCSR.fromdense(np.array([[0, 1, 0], [2, 0, 3]], np.float32))
    np.testing.assert_array_equal(s.indices, [1, 0, 2])
    np.testing.assert_array_equal(s.indptr, [0, 1, 3])


def test_bcsr_dot_general_extract_and_grad():
    s = sparse.BCSR.fromdense(M)
    np.testing.assert_allclose(s @ B, M @ B, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s @ V, M @ V, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(morphax.jit(lambda a, b: a @ b)(s, B), M @ B, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.ones((2, 5), np.float32) @ s, np.ones((2, 5)) @ M, rtol=1e-5, atol=1e-5)
    W = np.arange(30, dtype=np.float32).reshape(5, 6)
    d = sparse.bcsr_extract(s.indices, s.indptr, W)
    rows, cols = np.nonzero(M)
    np.testing.assert_array_equal(d, W[rows, cols])

    def f(data):
        return jnp.sum(sparse.BCSR((data, s.indices, s.indptr), shape=M.shape) @ B)

    g = morphax.grad(f)(s.data)
    np.testing.assert_allclose(g, (np.ones((5, 3)) @ B.T)[rows, cols], rtol=1e-5)
    out = morphax.vmap(lambda data: sparse.BCSR((data, s.indices, s.indptr), shape=M.shape).todense())(
        np.stack([s.data, 2 * s.data])
    )
    np.testing.assert_allclose(out, [M, 2 * M])


def test_bcsr_sum_duplicates_broadcast_concatenate():
    s = sparse.BCSR.fromdense(M)
    np.testing.assert_array_equal(sparse.bcsr_sum_duplicates(s).todense(), M)
    c = sparse.bcsr_concatenate([s, s], dimension=0)
    np.testing.assert_array_equal(c.todense(), np.concatenate([M, M]))
    b = sparse.bcsr_broadcast_in_dim(s, shape=(2, 5, 6), broadcast_dimensions=(1, 2))
    np.testing.assert_array_equal(b.todense(), np.broadcast_to(M, (2, 5, 6)))


@pytest.mark.parametrize("cls", ["COO", "CSR", "CSC"])
def test_legacy_formats(cls):
    Cls = getattr(sparse, cls)
    s = Cls.fromdense(M)
    np.testing.assert_array_equal(s.todense(), M)
    np.testing.assert_allclose(s @ V, M @ V, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s @ B, M @ B, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.ones(5, np.float32) @ s, np.ones(5) @ M, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.ones((2, 5), np.float32) @ s, np.ones((2, 5)) @ M, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(s.T.todense(), M.T)
    np.testing.assert_allclose(morphax.jit(lambda a, v: a @ v)(s, V), M @ V, rtol=1e-5, atol=1e-5)
    bufs, tree = morphax.tree_util.tree_flatten(s)

    def f(data, v):
        return jnp.sum(morphax.tree_util.tree_unflatten(tree, [data, *bufs[1:]]) @ v)

    gd, gv = morphax.grad(f, argnums=(0, 1))(s.data, V)
    np.testing.assert_allclose(gv, M.sum(0), rtol=1e-5, atol=1e-6)
    # d/d data of sum(A v) is v at each stored element's column
    dense_grad = np.broadcast_to(V, M.shape)
    back = morphax.tree_util.tree_unflatten(tree, [gd, *bufs[1:]]).todense()
    np.testing.assert_allclose(back, np.where(M != 0, dense_grad, 0), rtol=1e-5, atol=1e-6)
    vs = np.stack([V, 2 * V])
    np.testing.assert_allclose(morphax.vmap(lambda v: s @ v)(vs), vs @ M.T, rtol=1e-5, atol=1e-5)
    e = sparse.eye(4, 5, 1, sparse_format=cls.lower())
    np.testing.assert_array_equal(e.todense(), np.eye(4, 5, 1))
    np.testing.assert_array_equal(sparse.empty((3, 4), sparse_format=cls.lower()).todense(), np.zeros((3, 4)))


def test_legacy_primitives_directly():
    c = sparse.coo_fromdense(M)
    np.testing.assert_allclose(sparse.coo_matvec(c, V), M @ V, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        sparse.coo_matmat(c, np.ones((5, 2), np.float32), transpose=True),
        M.T @ np.ones((5, 2)),
        rtol=1e-5,
        atol=1e-5,
    )
    r = sparse.csr_fromdense(M)
    np.testing.assert_allclose(
        sparse.csr_matvec(r, np.ones(5, np.float32), transpose=True), M.T @ np.ones(5), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_array_equal(sparse.csr_todense(r), M)
    np.testing.assert_array_equal(sparse.coo_todense(c), M)


def test_scipy_conversions():
    S = sp.random(30, 20, density=0.1, format="csr", random_state=0, dtype=np.float32)
    b = sparse.BCOO.from_scipy_sparse(S)
    np.testing.assert_array_equal(b.todense(), S.toarray())
    c = sparse.BCSR.from_scipy_sparse(S)
    np.testing.assert_array_equal(c.todense(), S.toarray())
    np.testing.assert_array_equal(c.indptr, S.indptr)
    # back to SciPy from the buffers
    back = sp.coo_matrix((np.asarray(b.data), np.asarray(b.indices).T), shape=b.shape)
    np.testing.assert_array_equal(back.toarray(), S.toarray())
    back_csr = sp.csr_matrix((np.asarray(c.data), np.asarray(c.indices), np.asarray(c.indptr)), shape=c.shape)
    np.testing.assert_array_equal(back_csr.toarray(), S.toarray())
    x = np.random.default_rng(0).normal(size=(20, 4)).astype(np.float32)
    np.testing.assert_allclose(b @ x, S @ x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c @ x, S @ x, rtol=1e-5, atol=1e-5)


def test_spsolve():
    A = sp.random(8, 8, density=0.3, random_state=1, format="csr") + sp.eye(8) * 4
    A = A.tocsr().astype(np.float32)
    b = np.arange(8, dtype=np.float32)
    x = sparse.linalg.spsolve(A.data, A.indices, A.indptr, b)
    np.testing.assert_allclose(A @ np.asarray(x), b, rtol=1e-4, atol=1e-4)
    g = morphax.grad(lambda bb: jnp.sum(sparse.linalg.spsolve(A.data, A.indices, A.indptr, bb)))(b)
    np.testing.assert_allclose(g, np.linalg.solve(A.toarray().T, np.ones(8)), rtol=1e-4, atol=1e-5)
    gA = morphax.grad(lambda d: jnp.sum(sparse.linalg.spsolve(d, A.indices, A.indptr, b)))(A.data)
    xd = np.linalg.solve(A.toarray(), b)
    lam = np.linalg.solve(A.toarray().T, np.ones(8))
    rows = np.repeat(np.arange(8), np.diff(A.indptr))
    np.testing.assert_allclose(gA, -lam[rows] * xd[A.indices], rtol=1e-3, atol=1e-4)


def test_lobpcg_standard():
    # JAX 0.10.2 on these problems: eigenvalues [10, 9, 8] in 10 iterations, and [100, 99, 98]
    # of diag(1..100) in 29.
    rng = np.random.default_rng(0)
    n = 100
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    ev = np.concatenate([[10.0, 9.0, 8.0], rng.uniform(-2, 5, n - 3)])
    A = ((Q * ev) @ Q.T).astype(np.float32)
    X0 = rng.normal(size=(n, 3)).astype(np.float32)
    theta, U, i = sparse.linalg.lobpcg_standard(A, X0)
    np.testing.assert_allclose(theta, [10, 9, 8], rtol=1e-5)
    U = np.asarray(U)
    np.testing.assert_allclose(np.linalg.norm(A @ U - U * np.asarray(theta), axis=0), 0, atol=5e-3)
    np.testing.assert_allclose(U.T @ U, np.eye(3), atol=1e-5)
    assert int(i) < 20
    theta_j, _, _ = morphax.jit(sparse.linalg.lobpcg_standard)(A, X0)
    np.testing.assert_allclose(theta_j, [10, 9, 8], rtol=1e-5)
    D = sparse.BCOO.fromdense(np.diag(np.arange(1.0, n + 1)).astype(np.float32))
    theta_s, _, i_s = sparse.linalg.lobpcg_standard(D, X0)
    np.testing.assert_allclose(theta_s, [100, 99, 98], rtol=1e-5)
    assert int(i_s) < 60
    with pytest.raises(ValueError, match="5k < n"):
        sparse.linalg.lobpcg_standard(A, np.ones((100, 30), np.float32))
