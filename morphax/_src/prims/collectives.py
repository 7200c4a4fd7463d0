"""Collective primitives over named axes: psum/pmax/pmin (and pmean), all_gather, axis_index,
psum_scatter, ppermute (and pshuffle), all_to_all.

A collective acts across the members of a named axis, which a transformation binds: `vmap(f,
axis_name='i')` today, a device mesh later. Each primitive declares the param holding its axis
name(s) in `named_axes_param`; BatchTrace runs the primitive's batch rule when its own name is
mentioned, even for unbatched operands (psum of a value every member shares is value * size;
axis_index is iota over the batch), and hands the primitive on to the enclosing traces otherwise.
A psum over several names reduces over the trace's own axis and rebinds itself with the rest.
With no transformation binding a name, evaluation raises `NameError` naming the axis; while a
device runs its share of a pmap/shard_map program, the impls exchange values through the device's
communicator (collectives_on_devices.py).

Axis names are any hashable objects except None; integers are names too (JAX's positional axes
in psum are not supported). Primitives that need the size of their axis to type their result
(all_gather, psum_scatter, all_to_all) carry it as the `axis_size` param, read from the enclosing
vmap when the wrapper is called. `axis_index_groups` is accepted, and, as in JAX's vmap, any
value other than None is rejected under vmap.

Test specs have no cases: a collective cannot run outside the transformation that binds its axis,
so the generated matrices skip them; tests/transforms/test_collectives.py checks each one under
vmap against NumPy, with derivatives. Imports the core only.

Axis names, the typed-time binding check and shared helpers are in collective_axes.py.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core.ad_util import Zero, is_zero, tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import bdim_to_front, moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims import _stablehlo_collectives as hlo_collectives
from morphax._src.prims import collectives_on_devices as _on_devices
from morphax._src.prims._ad import defjvp_zero, deflinear
from morphax._src.prims.arithmetic import add, div, mul
from morphax._src.prims.collective_axes import (
    _check_bound,
    _check_size,
    _env_size,
    _names_tuple,
    _no_groups,
    _rebind_leaves,
    _single_name,
    _spec,
    axis_size,
)
from morphax._src.prims.compare import eq
from morphax._src.prims.conversion import convert_element_type, iota
from morphax._src.prims.gather_scatter_add import gather
from morphax._src.prims.gather_scatter_dims import GatherDimensionNumbers, GatherScatterMode
from morphax._src.prims.reductions import reduce_max, reduce_min, reduce_sum
from morphax._src.prims.shape import expand_dims, reshape, squeeze, transpose

__all__ = [
    "all_gather",
    "all_gather_p",
    "all_to_all",
    "all_to_all_p",
    "axis_index",
    "axis_index_p",
    "axis_size",
    "pmax",
    "pmax_p",
    "pmean",
    "pmin",
    "pmin_p",
    "ppermute",
    "ppermute_p",
    "pshuffle",
    "psum",
    "psum_p",
    "psum_scatter",
    "psum_scatter_p",
]


# ------------------------------------------------------------------------------------------------
# psum / pmax / pmin: one equation reduces every leaf of a pytree (multiple results, as in JAX).


def _reduction_abstract_eval(name):
    def abstract_eval(*avals, axes, axis_index_groups):
        if not isinstance(axes, tuple):
            raise TypeError(f"{name}: axes must be a tuple of axis names, got {axes!r}")
        return [ShapedArray(a.shape, a.dtype, a.weak_type) for a in avals]

    return abstract_eval


def _reduction_collective(name, reduce_fn, unmapped_fn):
    prim = Primitive(name, multiple_results=True)
    prim.kind = Kind.OPAQUE
    prim.named_axes_param = "axes"
    prim.abstract_eval = _reduction_abstract_eval(name)
    prim.impl = _on_devices.reduction_impl(name)
    prim.test_spec = _spec()

    def batch(vals, dims, *, axis_data, axes, axis_index_groups):
        if axis_data.name not in axes:
            # Another axis: the batch axis is just one more array axis to the collective.
            return prim.bind(*vals, axes=axes, axis_index_groups=axis_index_groups), list(dims)
        _no_groups(name, axis_index_groups)
        size = axis_data.size
        outs = [unmapped_fn(v, size) if d is None else reduce_fn()(v, (d,)) for v, d in zip(vals, dims)]
        rest = tuple(a for a in axes if a != axis_data.name)
        if rest:
            outs = prim.bind(*outs, axes=rest, axis_index_groups=None)
        return list(outs), [None] * len(outs)

    prim.batch = batch
    return prim


def _psum_unmapped(v, size):
    return mul(v, size)


psum_p = _reduction_collective("psum", lambda: reduce_sum, _psum_unmapped)
pmax_p = _reduction_collective("pmax", lambda: reduce_max, lambda v, size: v)
pmin_p = _reduction_collective("pmin", lambda: reduce_min, lambda v, size: v)
psum_p.stablehlo = hlo_collectives.all_reduce("stablehlo.add")
pmax_p.stablehlo = hlo_collectives.all_reduce("stablehlo.maximum")
pmin_p.stablehlo = hlo_collectives.all_reduce("stablehlo.minimum")


def _psum_transpose(cts, *args, axes, axis_index_groups):
    # psum is self-adjoint: every member's cotangent flows back to every member.
    live = [i for i, ct in enumerate(cts) if not is_zero(ct)]
    out = [Zero(a.aval) for a in args]
    if live:
        summed = psum_p.bind(*[cts[i] for i in live], axes=axes, axis_index_groups=axis_index_groups)
        for i, s in zip(live, summed):
            out[i] = s
    return out


deflinear(psum_p, _psum_transpose)


def _pminmax_jvp(prim):
    # The derivative of a max is the tangent of the members attaining it, averaged over ties
    # (the convention reduce_max uses): psum(t * mask) / psum(mask).
    def jvp(primals, tangents, *, axes, axis_index_groups):
        ans = prim.bind(*primals, axes=axes, axis_index_groups=axis_index_groups)
        live = [i for i, t in enumerate(tangents) if not is_zero(t)]
        t_out = [Zero(tangent_aval(get_aval(a))) for a in ans]
        if not live:
            return ans, t_out
        nums, dens = [], []
        for i in live:
            t = tangents[i]
            mask = convert_element_type(eq(primals[i], ans[i]), get_aval(t).dtype)
            nums.append(mul(t, mask))
            dens.append(mask)
        # Two equations: the tie counts depend on primals only, so linearization keeps them known.
        counts = psum_p.bind(*dens, axes=axes, axis_index_groups=axis_index_groups)
        summed = psum_p.bind(*nums, axes=axes, axis_index_groups=axis_index_groups)
        for j, i in enumerate(live):
            t_out[i] = div(summed[j], counts[j])
        return ans, t_out

    prim.jvp = jvp


_pminmax_jvp(pmax_p)
_pminmax_jvp(pmin_p)


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum of `x` (a pytree) over the members of the named axis (or axes); bools count as int32."""
    names = _names_tuple(axis_name, "psum")
    if not names:
        return x

    def bind(leaves):
        leaves = [convert_element_type(v, np.int32) if get_aval(v).dtype == np.bool_ else v for v in leaves]
        return psum_p.bind(*leaves, axes=names, axis_index_groups=axis_index_groups)

    return _rebind_leaves(x, bind)


