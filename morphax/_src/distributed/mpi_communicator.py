"""`MPICommunicator`: the Communicator interface (all_reduce, all_gather, all_to_all, ppermute,
barrier, subgroups) between processes, over an mpi4py communicator, one rank per process.

MPI's collectives block forever when a peer never arrives, so every call here is made of
non-blocking MPI operations polled against a deadline (``morphax_collective_timeout`` seconds,
60 by default, or the communicator's own `timeout`): a peer that died or called something else
makes the others raise `CollectiveTimeoutError` naming the peers they wait for. Before moving any
data, the processes exchange a small header (the collective, its arguments, dtype and shape), so
processes that disagree raise `CollectiveMismatchError` (a ValueError) naming both sides instead
of exchanging garbage. The errors are those of runtime/communicators.py.

Beyond the interface, `reduce_in_order` is the all-reduce of pmaps across processes
(distributed/device_collectives.py): several operands and several devices per process in one
reduce-scatter and all-gather, folded in the devices' global order.

mpi4py is imported only when a communicator is made (morphax.distributed.initialize)."""

from __future__ import annotations

import json
import os
import threading
import time
import zlib

import numpy as np

from morphax._src.config import config
from morphax._src.runtime.communicators import (
    CollectiveError,
    CollectiveMismatchError,
    CollectiveTimeoutError,
    Communicator,
)

__all__ = ["CollectiveTimeoutError", "MPICommunicator", "mpi", "wait_for"]

# The header every process sends every other before a collective: JSON, padded to this size.
HEADER_BYTES = 4096
_HEADER_TAG, _DATA_TAG, _BYTES_TAG, _SHARE_TAG, _REDUCED_TAG = 17, 18, 19, 20, 21
# wait_for tests its requests without sleeping for this long after it starts and after each
# request that completes, then backs off to sleeps of up to a millisecond: a large message moves
# only while both sides call into MPI, so sleeping from the first test stalled every transfer.
SPIN_SECONDS = 0.005
# Operand descriptions longer than this travel in the header as a digest (it must fit HEADER_BYTES).
_OPERANDS_SHOWN = 1500
_REDUCTIONS = {"sum": np.sum, "max": np.max, "min": np.min}


def mpi():
    """The mpi4py.MPI module (MPI is initialized on first import), or a clear ImportError."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError(
            "morphax.distributed needs mpi4py and an MPI library; install them with "
            "`pip install 'morphax[distributed]'` (pip wheels of mpi4py and MPICH, no system MPI needed)."
        ) from e
    return MPI


def _as_bytes(x: np.ndarray) -> np.ndarray:
    """x's buffer as a flat uint8 array (any dtype, bfloat16 included: MPI moves bytes)."""
    return np.ascontiguousarray(x).reshape(-1).view(np.uint8)


def _encode(header: dict) -> np.ndarray:
    """`header` as JSON in a zero-padded buffer of HEADER_BYTES."""
    raw = json.dumps(header).encode()
    if len(raw) > HEADER_BYTES:
        raise ValueError(f"MPICommunicator: the description {raw[:200]!r}... is too long to exchange")
    sent = np.zeros(HEADER_BYTES, np.uint8)
    sent[: len(raw)] = np.frombuffer(raw, np.uint8)
    return sent


def _describe(header: dict) -> str:
    args = ", ".join(f"{k}={v}" for k, v in header.get("args", {}).items())
    if "shape" not in header:  # the operands are in the arguments
        return f"{header['collective']}({args})"
    shape = ",".join(str(d) for d in header["shape"])
    return f"{header['collective']}({args}) on {header['dtype']}[{shape}]"


