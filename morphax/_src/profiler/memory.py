"""The device memory profile: the live Arrays' buffers as a gzip'd pprof `Profile` protobuf
(github.com/google/pprof, proto/profile.proto), the format JAX returns, so `pprof` reads it
(``pprof --web memory.prof``). The protobuf is written by hand: a few varint and length-delimited
fields, no protobuf dependency.

Each sample is one buffer, valued (1 allocation, its bytes) with JAX's labels kind="buffer" and
device="cpu:0"; Arrays sharing one NumPy buffer (views) count it once.

NB: JAX records a Python stack at every device allocation. morphax records nothing on the hot
paths: the stack of a buffer is where its NumPy array was created as tracemalloc saw it, when
tracemalloc is tracing (``python -X tracemalloc=25``); otherwise each buffer gets one frame
naming its type ("Array f32[1000,1000]"), which still groups pprof's views by array type.
Compiled programs are not counted (JAX reports executables as kind="executable").
"""

from __future__ import annotations

import os
import time

from morphax._src.core import dtypes as _dtypes
from morphax._src.runtime.array import live_buffers

# ---------------------------------------------------------------------------- protobuf writing


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64 values are written as their two's complement
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value) if value else b""  # proto3 omits zeros


def _bytes(field: int, value: bytes) -> bytes:
    return _varint((field << 3) | 2) + _varint(len(value)) + value


def _packed(field: int, values) -> bytes:
    return _bytes(field, b"".join(_varint(v) for v in values)) if values else b""


class _Strings:
    """pprof's string table: index 0 is the empty string."""

    def __init__(self):
        self.index = {"": 0}

    def __call__(self, s: str) -> int:
        got = self.index.get(s)
        if got is None:
            got = self.index[s] = len(self.index)
        return got


# ---------------------------------------------------------------------------------- the profile


def _stack(owner, desc, tracing: bool) -> list:
    """[(function, file, line)] leaf first: where `owner` was allocated if tracemalloc knows."""
    if tracing and owner is not None:
        import tracemalloc

        tb = tracemalloc.get_object_traceback(owner)
        if tb is not None:
            # A tracemalloc Traceback lists frames oldest first; pprof wants the leaf first.
            return [(f"{os.path.basename(f.filename)}:{f.lineno}", f.filename, f.lineno) for f in tb][::-1]
    return [(f"Array {desc}", "<morphax>", 0)]


def device_memory_profile(backend: str | None = None) -> bytes:
    """The live Arrays' memory as a gzip'd pprof profile (bytes): open it with
    ``pprof --web file`` or `pprof -top`. `backend` (JAX's argument) may be None or "cpu"."""
    if backend not in (None, "cpu"):
        raise RuntimeError(
            f"device_memory_profile: unknown backend {backend!r}; morphax's arrays live on 'cpu' "
            "(pass backend=None or 'cpu')."
        )
    import gzip  # here, as tracemalloc: `import morphax` does not load them
    import tracemalloc

    strings = _Strings()
    tracing = tracemalloc.is_tracing()
    functions: dict = {}  # (name, file) -> id
    locations: dict = {}  # (function id, line) -> id
    samples = []
    kind, buffer_label = strings("kind"), strings("buffer")
    device, cpu0 = strings("device"), strings("cpu:0")
    labels = _bytes(3, _int(1, kind) + _int(2, buffer_label)) + _bytes(3, _int(1, device) + _int(2, cpu0))
    for nbytes, buf, owner in live_buffers():
        desc = f"{_dtypes.short_dtype_name(buf.dtype)}[{','.join(map(str, buf.shape))}]"
        ids = []
        for name, filename, line in _stack(owner, desc, tracing):
            fid = functions.setdefault((name, filename, line), len(functions) + 1)
            ids.append(locations.setdefault((fid, line), len(locations) + 1))
        samples.append(_packed(1, ids) + _packed(2, [1, nbytes]) + labels)
    out = [
        _bytes(1, _int(1, strings("allocations")) + _int(2, strings("count"))),
        _bytes(1, _int(1, strings("space")) + _int(2, strings("bytes"))),
    ]
    out += [_bytes(2, s) for s in samples]
    for (fid, line), lid in locations.items():
        out.append(_bytes(4, _int(1, lid) + _bytes(4, _int(1, fid) + _int(2, line))))
    for (name, filename, line), fid in functions.items():
        n, f = strings(name), strings(filename)
        out.append(_bytes(5, _int(1, fid) + _int(2, n) + _int(3, n) + _int(4, f) + _int(5, line)))
    out += [_bytes(6, s.encode("utf-8")) for s in strings.index]  # insertion order = index order
    out.append(_int(9, time.time_ns()))
    return gzip.compress(b"".join(out))


def save_device_memory_profile(filename, backend: str | None = None) -> None:
    """Write `device_memory_profile(backend)` to `filename`."""
    profile = device_memory_profile(backend)
    with open(filename, "wb") as fh:
        fh.write(profile)
