"""The thread Communicator driven from threads: every operation against NumPy, subgroups, and its
failures (a participant that fails or never arrives, participants that disagree) raising
instead of hanging."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from morphax._src.runtime.communicators import (
    CollectiveError,
    CollectiveMismatchError,
    CollectiveTimeoutError,
    ThreadCommunicator,
)


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


N = 4
X = [np.random.RandomState(r).randn(4, 6).astype(np.float32) for r in range(N)]


def test_operations_against_numpy():
    comm = ThreadCommunicator(N, timeout=30)

    def prog(r):
        x = X[r]
        return dict(
            sum=comm.all_reduce(r, x, "sum"),
            max=comm.all_reduce(r, x, "max"),
            min=comm.all_reduce(r, x, "min"),
            gather=comm.all_gather(r, x),
            a2a=comm.all_to_all(r, x, 0, 1),
            perm=comm.ppermute(r, x, [(0, 1), (1, 2), (3, 0)]),
            barrier=comm.barrier(r),
            ints=comm.all_reduce(r, np.int32(r), "sum"),
        )

    results, errors = _on_threads(N, prog)
    assert errors == [None] * N
    total = X[0] + X[1] + X[2] + X[3]
    for r, out in enumerate(results):
        np.testing.assert_allclose(out["sum"], total, rtol=1e-6)
        np.testing.assert_array_equal(out["max"], np.max(X, axis=0))
        np.testing.assert_array_equal(out["min"], np.min(X, axis=0))
        np.testing.assert_array_equal(out["gather"], np.stack(X))
        assert out["sum"].dtype == np.float32 and out["ints"] == 6 and out["ints"].dtype == np.int32
        # Block r of every sender's split axis, concatenated by sender.
        want = np.concatenate([np.split(X[s], N, axis=0)[r] for s in range(N)], axis=1)
        np.testing.assert_array_equal(out["a2a"], want)
        src = {1: 0, 2: 1, 0: 3}.get(r)
        np.testing.assert_array_equal(out["perm"], X[src] if src is not None else np.zeros_like(X[r]))
    # Each rank owns its results: writing one does not change another's.
    results[0]["sum"][...] = 0
    np.testing.assert_allclose(results[1]["sum"], total, rtol=1e-6)


def test_subgroups():
    comm = ThreadCommunicator(N, timeout=30)
    groups = [[0, 2], [1, 3]]

    def prog(r):
        subs = comm.subgroups(groups)
        assert subs is comm.subgroups(groups)  # every participant gets the same objects
        g = 0 if r in groups[0] else 1
        sub = subs[g]
        return sub.size, sub.all_reduce(groups[g].index(r), np.float32(r), "sum")

    results, errors = _on_threads(N, prog)
    assert errors == [None] * N
    assert [int(s) for _, s in results] == [2, 4, 2, 4]
    with pytest.raises(ValueError, match="disjoint"):
        comm.subgroups([[0, 1], [1, 2]])


def test_a_failed_participant_makes_the_others_raise():
    comm = ThreadCommunicator(3, timeout=60)

    def prog(r):
        if r == 1:
            comm.abort(1, RuntimeError("out of memory on 1"))
            return None
        return comm.all_reduce(r, np.ones(2), "sum")

    _, errors = _on_threads(3, prog)
    for r in (0, 2):
        assert isinstance(errors[r], CollectiveError)
        assert "participant 1 failed" in str(errors[r]) and "out of memory on 1" in str(errors[r])


def test_a_missing_participant_times_out():
    comm = ThreadCommunicator(3, timeout=0.5)

    def prog(r):
        if r == 2:
            return None  # never arrives
        return comm.all_gather(r, np.ones(2))

    _, errors = _on_threads(3, prog)
    assert isinstance(errors[0], CollectiveTimeoutError) or isinstance(errors[1], CollectiveTimeoutError)
    for r in (0, 1):
        assert isinstance(errors[r], CollectiveError)
        assert "[2] did not arrive within 0.5 s" in str(errors[r])


def test_mismatched_shapes_and_operations_name_both():
    comm = ThreadCommunicator(2, timeout=30)

    def prog(r):
        return comm.all_reduce(r, np.zeros(3 + r, np.float32), "sum")

    _, errors = _on_threads(2, prog)
    for e in errors:
        assert isinstance(e, CollectiveMismatchError)
        assert "float32[3]" in str(e) and "float32[4]" in str(e) and "rank 1" in str(e)
    comm = ThreadCommunicator(2, timeout=30)

    def prog2(r):
        x = np.zeros(2, np.float32)
        return comm.all_reduce(r, x, "sum") if r == 0 else comm.all_gather(r, x)

    _, errors = _on_threads(2, prog2)
    assert all(isinstance(e, CollectiveMismatchError) and "all_gather" in str(e) for e in errors)


def test_bad_arguments():
    comm = ThreadCommunicator(2)
    with pytest.raises(ValueError, match="op must be one of"):
        comm.all_reduce(0, np.ones(1), "prod")
    with pytest.raises(ValueError, match="rank 5 is outside"):
        comm.barrier(5)
    with pytest.raises(ValueError, match="size must be at least 1"):
        ThreadCommunicator(0)


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_large_all_reduces_split_the_work_and_give_the_serial_bits(op):
    # Above PARALLEL_REDUCE_ELEMENTS every rank reduces its share; the result must be bit-equal
    # to one rank reducing everything in rank order (and the same object contents on all ranks).
    from morphax._src.runtime.communicators import PARALLEL_REDUCE_ELEMENTS

    n = 3
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=PARALLEL_REDUCE_ELEMENTS + 7).astype(np.float32) for _ in range(n)]
    ys = [rng.normal(size=(5, 4)).astype(np.float32) for _ in range(n)]
    fn = {"sum": np.add, "max": np.maximum, "min": np.minimum}[op]
    want_x, want_y = xs[0], ys[0]
    for r in range(1, n):
        want_x, want_y = fn(want_x, xs[r]), fn(want_y, ys[r])
    comm = ThreadCommunicator(n, timeout=30)
    outs, errors = _on_threads(
        n, lambda r: (comm.all_reduce(r, xs[r], op), comm.all_reduce_many(r, [xs[r], ys[r]], op))
    )
    assert errors == [None] * n
    for single, (many_x, many_y) in outs:
        np.testing.assert_array_equal(single, want_x)
        np.testing.assert_array_equal(many_x, want_x)
        np.testing.assert_array_equal(many_y, want_y)
