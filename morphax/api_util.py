"""`morphax.api_util` (`jax.api_util`): the pieces transformations are assembled from, for
libraries that build their own (flax's lazy_init, nn.scan and partial_eval_by_shape).

`flatten_fun` / `flatten_fun_nokwargs` turn a `WrappedFun` of pytrees into one of flat leaves,
`argnums_partial` fixes the static positional arguments, `debug_info` names what is being traced,
`donation_vector` / `rebase_donate_argnums` resolve argument donation, `flatten_axes` broadcasts
an axis-spec prefix over an argument tree, and `shaped_abstractify` gives a value's `ShapedArray`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from morphax._src.core import pytree
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.extend import linear_util as lu
from morphax._src.transforms.staging import DebugInfo, fun_name, make_debug_info

# --------------------------------------------------------------------------------- flattening


class _EqualStore(lu.Store):
    """A store that a second call may fill again with an equal value (``use_eq_store=True``:
    a function run twice, e.g. by a retrace, with the same output tree)."""

    __slots__ = ()

    def store(self, val):
        if self and self.val == val:
            return
        super().store(val)


def _flatten(name, gen, fun, in_tree, use_eq_store):
    _check_wrapped(name, fun)
    store = _EqualStore() if use_eq_store else lu.Store()
    return fun.wrap(gen, (in_tree,), store), lambda: store.val


def flatten_fun(
    fun: lu.WrappedFun, in_tree, *, use_eq_store: bool = False, unk_names: bool = False
) -> tuple[lu.WrappedFun, Callable[[], Any]]:
    """`fun` taking the flat leaves of ``(args, kwargs)`` (unflattened with `in_tree`) and
    returning flat leaves; also returns a thunk giving the output treedef after a call."""
    # NB: `unk_names` (JAX: name the outputs in debug info) is accepted and has no effect here.
    del unk_names
    return _flatten("flatten_fun", lu._flatten_fun, fun, in_tree, use_eq_store)


def flatten_fun_nokwargs(
    fun: lu.WrappedFun, in_tree, *, use_eq_store: bool = False, unk_names: bool = False
) -> tuple[lu.WrappedFun, Callable[[], Any]]:
    """As `flatten_fun` with `in_tree` the treedef of the positional arguments (a tuple) alone."""
    del unk_names
    return _flatten("flatten_fun_nokwargs", lu._flatten_fun_nokwargs, fun, in_tree, use_eq_store)


def _check_wrapped(name, fun):
    if not isinstance(fun, lu.WrappedFun):
        raise TypeError(
            f"{name}: expected a WrappedFun (build one with linear_util.wrap_init(f, debug_info=...)), "
            f"got {fun!r} of type {type(fun).__name__}."
        )


# ---------------------------------------------------------------------------- static arguments


def _ensure_index_tuple(x) -> tuple[int, ...]:
    try:
        return (operator.index(x),)
    except TypeError:
        return tuple(map(operator.index, x))


def _ensure_inbounds(num_args: int, argnums: Sequence[int]) -> tuple[int, ...]:
    out = []
    for i in argnums:
        if not -num_args <= i < num_args:
            raise ValueError(
                "Positional argument indices, e.g. for `static_argnums`, must have value greater than or "
                f"equal to -len(args) and less than len(args), but got value {i} for len(args) == {num_args}."
            )
        out.append(i % num_args)
    return tuple(out)


class _HashableByType:
    """A static argument compared by type and value, so ``1`` and ``1.0`` key different traces."""

    __slots__ = ("val",)

    def __init__(self, val):
        self.val = val

    def __hash__(self):
        return hash(self.val)

    def __eq__(self, other):
        return type(other) is _HashableByType and type(self.val) is type(other.val) and self.val == other.val


class _ByIdentity:
    """An unhashable static argument: equal only to itself, so it never shares a cache entry."""

    __slots__ = ("val",)

    def __init__(self, val):
        self.val = val

    def __hash__(self):
        return id(self.val)

    def __eq__(self, other):
        return type(other) is _ByIdentity and self.val is other.val


def _argnums_partial(f, dyn_argnums, fixed_args, *dyn_args, **kwargs):
    args = [None if arg is None else arg.val for arg in fixed_args]
    for i, arg in zip(dyn_argnums, dyn_args):
        args[i] = arg
    return f(*args, **kwargs)


def argnums_partial(f: lu.WrappedFun, dyn_argnums, args: Sequence, require_static_args_hashable=True):
    """`f` taking only the positional arguments at `dyn_argnums` (the others fixed to their values
    in `args`), and those dynamic arguments. Static arguments must be hashable unless
    ``require_static_args_hashable=False``."""
    _check_wrapped("argnums_partial", f)
    dyn_argnums = _ensure_inbounds(len(args), _ensure_index_tuple(dyn_argnums))
    fixed: list[Any] = [None] * len(args)
    for i, arg in enumerate(args):
        if i in dyn_argnums:
            continue
        if not require_static_args_hashable:
            fixed[i] = _ByIdentity(arg)
            continue
        try:
            hash(arg)
        except TypeError:
            raise ValueError(
                "Non-hashable static arguments are not supported, as this can lead to unexpected cache-misses. "
                f"Static argument (index {i}) of type {type(arg)} for function {f.__name__} is non-hashable."
            ) from None
        fixed[i] = _HashableByType(arg)
    dyn_args = tuple(args[i] for i in dyn_argnums)
    return lu.transformation2(_argnums_partial, f, dyn_argnums, tuple(fixed)), dyn_args


# Marked once, so that two partial applications with equal static arguments compare equal (and
# share a cache entry): transformation2 would otherwise wrap the generator anew on each call.
_argnums_partial = lu._style2(_argnums_partial)


# ---------------------------------------------------------------------------------- debug info


def debug_info(
    traced_for: str,
    fun: Callable,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    static_argnums: Sequence[int] = (),
    static_argnames: Sequence[str] = (),
    result_paths_thunk=None,
    sourceinfo: str | None = None,
    signature=None,
) -> DebugInfo:
    """What is traced (``traced_for``, e.g. "jit"), where `fun` is defined and a name per flat
    dynamic input of ``fun(*args, **kwargs)``, for `linear_util.wrap_init(f, debug_info=...)`.

    `args` may hold any objects (flax passes a treedef): only their tree paths are read.
    """
    # NB: `result_paths_thunk` and `signature` are accepted for JAX's signature; morphax's
    # DebugInfo names inputs only, read from `fun`'s own signature.
    del result_paths_thunk, signature
    if not isinstance(traced_for, str):
        raise TypeError(f"debug_info: traced_for must be a str, got {traced_for!r}")
    info = make_debug_info(traced_for, fun, tuple(args), dict(kwargs), static_argnums, static_argnames)
    if sourceinfo is not None:
        info = DebugInfo(traced_for, fun_name(fun), sourceinfo, info.arg_names, info.arg_sources)
    return info


# ------------------------------------------------------------------------------------ donation


def donation_vector(donate_argnums, donate_argnames, in_tree, kws: bool = True) -> tuple[bool, ...]:
    """One bool per leaf of `in_tree` (the treedef of ``(args, kwargs)``, or of ``args`` when
    ``kws=False``): whether that leaf's top-level argument is donated."""
    children = pytree.treedef_children(in_tree)
    if kws:
        if len(children) != 2:
            raise ValueError(
                f"donation_vector: in_tree must be the treedef of (args, kwargs) when kws=True, got {in_tree}."
            )
        args_tree, kwargs_tree = children
    else:
        args_tree, kwargs_tree = in_tree, None
    out: list[bool] = []
    for i, arg in enumerate(pytree.treedef_children(args_tree)):
        out.extend([i in donate_argnums] * arg.num_leaves)
    if kwargs_tree is not None:
        keys = pytree.tree_unflatten(kwargs_tree, [None] * kwargs_tree.num_leaves).keys()
        for key, val in zip(keys, pytree.treedef_children(kwargs_tree)):
            out.extend([key in donate_argnames] * val.num_leaves)
    return tuple(out)


