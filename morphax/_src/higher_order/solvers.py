"""`lax.custom_linear_solve` and `lax.custom_root`: higher-order primitives (closed jaxprs in their
params, constants hoisted to operands) differentiated implicitly at the solution, never through the
solver: the linear solve's tangent and transpose are more solves; the root's JVP applies the implicit
function theorem with the user's `tangent_solve`. Batching batches every jaxpr."""

from __future__ import annotations

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import (
    Zero,
    instantiate,
    is_undefined_primal,
    is_zero,
    tangent_aval,
    zeros_like_aval,
)
from morphax._src.core.avals import get_aval
from morphax._src.core.batch_axes import bdim_to_front, moveaxis
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, eval_jaxpr, split_list
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.values import is_concrete_array, make_array
from morphax._src.prims import lax_api as lax
from morphax._src.transforms import ad
from morphax._src.transforms.batching import batch_jaxpr
from morphax._src.transforms.staging import trace_to_jaxpr

__all__ = ["custom_linear_solve", "custom_linear_solve_p", "custom_root", "custom_root_p"]


# ----------------------------------------------------------------------------------- shared helpers


def _as_operand(x):
    # Python scalars enter as weakly typed arrays, so every leaf has an array type.
    if _dtypes.is_python_scalar(x):
        return make_array(x, _dtypes.python_scalar_dtype(x), weak_type=type(x) is not bool)
    return x


def _trace_tree(fun, in_tree, avals):
    """Trace ``fun(tree)``: (closed jaxpr taking its constants then the leaves, constants, out tree)."""
    box = {}

    def flat(*leaves):
        out = fun(pytree.tree_unflatten(in_tree, list(leaves)))
        out_leaves, box["tree"] = pytree.tree_flatten(out)
        return [_as_operand(x) for x in out_leaves]

    closed = trace_to_jaxpr(flat, avals)
    j = closed.jaxpr
    hoisted = ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns), [])
    return hoisted, list(closed.consts), box["tree"]


def _same_types(got, want) -> bool:
    return len(got) == len(want) and all(a.shape == b.shape and a.dtype == b.dtype for a, b in zip(got, want))


def _types(avals) -> str:
    return "[" + ", ".join(a.str_short() for a in avals) + "]"


def _check_tree(func_name, expected_name, tree, expected_tree, has_aux=False):
    """JAX's output-structure check; with `has_aux` the output must be a pair (solution, aux)."""
    if has_aux:
        children = pytree.treedef_children(tree)
        if len(children) != 2:
            raise ValueError(
                f"{func_name}() produced a pytree with structure {tree}, but a pytree tuple with auxiliary "
                "output was expected because has_aux was set to True."
            )
        tree = children[0]
    if tree != expected_tree:
        raise TypeError(
            f"{func_name}() output pytree structure must match {expected_name}, got {tree} and {expected_tree}."
        )


def _check_types(func_name, expected_name, got, want):
    if not _same_types(got[: len(want)], want):
        raise TypeError(
            f"{func_name}() output shapes and dtypes must match {expected_name}, got "
            f"{_types(got[: len(want)])} and {_types(want)}."
        )


def _run(closed: ClosedJaxpr, args):
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


def _as_outputs(outs, avals):
    # Forwarded inputs and literals come back as arrays of the declared types.
    return [
        o
        if is_concrete_array(o) and o.dtype == a.dtype
        else make_array(o, dtype=a.dtype, weak_type=a.weak_type)
        for o, a in zip(outs, avals)
    ]


def _nonzero(t) -> bool:
    return not is_zero(t) and get_aval(t).dtype != _dtypes.float0


def _zeros_for(avals):
    return [Zero(tangent_aval(a)) for a in avals]


def _batch_jaxpr(closed: ClosedJaxpr, axis_data, in_batched):
    """`closed` on inputs batched at axis 0 where `in_batched`; every output batched at axis 0."""
    return batch_jaxpr(closed, axis_data, [0 if b else None for b in in_batched], True)[0]


