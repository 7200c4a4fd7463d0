"""The native all-reduce of the thread communicator (runtime/native_collectives.py): the same bits
as NumPy reducing in rank order, a counter showing it ran, and every failure of the NumPy path
(a failed participant, a missing one, disagreeing ones) still raised when the native barrier is
where the ranks wait. Without a C compiler the communicator keeps its NumPy path, silently."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from morphax._src.runtime import native_collectives
from morphax._src.runtime.communicators import (
    PARALLEL_REDUCE_ELEMENTS,
    CollectiveError,
    CollectiveMismatchError,
    CollectiveTimeoutError,
    ThreadCommunicator,
)

pytestmark = pytest.mark.skipif(native_collectives.library() is None, reason="no C compiler")

FOLD = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def _on_threads(n, fn):
    """fn(rank) on n threads; returns (results, errors) per rank."""
    results, errors = [None] * n, [None] * n

    def run(r):
        try:
            results[r] = fn(r)
        except BaseException as e:  # noqa: BLE001
            errors[r] = e

    threads = [threading.Thread(target=run, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a participant hangs"
    return results, errors


def _values(rng, shape, dtype):
    """Normal values with NaN, +-inf and signed zeros sprinkled in (one NaN payload and one sign
    of infinity per array, so no sum makes a second NaN whose payload depends on operand order)."""
    x = rng.normal(size=shape).astype(dtype)
    flat = x.reshape(-1)
    if flat.size:
        picks = rng.integers(0, flat.size, size=max(1, flat.size // 50))
        flat[picks[0::4]] = np.nan
        flat[picks[1::4]] = np.inf
        flat[picks[2::4]] = 0.0
        flat[picks[3::4]] = -0.0
    return x


def _serial(xs, op):
    """One rank reducing everything with NumPy, in rank order."""
    total = xs[0]
    for x in xs[1:]:
        total = FOLD[op](total, x)
    return total


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


SHAPES = [
    [(PARALLEL_REDUCE_ELEMENTS,)],
    [(PARALLEL_REDUCE_ELEMENTS + 7,)],
    [(257, 301), (3,), (), (0,), (1001,)],  # odd sizes, a scalar and an empty operand
]


@pytest.mark.parametrize("shapes", SHAPES, ids=["threshold", "threshold+7", "odd"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_native_path_gives_numpys_bits(monkeypatch, n, op, dtype, shapes):
    rng = np.random.default_rng(n * 7 + len(shapes))
    xs = [[_values(rng, s, dtype) for s in shapes] for _ in range(n)]
    want = [_serial([xs[r][j] for r in range(n)], op) for j in range(len(shapes))]

    def reduce_all(comm):
        def prog(r):
            many = comm.all_reduce_many(r, xs[r], op)
            single = comm.all_reduce(r, xs[r][0], op)
            return many, single

        outs, errors = _on_threads(n, prog)
        assert errors == [None] * n
        return outs

    before = native_collectives.stats["native_all_reduces"]
    native = reduce_all(ThreadCommunicator(n, timeout=30))
    calls = native_collectives.stats["native_all_reduces"] - before
    # Both calls are large enough for the shared reduce, except a lone operand below it.
    assert calls == 1 + (xs[0][0].size >= PARALLEL_REDUCE_ELEMENTS)
    monkeypatch.setitem(native_collectives._state, "lib", None)
    by_numpy = reduce_all(ThreadCommunicator(n, timeout=30))
    assert native_collectives.stats["native_all_reduces"] - before == calls
    for r in range(n):
        for j in range(len(shapes)):
            _same_bits(native[r][0][j], want[j])
            _same_bits(by_numpy[r][0][j], want[j])
        _same_bits(native[r][1], want[0])
    # Every rank owns its results.
    native[0][0][0][...] = 0
    _same_bits(native[1][0][0], want[0])


def test_repeated_calls_and_subgroups_reuse_the_barrier():
    n, rounds = 4, 30
    comm = ThreadCommunicator(n, timeout=30)
    groups = [[0, 2], [1, 3]]
    size = PARALLEL_REDUCE_ELEMENTS + 3

    def data(r, k):
        return np.full(size, r + 10 * k, np.float32), np.arange(5, dtype=np.float64) * r

    def prog(r):
        sub, me = comm.group_of(r, groups)
        got = []
        for k in range(rounds):
            got.append(comm.all_reduce_many(r, data(r, k), "sum"))
            got.append(sub.all_reduce(me, data(r, k)[0], "max"))
        return got

    before = native_collectives.stats["native_all_reduces"]
    outs, errors = _on_threads(n, prog)
    assert errors == [None] * n
    assert native_collectives.stats["native_all_reduces"] - before == rounds * (1 + len(groups))
    for r in range(n):
        group = groups[0] if r in groups[0] else groups[1]
        for k in range(rounds):
            total, ramp = outs[r][2 * k]
            np.testing.assert_array_equal(total, np.full(size, sum(range(n)) + 10 * k * n, np.float32))
            np.testing.assert_array_equal(ramp, np.arange(5) * sum(range(n)))
            np.testing.assert_array_equal(outs[r][2 * k + 1], np.full(size, max(group) + 10 * k, np.float32))


def test_other_dtypes_take_the_numpy_path_and_odd_layouts_are_copied():
    n = 2
    mixed = [
        [
            np.arange(PARALLEL_REDUCE_ELEMENTS, dtype=np.int32) * (r + 1),
            np.full(9, r + 0.5, np.float16),
            np.arange(4, dtype=">f4") + r,  # not native byte order
        ]
        for r in range(n)
    ]
    floats = [
        [
            np.linspace(0, 1, 2 * PARALLEL_REDUCE_ELEMENTS, dtype=np.float32)[::2] + r,  # strided
            np.ones((3, 5), np.float64, order="F") * r,  # Fortran order
        ]
        for r in range(n)
    ]
    comm = ThreadCommunicator(n, timeout=30)
    before = native_collectives.stats["native_all_reduces"]
    outs, errors = _on_threads(
        n, lambda r: (comm.all_reduce_many(r, mixed[r], "sum"), comm.all_reduce_many(r, floats[r], "sum"))
    )
    assert errors == [None] * n
    assert native_collectives.stats["native_all_reduces"] - before == 1  # the float32/float64 call
    for got_mixed, got_floats in outs:
        for j, got in enumerate(got_mixed):
            _same_bits(got, np.add(mixed[0][j], mixed[1][j]))
        for j, got in enumerate(got_floats):
            np.testing.assert_array_equal(got, np.add(floats[0][j], floats[1][j]))
            assert got.dtype == floats[0][j].dtype and got.shape == floats[0][j].shape


def test_without_the_library_the_numpy_path_runs(monkeypatch):
    from morphax._src.compiler.backends.c import build

    monkeypatch.setattr(native_collectives, "_state", {})
    monkeypatch.setattr(build, "probe", lambda: (False, "no C compiler on the PATH (set CC)"))
    assert native_collectives.library() is None
    comm = ThreadCommunicator(2, timeout=30)
    xs = [np.full(PARALLEL_REDUCE_ELEMENTS, r + 1, np.float32) for r in range(2)]
    before = native_collectives.stats["native_all_reduces"]
    outs, errors = _on_threads(2, lambda r: comm.all_reduce(r, xs[r], "sum"))
    assert errors == [None, None]
    assert native_collectives.stats["native_all_reduces"] == before
    for out in outs:
        np.testing.assert_array_equal(out, np.full(PARALLEL_REDUCE_ELEMENTS, 3, np.float32))


def _wrap_native_call(monkeypatch, before_call):
    """Make every rank run `before_call(rank)` first; a rank for which it returns False never
    reaches the native meeting."""
    real = native_collectives.meet_and_reduce

    def wrapped(lib, call, size, rank, *args):
        if before_call(rank) is False:
            return native_collectives.DONE
        return real(lib, call, size, rank, *args)

    monkeypatch.setattr(native_collectives, "meet_and_reduce", wrapped)


def test_a_failed_participant_releases_the_native_meeting(monkeypatch):
    comm = ThreadCommunicator(3, timeout=60)

    def before_call(rank):
        if rank == 1:
            comm.abort(1, RuntimeError("out of memory on 1"))
            return False
        return True

    _wrap_native_call(monkeypatch, before_call)
    x = np.ones(PARALLEL_REDUCE_ELEMENTS, np.float32)
    _, errors = _on_threads(3, lambda r: comm.all_reduce(r, x, "sum"))
    for r in (0, 2):
        assert isinstance(errors[r], CollectiveError) and not isinstance(errors[r], CollectiveTimeoutError)
        assert "participant 1 failed" in str(errors[r]) and "out of memory on 1" in str(errors[r])
    # The communicator stays failed: the next collective raises at once.
    _, errors = _on_threads(3, lambda r: comm.all_reduce(r, x, "sum"))
    assert all(isinstance(e, CollectiveError) for e in errors)


def test_a_participant_missing_from_the_native_meeting_times_out(monkeypatch):
    comm = ThreadCommunicator(3, timeout=0.5)
    _wrap_native_call(monkeypatch, lambda rank: time.sleep(1.5) if rank == 2 else None)
    x = np.ones(PARALLEL_REDUCE_ELEMENTS, np.float64)
    _, errors = _on_threads(3, lambda r: comm.all_reduce_many(r, [x, x[:5]], "max"))
    for r in (0, 1):
        assert isinstance(errors[r], CollectiveTimeoutError)
        assert "[2] did not arrive within 0.5 s" in str(errors[r]) and "native all-reduce" in str(errors[r])
    # The late rank finds the communicator failed instead of reducing with nobody.
    assert isinstance(errors[2], CollectiveTimeoutError)


def test_a_participant_that_never_calls_times_out():
    comm = ThreadCommunicator(3, timeout=0.5)
    x = np.ones(PARALLEL_REDUCE_ELEMENTS, np.float32)
    _, errors = _on_threads(3, lambda r: None if r == 2 else comm.all_reduce(r, x, "sum"))
    for r in (0, 1):
        assert isinstance(errors[r], CollectiveTimeoutError)
        assert "[2] did not arrive within 0.5 s" in str(errors[r])


def test_a_slow_rank_is_waited_for(monkeypatch):
    n = 3
    comm = ThreadCommunicator(n, timeout=30)
    _wrap_native_call(monkeypatch, lambda rank: time.sleep(0.3) if rank == 2 else None)
    xs = [np.arange(3 * PARALLEL_REDUCE_ELEMENTS, dtype=np.float32) * (r + 1) for r in range(n)]
    outs, errors = _on_threads(n, lambda r: comm.all_reduce(r, xs[r], "sum"))
    assert errors == [None] * n
    for out in outs:
        _same_bits(out, _serial(xs, "sum"))


def test_mismatches_still_name_both_sides():
    size = PARALLEL_REDUCE_ELEMENTS
    x = np.zeros(size, np.float32)
    cases = {
        # both native, different shapes
        "sizes": lambda comm, r: comm.all_reduce(r, np.zeros(size + r, np.float32), "sum"),
        # native against the one-combiner path below the threshold
        "paths": lambda comm, r: comm.all_reduce(r, np.zeros(size - r, np.float32), "sum"),
        # native against another collective, either one arriving first
        "gather": lambda comm, r: comm.all_reduce(r, x, "sum") if r == 0 else comm.all_gather(r, x),
        "gather late": lambda comm, r: comm.all_gather(r, x) if r == 0 else comm.all_reduce(r, x, "sum"),
        # native against NumPy's shared path (another dtype)
        "dtypes": lambda comm, r: comm.all_reduce(r, np.zeros(size, [np.float32, np.int32][r]), "sum"),
    }
    for name, prog in cases.items():
        comm = ThreadCommunicator(2, timeout=30)
        _, errors = _on_threads(2, lambda r, prog=prog, comm=comm: prog(comm, r))
        for e in errors:
            assert isinstance(e, CollectiveMismatchError), (name, e)
            assert "rank 1 called" in str(e), (name, e)
        # A mismatch fails that call only: the next one meets as usual.
        outs, errors = _on_threads(2, lambda r, comm=comm: comm.all_reduce(r, np.full(size, r + 1.0), "sum"))
        assert errors == [None, None], (name, errors)
        for out in outs:
            np.testing.assert_array_equal(out, np.full(size, 3.0))
    comm = ThreadCommunicator(2, timeout=30)
    _, errors = _on_threads(2, lambda r: cases["sizes"](comm, r))
    for e in errors:
        assert f"float32[{size}]" in str(e) and f"float32[{size + 1}]" in str(e)


def test_the_native_wait_returns_its_codes():
    lib = native_collectives.library()
    words = native_collectives.Words(2)
    flag = native_collectives.new_abort_flag()
    completed = native_collectives.COMPLETED
    assert lib.mx_wait_completed(words.words, 1, flag, 0.05) == native_collectives.TIMED_OUT
    words.words[completed] = 1
    assert lib.mx_wait_completed(words.words, 1, flag, 0.05) == native_collectives.DONE
    flag.value = 1
    assert lib.mx_wait_completed(words.words, 2, flag, 30.0) == native_collectives.ABORTED


def test_array_addresses_match_numpys(monkeypatch):
    arrays = [np.arange(10.0)[3:], np.zeros((3, 4), np.float32).T.copy(), np.zeros((), np.float64)]
    table = native_collectives.Call("sum", arrays[:1], arrays[1:2]).table
    assert list(table) == [arrays[0].ctypes.data, arrays[1].ctypes.data]
    assert [native_collectives._address(x) for x in arrays] == [x.ctypes.data for x in arrays]
    # A header that does not hold the data address where expected: NumPy's own answer is used.
    monkeypatch.setattr(native_collectives, "_HEADER", native_collectives._HEADER + 8)
    address = native_collectives._address_checked()
    assert address is not native_collectives._address_by_header
    assert [address(x) for x in arrays] == [x.ctypes.data for x in arrays]


@pytest.mark.parametrize("devices", [2, 3])
def test_pmap_reductions_take_the_native_path(run_cases, devices):
    run_cases("native_collective_cases", ["case_pmap_reductions_take_the_native_path"], devices=devices)
