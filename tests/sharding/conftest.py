"""`run_cases`: the multi-device cases of this folder run in a fresh interpreter with 4 CPU devices
(a process makes its devices once), a group of cases per interpreter (each start costs an
interpreter and morphax's import)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

HERE = pathlib.Path(__file__).resolve().parent


def _run_cases(module: str, names, devices: int = 4, timeout: float = 300) -> str:
    """Run the functions `names` of `module` (a file of this folder) in one subprocess with
    `devices` CPU devices; a case raises on failure. Returns the subprocess's stdout."""
    code = textwrap.dedent(
        f"""
        import morphax
        morphax.config.update("jax_num_cpu_devices", {devices})
        import importlib.util, sys, traceback
        spec = importlib.util.spec_from_file_location({module!r}, {str(HERE / (module + ".py"))!r})
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        failed = []
        for name in {list(names)!r}:
            try:
                getattr(mod, name)()
                print("ok", name, flush=True)
            except BaseException:
                failed.append(name)
                print("FAILED", name, file=sys.stderr)
                traceback.print_exc()
        sys.exit(1 if failed else 0)
        """
    )
    env = {**os.environ}
    env.pop("XLA_FLAGS", None)
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, env=env, timeout=timeout
    )
    assert out.returncode == 0, f"cases failed on {devices} devices:\n{out.stdout}\n{out.stderr}"
    return out.stdout


@pytest.fixture
def run_cases():
    return _run_cases
