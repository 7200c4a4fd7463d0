"""Neural-network activation functions (`morphax.nn`): sigmoid, relu, softplus, softmax and
friends, written with `morphax.numpy` so they trace like any other composition of primitives.
"""

from __future__ import annotations

import functools

import numpy as np

from morphax._src.api.eager_compiled import compiled_when_eager
from morphax._src.config import config
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.numpy import manipulation, reductions, searching, ufuncs, util
from morphax._src.numpy.reductions import logsumexp
from morphax._src.prims import lax_api as L
from morphax._src.transforms.custom import custom_jvp

__all__ = [
    "sigmoid", "relu", "relu6", "softplus", "log_sigmoid", "softmax", "log_softmax", "logsumexp",
    "silu", "swish", "gelu", "elu", "leaky_relu", "one_hot", "tanh", "hard_tanh", "hard_sigmoid",
    "hard_silu", "hard_swish", "celu", "selu", "squareplus", "sparse_plus", "sparse_sigmoid",
    "glu", "standardize", "identity", "soft_sign", "mish", "log1mexp", "logmeanexp",
]  # fmt: skip

tanh = ufuncs.tanh


def _stop_gradient(x):
    # The softmax shift is a constant for differentiation (its effect cancels in the ratio).
    return L.stop_gradient(x)


def sigmoid(x):
    """1 / (1 + exp(-x)), as the logistic primitive."""
    util.check_arraylike("sigmoid", x)
    (x,) = util.promote_dtypes_inexact(x)
    return L.logistic_p.bind(x)


@custom_jvp
@compiled_when_eager(inline=False)
def relu(x):
    """max(x, 0); its derivative at 0 is 0 (as in JAX), not max's 1/2."""
    util.check_arraylike("relu", x)
    x = util.asarray_like(x)
    return ufuncs.maximum(x, 0)


relu.defjvps(lambda g, ans, x: ufuncs.where(ufuncs.greater(x, 0), g, ufuncs.multiply(g, 0)))


@custom_jvp
@compiled_when_eager(inline=False)
def relu6(x):
    """min(max(x, 0), 6); its derivative is 0 at both kinks (as in JAX), not min/max's 1/2.
    The bound is the float 6.0, so integers promote to float as in JAX."""
    return ufuncs.minimum(relu(x), 6.0)


relu6.defjvps(
    lambda g, ans, x: ufuncs.where(
        ufuncs.logical_and(ufuncs.greater(x, 0), ufuncs.less(x, 6)), g, ufuncs.multiply(g, 0)
    )
)


def hard_tanh(x):
    """x clipped to [-1, 1]; the derivative is 1 at the bounds themselves, as in JAX."""
    util.check_arraylike("hard_tanh", x)
    x = util.asarray_like(x)
    # Selects that keep x at +-1 (rather than clip, whose min/max would halve the slope there).
    return ufuncs.where(ufuncs.greater(x, 1), 1, ufuncs.where(ufuncs.less(x, -1), -1, x))


def hard_sigmoid(x):
    """relu6(x + 3) / 6, so its derivative at +-3 is relu6's 0."""
    util.check_arraylike("hard_sigmoid", x)
    return ufuncs.true_divide(relu6(ufuncs.add(x, 3.0)), 6.0)


def hard_silu(x):
    """x * hard_sigmoid(x)."""
    util.check_arraylike("hard_silu", x)
    (x,) = util.promote_dtypes_inexact(x)
    return ufuncs.multiply(x, hard_sigmoid(x))


hard_swish = hard_silu


def softplus(x):
    """log(1 + exp(x)), computed without overflow."""
    util.check_arraylike("softplus", x)
    return ufuncs.logaddexp(x, 0)


