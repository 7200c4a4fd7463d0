"""Native segments: the runs of consecutive steps a backend executes as one native call.

A backend that can run a whole sequence of steps without returning to Python (the C backend: its
fused kernels, and matmuls through BLAS) says which opaque equations it implements natively;
`group` then replaces every maximal run of such steps (and fused kernels) with one `Segment`.
Only the values a segment reads from before it and the values read after it (or returned) cross
to Python. Everything else it computes lives in a scratch arena: each value gets a byte offset,
and values whose lifetimes do not overlap share memory (a first-fit liveness plan), so a program
of many steps needs one arena of about its peak live size, reused across calls.

Steps the backend cannot run natively (sorts, LAPACK, callbacks, control flow for now) stay
between segments; the number of segments of a program is what tests assert and `as_text()` shows.
"""

from __future__ import annotations

from morphax._src.compiler.kernel_ir import Kernel, Opaque, Program, Segment
from morphax._src.core.jaxpr import Literal

ALIGNMENT = 64  # bytes: a cache line, and enough for every vector width the C compiler uses


def group(program: Program, runs_natively, reuse_plan: dict, name: str) -> tuple[Program, dict]:
    """`program` with its native runs as Segments, and the donation plan (compiler/donation.py:
    {input position: (step, store)}) renumbered for the new steps: a donated buffer can still
    hold a segment's output; a value that became scratch needs no buffer of its own."""
    jaxpr = program.closed.jaxpr
    steps = program.steps
    native = [isinstance(s, Kernel) or (isinstance(s, Opaque) and runs_natively(s.eqn)) for s in steps]
    # Where each value is read: step indices, and "returned" when the program returns it.
    last_read: dict[int, int] = {}
    for i, step in enumerate(steps):
        for v in step.inputs:
            if type(v) is not Literal:
                last_read[id(v)] = i
    returned = {id(v) for v in jaxpr.outvars if type(v) is not Literal}

    new_steps: list = []
    new_index: dict[int, tuple] = {}  # old step -> (new step, {old store: new output})
    i = 0
    while i < len(steps):
        if not native[i]:
            new_index[i] = (len(new_steps), None)
            new_steps.append(steps[i])
            i += 1
            continue
        j = i
        while j < len(steps) and native[j]:
            j += 1
        run = steps[i:j]
        segment = _segment(run, i, last_read, returned, f"{name}_seg{len(program_segments(new_steps))}")
        position = len(new_steps)
        outputs = {id(v): k for k, v in enumerate(segment.outputs)}
        for k, step in enumerate(run):
            stores = {}
            if isinstance(step, Kernel):
                for s, store in enumerate(step.stores):
                    if id(store.var) in outputs:
                        stores[s] = outputs[id(store.var)]
            new_index[i + k] = (position, stores)
        new_steps.append(segment)
        i = j
    new_plan = {}
    for pos, (step, store) in reuse_plan.items():
        position, stores = new_index[step]
        if stores is None:
            new_plan[pos] = (position, store)
        elif store in stores:
            new_plan[pos] = (position, stores[store])
    return Program(program.closed, new_steps), new_plan


def program_segments(steps) -> list:
    return [s for s in steps if isinstance(s, Segment)]


def _segment(run: list, start: int, last_read: dict, returned: set, name: str) -> Segment:
    end = start + len(run) - 1
    defined: dict[int, object] = {}
    inputs, seen = [], set()
    for step in run:
        for v in step.inputs:
            if id(v) not in defined and id(v) not in seen:
                seen.add(id(v))
                inputs.append(v)
        for v in step.outputs:
            defined[id(v)] = v
    outputs = [v for key, v in defined.items() if key in returned or last_read.get(key, -1) > end]
    crossing = {id(v) for v in outputs}
    # Lifetimes of the values that stay inside, in step numbers local to the run.
    lifetimes = []
    for k, step in enumerate(run):
        for v in step.outputs:
            if id(v) not in crossing:
                dies = max(last_read.get(id(v), start + k) - start, k)
                lifetimes.append((v, k, dies))
    offsets, total = plan_scratch(lifetimes)
    return Segment(name, list(run), inputs, outputs, offsets, total)


def plan_scratch(lifetimes) -> tuple[dict, int]:
    """Byte offsets for values alive over [first step, last step] (inclusive): first fit, largest
    values placed first, never overlapping a value alive at the same time. Returns
    ({id(var): offset}, arena size)."""
    placed: list = []  # (offset, end offset, first, last)
    offsets = {}
    total = 0
    for v, first, last in sorted(lifetimes, key=lambda t: -_nbytes(t[0])):
        size = _round_up(max(_nbytes(v), 1))
        clashes = sorted((lo, hi) for lo, hi, f, la in placed if f <= last and first <= la)
        offset = 0
        for lo, hi in clashes:
            if offset + size <= lo:
                break
            offset = max(offset, hi)
        placed.append((offset, offset + size, first, last))
        offsets[id(v)] = offset
        total = max(total, offset + size)
    return offsets, total


def _nbytes(v) -> int:
    aval = v.aval
    n = 1
    for d in aval.shape:
        n *= int(d)
    return n * aval.dtype.itemsize


def _round_up(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
