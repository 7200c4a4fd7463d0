"""Compiling C sources into shared libraries, with an in-memory and an on-disk cache.

The disk cache lives under MORPHAX_CACHE_DIR (default ~/.cache/morphax/c), one entry per source:
the key hashes the source, the compiler's path and version, the flags, the code generator's
version and the host CPU. Entries are written atomically (a temporary file renamed into place,
under a file lock) with a SHA-256 checksum written last; an entry whose checksum does not match
(truncated, corrupt) is rebuilt, never loaded. The cache is capped (MORPHAX_CACHE_MAX_MB,
default 512) with least-recently-used eviction. A read-only cache directory falls back to a
temporary one. Counters (`stats`) are what tests assert on.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading

from morphax._src.compiler.backends.c.render import CODEGEN_VERSION

FLAGS = ["-O3", "-march=native", "-fno-math-errno", "-fPIC", "-shared", "-std=gnu11", "-w"]
OPENMP = ["-fopenmp"]

stats = {"compiles": 0, "disk_hits": 0, "memory_hits": 0, "rebuilt_corrupt": 0}
_libraries: dict[str, ctypes.CDLL] = {}
_lock = threading.Lock()
_probe: dict = {}


class CompileError(RuntimeError):
    pass


def compiler() -> str | None:
    """The C compiler: $CC, else cc or gcc on the PATH."""
    for cand in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cand and shutil.which(cand):
            return shutil.which(cand)
    return None


def _version(cc: str) -> str:
    try:
        return subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout.split(
            "\n"
        )[0]
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _cpu() -> str:
    """The host CPU, for the cache key (-march=native code must not move to another CPU)."""
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
    return model + hashlib.sha256(flags.encode()).hexdigest()[:16]


def probe() -> tuple[bool, str]:
    """Whether the compiler builds and loads a library here (checked once per process)."""
    if "result" not in _probe:
        cc = compiler()
        if cc is None:
            _probe["result"] = (False, "no C compiler on the PATH (set CC)")
        else:
            _probe["cc"], _probe["version"] = cc, _version(cc)
            src = "int morphax_probe(int x) { return x + 1; }\n"
            try:
                for extra in (OPENMP, []):
                    try:
                        lib = _compile_and_load(src, "probe", extra, use_disk=False)
                        if lib.morphax_probe(41) == 42:
                            _probe["openmp"] = bool(extra)
                            _probe["result"] = (True, "")
                            break
                    except CompileError as e:
                        _probe["result"] = (False, str(e))
            except OSError as e:
                _probe["result"] = (False, f"{type(e).__name__}: {e}")
    return _probe["result"]


def _flags() -> list:
    return FLAGS + (OPENMP if _probe.get("openmp") else [])


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
            with tempfile.NamedTemporaryFile(dir=got):
                pass
        except OSError:
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


def load(source: str, name: str) -> ctypes.CDLL:
    """The library built from `source`, from memory, disk, or a fresh compile."""
    key = cache_key(source)
    lib = _libraries.get(key)
    if lib is not None:
        stats["memory_hits"] += 1
        return lib
    with _lock:
        lib = _libraries.get(key)
        if lib is None:
            lib = _libraries[key] = _from_disk_or_compile(source, key, name)
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


def _from_disk_or_compile(source: str, key: str, name: str) -> ctypes.CDLL:
    try:
        so_path, sum_path = _entry_paths(key)
    except OSError:
        return _compile_and_load(source, name, None, use_disk=False)
    if _valid(so_path, sum_path):
        stats["disk_hits"] += 1
        os.utime(so_path)  # recently used: last to be evicted
        return ctypes.CDLL(so_path)
    with _file_lock(so_path + ".lock"):
        if _valid(so_path, sum_path):  # another process built it while we waited
            stats["disk_hits"] += 1
            return ctypes.CDLL(so_path)
        if os.path.exists(so_path):
            stats["rebuilt_corrupt"] += 1
        tmp_dir = tempfile.mkdtemp(prefix="build-", dir=os.path.dirname(so_path))
        try:
            built = _compile(source, name, tmp_dir, None)
            tmp_so = os.path.join(tmp_dir, "lib.so")
            os.replace(built, tmp_so)
            digest = _checksum(tmp_so)
            os.replace(tmp_so, so_path)
            tmp_sum = os.path.join(tmp_dir, "sum")
            with open(tmp_sum, "w") as fh:
                fh.write(digest)
            os.replace(tmp_sum, sum_path)  # last: a present checksum means a complete entry
        finally:
            shutil.rmtree(tmp_dir, ignore_errors=True)
    _evict()
    return ctypes.CDLL(so_path)


def _compile(source: str, name: str, out_dir: str, extra) -> str:
    cc = _probe.get("cc") or compiler()
    if cc is None:
        raise CompileError("no C compiler")
    c_path = os.path.join(out_dir, f"{name}.c")
    so_path = os.path.join(out_dir, f"{name}.so")
    with open(c_path, "w") as fh:
        fh.write(source)
    flags = _flags() if extra is None else FLAGS + list(extra)
    stats["compiles"] += 1
    try:
        res = subprocess.run(
            [cc, *flags, c_path, "-o", so_path, "-lm"], capture_output=True, text=True, timeout=300
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise CompileError(f"{cc}: {e}") from None
    if res.returncode != 0:
        raise CompileError(f"{cc} failed ({res.returncode}):\n{res.stderr.strip()[:4000]}")
    return so_path


def _compile_and_load(source: str, name: str, extra, use_disk: bool) -> ctypes.CDLL:
    tmp_dir = tempfile.mkdtemp(prefix="morphax-c-")
    try:
        return ctypes.CDLL(_compile(source, name, tmp_dir, extra))
    finally:
        # The loaded library stays mapped after its file is removed (POSIX).
        shutil.rmtree(tmp_dir, ignore_errors=True)


def _evict() -> None:
    """Keep the disk cache under its size cap, dropping the least recently used entries."""
    cap = int(float(os.environ.get("MORPHAX_CACHE_MAX_MB", "512")) * 2**20)
    entries, total = [], 0
    for root, _, files in os.walk(cache_dir()):
        for f in files:
            if f.endswith(".so"):
                p = os.path.join(root, f)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                entries.append((st.st_mtime, st.st_size, p))
                total += st.st_size
    if total <= cap:
        return
    for _, size, p in sorted(entries):
        for path in (p, p[:-3] + ".sha256"):
            with contextlib.suppress(OSError):
                os.remove(path)
        total -= size
        if total <= cap:
            break


def clear_disk_cache() -> None:
    shutil.rmtree(cache_dir(), ignore_errors=True)
    reset_cache_dir()
    _libraries.clear()
