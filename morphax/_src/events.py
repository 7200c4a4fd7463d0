"""The recording side of the profiler: one switch that every instrumented place checks, and the
in-memory list of timed events a running trace collects (`morphax.profiler` writes them out).

Instrumented places sit next to the counters tests assert on (jit's traces, the compiler's
lowerings and compiles, the C builds) and on the dispatch paths. Cold places read `events.on`.
Hot paths are switched through `add_listener` instead: eager dispatch and the jitted fast path
swap in a timed (or declining) function while a trace runs and pay nothing otherwise; the general
dispatch path keeps a module flag (one global read). Imports nothing of morphax.
"""

from __future__ import annotations

import itertools
import threading
import time

# Whether a trace is being collected. Set only through start()/stop(), which tell the listeners.
on = False
now = time.perf_counter_ns  # one monotonic clock for every thread: the timeline's nanoseconds

_listeners: list = []
_lock = threading.Lock()
# Events as tuples (kind, name, category, start ns, duration ns, thread id, args, flow id):
# appending a tuple is atomic under the GIL, so worker threads record without a lock.
_events: list = []
_thread_names: dict[int, tuple] = {}  # thread ident -> (name, the OS's thread id)
started_ns = 0  # when the running (or last) trace started
_flow_ids = itertools.count(1)
_get_ident = threading.get_ident


def add_listener(fn) -> None:
    """`fn(on)` now and whenever tracing starts or stops: how hot modules keep their own flag."""
    _listeners.append(fn)
    fn(on)


def _switch(value: bool) -> None:
    global on
    on = value
    for fn in list(_listeners):
        fn(value)


def start() -> None:
    """Begin collecting (the caller holds the profiler's session lock)."""
    global _events, started_ns
    with _lock:
        _events = []
        _thread_names.clear()
        started_ns = now()
        _switch(True)


def stop() -> tuple[list, dict]:
    """Stop collecting; returns (events, {thread ident: (thread name, OS thread id)})."""
    global _events
    with _lock:
        _switch(False)
        collected, _events = _events, []
        names = dict(_thread_names)
    return collected, names


def _tid() -> int:
    tid = _get_ident()
    if tid not in _thread_names:
        thread = threading.current_thread()
        _thread_names[tid] = (thread.name, thread.native_id)
    return tid


def complete(name: str, category: str, start_ns: int, end_ns: int | None = None, args=None) -> None:
    """A finished span of the calling thread (a Chrome "X" event)."""
    if end_ns is None:
        end_ns = now()
    _events.append(("X", name, category, start_ns, end_ns - start_ns, _tid(), args, 0))


def instant(name: str, category: str, args=None) -> None:
    """A point in time on the calling thread (a Chrome "i" event)."""
    _events.append(("i", name, category, now(), 0, _tid(), args, 0))


def flow(name: str, category: str, from_tid: int, from_ns: int, to_ns: int) -> None:
    """An arrow from a point of thread `from_tid` (where work was queued) to the calling
    thread's span starting at `to_ns` (where it ran)."""
    fid = next(_flow_ids)
    _events.append(("s", name, category, from_ns, 0, from_tid, None, fid))
    _events.append(("f", name, category, to_ns, 0, _tid(), None, fid))


def current_thread_id() -> int:
    return _tid()


class _Span:
    __slots__ = ("name", "category", "args", "start")

    def __init__(self, name, category, args):
        self.name = name
        self.category = category
        self.args = args

    def __enter__(self):
        self.start = now()
        return self

    def __exit__(self, *exc):
        complete(self.name, self.category, self.start, now(), self.args)
        return False


class _NoSpan:
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NO_SPAN = _NoSpan()


def span(name: str, category: str, args=None):
    """A context manager recording a span while tracing; a shared no-op otherwise (for places
    off the hot paths: tracing, compiling, a backward pass)."""
    if not on:
        return _NO_SPAN
    return _Span(name, category, args)
