"""Several CPU devices: their number comes from jax_num_cpu_devices or XLA_FLAGS, read when the
devices are first used (so it may be set after `import morphax`), as in JAX. Each case runs in a
fresh interpreter: a process makes its devices once."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def _run(code: str, **env) -> str:
    full_env = {**os.environ, **env}
    if "XLA_FLAGS" not in env:
        full_env.pop("XLA_FLAGS", None)
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_one_device_by_default():
    assert _run("import morphax; print(morphax.device_count(), morphax.devices())") == "1 [CpuDevice(id=0)]"


def test_xla_flags_count():
    code = (
        "import morphax; print(morphax.device_count(), morphax.local_device_count(), morphax.devices()[-1])"
    )
    assert _run(code, XLA_FLAGS="--xla_force_host_platform_device_count=3") == "3 3 cpu:2"


def test_config_after_import_before_first_use_and_not_after():
    code = """
        import morphax
        morphax.config.update("jax_num_cpu_devices", 4)
        devs = morphax.devices()
        print(len(devs), [d.id for d in devs], devs[1].process_index, repr(devs[1]))
        try:
            morphax.config.update("jax_num_cpu_devices", 2)
        except RuntimeError as e:
            print("refused:", "before backends are initialized" in str(e))
        morphax.config.update("jax_num_cpu_devices", 4)  # the same count is fine
        with morphax.default_device(devs[2]):
            print(repr(morphax.config.default_device))
    """
    assert _run(code).splitlines() == ["4 [0, 1, 2, 3] 0 CpuDevice(id=1)", "refused: True", "CpuDevice(id=2)"]
