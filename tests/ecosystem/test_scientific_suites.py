"""The own tests of lineax, optimistix and diffrax, unmodified, on morphax through `python -m morphax
run` (each skipped where it or what its tests import is absent; `pip install --no-deps
lineax==0.1.1 optimistix==0.1.0 diffrax==0.7.2` beside equinox, optax, chex and the `ecosystem`
extra brings them). The libraries' wheels ship no tests, so a fixed sample of each one's test
modules at the release's tag is kept in tests/data/suites/<library>/ (Apache-2.0, with its LICENSE;
see the README there) and run from a copy, with a floor on how many pass: what JAX 0.10.2 passes
on the same modules, measured on the same machine."""

import importlib.util
import pathlib
import shutil

import pytest

SUITES = pathlib.Path(__file__).resolve().parents[1] / "data" / "suites"

# library -> (its modules run here, how many of their tests pass under JAX 0.10.2)
SAMPLES = {
    "lineax": (
        ["test_adjoint.py", "test_invert.py", "test_misc.py", "test_norm.py", "test_operator.py"],
        128,
    ),
    "optimistix": (
        ["test_ad.py", "test_best_so_far.py", "test_cauchy_point.py", "test_compat.py"]
        + ["test_lbfgs_linear_operator.py", "test_misc.py", "test_solve.py"],
        76,
    ),
    "diffrax": (
        ["test_citation.py", "test_local_interpolation.py", "test_misc.py", "test_step_to.py"]
        + ["test_term.py", "test_typing.py", "test_very_chord.py", "test_vmap.py"],
        28,
    ),
}

# What the kept modules import besides the library and equinox (optimistix's helpers.py imports
# diffrax and optax; both suites import lineax, and diffrax's optimistix).
ALSO_IMPORTED = {
    "lineax": [],
    "optimistix": ["diffrax", "optax", "lineax"],
    "diffrax": ["optimistix", "lineax"],
}


@pytest.mark.parametrize("library", sorted(SAMPLES))
def test_sample_of_the_librarys_own_tests_passes_as_under_jax(library, tmp_path, own_tests):
    for name in [library, "equinox", *ALSO_IMPORTED[library]]:
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"{name} is not installed (see README, Set up)")
    modules, jax_passes = SAMPLES[library]
    # The folder as the repository names it (lineax and optimistix: tests/, diffrax: test/).
    (folder,) = [p.name for p in (SUITES / library).iterdir() if p.is_dir()]
    shutil.copytree(SUITES / library / folder, tmp_path / folder)
    passed, summary, output = own_tests([f"{folder}/{m}" for m in modules])
    assert passed >= jax_passes, f"{passed} passed, JAX passes {jax_passes}: {summary}\n{output[-4000:]}"
