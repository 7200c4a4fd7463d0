"""`ProcessDevicesCommunicator`: the Communicator of a pmap whose devices belong to several
processes (after ``morphax.distributed.initialize()``): participants are device threads of every
process, ranked across processes.

Two levels: a collective first meets among the process's own device threads (a
`ThreadCommunicator` rendezvous, which checks that they agree); the last local thread to arrive
then makes one MPI call on behalf of all of them, carrying the local blocks (a reduce-scatter and
all-gather for all_reduce, an all-gather of the stacked blocks for all_gather, an all-to-all of
per-process bundles for all_to_all, point-to-point bundles for ppermute), and hands each local
thread its result. Reductions fold the values in global rank order, so results equal a
one-process run's bit for bit. A failure anywhere stops both levels: a device that fails aborts
the local rendezvous (its siblings raise) and the MPI communicator (the other processes' next
collective raises); a failure reported by another process is raised to every local thread.

Every process must run the same pmaps with the same number of local participants (as JAX
requires)."""

from __future__ import annotations

import json
import threading
import zlib

import numpy as np

from morphax._src.distributed import state
from morphax._src.prims import collective_axes
from morphax._src.runtime.communicators import (
    CollectiveMismatchError,
    Communicator,
    ThreadCommunicator,
    _describe,
    check_groups,
)

__all__ = ["ProcessDevicesCommunicator"]


