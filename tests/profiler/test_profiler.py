"""morphax.profiler: trace files (gzip'd trace-event JSON in JAX's folder layout) holding jit
tracing, compiles, program runs with their steps, eager operations, host transfers and user
annotations, properly nested per thread; nothing recorded outside a trace; JAX's errors for
sessions and servers; ProfileData reading traces back; the pprof memory profile parsed by a
small protobuf decoder written here."""

from __future__ import annotations

import functools
import gzip
import json
import logging
import threading
import urllib.request

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import profiler
from morphax._src import events
from morphax._src.profiler import trace_file
from morphax._src.runtime import call_fast, dispatch, eager


def _trace_path(log_dir):
    paths = sorted((log_dir / "plugins" / "profile").glob("*/*.trace.json.gz"))
    assert len(paths) == 1, paths
    return paths[0]


def _load(path):
    with gzip.open(path, "rb") as fh:
        return json.load(fh)


def _spans(trace):
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def _check_nesting(spans):
    """On each thread, any two spans are disjoint or one encloses the other."""
    eps = 0.002  # microseconds: timestamps are rounded to the nanosecond
    by_tid: dict = {}
    for e in spans:
        by_tid.setdefault(e["tid"], []).append(e)
    for evs in by_tid.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + eps:
                stack.pop()
            if stack:
                parent = stack[-1]
                assert e["ts"] + e["dur"] <= parent["ts"] + parent["dur"] + eps, (parent, e)
            stack.append(e)


def _inside(inner, outer):
    return outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 0.002


def profiled_step(x, y):
    return jnp.sin(x) * y + 1.0


def loss_fn(w):
    return jnp.sum(jnp.cos(w) ** 2)


