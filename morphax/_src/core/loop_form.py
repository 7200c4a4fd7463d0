"""The loop form of a control-flow equation: what a compiler needs to run it as native code
without knowing which primitive it is (`Primitive.loop_form(params) -> LoopForm`).

Three shapes cover the control flow primitives:
- "scan": `length` iterations (backwards when `reverse`) of one body over the carries, reading
  slice t of each scanned operand and writing slice t of each stacked output;
- "while": a predicate body on the carries, then a *step* body (the loop body followed by the
  predicate on its result) until the predicate is false;
- "switch": operand `index` (clamped into range) picks the body that computes the results.

Each body's inputs and outputs are wired by role: an input reads ("operand", k), ("carry", c) or
("x", j) (slice of scanned operand j); an output writes ("carry", c), ("y", j) (slice of stacked
output j), ("pred", 0) or ("result", k) (output k of the equation).
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class LoopForm:
    kind: str  # "scan", "while" or "switch"
    bodies: tuple  # ClosedJaxprs
    inputs: tuple  # per body, the role of each of its inputs
    outputs: tuple  # per body, the role of each of its outputs
    carry_init: tuple = ()  # operand holding each carry's initial value
    carry_final: tuple = ()  # output of the equation that receives each final carry
    xs: tuple = ()  # operand of each scanned input (sliced along its leading axis)
    ys: tuple = ()  # output of each stacked result (one slice per iteration)
    length: int = 0
    reverse: bool = False
    index: int = 0  # "switch": the operand holding the branch index
