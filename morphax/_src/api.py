"""Transformation entry points that users call: flatten pytree arguments, trace, unflatten.

Top of the import graph below the public modules; may import every `_src` layer.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.transforms.staging import trace_to_jaxpr


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array (for `eval_shape`, `make_jaxpr`, `jit(...).lower`)."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, *, weak_type=False, sharding=None):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = _dtypes.canonicalize_dtype(dtype)
        self.weak_type = weak_type
        self.sharding = sharding

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @property
    def aval(self):
        return ShapedArray(self.shape, self.dtype, self.weak_type)

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def __eq__(self, other):
        return (
            isinstance(other, ShapeDtypeStruct)
            and (self.shape, self.dtype, self.weak_type) == (other.shape, other.dtype, other.weak_type)
        )

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))


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

    @functools.wraps(fun)
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
        leaves, in_tree = pytree.tree_flatten((dyn_args, kwargs))
        in_avals = [_abstractify(x) for x in leaves]
        out_store: list = []
        closed = trace_to_jaxpr(flatten_fun(target, in_tree, out_store), in_avals)
        if return_shape:
            out_shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in closed.out_avals]
            return closed, pytree.tree_unflatten(out_store[0], out_shapes)
        return closed

    make_jaxpr_f.__signature__ = inspect.signature(fun) if _has_signature(fun) else None
    return make_jaxpr_f


def _has_signature(fun) -> bool:
    try:
        inspect.signature(fun)
        return True
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------------------------- jit


class _Counters:
    """Counts of traces per jitted function (tests assert these, never wall times)."""

    def __init__(self):
        self.traces = 0

    def reset(self):
        self.traces = 0


trace_counters = _Counters()


def _hashable_static(value, where):
    try:
        hash(value)
    except TypeError:
        raise ValueError(
            f"Non-hashable static arguments are not supported: {where} is {value!r} of type "
            f"{type(value).__name__}. Static arguments key the compilation cache, so they must be "
            "hashable: pass a tuple instead of a list, or make the argument non-static (an array)."
        ) from None
    return value


class Traced:
    """The result of `jit(f).trace(*args)`: the jaxpr and the tree structures."""

    def __init__(self, closed, in_tree, out_tree, leaves, fun_name):
        self.jaxpr = closed
        self.in_tree = in_tree
        self.out_tree = out_tree
        self._leaves = leaves
        self.fun_name = fun_name
        self.out_info = pytree.tree_unflatten(
            out_tree, [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in closed.out_avals]
        )

    def lower(self):
        return Lowered(self)


class Lowered:
    def __init__(self, traced: Traced):
        self._traced = traced

    def as_text(self):
        return str(self._traced.jaxpr)

    def compile(self):
        return Compiled(self._traced)


class Compiled:
    def __init__(self, traced: Traced):
        self._traced = traced

    def as_text(self):
        return str(self._traced.jaxpr)

    def __call__(self, *args, **kwargs):
        from morphax._src.transforms.jit import pjit_p

        leaves, in_tree = pytree.tree_flatten((args, kwargs))
        if in_tree != self._traced.in_tree:
            raise TypeError(
                f"Compiled function {self._traced.fun_name} called with argument structure {in_tree}, but it "
                f"was compiled for {self._traced.in_tree}."
            )
        outs = pjit_p.bind(*leaves, jaxpr=self._traced.jaxpr, name=self._traced.fun_name)
        return pytree.tree_unflatten(self._traced.out_tree, outs)


class JitWrapped:
    """What `jit(f)` returns: traces once per argument signature and binds `pjit` with the jaxpr."""

    def __init__(self, fun, static_argnums, static_argnames, donate_argnums, donate_argnames, keep_unused, inline):
        if not callable(fun):
            raise TypeError(f"jit: expected a callable, got {fun!r} of type {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._name = getattr(fun, "__name__", type(fun).__name__)
        sig = inspect.signature(fun) if _has_signature(fun) else None
        self._sig = sig
        nums = () if static_argnums is None else (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        names = () if static_argnames is None else (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        if sig is not None:
            params = list(sig.parameters)
            names = tuple(names) + tuple(params[i] for i in nums if 0 <= i < len(params) and params[i] not in names)
            nums = tuple(nums) + tuple(params.index(n) for n in names if n in params and params.index(n) not in nums)
        self._static_argnums = tuple(sorted(set(nums)))
        self._static_argnames = tuple(names)
        self._cache: dict = {}

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def clear_cache(self):
        self._cache.clear()

    def _signature_key(self, args, kwargs):
        from morphax._src.config import config

        nargs = len(args)
        static_nums = tuple(i % nargs if i < 0 else i for i in self._static_argnums if -nargs <= i < nargs)
        static_pos = tuple((i, _hashable_static(args[i], f"static argument {i}")) for i in static_nums)
        static_kw = tuple(
            sorted((k, _hashable_static(v, f"static argument {k!r}")) for k, v in kwargs.items() if k in self._static_argnames)
        )
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static_nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        leaves, in_tree = pytree.tree_flatten((dyn_args, dyn_kwargs))
        avals = tuple(_abstractify(x) for x in leaves)
        key = (in_tree, avals, static_pos, static_kw, config.enable_x64)
        return key, leaves, in_tree, static_nums, static_pos, static_kw

    def trace(self, *args, **kwargs) -> Traced:
        key, leaves, in_tree, static_nums, static_pos, static_kw = self._signature_key(args, kwargs)
        hit = self._cache.get(key)
        if hit is None:
            static_pos_d = dict(static_pos)
            nargs = len(args)

            def target(*dyn, **kw):
                it = iter(dyn)
                full = [static_pos_d[i] if i in static_pos_d else next(it) for i in range(nargs)]
                return self._fun(*full, **kw, **dict(static_kw))

            out_store: list = []
            trace_counters.traces += 1
            closed = trace_to_jaxpr(flatten_fun(target, in_tree, out_store), list(key[1]))
            hit = self._cache[key] = (closed, out_store[0])
        closed, out_tree = hit
        return Traced(closed, in_tree, out_tree, leaves, self._name)

    def __call__(self, *args, **kwargs):
        from morphax._src.config import config
        from morphax._src.transforms.jit import pjit_p

        if config.disable_jit:
            return self._fun(*args, **kwargs)
        traced = self.trace(*args, **kwargs)
        outs = pjit_p.bind(*traced._leaves, jaxpr=traced.jaxpr, name=self._name)
        return pytree.tree_unflatten(traced.out_tree, outs)

    def lower(self, *args, **kwargs) -> Lowered:
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        return self.trace(*args, **kwargs).out_info


def jit(fun=None, *, static_argnums=None, static_argnames=None, donate_argnums=None, donate_argnames=None,
        keep_unused=False, inline=False, device=None, backend=None, in_shardings=None, out_shardings=None):
    """Stage `fun` into a jaxpr once per argument signature and run it as one `pjit` call."""
    if fun is None:
        return functools.partial(
            jit, static_argnums=static_argnums, static_argnames=static_argnames, donate_argnums=donate_argnums,
            donate_argnames=donate_argnames, keep_unused=keep_unused, inline=inline,
        )
    return JitWrapped(fun, static_argnums, static_argnames, donate_argnums, donate_argnames, keep_unused, inline)


def eval_shape(fun, *args, **kwargs):
    """Output shapes and dtypes of `fun` on arguments (arrays or ShapeDtypeStruct), without computing."""
    leaves, in_tree = pytree.tree_flatten((args, kwargs))
    out_store: list = []
    closed = trace_to_jaxpr(flatten_fun(fun, in_tree, out_store), [_abstractify(x) for x in leaves])
    return pytree.tree_unflatten(
        out_store[0], [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in closed.out_avals]
    )