def _batch_operands(vals, dims, n_consts, size):
    """Batched operands to axis 0; every vector operand (after the constants) batched."""
    vals = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    consts, vecs = vals[:n_consts], vals[n_consts:]
    vecs = [bdim_to_front(v, None, size) if d is None else v for v, d in zip(vecs, dims[n_consts:])]
    return consts, vecs, [d is not None for d in dims[:n_consts]]


# ----------------------------------------------------------------------------- custom_linear_solve

custom_linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)
# Runs its solve jaxpr (the others serve differentiation): compiled as a sub-program.
custom_linear_solve_p.kind = Kind.LOOP
custom_linear_solve_p.higher_order = True
custom_linear_solve_p.test_spec = None  # higher-order: tests/control_flow/test_solvers.py covers it

# Operands: the constants of matvec, vecmat, solve and transpose_solve (`const_lengths`), then the
# leaves of b. `jaxprs` = (matvec, vecmat, solve, transpose_solve); the last two may be None.


def _transpose_fun(matvec, tree, avals):
    """``vecmat``: the transpose of the linear `matvec`, traced on demand. Work on matvec's constants
    runs forward (partial evaluation); the part linear in x is transposed."""

    def vecmat(ct):
        ct_leaves = pytree.tree_leaves(ct)
        with _trace.new_trace(ad.PartialEvalTrace()) as pe:
            xs = [pe.new_arg(a.strip_weak_type()) for a in avals]
            out = pytree.tree_leaves(matvec(pytree.tree_unflatten(tree, xs)))
            closed = pe.to_closed_jaxpr(out)
        cts_in = ad.backward_pass(closed, ct_leaves)
        return pytree.tree_unflatten(
            tree, [zeros_like_aval(a) if is_zero(c) else c for c, a in zip(cts_in, avals)]
        )

    return vecmat


def _check_body_types(prim_name, name, jaxpr, ins, outs, what):
    """A solver's body jaxpr (checked when the primitive is bound, whatever built the params)
    takes `ins` and returns outputs that start with the types of `outs`."""
    if not _same_types(jaxpr.in_avals, ins):
        raise TypeError(
            f"{prim_name}: the {name} jaxpr takes {_types(jaxpr.in_avals)} but the operands give {_types(ins)}."
        )
    if not _same_types(jaxpr.out_avals[: len(outs)], outs):
        raise TypeError(
            f"{prim_name}: the {name} jaxpr returns {_types(jaxpr.out_avals)}, which do not start with "
            f"{what} {_types(outs)}."
        )


def _trace_operator_and_solve(op_name, op, solve, value, value_name, has_aux):
    """Flatten `value` (b, or the initial guess), and trace `op` and ``solve(op, .)`` on its type,
    checking both map it to its own structure and types. Returns (leaves, tree, avals,
    (op jaxpr, consts), (solve jaxpr, consts, solve's output tree))."""
    leaves, tree = pytree.tree_flatten(value)
    leaves = [_as_operand(x) for x in leaves]
    avals = [get_aval(x) for x in leaves]
    op_j, op_c, op_tree = _trace_tree(op, tree, avals)
    _check_tree(op_name, value_name, op_tree, tree)
    _check_types(op_name, value_name, op_j.out_avals, avals)
    solve_j, solve_c, solve_tree = _trace_tree(lambda x: solve(op, x), tree, avals)
    _check_tree("solve", value_name, solve_tree, tree, has_aux)
    _check_types("solve", value_name, solve_j.out_avals, avals)
    return leaves, tree, avals, (op_j, op_c), (solve_j, solve_c, solve_tree)


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
    """``solve(matvec, b)``, differentiated as the solution of ``matvec(x) == b`` (not checked).

    `b` may be any pytree; `solve(matvec, b)` (and `transpose_solve(vecmat, b)`, with `vecmat` the
    transpose of `matvec`, built automatically) returns the solution, plus auxiliary data when
    `has_aux`. Reverse mode needs `transpose_solve`, or `symmetric=True` (then `solve` serves).
    """
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    leaves, tree, avals, (matvec_j, matvec_c), (solve_j, solve_c, solve_tree) = _trace_operator_and_solve(
        "matvec", matvec, solve, b, "b", has_aux
    )
    vecmat_j = tsolve_j = None
    vecmat_c = tsolve_c = []
    if transpose_solve is not None:
        if symmetric:
            vecmat, vecmat_j, vecmat_c = matvec, matvec_j, matvec_c
        else:
            vecmat = _transpose_fun(matvec, tree, avals)
            vecmat_j, vecmat_c, _ = _trace_tree(vecmat, tree, avals)
        tsolve_j, tsolve_c, t_tree = _trace_tree(lambda x: transpose_solve(vecmat, x), tree, avals)
        _check_tree("transpose_solve", "b", t_tree, tree, has_aux)
        _check_types("transpose_solve", "b", tsolve_j.out_avals, avals)
    consts = [matvec_c, vecmat_c, solve_c, tsolve_c]
    outs = custom_linear_solve_p.bind(
        *[c for cs in consts for c in cs],
        *leaves,
        const_lengths=tuple(len(cs) for cs in consts),
        jaxprs=(matvec_j, vecmat_j, solve_j, tsolve_j),
    )
    return pytree.tree_unflatten(solve_tree, outs)


