"""checkify rules of the higher-order primitives: their bodies are checkified into jaxprs that take
and return the error's leaves, which travel as extra operands and results (`cond`, the `jit`
call, `checkpoint`, the custom-derivative calls) or as extra loop carries (`scan`, `while`).

A loop carry and the outputs of the branches of a `cond` must have one type, so the incoming error
first gets a never-set slot for every kind of error the body can add (`_add_placeholder_effects`).
"""

from __future__ import annotations

from morphax._src.checkify.interpreter import (
    checkify_jaxpr,
    checkify_subjaxpr,
    error_checks,
    error_from_leaves,
    error_leaf_avals,
    merged_effects,
    placeholder_error,
)
from morphax._src.core import pytree
from morphax._src.core.ad_util import Zero, tangent_aval
from morphax._src.core.avals import get_aval
from morphax._src.core.memo import MISSING, memo_get, memo_put
from morphax._src.higher_order.conditionals import cond_p
from morphax._src.higher_order.custom_calls import custom_jvp_call_p, custom_vjp_call_p
from morphax._src.higher_order.pjit import pjit_p
from morphax._src.higher_order.remat import remat_p
from morphax._src.higher_order.scan import scan_p
from morphax._src.higher_order.while_loop import while_p
from morphax._src.transforms.staging import trace_to_jaxpr

__all__: list[str] = []


def _merged(error, enabled, closed, n_before=0):
    """`error` widened with a slot for each effect checkifying `closed` can add."""
    _, out_effects, _ = checkify_subjaxpr(closed, enabled, error.effects(), n_before)
    return error._add_placeholder_effects(merged_effects(error, out_effects))


def _with_metadata(error, *metadatas):
    merged = dict(error._metadata)
    for m in metadatas:
        merged.update(m)
    return merged


# ------------------------------------------------------------------------------------- calls


def _call_rule(prim, param):
    """The rule of a call primitive whose `param` holds the closed jaxpr it applies."""

    def rule(error, enabled, *args, **params):
        checked, out_effects, metadata = checkify_subjaxpr(params[param], enabled, error.effects())
        outs = prim.bind(*pytree.tree_leaves(error), *args, **{**params, param: checked})
        n_err = len(error_leaf_avals(out_effects))
        new = error_from_leaves(out_effects, _with_metadata(error, metadata), outs[:n_err])
        return new, outs[n_err:]

    return rule


error_checks[pjit_p] = _call_rule(pjit_p, "jaxpr")
error_checks[remat_p] = _call_rule(remat_p, "jaxpr")


# -------------------------------------------------------------------------------------- cond


def _cond_rule(error, enabled, index, *ops, branches, **params):
    effects = set()
    for b in branches:
        effects.update(checkify_subjaxpr(b, enabled, error.effects())[1])
    error = error._add_placeholder_effects(merged_effects(error, effects))
    merged = error.effects()
    checked = [checkify_subjaxpr(b, enabled, merged) for b in branches]
    outs = cond_p.bind(
        index, *pytree.tree_leaves(error), *ops, branches=tuple(c[0] for c in checked), **params
    )
    n_err = len(error_leaf_avals(merged))
    new = error_from_leaves(merged, _with_metadata(error, *(c[2] for c in checked)), outs[:n_err])
    return new, outs[n_err:]


error_checks[cond_p] = _cond_rule


# -------------------------------------------------------------------------------------- scan


def _scan_rule(error, enabled, *args, jaxpr, num_consts, num_carry, **params):
    consts, rest = args[:num_consts], args[num_consts:]
    error = _merged(error, enabled, jaxpr, num_consts)
    merged = error.effects()
    # The body takes (consts, error, carry, xs) and returns (error, carry, ys): the error is the
    # first carry.
    checked, _, metadata = checkify_subjaxpr(jaxpr, enabled, merged, num_consts)
    n_err = len(error_leaf_avals(merged))
    outs = scan_p.bind(
        *consts,
        *pytree.tree_leaves(error),
        *rest,
        jaxpr=checked,
        num_consts=num_consts,
        num_carry=num_carry + n_err,
        **params,
    )
    return error_from_leaves(merged, _with_metadata(error, metadata), outs[:n_err]), outs[n_err:]


error_checks[scan_p] = _scan_rule


# ------------------------------------------------------------------------------------- while


def _checked_while_parts(cond_jaxpr, body_jaxpr, enabled, effects, cond_nconsts, body_nconsts):
    """(cond, body, out effects, metadata): the cond takes (cond consts, error, carry) and returns
    the predicate alone; the body takes (cond consts, body consts, error, carry), runs the body
    and then the predicate on its result (whose checks guard the next iteration), and returns
    (error, carry). Memoized on the body jaxpr, holding the cond jaxpr it was built with."""
    key = ("checkify-while", id(cond_jaxpr), enabled, effects, cond_nconsts, body_nconsts)
    hit = memo_get(body_jaxpr, key)
    if hit is not MISSING and hit[0] is cond_jaxpr:
        return hit[1]
    err_avals = error_leaf_avals(effects)
    n_err = len(err_avals)
    in_tree = pytree.tree_structure(placeholder_error(effects))
    carry_avals = list(body_jaxpr.in_avals[body_nconsts:])
    cconst_avals = list(cond_jaxpr.in_avals[:cond_nconsts])
    bconst_avals = list(body_jaxpr.in_avals[:body_nconsts])
    box = {}

    def body(*xs):
        cconsts, bconsts = xs[:cond_nconsts], xs[cond_nconsts : cond_nconsts + body_nconsts]
        err = xs[cond_nconsts + body_nconsts : cond_nconsts + body_nconsts + n_err]
        carry = xs[cond_nconsts + body_nconsts + n_err :]
        error = pytree.tree_unflatten(in_tree, err)
        error, out = checkify_jaxpr(body_jaxpr, enabled, error, *bconsts, *carry)
        error, _ = checkify_jaxpr(cond_jaxpr, enabled, error, *cconsts, *out)
        box["effects"], box["metadata"] = error.effects(), dict(error._metadata)
        return [*pytree.tree_leaves(error), *out]

    def cond(*xs):
        cconsts, err, carry = (
            xs[:cond_nconsts],
            xs[cond_nconsts : cond_nconsts + n_err],
            xs[cond_nconsts + n_err :],
        )
        _, out = checkify_jaxpr(cond_jaxpr, enabled, pytree.tree_unflatten(in_tree, err), *cconsts, *carry)
        return out

    checked_body = trace_to_jaxpr(body, cconst_avals + bconst_avals + err_avals + carry_avals)
    checked_cond = trace_to_jaxpr(cond, cconst_avals + err_avals + carry_avals)
    parts = (checked_cond, checked_body, box["effects"], box["metadata"])
    memo_put(body_jaxpr, key, (cond_jaxpr, parts))
    return parts