def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x)."""
    util.check_arraylike("log_sigmoid", x)
    (x,) = util.promote_dtypes_inexact(x)
    return ufuncs.negative(softplus(ufuncs.negative(x)))


def silu(x):
    """x * sigmoid(x)."""
    util.check_arraylike("silu", x)
    (x,) = util.promote_dtypes_inexact(x)
    return ufuncs.multiply(x, sigmoid(x))


swish = silu


def gelu(x, approximate=True):
    """Gaussian error linear unit (tanh approximation by default, exact with approximate=False)."""
    util.check_arraylike("gelu", x)
    (x,) = util.promote_dtypes_inexact(x)
    if approximate:
        c = np.sqrt(2 / np.pi)
        inner = ufuncs.multiply(c, ufuncs.add(x, ufuncs.multiply(0.044715, ufuncs.power(x, 3))))
        return ufuncs.multiply(ufuncs.multiply(0.5, x), ufuncs.add(1, ufuncs.tanh(inner)))
    erf = L.erf_p.bind(ufuncs.true_divide(x, np.sqrt(2).item()))
    return ufuncs.multiply(ufuncs.multiply(0.5, x), ufuncs.add(1, erf))


def elu(x, alpha=1.0):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    util.check_arraylike("elu", x)
    (x,) = util.promote_dtypes_inexact(x)
    # Written as JAX's, so that it traces to the same equations: the public where (a nested jit).
    return searching.where(
        ufuncs.greater(x, 0),
        x,
        ufuncs.multiply(alpha, ufuncs.expm1(searching.where(ufuncs.greater(x, 0), 0.0, x))),
    )


def celu(x, alpha=1.0):
    """max(x, 0) + alpha * expm1(min(x, 0) / alpha): both halves meet at 0 with slope 1/2 each
    (max/min split ties evenly), so the derivative there is 1 and the second derivative
    1 / (4 alpha), the values JAX gives."""
    util.check_arraylike("celu", x)
    (x,) = util.promote_dtypes_inexact(x)
    neg = ufuncs.expm1(ufuncs.true_divide(ufuncs.minimum(x, 0), alpha))
    return ufuncs.add(ufuncs.maximum(x, 0), ufuncs.multiply(alpha, neg))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """scale * elu(x, alpha) with the self-normalising constants (at 0 the elu branch's slope,
    scale * alpha)."""
    util.check_arraylike("selu", x)
    return ufuncs.multiply(_SELU_SCALE, elu(x, _SELU_ALPHA))


def squareplus(x, b=4):
    """(x + sqrt(x^2 + b)) / 2, smooth everywhere for b > 0."""
    util.check_arraylike("squareplus", x)
    (x,) = util.promote_dtypes_inexact(x)
    root = ufuncs.sqrt(ufuncs.add(ufuncs.square(x), b))
    return ufuncs.true_divide(ufuncs.add(x, root), 2)


def sparse_plus(x):
    """0 for x <= -1, (x + 1)^2 / 4 in between, x for x >= 1; at +-1 the selects take the outer
    pieces, whose slopes (0 and 1) equal the middle piece's there."""
    util.check_arraylike("sparse_plus", x)
    (x,) = util.promote_dtypes_inexact(x)
    middle = ufuncs.multiply(0.25, ufuncs.square(ufuncs.add(x, 1)))
    upper = ufuncs.where(ufuncs.greater_equal(x, 1), x, middle)
    return ufuncs.where(ufuncs.less_equal(x, -1), 0.0, upper)


def sparse_sigmoid(x):
    """(x + 1) / 2 clipped to [0, 1], the derivative of sparse_plus; written with clip, whose
    min/max halve the slope at the kinks (1/4 at +-1, as in JAX)."""
    util.check_arraylike("sparse_sigmoid", x)
    (x,) = util.promote_dtypes_inexact(x)
    return ufuncs.multiply(0.5, ufuncs.clip(ufuncs.add(x, 1), 0.0, 2.0))


def leaky_relu(x, negative_slope=1e-2):
    """x where x >= 0, else negative_slope * x."""
    util.check_arraylike("leaky_relu", x)
    (x,) = util.promote_dtypes_inexact(x)
    return ufuncs.where(ufuncs.greater_equal(x, 0), x, ufuncs.multiply(negative_slope, x))


