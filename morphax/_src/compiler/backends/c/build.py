"""Compiling C sources into shared libraries, with an in-memory and an on-disk cache.

The disk cache lives under MORPHAX_CACHE_DIR (default ~/.cache/morphax/c), one entry per source:
the key hashes the source, the compiler's path and version, the flags, the code generator's
version and the host CPU. Entries are written atomically (a temporary file renamed into place,
under a file lock) with a SHA-256 checksum written last; an entry whose checksum does not match
(truncated, corrupt) is rebuilt, never loaded. The cache is capped (MORPHAX_CACHE_MAX_MB,
default 512) with least-recently-used eviction. Beside the libraries, small `.alias` files record
which shape-generic library (generic.py) a program ran, with its parameters, so a program keyed
by its own description finds a library built for another shape without rendering. A read-only
cache directory falls back to a temporary one. Counters (`stats`) are what tests assert on: `compiles` counts generated programs
built by the compiler (the probe is not one), `disk_hits`/`memory_hits` the cache hits and
`rebuilt_corrupt` the entries found damaged (bad checksum, missing checksum, unloadable) and rebuilt.

Whether the compiler works (and takes -fopenmp) is probed once per machine: the answer is kept in
the cache directory, keyed by the compiler binary, its flags and the host CPU.

MORPHAX_C_EXTRA_FLAGS (whitespace-separated) is appended to the compiler flags and is part of the
cache key: a debugging hook, e.g. to build the generated programs under sanitizers
(`-fsanitize=undefined,address -fno-sanitize-recover=all`; ASan also needs libasan preloaded, and
libstdc++ after it, or the first C++ exception thrown inside SciPy aborts the process).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import platform
import threading

from morphax._src import events
from morphax._src.compiler.backends.c.render import CODEGEN_VERSION

# -ffp-contract=off: a*b+c rounds twice, as NumPy (the reference) and eager morphax compute it,
# so jit and eager agree bit for bit on arithmetic (the math library uses fma explicitly).
# -fno-trapping-math: the math library computes every path and selects; without AVX-512's masked
# operations gcc may not execute a floating-point operation of a path unconditionally (it "could
# trap"), so on AVX2 loops over float64 sin, cos, erf_inv and pow did not vectorize. No value
# changes (nothing reads the floating-point exception flags; this is not -ffast-math).
FLAGS = [
    "-O3",
    "-march=native",
    "-fno-math-errno",
    "-fno-trapping-math",
    "-ffp-contract=off",
    "-fPIC",
    "-shared",
    "-std=gnu11",
    "-w",
]
OPENMP = ["-fopenmp"]

# generic_hits: programs that ran a library compiled for another shape (generic.py).
stats = {"compiles": 0, "disk_hits": 0, "memory_hits": 0, "rebuilt_corrupt": 0, "generic_hits": 0}
_libraries: dict[str, ctypes.CDLL] = {}
_aliases: dict[str, dict] = {}  # program key -> the generic library it runs, with its parameters
_lock = threading.Lock()
_probe: dict = {}


class CompileError(RuntimeError):
    pass


def compiler() -> str | None:
    """The C compiler: $CC, else cc or gcc on the PATH."""
    for cand in (os.environ.get("CC"), "cc", "gcc", "clang"):
        found = _which(cand) if cand else None
        if found:
            return found
    return None


def _which(name: str) -> str | None:
    """`shutil.which` for an executable name or path, without importing shutil (it loads bz2 and
    lzma: several milliseconds of every new process's first compiled call)."""
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or os.curdir, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _version(cc: str) -> str:
    import subprocess

    try:
        return subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout.split(
            "\n"
        )[0]
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _cpu() -> str:
    """The host CPU, for the cache key (-march=native code must not move to another CPU)."""
    got = _probe.get("cpu")
    if got is None:
        got = _probe["cpu"] = _read_cpu()
    return got


def _read_cpu() -> str:
    model, flags = platform.machine(), ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith(("model name", "flags", "Features")) and not flags.startswith(line):
                    if line.startswith("model name"):
                        model += line.split(":", 1)[1].strip()
                    else:
                        flags = line
                if model and flags:
                    break
    except OSError:
        pass
    _probe["cpu_flags"] = set(flags.split(":", 1)[-1].split())
    return model + hashlib.sha256(flags.encode()).hexdigest()[:16]


def _target_flags() -> list:
    """Flags for this CPU: on x86 with AVX-512, loops vectorize 16 floats wide (GCC's default
    tuning for recent Intel CPUs stops at 256 bits; random.normal runs 1.5x faster at 512)."""
    _cpu()
    if platform.machine() in ("x86_64", "AMD64") and "avx512f" in _probe.get("cpu_flags", ()):
        return ["-mprefer-vector-width=512"]
    return []


def probe() -> tuple[bool, str]:
    """Whether the compiler builds and loads a library here: checked once per process, and the
    positive answer kept on disk (once per machine and compiler binary)."""
    if "result" not in _probe:
        cc = compiler()
        if cc is None:
            _probe["result"] = (False, "no C compiler on the PATH (set CC)")
        else:
            _probe["cc"] = cc
            known = _read_probe(cc)
            if known is not None:
                _probe["version"], _probe["openmp"] = known["version"], known["openmp"]
                _probe["result"] = (True, "")
            else:
                _probe["version"] = _version(cc)
                _run_probe()
                if _probe["result"][0]:
                    _write_probe(cc)
    return _probe["result"]


def _run_probe() -> None:
    src = "int morphax_probe(int x) { return x + 1; }\n"
    try:
        for extra in (OPENMP, []):
            try:
                lib = _compile_and_load(src, "probe", _target_flags() + extra, use_disk=False, count=False)
                if lib.morphax_probe(41) == 42:
                    _probe["openmp"] = bool(extra)
                    _probe["result"] = (True, "")
                    break
            except CompileError as e:
                _probe["result"] = (False, str(e))
    except OSError as e:
        _probe["result"] = (False, f"{type(e).__name__}: {e}")


def _probe_path(cc: str) -> str | None:
    """Where the probe's answer for compiler binary `cc` is kept (None: nowhere)."""
    try:
        st = os.stat(os.path.realpath(cc))
    except OSError:
        return None
    h = hashlib.sha256()
    for part in (
        os.path.realpath(cc),
        str(st.st_size),
        str(st.st_mtime_ns),
        " ".join(FLAGS + _target_flags() + OPENMP),
        _extra_flags_text(),
        _cpu(),
    ):
        h.update(part.encode())
        h.update(b"\0")
    return os.path.join(cache_dir(), f"probe-{h.hexdigest()[:32]}.json")


def _read_probe(cc: str) -> dict | None:
    path = _probe_path(cc)
    if path is None:
        return None
    try:
        with open(path) as fh:
            got = json.load(fh)
        if (
            isinstance(got, dict)
            and isinstance(got.get("version"), str)
            and isinstance(got.get("openmp"), bool)
        ):
            return got
    except (OSError, ValueError):
        pass
    return None


def _write_probe(cc: str) -> None:
    import tempfile

    path = _probe_path(cc)
    if path is None:
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix="probe-", suffix=".tmp", dir=os.path.dirname(path))
        with os.fdopen(fd, "w") as fh:
            json.dump({"version": _probe["version"], "openmp": bool(_probe.get("openmp"))}, fh)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.remove(tmp)