def rebase_donate_argnums(donate_argnums, static_argnums) -> tuple[int, ...]:
    """`donate_argnums` renumbered for the argument list with the static arguments removed."""
    static = sorted(set(static_argnums))
    donate = sorted(set(donate_argnums))
    clash = sorted(set(static) & set(donate))
    if clash:
        raise ValueError(f"`static_argnums` {static} and `donate_argnums` {donate} cannot intersect.")
    return tuple(d - sum(1 for s in static if s < d) for d in donate)


# ---------------------------------------------------------------------------------------- axes


def _is_none(x):
    return x is None


class _Leaf:
    """A placeholder leaf of the value tree, shown as ``*`` in mismatch errors."""

    def __repr__(self):
        return "*"


def flatten_axes(name, treedef, axis_tree, *, kws=False, tupled_args=False):
    """`axis_tree` (ints and Nones, None a leaf) broadcast over `treedef`, as one axis per leaf.

    Raises ValueError naming `name` when `axis_tree` is not a tree prefix of `treedef`.
    """
    # The same prefix broadcast as vmap's in_axes (morphax._src.api.vmap), over placeholder leaves.
    full = pytree.tree_unflatten(treedef, [_Leaf()] * treedef.num_leaves)
    try:
        return pytree.broadcast_prefix(axis_tree, full, is_leaf=_is_none)
    except ValueError as e:
        detail = str(e)
    if kws:
        # Name only the positional part, which is what the caller's spec describes.
        treedef = pytree.treedef_children(treedef)[0]
        if isinstance(axis_tree, tuple) and len(axis_tree) == 2:
            axis_tree = axis_tree[0]
    hint = ""
    if tupled_args:
        hint = (
            f" Note that {name} that are non-trivial pytrees should always be wrapped in a tuple representing "
            "the argument list."
        )
        if len(pytree.treedef_children(treedef)) == 1:
            try:
                flatten_axes(name, treedef, (axis_tree,))
            except ValueError:
                pass
            else:
                hint += (
                    f" In particular, you're passing in a single argument which means that {name} might need "
                    "to be wrapped in a singleton tuple."
                )
    raise ValueError(
        f"{name} specification must be a tree prefix of the corresponding value;{hint} got {axis_tree!r} "
        f"for value tree {treedef}. ({detail})"
    ) from None


