"""lineax's own tests, unmodified, on morphax through `python -m morphax run` (skipped where lineax
is absent; `pip install --no-deps lineax==0.1.1` beside equinox and the `ecosystem` extra brings
it). The library's wheel ships no tests, so a fixed sample of its test modules at the release's
tag is kept in tests/data/suites/<library>/ (Apache-2.0, with its LICENSE; see the README there)
and run from a copy, with a floor on how many pass: what JAX 0.10.2 passes on the same modules,
measured on the same machine."""

import importlib.util
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

SUITES = pathlib.Path(__file__).resolve().parents[1] / "data" / "suites"

# library -> (its modules run here, how many of their tests pass under JAX 0.10.2)
SAMPLES = {
    "lineax": (
        ["test_adjoint.py", "test_invert.py", "test_misc.py", "test_norm.py", "test_operator.py"],
        128,
    ),
}


@pytest.mark.parametrize("library", sorted(SAMPLES))
def test_sample_of_the_librarys_own_tests_passes_as_under_jax(library, tmp_path):
    if importlib.util.find_spec(library) is None or importlib.util.find_spec("equinox") is None:
        pytest.skip(f"{library} is not installed (see README, Set up)")
    modules, jax_passes = SAMPLES[library]
    shutil.copytree(SUITES / library / "tests", tmp_path / "tests")
    (tmp_path / "pytest.ini").write_text("[pytest]\npython_files = test_*.py\n")
    done = subprocess.run(
        [sys.executable, "-m", "morphax", "run", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + ["-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), "-rf"]
        + [f"tests/{m}" for m in modules],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
    passed = int(m.group(1)) if (m := re.search(r"(\d+) passed", summary)) else 0
    assert passed >= jax_passes, f"{passed} passed, JAX passes {jax_passes}: {summary}\n{done.stdout[-4000:]}"
