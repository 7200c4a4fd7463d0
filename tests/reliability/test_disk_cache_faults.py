"""Faults injected into the C backend's disk cache, each in a private cache and fresh processes:
every file read back (program libraries, the launcher extension, alias records) is checked
against a signature bound to its entry's key, so a damaged or foreign file is discarded with one
logged warning and rebuilt, never loaded; long function names, a compiler whose libraries do not
load, a read-only cache, and the libraries of dropped programs (unloaded, not kept mapped).

Each child process checks its results against NumPy itself and reports its counters and the
warnings the "morphax" logger received; a crash (SIGBUS, SIGSEGV) fails `python_child`."""

import glob
import json
import os
import pathlib
import shutil
import stat

import numpy as np
import pytest

from morphax._src.compiler.backends import get_backend
from morphax._src.compiler.backends.c import build, disk_cache

pytestmark = pytest.mark.skipif(not get_backend("c").available(), reason="no working C compiler")

# Logged warnings are collected, results checked against NumPy, counters reported as JSON.
_PRELUDE = """
    import gc, json, logging, os, sys, warnings
    warnings.simplefilter("error")
    log = []

    class _Keep(logging.Handler):
        def emit(self, record):
            if record.levelno >= logging.WARNING:
                log.append(record.getMessage())

    logging.getLogger("morphax").addHandler(_Keep())
    import numpy as np
    import morphax, morphax.numpy as jnp
    from morphax._src.compiler.backends.c import build, launch_ext

    def check(f, want, x):
        got = np.asarray(morphax.jit(f)(x))
        np.testing.assert_allclose(got, want(x), rtol=2e-5, atol=1e-6)

    def report(**extra):
        print(json.dumps({"stats": build.stats, "log": log, **extra}))
"""

# Two programs of different structure over 64 floats (each runs a shape-generic library through
# an alias record, and the segment launcher extension).
_PROGRAM_A = """
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    check(lambda v: jnp.exp(jnp.cos(v) * 3.5) - v * v, lambda v: np.exp(np.cos(v) * 3.5) - v * v, x)
"""
_PROGRAM_B = """
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    check(lambda v: jnp.tanh(v) * 2 + jnp.sin(v), lambda v: np.tanh(v) * 2 + np.sin(v), x)
"""
_REPORT = """
    report(launcher=launch_ext.module() is not None)
"""


# The children run the default backend, C (CI also runs this folder with MORPHAX_BACKEND=numpy).
_DROP = ("MORPHAX_BACKEND",)


def _child(python_child, cache, *parts, env=None):
    env = {"MORPHAX_CACHE_DIR": str(cache), **(env or {})}
    res = python_child(_PRELUDE + "".join(parts) + _REPORT, env, drop=_DROP)
    return json.loads(res.stdout.strip().splitlines()[-1])


def _files(cache, pattern):
    return sorted(glob.glob(os.path.join(str(cache), "c", pattern)))


def _launcher_file(cache):
    (path,) = _files(cache, "launch/mx_launch_*.ext")
    return path


def _signed(path, kind):
    key = os.path.basename(path)
    key = key[len("mx_launch_") : -len(".ext")] if kind == "launcher" else key.split(".")[0]
    return disk_cache.check_file(path, kind, key) == disk_cache.OK


def _discards(out, fragment):
    return [m for m in out["log"] if "discarded" in m and fragment in m]


# ----------------------------------------------------------------------------- the launcher extension


