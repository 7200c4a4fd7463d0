"""State discharge: a jaxpr that uses mutable array references becomes a functional jaxpr.

`discharge_state(closed)` gives a jaxpr whose Ref-typed inputs are plain value inputs and whose
outputs gain the final value of each of them (in input order); refs created inside disappear.
It evaluates the jaxpr on a staging trace with each ref held in a `_Cell` (its current value):
the state primitives apply their `discharge` rule (prims/state.py) to the cell, and control
flow that receives refs threads their values through its carry (scan, while), its outputs (cond)
or its call (pjit). jit, the compiler and the eager trace run it before anything is compiled,
so the compiled programs stay functional and every backend works unchanged.
"""

from __future__ import annotations

from morphax._src.core import state_types
from morphax._src.core.ad_util import Zero, instantiate, is_zero, tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import bdim_to_front, moveaxis
from morphax._src.core.jaxpr import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Var,
    any_eqn,
    eval_jaxpr,
    interpret,
    split_list,
    sub_jaxprs,
)
from morphax._src.core.memo import memoized
from morphax._src.core.state_types import STATE_PRIMS, InvalidRefError, Ref, is_ref_aval
from morphax._src.core.values import make_array
from morphax._src.higher_order.conditionals import _hoist_consts, cond_p
from morphax._src.higher_order.pjit import pjit_p
from morphax._src.higher_order.scan import scan_p
from morphax._src.higher_order.while_loop import while_p
from morphax._src.prims.conversion import full
from morphax._src.prims.state import (
    _GRAD_HINT,
    TangentRef,
    addupdate_p,
    empty_ref_p,
    free_ref_p,
    freeze_p,
    new_ref_p,
    read_whole,
    swap_p,
    write_whole,
)
from morphax._src.transforms import ad
from morphax._src.transforms.batching import batch_jaxpr
from morphax._src.transforms.staging import StagingTrace, trace_to_jaxpr

__all__ = ["discharge_state", "has_state", "run_with_refs"]


class _Cell:
    """A ref during discharge: its current value, and what invalidated it (if anything)."""

    __slots__ = ("value", "aval", "invalid", "external")

    def __init__(self, value, aval, external=False):
        self.value = value
        self.aval = aval
        self.invalid = None
        # A ref given to the program (not made inside it): the program cannot invalidate it.
        self.external = external


def _uses_state(eqn) -> bool:
    return eqn.primitive in STATE_PRIMS or any(is_ref_aval(v.aval) for v in eqn.invars)


def has_state(jaxpr) -> bool:
    """Whether `jaxpr` (or a jaxpr nested in it) takes, creates or uses a ref."""
    if not state_types.state_used[0]:
        return False
    j = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    if any(is_ref_aval(v.aval) for v in j.invars) or any(is_ref_aval(v.aval) for v in j.constvars):
        return True
    return any_eqn(j, _uses_state)


def discharge_state(closed: ClosedJaxpr) -> ClosedJaxpr:
    """The functional form of `closed` (memoized on it): see the module docstring."""
    return memoized(closed, "state discharge", lambda: _discharge(closed))


def _discharge(closed: ClosedJaxpr) -> ClosedJaxpr:
    j = closed.jaxpr
    if any(type(c) is Ref or is_ref_aval(getattr(c, "aval", None)) for c in closed.consts):
        raise NotImplementedError(
            "state discharge: a jaxpr closes over a mutable array reference as a constant; the "
            "caller must make it an input first (this is a morphax bug if it reaches you)."
        )
    ref_in = [i for i, v in enumerate(j.invars) if is_ref_aval(v.aval)]
    in_avals = [v.aval.inner_aval if is_ref_aval(v.aval) else v.aval for v in j.invars]

    def fun(*args):
        env_args = list(args)
        for i in ref_in:
            env_args[i] = _Cell(args[i], j.invars[i].aval, external=True)
        outs = _eval(j, closed.consts, env_args)
        _check_no_ref_outputs(outs, "a function")
        return list(outs) + [env_args[i].value for i in ref_in]

    return trace_to_jaxpr(fun, in_avals)


