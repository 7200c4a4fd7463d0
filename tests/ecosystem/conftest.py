"""`own_tests(files, python_files, timeout)`: a library's own test files run by pytest in a
subprocess through `python -m morphax run` (so `import jax` is morphax there, never here), from
this test's tmp_path; returns (how many passed, pytest's summary line, its output)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest


@pytest.fixture
def own_tests(tmp_path):
    def run(files, python_files="test_*.py", timeout=1200):
        (tmp_path / "pytest.ini").write_text(f"[pytest]\npython_files = {python_files}\n")
        done = subprocess.run(
            [sys.executable, "-m", "morphax", "run", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
            + ["-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), "-rf", *files],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
        passed = int(m.group(1)) if (m := re.search(r"(\d+) passed", summary)) else 0
        return passed, summary, done.stdout

    return run
