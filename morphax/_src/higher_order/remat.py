"""`checkpoint` / `remat`: a call primitive whose residuals are chosen by a policy, the `name`
primitive policies can see, the policies, and `saved_residuals` / `print_saved_residuals`.

When linearization splits a checkpointed body, only values the policy allows (and the inputs) are
saved; everything else is recomputed inside the staged (tangent) call, during the backward pass.
"""

from __future__ import annotations

import dataclasses
import functools
import weakref

from morphax._src import errors
from morphax._src.config import config
from morphax._src.core import pytree
from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import Zero, is_undefined_primal, is_zero
from morphax._src.core.avals import get_aval
from morphax._src.core.dtypes import is_python_scalar, python_scalar_dtype
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Literal, eval_jaxpr
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.trace import Tracer
from morphax._src.core.values import make_array
from morphax._src.higher_order.pjit import pjit_p
from morphax._src.passes._util import cache_get, cache_put, eqn_has_effects
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._spec import DTYPES_FOR_CLASS, Case, TestSpec, random_array
from morphax._src.prims.dot import dot_general_p
from morphax._src.transforms import ad
from morphax._src.transforms.batching import batch_jaxpr
from morphax._src.transforms.partial_eval import partial_eval_jaxpr
from morphax._src.transforms.staging import (
    StagingTrace,
    call_out_avals,
    eval_call_jaxpr,
    make_debug_info,
    trace_to_jaxpr,
)
from morphax._src.wrapping import wraps

__all__ = [
    "checkpoint",
    "checkpoint_name",
    "checkpoint_policies",
    "name_p",
    "print_saved_residuals",
    "remat",
    "remat_p",
    "saved_residuals",
]

# ------------------------------------------------------------------------------------ name


name_p = Primitive("name")
# The identity on its operand (the name only guides checkpoint policies).
name_p.kind = Kind.ELEMENTWISE
name_p.kernel_op = "name"
name_p.stablehlo = hlo.same_as_operand


def _name_jvp(primals, tangents, *, name):
    # Only the primal is named: policies choose among primal residuals.
    return name_p.bind(primals[0], name=name), tangents[0]


def _name_batch(vals, dims, *, axis_data, name):
    return name_p.bind(vals[0], name=name), dims[0]


name_p.impl = lambda x, *, name: x
name_p.abstract_eval = lambda aval, *, name: aval
name_p.jvp = _name_jvp
name_p.transpose = lambda ct, x, *, name: [ct]
name_p.batch = _name_batch
name_p.test_spec = TestSpec(
    cases=lambda rng: [
        Case((random_array(rng, shape, dt),), {"name": "a"}, f"{dt}{list(shape)}")
        for dt in DTYPES_FOR_CLASS["any"] + ("bfloat16",)
        for shape in ((), (3,), (2, 0), (1, 4))
    ]
)


def checkpoint_name(x, name):
    """Identity on `x` (a pytree of arrays) that tags its values with `name` for the policies."""
    return pytree.tree_map(functools.partial(name_p.bind, name=name), x)


# -------------------------------------------------------------------------------------- policies
# A policy is ``policy(prim, *in_avals, **params) -> bool``: may this equation's outputs be saved?
# It may also answer with JAX's markers: `Saveable`, `Recompute`, or `Offloadable(src, dst)`.


class _Marker:
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return self._name


Saveable = _Marker("Saveable")
Recompute = _Marker("Recompute")


class Offloadable:
    """A policy's answer: save the value, moved from memory kind `src` to `dst` between the
    forward and backward passes. NB: one memory space here; the value is saved where it is."""

    __slots__ = ("src", "dst")

    def __init__(self, src, dst):
        self.src, self.dst = src, dst

    def __repr__(self):
        return f"Offloadable(src={self.src!r}, dst={self.dst!r})"


def everything_saveable(*_, **__) -> bool:
    """Save every residual (as if there were no checkpoint)."""
    return True


def nothing_saveable(*_, **__) -> bool:
    """Save only the checkpointed function's inputs; recompute everything else (the default)."""
    return False


