"""Compiling C sources into shared libraries, with an in-memory and an on-disk cache.

The disk cache (disk_cache.py: layout, signatures, locks, size cap) holds one entry per program:
the key hashes a description of the source, the compiler's path and version, the flags, the code
generator's version, the cache format and the host CPU. A library is built in a private folder,
loaded from there (one that does not load is the compiler's failure: CompileError, so the caller
falls back to NumPy), then published with a signature bound to its key; every library, alias and
probe answer read back is checked against its signature first, and one that fails is discarded
and rebuilt, never loaded. Beside the libraries, `.alias` records say which shape-generic library
(generic.py) a program ran, with its parameters, so a program keyed by its own description finds
a library built for another shape without rendering. Counters (`stats`) are what tests assert
on: `compiles` counts generated programs built by the compiler (the probe is not one),
`disk_hits`/`memory_hits` the cache hits and `rebuilt_corrupt` the entries found damaged and
rebuilt. Loaded libraries are unloaded once nothing can call them (see `_open`).

Whether the compiler works (and takes -fopenmp) is probed once per machine: the answer is kept in
the cache directory, keyed by the compiler binary, its flags and the host CPU.

MORPHAX_C_EXTRA_FLAGS (whitespace-separated) is appended to the compiler flags and is part of the
cache key: a debugging hook, e.g. to build the generated programs under sanitizers
(`-fsanitize=undefined,address -fno-sanitize-recover=all`; ASan also needs libasan preloaded, and
libstdc++ after it, or the first C++ exception thrown inside SciPy aborts the process).
"""

from __future__ import annotations

import _ctypes
import collections
import contextlib
import ctypes
import hashlib
import os
import platform
import threading
import weakref

from morphax._src import events
from morphax._src.compiler.backends.c import disk_cache
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
                lib = _compile_and_load(src, "probe", _target_flags() + extra, count=False)
                if lib.morphax_probe(41) == 42:
                    _probe["openmp"] = bool(extra)
                    _probe["result"] = (True, "")
                    break
            except CompileError as e:
                _probe["result"] = (False, str(e))
    except OSError as e:
        _probe["result"] = (False, f"{type(e).__name__}: {e}")


def _probe_key(cc: str) -> str | None:
    """The key of the probe's answer for compiler binary `cc` (None: it cannot be told apart)."""
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
        disk_cache.FORMAT,
        _cpu(),
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _probe_file(cc: str) -> tuple:
    """(key, path) of the probe's answer for `cc`; path None where it cannot be kept."""
    key, root = _probe_key(cc), disk_cache.directory()
    if key is None or root is None:
        return key, None
    return key, os.path.join(root, f"probe-{key}.json")


def _read_probe(cc: str) -> dict | None:
    key, path = _probe_file(cc)
    if path is None:
        return None
    got = disk_cache.read_record(path, "probe", key)
    if isinstance(got, dict) and isinstance(got.get("version"), str) and isinstance(got.get("openmp"), bool):
        return got
    return None


def _write_probe(cc: str) -> None:
    key, path = _probe_file(cc)
    if path is None or not disk_cache.writable():
        return
    record = {"version": _probe["version"], "openmp": bool(_probe.get("openmp"))}
    with contextlib.suppress(OSError):
        disk_cache.write_record(path, "probe", key, record)


def _extra_flags_text() -> str:
    return os.environ.get("MORPHAX_C_EXTRA_FLAGS", "")


def _flags() -> list:
    # The probe decides -fopenmp: run it first, whoever builds (jit(backend="c") never asks
    # whether the backend is available, and built its kernels without OpenMP, 3.5x slower).
    import shlex

    probe()
    openmp = OPENMP if _probe.get("openmp") else []
    return FLAGS + _target_flags() + openmp + shlex.split(_extra_flags_text())


def cache_dir() -> str | None:
    """The disk cache directory (disk_cache.py), None when there is none."""
    return disk_cache.directory()


def reset_cache_dir() -> None:
    """Forget the resolved cache directory (tests point MORPHAX_CACHE_DIR elsewhere)."""
    disk_cache.reset()


