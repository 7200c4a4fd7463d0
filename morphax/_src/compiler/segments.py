"""Native segments: the runs of consecutive steps a backend executes as one native call.

A backend that can run a whole sequence of steps without returning to Python (the C backend: its
fused kernels, and matmuls through BLAS) says which opaque equations it implements natively;
`group` then replaces every maximal run of such steps (and fused kernels) with one `Segment`.
Only the values a segment reads from before it and the values read after it (or returned) cross
to Python. Everything else it computes lives in a scratch arena: each value gets a byte offset,
and values whose lifetimes do not overlap share memory (a first-fit liveness plan), so a program
of many steps needs one arena of about its peak live size, reused across calls.

Steps the backend cannot run natively (sorts, LAPACK, callbacks) stay
between segments; the number of segments of a program is what tests assert and `as_text()` shows.
"""

from __future__ import annotations

import numpy as np

from morphax._src.compiler.kernel_ir import Body, Kernel, Loop, Opaque, Program, Segment
from morphax._src.compiler.row_fusion import row_groups, spans
from morphax._src.core.jaxpr import Literal

ALIGNMENT = 64  # bytes: a cache line, and enough for every vector width the C compiler uses
# Loop bodies with constants (folded by the optimizer) run natively when these fit in the code.
EMBEDDED_CONST_BYTES = 1 << 16


def group(
    program: Program, native_scratch, reuse_plan: dict, name: str, lower_body=None
) -> tuple[Program, dict]:
    """`program` with its native runs as Segments, and the donation plan (compiler/donation.py:
    {input position: (step, store)}) renumbered for the new steps: a donated buffer can still
    hold a segment's output; a value that became scratch needs no buffer of its own.

    `native_scratch(eqn)` says which opaque equations the backend runs in C, and the bytes of
    working memory each needs (None: a Python step); with `lower_body`
    (`(closed jaxpr, name) -> grouped Program`), control flow whose bodies each compile to one
    segment becomes a native `Loop` inside the segment around it."""
    jaxpr = program.closed.jaxpr
    steps = program.steps
    native = [_native_form(s, i, native_scratch, lower_body, name) for i, s in enumerate(steps)]
    # Where each value is read: step indices, and "returned" when the program returns it.
    last_read: dict[int, int] = {}
    for i, step in enumerate(steps):
        for v in step.inputs:
            if type(v) is not Literal:
                last_read[id(v)] = i
    returned = {id(v) for v in jaxpr.outvars if type(v) is not Literal}
    # Outputs written into donated input buffers: their kernels never join a row group.
    donated_into = {id(steps[j].stores[k].var) for j, k in reuse_plan.values()}

    new_steps: list = []
    new_index: dict[int, tuple] = {}  # old step -> (new step, {old store: new output})
    i = count = 0
    while i < len(steps):
        if native[i] is None:
            new_index[i] = (len(new_steps), None)
            new_steps.append(steps[i])
            i += 1
            continue
        j = i
        while j < len(steps) and native[j] is not None:
            j += 1
        segment = _segment(native[i:j], i, last_read, returned, f"{name}_seg{count}", donated_into)
        count += 1
        position = len(new_steps)
        outputs = {id(v): k for k, v in enumerate(segment.outputs)}
        for k, step in enumerate(steps[i:j]):
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


def _native_form(step, i: int, native_scratch, lower_body, name: str):
    """The step as a segment runs it (a Kernel, an Opaque the backend implements, a Loop), or
    None when it stays a Python step."""
    if isinstance(step, Kernel):
        return step
    eqn = step.eqn
    scratch = native_scratch(eqn)
    if scratch is not None:
        return Opaque(eqn, scratch)
    if lower_body is not None and eqn.primitive.loop_form is not None:
        return _loop(eqn, lower_body, f"{name}_l{i}")
    return None


def _loop(eqn, lower_body, name: str) -> Loop | None:
    form = eqn.primitive.loop_form(**eqn.params)
    if form is None:
        return None
    bodies = []
    for b, closed in enumerate(form.bodies):
        body = _body(lower_body(closed, f"{name}b{b}"))
        if body is None:
            return None
        bodies.append(body)
    temp, size = _loop_temp(eqn, form, bodies)
    return Loop(eqn, form, bodies, temp, size)