# ------------------------------------------------------------------------------------ the rest


def safe_map(f, *args) -> list:
    """``list(map(f, *args))``, raising ValueError when the sequences differ in length."""
    args = list(map(list, args))
    n = len(args[0]) if args else 0
    for i, arg in enumerate(args[1:], 1):
        if len(arg) != n:
            raise ValueError(
                f"safe_map: length mismatch: argument 0 has length {n}, argument {i} has {len(arg)}"
            )
    return list(map(f, *args))


def shaped_abstractify(x) -> ShapedArray:
    """The `ShapedArray` (shape, dtype, weak type) of `x`: an array, a scalar, a tracer or
    anything with ``shape`` and ``dtype`` (a `ShapeDtypeStruct`)."""
    if isinstance(x, ShapedArray):
        return x
    try:
        return get_aval(x)
    except TypeError:
        pass
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is not None and dtype is not None:
        return ShapedArray(tuple(shape), dtype, weak_type=bool(getattr(x, "weak_type", False)))
    raise TypeError(f"shaped_abstractify: argument {x!r} of type {type(x)} is not a valid morphax type.")


__all__ = [
    "argnums_partial",
    "debug_info",
    "donation_vector",
    "flatten_axes",
    "flatten_fun",
    "flatten_fun_nokwargs",
    "rebase_donate_argnums",
    "safe_map",
    "shaped_abstractify",
]