@pytest.mark.parametrize("how", ["truncated", "random_code", "no_signature", "other_key"])
def test_damaged_launcher_extension_is_rebuilt_never_loaded(tmp_path, python_child, how):
    cache = tmp_path / "cache"
    first = _child(python_child, cache, _PROGRAM_A)
    assert first["launcher"] and not first["log"], first
    path = _launcher_file(cache)
    data = pathlib.Path(path).read_bytes()
    if how == "truncated":  # every later process died with SIGBUS
        pathlib.Path(path).write_bytes(data[: len(data) // 3])
    elif how == "random_code":  # SIGSEGV or SIGILL
        rng = np.random.default_rng(7)
        start = len(data) // 3
        noise = rng.integers(0, 256, len(data) // 3, dtype=np.uint8).tobytes()
        pathlib.Path(path).write_bytes(data[:start] + noise + data[start + len(noise) :])
    elif how == "no_signature":
        os.remove(path + ".sig")
    else:  # a signature that is right about the bytes but names another entry
        key = "0" * 24
        pathlib.Path(path + ".sig").write_text(disk_cache.signature("launcher", key, data))
    second = _child(python_child, cache, _PROGRAM_A)
    assert second["launcher"], second  # rebuilt and loaded
    assert len(_discards(second, "mx_launch")) == 1, second["log"]
    assert _signed(path, "launcher")
    third = _child(python_child, cache, _PROGRAM_A)
    assert third["launcher"] and not third["log"], third


# ----------------------------------------------------------------------------- alias records


@pytest.mark.parametrize("value", [32, 84])
def test_altered_alias_is_discarded(tmp_path, python_child, value):
    """One digit of an alias's parameters changed, the JSON still valid: it gave wrong results
    (64 -> 32) or a segfault (64 -> 84)."""
    cache = tmp_path / "cache"
    _child(python_child, cache, _PROGRAM_A)
    (alias,) = _files(cache, "*/*.alias")
    stored = json.loads(pathlib.Path(alias).read_text())
    assert stored["record"]["values"] == [64], stored
    stored["record"]["values"] = [value]
    pathlib.Path(alias).write_text(json.dumps(stored))
    out = _child(python_child, cache, _PROGRAM_A)
    assert len(_discards(out, ".alias")) == 1, out["log"]
    assert out["stats"]["compiles"] == 0, out  # the generic library itself was sound
    (alias,) = _files(cache, "*/*.alias")
    assert json.loads(pathlib.Path(alias).read_text())["record"]["values"] == [64]
    assert not _child(python_child, cache, _PROGRAM_A)["log"]


def test_another_programs_alias_is_discarded(tmp_path, python_child):
    cache = tmp_path / "cache"
    _child(python_child, cache, _PROGRAM_A)
    (alias_a,) = _files(cache, "*/*.alias")
    _child(python_child, cache, _PROGRAM_B)
    (alias_b,) = [p for p in _files(cache, "*/*.alias") if p != alias_a]
    shutil.copyfile(alias_a, alias_b)  # B's record now says: run A's library
    out = _child(python_child, cache, _PROGRAM_B)
    assert len(_discards(out, ".alias")) == 1, out["log"]


# ----------------------------------------------------------------------------- libraries


def test_another_programs_library_is_never_run(tmp_path, python_child):
    """Another program's library and its signature copied over an entry: the signature names the
    other entry's key, so the copy is discarded and this program's library rebuilt."""
    cache = tmp_path / "cache"
    _child(python_child, cache, _PROGRAM_A)
    (library_a,) = _files(cache, "*/*.so")
    _child(python_child, cache, _PROGRAM_B)
    (library_b,) = [p for p in _files(cache, "*/*.so") if p != library_a]
    for suffix in ("", ".sig"):
        shutil.copyfile(library_a + suffix, library_b + suffix)
    out = _child(python_child, cache, _PROGRAM_B)  # checks B's numbers itself
    assert out["stats"]["rebuilt_corrupt"] == 1 and out["stats"]["compiles"] == 1, out
    assert len(_discards(out, os.path.basename(library_b))) == 1, out["log"]
    assert _signed(library_b, "library")


# ----------------------------------------------------------------------------- names and compilers


_LONG_NAMES = """
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    long = lambda v: jnp.sin(v) * 2 + 1
    long.__name__ = "a" * 300
    odd = lambda v: jnp.cos(v) * 3 - v
    odd.__name__ = "\\u00e9" * 200 + " / \\\\ .. \\x00 x"
    for f, want in [(long, lambda v: np.sin(v) * 2 + 1), (odd, lambda v: np.cos(v) * 3 - v)]:
        check(f, want, x)
        from morphax._src.compiler.backends.c import background
        background.wait()
        check(f, want, x)  # the native library now, in either mode
"""


@pytest.mark.parametrize("background", ["0", "1"])
def test_long_and_odd_function_names(tmp_path, python_child, background):
    """A name of 300 bytes gave `OSError: File name too long` at the call (or NumPy forever when
    building in the background); JAX accepts any name."""
    out = _child(
        python_child, tmp_path / "cache", _LONG_NAMES, env={"MORPHAX_COMPILE_IN_BACKGROUND": background}
    )
    assert out["stats"]["compiles"] == 2 and not out["log"], out


def _fake_compiler(tmp_path, real):
    """A compiler that builds the probe with the real one and, for anything else, exits 0 after
    writing a file that is no library."""
    script = tmp_path / "cc-that-lies"
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in *probe*) exec "' + real + '" "$@";; esac\n'
        'out=""\n'
        'while [ $# -gt 0 ]; do [ "$1" = "-o" ] && out="$2"; shift; done\n'
        'printf "not a shared library" > "$out"\n'
        "exit 0\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


_LYING_COMPILER = """
    import morphax.errors
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check(lambda v: jnp.sin(v) * 2 + 1, lambda v: np.sin(v) * 2 + 1, x)
        from morphax._src.compiler.backends.c import background
        background.wait()
        check(lambda v: jnp.sin(v) * 2 + 1, lambda v: np.sin(v) * 2 + 1, x)
    fallbacks = [str(w.message) for w in caught if "NumPy" in str(w.message)]
    assert fallbacks and all("does not load" in m for m in fallbacks), [str(w.message) for w in caught]
"""


@pytest.mark.parametrize("background", ["0", "1"])
def test_compiler_whose_library_does_not_load_falls_back_to_numpy(tmp_path, python_child, background):
    cache = tmp_path / "cache"
    env = {"CC": _fake_compiler(tmp_path, build.compiler()), "MORPHAX_COMPILE_IN_BACKGROUND": background}
    out = _child(python_child, cache, _LYING_COMPILER, env=env)
    assert not out["launcher"]  # its extension did not load either: ctypes launches
    assert _files(cache, "*/*.so") == []  # nothing unloadable was published


# ----------------------------------------------------------------------------- a read-only cache


def test_read_only_cache_is_used_and_left_alone(tmp_path, python_child):
    """A populated cache that cannot be written is read (it was ignored, and each process left a
    /tmp/morphax-cache-* folder behind); a program it lacks is built privately."""
    cache = tmp_path / "cache"
    _child(python_child, cache, _PROGRAM_A)
    before = {p: os.stat(p).st_mtime_ns for p in glob.glob(os.path.join(str(cache), "**"), recursive=True)}
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    folders = [cache, cache / "c", *[pathlib.Path(p) for p in _files(cache, "*/")]]
    for folder in folders:
        folder.chmod(0o555)
    try:
        # As root chmod stops nothing: MORPHAX_CACHE_READ_ONLY asks for the same behaviour.
        env = {"TMPDIR": str(tmp), "MORPHAX_CACHE_READ_ONLY": "0" if os.geteuid() else "1"}
        out = _child(python_child, cache, _PROGRAM_A, _PROGRAM_B, env=env)
    finally:
        for folder in folders:
            folder.chmod(0o755)
    assert out["launcher"], out
    assert out["stats"]["disk_hits"] == 1 and out["stats"]["compiles"] == 1, out  # A read, B built
    after = {p: os.stat(p).st_mtime_ns for p in glob.glob(os.path.join(str(cache), "**"), recursive=True)}
    assert after == before  # nothing written, touched or removed
    assert os.listdir(tmp) == []  # nothing left behind
    if os.geteuid():
        assert any("read-only" in m for m in out["log"]), out["log"]


# ----------------------------------------------------------------------------- unloading


_MANY_PROGRAMS = """
    gc.disable()  # released by reference counting alone, as the programs themselves are
    from morphax._src.compiler.backends.c import generic

    generic.REGISTRY.seen = lambda structure: False  # every program gets a library of its own
    root = build.cache_dir()

    def mapped():
        paths = set()
        with open("/proc/self/maps") as fh:
            for line in fh:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].startswith(root) and ".so" in parts[5]:
                    paths.add(parts[5].strip())
        return len(paths)

    x = np.linspace(0, 1, 16, dtype=np.float32)
    kept = lambda v: jnp.sin(v) * 0.5  # stays alive throughout: its library must stay loaded
    check(kept, lambda v: np.sin(v) * 0.5, x)
    for i in range(500):
        c = 1.0 + i / 1000
        check(lambda v, c=c: jnp.cos(v) * c - c, lambda v, c=c: np.cos(v) * np.float32(c) - np.float32(c), x)
    check(kept, lambda v: np.sin(v) * 0.5, x)
    c = 1.0 + 3 / 1000  # a dropped program traced again: its library comes back from the disk
    check(lambda v: jnp.cos(v) * c - c, lambda v: np.cos(v) * np.float32(c) - np.float32(c), x)
    print(json.dumps({"mapped": mapped(), "loaded": build.loaded_count()}))
"""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="counts mappings in /proc/self/maps")
def test_dropped_programs_unload_their_libraries(tmp_path, python_child):
    """500 distinct jitted functions, each called once and dropped, kept 369 libraries mapped;
    now only the most recent few (build.RECENT_LIBRARIES) and those still in use stay."""
    env = {
        "MORPHAX_CACHE_DIR": str(tmp_path / "cache"),
        "MORPHAX_SHAPE_GENERIC": "0",
        "MORPHAX_C_EXTRA_FLAGS": "-O0",  # 500 compiles: the quickest the compiler does them
    }
    res = python_child(_PRELUDE + _MANY_PROGRAMS, env, timeout=600, drop=_DROP)
    counts = json.loads(res.stdout.strip().splitlines()[-1])
    bound = build.RECENT_LIBRARIES + 2  # the recent ones, the kept program's, the one traced again
    assert counts["mapped"] <= bound and counts["loaded"] <= bound, counts