def pmax(x, axis_name, *, axis_index_groups=None):
    """Elementwise maximum of `x` (a pytree) over the members of the named axis (or axes)."""
    names = _names_tuple(axis_name, "pmax")
    if not names:
        return x
    return _rebind_leaves(x, lambda ls: pmax_p.bind(*ls, axes=names, axis_index_groups=axis_index_groups))


def pmin(x, axis_name, *, axis_index_groups=None):
    """Elementwise minimum of `x` (a pytree) over the members of the named axis (or axes)."""
    names = _names_tuple(axis_name, "pmin")
    if not names:
        return x
    return _rebind_leaves(x, lambda ls: pmin_p.bind(*ls, axes=names, axis_index_groups=axis_index_groups))


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean of `x` over the named axis: psum(x) / psum(1). Integers average to floats, as in JAX."""
    total = psum(x, axis_name, axis_index_groups=axis_index_groups)
    if axis_index_groups is None:
        # NB: JAX binds psum(1) (which XLA folds); the count is known when tracing, and on
        # devices a collective for it would cost a rendezvous (across processes an MPI call).
        n = axis_size(axis_name)
    else:
        n = psum(1, axis_name, axis_index_groups=axis_index_groups)

    def mean(v):
        dt = get_aval(v).dtype
        if not _dtypes.is_inexact(dt):
            v = convert_element_type(v, _dtypes.default_float_dtype())
            dt = get_aval(v).dtype
        return div(v, convert_element_type(n, dt))

    return pytree.tree_map(mean, total)


# ------------------------------------------------------------------------------------------------
# axis_index: this member's position along the named axis.

axis_index_p = Primitive("axis_index")
axis_index_p.kind = Kind.OPAQUE
axis_index_p.named_axes_param = "axis_name"
axis_index_p.impl = _on_devices.axis_index_impl
axis_index_p.abstract_eval = lambda *, axis_name: ShapedArray((), np.dtype(np.int32))
axis_index_p.stablehlo = hlo_collectives.axis_index
axis_index_p.test_spec = _spec()


def _axis_index_batch(vals, dims, *, axis_data, axis_name):
    # Only reached for the trace's own name (there are no operands to be batched otherwise).
    return iota(np.int32, axis_data.size), 0


axis_index_p.batch = _axis_index_batch
defjvp_zero(axis_index_p)


def axis_index(axis_name):
    """The int32 index of this member along the named axis; for a tuple of names, the row-major
    index over their product (the first name varies slowest)."""
    names = _names_tuple(axis_name, "axis_index")
    if len(names) == 1:
        return axis_index_p.bind(axis_name=names[0])
    out = None
    for n in names:
        idx = axis_index_p.bind(axis_name=n)
        out = idx if out is None else add(mul(out, np.int32(_env_size(n, "axis_index"))), idx)
    return out


# ------------------------------------------------------------------------------------------------
# all_gather and psum_scatter (each other's transpose).


def _gather_shape(shape, axis, size, tiled):
    shape = list(shape)
    if tiled:
        shape[axis] *= size
    else:
        shape.insert(axis, size)
    return tuple(shape)


def _all_gather_abstract_eval(x, *, axis_name, axis, tiled, axis_index_groups, axis_size):
    if not 0 <= axis < (x.ndim if tiled else x.ndim + 1):
        raise ValueError(f"all_gather: axis {axis} is out of range for an operand of type {x.str_short()}")
    return ShapedArray(_gather_shape(x.shape, axis, axis_size, tiled), x.dtype, x.weak_type)


all_gather_p = Primitive("all_gather")
all_gather_p.kind = Kind.OPAQUE
all_gather_p.named_axes_param = "axis_name"
all_gather_p.impl = _on_devices.all_gather_impl
all_gather_p.abstract_eval = _all_gather_abstract_eval
all_gather_p.stablehlo = hlo_collectives.all_gather
all_gather_p.test_spec = _spec()


def _all_gather_batch(vals, dims, *, axis_data, axis_name, axis, tiled, axis_index_groups, axis_size):
    (x,), (d,) = vals, dims
    params = dict(axis_name=axis_name, tiled=tiled, axis_index_groups=axis_index_groups, axis_size=axis_size)
    if axis_name != axis_data.name:
        return all_gather_p.bind(moveaxis(x, d, 0), axis=axis + 1, **params), 0
    _no_groups("all_gather", axis_index_groups)
    _check_size("all_gather", axis_name, axis_size, axis_data.size)
    # Every member receives the stack of all members' values: the batch axis itself, unbatched.
    y = moveaxis(bdim_to_front(x, None, axis_data.size), 0, axis) if d is None else moveaxis(x, d, axis)
    if tiled:
        shape = get_aval(y).shape
        y = reshape(y, shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2 :])
    return y, None


all_gather_p.batch = _all_gather_batch


def _psum_scatter_abstract_eval(x, *, axis_name, scatter_dimension, axis_index_groups, axis_size, tiled):
    sd = scatter_dimension
    if not 0 <= sd < x.ndim:
        raise ValueError(
            f"psum_scatter: scatter_dimension {sd} is out of range for an operand of type {x.str_short()}"
        )
    shape = list(x.shape)
    if tiled:
        if shape[sd] % axis_size:
            raise ValueError(
                f"psum_scatter: the scattered dimension has size {shape[sd]}, which the axis size "
                f"{axis_size} does not divide."
            )
        shape[sd] //= axis_size
    else:
        if shape[sd] != axis_size:
            raise ValueError(
                f"psum_scatter: the scattered dimension must have the axis size {axis_size} when "
                f"tiled=False, got {shape[sd]} (operand {x.str_short()})."
            )
        del shape[sd]
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


psum_scatter_p = Primitive("psum_scatter")
psum_scatter_p.kind = Kind.OPAQUE
psum_scatter_p.named_axes_param = "axis_name"
psum_scatter_p.impl = _on_devices.psum_scatter_impl
psum_scatter_p.abstract_eval = _psum_scatter_abstract_eval
psum_scatter_p.stablehlo = hlo_collectives.psum_scatter
psum_scatter_p.test_spec = _spec()


def _psum_scatter_batch(
    vals, dims, *, axis_data, axis_name, scatter_dimension, axis_index_groups, axis_size, tiled
):
    (x,), (d,) = vals, dims
    params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)
    if axis_name != axis_data.name:
        return psum_scatter_p.bind(moveaxis(x, d, 0), scatter_dimension=scatter_dimension + 1, **params), 0
    _no_groups("psum_scatter", axis_index_groups)
    _check_size("psum_scatter", axis_name, axis_size, axis_data.size)
    n, sd = axis_data.size, scatter_dimension
    y = _psum_unmapped(x, n) if d is None else reduce_sum(x, (d,))
    # Member i keeps block i of the scattered dimension: that dimension becomes the batch axis.
    if tiled:
        shape = get_aval(y).shape
        y = reshape(y, shape[:sd] + (n, shape[sd] // n) + shape[sd + 1 :])
    return y, sd


psum_scatter_p.batch = _psum_scatter_batch


def _all_gather_transpose(ct, x, *, axis_name, axis, tiled, axis_index_groups, axis_size):
    if is_zero(ct):
        return [Zero(x.aval)]
    return [
        psum_scatter_p.bind(
            ct,
            axis_name=axis_name,
            scatter_dimension=axis,
            axis_index_groups=axis_index_groups,
            axis_size=axis_size,
            tiled=tiled,
        )
    ]


def _psum_scatter_transpose(ct, x, *, axis_name, scatter_dimension, axis_index_groups, axis_size, tiled):
    if is_zero(ct):
        return [Zero(x.aval)]
    return [
        all_gather_p.bind(
            ct,
            axis_name=axis_name,
            axis=scatter_dimension,
            tiled=tiled,
            axis_index_groups=axis_index_groups,
            axis_size=axis_size,
        )
    ]


deflinear(all_gather_p, _all_gather_transpose)
deflinear(psum_scatter_p, _psum_scatter_transpose)


def _canon(prim_name, what, axis, limit):
    axis = int(axis)
    if not -limit <= axis < limit:
        raise ValueError(f"{prim_name}: {what} {axis} is out of range [-{limit}, {limit})")
    return axis % limit if limit else axis


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
    """Every member receives all members' `x` stacked along a new axis `axis` (or concatenated
    along existing axis `axis` when `tiled`)."""
    name = _single_name(axis_name, "all_gather")
    size = _env_size(name, "all_gather")
    if axis_index_groups is not None:
        size = len(axis_index_groups[0])

    def one(v):
        nd = len(get_aval(v).shape)
        ax = _canon("all_gather", "axis", axis, nd if tiled else nd + 1)
        return all_gather_p.bind(
            v, axis_name=name, axis=ax, tiled=bool(tiled), axis_index_groups=axis_index_groups, axis_size=size
        )

    return _rebind_leaves(x, lambda ls: [one(v) for v in ls])


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """psum, with member i keeping only block i of `scatter_dimension` (removed when not `tiled`,
    where its size must equal the axis size)."""
    name = _single_name(axis_name, "psum_scatter")
    size = _env_size(name, "psum_scatter")
    if axis_index_groups is not None:
        size = len(axis_index_groups[0])

    def one(v):
        shape = get_aval(v).shape
        sd = _canon("psum_scatter", "scatter_dimension", scatter_dimension, len(shape))
        if (shape[sd] % size) if tiled else (shape[sd] != size):
            raise ValueError(
                f"psum_scatter: the scattered dimension {sd} of an operand of shape {shape} must "
                f"{'be divisible by' if tiled else 'equal'} the size {size} of axis {name!r}"
                + ("." if tiled else " when tiled=False.")
            )
        return psum_scatter_p.bind(
            v,
            axis_name=name,
            scatter_dimension=sd,
            axis_index_groups=axis_index_groups,
            axis_size=size,
            tiled=bool(tiled),
        )

    return _rebind_leaves(x, lambda ls: [one(v) for v in ls])


# ------------------------------------------------------------------------------------------------
# ppermute: member dst receives member src's value for each (src, dst); the others receive zeros.

ppermute_p = Primitive("ppermute")
ppermute_p.kind = Kind.OPAQUE
ppermute_p.named_axes_param = "axis_name"
ppermute_p.impl = _on_devices.ppermute_impl
ppermute_p.test_spec = _spec()


def _ppermute_abstract_eval(x, *, axis_name, perm):
    return ShapedArray(x.shape, x.dtype, x.weak_type)


ppermute_p.abstract_eval = _ppermute_abstract_eval
ppermute_p.stablehlo = hlo_collectives.ppermute


def _check_perm(perm, size):
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(
            f"ppermute: perm {perm} must be a partial permutation (no repeated sources or destinations)"
        )
    bad = [i for i in srcs + dsts if not 0 <= i < size]
    if bad:
        raise ValueError(f"ppermute: perm {perm} has indices {bad} outside the axis of size {size}")


def _ppermute_batch(vals, dims, *, axis_data, axis_name, perm):
    (x,), (d,) = vals, dims
    if axis_name != axis_data.name:
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
    n = axis_data.size
    _check_perm(perm, n)
    full = len(perm) == n
    if d is None:
        if full:
            return x, None
        x, d = bdim_to_front(x, None, n), 0
    # Row dst of the batch axis takes row src; rows nobody sends to read out of bounds -> 0.
    src_of = np.full((n, 1), n, dtype=np.int32)
    for s, t in perm:
        src_of[t, 0] = s
    shape = get_aval(x).shape
    rank = len(shape)
    dn = GatherDimensionNumbers(
        offset_dims=tuple(i for i in range(rank) if i != d), collapsed_slice_dims=(d,), start_index_map=(d,)
    )
    sizes = tuple(1 if i == d else s for i, s in enumerate(shape))
    mode = GatherScatterMode.PROMISE_IN_BOUNDS if full else GatherScatterMode.FILL_OR_DROP
    fill = None if full else np.zeros((), get_aval(x).dtype).item()
    out = gather(
        x, src_of, dn, sizes, mode=mode, fill_value=fill, indices_are_sorted=False, unique_indices=True
    )
    return out, d


ppermute_p.batch = _ppermute_batch


def _ppermute_transpose(ct, x, *, axis_name, perm):
    if is_zero(ct):
        return [Zero(x.aval)]
    return [ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((t, s) for s, t in perm))]


deflinear(ppermute_p, _ppermute_transpose)


def ppermute(x, axis_name, perm):
    """Send each member's `x` (a pytree) along `perm`, a sequence of (source, destination) index
    pairs; members that are no pair's destination receive zeros."""
    name = _single_name(axis_name, "ppermute")
    perm = tuple((int(s), int(t)) for s, t in perm)
    _check_perm(perm, _env_size(name, "ppermute"))
    return _rebind_leaves(x, lambda ls: [ppermute_p.bind(v, axis_name=name, perm=perm) for v in ls])


