"""The kernel IR every backend renders: a `Program` is a list of steps over buffers (jaxpr
variables that live in memory), each step a fused `Kernel` or an `Opaque` equation.

A `Kernel` is one loop nest over a domain (a shape): it loads its input buffers (through an
index map: broadcasts, transposes, slices, reshapes of a materialized buffer cost no copy),
computes an expression DAG of kernel ops at each point of the domain, and stores some nodes:
at the domain index, or reduced over some axes (one reduction per kernel, several outputs may
share it). `Opaque` steps run one equation by other means (BLAS, LAPACK, sort, control flow,
callbacks): the backend's library call or the primitive's reference.

Produced by `compiler/fusion.py`; imports nothing above core.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass
class Node:
    """One value computed at each point of the kernel's domain.

    op: "load" (params: input slot and index map; a guarded load has its fallback node as its one
    argument), "const" (params: value), "guarded" (params: a guard; args: the node inside it and
    the one outside), "reduced" (params: the reduced output var it reads, in the epilogue), or a
    kernel op (a key of compiler/kernel_ops.py, params: the primitive's params). `args` are node
    ids.
    phase 0 nodes run at every point of the domain; phase 1 nodes (the epilogue) at every point of
    the reduced domain, once the reductions are done.
    """

    op: str
    args: tuple
    params: dict
    dtype: np.dtype
    var: object = None  # the jaxpr variable it computes (or loads), to name it in generated code
    phase: int = 0


@dataclasses.dataclass
class Load:
    """How a kernel reads input slot `slot`: `index` maps the domain index (a tuple of
    core.index_expr.IndexExpr over the loop variables) to the buffer's index."""

    slot: int
    index: tuple
    # Read only inside this region (Primitive.piecewise_map's guards: ``(expr, lo, hi, step)``);
    # elsewhere the node takes its fallback (its one argument) and the buffer is not touched.
    guard: tuple = ()


@dataclasses.dataclass
class Offset:
    """`name` = the integer in input slot `slot` at `index`, clamped into [lo, hi]."""

    name: str
    slot: int
    index: tuple
    lo: int
    hi: int


@dataclasses.dataclass
class Store:
    """Output `var` of the kernel: node `node` stored at each point of its phase's domain, or,
    when `reduce` is set, combined with the reduction op over `Kernel.reduce_axes` (the output
    then has the domain's shape without those axes)."""

    var: object
    node: int
    reduce: str | None = None
    reduce_params: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Kernel:
    name: str
    domain: tuple  # the loop extents
    inputs: list  # jaxpr variables read (materialized buffers), one per slot
    nodes: list  # Node, topologically ordered
    stores: list  # Store
    reduce_axes: tuple = ()
    eqns: list = dataclasses.field(default_factory=list)  # the jaxpr equations fused, in order
    # Store index -> input slot whose buffer that store may overwrite in place (a donated input
    # read only at the element written; compiler/donation.py): the two may alias.
    aliases: dict = dataclasses.field(default_factory=dict)
    # Offsets read at run time (Primitive.dynamic_index_map), bound before the loops: loads name
    # them in their index expressions.
    offsets: list = dataclasses.field(default_factory=list)

    @property
    def epilogue_domain(self) -> tuple:
        """The domain of phase-1 nodes: the domain without the reduced axes."""
        return tuple(n for d, n in enumerate(self.domain) if d not in self.reduce_axes)

    @property
    def outputs(self) -> list:
        return [s.var for s in self.stores]

    def describe(self, names=None) -> str:
        """One line per fused equation, for the comment above the rendered kernel (`names`: a
        jaxpr name context, so the names match the printed program)."""
        from morphax._src.core.jaxpr import _NameContext, _print_eqn

        names = names if names is not None else _NameContext()
        return "\n".join(_print_eqn(e, names, 0).strip() for e in self.eqns)


class _EquationStep:
    """A step that runs one jaxpr equation (`self.eqn`): its inputs and outputs are the equation's."""

    @property
    def inputs(self) -> list:
        return list(self.eqn.invars)

    @property
    def outputs(self) -> list:
        return list(self.eqn.outvars)


@dataclasses.dataclass
class Opaque(_EquationStep):
    """One equation run outside the fused kernels; inside a native segment, with `temp_bytes` of
    working memory in the segment's scratch arena."""

    eqn: object
    temp_bytes: int = 0


@dataclasses.dataclass
class Body:
    """One body of a native loop: `segment` (None when the body computes nothing) reads, per
    input, ("input", pos): the body's input `pos`, or ("const", k): its constant k. Each output
    of the body is ("segment", k): output k of the segment, ("input", pos) or ("const", k) passed
    through, ("literal", value), or ("same", j): a copy of output j."""

    segment: object
    args: list
    results: list
    consts: list = dataclasses.field(default_factory=list)  # NumPy arrays, embedded in the code


@dataclasses.dataclass
class Loop(_EquationStep):
    """A control-flow equation run natively inside a segment (core/loop_form.py): its bodies are
    segments of their own, called from the loop; `temp` places the loop's working memory (carry
    buffers, the predicate, the bodies' scratch) at byte offsets in a `temp_bytes` area."""

    eqn: object
    form: object  # core.loop_form.LoopForm
    bodies: list  # Body, one per form body
    temp: dict
    temp_bytes: int


@dataclasses.dataclass
class Segment:
    """Consecutive steps a backend runs as one native call (compiler/segments.py): fused kernels
    and the opaque equations it implements natively (matmuls through BLAS). Only `inputs` and
    `outputs` cross to the caller; the values the steps exchange live in a scratch arena at
    `offsets` (bytes), planned from their lifetimes so that dead values' memory is reused."""

    name: str
    steps: list  # Kernel and Opaque
    inputs: list  # values read from outside (program inputs, constants, earlier steps' outputs)
    outputs: list  # values defined here and read after it (or returned by the program)
    offsets: dict  # id(var) -> byte offset in the scratch arena, for every other value defined
    scratch_bytes: int
    # (first, last) step ranges whose kernels a backend may run interleaved row by row
    # (compiler/row_fusion.py); the scratch plan keeps their values apart for the whole range.
    row_groups: list = dataclasses.field(default_factory=list)

    @property
    def kernels(self) -> list:
        """Its fused kernels, those of its loops' bodies included."""
        return _kernels_in(self.steps)

    def nested(self) -> list:
        """Its loops' body segments, innermost first, then itself: the order C defines them in."""
        out = []
        for s in self.steps:
            if isinstance(s, Loop):
                for b in s.bodies:
                    if b.segment is not None:
                        out.extend(b.segment.nested())
        out.append(self)
        return out


@dataclasses.dataclass
class Program:
    """The steps of one compiled jaxpr, in execution order."""

    closed: object  # the optimized ClosedJaxpr
    steps: list

    @property
    def kernels(self) -> list:
        """Every fused kernel, those inside segments (and their loops) included, in order."""
        return _kernels_in(self.steps)

    @property
    def segments(self) -> list:
        return [s for s in self.steps if isinstance(s, Segment)]


def _kernels_in(steps) -> list:
    """The fused kernels of `steps`: top-level ones, those of segments, those of loop bodies."""
    out = []
    for s in steps:
        if isinstance(s, Kernel):
            out.append(s)
        elif isinstance(s, Segment):
            out.extend(_kernels_in(s.steps))
        elif isinstance(s, Loop):
            out.extend(k for b in s.bodies if b.segment is not None for k in _kernels_in(b.segment.steps))
    return out
