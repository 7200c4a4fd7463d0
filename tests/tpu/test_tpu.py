"""morphax on a TPU, through libtpu's PJRT plugin (docs/tpu.md). Skipped without one: CI has no
TPU. The chip admits one process at a time, so run this folder alone, on the TPU machine:

    python -m pytest -q tests/tpu

It checks what only the chip can: random numbers bit for bit against JAX 0.10.2's on a TPU v5e
(known answers in tests/data/prng_tpu_v5e.json), programs against the same programs on the host,
and the launcher's copies to and from device memory for every dtype."""

from __future__ import annotations

import json
import os
import pathlib

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.pjrt import plugin as pjrt_plugin

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "prng_tpu_v5e.json"


@pytest.fixture(scope="module")
def tpu():
    """The xla backend, opened on libtpu (skips without a TPU, or when this process already
    opened another plugin, or the chip is held by another process)."""
    from morphax._src.compiler.backends import get_backend

    path = pjrt_plugin.find_tpu_plugin()
    if path is None:
        pytest.skip("no TPU: libtpu is not installed (TPU_LIBRARY_PATH unset)")
    backend = get_backend("xla")
    if backend._client is None:
        os.environ[pjrt_plugin.ENV_VAR] = path
    try:
        platform = backend.platform()
    except Exception as e:  # noqa: BLE001 - the chip held by another process, no device...
        pytest.skip(f"libtpu found at {path} but not usable here: {type(e).__name__}: {e}")
    if platform != "tpu":
        pytest.skip(f"this process's xla backend runs on {platform!r}: run tests/tpu alone")
    return backend


def _jit(f):
    return morphax.jit(f, backend="xla")


def test_random_numbers_are_jaxs_on_the_chip(tpu):
    known = json.loads(DATA.read_text())
    n, at = known["shape"][0], np.asarray(known["indices"])
    key = morphax.random.PRNGKey(0)
    lo = np.nextafter(np.float32(-1), np.float32(0))
    normal = np.asarray(_jit(lambda k: morphax.random.normal(k, (n,)))(key))
    uniform = np.asarray(_jit(lambda k: morphax.random.uniform(k, (n,), minval=lo, maxval=1.0))(key))
    assert normal[at].view(np.uint32).tolist() == known["normal_bits"]
    assert uniform[at].view(np.uint32).tolist() == known["uniform_bits"]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "int8", "uint32", "int32", "bool"])
def test_values_go_to_the_chip_and_back_exactly(tpu, dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 5)) * 20).astype(
        np.dtype(getattr(jnp, dtype) if dtype == "bfloat16" else dtype)
    )
    out, flipped = _jit(lambda v: (v, v[::-1]))(x)
    assert np.asarray(out).tobytes() == x.tobytes()
    assert np.asarray(flipped).tobytes() == x[::-1].tobytes()


def test_an_mlp_training_step_matches_the_host(tpu):
    rng = np.random.default_rng(1)
    params = [
        (rng.normal(size=(16, 32)).astype(np.float32) / 4, np.zeros(32, np.float32)),
        (rng.normal(size=(32, 4)).astype(np.float32) / 6, np.zeros(4, np.float32)),
    ]
    x = rng.normal(size=(64, 16)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 64)]
    hi = lax.Precision.HIGHEST  # the TPU's default float32 matmul takes bfloat16 passes, as JAX's

    def loss(params, x, y):
        (w1, b1), (w2, b2) = params
        h = jnp.tanh(jnp.dot(x, w1, precision=hi) + b1)
        logits = jnp.dot(h, w2, precision=hi) + b2
        return -jnp.mean(jnp.sum(morphax.nn.log_softmax(logits) * y, axis=1))

    def step(params, x, y):
        value, grads = morphax.value_and_grad(loss)(params, x, y)
        return value, morphax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

    got = _jit(step)(params, x, y)
    want = morphax.jit(step, backend="c")(params, x, y)
    for g, w in zip(morphax.tree_util.tree_leaves(got), morphax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-6)


def test_loops_and_branches_run_on_the_chip(tpu):
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)

    def f(x):
        def body(c, row):
            c = lax.cond(jnp.sum(row) > 0, lambda: c + row, lambda: c * 0.5)
            return c, jnp.max(c)

        out, maxes = lax.scan(body, jnp.zeros(4, x.dtype), x)
        n = lax.while_loop(lambda k: k < 10, lambda k: k + 3, 0)
        return out, maxes, n

    got = _jit(f)(x)
    want = morphax.jit(f, backend="c")(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


# JAX 0.10.2's numbers on a TPU v5e (tests/tpu/chip_reference.py). On 2026-12-06 morphax's
# training losses and parameters were JAX's to the last bit there (the same XLA, at the same
# default precision); the bounds leave room for a different but equally valid order of
# operations. The seed examples' derivatives differ by a few units in the last place of the
# chip's transcendental functions.
CHIP_REFERENCE = pathlib.Path(__file__).resolve().parents[1] / "data" / "chip_reference_tpu_v5e.json"
LOSS_RTOL = 1e-5
NORM_RTOL = 1e-5


def test_training_steps_and_seed_examples_match_jax_on_the_chip(tpu):
    import importlib.util

    if not CHIP_REFERENCE.exists():
        pytest.skip(f"{CHIP_REFERENCE.name} not recorded: python3 tests/tpu/chip_reference.py jax OUT")
    want = json.loads(CHIP_REFERENCE.read_text())
    spec = importlib.util.spec_from_file_location(
        "chip_reference", pathlib.Path(__file__).parent / "chip_reference.py"
    )
    chip_reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chip_reference)
    got = chip_reference.run("morphax")
    assert got["device"] == want["device"]
    for name in ("cnn_losses", "mlp_losses"):
        np.testing.assert_allclose(got[name], want[name], rtol=LOSS_RTOL, err_msg=name)
    for name in ("cnn_param_norms", "mlp_param_norms"):
        np.testing.assert_allclose(got[name], want[name], rtol=NORM_RTOL, err_msg=name)
    for name, value in want["seed_examples"].items():
        np.testing.assert_allclose(got["seed_examples"][name], value, rtol=1e-3, atol=1e-5, err_msg=name)
