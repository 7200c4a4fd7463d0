"""Shared pieces of the sparse formats: the static description of a sparse array's shape, the
way its primitives are declared, and helpers for batch dimensions."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax._src.core.avals import ShapedArray
from morphax._src.core.primitive import Kind
from morphax._src.extend.primitives import Primitive, lower_fun, register_lowering


class SparseEfficiencyError(ValueError):
    pass


class SparseEfficiencyWarning(UserWarning):
    pass


class CuSparseEfficiencyWarning(SparseEfficiencyWarning):
    pass


class SparseInfo(NamedTuple):
    """The static part of a sparse array, carried in primitive params (hashable)."""

    shape: tuple
    indices_sorted: bool = False
    unique_indices: bool = False


def sparse_primitive(name, impl, abstract_eval, *, multiple_results=False):
    """A primitive whose implementation is `impl`, a composition of morphax operations on arrays.

    Eagerly `impl` runs on the operands; under jit the compiler traces it and compiles the result
    inline (the user-primitive lowering path), so a sparse program is one native program. The
    caller fills ``jvp``, ``transpose`` and ``batch`` in morphax's rule conventions.
    """
    impl = on_arrays(impl)
    p = Primitive(name)
    p.multiple_results = multiple_results
    p.def_impl(impl)
    p.def_abstract_eval(abstract_eval)
    register_lowering(p, lower_fun(impl, multiple_results=multiple_results))
    p.kind = Kind.OPAQUE
    return p


def on_arrays(impl):
    """`impl` with NumPy operands made morphax arrays (rules call it with whatever they hold)."""

    def run(*args, **params):
        return impl(*(a if hasattr(a, "at") else jnp.asarray(a) for a in args), **params)

    return run


def aval(shape, dtype):
    return ShapedArray(tuple(int(d) for d in shape), np.dtype(dtype))


def nfold_vmap(fn, n, in_axes=0, out_axes=0):
    """`fn` mapped over `n` leading axes (batch dimensions of a sparse array)."""
    for _ in range(n):
        fn = morphax.vmap(fn, in_axes=in_axes, out_axes=out_axes)
    return fn


def broadcast_batch(data, indices, batch_shape):
    """Data and indices with the batch dimensions `batch_shape` (JAX lets either buffer have size
    1 in a batch dimension)."""
    batch = tuple(batch_shape)
    n_batch = len(batch)
    if n_batch == 0:
        return data, indices
    if data.shape[:n_batch] != batch:
        data = jnp.broadcast_to(data, batch + data.shape[n_batch:])
    if indices.shape[:n_batch] != batch:
        indices = jnp.broadcast_to(indices, batch + indices.shape[n_batch:])
    return data, indices


def prod(xs):
    return math.prod(int(x) for x in xs)


# -------------------------------------------------------------------------------- generic rules
# A sparse primitive's implementation is a composition of morphax operations, so its rules can be
# that composition's: its batching rule is `vmap` of the implementation, a derivative rule the
# JVP or transpose of the implementation. Primitives with a simpler explicit rule set their own.


def batch_by_vmap(p, impl):
    impl = on_arrays(impl)

    def rule(vals, dims, *, axis_data, **params):
        fn = morphax.vmap(lambda *a: impl(*a, **params), in_axes=tuple(dims))
        out = fn(*vals)
        return (list(out), [0] * len(out)) if p.multiple_results else (out, 0)

    p.batch = rule
    return rule


def _dense_tangent(t, x):
    from morphax._src.core.ad_util import is_zero

    if not is_zero(t):
        return t
    dtype = jnp.result_type(x)
    if jnp.issubdtype(dtype, jnp.inexact):
        return jnp.zeros(jnp.shape(x), dtype)
    return np.zeros(jnp.shape(x), morphax.dtypes.float0)


def jvp_by_composition(p, impl):
    impl = on_arrays(impl)

    def rule(primals, tangents, **params):
        tangents = [_dense_tangent(t, x) for t, x in zip(tangents, primals)]
        out, out_t = morphax.jvp(lambda *a: impl(*a, **params), tuple(primals), tuple(tangents))
        if p.multiple_results:
            return list(out), list(out_t)
        return out, out_t

    p.jvp = rule
    return rule


def transpose_by_composition(p, impl):
    impl = on_arrays(impl)
    from morphax._src.core.ad_util import instantiate, is_undefined_primal

    def rule(cts, *args, **params):
        undefined = [i for i, a in enumerate(args) if is_undefined_primal(a)]

        def linear(*xs):
            full = list(args)
            for i, x in zip(undefined, xs):
                full[i] = x
            return impl(*full, **params)

        if p.multiple_results:
            cts = [instantiate(c) for c in cts]
        else:
            cts = instantiate(cts)
        avals = [args[i].aval for i in undefined]
        outs = morphax.linear_transpose(linear, *[jnp.zeros(a.shape, a.dtype) for a in avals])(cts)
        res = [None] * len(args)
        for i, o in zip(undefined, outs):
            res[i] = o
        return res

    p.transpose = rule
    return rule