class ProcessDevicesCommunicator(Communicator):
    """Collectives between devices of several processes. `processes`: the MPICommunicator over
    all processes (rank = process index); `layout[r]`: the process of participant r (every process
    appears, each as often). Local device threads call with their global rank."""

    def __init__(self, processes, layout, timeout: float | None = None):
        self.size = len(layout)
        self._mpi = processes
        self._me = processes.rank
        count = processes.size
        self._ranks_of = [[r for r, p in enumerate(layout) if p == q] for q in range(count)]
        per_process = {len(ranks) for ranks in self._ranks_of}
        if len(per_process) != 1 or 0 in per_process:
            raise ValueError(
                "pmap across processes: every process must take part with the same number of devices, "
                f"but the participants' processes are {list(layout)} over {count} processes"
            )
        self._local = ThreadCommunicator(len(self._ranks_of[self._me]), timeout)
        self._position = {r: i for i, r in enumerate(self._ranks_of[self._me])}
        # Global rank -> (process, position among that process's participants).
        self._where = {r: (q, i) for q, ranks in enumerate(self._ranks_of) for i, r in enumerate(ranks)}
        self._order = [self._where[r] for r in range(self.size)]  # reductions fold in this order
        self._lock = threading.Lock()
        self._subgroups: dict = {}  # groups -> the communicators of subgroups(groups)

    def __repr__(self):
        return f"ProcessDevicesCommunicator(size={self.size}, processes={len(self._ranks_of)})"

    def _local_rank(self, rank, what):
        try:
            return self._position[rank]
        except KeyError:
            raise ValueError(
                f"{what}: rank {rank} is not one of this process's participants "
                f"{self._ranks_of[self._me]} (of {self.size})"
            ) from None

    def abort(self, rank: int, error: BaseException) -> None:
        """Participant `rank` failed: its siblings in this process raise at once, and the other
        processes raise at their next collective."""
        self._local.abort(self._position.get(rank, 0), error)
        self._mpi.abort(self._me, error)

    def _meet(self, rank, what, signature, x, combine):
        local = self._local_rank(rank, what)
        count = len(self._position)

        def across_processes(values):
            try:
                return combine(values)
            except CollectiveMismatchError as e:
                # The MPI level sees this process's devices' values stacked: say so.
                raise CollectiveMismatchError(
                    f"{what} across processes, each process's {count} device value(s) stacked along a "
                    f"leading axis: {e}"
                ) from None

        return self._local.rendezvous(local, what, signature, x, across_processes)

    def _by_rank(self, values):
        """Every participant's value in global rank order, gathered from all processes."""
        gathered = self._mpi.all_gather(self._me, np.stack(values))  # (processes, local, ...)
        out = [None] * self.size
        for r, (q, i) in self._where.items():
            out[r] = gathered[q, i]
        return out

    def _same_for_all(self, value):
        return [value if i == 0 else value.copy() for i in range(len(self._position))]

    # ----------------------------------------------------------------------------- operations

    def all_reduce(self, rank, x, op):
        x = np.asarray(x)
        return self._reduce(rank, op, _describe(x), [x])[0]

    def all_reduce_many(self, rank, xs, op):
        xs = [np.asarray(x) for x in xs]
        return self._reduce(rank, op, tuple(_describe(x) for x in xs), xs)

    def _reduce(self, rank, op, signature, xs):
        """The all-reduce of the operands `xs` (one list per device): one MPI reduce-scatter and
        all-gather for all local devices (MPICommunicator.reduce_in_order), folding every device's
        values in global rank order, as ThreadCommunicator: the same rounding."""
        self._reducer(op)  # a bad op fails here, on every device, before any exchange

        def combine(values):
            return [self._mpi.reduce_in_order(self._me, values, self._order, op)] * len(values)

        totals = self._meet(rank, f"all_reduce({op})", signature, xs, combine)
        # The first local device keeps the results; the others copy them on their own threads, in
        # parallel (as ThreadCommunicator), not serially on the one that made the MPI call.
        return totals if self._position[rank] == 0 else [t.copy() for t in totals]

    def all_gather(self, rank, x):
        x = np.asarray(x)
        return self._meet(
            rank,
            "all_gather",
            _describe(x),
            x,
            lambda values: self._same_for_all(np.stack(self._by_rank(values))),
        )

    def all_to_all(self, rank, x, split_axis, concat_axis):
        x = self._checked_split(x, split_axis)
        n = self.size
        mine = self._ranks_of[self._me]

        def combine(values):
            blocks = [np.split(v, n, axis=split_axis) for v in values]
            # To process q: for each local sender i, its blocks for q's participants.
            bundles = np.stack(
                [np.stack([np.stack([b[d] for d in ranks]) for b in blocks]) for ranks in self._ranks_of]
            )  # (processes, local senders, their receivers, *block)
            received = self._mpi.all_to_all(self._me, bundles, 0, 0)  # (processes, senders, mine, *block)
            results = []
            for k in range(len(mine)):
                parts = [received[self._where[s][0], self._where[s][1], k] for s in range(n)]
                results.append(np.concatenate(parts, axis=concat_axis))
            return results

        sig = (_describe(x), int(split_axis), int(concat_axis))
        return self._meet(rank, "all_to_all", sig, x, combine)

    def ppermute(self, rank, x, perm):
        x = np.asarray(x)
        perm = tuple((int(s), int(d)) for s, d in perm)
        for s, d in perm:
            if not (0 <= s < self.size and 0 <= d < self.size):
                raise ValueError(f"ppermute: pair {(s, d)} of perm names a rank outside 0..{self.size - 1}")
        me = self._me

        def combine(values):
            out = [None] * len(values)
            sends, receives, incoming = {}, {}, {}
            for s, d in perm:
                (ps, i), (pd, k) = self._where[s], self._where[d]
                if ps == me and pd == me:
                    out[k] = values[i].copy()
                elif ps == me:
                    sends.setdefault(pd, []).append(values[i])
                elif pd == me:
                    incoming.setdefault(ps, []).append(k)
            for p, targets in incoming.items():
                receives[p] = (len(targets), *x.shape)
            if sends or receives or len(self._ranks_of) > 1:
                digest = zlib.crc32(json.dumps(sorted(perm)).encode())
                got = self._mpi.exchange_bundles(
                    me, {q: np.stack(v) for q, v in sends.items()}, receives, values[0], f"ppermute {digest}"
                )
                for p, targets in incoming.items():
                    for j, k in enumerate(targets):
                        out[k] = got[p][j]
            return [np.zeros_like(values[0]) if o is None else o for o in out]

        return self._meet(rank, "ppermute", (_describe(x), perm), x, combine)

    def barrier(self, rank):
        def combine(values):
            self._mpi.barrier(self._me)
            return [None] * len(values)

        self._meet(rank, "barrier", None, None, combine)

    def subgroups(self, groups) -> list:
        """One communicator per group of participants (`groups`: disjoint lists of global ranks),
        a member's rank its position in its group: None where no member is this process's, a
        ThreadCommunicator where all are, else a ProcessDevicesCommunicator over an MPI
        communicator of the group's processes. Groups that span processes are made before the
        devices run (a mesh's axes, pmap_runner.mesh_bindings), by the thread that launches them,
        with the same groups in every process: their MPI communicators are split from the
        processes' global communicator (whose collectives that thread makes) once, and kept."""
        groups = [[int(r) for r in g] for g in groups]
        check_groups(groups, self.size)
        owners = [sorted({self._where[r][0] for r in g}) for g in groups]
        shared = [i for i, o in enumerate(owners) if len(o) > 1]  # groups that span processes
        key = tuple(map(tuple, groups))
        with self._lock:  # every local participant gets the same communicators
            hit = self._subgroups.get(key)
            if hit is None:
                hit = self._subgroups[key] = self._make_subgroups(groups, owners, shared)
        return hit

    def _make_subgroups(self, groups, owners, shared):
        if shared and collective_axes.bound_on_this_thread():
            # Inside a device's program: the split would be an MPI collective made by one device
            # thread while others may be in their own. pmap_runner makes the program's groups
            # before the devices start; groups made up inside a program cannot span processes.
            raise NotImplementedError(
                f"axis_index_groups {groups} put devices of several processes in one group, and were not "
                "known before the devices started; pass them as a constant of the mapped function"
            )
        processes = state.global_communicator()
        key = (id(processes), tuple(tuple(owners[i]) for i in shared))
        splits = _splits.get(key)
        if splits is None:
            made = processes.split_by([owners[i] for i in shared]) if shared else []
            splits = _splits[key] = dict(zip(shared, made))
        out = []
        for g, members in enumerate(groups):
            if self._me not in owners[g]:
                out.append(None)
            elif len(owners[g]) == 1:
                out.append(ThreadCommunicator(len(members), self._local.timeout))
            else:
                layout = [owners[g].index(self._where[r][0]) for r in members]
                out.append(ProcessDevicesCommunicator(splits[g], layout))
        return out


# (the processes' communicator's id, the process sets of the groups that span processes) -> the MPI
# communicators split for them: made once (each split is a collective of every process).
_splits: dict = {}
