"""The C backend's disk cache as files: where they live, how each is signed with the key of the
entry it belongs to and checked before anything reads it, locks, the size cap and clearing.

build.py (program libraries, aliases, the compiler probe), extension.py (the launcher
extensions) and the xla backend's executable_cache.py (programs compiled by a PJRT plugin, as
`.pjrt` files) keep their files here; this module knows nothing of what the files mean and imports
nothing of morphax.

Every file read back is checked against a signature: the SHA-256 of the cache format, the file's
kind ("library", "launcher", "alias", "probe"), the key of its entry and its bytes. A library or
extension keeps its signature in a `.sig` file beside it, written after the file itself; a JSON
record carries it inside. So a truncated or altered file, a file of another entry copied over
this one (its signature names the other key), or a signature without its file never passes. A
file that fails is discarded (when the cache is writable) with one logged warning, and its owner
rebuilds it. The signature guards against damage and mix-ups, not against someone who can write
the cache on purpose: they could compute it too.

The directory is BASE/c, where BASE is config's jax_compilation_cache_dir when the program set it
(`experimental.compilation_cache.set_cache_dir`), else MORPHAX_CACHE_DIR, else ~/.cache/morphax. A directory that exists but
cannot be written is read: its entries are used, and new builds stay in the process (compiled in
a private temporary folder, removed once loaded). A directory that cannot be made means no disk
cache at all. Either way one warning is logged. MORPHAX_CACHE_READ_ONLY=1 asks for the read-only
use of a writable directory (a cache prepared once and shared), without the warning.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading

logger = logging.getLogger("morphax")

# Part of every signature (and of build.py's keys): files of an earlier layout never pass.
FORMAT = "morphax-c-cache-2"
SIGNATURE_SUFFIX = ".sig"
_LEGACY_SUFFIXES = (".sha256",)  # checksums of the first layout, removed with their entries

_state: dict = {}
_state_lock = threading.Lock()

# A check's answers.
OK, ABSENT, DAMAGED = "ok", "absent", "damaged"


def directory() -> str | None:
    """The cache directory, or None when there is none (it could not be made)."""
    if "dir" not in _state:
        with _state_lock:
            if "dir" not in _state:
                _resolve()
    return _state["dir"]


def writable() -> bool:
    """Whether new entries may be written to the cache directory."""
    directory()
    return _state["writable"]


def reset() -> None:
    """Forget the resolved directory (tests point MORPHAX_CACHE_DIR elsewhere)."""
    with _state_lock:
        _state.clear()


# The base directory chosen in the program (config's jax_compilation_cache_dir, set by
# experimental.compilation_cache.set_cache_dir); it comes before MORPHAX_CACHE_DIR.
_chosen_base: list = [None]


def set_base(path: str | None) -> None:
    """Keep the cache under `path` from now on (None: MORPHAX_CACHE_DIR or the default again)."""
    chosen = os.fspath(path) if path is not None else None
    with _state_lock:
        if chosen != _chosen_base[0]:
            _chosen_base[0] = chosen
            _state.clear()


def _resolve() -> None:
    base = (
        _chosen_base[0]
        or os.environ.get("MORPHAX_CACHE_DIR")
        or os.path.join(os.path.expanduser("~"), ".cache", "morphax")
    )
    path = os.path.join(base, "c")
    if os.environ.get("MORPHAX_CACHE_READ_ONLY", "").lower() in ("1", "true", "yes", "on"):
        _state.update(dir=path if os.path.isdir(path) else None, writable=False)
        return
    try:
        os.makedirs(path, exist_ok=True)
        # Can we write here? A file of our own, created and removed.
        probe = os.path.join(path, f".writable-{os.getpid()}-{threading.get_ident()}")
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        os.remove(probe)
        _state.update(dir=path, writable=True)
        return
    except OSError as e:
        reason = f"{type(e).__name__}: {e}"
    if os.path.isdir(path) and os.access(path, os.R_OK | os.X_OK):
        _state.update(dir=path, writable=False)
        logger.warning(
            "morphax: the C disk cache %s is read-only (%s); its entries are used, and programs "
            "compiled now are kept in this process only.",
            path,
            reason,
        )
    else:
        _state.update(dir=None, writable=False)
        logger.warning(
            "morphax: no C disk cache (%s); compiled programs are kept in this process only. "
            "Set MORPHAX_CACHE_DIR to a writable directory.",
            reason,
        )


def entry_path(key: str, suffix: str, create: bool = False) -> str | None:
    """Where the entry `key` keeps its file ending in `suffix` (None without a cache); `create`
    makes its folder (raises OSError when that fails)."""
    root = directory()
    if root is None:
        return None
    folder = os.path.join(root, key[:2])
    if create:
        os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, key + suffix)


# ----------------------------------------------------------------------------- signatures


def signature(kind: str, key: str, payload: bytes) -> str:
    h = hashlib.sha256()
    for part in (FORMAT, kind, key):
        h.update(part.encode())
        h.update(b"\0")
    h.update(payload)
    return f"{FORMAT} {kind} {key} {h.hexdigest()}"


def check_file(path: str, kind: str, key: str) -> str:
    """OK when `path` and its signature are present and the signature is this kind's and key's
    over the file's bytes; ABSENT when neither is there; otherwise DAMAGED (the file is
    discarded, with a warning)."""
    try:
        with open(path + SIGNATURE_SUFFIX) as fh:
            signed = fh.read().strip()
    except FileNotFoundError:
        signed = None
    except (OSError, UnicodeDecodeError):
        signed = ""
    try:
        with open(path, "rb") as fh:
            payload = fh.read()
    except FileNotFoundError:
        if signed is None:
            return ABSENT
        discard(path, "its signature is there, the file is not")
        return DAMAGED
    except OSError as e:
        discard(path, f"unreadable ({e})")
        return DAMAGED
    if signed is None:
        discard(path, "it has no signature")
        return DAMAGED
    if signed != signature(kind, key, payload):
        discard(path, _mismatch(signed, kind, key))
        return DAMAGED
    return OK


def _mismatch(signed: str, kind: str, key: str) -> str:
    parts = signed.split()
    if len(parts) != 4 or parts[0] != FORMAT:
        return "its signature is not of this cache format"
    if parts[1] != kind or parts[2] != key:
        return f"its signature is for {parts[1]} {parts[2][:16]}..., not this entry"
    return "its bytes do not match its signature (truncated or altered)"


def publish_file(built: str, path: str, kind: str, key: str) -> None:
    """Move the finished file `built` (in the same folder tree) to `path` and sign it: any old
    signature goes first, the new one comes last, so a signature present always describes a
    complete file. Call under the entry's lock."""
    with open(built, "rb") as fh:
        text = signature(kind, key, fh.read())
    with contextlib.suppress(FileNotFoundError):
        os.remove(path + SIGNATURE_SUFFIX)
    os.replace(built, path)
    _write_atomically(path + SIGNATURE_SUFFIX, text)


