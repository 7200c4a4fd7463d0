"""Rendering fused kernels to C: one function per kernel, named after the program, with locals
named after the jaxpr variables they hold (`v_c` for the printed jaxpr's `c`) and a comment listing
the equations it fuses. The loops (flat, nested, tiled; reductions with their accumulators and
epilogue; OpenMP where the work pays for threads) are built here; each element's C comes from
`scalar.py`.
"""

from __future__ import annotations

import hashlib

import numpy as np

from morphax._src.compiler.backends.c import scalar
from morphax._src.compiler.backends.c.scalar import (  # noqa: F401  (re-exported for the backend)
    _MATH,
    _NARROW,
    CODEGEN_VERSION,
    DTYPES,
    MATHLIB,
    PRELUDE,
    REDUCE_DTYPES,
    REDUCE_OPS,
    _int_max,
    _int_min,
    _node_expr,
    compute_dtype,
    ctype,
    expr,
    literal,
    local_ctype,
    narrow_store,
    supports,
    widen,
)
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.index_expr import IndexExpr, row_major_offset

with open(__file__, "rb") as _fh, open(scalar.__file__, "rb") as _fs:
    # The renderer's own text: the disk cache is keyed by a description of the program, not the
    # rendered source, so any change here (helpers, prelude, rendering) must change the key.
    RENDERER_HASH = hashlib.sha256(_fh.read() + _fs.read() + MATHLIB.encode()).hexdigest()


# -------------------------------------------------------------------------------------- kernels


def _strides(shape) -> list:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def _offset(index, shape, loop_names) -> str:
    """C expression of the row-major offset of `index` (IndexExprs) into an array of `shape`."""
    if not shape:
        return "0"
    return row_major_offset(index, shape).to_c(loop_names)


_REDUCE_INIT = {
    "reduce_sum": lambda t: literal(0, t),
    "reduce_prod": lambda t: literal(1, t),
    "reduce_and": lambda t: literal(1, t) if _dtypes.is_bool(t) else f"(({ctype(t)})~({ctype(t)})0)",
    "reduce_or": lambda t: literal(0, t),
    "reduce_max": lambda t: literal(-np.inf, t) if _dtypes.is_floating(t) else _int_min(t),
    "reduce_min": lambda t: literal(np.inf, t) if _dtypes.is_floating(t) else _int_max(t),
}


def reduce_supported(op: str, dtype, out_dtype) -> bool:
    dtype, out_dtype = np.dtype(dtype), np.dtype(out_dtype)
    if dtype not in REDUCE_DTYPES or out_dtype not in REDUCE_DTYPES:
        return False
    if op in ("argmax", "argmin"):
        # Values are compared as doubles: exact for every dtype up to 32 bits and float64.
        return _dtypes.is_integer(out_dtype) and (dtype.itemsize <= 4 or dtype == np.float64)
    if op not in REDUCE_OPS or out_dtype != dtype:
        return False
    if op in ("reduce_and", "reduce_or"):
        return _dtypes.is_integer(dtype) or _dtypes.is_bool(dtype)
    return not _dtypes.is_bool(dtype) or op in ("reduce_max", "reduce_min")


def _combine(op: str, acc: str, v: str, t) -> str:
    fake = type("N", (), {"dtype": np.dtype(t), "params": {}})()
    if op == "reduce_sum":
        return expr("add", [acc, v], fake, [t, t])
    if op == "reduce_prod":
        return expr("mul", [acc, v], fake, [t, t])
    if op == "reduce_max":
        return expr("max", [acc, v], fake, [t, t])
    if op == "reduce_min":
        return expr("min", [acc, v], fake, [t, t])
    if op == "reduce_and":
        return f"(({ctype(t)})(({acc}) & ({v})))"
    return f"(({ctype(t)})(({acc}) | ({v})))"


# Threads pay off only for enough work: memory-bound loops of a few hundred thousand elements
# run faster on one core than a thread team costs to wake (and far slower when another process
# holds the other cores). Work is elements times ops, a transcendental counting as 20.
PARALLEL_WORK = 4_000_000
PARALLEL_MIN_ELEMENTS = 1 << 16
TILE = 32


def _work(kernel, size: int) -> int:
    """The kernel's work over `size` points: elements times ops, a transcendental counting 20."""
    return size * sum(20 if n.op in _MATH else 1 for n in kernel.nodes)


