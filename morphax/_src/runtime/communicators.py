"""Communicators: how the participants of a collective (the devices of a pmap or shard_map, or
the processes of a distributed run) exchange values.

`Communicator` is the interface every implementation follows: ranks are 0..size-1, every
participant calls the same methods in the same order, each call blocks until every participant
has made it, and values are NumPy arrays. `ThreadCommunicator` is the in-process implementation
whose participants are device streams (threads): one rendezvous per collective call. Instead of
hanging it fails loudly: a participant that fails (`abort`) makes the others raise at once, a
participant that never arrives makes the others raise after `timeout` seconds (default: the
`morphax_collective_timeout` config flag, 60 s unless MORPHAX_COLLECTIVE_TIMEOUT says), and participants that disagree on a call's shapes, dtypes or operation all
raise an error naming both sides.

Large float32/float64 all-reduces meet, reduce and wait in native code with the GIL released
(native_collectives.py): each rank only records the call in Python, where the last to record
checks the signatures; the native waits poll the same failure (as a flag) and deadline.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from morphax._src.config import config
from morphax._src.runtime import native_collectives

__all__ = [
    "CollectiveError",
    "CollectiveMismatchError",
    "CollectiveTimeoutError",
    "Communicator",
    "ThreadCommunicator",
]


class CollectiveError(RuntimeError):
    """A collective could not complete: another participant failed."""


class CollectiveTimeoutError(CollectiveError):
    """A participant did not reach a collective within the communicator's timeout."""


class CollectiveMismatchError(ValueError):
    """Participants called one collective with different shapes, dtypes or operations."""


_REDUCERS = {"sum": np.add, "max": np.maximum, "min": np.minimum}
# All-reduces of at least this many elements are reduced by every rank at once, each its share:
# a second meeting costs tens of microseconds, the adds it parallelizes more above this size.
PARALLEL_REDUCE_ELEMENTS = 1 << 16


class Communicator:
    """The collective operations between `size` participants (ranks 0..size-1). Each method
    takes the caller's rank and its NumPy value and returns the caller's result."""

    size: int

    def all_reduce(self, rank: int, x, op: str):
        """`op` ("sum", "max" or "min") of every rank's `x`; every rank receives the result."""
        raise NotImplementedError

    @staticmethod
    def _reducer(op: str):
        """The NumPy function of an all_reduce `op`, applied pairwise in rank order."""
        fn = _REDUCERS.get(op)
        if fn is None:
            raise ValueError(f"all_reduce: op must be one of {sorted(_REDUCERS)}, got {op!r}")
        return fn

    def all_reduce_many(self, rank: int, xs, op: str) -> list:
        """`all_reduce` of each of `xs` (one psum of several operands); implementations make it
        one exchange."""
        return [self.all_reduce(rank, x, op) for x in xs]

    def all_gather(self, rank: int, x):
        """Every rank's `x` stacked along a new leading axis: shape (size, *x.shape)."""
        raise NotImplementedError

    def _checked_split(self, x, split_axis):
        """`x` as an array whose axis `split_axis` divides into one block per rank (all_to_all)."""
        x = np.asarray(x)
        if x.shape[split_axis] % self.size:
            raise ValueError(
                f"all_to_all: the split axis {split_axis} of {_describe(x)} is not divisible by the "
                f"communicator size {self.size}"
            )
        return x

    def all_to_all(self, rank: int, x, split_axis: int, concat_axis: int):
        """Rank i splits `x` along `split_axis` into `size` blocks and sends block j to rank j;
        each rank concatenates the blocks it receives, ordered by sender, along `concat_axis`."""
        raise NotImplementedError

    def ppermute(self, rank: int, x, perm):
        """For each (source, destination) in `perm`, destination receives source's `x`; ranks
        that are no pair's destination receive zeros."""
        raise NotImplementedError

    def barrier(self, rank: int) -> None:
        raise NotImplementedError

    def subgroups(self, groups) -> list:
        """One communicator per group of ranks (`groups`: disjoint lists of ranks), in which
        a member's rank is its position in its group. Every participant gets the same objects."""
        raise NotImplementedError


def check_groups(groups, size: int) -> None:
    """Raise unless `groups` (lists of ranks) are disjoint and within [0, size)."""
    seen = [r for g in groups for r in g]
    if len(set(seen)) != len(seen) or any(not 0 <= r < size for r in seen):
        raise ValueError(
            f"subgroups: groups {[list(g) for g in groups]} must be disjoint lists of ranks in [0, {size})"
        )


def _describe(x) -> str:
    return f"{np.dtype(x.dtype).name}{list(x.shape)}"


def _native_operand(x):
    """`x` as the native all-reduce reads it: C-contiguous and aligned (a copy only if not)."""
    if x.flags.c_contiguous and x.flags.aligned:
        return x
    return np.require(x, requirements=["C", "A"])


