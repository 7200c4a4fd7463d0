"""`morphax.core` (`jax.core`): the types and functions libraries use to look at values and traces.

`ShapedArray` is the type of every traced value; `Tracer` the base class of every tracer (jit,
grad and vmap); `Trace` the base of traces; `eval_jaxpr` evaluates a jaxpr. The names JAX 0.10
moved to `jax.extend.core` and still answers here with a deprecation (`concrete_or_error`,
`find_top_trace`, `get_opaque_trace_state`, ...) are here too, as are a few JAX removed in 0.10
that libraries written for older JAX still reach for behind version checks (`get_aval`,
`mapped_aval`, `unmapped_aval`, `raise_to_shaped`, `subjaxprs`).
"""

from __future__ import annotations

import abc
import contextlib
from typing import Any, Union

from morphax._src.api.environment import ensure_compile_time_eval
from morphax._src.core import trace as _trace
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.effects import Effect
from morphax._src.core.jaxpr import (
    ClosedJaxpr,
    DropVar,
    Jaxpr,
    JaxprEqn,
    JaxprTypeError,
    Literal,
    Var,
    check_jaxpr,
    eval_jaxpr,
)
from morphax._src.core.state_types import AbstractRef
from morphax._src.core.trace import Trace, Tracer
from morphax._src.errors import ConcretizationTypeError, InconclusiveDimensionOperation
from morphax._src.extend.primitives import Primitive
from morphax._src.extend.tracing import (
    OpaqueTraceState,
    TraceTag,
    concrete_dim_or_error,
    concrete_or_error,
    find_top_trace,
    gensym,
    get_opaque_trace_state,
    jaxpr_as_fun,
    jaxprs_in_params,
    mapped_aval,
    new_jaxpr_eqn,
    nonempty_axis_env,
    primal_dtype_to_tangent_dtype,
    raise_to_shaped,
    set_current_trace,
    subjaxprs,
    take_current_trace,
    unmapped_aval,
    unsafe_am_i_under_a_jit,
    unsafe_am_i_under_a_vmap,
    unsafe_get_axis_names,
    valid_jaxtype,
)
from morphax._src.transforms.staging import DebugInfo


class AbstractValue(abc.ABC):  # noqa: B024 - a marker base, as in JAX
    """The base of abstract values: `ShapedArray` and the type of mutable references."""


AbstractValue.register(ShapedArray)
AbstractValue.register(AbstractRef)

# A jaxpr operand: a variable or an inline literal.
Atom = Union[Var, Literal]  # noqa: UP007 - a runtime alias libraries use in annotations
Value = Any
ParamDict = dict
Effects = set
no_effects: frozenset = frozenset()


def typeof(x) -> ShapedArray:
    """The abstract value of `x` (`jax.typeof`)."""
    return get_aval(x)


@contextlib.contextmanager
def eval_context():
    """Evaluate eagerly inside the block, whatever transformation is being traced."""
    with _trace.set_current_trace(_trace.base_trace()):
        yield


def max_dim(d1, d2):
    """The larger of two dimension sizes (morphax shapes are concrete integers)."""
    return max(d1, d2)


def min_dim(d1, d2):
    """The smaller of two dimension sizes."""
    return min(d1, d2)


def is_constant_dim(d) -> bool:
    return isinstance(d, int)


def is_constant_shape(shape) -> bool:
    return all(isinstance(d, int) for d in shape)


__all__ = [
    "AbstractRef",
    "AbstractValue",
    "Atom",
    "ClosedJaxpr",
    "ConcretizationTypeError",
    "DebugInfo",
    "DropVar",
    "Effect",
    "Effects",
    "InconclusiveDimensionOperation",
    "Jaxpr",
    "JaxprEqn",
    "JaxprTypeError",
    "Literal",
    "OpaqueTraceState",
    "ParamDict",
    "Primitive",
    "ShapedArray",
    "Trace",
    "TraceTag",
    "Tracer",
    "Value",
    "Var",
    "check_jaxpr",
    "concrete_dim_or_error",
    "concrete_or_error",
    "ensure_compile_time_eval",
    "eval_context",
    "eval_jaxpr",
    "find_top_trace",
    "gensym",
    "get_aval",
    "get_opaque_trace_state",
    "is_constant_dim",
    "is_constant_shape",
    "jaxpr_as_fun",
    "jaxprs_in_params",
    "mapped_aval",
    "max_dim",
    "min_dim",
    "new_jaxpr_eqn",
    "no_effects",
    "nonempty_axis_env",
    "primal_dtype_to_tangent_dtype",
    "raise_to_shaped",
    "set_current_trace",
    "subjaxprs",
    "take_current_trace",
    "typeof",
    "unmapped_aval",
    "unsafe_am_i_under_a_jit",
    "unsafe_am_i_under_a_vmap",
    "unsafe_get_axis_names",
    "valid_jaxtype",
]
