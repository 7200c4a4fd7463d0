"""Reading traces back: `ProfileData` over a trace file morphax wrote, with JAX's read API
(planes -> lines -> events with name, start_ns, duration_ns, end_ns, stats).

NB: JAX's ProfileData reads XSpace protobufs (``*.xplane.pb``); morphax writes no XSpace, so
these classes read morphax's (or any) Chrome trace-event JSON, gzip'd or not. Each process is a
plane named by its "process_name" metadata ("/host:CPU"), each thread a line named by its thread
name, each complete ("X") or instant ("i") event an event; times are nanoseconds since the trace
started, as floats (as JAX's). `from_text_proto` and `from_raw_cpp_ptr` (XSpace only) are absent.
"""

from __future__ import annotations

import json
import os

_GZIP_MAGIC = b"\x1f\x8b"


class ProfileEvent:
    """One event of a line: `name`, `start_ns`, `duration_ns`, `end_ns` and `stats`, an iterator
    of (name, value) pairs (the event's arguments and category)."""

    __slots__ = ("name", "start_ns", "duration_ns", "_stats")

    def __init__(self, name: str, start_ns: float, duration_ns: float, stats: list):
        self.name = name
        self.start_ns = start_ns
        self.duration_ns = duration_ns
        self._stats = stats

    @property
    def end_ns(self) -> float:
        return self.start_ns + self.duration_ns

    @property
    def stats(self):
        return iter(self._stats)

    def __repr__(self):
        return f"ProfileEvent(name={self.name!r}, start_ns={self.start_ns}, duration_ns={self.duration_ns})"


class ProfileLine:
    """The events of one thread, in time order (an enclosing event before those it encloses)."""

    __slots__ = ("name", "_events")

    def __init__(self, name: str, events: list):
        self.name = name
        self._events = events

    @property
    def events(self):
        return iter(self._events)

    def __repr__(self):
        return f"ProfileLine(name={self.name!r}, {len(self._events)} events)"


class ProfilePlane:
    """One process of the trace: `name`, `lines` (one per thread) and `stats` (pairs)."""

    __slots__ = ("name", "_lines", "_stats")

    def __init__(self, name: str, lines: list, stats: list):
        self.name = name
        self._lines = lines
        self._stats = stats

    @property
    def lines(self):
        return iter(self._lines)

    @property
    def stats(self):
        return iter(self._stats)

    def __repr__(self):
        return f"ProfilePlane(name={self.name!r}, {len(self._lines)} lines)"


class ProfileData:
    """A trace read back for inspection: ``ProfileData.from_file(path).planes``."""

    def __init__(self, planes: list):
        self._planes = planes

    @property
    def planes(self):
        return iter(self._planes)

    def find_plane_with_name(self, name: str) -> ProfilePlane | None:
        """The plane called `name` (e.g. "/host:CPU"), or None."""
        for plane in self._planes:
            if plane.name == name:
                return plane
        return None

    @classmethod
    def from_file(cls, path: os.PathLike | str) -> ProfileData:
        """Read a trace file (``*.trace.json.gz``, ``perfetto_trace.json.gz`` or plain JSON)."""
        path = os.fspath(path)
        if path.endswith(".xplane.pb"):
            raise ValueError(
                f"ProfileData.from_file({path!r}): XSpace protobufs (JAX's .xplane.pb) cannot be "
                "read by morphax; pass the .trace.json.gz file a morphax trace wrote."
            )
        with open(path, "rb") as fh:
            return cls(_planes(_parse(fh.read(), path)))

    @classmethod
    def from_serialized_xspace(cls, serialized_xspace: bytes) -> ProfileData:
        """NB: reads the bytes of a trace file (gzip'd or plain trace-event JSON), not an XSpace."""
        return cls(_planes(_parse(bytes(serialized_xspace), "the bytes given")))


def _parse(data: bytes, where: str):
    if data[:2] == _GZIP_MAGIC:
        import gzip  # here: `import morphax` does not load it

        data = gzip.decompress(data)
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(
            f"ProfileData: {where} is not a trace-event JSON file ({e}); morphax reads the "
            ".trace.json.gz files that morphax.profiler.trace writes."
        ) from None


def _planes(trace) -> list:
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    metadata = trace.get("metadata", {}) if isinstance(trace, dict) else {}
    process_names, thread_names, by_thread = {}, {}, {}
    for e in events:
        kind, pid, tid = e.get("ph"), e.get("pid", 0), e.get("tid", 0)
        if kind == "M":
            if e.get("name") == "process_name":
                process_names[pid] = e.get("args", {}).get("name", str(pid))
            elif e.get("name") == "thread_name":
                thread_names[(pid, tid)] = e.get("args", {}).get("name", str(tid))
        elif kind in ("X", "i", "I"):
            stats = list(e.get("args", {}).items())
            if "cat" in e:
                stats.append(("category", e["cat"]))
            event = ProfileEvent(
                e.get("name", ""), float(e.get("ts", 0)) * 1000, float(e.get("dur", 0)) * 1000, stats
            )
            by_thread.setdefault(pid, {}).setdefault(tid, []).append(event)
    planes = []
    for pid in sorted(set(process_names) | set(by_thread)):
        lines = []
        for tid, evs in sorted(by_thread.get(pid, {}).items()):
            evs.sort(key=lambda ev: (ev.start_ns, -ev.duration_ns))
            lines.append(ProfileLine(thread_names.get((pid, tid), str(tid)), evs))
        stats = [("pid", pid), *metadata.items()]
        planes.append(ProfilePlane(process_names.get(pid, str(pid)), lines, stats))
    return planes
