"""`linear_call`: call a function linear in some of its arguments, with a user-given transpose.

`linear_call_p` carries the traced function as a closed jaxpr (`callee`) and its transpose as a
thunk that traces `fun_transpose` the first time transposition needs it. Its rules:

- evaluation runs `callee` (the compiler inlines it like any call: `call_jaxpr_param`);
- JVP: the tangents of the linear arguments go through the same call (the function is linear in
  them); tangents of the residual arguments are an error, as in JAX;
- transposition: another `linear_call_p` whose callee is the traced `fun_transpose` and whose
  transpose is the original callee, so transposing twice calls `fun` again;
- batching: the callee and (lazily) the transpose are batched with `batch_jaxpr`.
"""

from __future__ import annotations

from morphax._src.core import pytree
from morphax._src.core.ad_util import Zero, is_undefined_primal, is_zero, tangent_aval, zeros_like_aval
from morphax._src.core.avals import get_aval
from morphax._src.core.batch_axes import bdim_to_front
from morphax._src.core.dtypes import is_python_scalar, python_scalar_dtype
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.values import make_array
from morphax._src.passes._util import eqn_has_effects
from morphax._src.prims.conversion import convert_element_type
from morphax._src.transforms.batching import batch_jaxpr
from morphax._src.transforms.staging import (
    call_out_avals,
    closure_convert_tracers,
    eval_call_jaxpr,
    make_debug_info,
    trace_to_jaxpr,
)

__all__ = ["linear_call", "linear_call_p"]


class _TransposeThunk:
    """The `transpose_thunk` param: ``thunk() -> (closed transpose jaxpr, its leading operands)``,
    built on first call and kept. `__name__` (the transpose function's name) is what a printed
    jaxpr shows; `partner` names the callee, which is the transpose of the transpose."""

    __slots__ = ("__name__", "partner", "_build", "_value")

    def __init__(self, name, partner, build):
        self.__name__, self.partner = name, partner
        self._build, self._value = build, None

    def __call__(self):
        if self._value is None:
            self._value = self._build()
        return self._value

    def __repr__(self):
        return f"<transpose_thunk {self.__name__}>"


def _fun_name(f) -> str:
    return getattr(f, "__name__", None) or type(f).__name__


# ------------------------------------------------------------------------------------ primitive

linear_call_p = Primitive("linear_call", multiple_results=True)
linear_call_p.kind = Kind.CALL
linear_call_p.higher_order = True
# Evaluating the equation is evaluating `callee` on its operands: the compiler inlines it (the
# transpose only matters to transformations, which have run by then).
linear_call_p.call_jaxpr_param = "callee"
linear_call_p.test_spec = None


def _impl(*args, callee, transpose_thunk, num_callee_consts, num_res):
    return eval_call_jaxpr(callee, args)


def _abstract_eval(*in_avals, callee, transpose_thunk, num_callee_consts, num_res):
    return call_out_avals(f"linear_call {transpose_thunk.partner}", in_avals, callee)


def _jvp(primals, tangents, *, callee, transpose_thunk, num_callee_consts, num_res):
    n_fixed = num_callee_consts + num_res
    name = transpose_thunk.partner
    # NB: JAX fails an internal assertion in both cases; here they are clear errors.
    if any(not is_zero(t) for t in tangents[:num_callee_consts]):
        raise TypeError(
            f"linear_call: differentiation of {name} with respect to a value it closes over. "
            f"{name} is only declared linear in linear_args: pass the value in linear_args (or in "
            "residual_args under stop_gradient) instead of closing over it."
        )
    if any(not is_zero(t) for t in tangents[num_callee_consts:n_fixed]):
        raise TypeError(
            f"linear_call: differentiation of {name} with respect to residual_args is not supported "
            "(as in JAX): the function and its transpose are only linear in linear_args, and no rule "
            "says how the result changes with the residuals. Apply stop_gradient to the residual "
            "arguments, or move the differentiated value into linear_args."
        )
    params = dict(
        callee=callee,
        transpose_thunk=transpose_thunk,
        num_callee_consts=num_callee_consts,
        num_res=num_res,
    )
    out = linear_call_p.bind(*primals, **params)
    lin_tangents = tangents[n_fixed:]
    if all(is_zero(t) for t in lin_tangents):
        return out, [Zero(tangent_aval(a)) for a in callee.out_avals]
    # The function is linear in these arguments: their tangents map through the same call. A
    # symbolic zero becomes dense zeros of the argument's own type (an integer argument too).
    lin_avals = callee.in_avals[n_fixed:]
    dense = [zeros_like_aval(a) if is_zero(t) else t for t, a in zip(lin_tangents, lin_avals)]
    out_t = linear_call_p.bind(*primals[:n_fixed], *dense, **params)
    return out, out_t


