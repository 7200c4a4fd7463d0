"""Donated inputs as output buffers: which fused kernel may write its output into which donated
input (`plan`), decided once per compiled program.

A donated input (`jit(donate_argnums=...)`) is consumed by the call, so its memory may hold an
output of the same shape and dtype instead of a fresh allocation. The plan is static; whether a
buffer is actually reused is decided per call by the runtime, which passes a donated buffer on
only when nothing else references it (runtime/dispatch.py).

A kernel may take over input `v`'s buffer for one of its stores when:
- `v` has the store's shape and dtype, is not a program output, and is read only by fused kernels
  (an opaque step could return a NumPy view of it that outlives the overwrite);
- the kernel runs after `v`'s last reader, or is that reader and reads `v` only at the element it
  writes (the same index as the store: each element is read before it is overwritten, in the same
  loop iteration). Such a kernel is told that the two buffers alias (`Kernel.aliases`), so the C
  renderer does not declare them `restrict`.
Reduced outputs and the epilogue after a reduction never take a donated buffer: only stores of the
main loop, which write each element once.
"""

from __future__ import annotations

from morphax._src.compiler.fusion import canonical, shape_index
from morphax._src.compiler.kernel_ir import Kernel
from morphax._src.core.jaxpr import Literal


def plan(program, donated: tuple) -> dict:
    """{input position: (step index, store index)} for the donated input positions that can be
    reused; marks `Kernel.aliases` where a kernel reads the buffer it writes."""
    jaxpr = program.closed.jaxpr
    steps = program.steps
    readers: dict[int, list] = {}
    for i, step in enumerate(steps):
        for v in step.inputs:
            if type(v) is not Literal:
                readers.setdefault(id(v), []).append(i)
    outputs = {id(v) for v in jaxpr.outvars if type(v) is not Literal}
    taken: set = set()
    out: dict = {}
    for pos in sorted(set(donated)):
        v = jaxpr.invars[pos]
        reads = readers.get(id(v), [])
        if id(v) in outputs or any(not isinstance(steps[i], Kernel) for i in reads):
            continue
        last = max(reads, default=-1)
        got = _first_fit(steps, v, last, taken)
        if got is not None:
            out[pos] = got
            taken.add(got)
    return out


def _first_fit(steps, v, last: int, taken: set):
    aval = v.aval
    for j in range(max(last, 0), len(steps)):
        step = steps[j]
        if not isinstance(step, Kernel) or (j == last and not _reads_in_place(step, v)):
            continue
        for k, store in enumerate(step.stores):
            s_aval = store.var.aval
            # A store of the main loop (not a reduction, not the epilogue after one) writes each
            # element once, in the iteration that reads it.
            if (j, k) in taken or store.reduce is not None or step.nodes[store.node].phase != 0:
                continue
            if tuple(s_aval.shape) != tuple(aval.shape) or s_aval.dtype != aval.dtype:
                continue
            if j == last:
                step.aliases[k] = step.inputs.index(v)
            return j, k
    return None


def _reads_in_place(kernel, v) -> bool:
    """Whether `kernel` reads `v` only at the element its loop writes (its domain is v's)."""
    if tuple(kernel.domain) != canonical(v.aval.shape):
        return False
    slot = kernel.inputs.index(v)
    identity = [str(i) for i in shape_index(v.aval.shape)]
    for node in kernel.nodes:
        load = node.params.get("load") if node.op == "load" else None
        if load is not None and load.slot == slot:
            if node.phase != 0 or [str(i) for i in load.index] != identity:
                return False
    return True
