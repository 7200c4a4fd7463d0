"""`xla_pmap`: the primitive `pmap` (and `shard_map`) binds. Its parameter `jaxpr` is the
per-device program, traced once with the mapped axis name bound; each device runs it on its
slice of the inputs and the results are stacked.

Params: `mesh_axes`, ((name, size), ...) of the device mesh (one axis for pmap; shard_map's
manual mesh axes), and `axis_size`, the number of this process's devices that run it (the mapped
size of the inputs), in row-major mesh order. In one process that is the product of the mesh
sizes; a pmap across processes (morphax.distributed) has a mesh axis spanning every process's
devices, and each process feeds and receives only its own devices' slices, as JAX's; `in_axes` (per input: the axis split across devices, or None
for an input every device receives whole) and `out_axes` (per output: the axis the devices'
results are stacked along, or None for an output every device computes alike, taken from the
first device); `devices` (device ids, or None for the first `axis_size`), `backend`, `name`.

Rules transform the per-device jaxpr with the shared jaxpr transforms, with the axis name bound
while they retrace it (`AxisFrame`), so collectives inside keep their typing: JVP maps the JVP
jaxpr (tangents split like their primals), partial evaluation runs the known part now and maps
its residuals along axis 0, transposition maps the backward pass of the body (cotangents of
inputs every device shared are summed over devices), batching (`vmap` of `pmap`) maps the
batched body with the vmapped axis leading every per-device value.

Evaluation lives in the runtime (runtime/pmap_runner.py registers it with `set_runner`), which
sits above this layer: each device runs the compiled body on its own stream, its collectives
going through a communicator (prims/collectives_on_devices.py).
"""

from __future__ import annotations

import contextlib

import numpy as np

from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import Zero, instantiate, is_undefined_primal, is_zero, tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import AxisData, moveaxis
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr
from morphax._src.core.memo import memoized
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.higher_order.host_eval import host_rules
from morphax._src.prims.arithmetic import mul
from morphax._src.prims.conversion import convert_element_type
from morphax._src.prims.reductions import reduce_sum
from morphax._src.prims.shape import broadcast_in_dim
from morphax._src.transforms import ad
from morphax._src.transforms.batching import batch_jaxpr
from morphax._src.transforms.partial_eval import partial_eval_jaxpr
from morphax._src.transforms.staging import StagingTrace, trace_to_jaxpr

__all__ = ["AxisFrame", "axis_frame", "pmap_p", "set_runner"]


class AxisFrame(_trace.Trace):
    """A frame in the trace stack that binds a mapped axis name (and its size) without
    transforming anything: collectives traced above it find the name (collective_axes._env_size
    reads `axis_data`), and whatever reaches it is handed to the trace below."""

    def __init__(self, name, size):
        self.axis_data = AxisData(size, name)

    def process_primitive(self, prim, args, params):
        with _trace.set_current_trace(self.parent):
            return prim.bind(*args, **params)

    def process_custom_jvp_call(self, fun, jvp_rule, args, symbolic_zeros):
        handler = getattr(self.parent, "process_custom_jvp_call", None)
        with _trace.set_current_trace(self.parent):
            return fun(*args) if handler is None else handler(fun, jvp_rule, args, symbolic_zeros)

    def process_custom_vjp_call(self, fun, fwd, bwd, args, symbolic_zeros):
        handler = getattr(self.parent, "process_custom_vjp_call", None)
        with _trace.set_current_trace(self.parent):
            return fun(*args) if handler is None else handler(fun, fwd, bwd, args, symbolic_zeros)


@contextlib.contextmanager
def axis_frame(mesh_axes):
    """`with axis_frame(((name, size), ...)):` the names are bound while jaxprs are traced inside."""
    with contextlib.ExitStack() as stack:
        for name, size in mesh_axes:
            stack.enter_context(_trace.new_trace(AxisFrame(name, size)))
        yield


pmap_p = Primitive("xla_pmap", multiple_results=True)
pmap_p.higher_order = True
# A program containing a pmap runs on the calling thread (as programs with host callbacks do),
# so its launch onto the device streams happens at the call, in order with every other launch.
# Queued on a stream instead, it would launch later, behind work queued meanwhile: a device
# program queued before it on one stream and after it on another waits at a collective forever.
pmap_p.calls_host = True
pmap_p.kind = Kind.EFFECT  # never fused, reordered or merged; the body is a program of its own
pmap_p.test_spec = None

_runner: list = []


def set_runner(run, run_eager) -> None:
    """Install the runtime's device runner: `run(np_args, **params) -> list of np arrays` inside
    compiled programs, and `run_eager(args, **params) -> list of Arrays` for eager calls."""
    _runner[:] = [run, run_eager]


def _run(np_args, **params):
    if not _runner:  # pragma: no cover - the public pmap imports the runtime
        raise RuntimeError("morphax: a pmap ran before the runtime registered its device runner")
    return _runner[0](list(np_args), **params)


