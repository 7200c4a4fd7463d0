"""Convolutions from C: `conv_general_dilated` equations inside native segments run as im2col +
GEMM, for every layout, stride, padding, dilation and feature/batch group count (the forward
convolution and the transposed forms its gradients produce).

Per group, the output is an (output positions) x (group output features) matrix: each row is one
output position (batch index, then spatial coordinates), and equals that position's input window
(taps, then input features: the "im2col" row) times the kernel as a (taps x input features) x
(output features) matrix. The kernel is packed once per call; the rows are built in blocks of at
most BLOCK_BYTES, so the working memory stays small for large inputs, and each block is one
sgemm/dgemm call. When the output layout makes a block's rows and features two strided axes (the
channels-last and channels-first layouts), BLAS writes the result in place; otherwise it lands in
a block buffer and is scattered.

Lhs dilation (the input gradient of a strided convolution) puts holes between the input elements,
so most taps of a window would read zeros. The output positions are split into *phases*: along
each dilated axis, the positions whose windows meet real elements at the same taps form one
arithmetic progression, and each phase is a GEMM over only those taps.

Everything about the shapes is known when the C is rendered; `conv_form` decides the plan and the
working memory, `render_call` writes the C.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from morphax._src.compiler.backends.c.blas import GEMM_DTYPES, INT_MAX, gemm_operands
from morphax._src.compiler.backends.c.render import _strides

# im2col rows per GEMM call: about an L2 cache of them. The rows are built on one thread: an
# OpenMP team beside BLAS's own threads measured slower on every convolution of a CNN step.
BLOCK_BYTES = 1 << 21
ALIGN = 64


def conv_form(eqn) -> dict | None:
    """The im2col + GEMM plan of a `conv_general_dilated` equation, or None (Python step)."""
    operands = gemm_operands(eqn, "conv_general_dilated")
    if operands is None:
        return None
    lhs, rhs, out, dtype = operands
    if 0 in lhs.shape or 0 in rhs.shape or 0 in out.shape:
        return None
    p = eqn.params
    dn = p["dimension_numbers"]
    ls, ks, os_ = _strides(lhs.shape), _strides(rhs.shape), _strides(out.shape)
    groups = p["feature_group_count"] * p["batch_group_count"]
    out_features, in_features = rhs.shape[dn.rhs_spec[0]], rhs.shape[dn.rhs_spec[1]]
    taps = [rhs.shape[a] for a in dn.rhs_spec[2:]]
    out_batch = out.shape[dn.out_spec[0]]
    out_space = [out.shape[a] for a in dn.out_spec[2:]]
    per_group = out_features // groups
    if (
        max(math.prod(taps) * in_features, per_group, out_batch * math.prod(out_space), *os_, *ls, *ks)
        > INT_MAX // 2
    ):
        return None
    itemsize = dtype.itemsize
    phases, packed = [], 0
    for classes in itertools.product(*map(_classes, out_space, taps, p["window_strides"],
                                          p["padding"], p["lhs_dilation"], p["rhs_dilation"])):  # fmt: skip
        depth = math.prod(c[5] for c in classes) * in_features
        rows = out_batch * math.prod(c[2] for c in classes)
        block = max(1, min(rows, BLOCK_BYTES // max(depth * itemsize, 1)))
        phases.append({"dims": classes, "depth": depth, "rows": rows, "block": block, "packed_at": packed})
        packed += groups * depth * per_group
    form = {
        "ctype": GEMM_DTYPES[dtype],
        "groups": groups,
        "per_group": per_group,
        "in_features": in_features,
        "phases": phases,
        "out_batch": out_batch,
        # Input: batch and feature strides, spatial extents (dilated by lhs_dilation) and strides.
        "lhs_batch": ls[dn.lhs_spec[0]],
        "lhs_feature": ls[dn.lhs_spec[1]],
        "lhs_extent": [(lhs.shape[a] - 1) * d + 1 for a, d in zip(dn.lhs_spec[2:], p["lhs_dilation"])],
        "lhs_space_strides": [ls[a] for a in dn.lhs_spec[2:]],
        # Where group g starts in the input: batch groups split the batch, feature groups the features.
        "lhs_group": ls[dn.lhs_spec[0]] * out_batch
        if p["batch_group_count"] > 1
        else ls[dn.lhs_spec[1]] * in_features,
        "rhs_out": ks[dn.rhs_spec[0]],
        "rhs_in": ks[dn.rhs_spec[1]],
        "tap_strides": [ks[a] for a in dn.rhs_spec[2:]],
        "out_batch_stride": os_[dn.out_spec[0]],
        "out_feature": os_[dn.out_spec[1]],
        "out_space_strides": [os_[a] for a in dn.out_spec[2:]],
        "window_strides": list(p["window_strides"]),
        "padding_low": [lo for lo, _ in p["padding"]],
        "lhs_dilation": list(p["lhs_dilation"]),
        "rhs_dilation": list(p["rhs_dilation"]),
        "placement": "scatter",
        "blocked_by": "all",
        "row_step": None,
    }
    if len(phases) == 1 and all(c[2] == n for c, n in zip(phases[0]["dims"], out_space)):
        _place_in_output(form, out, dn, os_)
    cols = max(ph["block"] * ph["depth"] for ph in phases)
    block_buffer = max(ph["block"] for ph in phases) * per_group if form["placement"] == "scatter" else 0
    form["cols_at"] = _round_up(packed * itemsize)
    form["block_at"] = form["cols_at"] + _round_up(cols * itemsize)
    form["scratch"] = form["block_at"] + _round_up(block_buffer * itemsize)
    return form


def _classes(size, taps, stride, padding, lhs_dilation, rhs_dilation) -> list:
    """One spatial dimension's output coordinates grouped by which kernel taps reach an input
    element (not padding's holes of lhs dilation): [(first coordinate, step, count, first tap,
    step, count)], one entry per class that has coordinates. Without lhs dilation, one class:
    every coordinate, every tap."""
    if lhs_dilation == 1:
        return [(0, 1, size, 0, 1, taps)]
    classes = []
    for residue in range(lhs_dilation):
        coords = [o for o in range(size) if (o * stride - padding[0]) % lhs_dilation == residue]
        reach = [t for t in range(taps) if (residue + t * rhs_dilation) % lhs_dilation == 0]
        if coords:
            classes.append((*_progression(coords), *_progression(reach)))
    return classes


def _progression(values: list) -> tuple:
    """(first, step, count) of an arithmetic progression (values in a residue class are one)."""
    if not values:
        return 0, 1, 0
    step = values[1] - values[0] if len(values) > 1 else 1
    assert values == list(range(values[0], values[0] + step * len(values), step))
    return values[0], step, len(values)


def _place_in_output(form: dict, out, dn, os_) -> None:
    """When a block of rows and its output features are two strided axes of the output, BLAS
    writes them in place: rows uniformly spaced (across the batch, or within each batch index)
    and either unit-stride features (row-major) or unit-stride rows (column-major)."""
    phase = form["phases"][0]
    out_space = [c[2] for c in phase["dims"]]
    positions = math.prod(out_space)
    row_offsets = np.zeros((form["out_batch"], *out_space), np.int64)
    for d, axis in enumerate((dn.out_spec[0], *dn.out_spec[2:])):
        shape = [1] * (1 + len(out_space))
        shape[d] = out.shape[axis]
        row_offsets += np.arange(out.shape[axis], dtype=np.int64).reshape(shape) * os_[axis]
    row_step = _common_step(row_offsets.ravel())
    if row_step is None:
        steps = {_common_step(r) for r in row_offsets.reshape(form["out_batch"], positions)}
        if len(steps) != 1:
            return
        row_step = steps.pop()
        form["blocked_by"] = "batch"
        phase["block"] = min(phase["block"], positions)
    block, per_group, feature_stride = phase["block"], form["per_group"], form["out_feature"]
    row_step = row_step or per_group  # one row per block: its stride never matters
    if (feature_stride == 1 or per_group == 1) and row_step >= per_group:
        form["placement"] = "rows"  # row-major C: ldc = the row stride
    elif (row_step == 1 or block == 1) and (feature_stride >= block or per_group == 1):
        form["placement"] = "columns"  # column-major C: ldc = the feature stride
    else:
        form["blocked_by"] = "all"
        return
    form["row_step"] = row_step


def _common_step(offsets: np.ndarray) -> int | None:
    """The one difference between consecutive entries (0 for fewer than two), or None."""
    if offsets.size < 2:
        return 0
    steps = np.diff(offsets)
    return int(steps[0]) if (steps == steps[0]).all() else None


def _round_up(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def render_call(form: dict, lhs: str, rhs: str, out: str, temp: str, comment: str) -> list:
    """C lines computing one convolution from `lhs` and `rhs` into `out` with working memory at
    `temp` (form["scratch"] bytes)."""
    t, groups, phases = form["ctype"], form["groups"], form["phases"]
    lines = [
        f"  /* {comment} */",
        f"  /* im2col + GEMM: {groups} group(s), {len(phases)} phase(s) of output positions by the "
        f"kernel taps that reach input; result {_PLACEMENT[form['placement']]}. */",
        "  {",
        f"    const {t} *lhs = (const {t} *)({lhs});",
        f"    const {t} *rhs = (const {t} *)({rhs});",
        f"    {t} *out = ({t} *)({out});",
        f"    {t} *packed = ({t} *)({temp});",
        f"    {t} *cols = ({t} *)({temp} + {form['cols_at']});",
    ]
    if form["placement"] == "scatter":
        lines.append(f"    {t} *block = ({t} *)({temp} + {form['block_at']});")
    for phase in phases:
        if phase["depth"]:
            lines.extend(_pack(form, phase))
    for k, phase in enumerate(phases):
        lines.extend(_phase(form, phase, k))
    lines.append("  }")
    return lines


_PLACEMENT = {
    "rows": "written in place (row-major)",
    "columns": "written in place (column-major)",
    "scatter": "scattered from a block buffer",
}


def _axis(start: int, step: int, index: str) -> str:
    """C for start + step * index, without the trivial parts."""
    term = index if step == 1 else f"{step} * {index}"
    return term if start == 0 else f"{start} + {term}"


def _pack(form: dict, phase: dict) -> list:
    """C copying the kernel taps of one phase into `packed`: per group, a (taps, input feature)
    x (output feature) row-major matrix."""
    og = form["per_group"]
    lines = ["    {", f"      {form['ctype']} *w = packed + {phase['packed_at']};"]
    lines.append(f"      for (int64_t g = 0; g < {form['groups']}; g++)")
    offset = [f"(g * {og} + j) * {form['rhs_out']}", f"c * {form['rhs_in']}"]
    for d, (*_, t0, ts, tn) in enumerate(phase["dims"]):
        lines.append(f"      {'  ' * d}for (int64_t k{d} = 0; k{d} < {tn}; k{d}++)")
        offset.append(f"({_axis(t0, ts, f'k{d}')}) * {form['tap_strides'][d]}")
    pad = "  " * len(phase["dims"])
    lines.append(f"      {pad}for (int64_t c = 0; c < {form['in_features']}; c++)")
    lines.append(f"      {pad}  for (int64_t j = 0; j < {og}; j++)")
    lines.append(f"      {pad}    *w++ = rhs[{' + '.join(offset)}];")
    lines.append("    }")
    return lines


def _phase(form: dict, phase: dict, k: int) -> list:
    """C computing the output rows of one phase, block by block, for every group."""
    t, og, depth = form["ctype"], form["per_group"], phase["depth"]
    block, rows = phase["block"], phase["rows"]
    dims = ", ".join(
        f"o{d} = {_axis(o0, os, 'm')} ({on})" for d, (o0, os, on, *_) in enumerate(phase["dims"])
    )
    lines = [
        f"    /* phase {k}: {rows} rows ({dims or 'no spatial dimensions'}) x {depth} in blocks of {block} */",
        f"    for (int64_t g = 0; g < {form['groups']}; g++) {{",
        f"      const {t} *x = lhs + g * {form['lhs_group']};",
        f"      {t} *y = out + g * {og * form['out_feature']};",
        f"      const {t} *wg = packed + {phase['packed_at']} + g * {depth * og};",
    ]
    gemm = f"mx_gemm_rows_{t}"
    if form["blocked_by"] == "batch":
        positions = rows // form["out_batch"]
        lines.append(f"      for (int64_t b = 0; b < {form['out_batch']}; b++)")
        lines.append(f"      for (int64_t p0 = 0; p0 < {positions}; p0 += {block}) {{")
        lines.append(f"        const int64_t r0 = b * {positions} + p0;")
        lines.append(f"        const int64_t n = {positions} - p0 < {block} ? {positions} - p0 : {block};")
        first_row = f"b * {form['out_batch_stride']} + p0 * {form['row_step']}"
    else:
        lines.append(f"      for (int64_t r0 = 0; r0 < {rows}; r0 += {block}) {{")
        lines.append(f"        const int64_t n = {rows} - r0 < {block} ? {rows} - r0 : {block};")
        first_row = f"r0 * {form['row_step']}"
    if depth == 0:  # no tap reaches the input from these positions: zeros
        lines.extend(_scatter(form, phase, "0", "        "))
    else:
        lines.extend(_im2col(form, phase, "        "))
        if form["placement"] == "rows":
            lines.append(
                f"        {gemm}(cols, wg, y + {first_row}, n, {og}, {depth}, {form['row_step']}, 1);"
            )
        elif form["placement"] == "columns":
            ldc = max(form["out_feature"], 1)
            lines.append(f"        {gemm}(cols, wg, y + {first_row}, n, {og}, {depth}, 1, {ldc});")
        else:
            lines.append(f"        {gemm}(cols, wg, block, n, {og}, {depth}, {og}, 1);")
            lines.extend(_scatter(form, phase, f"block[(r - r0) * {og} + j]", "        "))
    lines.append("      }")
    lines.append("    }")
    return lines


def _position(form: dict, phase: dict, pad: str) -> list:
    """C declaring row r's batch index `b` and output coordinates o0, o1, ... in one phase."""
    lines = [f"{pad}int64_t q = r;"]
    for d in reversed(range(len(phase["dims"]))):
        o0, os, on = phase["dims"][d][:3]
        lines.append(f"{pad}const int64_t o{d} = {_axis(o0, os, f'(q % {on})')};")
        lines.append(f"{pad}q /= {on};")
    lines.append(f"{pad}const int64_t b = q;")
    return lines


