"""Device buffers as the runtime sees them: ready NumPy arrays, or pending results of queued work.

A `PendingBuffer` is filled (or failed) by a stream worker; readers block in `result()`.
Imports nothing from morphax above the runtime.
"""

from __future__ import annotations

import threading

import numpy as np


class PendingBuffer:
    """The future value of one output of queued work. Shape and dtype are known up front."""

    __slots__ = ("shape", "dtype", "_event", "_value", "_error", "_traceback")

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self._event = threading.Event()
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
