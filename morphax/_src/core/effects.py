"""Effects: what an equation does besides computing its outputs (print, call the host), as JAX's
``jaxpr.effects`` reports them.

A primitive that has an effect says which through ``Primitive.effect_rule(**params) -> set``; a
primitive that carries jaxprs (jit, cond, scan...) has the effects of the jaxprs it carries, so a
jaxpr's effects are found without knowing any primitive by name (`jaxpr_effects`).
"""

from __future__ import annotations


class Effect:
    """Base class of effects. Instances compare by identity: each effect kind has one instance."""

    def __repr__(self):
        return type(self).__name__


class DebugEffect(Effect):
    """`debug.print` / `debug.callback`: runs on the host, in no particular order."""


class OrderedDebugEffect(Effect):
    """`debug.print(..., ordered=True)`: runs on the host in program order."""


debug_effect = DebugEffect()
ordered_debug_effect = OrderedDebugEffect()


def eqn_effects(eqn) -> set:
    """The effects of one equation: its primitive's rule, else those of the jaxprs it carries."""
    rule = eqn.primitive.effect_rule
    if rule is not None:
        return set(rule(**eqn.params))
    out: set = set()
    for value in eqn.params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            inner = getattr(item, "jaxpr", item)  # a ClosedJaxpr holds its Jaxpr as .jaxpr
            if hasattr(inner, "eqns") and hasattr(inner, "outvars"):
                out |= jaxpr_effects(inner)
    return out


def jaxpr_effects(jaxpr) -> set:
    out: set = set()
    for eqn in jaxpr.eqns:
        out |= eqn_effects(eqn)
    return out
