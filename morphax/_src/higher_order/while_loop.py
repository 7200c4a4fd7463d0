"""`lax.while_loop` and the `while` primitive: cond and body are closed jaxprs traced once per call.

Rules: JVP carries tangents through the loop (forward-differentiable); partial evaluation runs the
known part of the loop and stages the whole loop for the unknown part; transposition raises JAX's
reverse-mode error; batching runs until every lane's predicate is false, freezing finished lanes.
"""

from __future__ import annotations

import inspect
import time

import numpy as np

from morphax._src.config import config
from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import Zero, instantiate, is_zero, tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import bdim_to_front, moveaxis
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Var, eval_jaxpr, jaxpr_as_fun, split_list
from morphax._src.core.loop_form import LoopForm
from morphax._src.core.memo import memoized
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.promotion import result_type
from morphax._src.core.values import make_array
from morphax._src.errors import ConcretizationTypeError
from morphax._src.higher_order.host_eval import (
    body_runner,
    host_rules,
    native_runner,
    one_equation,
    run_as_program,
)
from morphax._src.higher_order.trace_cache import cached_trace
from morphax._src.passes._util import eqn_has_effects
from morphax._src.passes.dce import dce_closed_jaxpr
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims import lax_api as lax
from morphax._src.transforms import ad
from morphax._src.transforms.batching import BatchTrace, BatchTracer, batch_jaxpr
from morphax._src.transforms.partial_eval import partial_eval_jaxpr
from morphax._src.transforms.staging import StagingTrace, trace_to_jaxpr

__all__ = ["while_loop", "while_p", "check_carry_type"]

while_p = Primitive("while", multiple_results=True)
while_p.stablehlo = hlo.while_loop
while_p.kind = Kind.LOOP
while_p.higher_order = True
while_p.test_spec = None

REVERSE_MODE_ERROR = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
    "start/stop values. Try using lax.scan, or using fori_loop with static start/stop."
)


# ------------------------------------------------------------------------------------ tracing


def _trace_fun(fun, in_tree, avals):
    """Trace `fun(carry)`; returns (jaxpr taking consts + carry leaves, consts, out tree).

    The closed-over constants become leading inputs, so tracers of enclosing transformations
    that the function captures are operands of the primitive, seen by its rules."""
    box = {}

    def flat(*leaves):
        out = fun(pytree.tree_unflatten(in_tree, list(leaves)))
        out_leaves, box["tree"] = pytree.tree_flatten(out)
        return out_leaves

    closed = trace_to_jaxpr(flat, avals)
    j = closed.jaxpr
    hoisted = ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns), [])
    return hoisted, list(closed.consts), box["tree"]


def _as_operand(x):
    # Python scalars enter as weakly typed arrays, so the carry has array types from the start.
    if _dtypes.is_python_scalar(x):
        return make_array(x, _dtypes.python_scalar_dtype(x), weak_type=type(x) is not bool)
    return x


def _typematch(a: ShapedArray, b: ShapedArray) -> bool:
    # JAX lets the weak type change across an iteration: only shape and dtype must agree.
    return a.shape == b.shape and a.dtype == b.dtype


def _carry_name(body_fun):
    try:
        params = list(inspect.signature(body_fun).parameters)
    except (TypeError, ValueError):
        return None
    return params[0] if params else None


