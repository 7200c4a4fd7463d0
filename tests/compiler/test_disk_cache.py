"""The C backend's disk cache and its faults (issue 13, part 5 and 7): a second process hits the
disk, damaged entries are rebuilt and never loaded, a read-only directory is read and never
written, a missing one means private builds, the size cap evicts the least recently used entries, concurrent builds of one
program leave one valid entry, `morphax.clear_caches()` clears memory and disk, and a broken or
missing compiler falls back to NumPy without a crash.

Every test gets its own cache directory and a fresh build state (`fresh_cache`), so nothing leaks
between tests or into the cache the rest of the suite shares."""

import glob
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax._src.compiler.backends import get_backend
from morphax._src.compiler.backends.c import build, disk_cache, generic

pytestmark = pytest.mark.skipif(not get_backend("c").available(), reason="no working C compiler")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """A private MORPHAX_CACHE_DIR, empty in-memory library cache, zeroed counters; all restored
    afterwards (the libraries loaded stay mapped: only the dictionaries are swapped)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("MORPHAX_CACHE_DIR", str(cache))
    monkeypatch.delenv("MORPHAX_CACHE_MAX_MB", raising=False)
    monkeypatch.delenv("MORPHAX_C_EXTRA_FLAGS", raising=False)
    saved_libs, saved_probe, saved_stats = dict(build._libraries), dict(build._probe), dict(build.stats)
    build._libraries.clear()
    build._recent.clear()
    build.reset_cache_dir()
    for k in build.stats:
        build.stats[k] = 0
    # Programs here differ only in a constant, which a shape-generic library would cover
    # (test_shape_generic.py): each must build its own cache entry.
    monkeypatch.setattr(generic.REGISTRY, "seen", lambda structure: False)
    yield cache
    build._libraries.clear()
    build._libraries.update(saved_libs)
    build._probe.clear()
    build._probe.update(saved_probe)
    build.stats.clear()
    build.stats.update(saved_stats)
    build.reset_cache_dir()


_counter = [0]


def _program(tag=None):
    """A small C program with its own source (so its own cache entry): `tag` is a constant in it."""
    if tag is None:
        _counter[0] += 1
        tag = _counter[0]
    c = float(tag) + 0.25

    def f(x):
        return jnp.tanh(x * c) + jnp.sin(x) - c

    return f, c


def _run_c(f, x):
    return np.asarray(morphax.jit(f, backend="c")(x))


def _entries(cache_dir):
    return sorted(glob.glob(os.path.join(str(cache_dir), "c", "*", "*.so")))


def _check_entry(so_path):
    with open(so_path + ".sig") as fh:
        signed = fh.read().strip()
    key = os.path.basename(so_path)[:-3]
    assert signed == disk_cache.signature("library", key, pathlib.Path(so_path).read_bytes())


# A fresh process: compile one fixed program with the C backend, print the counters.
_CHILD = """
    import json, numpy as np, morphax, morphax.numpy as jnp
    from morphax._src.compiler.backends.c import build
    f = lambda x: jnp.exp(jnp.cos(x) * 3.5) - x * x
    x = np.linspace(-2, 2, 37, dtype=np.float32)
    got = np.asarray(morphax.jit(f, backend="c")(x))
    want = np.asarray(morphax.jit(f, backend="numpy")(x))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    print(json.dumps(build.stats))
