"""Compiled XLA programs kept on disk: a module the plugin compiled once is loaded by later
processes with PJRT_Executable_DeserializeAndLoad instead of compiled again (the MLP training step
on XLA's CPU plugin: 170 ms to compile, 5 ms to load).

Entries live in the C backend's disk cache (c/disk_cache.py: its directory, signatures, locks,
size cap and read-only mode), as `<key>.pjrt` files. The key is the SHA-256 of the module text,
the compile options, and what identifies the plugin build: its platform name and version, its
attributes (XLA and StableHLO versions), its API version and its library file (path, size,
modification time), since a serialized executable loads only into the build that wrote it. A file
that fails its signature is discarded and the module compiled again; one the plugin refuses to
load is discarded the same way. A plugin that cannot serialize or load executables just compiles.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading

from morphax._src.pjrt.errors import PjrtError
from morphax._src.pjrt.executable import Executable, compile_options

logger = logging.getLogger("morphax")

KIND = "pjrt executable"
SUFFIX = ".pjrt"


def _plugin_identity(client) -> str:
    plugin = client.plugin
    try:
        st = os.stat(plugin.path)
        stamp = f"{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        stamp = "?"
    attributes = sorted((k, repr(v)) for k, v in plugin.attributes.items())
    return repr(
        (client.platform_name, client.platform_version, plugin.api_version, attributes, plugin.path, stamp)
    )


def key_of(client, text: str, num_replicas: int = 1, device_ids=None, partitioned=False) -> str:
    if partitioned:  # one replica of len(device_ids) partitions
        options = compile_options(1, len(device_ids), True, [list(device_ids)])
    else:
        options = compile_options(
            num_replicas, 1, None, None if device_ids is None else [[i] for i in device_ids]
        )
    h = hashlib.sha256()
    for part in (_plugin_identity(client).encode(), options, text.encode()):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()[:40]


def compile(client, text: str, devices=None, partitioned=False) -> Executable:
    """`client.compile(text)` through the disk cache: a one-device program, or with `devices` a
    program of one replica on each of them (a pmap's), or with `partitioned` one program that
    XLA partitions over them (its module's arguments and results carry their shardings)."""
    from morphax._src.compiler.backends.c import disk_cache

    def compile_now():
        if devices is None:
            return client.compile(text)
        if partitioned:
            return client.compile(
                text, 1, len(devices), device_assignment=[list(devices)], use_spmd_partitioning=True
            )
        return client.compile(text, num_replicas=len(devices), device_assignment=[[d] for d in devices])

    plugin = client.plugin
    usable = plugin.has("Executable_Serialize") and plugin.has("Executable_DeserializeAndLoad")
    ids = None if devices is None else [d.id for d in devices]
    key = key_of(client, text, 1 if devices is None else len(devices), ids, partitioned)
    path = disk_cache.entry_path(key, SUFFIX) if usable else None
    if path is None:
        return compile_now()
    loaded = _load(client, path, key, text)
    if loaded is not None:
        return loaded
    compiled = compile_now()
    if disk_cache.writable():
        # Serialized and written by a thread of its own, so the first call does not wait for it
        # (not a daemon: the process finishes storing before it exits).
        thread = threading.Thread(target=_store_quietly, args=(compiled, path, key), name="morphax-store")
        with _pending_lock:
            _pending[:] = [t for t in _pending if t.is_alive()]
            _pending.append(thread)
        thread.start()
    return compiled


def wait_for_stores() -> None:
    """Wait until every program compiled so far is on disk."""
    with _pending_lock:
        threads = list(_pending)
    for t in threads:
        t.join()


_pending: list = []
_pending_lock = threading.Lock()


def _store_quietly(compiled, path, key):
    try:
        _store(compiled, path, key)
    except (OSError, PjrtError) as e:  # a full disk, a plugin that will not serialize this one
        logger.info("morphax: a compiled XLA program was not cached on disk (%s)", e)


def _load(client, path: str, key: str, text: str):
    from morphax._src.compiler.backends.c import disk_cache

    if disk_cache.check_file(path, KIND, key) != disk_cache.OK:
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        loaded = Executable.deserialize(client, data, text)
    except OSError:
        return None
    except PjrtError as e:  # signed by us, yet refused by this plugin build
        disk_cache.discard(path, f"the plugin could not load it ({e.code})")
        return None
    disk_cache.touch(path)
    return loaded


def _store(compiled: Executable, path: str, key: str) -> None:
    from morphax._src.compiler.backends.c import disk_cache

    data = compiled.serialize()
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    with disk_cache.lock(path + ".lock"):
        if disk_cache.check_file(path, KIND, key) == disk_cache.OK:
            return  # another process stored it meanwhile
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        disk_cache.publish_file(tmp, path, KIND, key)
    # The size cap is checked at every EVICT_EVERY-th store of a process: a check walks the whole
    # cache (0.4 s for a cache of 25,000 files, a first call's latency), and checking at every
    # store made 7,000 small programs' stores quadratic (15 minutes for the primitive matrix).
    # Between checks the cap may be passed by that many entries (a few MiB).
    with _pending_lock:
        _stored[0] += 1
        evict = _stored[0] % EVICT_EVERY == 0
    if evict:
        disk_cache.evict(keep=path)


EVICT_EVERY = 64
_stored = [0]