def _structure_diffs(path, a, b):
    """(path, what a is, what b is, why they differ) for each structural difference."""
    if pytree.treedef_is_strict_leaf(pytree.tree_structure(a)) and pytree.treedef_is_strict_leaf(
        pytree.tree_structure(b)
    ):
        return
    if type(a) is not type(b):
        yield path, str(type(a)), str(type(b)), "their Python types differ"
        return
    if isinstance(a, (list, tuple)) and len(a) != len(b):
        n = type(a).__name__
        yield path, f"{n} of length {len(a)}", f"{n} of length {len(b)}", "the lengths do not match"
        return
    a_kids, a_meta = pytree.flatten_one_level_with_keys(a)
    b_kids, b_meta = pytree.flatten_one_level_with_keys(b)
    if len(a_kids) != len(b_kids):
        try:
            diff = " ".join(repr(k.key) for k in {k for k, _ in a_kids} ^ {k for k, _ in b_kids})
        except AttributeError:
            diff = ""

        def desc(t, n):
            return f"{type(t)} with {n} child{'ren' if n > 1 else ''}"

        why = "the numbers of children do not match"
        if diff:
            why += f", with the symmetric difference of key sets: {{{diff}}}"
        yield path, desc(a, len(a_kids)), desc(b, len(b_kids)), why
        return
    if a_meta != b_meta:
        yield (
            path,
            f"{type(a)} with pytree metadata {a_meta}",
            f"{type(b)} with pytree metadata {b_meta}",
            "the pytree node metadata does not match",
        )
        return
    for (k, x), (_, y) in zip(a_kids, b_kids):
        yield from _structure_diffs(path + (k,), x, y)


def _join_diffs(diffs):
    if len(diffs) == 1:
        return diffs[0][0].upper() + diffs[0][1:] + ".\n"
    return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


def _long(a: ShapedArray) -> str:
    # JAX's messages spell dtypes out (float32[3], not f32[3]).
    return f"{a.dtype.name}[{','.join(str(d) for d in a.shape)}]"


def check_carry_type(name, body_fun, in_tree, in_avals, out_tree, out_avals):
    """Raise a TypeError showing, leaf by leaf with paths, how the carry output differs from the
    input (structure first, then shape and dtype). `name` is e.g. "while_loop body"."""
    carry = _carry_name(body_fun)

    def component(path):
        if carry:
            return (
                f"the input carry component {carry}{pytree.keystr(path)}"
                if path
                else f"the input carry {carry}"
            )
        return f"the input carry at path {pytree.keystr(path)}" if path else "the input carry"

    if in_tree != out_tree:
        try:
            a = pytree.tree_unflatten(in_tree, in_avals)
            b = pytree.tree_unflatten(out_tree, out_avals)
            diffs = [
                f"{component(p)} is a {x} but the corresponding component of the carry output is a {y}, so {why}"
                for p, x, y, why in _structure_diffs((), a, b)
            ]
        except Exception:  # noqa: BLE001 - fall back to printing both structures
            diffs = None
        if diffs == []:
            return  # same structure, different aux data
        if diffs is None:
            differences = (
                f"the input tree structure is:\n{in_tree}\nthe output tree structure is:\n{out_tree}\n"
            )
        else:
            differences = _join_diffs(diffs)
        raise TypeError(
            f"{name} function carry input and carry output must have the same pytree structure, but they "
            f"differ:\n\n{differences}\nRevise the function so that the carry output has the same pytree "
            "structure as the carry input."
        )
    paths = [p for p, _ in pytree.tree_flatten_with_path(pytree.tree_unflatten(in_tree, in_avals))[0]]
    diffs = []
    for p, a, b in zip(paths, in_avals, out_avals):
        if _typematch(a, b):
            continue
        why = []
        if a.dtype != b.dtype:
            why.append("the dtypes do not match")
        if a.shape != b.shape:
            why.append("the shapes do not match")
        reason = why[0] if len(why) == 1 else ", ".join(why[:-1]) + ", and " + why[-1]
        diffs.append(
            f"{component(p)} has type {_long(a)} but the corresponding output carry component has "
            f"type {_long(b)}, so {reason}"
        )
    if diffs:
        raise TypeError(
            f"{name} function carry input and carry output must have equal types, but they differ:\n\n"
            f"{_join_diffs(diffs)}\nRevise the function so that all output types match the corresponding "
            "input types."
        )


def _promote_weak_inputs(vals, in_avals, out_avals):
    """Weakly typed init leaves take the type the body gives them (JAX retraces with these)."""
    changed = False
    vals = list(vals)
    for i, (a, b) in enumerate(zip(in_avals, out_avals)):
        if a.weak_type and a.shape == b.shape and a.dtype != b.dtype:
            vals[i] = lax.convert_element_type(vals[i], result_type(a, b))
            changed = True
    return vals, changed