def _worth_threads(kernel, size: int, min_elements: int) -> bool:
    return size >= min_elements and _work(kernel, size) >= PARALLEL_WORK


def _strided_inner_load(loads, in_shapes, domain) -> bool:
    """Whether some load walks its buffer with a stride > 1 along the innermost loop (a transpose):
    such kernels are tiled so both the load and the store stay in cache."""
    inner = f"i{len(domain) - 1}"
    for ld in loads:
        shape = in_shapes[ld.slot]
        if not shape:
            continue
        for atom, coeff in row_major_offset(ld.index, shape).terms:
            if getattr(atom, "name", None) == inner and abs(coeff) > 1:
                return True
    return False


def _clamped_scalar(off, pointers, in_shapes, kernel) -> str:
    """The integer at `off` clamped into [lo, hi], compared in its own type first: an unsigned
    value above INT64_MAX must clamp to hi, not wrap negative."""
    dtype = np.dtype(kernel.inputs[off.slot].aval.dtype)
    value = f"{pointers[off.slot]}[{_offset(off.index, in_shapes[off.slot], {})}]"
    t = ctype(dtype)
    if dtype.kind == "u":
        return f"({value} > ({t}){off.hi} ? (int64_t){off.hi} : (int64_t){value})"
    return f"((int64_t){value} < {off.lo} ? (int64_t){off.lo} : ((int64_t){value} > {off.hi} ? (int64_t){off.hi} : (int64_t){value}))"


def _guard_c(guard, index_names) -> str:
    """`guard` (Primitive.piecewise_map) as a C condition. `&&` short-circuits, so the remainder
    is taken only of a dividend already known to be >= 0 (C's % truncates)."""
    parts = []
    for bound, lo, hi, step in guard:
        e = IndexExpr.lift(bound).to_c(index_names)
        parts.append(f"({e}) >= {lo} && ({e}) < {hi}")
        if step > 1:
            parts.append(f"(({e}) - {lo}) % {step} == 0")
    return "(" + " && ".join(parts) + ")" if parts else "1"


def _tiled_loops(kernel, domain, par, body, store_lines, loop_names) -> list:
    """The last two loops in TILE x TILE blocks (threads over the outermost loop)."""
    rank = len(domain)
    a, b = rank - 2, rank - 1
    lines, indent = [], "  "
    for d in range(a):
        if d == 0 and par:
            lines.append(f"{indent}#pragma omp parallel for")
        lines.append(f"{indent}for (int64_t i{d} = 0; i{d} < {domain[d]}; i{d}++) {{")
        indent += "  "
    if a == 0 and par:
        lines.append(f"{indent}#pragma omp parallel for")
    lines.append(f"{indent}for (int64_t t{a} = 0; t{a} < {domain[a]}; t{a} += {TILE}) {{")
    lines.append(f"{indent}  for (int64_t t{b} = 0; t{b} < {domain[b]}; t{b} += {TILE}) {{")
    indent += "    "
    for d in (a, b):
        end = f"(t{d} + {TILE} < {domain[d]} ? t{d} + {TILE} : {domain[d]})"
        if d == b:
            lines.append(f"{indent}#pragma omp simd")
        lines.append(f"{indent}for (int64_t i{d} = t{d}; i{d} < {end}; i{d}++) {{")
        indent += "  "
    stmts, local = body(indent, loop_names, False)
    lines += stmts + store_lines(indent, local, loop_names, False)
    for _ in range(rank + 2):
        indent = indent[:-2]
        lines.append(f"{indent}}}")
    lines.append("}")
    return lines