def _lin_impl(*args, const_lengths, jaxprs):
    _, _, solve_c, _, b = split_list(args, *const_lengths)
    solve = jaxprs[2]
    return _as_outputs(_run(solve, solve_c + b), solve.out_avals)


def _lin_abstract_eval(*avals, const_lengths, jaxprs):
    if len(const_lengths) != 4 or len(jaxprs) != 4:
        raise TypeError("custom_linear_solve: expects four const lengths and four jaxprs.")
    parts = split_list(avals, *const_lengths)
    b = parts[4]
    names = ("matvec", "vecmat", "solve", "transpose_solve")
    for name, j, consts in zip(names, jaxprs, parts[:4]):
        if j is None:
            if consts:
                raise TypeError(f"custom_linear_solve: constants given for the missing {name} jaxpr.")
            continue
        _check_body_types("custom_linear_solve", name, j, consts + b, b, "the types of b")
    return list(jaxprs[2].out_avals)


custom_linear_solve_p.impl = _lin_impl
custom_linear_solve_p.abstract_eval = _lin_abstract_eval


def _lin_jvp(primals, tangents, *, const_lengths, jaxprs):
    # A x = b  =>  A dx = db - dA x: the tangent is one more solve, with the primal operator.
    params = dict(const_lengths=const_lengths, jaxprs=jaxprs)
    n_consts = sum(const_lengths)
    outs = custom_linear_solve_p.bind(*primals, **params)
    b = primals[n_consts:]
    x = outs[: len(b)]
    out_t = _zeros_for(jaxprs[2].out_avals)
    rhs = [t if _nonzero(t) else None for t in tangents[n_consts:]]
    n_mv = const_lengths[0]
    if any(_nonzero(t) for t in tangents[:n_mv]):
        # dA x: the matvec's tangent with respect to its constants, at the solution.
        x_t = _zeros_for([get_aval(v) for v in x])
        _, da_x = ad.jvp_flat(
            lambda *a: _run(jaxprs[0], a), list(primals[:n_mv]) + list(x), list(tangents[:n_mv]) + x_t
        )
        for i, d in enumerate(da_x):
            if _nonzero(d):
                rhs[i] = lax.neg(d) if rhs[i] is None else lax.sub(rhs[i], d)
    if all(r is None for r in rhs):
        return outs, out_t
    rhs = [zeros_like_aval(tangent_aval(get_aval(v))) if r is None else r for r, v in zip(rhs, b)]
    x_dot = custom_linear_solve_p.bind(*primals[:n_consts], *rhs, **params)
    return outs, x_dot[: len(b)] + out_t[len(b) :]