def while_loop(cond_fun, body_fun, init_val):
    """Repeat ``val = body_fun(val)`` while ``cond_fun(val)``; returns the final ``val``.

    `init_val` may be any pytree; `body_fun` must return one of the same structure and types and
    `cond_fun` a boolean scalar. Differentiable in forward mode only (use `scan` for reverse)."""
    if config.disable_jit:
        try:
            val = pytree.tree_map(_as_operand, init_val)
            while cond_fun(val):
                val = body_fun(val)
            return val
        except ConcretizationTypeError:
            pass  # traced (e.g. under vmap): run the primitive instead
    leaves, in_tree = pytree.tree_flatten(init_val)
    leaves = [_as_operand(x) for x in leaves]

    def trace_both(leaves):
        avals = [get_aval(x) for x in leaves]
        cond, cond_consts, cond_tree = _trace_fun(cond_fun, in_tree, avals)
        if not pytree.treedef_is_leaf(cond_tree) or len(cond.out_avals) != 1:
            raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {cond_tree}.")
        pred = cond.out_avals[0]
        if pred.shape != () or pred.dtype != bool:
            raise TypeError(
                f"cond_fun must return a boolean scalar, but got output type(s) {cond.out_avals}."
            )
        body, body_consts, body_tree = _trace_fun(body_fun, in_tree, avals)
        return avals, cond, cond_consts, body, body_consts, body_tree

    def cached(leaves):
        key = (in_tree, tuple(get_aval(x) for x in leaves))
        return cached_trace((body_fun, cond_fun), key, lambda: trace_both(leaves), lambda r: r[2] + r[4])

    avals, cond, cond_consts, body, body_consts, body_tree = cached(leaves)
    if body_tree == in_tree:
        leaves, changed = _promote_weak_inputs(leaves, avals, body.out_avals)
        if changed:
            avals, cond, cond_consts, body, body_consts, body_tree = cached(leaves)
    check_carry_type("while_loop body", body_fun, in_tree, avals, body_tree, body.out_avals)
    outs = while_p.bind(
        *cond_consts,
        *body_consts,
        *leaves,
        cond_jaxpr=cond,
        body_jaxpr=body,
        cond_nconsts=len(cond_consts),
        body_nconsts=len(body_consts),
    )
    return pytree.tree_unflatten(in_tree, outs)


# ------------------------------------------------------------------------- impl and abstract eval


# How long a loop of an interim program runs on NumPy before it finishes natively (_while_host).
HANDOFF_SECONDS = 1.0