class _Emitter:
    """The C of one kernel's element computations: its pointer declarations (`in_a` for input
    `a`, `out_b` for output `b`, read from `buf[base + slot]`) and, per phase, the statements
    computing its nodes at one point of the domain and storing its outputs there."""

    def __init__(self, kernel, names_ctx, base: int = 0):
        self.kernel = kernel
        self.names = names_ctx.name
        self.in_shapes = [tuple(v.aval.shape) for v in kernel.inputs]
        self.identity = tuple(IndexExpr.var(f"i{d}", n) for d, n in enumerate(kernel.domain))
        self.pointers, self.outs = {}, []
        self.declarations = []
        # A donated input overwritten in place (kernel.aliases) shares memory with its store:
        # neither pointer is `restrict` (each element is read before it is written, in one
        # iteration).
        aliased = set(kernel.aliases.values())
        for slot, v in enumerate(kernel.inputs):
            ptr = f"in_{self.names(v)}"
            self.pointers[slot] = ptr
            t = ctype(v.aval.dtype)
            qual = "" if slot in aliased else "restrict "
            self.declarations.append(f"const {t} *{qual}{ptr} = (const {t} *)buf[{base + slot}];")
        for k, store in enumerate(kernel.stores):
            ptr = f"out_{self.names(store.var)}"
            t = ctype(store.var.aval.dtype)
            self.outs.append(ptr)
            qual = "" if k in kernel.aliases else "restrict "
            self.declarations.append(f"{t} *{qual}{ptr} = (({t} *)buf[{base + len(kernel.inputs) + k}]);")

    def body(self, indent: str, index_names: dict, flat_index: bool, phase: int = 0) -> tuple:
        """(statements, {node id: C local}) computing the nodes of `phase` at one point."""
        kernel, names, in_shapes = self.kernel, self.names, self.in_shapes
        out = []
        local = {}
        used = set()
        for nid, node in enumerate(kernel.nodes):
            if node.phase != phase:
                continue
            name = (
                f"{'x' if node.op == 'load' else 'v'}_{names(node.var)}"
                if node.var is not None
                else f"t{nid}"
            )
            if name in used:
                name = f"{name}_{nid}"
            used.add(name)
            local[nid] = name
            if node.op == "load":
                ld = node.params["load"]
                shape = in_shapes[ld.slot]
                if flat_index and shape:
                    all_const = all(IndexExpr.lift(i).is_const for i in ld.index)
                    off = _offset(ld.index, shape, index_names) if all_const else "i"
                else:
                    off = _offset(ld.index, shape, index_names)
                ct = local_ctype(node.dtype)
                value = widen(f"{self.pointers[ld.slot]}[{off}]", node.dtype)
                if ld.guard:  # the buffer is read only inside the guard (C evaluates one branch)
                    value = f"{_guard_c(ld.guard, index_names)} ? {value} : {local[node.args[0]]}"
                out.append(f"{indent}const {ct} {name} = {value};")
            elif node.op == "guarded":
                inside, outside = (local[a] for a in node.args)
                cond = _guard_c(node.params["guard"], index_names)
                out.append(f"{indent}const {local_ctype(node.dtype)} {name} = {cond} ? {inside} : {outside};")
            elif node.op == "reduced":  # the epilogue reads a finished reduction
                ptr = f"out_{names(node.params['var'])}"
                epi = kernel.epilogue_domain
                off = _offset(tuple(IndexExpr.var(f"i{d}", n) for d, n in enumerate(epi)), epi, index_names)
                ct = local_ctype(node.dtype)
                out.append(f"{indent}const {ct} {name} = {widen(f'{ptr}[{off}]', node.dtype)};")
            elif node.op == "const":
                value = literal(
                    np.asarray(node.params["value"], node.dtype).astype(compute_dtype(node.dtype)),
                    compute_dtype(node.dtype),
                )
                out.append(f"{indent}const {local_ctype(node.dtype)} {name} = {value};")
            elif node.op == "result":
                out.append(f"{indent}const uint32_t {name} = {local[node.args[0]]}_{node.params['index']};")
            elif node.dtype is None:  # a multiple-result op (threefry2x32)
                args = [local[a] for a in node.args]
                out.append(f"{indent}uint32_t {name}_0, {name}_1;")
                out.append(f"{indent}mxk_threefry2x32({', '.join(args)}, &{name}_0, &{name}_1);")
            else:
                args = [local[a] for a in node.args]
                code = _node_expr(node, args, [kernel.nodes[a].dtype for a in node.args])
                out.append(f"{indent}const {local_ctype(node.dtype)} {name} = {code};")
        return out, local

    def store_lines(self, indent, local, index_names, flat_index, phase: int = 0) -> list:
        """The stores of `phase`'s outputs (not the reductions) at one point."""
        kernel = self.kernel
        out = []
        dom = kernel.domain if phase == 0 else kernel.epilogue_domain
        ident = self.identity if phase == 0 else tuple(IndexExpr.var(f"i{d}", n) for d, n in enumerate(dom))
        for ptr, store in zip(self.outs, kernel.stores):
            if store.reduce is not None or kernel.nodes[store.node].phase != phase:
                continue
            off = "i" if flat_index else _offset(ident, dom, index_names)
            out.append(f"{indent}{ptr}[{off}] = {narrow_store(local[store.node], store.var.aval.dtype)};")
        return out