class MPICommunicator(Communicator):
    """Collectives between the processes of an mpi4py intracommunicator `comm` (which this object
    owns and frees in `free`). Rank r of the interface is rank r of `comm`; a process acts only as
    its own rank (`self.rank`). `timeout`: seconds a call waits for the others (None: the
    ``morphax_collective_timeout`` config flag, read at each call)."""

    def __init__(self, comm, timeout: float | None = None):
        MPI = mpi()
        self._comm = comm
        self.size = comm.Get_size()
        self.rank = comm.Get_rank()
        self.timeout = timeout
        # Process indices (ranks of MPI_COMM_WORLD) of this communicator's ranks, for messages.
        self.processes = list(
            comm.Get_group().Translate_ranks(list(range(self.size)), MPI.COMM_WORLD.Get_group())
        )
        self._calls = 0
        self._failed: str | None = None
        self._aborts: list = []
        self._lock = threading.Lock()

    def __repr__(self):
        return f"MPICommunicator(size={self.size}, rank={self.rank}, processes={self.processes})"

    # -- the interface ---------------------------------------------------------------------------

    def all_reduce(self, rank, x, op="sum"):
        """Every rank gets the reduction (sum, max or min) of all ranks' `x`."""
        if op not in _REDUCTIONS:
            raise ValueError(
                f"MPICommunicator.all_reduce: op must be one of {sorted(_REDUCTIONS)}, got {op!r}"
            )
        x = np.asarray(x)
        # NB: the reduction is an all-gather followed by a NumPy reduction in rank order rather
        # than MPI_Allreduce: every rank gets bitwise the same result, NaNs propagate through max
        # and min as in JAX, and every dtype works (bfloat16, bool), for size-times the memory.
        gathered = self._collective(rank, "all_reduce", x, {"op": op}, self._gather_data)
        return np.asarray(_REDUCTIONS[op](gathered, axis=0), dtype=x.dtype)

    def all_gather(self, rank, x):
        """All ranks' `x` stacked along a new leading axis: shape (size, *x.shape)."""
        return self._collective(rank, "all_gather", np.asarray(x), {}, self._gather_data)

    def all_to_all(self, rank, x, split_axis, concat_axis):
        """Rank i splits `x` along `split_axis` into `size` blocks, sends block j to rank j, and
        concatenates the blocks it receives (ordered by sender) along `concat_axis`."""
        x = np.asarray(x)
        for what, axis in (("split_axis", split_axis), ("concat_axis", concat_axis)):
            if not (isinstance(axis, (int, np.integer)) and -x.ndim <= axis < x.ndim):
                raise ValueError(
                    f"MPICommunicator.all_to_all: {what}={axis!r} is not an axis of an array of shape {x.shape}"
                )
        split_axis, concat_axis = int(split_axis) % x.ndim, int(concat_axis) % x.ndim
        if x.shape[split_axis] % self.size:
            raise ValueError(
                f"MPICommunicator.all_to_all: the split axis {split_axis} of shape {x.shape} has size "
                f"{x.shape[split_axis]}, which the {self.size} ranks do not divide evenly"
            )

        def exchange(x, what):
            blocks = np.stack(np.split(x, self.size, axis=split_axis))
            received = np.empty_like(blocks)
            if blocks.size:
                send = _as_bytes(blocks)  # alive until the exchange completes
                self._wait([self._comm.Ialltoall(send, received.reshape(-1).view(np.uint8))], what)
            return np.concatenate(list(received), axis=concat_axis)

        args = {"split_axis": split_axis, "concat_axis": concat_axis}
        return self._collective(rank, "all_to_all", x, args, exchange)

    def ppermute(self, rank, x, perm):
        """Rank s sends `x` to rank d for each (s, d) in `perm`; a rank no one sends to gets zeros."""
        x = np.asarray(x)
        perm = [(int(s), int(d)) for s, d in perm]
        for s, d in perm:
            if not (0 <= s < self.size and 0 <= d < self.size):
                raise ValueError(
                    f"MPICommunicator.ppermute: pair {(s, d)} of perm names a rank outside 0..{self.size - 1}"
                )
        for side, name in ((0, "source"), (1, "destination")):
            seen = [p[side] for p in perm]
            if len(set(seen)) != len(seen):
                raise ValueError(
                    f"MPICommunicator.ppermute: perm {perm} repeats a {name}; each rank may appear once as each"
                )

        def exchange(x, what):
            out = np.zeros_like(x)
            sources = [s for s, d in perm if d == self.rank]
            requests, peers = [], []
            send = _as_bytes(x)  # alive until the sends complete
            for s, d in perm:
                if s == self.rank and d == self.rank:
                    out[...] = x
                elif s == self.rank and x.size:
                    requests.append(self._comm.Isend(send, dest=d, tag=_DATA_TAG))
                    peers.append(None)
            if sources and sources[0] != self.rank and x.size:
                requests.append(
                    self._comm.Irecv(out.reshape(-1).view(np.uint8), source=sources[0], tag=_DATA_TAG)
                )
                peers.append(sources[0])
            self._wait(requests, what, peers)
            return out

        digest = zlib.crc32(json.dumps(sorted(perm)).encode())
        return self._collective(rank, "ppermute", x, {"perm_crc32": digest}, exchange)

    def barrier(self, rank):
        """Return once every rank has called barrier (the header exchange is the barrier)."""
        self._collective(rank, "barrier", np.zeros((0,), np.uint8), {}, lambda x, what: None)

    def subgroups(self, groups):
        """One communicator per group of ranks (`groups`: lists of ranks, each rank in at most
        one): entry g is this process's communicator over groups[g], its ranks numbered by position
        in the group. Every rank must call it. NB: unlike ThreadCommunicator's, whose participants
        share one process, entries of groups this process is not in are None (it holds no part of
        them)."""
        groups = [[int(r) for r in g] for g in groups]
        flat = [r for g in groups for r in g]
        if (
            any(not g for g in groups)
            or len(set(flat)) != len(flat)
            or any(not 0 <= r < self.size for r in flat)
        ):
            raise ValueError(
                f"MPICommunicator.subgroups: groups {groups} must be non-empty lists of distinct ranks "
                f"in 0..{self.size - 1}, each rank in at most one group"
            )
        digest = zlib.crc32(json.dumps(groups).encode())
        self._collective(
            self.rank, "subgroups", np.zeros((0,), np.uint8), {"groups_crc32": digest}, lambda x, w: None
        )
        MPI = mpi()
        mine = next((g for g, members in enumerate(groups) if self.rank in members), None)
        color = MPI.UNDEFINED if mine is None else mine
        key = 0 if mine is None else groups[mine].index(self.rank)
        # Every rank has just agreed to split (the header exchange above), so the blocking
        # MPI_Comm_split cannot wait for a missing peer.
        sub = self._comm.Split(color, key)
        return [MPICommunicator(sub, self.timeout) if g == mine else None for g in range(len(groups))]

    def split_by(self, process_sets) -> list:
        """One new communicator per set of ranks (`process_sets`: lists of ranks, which may
        overlap, each with at least two): entry i is this process's communicator over
        process_sets[i] (its ranks numbered in the set's sorted order), or None where this process
        is not in the set. Every rank must call it with the same sets, from one thread (they are
        made by one blocking MPI_Comm_split each, after the ranks agree)."""
        sets = [sorted({int(r) for r in members}) for members in process_sets]
        if any(len(m) < 2 or not all(0 <= r < self.size for r in m) for m in sets):
            raise ValueError(
                f"MPICommunicator.split_by: sets {sets} must each hold at least two ranks in 0..{self.size - 1}"
            )
        digest = zlib.crc32(json.dumps(sets).encode())
        self._collective(
            self.rank, "split_by", np.zeros((0,), np.uint8), {"sets_crc32": digest}, lambda x, w: None
        )
        MPI = mpi()
        out = []
        for members in sets:
            inside = self.rank in members
            # Every rank has just agreed (the header exchange above): the split waits for no one.
            sub = self._comm.Split(0 if inside else MPI.UNDEFINED, members.index(self.rank) if inside else 0)
            out.append(MPICommunicator(sub, self.timeout) if inside else None)
        return out

    def group_of(self, rank: int, groups):
        """(communicator, rank in it) of `rank`'s group among `subgroups(groups)`."""
        for members, sub in zip(groups, self.subgroups(groups)):
            if sub is not None:
                return sub, [int(r) for r in members].index(rank)
        raise ValueError(f"MPICommunicator.group_of: rank {rank} is in none of the groups {groups}")

    # -- beyond the interface: what the process-level helpers need ------------------------------

    def all_gather_bytes(self, payload: bytes) -> list[bytes]:
        """Every rank's `payload` (any lengths), in rank order."""

        def exchange(x, what):
            sizes = self._exchange_headers({"collective": "all_gather_bytes", "nbytes": len(payload)}, what)
            out = [payload if r == self.rank else bytearray(sizes[r]["nbytes"]) for r in range(self.size)]
            requests, peers = [], []
            for r in range(self.size):
                if r != self.rank:
                    if payload:
                        requests.append(self._comm.Isend(payload, dest=r, tag=_BYTES_TAG))
                        peers.append(None)
                    if sizes[r]["nbytes"]:
                        requests.append(self._comm.Irecv(out[r], source=r, tag=_BYTES_TAG))
                        peers.append(r)
            self._wait(requests, what, peers)
            return [bytes(b) for b in out]

        return self._collective(self.rank, "all_gather_bytes", np.zeros((0,), np.uint8), {}, exchange)

    def exchange_bundles(self, rank, sends: dict, receives: dict, like, key: str) -> dict:
        """Point to point: send ``sends[q]`` (an array) to each rank q, and receive from each rank
        p in `receives` an array of shape ``receives[p]`` and `like`'s dtype; returns {p: array}.
        `like` (a value of the collective's per-participant shape and dtype) and `key` (what the
        exchange is, e.g. a digest of a permutation) must agree on every rank: they are checked
        in the header exchange. The two-level communicator of a multi-process pmap moves its
        ppermute bundles with this (distributed/device_collectives.py)."""
        like = np.asarray(like)

        def exchange(x, what):
            out = {int(p): np.empty(tuple(shape), like.dtype) for p, shape in receives.items()}
            requests, peers, held = [], [], []
            for q, value in sends.items():
                send = _as_bytes(np.asarray(value, like.dtype))
                held.append(send)  # alive until the sends complete
                if send.size:
                    requests.append(self._comm.Isend(send, dest=int(q), tag=_DATA_TAG))
                    peers.append(None)
            for p, value in out.items():
                if value.size:
                    requests.append(
                        self._comm.Irecv(value.reshape(-1).view(np.uint8), source=p, tag=_DATA_TAG)
                    )
                    peers.append(p)
            self._wait(requests, what, peers)
            return out

        return self._collective(rank, "exchange_bundles", like, {"key": str(key)}, exchange)

    def reduce_in_order(self, rank, contributions, order, op) -> list[np.ndarray]:
        """One all-reduce of several operands with several contributions per process:
        ``contributions[i]`` is this process's i-th list of operands (every process gives as many
        lists, of the same shapes and dtypes), `order` lists every contribution of every process
        as (process rank, i) in the order to fold them (the same list everywhere). Returns each
        operand's reduction (`op`: sum, max or min) folded pairwise in `order`, so bitwise what
        one process folding all of them in that order gets, on every process.

        A reduce-scatter then an all-gather: each process owns a share of every operand's
        elements (process q elements [n*q//size, n*(q+1)//size), as ThreadCommunicator splits
        them), receives the others' values of its share, folds them, and sends its folded share to
        every other process. Each message is a slice of an operand or of the result, received in
        place: nothing is packed, stacked or copied, and each process reduces 1/size of the
        elements."""
        fn = self._reducer(op)
        contributions = [[np.asarray(x) for x in xs] for xs in contributions]
        first = contributions[0]
        # Each operand as this process's contributions stacked: e.g. float32[2,3] for two of [3].
        operands = ";".join(
            f"{x.dtype.name}[{','.join(str(d) for d in (len(contributions), *x.shape))}]" for x in first
        )
        if len(operands) > _OPERANDS_SHOWN:
            operands = f"{len(first)} operands, crc32 {zlib.crc32(operands.encode())}"
        order = [(int(p), int(i)) for p, i in order]
        args = {
            "op": op,
            "operands": operands,
            "order_crc32": zlib.crc32(json.dumps(order).encode()),
        }

        def exchange(_, what):
            size, me = self.size, self.rank
            flats = [[np.ascontiguousarray(x).reshape(-1) for x in xs] for xs in contributions]
            shares = [[(x.size * q // size, x.size * (q + 1) // size) for q in range(size)] for x in first]
            results = [np.empty(x.shape, x.dtype) for x in first]
            outs = [r.reshape(-1) for r in results]
            peers_of = [p for p in range(size) if p != me]
            incoming, requests, peers = {}, [], []
            # Receives first (the others' values of this process's share, then their folded
            # shares straight into the results), so no message waits for a late receive.
            for p in peers_of:
                for i in range(len(contributions)):
                    for j, x in enumerate(first):
                        lo, hi = shares[j][me]
                        if hi > lo:
                            incoming[p, i, j] = buf = np.empty(hi - lo, x.dtype)
                            requests.append(self._comm.Irecv(buf.view(np.uint8), source=p, tag=_SHARE_TAG))
                            peers.append(p)
            folded, folded_peers = [], []
            for p in peers_of:
                for j in range(len(first)):
                    lo, hi = shares[j][p]
                    if hi > lo:
                        folded.append(
                            self._comm.Irecv(outs[j][lo:hi].view(np.uint8), source=p, tag=_REDUCED_TAG)
                        )
                        folded_peers.append(p)
            for p in peers_of:
                for contribution in flats:
                    for j, x in enumerate(contribution):
                        lo, hi = shares[j][p]
                        if hi > lo:
                            requests.append(self._comm.Isend(x[lo:hi].view(np.uint8), dest=p, tag=_SHARE_TAG))
                            peers.append(None)
            self._wait(requests, what, peers)
            for j in range(len(first)):
                lo, hi = shares[j][me]
                if hi == lo:
                    continue
                rows = [flats[i][j][lo:hi] if p == me else incoming[p, i, j] for p, i in order]
                out = outs[j][lo:hi]
                if len(rows) == 1:
                    out[...] = rows[0]
                else:
                    fn(rows[0], rows[1], out=out)
                    for row in rows[2:]:
                        fn(out, row, out=out)
                for p in peers_of:  # sent while the next operand is folded
                    folded.append(self._comm.Isend(out.view(np.uint8), dest=p, tag=_REDUCED_TAG))
                    folded_peers.append(None)
            self._wait(folded, what, folded_peers)
            return results

        return self._collective(rank, "reduce_in_order", None, args, exchange)

    def abort(self, rank: int, error: BaseException) -> None:
        """Tell the other processes that this one failed with `error`: their next collective on
        this communicator raises CollectiveError at once instead of waiting out the timeout. The
        communicator is unusable afterwards."""
        if self._comm is None or self._failed is not None:
            return
        note = f"{type(error).__name__}: {error}"[:1000]
        sent = _encode({"collective": "abort", "error": note})
        # Not waited for: the peers may be gone. The buffer stays referenced with the requests.
        self._aborts = [
            (sent, self._comm.Isend(sent, dest=r, tag=_HEADER_TAG))
            for r in range(self.size)
            if r != self.rank
        ]
        self._failed = f"process {self.processes[self.rank]} aborted ({note})"

    def free(self):
        """Release the MPI communicator (local; the object is unusable afterwards)."""
        if self._comm is not None and self._failed is None:
            self._comm.Free()
        self._comm = None

    # -- machinery --------------------------------------------------------------------------------

    def _collective(self, rank, name, x, args, exchange):
        if rank != self.rank:
            raise ValueError(
                f"MPICommunicator.{name}: rank {rank} given, but this process is rank {self.rank} of the "
                "communicator (each process takes part as its own rank only)"
            )
        with self._lock:
            if self._comm is None:
                raise RuntimeError(
                    f"MPICommunicator.{name}: the communicator was freed (distributed.shutdown)"
                )
            if self._failed is not None:
                raise CollectiveError(
                    f"MPICommunicator.{name}: the communicator is unusable after an earlier failure ({self._failed})"
                )
            self._calls += 1
            what = f"{name} (call #{self._calls} on process {self.processes[self.rank]})"
            header = {"collective": name, "args": args}
            if x is not None:  # else the arguments describe the operands
                header.update(dtype=x.dtype.name, shape=list(x.shape))
            headers = self._exchange_headers(header, what)
            aborted = [r for r in range(self.size) if headers[r]["collective"] == "abort"]
            if aborted:
                r = aborted[0]
                self._failed = f"process {self.processes[r]} failed"
                raise CollectiveError(
                    f"morphax.distributed: {what}: process {self.processes[r]} failed "
                    f"({headers[r]['error']}) and left the collectives"
                )
            differ = [r for r in range(self.size) if headers[r] != header]
            if differ:
                r = differ[0]
                raise CollectiveMismatchError(
                    f"morphax.distributed: processes disagree about collective call #{self._calls}: process "
                    f"{self.processes[self.rank]} called {_describe(header)}, process {self.processes[r]} called "
                    f"{_describe(headers[r])}. Every process must call the same collectives in the same order, "
                    "with arrays of the same shape and dtype."
                )
            return exchange(x, what)

    def _gather_data(self, x, what):
        out = np.empty((self.size, *x.shape), x.dtype)
        if x.size:
            send = _as_bytes(x)  # alive until the exchange completes
            self._wait([self._comm.Iallgather(send, out.reshape(-1).view(np.uint8))], what)
        return out

    def _exchange_headers(self, header: dict, what: str) -> list[dict]:
        """Send `header` to every other rank and receive theirs (point to point, so a missing peer
        can be named)."""
        sent = _encode(header)
        received = np.zeros((self.size, HEADER_BYTES), np.uint8)
        requests, peers = [], []
        for r in range(self.size):
            if r != self.rank:
                requests.append(self._comm.Isend(sent, dest=r, tag=_HEADER_TAG))
                peers.append(None)
                requests.append(self._comm.Irecv(received[r], source=r, tag=_HEADER_TAG))
                peers.append(r)
        self._wait(requests, what, peers)
        return [
            header if r == self.rank else json.loads(received[r].tobytes().rstrip(b"\0"))
            for r in range(self.size)
        ]

    def _wait(self, requests, what, peers=None):
        timeout = config.morphax_collective_timeout if self.timeout is None else self.timeout
        try:
            wait_for(requests, what, timeout, [None if p is None else self.processes[p] for p in peers or []])
        except CollectiveTimeoutError:
            self._failed = f"{what} timed out"
            raise


def wait_for(requests, what: str, timeout: float, peers=()):
    """Poll the MPI `requests` until all complete; past `timeout` seconds raise
    CollectiveTimeoutError naming the processes whose receives (``peers[i]``; None for sends) are
    still pending. Spins (tests, yielding the core) for SPIN_SECONDS after the start and after
    each completion, then sleeps between tests, up to a millisecond."""
    if not requests:
        return
    Request = mpi().Request
    now = time.monotonic()
    deadline = now + float(timeout)
    spin_until = now + SPIN_SECONDS
    remaining = len(requests)
    delay = 0.0
    while True:
        done = Request.Testsome(requests)  # completed requests become MPI.REQUEST_NULL
        if done is None:  # none is active any more
            return
        remaining -= len(done)
        if remaining <= 0:
            return
        now = time.monotonic()
        if done:
            spin_until, delay = now + SPIN_SECONDS, 0.0
            continue
        if now > deadline:
            pending = [i for i, r in enumerate(requests) if r]
            waiting = sorted({peers[i] for i in pending if i < len(peers) and peers[i] is not None})
            who = (
                f"process(es) {waiting} did not arrive"
                if waiting
                else "the other processes did not all arrive"
            )
            raise CollectiveTimeoutError(
                f"morphax.distributed: {what} timed out after {timeout:g} s: {who} (a process died, "
                "hangs, or called a different sequence of collectives). Set the timeout with "
                "morphax.config.update('morphax_collective_timeout', seconds) or MORPHAX_COLLECTIVE_TIMEOUT."
            )
        if now < spin_until:
            # NB: not time.sleep(0), which sleeps ~50 us on Linux. sched_yield releases the GIL
            # too; holding it instead (ctypes.PyDLL's sched_yield) measured no faster without
            # other Python threads and 1.5x slower beside a busy one.
            os.sched_yield()
        else:
            time.sleep(delay)
            delay = min(1e-3, delay * 2 + 1e-5)
