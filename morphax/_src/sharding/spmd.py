"""SPMD partitioning (a small GSPMD): a jitted program on arrays split over a mesh becomes one
per-device program that computes each device's block, with collectives over the mesh axes where
the blocks must meet. `runtime/spmd_runner.py` runs it on every device of the mesh, as shard_map
runs its bodies.

The program is re-traced equation by equation with the mesh axis names bound (so `psum`,
`all_gather` and `axis_index` stage as they do in shard_map). Each value carries a layout (per
dimension, the mesh axes splitting it: sharding/propagation.py's form) and its local block:

- elementwise operations, `broadcast_in_dim`, `transpose`, `reshape` (when the split dimension
  survives), `convert_element_type`, `select_n`: local, on operands brought to one layout;
- `reduce_sum/max/min` over a split dimension: the local reduction, then psum/pmax/pmin over the
  axes that split the reduced dimensions; other reductions (argmax, products, logical ones) and
  operations along dimensions (running reductions, sort, rev): local once those dimensions are
  joined (all_gather of them alone), the others staying split;
- `dot_general`: split batch and free dimensions stay local; a contracting dimension split on
  both operands is a local product plus psum; split on one operand only, the other operand takes
  its own block of that dimension (a local slice) first;
- squeeze, slice, pad, concatenate and gather on dimensions they take whole; linear algebra and
  FFTs over split batch dimensions;
- sharding constraints move their operand to their layout (slices to split, all_gather to join);
- calls (pjit, checkpoint, custom rules) are partitioned through their bodies, and loops
  (scan, while) and conditionals run on every device with partitioned bodies and branches;
- anything else falls back: its split operands are all-gathered, it runs replicated on every
  device, and its results are cut to the propagated layout. Fallbacks are counted
  (`spmd_stats`) and logged.

The per-device program's outputs are the blocks of the requested output layouts.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import Counter

import numpy as np

from morphax._src.core.jaxpr import ClosedJaxpr, Literal
from morphax._src.core.memo import memoized
from morphax._src.core.primitive import Kind
from morphax._src.higher_order.conditionals import cond_p
from morphax._src.higher_order.pmap import axis_frame
from morphax._src.higher_order.scan import scan_p
from morphax._src.higher_order.while_loop import while_p
from morphax._src.prims import reductions as _reductions
from morphax._src.prims.collectives import all_gather, axis_index, pmax, pmin, psum
from morphax._src.prims.concatenate import concatenate_p
from morphax._src.prims.dot import dot_general_p
from morphax._src.prims.dynamic_slicing import dynamic_slice_in_dim
from morphax._src.prims.gather_scatter_add import gather_p, scatter_add_p
from morphax._src.prims.scatter import scatter_max_p, scatter_min_p, scatter_mul_p, scatter_p
from morphax._src.prims.shape import broadcast_in_dim_p, reshape_p, rev_p, squeeze_p, transpose_p
from morphax._src.prims.slicing import pad_p, slice_p
from morphax._src.prims.sorting import sort_p
from morphax._src.sharding import propagation as _prop
from morphax._src.sharding.collective_merge import merge_reductions
from morphax._src.sharding.constraint import sharding_constraint_p
from morphax._src.sharding.partition_spec import PartitionSpec
from morphax._src.sharding.shardings import NamedSharding
from morphax._src.transforms.staging import trace_to_jaxpr

__all__ = ["Partitioned", "SpmdStats", "partition", "spmd_stats"]

logger = logging.getLogger("morphax")


class SpmdStats:
    """What partitioned execution did (tests assert these, never wall times): `calls` (jitted
    calls run partitioned), `device_runs` (device id -> per-device programs it ran), `fallbacks`
    (equations run replicated, per call), `fallback_primitives` (their names, counted) and `last`
    (the Partitioned program of the latest call)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.reset()

    def reset(self):
        self.calls = 0
        self.device_runs = Counter()
        self.fallbacks = 0
        self.fallback_primitives = Counter()
        self.last = None

    def record_call(self, part):
        with self._lock:
            self.calls += 1
            self.last = part
            self.fallbacks += len(part.fallbacks)
            self.fallback_primitives.update(part.fallbacks)

    def record_device(self, device_id):
        with self._lock:
            self.device_runs[device_id] += 1