def pshuffle(x, axis_name, perm):
    """Member i receives the value of member perm[i] (perm a full permutation)."""
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"pshuffle: {perm} is not a permutation")
    return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(perm)])


# ------------------------------------------------------------------------------------------------
# all_to_all: member i splits x along split_axis into one block per member, sends block j to member
# j, and concatenates the blocks it receives (ordered by sender) along concat_axis.


def _all_to_all_abstract_eval(x, *, axis_name, split_axis, concat_axis, axis_index_groups, tiled, axis_size):
    for what, a in (("split_axis", split_axis), ("concat_axis", concat_axis)):
        if not 0 <= a < x.ndim:
            raise ValueError(f"all_to_all: {what} {a} is out of range for an operand of type {x.str_short()}")
    shape = list(x.shape)
    if shape[split_axis] % axis_size:
        raise ValueError(
            f"all_to_all: the split axis has size {shape[split_axis]}, which the axis size {axis_size} does not "
            "divide."
        )
    shape[split_axis] //= axis_size
    shape[concat_axis] *= axis_size
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


all_to_all_p = Primitive("all_to_all")
all_to_all_p.kind = Kind.OPAQUE
all_to_all_p.named_axes_param = "axis_name"
all_to_all_p.impl = _on_devices.all_to_all_impl
all_to_all_p.abstract_eval = _all_to_all_abstract_eval
all_to_all_p.stablehlo = hlo_collectives.all_to_all
all_to_all_p.test_spec = _spec()