def _body(program: Program) -> Body | None:
    """`program` (a loop body) as one segment called with the body's inputs (and its constants,
    embedded in the code when they are small), or None when it needs anything else."""
    closed, steps = program.closed, program.steps
    jaxpr = closed.jaxpr
    if len(steps) > 1 or (steps and not isinstance(steps[0], Segment)):
        return None
    if sum(np.asarray(c).nbytes for c in closed.consts) > EMBEDDED_CONST_BYTES:
        return None
    segment = steps[0] if steps else None
    sources = {id(v): ("const", k) for k, v in enumerate(jaxpr.constvars)}
    sources.update({id(v): ("input", p) for p, v in enumerate(jaxpr.invars)})
    if segment is not None and any(id(v) not in sources for v in segment.inputs):
        return None
    produced = {id(v): k for k, v in enumerate(segment.outputs)} if segment is not None else {}
    results, first = [], {}
    for k, v in enumerate(jaxpr.outvars):
        if type(v) is Literal:
            results.append(("literal", np.asarray(v.val, v.aval.dtype)))
        elif id(v) in first:  # returned twice: a copy of the first
            results.append(("same", first[id(v)]))
        elif id(v) in produced:
            results.append(("segment", produced[id(v)]))
        elif id(v) in sources:
            results.append(sources[id(v)])
        else:
            return None
        first.setdefault(id(v), k)
    args = [sources[id(v)] for v in segment.inputs] if segment is not None else []
    consts = [np.ascontiguousarray(c) for c in closed.consts]
    return Body(segment, args, results, consts)


def _loop_temp(eqn, form, bodies) -> tuple[dict, int]:
    """Offsets of a loop's working memory: two buffers per carry (the iterations alternate
    between them), the predicate, and the bodies' scratch (they run one at a time)."""
    temp: dict = {"carry_a": [], "carry_b": []}
    size = 0

    def take(n: int) -> int:
        nonlocal size
        at = size
        size += _round_up(max(n, 1))
        return at

    if form.kind != "switch":
        for out in form.carry_final:
            n = eqn.outvars[out].aval.nbytes
            temp["carry_a"].append(take(n))
            temp["carry_b"].append(take(n))
    temp["pred"] = take(1)
    temp["body"] = take(max((b.segment.scratch_bytes for b in bodies if b.segment is not None), default=0))
    return temp, size


def _segment(
    run: list, start: int, last_read: dict, returned: set, name: str, donated_into: set = frozenset()
) -> Segment:
    end = start + len(run) - 1
    defined: dict[int, object] = {}
    inputs, seen = [], set()
    for step in run:
        for v in step.inputs:
            # Literal operands (of loops) are constants in the generated code.
            if type(v) is not Literal and id(v) not in defined and id(v) not in seen:
                seen.add(id(v))
                inputs.append(v)
        for v in step.outputs:
            defined[id(v)] = v
    outputs = [v for key, v in defined.items() if key in returned or last_read.get(key, -1) > end]
    crossing = {id(v) for v in outputs}
    groups = row_groups(run, donated_into)
    # A row group runs its kernels interleaved, row by row: the values it defines are alive from
    # its first step, and everything it reads or defines until its last (compiler/row_fusion.py).
    span = spans(groups)
    # Lifetimes of the values that stay inside, in step numbers local to the run, and of the
    # loops' working memory (their step only).
    lifetimes = []
    for k, step in enumerate(run):
        born, ends = span.get(k, (k, k))
        for v in step.outputs:
            if id(v) not in crossing:
                dies = max(last_read.get(id(v), start + k) - start, ends)
                lifetimes.append((id(v), v.aval.nbytes, born, dies))
        if isinstance(step, (Loop, Opaque)) and step.temp_bytes:
            lifetimes.append((id(step), step.temp_bytes, k, k))
    offsets, total = plan_scratch(lifetimes)
    return Segment(name, list(run), inputs, outputs, offsets, total, groups)


def plan_scratch(lifetimes) -> tuple[dict, int]:
    """Byte offsets for blocks (key, bytes, first step, last step) alive over [first, last]
    (inclusive): first fit, largest blocks placed first, never overlapping a block alive at the
    same time. Returns ({key: offset}, arena size)."""
    placed: list = []  # (offset, end offset, first, last)
    offsets = {}
    total = 0
    for key, nbytes, first, last in sorted(lifetimes, key=lambda t: -t[1]):
        size = _round_up(max(nbytes, 1))
        clashes = sorted((lo, hi) for lo, hi, f, la in placed if f <= last and first <= la)
        offset = 0
        for lo, hi in clashes:
            if offset + size <= lo:
                break
            offset = max(offset, hi)
        placed.append((offset, offset + size, first, last))
        offsets[key] = offset
        total = max(total, offset + size)
    return offsets, total


def _round_up(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
