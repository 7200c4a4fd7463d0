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

Which program output a donated input becomes is XLA's rule as JAX 0.10.2 applies it on the CPU
(`output_aliases`): each output in order takes the first donated input left of its shape and dtype.
The plan prefers that output's store; where no kernel could write it there, the runtime copies
the output into the donated buffer after the run (`land`), so the output lives in the donated
memory as under JAX. Donated inputs that match no output (not even by element count) are unusable:
compiling the program warns about them, as JAX's lowering does.
"""

from __future__ import annotations

import warnings
from collections import defaultdict, deque

import numpy as np

from morphax._src.compiler.fusion import canonical, shape_index
from morphax._src.compiler.kernel_ir import Kernel
from morphax._src.core.jaxpr import Literal


def output_aliases(in_avals, out_avals, donated) -> tuple[dict, list]:
    """({donated input position: output index}, [positions no output can use]). Each output in
    order takes the first remaining donated input of its shape and dtype (weak types do not
    matter: the buffers are the same). Inputs left over whose element count matches a remaining
    output are still usable (XLA may reuse them); the others are not."""
    free: dict = defaultdict(deque)
    for pos in sorted(set(donated)):
        a = in_avals[pos]
        free[(tuple(a.shape), a.dtype)].append(pos)
    aliases: dict = {}
    unmatched: dict = defaultdict(int)
    for i, a in enumerate(out_avals):
        waiting = free.get((tuple(a.shape), a.dtype))
        if waiting:
            aliases[waiting.popleft()] = i
        else:
            unmatched[a.size] += 1
    unusable = []
    for pos in sorted(p for waiting in free.values() for p in waiting):
        size = in_avals[pos].size
        if unmatched[size]:
            unmatched[size] -= 1
        else:
            unusable.append(pos)
    return aliases, unusable


def warn_unusable(in_avals, unusable) -> None:
    """JAX's warning (from its lowering) naming donated inputs that no output can use."""
    if unusable:
        names = ", ".join(
            f"{in_avals[p].dtype.name}[{','.join(map(str, in_avals[p].shape))}]" for p in unusable
        )
        warnings.warn(
            f"Some donated buffers were not usable: {names}.\n"
            "See an explanation at https://docs.jax.dev/en/latest/faq.html#buffer-donation.",
            stacklevel=1,  # JAX's points at its own lowering, not at a caller
        )


def land(aliases: dict, args, outs: list, reuse) -> list:
    """`outs` with each aliased output in its donated input's buffer (`aliases` from
    `output_aliases`; `reuse`: the positions whose buffers were free to overwrite on this call).
    A kernel that wrote the output there already leaves nothing to do; otherwise the output is
    copied in, unless the buffer holds (part of) another output."""
    for pos, i in aliases.items():
        if pos not in reuse:
            continue
        buf, out = args[pos], outs[i]
        if out is buf or type(buf) is not np.ndarray or np.shape(out) != buf.shape:
            continue
        if getattr(out, "dtype", None) != buf.dtype:
            continue  # (never expected: the avals match) the output stays where it is
        if any(type(o) is np.ndarray and np.may_share_memory(o, buf) for o in outs):
            continue  # written there by the program (as this output or another)
        np.copyto(buf, out, casting="no")
        outs[i] = buf
    return outs


def plan(program, donated: tuple, prefer: dict | None = None) -> dict:
    """{input position: (step index, store index)} for the donated input positions that can be
    reused; marks `Kernel.aliases` where a kernel reads the buffer it writes. `prefer`: {input
    position: output index} (`output_aliases`), the output whose store each input takes first."""
    jaxpr = program.closed.jaxpr
    prefer = prefer or {}
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
        want = jaxpr.outvars[prefer[pos]] if pos in prefer else None
        got = _first_fit(steps, v, last, taken, want) if want is not None else None
        if got is None:
            got = _first_fit(steps, v, last, taken)
        if got is not None:
            out[pos] = got
            taken.add(got)
    return out


def _first_fit(steps, v, last: int, taken: set, only=None):
    """The first store after `v`'s last reader that may write into `v`'s buffer (with `only`:
    the store of that variable only)."""
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
            if only is not None and store.var is not only:
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
