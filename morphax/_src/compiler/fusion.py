"""Lowering an optimized jaxpr to the kernel IR, fusing as it goes: `lower(closed, caps)`.

Reads only the primitives' kernel metadata (`kind`/`kind_of`, `kernel_op`, `index_map`), never
their names, and asks the backend's capabilities (`supports(eqn)` for ELEMENTWISE and REDUCE
equations, `fuses_view(eqn)` for LAYOUT ones) which operations and dtypes it can fuse.

Rules (greedy, in program order, so the result never has a dependency cycle):
- an ELEMENTWISE equation the backend supports joins the kernel being built (the tail) when its
  output has the kernel's domain and its computed operands are in that kernel; operands from
  elsewhere are loads of materialized buffers (broadcast by index, no copy); otherwise it starts
  a new kernel;
- a LAYOUT equation with an index map applied to a materialized buffer is a *view*: no step, its
  readers load the base buffer through the composed index map; a view that an opaque step or the
  program's outputs need is materialized by a copy kernel;
- a LAYOUT equation with a dynamic index map (dynamic_slice) joins the tail as a load at offsets
  read from its scalar operands when the kernel starts;
- a LAYOUT equation with a piecewise map (pad, concatenate) joins the tail like an elementwise
  op: each output element is a guarded load of one operand (or the fallback value);
- a REDUCE equation the backend supports ends the tail kernel's domain with a reduction over its
  axes (several reductions over the same axes share one kernel: sibling outputs); its operand
  starts a kernel of its own when it was not computed in the tail;
- everything else is an `Opaque` step and closes the tail kernel.
A value computed inside a kernel is stored only when something outside the kernel reads it. A
later kernel over the same large domain computes a short chain of cheap operations again from
the buffers it came from rather than loading it, so the kernel that computed it first may not
have to store it.
"""

from __future__ import annotations

import numpy as np

from morphax._src.compiler.kernel_ir import Kernel, Load, Node, Offset, Opaque, Program, Store
from morphax._src.compiler.row_fusion import cluster
from morphax._src.compiler.sibling_merge import merge_siblings
from morphax._src.core.index_expr import IndexExpr
from morphax._src.core.jaxpr import Literal
from morphax._src.core.primitive import Kind
from morphax._src.passes._util import use_counts

# A value another kernel computed is computed again where it is read, rather than stored and
# loaded, when the domain has at least this many elements (4 MB of float32: past the caches,
# where a store is a write to memory) and the value is this many operations or fewer
# (fusion.lower's `recomputed`). The softmax cross-entropy gradient over (4096, 1000): 12.4 ->
# 9.1 ms, its exp and the scaled labels no longer stored.
RECOMPUTE_MIN_ELEMENTS = 1 << 20
RECOMPUTE_MAX_OPERATIONS = 3


class _View:
    """A LAYOUT result over a materialized buffer: `index(out_index) -> base index`; `eqns` are
    the layout equations it composes (named in the comment of a kernel that copies it)."""

    __slots__ = ("base", "index", "eqns")

    def __init__(self, base, index, eqns):
        self.base = base
        self.index = index
        self.eqns = eqns


class _Builder:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.node_of: dict[int, int] = {}  # id(var) -> node id, for values computed here
        self.var_of: dict[int, object] = {}  # id(var) -> var
        self.slot_of: dict[int, int] = {}  # id(base var) -> input slot
        self.load_nodes: dict[tuple, int] = {}  # (slot, index key) -> node id
        self.reduced_vars: dict[int, object] = {}  # id -> var: outputs of this kernel's reduction
        self.epi_node_of: dict[int, int] = {}  # id(var) -> epilogue (phase 1) node
        self.epi_loads: dict[tuple, int] = {}
        # id(var) -> node: values of other kernels computed again here (never stored by this one)
        self.recomputed: dict[int, int] = {}

    def add_node(self, node: Node) -> int:
        self.kernel.nodes.append(node)
        return len(self.kernel.nodes) - 1

    def define_epilogue(self, var, node: int) -> None:
        self.epi_node_of[id(var)] = node
        self.var_of[id(var)] = var
        if self.kernel.nodes[node].var is None:
            self.kernel.nodes[node].var = var

    def define(self, var, node: int) -> None:
        self.node_of[id(var)] = node
        self.var_of[id(var)] = var
        if self.kernel.nodes[node].var is None:
            self.kernel.nodes[node].var = var


