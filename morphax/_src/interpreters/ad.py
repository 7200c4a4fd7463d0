"""`morphax.interpreters.ad` (`jax.interpreters.ad`): forward- and reverse-mode rules.

``primitive_jvps[p] = jvp`` with ``jvp(primals, tangents, **params) -> (primals_out,
tangents_out)`` and ``primitive_transposes[p] = transpose`` with ``transpose(cts, *args,
**params)`` (one cotangent or None per argument; linear arguments are `UndefinedPrimal`s) give a
primitive its derivative rules; symbolic zeros are `Zero`s.
"""

from __future__ import annotations

from morphax._src.core.ad_util import UndefinedPrimal, Zero, instantiate, is_undefined_primal, zeros_like_aval
from morphax._src.extend.primitives import (
    add_tangents,
    defbilinear,
    defjvp,
    defjvp2,
    deflinear,
    deflinear2,
    get_primitive_transpose,
    primitive_jvps,
    primitive_transposes,
)
from morphax._src.transforms.ad import JVPTrace, JVPTracer


def instantiate_zeros(tangent):
    """A dense value for a tangent that may be a symbolic `Zero`."""
    return instantiate(tangent)


def add_jaxvals(x, y):
    """The sum of two tangent values (dense or `Zero`)."""
    return add_tangents(x, y)


__all__ = [
    "JVPTrace",
    "JVPTracer",
    "UndefinedPrimal",
    "Zero",
    "add_jaxvals",
    "add_tangents",
    "defbilinear",
    "defjvp",
    "defjvp2",
    "deflinear",
    "deflinear2",
    "get_primitive_transpose",
    "instantiate_zeros",
    "is_undefined_primal",
    "primitive_jvps",
    "primitive_transposes",
    "zeros_like_aval",
]
