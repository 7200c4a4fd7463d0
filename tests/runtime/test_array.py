"""Array storage and host interop: pending/ready/failed buffers, conversions, repr, immutability."""

from __future__ import annotations

import pickle
import threading
import time

import numpy as np
import pytest

from morphax import lax
from morphax._src.runtime.array import Array
from morphax._src.runtime.buffers import PendingBuffer


def _ready(values, dtype=np.float32, weak=False):
    return Array(np.asarray(values, dtype=dtype), weak)


def test_repr_matches_jax():
    assert repr(_ready([1.0, 2.0])) == "Array([1., 2.], dtype=float32)"
    assert repr(_ready([1, 2], np.int32)) == "Array([1, 2], dtype=int32)"
    assert repr(_ready(1.0, weak=True)) == "Array(1., dtype=float32, weak_type=True)"
    assert repr(_ready([[1, 2], [3, 4]], np.float32)) == "Array([[1., 2.],\n       [3., 4.]], dtype=float32)"
    assert repr(_ready([True, False], np.bool_)) == "Array([ True, False], dtype=bool)"


def test_properties_and_conversions():
    x = _ready([[1, 2, 3], [4, 5, 6]])
    assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and x.dtype == np.float32
    assert x.itemsize == 4 and x.nbytes == 24 and len(x) == 2
    assert float(_ready(2.5)) == 2.5 and int(_ready(3, np.int32)) == 3 and bool(_ready(True, np.bool_))
    assert complex(_ready(1 + 2j, np.complex64)) == 1 + 2j
    assert [1, 2, 3][_ready(1, np.int32)] == 2  # __index__
    with pytest.raises(TypeError, match="integer scalar"):
        [1, 2][_ready(1.0)]
    with pytest.raises(TypeError, match="one element"):
        float(x)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x)
    assert x.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert _ready(7, np.int32).item() == 7
    rows = list(x)
    assert len(rows) == 2 and isinstance(rows[0], Array) and rows[1].tolist() == [4.0, 5.0, 6.0]


def test_numpy_view_is_read_only():
    x = _ready([1.0, 2.0])
    view = np.asarray(x)
    with pytest.raises(ValueError):
        view[0] = 5
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    copy = np.array(x, copy=True)
    copy[0] = 5
    assert float(x[0] if False else np.asarray(x)[0]) == 1.0


def test_immutable_and_unhashable():
    x = _ready([1.0, 2.0])
    with pytest.raises(TypeError, match=r"\.at\[idx\]\.set"):
        x[0] = 3.0
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)
    with pytest.raises(TypeError, match="unhashable"):
        _ = {x: 1}


def test_pickle_round_trip():
    x = _ready([1.0, 2.0], weak=True)
    y = pickle.loads(pickle.dumps(x))
    assert repr(y) == repr(x)


def test_pending_buffer_blocks_until_filled():
    buf = PendingBuffer((3,), np.float32)
    x = Array(buf)
    assert x.shape == (3,) and x.dtype == np.float32 and not x.is_ready()

    def fill():
        time.sleep(0.05)
        buf.set_result(np.arange(3, dtype=np.float32))

    threading.Thread(target=fill).start()
    assert x.block_until_ready() is x
    assert x.is_ready()
    np.testing.assert_array_equal(np.asarray(x), [0, 1, 2])
    # Eager operations on a pending input wait for it.
    y = Array(PendingBuffer((3,), np.float32))
    threading.Timer(0.02, lambda: y._buf.set_result(np.ones(3, np.float32))).start()
    np.testing.assert_allclose(np.asarray(lax.sin(y)), np.sin(np.ones(3, np.float32)))


def test_failed_buffer_raises_original_error_at_the_wait():
    def work():
        raise ZeroDivisionError("boom inside the work")

    buf = PendingBuffer((2,), np.float32)
    try:
        work()
    except ZeroDivisionError as e:
        buf.set_error(e)
    x = Array(buf)
    with pytest.raises(ZeroDivisionError, match="boom") as info:
        x.block_until_ready()
    assert any(frame.name == "work" for frame in info.traceback)
    with pytest.raises(ZeroDivisionError):
        np.asarray(x)
