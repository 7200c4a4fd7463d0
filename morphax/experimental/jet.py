"""`morphax.experimental.jet` (JAX's `jax.experimental.jet`): Taylor-mode differentiation.

``jet(f, (x,), ((x1, ..., xK),))`` pushes a truncated Taylor polynomial through `f`: given the
derivatives x_k = d^k/dt^k x(t) at t = 0 of a curve through x, it returns f(x) and the
derivatives f_k = d^k/dt^k f(x(t)) at t = 0, all K orders in one pass instead of K nested JVPs.

How: `f` is traced to a jaxpr, and the jaxpr is evaluated equation by equation on (value,
coefficients) pairs with each primitive's Taylor rule, on normalized coefficients
c_k = x_k / k! (the recurrences are simplest there; Griewank and Walther, Evaluating Derivatives,
ch. 13). The evaluation binds ordinary primitives, so `jet` composes with jit, grad and vmap
around or inside it. Nested `jit`, `checkpoint`, `custom_jvp` and `custom_vjp` calls are evaluated
through their primal bodies (as JAX's jet does: custom rules are not used), a `cond` through its
branches. A primitive without a Taylor rule raises NotImplementedError naming it.
"""

from __future__ import annotations

import math

import numpy as np

import morphax.numpy as jnp
from morphax import lax
from morphax._src.api.tracing import make_jaxpr
from morphax._src.core.jaxpr import Literal
from morphax._src.core.trace import Tracer
from morphax._src.tree_util import tree_flatten, tree_unflatten, treedef_is_leaf


def jet(fun, primals, series, **_):
    """(f(*primals), series_out): `series[i]` holds the derivatives (x_1, ..., x_K) of argument i
    along the curve; series_out the derivatives of each output, in the output's structure.
    Each primal must be an array or scalar (not a pytree); every argument has K terms.
    ``factorial_scaled=False`` reads and writes normalized Taylor coefficients x_k / k! instead."""
    factorial_scaled = _.pop("factorial_scaled", True)
    if _:
        raise TypeError(f"jet() got unexpected keyword arguments {sorted(_)}")
    if not isinstance(primals, (tuple, list)) or not isinstance(series, (tuple, list)):
        raise ValueError(
            f"jet: primals and series must be tuples or lists (one entry per argument of fun), got "
            f"{type(primals).__name__} and {type(series).__name__}."
        )
    if len(primals) != len(series):
        raise ValueError(
            f"jet: primals and series must have the same length, got {len(primals)} and {len(series)}."
        )
    try:
        (order,) = set(map(len, series))
    except ValueError:
        raise ValueError("jet terms have inconsistent lengths for different arguments") from None
    for i, (x, terms) in enumerate(zip(primals, series)):
        if not treedef_is_leaf(tree_flatten(x)[1]):
            raise ValueError(f"primal value at position {i} is not an array")
        for j, t in enumerate(terms):
            if not treedef_is_leaf(tree_flatten(t)[1]):
                raise ValueError(f"term {j} for argument {i} is not an array")
            if np.shape(t) != np.shape(x):
                raise ValueError(
                    f"jet: term {j} of argument {i} has shape {np.shape(t)}, its primal {np.shape(x)}; "
                    "each term must have the primal's shape."
                )
    scale = [math.factorial(k + 1) for k in range(order)]
    coeffs = [
        [jnp.asarray(t) / scale[k] if factorial_scaled else jnp.asarray(t) for k, t in enumerate(terms)]
        for terms in series
    ]
    out_primals, out_coeffs, out_tree = _jet_flat(fun, list(primals), coeffs, order)
    out_series = []
    for p, cs in zip(out_primals, out_coeffs):
        cs = [jnp.zeros_like(p)] * order if cs is None else cs
        out_series.append([c * scale[k] for k, c in enumerate(cs)] if factorial_scaled else list(cs))
    return tree_unflatten(out_tree, out_primals), tree_unflatten(out_tree, out_series)