# NB: JAX refuses checkify of a vmap of a while loop with a batched predicate; here vmap leaves
# the loop a scalar predicate (any element still running), so it is checkified like any other.
def _while_rule(error, enabled, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cconsts = args[:cond_nconsts]
    bconsts = args[cond_nconsts : cond_nconsts + body_nconsts]
    carry = args[cond_nconsts + body_nconsts :]
    # The predicate's first evaluation, before the loop.
    error, _ = checkify_jaxpr(cond_jaxpr, enabled, error, *cconsts, *carry)
    _, _, effects, _ = _checked_while_parts(
        cond_jaxpr, body_jaxpr, enabled, error.effects(), cond_nconsts, body_nconsts
    )
    error = error._add_placeholder_effects(merged_effects(error, effects))
    merged = error.effects()
    cond, body, _, metadata = _checked_while_parts(
        cond_jaxpr, body_jaxpr, enabled, merged, cond_nconsts, body_nconsts
    )
    outs = while_p.bind(
        *cconsts,
        *cconsts,
        *bconsts,
        *pytree.tree_leaves(error),
        *carry,
        cond_jaxpr=cond,
        body_jaxpr=body,
        cond_nconsts=cond_nconsts,
        body_nconsts=cond_nconsts + body_nconsts,
    )
    n_err = len(error_leaf_avals(merged))
    return error_from_leaves(merged, _with_metadata(error, metadata), outs[:n_err]), outs[n_err:]


error_checks[while_p] = _while_rule


# ------------------------------------------------------------------------ custom derivatives


def _zero_tangents(values):
    return [Zero(tangent_aval(get_aval(v))) for v in values]


def _custom_call_prelude(error, enabled, call_jaxpr, num_consts):
    error = _merged(error, enabled, call_jaxpr, num_consts)
    merged = error.effects()
    checked, _, metadata = checkify_subjaxpr(call_jaxpr, enabled, merged, num_consts)
    return error, merged, checked, metadata, len(error_leaf_avals(merged))


def _custom_jvp_rule(error, enabled, *args, call_jaxpr, jvp_jaxpr_fun, num_consts, **params):
    # The error travels as leading explicit arguments. The primal function is checkified; the
    # user's JVP rule is not (as in JAX): it passes the incoming error through, with zero
    # tangents, so checks inside a custom JVP rule need checkify of the JVP instead.
    error, merged, checked, metadata, n_err = _custom_call_prelude(error, enabled, call_jaxpr, num_consts)

    def jvp_rule(primals, tangents):
        errs = list(primals[:n_err])
        out, out_t = jvp_jaxpr_fun(list(primals[n_err:]), list(tangents[n_err:]))
        return [*errs, *out], [*_zero_tangents(errs), *out_t]

    consts, xs = args[:num_consts], args[num_consts:]
    outs = custom_jvp_call_p.bind(
        *consts,
        *pytree.tree_leaves(error),
        *xs,
        call_jaxpr=checked,
        jvp_jaxpr_fun=jvp_rule,
        num_consts=num_consts,
        **params,
    )
    return error_from_leaves(merged, _with_metadata(error, metadata), outs[:n_err]), outs[n_err:]


def _custom_vjp_rule(error, enabled, *args, call_jaxpr, fwd_jaxpr_thunk, bwd, num_consts, **params):
    # As for custom_jvp: the primal function is checkified, `fwd` and `bwd` pass the error by.
    error, merged, checked, metadata, n_err = _custom_call_prelude(error, enabled, call_jaxpr, num_consts)

    def fwd(*ys, perturbed=None):
        out, res, res_tree = fwd_jaxpr_thunk(
            *ys[n_err:], perturbed=None if perturbed is None else list(perturbed)[n_err:]
        )
        return [*ys[:n_err], *out], res, res_tree

    def bwd_rule(res, res_tree, cts):
        return [None] * n_err + list(bwd(res, res_tree, list(cts)[n_err:]))

    consts, xs = args[:num_consts], args[num_consts:]
    outs = custom_vjp_call_p.bind(
        *consts,
        *pytree.tree_leaves(error),
        *xs,
        call_jaxpr=checked,
        fwd_jaxpr_thunk=fwd,
        bwd=bwd_rule,
        num_consts=num_consts,
        **params,
    )
    return error_from_leaves(merged, _with_metadata(error, metadata), outs[:n_err]), outs[n_err:]


error_checks[custom_jvp_call_p] = _custom_jvp_rule
error_checks[custom_vjp_call_p] = _custom_vjp_rule
