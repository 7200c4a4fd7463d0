"""`vmap`: the user entry point of batching. Resolves in_axes/out_axes against the argument and
output pytrees, checks sizes and ranks (errors name each argument's path, axis and size), and
runs the function under a `BatchTrace`.
"""

from __future__ import annotations

from morphax._src.core import pytree
from morphax._src.core import trace as _trace
from morphax._src.core.avals import get_aval
from morphax._src.core.batch_axes import AxisData, bdim_to_front, moveaxis
from morphax._src.transforms.batching import BatchTrace, BatchTracer
from morphax._src.wrapping import wraps


def _check_axis_spec(spec, what):
    for leaf in pytree.tree_leaves(spec):
        if not isinstance(leaf, int):
            raise TypeError(
                f"vmap {what} must be an int, None, or a (nested) container of them; got {leaf!r} of "
                f"type {type(leaf).__name__}."
            )


def _flat_axes(axes, tree, what, fun_name):
    try:
        return pytree.broadcast_prefix(axes, tree, is_leaf=lambda x: x is None)
    except ValueError as e:
        raise ValueError(
            f"vmap({fun_name}) {what} specification must be a tree prefix of the corresponding value, got "
            f"specification {axes!r} for value tree {pytree.tree_structure(tree)}. ({e})"
        ) from None


# Pytree classes whose aux data records the shape of their leaves (sparse arrays: BCOO's shape
# includes its batch dimensions), so mapping over a leaf axis must also update that record:
# type -> (to_elt(obj, axis) -> the object seen per batch element, from_elt(obj, axis_size, axis)
# -> the batched object). JAX's `batching.register_vmappable`.
_VMAPPABLE: dict = {}


def register_vmappable(cls, to_elt, from_elt):
    _VMAPPABLE[cls] = (to_elt, from_elt)


def _is_vmappable(x):
    return type(x) in _VMAPPABLE


def _update_vmappables(tree, leaf_dims, which, *extra):
    """`tree` with each registered object replaced by its to_elt (which=0) or from_elt (which=1)
    at the common mapped axis of its leaves (objects whose leaves are unmapped stay)."""
    parts, outer = pytree.tree_flatten(tree, is_leaf=_is_vmappable)
    if not any(_is_vmappable(p) for p in parts):
        return tree
    out, pos = [], 0
    for part in parts:
        if not _is_vmappable(part):
            out.append(part)
            pos += 1
            continue
        n = len(pytree.tree_leaves(part))
        dims = {d for d in leaf_dims[pos : pos + n] if d is not None}
        pos += n
        if len(dims) > 1:
            raise ValueError(
                f"vmap: the buffers of a {type(part).__name__} are mapped along different axes {sorted(dims)}"
            )
        out.append(_VMAPPABLE[type(part)][which](part, *extra, dims.pop()) if dims else part)
    return pytree.tree_unflatten(outer, out)


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """Vectorize `fun` over a new leading (or `in_axes`-chosen) axis of its arguments."""
    if not callable(fun):
        raise TypeError(f"vmap: expected a callable, got {fun!r} of type {type(fun).__name__}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axis_spec(in_axes, "in_axes")
    _check_axis_spec(out_axes, "out_axes")
    fun_name = getattr(fun, "__name__", type(fun).__name__)

    @wraps(fun)
    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                "vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional "
                f"arguments passed to the function, but got len(in_axes)={len(in_axes)}, len(args)={len(args)}"
            )
        axes_tuple = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        # Keyword arguments are always mapped over their leading axis, as in JAX.
        kw_axes = {k: 0 for k in kwargs}
        leaves_with_path, in_tree = pytree.tree_flatten_with_path((args, kwargs))
        leaves = [leaf for _, leaf in leaves_with_path]
        dims = _flat_axes((axes_tuple, kw_axes), (args, kwargs), "in_axes", fun_name)
        sizes = {}
        norm_dims = []
        for (path, leaf), d in zip(leaves_with_path, dims):
            if d is None:
                norm_dims.append(None)
                continue
            shape = get_aval(leaf).shape
            nd = len(shape)
            if not -nd <= d < nd:
                raise ValueError(
                    f"vmap was requested to map its argument along axis {d}, which implies that its rank "
                    f"should be at least {d + 1 if d >= 0 else -d}, but is only {nd} (its shape is {shape}); "
                    f"argument {_describe_path(path)}."
                )
            d = d % nd
            norm_dims.append(d)
            sizes[_describe_path(path)] = (d, shape[d])
        distinct = {s for _, s in sizes.values()}
        if len(distinct) > 1:
            lines = "\n".join(f"  {p} has size {s} along axis {d}" for p, (d, s) in sizes.items())
            raise ValueError(f"vmap got inconsistent sizes for the array axes to be mapped:\n{lines}")
        if distinct:
            size = distinct.pop()
            if axis_size is not None and axis_size != size:
                raise ValueError(f"vmap got axis_size={axis_size} but the mapped arguments have size {size}")
        elif axis_size is not None:
            size = int(axis_size)
        else:
            raise ValueError(
                "vmap must have at least one non-None value in in_axes, or be given axis_size= when no "
                "argument is mapped."
            )
        axis_data = AxisData(size, axis_name, spmd_axis_name)
        out_store = {}
        with _trace.new_trace(BatchTrace(axis_data)) as trace:
            ins = [BatchTracer(trace, v, d) if d is not None else v for v, d in zip(leaves, norm_dims)]
            a, k = pytree.tree_unflatten(in_tree, ins)
            if _VMAPPABLE:
                a, k = _update_vmappables((a, k), norm_dims, 0)
            out = fun(*a, **k)
            out_leaves, out_tree = pytree.tree_flatten(out)
            lifted = [trace.lift(o) for o in out_leaves]
            out_store["tree"] = out_tree
        out_dims = _flat_axes(
            out_axes, pytree.tree_unflatten(out_tree, [0] * len(lifted)), "out_axes", fun_name
        )
        results = []
        for (v, d), od in zip(lifted, out_dims):
            if od is None:
                if d is not None:
                    raise ValueError(
                        f"vmap({fun_name}) has out_axes=None for an output that depends on the mapped axis "
                        "(it is batched). Use an integer out_axes for it, or make it independent of the "
                        "mapped inputs."
                    )
                results.append(v)
                continue
            nd = len(get_aval(v).shape) + (d is None)
            if not -nd <= od < nd:
                raise ValueError(f"vmap out_axes={od} is out of range for an output of rank {nd - 1}")
            if d is None:
                v, d = bdim_to_front(v, None, size), 0
            results.append(moveaxis(v, d, od % nd))
        out = pytree.tree_unflatten(out_store["tree"], results)
        if _VMAPPABLE:
            out = _update_vmappables(out, list(out_dims), 1, size)
        return out

    return vmapped


def _describe_path(path) -> str:
    s = pytree.keystr(path)
    # Paths start at (args, kwargs): name positional arguments the way users write them.
    if s.startswith("[0]["):
        rest = s[4:]
        idx, _, tail = rest.partition("]")
        return f"args[{idx}]{tail}"
    if s.startswith("[1]"):
        return f"kwargs{s[3:]}"
    return s