def _lin_transpose(cts, *args, const_lengths, jaxprs):
    n_consts = sum(const_lengths)
    consts, b = args[:n_consts], args[n_consts:]
    if any(is_undefined_primal(c) for c in consts):
        raise NotImplementedError(
            "custom_linear_solve is linear in b only: it cannot be transposed with respect to the "
            "operator's parameters."
        )
    if jaxprs[3] is None:
        raise TypeError(
            "transpose_solve required for backwards mode automatic differentiation of custom_linear_solve"
        )
    ct_x = cts[: len(b)]
    if all(is_zero(c) for c in ct_x):
        return [None] * n_consts + [Zero(a.aval) if is_undefined_primal(a) else None for a in b]
    mc, vc, sc, tc, _ = split_list(consts, *const_lengths)
    matvec, vecmat, solve, tsolve = jaxprs
    ct_b = custom_linear_solve_p.bind(
        *vc,
        *mc,
        *tc,
        *sc,
        *[instantiate(c) for c in ct_x],
        const_lengths=(len(vc), len(mc), len(tc), len(sc)),
        jaxprs=(vecmat, matvec, tsolve, solve),
    )
    return [None] * n_consts + [ct if is_undefined_primal(a) else None for ct, a in zip(ct_b, b)]


def _lin_batch(vals, dims, *, axis_data, const_lengths, jaxprs):
    n_consts = sum(const_lengths)
    consts, b, const_b = _batch_operands(vals, dims, n_consts, axis_data.size)
    parts = split_list(const_b, *const_lengths)
    nb = len(b)
    batched = tuple(
        None if j is None else _batch_jaxpr(j, axis_data, flags + [True] * nb)
        for j, flags in zip(jaxprs, parts)
    )
    outs = custom_linear_solve_p.bind(*consts, *b, const_lengths=const_lengths, jaxprs=batched)
    return outs, [0] * len(outs)


custom_linear_solve_p.jvp = _lin_jvp
custom_linear_solve_p.transpose = _lin_transpose
custom_linear_solve_p.batch = _lin_batch


# ------------------------------------------------------------------------------------- custom_root

custom_root_p = Primitive("custom_root", multiple_results=True)
# Runs its solve jaxpr (the others serve differentiation): compiled as a sub-program.
custom_root_p.kind = Kind.LOOP
custom_root_p.higher_order = True
custom_root_p.test_spec = None  # higher-order: tests/control_flow/test_solvers.py covers it

# Operands: the constants of f, solve and linearize-and-solve (`const_lengths`), then the leaves of
# the initial guess. `jaxprs` = (f, solve, l_and_s), where l_and_s(x, b) = tangent_solve(f'(x), b).


def _linearized(f, tree, x_leaves):
    """``t -> f'(x) t``: forward mode through `f` at the leaves `x_leaves` (pytree in and out)."""
    tan_avals = [tangent_aval(get_aval(x)) for x in x_leaves]

    def g(t):
        t_leaves, t_tree = pytree.tree_flatten(t)
        if t_tree != tree:
            raise TypeError(f"custom_root: the linearized function takes {tree}, got {t_tree}.")
        t_leaves = [lax.convert_element_type(_as_operand(v), a.dtype) for v, a in zip(t_leaves, tan_avals)]
        _, out_t = ad.jvp_flat(
            lambda *xs: pytree.tree_leaves(f(pytree.tree_unflatten(tree, xs))), x_leaves, t_leaves
        )
        dense = [zeros_like_aval(a) if is_zero(o) else o for o, a in zip(out_t, tan_avals)]
        return pytree.tree_unflatten(tree, dense)

    return g


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """``solve(f, initial_guess)``, a root of `f`, differentiated by the implicit function theorem.

    Derivatives flow to the values `f` closes over (not through `solve`, nor to the guess):
    ``dx = -tangent_solve(g, df)`` with ``g`` the linearization of `f` at the root and ``df`` the
    tangent of `f` there. ``tangent_solve(g, y)`` returns ``x`` with ``g(x) == y`` (for a scalar:
    ``lambda g, y: y / g(1.0)``). `solve` may return ``(root, aux)`` when `has_aux`.
    """
    leaves, tree, avals, (f_j, f_c), (solve_j, solve_c, solve_tree) = _trace_operator_and_solve(
        "f", f, solve, initial_guess, "initial_guess", has_aux
    )

    def l_and_s(xb):
        x, b = xb
        return tangent_solve(_linearized(f, tree, pytree.tree_leaves(x)), b)

    pair = pytree.treedef_tuple((tree, tree))
    ls_j, ls_c, ls_tree = _trace_tree(l_and_s, pair, avals + avals)
    _check_tree("tangent_solve", "x", ls_tree, tree)
    _check_types("tangent_solve", "x", ls_j.out_avals, avals)
    outs = custom_root_p.bind(
        *f_c,
        *solve_c,
        *ls_c,
        *leaves,
        const_lengths=(len(f_c), len(solve_c), len(ls_c)),
        jaxprs=(f_j, solve_j, ls_j),
    )
    return pytree.tree_unflatten(solve_tree, outs)