def _check_no_ref_outputs(outs, what):
    for o in outs:
        if type(o) is _Cell:
            raise ValueError(
                f"{what} returned a mutable array reference of type {o.aval}, but mutable array "
                "references cannot be returned. Return its value (ref[...] or freeze(ref)) instead."
            )


def _eval(jaxpr: Jaxpr, consts, args):
    return interpret(jaxpr, consts, args, _discharge_eqn)


def _discharge_eqn(eqn, ins):
    prim = eqn.primitive
    if prim in STATE_PRIMS:
        return _state_eqn(prim, ins, eqn.params)
    if any(type(x) is _Cell for x in ins):
        rule = _rules.get(prim)
        if rule is None:
            raise NotImplementedError(
                f"A mutable array reference is passed to `{prim.api_name or prim.name}`, "
                "which cannot thread refs "
                "yet (jit, scan, fori_loop, while_loop and cond can). Pass its value (ref[...]) "
                "instead and write the result back with ref[...] = result."
            )
        return rule(ins, **eqn.params)
    params = eqn.params
    if prim.higher_order and any(has_state(s) for s in sub_jaxprs(params)):
        params = _discharge_params(params)
    return prim.bind(*ins, **params)


def _state_eqn(prim, ins, params):
    if prim is new_ref_p:
        x = ins[0]
        aval = get_aval(x)
        if not hasattr(x, "aval"):  # a literal: the cell holds an array of the ref's type
            x = make_array(x, dtype=aval.dtype, weak_type=aval.weak_type)
        return _Cell(x, state_types.AbstractRef(aval))
    if prim is empty_ref_p:
        ty = params["ty"]
        return _Cell(full(ty.shape, 0, ty.dtype), state_types.AbstractRef(ty))
    cell = ins[0]
    if type(cell) is not _Cell:
        raise ValueError(f"`{prim.name}` must be called on `Ref` types: {get_aval(cell)}.")
    _check_valid(prim.name, cell)
    if cell.external and (prim is freeze_p or prim is free_ref_p):
        raise NotImplementedError(
            f"{prim.name}: a mutable array reference ({cell.aval}) passed to or closed over by a jitted "
            f"function (or a loop or branch body) cannot be invalidated inside it. Call {prim.name} "
            "outside, after the call, or read the value with ref[...] inside."
        )
    new, out = prim.discharge(cell.value, *ins[1:], **params)
    cell.value = new
    if prim is freeze_p or prim is free_ref_p:
        cell.invalid = prim.name
    return out


def _check_valid(what, cell):
    if cell.invalid is not None:
        raise InvalidRefError(
            f"{what}: a Ref ({cell.aval}) is used after {cell.invalid}() invalidated it. Use the value "
            "freeze() returned, or create a new ref with new_ref."
        )


def _discharge_params(params):
    """`params` with each nested jaxpr that creates refs internally made functional (its
    signature is unchanged: it takes and returns no refs)."""

    def one(v):
        if isinstance(v, ClosedJaxpr) and has_state(v):
            return discharge_state(v)
        if isinstance(v, Jaxpr) and has_state(v):
            return discharge_state(ClosedJaxpr(v, [])).jaxpr if not v.constvars else v
        return v

    out = {}
    for k, v in params.items():
        out[k] = tuple(one(x) for x in v) if isinstance(v, tuple) else one(v)
    return out


# ----------------------------------------------------------------- refs through control flow


def _ref_positions(what, ins, candidates=None):
    """Positions of the cells in `ins` (among `candidates`), each ref at most once."""
    pos = [i for i in (range(len(ins)) if candidates is None else candidates) if type(ins[i]) is _Cell]
    seen = set()
    for i in pos:
        _check_valid(what, ins[i])
        if id(ins[i]) in seen:
            raise ValueError(
                f"{what}: only one reference to a mutable array may be passed as an operand, but the "
                f"ref of type {ins[i].aval} appears more than once. Pass it once."
            )
        seen.add(id(ins[i]))
    return pos


def _values(ins):
    return [x.value if type(x) is _Cell else x for x in ins]


