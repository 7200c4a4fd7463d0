"""`pmap`: map a function over an axis of its arguments, one slice per device, the devices running
at the same time; collectives over `axis_name` exchange values between them.

The function is traced once per argument signature into a per-device program (the axis name
bound, its size known), kept in the wrapper's cache (`pmap_counters.traces` counts traces; the
compiled program is memoized on the traced jaxpr), and bound as the `xla_pmap` primitive
(higher_order/pmap.py), so pmap composes with jit, grad and vmap. Results are stacked along
`out_axes`.

Results are Arrays sharded as JAX's: NamedSharding over a 1-D mesh of the devices (axis
`axis_name`), split along out_axes. NB: all devices share host memory, so a result is one host
buffer whose shards are views; `donate_argnums` is accepted and, as JAX 0.10.2's pmap on CPU
(whose inputs are copied onto the devices), leaves the arguments alive. As in JAX,
pmaps do not nest (map the inner axis with vmap).

After `morphax.distributed.initialize()` (under mpirun), as JAX's multi-process pmap: each process
calls the pmap with its own devices' slices (a mapped size of at most `local_device_count()`),
the axis spans every process's devices (psum(1) is the global count, axis_index the global
position, process by process), and each process gets its own devices' results. Collectives
meet among a process's device threads, then between processes in one MPI call
(distributed/device_collectives.py). NB: the results are this process's arrays (sharded over
its own devices), not global arrays with shards on other processes.
"""

from __future__ import annotations

import weakref

from morphax._src.api.jit import _axis_env, _hashable_static, trace_counters
from morphax._src.api.tracing import _abstractify
from morphax._src.config import config
from morphax._src.core import pytree
from morphax._src.core import trace as _trace
from morphax._src.core.avals import ShapedArray
from morphax._src.higher_order.pmap import AxisFrame, axis_frame, pmap_p
from morphax._src.runtime import pmap_runner
from morphax._src.transforms.staging import closure_convert_tracers, make_debug_info, trace_to_jaxpr
from morphax._src.wrapping import wraps

__all__ = ["pmap", "pmap_counters"]

# JAX's name for the axis of a pmap given no axis_name.
UNNAMED_AXIS = "_internal_pmap_axis_name"


class PmapCounters:
    """Traces of pmapped functions (tests assert these, never wall times)."""

    def __init__(self):
        self.traces = 0

    def reset(self):
        self.traces = 0


pmap_counters = PmapCounters()


def _index_tuple(name, what, value) -> tuple:
    if isinstance(value, int):
        return (value,)
    try:
        out = tuple(value)
    except TypeError:
        raise TypeError(f"pmap({name}): {what} must be an int or a sequence of ints, got {value!r}") from None
    if not all(isinstance(i, int) for i in out):
        raise TypeError(f"pmap({name}): {what} must be an int or a sequence of ints, got {value!r}")
    return out


def _check_axes_spec(spec, what):
    for leaf in pytree.tree_leaves(spec):
        if type(leaf) is not int:
            raise TypeError(
                f"pmap {what} must be an int, None, or (nested) container with those types as leaves, "
                f"but got {spec}."
            )