def _comment(kernel, names_ctx) -> list:
    text = kernel.describe(names_ctx).replace("*/", "* /")
    return [f"{kernel.name}: fuses"] + [f"  {ln}" for ln in text.splitlines()]


def _block_comment(text: list) -> str:
    """A C block comment: its first line after the opening, the others (indented by two) below."""
    return "/* " + "\n".join(ln if k == 0 else f" *   {ln[2:]}" for k, ln in enumerate(text)) + "\n */"


def render_kernel(kernel, names_ctx, threads_threshold: int = PARALLEL_MIN_ELEMENTS) -> str:
    """The C function for `kernel`. `names_ctx` (a jaxpr name context) names the variables as the
    printed program does: `in_a` points at input `a`, `v_c` holds `c`."""
    domain = kernel.domain
    rank = len(domain)
    size = int(np.prod(domain, dtype=np.int64)) if domain else 1
    red_axes = tuple(sorted(a % rank for a in kernel.reduce_axes)) if rank else ()
    has_iota = any(n.op == "iota" for n in kernel.nodes)
    loads = [n.params["load"] for n in kernel.nodes if n.op == "load"]
    emit = _Emitter(kernel, names_ctx)
    in_shapes = emit.in_shapes
    linear = row_major_offset(emit.identity, domain)
    guarded = any(n.op == "guarded" or (n.op == "load" and n.params["load"].guard) for n in kernel.nodes)
    flat = (
        not any(st.reduce for st in kernel.stores)
        and not has_iota
        and not guarded
        and all(
            row_major_offset(ld.index, in_shapes[ld.slot]) == linear
            or all(IndexExpr.lift(i).is_const for i in ld.index)
            for ld in loads
        )
    )
    lines = [_block_comment(_comment(kernel, names_ctx))]
    # Static: only the segments in the same file call a kernel, so the C compiler may inline it
    # there (a loop body's kernel then costs no call per iteration).
    lines.append(f"static void {kernel.name}(void *const *restrict buf) {{")
    lines += [f"  {d}" for d in emit.declarations]
    outs = emit.outs
    pointers = emit.pointers
    loop_names = {f"i{d}": f"i{d}" for d in range(rank)}
    flat_names = {f"i{d}": "i" for d in range(rank)}
    for off in kernel.offsets:  # run-time window offsets (dynamic_slice), clamped as XLA does
        lines.append(f"  const int64_t {off.name} = {_clamped_scalar(off, pointers, in_shapes, kernel)};")
        loop_names[off.name] = flat_names[off.name] = off.name
    body, store_lines = emit.body, emit.store_lines

    par = _worth_threads(kernel, size, threads_threshold)
    if flat:
        lines.append(f"  const int64_t n = {size};")
        lines.append("  #pragma omp parallel for simd" if par else "  #pragma omp simd")
        lines.append("  for (int64_t i = 0; i < n; i++) {")
        stmts, local = body("    ", flat_names, True)
        lines += stmts + store_lines("    ", local, flat_names, True)
        lines.append("  }")
        lines.append("}")
        return "\n".join(lines)

    # Nested loops over the domain. Each reduction accumulates in memory (`m_<out>`: the output
    # itself, or wider scratch); a suffix of reduced axes accumulates into locals first
    # (vectorizable), other reduced axes straight into memory.
    kept = [d for d in range(rank) if d not in red_axes]
    out_shape = tuple(domain[d] for d in kept)
    out_size = int(np.prod(out_shape, dtype=np.int64)) if out_shape else 1
    accs = [
        _Accumulator(p, s, out_size, red_axes) for p, s in zip(outs, kernel.stores) if s.reduce is not None
    ]
    for acc in accs:
        lines += acc.setup()
    suffix_start = rank
    while suffix_start > 0 and (suffix_start - 1) in red_axes:
        suffix_start -= 1
    out_index = tuple(IndexExpr.var(f"i{d}", domain[d]) for d in kept)
    off = _offset(out_index, out_shape, loop_names)
    if not accs and rank >= 2 and _strided_inner_load(loads, in_shapes, domain):
        return "\n".join(lines + _tiled_loops(kernel, domain, par, body, store_lines, loop_names))
    if (
        accs
        and not kept
        and rank >= 2
        and domain[0] > 1
        and _worth_row_partials(accs, size, threads_threshold)
    ):
        lines += _row_partials(kernel, domain, accs, body)
        return "\n".join(lines + _kernel_end(kernel, accs, body, store_lines))
    indent = "  "
    outer_par = par and rank > 0 and 0 not in red_axes and domain[0] > 1
    for d in range(rank):
        if accs and d == suffix_start:
            for acc in accs:
                lines += acc.locals(indent)
        if d == 0 and outer_par and rank == 1 and not accs:
            lines.append(f"{indent}#pragma omp parallel for simd")  # the only loop: both
        elif d == 0 and outer_par:
            lines.append(f"{indent}#pragma omp parallel for")
        elif d == rank - 1:
            clause = _simd_reduction(accs) if d >= suffix_start else ""
            if clause is not None:
                lines.append(f"{indent}#pragma omp simd{clause}")
        lines.append(f"{indent}for (int64_t i{d} = 0; i{d} < {domain[d]}; i{d}++) {{")
        indent += "  "
    stmts, local = body(indent, loop_names, False)
    lines += stmts + store_lines(indent, local, loop_names, False)
    for acc in accs:
        if suffix_start < rank:
            lines += acc.into_local(indent, local[acc.store.node])
        else:
            lines += acc.into_memory(indent, local[acc.store.node], off)
    for d in range(rank - 1, -1, -1):
        indent = indent[:-2]
        lines.append(f"{indent}}}")
        if accs and d == suffix_start:
            for acc in accs:
                lines += acc.local_into_memory(indent, off)
    return "\n".join(lines + _kernel_end(kernel, accs, body, store_lines))