def _pmap_impl(*args, **params):
    if not _runner:  # pragma: no cover - the public pmap imports the runtime
        raise RuntimeError("morphax: a pmap ran before the runtime registered its device runner")
    return _runner[1](list(args), **params)


def _drop(shape, axis):
    return tuple(shape[:axis]) + tuple(shape[axis + 1 :])


def _insert(shape, axis, size):
    return tuple(shape[:axis]) + (size,) + tuple(shape[axis:])


def _pmap_abstract_eval(*avals, jaxpr, mesh_axes, axis_size, in_axes, out_axes, devices, backend, name):
    if len(avals) != len(jaxpr.in_avals) or len(in_axes) != len(avals):
        raise TypeError(
            f"pmap({name}): called with {len(avals)} arguments, its per-device program takes "
            f"{len(jaxpr.in_avals)} (in_axes has {len(in_axes)})"
        )
    for i, (a, ax, want) in enumerate(zip(avals, in_axes, jaxpr.in_avals)):
        shape = a.shape
        if ax is not None:
            if not 0 <= ax < len(shape) or shape[ax] != axis_size:
                raise ValueError(
                    f"pmap({name}): argument {i} of type {a.str_short()} has no axis {ax} of the mapped "
                    f"size {axis_size}"
                )
            shape = _drop(shape, ax)
        if shape != want.shape or a.dtype != want.dtype:
            raise TypeError(
                f"pmap({name}): argument {i} gives each device {a.dtype.name}{list(shape)}, but the "
                f"per-device program takes {want.str_short()}"
            )
    return [
        a if ax is None else ShapedArray(_insert(a.shape, ax, axis_size), a.dtype, a.weak_type)
        for a, ax in zip(jaxpr.out_avals, out_axes)
    ]


pmap_p.impl = _pmap_impl
pmap_p.abstract_eval = _pmap_abstract_eval
host_rules[pmap_p] = _run


# ------------------------------------------------------------------------------------------------
# JVP: the body's JVP jaxpr, tangents mapped like their primals.


def _pmap_jvp(primals, tangents, *, jaxpr, mesh_axes, axis_size, in_axes, out_axes, **params):
    nonzeros = [not is_zero(t) for t in tangents]
    with axis_frame(mesh_axes):
        jvp_closed, out_nonzero = ad.jvp_jaxpr(jaxpr, nonzeros)
    nz_axes = tuple(ax for ax, nz in zip(in_axes, nonzeros) if nz)
    t_out_axes = tuple(ax for ax, nz in zip(out_axes, out_nonzero) if nz)
    outs = pmap_p.bind(
        *primals,
        *[t for t in tangents if not is_zero(t)],
        jaxpr=jvp_closed,
        mesh_axes=mesh_axes,
        axis_size=axis_size,
        in_axes=tuple(in_axes) + nz_axes,
        out_axes=tuple(out_axes) + t_out_axes,
        **params,
    )
    n_out = len(jaxpr.out_avals)
    out_p, nz_t = outs[:n_out], iter(outs[n_out:])
    global_avals = _pmap_abstract_eval(
        *[get_aval(p) for p in primals],
        jaxpr=jaxpr,
        mesh_axes=mesh_axes,
        axis_size=axis_size,
        in_axes=in_axes,
        out_axes=out_axes,
        **params,
    )
    out_t = [next(nz_t) if nz else Zero(tangent_aval(a)) for a, nz in zip(global_avals, out_nonzero)]
    return out_p, out_t


pmap_p.jvp = _pmap_jvp


# ------------------------------------------------------------------------------------------------
# Partial evaluation: the known part runs now, its residuals stacked along axis 0 per device.


def _pmap_partial_eval(trace, args, params):
    jaxpr, mesh_axes = params["jaxpr"], params["mesh_axes"]
    in_axes, out_axes = params["in_axes"], params["out_axes"]
    unknowns = [trace._owns(x) for x in args]
    with axis_frame(mesh_axes):
        known_jaxpr, unknown_jaxpr, out_unknowns, num_res = partial_eval_jaxpr(jaxpr, unknowns)
    known_out_axes = tuple(ax for ax, u in zip(out_axes, out_unknowns) if not u) + (0,) * num_res
    known_args = [x for x, u in zip(args, unknowns) if not u]
    with _trace.set_current_trace(trace.parent):
        known_outs = pmap_p.bind(
            *known_args,
            **{
                **params,
                "jaxpr": known_jaxpr,
                "in_axes": tuple(ax for ax, u in zip(in_axes, unknowns) if not u),
                "out_axes": known_out_axes,
            },
        )
    n_known = len(known_outs) - num_res
    known_vals, residuals = known_outs[:n_known], known_outs[n_known:]
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    unknown_params = {
        **params,
        "jaxpr": unknown_jaxpr,
        "in_axes": (0,) * num_res + tuple(ax for ax, u in zip(in_axes, unknowns) if u),
        "out_axes": tuple(ax for ax, u in zip(out_axes, out_unknowns) if u),
    }
    staged = StagingTrace.process_primitive(trace, pmap_p, list(residuals) + unknown_args, unknown_params)
    known_it, staged_it = iter(known_vals), iter(staged)
    return [next(staged_it) if u else next(known_it) for u in out_unknowns]


