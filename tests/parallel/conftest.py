"""Fixtures for tests on several devices (`run_cases`): a process makes its devices once, so cases that need N
devices run in a fresh interpreter started with XLA_FLAGS=--xla_force_host_platform_device_count=N.
Cases are plain functions of a module in this folder, run in groups (one interpreter per group,
since each start costs an interpreter and morphax's import)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

HERE = pathlib.Path(__file__).resolve().parent


def _run_cases(module: str, names, devices: int = 4, timeout: float = 300) -> str:
    """Run `module`'s functions `names` (in this folder, e.g. "pmap_cases") in one subprocess with
    `devices` CPU devices; each case raises on failure. Returns the subprocess's stdout."""
    code = textwrap.dedent(
        f"""
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
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
    env.pop("JAX_NUM_CPU_DEVICES", None)
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, env=env, timeout=timeout
    )
    assert out.returncode == 0, f"cases failed on {devices} devices:\n{out.stdout}\n{out.stderr}"
    return out.stdout


@pytest.fixture
def run_cases():
    """`run_cases(module, names, devices=4)`: see `_run_cases`."""
    return _run_cases