def _transpose(cts, *args, callee, transpose_thunk, num_callee_consts, num_res):
    n_fixed = num_callee_consts + num_res
    if any(is_undefined_primal(a) for a in args[:n_fixed]):
        what = (
            "residual_args"
            if any(is_undefined_primal(a) for a in args[num_callee_consts:n_fixed])
            else "a value the function closes over"
        )
        raise TypeError(
            f"linear_call: cannot transpose {transpose_thunk.partner} with respect to {what}: it is "
            "only declared linear in linear_args (and its transpose only maps cotangents to those)."
        )
    lin = args[n_fixed:]
    if all(is_zero(c) for c in cts):
        return [None] * n_fixed + [Zero(a.aval) if is_undefined_primal(a) else None for a in lin]
    t_closed, t_consts = transpose_thunk()
    cts = [zeros_like_aval(a) if is_zero(c) else c for c, a in zip(cts, callee.out_avals)]
    f_consts, res = args[:num_callee_consts], args[num_callee_consts:n_fixed]
    # The transpose's transpose is this call's function, with the operands it was called with.
    swapped = _TransposeThunk(
        transpose_thunk.partner, transpose_thunk.__name__, lambda: (callee, list(f_consts))
    )
    outs = linear_call_p.bind(
        *t_consts,
        *res,
        *cts,
        callee=t_closed,
        transpose_thunk=swapped,
        num_callee_consts=len(t_consts),
        num_res=num_res,
    )
    # Linear operands that are known (dense zero tangents of an untouched argument) take no
    # cotangent.
    return [None] * n_fixed + [o if is_undefined_primal(a) else None for a, o in zip(lin, outs)]


def _batch(vals, dims, *, axis_data, callee, transpose_thunk, num_callee_consts, num_res):
    # NB: JAX has no batching rule for linear_call. Here the callee is batched with every linear
    # operand and every output batched at axis 0 (unbatched linear operands are broadcast, outside
    # the call, so their transpose sums the broadcast cotangents), which makes the batched
    # transpose simply the transpose batched with the cotangents at axis 0.
    n_fixed = num_callee_consts + num_res
    size = axis_data.size
    lin = [bdim_to_front(v, d, size) for v, d in zip(vals[n_fixed:], dims[n_fixed:])]
    in_dims = list(dims[:n_fixed]) + [0] * len(lin)
    batched, _ = batch_jaxpr(callee, axis_data, in_dims, instantiate=True)
    res_dims = list(dims[num_callee_consts:n_fixed])
    n_out = len(callee.out_avals)

    def build():
        t_closed, t_consts = transpose_thunk()
        t_dims = [None] * len(t_consts) + res_dims + [0] * n_out
        t_batched, _ = batch_jaxpr(t_closed, axis_data, t_dims, instantiate=True)
        return t_batched, t_consts

    thunk = _TransposeThunk(f"vmap({transpose_thunk.__name__})", f"vmap({transpose_thunk.partner})", build)
    outs = linear_call_p.bind(
        *vals[:n_fixed],
        *lin,
        callee=batched,
        transpose_thunk=thunk,
        num_callee_consts=num_callee_consts,
        num_res=num_res,
    )
    return outs, [0] * len(outs)


def _dce(used_outputs, eqn):
    # The transpose maps cotangents of every output to every linear operand, so the call is kept
    # whole or dropped whole (pruning operands would break its pairing with the transpose).
    if not any(used_outputs) and not eqn_has_effects(eqn):
        return [False] * len(eqn.invars), None
    return [True] * len(eqn.invars), eqn


linear_call_p.impl = _impl
linear_call_p.abstract_eval = _abstract_eval
linear_call_p.jvp = _jvp
linear_call_p.transpose = _transpose
linear_call_p.batch = _batch


def _pp_params(eqn, params):
    # NB: JAX prints its transpose thunk as a function object at an address; the name of the
    # user's transpose function says more.
    thunk = params["transpose_thunk"]
    params["transpose_thunk"] = getattr(thunk, "__name__", thunk)
    return params


linear_call_p.pp_params = _pp_params
linear_call_p.dce_rule = _dce


# ------------------------------------------------------------------------------------------ API


def _as_array(x):
    if is_python_scalar(x):
        return make_array(x, python_scalar_dtype(x), weak_type=type(x) is not bool)
    return x


def _leaf_names(tree, prefix) -> list[str]:
    example = pytree.tree_unflatten(tree, [0] * tree.num_leaves)
    return [prefix + pytree.keystr(p) for p, _ in pytree.tree_flatten_with_path(example)[0]]


