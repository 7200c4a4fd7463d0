"""Transposes folded into matmuls (compiler/fusion.py `_fold_permutations`): `x.T @ y` reads x
transposed inside BLAS, and a transposed matmul result is the matmul of the swapped operands, so
neither costs a copy kernel. Every permutation of the operands and the result of 2-D and batched
matmuls is compared with NumPy's einsum on both backends."""

import itertools

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.compiler.backends import get_backend

RNG = np.random.default_rng(7)
BACKENDS = [
    "numpy",
    pytest.param("c", marks=pytest.mark.skipif(not get_backend("c").available(), reason="no C compiler")),
]


def _operand(shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _cases():
    # (lhs shape, rhs shape, einsum of the matmul, dot_general dimension numbers)
    yield (5, 3), (3, 4), "mk,kn->mn", (((1,), (0,)), ((), ()))
    yield (2, 5, 3), (2, 3, 4), "bmk,bkn->bmn", (((2,), (1,)), ((0,), (0,)))
    yield (5, 3, 2), (3, 2, 4), "mkl,kln->mn", (((1, 2), (0, 1)), ((), ()))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(_cases()), ids=lambda c: c[2])
def test_every_permutation_of_operands_and_result(backend, case):
    lhs_shape, rhs_shape, spec, numbers = case
    lhs, rhs = _operand(lhs_shape), _operand(rhs_shape)
    out_rank = len(spec.split("->")[1])
    for lp, rp, op in itertools.product(
        itertools.permutations(range(len(lhs_shape))),
        itertools.permutations(range(len(rhs_shape))),
        itertools.permutations(range(out_rank)),
    ):
        inv_l, inv_r = np.argsort(lp), np.argsort(rp)

        def f(a, b, lp=lp, rp=rp, op=op, inv_l=inv_l, inv_r=inv_r):
            # The operands arrive permuted; transposing them back gives the matmul's operands.
            x = lax.transpose(a, tuple(int(i) for i in inv_l))
            y = lax.transpose(b, tuple(int(i) for i in inv_r))
            return lax.transpose(lax.dot_general(x, y, numbers), op)

        a, b = np.transpose(lhs, lp), np.transpose(rhs, rp)
        want = np.transpose(np.einsum(spec, lhs.astype(np.float64), rhs.astype(np.float64)), op)
        got = morphax.jit(f, backend=backend)(a, b)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5, err_msg=f"{lp} {rp} {op}")


@pytest.mark.skipif(not get_backend("c").available(), reason="no C compiler")
def test_folded_transposes_cost_no_kernel():
    x, g, w = _operand((128, 64)), _operand((128, 32)), _operand((64, 32))

    def weight_grad_and_backprop(x, g, w):
        return x.T @ g, g @ w.T, (x @ w).T

    compiled = morphax.jit(weight_grad_and_backprop, backend="c").lower(x, g, w).compile()
    assert compiled.num_kernels == 0, compiled.as_text()
    got = morphax.jit(weight_grad_and_backprop)(x, g, w)
    for a, b in zip(got, (x.T @ g, g @ w.T, (x @ w).T)):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-5, atol=1e-5)


def test_a_transposed_result_read_twice_is_not_folded():
    # The untransposed result is an output too: folding would lose it.
    x, y = _operand((6, 3)), _operand((3, 5))

    def f(x, y):
        r = x @ y
        return r, r.T

    r, rt = morphax.jit(f)(x, y)
    np.testing.assert_allclose(np.asarray(r), x @ y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(rt), (x @ y).T, rtol=1e-5, atol=1e-6)


def test_mlp_gradients_match_numpy_with_folding():
    rng = np.random.default_rng(1)
    w1, w2 = rng.standard_normal((20, 16)).astype(np.float32), rng.standard_normal((16, 3)).astype(np.float32)
    x = rng.standard_normal((8, 20)).astype(np.float32)

    def loss(w1, w2, x):
        return jnp.sum(jnp.tanh(x @ w1) @ w2)

    g1, g2 = morphax.jit(morphax.grad(loss, argnums=(0, 1)))(w1, w2, x)
    h = np.tanh(x @ w1)
    want2 = h.T @ np.ones((8, 3), np.float32)
    want1 = x.T @ ((np.ones((8, 3), np.float32) @ w2.T) * (1 - h**2))
    np.testing.assert_allclose(np.asarray(g2), want2, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(g1), want1, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_folded_result_read_transposed_by_another_matmul(backend):
    # The transpose of the first matmul's result folds into that matmul (it computes the
    # transposed result), and the second matmul reads that result: it must read it as computed,
    # not be pointed back at the untransposed result no equation computes any more (this raised
    # UnboundLocalError in the generated program; equinox's test_shared.py program).
    a, z = _operand((12, 12)), _operand((5, 12))

    def f(a, z):
        t = lax.dot_general(jnp.ones((5, 12)).T, a, (((0,), (0,)), ((), ())))
        return t.T @ z

    got = morphax.jit(f, backend=backend)(a, z)
    np.testing.assert_allclose(np.asarray(got), (np.ones((12, 5)).T @ a).T @ z, rtol=1e-5, atol=1e-4)
