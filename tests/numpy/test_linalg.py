"""`morphax.numpy.linalg` and `morphax.lax.linalg`: every listed name exists; each function against
numpy.linalg (values, shapes, JAX's result dtypes: float32 stays float32, integers become float32)
on several shapes including batches; decompositions through their defining identities; samples
under jit and vmap; check_grads for the differentiable ones; JAX as an optional oracle."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import morphax
import morphax.lax.linalg as lax_linalg
import morphax.numpy as jnp
from morphax.test_util import check_grads

LIST = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "api" / "jax_numpy_linalg.txt"
LAX_BASICS = (
    "cholesky eig eigh lu lu_pivots_to_permutation qr svd triangular_solve EigImplementation "
    "EighImplementation SvdAlgorithm"
).split()
RNG = np.random.default_rng(2024)
BATCHES = ((), (2,), (2, 3))


def _f32(shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _c64(shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


def _spd(shape, dtype=np.float32):
    a = RNG.standard_normal(shape) + (1j * RNG.standard_normal(shape) if np.dtype(dtype).kind == "c" else 0)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def _wide(x):
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) if x.dtype.kind in "fc" else x


def _close(got, want, dtype, tol=2e-4):
    assert isinstance(got, morphax.Array), type(got)
    assert got.dtype == np.dtype(dtype), f"dtype {got.dtype} != {np.dtype(dtype)}"
    want = np.asarray(want)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    np.testing.assert_allclose(_wide(got), _wide(want), rtol=tol, atol=tol)


def _allclose(got, want, tol=1e-4):
    np.testing.assert_allclose(_wide(got), _wide(want), rtol=tol, atol=tol)


def _H(x):
    return np.conj(np.swapaxes(x, -1, -2))


# ------------------------------------------------------------------------------------------------
# Coverage.


def test_every_listed_name_exists():
    names = LIST.read_text().split() if LIST.exists() else []
    missing = [n for n in names if not hasattr(jnp.linalg, n)]
    assert not missing, f"morphax.numpy.linalg lacks {missing}"
    assert len(names) in (0, 31)


def test_lax_linalg_basics_exist():
    missing = [n for n in LAX_BASICS if not hasattr(lax_linalg, n)]
    assert not missing


# ------------------------------------------------------------------------------------------------
# Values and dtypes against numpy.linalg.


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_cholesky(batch, dtype):
    a = _spd(batch + (4, 4), dtype)
    _close(jnp.linalg.cholesky(a), np.linalg.cholesky(_wide(a)), dtype)
    _close(jnp.linalg.cholesky(a, upper=True), np.linalg.cholesky(_wide(a), upper=True), dtype)


def test_cholesky_not_positive_definite_gives_nan():
    out = np.asarray(jnp.linalg.cholesky(np.stack([-np.eye(3), np.eye(3)]).astype(np.float32)))
    assert np.isnan(out[0]).all() and np.allclose(out[1], np.eye(3))


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_det_slogdet(batch, n):
    a = _f32(batch + (n, n))
    _close(jnp.linalg.det(a), np.linalg.det(_wide(a)), np.float32, tol=1e-3)
    sign, logdet = jnp.linalg.slogdet(a)
    want = np.linalg.slogdet(_wide(a))
    _close(sign, want.sign, np.float32)
    _close(logdet, want.logabsdet, np.float32, tol=1e-3)
    sign_qr, logdet_qr = jnp.linalg.slogdet(a, method="qr")
    _close(sign_qr, want.sign, np.float32)
    _close(logdet_qr, want.logabsdet, np.float32, tol=1e-3)


def test_det_slogdet_complex_and_singular():
    a = _c64((2, 4, 4))
    _close(jnp.linalg.det(a), np.linalg.det(_wide(a)), np.complex64, tol=1e-3)
    sign, logdet = jnp.linalg.slogdet(a)
    _close(sign, np.linalg.slogdet(_wide(a)).sign, np.complex64, tol=1e-3)
    assert logdet.dtype == np.float32
    sing = np.ones((4, 4), np.float32)
    assert float(jnp.linalg.det(sing)) == 0.0
    s, ld = jnp.linalg.slogdet(sing)
    assert float(s) == 0.0 and float(ld) == -np.inf
    res = jnp.linalg.slogdet(a)
    assert res.sign is res[0] and res.logabsdet is res[1]


@pytest.mark.parametrize("int_dtype", [np.int32, np.int8, np.bool_])
def test_integers_promote_to_float32(int_dtype):
    a = (np.eye(3) * 2 + np.tri(3, k=-1)).astype(int_dtype)
    for fn in (
        jnp.linalg.inv,
        jnp.linalg.det,
        jnp.linalg.pinv,
        jnp.linalg.svdvals,
        jnp.linalg.norm,
        jnp.linalg.eigvalsh,
        jnp.linalg.cond,
        lambda x: jnp.linalg.slogdet(x)[1],
        lambda x: jnp.linalg.qr(x).R,
        lambda x: jnp.linalg.solve(x, x[0]),
    ):
        assert fn(a).dtype == np.float32
    assert jnp.linalg.eigvals(a).dtype == np.complex64
    assert jnp.linalg.matrix_rank(a).dtype == np.int32
    assert jnp.linalg.trace(np.arange(9, dtype=np.int32).reshape(3, 3)).dtype == np.int32


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_inv_and_solve(batch, dtype):
    mk = _f32 if dtype == np.float32 else _c64
    a = mk(batch + (4, 4)) + 4 * np.eye(4, dtype=dtype)
    _close(jnp.linalg.inv(a), np.linalg.inv(_wide(a)), dtype, tol=1e-3)
    b = mk(batch + (4, 2))
    _close(jnp.linalg.solve(a, b), np.linalg.solve(_wide(a), _wide(b)), dtype, tol=1e-3)
    v = mk((4,))
    want = np.linalg.solve(_wide(a), np.broadcast_to(_wide(v)[..., None], batch + (4, 1)))[..., 0]
    _close(jnp.linalg.solve(a, v), want, dtype, tol=1e-3)


def test_solve_broadcasts_batches_and_rejects_ambiguous_shapes():
    a, b = _f32((3, 1, 4, 4)) + 4 * np.eye(4, dtype=np.float32), _f32((5, 4, 2))
    _close(jnp.linalg.solve(a, b), np.linalg.solve(_wide(a), _wide(b)), np.float32, tol=1e-3)
    with pytest.raises(ValueError, match="Invalid shapes for solve"):
        jnp.linalg.solve(_f32((2, 3, 3)), _f32((2, 3)))
    with pytest.raises(ValueError, match=r"\[..., n, n\]"):
        jnp.linalg.inv(_f32((2, 3)))


@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 3), (2, 2, 3, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_qr(shape, dtype):
    a = (_f32 if dtype == np.float32 else _c64)(shape)
    k = min(shape[-2:])
    for mode, cols in (("reduced", k), ("complete", shape[-2])):
        q, r = jnp.linalg.qr(a, mode=mode)
        wq, wr = np.linalg.qr(_wide(a), mode=mode)
        assert q.shape == wq.shape and r.shape == wr.shape and q.dtype == r.dtype == dtype
        _close(q @ r, a, dtype, tol=1e-4)
        _allclose(
            _H(np.asarray(q)) @ np.asarray(q), np.broadcast_to(np.eye(cols), q.shape[:-2] + (cols, cols))
        )
        np.testing.assert_allclose(np.tril(np.asarray(r), -1), 0, atol=1e-6)
        # LAPACK picks the same signs in float32 and float64.
        _close(r, wr, dtype, tol=1e-3)
    _close(jnp.linalg.qr(a, mode="r"), np.linalg.qr(_wide(a), mode="r"), dtype, tol=1e-3)


@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 3), (2, 2, 4, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_svd(shape, dtype):
    a = (_f32 if dtype == np.float32 else _c64)(shape)
    want_s = np.linalg.svd(_wide(a), compute_uv=False)
    _close(jnp.linalg.svdvals(a), want_s, np.float32)
    _close(jnp.linalg.svd(a, compute_uv=False), want_s, np.float32)
    for full in (True, False):
        u, s, vh = jnp.linalg.svd(a, full_matrices=full)
        wu, _, wvh = np.linalg.svd(_wide(a), full_matrices=full)
        assert u.shape == wu.shape and vh.shape == wvh.shape and u.dtype == vh.dtype == dtype
        _close(s, want_s, np.float32)
        k = s.shape[-1]
        rec = np.asarray(u)[..., :, :k] * np.asarray(s)[..., None, :] @ np.asarray(vh)[..., :k, :]
        _allclose(rec, a)


def test_svd_hermitian():
    a = _spd((2, 4, 4)) - 4 * np.eye(4, dtype=np.float32)
    u, s, vh = jnp.linalg.svd(a, hermitian=True)
    _close(s, np.linalg.svd(_wide(a), hermitian=True, compute_uv=False), np.float32)
    _allclose(np.asarray(u) * np.asarray(s)[..., None, :] @ np.asarray(vh), a)
    _close(
        jnp.linalg.svd(a, hermitian=True, compute_uv=False),
        np.linalg.svd(_wide(a), compute_uv=False),
        np.float32,
    )


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_eigh(batch, dtype):
    a = _spd(batch + (4, 4), dtype)
    for uplo in (None, "L", "U"):
        w, v = jnp.linalg.eigh(a, UPLO=uplo)
        ww = np.linalg.eigh(_wide(a), UPLO=uplo or "L").eigenvalues
        _close(w, ww, np.float32, tol=1e-3)
        assert v.dtype == dtype
        rec = np.asarray(v) @ (np.asarray(w)[..., None] * _H(np.asarray(v)))
        _allclose(rec, a, 1e-3)
    _close(jnp.linalg.eigvalsh(a), np.linalg.eigvalsh(_wide(a)), np.float32, tol=1e-3)
    # Without symmetrization only the named triangle is read.
    junk = np.asarray(a).copy()
    junk[..., 0, -1] = 100
    _close(
        jnp.linalg.eigvalsh(junk, "L", symmetrize_input=False),
        np.linalg.eigvalsh(_wide(a)),
        np.float32,
        tol=1e-3,
    )


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_eig_eigvals(batch, dtype):
    a = (_f32 if dtype == np.float32 else _c64)(batch + (4, 4))
    w, v = jnp.linalg.eig(a)
    assert w.dtype == v.dtype == np.complex64
    want = np.sort_complex(np.linalg.eigvals(_wide(a)).reshape(-1, 4)).reshape(batch + (4,))
    got = np.sort_complex(np.asarray(jnp.linalg.eigvals(a)).reshape(-1, 4)).reshape(batch + (4,))
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(
        _wide(a) @ np.asarray(v), np.asarray(v) * np.asarray(w)[..., None, :], atol=1e-3
    )


def test_lax_linalg_lu_and_triangular_solve():
    a = _f32((2, 4, 3))
    lu, piv, perm = lax_linalg.lu(a)
    assert lu.dtype == np.float32 and piv.dtype == perm.dtype == np.int32 and piv.shape == (2, 3)
    lo = np.tril(np.asarray(lu), -1)[..., :, :3] + np.eye(4, 3)
    up = np.triu(np.asarray(lu))[..., :3, :]
    np.testing.assert_allclose(
        lo @ up, np.take_along_axis(a, np.asarray(perm)[..., None], axis=-2), atol=1e-5
    )
    np.testing.assert_array_equal(lax_linalg.lu_pivots_to_permutation(piv, 4), perm)
    t = np.tril(_f32((3, 3))) + 3 * np.eye(3, dtype=np.float32)
    b = _f32((3, 2))
    _close(
        lax_linalg.triangular_solve(t, b, left_side=True, lower=True),
        np.linalg.solve(_wide(t), _wide(b)),
        np.float32,
    )
    _close(
        lax_linalg.triangular_solve(t, b.T, left_side=False, lower=True, transpose_a=True),
        np.linalg.solve(_wide(t), _wide(b)).T,
        np.float32,
    )
    _close(
        lax_linalg.triangular_solve(t, b[:, 0], left_side=True, lower=True),
        np.linalg.solve(_wide(t), _wide(b[:, 0])),
        np.float32,
    )


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_lstsq_pinv_rank(shape):
    a, b = _f32(shape), _f32((shape[0], 2))
    for bb in (b, b[:, 0]):
        got = jnp.linalg.lstsq(a, bb)
        want = np.linalg.lstsq(_wide(a), _wide(bb), rcond=None)
        _close(got[0], want[0], np.float32, tol=1e-3)
        if want[1].size:
            _close(got[1], want[1], np.float32, tol=1e-3)
        assert int(got[2]) == want[2] and got[2].dtype == np.int32
        _close(got[3], want[3], np.float32, tol=1e-4)
    _close(jnp.linalg.pinv(a), np.linalg.pinv(_wide(a)), np.float32, tol=1e-3)
    _close(jnp.linalg.pinv(np.stack([a, a])), np.linalg.pinv(np.stack([_wide(a)] * 2)), np.float32, tol=1e-3)
    low = _f32((shape[0], 1)) @ _f32((1, shape[1]))
    assert int(jnp.linalg.matrix_rank(low)) == 1 == np.linalg.matrix_rank(low)
    _close(jnp.linalg.matrix_rank(np.stack([a, low])), np.linalg.matrix_rank(np.stack([a, low])), np.int32)


@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 3, 6])
def test_matrix_power(n):
    a = _f32((2, 3, 3)) + 3 * np.eye(3, dtype=np.float32)
    _close(jnp.linalg.matrix_power(a, n), np.linalg.matrix_power(_wide(a), n), np.float32, tol=2e-3)
    assert jnp.linalg.matrix_power(np.eye(2, dtype=np.int32), 3).dtype == np.int32


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norms(ord, keepdims):
    x = _f32((2, 3, 4))
    for axis in ((1, 2), (2, 0), (-1, -2)):
        want = np.linalg.norm(_wide(x), ord=ord, axis=axis, keepdims=keepdims)
        _close(jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims), want, np.float32, tol=1e-4)
    _close(
        jnp.linalg.matrix_norm(x, ord=ord or "fro", keepdims=keepdims),
        np.linalg.matrix_norm(_wide(x), ord=ord or "fro", keepdims=keepdims),
        np.float32,
        tol=1e-4,
    )


@pytest.mark.parametrize("ord", [None, 0, 1, 2, 3, 0.5, -1, np.inf, -np.inf])
def test_vector_norms(ord):
    x = _f32((2, 3, 4))
    for axis in (None, 0, -1, (0, 2)):
        want = np.linalg.vector_norm(_wide(x), ord=2 if ord is None else ord, axis=axis)
        _close(
            jnp.linalg.vector_norm(x, ord=2 if ord is None else ord, axis=axis), want, np.float32, tol=1e-4
        )
    _close(jnp.linalg.norm(x[0, 0], ord=ord), np.linalg.norm(_wide(x[0, 0]), ord=ord), np.float32, tol=1e-4)
    _close(jnp.linalg.norm(x), np.linalg.norm(_wide(x)), np.float32)
    c = _c64((3, 2))
    _close(jnp.linalg.norm(c), np.linalg.norm(_wide(c)), np.float32)
    _close(
        jnp.linalg.norm(c, ord=ord, axis=0), np.linalg.norm(_wide(c), ord=ord, axis=0), np.float32, tol=1e-4
    )


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, "fro", np.inf, -np.inf])
def test_cond(p):
    a = _f32((2, 4, 4))
    _close(jnp.linalg.cond(a, p), np.linalg.cond(_wide(a), p), np.float32, tol=2e-3)
    assert float(jnp.linalg.cond(np.ones((3, 3), np.float32), 1)) == np.inf


def test_array_api_helpers():
    x, y = _f32((2, 4, 3)), _f32((2, 4, 3))
    _close(jnp.linalg.cross(x, y), np.linalg.cross(x, y), np.float32)
    _close(
        jnp.linalg.cross(np.swapaxes(x, 1, 2), np.swapaxes(y, 1, 2), axis=1),
        np.cross(np.swapaxes(x, 1, 2), np.swapaxes(y, 1, 2), axis=1),
        np.float32,
    )
    _close(jnp.linalg.cross(x[0], y[0, 0]), np.linalg.cross(x[0], y[0, 0]), np.float32)
    with pytest.raises(ValueError, match="3-dimensional"):
        jnp.linalg.cross(x[..., :2], y[..., :2])
    for off in (-2, -1, 0, 1, 2, 5):
        _close(jnp.linalg.diagonal(x, offset=off), np.linalg.diagonal(x, offset=off), np.float32)
        _close(jnp.linalg.trace(x, offset=off), np.linalg.trace(x, offset=off), np.float32)
    _close(jnp.linalg.trace(x, dtype=np.int32), np.linalg.trace(x, dtype=np.int32), np.int32)
    _close(jnp.linalg.outer(x[0, 0], y[0, 1]), np.linalg.outer(x[0, 0], y[0, 1]), np.float32)
    with pytest.raises(ValueError, match="one-dimensional"):
        jnp.linalg.outer(x, y)
    _close(jnp.linalg.matrix_transpose(x), np.linalg.matrix_transpose(x), np.float32)
    _close(jnp.linalg.matmul(x, np.swapaxes(y, 1, 2)), np.linalg.matmul(x, np.swapaxes(y, 1, 2)), np.float32)
    _close(jnp.linalg.vecdot(x, y), np.linalg.vecdot(x, y), np.float32)
    _close(jnp.linalg.vecdot(x, y, axis=1), np.linalg.vecdot(x, y, axis=1), np.float32)
    _close(
        jnp.linalg.tensordot(x, y, axes=((1, 2), (1, 2))),
        np.linalg.tensordot(x, y, axes=((1, 2), (1, 2))),
        np.float32,
    )
    _close(
        jnp.linalg.tensordot(x, np.swapaxes(y, 0, 2), axes=1),
        np.tensordot(x, np.swapaxes(y, 0, 2), axes=1),
        np.float32,
    )
    chain = [_f32((3,)), _f32((3, 5)), _f32((5, 2)), _f32((2, 4))]
    _close(jnp.linalg.multi_dot(chain), np.linalg.multi_dot(chain), np.float32, tol=1e-4)
    chain2 = chain[1:] + [_f32((4,))]
    _close(jnp.linalg.multi_dot(chain2), np.linalg.multi_dot(chain2), np.float32, tol=1e-4)


def test_tensorinv_tensorsolve():
    a = _f32((6, 2, 3))
    _close(jnp.linalg.tensorinv(a, ind=1), np.linalg.tensorinv(_wide(a), ind=1), np.float32, tol=1e-3)
    a4 = _f32((2, 3, 6))
    _close(jnp.linalg.tensorinv(a4, ind=2), np.linalg.tensorinv(_wide(a4), ind=2), np.float32, tol=1e-3)
    b = _f32((6,))
    _close(jnp.linalg.tensorsolve(a, b), np.linalg.tensorsolve(_wide(a), _wide(b)), np.float32, tol=1e-3)
    a3 = _f32((2, 6, 3))
    b3 = _f32((6,))
    _close(
        jnp.linalg.tensorsolve(a3, b3, axes=(0,)),
        np.linalg.tensorsolve(_wide(a3), _wide(b3), axes=(0,)),
        np.float32,
        tol=1e-3,
    )
    with pytest.raises(ValueError, match="ind"):
        jnp.linalg.tensorinv(a, ind=0)


def test_shape_and_dtype_errors_name_the_function():
    with pytest.raises(ValueError, match="cholesky"):
        jnp.linalg.cholesky(_f32((2, 3)))
    with pytest.raises(TypeError, match="rank at least 2"):
        lax_linalg.qr(_f32((3,)))
    with pytest.raises(TypeError, match="int32"):
        lax_linalg.cholesky(np.eye(3, dtype=np.int32), symmetrize_input=False)
    with pytest.raises(NotImplementedError, match="float16"):
        jnp.linalg.inv(np.eye(2, dtype=np.float16))
    with pytest.raises(ValueError, match="triangular_solve"):
        lax_linalg.triangular_solve(_f32((3, 3)), _f32((2, 2)), left_side=True)
    with pytest.raises(ValueError, match="UPLO"):
        jnp.linalg.eigh(np.eye(2), UPLO="X")
    with pytest.raises(ValueError, match="mode"):
        jnp.linalg.qr(np.eye(2), mode="bogus")


# ------------------------------------------------------------------------------------------------
# jit and vmap samples.


def test_under_jit_matches_eager():
    a = _spd((2, 4, 4))
    b = _f32((2, 4, 3))
    fns = [
        jnp.linalg.inv,
        jnp.linalg.det,
        jnp.linalg.cholesky,
        lambda x: jnp.linalg.slogdet(x)[1],
        lambda x: jnp.linalg.eigh(x)[0],
        lambda x: jnp.linalg.svd(x)[1],
        lambda x: jnp.linalg.qr(x)[1],
        lambda x: jnp.linalg.solve(x, b),
        jnp.linalg.pinv,
        lambda x: jnp.linalg.norm(x, ord="nuc", axis=(1, 2)),
        jnp.linalg.eigvals,
        jnp.linalg.cond,
    ]
    for fn in fns:
        np.testing.assert_allclose(np.asarray(morphax.jit(fn)(a)), np.asarray(fn(a)), rtol=1e-5, atol=1e-5)


def test_under_vmap_matches_loop():
    a = _spd((3, 4, 4))
    b = _f32((3, 4, 2))
    fns = [
        jnp.linalg.inv,
        jnp.linalg.det,
        jnp.linalg.cholesky,
        lambda x: jnp.linalg.slogdet(x)[1],
        lambda x: jnp.linalg.eigh(x)[0],
        jnp.linalg.svdvals,
        lambda x: jnp.linalg.qr(x)[1],
        jnp.linalg.pinv,
        jnp.linalg.matrix_rank,
        lambda x: jnp.linalg.norm(x, ord=2),
    ]
    for fn in fns:
        got = morphax.vmap(fn)(a)
        want = np.stack([np.asarray(fn(a[i])) for i in range(3)])
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    # solve with the batch on different axes of a and b, and a shared a.
    got = morphax.vmap(jnp.linalg.solve, in_axes=(0, 2))(a, np.moveaxis(b, 0, 2))
    _close(got, np.linalg.solve(_wide(a), _wide(b)), np.float32, tol=1e-3)
    got = morphax.vmap(jnp.linalg.solve, in_axes=(None, 0))(a[0], b)
    _close(got, np.linalg.solve(_wide(a[0]), _wide(b)), np.float32, tol=1e-3)
    got = morphax.vmap(
        lambda t, r: lax_linalg.triangular_solve(t, r, left_side=True, lower=True), in_axes=(None, 0)
    )(np.tril(a[0]), b)
    _close(got, np.linalg.solve(np.tril(_wide(a[0])), _wide(b)), np.float32, tol=1e-3)


# ------------------------------------------------------------------------------------------------
# Derivatives (float64, central differences).


def _grads(f, args, order=2, modes=("fwd", "rev")):
    with morphax.enable_x64():
        args = [
            jnp.asarray(
                np.asarray(a).astype(np.complex128 if np.asarray(a).dtype.kind == "c" else np.float64)
            )
            for a in args
        ]
        check_grads(f, args, order=order, modes=modes, atol=1e-4, rtol=1e-4)


def _sym(x):
    return (x + jnp.conj(jnp.swapaxes(x, -1, -2))) / 2


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_grad_cholesky(dtype):
    a = _spd((2, 3, 3), dtype)
    _grads(lambda x: jnp.linalg.cholesky(x), [a])
    _grads(lambda x: jnp.linalg.cholesky(x, upper=True, symmetrize_input=False), [a], order=1)


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4), (2, 4, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_grad_qr(shape, mode):
    a = _f32(shape)
    _grads(lambda x: tuple(jnp.linalg.qr(x, mode=mode)), [a])


def test_grad_qr_complex():
    _grads(lambda x: tuple(jnp.linalg.qr(x)), [_c64((4, 3))])
    _grads(lambda x: tuple(jnp.linalg.qr(x)), [_c64((3, 4))], order=1)


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 5), (2, 3, 3)])
def test_grad_svd(shape):
    a = _f32(shape)
    _grads(lambda x: jnp.linalg.svd(x, compute_uv=False), [a])

    # Sign-invariant losses of the singular vectors: the reconstruction and |U|^2.
    def recon(x):
        u, s, vh = jnp.linalg.svd(x, full_matrices=False)
        return jnp.matmul(u * s[..., None, :], vh), u * u, vh * vh

    _grads(recon, [a])


def test_grad_svd_complex():
    def loss(x):
        u, s, vh = jnp.linalg.svd(x, full_matrices=False)
        return s, jnp.abs(u) ** 2, jnp.real(jnp.matmul(u * s[..., None, :].astype(u.dtype), vh))

    _grads(loss, [_c64((4, 3))], order=1)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_grad_eigh(dtype):
    a = (_f32 if dtype == np.float32 else _c64)((2, 3, 3))
    _grads(lambda x: jnp.linalg.eigvalsh(x), [a])

    def vec_loss(x):
        w, v = jnp.linalg.eigh(x)
        # v v^H per eigenvector does not depend on the phase LAPACK picks.
        return jnp.abs(v) ** 2, jnp.real(
            jnp.matmul(v * w[..., None, :].astype(v.dtype), jnp.conj(jnp.swapaxes(v, -1, -2)))
        )

    _grads(vec_loss, [a], order=2 if dtype == np.float32 else 1)


def test_eig_batch_of_real_then_complex_eigenvectors():
    """A batch whose first matrix has real eigenvectors and whose second has complex ones: each
    keeps its imaginary parts (a regression: the batch took the first matrix's real dtype)."""
    import scipy.linalg

    a = np.array([[[2.0, 1.0], [0.0, 3.0]], [[0.0, -1.0], [1.0, 0.0]]], np.float32)
    w, v = jnp.linalg.eig(a)
    for k in range(2):
        want_w, want_v = scipy.linalg.eig(a[k])
        np.testing.assert_allclose(np.sort_complex(np.asarray(w[k])), np.sort_complex(want_w), atol=1e-6)
        # Each eigenpair satisfies a v = w v (eigenvectors are defined up to a phase).
        np.testing.assert_allclose(a[k] @ np.asarray(v[k]), np.asarray(v[k]) * np.asarray(w[k]), atol=1e-5)
    assert np.abs(np.asarray(v[1]).imag).max() > 0.1


def test_grad_eig_eigenvalues():
    a = _f32((2, 3, 3))
    _grads(lambda x: jnp.linalg.eigvals(x), [a], order=2)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_grad_inv_solve(shape):
    a = _f32(shape) + 3 * np.eye(shape[-1], dtype=np.float32)
    _grads(jnp.linalg.inv, [a])
    b = _f32(shape[:-1] + (2,))
    _grads(jnp.linalg.solve, [a, b])
    _grads(jnp.linalg.solve, [a, _f32(shape[-1:])])


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_grad_det_slogdet(n):
    a = _f32((2, n, n)) + 2 * np.eye(n, dtype=np.float32)
    _grads(jnp.linalg.det, [a])
    _grads(lambda x: tuple(jnp.linalg.slogdet(x)), [a])
    _grads(lambda x: jnp.linalg.slogdet(x, method="qr")[1], [a], order=1)


def test_grad_det_at_rank_deficient_matrix():
    # At rank n-1 the gradient is the (nonzero) adjugate transpose.
    u = RNG.standard_normal((4, 3))
    a = (u @ RNG.standard_normal((3, 4))).astype(np.float64)
    with morphax.enable_x64():
        g = np.asarray(morphax.grad(jnp.linalg.det)(jnp.asarray(a)))
    cof = np.array(
        [
            [(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(4)]
            for i in range(4)
        ]
    )
    np.testing.assert_allclose(g, cof, atol=1e-8)
    assert np.abs(cof).max() > 1e-3


def test_grad_det_complex():
    _grads(jnp.linalg.det, [_c64((4, 4))], order=1)


def test_grad_triangular_solve():
    t = np.tril(_f32((2, 3, 3))) + 3 * np.eye(3, dtype=np.float32)
    b = _f32((2, 3, 2))
    for kw in (
        dict(left_side=True, lower=True),
        dict(left_side=False, lower=True, transpose_a=True),
        dict(left_side=True, lower=True, unit_diagonal=True),
    ):
        bb = b if kw["left_side"] else np.swapaxes(b, -1, -2)
        _grads(lambda x, y, kw=kw: lax_linalg.triangular_solve(x, y, **kw), [t, bb])


def test_grad_pinv_lstsq_norms():
    a = _f32((4, 3))
    _grads(jnp.linalg.pinv, [a])
    _grads(jnp.linalg.pinv, [a.T], order=1)
    _grads(lambda x, y: jnp.linalg.lstsq(x, y)[0], [a, _f32((4,))], order=1)
    _grads(lambda x: jnp.linalg.norm(x, ord="nuc"), [a], order=1)
    _grads(lambda x: jnp.linalg.norm(x, ord=2), [a], order=1)
    _grads(lambda x: jnp.linalg.matrix_power(x, -2), [a[:3] + 3 * np.eye(3, dtype=np.float32)], order=1)


def test_grad_composes_with_vmap_and_jit():
    a = _spd((3, 3, 3))
    with morphax.enable_x64():
        x = jnp.asarray(a.astype(np.float64))
        f = lambda m: jnp.linalg.slogdet(m)[1] + jnp.sum(jnp.linalg.cholesky(m))  # noqa: E731
        per_example = morphax.jit(morphax.vmap(morphax.grad(f)))(x)
        loop = np.stack([np.asarray(morphax.grad(f)(x[i])) for i in range(3)])
        np.testing.assert_allclose(np.asarray(per_example), loop, rtol=1e-10, atol=1e-10)
        # d/dA log det A = A^{-T}.
        g = morphax.grad(lambda m: jnp.linalg.slogdet(m)[1])(x[0])
        np.testing.assert_allclose(np.asarray(g), np.linalg.inv(a[0].astype(np.float64)).T, rtol=1e-8)


# ------------------------------------------------------------------------------------------------
# JAX as an optional oracle: same values and dtypes on a sample.


def test_against_jax_oracle():
    jax = pytest.importorskip("jax")
    jjnp = jax.numpy
    a = _spd((2, 4, 4))
    b = _f32((2, 4, 3))
    cases = [
        ("inv", (a,)),
        ("det", (a,)),
        ("cholesky", (a,)),
        ("eigvalsh", (a,)),
        ("svdvals", (b,)),
        ("pinv", (b,)),
        ("matrix_rank", (b,)),
        ("norm", (b,)),
        ("cond", (a,)),
        ("solve", (a, b)),
        ("trace", (b,)),
        ("diagonal", (b,)),
        ("matrix_power", (a, 3)),
    ]
    for name, args in cases:
        got = getattr(jnp.linalg, name)(*args)
        want = getattr(jjnp.linalg, name)(*args)
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-4, atol=2e-4, err_msg=name)
    ints = np.eye(3, dtype=np.int32) * 2
    for name in ("inv", "det", "eigvalsh", "svdvals", "pinv", "norm", "eigvals", "matrix_rank", "trace"):
        assert getattr(jnp.linalg, name)(ints).dtype == getattr(jjnp.linalg, name)(ints).dtype, name
    sign, logdet = jnp.linalg.slogdet(a)
    jsign, jlogdet = jjnp.linalg.slogdet(a)
    np.testing.assert_allclose(np.asarray(logdet), np.asarray(jlogdet), rtol=1e-5)
    # Derivative oracle on a rank-deficient determinant and an eigh loss.
    sing = np.ones((3, 3), np.float32) + np.diag([0, 0, 1]).astype(np.float32)
    np.testing.assert_allclose(
        np.asarray(morphax.grad(jnp.linalg.det)(sing)),
        np.asarray(jax.grad(jjnp.linalg.det)(sing)),
        rtol=1e-4,
        atol=1e-5,
    )