def _kernel_end(kernel, accs, body, store_lines) -> list:
    """A reduction kernel's last lines: each accumulator's finish, the epilogue, the brace."""
    lines = []
    for acc in accs:
        lines += acc.finish()
    if any(n.phase == 1 for n in kernel.nodes):
        lines += _epilogue(kernel, body, store_lines)
    return lines + ["}"]


# A reduction of every axis reads its whole input for one result: worth threads from this many
# elements (a memory-bound pass of 256K float32s takes tens of microseconds on one core).
PARALLEL_REDUCTION_ELEMENTS = 1 << 18


def _worth_row_partials(accs, size: int, threads_threshold: int) -> bool:
    """Whether a reduction of all axes runs as per-row partial results over threads: large
    enough, and only accumulators whose partials combine (not argmax/argmin, whose index is of
    the one reduced axis)."""
    if any(acc.arg for acc in accs):
        return False
    return size >= max(PARALLEL_REDUCTION_ELEMENTS, threads_threshold)


def _row_partials(kernel, domain, accs, body) -> list:
    """The loops of a reduction of all axes as rows over threads: each row of the first axis
    reduces the others into its own partial (the accumulator's locals, as the serial loops do),
    and the partials then combine into the result row after row, on one thread. The order of
    every addition depends only on the shape, never on the thread count, so results are the same
    bits at any number of threads."""
    rank = len(domain)
    loop_names = {f"i{d}": f"i{d}" for d in range(rank)}
    lines = []
    for acc in accs:
        p, t = acc.p, ctype(acc.acc_dt if not acc.keyed else acc.out_dt)
        lines += [
            f"  {t} *restrict part_{p} = ({t} *)malloc(sizeof({t}) * {domain[0]});",
            f"  if (!part_{p}) return;",
        ]
    lines.append("  #pragma omp parallel for")
    lines.append(f"  for (int64_t i0 = 0; i0 < {domain[0]}; i0++) {{")
    indent = "    "
    for acc in accs:
        lines += acc.locals(indent)
    for d in range(1, rank):
        if d == rank - 1:
            clause = _simd_reduction(accs)
            if clause is not None:
                lines.append(f"{indent}#pragma omp simd{clause}")
        lines.append(f"{indent}for (int64_t i{d} = 0; i{d} < {domain[d]}; i{d}++) {{")
        indent += "  "
    stmts, local = body(indent, loop_names, False)
    lines += stmts
    for acc in accs:
        lines += acc.into_local(indent, local[acc.store.node])
    for _ in range(rank - 1):
        indent = indent[:-2]
        lines.append(f"{indent}}}")
    for acc in accs:
        # The accumulator's own step into memory, aimed at this row's partial.
        p = acc.p
        lines.append(
            f"    part_{p}[i0] = {_REDUCE_INIT[acc.op](acc.acc_dt if not acc.keyed else acc.out_dt)};"
        )
        lines += [ln.replace(f"m_{p}[0]", f"part_{p}[i0]") for ln in acc.local_into_memory("    ", "0")]
    lines.append("  }")
    for acc in accs:
        p = acc.p
        t = acc.acc_dt if not acc.keyed else acc.out_dt
        lines.append(
            f"  for (int64_t r = 0; r < {domain[0]}; r++) m_{p}[0] = {_combine(acc.op, f'm_{p}[0]', f'part_{p}[r]', t)};"
        )
        lines.append(f"  free(part_{p});")
    return lines


