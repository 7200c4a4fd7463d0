"""Choosing the platform (compiler/backends/platform.py), as JAX chooses its backends: once per
process, at the first computation, from `jax_platforms` / JAX_PLATFORMS. Each case runs in a
fresh process, since the choice cannot change afterwards."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from morphax._src.pjrt import plugin as pjrt_plugin

PROBE = (
    "import morphax, morphax.numpy as jnp\n"
    "x = jnp.arange(3.0) + 1\n"
    "print(morphax.default_backend(), [d.platform for d in morphax.devices()], "
    "[d.platform for d in morphax.devices('cpu')], float(x.sum()))\n"
)


def probe(**env):
    full = {k: v for k, v in os.environ.items() if k not in ("JAX_PLATFORMS", "TPU_LIBRARY_PATH")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=full, timeout=120
    )


def test_without_a_plugin_the_cpu_is_the_platform():
    done = probe(TPU_LIBRARY_PATH="")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "cpu" and "6.0" in done.stdout


def test_a_tpu_asked_for_alone_that_cannot_open_says_why_and_what_to_do(tmp_path):
    fake = tmp_path / "libtpu.so"
    fake.write_bytes(b"not a shared library")
    done = probe(JAX_PLATFORMS="tpu", TPU_LIBRARY_PATH=str(fake))
    assert done.returncode != 0
    assert "Unable to initialize backend 'tpu'" in done.stderr
    assert "JAX_PLATFORMS=cpu" in done.stderr and "one process at a time" in done.stderr


def test_a_tpu_that_cannot_open_falls_back_to_the_next_platform_with_a_warning(tmp_path):
    fake = tmp_path / "libtpu.so"
    fake.write_bytes(b"not a shared library")
    done = probe(JAX_PLATFORMS="tpu,cpu", TPU_LIBRARY_PATH=str(fake))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "cpu"
    assert "unable to initialize backend 'tpu'" in done.stderr and "falling back to cpu" in done.stderr


def test_an_unknown_platform_is_named():
    done = probe(JAX_PLATFORMS="cuda")
    assert done.returncode != 0 and "unknown platform 'cuda'" in done.stderr


def test_the_cpu_asked_for_never_looks_for_a_plugin(tmp_path):
    fake = tmp_path / "libtpu.so"
    fake.write_bytes(b"not a shared library")
    done = probe(JAX_PLATFORMS="cpu", TPU_LIBRARY_PATH=str(fake))
    assert done.returncode == 0 and done.stdout.split()[0] == "cpu", done.stderr


@pytest.mark.skipif(pjrt_plugin.find_plugin() is None, reason="XLA's CPU plugin is not installed")
def test_the_xla_cpu_platform_holds_arrays_on_the_plugins_device():
    done = probe(JAX_PLATFORMS="xla_cpu")
    assert done.returncode == 0, done.stderr
    words = done.stdout.split()
    assert words[0] == "xla_cpu" and "['xla_cpu']" in done.stdout and "['cpu']" in done.stdout
    assert "6.0" in done.stdout
