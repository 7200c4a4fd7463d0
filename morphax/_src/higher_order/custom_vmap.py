"""Functions with a user-defined batching rule: `custom_vmap`, `sequential_vmap` and the
`custom_vmap_call` primitive they bind.

Calling a custom_vmap function traces it to a jaxpr and binds one `custom_vmap_call` equation
holding that jaxpr (`call`) and the user's rule (`rule`). Evaluated, staged or compiled, the
equation runs its jaxpr; only its batching rule differs from a plain call: it hands the rule
the batch size, which arguments are batched (a pytree of bools shaped like the arguments) and
the arguments with their batch axes moved to the front, and takes the outputs back with the
batched-ness the rule reports. Its JVP is another `custom_vmap_call` whose jaxpr is the JVP of
`call` and whose rule is the JVP of the user's rule (so `vmap(jvp(f))` still uses the rule).
Reverse mode is not supported, as in JAX: the primal outputs of the JVP equation cannot be
split from its tangents. Combine with `custom_vjp` (outside) to give a function both rules.
"""

from __future__ import annotations

import functools
import inspect

from morphax._src.core import pytree
from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import instantiate
from morphax._src.core.avals import get_aval
from morphax._src.core.batch_axes import AxisData, bdim_to_front, moveaxis
from morphax._src.core.dtypes import is_python_scalar
from morphax._src.core.jaxpr import ClosedJaxpr
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.trace import Tracer
from morphax._src.core.values import is_concrete_array, make_array
from morphax._src.higher_order.loops import map as _lax_map
from morphax._src.transforms.ad import jvp_flat, jvp_jaxpr
from morphax._src.transforms.batching import BatchTrace, BatchTracer
from morphax._src.transforms.staging import (
    call_out_avals,
    closure_convert_tracers,
    eval_call_jaxpr,
    trace_to_jaxpr,
)

__all__ = ["custom_vmap", "custom_vmap_call_p", "sequential_vmap"]

custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True)
custom_vmap_call_p.kind = Kind.CALL
custom_vmap_call_p.higher_order = True
custom_vmap_call_p.call_jaxpr_param = "call"
custom_vmap_call_p.test_spec = None  # tests/transforms/test_custom_vmap.py covers it
custom_vmap_call_p.pp_leading_params = ("call",)


def _rule_name(rule) -> str:
    return getattr(rule, "__name__", "<unnamed rule>")


def _resolve_args(fun, name, args, kwargs):
    """The positional arguments of a call, as JAX resolves them: keywords bound to their
    positions and positional defaults applied; keyword-only arguments cannot be passed."""
    if not kwargs:
        return tuple(args)
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
        bound.apply_defaults()
        passed = [k for k in bound.kwargs if k in kwargs]
        if passed:
            raise TypeError(
                f"The following keyword arguments could not be resolved to positions: {', '.join(passed)}"
            )
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"The input arguments to the custom_vmap-decorated function {name} could not be resolved "
            f"to positional-only arguments. Binding failed with the error:\n{err}"
        ) from err
    return bound.args


# ----------------------------------------------------------------------------- the user's rule


class _ClosedRule:
    """The user's rule as the primitive calls it: ``rule(axis_size, in_batched, args)`` with
    `in_batched` and `args` shaped like the primitive's ``in_tree`` ((closed-over values,
    arguments)). The closed-over values, lifted out of the function because they are traced,
    are not the rule's to see: they must be unbatched (the rule reads them from its closure)."""

    def __init__(self, rule, name):
        functools.update_wrapper(self, rule)
        self.rule = rule
        self.fun_name = name

    def __call__(self, axis_size, in_batched, all_args):
        consts_batched, args_batched = in_batched
        if any(pytree.tree_leaves(consts_batched)):
            # NB: JAX fails an internal assertion here; the rule cannot see these values (it
            # closes over them itself), so they cannot be batched.
            raise ValueError(
                f"custom_vmap function {self.fun_name} closes over a value that is batched by an "
                f"enclosing vmap, which its rule ({_rule_name(self.rule)}) cannot see. Pass the value "
                "to the function as an argument instead, so that the rule receives it with its "
                "in_batched flag."
            )
        _, args = all_args
        return self.rule(axis_size, list(args_batched), *args)

    def __repr__(self):
        return repr(self.rule)

    __str__ = __repr__


