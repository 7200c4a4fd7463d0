"""Builders that make the common primitive kinds one declaration each.

`elementwise_unop`, `binary_elementwise` and friends create a `Primitive`, fill its
abstract_eval/impl/batch slots with the standard shape, dtype and batching rules, and attach a
test spec. Imports the core and the batching-rule helpers only; never a transformation.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.structural import broadcast_in_dim
from morphax._src.prims._batching import vectorized_batcher
from morphax._src.prims._spec import Case, TestSpec, binary_cases
from morphax._src.prims.shape import expand_dims

# Named dtype classes a primitive may accept.
_DTYPE_CLASSES = {
    "float": (_dtypes.is_floating, "floating"),
    "inexact": (_dtypes.is_inexact, "floating or complexfloating"),
    "complex": (_dtypes.is_complex, "complexfloating"),
    "numeric": (lambda d: not _dtypes.is_bool(d), "number (not bool)"),
    "signed": (
        lambda d: _dtypes.is_inexact(d) or (_dtypes.is_integer(d) and not _dtypes.is_unsigned(d)),
        "signedinteger, floating or complexfloating",
    ),
    "real": (lambda d: not _dtypes.is_complex(d), "bool, integer or floating (not complex)"),
    "real_numeric": (lambda d: not _dtypes.is_complex(d) and not _dtypes.is_bool(d), "integer or floating"),
    "integer": (_dtypes.is_integer, "integer"),
    "int_or_bool": (lambda d: _dtypes.is_integer(d) or _dtypes.is_bool(d), "integer or bool"),
    "any": (lambda d: True, "any"),
}


def broadcasting_shape(name: str, *avals) -> tuple:
    """lax's rule: rank-0 operands broadcast freely; the rest share a rank and match up to 1s."""
    shapes = [a.shape for a in avals if a.shape]
    if not shapes:
        return ()
    if len(shapes) == 1:
        return shapes[0]
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes):
        raise TypeError(
            f"{name}: arrays must have the same number of dimensions (or be scalars), got "
            f"{', '.join(a.str_short() for a in avals)}. Broadcast explicitly (jnp functions do this for you)."
        )
    out = []
    for dims in zip(*shapes):
        non_one = {d for d in dims if d != 1}
        if len(non_one) > 1:
            raise TypeError(
                f"{name} got incompatible shapes for broadcasting: {', '.join(str(a.shape) for a in avals)}."
            )
        out.append(non_one.pop() if non_one else 1)
    return tuple(out)


def same_dtypes(name: str, avals) -> np.dtype:
    dtype = avals[0].dtype
    for a in avals[1:]:
        if a.dtype != dtype:
            raise TypeError(
                f"{name} requires arguments to have the same dtypes, got "
                f"{', '.join(a.dtype.name for a in avals)}. Cast with lax.convert_element_type or "
                "use the jnp function, which promotes."
            )
    return dtype


def check_class(name: str, dtype, dtype_class, argname: str = "operand") -> None:
    """Raise JAX's TypeError unless `dtype` is in `dtype_class`: a `builders` class name or a
    (predicate, description) pair for the few primitives with their own sets (conj, complex)."""
    ok, desc = _DTYPE_CLASSES[dtype_class] if isinstance(dtype_class, str) else dtype_class
    if not ok(dtype):
        raise TypeError(
            f"{name} does not accept dtype {np.dtype(dtype).name} for {argname}. Accepted dtypes are "
            f"{desc}; cast with lax.convert_element_type first."
        )


def mark_elementwise(prim):
    """Kernel metadata of an elementwise primitive: its kernel op is its own name."""
    prim.kind = Kind.ELEMENTWISE
    prim.kernel_op = prim.name
    return prim


def elementwise_unop(name, impl, dtypes, *, out_dtype=None, check=None, spec):
    """A one-operand elementwise primitive whose params (if any) leave shape and dtype alone:
    same shape, weak_type kept, dtype mapped by `out_dtype`; `check(aval, **params)` adds checks."""
    prim = Primitive(name)

    def abstract_eval(x, **params):
        check_class(name, x.dtype, dtypes)
        if check is not None:
            check(x, **params)
        dt = x.dtype if out_dtype is None else np.dtype(out_dtype(x.dtype))
        return ShapedArray(x.shape, dt, x.weak_type)

    prim.impl = impl
    prim.abstract_eval = abstract_eval
    mark_elementwise(prim)
    prim.test_spec = spec
    vectorized_batcher(prim)
    return prim