def _epilogue(kernel, body, store_lines) -> list:
    """Loops over the reduced domain running the phase-1 nodes on the finished reductions."""
    epi = kernel.epilogue_domain
    lines, indent = [], "  "
    names = {f"i{d}": f"i{d}" for d in range(len(epi))}
    for d, n in enumerate(epi):
        if d == len(epi) - 1:
            lines.append(f"{indent}#pragma omp simd")
        lines.append(f"{indent}for (int64_t i{d} = 0; i{d} < {n}; i{d}++) {{")
        indent += "  "
    if not epi:
        lines.append(f"{indent}{{")
        indent += "  "
    stmts, local = body(indent, names, False, phase=1)
    lines += stmts + store_lines(indent, local, names, False, phase=1)
    for _ in range(max(len(epi), 1)):
        indent = indent[:-2]
        lines.append(f"{indent}}}")
    return lines


def render_row_group(kernels, names_ctx, name: str, threads_threshold: int = PARALLEL_MIN_ELEMENTS) -> str:
    """One C function running `kernels` (a row group, compiler/row_fusion.py) row by row: for each
    row i0, every kernel's loops over the rest of its domain, its reductions finished into their
    outputs and its epilogue, in program order. `buf` holds each kernel's inputs and outputs in
    turn. Each kernel's pointers are declared in its own block, so a buffer one kernel writes and
    a later one reads is `restrict` in each block (no block both writes and reads it)."""
    rows = kernels[0].domain[0]
    head = [
        f"{name}: {len(kernels)} kernels run row by row over {rows} rows (each row of their buffers read from memory once)"
    ]
    for k in kernels:
        head += [f"  {ln}" for ln in _comment(k, names_ctx)]
    lines = [_block_comment(head)]
    lines.append(f"static void {name}(void *const *restrict buf) {{")
    sizes = [int(np.prod(k.domain, dtype=np.int64)) for k in kernels]
    if max(sizes) >= threads_threshold and sum(map(_work, kernels, sizes)) >= PARALLEL_WORK:
        lines.append("  #pragma omp parallel for")
    lines.append(f"  for (int64_t i0 = 0; i0 < {rows}; i0++) {{")
    base = 0
    for k in kernels:
        lines += _row_block(k, names_ctx, base, "    ")
        base += len(k.inputs) + len(k.stores)
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


def _row_block(kernel, names_ctx, base: int, indent: str) -> list:
    """The C of `kernel` for row i0: loops over the other axes of its domain (reducing all of
    them, or none), then its reductions' values stored and its epilogue."""
    emit = _Emitter(kernel, names_ctx, base)
    domain = kernel.domain
    rank = len(domain)
    inner = indent + "  "
    lines = [f"{indent}{{  /* {kernel.name} */"] + [f"{inner}{d}" for d in emit.declarations]
    accs = [
        _Accumulator(ptr, s, domain[0], tuple(range(1, rank)))
        for ptr, s in zip(emit.outs, kernel.stores)
        if s.reduce is not None
    ]
    for acc in accs:
        lines += acc.locals(inner)
    loop_names = {f"i{d}": f"i{d}" for d in range(rank)}
    ind = inner
    for d in range(1, rank):
        if d == rank - 1:
            clause = _simd_reduction(accs) if accs else ""
            if clause is not None:
                lines.append(f"{ind}#pragma omp simd{clause}")
        lines.append(f"{ind}for (int64_t i{d} = 0; i{d} < {domain[d]}; i{d}++) {{")
        ind += "  "
    stmts, local = emit.body(ind, loop_names, False)
    lines += stmts + emit.store_lines(ind, local, loop_names, False)
    for acc in accs:
        lines += acc.into_local(ind, local[acc.store.node])
    for _ in range(1, rank):
        ind = ind[:-2]
        lines.append(f"{ind}}}")
    for acc in accs:
        lines += acc.row_result(inner, "i0")
    if any(n.phase == 1 for n in kernel.nodes):
        epilogue_names = {"i0": "i0"}
        stmts, local = emit.body(inner, epilogue_names, False, phase=1)
        lines += stmts + emit.store_lines(inner, local, epilogue_names, False, phase=1)
    lines.append(f"{indent}}}")
    return lines


