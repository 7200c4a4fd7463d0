"""How `jit` handles mutable array references (Refs) passed to or closed over by the function.

The traced jaxpr is discharged (higher_order/state_discharge.py) into a functional one that takes
the refs' values and returns their final values after its outputs, so the compiled program is
ordinary. Each call reads the refs, runs the program and writes the final values back: eagerly
by swapping the refs' buffers, under a transformation through the state primitives (so vmap and
jvp see plain reads and writes around the call). Functions that touch no ref never get here.

Staged by make_jaxpr (or inside another jit or a loop body), the call stays one jit equation
that takes the refs, as in JAX; under jvp and vmap it is the functional call between a read and
a write of each ref, which those transformations handle like any other state operations.
"""

from __future__ import annotations

from morphax._src.core import trace as _trace
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr
from morphax._src.core.state_types import Ref, is_ref_aval
from morphax._src.higher_order.state_discharge import discharge_state, has_state
from morphax._src.prims.conversion import copy
from morphax._src.prims.state import read_whole, write_whole
from morphax._src.transforms.staging import StagingTrace

__all__ = ["StatefulCall", "call_stateful", "stateful_form"]


class StatefulCall:
    """A traced function that takes refs: its functional program and where its refs go.

    ``discharged`` takes ``const_refs + lifted + leaves`` with each ref replaced by its value and
    returns the outputs followed by the final value of each ref, in the order of `ref_positions`.
    """

    __slots__ = ("closed", "discharged", "const_refs", "ref_positions", "n_out", "arg_names", "fun_info")

    def __init__(self, closed, discharged, const_refs, ref_positions, n_out, arg_names, fun_info):
        self.closed = closed
        self.discharged = discharged
        self.const_refs = const_refs
        self.ref_positions = ref_positions
        self.n_out = n_out
        self.arg_names = arg_names
        self.fun_info = fun_info


def _returned_ref_error(closed: ClosedJaxpr, dbg, n_lifted: int):
    j = closed.jaxpr
    for v in j.outvars:
        if not is_ref_aval(v.aval):
            continue
        where = "The returned mutable array was created inside the function."
        if v in j.invars:
            k = j.invars.index(v) - n_lifted
            names = dbg.arg_names if dbg is not None else None
            if 0 <= k and names is not None and k < len(names):
                where = f"The returned mutable array was passed in as the argument {names[k]}."
        elif v in j.constvars:
            where = "The returned mutable array was closed over by the function."
        fun = dbg.func_src_info if dbg is not None else "the function"
        return ValueError(
            f"function {fun} traced for jit returned a mutable array reference of type {v.aval}, but "
            f"mutable array references cannot be returned.\n\n{where} Return its value (ref[...]) instead."
        )
    return None


def stateful_form(closed: ClosedJaxpr, n_lifted: int, dbg):
    """What jit keeps for a traced function: `closed` itself when it uses no refs, its discharged
    form when it only creates refs inside, else a `StatefulCall`."""
    has_ref_consts = any(type(c) is Ref for c in closed.consts)
    if not has_ref_consts and not has_state(closed):
        return closed
    err = _returned_ref_error(closed, dbg, n_lifted)
    if err is not None:
        raise err
    j = closed.jaxpr
    const_refs, keep = [], []
    for v, c in zip(j.constvars, closed.consts):
        (const_refs if type(c) is Ref else keep).append((v, c))
    lifted_form = ClosedJaxpr(
        Jaxpr([v for v, _ in keep], [v for v, _ in const_refs] + j.invars, j.outvars, j.eqns, j.debug_info),
        [c for _, c in keep],
    )
    ref_positions = tuple(i for i, v in enumerate(lifted_form.jaxpr.invars) if is_ref_aval(v.aval))
    discharged = discharge_state(lifted_form)
    if not ref_positions:
        return discharged
    return StatefulCall(
        lifted_form,
        discharged,
        [c for _, c in const_refs],
        ref_positions,
        len(j.outvars),
        dbg.arg_names if dbg is not None else None,
        dbg.func_src_info if dbg is not None else "the function",
    )


def _describe(sc: StatefulCall, n_lifted: int, i: int) -> str:
    k = i - len(sc.const_refs) - n_lifted
    if k < 0:
        return "a closed-over value"
    if sc.arg_names is not None and k < len(sc.arg_names):
        return sc.arg_names[k]
    return f"argument {k}"


def call_stateful(sc: StatefulCall, lifted, leaves, name, run_eagerly, bind_call):
    """Run `sc` on this call's arguments: read the refs, run the program, write them back.

    `run_eagerly(vals)` runs `sc.discharged` compiled (None when a transformation is tracing);
    `bind_call(vals, closed)` binds `closed` as a jit call on the current trace.
    """
    inputs = list(sc.const_refs) + list(lifted) + list(leaves)
    seen: dict[int, int] = {}
    for i in sc.ref_positions:
        r = inputs[i]
        if id(r) in seen:
            a, b = _describe(sc, len(lifted), seen[id(r)]), _describe(sc, len(lifted), i)
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a function, but "
                f"when tracing {sc.fun_info} for jit the mutable array reference of type {r.aval} "
                f"appeared at both {a} and {b}. Pass it once."
            )
        seen[id(r)] = i
    if type(_trace.ctx.trace) is StagingTrace:
        # Staged (make_jaxpr, an enclosing jit or loop body): one jit equation that takes the refs
        # and holds their operations, as JAX prints it; whoever compiles it discharges it.
        return bind_call(inputs, sc.closed)
    vals = list(inputs)
    if run_eagerly is not None:
        for i in sc.ref_positions:
            r = inputs[i]
            if type(r) is not Ref:
                run_eagerly = None  # a traced ref (a transformation is running): bind instead
                break
            r.check_valid(f"jit({name})")
    if run_eagerly is not None:
        for i in sc.ref_positions:
            vals[i] = inputs[i].current_array()
        outs = run_eagerly(vals)
        results = outs[: sc.n_out]
        for i, v in zip(sc.ref_positions, outs[sc.n_out :]):
            if any(v is x for x in vals) or any(v is o for o in results):
                v = copy(v)  # a forwarded input or a returned array: the ref must own its buffer
            inputs[i].store(v)
        return results
    for i in sc.ref_positions:
        vals[i] = read_whole(inputs[i])
    outs = bind_call(vals, sc.discharged)
    for i, v in zip(sc.ref_positions, outs[sc.n_out :]):
        write_whole(inputs[i], v)
    return outs[: sc.n_out]