def _jet_flat(fun, primals, coeffs, order):
    """Evaluate fun's jaxpr on (primal, normalized coefficients or None) pairs: flat outputs,
    their coefficients (None: all zero) and the output tree."""
    closed, shape = make_jaxpr(fun, return_shape=True)(*primals)
    out_tree = tree_flatten(shape)[1]
    flat_primals = [x for p in primals for x in tree_flatten(p)[0]]
    outs = _eval(closed.jaxpr, closed.consts, flat_primals, [c or None for c in coeffs], order)
    return [p for p, _ in outs], [s for _, s in outs], out_tree


def _taylor(fun, primals, coeffs, order):
    """Normalized coefficients of fun(*primals) (one output) along the given coefficients (None:
    a constant argument), to `order`: [value, c_1, ..., c_order], zeros filled in."""
    (p,), (cs,), _ = _jet_flat(fun, primals, coeffs, order)
    return [p] + (cs if cs is not None else [jnp.zeros_like(p)] * order)


# --------------------------------------------------------------------------- the evaluator


def _closed_parts(j):
    """(jaxpr, consts) of a ClosedJaxpr or a bare Jaxpr param."""
    return (j.jaxpr, j.consts) if hasattr(j, "consts") else (j, ())


def _eval(jaxpr, consts, primals, coeffs, order):
    env: dict = {}

    def read(v):
        return (v.val, None) if isinstance(v, Literal) else env[v]

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = (c, None)
    for v, p, s in zip(jaxpr.invars, primals, coeffs):
        env[v] = (p, s)
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        ps = [p for p, _ in ins]
        ss = [s for _, s in ins]
        prim = eqn.primitive
        if all(s is None for s in ss):
            out = prim.bind(*ps, **eqn.params)
            outs = list(out) if prim.multiple_results else [out]
            series_out = [None] * len(outs)
        else:
            outs, series_out = _apply(prim, ps, ss, order, eqn.params)
        for v, p, s in zip(eqn.outvars, outs, series_out):
            if s is not None and not _inexact(p):
                s = None  # integers and booleans carry no series
            env[v] = (p, s)
    return [read(v) for v in jaxpr.outvars]


def _inexact(x) -> bool:
    return jnp.issubdtype(jnp.result_type(x), jnp.inexact)


def _apply(prim, ps, ss, order, params):
    """(outputs, their coefficient lists) of one equation with some nonzero input series."""
    name = prim.name
    if name in _CALLS:
        jaxpr, consts = _closed_parts(params[_CALLS[name]])
        outs = _eval(jaxpr, consts, ps, ss, order)
        return [p for p, _ in outs], [s for _, s in outs]
    if name == "cond":
        return _cond(ps, ss, order, params)
    if name in _ZERO:
        out = prim.bind(*ps, **params)
        outs = list(out) if prim.multiple_results else [out]
        return outs, [None] * len(outs)
    rule = _RULES.get(name)
    if rule is None:
        raise NotImplementedError(
            f"jet: no Taylor rule for primitive '{name}' (it is applied to a value with a nonzero series). "
            "Rules exist for elementwise arithmetic and special functions, linear and indexing "
            "operations, products, reductions by sum/max/min, sort, and calls (jit, checkpoint, custom "
            "derivatives, cond); express the function with those, or stop_gradient the input."
        )
    terms = [s if s is not None else [jnp.zeros_like(p)] * order for p, s in zip(ps, ss)]
    out, out_terms = rule(prim, ps, terms, order, ss, **params)
    if prim.multiple_results:
        return list(out), list(out_terms)
    return [out], [out_terms]


# Call-like primitives evaluated through their bodies (the param holding the body).
_CALLS = {
    "jit": "jaxpr",
    "remat2": "jaxpr",
    "closed_call": "call_jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_vjp_call": "call_jaxpr",
}

# Piecewise-constant (or non-numeric) outputs: zero series whatever comes in.
_ZERO = {
    "eq", "ne", "lt", "le", "gt", "ge", "not", "and", "or", "xor", "floor", "ceil", "round",
    "sign", "stop_gradient", "is_finite", "shift_left", "shift_right_arithmetic",
    "shift_right_logical", "bitcast_convert_type", "argmax", "argmin", "population_count", "clz",
    "nextafter",
}  # fmt: skip


