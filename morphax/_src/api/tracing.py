"""Transformation entry points that users call: flatten pytree arguments, trace, unflatten.

Top of the import graph below the public modules; may import every `_src` layer.
"""

from __future__ import annotations

import inspect

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.traceback_util import api_boundary
from morphax._src.transforms.staging import make_debug_info, trace_to_jaxpr
from morphax._src.wrapping import wraps


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array (for `eval_shape`, `make_jaxpr`, `jit(...).lower`)."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, *, weak_type=False, sharding=None):
        # A symbolic dimension (morphax.export.symbolic_shape) stays itself; the rest are ints.
        self.shape = tuple(d if hasattr(d, "_get_vars") else int(d) for d in shape)
        # Extended dtypes (typed PRNG keys, ``key<fry>``) stand for key arrays (see _physical).
        self.dtype = _dtypes.canonicalize_dtype(dtype, allow_extended=True)
        self.weak_type = weak_type
        self.sharding = sharding

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @classmethod
    def like(cls, x):
        """The shape, dtype and weak type of `x` (an array, tracer, NumPy array, Python scalar or
        anything with an aval, such as another ShapeDtypeStruct), and its sharding if it has one."""
        if isinstance(x, ShapeDtypeStruct):
            return cls(x.shape, x.dtype, weak_type=x.weak_type, sharding=x.sharding)
        if isinstance(getattr(x, "dtype", None), _dtypes.ExtendedDType):
            return cls(x.shape, x.dtype)  # a key array
        try:
            aval = get_aval(x)
        except TypeError:
            raise TypeError(
                f"ShapeDtypeStruct.like: expected an array-like value (array, tracer, NumPy array or "
                f"Python scalar), got {x!r} of type {type(x).__name__}."
            ) from None
        return cls(aval.shape, aval.dtype, weak_type=aval.weak_type, sharding=getattr(x, "sharding", None))

    @property
    def aval(self):
        # A key dtype gives the keys' own aval (``key<fry>[...]``), as in JAX.
        return ShapedArray(self.shape, self.dtype, self.weak_type)

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype, self.weak_type) == (
            other.shape,
            other.dtype,
            other.weak_type,
        )

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))


def _is_extended(x) -> bool:
    return isinstance(getattr(x, "dtype", None), _dtypes.ExtendedDType)


def _physical(tree):
    """`tree` with each ShapeDtypeStruct of an extended dtype replaced by the value it stands for:
    a key array over it (tracing flattens that to the ShapeDtypeStruct, of aval ``key<fry>[...]``,
    and hands the function a key array)."""

    def phys(x):
        if isinstance(x, ShapeDtypeStruct) and _is_extended(x):
            return x.dtype.wrap_physical(x)
        return x

    return pytree.tree_map(phys, tree, is_leaf=lambda x: isinstance(x, ShapeDtypeStruct))


def _logical(tree):
    """Output shapes: each key array (holding ShapeDtypeStruct key words) as one ShapeDtypeStruct
    of its key dtype, as JAX's eval_shape gives them."""
    return pytree.tree_map(
        lambda x: ShapeDtypeStruct(x.shape, x.dtype) if _is_extended(x) else x, tree, is_leaf=_is_extended
    )


def _abstractify(x) -> ShapedArray:
    if isinstance(x, ShapeDtypeStruct):
        return x.aval
    try:
        return get_aval(x)
    except TypeError:
        raise TypeError(
            f"Argument {x!r} of type {type(x).__name__} is not a valid morphax type: arguments to "
            "transformed functions must be arrays, scalars, or pytrees of them. Mark non-array "
            "arguments static (static_argnums) instead."
        ) from None


def _normalize_argnums(fun, static_argnums, nargs):
    if static_argnums is None:
        return ()
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    return tuple(sorted(i % nargs if i < 0 else i for i in static_argnums))


def flatten_fun(fun, in_tree, out_store: list):
    """Wrap `fun` of pytree args into a function of flat leaves; records the output tree."""

    def flat_fun(*leaves):
        args, kwargs = pytree.tree_unflatten(in_tree, leaves)
        out = fun(*args, **kwargs)
        out_leaves, out_tree = pytree.tree_flatten(out)
        out_store.append(out_tree)
        return out_leaves

    return flat_fun


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False, abstracted_axes=None):
    """Return a function that traces `fun` and gives its `ClosedJaxpr` (and, with
    ``return_shape=True``, a pytree of `ShapeDtypeStruct` for the outputs)."""
    if not callable(fun):
        raise TypeError(f"make_jaxpr: expected a callable, got {fun!r} of type {type(fun).__name__}")

    @api_boundary
    @wraps(fun)
    def make_jaxpr_f(*args, **kwargs):
        static = _normalize_argnums(fun, static_argnums, len(args))
        for i in static:
            if i >= len(args):
                raise ValueError(
                    f"make_jaxpr: static_argnums={static_argnums} refers to argument {i}, but the "
                    f"function was called with {len(args)} positional arguments"
                )
        if static:
            static_vals = {i: args[i] for i in static}
            dyn_args = tuple(a for i, a in enumerate(args) if i not in static_vals)

            def target(*dyn, **kw):
                it = iter(dyn)
                full = [static_vals[i] if i in static_vals else next(it) for i in range(len(args))]
                return fun(*full, **kw)
        else:
            dyn_args, target = args, fun
        leaves, in_tree = pytree.tree_flatten(_physical((dyn_args, kwargs)))
        in_avals = [_abstractify(x) for x in leaves]
        out_store: list = []
        dbg = make_debug_info("make_jaxpr", fun, args, kwargs, static_argnums=static)
        closed = trace_to_jaxpr(flatten_fun(target, in_tree, out_store), in_avals, debug_info=dbg)
        if return_shape:
            out_shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in closed.out_avals]
            return closed, _logical(pytree.tree_unflatten(out_store[0], out_shapes))
        return closed

    make_jaxpr_f.__signature__ = inspect.signature(fun) if _has_signature(fun) else None
    return make_jaxpr_f


def _has_signature(fun) -> bool:
    try:
        inspect.signature(fun)
        return True
    except (TypeError, ValueError):
        return False


@api_boundary
def eval_shape(fun, *args, **kwargs):
    """Output shapes and dtypes of `fun` on arguments (arrays or ShapeDtypeStruct), without computing."""
    leaves, in_tree = pytree.tree_flatten(_physical((args, kwargs)))
    out_store: list = []
    dbg = make_debug_info("eval_shape", fun, args, kwargs)
    closed = trace_to_jaxpr(
        flatten_fun(fun, in_tree, out_store), [_abstractify(x) for x in leaves], debug_info=dbg
    )
    return _logical(
        pytree.tree_unflatten(
            out_store[0],
            [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in closed.out_avals],
        )
    )
