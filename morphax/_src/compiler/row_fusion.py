"""Row fusion: consecutive kernels that work row by row over the same leading axis share one loop
over the rows, so each row of their common inputs is read from memory once and then from cache.

The softmax cross-entropy gradient over (4096, 1000) logits is four kernels after fusion (row max,
row sum of exps, row sums against the labels, the gradient): four passes over 16 MB of logits and
two over the labels. Run row by row, each 4 KB row stays in the first-level cache while all four
kernels process it.

A kernel is *row-wise* (`row_extent`) when its domain has a leading axis of R > 1 rows that it
does not reduce, and it reduces either nothing or every other axis (so its reduced outputs and
epilogue hold one element per row); it binds no run-time offsets and aliases no donated input.
A group (`row_groups`, decided per native segment) is a run of consecutive row-wise kernels with
the same R in which every kernel reads a buffer an earlier member reads or writes (kernels that
share nothing gain nothing from running interleaved), and reads the values produced by earlier
members only *row-locally*: for row i, only elements of row i (the linear offset is ``i * row_size`` plus a
part in ``[0, row_size)`` that does not depend on i). Then running the members' loops for row 0,
then all of them for row 1, and so on computes the same values as running each kernel whole,
bit for bit: every element and every per-row reduction is computed by the same operations in the
same order. Kernels that write a donated input's buffer stay out (an earlier member might still
read the overwritten rows), and so do stores into the scratch arena shared by values whose
lifetimes end inside the group: compiler/segments.py plans the group's values as alive for the
whole group.

`cluster(steps)` (after fusion) moves a row-wise kernel up to just after an earlier one it could
join, past steps it does not depend on (the cross-entropy's scalar mean sits between the row sums
and the gradient), as compiler/sibling_merge.py moves merged kernels.
"""

from __future__ import annotations

from morphax._src.compiler.kernel_ir import Kernel
from morphax._src.core.index_expr import IndexExpr, row_major_offset

# A group pays when its rows are long enough to amortize running each member's per-row code
# (its epilogue is scalar per row) and short enough that a row of every buffer stays in cache
# between members (256 KB: well inside a second-level cache).
MIN_ROW_ELEMENTS = 256
MAX_ROW_BYTES = 256 * 1024


def row_extent(kernel) -> int | None:
    """R when `kernel` is row-wise over R rows (see the module docstring), else None."""
    if not isinstance(kernel, Kernel) or not kernel.domain or kernel.offsets or kernel.aliases:
        return None
    rank = len(kernel.domain)
    reduced = sorted(a % rank for a in kernel.reduce_axes)
    if reduced and reduced != list(range(1, rank)):
        return None
    rows = int(kernel.domain[0])
    return rows if rows > 1 else None


def _row_elements(kernel) -> int:
    n = 1
    for d in kernel.domain[1:]:
        n *= int(d)
    return n


def _row_bytes(kernel) -> int:
    """Bytes of one row of every buffer `kernel` reads or writes."""
    rows = int(kernel.domain[0])
    buffers = list(kernel.inputs) + [s.var for s in kernel.stores]
    return sum(v.aval.nbytes // rows for v in buffers if v.aval.shape)


def _reads_row_locally(kernel, produced: set) -> bool:
    """Whether every load of `kernel` from a buffer in `produced` (ids of variables with one
    row per row of the domain) reads, at row i0, only elements of row i0 of that buffer."""
    rows = int(kernel.domain[0])
    i0 = IndexExpr.var("i0", rows)
    for node in kernel.nodes:
        if node.op != "load":
            continue
        var = kernel.inputs[node.params["load"].slot]
        if id(var) not in produced:
            continue
        row_size = var.aval.size // rows
        offset = row_major_offset(node.params["load"].index, var.aval.shape)
        rest = offset - i0 * row_size
        if "i0" in rest.variables():
            return False
        lo, hi = rest.range()
        if lo < 0 or hi >= row_size:
            return False
    return True


def _can_join(group: list, kernel, rows: int) -> bool:
    """Whether `kernel` may run row by row with `group`: same rows, row-local reads of what the
    group produces, and some buffer in common with the group (without one, interleaving the
    rows saves no memory traffic)."""
    if row_extent(kernel) != rows:
        return False
    produced = {id(s.var) for member in group for s in member.stores}
    touched = produced | {id(v) for member in group for v in member.inputs}
    if not any(id(v) in touched for v in kernel.inputs):
        return False
    return _reads_row_locally(kernel, produced)


def _worth_it(group: list) -> bool:
    return (
        len(group) > 1
        and max(_row_elements(k) for k in group) >= MIN_ROW_ELEMENTS
        and sum(_row_bytes(k) for k in group) <= MAX_ROW_BYTES
    )


def row_groups(steps: list, excluded: set = frozenset()) -> list:
    """[(first, last)] inclusive index ranges of `steps` (a native segment's steps, in order)
    whose kernels run as one row-fused group. `excluded`: ids of variables stored into donated
    input buffers (their kernels never join a group)."""
    out = []
    start, group, rows = 0, [], None

    def close():
        if _worth_it(group):
            out.append((start, start + len(group) - 1))

    for k, step in enumerate(steps):
        joinable = isinstance(step, Kernel) and not any(id(s.var) in excluded for s in step.stores)
        if joinable and group and _can_join(group, step, rows):
            group.append(step)
            continue
        close()
        rows = row_extent(step) if joinable else None
        start, group = k, ([step] if rows is not None else [])
    close()
    return out


def spans(groups: list) -> dict:
    """{step index: (first, last)} for every step of the row groups `groups` ((first, last) pairs)."""
    return {k: (first, last) for first, last in groups for k in range(first, last + 1)}


def cluster(steps: list) -> list:
    """`steps` with each row-wise kernel moved up to just after the nearest earlier row-wise
    kernel it could join (same rows, row-local reads of its outputs), when it reads nothing
    produced by the steps in between. Readers of a moved kernel's outputs all come after it, so
    the order stays a valid schedule."""
    out: list = []
    for step in steps:
        rows = row_extent(step)
        target = _join_position(out, step, rows) if rows is not None else None
        if target is None:
            out.append(step)
        else:
            out.insert(target + 1, step)
    return out


def _join_position(earlier: list, kernel, rows: int) -> int | None:
    reads = {id(v) for v in kernel.inputs}
    for pos in range(len(earlier) - 1, -1, -1):
        step = earlier[pos]
        if row_extent(step) == rows and _can_join([step], kernel, rows):
            return None if pos == len(earlier) - 1 else pos
        if any(id(v) in reads for v in step.outputs):
            return None  # `kernel` needs this step's result: it cannot run before it
    return None
