"""`shard_map`: run a function on the blocks of its arguments, one block per device of a mesh, with
collectives over the mesh's axis names; the blocks the devices return are assembled into the
results.

`in_specs` say how each argument is cut (`PartitionSpec`: per dimension, the mesh axes it is
split over; mesh axes a spec does not mention receive the whole dimension, replicated);
`out_specs` how results are assembled (an output whose spec leaves out a mesh axis is the same
on every device along it, and the first device's is taken). The function is traced once per
argument signature with the manual mesh axes bound, and bound as the `xla_pmap` primitive over
the flattened mesh (higher_order/pmap.py), so it composes with jit, grad and vmap: cutting and
assembling are ordinary reshapes and transposes around it. Each mesh axis's collectives go
through the communicator of the devices along it.

Without `mesh=`, the mesh of `morphax.sharding.set_mesh` is used; `in_specs` left to inference
(`Infer`) takes each argument's spec when it is sharded over the mesh, else replicates it. `check_vma` checks, as JAX does, that an output whose spec leaves out a mesh axis
does not vary along it (a conservative analysis of the per-device program).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from morphax._src.api.jit import _axis_env, trace_counters
from morphax._src.api.pmap import _cache_for, _check_not_nested
from morphax._src.api.tracing import _abstractify
from morphax._src.config import config
from morphax._src.core import pytree
from morphax._src.core import trace as _trace
from morphax._src.core.avals import ShapedArray
from morphax._src.higher_order.pmap import axis_frame, pmap_p
from morphax._src.numpy.creation import asarray
from morphax._src.prims.shape import broadcast_in_dim, reshape, transpose
from morphax._src.prims.slicing import slice as _slice
from morphax._src.runtime import array as _array
from morphax._src.runtime import placement, pmap_runner
from morphax._src.sharding import variance
from morphax._src.sharding.constraint import sharding_constraint_p
from morphax._src.sharding.mesh import resolving_mesh
from morphax._src.sharding.partition_spec import PartitionSpec
from morphax._src.sharding.shardings import NamedSharding
from morphax._src.transforms.staging import closure_convert_tracers, make_debug_info, trace_to_jaxpr
from morphax._src.wrapping import wraps

__all__ = ["shard_map", "shard_map_counters"]


class _Infer:
    def __repr__(self):
        return "Infer"


# JAX's `jax.sharding.Infer`: in_specs read from the arguments (here: replicated).
Infer = _Infer()


class ShardMapCounters:
    """Traces of shard_mapped functions (tests assert these)."""

    def __init__(self):
        self.traces = 0


shard_map_counters = ShardMapCounters()


def _spec_leaf(x) -> bool:
    # A PartitionSpec (a tuple subclass) or None is a leaf of the specs tree; plain tuples of
    # specs are containers.
    return x is None or isinstance(x, PartitionSpec)


def _inferred_spec(x, mesh):
    """in_specs=Infer: an argument sharded over this mesh keeps its spec; others are replicated."""
    sharding = None if isinstance(x, _trace.Tracer) else getattr(x, "sharding", None)
    if isinstance(sharding, NamedSharding) and sharding.mesh == mesh:
        return sharding.spec
    return None


def _entries(spec, rank, manual, what, where, shape):
    """Per dimension, the tuple of mesh axis names it is split over (checked)."""
    spec = () if spec is None else tuple(spec)
    if len(spec) > rank:
        raise ValueError(
            f"shard_map was given an {what} entry which is too long to be compatible with the "
            f"corresponding {where}: {what} is {_show(spec)} which has length {len(spec)}, but the value has "
            f"shape {list(shape)}, which has rank {rank} (and {rank} < {len(spec)}). Entries in {what} must be "
            "of length no greater than the number of axes in the corresponding value."
        )
    out, seen = [], set()
    for e in list(spec) + [None] * (rank - len(spec)):
        names = () if e is None else (tuple(e) if isinstance(e, tuple) else (e,))
        for n in names:
            if n not in manual:
                raise ValueError(
                    f"shard_map {what} argument must refer to an axis marked as manual "
                    f"({sorted(manual, key=str)}), but:\n\n  {what} refers to {n!r}\n\nCheck the {what} values "
                    "passed to shard_map."
                )
            if n in seen:
                raise ValueError(
                    f"A single spec can map every mesh axis to at most one positional dimension, but "
                    f"{_show(spec)} has duplicate entries for `{n}` ({what}, {where})"
                )
            seen.add(n)
        out.append(names)
    return out


def _show(spec):
    return "P(" + ", ".join(repr(e) for e in spec) + ")"


def _to_stacked(x, entries, mesh_axes, block):
    """`x` cut into the blocks of every device, stacked: shape (devices, *block), devices in
    row-major mesh order; mesh axes the spec leaves out see the same block."""
    sizes = dict(mesh_axes)
    split, pos_of, block_pos = [], {}, []
    for k, names in enumerate(entries):
        for n in names:
            pos_of[n] = len(split)
            split.append(sizes[n])
        block_pos.append(len(split))
        split.append(block[k])
    y = reshape(x, tuple(split))
    present = [i for i, (n, _) in enumerate(mesh_axes) if n in pos_of]
    y = transpose(y, tuple(pos_of[mesh_axes[i][0]] for i in present) + tuple(block_pos))
    m = len(mesh_axes)
    full = tuple(s for _, s in mesh_axes) + tuple(block)
    y = broadcast_in_dim(y, full, tuple(present) + tuple(range(m, m + len(block))))
    return reshape(y, (math.prod(s for _, s in mesh_axes),) + tuple(block))


def _from_stacked(y, entries, mesh_axes, block):
    """The inverse of `_to_stacked`: the devices' blocks (stacked) assembled per the spec; along
    mesh axes the spec leaves out, the first device's block."""
    m = len(mesh_axes)
    sizes = tuple(s for _, s in mesh_axes)
    y = reshape(y, sizes + tuple(block))
    named = {n for names in entries for n in names}
    kept = [i for i, (n, _) in enumerate(mesh_axes) if n in named]
    if len(kept) < m:
        limits = tuple(s if i in kept else 1 for i, s in enumerate(sizes)) + tuple(block)
        y = _slice(y, (0,) * len(limits), limits)
        y = reshape(y, tuple(sizes[i] for i in kept) + tuple(block))
    where = {mesh_axes[i][0]: j for j, i in enumerate(kept)}
    perm, shape = [], []
    for k, names in enumerate(entries):
        perm += [where[n] for n in names] + [len(kept) + k]
        shape.append(block[k] * math.prod(dict(mesh_axes)[n] for n in names))
    return reshape(transpose(y, tuple(perm)), tuple(shape))


