"""vmap's trace: each value carries the axis along which it is batched (or none).

Rules move and merge batch axes and rewrite parameters (`prim.batch`, see prims/_batching.py);
values from outside the trace are unbatched. Collectives find the trace whose axis name they
mention through the `named_axes_param` a primitive declares. No primitive is named here.
"""

from __future__ import annotations

from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import Zero, is_zero
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import AxisData, bdim_to_front, moveaxis
from morphax._src.core.jaxpr import ClosedJaxpr, eval_jaxpr
from morphax._src.core.memo import memoized
from morphax._src.core.state_types import REF_CREATORS, AbstractRef
from morphax._src.core.trace import Tracer
from morphax._src.transforms.custom import SymbolicZero
from morphax._src.transforms.staging import trace_to_jaxpr


class MissingBatchRuleError(NotImplementedError):
    pass


class BatchTracer(Tracer):
    __slots__ = ("val", "batch_dim")

    def __init__(self, trace, val, batch_dim):
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim

    @property
    def aval(self):
        a = get_aval(self.val)
        if self.batch_dim is None:
            return a
        shape = a.shape[: self.batch_dim] + a.shape[self.batch_dim + 1 :]
        if type(a) is AbstractRef:  # a batched mutable array reference is a ref of one element
            return AbstractRef(ShapedArray(shape, a.dtype, a.weak_type))
        return ShapedArray(shape, a.dtype, a.weak_type)

    def to_concrete_value(self):
        return None

    def __repr__(self):
        return f"BatchTracer<{self.aval.str_short()}>(batch_dim={self.batch_dim})"


_trace.register_tracer_type(BatchTracer)


def _axis_names(params, prim):
    key = prim.named_axes_param
    if key is None:
        return ()
    names = params.get(key)
    if names is None:
        return ()
    return names if isinstance(names, tuple) else (names,)


class BatchTrace(_trace.Trace):
    def __init__(self, axis_data: AxisData):
        self.axis_data = axis_data

    def lift(self, x):
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.batch_dim
        if isinstance(x, Tracer):
            _trace.check_tracer_valid(x, self)
        return x, None

    def process_primitive(self, prim, args, params):
        vals, dims = [], []
        for x in args:
            v, d = self.lift(x)
            vals.append(v)
            dims.append(d)
        names = _axis_names(params, prim)
        mine = names and self.axis_data.name in names
        # A ref made inside vmap holds the whole batch (written with batched values later), so
        # its creation goes to the rule even from unbatched operands.
        if not mine and all(d is None for d in dims) and prim not in REF_CREATORS:
            with _trace.set_current_trace(self.parent):
                return prim.bind(*vals, **params)
        rule = prim.batch
        if rule is None:
            raise MissingBatchRuleError(
                f"Batching rule for '{prim.name}' not implemented: the primitive cannot be used under vmap."
            )
        with _trace.set_current_trace(self.parent):
            out, out_dims = rule(vals, dims, axis_data=self.axis_data, **params)
        if prim.multiple_results:
            return [BatchTracer(self, o, d) for o, d in zip(out, out_dims)]
        return BatchTracer(self, out, out_dims)

    # Custom-rule calls keep their rules: the function and its rule are batched as wholes and the
    # parent trace decides which to run.
    def process_custom_jvp_call(self, fun, jvp_rule, args, symbolic_zeros):
        vals, dims = zip(*[self.lift(x) for x in args]) if args else ((), ())
        with _trace.set_current_trace(self.parent):
            outs, out_dims = batch_custom_jvp_call(self.axis_data, fun, jvp_rule, vals, dims, symbolic_zeros)
        return outs if all(d is None for d in out_dims) else [BatchTracer(self, o, 0) for o in outs]

    def process_custom_vjp_call(self, fun, fwd, bwd, args, symbolic_zeros):
        vals, dims = zip(*[self.lift(x) for x in args]) if args else ((), ())
        with _trace.set_current_trace(self.parent):
            outs, out_dims = batch_custom_vjp_call(self.axis_data, fun, fwd, bwd, vals, dims, symbolic_zeros)
        return outs if all(d is None for d in out_dims) else [BatchTracer(self, o, 0) for o in outs]


