"""Fixtures shared by the compiler tests."""

import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run_python(code: str, env_extra=None, timeout: float = 120, drop=()):
    """Run `code` (dedented) in a fresh interpreter that imports this checkout's morphax, with
    `env_extra` added to the environment and the variables in `drop` removed; the process must
    succeed. Returns the CompletedProcess (text stdout and stderr)."""
    env = dict(os.environ, **(env_extra or {}))
    for name in drop:
        env.pop(name, None)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=REPO,
    )
    assert res.returncode == 0, res.stderr
    return res


@pytest.fixture
def python_child():
    """`run(code, env_extra=None, timeout=120, drop=())`: a fresh process running `code`."""
    return _run_python