def cache_key(source: str) -> str:
    h = hashlib.sha256()
    for part in (
        source,
        _probe.get("cc", ""),
        _probe.get("version", ""),
        " ".join(_flags()),
        CODEGEN_VERSION,
        disk_cache.FORMAT,
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
            lib = _from_disk_or_compile(source, key, name)
            _remember(key, lib)
    return lib


def cached(key_text: str) -> ctypes.CDLL | None:
    """The library keyed by `key_text` if memory or the disk cache holds it, without compiling."""
    probe()
    return _cached(cache_key(key_text))


# ----------------------------------------------------------------------------- libraries in memory
# A library stays loaded while anything can call it: the launchers of a compiled program hold its
# functions, and a ctypes function holds its library. When the last holder goes (the program's
# function was dropped), the library is unloaded (dlclose). The most recent ones are kept a while
# longer, so a program traced again soon (another jit of the same code) finds it in memory.
RECENT_LIBRARIES = 32

_libraries: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # cache key -> library
_recent: collections.deque = collections.deque(maxlen=RECENT_LIBRARIES)


class _Function(_ctypes.CFuncPtr):
    """A C function of a generated library (callers set its argtypes), holding the library."""

    _flags_ = _ctypes.FUNCFLAG_CDECL  # as CDLL's functions: called without the GIL
    _restype_ = None
    _argtypes_ = (ctypes.c_void_p,)


def function(lib: ctypes.CDLL, name: str) -> _Function:
    """The function `name` of `lib`, keeping `lib` loaded while it lives. Not `lib[name]`: a
    function ctypes makes from a library refers to itself, a cycle that only the cyclic GC frees,
    so a dropped program's library would stay loaded until it ran."""
    fn = _Function(ctypes.addressof(ctypes.c_char.in_dll(lib, name)))
    fn.library = lib
    return fn


def _remember(key: str, lib: ctypes.CDLL) -> None:
    _libraries[key] = lib
    _recent.append(lib)


def _open(path: str) -> ctypes.CDLL:
    """Load a library (OSError if it does not load), to be unloaded when it is collected."""
    lib = ctypes.CDLL(path)
    release = weakref.finalize(lib, _unload, lib._handle)
    release.atexit = False  # at exit the process unmaps everything anyway, threads still running
    return lib


def _unload(handle: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        _ctypes.dlclose(handle)


def loaded_count() -> int:
    """How many generated libraries this process holds loaded (tests bound it)."""
    return sum(1 for _ in _libraries.values())


# ----------------------------------------------------------------------------- aliases
MAX_ALIASES = 4096


def save_alias(key_text: str, library_key: str, positions: list, values) -> None:
    """Record that the program keyed by `key_text` runs the (shape-generic) library whose cache
    key is `library_key`, with these parameters, so a later trace of it, in this process or
    another, finds both without rendering (a small signed JSON record beside the libraries)."""
    record = _alias_record(library_key, positions, values)
    key = cache_key(key_text)
    _keep_alias(key, record)
    if disk_cache.writable():
        with contextlib.suppress(OSError):
            path = disk_cache.entry_path(key, ".alias", create=True)
            disk_cache.write_record(path, "alias", key, _alias_json(record))


def _keep_alias(key: str, record: dict) -> None:
    _aliases[key] = record
    while len(_aliases) > MAX_ALIASES:
        _aliases.pop(next(iter(_aliases)), None)


def _alias_record(library_key, positions, values) -> dict:
    """An alias as it is kept in memory: positions as (function, number) tuples, values as ints."""
    return {
        "library": str(library_key),
        "positions": [tuple(int(i) for i in p) for p in positions],
        "values": [int(v) for v in values],
    }


def _alias_json(record: dict) -> dict:
    return {**record, "positions": [list(p) for p in record["positions"]]}


def _alias_from_json(stored) -> dict | None:
    """The alias a signed record holds, if it has the alias's shape (else None)."""
    try:
        library, positions, values = stored["library"], stored["positions"], stored["values"]
        if not (isinstance(library, str) and len(library) == 64 and all(c in _HEX for c in library)):
            return None
        if len(positions) != len(values):
            return None
        if not all(type(i) is int for p in positions for i in p) or not all(type(v) is int for v in values):
            return None
        return _alias_record(library, positions, values)
    except (KeyError, TypeError):
        return None


_HEX = frozenset("0123456789abcdef")


def cached_alias(key_text: str):
    """(library, its cache key, positions, values) recorded by `save_alias` for `key_text` while
    the library is still cached, else None."""
    probe()
    key = cache_key(key_text)
    record = _aliases.get(key)
    if record is None:
        path = disk_cache.entry_path(key, ".alias")
        stored = None if path is None else disk_cache.read_record(path, "alias", key)
        if stored is None:
            return None
        record = _alias_from_json(stored)
        if record is None:
            disk_cache.discard(path, "its record is not an alias")
            return None
        _keep_alias(key, record)
    lib = _cached(record["library"])
    if lib is None:
        return None
    return lib, record["library"], record["positions"], record["values"]


# ----------------------------------------------------------------------------- entries on disk


def _cached(key: str) -> ctypes.CDLL | None:
    lib = _libraries.get(key)
    if lib is not None:
        stats["memory_hits"] += 1
        return lib
    with _lock:
        lib = _libraries.get(key)
        if lib is None:
            lib = _load_entry(key)
            if lib is not None:
                _remember(key, lib)
    return lib


def _load_entry(key: str) -> ctypes.CDLL | None:
    """The entry's library if its signature holds and it loads (None: absent or damaged, and
    then discarded)."""
    path = disk_cache.entry_path(key, ".so")
    if path is None:
        return None
    status = disk_cache.check_file(path, "library", key)
    if status == disk_cache.DAMAGED:
        stats["rebuilt_corrupt"] += 1
    if status != disk_cache.OK:
        return None
    try:
        lib = _open(path)
    except OSError as e:
        if not os.path.exists(path):  # evicted by another process since the check
            return None
        stats["rebuilt_corrupt"] += 1
        disk_cache.discard(path, f"signed, but it does not load ({e})")
        return None
    stats["disk_hits"] += 1
    disk_cache.touch(path)
    return lib


def _from_disk_or_compile(source: str, key: str, name: str) -> ctypes.CDLL:
    lib = _load_entry(key)
    if lib is not None:
        return lib
    if not disk_cache.writable():
        return _compile_and_load(source, name, None)
    try:
        path = disk_cache.entry_path(key, ".so", create=True)
        with disk_cache.lock(path + ".lock"):
            lib = _load_entry(key)  # another process built it while we waited
            if lib is not None:
                return lib
            lib = _build_entry(source, name, path, key)
    except OSError:  # the cache directory went away or filled up: build privately
        return _compile_and_load(source, name, None)
    disk_cache.evict(keep=path)
    return lib


def _build_entry(source: str, name: str, path: str, key: str) -> ctypes.CDLL:
    """Compile into a private folder beside the entry, load it from there (a library that does
    not load is the compiler's failure, never published), then publish it signed."""
    import shutil
    import tempfile

    tmp_dir = tempfile.mkdtemp(prefix="build-", dir=os.path.dirname(path))
    try:
        built = _compile(source, name, tmp_dir, None)
        # Loaded from the private copy: it stays mapped whatever later happens to the entry.
        lib = _open_built(built)
        disk_cache.publish_file(built, path, "library", key)
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    return lib


def _open_built(path: str) -> ctypes.CDLL:
    try:
        return _open(path)
    except OSError as e:
        raise CompileError(f"the compiler reported success but its library does not load: {e}") from None


def _file_stem(name: str) -> str:
    """A file name for a program called `name`: itself when short and plain, else a readable
    prefix and a hash (function names may be long or hold any character; paths may not)."""
    if len(name) <= 64 and name.isascii() and name.replace("_", "a").isalnum():
        return name
    plain = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name[:32])
    return f"{plain}_{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


def _compile(source, name: str, out_dir: str, extra, count: bool = True) -> str:
    import subprocess

    source = source() if callable(source) else source
    cc = _probe.get("cc") or compiler()
    if cc is None:
        raise CompileError("no C compiler")
    stem = _file_stem(name)
    c_path = os.path.join(out_dir, f"{stem}.c")
    so_path = os.path.join(out_dir, f"{stem}.so")
    try:
        with open(c_path, "w") as fh:
            fh.write(source)
    except OSError as e:
        raise CompileError(f"could not write the C source for {cc}: {e}") from None
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


def _compile_and_load(source: str, name: str, extra, count: bool = True) -> ctypes.CDLL:
    """Compile into a private temporary folder and load from there (nothing kept on disk)."""
    import shutil
    import tempfile

    tmp_dir = tempfile.mkdtemp(prefix="morphax-c-")
    try:
        return _open_built(_compile(source, name, tmp_dir, extra, count))
    finally:
        # The loaded library stays mapped after its file is removed (POSIX).
        shutil.rmtree(tmp_dir, ignore_errors=True)


def clear_disk_cache() -> None:
    """Remove every entry of the disk cache (and forget the libraries loaded from it). Lock files
    and builds in progress in other processes are left alone."""
    with _lock:
        disk_cache.clear()
        _libraries.clear()
        _recent.clear()
        _aliases.clear()