def softmax(x, axis=-1, where=None, initial=-np.inf):
    """exp(x) / sum(exp(x)) along `axis`, shifted by the maximum for stability; masked-out
    entries (``where``) get probability 0. With jax_softmax_custom_jvp its derivative comes from
    its own rule, y * (t - sum(y * t)), instead of from differentiating the formula."""
    util.check_arraylike("softmax", x)
    (x,) = util.promote_dtypes_inexact(x)
    if config.softmax_custom_jvp:
        axis = axis if isinstance(axis, int) else tuple(axis)
        return _softmax_by_rule(x, axis, where, initial)
    return _softmax_formula(x, axis, where, initial)


def _softmax_formula(x, axis, where, initial):
    x_max = reductions.max(x, axis, where=where, initial=initial, keepdims=True)
    x_safe = x if where is None else ufuncs.where(where, x, initial)
    unnormalized = ufuncs.exp(ufuncs.subtract(x_safe, _stop_gradient(x_max)))
    result = ufuncs.true_divide(unnormalized, reductions.sum(unnormalized, axis, where=where, keepdims=True))
    return result if where is None else ufuncs.where(where, result, 0)


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _softmax_by_rule(x, axis, where, initial):
    return _softmax_formula(x, axis, where, initial)


@_softmax_by_rule.defjvp
def _softmax_jvp(axis, primals, tangents):
    x, where, initial = primals
    y = _softmax_by_rule(x, axis, where, initial)
    t = tangents[0]
    dot = reductions.sum(ufuncs.multiply(y, t), axis, where=where, keepdims=True)
    return y, ufuncs.multiply(y, ufuncs.subtract(t, dot))


def log_softmax(x, axis=-1, where=None, initial=-np.inf):
    """x - logsumexp(x) along `axis`; masked-out entries are -inf."""
    util.check_arraylike("log_softmax", x)
    (x,) = util.promote_dtypes_inexact(x)
    x_max = reductions.max(x, axis, where=where, initial=initial, keepdims=True)
    x_safe = x if where is None else ufuncs.where(where, x, initial)
    shifted = ufuncs.subtract(x_safe, _stop_gradient(x_max))
    total = reductions.sum(ufuncs.exp(shifted), axis, where=where, keepdims=True)
    result = ufuncs.subtract(shifted, ufuncs.log(total))
    return result if where is None else ufuncs.where(where, result, -np.inf)


def glu(x, axis=-1):
    """Gated linear unit: the first half of `x` along `axis` times the sigmoid of the second."""
    util.check_arraylike("glu", x)
    size = get_aval(util.asarray_like(x)).shape[axis]
    if size % 2:
        raise AssertionError(f"axis size must be divisible by 2, got {size}")
    value, gate = manipulation.split(x, 2, axis)
    return ufuncs.multiply(value, sigmoid(gate))


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *, algorithm="fast"):
    """(x - mean) / sqrt(variance + epsilon) along `axis`. The "fast" variance is
    E[x^2] - E[x]^2 clipped at 0 (it can round below 0); like JAX it is clipped with `clip`,
    so a constant input, where the variance sits on the bound, gets half the slope there."""
    util.check_arraylike("standardize", x)
    if mean is None:
        mean = reductions.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            centred = ufuncs.square(ufuncs.subtract(x, mean))
            variance = reductions.mean(centred, axis, keepdims=True, where=where)
        elif algorithm == "fast":
            second = reductions.mean(ufuncs.square(x), axis, keepdims=True, where=where)
            variance = ufuncs.clip(ufuncs.subtract(second, ufuncs.square(mean)), 0)
        else:
            raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    scale = L.rsqrt(ufuncs.add(variance, epsilon))
    return ufuncs.multiply(ufuncs.subtract(x, mean), scale)


def one_hot(x, num_classes, *, dtype=None, axis=-1):
    """A one-hot encoding of integer `x`: a new axis of length `num_classes` (out-of-range
    values give all zeros)."""
    util.check_arraylike("one_hot", x)
    from morphax._src.numpy.creation import concrete_int

    num_classes = concrete_int(num_classes, "The error arose in jax.nn.one_hot argument `num_classes`")
    dt = (
        _dtypes.canonicalize_dtype(_dtypes.dtype(dtype))
        if dtype is not None
        else _dtypes.default_float_dtype()
    )
    x = util.asarray_like(x)
    shape = get_aval(x).shape
    out_nd = len(shape) + 1
    ax = util.canonicalize_axis(axis, out_nd, "one_hot")
    out_shape = shape[:ax] + (num_classes,) + shape[ax:]
    kept = tuple(d for d in range(out_nd) if d != ax)
    classes = L.broadcasted_iota(_dtypes.int32, out_shape, ax)
    hot = ufuncs.equal(L.broadcast_in_dim(x, out_shape, kept), classes)
    return util.convert_element_type(hot, dt, False)


