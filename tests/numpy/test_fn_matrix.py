"""Every public `morphax.numpy` function through the transformation matrix (cases in
fn_cases_*.py, driver in fn_matrix.py): eager against NumPy (values and JAX's dtype), jit against
eager, vmap against a Python loop over the samples (all operands batched at axis 0, and the
first operand alone batched at its last axis), and check_grads in float64 for the
differentiable ones."""

from __future__ import annotations

import pathlib
import sys
import warnings

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import tree_util
from morphax.test_util import check_grads

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from basic_api_check import assert_matches  # noqa: E402
from fn_matrix import collect, public_functions  # noqa: E402

CASES, EXEMPT = collect()
BATCH = 3


def _params(select=lambda c: True):
    return [pytest.param(c, id=c.id) for c in CASES if select(c)]


def _is_operand(a):
    return isinstance(a, np.ndarray)


def _split(case, args):
    """(operand positions, a function of the operands that closes over the static arguments)."""
    positions = [i for i, a in enumerate(args) if _is_operand(a)]
    f = case.callable()

    def call(*operands):
        full = list(args)
        for i, o in zip(positions, operands):
            full[i] = o
        return f(*full)

    return positions, call


def _sample(case, i):
    return case.args(np.random.default_rng(1000 + i))


def _leaves(tree):
    return [np.asarray(x) for x in tree_util.tree_leaves(tree)]


def _close(got, want, case, what):
    g, w = _leaves(got), _leaves(want)
    assert len(g) == len(w), f"{case.id} {what}: {len(g)} results, expected {len(w)}"
    for a, b in zip(g, w):
        assert a.shape == b.shape, f"{case.id} {what}: shape {a.shape} != {b.shape}"
        assert a.dtype == b.dtype, f"{case.id} {what}: dtype {a.dtype} != {b.dtype}"
        if a.dtype.kind in "biu":
            np.testing.assert_array_equal(a, b, err_msg=f"{case.id} {what}")
        else:
            wide = np.complex128 if a.dtype.kind == "c" else np.float64
            rtol = case.rtol if case.rtol is not None else 2e-5
            atol = case.atol if case.atol is not None else 2e-5
            np.testing.assert_allclose(
                a.astype(wide),
                b.astype(wide),
                rtol=rtol,
                atol=atol,
                equal_nan=True,
                err_msg=f"{case.id} {what}",
            )


@pytest.mark.parametrize("case", _params(lambda c: c.reference() is not None))
def test_against_numpy(case):
    args = _sample(case, 0)
    got = case.callable()(*[jnp.asarray(a) if _is_operand(a) else a for a in args])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        want = case.reference()(*args)
    g = tree_util.tree_leaves(got)
    w = list(want) if isinstance(want, (tuple, list)) else [want]
    assert len(g) == len(w), f"{case.id}: {len(g)} results, NumPy gives {len(w)}"
    for a, b in zip(g, w):
        assert_matches(a, np.asarray(b), dtype=case.dtype, rtol=case.rtol, atol=case.atol)


@pytest.mark.parametrize("case", _params(lambda c: c.jit))
def test_jit(case):
    args = _sample(case, 0)
    positions, call = _split(case, args)
    operands = [jnp.asarray(args[i]) for i in positions]
    _close(morphax.jit(call)(*operands), call(*operands), case, "jit vs eager")


@pytest.mark.parametrize("case", _params(lambda c: c.vmap))
def test_vmap(case):
    samples = [_sample(case, i) for i in range(BATCH)]
    positions, call = _split(case, samples[0])
    assert positions, f"{case.id}: no array operand to batch"
    for s in samples[1:]:
        for i, (a, b) in enumerate(zip(s, samples[0])):
            if i not in positions:
                assert a == b if not isinstance(a, np.ndarray) else True, f"{case.id}: static arg {i} varies"
    per = [[s[i] for i in positions] for s in samples]
    loop = [call(*[jnp.asarray(o) for o in ops]) for ops in per]
    want = tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *loop)
    stacked = [np.stack([ops[k] for ops in per]) for k in range(len(positions))]
    _close(morphax.vmap(call)(*stacked), want, case, "vmap (all operands, axis 0) vs loop")

    # Only the first operand batched, at its last axis; the others shared (in_axes=None).
    first = np.moveaxis(stacked[0], 0, -1)
    in_axes = (first.ndim - 1,) + (None,) * (len(positions) - 1)
    shared = [per[0][k] for k in range(1, len(positions))]
    loop = [call(*[jnp.asarray(per[b][0])] + [jnp.asarray(o) for o in shared]) for b in range(BATCH)]
    want = tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *loop)
    got = morphax.vmap(call, in_axes=in_axes)(first, *shared)
    _close(got, want, case, "vmap (first operand at its last axis) vs loop")


def _to64(a):
    if isinstance(a, np.ndarray) and a.dtype == np.float32:
        return a.astype(np.float64)
    if isinstance(a, np.ndarray) and a.dtype == np.complex64:
        return a.astype(np.complex128)
    return a


@pytest.mark.parametrize("case", _params(lambda c: c.grad))
def test_check_grads(case):
    with morphax.enable_x64():
        args = [_to64(a) for a in _sample(case, 0)]
        diff = [i for i, a in enumerate(args) if _is_operand(a) and a.dtype.kind in "fc"]
        assert diff, f"{case.id}: marked differentiable but has no inexact operand (set grad=False)"
        f = case.callable()

        def g(*xs):
            full = [jnp.asarray(a) if _is_operand(a) else a for a in args]
            for i, x in zip(diff, xs):
                full[i] = x
            return f(*full)

        check_grads(
            g,
            [jnp.asarray(args[i]) for i in diff],
            order=case.order,
            modes=("fwd", "rev"),
            atol=1e-4,
            rtol=1e-4,
        )


@pytest.mark.parametrize("module", ["", "linalg", "fft"])
def test_every_public_function_has_a_case(module):
    covered = {c.qualname for c in CASES} | set(EXEMPT)
    missing = [n for n in public_functions(module) if n not in covered]
    assert not missing, f"functions without a transformation-matrix case or an exemption: {missing}"


def test_exemptions_name_public_functions():
    public = {n for m in ("", "linalg", "fft") for n in public_functions(m)}
    unknown = sorted(set(EXEMPT) - public)
    assert not unknown, f"exemptions for names that are not public functions: {unknown}"
    assert all(isinstance(why, str) and why for why in EXEMPT.values())