def _check_rule_trees(rule, want, out_tree, batched_tree):
    if out_tree != batched_tree:
        raise ValueError(
            "structure of output value and output batching specification returned by custom vmap "
            f"rule ({_rule_name(rule)}) do not match.\nOutput values: {out_tree}\nBatching spec: {batched_tree}"
        )
    if out_tree != want:
        raise ValueError(
            f"structure of output returned by custom vmap rule ({_rule_name(rule)}) does not match that "
            f"of original custom-vmapped function.\nOriginal output: {want}\nRule output: {out_tree}"
        )


def _as_array(x, aval):
    if isinstance(x, Tracer) or is_concrete_array(x):
        return x
    return make_array(x, dtype=aval.dtype, weak_type=aval.weak_type)


def _call_rule(rule, axis_size, flat_batched, flat_args, in_tree, out_tree, out_avals, check_shapes=True):
    """Run `rule` on flat arguments (batched ones with their axis in front); returns the flat
    outputs and whether each is batched, checked against the function's output types."""
    args = pytree.tree_unflatten(in_tree, flat_args)
    in_batched = pytree.tree_unflatten(in_tree, list(flat_batched))
    res = rule(axis_size, in_batched, args)
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise TypeError(
            f"custom vmap rule ({_rule_name(rule)}) must return a pair (outputs, out_batched), got {res!r}"
        )
    out, out_batched = res
    flat_out, tree1 = pytree.tree_flatten(out)
    flat_batched_out, tree2 = pytree.tree_flatten(out_batched)
    _check_rule_trees(rule, out_tree, tree1, tree2)
    flat_out = [_as_array(o, a) for o, a in zip(flat_out, out_avals)]
    if not check_shapes:
        return flat_out, [bool(b) for b in flat_batched_out]
    for i, (o, b, a) in enumerate(zip(flat_out, flat_batched_out, out_avals)):
        # NB: JAX does not check the shapes a rule returns (a wrong one fails later, or not at
        # all); the function's own output types say what they must be.
        want = (axis_size, *a.shape) if b else tuple(a.shape)
        got = tuple(get_aval(o).shape)
        if got != want:
            raise ValueError(
                f"custom vmap rule ({_rule_name(rule)}) returned output {i} of shape {got}, marked "
                f"{'batched' if b else 'unbatched'}, but the function's output {i} has shape "
                f"{tuple(a.shape)} and the batch size is {axis_size}: expected shape {want}."
            )
    return flat_out, [bool(b) for b in flat_batched_out]


# ----------------------------------------------------------------------------- primitive rules


def _impl(*args, call, **_):
    return eval_call_jaxpr(call, args)


def _abstract_eval(*in_avals, call, **_):
    return call_out_avals("custom_vmap_call", in_avals, call)


def _batch(vals, dims, *, axis_data, call, rule, in_tree, out_tree):
    flat = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    outs, batched = _call_rule(
        rule, axis_data.size, [d is not None for d in dims], flat, in_tree, out_tree, call.out_avals
    )
    return outs, [0 if b else None for b in batched]


def _vmap_with_out_dims(flat_fun, axis_size, in_dims, vals):
    """`flat_fun` batched along `in_dims` (None: unbatched) at `axis_size`; returns the outputs
    and their batch dims (None where an output does not depend on a batched input)."""
    with _trace.new_trace(BatchTrace(AxisData(axis_size))) as trace:
        ins = [v if d is None else BatchTracer(trace, v, d) for v, d in zip(vals, in_dims)]
        lifted = [trace.lift(o) for o in flat_fun(*ins)]
    return [v for v, _ in lifted], [d for _, d in lifted]