def pmap(
    fun,
    axis_name=None,
    *,
    in_axes=0,
    out_axes=0,
    static_broadcasted_argnums=(),
    devices=None,
    backend=None,
    axis_size=None,
    donate_argnums=(),
):
    """Map `fun` over axis `in_axes` of its arguments, one slice per device, in parallel.

    Collectives over `axis_name` (psum, all_gather, ppermute, ...) act between the devices.
    The mapped size must not exceed the number of devices (or must equal ``len(devices)``)."""
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    name = getattr(fun, "__name__", type(fun).__name__)
    if devices is not None:
        if not devices:
            raise ValueError("'devices' argument to pmap must be non-empty, or None.")
        devices = tuple(devices)
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")
    axis_name = UNNAMED_AXIS if axis_name is None else axis_name
    static = _index_tuple(name, "static_broadcasted_argnums", static_broadcasted_argnums)
    _index_tuple(name, "donate_argnums", donate_argnums)  # NB: validated, donates nothing
    device_ids = None if devices is None else tuple(int(getattr(d, "id", d)) for d in devices)
    cache = _cache_for(fun)
    # What the trace depends on besides the arguments: `pmap(f)` made anew at each call (inline
    # in a loop) finds the traces of earlier wrappers of the same function.
    out_leaves, out_axes_tree = pytree.tree_flatten(out_axes, is_leaf=lambda x: x is None)
    settings = (axis_name, tuple(out_leaves), out_axes_tree)

    @wraps(fun)
    def pmapped(*args, **kwargs):
        if static and max(static) >= len(args):
            raise ValueError(
                f"pmapped function has static_broadcasted_argnums={static} but was called with only "
                f"{len(args)} positional argument{'s' if len(args) > 1 else ''}. All static broadcasted "
                "arguments must be passed positionally."
            )
        static_set = {i % len(args) for i in static}
        dyn_idx = [i for i in range(len(args)) if i not in static_set]
        dyn_args = tuple(args[i] for i in dyn_idx)
        static_vals = tuple(
            (i, _hashable_static(args[i], f"static argument {i}")) for i in sorted(static_set)
        )
        dyn_in_axes = in_axes
        if isinstance(in_axes, tuple):
            if len(in_axes) != len(args):
                raise ValueError(
                    "pmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                    f"positional arguments passed to the function, but got len(in_axes)={len(in_axes)}, "
                    f"len(args)={len(args)}"
                )
            dyn_in_axes = tuple(in_axes[i] for i in dyn_idx)
        leaves, in_tree = pytree.tree_flatten((dyn_args, kwargs))
        try:
            flat_axes = pytree.broadcast_prefix(
                (dyn_in_axes, {k: 0 for k in kwargs}), (dyn_args, kwargs), is_leaf=lambda x: x is None
            )
        except ValueError as e:
            raise ValueError(
                f"pmap in_axes specification must be a tree prefix of the corresponding value, got "
                f"specification {in_axes!r} for value tree {in_tree}. ({e})"
            ) from None
        avals = [_abstractify(x) for x in leaves]
        size, norm_axes, sizes = None, [], []
        for i, (a, ax) in enumerate(zip(avals, flat_axes)):
            if ax is None:
                norm_axes.append(None)
                continue
            nd = len(a.shape)
            if not -nd <= ax < nd:
                raise ValueError(
                    f"pmap was requested to map its argument along axis {ax}, which implies that its rank "
                    f"should be at least {ax + 1 if ax >= 0 else -ax}, but is only {nd} (its shape is "
                    f"{a.shape}); flat argument {i}."
                )
            ax %= nd
            norm_axes.append(ax)
            sizes.append((i, a.shape[ax]))
            size = a.shape[ax] if size is None else size
        if size is None:
            raise ValueError("pmap requires at least one argument with a mapped axis.")
        if any(s != size for _, s in sizes):
            lines = "\n".join(f"  flat argument {i} has size {s}" for i, s in sizes)
            raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped:\n{lines}")
        _check_not_nested(f"pmap({name})")
        # Across processes (morphax.distributed) the axis spans every process's devices.
        global_size = pmap_runner.global_axis_size(name, size, device_ids)
        if axis_size is not None and axis_size != global_size:
            raise ValueError(
                f"Specified axis_size {axis_size} doesn't match received axis_size {global_size}."
            )
        per_device = [
            a if ax is None else ShapedArray(a.shape[:ax] + a.shape[ax + 1 :], a.dtype, a.weak_type)
            for a, ax in zip(avals, norm_axes)
        ]
        key = (
            settings,
            in_tree,
            tuple((a.shape, a.dtype, a.weak_type) for a in per_device),
            tuple(norm_axes),
            static_vals,
            size,
            global_size,
            _axis_env() if _trace.ctx.trace is not _trace.base_trace() else (),
            config.trace_context(),
        )
        hit = cache.get(key)
        if hit is None:
            hit = _trace_body(
                fun, args, kwargs, static_set, in_tree, per_device, axis_name, global_size, out_axes, name
            )
            if not hit[3]:  # closing over an enclosing transformation's values: not reusable
                cache[key] = hit
        closed, out_tree, flat_out_axes, lifted = hit
        outs = pmap_p.bind(
            *lifted,
            *leaves,
            jaxpr=closed,
            mesh_axes=((axis_name, global_size),),
            axis_size=size,
            in_axes=(None,) * len(lifted) + tuple(norm_axes),
            out_axes=flat_out_axes,
            devices=device_ids,
            backend=backend,
            name=name,
        )
        if _trace.ctx.trace is _trace.base_trace():
            local_ids = pmap_runner.participants(size, global_size, device_ids)[0]
            outs = pmap_runner.with_shardings(outs, flat_out_axes, axis_name, local_ids)
        return pytree.tree_unflatten(out_tree, outs)

    def lower(*args, **kwargs):
        """Ahead-of-time: the pmapped call staged for these arguments (`as_text`, `compile`),
        as JAX's `pmap(f).lower`; the compiled call runs the same per-device program."""
        from morphax._src.api.jit import jit

        return jit(pmapped, static_argnums=static).lower(*args, **kwargs)

    pmapped.lower = lower
    return pmapped