def identity(x):
    """`x` unchanged (as an array)."""
    util.check_arraylike("identity", x)
    return util.asarray_like(x)


def soft_sign(x):
    """x / (|x| + 1)."""
    util.check_arraylike("soft_sign", x)
    x = util.asarray_like(x)
    return ufuncs.true_divide(x, ufuncs.add(ufuncs.absolute(x), 1))


def mish(x):
    """x * tanh(softplus(x))."""
    util.check_arraylike("mish", x)
    x = util.asarray_like(x)
    return ufuncs.multiply(x, ufuncs.tanh(softplus(x)))


@custom_jvp
@compiled_when_eager(inline=False)
def log1mexp(x):
    """log(1 - exp(-x)) for x >= 0, accurate at both ends: log(-expm1(-x)) below log 2 and
    log1p(-exp(-x)) above (Maechler's split); its derivative is 1 / expm1(x)."""
    util.check_arraylike("log1mexp", x)
    x = util.asarray_like(x)
    small = ufuncs.log(ufuncs.negative(ufuncs.expm1(ufuncs.negative(x))))
    large = ufuncs.log1p(ufuncs.negative(ufuncs.exp(ufuncs.negative(x))))
    return ufuncs.where(ufuncs.less(x, np.log(2.0)), small, large)


log1mexp.defjvps(lambda g, ans, x: ufuncs.true_divide(g, ufuncs.expm1(x)))


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """log(mean(exp(x))) along `axis` (over the elements `where` selects): logsumexp minus the
    log of their count."""
    util.check_arraylike("logmeanexp", x)
    x = util.asarray_like(x)
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    dt = get_aval(lse).dtype
    if where is None:
        shape = get_aval(x).shape
        axes = range(len(shape)) if axis is None else (axis,) if np.ndim(axis) == 0 else axis
        count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        count = util.convert_element_type(count, dt, False)
    else:
        included = manipulation.broadcast_to(where, get_aval(x).shape)
        count = reductions.sum(included, axis, dtype=dt, keepdims=keepdims)
    return ufuncs.subtract(lse, ufuncs.log(count))


# As JAX's jit-decorated activations: called eagerly, each runs as one compiled program per
# signature (gelu of a (1000, 1000) array: one native loop, not eight NumPy passes); under a trace,
# those JAX decorates with a plain `jit` are nested jit[name=...] equations (relu, relu6 and
# log1mexp are custom_jvp functions of one, above), the others (JAX's sigmoid is
# jit(inline=True); gelu, softmax, logsumexp are not jitted) join the caller's program.
_NESTED = (
    "hard_tanh hard_sigmoid hard_silu softplus log_sigmoid silu selu sparse_plus sparse_sigmoid "
    "soft_sign mish elu celu leaky_relu squareplus"
).split()
for _name in _NESTED:
    globals()[_name] = compiled_when_eager(globals()[_name], inline=False)
for _name in ("sigmoid", "relu", "relu6", "log1mexp"):
    globals()[_name] = compiled_when_eager(globals()[_name])
gelu = compiled_when_eager(gelu, static_argnames=("approximate",), static_argnums=(1,))
softmax = compiled_when_eager(softmax, static_argnums=(1, 3), static_argnames=("axis", "initial"))
log_softmax = compiled_when_eager(
    log_softmax, static_argnums=(1, 3), static_argnames=("axis", "initial"), inline=False
)
glu = compiled_when_eager(glu, static_argnums=(1,), static_argnames=("axis",), inline=False)
logsumexp = compiled_when_eager(
    logsumexp, static_argnums=(1, 3, 4), static_argnames=("axis", "keepdims", "return_sign")
)
hard_swish = hard_silu
swish = silu
