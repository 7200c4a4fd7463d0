"""Matmuls moved out of `scan` loops, so a loop of T steps makes one large GEMM instead of T small
ones (a GEMM of a few rows runs far below the machine's speed, and each call has a cost).

Two forms, both what an RNN's training step is made of:

- **a matmul of a scanned input by a loop constant** (`x_t @ W_x` in the forward pass) is
  computed for all steps at once before the loop, `xs @ W_x`, and the body reads its slice t;
- **a matmul accumulated into a carry** (`dW = dW + h_t.T @ g_t` in the backward pass, also when
  the product is transposed first) becomes, when the carry is used for nothing else, one matmul
  after the loop that also contracts the step axis, `dW0 + H.T @ G`, with the body's per-step
  operands stacked as extra outputs of the scan (a scanned input is already stacked).

The sums run in another order than the loop's, so floating-point results change by rounding, as
any reassociating compiler's do. Nested jaxprs are left alone; the optimization passes clean up
after the rewrite (compile.py).
"""

from __future__ import annotations

from morphax._src.core.avals import ShapedArray
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from morphax._src.higher_order.scan import scan_p
from morphax._src.passes._util import subst_all, use_counts, with_invars
from morphax._src.prims.arithmetic import add_p
from morphax._src.prims.dot import dot_general_p
from morphax._src.prims.shape import transpose_p

# Per-step operands are stacked only while the stack stays this small.
MAX_STACKED_BYTES = 1 << 28


def hoist_scan_matmuls(closed: ClosedJaxpr) -> ClosedJaxpr:
    """`closed` with the matmuls of its top-level scans moved out; the same object when none moves."""
    jaxpr = closed.jaxpr
    eqns, env, changed = [], {}, False
    for eqn in jaxpr.eqns:
        eqn = with_invars(eqn, env)
        rewritten = _rewrite(eqn) if eqn.primitive is scan_p else None
        if rewritten is None:
            eqns.append(eqn)
            continue
        new_eqns, replaced = rewritten
        eqns.extend(new_eqns)
        env.update(replaced)
        changed = True
    if not changed:
        return closed
    outvars = subst_all(env, jaxpr.outvars)
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, eqns, jaxpr.debug_info), closed.consts)


def _stacked(aval, length: int) -> ShapedArray:
    return ShapedArray((length, *aval.shape), aval.dtype, aval.weak_type)


def _plain_matmul(eqn) -> bool:
    """A dot_general without batch dimensions whose operands are variables."""
    (_, _), (lb, rb) = eqn.params["dimension_numbers"]
    return not lb and not rb and not any(type(v) is Literal for v in eqn.invars)


def _rewrite(eqn):
    """(equations replacing the scan `eqn`, {id(old outer var): new var}) or None."""
    p = eqn.params
    body: ClosedJaxpr = p["jaxpr"]
    bj = body.jaxpr
    nc, nk, length = p["num_consts"], p["num_carry"], p["length"]
    if length == 0 or bj.constvars:
        return None
    consts, carries, xs = bj.invars[:nc], bj.invars[nc : nc + nk], bj.invars[nc + nk :]
    const_ids = {id(v) for v in consts}
    xs_ids = {id(v) for v in xs}
    producer = {id(v): e for e in bj.eqns for v in e.outvars}
    uses = use_counts(bj)

    # Accumulated matmuls: carry k's output is add(carry k, [transpose](dot(a, b))).
    accumulated = {}  # carry index -> (add eqn, transpose eqn or None, dot eqn)
    for k, c in enumerate(carries):
        out = bj.outvars[k]
        add = producer.get(id(out)) if type(out) is not Literal else None
        if add is None or add.primitive is not add_p or uses.get(id(c)) != 1 or uses.get(id(out)) != 1:
            continue
        if not any(v is c for v in add.invars):
            continue
        other = add.invars[1] if add.invars[0] is c else add.invars[0]
        if type(other) is Literal or uses.get(id(other)) != 1:
            continue
        step = producer.get(id(other))
        transpose = None
        if step is not None and step.primitive is transpose_p:
            transpose, inner = step, step.invars[0]
            step = producer.get(id(inner)) if uses.get(id(inner)) == 1 else None
        if step is None or step.primitive is not dot_general_p or not _plain_matmul(step):
            continue
        if any(id(v) in const_ids or v is c for v in step.invars):
            continue  # a loop constant has no step axis to contract
        if any(length * v.aval.size * v.aval.dtype.itemsize > MAX_STACKED_BYTES for v in step.invars):
            continue
        accumulated[k] = (add, transpose, step)

    # Matmuls of a scanned input by a loop constant.
    hoisted = []  # (dot eqn, position of the scanned operand)
    for e in bj.eqns:
        if e.primitive is not dot_general_p or not _plain_matmul(e):
            continue
        a, b = e.invars
        out = e.outvars[0].aval
        if length * out.size * out.dtype.itemsize > MAX_STACKED_BYTES:
            continue  # all steps' products at once would take too much memory
        for pos, (mine, theirs) in enumerate(((a, b), (b, a))):
            if id(mine) in xs_ids and id(theirs) in const_ids:
                hoisted.append((e, pos))
                break
    hoisted = [h for h in hoisted if not any(h[0] is acc[2] for acc in accumulated.values())]
    if not accumulated and not hoisted:
        return None
    return _rebuild(eqn, accumulated, hoisted)


