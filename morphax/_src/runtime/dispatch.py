"""Running executables: each device has a stream (a FIFO worker thread); a call returns pending
Arrays at once and host reads wait. Small calls on ready inputs with an idle stream run inline,
since a thread handoff costs more than the work. Errors mark the outputs failed and re-raise,
with their traceback, wherever the outputs are waited on.

Programs that call back into Python (debug/pure callbacks, anywhere inside) never run on a stream:
they run on the calling thread once their inputs are ready, so a callback that blocks stalls only
its own computation (and its caller), never other threads' work queued on the device, and a
callback that waits for later work cannot deadlock the stream. Their errors raise at the call, as
in JAX, whether or not the outputs are used.
"""

from __future__ import annotations

import queue
import sys
import threading

import numpy as np

from morphax._src import events
from morphax._src.compiler.executor import profiled
from morphax._src.config import config
from morphax._src.runtime import thread_pools
from morphax._src.runtime.array import Array
from morphax._src.runtime.buffers import (
    DeviceBuffer,
    PendingBuffer,
    fail_outputs,
    fill_outputs,
    pending_outputs,
)

# Calls whose inputs and outputs hold fewer elements than this may run inline, and so may calls
# whose estimated work (flops plus bytes accessed, compiler/analysis.py) is below INLINE_WORK:
# about what a thread handoff costs (tens of microseconds), so queueing them would only add it.
INLINE_ELEMENTS = 1 << 15
INLINE_WORK = 1 << 20


class Stream:
    """One worker thread running queued jobs in order."""

    def __init__(self, name: str):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._pending = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ident = self._thread.ident

    @property
    def idle(self) -> bool:
        return self._pending == 0

    def submit(self, job) -> None:
        with self._lock:
            self._pending += 1
        self._queue.put(job)

    def is_worker(self) -> bool:
        return threading.get_ident() == self._ident

    def _run(self):
        np.seterr(all="ignore")  # this thread only: float edge cases are not errors (JAX is silent)
        pools_seen = -1
        while True:
            job = self._queue.get()
            if pools_seen != thread_pools.generation:  # the devices' share of the cores changed
                pools_seen = thread_pools.apply_to_this_thread()
            try:
                job()
            finally:
                # Drop the job before waiting for the next one: it holds the call's inputs and
                # output buffers, which must be freed when the user drops the arrays.
                job = None
                with self._lock:
                    self._pending -= 1

    def synchronize(self):
        done = threading.Event()
        self.submit(done.set)
        done.wait()


_streams: dict[int, Stream] = {}
_streams_lock = threading.Lock()


def stream_for(device_id: int = 0) -> Stream:
    """The stream of device `device_id` (one FIFO worker per device, created on first use)."""
    s = _streams.get(device_id)
    if s is None:
        with _streams_lock:
            s = _streams.get(device_id)
            if s is None:
                s = _streams[device_id] = Stream(f"morphax-stream-{device_id}")
    return s


def _host_value(x, aval):
    if type(x) is Array:
        return x._value
    # Python scalars and NumPy values enter as arrays of the traced type.
    return np.asarray(x, dtype=aval.dtype)


def _buffer_of(x, aval):
    """What queued work reads later: the buffer itself, so deleting (donating) the Array after
    submission does not take the input away from the work."""
    if type(x) is Array:
        return x._buf
    return np.asarray(x, dtype=aval.dtype)


def _read(buf):
    return buf if type(buf) is np.ndarray else buf.result()


def _ready_values(args, avals) -> list | None:
    """The host values of `args` if every Array among them is ready, else None."""
    values = []
    for a, aval in zip(args, avals):
        if type(a) is Array:
            buf = a._buf
            if type(buf) is not np.ndarray:
                return None
            values.append(buf)
        else:
            values.append(np.asarray(a, dtype=aval.dtype))
    return values


def _refcount_at(seq, i) -> int:
    return sys.getrefcount(seq[i])


# What `_refcount_at` reports for an element that only its list references (measured, not
# assumed: the count the interpreter adds for the call itself differs between Python versions).
_SOLE = _refcount_at([np.empty(1)], 0)


def _claim(inputs: list, positions) -> frozenset:
    """The donated positions of `inputs` whose NumPy buffers nothing else references (no other
    Array, no view handed out by np.asarray): the program may overwrite those. A pending input
    referenced only here is replaced by its value. The donating Arrays were deleted already."""
    free = []
    for k in positions:
        if type(inputs[k]) is not np.ndarray:
            if type(inputs[k]) is not PendingBuffer or _refcount_at(inputs, k) != _SOLE:
                continue
            inputs[k] = inputs[k].result()  # the PendingBuffer goes, with its reference
        value = inputs[k]
        owned = value.base is None and value.flags.owndata and value.flags.writeable
        del value
        if owned and _refcount_at(inputs, k) == _SOLE:
            free.append(k)
    return frozenset(free)


def _consume(args, positions) -> None:
    for k in positions:
        if type(args[k]) is Array:
            args[k].delete()


