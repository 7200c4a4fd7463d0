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

from morphax._src.compiler.backends.c import blas, convolution, ffi, launch_ext
from morphax._src.compiler.backends.c.scalar import ctype
from morphax._src.compiler.kernel_ir import Kernel, Loop, Opaque
from morphax._src.compiler.row_fusion import spans
from morphax._src.compiler.segments import ALIGNMENT
from morphax._src.core.jaxpr import DropVar, Literal, _print_eqn


def native_form(eqn) -> dict | None:
    """How a segment runs an opaque equation in C, or None when it stays a Python step: matmuls
    BLAS can do over the buffers as they lie (blas.py), convolutions as im2col + BLAS
    (convolution.py). The form's "scratch" is the working memory its C needs."""
    if ffi.is_ffi(eqn):  # a call of the user's C target: needs no BLAS
        return ffi.ffi_form(eqn)
    form = blas.matmul_form(eqn) or convolution.conv_form(eqn)
    return form if form is not None and blas.available() else None


def native_scratch(eqn) -> int | None:
    """Bytes of working memory the C of an opaque equation needs, or None (a Python step)."""
    form = native_form(eqn)
    return None if form is None else form["scratch"]


def uses_blas(segments) -> bool:
    return any(
        isinstance(step, Opaque) and not ffi.is_ffi(step.eqn) for seg in segments for step in seg.steps
    )


def uses_ffi(segments) -> bool:
    return any(isinstance(step, Opaque) and ffi.is_ffi(step.eqn) for seg in segments for step in seg.steps)


def _calls_ffi(segment) -> bool:
    """Whether `segment`, or a loop body inside it, calls an ffi target."""
    for step in segment.steps:
        if isinstance(step, Opaque) and ffi.is_ffi(step.eqn):
            return True
        if isinstance(step, Loop) and any(
            b.segment is not None and _calls_ffi(b.segment) for b in step.bodies
        ):
            return True
    return False


def render_segment(segment, names_ctx, exported: bool = True, ffi_targets=None) -> str:
    """C for one segment. Loop bodies (`exported=False`) are static: only their loop calls
    them, and the C compiler may inline them into it. `ffi_targets`: the library's table of ffi
    targets (ffi.targets), where it calls any."""
    names = names_ctx.name
    n_in, n_out = len(segment.inputs), len(segment.outputs)
    kernels = sum(isinstance(s, Kernel) for s in segment.steps)
    calls = [s.eqn.primitive.name for s in segment.steps if isinstance(s, Opaque)]
    matmuls = calls.count("dot_general")
    foreign = calls.count("ffi_call")
    convolutions = len(calls) - matmuls - foreign
    loops = len(segment.steps) - kernels - len(calls)
    ffi_note = f", {_count(foreign, 'ffi call')}" if foreign else ""
    lines = [
        f"/* {segment.name}: one native segment: {_count(kernels, 'kernel')}, {_count(matmuls, 'matmul')}, "
        f"{_count(convolutions, 'convolution')}{ffi_note}, {_count(loops, 'loop')}, {segment.scratch_bytes} bytes of scratch.\n"
        f" * io: inputs {_listing(segment.inputs, names)}; "
        f"outputs {_listing(segment.outputs, names)}; then the scratch arena. */",
        f"{'' if exported else 'static '}void {segment.name}(void *const *restrict io) {{",
    ]
    where: dict[int, str] = {}
    taken: set = set()

    def declare(v, place: str) -> None:
        local = "b_drop" if isinstance(v, DropVar) else f"b_{names(v)}"
        while local in taken:
            local += "_"
        taken.add(local)
        where[id(v)] = local
        lines.append(f"  void *{local} = {place};  /* {v.aval.str_short()} */")

    for k, v in enumerate(segment.inputs):
        declare(v, f"io[{k}]")
    for k, v in enumerate(segment.outputs):
        declare(v, f"io[{n_in + k}]")
    if segment.offsets:
        lines.append(f"  char *scratch = (char *)io[{n_in + n_out}];")
    for step in segment.steps:
        for v in step.inputs:
            if type(v) is Literal and id(v) not in where:
                name = f"lit{len(where)}"
                lines.append(f"  {_static_bytes(name, np.asarray(v.val, v.aval.dtype))}  /* {v!r} */")
                where[id(v)] = f"(void *){name}"
        for v in step.outputs:
            if id(v) not in where:
                declare(v, f"scratch + {segment.offsets[id(v)]}")
    group_of = spans(segment.row_groups)
    for k, step in enumerate(segment.steps):
        if k in group_of:
            first, last = group_of[k]
            if k == first:  # the group's kernels, row by row: their buffers in turn
                args = [
                    where[id(v)]
                    for member in segment.steps[first : last + 1]
                    for v in member.inputs + [s.var for s in member.stores]
                ]
                fn = row_group_name(segment, first)
                lines.append(f"  {{ void *const args[] = {{{', '.join(args)}}}; {fn}(args); }}")
        elif isinstance(step, Kernel):
            args = [where[id(v)] for v in step.inputs] + [where[id(s.var)] for s in step.stores]
            lines.append(f"  {{ void *const args[] = {{{', '.join(args)}}}; {step.name}(args); }}")
        elif isinstance(step, Loop):
            lines.extend(_render_loop(step, where, f"scratch + {segment.offsets[id(step)]}", names_ctx))
        elif ffi.is_ffi(step.eqn):
            lines.extend(
                ffi.render_call(step.eqn, where, ffi_targets, _comment(step.eqn, names_ctx), _static_bytes)
            )
        else:
            eqn = step.eqn
            form = native_form(eqn)
            t = form["ctype"]
            a, b = (f"(const {t} *){where[id(v)]}" for v in eqn.invars)
            c = f"({t} *){where[id(eqn.outvars[0])]}"
            if eqn.primitive.name == "dot_general":
                lines.extend(blas.render_call(form, a, b, c, _comment(eqn, names_ctx)))
            else:
                temp = f"scratch + {segment.offsets[id(step)]}"
                lines.extend(convolution.render_call(form, a, b, c, temp, _comment(eqn, names_ctx)))
    lines.append("}")
    return "\n".join(lines)


