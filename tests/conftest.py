"""Suite-wide settings, applied before any test module imports morphax (subprocesses the tests
start inherit them through the environment).

Background C builds are off: a jitted program's first call then waits for its native kernels, so
every test exercises the C backend it names instead of the NumPy stand-in that runs while a build
is in flight. tests/compiler/test_background_build.py turns them on where it tests them.
"""

import os

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
            chosen = group
        else:
            step = len(group) / SAMPLE
            picked = {int(k * step) for k in range(SAMPLE)}
            chosen = [item for k, item in enumerate(group) if k in picked]
        for item in group:
            slow = item.get_closest_marker("slow") is not None
            (keep if item in chosen and not slow else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
