"""Issue 12 #0: derivatives at tie points (kinks, equal operands, repeated extrema) equal JAX's.

A composite built from max/abs/where differentiates to one side of a tie; JAX defines such
functions with custom JVPs or with formulations whose derivative is right there, e.g.
grad(softplus)(0) = 1/2, so a zero-initialised logistic regression moves. The reference values
come from JAX 0.10.2 and are recorded in ../data/tie_gradients.json by
../data/record_tie_gradients.py; each case's function is the lambda source stored there,
evaluated here with morphax's `jnp`, `nn` and `lax`. Every case is checked in reverse mode
(eager grad, jit(grad), vmap(grad)), in forward mode (jvp, eager and jitted, along each input
coordinate) and, where recorded, through the Hessian.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import morphax
import morphax.nn as nn
import morphax.numpy as jnp
from morphax import lax

_DATA = json.loads((pathlib.Path(__file__).parent.parent / "data" / "tie_gradients.json").read_text())
CASES = {case["name"]: case for case in _DATA["cases"]}
_ENV = {"jnp": jnp, "nn": nn, "lax": lax, "np": np}
RTOL, ATOL = 1e-5, 1e-6


def _setup(case):
    fn = eval(case["fn"], dict(_ENV))  # noqa: S307 - the committed case table
    args = [np.asarray(a, case["dtype"]) for a in case["args"]]
    return fn, args, tuple(range(len(args)))


def _close(got, want, what):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, JAX {want.shape}"
    # Absolute slack in units of the largest entry: entries that cancel to 0 in exact arithmetic
    # (standardize's 1/sqrt(eps) terms) keep a float32 rounding residue of that size.
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL * scale, equal_nan=True, err_msg=what)


def _forward_grads(jvp, args):
    """The gradient assembled from JVPs along each coordinate of each argument."""
    grads = []
    for i, a in enumerate(args):
        g = np.zeros(a.shape, np.float64)
        for k in np.ndindex(a.shape):
            tangents = [np.zeros_like(b) for b in args]
            tangents[i] = np.zeros_like(a)
            tangents[i][k] = 1
            g[k] = np.asarray(jvp(tuple(args), tuple(tangents)))
        grads.append(g)
    return grads


@pytest.mark.parametrize("name", list(CASES))
def test_tie_derivatives_match_jax(name):
    case = CASES[name]
    fn, args, argnums = _setup(case)
    want = case["grad"]
    failures = []

    def check(mode, got_list):
        try:
            for i, (got, w) in enumerate(zip(got_list, want)):
                _close(got, w, f"{name} {mode} d/darg{i}")
        except AssertionError as e:
            failures.append(str(e))

    _close(fn(*args), case["value"], f"{name} value")
    grad = morphax.grad(fn, argnums=argnums)
    check("grad", grad(*args))
    check("jit(grad)", morphax.jit(grad)(*args))
    batched = [np.stack([a, a]) for a in args]
    for row in range(2):
        check(f"vmap(grad)[{row}]", [g[row] for g in morphax.vmap(grad)(*batched)])

    def tangent_out(primals, tangents):
        return morphax.jvp(fn, primals, tangents)[1]

    check("jvp", _forward_grads(tangent_out, args))
    check("jit(jvp)", _forward_grads(morphax.jit(tangent_out), args))
    if "hessian" in case:
        hess = morphax.hessian(fn, argnums=argnums)(*args)
        try:
            for i, row in enumerate(case["hessian"]):
                for j, w in enumerate(row):
                    _close(hess[i][j], w, f"{name} hessian d2/darg{i}darg{j}")
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, "\n".join(failures)


def test_zero_initialised_logistic_regression_moves():
    # The symptom in the issue: with w = 0 every logit is 0, where log_sigmoid used to have
    # derivative 0, so gradient descent stood still.
    x = np.array([[1.0, 2.0], [-1.0, 0.5], [0.5, -2.0]], np.float32)
    y = np.array([1.0, 0.0, 1.0], np.float32)

    def loss(w):
        logits = x @ w
        return -jnp.mean(y * nn.log_sigmoid(logits) + (1 - y) * nn.log_sigmoid(-logits))

    g = morphax.grad(loss)(jnp.zeros(2))
    # d loss / dw = mean((sigmoid(0) - y) x) = mean((0.5 - y) x).
    _close(g, ((0.5 - y)[:, None] * x).mean(0), "logistic regression gradient at w = 0")