def _all_to_all_batch(
    vals, dims, *, axis_data, axis_name, split_axis, concat_axis, axis_index_groups, tiled, axis_size
):
    (x,), (d,) = vals, dims
    params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups, tiled=tiled, axis_size=axis_size)
    if axis_name != axis_data.name:
        return all_to_all_p.bind(
            moveaxis(x, d, 0), split_axis=split_axis + 1, concat_axis=concat_axis + 1, **params
        ), 0
    _no_groups("all_to_all", axis_index_groups)
    _check_size("all_to_all", axis_name, axis_size, axis_data.size)
    n, sa, ca = axis_data.size, split_axis, concat_axis
    xb = bdim_to_front(x, d, n)  # (sender, *x.shape)
    xs = get_aval(xb).shape[1:]
    k, m = len(xs), xs[sa] // n
    # Split the split axis into (receiver, block): axes sender=0, x-axis a at pos(a), receiver, block.
    y = reshape(xb, (n,) + xs[:sa] + (n, m) + xs[sa + 1 :])

    def pos(a):
        return 1 + a if a < sa else 2 + a

    recv, block = 1 + sa, 2 + sa
    perm, out_shape = [recv], [n]
    for a in range(k):
        if a == sa == ca:
            perm += [0, block]
            out_shape.append(n * m)
        elif a == sa:
            perm.append(block)
            out_shape.append(m)
        elif a == ca:
            perm += [0, pos(a)]
            out_shape.append(n * xs[a])
        else:
            perm.append(pos(a))
            out_shape.append(xs[a])
    y = transpose(y, tuple(perm))
    return reshape(y, tuple(out_shape)), 0