@dataclasses.dataclass(frozen=True)
class _DotsSaveable:
    only_if_no_batch_dims: bool

    def __call__(self, prim, *avals, **params):
        if prim is not dot_general_p:
            return False
        if not self.only_if_no_batch_dims:
            return True
        (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
        return not lhs_batch and not rhs_batch


dots_saveable = checkpoint_dots = _DotsSaveable(False)
dots_with_no_batch_dims_saveable = _DotsSaveable(True)


@dataclasses.dataclass(frozen=True)
class _SaveOnlyTheseNames:
    names: frozenset

    def __call__(self, prim, *_, **params):
        return prim is name_p and params["name"] in self.names


@dataclasses.dataclass(frozen=True)
class _SaveAnyNamesButThese:
    names: frozenset

    def __call__(self, prim, *_, **params):
        return prim is name_p and params["name"] not in self.names


def save_only_these_names(*names):
    """Save only values tagged by `checkpoint_name` with one of `names`."""
    return _SaveOnlyTheseNames(frozenset(names))


def save_any_names_but_these(*names):
    """Save every value tagged by `checkpoint_name`, except those tagged with one of `names`."""
    return _SaveAnyNamesButThese(frozenset(names))


@dataclasses.dataclass(frozen=True)
class _Either:
    first: object
    second: object

    def __call__(self, prim, *avals, **params):
        a, b = self.first(prim, *avals, **params), self.second(prim, *avals, **params)
        if not (isinstance(a, bool) and isinstance(b, bool)):
            raise ValueError(
                f"save_from_both_policies: the policies must return booleans, got {a!r} and {b!r}. "
                "Write a custom policy function directly instead of combining these."
            )
        return a or b


def save_from_both_policies(policy_1, policy_2):
    """A value is saveable when either policy allows it (logical OR)."""
    return _Either(policy_1, policy_2)


class _Policies:
    everything_saveable = staticmethod(everything_saveable)
    nothing_saveable = staticmethod(nothing_saveable)
    dots_saveable = checkpoint_dots = dots_saveable
    dots_with_no_batch_dims_saveable = checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable
    save_only_these_names = staticmethod(save_only_these_names)
    save_any_names_but_these = staticmethod(save_any_names_but_these)
    save_from_both_policies = staticmethod(save_from_both_policies)

    def __repr__(self):
        return "checkpoint_policies"


checkpoint_policies = _Policies()


def _saveable(policy, eqn) -> bool:
    answer = policy(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params)
    if answer is Recompute:
        return False
    return answer is Saveable or isinstance(answer, Offloadable) or bool(answer)


def _policy_key(policy):
    try:
        hash(policy)
        return policy
    except TypeError:
        return ("id", id(policy))


# --------------------------------------------------------------------------------- the primitive

remat_p = Primitive("remat2", multiple_results=True)
remat_p.api_name = "checkpoint"  # printed as JAX 0.10 prints it; errors name the API
remat_p.kind = Kind.CALL
remat_p.higher_order = True
remat_p.call_jaxpr_param = "jaxpr"
remat_p.keeps_call_boundary = True  # inlined, CSE would merge the recomputation with the forward pass
remat_p.test_spec = None


def _remat_impl(*args, jaxpr, prevent_cse, differentiated, policy):
    return eval_call_jaxpr(jaxpr, args)


def _remat_abstract_eval(*in_avals, jaxpr, prevent_cse, differentiated, policy):
    return call_out_avals("checkpoint", in_avals, jaxpr)


def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
    nonzeros = [not is_zero(t) for t in tangents]
    jvp_closed, out_nonzero = ad.jvp_jaxpr(jaxpr, nonzeros)
    outs = remat_p.bind(
        *primals,
        *[t for t in tangents if not is_zero(t)],
        jaxpr=jvp_closed,
        prevent_cse=prevent_cse,
        differentiated=differentiated,
        policy=policy,
    )
    n = len(jaxpr.out_avals)
    nz = iter(outs[n:])
    out_t = [next(nz) if z else Zero(ad.tangent_aval(a)) for a, z in zip(jaxpr.out_avals, out_nonzero)]
    return outs[:n], out_t


def _remat_batch(vals, dims, *, axis_data, jaxpr, **params):
    batched, out_batched = batch_jaxpr(jaxpr, axis_data, dims)
    return remat_p.bind(*vals, jaxpr=batched, **params), [0 if b else None for b in out_batched]


# --------------------------------------------------------------------------- partial evaluation


class _Plan:
    """How one (jaxpr, unknowns, policy) splits: `known` runs now (known inputs -> known outputs +
    saved residuals); `body` is staged (needed known inputs + saved residuals + unknown inputs ->
    unknown outputs), recomputing the residuals the policy did not let `known` save."""

    __slots__ = ("known", "n_known_out", "body_known_idx", "body", "out_unknowns")


def _live_eqns(eqns, targets):
    """The equations needed for the variables `targets` (and those with side effects), in order."""
    needed = {id(v) for v in targets if type(v) is not Literal}
    keep = []
    for eqn in reversed(eqns):
        if any(id(v) in needed for v in eqn.outvars) or eqn_has_effects(eqn):
            keep.append(eqn)
            needed.update(id(v) for v in eqn.invars if type(v) is not Literal)
    return keep[::-1]


def _make_plan(closed: ClosedJaxpr, unknowns, policy) -> _Plan:
    known_j, unknown_j, out_unknowns, num_res = partial_eval_jaxpr(closed, list(unknowns))
    kj = known_j.jaxpr
    n_known_out = len(kj.outvars) - num_res
    residuals = kj.outvars[n_known_out:]
    producer = {id(v): e for e in kj.eqns for v in e.outvars}

    # Walk back from the residuals: a value made by an equation the policy allows is saved; any
    # other is recomputed from its inputs, which are needed in turn (inputs and constants are
    # always available, so the walk stops there).
    needed = {id(v) for v in residuals if type(v) is not Literal and id(v) in producer}
    saved_ids, recompute_ids = set(), set()
    for eqn in reversed(kj.eqns):
        hit = [v for v in eqn.outvars if id(v) in needed]
        if not hit:
            continue
        if _saveable(policy, eqn):
            saved_ids.update(id(v) for v in hit)
        else:
            recompute_ids.add(id(eqn))
            needed.update(id(v) for v in eqn.invars if type(v) is not Literal and id(v) in producer)
    saved = [v for e in kj.eqns for v in e.outvars if id(v) in saved_ids]
    recompute = [e for e in kj.eqns if id(e) in recompute_ids]

    plan = _Plan()
    plan.out_unknowns = out_unknowns
    plan.n_known_out = n_known_out
    known_outs = kj.outvars[:n_known_out] + saved
    known = Jaxpr(kj.constvars, kj.invars, known_outs, _live_eqns(kj.eqns, known_outs))
    plan.known = ClosedJaxpr(known, known_j.consts)

    reads = {id(v) for e in recompute for v in e.invars} | {
        id(v) for v in residuals if type(v) is not Literal
    }
    plan.body_known_idx = [i for i, v in enumerate(kj.invars) if id(v) in reads]
    body_known_vars = [kj.invars[i] for i in plan.body_known_idx]
    n_k, n_s = len(body_known_vars), len(saved)

    def body(*ins):
        env = {id(v): c for v, c in zip(kj.constvars, known_j.consts)}
        env.update((id(v), x) for v, x in zip(body_known_vars, ins[:n_k]))
        env.update((id(v), x) for v, x in zip(saved, ins[n_k : n_k + n_s]))
        _eval_eqns(recompute, env)
        res = [_read(env, v) for v in residuals]
        return eval_jaxpr(unknown_j.jaxpr, unknown_j.consts, *res, *ins[n_k + n_s :])

    in_avals = [v.aval for v in body_known_vars] + [v.aval for v in saved] + unknown_j.in_avals[num_res:]
    plan.body = trace_to_jaxpr(body, in_avals)
    return plan


def _read(env, v):
    return v.val if type(v) is Literal else env[id(v)]


def _eval_eqns(eqns, env):
    for eqn in eqns:
        out = eqn.primitive.bind(*[_read(env, v) for v in eqn.invars], **eqn.params)
        outs = out if eqn.primitive.multiple_results else [out]
        env.update((id(v), o) for v, o in zip(eqn.outvars, outs))


def _remat_partial_eval(trace, args, params):
    jaxpr = params["jaxpr"]
    policy = params["policy"] or nothing_saveable
    unknowns = tuple(trace._owns(x) for x in args)
    key = (unknowns, _policy_key(policy))
    plan = cache_get("remat_pe", key, jaxpr)
    if plan is None:
        plan = cache_put("remat_pe", key, jaxpr, _make_plan(jaxpr, unknowns, policy))
    known_args = [x for x, u in zip(args, unknowns) if not u]
    with _trace.set_current_trace(trace.parent):
        known_outs = eval_jaxpr(plan.known.jaxpr, plan.known.consts, *known_args)
    known_vals, saved = known_outs[: plan.n_known_out], known_outs[plan.n_known_out :]
    staged_in = (
        [known_args[i] for i in plan.body_known_idx] + saved + [x for x, u in zip(args, unknowns) if u]
    )
    staged = StagingTrace.process_primitive(
        trace, remat_p, staged_in, {**params, "jaxpr": plan.body, "differentiated": True}
    )
    known_it, staged_it = iter(known_vals), iter(staged)
    return [next(staged_it) if u else next(known_it) for u in plan.out_unknowns]


# ---------------------------------------------------------------------------------- transposition


def _forward_then_backward(closed: ClosedJaxpr, args, cts):
    """Transpose a remat body that is linear in its `UndefinedPrimal` args but may also compute
    non-linearly from the known ones (the recomputed residuals): equations whose inputs are all
    known run forward first, then `backward_pass` transposes the rest."""
    jaxpr = closed.jaxpr
    env = {id(v): c for v, c in zip(jaxpr.constvars, closed.consts)}
    known_vars = list(jaxpr.constvars)
    for v, a in zip(jaxpr.invars, args):
        if not is_undefined_primal(a):
            env[id(v)] = a
            known_vars.append(v)
    linear_eqns = []
    for eqn in jaxpr.eqns:
        if all(type(v) is Literal or id(v) in env for v in eqn.invars):
            _eval_eqns([eqn], env)
            known_vars.extend(eqn.outvars)
        else:
            linear_eqns.append(eqn)
    linear_invars = [v for v, a in zip(jaxpr.invars, args) if is_undefined_primal(a)]
    linear = Jaxpr(known_vars, linear_invars, jaxpr.outvars, linear_eqns)
    return ad.backward_pass(ClosedJaxpr(linear, [env[id(v)] for v in known_vars]), cts)


def _transposed_jaxpr(closed: ClosedJaxpr, linear, ct_nonzero):
    """(known args, nonzero cotangents) -> nonzero input cotangents, as a jaxpr; and which of the
    linear inputs get a nonzero cotangent."""
    key = (linear, ct_nonzero)
    hit = cache_get("remat_transpose", key, closed)
    if hit is not None:
        return hit
    in_avals, out_avals = closed.in_avals, closed.out_avals
    known_avals = [a for a, lin in zip(in_avals, linear) if not lin]
    n_known = len(known_avals)
    box = {}

    def fun(*xs):
        known, nz_cts = iter(xs[:n_known]), iter(xs[n_known:])
        args = [ad.UndefinedPrimal(a) if lin else next(known) for a, lin in zip(in_avals, linear)]
        cts = [next(nz_cts) if nz else Zero(a) for a, nz in zip(out_avals, ct_nonzero)]
        outs = _forward_then_backward(closed, args, cts)
        box["nonzero"] = [not is_zero(o) for o in outs]
        return [o for o in outs if not is_zero(o)]

    ct_avals = [a for a, nz in zip(out_avals, ct_nonzero) if nz]
    out = trace_to_jaxpr(fun, known_avals + ct_avals)
    return cache_put("remat_transpose", key, closed, (out, box["nonzero"]))


def _remat_transpose(cts, *args, jaxpr, prevent_cse, differentiated, policy):
    linear = tuple(is_undefined_primal(a) for a in args)
    ct_nonzero = tuple(not is_zero(c) for c in cts)
    if not any(ct_nonzero):
        return [Zero(a.aval) if is_undefined_primal(a) else None for a in args]
    transposed, nonzero = _transposed_jaxpr(jaxpr, linear, ct_nonzero)
    # The transposed body is another remat call, so compiler passes never merge its recomputation
    # with the forward pass (what `prevent_cse` asks for).
    outs = remat_p.bind(
        *[a for a in args if not is_undefined_primal(a)],
        *[c for c in cts if not is_zero(c)],
        jaxpr=transposed,
        prevent_cse=prevent_cse,
        differentiated=True,
        policy=policy,
    )
    it, nz = iter(outs), iter(nonzero)
    result = []
    for a in args:
        if is_undefined_primal(a):
            result.append(next(it) if next(nz) else Zero(a.aval))
        else:
            result.append(None)
    return result


remat_p.impl = _remat_impl
remat_p.abstract_eval = _remat_abstract_eval
remat_p.jvp = _remat_jvp
remat_p.partial_eval = _remat_partial_eval
remat_p.transpose = _remat_transpose
remat_p.batch = _remat_batch
remat_p.call_jaxpr_param = "jaxpr"  # DCE and forwarding see through it (passes/dce.py)


# ----------------------------------------------------------------------------------------- API


class _Static:
    """A static argument in a cache key: by value when hashable, else by identity (kept alive)."""

    __slots__ = ("val", "hashable")

    def __init__(self, val):
        self.val = val
        try:
            hash(val)
            self.hashable = True
        except TypeError:
            self.hashable = False

    def __hash__(self):
        return hash(self.val) if self.hashable else id(self.val)

    def __eq__(self, other):
        if not isinstance(other, _Static):
            return False
        if self.hashable and other.hashable:
            return type(self.val) is type(other.val) and self.val == other.val
        return self.val is other.val


# fun -> {(in tree, avals, statics, tracing flags): (jaxpr, consts, out tree)}
_trace_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _normalize_static_argnums(static_argnums, nargs):
    if type(static_argnums) is int:
        static_argnums = (static_argnums,)
    elif not (type(static_argnums) is tuple and all(type(d) is int for d in static_argnums)):
        raise TypeError(
            "the `static_argnums` argument to `checkpoint` / `remat` must be an int or a tuple of ints, "
            f"but got value {static_argnums!r}"
        )
    if not all(-nargs <= d < nargs for d in static_argnums):
        raise ValueError(
            "the `static_argnums` argument to `checkpoint` / `remat` can only take integer values greater "
            "than or equal to `-len(args)` and less than `len(args)`, but got "
            f"{static_argnums}, while `len(args)` = {nargs}"
        )
    return frozenset(d % nargs for d in static_argnums)


def _as_array(x):
    if is_python_scalar(x):
        return make_array(x, python_scalar_dtype(x), weak_type=type(x) is not bool)
    return x


def _trace_body(fun, args, kwargs, static, static_names):
    """(closed jaxpr with its constants moved to leading inputs, constants, dynamic leaves, out tree)."""
    dyn = [x for i, x in enumerate(args) if i not in static]
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_names}
    static_kwargs = {k: v for k, v in kwargs.items() if k in static_names}
    leaves, in_tree = pytree.tree_flatten((dyn, dyn_kwargs))
    leaves = [_as_array(x) for x in leaves]
    avals = [get_aval(x) for x in leaves]
    statics = tuple(_Static(args[i]) for i in sorted(static))
    statics += tuple((k, _Static(v)) for k, v in sorted(static_kwargs.items()))
    key = (len(args), in_tree, tuple(avals), statics, config.trace_context())
    try:
        cache = _trace_caches.setdefault(fun, {})
    except TypeError:  # not weak-referenceable: trace every time
        cache = {}
    hit = cache.get(key)
    if hit is not None:
        return (*hit[:2], leaves, hit[2])
    store = {}

    def flat(*xs):
        d_args, d_kwargs = pytree.tree_unflatten(in_tree, list(xs))
        it = iter(d_args)
        full = [args[i] if i in static else next(it) for i in range(len(args))]
        out = fun(*full, **d_kwargs, **static_kwargs)
        out_leaves, store["tree"] = pytree.tree_flatten(out)
        return out_leaves

    dbg = make_debug_info(
        "checkpoint / remat", fun, args, kwargs, static_argnums=static, static_argnames=tuple(static_names)
    )
    try:
        closed = trace_to_jaxpr(flat, avals, debug_info=dbg)
    except (errors.ConcretizationTypeError, errors.TracerIntegerConversionError) as e:
        if e.args and isinstance(e.args[0], str) and "for checkpoint" in e.args[0]:
            e.args = (
                e.args[0] + "\n\nConsider using the `static_argnums` parameter of `checkpoint` / `remat` "
                "for the arguments Python control flow depends on: they are then Python values while "
                "tracing.",
            ) + e.args[1:]
        raise
    inner = closed.jaxpr
    # Closed-over values become explicit operands, so the jaxpr in the params holds no tracers.
    jaxpr = ClosedJaxpr(Jaxpr([], inner.constvars + inner.invars, inner.outvars, inner.eqns), [])
    consts = list(closed.consts)
    static_vals = [args[i] for i in static] + list(static_kwargs.values())
    if not any(isinstance(c, Tracer) for c in consts + static_vals):
        if len(cache) >= 64:
            cache.clear()
        cache[key] = (jaxpr, consts, store["tree"])
    return jaxpr, consts, leaves, store["tree"]


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=(), static_argnames=()):
    """Make `fun` recompute its intermediates in the backward pass instead of saving them.

    `policy(prim, *avals, **params) -> bool` says which intermediates may be saved anyway (see
    `checkpoint_policies`); the default saves only the inputs. `static_argnums` /
    `static_argnames` are passed as Python values (the function is traced per value).
    `prevent_cse` is accepted for compatibility: the recomputation always lives in its own call,
    which compiler passes never merge with the forward pass.
    """
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint: `policy` must be a callable or None, got {policy!r}")
    static_names = frozenset([static_argnames] if isinstance(static_argnames, str) else static_argnames)

    @wraps(fun)
    def fun_remat(*args, **kwargs):
        static = _normalize_static_argnums(static_argnums, len(args)) if static_argnums != () else frozenset()
        jaxpr, consts, leaves, out_tree = _trace_body(fun, args, kwargs, static, static_names)
        outs = remat_p.bind(
            *consts, *leaves, jaxpr=jaxpr, prevent_cse=prevent_cse, differentiated=False, policy=policy
        )
        return pytree.tree_unflatten(out_tree, outs)

    return fun_remat


