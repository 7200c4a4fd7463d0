"""Merging fused kernels that read the same buffer over the same domain: `merge_siblings(steps)`.

fusion.py fuses greedily in program order, so two kernels over one domain that are independent of
each other stay apart when a step between them took the tail (the softmax cross-entropy
gradient: `sum((x - lse) * y)` and `sum(g * y)` over the same (4096, 1000) labels `y`, with a
scalar reduction between them). Each kernel then reads the shared buffer from memory once: over
a large domain that is a whole pass of memory traffic.

A later kernel `j` joins an earlier kernel `i` when
- both loop over the same domain and reduce over the same axes (or neither reduces), and neither
  binds run-time offsets;
- `j` reads none of the values produced by `i` or by any step between them (so `j` can run where
  `i` runs: everything it reads exists by then), and
- they read at least one buffer in common (otherwise merging saves no memory traffic).
Moving `j` earlier never breaks a reader of its outputs (they all come after `j`). The merged
kernel computes `i`'s nodes and then `j`'s, in each phase (loop body, then epilogue), with the
input slots of the buffers both read shared.
"""

from __future__ import annotations

import dataclasses

from morphax._src.compiler.kernel_ir import Kernel, Load


def merge_siblings(steps: list) -> list:
    """`steps` (Kernel and other steps, in program order) with each kernel that can join an
    earlier one (see the module docstring) merged into it."""
    out: list = []
    for step in steps:
        target = _target(out, step) if isinstance(step, Kernel) else None
        if target is None:
            out.append(step)
        else:
            out[target] = _merged(out[target], step)
    return out


def _target(earlier: list, kernel: Kernel) -> int | None:
    """Index in `earlier` of the kernel `kernel` may join, or None."""
    if kernel.offsets or kernel.aliases:
        return None
    reads = {id(v) for v in kernel.inputs}
    for pos in range(len(earlier) - 1, -1, -1):
        step = earlier[pos]
        if any(id(v) in reads for v in step.outputs):
            return None  # `kernel` needs this step's result: it cannot run before it
        if (
            isinstance(step, Kernel)
            and step.domain == kernel.domain
            and tuple(step.reduce_axes) == tuple(kernel.reduce_axes)
            and not step.offsets
            and not step.aliases
            and any(id(v) in reads for v in step.inputs)
        ):
            return pos
    return None


def _merged(first: Kernel, second: Kernel) -> Kernel:
    """One kernel computing `first`'s nodes and stores, then `second`'s."""
    inputs = list(first.inputs)
    slot_of = {id(v): s for s, v in enumerate(inputs)}
    slot_map = {}
    for s, v in enumerate(second.inputs):
        if id(v) not in slot_of:
            slot_of[id(v)] = len(inputs)
            inputs.append(v)
        slot_map[s] = slot_of[id(v)]
    shift = len(first.nodes)
    nodes = list(first.nodes)
    for node in second.nodes:
        params = node.params
        if node.op == "load":
            load = params["load"]
            params = {**params, "load": Load(slot_map[load.slot], load.index, load.guard)}
        nodes.append(dataclasses.replace(node, args=tuple(a + shift for a in node.args), params=params))
    stores = list(first.stores) + [dataclasses.replace(s, node=s.node + shift) for s in second.stores]
    return dataclasses.replace(
        first,
        inputs=inputs,
        nodes=nodes,
        stores=stores,
        eqns=list(first.eqns) + list(second.eqns),
    )
