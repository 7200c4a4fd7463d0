"""Suite-wide settings, applied before any test module imports morphax (subprocesses the tests
start inherit them through the environment).

Background C builds are off: a jitted program's first call then waits for its native kernels, so
every test exercises the C backend it names instead of the NumPy stand-in that runs while a build
is in flight. tests/compiler/test_background_build.py turns them on where it tests them.
"""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

os.environ.setdefault("MORPHAX_COMPILE_IN_BACKGROUND", "0")

# Other libraries' test suites kept as data (tests/data/suites): run by
# tests/ecosystem/test_scientific_suites.py through morphax.compat, never collected directly.
collect_ignore = ["data"]


# The fast subset: MORPHAX_TEST_SAMPLE=N keeps at most N cases of every parametrized test (spread
# evenly over its parameter list, the same ones every run) and skips the `slow` tests. Generated
# matrices (primitives x dtypes x transformations) are most of the suite's 30,000 tests; a few
# cases of each still exercise every test function. CI runs everything.
SAMPLE = int(os.environ.get("MORPHAX_TEST_SAMPLE", "0") or 0)

# MORPHAX_TEST_SHARD=i/n keeps every n-th collected test from the i-th (0-based): a run too long
# for one command (the primitive matrix's tpu column on a chip, which admits one process at a
# time) split into n runs that together cover every test once.
SHARD = os.environ.get("MORPHAX_TEST_SHARD", "")


def _shard(config, items):
    try:
        index, count = (int(part) for part in SHARD.split("/"))
    except ValueError:
        raise pytest.UsageError(f"MORPHAX_TEST_SHARD={SHARD!r}: expected i/n, e.g. 0/2") from None
    if not 0 <= index < count:
        raise pytest.UsageError(f"MORPHAX_TEST_SHARD={SHARD!r}: i must be in 0..n-1")
    drop = [item for k, item in enumerate(items) if k % count != index]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = items[index::count]


def pytest_collection_modifyitems(config, items):
    if SHARD:
        _shard(config, items)
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


def _run_python(code: str, env_extra=None, timeout: float = 120, drop=()):
    """Run `code` (dedented) in a fresh interpreter that imports this checkout's morphax, with
    `env_extra` added to the environment and the variables in `drop` removed; the process must
    succeed. Returns the CompletedProcess (text stdout and stderr)."""
    repo = str(pathlib.Path(__file__).resolve().parent.parent)
    env = dict(os.environ, **(env_extra or {}))
    for name in drop:
        env.pop(name, None)
    env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=repo,
    )
    assert res.returncode == 0, f"exit status {res.returncode}\n{res.stderr}"
    return res


@pytest.fixture
def python_child():
    """`run(code, env_extra=None, timeout=120, drop=())`: a fresh process running `code`."""
    return _run_python


@pytest.fixture
def rss_bytes():
    """`rss_bytes()`: this process's resident memory in bytes (/proc; skips elsewhere)."""
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("resident memory is read from /proc/self/statm (Linux only)")

    def read() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    return read


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


# ----------------------------------------------------------------------------- multi-device cases
# A process makes its devices once, so cases that need N devices run in a fresh interpreter, a
# group of cases per interpreter (each start costs an interpreter and morphax's import). The
# folders holding such cases (tests/parallel, tests/sharding) bind `run_cases` to themselves.

_CASES_DEVICES = {
    # How the subprocess is given its devices: the environment form users set (XLA_FLAGS), or
    # the config flag before the first computation.
    "xla_flags": "",
    "config": 'import morphax\nmorphax.config.update("jax_num_cpu_devices", {devices})\n',
}


def _run_device_cases(
    folder, module, names, devices=4, timeout=300.0, *, devices_via="xla_flags", env=None
) -> str:
    """Run the functions `names` of `module` (a file of `folder`) in one subprocess with `devices`
    CPU devices, made through `devices_via` (`env`: more environment variables, such as the
    platform); a case raises on failure. Returns its stdout."""
    path = str(pathlib.Path(folder) / (module + ".py"))
    code = _CASES_DEVICES[devices_via].format(devices=devices) + textwrap.dedent(
        f"""
        import importlib.util, sys, traceback
        spec = importlib.util.spec_from_file_location({module!r}, {path!r})
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
    env = {**os.environ, **(env or {})}
    env.pop("XLA_FLAGS", None)
    env.pop("JAX_NUM_CPU_DEVICES", None)
    if devices_via == "xla_flags":
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, env=env, timeout=timeout
    )
    assert out.returncode == 0, f"cases failed on {devices} devices:\n{out.stdout}\n{out.stderr}"
    return out.stdout


@pytest.fixture
def device_case_runner():
    """`device_case_runner(folder, module, names, devices=4, timeout=300, devices_via=...)`."""
    return _run_device_cases