def row_group_name(segment, first: int) -> str:
    """The C function of the row group starting at step `first` of `segment`."""
    return f"{segment.name}_rows{first}"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' * (n != 1)}"


def _comment(eqn, names_ctx) -> str:
    text = _print_eqn(eqn, names_ctx, 0).strip().splitlines()[0]
    return text.replace("*/", "* /")


def _static_bytes(name: str, value: np.ndarray) -> str:
    """A C declaration of a static array holding `value`'s bytes (exact for every dtype)."""
    data = ", ".join(str(b) for b in value.tobytes()) or "0"
    return f"static const _Alignas(64) uint8_t {name}[] = {{{data}}};"


def _render_loop(loop, where: dict, temp: str, names_ctx) -> list:
    """C running a control-flow equation (core/loop_form.py) whose bodies are segments."""
    form, eqn = loop.form, loop.eqn
    t = loop.temp
    lines = [f"  /* {_comment(eqn, names_ctx)} */", "  {", f"    char *tmp = {temp};"]
    operand = [where[id(v)] for v in eqn.invars]
    result = [where[id(v)] for v in eqn.outvars]
    carry_bytes = [eqn.outvars[o].aval.nbytes for o in form.carry_final]

    def slice_bytes(v) -> int:
        return v.aval.nbytes // form.length if form.length else 0

    def in_ptr(role) -> str:
        kind, k = role
        if kind == "operand":
            return operand[k]
        if kind == "carry":
            return f"cur{k}"
        v = eqn.invars[form.xs[k]]  # "x": slice s of a scanned operand
        return f"((char *){operand[form.xs[k]]} + s * {slice_bytes(v)})"

    def out_ptr(role) -> str:
        kind, k = role
        if kind == "carry":
            return f"next{k}"
        if kind == "pred":
            return f"(tmp + {t['pred']})"
        if kind == "result":
            return result[k]
        v = eqn.outvars[form.ys[k]]  # "y": slice s of a stacked output
        return f"((char *){result[form.ys[k]]} + s * {slice_bytes(v)})"

    def source(b: int, role) -> str:
        kind, k = role  # ("input", body input position) or ("const", body constant)
        return in_ptr(form.inputs[b][k]) if kind == "input" else f"(void *)body{b}_const{k}"

    def call(b: int, pad: str) -> list:
        body, closed = loop.bodies[b], form.bodies[b]
        outs = form.outputs[b]
        out = []
        seg = body.segment
        if seg is not None:
            seg_out = [None] * len(seg.outputs)
            for k, (kind, j) in enumerate(body.results):
                if kind == "segment":
                    seg_out[j] = out_ptr(outs[k])
            args = [source(b, role) for role in body.args] + seg_out + [f"tmp + {t['body']}"]
            out.append(f"{pad}{{ void *const args[] = {{{', '.join(args)}}}; {seg.name}(args); }}")
            if _calls_ffi(seg):  # a failed ffi call in the body: leave the loop and the segment
                out.append(f"{pad}if (mx_ffi_status != 0) return;")
        for k, (kind, j) in enumerate(body.results):
            size = closed.jaxpr.outvars[k].aval.nbytes
            if kind in ("input", "const"):
                out.append(f"{pad}memcpy({out_ptr(outs[k])}, {source(b, (kind, j))}, {size});")
            elif kind == "same":
                out.append(f"{pad}memcpy({out_ptr(outs[k])}, {out_ptr(outs[j])}, {size});")
            elif kind == "literal":
                out.append(f"{pad}{{ {_static_bytes('lit', j)} memcpy({out_ptr(outs[k])}, lit, {size}); }}")
        return out

    for b, body in enumerate(loop.bodies):
        for k, value in enumerate(body.consts):
            lines.append(f"    {_static_bytes(f'body{b}_const{k}', value)}")
    n_carry = len(form.carry_final)
    for c in range(n_carry):
        lines.append(f"    char *cur{c} = (char *){operand[form.carry_init[c]]};")
    if form.kind == "scan":
        n = form.length
        lines.append(f"    for (int64_t t = 0; t < {n}; t++) {{")
        lines.append(f"      const int64_t s = {f'{n - 1} - t' if form.reverse else 't'};")
        for c in range(n_carry):
            a, b_ = f"tmp + {t['carry_a'][c]}", f"tmp + {t['carry_b'][c]}"
            final = result[form.carry_final[c]]
            lines.append(
                f"      char *next{c} = t == {n - 1} ? (char *){final} : cur{c} == {a} ? {b_} : {a};"
            )
        lines.extend(call(0, "      "))
        lines.extend(f"      cur{c} = next{c};" for c in range(n_carry))
        lines.append("    }")
        if n == 0:
            lines.extend(
                f"    memcpy({result[form.carry_final[c]]}, cur{c}, {carry_bytes[c]});"
                for c in range(n_carry)
            )
    elif form.kind == "while":
        lines.extend(call(0, "    "))
        lines.append(f"    while (*(const uint8_t *)(tmp + {t['pred']})) {{")
        for c in range(n_carry):
            a, b_ = f"tmp + {t['carry_a'][c]}", f"tmp + {t['carry_b'][c]}"
            lines.append(f"      char *next{c} = cur{c} == {a} ? {b_} : {a};")
        lines.extend(call(1, "      "))
        lines.extend(f"      cur{c} = next{c};" for c in range(n_carry))
        lines.append("    }")
        lines.extend(
            f"    memcpy({result[form.carry_final[c]]}, cur{c}, {carry_bytes[c]});" for c in range(n_carry)
        )
    else:  # switch
        index = eqn.invars[form.index]
        last = len(form.bodies) - 1
        lines.append(f"    int64_t i = (int64_t)*(const {ctype(index.aval.dtype)} *){operand[form.index]};")
        lines.append(f"    i = i < 0 ? 0 : i > {last} ? {last} : i;")
        lines.append("    switch (i) {")
        for b in range(len(form.bodies)):
            lines.append(f"      {'default' if b == last else f'case {b}'}: {{")
            lines.extend(call(b, "        "))
            lines.append("        break;")
            lines.append("      }")
        lines.append("    }")
    lines.append("  }")
    return lines