# function -> {trace key: trace}, shared by every pmap of the function; weak, so a function that
# goes away takes its traces (and their compiled programs) with it.
_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _cache_for(fun) -> dict:
    try:
        cache = _caches.get(fun)
        if cache is None:
            cache = _caches[fun] = {}
        return cache
    except TypeError:  # not weakly referenceable or unhashable: this wrapper's own cache
        return {}


def _check_not_nested(what):
    t = _trace.ctx.trace
    while t is not None:
        if isinstance(t, AxisFrame):
            raise ValueError(
                f"{what} is called inside the per-device program of another pmap or shard_map "
                f"(which binds axis {t.axis_data.name!r}); as in JAX, pmaps do not nest. Map the inner "
                "axis with vmap, or map both axes with one shard_map over a 2-D mesh."
            )
        t = t.parent


def _trace_body(fun, args, kwargs, static_set, in_tree, per_device, axis_name, size, out_axes, name):
    nargs = len(args)
    static_vals = {i: args[i] for i in static_set}
    out_store: list = []

    def flat_fun(*leaves):
        dyn_args, kw = pytree.tree_unflatten(in_tree, list(leaves))
        it = iter(dyn_args)
        full = [static_vals[i] if i in static_vals else next(it) for i in range(nargs)]
        out = fun(*full, **kw)
        out_leaves, out_tree = pytree.tree_flatten(out)
        out_store.append(out_tree)
        return out_leaves

    pmap_counters.traces += 1
    trace_counters.traces += 1
    dbg = make_debug_info("pmap", fun, args, kwargs, static_argnums=static_vals)
    with axis_frame(((axis_name, size),)):
        closed = trace_to_jaxpr(flat_fun, per_device, debug_info=dbg)
    out_tree = out_store[0]
    try:
        flat_out = pytree.broadcast_prefix(
            out_axes, pytree.tree_unflatten(out_tree, [0] * out_tree.num_leaves), is_leaf=lambda x: x is None
        )
    except ValueError as e:
        raise ValueError(
            f"pmap({name}) out_axes specification must be a tree prefix of the corresponding value, got "
            f"specification {out_axes!r} for value tree {out_tree}. ({e})"
        ) from None
    norm_out = []
    for a, ax in zip(closed.out_avals, flat_out):
        if ax is None:
            norm_out.append(None)
            continue
        nd = len(a.shape) + 1
        if not -nd <= ax < nd:
            raise ValueError(f"pmap({name}) out_axes={ax} is out of range for an output of rank {nd - 1}")
        norm_out.append(ax % nd)
    closed, lifted = closure_convert_tracers(closed)
    return closed, out_tree, tuple(norm_out), tuple(lifted)
