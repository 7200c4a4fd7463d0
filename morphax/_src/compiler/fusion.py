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
- a REDUCE equation the backend supports ends the tail kernel's domain with a reduction over its
  axes (several reductions over the same axes share one kernel: sibling outputs); its operand
  starts a kernel of its own when it was not computed in the tail;
- everything else is an `Opaque` step and closes the tail kernel.
A value computed inside a kernel is stored only when something outside the kernel reads it.
"""

from __future__ import annotations

import numpy as np

from morphax._src.compiler.kernel_ir import Kernel, Load, Node, Opaque, Program, Store
from morphax._src.core.index_expr import IndexExpr
from morphax._src.core.jaxpr import Literal
from morphax._src.core.primitive import Kind


class _View:
    """A LAYOUT result over a materialized buffer: `index(out_index) -> base index`."""

    __slots__ = ("base", "index")

    def __init__(self, base, index):
        self.base = base
        self.index = index


class _Builder:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.node_of: dict[int, int] = {}  # id(var) -> node id, for values computed here
        self.var_of: dict[int, object] = {}  # id(var) -> var
        self.slot_of: dict[int, int] = {}  # id(base var) -> input slot
        self.load_nodes: dict[tuple, int] = {}  # (slot, index key) -> node id
        self.reduced_vars: set[int] = set()  # outputs of this kernel's reduction

    def add_node(self, node: Node) -> int:
        self.kernel.nodes.append(node)
        return len(self.kernel.nodes) - 1

    def define(self, var, node: int) -> None:
        self.node_of[id(var)] = node
        self.var_of[id(var)] = var
        if self.kernel.nodes[node].var is None:
            self.kernel.nodes[node].var = var


def _domain_index(domain) -> tuple:
    return tuple(IndexExpr.var(f"i{d}", n) for d, n in enumerate(domain))


def _broadcast_index(index, shape, domain) -> tuple:
    """The index of an operand of `shape` read at the domain index (lax broadcasting: rank-0
    operands, and size-1 dims of a same-rank operand, broadcast)."""
    if not shape:
        return ()
    return tuple(IndexExpr.lift(0) if s == 1 and d != 1 else i for i, s, d in zip(index, shape, domain))


def lower(closed, caps, name: str = "kernel") -> Program:
    """The fused Program for `closed`, given the backend's capabilities `caps`."""
    jaxpr = closed.jaxpr
    steps: list = []
    builders: list[_Builder] = []
    views: dict[int, _View] = {}
    owner: dict[int, _Builder] = {}  # id(var) -> the kernel that computes it
    outside_readers: set[int] = set()  # ids of kernel-computed vars read outside their kernel
    tail: _Builder | None = None

    def new_kernel(domain) -> _Builder:
        b = _Builder(Kernel(f"{name}_k{len(builders)}", tuple(domain), [], [], []))
        builders.append(b)
        steps.append(b.kernel)
        return b

    def load(b: _Builder, base_var, index, aval) -> int:
        slot = b.slot_of.get(id(base_var))
        if slot is None:
            slot = b.slot_of[id(base_var)] = len(b.kernel.inputs)
            b.kernel.inputs.append(base_var)
            if id(base_var) in owner:
                outside_readers.add(id(base_var))
        key = (slot, tuple(str(i) for i in index))
        got = b.load_nodes.get(key)
        if got is None:
            load_ = Load(slot, tuple(index))
            got = b.load_nodes[key] = b.add_node(
                Node("load", (), {"load": load_}, np.dtype(aval.dtype), base_var)
            )
        return got

    def operand_node(b: _Builder, v) -> int:
        """The node holding operand `v` at the kernel's domain index."""
        if type(v) is Literal:
            return b.add_node(Node("const", (), {"value": v.val}, np.dtype(v.aval.dtype)))
        got = b.node_of.get(id(v))
        if got is not None:
            return got
        index = _broadcast_index(_domain_index(b.kernel.domain), v.aval.shape, b.kernel.domain)
        view = views.get(id(v))
        if view is not None:
            return load(b, view.base, view.index(index), v.aval)
        return load(b, v, index, v.aval)

    def readable_in(b: _Builder | None, v) -> bool:
        """Whether kernel `b` may read `v` (not a value it only has once its loop is done)."""
        if b is None or type(v) is Literal:
            return True
        if id(v) in b.reduced_vars:
            return False
        view = views.get(id(v))
        return view is None or owner.get(id(view.base)) is not b

    def materialize(v):
        """`v` must exist as a buffer (an opaque step reads it, or it is an output)."""
        nonlocal tail
        if type(v) is Literal:
            return
        if id(v) in owner:
            outside_readers.add(id(v))
            return
        view = views.pop(id(v), None)
        if view is None:
            return
        b = new_kernel(v.aval.shape)
        node = load(b, view.base, view.index(_domain_index(v.aval.shape)), v.aval)
        b.define(v, node)
        owner[id(v)] = b
        outside_readers.add(id(v))
        tail = None

    for eqn in jaxpr.eqns:
        prim = eqn.primitive
        kind = prim.kind_of(*[v.aval for v in eqn.invars], **eqn.params) if prim.kind_rule else prim.kind
        if kind is Kind.ELEMENTWISE and caps.supports(eqn):
            domain = tuple(eqn.outvars[0].aval.shape)
            if (
                tail is None
                or tail.kernel.domain != domain
                or not all(readable_in(tail, v) for v in eqn.invars)
            ):
                tail = new_kernel(domain)
            b = tail
            args = tuple(operand_node(b, v) for v in eqn.invars)
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
            and type(eqn.invars[0]) is not Literal
        ):
            # A view: readers load the base buffer through the composed index map. A base
            # computed in a kernel is stored by it; readers of the view run in later kernels.
            (operand,) = eqn.invars
            inner = views.get(id(operand))
            if inner is None and id(operand) in owner:
                outside_readers.add(id(operand))
            views[id(eqn.outvars[0])] = _compose_view(prim.index_map, operand, eqn.params, inner)
            continue
        if kind is Kind.REDUCE and caps.supports(eqn):
            (operand,) = eqn.invars
            axes = tuple(eqn.params.get("axes", ()))
            domain = tuple(operand.aval.shape)
            b = tail
            if (
                b is None
                or b.kernel.domain != domain
                or (b.reduced_vars and b.kernel.reduce_axes != axes)
                or not readable_in(b, operand)
            ):
                b = tail = new_kernel(domain)
            node = operand_node(b, operand)
            b.kernel.reduce_axes = axes
            b.kernel.eqns.append(eqn)
            out = eqn.outvars[0]
            b.kernel.stores.append(Store(out, node, reduce=prim.kernel_op, reduce_params=dict(eqn.params)))
            b.reduced_vars.add(id(out))
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
            domain = tuple(eqn.outvars[0].aval.shape)
            if (
                tail is None
                or tail.kernel.domain != domain
                or any(
                    type(v) is not Literal and (owner.get(id(v)) is tail or not readable_in(tail, v))
                    for v in eqn.invars
                )
            ):
                tail = new_kernel(domain)
            b = tail
            index = _domain_index(domain)
            args = []
            for v, index_map in zip(eqn.invars, maps):
                if type(v) is Literal:
                    args.append(operand_node(b, v))
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
            for var_id, node in b.node_of.items()
            if var_id in outside_readers and var_id not in stored
        ]
        b.kernel.stores[:0] = extra
    steps = [s for s in steps if not isinstance(s, Kernel) or s.stores]
    return Program(closed, steps)


def _compose_view(index_map, operand, params, inner: _View | None) -> _View:
    in_aval = operand.aval
    params = dict(params)

    def index(out_index):
        mapped = tuple(index_map(tuple(out_index), in_aval, **params)[0])
        return mapped if inner is None else inner.index(mapped)

    return _View(operand if inner is None else inner.base, index)
