"""Profiler sessions: `start_trace`/`stop_trace` and the `trace` context manager (one session at
a time, as in JAX), `ProfileOptions`, and the profiler-server entry points, which morphax can
only answer honestly (it has no profiler service to connect to).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading

from morphax._src import events
from morphax._src.errors import JaxRuntimeError
from morphax._src.profiler import trace_file

logger = logging.getLogger("morphax")


class ProfileOptions:
    """Options of a trace (JAX's fields and defaults). morphax uses `host_tracer_level` (0: no
    events, 1: annotations, traces, compiles and program runs only, 2 and 3: everything,
    including eager operations, the steps of each program and host transfers) and `session_id`
    (names the trace's folder instead of the time).

    NB: the other fields are accepted and kept but change nothing: there is no Python function
    tracer (`python_tracer_level`), no HLO to save (`enable_hlo_proto`), no remote capture
    (`duration_ms`, `start_timestamp_ns`), no data-pipeline ops (`include_dataset_ops`), and
    starting a trace cannot fail (`raise_error_on_start_failure`)."""

    def __init__(self):
        self.host_tracer_level = 2
        self.python_tracer_level = 1
        self.enable_hlo_proto = True
        self.include_dataset_ops = True
        self.raise_error_on_start_failure = False
        self.duration_ms = 0
        self.start_timestamp_ns = 0
        self.session_id = ""
        self.repository_path = ""
        self.advanced_configuration = {}

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"ProfileOptions({fields})"


class _Session:
    def __init__(self):
        self.lock = threading.Lock()
        self.active = False
        self.log_dir = None
        self.options = None
        self.create_perfetto_link = False
        self.create_perfetto_trace = False
        self.last_path = None  # the file the last stop_trace wrote (for tests and tools)


_session = _Session()


def start_trace(
    log_dir: os.PathLike | str,
    create_perfetto_link: bool = False,
    create_perfetto_trace: bool = False,
    profiler_options: ProfileOptions | None = None,
) -> None:
    """Start collecting a trace; `stop_trace` writes it under `log_dir` (see `trace`). Raises
    RuntimeError if a trace is already being collected."""
    if profiler_options is not None and not isinstance(profiler_options, ProfileOptions):
        raise TypeError(
            f"start_trace: profiler_options must be a morphax.profiler.ProfileOptions, got "
            f"{type(profiler_options).__name__}."
        )
    with _session.lock:
        if _session.active:
            raise RuntimeError("Profile has already been started. Only one profile may be run at a time.")
        _session.log_dir = os.fspath(log_dir)
        _session.options = profiler_options or ProfileOptions()
        _session.create_perfetto_link = bool(create_perfetto_link)
        _session.create_perfetto_trace = bool(create_perfetto_trace or create_perfetto_link)
        _session.active = True
        events.start()


def stop_trace() -> None:
    """Stop the trace and write it to the `log_dir` given to `start_trace`. Raises RuntimeError
    if no trace is being collected. With `create_perfetto_link`, prints a ui.perfetto.dev link
    and blocks until the trace has been loaded from it."""
    with _session.lock:
        if not _session.active:
            raise RuntimeError("No profile started")
        collected, threads = events.stop()
        options = _session.options
        link = _session.create_perfetto_link
        try:
            trace = trace_file.trace_events(collected, threads, events.started_ns, options.host_tracer_level)
            folder = trace_file.run_directory(_session.log_dir, options.session_id)
            path = trace_file.write(trace, folder, _session.create_perfetto_trace)
            _session.last_path = path
            logger.info("morphax.profiler: wrote %d events to %s", len(trace["traceEvents"]), path)
        finally:
            _session.active = False
    if link:
        trace_file.host_for_perfetto(path)


@contextlib.contextmanager
def trace(
    log_dir: os.PathLike | str,
    create_perfetto_link=False,
    create_perfetto_trace=False,
    profiler_options: ProfileOptions | None = None,
):
    """Collect a trace of the enclosed code and write it, gzip'd Chrome/Perfetto trace-event
    JSON, to ``log_dir/plugins/profile/<time>/<host>.trace.json.gz``. The timeline shows jit
    tracing, compiles (jaxpr passes, lowering, the backend's build, the C compiler), program
    runs and their steps on the thread that ran them (the device stream runs queued work),
    eager operations, host transfers and waits, and `TraceAnnotation`s. Open it in
    ui.perfetto.dev or chrome://tracing (docs/profiling.md).

    `create_perfetto_trace` also writes ``perfetto_trace.json.gz`` there; `create_perfetto_link`
    writes it, prints a ui.perfetto.dev link to it, and blocks until the link has been opened.
    """
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class ProfilerServer:
    """What `start_server` returns. NB: it does not listen: morphax has no profiler service."""

    def __init__(self, port: int):
        self.port = port
        self.listening = False

    def __repr__(self):
        return f"ProfilerServer(port={self.port}, listening=False)"


_server: ProfilerServer | None = None


def start_server(port: int, requires_backend: bool = True) -> ProfilerServer:
    """Accepted so programs written for JAX run; nothing listens on `port`.

    NB: JAX starts a gRPC profiler service here that TensorBoard connects to for on-demand
    captures. morphax has no such service: this returns a `ProfilerServer` that records the
    port (with `.listening == False`) and logs a warning naming what to use instead
    (`trace(log_dir)` or `start_trace`/`stop_trace`). Like
    JAX it raises ValueError while another server is active."""
    global _server
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port < 65536:
        raise TypeError(f"start_server: port must be an int in [0, 65536), got {port!r}.")
    if _server is not None:
        raise ValueError("Only one profiler server can be active at a time.")
    _server = ProfilerServer(port)
    logger.warning(
        "morphax.profiler.start_server(%d): morphax has no profiler service, so nothing listens "
        "on this port and TensorBoard cannot capture from it. Capture traces in the program with "
        "morphax.profiler.trace(log_dir) or start_trace/stop_trace instead.",
        port,
    )
    return _server


def stop_server() -> None:
    """Forget the server `start_server` returned; ValueError if there is none (as JAX)."""
    global _server
    if _server is None:
        raise ValueError("No active profiler server.")
    _server = None


def register_subprocess(pid: int, port: int):
    """NB: always raises JaxRuntimeError (a RuntimeError, which JAX raises when it cannot
    reach the subprocess's profiler server): morphax processes run no profiler server, so there
    is nothing to connect to. Take a trace inside the subprocess with `trace(log_dir)` and open
    both files side by side instead."""
    raise JaxRuntimeError(
        f"register_subprocess(pid={pid}, port={port}): morphax has no profiler server, so the "
        "subprocess's profile cannot be collected through one. Call morphax.profiler.trace(log_dir) "
        "in the subprocess itself; each process writes its own trace file under log_dir."
    )