def _while_host(args, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """The loop on NumPy values, synchronously on the calling thread: it reads the predicate
    every iteration, possibly from inside a compiled call on the device stream, so it must not
    queue work behind itself (see host_eval.py)."""
    cc, bc, carry = split_list(args, cond_nconsts, body_nconsts)
    if not bool(body_runner(cond_jaxpr)(*cc, *carry)[0]):
        return carry
    # Each iteration is one compiled call: the body, then the predicate on its result.
    step = body_runner(_step_jaxpr(cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts))
    # In the interim NumPy program of a background build, a loop still running after
    # HANDOFF_SECONDS runs its remaining iterations as a native program of its own: a first
    # call of diffrax's 100000-step solve would otherwise take minutes of NumPy calls.
    native = native_runner()
    deadline = time.perf_counter() + HANDOFF_SECONDS if native is not None else None
    while True:
        *carry, again = step(*bc, *cc, *carry)
        if not bool(again):
            return carry
        if deadline is not None and time.perf_counter() > deadline:
            deadline = None
            params = dict(
                cond_jaxpr=cond_jaxpr,
                body_jaxpr=body_jaxpr,
                cond_nconsts=cond_nconsts,
                body_nconsts=body_nconsts,
            )
            rest = [*cc, *bc, *carry]
            in_avals = [ShapedArray(np.shape(v), np.asarray(v).dtype) for v in rest]
            loop = native(one_equation(while_p, in_avals, body_jaxpr.out_avals, params))
            if loop is not None:
                return loop(*rest)


def _step_jaxpr(cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts) -> ClosedJaxpr:
    """(body consts, cond consts, carry) -> (body(carry)..., cond(body(carry))), memoized on the
    body jaxpr (the entry keeps the cond jaxpr alive, so its id in the key stays unique)."""

    def build():
        body, cond = jaxpr_as_fun(body_jaxpr), jaxpr_as_fun(cond_jaxpr)

        def step(*args):
            bc, cc, carry = split_list(list(args), body_nconsts, cond_nconsts)
            new = body(*bc, *carry)
            return [*new, cond(*cc, *new)[0]]

        in_avals = [
            *body_jaxpr.in_avals[:body_nconsts],
            *cond_jaxpr.in_avals[:cond_nconsts],
            *body_jaxpr.out_avals,
        ]
        return cond_jaxpr, trace_to_jaxpr(step, in_avals)

    return memoized(body_jaxpr, ("while_step", id(cond_jaxpr), cond_nconsts), build)[1]


host_rules[while_p] = _while_host


def _while_loop_form(*, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    # Operands: cond consts, body consts, carry. The step body takes (body consts, cond consts,
    # carry) and returns (new carry, predicate on it).
    n_carry = len(body_jaxpr.out_avals)
    carry = tuple(("carry", c) for c in range(n_carry))
    cond_in = (*[("operand", k) for k in range(cond_nconsts)], *carry)
    step_in = (
        *[("operand", cond_nconsts + k) for k in range(body_nconsts)],
        *[("operand", k) for k in range(cond_nconsts)],
        *carry,
    )
    return LoopForm(
        "while",
        (cond_jaxpr, _step_jaxpr(cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts)),
        (cond_in, step_in),
        ((("pred", 0),), (*carry, ("pred", 0))),
        carry_init=tuple(range(cond_nconsts + body_nconsts, cond_nconsts + body_nconsts + n_carry)),
        carry_final=tuple(range(n_carry)),
    )


while_p.loop_form = _while_loop_form


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    # The carry's types are the body's output types; consts take their jaxprs' input types.
    in_avals = cond_jaxpr.in_avals[:cond_nconsts] + body_jaxpr.in_avals
    params = dict(
        cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=cond_nconsts, body_nconsts=body_nconsts
    )
    return run_as_program(while_p, args, in_avals, body_jaxpr.out_avals, params)


def _types(avals):
    return [a.str_short() for a in avals]


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, carry = split_list(avals, cond_nconsts, body_nconsts)
    checks = [
        ("cond_jaxpr inputs", cond_jaxpr.in_avals, cc + carry),
        ("body_jaxpr inputs", body_jaxpr.in_avals, bc + carry),
        ("body_jaxpr outputs", body_jaxpr.out_avals, carry),
    ]
    for what, want, got in checks:
        if len(want) != len(got) or not all(_typematch(a, b) for a, b in zip(want, got)):
            raise TypeError(f"while: {what} have types {_types(want)} but the operands give {_types(got)}")
    if [(a.shape, a.dtype) for a in cond_jaxpr.out_avals] != [((), bool)]:
        raise TypeError(f"while: cond_jaxpr must return one bool[], got {_types(cond_jaxpr.out_avals)}")
    return list(body_jaxpr.out_avals)


while_p.impl = _while_impl
while_p.abstract_eval = _while_abstract_eval


# ------------------------------------------------------------------------------------------- JVP


def _nonzero(t) -> bool:
    # Integer carries have float0 tangents: they never flow, whatever the tangent holds.
    return not is_zero(t) and get_aval(t).dtype != _dtypes.float0


def _tan(a: ShapedArray) -> ShapedArray:
    # Tangents keep their primal's weak type (as JAX's tangent avals do), so the types agree.
    return tangent_aval(a).update(weak_type=a.weak_type)


def _jvp_body(body, nb, bc_nz, carry_nz):
    """(body consts, their nonzero tangents, carry, its nonzero tangents) -> (carry, tangents of the
    carries in `carry_nz`, zeros where the body gives none). Also returns which outputs had
    nonzero tangents, for the fixed point."""
    bc_avals, carry_avals = split_list(body.in_avals, nb)
    bct_avals = [_tan(a) for a, nz in zip(bc_avals, bc_nz) if nz]
    ct_avals = [_tan(a) for a, nz in zip(carry_avals, carry_nz) if nz]
    box = {}

    def fill(nzs, given, avals):
        it = iter(given)
        return [next(it) if nz else Zero(tangent_aval(a)) for nz, a in zip(nzs, avals)]

    def fun(*args):
        bc, bct, carry, ct = split_list(args, nb, len(bct_avals), len(carry_avals))
        tangents = fill(bc_nz, bct, bc_avals) + fill(carry_nz, ct, carry_avals)
        out_p, out_t = ad.jvp_flat(lambda *xs: eval_jaxpr(body.jaxpr, body.consts, *xs), bc + carry, tangents)
        box["out_nz"] = [_nonzero(t) for t in out_t]
        kept = [
            t if _nonzero(t) else instantiate(Zero(_tan(a)))
            for t, a, nz in zip(out_t, carry_avals, carry_nz)
            if nz
        ]
        return list(out_p) + kept

    closed = trace_to_jaxpr(fun, list(bc_avals) + bct_avals + list(carry_avals) + ct_avals)
    return closed, box["out_nz"]


def _with_ignored_inputs(closed: ClosedJaxpr, avals):
    """`closed` taking extra trailing inputs (of `avals`) that it does not read."""
    j = closed.jaxpr
    return ClosedJaxpr(
        Jaxpr(j.constvars, j.invars + [Var(a) for a in avals], j.outvars, j.eqns), closed.consts
    )


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cc, bc, carry = split_list(primals, nc, nb)
    _, bct, ct = split_list(tangents, nc, nb)  # the predicate has no tangent: cond consts' are dropped
    bc_nz = [_nonzero(t) for t in bct]
    carry_nz = [_nonzero(t) for t in ct]
    # Fixed point: a carry whose tangent becomes nonzero after one iteration carries one throughout.
    while True:
        body, out_nz = _jvp_body(body_jaxpr, nb, bc_nz, carry_nz)
        grown = [a or b for a, b in zip(carry_nz, out_nz)]
        if grown == carry_nz:
            break
        carry_nz = grown
    params = dict(cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=nc, body_nconsts=nb)
    if not any(carry_nz):
        outs = while_p.bind(*primals, **params)
        return outs, [Zero(tangent_aval(a)) for a in body_jaxpr.out_avals]
    bct_nz = [t for t, nz in zip(bct, bc_nz) if nz]
    carry_avals = body_jaxpr.in_avals[nb:]
    ct_nz = [
        t if _nonzero(t) else instantiate(Zero(_tan(a))) for t, a, nz in zip(ct, carry_avals, carry_nz) if nz
    ]
    ct_avals = [_tan(a) for a, nz in zip(carry_avals, carry_nz) if nz]
    cond = _with_ignored_inputs(cond_jaxpr, ct_avals)
    outs = while_p.bind(
        *cc,
        *bc,
        *bct_nz,
        *carry,
        *ct_nz,
        cond_jaxpr=cond,
        body_jaxpr=body,
        cond_nconsts=nc,
        body_nconsts=nb + len(bct_nz),
    )
    out_p, out_t = split_list(outs, len(carry))
    it = iter(out_t)
    return out_p, [next(it) if nz else Zero(tangent_aval(a)) for nz, a in zip(carry_nz, body_jaxpr.out_avals)]


while_p.jvp = _while_jvp


# -------------------------------------------------------------------- partial eval and transpose


def _keep_outputs(closed: ClosedJaxpr, keep):
    j = closed.jaxpr
    outvars = [v for v, k in zip(j.outvars, keep) if k]
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, outvars, j.eqns), closed.consts)


