"""Record JAX's derivatives at tie points into tie_gradients.json (issue 12, defect 0).

Run with a Python that has the real JAX (never imported by morphax or its tests):

    /tmp/jaxvenv/bin/python tests/data/record_tie_gradients.py

Each case is the source of a lambda over `jnp`, `nn`, `lax` and `np`; the test evaluates the
same source with morphax's modules, so the JSON is the single list of cases. For every case we
store the inputs, JAX's gradient with respect to each argument and, where the function is
scalar-valued, its Hessian (the second derivatives the test also checks).
"""

from __future__ import annotations

import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax, nn

INF = float("inf")
NAN = float("nan")

# (name, lambda source, arguments, record the Hessian). Arguments are float32 scalars or nested
# lists; every function returns a scalar so that grad applies directly.
CASES = [
    # nn activations at their kinks and smooth points that used to go through max/abs.
    ("softplus_0", "lambda x: nn.softplus(x)", [0.0], True),
    ("softplus_inf", "lambda x: nn.softplus(x)", [INF], True),
    ("softplus_-inf", "lambda x: nn.softplus(x)", [-INF], True),
    ("softplus_20", "lambda x: nn.softplus(x)", [20.0], True),
    ("log_sigmoid_0", "lambda x: nn.log_sigmoid(x)", [0.0], True),
    ("log_sigmoid_-3", "lambda x: nn.log_sigmoid(x)", [-3.0], True),
    ("relu_0", "lambda x: nn.relu(x)", [0.0], True),
    ("relu6_0", "lambda x: nn.relu6(x)", [0.0], True),
    ("relu6_6", "lambda x: nn.relu6(x)", [6.0], True),
    ("relu6_3", "lambda x: nn.relu6(x)", [3.0], True),
    ("hard_tanh_1", "lambda x: nn.hard_tanh(x)", [1.0], True),
    ("hard_tanh_-1", "lambda x: nn.hard_tanh(x)", [-1.0], True),
    ("hard_sigmoid_3", "lambda x: nn.hard_sigmoid(x)", [3.0], True),
    ("hard_sigmoid_-3", "lambda x: nn.hard_sigmoid(x)", [-3.0], True),
    ("hard_silu_3", "lambda x: nn.hard_silu(x)", [3.0], True),
    ("hard_silu_-3", "lambda x: nn.hard_silu(x)", [-3.0], True),
    ("hard_swish_0", "lambda x: nn.hard_swish(x)", [0.0], True),
    ("silu_0", "lambda x: nn.silu(x)", [0.0], True),
    ("gelu_0", "lambda x: nn.gelu(x)", [0.0], True),
    ("gelu_exact_0", "lambda x: nn.gelu(x, approximate=False)", [0.0], True),
    ("elu_0", "lambda x: nn.elu(x)", [0.0], True),
    ("elu_alpha2_0", "lambda x: nn.elu(x, 2.0)", [0.0], True),
    ("celu_0", "lambda x: nn.celu(x)", [0.0], True),
    ("celu_alpha2_0", "lambda x: nn.celu(x, 2.0)", [0.0], True),
    ("selu_0", "lambda x: nn.selu(x)", [0.0], True),
    ("leaky_relu_0", "lambda x: nn.leaky_relu(x)", [0.0], True),
    ("squareplus_0", "lambda x: nn.squareplus(x)", [0.0], True),
    ("sparse_plus_1", "lambda x: nn.sparse_plus(x)", [1.0], True),
    ("sparse_plus_-1", "lambda x: nn.sparse_plus(x)", [-1.0], True),
    ("sparse_sigmoid_1", "lambda x: nn.sparse_sigmoid(x)", [1.0], True),
    ("sparse_sigmoid_-1", "lambda x: nn.sparse_sigmoid(x)", [-1.0], True),
    ("glu_0", "lambda x: nn.glu(x).sum()", [[0.0, 0.0, 0.0, 0.0]], True),
    ("softmax_tie", "lambda x: nn.softmax(x)[0]", [[1.0, 1.0, 0.0]], True),
    (
        "softmax_tie_weighted",
        "lambda x: (nn.softmax(x) * np.array([1.0, 2.0, 3.0])).sum()",
        [[2.0, 2.0, 2.0]],
        True,
    ),
    (
        "softmax_where",
        "lambda x: nn.softmax(x, where=np.array([True, False, True]))[0]",
        [[1.0, 1.0, 1.0]],
        True,
    ),
    ("log_softmax_tie", "lambda x: nn.log_softmax(x)[0]", [[1.0, 1.0, 0.0]], True),
    ("log_softmax_tie_sum", "lambda x: nn.log_softmax(x).sum()", [[1.0, 1.0, 1.0]], True),
    (
        "log_softmax_where",
        "lambda x: nn.log_softmax(x, where=np.array([True, False, True]))[0]",
        [[1.0, 1.0, 1.0]],
        True,
    ),
    ("standardize_const", "lambda x: nn.standardize(x)[0]", [[1.0, 1.0, 1.0]], False),
    (
        "standardize_const_weighted",
        "lambda x: (nn.standardize(x) * np.array([0.0, 1.0, 2.0])).sum()",
        [[2.0, 2.0, 2.0]],
        False,
    ),
    (
        "standardize_stable_const",
        "lambda x: nn.standardize(x, algorithm='stable')[0]",
        [[1.0, 1.0, 1.0]],
        False,
    ),
    # logsumexp: equal entries, -inf entries, b= (including zeros), where=.
    ("logsumexp_tie", "lambda x: nn.logsumexp(x)", [[1.0, 1.0, 0.0]], True),
    ("logsumexp_all_equal", "lambda x: nn.logsumexp(x)", [[0.0, 0.0, 0.0, 0.0]], True),
    ("logsumexp_-inf", "lambda x: nn.logsumexp(x)", [[0.0, -INF, 0.0]], True),
    ("logsumexp_all_-inf", "lambda x: nn.logsumexp(x)", [[-INF, -INF]], False),
    (
        "logsumexp_b",
        "lambda x: nn.logsumexp(x, b=np.array([1.0, 2.0, 0.0], np.float32))",
        [[1.0, 1.0, 0.0]],
        True,
    ),
    (
        "logsumexp_b_zero_at_max",
        "lambda x: nn.logsumexp(x, b=np.array([0.0, 1.0, 1.0], np.float32))",
        [[2.0, 1.0, 1.0]],
        True,
    ),
    ("logsumexp_b_arg", "lambda x, b: nn.logsumexp(x, b=b)", [[1.0, 1.0, 0.0], [1.0, 1.0, 2.0]], True),
    (
        "logsumexp_where",
        "lambda x: nn.logsumexp(x, where=np.array([True, False, True]))",
        [[1.0, 1.0, 1.0]],
        True,
    ),
    ("logsumexp_axis", "lambda x: nn.logsumexp(x, axis=1).sum()", [[[1.0, 1.0], [0.0, 0.0]]], True),
    ("jnp_logsumexp_tie", "lambda x: jnp.log(jnp.sum(jnp.exp(x)))", [[3.0, 3.0]], True),
    # logaddexp / logaddexp2: the ties, and JAX's convention at the infinities.
    ("logaddexp_tie", "lambda x, y: jnp.logaddexp(x, y)", [1.0, 1.0], True),
    ("logaddexp_zero", "lambda x, y: jnp.logaddexp(x, y)", [0.0, 0.0], True),
    ("logaddexp_same_arg", "lambda x: jnp.logaddexp(x, x)", [2.0], True),
    ("logaddexp_inf_1", "lambda x, y: jnp.logaddexp(x, y)", [INF, 1.0], True),
    ("logaddexp_-inf_1", "lambda x, y: jnp.logaddexp(x, y)", [-INF, 1.0], True),
    ("logaddexp_inf_inf", "lambda x, y: jnp.logaddexp(x, y)", [INF, INF], True),
    ("logaddexp_-inf_-inf", "lambda x, y: jnp.logaddexp(x, y)", [-INF, -INF], True),
    ("logaddexp_far", "lambda x, y: jnp.logaddexp(x, y)", [50.0, -50.0], True),
    ("logaddexp_broadcast", "lambda x, y: jnp.logaddexp(x, y).sum()", [[0.0, 1.0, 2.0], 1.0], True),
    ("logaddexp2_tie", "lambda x, y: jnp.logaddexp2(x, y)", [1.0, 1.0], True),
    ("logaddexp2_inf_1", "lambda x, y: jnp.logaddexp2(x, y)", [INF, 1.0], True),
    # Elementwise max/min: ties split evenly; fmax/fmin give the tie to x2.
    ("maximum_tie", "lambda x, y: jnp.maximum(x, y)", [1.0, 1.0], True),
    ("minimum_tie", "lambda x, y: jnp.minimum(x, y)", [1.0, 1.0], True),
    ("maximum_scalar_tie", "lambda x: jnp.maximum(x, 0.0)", [0.0], True),
    ("fmax_tie", "lambda x, y: jnp.fmax(x, y)", [1.0, 1.0], True),
    ("fmin_tie", "lambda x, y: jnp.fmin(x, y)", [1.0, 1.0], True),
    ("fmax_nan_x", "lambda x, y: jnp.fmax(x, y)", [NAN, 1.0], True),
    ("fmax_nan_y", "lambda x, y: jnp.fmax(x, y)", [1.0, NAN], True),
    ("fmin_nan_nan", "lambda x, y: jnp.fmin(x, y)", [NAN, NAN], True),
    ("fmax_signed_zero", "lambda x, y: jnp.fmax(x, y)", [0.0, -0.0], True),
    ("lax_max_tie", "lambda x, y: lax.max(x, y)", [1.0, 1.0], True),
    ("lax_min_tie", "lambda x, y: lax.min(x, y)", [1.0, 1.0], True),
    # Reductions with repeated extrema: JAX splits evenly among the ties.
    ("max_reduce_ties", "lambda x: jnp.max(x)", [[2.0, 1.0, 2.0, 2.0]], True),
    ("min_reduce_ties", "lambda x: jnp.min(x)", [[1.0, 1.0, 2.0]], True),
    ("amax_axis_ties", "lambda x: jnp.amax(x, axis=0).sum()", [[[1.0, 2.0], [1.0, 3.0]]], True),
    (
        "max_where_ties",
        "lambda x: jnp.max(x, where=np.array([True, True, False, True]), initial=-5.0)",
        [[2.0, 1.0, 2.0, 2.0]],
        True,
    ),
    ("max_initial_tie", "lambda x: jnp.max(x, initial=2.0)", [[2.0, 1.0, 2.0, 2.0]], True),
    ("lax_reduce_max_ties", "lambda x: lax.reduce_max(x, (0,))", [[2.0, 1.0, 2.0, 2.0]], True),
    ("nanmax_ties", "lambda x: jnp.nanmax(x)", [[2.0, NAN, 2.0]], True),
    ("ptp_ties", "lambda x: jnp.ptp(x)", [[2.0, 1.0, 2.0, 1.0]], True),
    ("cummax_ties", "lambda x: lax.cummax(x).sum()", [[2.0, 1.0, 2.0, 2.0]], True),
    # abs, sign, clip/clamp at the bounds, sqrt and norms at 0, hypot, where, heaviside, rounding.
    ("abs_0", "lambda x: jnp.abs(x)", [0.0], True),
    ("abs_-0", "lambda x: jnp.abs(x)", [-0.0], True),
    ("fabs_0", "lambda x: jnp.fabs(x)", [0.0], True),
    ("sign_0", "lambda x: jnp.sign(x)", [0.0], True),
    ("clip_lower", "lambda x: jnp.clip(x, 0.0, 1.0)", [0.0], True),
    ("clip_upper", "lambda x: jnp.clip(x, 0.0, 1.0)", [1.0], True),
    ("clip_lower_only", "lambda x: jnp.clip(x, 0.0)", [0.0], True),
    ("clip_upper_only", "lambda x: jnp.clip(x, None, 0.0)", [0.0], True),
    ("clip_bounds_args", "lambda x, lo, hi: jnp.clip(x, lo, hi)", [0.0, 0.0, 1.0], True),
    ("clamp_lower", "lambda lo, x, hi: lax.clamp(lo, x, hi)", [0.0, 0.0, 1.0], True),
    ("clamp_upper", "lambda lo, x, hi: lax.clamp(lo, x, hi)", [0.0, 1.0, 1.0], True),
    ("sqrt_0", "lambda x: jnp.sqrt(x)", [0.0], True),
    ("norm2_zero", "lambda x: jnp.linalg.norm(x)", [[0.0, 0.0, 0.0]], False),
    ("norm1_zero", "lambda x: jnp.linalg.norm(x, 1)", [[0.0, 0.0, 0.0]], True),
    ("norminf_zero", "lambda x: jnp.linalg.norm(x, np.inf)", [[0.0, 0.0, 0.0]], True),
    ("norminf_ties", "lambda x: jnp.linalg.norm(x, np.inf)", [[1.0, -1.0, 0.5]], True),
    ("normneginf_ties", "lambda x: jnp.linalg.norm(x, -np.inf)", [[1.0, -1.0, 2.0]], True),
    ("normfro_zero", "lambda x: jnp.linalg.norm(x, 'fro')", [[[0.0, 0.0], [0.0, 0.0]]], False),
    ("normmat1_ties", "lambda x: jnp.linalg.norm(x, 1)", [[[1.0, 1.0], [1.0, 1.0]]], True),
    ("normmatinf_ties", "lambda x: jnp.linalg.norm(x, np.inf)", [[[1.0, 1.0], [1.0, 1.0]]], True),
    ("vector_norm_zero", "lambda x: jnp.linalg.vector_norm(x)", [[0.0, 0.0, 0.0]], False),
    ("hypot_zero", "lambda x, y: jnp.hypot(x, y)", [0.0, 0.0], True),
    ("hypot_tie", "lambda x, y: jnp.hypot(x, y)", [3.0, 3.0], True),
    ("where_equal_branches", "lambda x: jnp.where(x > 0, x, x)", [0.0], True),
    ("where_kink", "lambda x: jnp.where(x > 0, x, 2.0 * x)", [0.0], True),
    ("heaviside_0", "lambda x, h: jnp.heaviside(x, h)", [0.0, 0.5], True),
    ("round_half", "lambda x: jnp.round(x)", [0.5], True),
    ("floor_int", "lambda x: jnp.floor(x)", [1.0], True),
    ("ceil_int", "lambda x: jnp.ceil(x)", [1.0], True),
    # Order statistics with ties: each sorted slot takes one input's derivative.
    ("sort_ties", "lambda x: jnp.sort(x)[2]", [[2.0, 1.0, 2.0, 2.0]], True),
    ("sort_ties_weighted", "lambda x: (jnp.sort(x) * np.arange(4.0)).sum()", [[2.0, 1.0, 2.0, 2.0]], True),
    ("median_ties", "lambda x: jnp.median(x)", [[2.0, 1.0, 2.0, 2.0]], True),
    ("median_all_equal", "lambda x: jnp.median(x)", [[1.0, 1.0, 1.0]], True),
    ("quantile_ties", "lambda x: jnp.quantile(x, 0.3)", [[2.0, 1.0, 2.0, 2.0]], True),
]


def _float_list(a):
    # JSON keeps inf and nan as Infinity / NaN (read back by Python's json); -0.0 stays -0.0.
    return np.asarray(a, np.float64).tolist()


def record():
    env = {"jnp": jnp, "nn": nn, "lax": lax, "np": np}
    out = []
    for name, src, args, with_hessian in CASES:
        fn = eval(src, env)  # noqa: S307 - our own case table
        xs = [np.asarray(a, np.float32) for a in args]
        argnums = tuple(range(len(xs)))
        grads = jax.grad(fn, argnums=argnums)(*xs)
        entry = {
            "name": name,
            "fn": src,
            "args": [_float_list(x) for x in xs],
            "dtype": "float32",
            "value": _float_list(fn(*xs)),
            "grad": [_float_list(g) for g in grads],
        }
        if with_hessian:
            hess = jax.hessian(fn, argnums=argnums)(*xs)
            entry["hessian"] = [[_float_list(h) for h in row] for row in hess]
        out.append(entry)
    return {"jax_version": jax.__version__, "cases": out}


if __name__ == "__main__":
    path = pathlib.Path(__file__).with_name("tie_gradients.json")
    path.write_text(json.dumps(record(), indent=1) + "\n")
    print(f"wrote {path}")
