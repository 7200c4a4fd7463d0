"""Suite-wide settings, applied before any test module imports morphax (subprocesses the tests
start inherit them through the environment).

Background C builds are off: a jitted program's first call then waits for its native kernels, so
every test exercises the C backend it names instead of the NumPy stand-in that runs while a build
is in flight. tests/compiler/test_background_build.py turns them on where it tests them.
"""

import os

import pytest

os.environ.setdefault("MORPHAX_COMPILE_IN_BACKGROUND", "0")


# The fast subset: MORPHAX_TEST_SAMPLE=N keeps at most N cases of every parametrized test (spread
# evenly over its parameter list, the same ones every run) and skips the `slow` tests. Generated
# matrices (primitives x dtypes x transformations) are most of the suite's 30,000 tests; a few
# cases of each still exercise every test function. CI runs everything.
SAMPLE = int(os.environ.get("MORPHAX_TEST_SAMPLE", "0") or 0)


def pytest_collection_modifyitems(config, items):
    if SAMPLE <= 0:
        return
    groups: dict = {}
    for item in items:
        key = (item.nodeid.split("[", 1)[0]) if "[" in item.nodeid else None
        groups.setdefault(key, []).append(item)
    keep, drop = [], []
    for key, group in groups.items():
        if key is None or len(group) <= SAMPLE:
            picked = range(len(group))
        else:
            step = len(group) / SAMPLE
            picked = {int(k * step) for k in range(SAMPLE)}
        for k, item in enumerate(group):
            slow = item.get_closest_marker("slow") is not None
            (keep if k in picked and not slow else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture
def private_disk_cache(tmp_path, monkeypatch):
    """For tests that call morphax.clear_caches(), which empties the disk cache as well: a
    private cache directory and library tables, so the suite's shared cache (and every later
    test's compiles) survive."""
    from morphax._src.compiler.backends.c import build

    monkeypatch.setenv("MORPHAX_CACHE_DIR", str(tmp_path / "private-cache"))
    monkeypatch.setattr(build, "_libraries", dict(build._libraries))
    monkeypatch.setattr(build, "_aliases", dict(build._aliases))
    build.reset_cache_dir()
    yield tmp_path / "private-cache"
    monkeypatch.undo()
    build.reset_cache_dir()


@pytest.fixture(autouse=True, scope="session")
def _shared_disk_cache_is_never_emptied():
    """A test that empties the suite's shared disk cache makes every later compile (and the next
    run) start cold: fail it, and point it at `private_disk_cache` instead."""
    from morphax._src.compiler.backends.c import build

    shared = os.environ.get("MORPHAX_CACHE_DIR")
    original = build.clear_disk_cache

    def guarded():
        if os.environ.get("MORPHAX_CACHE_DIR") == shared:
            raise AssertionError(
                "this test empties the suite's shared C disk cache (morphax.clear_caches()); "
                "use the private_disk_cache fixture"
            )
        original()

    build.clear_disk_cache = guarded
    yield
    build.clear_disk_cache = original