def batch_custom_jvp_call(axis_data, fun, jvp_rule, vals, dims, symbolic_zeros):
    """Run a custom_jvp call on values batched along `dims` (None: unbatched) on the current
    trace: the function and its rule are batched as wholes, so the rule survives. Returns the
    outputs and their batch dims (all 0, or all None when no input is batched)."""
    if all(d is None for d in dims):
        outs = _call_custom_jvp(fun, jvp_rule, vals, symbolic_zeros)
        return outs, [None] * len(outs)
    # Unbatched operands stay unbatched (as in JAX): a rule or function that branches on one (a
    # cond on an unbatched predicate) must not see it broadcast along the batch.
    in_dims = [None if d is None else 0 for d in dims]
    vals = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    fun_b = batch_flat_fun(fun, axis_data, in_dims)

    def jvp_b(primals, tangents):
        n = len(primals)

        def joint(*xs):
            p_out, t_out = jvp_rule(list(xs[:n]), list(xs[n:]))
            return list(p_out) + list(t_out)

        # Primals arrive batched at axis 0 or unbatched, and tangents have their primals' shapes.
        outs = batch_flat_fun(joint, axis_data, in_dims + in_dims)(*primals, *tangents)
        half = len(outs) // 2
        return outs[:half], outs[half:]

    outs = _call_custom_jvp(fun_b, jvp_b, vals, symbolic_zeros)
    return outs, [0] * len(outs)


def batch_custom_vjp_call(axis_data, fun, fwd, bwd, vals, dims, symbolic_zeros):
    """The custom_vjp counterpart of `batch_custom_jvp_call`: fun, fwd and bwd batched as wholes.

    As in JAX, unbatched operands and residuals stay unbatched: a residual that the forward rule
    computes from unbatched values only (a Python bool, a closed-over constant) reaches the backward
    rule as it was, so a rule that branches on it in Python (equinox's `perturbed` flags) still can.
    """
    if all(d is None for d in dims):
        outs = _call_custom_vjp(fun, fwd, bwd, vals, symbolic_zeros)
        return outs, [None] * len(outs)
    size = axis_data.size
    in_dims = [None if d is None else 0 for d in dims]
    vals = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    fun_b = batch_flat_fun(fun, axis_data, in_dims)

    def fwd_b(*xs, perturbed=None):
        with _trace.new_trace(BatchTrace(axis_data)) as trace:
            ins = [v if d is None else BatchTracer(trace, v, d) for v, d in zip(xs, in_dims)]
            out, res, res_tree = fwd(*ins, perturbed=perturbed)
            out = [o if o is None or is_zero(o) else _move_out(*trace.lift(o), 0, size) for o in out]
            res = [trace.lift(r) for r in res]
        res_dims = tuple(None if d is None else 0 for _, d in res)
        res = [v if d is None else bdim_to_front(v, d, size) for v, d in res]
        # The residuals' batch dims travel with their tree, which reaches bwd_b unchanged.
        return out, res, (res_tree, res_dims)

    def bwd_b(res, res_tree_dims, cts):
        res_tree, res_dims = res_tree_dims

        def joint(*ys):
            return list(bwd(list(ys[: len(res)]), res_tree, list(ys[len(res) :])))

        return batch_flat_fun(joint, axis_data, list(res_dims) + [0] * len(cts))(*res, *cts)

    outs = _call_custom_vjp(fun_b, fwd_b, bwd_b, vals, symbolic_zeros)
    return outs, [0] * len(outs)


def _call_custom_jvp(fun, jvp_rule, vals, symbolic_zeros):
    trace = _trace.current_trace()
    handler = getattr(trace, "process_custom_jvp_call", None)
    return fun(*vals) if handler is None else handler(fun, jvp_rule, list(vals), symbolic_zeros)