def _transpose_builder(
    fun_transpose, residual_args, res_tree, out_tree, lin_tree, res_avals, out_avals, lin_avals
):
    """Traces `fun_transpose(residual_args, cotangents)` at the residual and output types, checking
    that it returns one value of each linear argument's structure, shape and dtype."""
    n_res = len(res_avals)
    t_name = _fun_name(fun_transpose)

    def flat(*xs):
        res = pytree.tree_unflatten(res_tree, list(xs[:n_res]))
        cts = pytree.tree_unflatten(out_tree, list(xs[n_res:]))
        out = fun_transpose(res, cts)
        leaves, tree = pytree.tree_flatten(out)
        if tree != lin_tree:
            raise TypeError(
                f"linear_call: fun_transpose {t_name} must return a pytree with the structure of "
                f"linear_args, but it returned structure {tree} where linear_args has structure "
                f"{lin_tree}."
            )
        names = _leaf_names(lin_tree, "linear_args")
        checked = []
        for leaf, want, name in zip(leaves, lin_avals, names):
            leaf = _as_array(leaf)
            got = get_aval(leaf)
            if got.shape != want.shape:
                raise ValueError(
                    f"linear_call: fun_transpose {t_name} must return cotangents of the linear "
                    f"arguments' types, but for {name} (type {want.str_short()}) it returned type "
                    f"{got.str_short()}."
                )
            if got.dtype != want.dtype:
                if not got.weak_type:
                    # NB: JAX passes a cotangent of another dtype through; it would break the sums
                    # of cotangents downstream, so it is an error here.
                    raise TypeError(
                        f"linear_call: fun_transpose {t_name} must return cotangents of the linear "
                        f"arguments' dtypes, but for {name} (type {want.str_short()}) it returned "
                        f"type {got.str_short()}."
                    )
                leaf = convert_element_type(leaf, want.dtype)  # a weakly typed constant (`7.`)
            checked.append(leaf)
        return checked

    def build():
        example_cts = pytree.tree_unflatten(out_tree, list(out_avals))
        dbg = make_debug_info("linear_call fun_transpose", fun_transpose, (residual_args, example_cts), {})
        closed = trace_to_jaxpr(flat, list(res_avals) + list(out_avals), debug_info=dbg)
        return closure_convert_tracers(closed)

    return build


def linear_call(fun, fun_transpose, residual_args, linear_args):
    """Call ``fun(residual_args, linear_args)``, a function linear in `linear_args`, with
    ``fun_transpose(residual_args, cotangents)`` as its transpose.

    `fun` may do anything with the residuals (``x / r`` is linear in ``x``, not in ``r``) but must
    be linear in the linear arguments; `fun_transpose` takes the same residuals and a pytree of
    the type of `fun`'s output, and returns one of the type of `linear_args`. Reverse-mode
    differentiation and `linear_transpose` then call `fun_transpose` instead of transposing
    `fun`, and the transpose of that call is `fun` again. Forward-mode tangents of the linear
    arguments go through `fun`; differentiating with respect to the residuals is an error.

    Example: ``linear_call(lambda r, x: x / r, lambda r, t: t / r, 3.0, x)``.

    `fun_transpose` is traced (and its output checked against `linear_args`) the first time a
    transposition needs it, so, as in JAX, values it needs from an enclosing `jit` or `vmap`
    should come in through `residual_args` rather than its closure.
    """
    res_leaves, res_tree = pytree.tree_flatten(residual_args)
    lin_leaves, lin_tree = pytree.tree_flatten(linear_args)
    res_leaves = [_as_array(x) for x in res_leaves]
    lin_leaves = [_as_array(x) for x in lin_leaves]
    res_avals = [get_aval(x) for x in res_leaves]
    lin_avals = [get_aval(x) for x in lin_leaves]
    n_res = len(res_leaves)
    store = {}

    def flat(*xs):
        res = pytree.tree_unflatten(res_tree, list(xs[:n_res]))
        lin = pytree.tree_unflatten(lin_tree, list(xs[n_res:]))
        out_leaves, store["tree"] = pytree.tree_flatten(fun(res, lin))
        return out_leaves

    dbg = make_debug_info("linear_call fun", fun, (residual_args, linear_args), {})
    closed = trace_to_jaxpr(flat, res_avals + lin_avals, debug_info=dbg)
    # Tracers of enclosing transformations that `fun` closes over become leading operands.
    closed, lifted = closure_convert_tracers(closed)
    out_tree = store["tree"]
    build = _transpose_builder(
        fun_transpose, residual_args, res_tree, out_tree, lin_tree, res_avals, closed.out_avals, lin_avals
    )
    thunk = _TransposeThunk(_fun_name(fun_transpose), _fun_name(fun), build)
    outs = linear_call_p.bind(
        *lifted,
        *res_leaves,
        *lin_leaves,
        callee=closed,
        transpose_thunk=thunk,
        num_callee_consts=len(lifted),
        num_res=n_res,
    )
    return pytree.tree_unflatten(out_tree, outs)