spmd_stats = SpmdStats()


class Partitioned:
    """A partitioned program: `closed` (the per-device ClosedJaxpr, on blocks), the mesh axes
    ((name, size), ...) in mesh order, and the names of the equations that fell back."""

    def __init__(self, closed, mesh_axes, fallbacks):
        self.closed, self.mesh_axes, self.fallbacks = closed, mesh_axes, tuple(fallbacks)


def partition(closed: ClosedJaxpr, in_lays, out_lays, mesh) -> Partitioned:
    """The per-device program of `closed` whose inputs are the blocks of `in_lays` and outputs
    the blocks of `out_lays` (layouts over `mesh`); built once per program and layouts."""
    key = ("spmd", tuple(in_lays), tuple(out_lays), mesh)
    return memoized(closed, key, lambda: _partition(closed, tuple(in_lays), tuple(out_lays), mesh))


def _partition(closed, in_lays, out_lays, mesh):
    mesh_axes = tuple(zip(mesh.axis_names, mesh.axis_sizes))
    p = _Partitioner(mesh, mesh_axes)
    local_avals = [a.update(shape=p.local_shape(a.shape, lay)) for a, lay in zip(closed.in_avals, in_lays)]

    def body(*blocks):
        outs = p.interpret(closed.jaxpr, closed.consts, list(zip(blocks, in_lays)))
        return [
            p.relayout(v, lay, want, a.shape) for (v, lay), want, a in zip(outs, out_lays, closed.out_avals)
        ]

    # NB: the traced program is partitioned, not the optimized one: the passes drop sharding
    # constraints (identities to them), which must cut blocks here. compile_jaxpr optimizes the
    # per-device program after (DCE and CSE there also remove dead or repeated collectives).
    with axis_frame(mesh_axes):
        per_device = merge_reductions(trace_to_jaxpr(body, local_avals))
    if p.fallbacks:
        logger.info(
            "SPMD partitioning ran %d operation(s) replicated (all-gathered operands): %s",
            len(p.fallbacks),
            ", ".join(sorted(set(p.fallbacks))),
        )
    return Partitioned(per_device, mesh_axes, p.fallbacks)


def _claims():
    """`take(axes)`: the mesh axes `axes` if none of them is taken yet (then they are), else ():
    one dimension per operand may be split over a mesh axis."""
    used: set = set()

    def take(axes):
        if not axes or any(a in used for a in axes):
            return ()
        used.update(axes)
        return axes

    return take


_SCATTERS = (scatter_add_p, scatter_p, scatter_mul_p, scatter_min_p, scatter_max_p)

_COMBINE = {
    _reductions.reduce_sum_p: psum,
    _reductions.reduce_max_p: pmax,
    _reductions.reduce_min_p: pmin,
}


# Operations along some dimensions of same-shaped operands and results (running reductions, sort,
# rev): local once those dimensions are whole on every device; the parameter naming them.
_ALONG = {
    _reductions.cumsum_p: "axis",
    _reductions.cumprod_p: "axis",
    _reductions.cummax_p: "axis",
    _reductions.cummin_p: "axis",
    _reductions.cumlogsumexp_p: "axis",
    sort_p: "dimension",
    rev_p: "dimensions",
}


def _whole(ndim) -> tuple:
    return ((),) * ndim