def _while_partial_eval(trace, args, params):
    """Known carries come from a loop over the known part of the body, run now. The unknown ones
    come from the whole loop, staged (it recomputes the known part: JAX does the same), whose
    transposition is the reverse-mode error."""
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    cond, body = params["cond_jaxpr"], params["body_jaxpr"]
    cc_uk, bc_uk, carry_uk = split_list([trace._owns(x) for x in args], nc, nb)
    while True:
        body_known, _, out_uk, _ = partial_eval_jaxpr(body, bc_uk + carry_uk)
        grown = [a or b for a, b in zip(carry_uk, out_uk)]
        if grown == carry_uk:
            break
        carry_uk = grown
    if all(carry_uk):
        return StagingTrace.process_primitive(trace, while_p, args, params)
    cond_known, _, pred_uk, _ = partial_eval_jaxpr(cond, cc_uk + carry_uk)
    if pred_uk[0]:
        return StagingTrace.process_primitive(trace, while_p, args, params)
    # The known body's outputs are its known outputs (then residuals): keep the known carries.
    known_out_carry = [uk for uk, o in zip(carry_uk, out_uk) if not o]
    body_known = _keep_outputs(
        body_known,
        [not uk for uk in known_out_carry] + [False] * (len(body_known.out_avals) - len(known_out_carry)),
    )
    cond_known = _keep_outputs(cond_known, [True] + [False] * (len(cond_known.out_avals) - 1))
    cc, bc, carry = split_list(args, nc, nb)
    known_cc = [x for x, u in zip(cc, cc_uk) if not u]
    known_bc = [x for x, u in zip(bc, bc_uk) if not u]
    with _trace.set_current_trace(trace.parent):
        known = while_p.bind(
            *known_cc,
            *known_bc,
            *[x for x, u in zip(carry, carry_uk) if not u],
            cond_jaxpr=cond_known,
            body_jaxpr=body_known,
            cond_nconsts=len(known_cc),
            body_nconsts=len(known_bc),
        )
    staged = StagingTrace.process_primitive(trace, while_p, args, params)
    known_it = iter(known)
    return [s if uk else next(known_it) for s, uk in zip(staged, carry_uk)]


