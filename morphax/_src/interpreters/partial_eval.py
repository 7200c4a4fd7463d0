"""`morphax.interpreters.partial_eval` (`jax.interpreters.partial_eval`): staging a function and
evaluating it partially.

`trace_to_jaxpr_nounits(fun, pvals)` runs `fun` with the known inputs' values (`PartialVal.known`)
and the unknown ones abstract (`PartialVal.unknown(aval)`): what the known values determine is
computed now and comes back known; the rest is staged into a jaxpr. `trace_to_jaxpr_dynamic`
stages all of it.
"""

from __future__ import annotations

from morphax._src.extend.primitives import dce_rules
from morphax._src.extend.tracing import PartialVal, trace_to_jaxpr_dynamic, trace_to_jaxpr_nounits
from morphax._src.transforms.ad import PartialEvalTrace as JaxprTrace
from morphax._src.transforms.staging import StagingTrace as DynamicJaxprTrace
from morphax._src.transforms.staging import StagingTracer as DynamicJaxprTracer

JaxprTracer = DynamicJaxprTracer
Val = object


def dce_jaxpr(jaxpr, used_outputs, instantiate=False):
    """`jaxpr` keeping only the outputs marked in `used_outputs` and what they need: returns
    ``(new_jaxpr, used_inputs)``."""
    from morphax._src.core.jaxpr import ClosedJaxpr  # noqa: PLC0415
    from morphax._src.passes.dce import dce_closed_jaxpr  # noqa: PLC0415

    closed = jaxpr if isinstance(jaxpr, ClosedJaxpr) else ClosedJaxpr(jaxpr, [None] * len(jaxpr.constvars))
    res, used_inputs = dce_closed_jaxpr(closed, list(used_outputs), prune_invars=not instantiate)
    new = res.closed
    return (new if isinstance(jaxpr, ClosedJaxpr) else new.jaxpr), list(used_inputs)


__all__ = [
    "DynamicJaxprTrace",
    "DynamicJaxprTracer",
    "JaxprTrace",
    "JaxprTracer",
    "PartialVal",
    "Val",
    "dce_jaxpr",
    "dce_rules",
    "trace_to_jaxpr_dynamic",
    "trace_to_jaxpr_nounits",
]
