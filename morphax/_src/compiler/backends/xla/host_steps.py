"""Programs that hold equations StableHLO cannot express here (linear-algebra decompositions
without a lowering, host callbacks): the program's top-level equations are split into runs that
lower (one device program each) and single equations run on the host by their NumPy reference in
between, the values passing through host memory. An equation nested in a loop or branch body
cannot be split out: its loop or branch then runs on the host whole.
"""

from __future__ import annotations

from morphax._src.core.jaxpr import ClosedJaxpr, DropVar, Jaxpr, Literal, any_eqn, sub_jaxprs


def _has_rule(eqn, axes=frozenset()) -> bool:
    """Whether `eqn` has a lowering in a module whose named axes are `axes`: a collective over an
    axis the module does not have (a pmap's program run per device) has none there."""
    prim = eqn.primitive
    if prim.named_axes_param is not None:
        names = eqn.params.get(prim.named_axes_param)
        names = names if isinstance(names, (tuple, list)) else (names,)
        if not set(names) <= axes:
            return False
    return getattr(prim, "stablehlo", None) is not None or prim.call_jaxpr_param is not None


def lowers(eqn, axes=frozenset()) -> bool:
    """Whether `eqn`, with every jaxpr nested in it, lowers to StableHLO in a module whose named
    axes are `axes`."""
    if not _has_rule(eqn, axes) or eqn.primitive.calls_host:
        return False
    if eqn.primitive.higher_order:
        return not any(
            any_eqn(sub, lambda e: not _has_rule(e, axes) or e.primitive.calls_host)
            for sub in sub_jaxprs(eqn.params)
        )
    return True


def plan(jaxpr, axes=frozenset()) -> list:
    """[("device", [eqns]) | ("host", eqn)] in program order, for a module whose named axes are
    `axes`."""
    steps: list = []
    for eqn in jaxpr.eqns:
        if lowers(eqn, axes):
            if steps and steps[-1][0] == "device":
                steps[-1][1].append(eqn)
            else:
                steps.append(("device", [eqn]))
        else:
            steps.append(("host", eqn))
    return steps


def device_program(eqns, later_uses: set) -> ClosedJaxpr:
    """The run `eqns` as a closed jaxpr of its own: its inputs are the variables it reads that it
    does not define, its outputs the variables it defines that `later_uses` holds."""
    defined, inputs, seen = set(), [], set()
    for eqn in eqns:
        for v in eqn.invars:
            if not isinstance(v, Literal) and v not in defined and v not in seen:
                seen.add(v)
                inputs.append(v)
        defined.update(v for v in eqn.outvars if not isinstance(v, DropVar))
    outputs = [v for eqn in eqns for v in eqn.outvars if not isinstance(v, DropVar) and v in later_uses]
    return ClosedJaxpr(Jaxpr([], inputs, outputs, list(eqns)), [])


def uses_after(jaxpr, steps) -> list:
    """For each step, the variables read by later steps or returned by the program."""
    needed = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
    out = [None] * len(steps)
    for k in range(len(steps) - 1, -1, -1):
        out[k] = set(needed)
        kind, body = steps[k]
        for eqn in body if kind == "device" else [body]:
            needed.update(v for v in eqn.invars if not isinstance(v, Literal))
    return out