def _while_transpose(cts, *args, **params):
    raise ValueError(REVERSE_MODE_ERROR)


while_p.partial_eval = _while_partial_eval
while_p.transpose = _while_transpose


# -------------------------------------------------------------------------------------- batching


def _frozen_lanes_jaxprs(cond_jaxpr, body_jaxpr, axis_data, nc, nb, cc_b, bc_b):
    """For a batched predicate: a cond that is true while any lane is, and a body (taking the cond
    consts too) that steps only the lanes whose own predicate is true. Every carry is batched."""
    size = axis_data.size
    n_carry = len(body_jaxpr.out_avals)

    def batched(a):
        return a.update(shape=(size,) + a.shape)

    cc_avals = [batched(a) if b else a for a, b in zip(cond_jaxpr.in_avals[:nc], cc_b)]
    bc_avals = [batched(a) if b else a for a, b in zip(body_jaxpr.in_avals[:nb], bc_b)]
    carry_avals = [batched(a) for a in body_jaxpr.in_avals[nb:]]

    def any_lane(*vals):
        cc, carry = split_list(vals, nc)
        with _trace.new_trace(BatchTrace(axis_data)) as t:
            ins = [BatchTracer(t, v, 0) if b else v for v, b in zip(cc, cc_b)]
            ins += [BatchTracer(t, v, 0) for v in carry]
            (pred,) = eval_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, *ins)
            pred, d = t.lift(pred)
        return [lax.reduce_or(bdim_to_front(pred, d, size), axes=(0,))]

    def step_live_lanes(*vals):
        cc, bc, carry = split_list(vals, nc, nb)
        with _trace.new_trace(BatchTrace(axis_data)) as t:
            cc = [BatchTracer(t, v, 0) if b else v for v, b in zip(cc, cc_b)]
            bc = [BatchTracer(t, v, 0) if b else v for v, b in zip(bc, bc_b)]
            carry = [BatchTracer(t, v, 0) for v in carry]
            (pred,) = eval_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, *cc, *carry)
            new = eval_jaxpr(body_jaxpr.jaxpr, body_jaxpr.consts, *bc, *carry)
            outs = [lax.select_n(pred, old, nw) for old, nw in zip(carry, new)]
            lifted = [t.lift(o) for o in outs]
        return [bdim_to_front(v, d, size) for v, d in lifted]

    cond = trace_to_jaxpr(any_lane, cc_avals + carry_avals)
    body = trace_to_jaxpr(step_live_lanes, cc_avals + bc_avals + carry_avals)
    assert len(body.out_avals) == n_carry
    return cond, body