def shard_map(f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(), check_vma=True):
    """Map `f` over the blocks of its arguments on the devices of `mesh` (see the module doc)."""
    if f is None:
        return functools.partial(
            shard_map,
            out_specs=out_specs,
            in_specs=in_specs,
            mesh=mesh,
            axis_names=axis_names,
            check_vma=check_vma,
        )
    if not callable(f):
        raise TypeError(f"shard_map requires a callable for its first argument, but got {f!r}")
    name = getattr(f, "__name__", type(f).__name__)
    cache = _cache_for(f)
    # What the trace depends on besides the arguments: shard_map(f, ...) made anew at each call
    # finds the traces of earlier ones of the same function.
    spec_leaves, spec_tree = pytree.tree_flatten(out_specs, is_leaf=_spec_leaf)
    settings = (tuple(None if p is None else tuple(p) for p in spec_leaves), spec_tree, bool(check_vma))

    @wraps(f)
    def wrapped(*args):
        # The mesh is resolved at each call: `set_mesh` may be entered after shard_map is applied.
        the_mesh, manual, mesh_axes, ids = _layout(mesh, axis_names)
        _check_not_nested(f"shard_map({name})")
        size = len(ids)
        leaves, in_tree = pytree.tree_flatten(args)
        leaves = [asarray(x) if not isinstance(x, _trace.Tracer) else x for x in leaves]
        if in_specs is Infer:
            flat_specs = [_inferred_spec(x, the_mesh) for x in leaves]
        else:
            # A spec alone applies to every argument; None is replicated.
            specs = tuple(in_specs) if type(in_specs) is list else in_specs
            try:
                flat_specs = pytree.broadcast_prefix(specs, args, is_leaf=_spec_leaf)
            except ValueError as e:
                raise ValueError(
                    f"shard_map in_specs must be a tree prefix of the positional arguments, got {in_specs!r} "
                    f"for value tree {in_tree}. ({e})"
                ) from None
        avals = [_abstractify(x) for x in leaves]
        all_entries, blocks = [], []
        sizes = dict(mesh_axes)
        for i, (a, spec) in enumerate(zip(avals, flat_specs)):
            entries = _entries(spec, len(a.shape), manual, "in_specs", f"argument {i}", a.shape)
            block = []
            for k, names in enumerate(entries):
                parts = math.prod(sizes[n] for n in names)
                if a.shape[k] % parts:
                    raise ValueError(
                        f"shard_map applied to the function {name!r} was given argument arrays with axis "
                        "sizes that are not evenly divisible by the corresponding mesh axis sizes: argument "
                        f"{i} of shape {a.str_short()} corresponds to in_specs of value {_show(spec or ())}, "
                        f"which maps array axis {k} (of size {a.shape[k]}) to mesh axes {names} (of total "
                        f"size {parts}), but {parts} does not evenly divide {a.shape[k]}"
                    )
                block.append(a.shape[k] // parts)
            all_entries.append(entries)
            blocks.append(tuple(block))
        per_device = [ShapedArray(b, a.dtype, a.weak_type) for a, b in zip(avals, blocks)]
        key = (
            settings,
            in_tree,
            mesh_axes,
            tuple((a.shape, a.dtype, a.weak_type) for a in per_device),
            tuple(tuple(e) for e in all_entries),
            _axis_env() if _trace.ctx.trace is not _trace.base_trace() else (),
            config.trace_context(),
        )
        hit = cache.get(key)
        if hit is None:
            hit = _trace_body(
                f, in_tree, per_device, mesh_axes, manual, out_specs, name, all_entries, check_vma
            )
            if not hit[4]:
                cache[key] = hit
        closed, out_tree, out_entries, out_blocks, lifted, out_parts = hit
        pmap_runner.check_device_count(name, size, ids)
        ins, in_axes = [], []
        for x, entries, block in zip(leaves, all_entries, blocks):
            if any(entries):
                ins.append(_to_stacked(x, entries, mesh_axes, block))
                in_axes.append(0)
            else:  # replicated: every device reads the same array
                ins.append(x)
                in_axes.append(None)
        outs = pmap_p.bind(
            *lifted,
            *ins,
            jaxpr=closed,
            mesh_axes=mesh_axes,
            axis_size=size,
            in_axes=(None,) * len(lifted) + tuple(in_axes),
            out_axes=tuple(0 if any(e) else None for e in out_entries),
            devices=ids,
            backend=None,
            name=name,
        )
        results = [
            _from_stacked(o, e, mesh_axes, b) if any(e) else o
            for o, e, b in zip(outs, out_entries, out_blocks)
        ]
        results = [_laid_out(r, NamedSharding(the_mesh, p)) for r, p in zip(results, out_parts)]
        return pytree.tree_unflatten(out_tree, results)

    return wrapped


def _laid_out(result, sharding):
    """A result laid out over the mesh as its out_specs say, as JAX's are (`.sharding` is
    NamedSharding(mesh, spec), under jit too): eagerly placed; traced, constrained. Over the
    devices of several processes a result stays whole in each (morphax gathers it there)."""
    if placement.spans_processes(sharding):
        return result
    if isinstance(result, _trace.Tracer):
        _array.mark_placed()  # the program's results get placed (runtime/placement.py)
        return sharding_constraint_p.bind(result, sharding=sharding)
    return placement.put(result, sharding, "shard_map")


def _layout(mesh, axis_names):
    """(mesh, manual axis names, ((name, size), ...) of the manual axes, device ids in row-major
    order of the manual axes)."""
    if mesh is None:
        mesh = resolving_mesh()
        if mesh is None:
            raise ValueError(
                "shard_map: no mesh; pass mesh= (a Mesh of devices with named axes) or call it under "
                "`with morphax.sharding.set_mesh(mesh):`."
            )
    if getattr(mesh, "devices", None) is None:
        raise TypeError(f"shard_map: mesh must be a Mesh of devices (an AbstractMesh has none), got {mesh!r}")
    mesh_names = tuple(mesh.axis_names)
    devices = np.asarray(mesh.devices, dtype=object)
    manual = set(axis_names) if axis_names else set(mesh_names)
    bad = manual - set(mesh_names)
    if bad:
        raise ValueError(
            f"shard_map: axis_names {sorted(bad, key=str)} are not axes of the mesh {mesh_names}"
        )
    # Axes left automatic split nothing here: the devices at their first index run.
    index = tuple(slice(None) if n in manual else 0 for n in mesh_names)
    mesh_axes = tuple((n, s) for n, s in zip(mesh_names, devices.shape) if n in manual)
    ids = tuple(int(d.id) for d in np.asarray(devices[index], dtype=object).reshape(-1))
    return mesh, manual, mesh_axes, ids


def _trace_body(f, in_tree, per_device, mesh_axes, manual, out_specs, name, in_entries, check_vma):
    out_store: list = []

    def flat_fun(*leaves):
        out = f(*pytree.tree_unflatten(in_tree, list(leaves)))
        out_leaves, out_tree = pytree.tree_flatten(out)
        out_store.append(out_tree)
        return out_leaves

    shard_map_counters.traces += 1
    trace_counters.traces += 1
    dbg = make_debug_info("shard_map", f, tuple(per_device), {})
    with axis_frame(mesh_axes):
        closed = trace_to_jaxpr(flat_fun, per_device, debug_info=dbg)
    out_tree = out_store[0]
    try:
        flat_specs = pytree.broadcast_prefix(
            out_specs, pytree.tree_unflatten(out_tree, [0] * out_tree.num_leaves), is_leaf=_spec_leaf
        )
    except ValueError as e:
        raise ValueError(
            f"shard_map({name}) out_specs must be a tree prefix of the outputs, got {out_specs!r} for "
            f"output tree {out_tree}. ({e})"
        ) from None
    out_entries, out_blocks = [], []
    for i, (a, spec) in enumerate(zip(closed.out_avals, flat_specs)):
        out_entries.append(_entries(spec, len(a.shape), manual, "out_specs", f"output {i}", a.shape))
        out_blocks.append(tuple(a.shape))
    if check_vma:
        _check_vma(closed, in_entries, out_entries, flat_specs, {n for n, _ in mesh_axes}, name)
    closed, lifted = closure_convert_tracers(closed)
    out_parts = tuple(PartitionSpec() if spec is None else spec for spec in flat_specs)
    return closed, out_tree, out_entries, out_blocks, tuple(lifted), out_parts


def _check_vma(closed, in_entries, out_entries, out_specs, axes, name):
    in_vary = [frozenset(n for names in e for n in names) for e in in_entries]
    out_vary = variance.vary(closed.jaxpr, in_vary, axes)
    for i, (vary, entries, spec) in enumerate(zip(out_vary, out_entries, out_specs)):
        named = {n for names in entries for n in names}
        extra = vary - named
        if extra:
            raise ValueError(
                f"shard_map applied to the function {name!r} was given out_specs which require replication "
                f"which can't be statically inferred given the mesh: out_specs is {_show(spec or ())} (output "
                f"{i}), which implies that the corresponding output value is only varying across mesh axes "
                f"{sorted(named, key=str)} and not {sorted(extra, key=str)}, but it was inferred to be possibly "
                f"varying over {sorted(extra, key=str)}. Check if these output values are meant to be "
                "replicated over those mesh axes. If not, consider revising the corresponding out_specs "
                "entries. If so, consider disabling the check by passing check_vma=False."
            )


def _axis_spec(axis, ndim, axis_name, what):
    """The PartitionSpec that maps `axis_name` over array axis `axis` (None: unmapped)."""
    if axis is None:
        return PartitionSpec()
    if not isinstance(axis, int) or not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"smap: {what} axis {axis!r} is out of range for an array of rank {ndim}")
    return PartitionSpec(*([None] * (axis % ndim)), axis_name)