def _call_custom_vjp(fun, fwd, bwd, vals, symbolic_zeros):
    trace = _trace.current_trace()
    handler = getattr(trace, "process_custom_vjp_call", None)
    return fun(*vals) if handler is None else handler(fun, fwd, bwd, list(vals), symbolic_zeros)


def batch_flat_fun(flat_fun, axis_data: AxisData, in_dims, out_dim=0):
    """`flat_fun` batched: inputs batched along `in_dims` (None: unbatched), outputs at `out_dim`."""

    def batched(*vals):
        with _trace.new_trace(BatchTrace(axis_data)) as trace:
            ins = [_batch_input(trace, v, d) for v, d in zip(vals, in_dims)]
            outs = flat_fun(*ins)
            result = []
            for o in outs:
                if o is None or is_zero(o):
                    result.append(o)  # "no cotangent" markers from custom rules pass through
                    continue
                v, d = trace.lift(o)
                result.append(_move_out(v, d, out_dim, axis_data.size))
        return result

    return batched


def _batch_input(trace, v, d):
    if d is None:
        return v
    if type(v) in (Zero, SymbolicZero):
        # A symbolic zero of the whole batch is the zero of one element, unbatched (as in JAX):
        # a custom rule sees the symbolic zero it would see without vmap.
        a = v.aval
        return type(v)(ShapedArray(a.shape[:d] + a.shape[d + 1 :], a.dtype, a.weak_type))
    return BatchTracer(trace, v, d)


def batch_jaxpr(closed: ClosedJaxpr, axis_data: AxisData, in_dims, instantiate=False):
    """`closed` as a jaxpr on inputs batched along `in_dims` (an axis each, None: unbatched).

    Returns (jaxpr, out_batched). Batched outputs come out at axis 0; an output marked in
    `instantiate` (a bool per output, or one for all) is batched, broadcast along the new axis,
    even where the computation leaves it unbatched. Every higher-order primitive batches its bodies
    with this; memoized on `closed` (core/memo.py), so a body batched again is the same jaxpr and
    keeps its compiled executables."""
    n_out = len(closed.out_avals)
    force = (bool(instantiate),) * n_out if isinstance(instantiate, bool) else tuple(map(bool, instantiate))
    in_dims = tuple(in_dims)
    key = ("batch", in_dims, force, axis_data.size, axis_data.name, axis_data.spmd_name)
    return memoized(closed, key, lambda: _batch_closed(closed, axis_data, in_dims, force))


def _batch_closed(closed, axis_data, in_dims, force):
    size = axis_data.size
    box = {}

    def fun(*vals):
        with _trace.new_trace(BatchTrace(axis_data)) as trace:
            ins = [v if d is None else BatchTracer(trace, v, d) for v, d in zip(vals, in_dims)]
            lifted = [trace.lift(o) for o in eval_jaxpr(closed.jaxpr, closed.consts, *ins)]
        box["out_batched"] = [d is not None or f for (_, d), f in zip(lifted, force)]
        return [bdim_to_front(v, d, size) if b else v for (v, d), b in zip(lifted, box["out_batched"])]

    in_avals = [
        a if d is None else a.update(shape=a.shape[:d] + (size,) + a.shape[d:])
        for a, d in zip(closed.in_avals, in_dims)
    ]
    return trace_to_jaxpr(fun, in_avals), box["out_batched"]


def _move_out(v, d, out_dim, size):
    if out_dim is None:
        return v
    v = bdim_to_front(v, d, size)
    return moveaxis(v, 0, out_dim) if out_dim != 0 else v


__all__ = [
    "BatchTrace",
    "batch_jaxpr",
    "BatchTracer",
    "MissingBatchRuleError",
    "batch_custom_jvp_call",
    "batch_custom_vjp_call",
    "batch_flat_fun",
]