def _cond(ps, ss, order, params):
    index, operands = ps[0], ps[1:]
    branches = params["branches"]
    if not isinstance(index, Tracer):  # a known branch: evaluate only that one
        k = int(np.clip(int(np.asarray(index)), 0, len(branches) - 1))
        jaxpr, consts = _closed_parts(branches[k])
        outs = _eval(jaxpr, consts, operands, ss[1:], order)
        return [p for p, _ in outs], [s for _, s in outs]
    # A traced index: every branch, then the chosen one's values and series elementwise.
    results = [_eval(*_closed_parts(b), operands, ss[1:], order) for b in branches]
    which = lax.clamp(0, index.astype(np.int32), len(branches) - 1)
    outs, series = [], []
    for position in range(len(results[0])):
        vals = [r[position][0] for r in results]
        outs.append(lax.select_n(which, *vals))
        per_branch = [r[position][1] for r in results]
        if all(s is None for s in per_branch):
            series.append(None)
            continue
        filled = [s if s is not None else [jnp.zeros_like(v)] * order for s, v in zip(per_branch, vals)]
        series.append([lax.select_n(which, *(f[k] for f in filled)) for k in range(order)])
    return outs, series


# --------------------------------------------------------------------------- rules
# A rule: (prim, primals, terms (coefficient lists c_1..c_K, zeros for constants), order,
# raw series (None marks a constant argument), **params) -> (output(s), output terms).


def _linear_in(*positions):
    """Linear in the arguments at `positions` (all when empty), the others held at their value:
    each coefficient is the primitive applied to that coefficient of the linear arguments."""

    def rule(prim, ps, terms, order, raw, **params):
        out = prim.bind(*ps, **params)
        lin = positions or range(len(ps))
        per_order = []
        for k in range(order):
            args = [terms[i][k] if i in lin else ps[i] for i in range(len(ps))]
            per_order.append(prim.bind(*args, **params))
        if prim.multiple_results:
            return out, [list(t) for t in zip(*per_order)] if order else [[] for _ in out]
        return out, per_order

    return rule


def _bilinear(prim, ps, terms, order, raw, **params):
    # (x y)_k = sum_j x_j y_{k-j}, both series including the value.
    x, y = [ps[0], *terms[0]], [ps[1], *terms[1]]
    out = [prim.bind(x[0], y[0], **params)]
    for k in range(1, order + 1):
        acc = None
        for j in range(k + 1):
            if (j and raw[0] is None) or (k - j and raw[1] is None):
                continue  # a constant's higher coefficients are zero
            term = prim.bind(x[j], y[k - j], **params)
            acc = term if acc is None else acc + term
        out.append(acc)
    return out[0], out[1:]


def _div(prim, ps, terms, order, raw, **params):
    # v = x / y: v_k = (x_k - sum_{j<k} v_j y_{k-j}) / y_0.
    x, y = [ps[0], *terms[0]], [ps[1], *terms[1]]
    v = [x[0] / y[0]]
    for k in range(1, order + 1):
        acc = x[k]
        for j in range(k):
            acc = acc - v[j] * y[k - j]
        v.append(acc / y[0])
    return v[0], v[1:]


def _chain(u, c, value, order):
    """v = f(x) given x's series u and the series c of f'(x): v_k = (1/k) sum_j j u_j c_{k-j}.
    c=None: f' = f (exp), so c is v itself, each coefficient known before it is needed."""
    v = [value]
    c = v if c is None else c
    for k in range(1, order + 1):
        acc = None
        for j in range(1, k + 1):
            term = (j * u[j]) * c[k - j]
            acc = term if acc is None else acc + term
        v.append(acc / k)
    return v