def _scatter(form: dict, phase: dict, value: str, pad: str) -> list:
    """C storing `value` (an expression of r and j) at rows r0 .. r0 + n - 1 of the output."""
    where = " + ".join(
        [f"b * {form['out_batch_stride']}"] + [f"o{d} * {s}" for d, s in enumerate(form["out_space_strides"])]
    )
    lines = [f"{pad}for (int64_t r = r0; r < r0 + n; r++) {{"]
    lines.extend(_position(form, phase, pad + "  "))
    lines.append(f"{pad}  {form['ctype']} *dst = y + {where};")
    lines.append(
        f"{pad}  for (int64_t j = 0; j < {form['per_group']}; j++) dst[j * {form['out_feature']}] = {value};"
    )
    lines.append(f"{pad}}}")
    return lines


def _im2col(form: dict, phase: dict, pad: str) -> list:
    """C filling `cols` with rows r0 .. r0 + n - 1 of a phase: per tap that can reach the input,
    the input features under it (zeros where it falls on padding)."""
    t = form["ctype"]
    features, feature_stride = form["in_features"], form["lhs_feature"]
    lines = [f"{pad}for (int64_t r = r0; r < r0 + n; r++) {{"]
    inner = pad + "  "
    lines.extend(_position(form, phase, inner))
    lines.append(f"{inner}const {t} *xb = x + b * {form['lhs_batch']};")
    lines.append(f"{inner}{t} *dst = cols + (r - r0) * {phase['depth']};")
    ok = []
    for d, (*_, t0, ts, tn) in enumerate(phase["dims"]):
        ind = inner + "  " * d
        stride, low = form["window_strides"][d], form["padding_low"][d]
        ldil, rdil = form["lhs_dilation"][d], form["rhs_dilation"][d]
        lines.append(f"{ind}for (int64_t k{d} = 0; k{d} < {tn}; k{d}++) {{")
        tap = _axis(t0, ts, f"k{d}")
        lines.append(f"{ind}  int64_t i{d} = o{d} * {stride} + ({tap}) * {rdil} - ({low});")
        cond = f"(i{d} >= 0 && i{d} < {form['lhs_extent'][d]})"
        lines.append(f"{ind}  const int ok{d} = {' && '.join(ok + [cond])};")
        if ldil > 1:  # the phase's taps land on input elements, not between them
            lines.append(f"{ind}  i{d} /= {ldil};")
        ok = [f"ok{d}"]
    ind = inner + "  " * len(phase["dims"])
    src = " + ".join(f"i{d} * {s}" for d, s in enumerate(form["lhs_space_strides"])) or "0"
    lines.append(f"{ind}if ({ok[0] if ok else '1'}) {{")
    lines.append(f"{ind}  const {t} *src = xb + {src};")
    read = "src[c]" if feature_stride == 1 else f"src[c * {feature_stride}]"
    lines.append(f"{ind}  for (int64_t c = 0; c < {features}; c++) dst[c] = {read};")
    lines.append(f"{ind}}} else {{")
    lines.append(f"{ind}  for (int64_t c = 0; c < {features}; c++) dst[c] = 0;")
    lines.append(f"{ind}}}")
    lines.append(f"{ind}dst += {features};")
    for d in reversed(range(len(phase["dims"]))):
        lines.append(f"{inner + '  ' * d}}}")
    lines.append(f"{pad}}}")
    return lines