all_to_all_p.batch = _all_to_all_batch


def _all_to_all_transpose(ct, x, *, axis_name, split_axis, concat_axis, axis_index_groups, tiled, axis_size):
    if is_zero(ct):
        return [Zero(x.aval)]
    return [
        all_to_all_p.bind(
            ct,
            axis_name=axis_name,
            split_axis=concat_axis,
            concat_axis=split_axis,
            axis_index_groups=axis_index_groups,
            tiled=tiled,
            axis_size=axis_size,
        )
    ]


deflinear(all_to_all_p, _all_to_all_transpose)


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Exchange blocks between members. Not `tiled`: x.shape[split_axis] must equal the axis size;
    that axis is removed and a new axis of the received values (indexed by sender) appears at
    `concat_axis` of the result. `tiled`: split_axis shrinks and concat_axis grows by the axis size."""
    name = _single_name(axis_name, "all_to_all")
    size = _env_size(name, "all_to_all")
    if axis_index_groups is not None:
        size = len(axis_index_groups[0])

    def one(v):
        nd = len(get_aval(v).shape)
        sa = _canon("all_to_all", "split_axis", split_axis, nd)
        ca = _canon("all_to_all", "concat_axis", concat_axis, nd)
        if tiled:
            if get_aval(v).shape[sa] % size:
                raise ValueError(
                    f"all_to_all: the split axis size {get_aval(v).shape[sa]} must be divisible by the axis "
                    f"size {size}."
                )
        else:
            if get_aval(v).shape[sa] != size:
                raise ValueError(
                    f"all_to_all: the split axis must have the size of axis {name!r} ({size}) when tiled=False, "
                    f"got {get_aval(v).shape[sa]}."
                )
            # The primitive is the tiled exchange; a size-1 axis at concat_axis receives the blocks.
            if sa < ca:
                ca += 1
                v = expand_dims(v, (ca,))
            elif ca < sa:
                v = expand_dims(v, (ca,))
                sa += 1
        out = all_to_all_p.bind(
            v,
            axis_name=name,
            split_axis=sa,
            concat_axis=ca,
            axis_index_groups=axis_index_groups,
            tiled=bool(tiled),
            axis_size=size,
        )
        if not tiled and sa != ca:
            out = squeeze(out, (sa,))
        return out

    return _rebind_leaves(x, lambda ls: [one(v) for v in ls])


# Every collective checks at typing time that a transformation binds its names (collective_axes).
for _p in (psum_p, pmax_p, pmin_p, axis_index_p, all_gather_p, psum_scatter_p, ppermute_p, all_to_all_p):
    _check_bound(_p)
del _p
