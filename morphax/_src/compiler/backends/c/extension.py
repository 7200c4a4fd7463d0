"""Small CPython extensions built from C source with the system C compiler, once per machine:
the C backend's segment launcher (launch_ext.py) and the xla backend's PJRT launcher
(backends/xla/launch.py). Each is cached on disk beside the generated libraries, signed as they
are (disk_cache.py), under a key of its source, Python, NumPy and the compiler; a damaged entry
is rebuilt, never loaded. Without a compiler, Python's or NumPy's headers, nothing is built and
`build` returns None: the callers then take their ctypes paths.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import sys
import sysconfig
import threading

import numpy as np

logger = logging.getLogger("morphax")

# The signature kind of every extension in the disk cache (the key tells them apart).
KIND = "launcher"


def build(name: str, source: str, what: str):
    """The extension module `name` (its C source defines `PyInit_<name>`), built or read from the
    disk cache; None (logged once by the caller's `what`) where it cannot be built."""
    from morphax._src.compiler.backends.c import build as c_build
    from morphax._src.compiler.backends.c import disk_cache

    cc = c_build.compiler()
    if cc is None:
        return None
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    # The compiler's version as the probe recorded it on disk (once per machine), not a fresh
    # `cc --version`: a subprocess here cost every new process 5-20 ms of its first call.
    c_build.probe()
    version = c_build._probe.get("version") or c_build._version(cc)
    key = hashlib.sha256(
        "\n".join([source, sys.version, np.__version__, cc, version, suffix, disk_cache.FORMAT]).encode()
    ).hexdigest()[:24]
    root = disk_cache.directory()
    # Not named *.so: the disk cache's entries (programs, with their eviction) are the .so files
    # under the cache directory; this is a module of its own, signed as they are.
    path = None if root is None else os.path.join(root, "launch", f"{name}_{key}.ext")
    try:
        if path is not None and disk_cache.check_file(path, KIND, key) == disk_cache.OK:
            return _load(name, path)
        if path is None or not disk_cache.writable():
            return _build_privately(cc, name, source, what)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with disk_cache.lock(path + ".lock"):
            if disk_cache.check_file(path, KIND, key) != disk_cache.OK:  # not built meanwhile
                tmp = f"{path}.{os.getpid()}.tmp"
                if not _compile(cc, name, source, os.path.dirname(path), tmp, what):
                    return None
                disk_cache.publish_file(tmp, path, KIND, key)
        return _load(name, path)
    except (OSError, ImportError) as e:
        logger.info("morphax: the %s is unavailable (%s); using ctypes.", what, e)
        return None


def _build_privately(cc: str, name: str, source: str, what: str):
    """Build and load the extension in a temporary folder, removed at once (no writable cache)."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix=f"morphax-{name}-")
    try:
        built = os.path.join(folder, f"{name}.ext")
        return _load(name, built) if _compile(cc, name, source, folder, built, what) else None
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # a loaded module stays mapped (POSIX)


def _compile(cc: str, name: str, source: str, folder: str, out: str, what: str) -> bool:
    """Compile the extension to `out`; False (logged) where it cannot be built."""
    # subprocess only here, to build: importing it cost a new process's first compiled call
    # milliseconds.
    import subprocess

    include = sysconfig.get_paths().get("include")
    if not include or not os.path.exists(os.path.join(include, "Python.h")):
        return False
    src = os.path.join(folder, f"{name}.{os.getpid()}.{threading.get_ident()}.c")
    with open(src, "w") as fh:
        fh.write(source)
    command = [cc, "-O2", "-fPIC", "-shared", "-std=gnu11", f"-I{include}", f"-I{np.get_include()}", src]
    try:
        done = subprocess.run([*command, "-o", out], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:  # the compiler hung past the timeout
        logger.info("morphax: the %s did not build (%s); using ctypes.", what, e)
        return False
    finally:
        os.remove(src)
    if done.returncode != 0:
        logger.info("morphax: the %s did not build; using ctypes.\n%s", what, done.stderr)
        return False
    return True


def _load(name: str, path: str):
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
