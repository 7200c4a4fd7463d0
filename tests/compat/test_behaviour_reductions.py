"""float32 reductions along the long axis of a tall matrix are as accurate as JAX's: NumPy alone
adds a non-contiguous axis naively in float32 (about 5e-4 relative error over 10**6 rows, where
XLA's result is within a few ulps); morphax's float32 sums accumulate in float64 and round once,
the same order in the NumPy reference (eager, NumPy backend) and the C backend's kernels, so the
results agree across backends and runs. The float64 NumPy sum is the oracle."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax._src.compiler.backends import get_backend

ROWS = 10**6
# A float32 result is within half an ulp of the exact sum when accumulated well: 2 ulps of slack.
SUM_RTOL = 2.5e-7


@pytest.fixture(scope="module")
def tall():
    rng = np.random.default_rng(0)
    x = (1.0 + rng.uniform(0.0, 1e-3, size=(ROWS, 4))).astype(np.float32)
    return x, x.astype(np.float64)


def _rel(got, want):
    got = np.asarray(got).astype(np.asarray(want).dtype)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def _runners():
    out = {"eager": lambda f: f, "jit_numpy": lambda f: morphax.jit(f, backend="numpy")}
    if get_backend("c").available():
        out["jit_c"] = lambda f: morphax.jit(f, backend="c")
    return out


def test_naive_float32_summation_fails_the_tolerance(tall):
    # The premise: NumPy's own float32 column sums miss by far more than the tolerance below.
    x, x64 = tall
    assert _rel(x.sum(axis=0), x64.sum(axis=0)) > 100 * SUM_RTOL


def test_sum_mean_var_along_axis0(tall):
    x, x64 = tall
    xj = jnp.asarray(x)
    want_sum, want_mean, want_var = x64.sum(0), x64.mean(0), x64.var(0)
    sums = {}
    for name, run in _runners().items():
        s = run(lambda a: jnp.sum(a, axis=0))(xj)
        assert s.dtype == np.float32
        assert _rel(s, want_sum) < SUM_RTOL, name
        assert _rel(run(lambda a: jnp.mean(a, axis=0))(xj), want_mean) < SUM_RTOL, name
        # var subtracts the mean first: a mean off by 5e-4 would make it wrong by a factor of ~3.
        assert _rel(run(lambda a: jnp.var(a, axis=0))(xj), want_var) < 1e-6, name
        assert _rel(run(lambda a: jnp.std(a, axis=0))(xj), np.sqrt(want_var)) < 1e-6, name
        sums[name] = np.asarray(s)
    # Same order everywhere (float64 accumulation over the rows, one rounding): the same bits.
    for name, s in sums.items():
        np.testing.assert_array_equal(s, sums["eager"], err_msg=name)


def test_other_axis_layouts_and_transformations(tall):
    x, x64 = tall
    xj = jnp.asarray(x)
    # The long axis last (contiguous), the whole array, and keepdims.
    assert _rel(jnp.sum(xj.T, axis=1), x64.sum(0)) < SUM_RTOL
    assert abs(float(jnp.sum(xj)) - x64.sum()) / x64.sum() < SUM_RTOL
    assert _rel(jnp.mean(xj, axis=0, keepdims=True), x64.mean(0, keepdims=True)) < SUM_RTOL
    # vmap over the columns reduces the long axis of each; grad of a mean is exact anyway.
    assert _rel(morphax.vmap(jnp.sum, in_axes=1)(xj), x64.sum(0)) < SUM_RTOL
    assert _rel(morphax.jit(morphax.vmap(jnp.mean, in_axes=1))(xj), x64.mean(0)) < SUM_RTOL
    g = morphax.grad(lambda a: jnp.mean(a[:, 0]))(xj[:1000])
    np.testing.assert_allclose(np.asarray(g)[:, 0], np.full(1000, 1e-3, np.float32), rtol=1e-7)
    # Runs repeat bit for bit.
    f = morphax.jit(lambda a: jnp.var(a, axis=0))
    np.testing.assert_array_equal(np.asarray(f(xj)), np.asarray(f(xj)))


def test_complex64_and_float64_column_sums():
    rng = np.random.default_rng(1)
    z = (1 + 1j + rng.uniform(0, 1e-3, size=(200_000, 3)) * (1 - 1j)).astype(np.complex64)
    got = jnp.sum(jnp.asarray(z), axis=0)
    assert got.dtype == np.complex64
    assert _rel(got, z.astype(np.complex128).sum(0)) < SUM_RTOL
    with morphax.enable_x64():
        y = rng.uniform(0, 1, size=(200_000, 3))
        s = jnp.sum(jnp.asarray(y), axis=0)
        assert s.dtype == np.float64
        np.testing.assert_allclose(np.asarray(s), y.sum(0), rtol=1e-12)


_THREADS_CHILD = """
import hashlib, numpy as np, morphax, morphax.numpy as jnp
rng = np.random.default_rng(2)
x = jnp.asarray((1 + rng.uniform(0, 1e-3, size=(4096, 1024))).astype(np.float32))
outs = [
    morphax.jit(lambda a: jnp.sum(a, axis=0), backend="c")(x),
    morphax.jit(lambda a: jnp.sum(a, axis=1), backend="c")(x),
    morphax.jit(lambda a: jnp.var(a, axis=1), backend="c")(x),
    morphax.jit(lambda a: jnp.mean(a), backend="c")(x),
]
print(hashlib.sha256(b"".join(np.asarray(o).tobytes() for o in outs)).hexdigest())
"""


@pytest.mark.skipif(not get_backend("c").available(), reason="no working C compiler")
def test_c_reductions_do_not_depend_on_the_thread_count():
    # Large enough for the kernels' OpenMP loops (4M elements); a reduced axis is never split
    # across threads, so 1 and 3 threads give the same bits.
    def run(threads):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        env.pop("MORPHAX_NUM_THREADS", None)
        res = subprocess.run(
            [sys.executable, "-c", _THREADS_CHILD], capture_output=True, text=True, env=env, timeout=300
        )
        assert res.returncode == 0, res.stderr
        return res.stdout.strip().splitlines()[-1]

    assert run(1) == run(3)