def _jvp_rule(rule, n_in, n_out, in_tree, out_tree, out_avals):
    """The batching rule of the JVP equation, from the user's rule (JAX's construction): the rule
    batches along the axis both a primal and its tangent carry; an axis only one of them carries
    (a constant tangent, jacfwd's basis) is handled by an ordinary vmap of the rule's JVP."""

    def jvp_of_rule(axis_size, in_batched, all_args):
        ps_batched, ts_batched = in_batched
        flat_pb, flat_tb = pytree.tree_leaves(ps_batched), pytree.tree_leaves(ts_batched)
        primals, tangents = all_args
        flat_p, flat_t = pytree.tree_leaves(primals), pytree.tree_leaves(tangents)
        if any(pb and tb for pb, tb in zip(flat_pb, flat_tb)) and any(
            pb != tb for pb, tb in zip(flat_pb, flat_tb)
        ):
            # NB: JAX vmaps the rule's JVP over the one-sided axes here too, and the outputs
            # come back with two batch axes (the rule's and the vmap's are the same axis). The
            # unbatched partners are broadcast instead, so the rule batches the whole axis.
            flat_p = [
                p if pb or not tb else bdim_to_front(p, None, axis_size)
                for p, pb, tb in zip(flat_p, flat_pb, flat_tb)
            ]
            flat_t = [
                t if tb or not pb else bdim_to_front(t, None, axis_size)
                for t, pb, tb in zip(flat_t, flat_pb, flat_tb)
            ]
            flat_pb = flat_tb = [pb or tb for pb, tb in zip(flat_pb, flat_tb)]
        mutual = [pb and tb for pb, tb in zip(flat_pb, flat_tb)]
        extra_p = [0 if pb and not tb else None for pb, tb in zip(flat_pb, flat_tb)]
        extra_t = [0 if tb and not pb else None for pb, tb in zip(flat_pb, flat_tb)]
        out_mutual = []

        def rule_fun(*xs):
            # Inside the vmap over the one-sided axes a value's shape does not show whether it
            # carries the batch axis: shapes are checked below, on the way out.
            outs, batched = _call_rule(
                rule, axis_size, mutual, list(xs), in_tree, out_tree, out_avals, check_shapes=False
            )
            out_mutual.append(batched)
            return outs

        def jvp_fun(*ps_ts):
            out_p, out_t = jvp_flat(rule_fun, list(ps_ts[:n_in]), list(ps_ts[n_in:]))
            return list(out_p) + [instantiate(t) for t in out_t]

        outs, out_dims = _vmap_with_out_dims(jvp_fun, axis_size, extra_p + extra_t, flat_p + flat_t)
        outs = [o if d is None else moveaxis(o, d, 0) for o, d in zip(outs, out_dims)]
        mutual_out = out_mutual[-1]
        out_batched = [m or d is not None for m, d in zip(mutual_out + mutual_out, out_dims)]
        for i, (o, b, a) in enumerate(zip(outs, out_batched, list(out_avals) * 2)):
            want = (axis_size, *a.shape) if b else tuple(a.shape)
            if tuple(get_aval(o).shape) != want:
                raise ValueError(
                    f"custom vmap rule ({_rule_name(rule)}), called by the JVP of its function under "
                    f"vmap with in_batched {mutual}, marked output {i % n_out} "
                    f"{'batched' if mutual_out[i % n_out] else 'unbatched'} but returned shape "
                    f"{tuple(get_aval(o).shape)} where the function's output has shape {tuple(a.shape)} "
                    f"(batch size {axis_size}). A rule must mark unbatched the outputs it computes from "
                    "unbatched arguments only."
                )
        both = pytree.treedef_tuple((out_tree, out_tree))
        return pytree.tree_unflatten(both, outs), pytree.tree_unflatten(both, out_batched)

    jvp_of_rule.__name__ = "jvp_of_rule_rule"
    jvp_of_rule.__qualname__ = "custom_vmap_jvp.<locals>.jvp_of_rule_rule"
    return jvp_of_rule


def _jvp(primals, tangents, *, call, rule, in_tree, out_tree):
    tangents = [instantiate(t) for t in tangents]
    jvp_call, _ = jvp_jaxpr(call, [True] * len(primals), instantiate=True)
    n_out = len(call.out_avals)
    outs = custom_vmap_call_p.bind(
        *primals,
        *tangents,
        call=jvp_call,
        rule=_jvp_rule(rule, len(primals), n_out, in_tree, out_tree, call.out_avals),
        in_tree=pytree.treedef_tuple((in_tree, in_tree)),
        out_tree=pytree.treedef_tuple((out_tree, out_tree)),
    )
    return list(outs[:n_out]), list(outs[n_out:])


def _partial_eval(trace, args, params):
    # Linearization (grad, vjp, linearize) stages the JVP equation with known primals and
    # unknown tangents; its primal outputs would be unknown too.
    raise ValueError(
        "Linearization failed to produce known values for all output primals. This is typically "
        "caused by attempting to differentiate a function uses an operation that does not support "
        "reverse-mode autodiff: custom_vmap functions support forward mode (jvp) only; to give one "
        "a reverse-mode rule, wrap it in morphax.custom_vjp (outside the custom_vmap)."
    )