def _pjit_rule(ins, *, jaxpr, name):
    refs = _ref_positions(f"jit({name})", ins)
    outs = pjit_p.bind(*_values(ins), jaxpr=discharge_state(jaxpr), name=name)
    n = len(outs) - len(refs)
    for i, v in zip(refs, outs[n:]):
        ins[i].value = v
    return outs[:n]


def _scan_rule(ins, *, jaxpr, length, reverse, num_consts, num_carry, unroll):
    nc, nk = num_consts, num_carry
    if any(type(x) is _Cell for x in ins[nc:]):
        raise ValueError(
            "scan: a mutable array reference cannot be a carry or a scanned-over input; close over "
            "it in the body instead (its writes are kept across iterations)."
        )
    refs = _ref_positions("scan", ins, range(nc))
    nr, n_in, n_out = len(refs), len(ins), len(jaxpr.out_avals)

    def build():
        d = discharge_state(jaxpr)  # in: consts, carry, xs; out: carry, ys, final ref values
        j = d.jaxpr
        plain = [j.invars[i] for i in range(nc) if i not in refs]
        invars = j.constvars + plain + [j.invars[i] for i in refs] + j.invars[nc:n_in]
        outvars = j.outvars[n_out : n_out + nr] + j.outvars[:n_out]
        return ClosedJaxpr(Jaxpr([], invars, outvars, j.eqns), []), list(d.consts)

    body, consts = memoized(jaxpr, ("scan ref discharge", tuple(refs)), build)
    vals = _values(ins)
    outs = scan_p.bind(
        *consts, *[vals[i] for i in range(nc) if i not in refs], *[vals[i] for i in refs], *vals[nc:],
        jaxpr=body, length=length, reverse=reverse, num_consts=len(consts) + nc - nr, num_carry=nr + nk,
        unroll=unroll,
    )  # fmt: skip
    for i, v in zip(refs, outs[:nr]):
        ins[i].value = v
    return outs[nr:]