def concat_cases(*case_fns):
    """One case generator running several in turn (e.g. float and integer variants)."""
    return lambda rng: [c for fn in case_fns for c in fn(rng)]


def with_params(case_fn, **params):
    """Add fixed params (such as ``accuracy=None``) to every case without renaming it."""
    return lambda rng: [Case(c.args, {**c.params, **params}, c.name) for c in case_fn(rng)]


def as_arrays(*xs):
    """Impls get ndarrays, but eval paths may hand over NumPy scalars; `.view` needs arrays."""
    return [np.asarray(x) for x in xs]


def binary_elementwise(name, impl, *, dtypes="numeric", out_dtype=None, spec=None, declared=None, **spec_kw):
    """An elementwise primitive of two operands with lax's broadcasting (scalars and size-1 dims);
    `declared` is its Primitive when the core already declares it (add, see core/structural.py)."""
    prim = declared or Primitive(name)

    def abstract_eval(x, y):
        dt = same_dtypes(name, (x, y))
        check_dtype(name, dt, dtypes)
        shape = broadcasting_shape(name, x, y)
        out = dt if out_dtype is None else np.dtype(out_dtype(dt))
        return ShapedArray(shape, out, x.weak_type and y.weak_type)

    prim = elementwise_primitive(
        prim, impl, abstract_eval, spec or TestSpec(cases=binary_cases(dtypes, **spec_kw))
    )
    if isinstance(impl, np.ufunc):
        prim.ready_impl = impl
    return prim


def elementwise_primitive(prim, impl, abstract_eval, spec):
    """Fill `prim` (a Primitive, or a name for a new one) as an elementwise primitive of several
    operands under lax's broadcasting, with its own abstract eval: reference, kernel metadata, test
    spec and the broadcasting batcher."""
    prim = Primitive(prim) if isinstance(prim, str) else prim
    prim.impl = impl
    prim.abstract_eval = abstract_eval
    mark_elementwise(prim)
    prim.test_spec = spec
    elementwise_batcher(prim)
    return prim


def broadcast_batched_operands(vals, dims):
    """Line up the operands of an n-ary elementwise primitive under lax broadcasting for a batched
    bind; returns the new operands and the batch axis of the result.

    The batch axis of the result is the one most batched full-rank operands already use, so they
    need no transpose. Unbatched rank-0 operands stay as they are (they broadcast freely); other
    unbatched ones gain a size-1 axis there. A batched operand that is rank-0 per example (shape
    (B,)) becomes B along that axis and 1 elsewhere, so it broadcasts against the full-rank ones.
    A per-example rank mismatch is left for the primitive's own shape check to report."""
    shapes = [get_aval(v).shape for v in vals]
    dims = [None if d is None else d % len(s) for s, d in zip(shapes, dims)]
    ranks = [len(s) - (d is not None) for s, d in zip(shapes, dims)]
    rank = max(ranks)
    full = [d for d, r in zip(dims, ranks) if d is not None and r == rank]
    out_d = max(full, key=full.count) if full else 0
    out = []
    for v, s, d, r in zip(vals, shapes, dims, ranks):
        if d is None:
            out.append(v if r == 0 else expand_dims(v, (out_d,)))
        elif r == 0 and rank > 0:
            shape = [1] * (rank + 1)
            shape[out_d] = s[0]
            out.append(broadcast_in_dim(v, tuple(shape), (out_d,)))
        else:
            out.append(moveaxis(v, d, out_d))
    return out, out_d


def elementwise_batcher(prim):
    """Set `prim.batch` to the batching rule of an n-ary elementwise primitive with lax broadcasting
    (one or several results, each batched along the same axis)."""

    def rule(vals, dims, *, axis_data, **params):
        args, out_d = broadcast_batched_operands(vals, dims)
        out = prim.bind(*args, **params)
        if prim.multiple_results:
            return out, [out_d] * len(out)
        return out, out_d

    prim.batch = rule
    return rule


# The name most family files use for the same check.
check_dtype = check_class


def as_bool(_dtype):
    return np.bool_