class _Accumulator:
    """The C of one reduction output `p`: setup, per-element combine, finish."""

    def __init__(self, p, store, out_size, red_axes):
        self.p, self.store, self.out_size = p, store, out_size
        self.op = store.reduce
        self.out_dt = np.dtype(store.var.aval.dtype)
        self.arg = self.op in ("argmax", "argmin")
        if self.arg:
            # The loop variable of the reduced axis (none when it has size 1: the index is 0).
            self.index_var = f"i{red_axes[0]}" if red_axes else "0"
        self.acc_dt = _acc_dtype(self.op, self.out_dt) if not self.arg else None
        # Float max/min over a suffix of axes accumulate an order-preserving integer key of the
        # bits (-0 < +0, as XLA's max) plus a NaN flag: integer max vectorizes, NaN rules don't.
        self.keyed = self.op in ("reduce_max", "reduce_min") and self.out_dt in (
            np.dtype(np.float32),
            np.dtype(np.float64),
        )
        self.bits = 32 if self.out_dt == np.float32 else 64

    def setup(self) -> list:
        p, n = self.p, max(self.out_size, 1)
        if self.arg:
            return [
                f"  int64_t *restrict mi_{p} = (int64_t *)malloc(sizeof(int64_t) * {n});",
                f"  double *restrict mv_{p} = (double *)malloc(sizeof(double) * {n});",
                f"  if (!mi_{p} || !mv_{p}) {{ free(mi_{p}); free(mv_{p}); return; }}",
                f"  for (int64_t o = 0; o < {self.out_size}; o++) mi_{p}[o] = -1;",
            ]
        a = self.acc_dt
        if a != self.out_dt:
            head = [
                f"  {ctype(a)} *restrict m_{p} = ({ctype(a)} *)malloc(sizeof({ctype(a)}) * {n});",
                f"  if (!m_{p}) return;",
            ]
        else:
            head = [f"  {ctype(a)} *restrict m_{p} = {p};"]
        return head + [
            f"  for (int64_t o = 0; o < {self.out_size}; o++) m_{p}[o] = {_REDUCE_INIT[self.op](a)};"
        ]

    def _take(self, best: str, v: str) -> str:
        # argmax/argmin: NaN beats everything and the first one wins; ties keep the first index.
        cmp = ">" if self.op == "argmax" else "<"
        return f"(({best}) == ({best}) && (({v}) != ({v}) || ({v}) {cmp} ({best})))"

    def locals(self, indent) -> list:
        p = self.p
        if self.arg:
            return [f"{indent}int64_t li_{p} = -1;", f"{indent}double lv_{p} = 0;"]
        if self.keyed:
            b, start = self.bits, "-__builtin_inf()" if self.op == "reduce_max" else "__builtin_inf()"
            return [
                f"{indent}int{b}_t acc_{p} = mxk_key{b}({start});",
                f"{indent}uint8_t nan_{p} = 0;",
            ]
        return [f"{indent}{ctype(self.acc_dt)} acc_{p} = {_REDUCE_INIT[self.op](self.acc_dt)};"]

    def into_local(self, indent, v) -> list:
        p = self.p
        if self.arg:
            return [
                f"{indent}if (li_{p} < 0 || {self._take(f'lv_{p}', f'(double)({v})')}) "
                f"{{ lv_{p} = (double)({v}); li_{p} = {self.index_var}; }}"
            ]
        if self.keyed:
            cmp = ">" if self.op == "reduce_max" else "<"
            return [
                f"{indent}{{ const int{self.bits}_t k_ = mxk_key{self.bits}({v}); "
                f"acc_{p} = k_ {cmp} acc_{p} ? k_ : acc_{p}; nan_{p} |= ({v}) != ({v}); }}"
            ]
        val = v if self.acc_dt == self.out_dt else f"(({ctype(self.acc_dt)}){v})"
        return [f"{indent}acc_{p} = {_combine(self.op, f'acc_{p}', val, self.acc_dt)};"]

    def into_memory(self, indent, v, off) -> list:
        p = self.p
        if self.arg:
            return [
                f"{indent}if (mi_{p}[{off}] < 0 || {self._take(f'mv_{p}[{off}]', f'(double)({v})')}) "
                f"{{ mv_{p}[{off}] = (double)({v}); mi_{p}[{off}] = {self.index_var}; }}"
            ]
        val = v if self.acc_dt == self.out_dt else f"(({ctype(self.acc_dt)}){v})"
        return [f"{indent}m_{p}[{off}] = {_combine(self.op, f'm_{p}[{off}]', val, self.acc_dt)};"]

    def local_into_memory(self, indent, off) -> list:
        p = self.p
        if self.arg:
            # The suffix holds the only reduced axis: this local is the whole answer.
            return [f"{indent}mi_{p}[{off}] = li_{p};"]
        if self.keyed:
            t = ctype(self.out_dt)
            value = f'(nan_{p} ? ({t})__builtin_nan("") : mxk_unkey{self.bits}(acc_{p}))'
            return [f"{indent}m_{p}[{off}] = {_combine(self.op, f'm_{p}[{off}]', value, self.out_dt)};"]
        return [f"{indent}m_{p}[{off}] = {_combine(self.op, f'm_{p}[{off}]', f'acc_{p}', self.acc_dt)};"]

    def row_result(self, indent, off) -> list:
        """The finished reduction at `off` from this row's locals: the same operations as
        `setup`, `local_into_memory` and `finish` on that element (the initial value combined
        with the local, rounded to the output type), so row-fused kernels give the same bits."""
        p, t = self.p, ctype(self.out_dt)
        if self.arg:
            return [f"{indent}{p}[{off}] = ({t})li_{p};"]
        if self.keyed:
            value = f'(nan_{p} ? ({t})__builtin_nan("") : mxk_unkey{self.bits}(acc_{p}))'
            init = _REDUCE_INIT[self.op](self.out_dt)
            return [f"{indent}{p}[{off}] = {_combine(self.op, init, value, self.out_dt)};"]
        value = _combine(self.op, _REDUCE_INIT[self.op](self.acc_dt), f"acc_{p}", self.acc_dt)
        if self.acc_dt != self.out_dt:
            value = f"({t})({value})"
        return [f"{indent}{p}[{off}] = {value};"]

    def finish(self) -> list:
        p, t = self.p, ctype(self.out_dt)
        if self.arg:
            return [
                f"  for (int64_t o = 0; o < {self.out_size}; o++) {p}[o] = ({t})mi_{p}[o];",
                f"  free(mi_{p});",
                f"  free(mv_{p});",
            ]
        if self.acc_dt != self.out_dt:
            return [
                f"  for (int64_t o = 0; o < {self.out_size}; o++) {p}[o] = ({t})m_{p}[o];",
                f"  free(m_{p});",
            ]
        return []