def _while_rule(ins, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, carry = split_list(ins, cond_nconsts, body_nconsts)
    if any(type(x) is _Cell for x in carry):
        raise ValueError(
            "while_loop: a mutable array reference cannot be part of the carry; close over it in the "
            "loop body instead (its writes are kept across iterations)."
        )
    # The refs either function uses, once each, become leading carries of both.
    unique: list = []
    for x in cc + bc:
        if type(x) is _Cell and all(x is not u for u in unique):
            _check_valid("while_loop", x)
            unique.append(x)
    slot = lambda x: next(k for k, u in enumerate(unique) if u is x)  # noqa: E731
    c_refs = [i for i, x in enumerate(cc) if type(x) is _Cell]
    b_refs = [i for i, x in enumerate(bc) if type(x) is _Cell]
    nu, nk = len(unique), len(carry)
    c_slots, b_slots = tuple(slot(cc[i]) for i in c_refs), tuple(slot(bc[i]) for i in b_refs)
    if c_refs and any_eqn(cond_jaxpr, lambda e: e.primitive is swap_p or e.primitive is addupdate_p):
        return _while_cond_writes(
            cc, bc, carry, unique, c_refs, b_refs, c_slots, b_slots, cond_jaxpr, body_jaxpr
        )

    def build():
        dcc = discharge_state(cond_jaxpr)  # in: cc, carry; out: pred, finals
        db = discharge_state(body_jaxpr)  # in: bc, carry; out: carry, finals
        dc, dbj = dcc.jaxpr, db.jaxpr
        # cond: (plain cc, unique ref values, carry) -> pred
        c_in = [Var(u.aval.inner_aval) for u in unique]
        for i, s in zip(c_refs, c_slots):
            c_in[s] = dc.invars[i]
        plain_c = [dc.invars[i] for i in range(len(cc)) if i not in c_refs]
        new_cond = Jaxpr([], dc.constvars + plain_c + c_in + dc.invars[len(cc) :], dc.outvars[:1], dc.eqns)
        # body: (plain bc, unique ref values, carry) -> (unique ref values, carry)
        b_in = [Var(u.aval.inner_aval) for u in unique]
        b_out = list(b_in)
        for k, (i, s) in enumerate(zip(b_refs, b_slots)):
            b_in[s] = dbj.invars[i]
            b_out[s] = dbj.outvars[nk + k]
        plain_b = [dbj.invars[i] for i in range(len(bc)) if i not in b_refs]
        new_body = Jaxpr(
            [], dbj.constvars + plain_b + b_in + dbj.invars[len(bc) :], b_out + dbj.outvars[:nk], dbj.eqns
        )
        return ClosedJaxpr(new_cond, []), list(dcc.consts), ClosedJaxpr(new_body, []), list(db.consts)

    key = ("while ref discharge", id(cond_jaxpr), tuple(c_refs), tuple(b_refs), c_slots, b_slots)
    new_cond, c_consts, new_body, b_consts = memoized(body_jaxpr, key, build)
    plain_cc = c_consts + [x for x in cc if type(x) is not _Cell]
    plain_bc = b_consts + [x for x in bc if type(x) is not _Cell]
    outs = while_p.bind(
        *plain_cc, *plain_bc, *[u.value for u in unique], *carry,
        cond_jaxpr=new_cond, body_jaxpr=new_body, cond_nconsts=len(plain_cc), body_nconsts=len(plain_bc),
    )  # fmt: skip
    for u, v in zip(unique, outs[:nu]):
        u.value = v
    return outs[nu:]


def _while_cond_writes(cc, bc, carry, unique, c_refs, b_refs, c_slots, b_slots, cond_jaxpr, body_jaxpr):
    """A while_loop whose cond_fun writes refs, with JAX's semantics: the loop test itself is
    pure, and each iteration first redoes the test's writes, then runs the body (so the writes of
    the final, false test are not kept)."""
    dcc, db = discharge_state(cond_jaxpr), discharge_state(body_jaxpr)
    nu = len(unique)
    n_pcc, n_pbc = len(cc) - len(c_refs), len(bc) - len(b_refs)

    def run(closed, n_ops, refs, slots, plain, u, xs):
        it = iter(plain)
        vals = [u[slots[refs.index(i)]] if i in refs else next(it) for i in range(n_ops)]
        outs = eval_jaxpr(closed.jaxpr, closed.consts, *vals, *xs)
        n = len(outs) - len(slots)
        for k, s in enumerate(slots):
            u[s] = outs[n + k]
        return outs[:n]

    def cond_fun(*args):
        pcc, u, xs = split_list(list(args), n_pcc, nu)
        return run(dcc, len(cc), c_refs, c_slots, pcc, u, xs)[:1]

    def body_fun(*args):
        pcc, pbc, u, xs = split_list(list(args), n_pcc, n_pbc, nu)
        run(dcc, len(cc), c_refs, c_slots, pcc, u, xs)
        xs = run(db, len(bc), b_refs, b_slots, pbc, u, xs)
        return [*u, *xs]

    def hoisted(fun, avals):
        traced = trace_to_jaxpr(fun, avals)
        j = traced.jaxpr
        return ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns), []), list(traced.consts)

    pcc = [x for x in cc if type(x) is not _Cell]
    pbc = [x for x in bc if type(x) is not _Cell]
    u = [c.value for c in unique]
    state = [get_aval(x) for x in (*u, *carry)]
    cond, c_consts = hoisted(cond_fun, [get_aval(x) for x in pcc] + state)
    body, b_consts = hoisted(body_fun, [get_aval(x) for x in (*pcc, *pbc)] + state)
    outs = while_p.bind(
        *c_consts, *pcc, *b_consts, *pcc, *pbc, *u, *carry,
        cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=len(c_consts) + len(pcc),
        body_nconsts=len(b_consts) + len(pcc) + len(pbc),
    )  # fmt: skip
    for c, v in zip(unique, outs[:nu]):
        c.value = v
    return outs[nu:]