def canonical(shape) -> tuple:
    """A kernel's loop domain for values of `shape`: its dims other than 1. Shapes that differ
    only in unit dims have the same element order, so one loop serves them all (a reshape that
    adds or drops unit dims is free)."""
    return tuple(d for d in shape if d != 1)


def _domain_index(domain) -> tuple:
    return tuple(IndexExpr.var(f"i{d}", n) for d, n in enumerate(domain))


def shape_index(shape) -> tuple:
    """The index of an array of `shape` at the loop index of the domain `canonical(shape)`."""
    index, k = [], 0
    for n in shape:
        if n == 1:
            index.append(IndexExpr.lift(0))
        else:
            index.append(IndexExpr.var(f"i{k}", n))
            k += 1
    return tuple(index)


def _operand_index(operand_shape, out_shape) -> tuple:
    """The index of an operand of `operand_shape` of an equation whose output has `out_shape`
    (lax broadcasting: rank-0 operands, and size-1 dims of a same-rank operand, broadcast)."""
    if not operand_shape:
        return ()
    out_index = shape_index(out_shape)
    return tuple(IndexExpr.lift(0) if n == 1 else i for i, n in zip(out_index, operand_shape))


def _canonical_axes(shape, axes) -> tuple:
    """`axes` of an array of `shape` as dims of `canonical(shape)` (unit axes dropped)."""
    out = []
    for a in sorted(int(a) % max(len(shape), 1) for a in axes):
        if shape[a] != 1:
            out.append(sum(1 for n in shape[:a] if n != 1))
    return tuple(out)


# Reductions whose result over one element is that element (same dtype).
_UNIT_REDUCTIONS = frozenset(
    ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or", "reduce_xor")
)


def _is_unit_relabel(index_map, in_aval, out_aval, params) -> bool:
    """Whether a LAYOUT equation only adds, drops or moves unit dims: its input and output have
    the same elements in the same order (then its result is its operand, relabelled)."""
    if canonical(in_aval.shape) != canonical(out_aval.shape):
        return False
    try:
        mapped = tuple(index_map(shape_index(out_aval.shape), in_aval, **params)[0])
    except Exception:
        return False
    kept = [IndexExpr.lift(i) for i, n in zip(mapped, in_aval.shape) if n != 1]
    return kept == list(_domain_index(canonical(in_aval.shape)))


