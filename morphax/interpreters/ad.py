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


def jvp(fun, primals, tangents):
    """``(primals_out, tangents_out)`` of `fun` (a function of positional arrays)."""
    from morphax._src.api.autodiff import jvp as _jvp  # noqa: PLC0415

    call = getattr(fun, "call_wrapped", fun)
    return _jvp(call, tuple(primals), tuple(tangents))


def linearize(fun, *primals):
    """``(primals_out, f_jvp)`` of `fun`; `f_jvp` maps input tangents to output tangents."""
    from morphax._src.api.autodiff import linearize as _linearize  # noqa: PLC0415

    call = getattr(fun, "call_wrapped", fun)
    return _linearize(call, *primals)


__all__ = [
    "JVPTrace",
    "JVPTracer",
    "UndefinedPrimal",
    "Zero",
    "add_jaxvals",
    "add_tangents",
    "defjvp",
    "defjvp2",
    "deflinear",
    "deflinear2",
    "get_primitive_transpose",
    "instantiate_zeros",
    "is_undefined_primal",
    "jvp",
    "linearize",
    "primitive_jvps",
    "primitive_transposes",
    "zeros_like_aval",
]