def _by_derivative(deriv):
    """f with derivative deriv(x) (a function of primitives with rules): the series of f'(x) to
    one order less, by jet itself, then the chain rule above."""

    def rule(prim, ps, terms, order, raw, **params):
        x = ps[-1]
        c = _taylor(lambda x_: deriv(x_, *ps[:-1]), [x], [terms[-1][: order - 1]], order - 1)
        v = _chain([x, *terms[-1]], c, prim.bind(*ps, **params), order)
        return v[0], v[1:]

    return rule


def _exp_like(u, value, order):
    # v = exp(x): v' = v x', the chain rule with f' = f.
    return _chain(u, None, value, order)


def _exp(prim, ps, terms, order, raw, **params):
    value = prim.bind(*ps, **params)
    return value, _exp_like([ps[0], *terms[0]], value, order)[1:]


def _expm1(prim, ps, terms, order, raw, **params):
    # expm1 and exp differ by a constant: the same higher coefficients.
    return prim.bind(*ps, **params), _exp_like([ps[0], *terms[0]], lax.exp(ps[0]), order)[1:]


def _exp2(prim, ps, terms, order, raw, **params):
    ln2 = math.log(2.0)
    return prim.bind(*ps, **params), _exp_like([ps[0], *(ln2 * t for t in terms[0])], prim.bind(*ps), order)[
        1:
    ]


def _log_series(u, value, order):
    # v = log(x): x v' = x', so v_k = (u_k - (1/k) sum_{j=1}^{k-1} j v_j u_{k-j}) / u_0.
    v = [value]
    for k in range(1, order + 1):
        acc = u[k]
        for j in range(1, k):
            acc = acc - (j * v[j]) * u[k - j] / k
        v.append(acc / u[0])
    return v


def _log(prim, ps, terms, order, raw, **params):
    value = prim.bind(*ps, **params)
    return value, _log_series([ps[0], *terms[0]], value, order)[1:]


def _log1p(prim, ps, terms, order, raw, **params):
    value = prim.bind(*ps, **params)
    return value, _log_series([1 + ps[0], *terms[0]], value, order)[1:]


def _sin_cos(prim, ps, terms, order, raw, **params):
    # (s, c) = (sin x, cos x) (or sinh, cosh): s' = c x', c' = -s x' (+s x' for the hyperbolic).
    x = ps[0]
    hyperbolic = prim.name in ("sinh", "cosh")
    u = [x, *terms[0]]
    s = [lax.sinh(x) if hyperbolic else lax.sin(x)]
    c = [lax.cosh(x) if hyperbolic else lax.cos(x)]
    for k in range(1, order + 1):
        s_k = c_k = None
        for j in range(1, k + 1):
            ds, dc = (j * u[j]) * c[k - j], (j * u[j]) * s[k - j]
            s_k = ds if s_k is None else s_k + ds
            c_k = dc if c_k is None else c_k + dc
        s.append(s_k / k)
        c.append(c_k / k if hyperbolic else -c_k / k)
    out = s if prim.name in ("sin", "sinh") else c
    return out[0], out[1:]


def _logistic_series(u, value, order):
    # v = logistic(x): v' = e x' with e = v (1 - v), whose coefficients follow from v's.
    v, e = [value], [value * (1 - value)]
    for k in range(1, order + 1):
        acc = None
        for j in range(1, k + 1):
            term = (j * u[j]) * e[k - j]
            acc = term if acc is None else acc + term
        v.append(acc / k)
        prod = None
        for j in range(k + 1):
            term = v[j] * v[k - j]
            prod = term if prod is None else prod + term
        e.append(v[k] - prod)
    return v


def _logistic(prim, ps, terms, order, raw, **params):
    value = prim.bind(*ps, **params)
    return value, _logistic_series([ps[0], *terms[0]], value, order)[1:]


def _tanh(prim, ps, terms, order, raw, **params):
    # tanh(x) = 2 logistic(2x) - 1.
    u = [2 * ps[0], *(2 * t for t in terms[0])]
    v = _logistic_series(u, lax.logistic(u[0]), order)
    return prim.bind(*ps, **params), [2 * t for t in v[1:]]