def lower(closed, caps, name: str = "kernel") -> Program:
    """The fused Program for `closed`, given the backend's capabilities `caps`."""
    jaxpr = closed.jaxpr
    steps: list = []
    builders: list[_Builder] = []
    views: dict[int, _View] = {}
    # Values that are a scalar literal broadcast (a LAYOUT op of a literal): every element is it.
    fills: dict[int, Literal] = {}
    owner: dict[int, _Builder] = {}  # id(var) -> the kernel that computes it
    outside_readers: set[int] = set()  # ids of kernel-computed vars read outside their kernel
    tail: _Builder | None = None

    def new_kernel(domain) -> _Builder:
        b = _Builder(Kernel(f"{name}_k{len(builders)}", tuple(domain), [], [], []))
        builders.append(b)
        steps.append(b.kernel)
        return b

    def reindexing_kernel(tail: _Builder | None, eqn) -> _Builder:
        """The kernel for an equation that reads its operands at other indices than its output's
        (index maps, guards, run-time offsets): the tail when it has the output's domain and
        computes none of the operands (a value computed at the tail's index cannot be read at
        another), else a new kernel."""
        domain = canonical(eqn.outvars[0].aval.shape)
        if (
            tail is None
            or tail.kernel.domain != domain
            or any(
                type(v) is not Literal and (owner.get(id(v)) is tail or not readable_in(tail, v))
                for v in eqn.invars
            )
        ):
            return new_kernel(domain)
        return tail

    def slot_for(b: _Builder, base_var) -> int:
        """The input slot of buffer `base_var` in kernel `b` (one per buffer)."""
        slot = b.slot_of.get(id(base_var))
        if slot is None:
            slot = b.slot_of[id(base_var)] = len(b.kernel.inputs)
            b.kernel.inputs.append(base_var)
            if id(base_var) in owner:
                outside_readers.add(id(base_var))
        return slot

    def load(b: _Builder, base_var, index, aval, phase: int = 0) -> int:
        """A node of `phase` reading buffer `base_var` at `index` (one input slot per buffer, one
        node per distinct index)."""
        slot = slot_for(b, base_var)
        cache = b.load_nodes if phase == 0 else b.epi_loads
        key = (slot, tuple(str(i) for i in index))
        got = cache.get(key)
        if got is None:
            load_ = Load(slot, tuple(index))
            got = cache[key] = b.add_node(
                Node("load", (), {"load": load_}, np.dtype(aval.dtype), base_var, phase=phase)
            )
        return got

    program_outputs = {id(v) for v in jaxpr.outvars}

    def recomputed(b: _Builder, v):
        """`v` computed again in kernel `b` from the buffers its own kernel read, instead of a
        load of a stored copy; None when that does not pay or cannot be done. It pays on large
        domains for a short chain of cheap operations over at most two full-size buffers: the
        producing kernel may then skip the store (a write of the whole domain), and `b` reads
        about as much as it would have. Same operations in the same order: the same bits."""
        src = owner.get(id(v))
        if src is None or src is b or id(v) not in src.node_of or id(v) in program_outputs:
            return None
        domain = b.kernel.domain
        if src.kernel.domain != domain or src.kernel.offsets or canonical(v.aval.shape) != domain:
            return None
        if int(np.prod(domain, dtype=np.int64)) < RECOMPUTE_MIN_ELEMENTS:
            return None
        nodes, root = src.kernel.nodes, src.node_of[id(v)]
        chain, stack = set(), [root]
        while stack:
            n = stack.pop()
            if n not in chain:
                chain.add(n)
                stack.extend(nodes[n].args)
        full_buffers = set()
        for n in chain:
            node = nodes[n]
            if node.phase or node.op in ("guarded", "reduced", "result"):
                return None
            if node.op == "load":
                if node.args or node.params["load"].guard:
                    return None
                base = src.kernel.inputs[node.params["load"].slot]
                if canonical(base.aval.shape) == domain:
                    full_buffers.add(id(base))
        operations = sum(nodes[n].op not in ("load", "const") for n in chain)
        if operations > RECOMPUTE_MAX_OPERATIONS or len(full_buffers) > 2:
            return None
        copied = {}
        for n in sorted(chain):  # node ids are in topological order
            node = nodes[n]
            if node.op == "load":
                load_ = node.params["load"]
                base = src.kernel.inputs[load_.slot]
                copied[n] = load(b, base, load_.index, base.aval)
            else:
                args = tuple(copied[a] for a in node.args)
                copied[n] = b.add_node(Node(node.op, args, dict(node.params), node.dtype, node.var))
        return copied[root]

    def offset_expr(b: _Builder, v, lo: int, hi: int) -> IndexExpr:
        """The scalar `v` clamped into [lo, hi], as an index expression: a constant for a literal,
        else a name bound at kernel entry from v's buffer."""
        if type(v) is Literal or id(v) in fills:
            value = int(np.asarray(v.val if type(v) is Literal else fills[id(v)].val))
            return IndexExpr.lift(min(max(value, lo), hi))
        view = views.get(id(v))
        base, index = (view.base, view.index(())) if view is not None else (v, ())
        name = f"s{len(b.kernel.offsets)}"
        b.kernel.offsets.append(Offset(name, slot_for(b, base), tuple(index), lo, hi))
        return IndexExpr.var(name, hi + 1)

    def piece_node(b: _Builder, v, index, guard, fallback) -> int:
        """Operand `v` at `index` inside `guard` (always, for an empty guard), else `fallback`."""
        dtype = np.dtype(v.aval.dtype)
        if type(v) is Literal or id(v) in fills:
            value = v.val if type(v) is Literal else fills[id(v)].val
            node = b.add_node(Node("const", (), {"value": value}, dtype))
            if not guard:
                return node
            return b.add_node(Node("guarded", (node, fallback), {"guard": guard}, dtype))
        view = views.get(id(v))
        base, mapped = (view.base, view.index(index)) if view is not None else (v, index)
        if not guard:
            return load(b, base, mapped, v.aval)
        slot = slot_for(b, base)
        return b.add_node(Node("load", (fallback,), {"load": Load(slot, mapped, guard)}, dtype, base))

    def operand_node(b: _Builder, v, out_shape) -> int:
        """The node holding operand `v` of an equation with output `out_shape` in kernel `b`."""
        if type(v) is Literal:
            return b.add_node(Node("const", (), {"value": v.val}, np.dtype(v.aval.dtype)))
        if id(v) in fills:
            return b.add_node(Node("const", (), {"value": fills[id(v)].val}, np.dtype(v.aval.dtype)))
        got = b.node_of.get(id(v))
        if got is None:
            got = b.recomputed.get(id(v))
        if got is not None:
            return got
        index = _operand_index(v.aval.shape, out_shape)
        view = views.get(id(v))
        if view is not None:
            return load(b, view.base, view.index(index), v.aval)
        if tuple(v.aval.shape) == tuple(out_shape):
            again = recomputed(b, v)
            if again is not None:
                b.recomputed[id(v)] = again
                return again
        return load(b, v, index, v.aval)

    def readable_in(b: _Builder | None, v) -> bool:
        """Whether kernel `b` may read `v` (not a value it only has once its loop is done)."""
        if b is None or type(v) is Literal:
            return True
        if id(v) in b.reduced_vars or id(v) in b.epi_node_of:
            return False
        view = views.get(id(v))
        return view is None or owner.get(id(view.base)) is not b

    def epilogue_ok(b: _Builder | None, eqn, out_shape) -> bool:
        """Whether `eqn` can run in `b`'s epilogue: on its reduced domain, reading reduced
        outputs, epilogue values and materialized buffers (not values of `b`'s main loop)."""
        if b is None or not b.reduced_vars or canonical(out_shape) != b.kernel.epilogue_domain:
            return False
        for v in eqn.invars:
            if type(v) is Literal or id(v) in b.reduced_vars or id(v) in b.epi_node_of:
                continue
            if owner.get(id(v)) is b:
                return False
            view = views.get(id(v))
            if view is not None and owner.get(id(view.base)) is b:
                return False
        return True

    def epilogue_operand(b: _Builder, v, out_shape) -> int:
        if type(v) is Literal or id(v) in fills:
            value = v.val if type(v) is Literal else fills[id(v)].val
            return b.add_node(Node("const", (), {"value": value}, np.dtype(v.aval.dtype), phase=1))
        got = b.epi_node_of.get(id(v))
        if got is not None:
            return got
        if id(v) in b.reduced_vars:
            node = b.add_node(Node("reduced", (), {"var": v}, np.dtype(v.aval.dtype), v, phase=1))
            b.epi_node_of[id(v)] = node
            return node
        index = _operand_index(v.aval.shape, out_shape)
        view = views.get(id(v))
        base, index = (view.base, view.index(index)) if view is not None else (v, index)
        return load(b, base, index, v.aval, phase=1)

    def materialize(v):
        """`v` must exist as a buffer (an opaque step reads it, or it is an output)."""
        nonlocal tail
        if type(v) is Literal:
            return
        if id(v) in owner:
            outside_readers.add(id(v))
            return
        if id(v) in fills:  # a broadcast scalar: a kernel fills its buffer
            b = new_kernel(canonical(v.aval.shape))
            b.define(v, operand_node(b, v, v.aval.shape))
            owner[id(v)] = b
            outside_readers.add(id(v))
            tail = None
            return
        view = views.pop(id(v), None)
        if view is None:
            return
        b = new_kernel(canonical(v.aval.shape))
        b.kernel.eqns.extend(view.eqns)
        node = load(b, view.base, view.index(shape_index(v.aval.shape)), v.aval)
        b.define(v, node)
        owner[id(v)] = b
        outside_readers.add(id(v))
        tail = None

    for eqn in _fold_permutations(jaxpr):
        prim = eqn.primitive
        kind = prim.kind_of(*[v.aval for v in eqn.invars], **eqn.params) if prim.kind_rule else prim.kind
        if kind is Kind.ELEMENTWISE and caps.supports(eqn) and not prim.multiple_results:
            out_shape = tuple(eqn.outvars[0].aval.shape)
            if epilogue_ok(tail, eqn, out_shape):
                b = tail
                args = tuple(epilogue_operand(b, v, out_shape) for v in eqn.invars)
                b.kernel.eqns.append(eqn)
                out = eqn.outvars[0]
                node = Node(prim.kernel_op, args, dict(eqn.params), np.dtype(out.aval.dtype), phase=1)
                b.define_epilogue(out, b.add_node(node))
                owner[id(out)] = b
                continue
        if kind is Kind.ELEMENTWISE and caps.supports(eqn):
            out_shape = tuple(eqn.outvars[0].aval.shape)
            domain = canonical(out_shape)
            if (
                tail is None
                or tail.kernel.domain != domain
                or not all(readable_in(tail, v) for v in eqn.invars)
            ):
                tail = new_kernel(domain)
            b = tail
            args = tuple(operand_node(b, v, out_shape) for v in eqn.invars)
            b.kernel.eqns.append(eqn)
            if prim.multiple_results:
                whole = b.add_node(Node(prim.kernel_op, args, dict(eqn.params), None))
                for k, out in enumerate(eqn.outvars):
                    b.define(
                        out, b.add_node(Node("result", (whole,), {"index": k}, np.dtype(out.aval.dtype)))
                    )
                    owner[id(out)] = b
            else:
                out = eqn.outvars[0]
                b.define(
                    out, b.add_node(Node(prim.kernel_op, args, dict(eqn.params), np.dtype(out.aval.dtype)))
                )
                owner[id(out)] = b
            continue
        if (
            kind is Kind.LAYOUT
            and prim.index_map is not None
            and caps.fuses_view(eqn)
            and len(eqn.invars) == 1
        ):
            if type(eqn.invars[0]) is Literal or id(eqn.invars[0]) in fills:
                (operand,) = eqn.invars
                fills[id(eqn.outvars[0])] = operand if type(operand) is Literal else fills[id(operand)]
                continue
            # A view: readers load the base buffer through the composed index map. A base
            # computed in a kernel is stored by it; readers of the view run in later kernels.
            # A relabelling of unit dims of a value computed in a kernel is that value.
            (operand,) = eqn.invars
            out = eqn.outvars[0]
            src = owner.get(id(operand))
            if (
                src is not None
                and (id(operand) in src.node_of or src is tail and epilogue_ok(src, eqn, out.aval.shape))
                and _is_unit_relabel(prim.index_map, operand.aval, out.aval, eqn.params)
            ):
                if id(operand) in src.node_of:
                    src.define(out, src.node_of[id(operand)])
                else:  # a reduced output or an epilogue value, relabelled in the epilogue
                    src.define_epilogue(out, epilogue_operand(src, operand, out.aval.shape))
                owner[id(out)] = src
                continue
            inner = views.get(id(operand))
            if inner is None and src is not None:
                outside_readers.add(id(operand))
            views[id(out)] = _compose_view(prim.index_map, eqn, inner)
            continue
        if (
            kind is Kind.REDUCE
            and prim.name in _UNIT_REDUCTIONS
            and caps.supports(eqn)
            and not _canonical_axes(eqn.invars[0].aval.shape, eqn.params.get("axes", ()))
        ):
            # A reduction over unit dims only (the transpose of a keepdims broadcast_in_dim) reduces
            # one element each: the operand relabelled, like a layout equation of unit dims.
            (operand,) = eqn.invars
            out = eqn.outvars[0]
            src = owner.get(id(operand))
            if src is not None and id(operand) in src.node_of:
                src.define(out, src.node_of[id(operand)])
                owner[id(out)] = src
                continue
            if src is not None and src is tail and epilogue_ok(src, eqn, out.aval.shape):
                src.define_epilogue(out, epilogue_operand(src, operand, out.aval.shape))
                owner[id(out)] = src
                continue
        if kind is Kind.REDUCE and caps.supports(eqn):
            (operand,) = eqn.invars
            in_shape = tuple(operand.aval.shape)
            axes = _canonical_axes(in_shape, eqn.params.get("axes", ()))
            domain = canonical(in_shape)
            b = tail
            if (
                b is None
                or b.kernel.domain != domain
                or (b.reduced_vars and b.kernel.reduce_axes != axes)
                or not readable_in(b, operand)
            ):
                b = tail = new_kernel(domain)
            node = operand_node(b, operand, in_shape)
            b.kernel.reduce_axes = axes
            b.kernel.eqns.append(eqn)
            out = eqn.outvars[0]
            b.kernel.stores.append(Store(out, node, reduce=prim.kernel_op, reduce_params=dict(eqn.params)))
            b.reduced_vars[id(out)] = out
            owner[id(out)] = b
            continue
        if (
            kind is Kind.LAYOUT
            and prim.dynamic_index_map is not None
            and caps.fuses_view(eqn)
            and type(eqn.invars[0]) is not Literal
            and id(eqn.invars[0]) not in fills
        ):
            # A window at offsets read at run time: a load of the source with the clamped starts
            # bound at kernel entry (Kernel.offsets), joining the tail like an elementwise op.
            out = eqn.outvars[0]
            out_shape = tuple(out.aval.shape)
            b = tail = reindexing_kernel(tail, eqn)
            source, starts, index_fn = prim.dynamic_index_map(*[v.aval for v in eqn.invars], **eqn.params)
            offsets = [offset_expr(b, eqn.invars[k], lo, hi) for k, lo, hi in starts]
            index = tuple(index_fn(shape_index(out_shape), offsets))
            v = eqn.invars[source]
            view = views.get(id(v))
            base, mapped = (view.base, view.index(index)) if view is not None else (v, index)
            b.kernel.eqns.append(eqn)
            b.define(out, load(b, base, mapped, out.aval))
            owner[id(out)] = b
            continue
        if kind is Kind.LAYOUT and prim.piecewise_map is not None and caps.fuses_view(eqn):
            # Each output element from one operand (or a fallback) chosen by where it is: guarded
            # loads of materialized buffers, like an elementwise op's operands read through maps.
            out = eqn.outvars[0]
            out_shape = tuple(out.aval.shape)
            b = tail = reindexing_kernel(tail, eqn)
            pieces, default = prim.piecewise_map(
                shape_index(out_shape), *[v.aval for v in eqn.invars], **eqn.params
            )
            dtype = np.dtype(out.aval.dtype)
            if default is None:  # never read: the pieces cover the domain
                node = b.add_node(Node("const", (), {"value": 0}, dtype))
            else:
                node = piece_node(b, eqn.invars[default[0]], tuple(default[1]), (), None)
            for k, guard, index in reversed(pieces):
                node = piece_node(b, eqn.invars[k], tuple(index), tuple(guard), node)
            b.kernel.eqns.append(eqn)
            b.define(out, node)
            owner[id(out)] = b
            continue
        form = (
            prim.elementwise_form(*[v.aval for v in eqn.invars], **eqn.params)
            if prim.elementwise_form
            else None
        )
        if form is not None and caps.supports_op(form[0], eqn):
            # One elementwise op on operands read through index maps: they are loads of
            # materialized buffers (a value computed at the tail's index cannot be re-indexed).
            op, maps = form
            out_shape = tuple(eqn.outvars[0].aval.shape)
            b = tail = reindexing_kernel(tail, eqn)
            index = shape_index(out_shape)
            args = []
            for v, index_map in zip(eqn.invars, maps):
                if type(v) is Literal or id(v) in fills:
                    args.append(operand_node(b, v, out_shape))
                    continue
                view = views.get(id(v))
                mapped = tuple(index_map(index))
                if view is not None:
                    args.append(load(b, view.base, view.index(mapped), v.aval))
                else:
                    args.append(load(b, v, mapped, v.aval))
            b.kernel.eqns.append(eqn)
            out = eqn.outvars[0]
            b.define(out, b.add_node(Node(op, tuple(args), {}, np.dtype(out.aval.dtype))))
            owner[id(out)] = b
            continue
        for v in eqn.invars:
            materialize(v)
        steps.append(Opaque(eqn))
        tail = None

    for v in jaxpr.outvars:
        materialize(v)

    # Store the values read outside the kernel that computes them (reductions are stored already).
    for b in builders:
        stored = {id(s.var) for s in b.kernel.stores}
        extra = [
            Store(b.var_of[var_id], node)
            for table in (b.node_of, b.epi_node_of)
            for var_id, node in table.items()
            if var_id in outside_readers and var_id not in stored and var_id not in b.reduced_vars
        ]
        b.kernel.stores[:0] = extra
    steps = [s for s in steps if not isinstance(s, Kernel) or s.stores]
    return Program(closed, cluster(merge_siblings(steps)))