custom_vmap_call_p.impl = _impl
custom_vmap_call_p.abstract_eval = _abstract_eval
custom_vmap_call_p.batch = _batch
custom_vmap_call_p.jvp = _jvp
custom_vmap_call_p.partial_eval = _partial_eval


# ----------------------------------------------------------------------------- the decorators


class custom_vmap:
    """Wrap `fun` so that `vmap` batches it with a user rule (``@f.def_vmap``) instead of
    tracing its body. Outside vmap the function runs as is."""

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule = None

    def __getattr__(self, name):
        # A rule setter of the wrapped function (a custom_jvp's defjvp) shows through, as in JAX.
        if name.startswith("def") and "fun" in self.__dict__:
            return getattr(self.fun, name)
        raise AttributeError(f"'custom_vmap' object has no attribute {name!r}")

    def __get__(self, obj, objtype=None):
        # NB: JAX's custom_vmap does not bind as a method (`obj.f(x)` calls f(x)); this one
        # binds `obj` like a function would, as morphax's custom_jvp does.
        return self if obj is None else functools.partial(self, obj)

    def def_vmap(self, vmap_rule):
        """Set the batching rule: ``vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)``,
        where `in_batched` is a list with a pytree of bools per argument (True: that leaf carries
        the batch axis in front), and `out_batched` says the same of each output leaf. Returns
        `vmap_rule`."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "custom_vmap")
        args = _resolve_args(self.fun, name, args, kwargs)
        if not self.vmap_rule:
            raise AttributeError(
                f"No batching rule defined for custom_vmap function {name} using def_vmap: decorate a "
                f"rule with @{name}.def_vmap before calling it."
            )
        leaves, args_tree = pytree.tree_flatten(args)
        out_tree_box = []

        def flat_fun(*xs):
            out = self.fun(*pytree.tree_unflatten(args_tree, list(xs)))
            flat_out, tree = pytree.tree_flatten(out)
            out_tree_box.append(tree)
            return flat_out

        flat_fun.__name__ = name
        try:
            in_avals = [get_aval(x) for x in leaves]
        except TypeError as err:
            raise TypeError(
                f"custom_vmap function {name}: every argument leaf must be an array or a scalar ({err})"
            ) from None
        # Python scalars become weakly typed arrays, so a rule sees arrays (JAX: typed scalars).
        leaves = [
            make_array(x, dtype=a.dtype, weak_type=a.weak_type) if is_python_scalar(x) else x
            for x, a in zip(leaves, in_avals)
        ]
        closed = trace_to_jaxpr(flat_fun, in_avals)
        closed, lifted = closure_convert_tracers(closed)
        out_tree = out_tree_box[-1]
        in_tree = pytree.treedef_tuple((pytree.tree_structure(list(lifted)), args_tree))
        outs = custom_vmap_call_p.bind(
            *lifted,
            *leaves,
            call=ClosedJaxpr(closed.jaxpr, closed.consts),
            rule=_ClosedRule(self.vmap_rule, name),
            in_tree=in_tree,
            out_tree=out_tree,
        )
        return pytree.tree_unflatten(out_tree, list(outs))


def sequential_vmap(f):
    """A custom_vmap function whose batching rule runs `f` once per batch element, in a loop
    (`lax.map` over the batched arguments; unbatched ones are passed to every call as they are).
    For functions that do not batch (host callbacks, solvers written for one problem)."""
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        del axis_size
        args = list(args)
        mask = [pytree.tree_map(bool, b) for b in in_batched]
        if not any(pytree.tree_leaves(mask)):
            # NB: JAX's loop fails here ("scan got no values to scan over"); with nothing
            # batched (the JVP rule under vmap of a primal whose tangent is unbatched) one call
            # gives the answer, unbatched. It calls the wrapped function itself: the rule may run
            # under a vmap of the axis only a primal carries, which must batch the body.
            out = f.fun(*args)
            return out, pytree.tree_map(lambda _: False, out)
        mapped = pytree.tree_map(lambda m, x: x if m else None, mask, args)
        fixed = pytree.tree_map(lambda m, x: None if m else x, mask, args)

        def one(mapped_args):
            merged = pytree.tree_map(lambda m, a, b: a if m else b, mask, mapped_args, fixed)
            return f(*merged)

        out = _lax_map(one, mapped)
        return out, pytree.tree_map(lambda _: True, out)

    return f
