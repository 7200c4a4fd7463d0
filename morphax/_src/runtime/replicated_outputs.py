"""Outputs of a pmap (or of a jit split over a mesh: runtime/spmd_runner.py, its replicated
results) that every device holds alike, computed by one device only.

An output with `out_axes=None` is one value for the whole map. When the per-device program
computes it from values that cannot differ between devices (unmapped inputs, constants, results
of a psum/pmean/pmax/pmin/all_gather over the whole mesh: sharding/variance.py), every device
would compute the same bits; the devices of one process share host memory, so one copy is
enough. The data-parallel training step is the example: after the gradients' pmean each device
would apply the same optimizer update to every parameter, so on two devices the update (memory
bound, each device's copy competing with the other's for memory bandwidth) cost twice what it
needs.

`plan` gives each such output to one device (largest outputs first, each to the device with the
fewest bytes so far) and derives one program per device from the per-device program by dead-code
elimination, keeping the mapped outputs, that device's share of the alike outputs, and every
collective. Collectives stay in every program (their results become extra outputs, so nothing
that feeds them is dropped), so all devices make the same collective calls in the same order, as
the communicators require. An output with out_axes None that may differ between devices (JAX
returns the first device's) stays with the first device. Programs with side effects (callbacks,
stateful random numbers) are not split, nor programs whose alike outputs are small
(`MIN_SPLIT_BYTES`): each distinct program is one more compilation.
"""

from __future__ import annotations

from morphax._src.core.jaxpr import ClosedJaxpr, DropVar, Jaxpr
from morphax._src.core.memo import memoized
from morphax._src.passes._util import jaxpr_has_effects
from morphax._src.passes.dce import dce_closed_jaxpr
from morphax._src.sharding import variance

__all__ = ["MIN_SPLIT_BYTES", "Plan", "plan"]

# Below this many bytes of alike outputs the devices all compute them: each distinct per-device
# program is one more compilation (a C build), and the work it saves is small.
MIN_SPLIT_BYTES = 1 << 18


class Plan:
    """`programs[r]`: the jaxpr device r runs (its first `len(positions[r])` outputs are the
    original outputs at `positions[r]`, any after them are collective results kept alive);
    `owner[j]`: the device whose result is output j (None: stacked from every device)."""

    __slots__ = ("programs", "positions", "owner")

    def __init__(self, programs, positions, owner):
        self.programs, self.positions, self.owner = programs, positions, owner

    @property
    def split(self) -> bool:
        """Whether the devices run different programs."""
        return any(p is not self.programs[0] for p in self.programs)


def plan(closed: ClosedJaxpr, mesh_axes, in_axes, out_axes, devices: int) -> Plan:
    """The Plan for `devices` devices of this process running `closed` (memoized per jaxpr)."""
    key = ("replicated_outputs", tuple(mesh_axes), tuple(in_axes), tuple(out_axes), devices)
    return memoized(closed, key, lambda: _plan(closed, mesh_axes, in_axes, out_axes, devices))


def _whole(closed, out_axes, devices) -> Plan:
    n = len(out_axes)
    owner = [None if ax is not None else 0 for ax in out_axes]
    return Plan([closed] * devices, [tuple(range(n))] * devices, owner)


def _plan(closed, mesh_axes, in_axes, out_axes, devices) -> Plan:
    if devices < 2 or all(ax is not None for ax in out_axes) or jaxpr_has_effects(closed):
        return _whole(closed, out_axes, devices)
    jaxpr = closed.jaxpr
    axes = frozenset(name for name, _ in mesh_axes)
    in_vary = [frozenset() if ax is None else axes for ax in in_axes]
    out_vary = variance.vary(jaxpr, in_vary, axes)
    alike = [j for j, ax in enumerate(out_axes) if ax is None and not out_vary[j]]
    if not alike or sum(jaxpr.outvars[j].aval.nbytes for j in alike) < MIN_SPLIT_BYTES:
        return _whole(closed, out_axes, devices)
    kept_alive = [
        v for eqn in jaxpr.eqns if variance.mentions_axes(eqn) for v in eqn.outvars if type(v) is not DropVar
    ]
    owner = [None if ax is not None else 0 for ax in out_axes]
    load = [0] * devices
    for group in _groups(jaxpr, alike, kept_alive, out_axes):
        r = min(range(devices), key=lambda r: load[r])
        for j in group:
            owner[j] = r
        load[r] += sum(jaxpr.outvars[j].aval.nbytes for j in group)
    # Collectives' results as extra outputs: dead-code elimination keeps them and their inputs.
    widened = ClosedJaxpr(
        Jaxpr(jaxpr.constvars, jaxpr.invars, [*jaxpr.outvars, *kept_alive], jaxpr.eqns, jaxpr.debug_info),
        closed.consts,
    )
    programs, positions = [], []
    for r in range(devices):
        mine = [ax is not None or owner[j] == r for j, ax in enumerate(out_axes)]
        result, _ = dce_closed_jaxpr(widened, mine + [True] * len(kept_alive))
        programs.append(result.closed)
        positions.append(tuple(j for j, m in enumerate(mine) if m))
    return Plan(programs, positions, owner)


def _groups(jaxpr, alike, kept_alive, out_axes) -> list:
    """The outputs of `alike` in groups that share work: two outputs whose computations share an
    equation that no device can skip (one that neither a collective nor a mapped output needs)
    go together, or both devices would compute it (an optimizer's new velocity feeds both the
    velocity and the parameter it returns). Largest groups (in output bytes) first."""
    producer = {id(v): i for i, eqn in enumerate(jaxpr.eqns) for v in eqn.outvars}

    def needs(roots) -> set:
        seen, stack = set(), [producer[id(v)] for v in roots if id(v) in producer]
        while stack:
            i = stack.pop()
            if i not in seen:
                seen.add(i)
                stack.extend(producer[id(v)] for v in jaxpr.eqns[i].invars if id(v) in producer)
        return seen

    mapped = [v for v, ax in zip(jaxpr.outvars, out_axes) if ax is not None]
    everyone = needs([*kept_alive, *mapped])
    parent = {j: j for j in alike}

    def find(j):
        while parent[j] != j:
            parent[j] = parent[parent[j]]
            j = parent[j]
        return j

    first_user: dict = {}
    for j in alike:
        for i in needs([jaxpr.outvars[j]]) - everyone:
            k = first_user.setdefault(i, j)
            parent[find(j)] = find(k)
    groups: dict = {}
    for j in alike:
        groups.setdefault(find(j), []).append(j)
    return sorted(groups.values(), key=lambda g: -sum(jaxpr.outvars[j].aval.nbytes for j in g))
