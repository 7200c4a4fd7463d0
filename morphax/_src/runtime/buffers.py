"""Device buffers as the runtime sees them: ready NumPy arrays, or pending results of queued work.

A `PendingBuffer` is filled (or failed) by a stream worker; readers block in `result()`. The
outputs of one piece of queued work share one event (`pending_outputs`) and are completed
together (`fill_outputs`, `fail_outputs`): one event per call instead of one per output.
Imports nothing from morphax above the runtime.
"""

from __future__ import annotations

import threading

import numpy as np


class PendingBuffer:
    """The future value of one output of queued work. Shape and dtype are known up front."""

    __slots__ = ("shape", "dtype", "_event", "_value", "_error", "_traceback")

    def __init__(self, shape, dtype, event=None):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self._event = threading.Event() if event is None else event
        self._value = None
        self._error = None
        self._traceback = None

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def done(self) -> bool:
        return self._event.is_set()

    def set_result(self, value: np.ndarray) -> None:
        self._value = value
        self._event.set()

    def set_error(self, error: BaseException) -> None:
        self._error = error
        self._traceback = error.__traceback__ if error is not None else None
        self._event.set()

    def result(self) -> np.ndarray:
        self._event.wait()
        error = self._error
        if error is not None:
            # Every read raises the same exception object with the traceback of where it
            # happened: reset it first, or each raise would append the reader's frames to it.
            raise error.with_traceback(self._traceback)
        return self._value


class DeviceBuffer(PendingBuffer):
    """An array's value in a device's memory (a TPU's): `pjrt` is the plugin's buffer (a
    morphax._src.pjrt Buffer), freed when the last Array holding it goes. Everything that reads
    the value (`result`) gets a host copy, made once; `wait` waits for the computation without
    copying. A failed computation raises at either."""

    __slots__ = ("pjrt", "_copying", "_outputs")

    def __init__(self, pjrt_buffer, shape, dtype, outputs=None):
        self.shape = shape
        self.dtype = dtype
        self._event = None
        self._value = None
        self._error = None
        self._traceback = None
        self.pjrt = pjrt_buffer
        self._copying = None
        # [None | True | the error], shared by the outputs of one execution, which the plugin
        # completes together: once one is awaited, waiting for the others costs nothing.
        self._outputs = outputs

    def done(self) -> bool:
        if self._value is not None or (self._outputs is not None and self._outputs[0] is not None):
            return True
        return self.pjrt.is_ready()

    def wait(self) -> None:
        if self._value is not None:
            return
        outputs = self._outputs
        if outputs is not None and outputs[0] is not None:
            if outputs[0] is True:
                return
            raise outputs[0]
        try:
            self.pjrt.block_until_ready()
        except Exception as e:
            if outputs is not None:
                outputs[0] = e
            raise
        if outputs is not None:
            outputs[0] = True

    def start_copy(self) -> None:
        """Begin the copy to the host (copy_to_host_async); `result` finishes it."""
        if self._value is None and self._copying is None:
            self._copying = self.pjrt.to_numpy_async()

    def result(self) -> np.ndarray:
        value = self._value
        if value is None:
            copying, self._copying = self._copying, None
            value = copying() if copying is not None else self.pjrt.to_numpy()
            value.flags.writeable = False
            self._value = value
        return value

    def set_result(self, value):
        raise TypeError("a DeviceBuffer holds a computed value")

    set_error = set_result


class ShardedDeviceBuffer(PendingBuffer):
    """An array's value laid out over several devices of a plugin: `shards` is one (pjrt buffer,
    index) per device, the index (a tuple of slices) saying which block of the global array that
    device holds (replicas hold the same block). Reading the value (`result`) copies each distinct
    block to the host once and assembles the whole; `wait` waits for every shard."""

    __slots__ = ("shards", "layout")

    def __init__(self, shards, shape, dtype, layout=None):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self._event = None
        self._value = None
        self._error = None
        self._traceback = None
        self.shards = list(shards)
        # (mesh, per-dimension mesh axes) the blocks follow, when a partitioned program made them:
        # the next program on the same mesh takes them as they are.
        self.layout = layout

    def done(self) -> bool:
        return self._value is not None or all(b.is_ready() for b, _ in self.shards)

    def wait(self) -> None:
        if self._value is None:
            for b, _ in self.shards:
                b.block_until_ready()

    def result(self) -> np.ndarray:
        value = self._value
        if value is None:
            value = np.empty(self.shape, self.dtype)
            seen = set()
            for b, index in self.shards:
                key = tuple((s.start, s.stop, s.step) for s in index)
                if key not in seen:
                    seen.add(key)
                    value[index] = b.to_numpy()
            value.flags.writeable = False
            self._value = value
        return value

    def set_result(self, value):
        raise TypeError("a ShardedDeviceBuffer holds computed values")

    set_error = set_result


class ProcessLocalBuffer:
    """The buffer of an array that spans the devices of several processes (after
    morphax.distributed.initialize) without being replicated on all of them: `data` has the
    global shape, but only the pieces of this process's devices hold values (the rest is zeros).
    Arrays holding one refuse host reads, as JAX's do (runtime/array.py); computations read the
    local pieces (runtime/spmd_runner.py)."""

    __slots__ = ("data",)

    def __init__(self, data: np.ndarray):
        self.data = data

    @property
    def shape(self):
        return self.data.shape

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return self.data.size


def local_data(buf) -> np.ndarray:
    """The NumPy array behind a ready buffer, waiting for a pending one; for a
    ProcessLocalBuffer its global-shaped data (only this process's pieces hold values)."""
    if isinstance(buf, PendingBuffer):
        buf = buf.result()
    return buf.data if type(buf) is ProcessLocalBuffer else buf


def pending_outputs(avals) -> list:
    """PendingBuffers for the outputs (`avals`: shape and dtype) of one piece of queued work,
    sharing one event: complete them with `fill_outputs` or `fail_outputs` only (a buffer's own
    set_result would wake the readers of the others before their values are in)."""
    event = threading.Event()
    return [PendingBuffer(a.shape, a.dtype, event) for a in avals]


def fill_outputs(buffers, values) -> None:
    """Give each buffer of `pending_outputs` its value, then wake their readers."""
    for b, v in zip(buffers, values):
        b._value = v
    if buffers:
        buffers[0]._event.set()


def fail_outputs(buffers, error: BaseException) -> None:
    """Fail every buffer of `pending_outputs` with `error`, then wake their readers."""
    for b in buffers:
        b._error = error
        b._traceback = error.__traceback__
    if buffers:
        buffers[0]._event.set()


class DeletedBuffer(PendingBuffer):
    """The buffer of a deleted (e.g. donated) array: reading it raises."""

    __slots__ = ()

    def __init__(self, shape, dtype):
        super().__init__(shape, dtype)
        self.set_error(None)

    def result(self):
        dims = ",".join(str(d) for d in self.shape)
        raise RuntimeError(
            f"Array has been deleted with shape={self.dtype.name}[{dims}]. It was donated to a jitted "
            "function (donate_argnums) or deleted explicitly; use the function's output instead."
        )