def remat(fun, *, prevent_cse=True, policy=None, static_argnums=()):
    """Alias of `checkpoint`."""
    return checkpoint(fun, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums)


# ----------------------------------------------------------------------------- saved residuals


def saved_residuals(f, *args, **kwargs):
    """[(aval, description)] of the values `vjp(f, *args)` keeps for the backward pass."""
    leaves, in_tree = pytree.tree_flatten((args, kwargs))
    leaves = [_as_array(x) for x in leaves]
    dbg = make_debug_info("saved_residuals", f, args, kwargs)

    def outer(*xs):
        def flat(*ys):
            a, k = pytree.tree_unflatten(in_tree, list(ys))
            return pytree.tree_leaves(f(*a, **k))

        _, lin = ad.linearize_flat(flat, list(xs))
        return list(lin.jaxpr.consts)

    jaxpr = trace_to_jaxpr(outer, [get_aval(x) for x in leaves]).jaxpr
    res_ids = {id(v) for v in jaxpr.outvars if type(v) is not Literal}
    out = [(v.aval, "from a literal") for v in jaxpr.outvars if type(v) is Literal]
    out += [(v.aval, "from a constant") for v in jaxpr.constvars if id(v) in res_ids]
    names = dbg.arg_names or [None] * len(jaxpr.invars)
    for i, v in enumerate(jaxpr.invars):
        if id(v) in res_ids:
            name = names[i] if i < len(names) else None
            out.append(
                (v.aval, f"from the argument {name}" if name else f"from the argument at flattened index {i}")
            )
    for eqn in jaxpr.eqns:
        for v in eqn.outvars:
            if id(v) in res_ids:
                if eqn.primitive is name_p:
                    out.append((v.aval, f"named '{eqn.params['name']}'"))
                elif eqn.primitive is pjit_p:
                    out.append((v.aval, f"output of jitted function '{eqn.params['name']}'"))
                else:
                    out.append((v.aval, f"output of {eqn.primitive.name}"))
    return out


def print_saved_residuals(f, *args, **kwargs):
    """Print one line per residual `vjp(f, *args)` saves: its type and where it comes from."""
    for aval, src in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {src}")