def _rebuild(eqn, accumulated: dict, hoisted: list):
    p = eqn.params
    body = p["jaxpr"]
    bj = body.jaxpr
    nc, nk, length = p["num_consts"], p["num_carry"], p["length"]
    consts, carries, xs = bj.invars[:nc], bj.invars[nc : nc + nk], bj.invars[nc + nk :]
    o_consts, o_carries, o_xs = eqn.invars[:nc], eqn.invars[nc : nc + nk], eqn.invars[nc + nk :]
    outer_of = {id(b): o for b, o in zip(consts, o_consts)}
    outer_of.update({id(b): o for b, o in zip(xs, o_xs)})
    xs_ids = {id(v) for v in xs}

    before, after, replaced = [], [], {}
    dropped = set()  # body equations removed
    # Scanned-input matmuls: computed for every step before the loop, read as a new scanned input.
    new_xs_body, new_xs_outer = [], []
    rename = {}
    for dot, pos in hoisted:
        (lc, rc), _ = dot.params["dimension_numbers"]
        a, b = dot.invars
        shift = lambda dims: tuple(d + 1 for d in dims)  # noqa: E731 - the stacked operand's axes
        numbers = ((shift(lc), rc), ((), ())) if pos == 0 else ((lc, shift(rc)), ((), ()))
        out = dot.outvars[0]
        stacked_aval = _stacked(out.aval, length)
        if pos == 0:
            whole = Var(stacked_aval)
            before.append(_eqn(dot_general_p, [outer_of[id(a)], outer_of[id(b)]], whole, dot.params, numbers))
        else:  # (const free, step, xs free): the step axis moves to the front
            n_const_free = a.aval.ndim - len(lc)
            order = (n_const_free, *range(n_const_free), *range(n_const_free + 1, out.aval.ndim + 1))
            shape = out.aval.shape
            raw_shape = (*shape[:n_const_free], length, *shape[n_const_free:])
            raw = Var(ShapedArray(raw_shape, out.aval.dtype, out.aval.weak_type))
            before.append(_eqn(dot_general_p, [outer_of[id(a)], outer_of[id(b)]], raw, dot.params, numbers))
            whole = Var(stacked_aval)
            before.append(JaxprEqn(transpose_p, [raw], [whole], {"permutation": order}))
        slice_var = Var(out.aval)
        rename[id(out)] = slice_var
        new_xs_body.append(slice_var)
        new_xs_outer.append(whole)
        dropped.add(id(dot))

    # Accumulated matmuls: the carry goes; its per-step operands are stacked as outputs.
    kept = [k for k in range(nk) if k not in accumulated]
    stacked_body, stacked_outer = [], {}  # per-step operands to stack, by id -> outer stacked var
    for add, transpose, dot in accumulated.values():
        dropped.update({id(add), id(dot)} | ({id(transpose)} if transpose is not None else set()))
        for v in dot.invars:
            if id(v) in xs_ids:  # a scanned input: already stacked outside
                stacked_outer[id(v)] = outer_of[id(v)]
            elif id(v) not in stacked_outer:
                stacked_outer[id(v)] = Var(_stacked(v.aval, length))
                stacked_body.append(v)
    for k, (add, transpose, dot) in accumulated.items():
        (lc, rc), _ = dot.params["dimension_numbers"]
        a, b = dot.invars
        numbers = (((0, *[d + 1 for d in lc]), (0, *[d + 1 for d in rc])), ((), ()))
        total = Var(dot.outvars[0].aval)
        after.append(
            _eqn(dot_general_p, [stacked_outer[id(a)], stacked_outer[id(b)]], total, dot.params, numbers)
        )
        if transpose is not None:
            moved = Var(transpose.outvars[0].aval)
            after.append(JaxprEqn(transpose_p, [total], [moved], dict(transpose.params)))
            total = moved
        init = o_carries[k]
        operands = [init, total] if add.invars[0] is carries[k] else [total, init]
        final = Var(eqn.outvars[k].aval)
        after.append(JaxprEqn(add_p, operands, [final], dict(add.params)))
        replaced[id(eqn.outvars[k])] = final

    body_eqns = [with_invars(e, rename) for e in bj.eqns if id(e) not in dropped]
    ys = bj.outvars[nk:]
    new_body = Jaxpr(
        [],
        [*consts, *[carries[k] for k in kept], *xs, *new_xs_body],
        subst_all(rename, [*[bj.outvars[k] for k in kept], *ys]) + stacked_body,
        body_eqns,
        bj.debug_info,
    )
    new_outvars = [
        *[eqn.outvars[k] for k in kept],
        *eqn.outvars[nk:],
        *[stacked_outer[id(v)] for v in stacked_body],
    ]
    params = dict(p, jaxpr=ClosedJaxpr(new_body, []), num_carry=len(kept))
    scan = JaxprEqn(
        scan_p,
        [*o_consts, *[o_carries[k] for k in kept], *o_xs, *new_xs_outer],
        new_outvars,
        params,
        eqn.source_info,
    )
    return [*before, scan, *after], replaced


def _eqn(prim, invars, out, params, numbers) -> JaxprEqn:
    return JaxprEqn(prim, invars, [out], dict(params, dimension_numbers=numbers))
