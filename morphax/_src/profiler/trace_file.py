"""Trace files: the events of a session (`_src/events.py`) as Chrome/Perfetto trace-event JSON,
gzip'd, in JAX's (TensorBoard's) folder layout:

    <log_dir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz

(`ProfileOptions.session_id`, when set, names the folder instead), plus `perfetto_trace.json.gz`
(the same events without the "metadata" key, which ui.perfetto.dev rejects) when asked for, and
the local web server that hands that file to ui.perfetto.dev for `create_perfetto_link`.
"""

from __future__ import annotations

import datetime
import functools
import gzip
import json
import os
import pathlib

from morphax._src.version import __version__

# Categories kept at each ProfileOptions.host_tracer_level (1: critical, 2: info, 3: verbose).
# Level 1 keeps what a user reads first: their annotations, traces, compiles and program runs.
_LEVEL_1 = frozenset({"annotation", "step", "trace", "compile", "execute"})
PROCESS_NAME = "/host:CPU"


def trace_events(events: list, threads: dict, started_ns: int, host_tracer_level: int = 2) -> dict:
    """The trace-event JSON object for `events` (tuples of events.py) recorded by `threads`
    ({ident: (name, OS thread id)}), with times in microseconds since `started_ns`."""
    pid = os.getpid()
    if host_tracer_level <= 0:
        events = []
    elif host_tracer_level == 1:
        events = [e for e in events if e[2] in _LEVEL_1]
    # Thread ids as the OS numbers them (what top and perf show), else small numbers of our own.
    tids = {}
    for k, (ident, (_, native)) in enumerate(sorted(threads.items(), key=lambda kv: kv[1][1] or 0)):
        tids[ident] = native if native else k + 1
    out = [
        {"ph": "M", "pid": pid, "name": "process_name", "args": {"name": PROCESS_NAME}},
        {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": 0}},
    ]
    used = {e[5] for e in events}
    order = sorted((ident for ident in threads if ident in used), key=lambda i: threads[i][0] != "MainThread")
    for k, ident in enumerate(order):
        tid = tids[ident]
        out.append(
            {"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": threads[ident][0]}}
        )
        out.append(
            {"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": k}}
        )
    # Per thread in time order, an enclosing span before the spans it encloses (longer first).
    for kind, name, category, start, duration, ident, args, flow_id in sorted(
        events, key=lambda e: (tids.get(e[5], 0), e[3], -e[4])
    ):
        event = {
            "ph": kind,
            "pid": pid,
            "tid": tids.get(ident, 0),
            "ts": round((start - started_ns) / 1000, 3),
            "name": name,
            "cat": category,
        }
        if kind == "X":
            event["dur"] = round(duration / 1000, 3)
        elif kind == "i":
            event["s"] = "t"
        else:  # a flow arrow's start ("s") or end ("f", bound to the span that encloses it)
            event["id"] = flow_id
            if kind == "f":
                event["bp"] = "e"
        if args:
            event["args"] = args
        out.append(event)
    return {
        "displayTimeUnit": "ns",
        "metadata": {"highres-ticks": True, "morphax_version": __version__},
        "traceEvents": out,
    }


def run_directory(log_dir, session_id: str = "") -> pathlib.Path:
    """A new folder for one trace under `log_dir`/plugins/profile (created)."""
    base = pathlib.Path(log_dir).absolute() / "plugins" / "profile"
    name = session_id or datetime.datetime.now().strftime("%Y_%m_%d_%H_%M_%S")
    folder, k = base / name, 1
    # Two traces in the same second (or with the same session id) get folders of their own.
    while folder.exists() and any(folder.glob("*.trace.json.gz")):
        k += 1
        folder = base / f"{name}_{k}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write(trace: dict, folder: pathlib.Path, perfetto: bool) -> pathlib.Path:
    """Write `trace` as <host>.trace.json.gz in `folder` (and perfetto_trace.json.gz when
    `perfetto`); returns the path of the file to open in a viewer."""
    import socket  # here: `import morphax` leaves the network modules unloaded

    path = folder / f"{socket.gethostname()}.trace.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(trace, fh)
    if not perfetto:
        return path
    path = folder / "perfetto_trace.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump({k: v for k, v in trace.items() if k != "metadata"}, fh)
    return path


@functools.cache
def _one_file_handler():
    # Defined at first use: http.server (with email, ssl, socket...) is a large import that
    # `import morphax` should not pay for.
    import http.server

    class _OneFileHandler(http.server.SimpleHTTPRequestHandler):
        """Serves the folder of the trace to ui.perfetto.dev (another origin, hence the header)."""

        def end_headers(self):
            self.send_header("Access-Control-Allow-Origin", "*")
            super().end_headers()

        def do_GET(self):
            self.server.requested = self.path
            super().do_GET()

        def do_POST(self):
            self.send_error(404, "File not found")

        def log_message(self, format, *args):  # noqa: A002 - the base class's name
            pass

    return _OneFileHandler


PERFETTO_PORT = 9001  # where ui.perfetto.dev expects a locally served trace


def host_for_perfetto(path: pathlib.Path, port: int = PERFETTO_PORT, on_listening=None) -> str:
    """Serve `path` on 127.0.0.1:`port`, print the ui.perfetto.dev link that opens it, and
    return (the link) once the file has been fetched. `on_listening(url)` is called when the
    server is ready (tests use it to fetch the file themselves)."""
    import http.server

    handler = functools.partial(_one_file_handler(), directory=str(path.parent))
    with http.server.HTTPServer(("127.0.0.1", port), handler) as server:
        server.requested = None
        url = f"https://ui.perfetto.dev/#!/?url=http://127.0.0.1:{server.server_port}/{path.name}"
        print(f"Open URL in browser: {url}")
        if on_listening is not None:
            on_listening(url)
        while server.requested != f"/{path.name}":
            server.handle_request()
    return url