def _cond_rule(ins, *, branches):
    index, ops = ins[0], ins[1:]
    refs = _ref_positions("cond", ops)

    def build():
        # Constants the discharged branches need become leading operands shared by all of them.
        new, consts = _hoist_consts([discharge_state(b) for b in branches])
        return tuple(new), consts

    new, consts = memoized(branches[0], ("cond ref discharge", tuple(id(b) for b in branches[1:])), build)
    outs = cond_p.bind(index, *consts, *_values(ops), branches=new)
    n = len(outs) - len(refs)
    for i, v in zip(refs, outs[n:]):
        ops[i].value = v
    return outs[:n]


# How each higher-order primitive threads refs it receives as operands.
_rules = {pjit_p: _pjit_rule, scan_p: _scan_rule, while_p: _while_rule, cond_p: _cond_rule}


# ----------------------------------------------------------------------- eager entry point


def one_equation_discharged(prim, in_avals, slots, params):
    """(discharged closed jaxpr, number of outputs) of `prim` applied to inputs of `in_avals`
    (refs among them), memoized on the equation's first nested jaxpr. ``slots[i]`` numbers the
    distinct inputs: operands that are the same ref share one input of the jaxpr."""
    out = prim.abstract_eval(*in_avals, **params)
    out_avals = list(out) if prim.multiple_results else [out]

    def build():
        unique = {}
        for a, k in zip(in_avals, slots):
            unique.setdefault(k, Var(a))
        outvars = [Var(a) for a in out_avals]
        eqn = JaxprEqn(prim, [unique[k] for k in slots], outvars, params)
        closed = ClosedJaxpr(Jaxpr([], list(unique.values()), outvars, [eqn]), [])
        return discharge_state(closed), len(out_avals)

    subs = sub_jaxprs(params)
    if not subs:
        return build()
    key = (
        "eager ref discharge",
        prim.name,
        tuple(in_avals),
        tuple(slots),
        tuple(id(j) for j in subs),
        tuple((k, v) for k, v in sorted(params.items()) if not sub_jaxprs({k: v})),
    )
    return memoized(subs[0], key, build)


def run_with_refs(prim, args, params, call):
    """Evaluate `prim` on `args`, some of them concrete Refs, by its discharged form: `call(closed,
    values)` runs the functional jaxpr; the refs then receive their final values."""
    slots, first = [], {}
    for i, x in enumerate(args):
        if type(x) is Ref:
            x.check_valid(prim.name)
            slots.append(first.setdefault(id(x), i))
        else:
            slots.append(i)
    closed, n_out = one_equation_discharged(prim, tuple(get_aval(x) for x in args), tuple(slots), params)
    distinct = [args[i] for i in sorted(set(slots))]
    vals = [x.current_array() if type(x) is Ref else x for x in distinct]
    outs = call(closed, vals)
    refs = [x for x in distinct if type(x) is Ref]
    for r, v in zip(refs, outs[n_out:]):
        r.store(v)
    outs = outs[:n_out]
    return outs if prim.multiple_results else outs[0]


# ----------------------------------------------------------------- linearization (partial eval)
#
# grad linearizes: known operations run now, unknown ones are staged into the linear program.
# A write of an unknown (tangent) value into a known ref would be staged while later known reads
# of that ref already ran, giving silently wrong derivatives, so it is refused; operations on an
# unknown ref are staged in order (and their transposition then refuses reverse mode clearly).


def _stage(trace, prim, args, params):
    return StagingTrace.process_primitive(trace, prim, args, params)


def _write_partial_eval(trace, args, params):
    prim = params.pop("_prim")
    if not trace._owns(args[0]):
        raise NotImplementedError(
            f"Reverse-mode differentiation (grad, vjp) of a function that writes a differentiated value "
            f"into a mutable array reference ({get_aval(args[0])}, `{prim.name}`) outside jit is not "
            "supported: wrap the differentiated function in morphax.jit (its refs are then discharged "
            "into functional code, which grad handles), or use jvp/jacfwd."
        )
    return _stage(trace, prim, args, params)


def _install_partial_eval():
    for prim in STATE_PRIMS:
        if prim.name in ("swap", "addupdate"):
            prim.partial_eval = lambda trace, args, params, p=prim: _write_partial_eval(
                trace, args, {**params, "_prim": p}
            )
        else:
            prim.partial_eval = lambda trace, args, params, p=prim: _stage(trace, p, args, params)