def _pow(prim, ps, terms, order, raw, **params):
    x, y = ps
    value = prim.bind(x, y, **params)
    if raw[1] is None:  # a constant exponent: d/dx x^y = y x^(y-1), defined for x < 0 too
        u = [x, *terms[0]]
        c = _taylor(lambda x_, y_: y_ * lax.pow(x_, y_ - 1), [x, y], [terms[0][: order - 1], None], order - 1)
        return value, _chain(u, c, value, order)[1:]
    # x^y = exp(y log x)
    w = _taylor(lambda x_, y_: y_ * lax.log(x_), [x, y], [terms[0], terms[1]], order)
    return value, _exp_like(w, value, order)[1:]


def _integer_pow(prim, ps, terms, order, raw, *, y):
    return _by_derivative(lambda x: y * lax.integer_pow(x, y - 1))(prim, ps, terms, order, raw, y=y)


def _square(prim, ps, terms, order, raw, **params):
    return _bilinear(lax.mul_p, [ps[0], ps[0]], [terms[0], terms[0]], order, [raw[0], raw[0]])


def _atan2(prim, ps, terms, order, raw, **params):
    # atan2(x, y) = atan(x / y) up to a locally constant multiple of pi.
    z = _taylor(lax.div, list(ps), [terms[0], terms[1]], order)
    c = _taylor(lambda z_: 1 / (1 + z_ * z_), [z[0]], [z[1:order]], order - 1)
    return prim.bind(*ps, **params), _chain(z, c, None, order)[1:]


def _rem(prim, ps, terms, order, raw, **params):
    # rem(x, y) = x - y q with q = trunc(x / y) locally constant.
    x, y = ps
    value = prim.bind(x, y, **params)
    q = (x - value) / y
    return value, [terms[0][k] - terms[1][k] * q for k in range(order)]


def _choose(pick_first, x, y, terms_x, terms_y, order):
    # max/min: the chosen argument's series, the average of both where they tie (as JAX's rule).
    # (jnp.where: an operand may be a scalar literal beside an array.)
    tie = x == y
    return [jnp.where(tie, (tx + ty) / 2, jnp.where(pick_first, tx, ty)) for tx, ty in zip(terms_x, terms_y)]


def _max(prim, ps, terms, order, raw, **params):
    x, y = ps
    return prim.bind(x, y, **params), _choose(x > y, x, y, terms[0], terms[1], order)


def _min(prim, ps, terms, order, raw, **params):
    x, y = ps
    return prim.bind(x, y, **params), _choose(x < y, x, y, terms[0], terms[1], order)


def _clamp(prim, ps, terms, order, raw, **params):
    lo, x, hi = ps
    inner = lax.max(lo, x)
    inner_terms = _choose(lo > x, lo, x, terms[0], terms[1], order)
    return prim.bind(*ps, **params), _choose(inner < hi, inner, hi, inner_terms, terms[2], order)


def _abs(prim, ps, terms, order, raw, **params):
    x = ps[0]
    if jnp.iscomplexobj(x):
        raise NotImplementedError("jet: no Taylor rule for abs of complex values")
    flip = lax.select(x < 0, lax.full_like(x, -1), lax.full_like(x, 1))
    return prim.bind(x, **params), [flip * t for t in terms[0]]


def _reduce_choose(prim, ps, terms, order, raw, *, axes, **params):
    # reduce_max/min: the mean of the series over the positions that attain the extreme.
    x = ps[0]
    out = prim.bind(x, axes=axes, **params)
    keep = [1 if i in axes else d for i, d in enumerate(x.shape)]
    hits = (x == lax.reshape(out, keep)).astype(terms[0][0].dtype)
    count = jnp.sum(hits, axis=axes)
    return out, [jnp.sum(t * hits, axis=axes) / count for t in terms[0]]


def _sort(prim, ps, terms, order, raw, *, num_keys, **params):
    # Every operand follows the keys' permutation: sort the coefficients along as extra operands.
    n = len(ps)
    flat = [t for k in range(order) for t in (terms[i][k] for i in range(n))]
    out = prim.bind(*ps, *flat, num_keys=num_keys, **params)
    values, rest = list(out[:n]), list(out[n:])
    return values, [[rest[k * n + i] for k in range(order)] for i in range(n)]