"""


def test_fresh_process_compiles_and_the_next_hits_the_disk(fresh_cache, python_child):
    env = {"MORPHAX_CACHE_DIR": str(fresh_cache)}
    first = json.loads(python_child(_CHILD, env).stdout.strip().splitlines()[-1])
    assert first["compiles"] == 1 and first["disk_hits"] == 0, first
    (entry,) = _entries(fresh_cache)
    _check_entry(entry)
    second = json.loads(python_child(_CHILD, env).stdout.strip().splitlines()[-1])
    assert second["compiles"] == 0 and second["disk_hits"] == 1, second
    assert _entries(fresh_cache) == [entry]


def _recompile():
    """Forget compiled executables (not the disk cache): the next call builds them again."""
    from morphax._src.compiler import compile as compile_mod

    compile_mod._generation += 1


def test_in_process_memory_then_disk_hits(fresh_cache):
    f, c = _program()
    x = np.linspace(-1, 1, 9, dtype=np.float32)
    want = np.tanh(x * np.float32(c)) + np.sin(x) - np.float32(c)
    np.testing.assert_allclose(_run_c(f, x), want, rtol=1e-5, atol=1e-6)
    assert build.stats["compiles"] == 1
    _recompile()  # same source again: the library comes from memory
    np.testing.assert_allclose(_run_c(f, x), want, rtol=1e-5, atol=1e-6)
    assert build.stats == {
        "compiles": 1,
        "disk_hits": 0,
        "memory_hits": 1,
        "rebuilt_corrupt": 0,
        "generic_hits": 0,
    }
    _recompile()
    build._libraries.clear()  # ... and now from the disk
    build._recent.clear()
    np.testing.assert_allclose(_run_c(f, x), want, rtol=1e-5, atol=1e-6)
    assert build.stats == {
        "compiles": 1,
        "disk_hits": 1,
        "memory_hits": 1,
        "rebuilt_corrupt": 0,
        "generic_hits": 0,
    }


def _corrupt(so_path, how):
    """Damage an entry without touching the inode a library may be mapped from (a new file is
    renamed over it: truncating a mapped library in place would crash this process)."""
    with open(so_path, "rb") as fh:
        data = fh.read()
    if how == "truncated":
        bad, sum_text = data[: len(data) // 3], None
    elif how == "flipped":
        mid = len(data) // 2
        bad, sum_text = data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1 :], None
    elif how == "garbage_with_matching_sum":
        # Signed as this entry, but the file is no library: must not crash either.
        bad = b"\x7fELF not really" * 10
        sum_text = disk_cache.signature("library", os.path.basename(so_path)[:-3], bad)
    elif how == "other_key":
        # The very bytes, signed for another entry (a file copied from elsewhere).
        bad, sum_text = data, disk_cache.signature("library", "f" * 64, data)
    elif how == "bare_checksum":  # the first layout's checksum file
        import hashlib

        bad, sum_text = data, hashlib.sha256(data).hexdigest()
    elif how == "bad_sum":
        bad, sum_text = data, "0" * 64
    elif how == "missing_sum":
        bad, sum_text = data, ""
    else:
        raise AssertionError(how)
    tmp = so_path + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(bad)
    os.replace(tmp, so_path)
    sum_path = so_path + ".sig"
    if sum_text == "":
        os.remove(sum_path)
    elif sum_text is not None:
        with open(sum_path, "w") as fh:
            fh.write(sum_text)


@pytest.mark.parametrize(
    "how",
    [
        "truncated",
        "flipped",
        "bad_sum",
        "missing_sum",
        "garbage_with_matching_sum",
        "other_key",
        "bare_checksum",
    ],
)
def test_damaged_entry_is_rebuilt_never_loaded(fresh_cache, how, python_child):
    # Built by another process, so this one has never mapped the entry.
    env = {"MORPHAX_CACHE_DIR": str(fresh_cache)}
    python_child(_CHILD, env)
    (entry,) = _entries(fresh_cache)
    _corrupt(entry, how)
    stats = json.loads(python_child(_CHILD, env).stdout.strip().splitlines()[-1])
    assert stats["compiles"] == 1 and stats["disk_hits"] == 0, stats
    assert stats["rebuilt_corrupt"] == 1, stats
    assert _entries(fresh_cache) == [entry]
    _check_entry(entry)
    # And the repaired entry is a disk hit again.
    stats = json.loads(python_child(_CHILD, env).stdout.strip().splitlines()[-1])
    assert stats == {"compiles": 0, "disk_hits": 1, "memory_hits": 0, "rebuilt_corrupt": 0, "generic_hits": 0}


def test_damaged_entry_in_this_process(fresh_cache):
    f, c = _program()
    x = np.arange(5, dtype=np.float32)
    want = np.asarray(morphax.jit(f, backend="numpy")(x))
    np.testing.assert_allclose(_run_c(f, x), want, rtol=1e-5)
    (entry,) = _entries(fresh_cache)
    _corrupt(entry, "truncated")
    build._libraries.clear()
    build._recent.clear()
    _recompile()
    np.testing.assert_allclose(_run_c(f, x), want, rtol=1e-5)
    assert build.stats["rebuilt_corrupt"] == 1
    assert build.stats["compiles"] == 2
    _check_entry(entry)


def test_read_only_cache_dir_is_read_and_never_written(fresh_cache, monkeypatch, tmp_path):
    f, c = _program()
    x = np.linspace(0, 1, 7, dtype=np.float32)
    want = np.asarray(morphax.jit(f, backend="numpy")(x))
    np.testing.assert_allclose(_run_c(f, x), want, rtol=1e-5)  # builds the entry
    before = sorted(p for p in glob.glob(os.path.join(str(fresh_cache), "**"), recursive=True))
    build._libraries.clear()
    build._recent.clear()
    build.reset_cache_dir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR is read once
    fresh_cache.chmod(0o500)
    (fresh_cache / "c").chmod(0o500)
    try:
        if os.access(fresh_cache / "c", os.W_OK):
            monkeypatch.setenv("MORPHAX_CACHE_READ_ONLY", "1")  # root: chmod does not stop it
            build.reset_cache_dir()
        assert build.cache_dir() == str(fresh_cache / "c") and not disk_cache.writable()
        _recompile()
        np.testing.assert_allclose(_run_c(f, x), want, rtol=1e-5)
        assert build.stats["disk_hits"] == 1 and build.stats["compiles"] == 1  # read, not rebuilt
        g, _ = _program()
        np.testing.assert_allclose(_run_c(g, x), np.asarray(morphax.jit(g, backend="numpy")(x)), rtol=1e-5)
        assert build.stats["compiles"] == 2  # built privately ...
    finally:
        tempfile.tempdir = None
        (fresh_cache / "c").chmod(0o700)
        fresh_cache.chmod(0o700)
    after = sorted(p for p in glob.glob(os.path.join(str(fresh_cache), "**"), recursive=True))
    assert after == before  # ... and nothing written to the cache
    assert os.listdir(tmp_path / "tmp") == []  # nor left in the temporary directory


def test_unusable_cache_dir_means_private_builds(fresh_cache, monkeypatch, tmp_path):
    # Runs even as root: the cache "directory" lies under a regular file, so it cannot be made.
    blocker = fresh_cache.parent / "a_file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("MORPHAX_CACHE_DIR", str(blocker / "cache"))
    build.reset_cache_dir()
    assert build.cache_dir() is None and not disk_cache.writable()
    f, c = _program()
    x = np.linspace(0, 1, 7, dtype=np.float32)
    want = np.asarray(morphax.jit(f, backend="numpy")(x))
    np.testing.assert_allclose(_run_c(f, x), want, rtol=1e-5)
    assert build.stats["compiles"] == 1
    _recompile()  # the same program again: from memory
    np.testing.assert_allclose(_run_c(f, x), want, rtol=1e-5)
    assert build.stats["compiles"] == 1 and build.stats["memory_hits"] == 1


def test_size_cap_evicts_least_recently_used(fresh_cache, monkeypatch):
    x = np.arange(4, dtype=np.float32)
    _run_c(_program()[0], x)
    (first,) = _entries(fresh_cache)
    size = os.path.getsize(first)
    # Room for about two entries.
    monkeypatch.setenv("MORPHAX_CACHE_MAX_MB", str(2.5 * size / 2**20))
    _run_c(_program()[0], x)
    second = [e for e in _entries(fresh_cache) if e != first]
    assert len(second) == 1
    # Touch the first: now the second is the least recently used.
    os.utime(first, ns=(os.stat(second[0]).st_mtime_ns + 10**9,) * 2)
    _run_c(_program()[0], x)
    left = _entries(fresh_cache)
    assert first in left and second[0] not in left and len(left) == 2
    for e in left:
        _check_entry(e)
    assert not glob.glob(os.path.join(str(fresh_cache), "c", "*", os.path.basename(second[0]) + ".sig"))


def test_tiny_cap_still_runs(fresh_cache, monkeypatch):
    # A cap smaller than one library: every build evicts the others but keeps (and runs) itself.
    monkeypatch.setenv("MORPHAX_CACHE_MAX_MB", "0.0001")
    x = np.arange(6, dtype=np.float32)
    for _ in range(3):
        f, c = _program()
        want = np.asarray(morphax.jit(f, backend="numpy")(x))
        np.testing.assert_allclose(_run_c(f, x), want, rtol=1e-5)
        assert len(_entries(fresh_cache)) == 1
    assert build.stats["compiles"] == 3


def test_concurrent_builds_leave_one_valid_entry(fresh_cache):
    env = dict(os.environ, MORPHAX_CACHE_DIR=str(fresh_cache))
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_CHILD)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
        )
        for _ in range(3)
    ]
    results = [p.communicate(timeout=180) for p in procs]
    for p, (_, err) in zip(procs, results):
        assert p.returncode == 0, err
    stats = [json.loads(out.strip().splitlines()[-1]) for out, _ in results]
    # Each process either built it or found the other's build; together at least one compile.
    assert all(s["compiles"] + s["disk_hits"] == 1 for s in stats), stats
    assert all(s["rebuilt_corrupt"] == 0 for s in stats), stats
    assert sum(s["compiles"] for s in stats) >= 1
    (entry,) = _entries(fresh_cache)
    _check_entry(entry)
    assert not glob.glob(os.path.join(str(fresh_cache), "c", "*", "build-*"))


def test_concurrent_threads_share_one_build(fresh_cache):
    import threading

    f, c = _program()
    x = np.arange(8, dtype=np.float32)
    want = np.asarray(morphax.jit(f, backend="numpy")(x))
    outs, errors = [], []

    def work():
        try:
            outs.append(_run_c(f, x))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for o in outs:
        np.testing.assert_allclose(o, want, rtol=1e-5)
    assert build.stats["compiles"] == 1


def test_clear_caches_clears_memory_and_disk(fresh_cache):
    f, c = _program()
    x = np.arange(3, dtype=np.float32)
    _run_c(f, x)
    assert len(_entries(fresh_cache)) == 1 and build._libraries
    morphax.clear_caches()
    assert _entries(fresh_cache) == []
    assert not glob.glob(os.path.join(str(fresh_cache), "c", "*", "*.sig"))
    assert not build._libraries
    before = build.stats["compiles"]
    want = np.asarray(morphax.jit(f, backend="numpy")(x))
    np.testing.assert_allclose(_run_c(f, x), want, rtol=1e-5)
    assert build.stats["compiles"] == before + 1  # neither memory nor disk had it
    assert len(_entries(fresh_cache)) == 1


def test_compiler_error_falls_back_to_numpy_with_the_message(fresh_cache, monkeypatch):
    build.probe()
    monkeypatch.setattr(build, "_flags", lambda: [*build.FLAGS, "-fmorphax-no-such-flag"])
    f, c = _program()
    x = np.linspace(-3, 3, 11, dtype=np.float32)
    with pytest.warns(UserWarning, match="morphax-no-such-flag") as record:
        got = _run_c(f, x)
    assert any("NumPy" in str(w.message) for w in record)
    want = np.asarray(morphax.jit(f, backend="numpy")(x))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert _entries(fresh_cache) == []  # nothing half-built is left behind
    assert not glob.glob(os.path.join(str(fresh_cache), "c", "*", "build-*"))


def test_compiler_that_fails_falls_back_to_numpy(fresh_cache, monkeypatch):
    # CC=false: found on the PATH, fails every build (the probe too).
    monkeypatch.setenv("CC", "false")
    build._probe.clear()
    assert build.probe()[0] is False
    f, c = _program()
    x = np.arange(4, dtype=np.float32)
    with pytest.warns(UserWarning, match="false"):
        got = _run_c(f, x)
    np.testing.assert_allclose(got, np.asarray(morphax.jit(f, backend="numpy")(x)), rtol=1e-6)


_NO_COMPILER_CHILD = """
    import json, logging, sys, warnings
    warnings.simplefilter("error")
    records = []
    class H(logging.Handler):
        def emit(self, r):
            records.append(r.getMessage())
    logging.getLogger("morphax").addHandler(H())
    import numpy as np, morphax, morphax.numpy as jnp
    from morphax._src.compiler.backends import default_backend_name
    f = morphax.jit(lambda x: jnp.sin(x) * 2 + x.sum())
    x = np.arange(5, dtype=np.float32)
    got = np.asarray(f(x))
    np.asarray(morphax.jit(lambda x: x - 1)(x))
    np.testing.assert_allclose(got, np.sin(x) * 2 + x.sum(), rtol=1e-6)
    print(json.dumps({"backend": default_backend_name(), "log": records}))