def _while_batch(vals, dims, *, axis_data, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    size = axis_data.size
    vals = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    cc, bc, carry = split_list(vals, nc, nb)
    cc_b, bc_b, carry_b = split_list([d is not None for d in dims], nc, nb)
    # Fixed point: a carry the body makes batched is batched from the start.
    while True:
        body, out_b = batch_jaxpr(body_jaxpr, axis_data, [0 if b else None for b in bc_b + carry_b], carry_b)
        grown = [a or b for a, b in zip(carry_b, out_b)]
        if grown == carry_b:
            break
        carry_b = grown
    cond, (pred_b,) = batch_jaxpr(cond_jaxpr, axis_data, [0 if b else None for b in cc_b + carry_b])
    if not pred_b:
        carry = [
            bdim_to_front(v, None, size) if b and d is None else v
            for v, b, d in zip(carry, carry_b, dims[nc + nb :])
        ]
        outs = while_p.bind(
            *cc, *bc, *carry, cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=nc, body_nconsts=nb
        )
        return outs, [0 if b else None for b in carry_b]
    # Lanes finish at different iterations: loop while any lane runs, freezing the finished ones.
    cond, body = _frozen_lanes_jaxprs(cond_jaxpr, body_jaxpr, axis_data, nc, nb, cc_b, bc_b)
    carry = [v if d is not None else bdim_to_front(v, None, size) for v, d in zip(carry, dims[nc + nb :])]
    outs = while_p.bind(
        *cc, *cc, *bc, *carry, cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=nc, body_nconsts=nc + nb
    )
    return outs, [0] * len(carry)


while_p.batch = _while_batch


# ------------------------------------------------------------------------------------------- DCE


def _restrict(closed: ClosedJaxpr, used_outputs, keep_inputs):
    """`closed` with only the used outputs and the kept inputs (the dropped ones must be unread)."""
    res, _ = dce_closed_jaxpr(closed, used_outputs, prune_invars=False)
    j = res.closed.jaxpr
    invars = [v for v, k in zip(closed.jaxpr.invars, keep_inputs) if k]
    return ClosedJaxpr(Jaxpr(j.constvars, invars, j.outvars, j.eqns), res.closed.consts)


def _while_dce_rule(used_outputs, eqn):
    """Drop carries that no used output, the predicate, or a kept carry depends on."""
    if eqn_has_effects(eqn):
        return [True] * len(eqn.invars), eqn
    if not any(used_outputs):
        return [False] * len(eqn.invars), None
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cond, body = p["cond_jaxpr"], p["body_jaxpr"]
    _, cond_reads = dce_closed_jaxpr(cond, [True], prune_invars=True)
    cc_used, cond_carry = split_list(cond_reads, nc)
    used = [a or b for a, b in zip(used_outputs, cond_carry)]
    while True:
        _, body_reads = dce_closed_jaxpr(body, used, prune_invars=True)
        bc_used, body_carry = split_list(body_reads, nb)
        grown = [a or b for a, b in zip(used, body_carry)]
        if grown == used:
            break
        used = grown
    if all(used) and all(cc_used) and all(bc_used):
        return [True] * len(eqn.invars), eqn
    new_cond = _restrict(cond, [True], cc_used + used)
    new_body = _restrict(body, used, bc_used + used)
    cc_v, bc_v, carry_v = split_list(eqn.invars, nc, nb)
    new_eqn = eqn.replace(
        invars=[v for v, u in zip(cc_v + bc_v + carry_v, cc_used + bc_used + used) if u],
        outvars=[v for v, u in zip(eqn.outvars, used) if u],
        params={
            **p,
            "cond_jaxpr": new_cond,
            "body_jaxpr": new_body,
            "cond_nconsts": sum(cc_used),
            "body_nconsts": sum(bc_used),
        },
    )
    return cc_used + bc_used + used, new_eqn


while_p.dce_rule = _while_dce_rule
