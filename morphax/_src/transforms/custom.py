"""`custom_jvp` and `custom_vjp`: user-defined derivative rules.

Each decorated call asks the current trace how to run it: the JVP trace applies the user rule,
every other trace runs the primal function. A custom VJP enters linearization as one
`custom_lin` equation whose transpose calls the user's backward function.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import Zero, instantiate, is_zero, tangent_aval, zeros_like_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.pytree_keys import keystr
from morphax._src.core.trace import Tracer


def _name(fun, default: str) -> str:
    """`fun`'s `__name__` where it is a string (an equinox Module rebuilt inside a loop answers a
    sentinel object), else `default`."""
    name = getattr(fun, "__name__", None)
    return name if isinstance(name, str) else default


@functools.lru_cache(maxsize=1024)
def _signature(fun):
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        return None, 0
    positional = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return sig, len(positional)


def _resolve_args(fun, args, kwargs):
    """The positional arguments of a call, keywords bound and defaults applied (as JAX resolves
    them, so nondiff_argnums can name a parameter left at its default)."""
    sig, n_positional = _signature(fun)
    if not kwargs and (sig is None or len(args) >= n_positional):
        return args
    if sig is None:
        raise TypeError(f"{getattr(fun, '__name__', fun)}: keyword arguments need an inspectable signature")
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args


def _split_nondiff(args, nondiff_argnums):
    nondiff = {i: args[i] for i in nondiff_argnums}
    diff = tuple(a for i, a in enumerate(args) if i not in nondiff)
    return nondiff, diff


def _merge(nondiff, diff, n):
    it = iter(diff)
    return tuple(nondiff[i] if i in nondiff else next(it) for i in range(n))


def _flat_primal_fun(fun, nondiff, in_tree, nargs, out_tree_box):
    """`fun` as a function of the flat differentiable leaves; records its output tree."""

    def flat_fun(*flat):
        out = fun(*_merge(nondiff, pytree.tree_unflatten(in_tree, flat), nargs))
        out_leaves, out_tree = pytree.tree_flatten(out)
        out_tree_box.append(out_tree)
        return out_leaves

    flat_fun.__name__ = _name(fun, "custom_fun")  # how staged calls print
    return flat_fun


def _call_with_trace(method, fallback, *rest):
    trace = _trace.current_trace()
    handler = getattr(trace, method, None)
    return fallback() if handler is None else handler(*rest)


class custom_jvp:
    """Wrap `fun` so its JVP is given by a user rule (``@f.defjvp`` or ``f.defjvps``)."""

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None
        self.symbolic_zeros = False

    def __getattr__(self, name):
        # A rule setter of the wrapped function (a custom_vmap's def_vmap) shows through, as in JAX.
        if name.startswith("def") and "fun" in self.__dict__:
            return getattr(self.fun, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def defjvp(self, jvp, symbolic_zeros=False):
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps):
        """One function per differentiable argument: ``jvp_i(g_i, ans, *primals)``; None for none."""

        def jvp(primals, tangents):
            ans = self(*primals)
            outs = []
            for fn, t in zip(jvps, tangents):
                if fn is None:
                    continue
                outs.append(fn(t, ans, *primals))
            if not outs:
                return ans, pytree.tree_map(lambda a: zeros_like_aval(tangent_aval(get_aval(a))), ans)
            total = outs[0]
            for o in outs[1:]:
                total = pytree.tree_map(lambda a, b: a + b, total, o)
            return ans, total

        self.jvp = jvp

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(
                f"No JVP defined for custom_jvp function {self.__name__} using defjvp: decorate a rule "
                f"with @{self.__name__}.defjvp before calling it."
            )
        args = _resolve_args(self.fun, args, kwargs)
        nondiff, diff = _split_nondiff(args, self.nondiff_argnums)
        leaves, in_tree = pytree.tree_flatten(diff)
        out_tree_box = []
        n_diff = len(leaves)
        nd_leaves, nd_tree = pytree.tree_flatten([nondiff[i] for i in sorted(nondiff)])
        # Traced values in nondiff positions (a batched array under vmap) must not be closed
        # over by the function and its rule, which transformations run on their own traces:
        # they travel as extra inputs, whose tangents the rule never sees.
        traced_nondiff = any(isinstance(x, Tracer) for x in nd_leaves)

        def nondiff_of(extra):
            if not traced_nondiff:
                return nondiff
            return dict(zip(sorted(nondiff), pytree.tree_unflatten(nd_tree, extra)))

        def flat_fun(*xs):
            inner = _flat_primal_fun(self.fun, nondiff_of(xs[n_diff:]), in_tree, len(args), out_tree_box)
            return inner(*xs[:n_diff])

        flat_fun.__name__ = _name(self.fun, "custom_fun")  # how staged calls print

        def flat_jvp(all_primals, all_tangents):
            primals, tangents = all_primals[:n_diff], all_tangents[:n_diff]
            nondiff_now = nondiff_of(all_primals[n_diff:])
            p_args = pytree.tree_unflatten(in_tree, primals)
            t_args = pytree.tree_unflatten(
                in_tree, [_tangent_for_user(t, self.symbolic_zeros) for t in tangents]
            )
            nd = [nondiff_now[i] for i in sorted(nondiff_now)]
            res = self.jvp(*nd, tuple(p_args), tuple(t_args))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise TypeError(
                    f"Custom JVP rule of {self.__name__} must return a pair (primal_out, tangent_out), got {res!r}"
                )
            p_out, t_out = res
            p_leaves, p_tree = pytree.tree_flatten(p_out)
            t_leaves, t_tree = pytree.tree_flatten(t_out)
            if t_tree != p_tree:  # None tangents may stand for zero ones (a None primal stays None)
                t_leaves, t_tree = pytree.tree_flatten(t_out, is_leaf=lambda x: x is None)
            if p_tree != t_tree and len(p_leaves) != len(t_leaves):
                raise TypeError(
                    f"Custom JVP rule of {self.__name__} must produce primal and tangent outputs with "
                    f"equal container structure, got {p_tree} and {t_tree}."
                )
            out_tree_box.append(p_tree)
            # None, or a SymbolicZero handed back to us (JAX accepts both), is a zero tangent.
            t_leaves = [
                Zero(tangent_aval(get_aval(p))) if t is None or isinstance(t, SymbolicZero) else t
                for p, t in zip(p_leaves, t_leaves)
            ]
            for p, t in zip(p_leaves, t_leaves):
                if not is_zero(t) and get_aval(t).shape != get_aval(p).shape:
                    raise ValueError(
                        f"Custom JVP rule of {self.__name__} returned a tangent of shape {get_aval(t).shape} "
                        f"for a primal output of shape {get_aval(p).shape}; they must match."
                    )
            return p_leaves, t_leaves

        flat_jvp.__name__ = _name(self.jvp, "jvp")
        if traced_nondiff:
            leaves = list(leaves) + nd_leaves
        outs = _call_with_trace(
            "process_custom_jvp_call",
            lambda: flat_fun(*leaves),
            flat_fun,
            flat_jvp,
            leaves,
            self.symbolic_zeros,
        )
        return pytree.tree_unflatten(out_tree_box[-1], outs)


def _tangent_for_user(t, symbolic_zeros):
    if is_zero(t):
        return SymbolicZero(t.aval) if symbolic_zeros else instantiate(t)
    return t


class SymbolicZero:
    """What a custom rule with ``symbolic_zeros=True`` receives for an input with no tangent."""

    def __init__(self, aval):
        self.aval = aval
        self.shape = aval.shape
        self.dtype = aval.dtype

    def __repr__(self):
        return f"SymbolicZero({self.aval.str_short()})"


# --------------------------------------------------------------------------------------- custom_vjp


@dataclasses.dataclass(slots=True)
class CustomVJPPrimal:
    """What a custom_vjp's forward rule receives for each primal leaf when ``symbolic_zeros`` is
    set: the value, and whether it is perturbed (carries a nonzero tangent)."""

    value: object
    perturbed: bool


def custom_vjp_primal_tree_values(tree):
    """The tree of values of a forward rule's CustomVJPPrimal records (its arguments without the
    perturbation flags)."""

    def value(leaf):
        if type(leaf) is not CustomVJPPrimal:
            raise TypeError(f"unexpected leaf type {type(leaf)}")
        return leaf.value

    return pytree.tree_map(value, tree)


def zero_from_primal(val, symbolic_zeros=False):
    """For each leaf of `val`, the zero of its tangent type: a SymbolicZero, or dense zeros."""

    def zero(x):
        aval = tangent_aval(get_aval(x))
        return SymbolicZero(aval) if symbolic_zeros else zeros_like_aval(aval)

    return pytree.tree_map(zero, val)


custom_lin_p = Primitive("custom_lin", multiple_results=True)
# Only in linear jaxprs between linearize and transpose; evaluating it raises (forward mode of a
# custom_vjp): run as its reference, never fused.
custom_lin_p.kind = Kind.OPAQUE
# It carries the user's backward function as a parameter, like a higher-order primitive.
custom_lin_p.higher_order = True


def _custom_lin_abstract_eval(*args, num_res, bwd, out_avals, symbolic_zeros):
    return list(out_avals)


_FORWARD_MODE_ERROR = (
    "can't apply forward-mode autodiff (jvp) to a custom_vjp function: it defines only a "
    "reverse-mode rule. Use vjp/grad, or define the derivative with custom_jvp instead."
)


def _custom_lin_impl(*args, num_res, bwd, out_avals, symbolic_zeros):
    raise TypeError(_FORWARD_MODE_ERROR)


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, symbolic_zeros):
    res = args[:num_res]
    # A bwd rule with symbolic_zeros receives a SymbolicZero where no cotangent flows, as in JAX
    # (equinox's filter_custom_vjp tests for that type).
    cts = [
        (SymbolicZero(ct.aval) if symbolic_zeros else instantiate(ct)) if is_zero(ct) else ct for ct in cts
    ]
    cts_in = bwd(list(res), cts)
    return [None] * num_res + list(cts_in)


def _custom_lin_batch(vals, dims, *, axis_data, **params):
    _custom_lin_impl(**params)


custom_lin_p.abstract_eval = _custom_lin_abstract_eval
custom_lin_p.batch = _custom_lin_batch
custom_lin_p.impl = _custom_lin_impl
custom_lin_p.transpose = _custom_lin_transpose
# Only ever transposed: a compiler asked to run it forward raises this at compile time, i.e. when
# the jitted call is made (as JAX does), not when its asynchronous result is read.
custom_lin_p.compile_error = _FORWARD_MODE_ERROR


class custom_vjp:
    """Wrap `fun` so its VJP is given by ``f.defvjp(fwd, bwd)``."""

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = None
        self.bwd = None
        self.symbolic_zeros = False

    def __getattr__(self, name):
        # A rule setter of the wrapped function (a custom_vmap's def_vmap) shows through, as in JAX.
        if name.startswith("def") and "fun" in self.__dict__:
            return getattr(self.fun, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
        self.fwd = fwd
        self.bwd = bwd
        self.symbolic_zeros = symbolic_zeros

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise AttributeError(
                f"No VJP defined for custom_vjp function {self.__name__} using defvjp: call "
                f"{self.__name__}.defvjp(fwd, bwd) before calling it."
            )
        args = _resolve_args(self.fun, args, kwargs)
        nondiff, diff = _split_nondiff(args, self.nondiff_argnums)
        nd = [nondiff[i] for i in sorted(nondiff)]
        leaves, in_tree = pytree.tree_flatten(diff)
        out_tree_box = []

        flat_fun = _flat_primal_fun(self.fun, nondiff, in_tree, len(args), out_tree_box)

        def flat_fwd(*flat, perturbed=None):
            if self.symbolic_zeros:
                # JAX hands the rule records of each primal and whether it carries a tangent.
                flags = [True] * len(flat) if perturbed is None else perturbed
                flat = [CustomVJPPrimal(x, bool(p)) for x, p in zip(flat, flags)]
            res = self.fwd(*_merge(nondiff, pytree.tree_unflatten(in_tree, flat), len(args)))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise TypeError(
                    f"Custom VJP fwd rule of {self.__name__} must return a pair (output, residuals), got {res!r}"
                )
            out, residuals = res
            out_leaves, out_tree = pytree.tree_flatten(out)
            out_tree_box.append(out_tree)
            res_leaves, res_tree = pytree.tree_flatten(residuals)
            return out_leaves, res_leaves, res_tree

        def flat_bwd(res_leaves, res_tree, cts):
            residuals = pytree.tree_unflatten(res_tree, res_leaves)
            ct_tree = pytree.tree_unflatten(out_tree_box[-1], cts)
            cts_in = self.bwd(*nd, residuals, ct_tree)
            rule = _name(self.bwd, "bwd")
            return _check_bwd_output(rule, self.__name__, cts_in, diff, leaves)

        flat_fwd.__name__ = _name(self.fwd, "fwd")
        flat_bwd.__name__ = _name(self.bwd, "bwd")
        outs = _call_with_trace(
            "process_custom_vjp_call",
            lambda: flat_fun(*leaves),
            flat_fun,
            flat_fwd,
            flat_bwd,
            leaves,
            self.symbolic_zeros,
        )
        return pytree.tree_unflatten(out_tree_box[-1], outs)


def _check_bwd_output(rule, fun_name, cts_in, diff, leaves):
    """The bwd rule's cotangents as a flat list (None for zero), checked as JAX checks them.

    Like JAX: the output must be a tuple (or list) with the container structure of the primal
    arguments, where ``None`` may stand for a whole argument or any leaf (a zero cotangent); each
    cotangent of a float argument must have that argument's shape (no broadcasting). Dtypes are not
    checked, and cotangents of integer/bool arguments are ignored, which is what JAX 0.10.2 does.
    """
    where = f"Custom VJP bwd rule {rule} (of {fun_name})"
    if isinstance(cts_in, list):
        cts_in = tuple(cts_in)
    in_tree = pytree.tree_structure(tuple(diff))
    if not isinstance(cts_in, tuple) or len(cts_in) != len(diff):
        raise TypeError(
            f"{where} must produce an output with the same container (pytree) structure as the args "
            f"tuple of the primal function, and in particular must produce a tuple of length equal to "
            f"the number of arguments to the primal function ({len(diff)}), but got bwd output "
            f"structure {pytree.tree_structure(cts_in, is_leaf=_is_none)} for primal input structure "
            f"{in_tree}."
        )
    flat = []
    for i, (ct, arg) in enumerate(zip(cts_in, diff)):
        arg_tree = pytree.tree_structure(arg)
        if ct is None:  # a zero cotangent for the whole argument
            flat.extend([None] * arg_tree.num_leaves)
            continue
        with_path, ct_tree = pytree.tree_flatten_with_path(ct)
        if ct_tree != arg_tree:  # None may stand for a leaf's zero (a None in the args stays None)
            with_path, ct_tree = pytree.tree_flatten_with_path(ct, is_leaf=_is_none)
        if ct_tree != arg_tree:
            raise TypeError(
                f"{where} must produce an output with the same container (pytree) structure as the "
                f"args tuple of the primal function, but at output[{i}] got bwd output structure "
                f"{ct_tree} for primal input structure {arg_tree} (whole output structure "
                f"{pytree.tree_structure(cts_in, is_leaf=_is_none)} for primal input structure "
                f"{in_tree}). Return one cotangent per primal argument leaf, or None for a zero."
            )
        flat.extend(leaf for _, leaf in with_path)
        start = len(flat) - len(with_path)
        for j, (path, leaf) in enumerate(with_path):
            if leaf is None:
                continue
            primal = get_aval(leaves[start + j])
            if type(leaf) is SymbolicZero:  # a zero cotangent, as None is (JAX accepts both)
                flat[start + j] = None
                mismatch = leaf.aval.shape != primal.shape or leaf.aval.dtype != tangent_aval(primal).dtype
                if _dtypes.is_inexact(primal.dtype) and mismatch:
                    raise ValueError(
                        f"{where} produced a SymbolicZero with a shape/dtype that "
                        f"does not match the corresponding input tangent shape/dtype: at output[{i}]"
                        f"{keystr(path)} the SymbolicZero had shape/dtype {leaf.aval.str_short()} while "
                        f"the corresponding input had shape/dtype {primal.str_short()}. Consider just "
                        "returning a None here instead of a SymbolicZero object."
                    )
                continue
            if not _dtypes.is_inexact(primal.dtype):
                continue  # JAX ignores what a bwd rule returns for integer inputs
            got = get_aval(leaf)
            if got.shape != primal.shape:
                raise ValueError(
                    f"{where} must produce an output with the same shape/dtypes as the args tuple of "
                    f"the primal function, but at output[{i}]{keystr(path)} the bwd rule produced an "
                    f"output of type {got.str_short()} corresponding to an input of type "
                    f"{primal.str_short()}, so the shapes do not match. Return a cotangent of shape "
                    f"{primal.shape} (e.g. sum a broadcast gradient back down to it)."
                )
    return flat


def _is_none(x):
    return x is None


def jvp_of_custom_vjp(trace, lift, fun, fwd, bwd, args, symbolic_zeros):
    """How a JVP trace runs a custom_vjp call: fwd on the primals, a `custom_lin` for tangents.
    Returns (None, outputs) when no input has a tangent, else (outputs, output tangents)."""
    primals, tangents = zip(*[lift(x) for x in args]) if args else ((), ())
    with _trace.set_current_trace(trace.parent):
        return custom_vjp_jvp(list(primals), list(tangents), fun, fwd, bwd, symbolic_zeros)


def custom_vjp_jvp(primals, tangents, fun, fwd, bwd, symbolic_zeros):
    """`jvp_of_custom_vjp` on the current trace (the one below the JVP)."""
    if all(is_zero(t) for t in tangents):
        return None, fun(*primals)
    out, res, res_tree = fwd(*primals, perturbed=[not is_zero(t) for t in tangents])
    out_avals = tuple(ShapedArray(get_aval(o).shape, tangent_aval(get_aval(o)).dtype) for o in out)

    def bwd_flat(res_leaves, cts):
        cts_in = bwd(res_leaves, res_tree, cts)
        return [ct if ct is not None else Zero(tangent_aval(get_aval(p))) for ct, p in zip(cts_in, primals)]

    tangents_in = [instantiate(t) for t in tangents]
    out_t = custom_lin_p.bind(
        *res,
        *tangents_in,
        num_res=len(res),
        bwd=bwd_flat,
        out_avals=out_avals,
        symbolic_zeros=symbolic_zeros,
    )
    return out, out_t