def write_record(path: str, kind: str, key: str, record) -> None:
    """Write a small JSON record that carries its own signature (atomically)."""
    body = _canonical(record)
    text = json.dumps({"signature": signature(kind, key, body.encode()), "record": record})
    _write_atomically(path, text)


def read_record(path: str, kind: str, key: str):
    """The record at `path` if its signature is this kind's and key's over its content; None when
    absent or damaged (damaged: discarded, with a warning)."""
    try:
        with open(path) as fh:
            stored = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        discard(path, f"not a record ({type(e).__name__})")
        return None
    record = stored.get("record") if isinstance(stored, dict) else None
    signed = stored.get("signature") if isinstance(stored, dict) else None
    if not isinstance(signed, str) or signed != signature(kind, key, _canonical(record).encode()):
        discard(path, _mismatch(signed if isinstance(signed, str) else "", kind, key))
        return None
    return record


def _canonical(record) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def _write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def discard(path: str, reason: str) -> None:
    """Remove a file that failed its check (signature first), with one logged warning (once per
    file and process where the cache is read-only and the file stays)."""
    if path in _discarded:
        return
    logger.warning("morphax: discarded %s from the C disk cache: %s; it is rebuilt.", path, reason)
    if writable():
        remove(path)
    else:
        _discarded.add(path)


_discarded: set = set()  # damaged files of a read-only cache, already reported


def remove(path: str) -> None:
    """Remove a cache file and its signatures: the signature first, never a signature alone."""
    stem = path[:-3] if path.endswith(".so") else path
    for sig in (path + SIGNATURE_SUFFIX, *(stem + s for s in _LEGACY_SUFFIXES)):
        with contextlib.suppress(OSError):
            os.remove(sig)
    with contextlib.suppress(OSError):
        os.remove(path)


@contextlib.contextmanager
def lock(path: str):
    """An exclusive lock across processes (fcntl where available)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: the atomic renames still keep files whole
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# ----------------------------------------------------------------------------- size cap, clearing


def _entries() -> list:
    """(mtime, size, path) of every library, alias and PJRT executable in the cache."""
    root = directory()
    out = []
    if root is None:
        return out
    for folder, _, files in os.walk(root):
        if os.path.basename(folder).startswith("build-"):
            continue
        for f in files:
            if f.endswith((".so", ".alias", ".pjrt")):
                p = os.path.join(folder, f)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                out.append((st.st_mtime_ns, st.st_size, p))
    return out


def evict(keep: str | None = None) -> None:
    """Keep the cache under its size cap (MORPHAX_CACHE_MAX_MB, default 512), dropping the least
    recently used entries (never `keep`, the entry just built)."""
    cap = int(float(os.environ.get("MORPHAX_CACHE_MAX_MB", "512")) * 2**20)
    entries = _entries()
    total = sum(size for _, size, _ in entries)
    if total <= cap:
        return
    for _, size, p in sorted(entries):
        if p == keep:
            continue
        remove(p)
        total -= size
        if total <= cap:
            break


def touch(path: str) -> None:
    """Mark an entry recently used: the last to be evicted."""
    if writable():
        with contextlib.suppress(OSError):
            os.utime(path)


def clear() -> None:
    """Remove every entry, alias and probe answer. Lock files, the launcher extension and builds
    in progress in other processes are left alone."""
    if not writable():
        return
    for _, _, p in _entries():
        remove(p)
    for folder, _, files in os.walk(directory()):
        for f in files:
            if f.startswith("probe-") and f.endswith(".json"):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(folder, f))