def _acc_dtype(reduce: str, dtype) -> np.dtype:
    """The accumulator type: float32 sums accumulate in float64 and round once at the end, so a
    sum of millions of elements stays accurate along any axis; others in their own type. The
    NumPy reference (prims/reductions.py `_sum_impl`) sums in the same width, and in the same
    order along a non-contiguous axis (row after row); along a contiguous one NumPy adds pairwise
    and these loops in SIMD lanes, which differ only in float64's last bits, below the final
    rounding but at rare ties. A reduced axis is never split across threads: results do not
    depend on the thread count."""
    dtype = np.dtype(dtype)
    if reduce == "reduce_sum" and dtype == np.float32:
        return np.dtype(np.float64)
    return dtype


def _simd_reduction(accs):
    """The clause for an innermost loop that accumulates into locals: floating sums and
    products vectorize with OpenMP's reduction; max/min (NaN rules), arg reductions and integer
    accumulators (which wrap through unsigned casts) are left to the compiler (None: no pragma)."""
    ops = {"reduce_sum": "+", "reduce_prod": "*"}
    parts = []
    for acc in accs:
        if acc.keyed:
            parts.append(f" reduction({acc.op[7:]}:acc_{acc.p}) reduction(|:nan_{acc.p})")
            continue
        op = ops.get(acc.op)
        if op is None or not _dtypes.is_floating(acc.out_dt):
            return None
        parts.append(f" reduction({op}:acc_{acc.p})")
    return "".join(parts)