def _fma(prim, ps, terms, order, raw, **params):
    x, y, z = ps
    prod, prod_terms = _bilinear(lax.mul_p, [x, y], [terms[0], terms[1]], order, raw[:2])
    return prim.bind(*ps, **params), [a + b for a, b in zip(prod_terms, terms[2])]


_SQRT_PI = math.sqrt(math.pi)
_RULES = {
    # linear in all arguments
    **{
        name: _linear_in()
        for name in (
            "neg",
            "real",
            "imag",
            "conj",
            "complex",
            "add",
            "add_any",
            "sub",
            "convert_element_type",
            "broadcast_in_dim",
            "concatenate",
            "split",
            "reshape",
            "squeeze",
            "rev",
            "transpose",
            "slice",
            "reduce_sum",
            "reduce_window_sum",
            "fft",
            "copy",
            "copy_p",
            "cumsum",
            "sharding_constraint",
            "optimization_barrier",
            "reduce_precision",
        )
    },  # fmt: skip
    # linear in some arguments, the others (indices, predicates) held
    "pad": _linear_in(0, 1),
    "dynamic_slice": _linear_in(0),
    "dynamic_update_slice": _linear_in(0, 1),
    "gather": _linear_in(0),
    "scatter-add": _linear_in(0, 2),
    "scatter": _linear_in(0, 2),
    "select_n": _linear_in(*range(1, 64)),
    # products
    "mul": _bilinear,
    "dot_general": _bilinear,
    "conv_general_dilated": _bilinear,
    "div": _div,
    "square": _square,
    "fma": _fma,
    # elementwise functions
    "exp": _exp,
    "expm1": _expm1,
    "exp2": _exp2,
    "log": _log,
    "log1p": _log1p,
    "sin": _sin_cos,
    "cos": _sin_cos,
    "sinh": _sin_cos,
    "cosh": _sin_cos,
    "tanh": _tanh,
    "logistic": _logistic,
    "pow": _pow,
    "integer_pow": _integer_pow,
    "sqrt": _by_derivative(lambda x: 0.5 / lax.sqrt(x)),
    "rsqrt": _by_derivative(lambda x: -0.5 * lax.rsqrt(x) / x),
    "cbrt": _by_derivative(lambda x: lax.cbrt(x) / (3 * x)),
    "tan": _by_derivative(lambda x: 1 + lax.tan(x) * lax.tan(x)),
    "atan": _by_derivative(lambda x: 1 / (1 + x * x)),
    "asin": _by_derivative(lambda x: lax.rsqrt(1 - x * x)),
    "acos": _by_derivative(lambda x: -lax.rsqrt(1 - x * x)),
    "asinh": _by_derivative(lambda x: lax.rsqrt(1 + x * x)),
    "acosh": _by_derivative(lambda x: lax.rsqrt(x - 1) * lax.rsqrt(x + 1)),
    "atanh": _by_derivative(lambda x: 1 / (1 - x * x)),
    "erf": _by_derivative(lambda x: (2 / _SQRT_PI) * lax.exp(-(x * x))),
    "erfc": _by_derivative(lambda x: (-2 / _SQRT_PI) * lax.exp(-(x * x))),
    "erf_inv": _by_derivative(lambda x: (_SQRT_PI / 2) * lax.exp(lax.square(lax.erf_inv(x)))),
    "lgamma": _by_derivative(lambda x: lax.digamma(x)),
    "digamma": _by_derivative(lambda x: lax.polygamma(jnp.ones_like(x), x)),
    "polygamma": _by_derivative(lambda x, m: lax.polygamma(m + 1, x)),
    "atan2": _atan2,
    "rem": _rem,
    "max": _max,
    "min": _min,
    "clamp": _clamp,
    "abs": _abs,
    "reduce_max": _reduce_choose,
    "reduce_min": _reduce_choose,
    "sort": _sort,
}

__all__ = ["jet"]