class _Partitioner:
    def __init__(self, mesh, mesh_axes):
        self.mesh = mesh
        self.sizes = dict(mesh_axes)
        self.explicit = all(t.name == "Explicit" for t in mesh.axis_types)
        self.fallbacks: list = []
        # Whole results of broadcast_in_dim: id -> (result, operand, params, operand aval).
        self.broadcasts: dict = {}

    # ---------------------------------------------------------------- layouts and blocks

    def parts(self, axes) -> int:
        return math.prod(self.sizes[a] for a in axes)

    def local_shape(self, shape, lay) -> tuple:
        return tuple(int(n) // self.parts(a) for n, a in zip(shape, lay))

    def fits(self, shape, lay) -> bool:
        return all(int(n) % self.parts(a) == 0 for n, a in zip(shape, lay))

    def relayout(self, x, src, dst, shape):
        """Block `x` of a value of global `shape` laid out `src`, as its block under `dst`:
        all_gather joins the dimensions whose split changes, then each device slices its block
        of the dimensions `dst` splits."""
        src, dst = tuple(src), tuple(dst)
        if src == dst:
            return x
        made = self.broadcasts.get(id(x))
        if made is not None and made[0] is x and not any(src):
            # A broadcast cut into blocks: broadcast the operand's block to the block's shape
            # instead (a 1/N seed of a gradient does not become a whole-size constant sliced).
            _, operand, params, in_aval = made
            bdims = params["broadcast_dimensions"]
            want = tuple(dst[d] if in_aval.shape[i] == shape[d] else () for i, d in enumerate(bdims))
            if self.fits(in_aval.shape, want):
                block = self.relayout(operand, _whole(len(in_aval.shape)), want, in_aval.shape)
                local = dict(params, shape=self.local_shape(shape, dst))
                return _bind(broadcast_in_dim_p, [block], local)[0]
        cur = list(src)
        for d, (a, b) in enumerate(zip(src, dst)):
            if a and a != b:
                for name in reversed(a):  # the minor axis first: blocks are major-axis-first
                    x = all_gather(x, name, axis=d, tiled=True)
                cur[d] = ()
        for d, b in enumerate(dst):
            if b and not cur[d]:
                n = int(shape[d]) // self.parts(b)
                start = axis_index(b if len(b) > 1 else b[0]) * np.int32(n)
                x = dynamic_slice_in_dim(x, start, n, axis=d)
        return x

    # ---------------------------------------------------------------- the program

    def interpret(self, jaxpr, consts, args):
        """Partition `jaxpr` on `args` [(block, layout)]: returns its outputs [(block, layout)]."""
        env = {}
        for v, c in zip(jaxpr.constvars, consts):
            env[v] = (c, _whole(len(v.aval.shape)))
        for v, a in zip(jaxpr.invars, args):
            env[v] = a

        def read(x):
            if isinstance(x, Literal):
                return (x.val, _whole(len(x.aval.shape)))
            return env[x]

        for eqn in jaxpr.eqns:
            ins = [read(x) for x in eqn.invars]
            outs = self.equation(eqn, ins)
            for v, o in zip(eqn.outvars, outs):
                env[v] = o
        return [read(x) for x in jaxpr.outvars]

    def equation(self, eqn, ins):
        prim, params = eqn.primitive, eqn.params
        vals = [v for v, _ in ins]
        lays = [lay for _, lay in ins]
        in_avals = [x.aval for x in eqn.invars]
        out_avals = [v.aval for v in eqn.outvars]
        if prim is sharding_constraint_p:
            want = self.constraint_layout(params["sharding"], len(in_avals[0].shape))
            if not self.fits(in_avals[0].shape, want):
                want = _whole(len(want))  # a split that does not divide: kept whole
            return [(self.relayout(vals[0], lays[0], want, in_avals[0].shape), want)]
        if "sharding_callback" in params and not eqn.outvars:
            return []  # inspect_array_sharding: propagation answered it when the call was placed
        call = prim.call_jaxpr_param
        inner = params.get(call) if call else None
        if isinstance(inner, ClosedJaxpr) and len(inner.in_avals) == len(ins):
            return self.interpret(inner.jaxpr, inner.consts, ins)
        key = "sharding" if "sharding" in params else "out_sharding"
        given = params.get(key)
        if isinstance(given, (NamedSharding, PartitionSpec)) and len(out_avals) == 1:
            # An operation's own out_sharding: computed on blocks with it cleared (it speaks of
            # the whole value), then moved to its layout.
            want = self.given_layout(given, out_avals[0].shape)
            local = dict(params, **{key: None})
            if any(any(lay) for lay in lays):
                outs = self.local_rule(prim, local, vals, lays, in_avals, out_avals)
                if outs is None:
                    return self.fallback(eqn, vals, lays, in_avals, out_avals)
            else:
                outs = [(_bind(prim, vals, local)[0], _whole(len(out_avals[0].shape)))]
            (v, lay), a = outs[0], out_avals[0]
            return [(self.relayout(v, lay, want, a.shape), want)]
        if not any(any(lay) for lay in lays):
            outs = _bind(prim, vals, params)
            if prim is broadcast_in_dim_p and len(vals) == 1:
                self.broadcasts[id(outs[0])] = (outs[0], vals[0], params, in_avals[0])
            return [(o, _whole(len(a.shape))) for o, a in zip(outs, out_avals)]
        if "sharding_callback" not in params:
            outs = self.local_rule(prim, params, vals, lays, in_avals, out_avals)
            if outs is not None:
                return outs
        return self.fallback(eqn, vals, lays, in_avals, out_avals)

    def given_layout(self, given, shape):
        """The layout an operation's own sharding parameter names (whole where it is on another
        mesh or does not divide)."""
        ndim = len(shape)
        if isinstance(given, NamedSharding):
            lay = _prop.layout_of(given, ndim) if given.mesh == self.mesh else _whole(ndim)
        else:
            lay = tuple(given._axes_of(d) for d in range(ndim))
        if any(a not in self.sizes for axes in lay for a in axes) or not self.fits(shape, lay):
            return _whole(ndim)
        return lay

    def constraint_layout(self, sharding, ndim):
        if isinstance(sharding, NamedSharding) and sharding.mesh == self.mesh:
            return _prop.layout_of(sharding, ndim)
        return _whole(ndim)

    def local_rule(self, prim, params, vals, lays, in_avals, out_avals):
        """The outputs of one equation computed on blocks, or None where no rule applies."""
        if prim.kind is Kind.ELEMENTWISE and vals:
            return self.elementwise(prim, params, vals, lays, in_avals, out_avals)
        if prim.kind is Kind.REDUCE and len(vals) == 1:
            return self.reduction(prim, params, vals[0], lays[0], in_avals[0], out_avals)
        if prim in _ALONG:
            return self.along(prim, params, vals, lays, in_avals, out_avals)
        if prim is dot_general_p and len(vals) == 2:
            return self.dot(prim, params, vals, lays, in_avals, out_avals)
        if prim is broadcast_in_dim_p:
            return self.broadcast(prim, params, vals, lays, in_avals, out_avals)
        if prim is transpose_p:
            perm = params["permutation"]
            lay = tuple(lays[0][p] for p in perm)
            return [(_bind(prim, vals, params)[0], lay)]
        if prim is reshape_p and params.get("dimensions") is None and len(vals) == 1:
            return self.reshape(prim, params, vals[0], lays[0], in_avals[0], out_avals[0])
        if prim is squeeze_p:
            dims = params["dimensions"]
            return [(_bind(prim, vals, params)[0], tuple(a for d, a in enumerate(lays[0]) if d not in dims))]
        if prim is slice_p:
            return self.slice(prim, params, vals[0], lays[0], in_avals[0])
        if prim is pad_p and len(vals) == 2:
            cfg = params["padding_config"]
            want = tuple(() if any(p) else a for a, p in zip(lays[0], cfg))
            x = self.relayout(vals[0], lays[0], want, in_avals[0].shape)
            y = self.relayout(vals[1], lays[1], (), ())
            return [(_bind(prim, [x, y], params)[0], want)]
        if prim is concatenate_p:
            return self.concatenate(prim, params, vals, lays, in_avals, out_avals[0])
        if prim is gather_p and len(vals) == 2:
            return self.gather(prim, params, vals, lays, in_avals, out_avals[0])
        if prim in _SCATTERS and len(vals) == 3:
            return self.scatter(prim, params, vals, lays, in_avals)
        if prim.kind is Kind.OPAQUE and _prop.is_core_op(prim, params, in_avals, out_avals):
            return self.batched(prim, params, vals, lays, in_avals, out_avals)
        if prim is scan_p:
            return self.scan(prim, params, vals, lays, in_avals)
        if prim is while_p:
            return self.while_loop(prim, params, vals, lays, in_avals)
        if prim is cond_p and vals:
            return self.cond(prim, params, vals, lays, in_avals)
        return None

    # ---------------------------------------------------------------- control flow

    def sub_program(self, closed, in_lays, out_lays=None):
        """(the per-device ClosedJaxpr of a loop body or branch on blocks laid out `in_lays`, its
        output layouts): `out_lays` where given (its outputs are moved there), else its own."""
        local = [a.update(shape=self.local_shape(a.shape, lay)) for a, lay in zip(closed.in_avals, in_lays)]
        found = []

        def body(*blocks):
            outs = self.interpret(closed.jaxpr, closed.consts, list(zip(blocks, in_lays)))
            if out_lays is not None:
                outs = [
                    (self.relayout(v, lay, want, a.shape), want)
                    for (v, lay), want, a in zip(outs, out_lays, closed.out_avals)
                ]
            found[:] = [lay for _, lay in outs]
            return [v for v, _ in outs]

        return trace_to_jaxpr(body, local), list(found)

    def fixed_carry(self, body, lead, carry, rest, n):
        """Carry layouts that one trip of `body` (inputs: lead + carry + rest) gives back
        (propagation.next_carry's steps). Returns (carry layouts, the body's other output
        layouts)."""
        carry = [tuple(c) for c in carry]
        mark = len(self.fallbacks)
        joined: set = set()
        while True:
            _, outs = self.sub_program(body, list(lead) + carry + list(rest))
            del self.fallbacks[mark:]  # counted once, by the final trace
            new = _prop.next_carry(carry, outs[:n], joined)
            if new == carry:
                return carry, [tuple(o) for o in outs[n:]]
            carry = new

    def scan(self, prim, params, vals, lays, in_avals):
        """A scan runs on every device with its carries and the scanned operands' blocks (the
        scanned dimension whole), its body partitioned."""
        body, nc, nk = params["jaxpr"], params["num_consts"], params["num_carry"]
        xs_lays = [_whole(1) + tuple(lay[1:]) for lay in lays[nc + nk :]]
        xs = [
            self.relayout(v, lay, w, a.shape)
            for v, lay, w, a in zip(vals[nc + nk :], lays[nc + nk :], xs_lays, in_avals[nc + nk :])
        ]
        slices = [w[1:] for w in xs_lays]
        carry, ys = self.fixed_carry(body, lays[:nc], lays[nc : nc + nk], slices, nk)
        sub, _ = self.sub_program(body, list(lays[:nc]) + carry + slices, carry + ys)
        init = [
            self.relayout(v, lay, c, a.shape)
            for v, lay, c, a in zip(vals[nc : nc + nk], lays[nc : nc + nk], carry, in_avals[nc : nc + nk])
        ]
        outs = _bind(prim, list(vals[:nc]) + init + xs, dict(params, jaxpr=sub))
        return list(zip(outs, carry + [_whole(1) + y for y in ys]))

    def while_loop(self, prim, params, vals, lays, in_avals):
        """A while loop runs on every device with the blocks of its carries, body and condition
        partitioned (the condition's value is the same on every device: whole values are)."""
        cn, bn = params["cond_nconsts"], params["body_nconsts"]
        cconsts, bconsts, carry_in = lays[:cn], lays[cn : cn + bn], lays[cn + bn :]
        carry, _ = self.fixed_carry(params["body_jaxpr"], bconsts, carry_in, (), len(carry_in))
        body, _ = self.sub_program(params["body_jaxpr"], list(bconsts) + carry, carry)
        cond, _ = self.sub_program(params["cond_jaxpr"], list(cconsts) + carry, [()])
        init = [
            self.relayout(v, lay, c, a.shape)
            for v, lay, c, a in zip(vals[cn + bn :], carry_in, carry, in_avals[cn + bn :])
        ]
        outs = _bind(prim, list(vals[: cn + bn]) + init, dict(params, cond_jaxpr=cond, body_jaxpr=body))
        return list(zip(outs, carry))

    def cond(self, prim, params, vals, lays, in_avals):
        """Every device takes the same branch (the index is whole), each partitioned with the
        first branch's output layouts."""
        branches = params["branches"]
        mark = len(self.fallbacks)
        _, want = self.sub_program(branches[0], list(lays[1:]))
        del self.fallbacks[mark:]
        subs = tuple(self.sub_program(b, list(lays[1:]), want)[0] for b in branches)
        index = self.relayout(vals[0], lays[0], _whole(len(in_avals[0].shape)), in_avals[0].shape)
        outs = _bind(prim, [index] + list(vals[1:]), dict(params, branches=subs))
        return list(zip(outs, [tuple(w) for w in want]))

    def batched(self, prim, params, vals, lays, in_avals, out_avals):
        """Linear algebra and FFTs over split batch dimensions: each device works on its own
        matrices (the core dimensions joined first)."""
        nb, merged, outs = _prop.core_rule(params, in_avals, lays, out_avals)
        if not any(merged):
            return None
        batch = tuple(in_avals[0].shape[:nb])
        if any(tuple(a.shape[:nb]) != batch for a in in_avals):
            return None
        moved = [
            self.relayout(v, lay, merged + _whole(len(a.shape) - nb), a.shape)
            for v, lay, a in zip(vals, lays, in_avals)
        ]
        return list(zip(_bind(prim, moved, params), [tuple(o) for o in outs]))

    def slice(self, prim, params, val, lay, aval):
        """Dimensions taken whole keep their split (their limit becomes the block's); the
        others are joined first."""
        start, limit, strides = params["start_indices"], params["limit_indices"], params["strides"]
        strides = strides or (1,) * len(start)
        want = tuple(
            a if (s == 0 and e == n and st == 1) else ()
            for a, s, e, st, n in zip(lay, start, limit, strides, aval.shape)
        )
        x = self.relayout(val, lay, want, aval.shape)
        local = self.local_shape(aval.shape, want)
        limits = tuple(m if w else e for m, w, e in zip(local, want, limit))
        return [(_bind(prim, [x], dict(params, limit_indices=limits))[0], want)]

    def concatenate(self, prim, params, vals, lays, in_avals, out_aval):
        dim = params["dimension"]
        rank = len(out_aval.shape)
        target = list(_prop._merge(lays, rank))
        target[dim] = ()  # blocks of a split concatenated dimension do not concatenate locally
        target = tuple(target)
        if not self.fits(out_aval.shape, target):
            return None
        moved = [self.relayout(v, lay, target, a.shape) for v, lay, a in zip(vals, lays, in_avals)]
        return [(_bind(prim, moved, params)[0], target)]

    def gather(self, prim, params, vals, lays, in_avals, out_aval):
        """Each device gathers from its block: operand dimensions taken whole keep their split,
        the indices keep theirs on their batch dimensions (a batching dimension pair shares one
        split); the other operand dimensions and the index vector are joined first."""
        dn, sizes = params["dimension_numbers"], params["slice_sizes"]
        shape, ishape = tuple(in_avals[0].shape), tuple(in_avals[1].shape)
        rank = len(out_aval.shape)
        offset = _prop.gather_offset_operand_dims(dn, len(shape))
        obatch = tuple(getattr(dn, "operand_batching_dims", ()) or ())
        ibatch = tuple(getattr(dn, "start_indices_batching_dims", ()) or ())
        want_x, want_i = [()] * len(shape), [()] * len(ishape)
        take = _claims()
        for d, k in zip(obatch, ibatch):
            want_x[d] = want_i[k] = take(lays[1][k] or lays[0][d])
        for k in range(len(ishape) - 1):
            if k not in ibatch:
                want_i[k] = take(lays[1][k])
        for d in offset:
            if sizes[d] == shape[d] and d not in dn.start_index_map:
                want_x[d] = take(lays[0][d])
        want_x, want_i = tuple(want_x), tuple(want_i)
        if not (self.fits(shape, want_x) and self.fits(ishape, want_i)):
            return None
        x = self.relayout(vals[0], lays[0], want_x, shape)
        i = self.relayout(vals[1], lays[1], want_i, ishape)
        local_sizes = tuple(
            m if (want_x[d] and d not in obatch) else n
            for d, (m, n) in enumerate(zip(self.local_shape(shape, want_x), sizes))
        )
        out = _bind(prim, [x, i], dict(params, slice_sizes=local_sizes))[0]
        lay = [()] * rank
        for o, k in zip([d for d in range(rank) if d not in dn.offset_dims], range(len(ishape) - 1)):
            lay[o] = want_i[k]
        for d, o in zip(offset, dn.offset_dims):
            lay[o] = want_x[d]
        return [(out, tuple(lay))]

    def scatter(self, prim, params, vals, lays, in_avals):
        """Each device scatters its block of updates into its block of the operand where the
        blocks line up: a batching dimension pair (with the updates' matching dimension) shares
        one split, and operand dimensions every update window covers whole, never scattered
        along, keep theirs (with the updates' window dimension). None (the replicated fallback)
        when nothing would stay split."""
        dn = params["dimension_numbers"]
        shape, ishape, ushape = (tuple(a.shape) for a in in_avals)
        obatch = tuple(getattr(dn, "operand_batching_dims", ()) or ())
        ibatch = tuple(getattr(dn, "scatter_indices_batching_dims", ()) or ())
        windows = [d for d in range(len(shape)) if d not in dn.inserted_window_dims and d not in obatch]
        scattered = [u for u in range(len(ushape)) if u not in dn.update_window_dims]  # per index batch dim
        want_x, want_i, want_u = [()] * len(shape), [()] * len(ishape), [()] * len(ushape)
        take = _claims()

        for d, k in zip(obatch, ibatch):
            u = scattered[k]
            want_x[d] = want_i[k] = want_u[u] = take(lays[1][k] or lays[0][d] or lays[2][u])
        for d, u in zip(windows, dn.update_window_dims):
            if ushape[u] == shape[d] and d not in dn.scatter_dims_to_operand_dims:
                want_x[d] = want_u[u] = take(lays[0][d] or lays[2][u])
        want_x, want_i, want_u = tuple(want_x), tuple(want_i), tuple(want_u)
        if not any(want_x) or not (
            self.fits(shape, want_x) and self.fits(ishape, want_i) and self.fits(ushape, want_u)
        ):
            return None
        x = self.relayout(vals[0], lays[0], want_x, shape)
        i = self.relayout(vals[1], lays[1], want_i, ishape)
        u = self.relayout(vals[2], lays[2], want_u, ushape)
        return [(_bind(prim, [x, i, u], params)[0], want_x)]

    def elementwise(self, prim, params, vals, lays, in_avals, out_avals):
        shape = tuple(out_avals[0].shape)
        if any(tuple(a.shape) != shape for a in out_avals):
            return None
        aligned, pads = [], []
        for lay, a in zip(lays, in_avals):
            ashape = tuple(a.shape)
            pad = len(shape) - len(ashape)
            if pad < 0 or any(n not in (1, m) for n, m in zip(ashape, shape[pad:])):
                return None
            pads.append(pad)
            aligned.append(
                _whole(pad) + tuple(lay[d] if ashape[d] == shape[pad + d] else () for d in range(len(ashape)))
            )
        target = _prop._merge(aligned, len(shape))
        if not self.fits(shape, target):
            return None
        moved = []
        for v, lay, a, pad in zip(vals, lays, in_avals, pads):
            ashape = tuple(a.shape)
            want = tuple(target[pad + d] if ashape[d] == shape[pad + d] else () for d in range(len(ashape)))
            moved.append(self.relayout(v, lay, want, ashape))
        return [(o, target) for o in _bind(prim, moved, params)]

    def reduction(self, prim, params, val, lay, in_aval, out_avals):
        axes = params.get("axes")
        if not isinstance(axes, tuple) or len(out_avals) != 1:
            return None
        if len(out_avals[0].shape) != len(in_aval.shape) - len(axes):
            return None
        over = tuple(a for d in axes for a in lay[d])
        if over and prim not in _COMBINE:
            # No collective combines partial results (argmax, products, logical reductions):
            # the reduced dimensions are joined first; the others stay split.
            want = tuple(() if d in axes else a for d, a in enumerate(lay))
            val, lay, over = self.relayout(val, lay, want, in_aval.shape), want, ()
        out = _bind(prim, [val], params)[0]
        if over:
            out = _COMBINE[prim](out, over)
        return [(out, tuple(a for d, a in enumerate(lay) if d not in axes))]

    def along(self, prim, params, vals, lays, in_avals, out_avals):
        shape = tuple(in_avals[0].shape)
        if any(tuple(a.shape) != shape for a in list(in_avals) + list(out_avals)):
            return None
        dims = params[_ALONG[prim]]
        dims = set(dims) if isinstance(dims, tuple) else {dims}
        target = list(_prop._merge(lays, len(shape)))
        for d in dims:
            target[d] = ()
        target = tuple(target)
        moved = [self.relayout(v, lay, target, shape) for v, lay in zip(vals, lays)]
        return [(o, target) for o in _bind(prim, moved, params)]

    def dot(self, prim, params, vals, lays, in_avals, out_avals):
        (lc, rc), (lb, rb) = params["dimension_numbers"]
        la, ra = list(lays[0]), list(lays[1])
        # Contracting dimensions: both operands take one split (the lhs's where it has one).
        summed = []
        for a, b in zip(lc, rc):
            split = la[a] or ra[b]
            if split and any(x in summed for x in split):
                split = ()
            la[a] = ra[b] = split
            summed += list(split)
        # Batch dimensions: one split for both operands.
        used = set(summed)
        for a, b in zip(lb, rb):
            split = la[a] or ra[b]
            if any(x in used for x in split):
                split = ()
            la[a] = ra[b] = split
            used |= set(split)
        lfree = [d for d in range(len(la)) if d not in lc and d not in lb]
        rfree = [d for d in range(len(ra)) if d not in rc and d not in rb]
        # A mesh axis splits one dimension of the result: later uses are joined.
        for side, free in ((la, lfree), (ra, rfree)):
            for d in free:
                if any(x in used for x in side[d]):
                    side[d] = ()
                used |= set(side[d])
        if not (self.fits(in_avals[0].shape, la) and self.fits(in_avals[1].shape, ra)):
            return None
        x = self.relayout(vals[0], lays[0], tuple(la), in_avals[0].shape)
        y = self.relayout(vals[1], lays[1], tuple(ra), in_avals[1].shape)
        out = _bind(prim, [x, y], params)[0]
        if summed:
            out = psum(out, tuple(summed))
        lay = tuple([la[a] for a in lb] + [la[d] for d in lfree] + [ra[d] for d in rfree])
        return [(out, lay)]

    def broadcast(self, prim, params, vals, lays, in_avals, out_avals):
        if len(vals) != 1:
            return None  # dynamic shapes
        shape = tuple(params["shape"])
        lay = [()] * len(shape)
        want = list(lays[0])
        for i, d in enumerate(params["broadcast_dimensions"]):
            if in_avals[0].shape[i] == shape[d]:
                lay[d] = lays[0][i]
            else:
                want[i] = ()
        x = self.relayout(vals[0], lays[0], tuple(want), in_avals[0].shape)
        local = dict(params, shape=self.local_shape(shape, lay))
        out = _bind(prim, [x], local)[0]
        if not any(lay) and not any(want):
            self.broadcasts[id(out)] = (out, x, params, in_avals[0])
        return [(out, tuple(lay))]

    def reshape(self, prim, params, val, lay, in_aval, out_aval):
        out_lay = _prop._reshape(lay, tuple(in_aval.shape), tuple(out_aval.shape), self.sizes)
        kept = {a for a in out_lay if a}
        want = tuple(a if a in kept else () for a in lay)
        x = self.relayout(val, lay, want, in_aval.shape)
        local = dict(params, new_sizes=self.local_shape(out_aval.shape, out_lay))
        return [(_bind(prim, [x], local)[0], out_lay)]

    def fallback(self, eqn, vals, lays, in_avals, out_avals):
        """Run the equation replicated on joined operands, then cut its results per the
        propagated layouts."""
        prim, params = eqn.primitive, eqn.params
        if any(any(lay) for lay in lays):
            self.fallbacks.append(prim.name)
        whole = [
            self.relayout(v, lay, _whole(len(a.shape)), a.shape) for v, lay, a in zip(vals, lays, in_avals)
        ]
        outs = _bind(prim, whole, params)
        if "sharding_callback" in params:
            targets = [_whole(len(a.shape)) for a in out_avals]
        else:
            targets = _prop._rule(prim, params, in_avals, lays, out_avals, self.mesh, self.explicit)
        result = []
        for o, t, a in zip(outs, targets, out_avals):
            t = tuple(t) if self.fits(a.shape, t) else _whole(len(a.shape))
            result.append((self.relayout(o, _whole(len(a.shape)), t, a.shape), t))
        return result


def _bind(prim, vals, params):
    out = prim.bind(*vals, **params)
    return list(out) if prim.multiple_results else [out]
