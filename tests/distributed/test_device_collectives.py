"""ProcessDevicesCommunicator (the two-level communicator of pmaps across processes) without MPI:
the "processes" are threads meeting in a ThreadCommunicator that stands in for the
MPICommunicator (same methods and semantics), each with two device threads. Every collective must
give each device what a one-level ThreadCommunicator over all four devices gives, for contiguous
and interleaved device layouts, including partial ppermutes and all_to_all; disagreeing devices in
different processes raise; a failing device stops every device of every process."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from morphax._src.distributed.device_collectives import ProcessDevicesCommunicator
from morphax._src.runtime.communicators import (
    CollectiveError,
    CollectiveMismatchError,
    ThreadCommunicator,
    _describe,
)


class FakeProcesses:
    """One process's view of an MPICommunicator, over a ThreadCommunicator of the processes."""

    def __init__(self, comm, rank):
        self._comm, self.rank, self.size = comm, rank, comm.size

    def all_gather(self, rank, x):
        return self._comm.all_gather(rank, x)

    def all_to_all(self, rank, x, split_axis, concat_axis):
        return self._comm.all_to_all(rank, x, split_axis, concat_axis)

    def reduce_in_order(self, rank, contributions, order, op):
        # The specification, not MPICommunicator's reduce-scatter (tested under mpirun): fold
        # every process's contributions in `order`.
        fn = ThreadCommunicator._reducer(op)
        described = (op, [[_describe(x) for x in xs] for xs in contributions], list(order))

        def combine(values):
            totals = []
            for j in range(len(values[0][0])):
                parts = [values[p][i][j] for p, i in order]
                total = parts[0]
                for v in parts[1:]:
                    total = fn(total, v)
                totals.append(np.array(total))
            return [[t.copy() for t in totals] for _ in range(self.size)]

        return self._comm.rendezvous(rank, "reduce_in_order", described, contributions, combine)

    def exchange_bundles(self, rank, sends, receives, like, key):
        def combine(values):
            return [{p: values[p][q] for p in range(self.size) if q in values[p]} for q in range(self.size)]

        got = self._comm.rendezvous(rank, "exchange_bundles", (str(key), like.dtype.name), sends, combine)
        assert {p: v.shape for p, v in got.items()} == {p: tuple(s) for p, s in receives.items()}
        return got

    def barrier(self, rank):
        self._comm.barrier(rank)

    def abort(self, rank, error):
        self._comm.abort(rank, error)


def _run(layout, body):
    """body(comm, rank) on every device: through two-level communicators (one per process, device
    r in process layout[r]) and through one ThreadCommunicator; returns both result lists."""
    n = len(layout)
    processes = ThreadCommunicator(max(layout) + 1, timeout=20)
    per_process = {
        p: ProcessDevicesCommunicator(FakeProcesses(processes, p), layout, timeout=20) for p in set(layout)
    }
    flat = ThreadCommunicator(n, timeout=20)
    out = {}

    def device(key, comm, r):
        try:
            out[key, r] = body(comm, r)
        except Exception as e:  # noqa: BLE001 - compared by the test
            out[key, r] = e
            comm.abort(r, e)

    threads = [threading.Thread(target=device, args=("two", per_process[layout[r]], r)) for r in range(n)]
    threads += [threading.Thread(target=device, args=("one", flat, r)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [out["two", r] for r in range(n)], [out["one", r] for r in range(n)]


def _value(r):
    return (np.arange(24, dtype=np.float32).reshape(4, 6) - 7.5) * (r + 1) / 3


@pytest.mark.parametrize("layout", [[0, 0, 1, 1], [0, 1, 0, 1]])
def test_two_levels_equal_one_level(layout):
    def body(comm, r):
        x = _value(r)
        return [
            comm.all_reduce(r, x, "sum"),
            comm.all_reduce(r, x, "max"),
            *comm.all_reduce_many(r, [x, x.astype(np.int32), x[0]], "sum"),
            comm.all_gather(r, x),
            comm.all_to_all(r, x, 0, 1),
            comm.ppermute(r, x, [(i, (i + 1) % 4) for i in range(4)]),
            comm.ppermute(r, x, [(0, 3), (2, 1), (3, 2)]),
        ]

    two, one = _run(layout, body)
    for r in range(4):
        assert len(two[r]) == len(one[r]) == 9
        for got, want in zip(two[r], one[r]):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_disagreeing_devices_in_different_processes_raise():
    def body(comm, r):
        return comm.all_reduce_many(r, [np.zeros(3 + (r >= 2), np.float32), np.zeros(2, np.float32)], "sum")

    two, _ = _run([0, 0, 1, 1], body)
    assert all(isinstance(e, CollectiveMismatchError) for e in two), two
    # Each process names its own operands (the other's reach it only as bytes).
    assert all("float32[3]" in str(e) or "float32[4]" in str(e) for e in two), two


def test_a_failing_device_stops_every_process():
    def body(comm, r):
        if r == 3:
            raise RuntimeError("device 3 failed")
        return comm.all_reduce(r, np.ones(2, np.float32), "sum")

    two, _ = _run([0, 0, 1, 1], body)
    assert isinstance(two[3], RuntimeError)
    for r in range(3):
        assert isinstance(two[r], CollectiveError), two[r]
        assert "device 3 failed" in str(two[r])