def _permutation(eqn) -> tuple | None:
    """The axis permutation of a one-operand LAYOUT equation whose index map only reorders axes
    (a transpose, whatever the primitive), else None."""
    prim = eqn.primitive
    if prim.kind is not Kind.LAYOUT or prim.index_map is None or len(eqn.invars) != 1:
        return None
    (operand,) = eqn.invars
    in_aval, out_shape = operand.aval, tuple(eqn.outvars[0].aval.shape)
    if (
        type(operand) is Literal
        or len(in_aval.shape) != len(out_shape)
        or in_aval.dtype != eqn.outvars[0].aval.dtype
    ):
        return None
    out_index = [IndexExpr.var(f"i{d}", n) for d, n in enumerate(out_shape)]
    try:
        mapped = tuple(prim.index_map(tuple(out_index), in_aval, **eqn.params)[0])
    except Exception:
        return None
    perm = [None] * len(out_shape)
    for in_dim, expr in enumerate(mapped):
        matches = [d for d, v in enumerate(out_index) if expr == v and out_shape[d] == in_aval.shape[in_dim]]
        if len(matches) != 1 or perm[matches[0]] is not None:
            return None
        perm[matches[0]] = in_dim
    return tuple(perm)


def _fold_permutations(jaxpr) -> list:
    """The equations of `jaxpr`, with each transpose of a result that only it reads folded into
    the producing equation when that primitive declares a `permuted_form` (a matmul computes
    its transposed result directly): no copy kernel, and the readers load it contiguously."""
    uses = use_counts(jaxpr, output_weight=2)  # an output is never a transpose's only reader
    producer = {}
    permuted: dict[int, tuple] = {}  # id(var) -> (base var, perm) for transposes' results
    eqns = list(jaxpr.eqns)
    for i, eqn in enumerate(eqns):
        rule = eqn.primitive.permuted_operand_form
        if rule is not None:
            eqn = eqns[i] = _read_bases(eqn, rule, permuted, uses)
        for v in eqn.outvars:
            producer[id(v)] = i
        perm = _permutation(eqn)
        if perm is not None:
            permuted[id(eqn.outvars[0])] = (eqn.invars[0], perm)
        if perm is None:
            continue
        (operand,) = eqn.invars
        j = producer.get(id(operand))
        if j is None or uses.get(id(operand)) != 1:
            continue
        source = eqns[j]
        rule = source.primitive.permuted_form
        if rule is None or len(source.outvars) != 1:
            continue
        form = rule(perm, *[v.aval for v in source.invars], **source.params)
        if form is None:
            continue
        order, params = form
        eqns[j] = source.replace(
            invars=[source.invars[k] for k in order], outvars=list(eqn.outvars), params=params
        )
        eqns[i] = None
        producer[id(eqn.outvars[0])] = j
        # The producer now computes this result itself, so later readers must not be pointed
        # back at the untransposed value (no equation computes it any more).
        del permuted[id(eqn.outvars[0])]
    return [e for e in eqns if e is not None]


def _read_bases(eqn, rule, permuted, uses):
    """`eqn` reading the bases of its transposed operands where its primitive allows it."""
    for k, v in enumerate(eqn.invars):
        got = permuted.get(id(v)) if type(v) is not Literal else None
        if got is None:
            continue
        base, perm = got
        params = rule(k, perm, *[u.aval for u in eqn.invars], **eqn.params)
        if params is None:
            continue
        invars = list(eqn.invars)
        invars[k] = base
        eqn = eqn.replace(invars=invars, params=params)
        uses[id(v)] -= 1
        uses[id(base)] = uses.get(id(base), 0) + 1
    return eqn


def _compose_view(index_map, eqn, inner: _View | None) -> _View:
    operand = eqn.invars[0]
    in_aval = operand.aval
    params = dict(eqn.params)

    def index(out_index):
        mapped = tuple(index_map(tuple(out_index), in_aval, **params)[0])
        return mapped if inner is None else inner.index(mapped)

    if inner is None:
        return _View(operand, index, (eqn,))
    return _View(inner.base, index, (*inner.eqns, eqn))
