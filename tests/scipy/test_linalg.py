"""`morphax.scipy.linalg` against `scipy.linalg` (float64): decompositions, solvers in every
transpose mode, expm across the Padé degrees, polar, and every special matrix; derivatives of
expm, cholesky and solve (check_grads); batching of the matrix builders; jit."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import morphax
from morphax.scipy import linalg as ml
from morphax.test_util import check_grads

rng = np.random.default_rng(0)
A = rng.normal(size=(4, 4))
SPD = A @ A.T + 4 * np.eye(4)
B = rng.normal(size=(4, 2))
b = rng.normal(size=4)
TRI = np.triu(A) + 3 * np.eye(4)
RECT = rng.normal(size=(5, 3))
C, R = rng.normal(size=4), rng.normal(size=3)


def _close(got, want, tol=1e-12):
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


@pytest.fixture(autouse=True)
def _x64():
    with morphax.enable_x64():
        yield


def test_factorizations_and_solves():
    _close(ml.cholesky(SPD), sl.cholesky(SPD))
    _close(ml.cholesky(SPD, lower=True), sl.cholesky(SPD, lower=True))
    for lower in (False, True):
        _close(
            ml.cho_solve(ml.cho_factor(SPD, lower=lower), B), sl.cho_solve(sl.cho_factor(SPD, lower=lower), B)
        )
    for trans in (0, 1, 2, "N", "T", "C"):
        _close(ml.solve_triangular(TRI, B, trans=trans), sl.solve_triangular(TRI, B, trans=trans))
    _close(
        ml.solve_triangular(TRI.T, b, lower=True, unit_diagonal=True),
        sl.solve_triangular(TRI.T, b, lower=True, unit_diagonal=True),
    )
    for trans in (0, 1, 2):
        _close(ml.lu_solve(ml.lu_factor(A), B, trans=trans), sl.lu_solve(sl.lu_factor(A), B, trans=trans))
    _close(ml.lu_solve(ml.lu_factor(A), b), sl.lu_solve(sl.lu_factor(A), b))
    for m in (A, RECT, RECT.T):
        p, low, up = ml.lu(m)
        _close(np.asarray(p) @ np.asarray(low) @ np.asarray(up), m)
        pl, up2 = ml.lu(m, permute_l=True)
        _close(np.asarray(pl) @ np.asarray(up2), m)
    _close(ml.lu(A)[0], sl.lu(A)[0])
    for assume in ("gen", "sym", "pos"):
        _close(ml.solve(SPD, B, assume_a=assume), sl.solve(SPD, B, assume_a=assume))
    q, r = ml.qr(RECT, mode="economic")
    _close(np.asarray(q) @ np.asarray(r), RECT)
    assert ml.qr(RECT)[0].shape == (5, 5) and ml.qr(RECT, mode="r")[0].shape == (5, 3)
    _close(np.abs(ml.qr(RECT, mode="r")[0]), np.abs(sl.qr(RECT, mode="r")[0]))
    w, v = ml.eigh(SPD)
    _close(w, sl.eigh(SPD)[0], 1e-10)
    _close(np.asarray(v) @ np.diag(np.asarray(w)) @ np.asarray(v).T, SPD, 1e-10)
    _close(ml.eigh(SPD, eigvals_only=True), sl.eigh(SPD, eigvals_only=True), 1e-10)
    _close(ml.svd(RECT, compute_uv=False), sl.svd(RECT, compute_uv=False))
    _close(ml.det(A), sl.det(A))
    _close(ml.inv(A), sl.inv(A))
    for side in ("right", "left"):
        u, p = ml.polar(A, side=side)
        want_u, want_p = sl.polar(A, side=side)
        _close(u, want_u)
        _close(p, want_p)


@pytest.mark.parametrize("scale", [1e-4, 0.05, 0.4, 1.0, 3.0, 20.0])
def test_expm_across_pade_degrees(scale):
    want = sl.expm(A * scale)
    got = np.asarray(ml.expm(A * scale))
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11 * np.abs(want).max())
    complex_a = (A + 1j * A.T) * scale / 4
    np.testing.assert_allclose(np.asarray(ml.expm(complex_a)), sl.expm(complex_a), rtol=1e-10, atol=1e-12)


def test_expm_float32_and_batches():
    stack = np.stack([A, 2 * A, -A]) * 0.3
    got = ml.expm(stack.astype(np.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), np.stack([sl.expm(m) for m in stack]), rtol=1e-5, atol=1e-5)


def test_derivatives():
    check_grads(lambda m: ml.expm(m * 0.3), (A,), order=1, modes=("fwd", "rev"))
    check_grads(lambda m: ml.cholesky(m @ m.T + 4 * np.eye(4)), (A,), order=1)
    check_grads(lambda m, v: ml.solve(m, v), (A, b), order=1)
    check_grads(lambda m, v: ml.solve_triangular(m, v, trans=1), (TRI, B), order=1)


def test_special_matrices():
    _close(ml.toeplitz(C, R), sl.toeplitz(C, R))
    _close(ml.toeplitz(C), sl.toeplitz(C))
    _close(ml.hankel(C, R), sl.hankel(C, R))
    _close(ml.hankel(C), sl.hankel(C))
    _close(ml.circulant(C), sl.circulant(C))
    _close(ml.leslie(C, R), sl.leslie(C, R))
    _close(ml.companion(C), sl.companion(C))
    _close(ml.fiedler(C), sl.fiedler(C))
    _close(ml.fiedler_companion(np.r_[1.0, C]), sl.fiedler_companion(np.r_[1.0, C]))
    for mode in ("full", "valid", "same"):
        for n in (2, 6):
            _close(ml.convolution_matrix(C, n, mode), sl.convolution_matrix(C, n, mode))
    _close(ml.hilbert(6), sl.hilbert(6))
    _close(ml.invhilbert(5), sl.invhilbert(5), 1e-9)
    for kind in ("symmetric", "lower", "upper"):
        _close(ml.pascal(5, kind), sl.pascal(5, kind), 1e-5)
        _close(ml.invpascal(5, kind), sl.invpascal(5, kind), 1e-9)
    _close(ml.helmert(5), sl.helmert(5))
    _close(ml.helmert(5, full=True), sl.helmert(5, full=True))
    np.testing.assert_array_equal(ml.hadamard(8), sl.hadamard(8))
    for scale in (None, "sqrtn", "n"):
        _close(ml.dft(5, scale), sl.dft(5, scale))
    blocks = (np.ones((2, 2)), 3.0, np.arange(3.0))
    _close(ml.block_diag(*blocks), sl.block_diag(*blocks))


def test_builders_batch_over_leading_axes_and_jit():
    cs = rng.normal(size=(3, 4))
    got = ml.toeplitz(cs)
    assert got.shape == (3, 4, 4)
    for k in range(3):
        _close(got[k], sl.toeplitz(cs[k]))
    _close(ml.circulant(cs)[1], sl.circulant(cs[1]))
    _close(ml.companion(cs)[2], sl.companion(cs[2]))
    _close(morphax.jit(ml.expm)(A * 0.5), sl.expm(A * 0.5))
    _close(
        morphax.vmap(ml.cholesky)(np.stack([SPD, 2 * SPD])),
        np.stack([sl.cholesky(SPD), sl.cholesky(2 * SPD)]),
    )


def test_errors_like_jax():
    with pytest.raises(NotImplementedError):
        ml.eigh(SPD, b=SPD)
    with pytest.raises(ValueError, match="assume_a"):
        ml.solve(A, b, assume_a="banded")
    with pytest.raises(ValueError, match="power of 2"):
        ml.hadamard(6)
    with pytest.raises(ValueError, match="at least 2"):
        ml.companion(np.ones(1))
    with pytest.raises(ValueError, match="mode must be"):
        ml.convolution_matrix(C, 3, "circular")