class _Round:
    """One collective call: what each rank brought, and what each takes away."""

    __slots__ = ("entries", "results", "error", "taken")

    def __init__(self, size):
        self.entries = [None] * size
        self.results = None
        self.error = None
        self.taken = 0


class _Shared:
    """State shared by a communicator and its subgroups: one condition to wake every waiter and
    the first failure (a failed participant dooms every group it belongs to), mirrored in a flag
    that the native waits poll."""

    def __init__(self):
        self.cond = threading.Condition()
        self.failure = None  # (rank in the root communicator, exception)
        self.native_abort = native_collectives.new_abort_flag()

    def fail(self, root_rank, error) -> None:
        """Record the first failure (call with `cond` held) and wake every waiter."""
        if self.failure is None:
            self.failure = (root_rank, error)
        self.native_abort.value = 1
        self.cond.notify_all()


class ThreadCommunicator(Communicator):
    """Participants are threads of this process (device streams): each collective is a
    rendezvous, combined by the last participant to arrive."""

    def __init__(self, size: int, timeout: float | None = None, *, _shared=None, _root_ranks=None):
        if size < 1:
            raise ValueError(f"ThreadCommunicator: size must be at least 1, got {size}")
        self.size = int(size)
        self.timeout = float(config.morphax_collective_timeout if timeout is None else timeout)
        self._shared = _shared or _Shared()
        # This communicator's ranks as ranks of the root communicator (for messages).
        self._root_ranks = list(range(size)) if _root_ranks is None else list(_root_ranks)
        self._calls = [0] * self.size
        self._rounds: dict[int, _Round] = {}
        self._subgroups: dict = {}
        # The native all-reduce: the words shared with the library, the chunks of all calls
        # so far as each rank counts them, and the calls of ranks that failed while others
        # may still use their arrays.
        self._words = native_collectives.Words(self.size)
        self._native_chunks = [0] * self.size
        self._kept_after_failure: list = []

    def __repr__(self):
        return f"ThreadCommunicator(size={self.size}, timeout={self.timeout})"

    # -------------------------------------------------------------------------------- failure

    def abort(self, rank: int, error: BaseException) -> None:
        """Record that participant `rank` failed: every participant waiting now, or arriving
        later, at any collective of this communicator or its subgroups raises."""
        with self._shared.cond:
            self._shared.fail(self._root_ranks[rank], error)

    def _raise_failure(self, rank, what):
        failed, error = self._shared.failure
        if isinstance(error, (CollectiveError, CollectiveMismatchError)):
            raise type(error)(str(error))
        raise CollectiveError(
            f"{what}: participant {failed} failed ({type(error).__name__}: {error}), so rank "
            f"{self._root_ranks[rank]} cannot complete the collective."
        ) from error

    # ----------------------------------------------------------------------------- rendezvous

    def _deposit(self, rank, what, signature, x):
        """Under the shared condition's lock: raise a recorded failure, else enter (`what`,
        `signature`, `x`) as this rank's next call in its round. Returns (call number, round)."""
        if self._shared.failure is not None:
            self._raise_failure(rank, what)
        k = self._calls[rank]
        self._calls[rank] = k + 1
        rnd = self._rounds.get(k)
        if rnd is None:
            rnd = self._rounds[k] = _Round(self.size)
        rnd.entries[rank] = (what, signature, x)
        return k, rnd

    def _exchange(self, rank: int, what: str, signature, x, combine):
        """Deposit (`signature`, `x`) for this rank's next call; the last rank to arrive checks
        that all signatures agree and runs `combine(values) -> per-rank results`."""
        if not 0 <= rank < self.size:
            raise ValueError(f"{what}: rank {rank} is outside the communicator of size {self.size}")
        shared = self._shared
        deadline = time.monotonic() + self.timeout
        with shared.cond:
            k, rnd = self._deposit(rank, what, signature, x)
            last = all(e is not None for e in rnd.entries)
        if last:
            error, results = None, None
            try:
                error = self._mismatch(rnd.entries)
                if error is None:
                    results = combine([e[2] for e in rnd.entries])
            except Exception as e:  # noqa: BLE001 - every participant sees it
                error = e
            with shared.cond:
                rnd.error, rnd.results = error, results
                if isinstance(error, CollectiveMismatchError):  # ranks meeting natively stop too
                    self._words.mark_mismatch(k + 1)
                shared.cond.notify_all()
        with shared.cond:
            while rnd.results is None and rnd.error is None:
                if shared.failure is not None:
                    self._raise_failure(rank, what)
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = [r for r, e in enumerate(rnd.entries) if e is None]
                    raise self._timed_out(rank, what, missing, f"collective call #{k}")
                shared.cond.wait(left)
            rnd.taken += 1
            if rnd.taken == self.size:
                del self._rounds[k]
            if rnd.error is not None:
                err = rnd.error
                raise type(err)(*err.args) if isinstance(err, CollectiveMismatchError) else err
            return rnd.results[rank]

    def _timed_out(self, rank, what, missing, where) -> CollectiveTimeoutError:
        """The error of `rank`, which waited `timeout` at `where` for the ranks `missing`,
        recorded as the communicator's failure (call with `cond` held)."""
        missing = [self._root_ranks[r] for r in missing]
        err = CollectiveTimeoutError(
            f"{what}: participant(s) {missing} did not arrive within {self.timeout:g} s "
            f"(rank {self._root_ranks[rank]} waited at {where}); a participant "
            "died, hangs, or skipped this collective. Raise the limit with "
            "morphax.config.update('morphax_collective_timeout', seconds) (or "
            "MORPHAX_COLLECTIVE_TIMEOUT) if the work before it is that long."
        )
        self._shared.fail(self._root_ranks[rank], err)
        return err

    def rendezvous(self, rank: int, what: str, signature, x, combine):
        """A collective of one's own: every rank deposits (`signature`, `x`); the last to arrive
        checks that the signatures agree and calls ``combine(values in rank order)``, which
        returns each rank's result (or raises, and every rank raises it). With the same failure
        and timeout handling as the built-in collectives; the two-level communicator of
        multi-process pmaps makes its one call per process from `combine`."""
        return self._exchange(rank, what, signature, x, combine)

    def _mismatch(self, entries):
        what0, sig0, _ = entries[0]
        for r, (what, sig, _) in enumerate(entries[1:], 1):
            if what != what0 or sig != sig0:
                return CollectiveMismatchError(
                    f"collective mismatch between participants: rank {self._root_ranks[0]} called "
                    f"{what0} with {sig0}, but rank {self._root_ranks[r]} called {what} with {sig}. "
                    "Every participant must call the same collectives, in the same order, on values "
                    "of the same shape and dtype."
                )
        return None

    # ----------------------------------------------------------------------------- operations

    def _reduce_in_parallel(self, rank, what, signature, xs, op) -> list:
        """all_reduce of the arrays `xs` where the ranks share the reducing and write every
        element into every rank's result. Elementwise, in rank order: the same bits as one rank
        reducing all. float32/float64 calls go to the native library (`_reduce_natively`);
        others, and all of them without it, meet once to see everyone's values, reduce one share
        per rank with NumPy, and meet again to wait for every share."""
        lib = native_collectives.library()
        if (
            lib is not None
            and self.size <= native_collectives.MAX_RANKS
            and native_collectives.native_dtypes(xs)
        ):
            return self._reduce_natively(lib, rank, what, signature, xs, op)
        fn = self._reducer(op)
        outs = [np.empty(x.shape, x.dtype) for x in xs]
        entries = self._exchange(rank, what, signature, (xs, outs), lambda entries: [entries] * self.size)
        for j, x in enumerate(xs):
            lo, hi = x.size * rank // self.size, x.size * (rank + 1) // self.size
            total = entries[0][0][j].reshape(-1)[lo:hi]
            for e in entries[1:]:
                total = fn(total, e[0][j].reshape(-1)[lo:hi])
            for e in entries:  # every rank's own result array, so nobody copies afterwards
                e[1][j].reshape(-1)[lo:hi] = total
        self._exchange(rank, f"{what}, shares reduced", signature, None, lambda _: [None] * self.size)
        return outs

    def _reduce_natively(self, lib, rank, what, signature, xs, op) -> list:
        """The native all-reduce: record the call in Python (the last rank to record checks the
        signatures, nobody waits there), then meet, reduce chunks and wait in C with the GIL
        released; any failure is raised as the Python meetings raise it."""
        xs = [_native_operand(x) for x in xs]
        outs = [np.empty(x.shape, x.dtype) for x in xs]
        call = native_collectives.Call(op, xs, outs)
        k = self._record(rank, what, signature)
        first_chunk = self._native_chunks[rank]
        code = native_collectives.meet_and_reduce(
            lib,
            call,
            self.size,
            rank,
            self._words,
            k + 1,
            first_chunk,
            self._shared.native_abort,
            self.timeout,
        )
        if code == native_collectives.DONE:
            self._native_chunks[rank] = first_chunk + call.n_chunks
            if rank == 0:
                native_collectives.stats["native_all_reduces"] += 1
            return outs
        with self._shared.cond:
            if code == native_collectives.MISMATCH:  # nobody touched an array
                rnd = self._rounds[k]
                rnd.taken += 1
                if rnd.taken == self.size:
                    del self._rounds[k]
                raise type(rnd.error)(*rnd.error.args)
            # Ranks still reducing may read this rank's operands and write its results.
            self._kept_after_failure.append(call)
            if code == native_collectives.TIMED_OUT and self._shared.failure is None:
                missing = [r for r in range(self.size) if self._words.published(r) <= k]
                raise self._timed_out(rank, what, missing, f"native all-reduce, collective call #{k}")
            self._raise_failure(rank, what)

    def _record(self, rank, what, signature) -> int:
        """Record this rank's next call in its round without waiting; the last rank to record
        checks that everyone's signature agrees, and marks a mismatch for the native meeting
        and the ranks waiting in Python. Returns the call's number."""
        if not 0 <= rank < self.size:
            raise ValueError(f"{what}: rank {rank} is outside the communicator of size {self.size}")
        shared = self._shared
        with shared.cond:
            k, rnd = self._deposit(rank, what, signature, None)
            if all(e is not None for e in rnd.entries):
                error = self._mismatch(rnd.entries)
                if error is None:  # everyone meets natively: nobody looks at the round again
                    del self._rounds[k]
                else:
                    rnd.error = error
                    self._words.mark_mismatch(k + 1)
                    shared.cond.notify_all()
        return k

    def all_reduce(self, rank, x, op):
        fn = self._reducer(op)
        x = np.asarray(x)
        if x.size >= PARALLEL_REDUCE_ELEMENTS and self.size > 1:
            return self._reduce_in_parallel(rank, f"all_reduce({op})", _describe(x), [x], op)[0]

        def combine(values):
            total = values[0]
            for v in values[1:]:  # in rank order, so every run rounds the same way
                total = fn(total, v)
            total = np.asarray(total, dtype=x.dtype)
            return [total] * self.size

        # Rank 0 keeps the combined array; the others copy it on their own threads, in parallel
        # (not serially on the last to arrive, while everyone waits).
        out = self._exchange(rank, f"all_reduce({op})", _describe(x), x, combine)
        return out if rank == 0 else out.copy()

    def all_reduce_many(self, rank, xs, op):
        fn = self._reducer(op)
        xs = [np.asarray(x) for x in xs]
        sig = tuple(_describe(x) for x in xs)
        if sum(x.size for x in xs) >= PARALLEL_REDUCE_ELEMENTS and self.size > 1:
            return self._reduce_in_parallel(rank, f"all_reduce({op})", sig, xs, op)

        def combine(values):
            totals = []
            for j, x in enumerate(xs):
                total = values[0][j]
                for v in values[1:]:  # in rank order, as all_reduce
                    total = fn(total, v[j])
                totals.append(np.asarray(total, dtype=x.dtype))
            return [totals] * self.size

        out = self._exchange(rank, f"all_reduce({op})", sig, xs, combine)
        return out if rank == 0 else [t.copy() for t in out]

    def all_gather(self, rank, x):
        x = np.asarray(x)

        def combine(values):
            return [np.stack(values)] * self.size

        out = self._exchange(rank, "all_gather", _describe(x), x, combine)
        return out if rank == 0 else out.copy()

    def all_to_all(self, rank, x, split_axis, concat_axis):
        x = self._checked_split(x, split_axis)
        n = self.size

        def combine(values):
            blocks = [np.split(v, n, axis=split_axis) for v in values]
            return [np.concatenate([blocks[i][j] for i in range(n)], axis=concat_axis) for j in range(n)]

        sig = (_describe(x), int(split_axis), int(concat_axis))
        return self._exchange(rank, "all_to_all", sig, x, combine)

    def ppermute(self, rank, x, perm):
        x = np.asarray(x)
        perm = tuple((int(s), int(d)) for s, d in perm)

        def combine(values):
            out = [None] * self.size
            for s, d in perm:
                out[d] = values[s].copy()
            return [np.zeros_like(values[0]) if o is None else o for o in out]

        return self._exchange(rank, "ppermute", (_describe(x), perm), x, combine)

    def barrier(self, rank):
        self._exchange(rank, "barrier", None, None, lambda values: [None] * self.size)

    def subgroups(self, groups) -> list:
        key = tuple(tuple(int(r) for r in g) for g in groups)
        with self._shared.cond:
            hit = self._subgroups.get(key)
            if hit is not None:
                return hit
            check_groups(key, self.size)
            subs = [
                ThreadCommunicator(
                    len(g), self.timeout, _shared=self._shared, _root_ranks=[self._root_ranks[r] for r in g]
                )
                for g in key
            ]
            self._subgroups[key] = subs
            return subs

    def group_of(self, rank: int, groups):
        """(communicator, rank in it) of `rank`'s group among `subgroups(groups)`."""
        subs = self.subgroups(groups)
        for g, sub in zip(groups, subs):
            g = [int(r) for r in g]
            if rank in g:
                return sub, g.index(rank)
        raise ValueError(f"rank {rank} is in none of the groups {[list(g) for g in groups]}")
