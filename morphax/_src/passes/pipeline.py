"""The optimization pipeline: forwarding, constant folding, CSE and DCE, repeated until a round
changes nothing. `optimize` returns its input object when there is nothing to do, so running it
on its own output is free and returns that output.
"""

from __future__ import annotations

import dataclasses

from morphax._src.config import config
from morphax._src.core.jaxpr import ClosedJaxpr, JaxprTypeError, check_jaxpr
from morphax._src.passes.constant_folding import run_constant_folding
from morphax._src.passes.cse import run_cse
from morphax._src.passes.dce import run_dce
from morphax._src.passes.forwarding import run_forwarding

__all__ = ["PASSES", "PassStats", "optimize"]

# In the order they run within a round; each maps a ClosedJaxpr to a PassResult. Forwarding and
# folding first give CSE more equal inputs; CSE before DCE lets calls that read different outputs
# of the same jaxpr merge before DCE specializes each to its own outputs.
PASSES = (
    ("forwarding", run_forwarding),
    ("constant_folding", run_constant_folding),
    ("cse", run_cse),
    ("dce", run_dce),
)


@dataclasses.dataclass
class PassStats:
    """Equations removed by each pass (nested jaxprs included), summed over all rounds."""

    dce: int = 0
    cse: int = 0
    constant_folding: int = 0
    forwarding: int = 0
    rounds: int = 0  # rounds run, the last of which changed nothing (unless `max_rounds` hit)
    converged: bool = True

    @property
    def total(self) -> int:
        return self.dce + self.cse + self.constant_folding + self.forwarding


def _check_after(closed: ClosedJaxpr, pass_name: str) -> None:
    """jax_enable_checks: a pass must leave a well-typed jaxpr."""
    try:
        check_jaxpr(closed.jaxpr)
    except JaxprTypeError as e:
        raise JaxprTypeError(f"{e} (after the {pass_name} pass)") from None


def optimize(closed: ClosedJaxpr, stats: PassStats | None = None, *, max_rounds: int = 16) -> ClosedJaxpr:
    """Run every pass in turn until a whole round changes nothing (or `max_rounds` rounds ran).
    Counts accumulate into `stats` when given. The input is never mutated."""
    if stats is None:
        stats = PassStats()
    for _ in range(max_rounds):
        stats.rounds += 1
        changed = False
        for name, run in PASSES:
            res = run(closed)
            if res.changed:
                changed = True
                closed = res.closed
                if config.enable_checks:
                    _check_after(closed, name)
                setattr(stats, name, getattr(stats, name) + res.removed)
        if not changed:
            stats.converged = True
            return closed
    stats.converged = False
    return closed