_install_partial_eval()


# ------------------------------------------------ control flow given refs under jvp and vmap
#
# Under jvp or vmap (outside jit), a loop, branch or call that receives a ref is run in its
# discharged form: the ref's value (and tangent) goes in, the final value comes out and is
# written back, so the primitive's own rules only ever see functional programs.


def _is_ref_value(x) -> bool:
    return type(x) is Ref or is_ref_aval(getattr(x, "aval", None))


def _unbatched_aval(x, d):
    a = get_aval(x)
    if d is None:
        return a
    inner = a.inner_aval if is_ref_aval(a) else a
    one = ShapedArray(inner.shape[:d] + inner.shape[d + 1 :], inner.dtype, inner.weak_type)
    return state_types.AbstractRef(one) if is_ref_aval(a) else one


def _discharged_call(prim, args, params, dims=None):
    slots, first = [], {}
    for i, x in enumerate(args):
        slots.append(first.setdefault(id(x), i) if _is_ref_value(x) else i)
    dims = dims if dims is not None else [None] * len(args)
    avals = tuple(_unbatched_aval(x, d) for x, d in zip(args, dims))
    closed, n_out = one_equation_discharged(prim, avals, tuple(slots), params)
    keep = sorted(set(slots))
    refs = [k for k in keep if _is_ref_value(args[k])]
    return closed, n_out, keep, refs


def _jvp_with_refs(prim, rule):
    def jvp(primals, tangents, **params):
        if not any(_is_ref_value(p) for p in primals):
            return rule(primals, tangents, **params)
        closed, n_out, keep, refs = _discharged_call(prim, primals, params)
        vals, tans = [], []
        for k in keep:
            p, t = primals[k], tangents[k]
            if _is_ref_value(p):
                vals.append(read_whole(p))
                tans.append(t.value if type(t) is TangentRef else Zero(tangent_aval(get_aval(vals[-1]))))
            else:
                vals.append(p)
                tans.append(t)
        outs, outs_t = ad.jvp_flat(lambda *a: eval_jaxpr(closed.jaxpr, closed.consts, *a), vals, tans)
        for k, v, vt in zip(refs, outs[n_out:], outs_t[n_out:]):
            write_whole(primals[k], v)
            if type(tangents[k]) is TangentRef:
                tangents[k].value = instantiate(vt)
            elif not is_zero(vt):
                raise ValueError(
                    f"{prim.name}: performing a write with a differentiated value on a non-differentiated "
                    f"array reference of type {get_aval(primals[k])}. {_GRAD_HINT}"
                )
        return outs[:n_out], outs_t[:n_out]

    return jvp


def _batch_with_refs(prim, rule):
    def batch(vals, dims, *, axis_data, **params):
        if not any(_is_ref_value(v) for v in vals):
            return rule(vals, dims, axis_data=axis_data, **params)
        closed, n_out, keep, refs = _discharged_call(prim, vals, params, dims)
        ins = [read_whole(vals[k]) if k in refs else vals[k] for k in keep]
        batched, out_batched = batch_jaxpr(closed, axis_data, [dims[k] for k in keep])
        outs = eval_jaxpr(batched.jaxpr, batched.consts, *ins)
        out_dims = [0 if b else None for b in out_batched]
        for k, v, d in zip(refs, outs[n_out:], out_dims[n_out:]):
            rd = dims[k]
            if rd is None and d is not None:
                raise ValueError(
                    f"{prim.name}: performing a write with a vmapped value on an unbatched array "
                    f"reference of type {get_aval(vals[k])}. Move the array reference to be an argument "
                    "to the vmapped function, or create it inside it."
                )
            if rd is not None:
                v = bdim_to_front(v, d, axis_data.size)
                v = moveaxis(v, 0, rd)
            write_whole(vals[k], v)
        return outs[:n_out], out_dims[:n_out]

    return batch


for _prim in (scan_p, while_p, cond_p, pjit_p):
    _prim.jvp = _jvp_with_refs(_prim, _prim.jvp)
    _prim.batch = _batch_with_refs(_prim, _prim.batch)