def _extra_flags_text() -> str:
    return os.environ.get("MORPHAX_C_EXTRA_FLAGS", "")


def _flags() -> list:
    # The probe decides -fopenmp: run it first, whoever builds (jit(backend="c") never asks
    # whether the backend is available, and built its kernels without OpenMP, 3.5x slower).
    import shlex

    probe()
    openmp = OPENMP if _probe.get("openmp") else []
    return FLAGS + _target_flags() + openmp + shlex.split(_extra_flags_text())


def cache_dir() -> str:
    """The disk cache directory (created on first use); read-only falls back to a temporary one."""
    got = _probe.get("cache_dir")
    if got is None:
        base = os.environ.get("MORPHAX_CACHE_DIR") or os.path.join(
            os.path.expanduser("~"), ".cache", "morphax"
        )
        got = os.path.join(base, "c")
        try:
            os.makedirs(got, exist_ok=True)
            # Can we write here? A file of our own, created and removed (tempfile is imported
            # only for the fallback: importing it costs a new process several milliseconds).
            check = os.path.join(got, f".writable-{os.getpid()}-{threading.get_ident()}")
            os.close(os.open(check, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            os.remove(check)
        except OSError:
            import tempfile

            got = tempfile.mkdtemp(prefix="morphax-cache-")
        _probe["cache_dir"] = got
    return got


def reset_cache_dir() -> None:
    """Forget the resolved cache directory (tests point MORPHAX_CACHE_DIR elsewhere)."""
    _probe.pop("cache_dir", None)


def cache_key(source: str) -> str:
    h = hashlib.sha256()
    for part in (
        source,
        _probe.get("cc", ""),
        _probe.get("version", ""),
        " ".join(_flags()),
        CODEGEN_VERSION,
        _cpu(),
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def load(source, name: str, key_text: str | None = None) -> ctypes.CDLL:
    """The library built from `source` (a string, or a callable making it), from memory, disk,
    or a fresh compile. `key_text` (default: the source) is what the cache is keyed by: a
    description that determines the source, so a hit never has to render it."""
    probe()  # the key names the compiler and its version, and the flags depend on the probe
    if key_text is None:
        source = source() if callable(source) else source
        key_text = source
    key = cache_key(key_text)
    lib = _libraries.get(key)
    if lib is not None:
        stats["memory_hits"] += 1
        return lib
    with _lock, events.span(f"load C library {name}", "compile"):
        lib = _libraries.get(key)
        if lib is None:
            lib = _libraries[key] = _from_disk_or_compile(source, key, name)
    return lib


def cached(key_text: str) -> ctypes.CDLL | None:
    """The library keyed by `key_text` if memory or the disk cache holds it, without compiling."""
    probe()
    return _cached(cache_key(key_text))


def save_alias(key_text: str, library_key: str, positions: list, values) -> None:
    """Record that the program keyed by `key_text` runs the (shape-generic) library whose cache
    key is `library_key`, with these parameters, so a later trace of it, in this process or
    another, finds both without rendering (a small JSON file beside the libraries)."""
    record = _alias_record(library_key, positions, values)
    key = cache_key(key_text)
    _aliases[key] = record
    with contextlib.suppress(OSError):
        path = _entry_paths(key)[0][:-3] + ".alias"
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w") as fh:
            json.dump(record, fh)
        os.replace(tmp, path)


def _alias_record(library_key, positions, values) -> dict:
    """An alias as it is kept in memory (and written as JSON): positions as (function, number)
    tuples, values as ints."""
    return {
        "library": str(library_key),
        "positions": [tuple(int(i) for i in p) for p in positions],
        "values": [int(v) for v in values],
    }


def cached_alias(key_text: str):
    """(library, its cache key, positions, values) recorded by `save_alias` for `key_text` while
    the library is still cached, else None."""
    probe()
    key = cache_key(key_text)
    record = _aliases.get(key)
    if record is None:
        try:
            with open(_entry_paths(key)[0][:-3] + ".alias") as fh:
                stored = json.load(fh)
            record = _alias_record(stored["library"], stored["positions"], stored["values"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        _aliases[key] = record
    lib = _cached(record["library"])
    if lib is None:
        return None
    return lib, record["library"], record["positions"], record["values"]


def _cached(key: str) -> ctypes.CDLL | None:
    lib = _libraries.get(key)
    if lib is not None:
        stats["memory_hits"] += 1
        return lib
    try:
        so_path, sum_path = _entry_paths(key)
    except OSError:
        return None
    with _lock:
        lib = _libraries.get(key)
        if lib is None:
            lib = _load_entry(so_path, sum_path)
            if lib is not None:
                _libraries[key] = lib
    return lib


def _entry_paths(key: str) -> tuple[str, str]:
    d = os.path.join(cache_dir(), key[:2])
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, key + ".so"), os.path.join(d, key + ".sha256")


def _checksum(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _valid(so_path: str, sum_path: str) -> bool:
    try:
        with open(sum_path) as fh:
            want = fh.read().strip()
        return bool(want) and _checksum(so_path) == want
    except OSError:
        return False


@contextlib.contextmanager
def _file_lock(path: str):
    """An exclusive lock across processes (fcntl where available)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: the atomic renames still keep entries whole
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _load_entry(so_path: str, sum_path: str) -> ctypes.CDLL | None:
    """The entry's library if its checksum matches and it loads (None: absent or damaged)."""
    if not _valid(so_path, sum_path):
        return None
    try:
        lib = ctypes.CDLL(so_path)
    except OSError:  # evicted by another process since, or not a loadable library
        return None
    stats["disk_hits"] += 1
    with contextlib.suppress(OSError):
        os.utime(so_path)  # recently used: last to be evicted
    return lib


def _from_disk_or_compile(source: str, key: str, name: str) -> ctypes.CDLL:
    try:
        so_path, sum_path = _entry_paths(key)
    except OSError:
        return _compile_and_load(source, name, None, use_disk=False)
    lib = _load_entry(so_path, sum_path)
    if lib is not None:
        return lib
    try:
        with _file_lock(so_path + ".lock"):
            lib = _load_entry(so_path, sum_path)  # another process built it while we waited
            if lib is not None:
                return lib
            if os.path.exists(so_path) or os.path.exists(sum_path):
                stats["rebuilt_corrupt"] += 1
            lib = _build_entry(source, name, so_path, sum_path)
    except OSError:  # the cache directory went away or filled up: build privately
        return _compile_and_load(source, name, None, use_disk=False)
    _evict(keep=so_path)
    return lib


def _build_entry(source: str, name: str, so_path: str, sum_path: str) -> ctypes.CDLL:
    """Compile into a private directory next to the entry, then publish it: library first,
    checksum last, so a present checksum always describes a complete library."""
    import shutil
    import tempfile

    tmp_dir = tempfile.mkdtemp(prefix="build-", dir=os.path.dirname(so_path))
    try:
        built = _compile(source, name, tmp_dir, None)
        digest = _checksum(built)
        # Loaded from the private copy: it stays mapped whatever later happens to the entry.
        lib = ctypes.CDLL(built)
        with contextlib.suppress(OSError):
            os.remove(sum_path)  # a stale checksum must never vouch for the new library
        os.replace(built, so_path)
        tmp_sum = os.path.join(tmp_dir, "sum")
        with open(tmp_sum, "w") as fh:
            fh.write(digest)
        os.replace(tmp_sum, sum_path)
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    return lib


def _compile(source, name: str, out_dir: str, extra, count: bool = True) -> str:
    import subprocess

    source = source() if callable(source) else source
    cc = _probe.get("cc") or compiler()
    if cc is None:
        raise CompileError("no C compiler")
    c_path = os.path.join(out_dir, f"{name}.c")
    so_path = os.path.join(out_dir, f"{name}.so")
    with open(c_path, "w") as fh:
        fh.write(source)
    flags = _flags() if extra is None else FLAGS + list(extra)
    if count:
        stats["compiles"] += 1
    try:
        with events.span(f"cc {name}", "compile", {"bytes of C": len(source)}):
            res = subprocess.run(
                [cc, *flags, c_path, "-o", so_path, "-lm"], capture_output=True, text=True, timeout=300
            )
    except (OSError, subprocess.SubprocessError) as e:
        raise CompileError(f"{cc}: {e}") from None
    if res.returncode != 0:
        raise CompileError(f"{cc} failed ({res.returncode}):\n{res.stderr.strip()[:4000]}")
    return so_path


def _compile_and_load(source: str, name: str, extra, use_disk: bool, count: bool = True) -> ctypes.CDLL:
    import shutil
    import tempfile

    tmp_dir = tempfile.mkdtemp(prefix="morphax-c-")
    try:
        return ctypes.CDLL(_compile(source, name, tmp_dir, extra, count))
    finally:
        # The loaded library stays mapped after its file is removed (POSIX).
        shutil.rmtree(tmp_dir, ignore_errors=True)


def _entries() -> list:
    """(mtime, size, path) of every library (and alias) in the disk cache."""
    out = []
    for root, _, files in os.walk(cache_dir()):
        for f in files:
            if f.endswith((".so", ".alias")) and not os.path.basename(root).startswith("build-"):
                p = os.path.join(root, f)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                out.append((st.st_mtime_ns, st.st_size, p))
    return out


def _remove_entry(so_path: str) -> None:
    if so_path.endswith(".alias"):
        with contextlib.suppress(OSError):
            os.remove(so_path)
        return
    for path in (so_path[:-3] + ".sha256", so_path):  # checksum first: never a checksum alone
        with contextlib.suppress(OSError):
            os.remove(path)


def _evict(keep: str | None = None) -> None:
    """Keep the disk cache under its size cap, dropping the least recently used entries (never
    `keep`, the entry just built)."""
    cap = int(float(os.environ.get("MORPHAX_CACHE_MAX_MB", "512")) * 2**20)
    entries = _entries()
    total = sum(size for _, size, _ in entries)
    if total <= cap:
        return
    for _, size, p in sorted(entries):
        if p == keep:
            continue
        _remove_entry(p)
        total -= size
        if total <= cap:
            break


def clear_disk_cache() -> None:
    """Remove every entry of the disk cache (and forget the libraries loaded from it). Lock files
    and builds in progress in other processes are left alone."""
    with _lock:
        for _, _, p in _entries():
            _remove_entry(p)
        for root, _, files in os.walk(cache_dir()):
            for f in files:
                if f.startswith("probe-") and f.endswith(".json"):
                    with contextlib.suppress(OSError):
                        os.remove(os.path.join(root, f))
        _libraries.clear()
        _aliases.clear()
