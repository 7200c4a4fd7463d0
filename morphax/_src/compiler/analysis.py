"""What `Compiled.cost_analysis()` and `Compiled.memory_analysis()` report, computed once per
compiled program from its jaxpr and its lowered `Program`.

Costs follow XLA's conventions (JAX users compare the two):
- `flops`: one per element of each non-transcendental elementwise result, `in - out` elements per
  reduction, and for opaque primitives what their `cost_rule` says (`dot_general`: two per
  multiply-add); primitives without a rule count zero;
- `transcendentals`: one per element of each transcendental elementwise result (exp, log, tanh,
  sin, ..., which count no flops);
- `bytes accessed`: the bytes each step of the compiled program reads and writes (a fused kernel
  its input buffers and stored outputs, an opaque step its operands and results): intermediates
  inside a kernel cost nothing, as in an XLA fusion.
Calls (jit, checkpoint, custom rules) count their bodies; loop and branch bodies count once, as
XLA counts a while loop's body (the trip count is not known statically in general).

Memory follows JAX's `CompiledMemoryStats` names: arguments, outputs, `temp_size_in_bytes` (the
peak of the intermediate buffers alive at once, with each freed after its last use as the
executor does), `alias_size_in_bytes` (donated inputs planned to hold outputs), and
`generated_code_size_in_bytes` (the generated C source of the fused kernels).
"""

from __future__ import annotations

import dataclasses

from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Literal, sub_jaxprs
from morphax._src.core.primitive import Kind

# Kernel ops XLA counts as transcendentals.
TRANSCENDENTAL = frozenset(
    {
        "exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "sin", "cos", "tan", "asin",
        "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc",
        "erf_inv", "pow", "sqrt", "rsqrt", "cbrt", "lgamma", "digamma",
    }
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class CompiledMemoryStats:
    generated_code_size_in_bytes: int = 0
    argument_size_in_bytes: int = 0
    output_size_in_bytes: int = 0
    alias_size_in_bytes: int = 0
    temp_size_in_bytes: int = 0
    host_generated_code_size_in_bytes: int = 0
    host_argument_size_in_bytes: int = 0
    host_output_size_in_bytes: int = 0
    host_alias_size_in_bytes: int = 0
    host_temp_size_in_bytes: int = 0

    @property
    def peak_memory_in_bytes(self) -> int:
        return self.argument_size_in_bytes + self.output_size_in_bytes + self.temp_size_in_bytes


def _op_costs(jaxpr: Jaxpr, totals: dict) -> None:
    for eqn in jaxpr.eqns:
        prim = eqn.primitive
        in_avals = [v.aval for v in eqn.invars]
        if prim.higher_order:
            for inner in sub_jaxprs(eqn.params):
                _op_costs(inner.jaxpr if isinstance(inner, ClosedJaxpr) else inner, totals)
            continue
        kind = prim.kind_of(*in_avals, **eqn.params) if prim.kind_rule else prim.kind
        out_elems = sum(int(v.aval.size) for v in eqn.outvars)
        if kind is Kind.ELEMENTWISE:
            key = "transcendentals" if prim.kernel_op in TRANSCENDENTAL else "flops"
            totals[key] += out_elems
        elif kind is Kind.REDUCE:
            totals["flops"] += max(sum(int(a.size) for a in in_avals) - out_elems, 0)
        elif prim.cost_rule is not None:
            for key, value in prim.cost_rule(*in_avals, **eqn.params).items():
                totals[key] = totals.get(key, 0) + value


def describe(program, reuse_plan: dict, code_size: int = 0) -> tuple:
    """(cost dict, CompiledMemoryStats) of a lowered `program`."""
    jaxpr = program.closed.jaxpr
    totals = {"flops": 0, "transcendentals": 0}
    _op_costs(jaxpr, totals)
    accessed = 0
    for step in program.steps:
        ins = [v for v in step.inputs if type(v) is not Literal]
        accessed += sum(v.aval.nbytes for v in ins) + sum(v.aval.nbytes for v in step.outputs)
    totals["bytes accessed"] = accessed
    cost = {k: float(v) for k, v in totals.items()}
    return cost, _memory(program, reuse_plan, code_size)


def describe_whole(closed: ClosedJaxpr) -> tuple:
    """(cost dict, CompiledMemoryStats) of a program handed whole to another compiler (the xla
    backend): flops as `describe` counts them; bytes accessed and memory are the inputs and
    outputs only, since that compiler's fusion and buffer assignment are its own."""
    totals = {"flops": 0, "transcendentals": 0}
    _op_costs(closed.jaxpr, totals)
    arguments = sum(a.nbytes for a in closed.in_avals)
    outputs = sum(a.nbytes for a in closed.out_avals)
    totals["bytes accessed"] = arguments + outputs
    cost = {k: float(v) for k, v in totals.items()}
    return cost, CompiledMemoryStats(argument_size_in_bytes=arguments, output_size_in_bytes=outputs)


def _memory(program, reuse_plan: dict, code_size: int) -> CompiledMemoryStats:
    jaxpr = program.closed.jaxpr
    outputs = {id(v) for v in jaxpr.outvars if type(v) is not Literal}
    inputs = {id(v) for v in (*jaxpr.invars, *jaxpr.constvars)}
    last_use: dict[int, int] = {}
    for i, step in enumerate(program.steps):
        for v in step.inputs:
            if type(v) is not Literal:
                last_use[id(v)] = i
    live, size, peak = {}, 0, 0
    for i, step in enumerate(program.steps):
        for v in step.outputs:
            if id(v) not in outputs and id(v) not in inputs and id(v) not in live:
                live[id(v)] = v.aval.nbytes
                size += live[id(v)]
        peak = max(peak, size)
        for v in step.inputs:
            if type(v) is not Literal and last_use.get(id(v)) == i and id(v) in live:
                size -= live.pop(id(v))
    alias = sum(jaxpr.invars[pos].aval.nbytes for pos in reuse_plan)
    return CompiledMemoryStats(
        generated_code_size_in_bytes=code_size,
        argument_size_in_bytes=sum(v.aval.nbytes for v in jaxpr.invars),
        output_size_in_bytes=sum(v.aval.nbytes for v in jaxpr.outvars),
        alias_size_in_bytes=alias,
        temp_size_in_bytes=peak,
    )