def _root_impl(*args, const_lengths, jaxprs):
    _, solve_c, _, guess = split_list(args, *const_lengths)
    solve = jaxprs[1]
    return _as_outputs(_run(solve, solve_c + guess), solve.out_avals)


def _root_abstract_eval(*avals, const_lengths, jaxprs):
    if len(const_lengths) != 3 or len(jaxprs) != 3:
        raise TypeError("custom_root: expects three const lengths and three jaxprs.")
    f_c, solve_c, ls_c, x = split_list(avals, *const_lengths)
    for name, j, ins in (
        ("f", jaxprs[0], f_c + x),
        ("solve", jaxprs[1], solve_c + x),
        ("l_and_s", jaxprs[2], ls_c + x + x),
    ):
        _check_body_types("custom_root", name, j, ins, x, "the guess's types")
    return list(jaxprs[1].out_avals)


def _root_jvp(primals, tangents, *, const_lengths, jaxprs):
    # f(p, x*(p)) = 0  =>  d_p f + d_x f . dx* = 0  =>  dx* = -(d_x f)^-1 (d_p f . dp).
    f, _, l_and_s = jaxprs
    n_f, n_s, n_l = const_lengths
    outs = custom_root_p.bind(*primals, const_lengths=const_lengths, jaxprs=jaxprs)
    n_x = len(f.out_avals)
    out_t = _zeros_for(jaxprs[1].out_avals)
    f_t = list(tangents[:n_f])
    if not any(_nonzero(t) for t in f_t):
        return outs, out_t
    sol = outs[:n_x]
    _, rhs = ad.jvp_flat(
        lambda *a: _run(f, a), list(primals[:n_f]) + sol, f_t + _zeros_for([get_aval(s) for s in sol])
    )
    if not any(_nonzero(r) for r in rhs):
        return outs, out_t
    rhs = [zeros_like_aval(tangent_aval(get_aval(s))) if not _nonzero(r) else r for r, s in zip(rhs, sol)]
    ls_consts = primals[n_f + n_s : n_f + n_s + n_l]
    sol_dot = [lax.neg(d) for d in _run(l_and_s, list(ls_consts) + sol + rhs)]
    return outs, sol_dot + out_t[n_x:]


def _root_batch(vals, dims, *, axis_data, const_lengths, jaxprs):
    n_consts = sum(const_lengths)
    consts, x, const_b = _batch_operands(vals, dims, n_consts, axis_data.size)
    f_b, s_b, l_b, _ = split_list(const_b, *const_lengths)
    nx = len(x)
    f, solve, l_and_s = jaxprs
    batched = (
        _batch_jaxpr(f, axis_data, f_b + [True] * nx),
        _batch_jaxpr(solve, axis_data, s_b + [True] * nx),
        _batch_jaxpr(l_and_s, axis_data, l_b + [True] * (2 * nx)),
    )
    outs = custom_root_p.bind(*consts, *x, const_lengths=const_lengths, jaxprs=batched)
    return outs, [0] * len(outs)


def _root_transpose(cts, *args, **params):
    # The JVP above never applies custom_root to tangents, so it never appears in a linear jaxpr.
    raise ValueError("custom_root is not linear; it cannot be transposed.")


custom_root_p.impl = _root_impl
custom_root_p.abstract_eval = _root_abstract_eval
custom_root_p.jvp = _root_jvp
custom_root_p.batch = _root_batch
custom_root_p.transpose = _root_transpose
