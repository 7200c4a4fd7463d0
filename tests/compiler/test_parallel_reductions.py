"""Reductions of every axis over large inputs run as per-row partials over threads
(backends/c/render.py `_row_partials`): the same bits at one and two threads, and NumPy's
answer (float sums to float64 accumulation's accuracy; max/min, NaN and integer wrap-around
exactly)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax

pytestmark = pytest.mark.skipif(
    morphax.jit(lambda x: x + 1, backend="c").lower(np.ones(2, np.float32)).compile().as_text() is None,
    reason="no C compiler",
)

SHAPE = (600, 700)  # 420,000 elements: above PARALLEL_REDUCTION_ELEMENTS

_CHILD = r"""
import json, sys
import numpy as np
import morphax, morphax.numpy as jnp
from morphax import lax
morphax.config.update("morphax_compile_in_background", False)
rng = np.random.default_rng(5)
x = rng.standard_normal(SHAPE).astype(np.float32)
x[123, 456] = np.nan
i = rng.integers(-2**30, 2**30, SHAPE).astype(np.int32)
p = (1 + 1e-4 * rng.standard_normal(SHAPE)).astype(np.float32)
fns = {
    "norm": (lambda a: jnp.sqrt(jnp.sum(a * a)), np.nan_to_num(x)),
    "sum": (jnp.sum, np.nan_to_num(x)),
    "max_nan": (jnp.max, x),
    "min": (jnp.min, np.nan_to_num(x)),
    "prod": (jnp.prod, p),
    "int_sum": (lambda a: lax.reduce_sum(a, (0, 1)), i),
}
out = {k: np.asarray(morphax.jit(f, backend="c")(a)).tobytes().hex() for k, (f, a) in fns.items()}
print(json.dumps(out))
""".replace("SHAPE", repr(SHAPE))


def _run(threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MORPHAX_NUM_THREADS=str(threads))
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_full_reductions_give_the_same_bits_at_any_thread_count_and_numpys_answer():
    one, two = _run(1), _run(2)
    assert one == two
    rng = np.random.default_rng(5)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    x[123, 456] = np.nan
    i = rng.integers(-(2**30), 2**30, SHAPE).astype(np.int32)
    p = (1 + 1e-4 * rng.standard_normal(SHAPE)).astype(np.float32)
    got = {
        k: np.frombuffer(bytes.fromhex(v), np.int32 if k == "int_sum" else np.float32)[0]
        for k, v in one.items()
    }
    clean = np.nan_to_num(x).astype(np.float64)
    assert got["norm"] == pytest.approx(np.sqrt((clean * clean).sum()), rel=1e-6)
    assert got["sum"] == pytest.approx(clean.sum(), abs=1e-6 * np.abs(clean).sum())
    assert np.isnan(got["max_nan"])
    assert got["min"] == np.nan_to_num(x).min()
    # A float32 product accumulates in float32 (as NumPy's): 420,000 roundings, 2^-24 each.
    assert got["prod"] == pytest.approx(np.prod(p.astype(np.float64)), rel=420_000 * 2.0**-24)
    assert got["int_sum"] == np.int32(
        np.sum(i.astype(np.int64)) % 2**32 - (2**32 if np.sum(i.astype(np.int64)) % 2**32 >= 2**31 else 0)
    )


def test_only_large_full_reductions_are_split_into_row_partials():
    big = morphax.jit(jnp.sum, backend="c").lower(np.ones(SHAPE, np.float32)).compile().as_text()
    small = morphax.jit(jnp.sum, backend="c").lower(np.ones((60, 70), np.float32)).compile().as_text()
    rows = morphax.jit(lambda a: jnp.sum(a, axis=1), backend="c").lower(np.ones(SHAPE, np.float32)).compile()
    assert "part_" in big and "#pragma omp parallel for" in big
    assert "part_" not in small
    assert "part_" not in rows.as_text()  # one result per row: the rows are the threads' work already
    np.testing.assert_allclose(
        np.asarray(morphax.jit(lambda a: lax.reduce_sum(a, (0, 1)), backend="c")(jnp.ones(SHAPE))), 420000.0
    )