# Whether a profiler trace is being collected (events.py): read once per call.
_profiling = False


def _on_profiling(on):
    global _profiling
    _profiling = on


events.add_listener(_on_profiling)


def runs_inline(executable) -> bool:
    """Whether calls of `executable` run on the calling thread when the stream is idle: small
    work (a thread handoff would cost more) and no host callbacks."""
    return not executable.calls_host and (
        executable.total_elements < INLINE_ELEMENTS or executable.work < INLINE_WORK
    )


def execute(executable, args, out_weak_types, device_id: int = 0, donate: bool = False):
    """Run `executable` on `args` (Arrays or host values); returns output Arrays, maybe pending.
    With `donate`, the Arrays at the executable's donated positions are consumed: deleted here,
    and their buffers overwritten by outputs where nothing else references them."""
    if getattr(executable, "device_run", None) is not None:
        return execute_on_device(executable, args, out_weak_types, donate)
    if _profiling:
        executable = profiled(executable)  # a copy that records its run and each step's
    stream = _streams.get(device_id) or stream_for(device_id)
    donated = executable.donated if donate else ()
    if stream._pending == 0 and runs_inline(executable) and threading.get_ident() != stream._ident:
        # The hot path of a small call on an idle stream: run here when every input is ready.
        values = _ready_values(args, executable.in_avals)
        if values is not None:
            reuse = ()
            if donated:
                _consume(args, donated)
                reuse = _claim(values, donated)
            try:
                outs = executable(*values, reuse=reuse) if reuse else executable(*values)
            except Exception as e:  # noqa: BLE001 - surfaces at the wait, like queued work
                return _failed(executable.out_avals, out_weak_types, e)
            return [Array(o, w) for o, w in zip(outs, out_weak_types)]
    if executable.calls_host or stream.is_worker():
        # Host callbacks inside, or called from inside queued work (a loop body evaluating a
        # nested call, which would wait on itself if queued): run here, after the inputs are
        # ready. Errors propagate to the caller.
        values = [_host_value(a, v) for a, v in zip(args, executable.in_avals)]
        reuse = ()
        if donated:
            _consume(args, donated)
            reuse = _claim(values, donated)
        outs = executable(*values, reuse=reuse) if reuse else executable(*values)
        return [Array(o, w) for o, w in zip(outs, out_weak_types)]
    buffers = pending_outputs(executable.out_avals)
    inputs = [_buffer_of(a, v) for a, v in zip(args, executable.in_avals)]
    if donated:
        _consume(args, donated)
    flags = config.snapshot()  # the stream runs the work under the caller's flags (x64, ...)

    def job():
        with config.adopted(flags):
            _run_job()

    def _run_job():
        try:
            reuse = _claim(inputs, donated) if donated else ()
            values = [_read(b) for b in inputs]
        except BaseException as e:  # an input failed: so do all outputs
            fail_outputs(buffers, e)
            return
        try:
            outs = executable(*values, reuse=reuse) if reuse else executable(*values)
        except BaseException as e:  # noqa: BLE001
            fail_outputs(buffers, e)
            return
        fill_outputs(buffers, outs)

    stream.submit(job)
    return [Array(b, w) for b, w in zip(buffers, out_weak_types)]


def execute_on_device(executable, args, out_weak_types, donate: bool = False):
    """Run an xla program of a device platform (a TPU): device arrays go in as their buffers,
    host values are copied in, and the outputs are device arrays at once -- the plugin runs the
    program asynchronously, so no stream is needed, and its errors surface at the wait. Donated
    Arrays are deleted after the launch (the plugin frees their memory once the program is done
    with it)."""
    inputs = []
    for a, aval in zip(args, executable.in_avals):
        if type(a) is Array:
            buf = a._buf
            t = type(buf)
            if t is DeviceBuffer:
                inputs.append(buf.pjrt)
            elif t is np.ndarray:
                inputs.append(buf)
            else:
                inputs.append(a._value)  # host work still running, or deleted (raises)
        else:
            inputs.append(np.asarray(a, dtype=aval.dtype))
    try:
        outs = executable.device_run(inputs)
    except Exception as e:  # noqa: BLE001 - surfaces at the wait, like queued work
        return _failed(executable.out_avals, out_weak_types, e)
    if donate and executable.donated:
        _consume(args, executable.donated)
    together = [None]  # the outputs of one execution complete together (DeviceBuffer.wait)
    return [
        Array(o if type(o) is np.ndarray else DeviceBuffer(o, aval.shape, aval.dtype, together), w)
        for o, aval, w in zip(outs, executable.out_avals, out_weak_types)
    ]


def _failed(avals, weak_types, error):
    out = []
    for a, w in zip(avals, weak_types):
        b = PendingBuffer(a.shape, a.dtype)
        b.set_error(error)
        out.append(Array(b, w))
    return out


def synchronize_all():
    for s in list(_streams.values()):
        s.synchronize()