pmap_p.partial_eval = _pmap_partial_eval


# ------------------------------------------------------------------------------------------------
# Transposition: each device transposes its body; a cotangent of an input all devices shared is
# the sum of theirs. An output taken from the first device (out_axes None) sends its cotangent
# back to that device only.


def _transposed_body(jaxpr, mesh_axes, axis_size, known, linear, ct_nonzero):
    inner = jaxpr.jaxpr
    new = Jaxpr(
        inner.constvars + [inner.invars[i] for i in known],
        [inner.invars[i] for i in linear],
        inner.outvars,
        inner.eqns,
    )
    n_known = len(known)

    def fun(*vals):
        cts_in = iter(vals[n_known:])
        cts = [next(cts_in) if nz else Zero(a) for a, nz in zip(jaxpr.out_avals, ct_nonzero)]
        closed = ClosedJaxpr(new, list(jaxpr.consts) + list(vals[:n_known]))
        res = ad.backward_pass(closed, cts)
        return [
            instantiate(Zero(jaxpr.in_avals[i])) if ct is None else instantiate(ct)
            for i, ct in zip(linear, res)
        ]

    avals = [jaxpr.in_avals[i] for i in known] + [a for a, nz in zip(jaxpr.out_avals, ct_nonzero) if nz]
    with axis_frame(mesh_axes):
        return trace_to_jaxpr(fun, avals)


def _first_device_only(ct, axis_size):
    """`ct` on device 0 and zeros elsewhere, stacked along a new leading axis."""
    shape = tuple(ct.shape)
    full = broadcast_in_dim(ct, (axis_size,) + shape, tuple(range(1, len(shape) + 1)))
    onehot = np.zeros((axis_size,) + (1,) * len(shape), dtype=ct.dtype)
    onehot[0] = 1
    return mul(full, broadcast_in_dim(onehot, (axis_size,) + shape, tuple(range(len(shape) + 1))))


def _pmap_transpose(cts, *args, jaxpr, mesh_axes, axis_size, in_axes, out_axes, **params):
    known = [i for i, a in enumerate(args) if not is_undefined_primal(a)]
    linear = [i for i, a in enumerate(args) if is_undefined_primal(a)]
    ct_nonzero = tuple(not is_zero(ct) for ct in cts)
    key = ("pmap transpose", tuple(known), ct_nonzero, mesh_axes, axis_size)
    body = memoized(
        jaxpr, key, lambda: _transposed_body(jaxpr, mesh_axes, axis_size, known, linear, ct_nonzero)
    )
    ct_args, ct_axes = [], []
    for ct, ax in zip(cts, out_axes):
        if is_zero(ct):
            continue
        if ax is None:
            ct, ax = _first_device_only(ct, axis_size), 0
        ct_args.append(ct)
        ct_axes.append(ax)
    outs = pmap_p.bind(
        *[args[i] for i in known],
        *ct_args,
        jaxpr=body,
        mesh_axes=mesh_axes,
        axis_size=axis_size,
        in_axes=tuple(in_axes[i] for i in known) + tuple(ct_axes),
        out_axes=tuple(0 if in_axes[i] is None else in_axes[i] for i in linear),
        **params,
    )
    result = [None] * len(args)
    for i, ct in zip(linear, outs):
        if in_axes[i] is None:
            ct = reduce_sum(ct, (0,))
            want = args[i].aval.dtype
            if ct.dtype != want:
                ct = convert_element_type(ct, want)
        result[i] = ct
    return result


pmap_p.transpose = _pmap_transpose


# ------------------------------------------------------------------------------------------------
# Batching (vmap of pmap): the vmapped axis leads every batched value, on each device too.


def _pmap_batch(vals, dims, *, axis_data, jaxpr, mesh_axes, axis_size, in_axes, out_axes, **params):
    new_vals, new_in_axes, body_dims = [], [], []
    for v, d, ax in zip(vals, dims, in_axes):
        if d is None:
            new_vals.append(v)
            new_in_axes.append(ax)
            body_dims.append(None)
            continue
        # The unbatched view's axis `ax` is `ax + 1` once the batch axis is in front.
        new_vals.append(moveaxis(v, d, 0))
        new_in_axes.append(None if ax is None else ax + 1)
        body_dims.append(0)
    with axis_frame(mesh_axes):
        batched, out_batched = batch_jaxpr(jaxpr, axis_data, body_dims)
    new_out_axes = tuple((ax if ax is None else ax + 1) if b else ax for ax, b in zip(out_axes, out_batched))
    outs = pmap_p.bind(
        *new_vals,
        jaxpr=batched,
        mesh_axes=mesh_axes,
        axis_size=axis_size,
        in_axes=tuple(new_in_axes),
        out_axes=new_out_axes,
        **params,
    )
    return outs, [0 if b else None for b in out_batched]


pmap_p.batch = _pmap_batch