def smap(f=None, /, *, in_axes=Infer, out_axes, axis_name):
    """`shard_map` over the one mesh axis `axis_name`, with vmap-style `in_axes`/`out_axes`
    (JAX's `jax.smap`): each argument is split along its in_axis over the devices of that axis
    of the current mesh (`set_mesh`), and each output is assembled along its out_axis."""
    if f is None:
        return functools.partial(smap, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)

    def out_spec(axis):
        if axis is not None and (not isinstance(axis, int) or axis < 0):
            raise ValueError(f"smap: out_axes must be non-negative ints or None, got {axis!r}")
        return PartitionSpec() if axis is None else PartitionSpec(*([None] * axis), axis_name)

    out_specs = pytree.tree_map(out_spec, out_axes, is_leaf=lambda a: a is None)

    @wraps(f)
    def wrapped(*args):
        if in_axes is Infer:
            in_specs = Infer
        else:
            axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
            if len(axes) != len(args):
                raise ValueError(f"smap: in_axes has {len(axes)} entries for {len(args)} arguments")
            in_specs = tuple(
                pytree.tree_map(
                    lambda x, ax=ax, i=i: _axis_spec(ax, np.ndim(x), axis_name, f"in_axes[{i}]"), arg
                )
                for i, (ax, arg) in enumerate(zip(axes, args))
            )
        mapped = shard_map(f, out_specs=out_specs, in_specs=in_specs, axis_names={axis_name})
        return mapped(*args)

    return wrapped
