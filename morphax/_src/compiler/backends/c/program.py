"""Native segments in C: one function per segment (compiler/segments.py) that runs its steps back
to back -- fused kernels called directly, matmuls through BLAS (blas.py) -- with its intermediate
values in a scratch arena, and the Python launcher that calls it once per program call.

The segment function takes one pointer array: the segment's inputs, its outputs, then the scratch
arena (64-byte aligned). Locals are named after the jaxpr variables they point at (`b_c` for the
printed program's `c`), so the C reads like the jaxpr.
"""

from __future__ import annotations

import ctypes

import numpy as np

from morphax._src.compiler.backends.c import blas
from morphax._src.compiler.kernel_ir import Kernel
from morphax._src.compiler.segments import ALIGNMENT
from morphax._src.core.jaxpr import _print_eqn


def runs_natively(eqn) -> bool:
    """Opaque equations a segment runs in C: matmuls BLAS can do over the buffers as they lie."""
    return eqn.primitive.name == "dot_general" and blas.matmul_form(eqn) is not None and blas.available()


def uses_blas(segments) -> bool:
    return any(not isinstance(step, Kernel) for seg in segments for step in seg.steps)


def render_segment(segment, names_ctx) -> str:
    names = names_ctx.name
    n_in, n_out = len(segment.inputs), len(segment.outputs)
    kernels = len(segment.kernels)
    matmuls = len(segment.steps) - kernels
    lines = [
        f"/* {segment.name}: one native segment: {kernels} kernel{'s' * (kernels != 1)}, "
        f"{matmuls} matmul{'s' * (matmuls != 1)}, {segment.scratch_bytes} bytes of scratch.\n"
        f" * io: inputs {_listing(segment.inputs, names)}; "
        f"outputs {_listing(segment.outputs, names)}; then the scratch arena. */",
        f"void {segment.name}(void *const *restrict io) {{",
    ]
    where: dict[int, str] = {}

    def declare(v, place: str) -> None:
        local = f"b_{names(v)}"
        where[id(v)] = local
        lines.append(f"  void *{local} = {place};  /* {v.aval.str_short()} */")

    for k, v in enumerate(segment.inputs):
        declare(v, f"io[{k}]")
    for k, v in enumerate(segment.outputs):
        declare(v, f"io[{n_in + k}]")
    if segment.offsets:
        lines.append(f"  char *scratch = (char *)io[{n_in + n_out}];")
    for step in segment.steps:
        for v in step.outputs:
            if id(v) not in where:
                declare(v, f"scratch + {segment.offsets[id(v)]}")
    for step in segment.steps:
        if isinstance(step, Kernel):
            args = [where[id(v)] for v in step.inputs] + [where[id(s.var)] for s in step.stores]
            lines.append(f"  {{ void *const args[] = {{{', '.join(args)}}}; {step.name}(args); }}")
            continue
        eqn = step.eqn
        form = blas.matmul_form(eqn)
        t = form["ctype"]
        a, b = (f"(const {t} *){where[id(v)]}" for v in eqn.invars)
        c = f"({t} *){where[id(eqn.outvars[0])]}"
        comment = _print_eqn(eqn, names_ctx, 0).strip().replace("*/", "* /")
        lines.extend(blas.render_call(form, a, b, c, comment))
    lines.append("}")
    return "\n".join(lines)


def _listing(values, names) -> str:
    return ", ".join(names(v) for v in values) or "none"


def launcher(fn, segment):
    """A Python callable for one segment: inputs -> freshly allocated outputs (or the donated
    buffers given in `outs`, by output index). Scratch arenas are kept in a pool, one per
    concurrent caller, and reused across calls."""
    from morphax._src.compiler.backends.c import _fits, address

    fn.argtypes = [ctypes.c_void_p]
    fn.restype = None
    in_dtypes = [np.dtype(v.aval.dtype) for v in segment.inputs]
    out_specs = [(tuple(v.aval.shape), np.dtype(v.aval.dtype)) for v in segment.outputs]
    ptr_array = ctypes.c_void_p * (len(in_dtypes) + len(out_specs) + 1)
    scratch = segment.scratch_bytes
    pool: list = []
    empty = np.empty
    asarray = np.ascontiguousarray

    def run(*inputs, outs=None):
        ins = [asarray(x, dtype=d) for x, d in zip(inputs, in_dtypes)]
        if outs:
            res = [
                given
                if (given := outs.get(k)) is not None and _fits(given, shape, dtype)
                else empty(shape, dtype)
                for k, (shape, dtype) in enumerate(out_specs)
            ]
        else:
            res = [empty(shape, dtype) for shape, dtype in out_specs]
        arena = (pool.pop() if pool else _arena(scratch)) if scratch else None
        ptrs = ptr_array(*[address(a) for a in ins], *[address(a) for a in res], arena[1] if arena else None)
        fn(ptrs)
        if arena:
            pool.append(arena)
        return res

    run.c_function = fn  # for native loops over this segment (backends/c/loops.py)
    run.scratch_bytes = scratch
    return run


def _arena(size: int) -> tuple:
    """(buffer, its first ALIGNMENT-aligned address) holding `size` bytes."""
    buffer = np.empty(size + ALIGNMENT, np.uint8)
    base = buffer.ctypes.data
    return buffer, base + (-base) % ALIGNMENT