def test_trace_holds_jit_grad_eager_and_transfers(tmp_path):
    step = morphax.jit(profiled_step)
    x = jnp.arange(12.0).reshape(3, 4)
    with profiler.trace(tmp_path):
        with profiler.StepTraceAnnotation("train", step_num=7):
            with profiler.TraceAnnotation("forward", batch=3):
                out = step(x, x)
                out.block_until_ready()
            g = morphax.grad(loss_fn)(x)
            e = jnp.exp(x)
            host = morphax.device_get({"g": g, "e": e})
            np.asarray(out)
    np.testing.assert_allclose(host["g"], -np.sin(2 * np.arange(12.0).reshape(3, 4)), rtol=1e-5, atol=1e-5)

    path = _trace_path(tmp_path)
    assert path.parent.parent.name == "profile" and path.parent.parent.parent.name == "plugins"
    trace = _load(path)
    assert trace["displayTimeUnit"] == "ns" and "metadata" in trace
    spans = _spans(trace)
    names = {e["name"] for e in spans}
    for expected in [
        "train",
        "forward",
        "trace jit(profiled_step)",
        "compile profiled_step",
        "jaxpr passes",
        "lower and fuse",
        "profiled_step",
        "jvp(loss_fn)",
        "transpose(jvp(loss_fn))",
        "cos",
        "exp",
        "device_get",
        "to host f32[3,4]",
    ]:
        assert expected in names, (expected, sorted(names))
    by_name = {e["name"]: e for e in spans}
    assert by_name["train"]["args"] == {"step_num": 7} and by_name["train"]["cat"] == "step"
    assert by_name["forward"]["args"] == {"batch": 3}
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)
    _check_nesting(spans)

    # The annotation encloses its contents: the trace, compile and run of the jitted function.
    forward = by_name["forward"]
    for inner in ["trace jit(profiled_step)", "compile profiled_step", "profiled_step"]:
        assert _inside(by_name[inner], forward), inner
    assert _inside(by_name["jaxpr passes"], by_name["compile profiled_step"])
    # The run's steps lie inside the run; eager ops of the grad inside its jvp/transpose spans.
    run = next(e for e in spans if e["name"] == "profiled_step" and e["cat"] == "execute")
    steps = [e for e in spans if e["cat"] == "kernel" and e["tid"] == run["tid"] and _inside(e, run)]
    assert steps, "no step of the program was recorded"
    if run["args"]["backend"] == "c":  # a native segment says how many steps run inside it
        assert any(e["args"].get("native steps", 0) >= 1 for e in steps), steps
    assert _inside(by_name["cos"], by_name["jvp(loss_fn)"])
    assert not _inside(by_name["exp"], by_name["forward"])
    assert _inside(by_name["exp"], by_name["train"])
    # Phases follow one another: traced before compiled before run.
    assert by_name["trace jit(profiled_step)"]["ts"] < by_name["compile profiled_step"]["ts"] < run["ts"]

    # Every thread with events is named.
    named = {e["tid"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {e["tid"] for e in spans} <= named


def test_queued_work_runs_on_the_stream_thread_with_a_flow_arrow(tmp_path):
    matmul = morphax.jit(lambda a, b: jnp.tanh(a @ b))
    a = jnp.ones((256, 256)) * 0.01
    matmul(a, a).block_until_ready()  # compiled before the trace
    with profiler.trace(tmp_path):
        morphax.block_until_ready(matmul(a, a))
    trace = _load(_trace_path(tmp_path))
    threads = {
        e["tid"]: e["args"]["name"]
        for e in trace["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    runs = [e for e in _spans(trace) if e["cat"] == "execute"]
    assert len(runs) == 1
    assert threads[runs[0]["tid"]].startswith("morphax-stream")
    assert "block_until_ready" in {e["name"] for e in _spans(trace)}
    starts = [e for e in trace["traceEvents"] if e["ph"] == "s"]
    ends = [e for e in trace["traceEvents"] if e["ph"] == "f"]
    assert len(starts) == len(ends) == 1 and starts[0]["id"] == ends[0]["id"]
    assert threads[starts[0]["tid"]] == "MainThread" and ends[0]["tid"] == runs[0]["tid"]
    assert starts[0]["ts"] <= ends[0]["ts"] == runs[0]["ts"]


def test_every_call_of_a_jitted_function_is_recorded(tmp_path):
    # Repeated calls take the fast path outside a trace; inside one, each call is recorded.
    f = morphax.jit(lambda v: v * 2.0)
    v = jnp.ones(4)
    f(v)
    f(v)
    with profiler.trace(tmp_path):
        for _ in range(3):
            f(v)
    assert f(v).tolist() == [2.0] * 4
    runs = [e for e in _spans(_load(_trace_path(tmp_path))) if e["cat"] == "execute"]
    assert len(runs) == 3


def _hooks():
    """Which hot-path hooks are on: eager dispatch's timed method, the jitted fast path's
    decline, the general dispatch's flag."""
    return (
        eager.EvalTrace.process_primitive is eager._timed_process_primitive,
        call_fast.run is call_fast._declined,
        dispatch._profiling,
    )


def test_nothing_is_recorded_outside_a_trace(tmp_path):
    assert not events.on
    assert _hooks() == (False, False, False)
    assert eager.EvalTrace.process_primitive is eager._untimed_process_primitive
    assert call_fast.run is call_fast._run
    before = list(events._events)
    with profiler.TraceAnnotation("outside"):
        jnp.sin(jnp.ones(3)) + 1.0
    morphax.jit(profiled_step)(jnp.ones(2), jnp.ones(2))
    morphax.device_get(jnp.ones(2))
    assert events._events == before == []
    assert not profiler.TraceAnnotation.is_enabled()
    with profiler.trace(tmp_path):
        assert events.on and _hooks() == (True, True, True)
        assert profiler.TraceAnnotation.is_enabled()
    assert not events.on and _hooks() == (False, False, False)
    jnp.cos(jnp.ones(3))
    assert events._events == []


def test_start_and_stop_twice_raise_like_jax(tmp_path):
    with pytest.raises(RuntimeError, match="No profile started"):
        profiler.stop_trace()
    profiler.start_trace(tmp_path)
    try:
        with pytest.raises(RuntimeError, match="already been started"):
            profiler.start_trace(tmp_path)
        with pytest.raises(RuntimeError, match="already been started"):
            with profiler.trace(tmp_path):
                pass
    finally:
        profiler.stop_trace()
    with pytest.raises(RuntimeError, match="No profile started"):
        profiler.stop_trace()
    with pytest.raises(TypeError, match="ProfileOptions"):
        profiler.start_trace(tmp_path, profiler_options={"host_tracer_level": 1})
    assert not events.on
    _trace_path(tmp_path)  # the one trace that ran was written


def test_two_traces_get_their_own_folders(tmp_path):
    for _ in range(2):
        with profiler.trace(tmp_path):
            jnp.ones(2) + 1.0
    paths = sorted((tmp_path / "plugins" / "profile").glob("*/*.trace.json.gz"))
    assert len(paths) == 2 and paths[0].parent != paths[1].parent


def test_annotate_function_keeps_name_and_docstring(tmp_path):
    def scaled(x, factor=2.0):
        """Multiply by a factor."""
        return x * factor

    plain = profiler.annotate_function(scaled)
    named = functools.partial(profiler.annotate_function, name="scaling", phase="eval")(scaled)
    for wrapped in (plain, named):
        assert wrapped.__name__ == "scaled" and wrapped.__doc__ == "Multiply by a factor."
        assert wrapped.__wrapped__ is scaled
    assert plain(jnp.ones(2)).tolist() == [2.0, 2.0]
    with profiler.trace(tmp_path):
        plain(jnp.ones(2))
        named(jnp.ones(2), factor=3.0)
        with profiler.TraceAnnotation("annotated") as ann:
            ann.set_metadata(rows=5, kind=jnp.float32)
    spans = {e["name"]: e for e in _spans(_load(_trace_path(tmp_path)))}
    qualname = "test_annotate_function_keeps_name_and_docstring.<locals>.scaled"
    assert spans[qualname]["cat"] == "annotation"
    assert spans["scaling"]["args"] == {"phase": "eval"}
    assert spans["annotated"]["args"]["rows"] == 5 and isinstance(spans["annotated"]["args"]["kind"], str)
    assert _inside(spans["mul"], spans["scaling"])
    with pytest.raises(TypeError, match="TraceAnnotation: name must be a string"):
        profiler.TraceAnnotation(3)
    with pytest.raises(TypeError, match="annotate_function: expected a callable"):
        profiler.annotate_function(3)


def test_profile_data_reads_events_back(tmp_path):
    with profiler.trace(tmp_path):
        with profiler.StepTraceAnnotation("train", step_num=2):
            jnp.tanh(jnp.ones(5))
    path = _trace_path(tmp_path)
    data = profiler.ProfileData.from_file(path)
    plane = data.find_plane_with_name("/host:CPU")
    assert isinstance(plane, profiler.ProfilePlane)
    assert data.find_plane_with_name("/device:GPU:0") is None
    assert [p.name for p in data.planes] == ["/host:CPU"]
    lines = {line.name: list(line.events) for line in plane.lines}
    main = lines["MainThread"]
    assert all(isinstance(e, profiler.ProfileEvent) for e in main)
    train = next(e for e in main if e.name == "train")
    tanh = next(e for e in main if e.name == "tanh")
    assert dict(train.stats) == {"step_num": 2, "category": "step"}
    assert train.end_ns == train.start_ns + train.duration_ns
    assert train.start_ns <= tanh.start_ns and tanh.end_ns <= train.end_ns + 1
    assert tanh.duration_ns > 0 and main.index(train) < main.index(tanh)
    assert ("pid", _load(path)["traceEvents"][0]["pid"]) in list(plane.stats)
    # The same from the file's bytes, gzip'd or not.
    raw = path.read_bytes()
    for blob in (raw, gzip.decompress(raw)):
        again = profiler.ProfileData.from_serialized_xspace(blob).find_plane_with_name("/host:CPU")
        assert [e.name for line in again.lines for e in line.events] == [
            e.name for line in plane.lines for e in line.events
        ]
    with pytest.raises(ValueError, match="not a trace-event JSON"):
        profiler.ProfileData.from_serialized_xspace(b"\x0a\x03abc")
    with pytest.raises(ValueError, match="xplane.pb"):
        profiler.ProfileData.from_file(tmp_path / "host.xplane.pb")


def test_perfetto_trace_and_link(tmp_path):
    with profiler.trace(tmp_path, create_perfetto_trace=True):
        jnp.ones(3) * 2.0
    folder = _trace_path(tmp_path).parent
    perfetto = _load(folder / "perfetto_trace.json.gz")
    assert "metadata" not in perfetto
    assert perfetto["traceEvents"] == _load(_trace_path(tmp_path))["traceEvents"]

    # The link's server hands the file over once, then returns (port 0: any free port).
    fetched, clients = [], []

    def fetch(url):
        local = url.split("url=", 1)[1]
        clients.append(
            threading.Thread(target=lambda: fetched.append(urllib.request.urlopen(local, timeout=10).read()))
        )
        clients[0].start()

    url = trace_file.host_for_perfetto(folder / "perfetto_trace.json.gz", port=0, on_listening=fetch)
    clients[0].join(timeout=10)
    assert url.startswith("https://ui.perfetto.dev/#!/?url=http://127.0.0.1:")
    assert json.loads(gzip.decompress(fetched[0])) == perfetto


def test_profile_options(tmp_path):
    options = profiler.ProfileOptions()
    assert options.host_tracer_level == 2 and options.python_tracer_level == 1 and options.session_id == ""
    options.host_tracer_level = 1
    options.session_id = "my_run"
    with profiler.trace(tmp_path, profiler_options=options):
        with profiler.TraceAnnotation("kept"):
            jnp.sin(jnp.ones(3))
    path = _trace_path(tmp_path)
    assert path.parent.name == "my_run"
    names = {e["name"] for e in _spans(_load(path))}
    assert "kept" in names and "sin" not in names
    options.host_tracer_level = 0
    options.session_id = "silent"
    with profiler.trace(tmp_path, profiler_options=options):
        with profiler.TraceAnnotation("dropped"):
            jnp.sin(jnp.ones(3))
    assert _spans(_load(tmp_path / "plugins" / "profile" / "silent" / path.name)) == []


def test_a_trace_that_cannot_be_written_ends_the_session(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    profiler.start_trace(not_a_dir)
    jnp.ones(2) + 1.0
    with pytest.raises(OSError):
        profiler.stop_trace()
    assert not events.on
    with profiler.trace(tmp_path / "ok"):  # a new session starts
        pass
    _trace_path(tmp_path / "ok")


def test_profiler_server_and_subprocess(caplog):
    with caplog.at_level(logging.WARNING, logger="morphax"):
        server = profiler.start_server(9012)
    assert server.port == 9012 and server.listening is False
    assert "nothing listens" in caplog.text and "morphax.profiler.trace" in caplog.text
    try:
        with pytest.raises(ValueError, match="Only one profiler server"):
            profiler.start_server(9013)
    finally:
        profiler.stop_server()
    with pytest.raises(ValueError, match="No active profiler server"):
        profiler.stop_server()
    with pytest.raises(TypeError, match="port"):
        profiler.start_server("9012")
    with pytest.raises(RuntimeError, match="register_subprocess.*no profiler server"):
        profiler.register_subprocess(12345, 9012)


# ------------------------------------------------------------------------- the memory profile


def _varint(data, i):
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _fields(data):
    """[(field number, int or bytes)] of one protobuf message (varint and length-delimited)."""
    out, i = [], 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            n, i = _varint(data, i)
            value, i = data[i : i + n], i + n
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        out.append((number, value))
    return out


def _packed(data):
    values, i = [], 0
    while i < len(data):
        v, i = _varint(data, i)
        values.append(v)
    return values


def _parse_profile(blob):
    assert blob[:2] == b"\x1f\x8b"  # gzip
    top = _fields(gzip.decompress(blob))
    strings = [v.decode() for k, v in top if k == 6]
    assert strings[0] == ""
    sample_types = [dict(_fields(v)) for k, v in top if k == 1]
    functions = {d[1]: d for d in (dict(_fields(v)) for k, v in top if k == 5)}
    locations = {}
    for k, v in top:
        if k == 4:
            loc = _fields(v)
            lines = [dict(_fields(x)) for n, x in loc if n == 4]
            locations[dict(loc)[1]] = [functions[line[1]] for line in lines]
    samples = []
    for k, v in top:
        if k == 2:
            fields = _fields(v)
            ids = [x for n, b in fields if n == 1 for x in _packed(b)]
            value = [x for n, b in fields if n == 2 for x in _packed(b)]
            labels = {strings[d[1]]: strings[d[2]] for d in (dict(_fields(b)) for n, b in fields if n == 3)}
            frames = [strings[f[2]] for i in ids for f in locations[i]]
            samples.append((value, labels, frames))
    return strings, sample_types, samples


def test_device_memory_profile_is_a_gzipped_pprof_of_live_arrays(tmp_path):
    keep = jnp.ones(1000, dtype=jnp.float32)
    other = jnp.zeros((4, 8), dtype=jnp.int32) + 1
    blob = profiler.device_memory_profile()
    strings, sample_types, samples = _parse_profile(blob)
    assert [(strings[t[1]], strings[t[2]]) for t in sample_types] == [
        ("allocations", "count"),
        ("space", "bytes"),
    ]
    by_frame = {frames[0]: (value, labels) for value, labels, frames in samples}
    assert by_frame["Array f32[1000]"] == ([1, 4000], {"kind": "buffer", "device": "cpu:0"})
    assert by_frame["Array i32[4,8]"][0] == [1, 128]
    assert all(value[0] == 1 and value[1] >= 0 for value, _, _ in samples)
    path = tmp_path / "memory.prof"
    profiler.save_device_memory_profile(path)
    assert {f[0] for _, _, f in _parse_profile(path.read_bytes())[2]} >= {"Array f32[1000]", "Array i32[4,8]"}
    del keep, other
    with pytest.raises(RuntimeError, match="device_memory_profile: unknown backend 'tpu'"):
        profiler.device_memory_profile("tpu")


def _make_weights():
    return jnp.ones((123,)) * 2.0


def test_memory_profile_has_allocation_stacks_under_tracemalloc():
    import tracemalloc

    tracemalloc.start(25)
    try:
        weights = _make_weights()
        _, _, samples = _parse_profile(profiler.device_memory_profile())
    finally:
        tracemalloc.stop()
    frames = next(f for value, _, f in samples if value == [1, 123 * 4])
    assert any(frame.startswith("test_profiler.py:") for frame in frames), frames
    assert frames[0] != "Array f32[123]"
    del weights


def test_every_public_name_of_jax_profiler_exists():
    from pathlib import Path

    names = (Path(__file__).parents[1] / "data" / "api" / "jax_profiler.txt").read_text().split()
    assert len(names) == 15
    assert [n for n in names if not hasattr(profiler, n)] == []