"""


def test_no_compiler_at_all_defaults_to_numpy(fresh_cache, tmp_path, python_child):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(sys.executable, bindir / "python")
    env = {
        "MORPHAX_CACHE_DIR": str(fresh_cache),
        "CC": str(tmp_path / "no" / "such" / "cc"),
        "PATH": str(bindir),
    }
    res = python_child(_NO_COMPILER_CHILD, env, drop=("MORPHAX_BACKEND",))
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["backend"] == "numpy"
    assert len(out["log"]) == 1 and "C compiler" in out["log"][0], out["log"]
    assert _entries(fresh_cache) == []


_WARNING_CHILD = """
    import os, numpy as np, morphax, morphax.numpy as jnp
    from morphax._src.compiler.backends.c import build
    build.probe()
    build._flags = lambda: [*build.FLAGS, "-fmorphax-no-such-flag"]
    x = np.arange(3, dtype=np.float32)
    print(np.asarray(morphax.jit(lambda x: x * 7 + 1, backend="c")(x)).tolist())
"""


def test_fallback_warning_reaches_a_plain_user(fresh_cache, python_child):
    res = python_child(_WARNING_CHILD, {"MORPHAX_CACHE_DIR": str(fresh_cache)})
    assert res.stdout.strip().splitlines()[-1] == "[1.0, 8.0, 15.0]"
    assert "morphax-no-such-flag" in res.stderr, res.stderr


def test_probe_answer_is_kept_per_machine(fresh_cache, python_child):
    # First process probes the compiler and keeps the answer; the second reads it.
    code = """
        import json, time
        from morphax._src.compiler.backends.c import build
        t = time.perf_counter(); ok = build.probe(); dt = time.perf_counter() - t
        print(json.dumps({"ok": ok[0], "openmp": build._probe.get("openmp"), "ran": "version" in build._probe}))
    """
    env = {"MORPHAX_CACHE_DIR": str(fresh_cache)}
    a = json.loads(python_child(code, env).stdout.strip().splitlines()[-1])
    assert a["ok"]
    assert glob.glob(os.path.join(str(fresh_cache), "c", "probe-*.json"))
    b = json.loads(python_child(code, env).stdout.strip().splitlines()[-1])
    assert b == a


def test_extra_flags_are_part_of_the_key(fresh_cache, monkeypatch):
    build.probe()
    src = "int f(int x) { return x; }\n"
    plain = build.cache_key(src)
    monkeypatch.setenv("MORPHAX_C_EXTRA_FLAGS", "-DMORPHAX_TEST_FLAG=1 -O1")
    assert build.cache_key(src) != plain
    assert build._flags()[-2:] == ["-DMORPHAX_TEST_FLAG=1", "-O1"]
    f, c = _program()
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_allclose(_run_c(f, x), np.asarray(morphax.jit(f, backend="numpy")(x)), rtol=1e-6)


def test_a_code_generator_change_changes_the_key(fresh_cache, monkeypatch):
    # Entries are keyed by a description of the program (its jaxpr), not its rendered C, so the
    # key must cover the code that renders it: another generator version never reuses an entry.
    from morphax._src.compiler.backends import c as c_backend

    x = np.arange(5, dtype=np.float32)
    morphax.jit(lambda v: v * 3 + 2, backend="c")(x).block_until_ready()
    compiles, hits = build.stats["compiles"], build.stats["disk_hits"]
    build._libraries.clear()
    morphax.jit(lambda v: v * 3 + 2, backend="c")(x).block_until_ready()  # same program: a disk hit
    assert (build.stats["compiles"], build.stats["disk_hits"]) == (compiles, hits + 1)
    build._libraries.clear()
    monkeypatch.setattr(c_backend, "_CODEGEN_HASH", ["another generator"])
    morphax.jit(lambda v: v * 3 + 2, backend="c")(x).block_until_ready()
    assert build.stats["compiles"] == compiles + 1


@pytest.mark.parametrize("module", ["convolution", "blas", "program"])
def test_the_key_covers_every_module_that_renders_program_c(monkeypatch, tmp_path, module):
    """A library is found by a description of its program, so every module whose code shapes the
    program's C must be part of the key: editing one gives another key."""
    import importlib

    from morphax._src.compiler.backends import c as c_backend

    mod = importlib.import_module(f"morphax._src.compiler.backends.c.{module}")
    before = c_backend._codegen_hash()
    edited = tmp_path / f"{module}.py"
    edited.write_text(pathlib.Path(mod.__file__).read_text() + "\n# edited\n")
    monkeypatch.setattr(mod, "__file__", str(edited))
    monkeypatch.setattr(c_backend, "_CODEGEN_HASH", [])
    assert c_backend._codegen_hash() != before