def _listing(values, names) -> str:
    return ", ".join(names(v) for v in values) or "none"


def launcher(fn, segment, params=None):
    """A Python callable for one segment: inputs -> freshly allocated outputs (or the donated
    buffers given in `outs`, by output index). Scratch arenas are kept in a pool, one per
    concurrent caller, and reused across calls. `params` (an int64 array): the shape parameters
    of a generic library (generic.py), passed after the scratch arena."""
    fn.argtypes = [ctypes.c_void_p]
    fn.restype = None
    in_dtypes = [np.dtype(v.aval.dtype) for v in segment.inputs]
    out_specs = [(tuple(v.aval.shape), np.dtype(v.aval.dtype)) for v in segment.outputs]
    extra = () if params is None else (params.ctypes.data,)
    ptr_array = ctypes.c_void_p * (len(in_dtypes) + len(out_specs) + 1 + len(extra))
    scratch = segment.scratch_bytes
    pool: list = []
    empty = np.empty
    asarray = np.ascontiguousarray
    fast = launch_ext.launcher(fn, in_dtypes, out_specs, scratch, params)

    def run(*inputs, outs=None):
        if fast is not None and not outs:
            res = fast(*inputs)  # None: an input needs converting first
            if res is not None:
                return res
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
        ptrs = ptr_array(
            *[address(a) for a in ins], *[address(a) for a in res], arena[1] if arena else None, *extra
        )
        fn(ptrs)
        if arena:
            pool.append(arena)
        return res

    run.params = params  # alive as long as the launcher: the C reads it on every call
    run.native = True  # the fast path may call it directly (executor._direct_launcher)
    run.fast = fast
    return run


_char_at = ctypes.c_char.from_buffer
_addressof = ctypes.addressof


def address(a: np.ndarray) -> int:
    """The address of `a`'s first element: through the buffer protocol (0.2 us), or NumPy's
    ctypes view (0.8 us) for read-only and empty arrays, which the protocol refuses."""
    try:
        return _addressof(_char_at(a))
    except (TypeError, ValueError):
        return a.ctypes.data


def _fits(buffer, shape, dtype) -> bool:
    flags = buffer.flags
    return (
        type(buffer) is np.ndarray
        and buffer.shape == shape
        and buffer.dtype == dtype
        and flags.c_contiguous
        and flags.writeable
        and flags.aligned
    )


def _arena(size: int) -> tuple:
    """(buffer, its first ALIGNMENT-aligned address) holding `size` bytes."""
    buffer = np.empty(size + ALIGNMENT, np.uint8)
    base = buffer.ctypes.data
    return buffer, base + (-base) % ALIGNMENT
