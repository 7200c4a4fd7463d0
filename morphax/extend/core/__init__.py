"""`morphax.extend.core` (`jax.extend.core`): define primitives, read jaxprs and traces.

A primitive made here follows JAX's conventions: ``p = Primitive("name")``, ``p.def_impl(f)``
(f computes on arrays), ``p.def_abstract_eval(g)`` (g maps `ShapedArray`s to `ShapedArray`s),
rules in `morphax.interpreters.ad` / `batching` and a lowering in `morphax.interpreters.mlir`;
``p.bind(*args, **params)`` then works eagerly and under jit, grad and vmap.
"""

import numpy as np

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
)
from morphax._src.errors import InconclusiveDimensionOperation
from morphax._src.extend.primitives import CallPrimitive, Primitive, call_impl
from morphax._src.extend.tracing import (
    TraceTag,
    concrete_or_error,
    find_top_trace,
    gensym,
    get_opaque_trace_state,
    jaxpr_as_fun,
    jaxprs_in_params,
    mapped_aval,
    new_jaxpr_eqn,
    primal_dtype_to_tangent_dtype,
    set_current_trace,
    subjaxprs,
    take_current_trace,
    unmapped_aval,
    valid_jaxtype,
)
from morphax._src.extend.tracing import (
    nonempty_axis_env as nonempty_axis_env_DO_NOT_USE,
)
from morphax._src.extend.tracing import (
    unsafe_am_i_under_a_jit as unsafe_am_i_under_a_jit_DO_NOT_USE,
)
from morphax._src.extend.tracing import (
    unsafe_am_i_under_a_vmap as unsafe_am_i_under_a_vmap_DO_NOT_USE,
)
from morphax._src.extend.tracing import (
    unsafe_get_axis_names as unsafe_get_axis_names_DO_NOT_USE,
)
from morphax._src.prims.tokens import Token
from morphax._src.transforms.staging import DebugInfo
from morphax.core import Effects, no_effects
from morphax.extend.core import primitives

# The types of concrete arrays primitives accept besides morphax's own (NumPy's).
array_types = frozenset({np.ndarray, *{t for t in np.sctypeDict.values() if issubclass(t, np.generic)}})

__all__ = [
    "CallPrimitive",
    "ClosedJaxpr",
    "DebugInfo",
    "DropVar",
    "Effect",
    "Effects",
    "InconclusiveDimensionOperation",
    "Jaxpr",
    "JaxprEqn",
    "JaxprTypeError",
    "Literal",
    "Primitive",
    "Token",
    "TraceTag",
    "Var",
    "array_types",
    "call_impl",
    "check_jaxpr",
    "concrete_or_error",
    "find_top_trace",
    "gensym",
    "get_opaque_trace_state",
    "jaxpr_as_fun",
    "jaxprs_in_params",
    "mapped_aval",
    "new_jaxpr_eqn",
    "no_effects",
    "nonempty_axis_env_DO_NOT_USE",
    "primal_dtype_to_tangent_dtype",
    "primitives",
    "set_current_trace",
    "subjaxprs",
    "take_current_trace",
    "unmapped_aval",
    "unsafe_am_i_under_a_jit_DO_NOT_USE",
    "unsafe_am_i_under_a_vmap_DO_NOT_USE",
    "unsafe_get_axis_names_DO_NOT_USE",
    "valid_jaxtype",
]
