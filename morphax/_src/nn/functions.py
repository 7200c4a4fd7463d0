"""Neural-network activation functions (`morphax.nn`): sigmoid, relu, softplus, softmax and
friends, written with `morphax.numpy` so they trace like any other composition of primitives.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.numpy import reductions, ufuncs, util
from morphax._src.numpy.reductions import logsumexp
from morphax._src.prims import lax_api as L
from morphax._src.transforms.custom import custom_jvp

__all__ = [
    "sigmoid", "relu", "relu6", "softplus", "log_sigmoid", "softmax", "log_softmax", "logsumexp",
    "silu", "swish", "gelu", "elu", "leaky_relu", "one_hot", "tanh",
]  # fmt: skip

tanh = ufuncs.tanh


def _stop_gradient(x):
    # The softmax shift is a constant for differentiation, once lax.stop_gradient exists.
    fn = getattr(L, "stop_gradient", None)
    return x if fn is None else fn(x)


def sigmoid(x):
    """1 / (1 + exp(-x)), as the logistic primitive."""
    util.check_arraylike("sigmoid", x)
    (x,) = util.promote_dtypes_inexact(x)
    return L.logistic_p.bind(x)


@custom_jvp
def relu(x):
    """max(x, 0); its derivative at 0 is 0 (as in JAX), not max's 1/2."""
    util.check_arraylike("relu", x)
    x = util.asarray_like(x)
    return ufuncs.maximum(x, 0)


relu.defjvps(lambda g, ans, x: ufuncs.where(ufuncs.greater(x, 0), g, ufuncs.multiply(g, 0)))


def relu6(x):
    """min(max(x, 0), 6)."""
    return ufuncs.minimum(relu(x), 6)


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
    safe = ufuncs.where(ufuncs.greater(x, 0), 0, x)
    return ufuncs.where(ufuncs.greater(x, 0), x, ufuncs.multiply(alpha, ufuncs.expm1(safe)))


def leaky_relu(x, negative_slope=1e-2):
    """x where x >= 0, else negative_slope * x."""
    util.check_arraylike("leaky_relu", x)
    (x,) = util.promote_dtypes_inexact(x)
    return ufuncs.where(ufuncs.greater_equal(x, 0), x, ufuncs.multiply(negative_slope, x))


def softmax(x, axis=-1, where=None, initial=-np.inf):
    """exp(x) / sum(exp(x)) along `axis`, shifted by the maximum for stability; masked-out
    entries (``where``) get probability 0."""
    util.check_arraylike("softmax", x)
    (x,) = util.promote_dtypes_inexact(x)
    x_max = reductions.max(x, axis, where=where, initial=initial, keepdims=True)
    x_safe = x if where is None else ufuncs.where(where, x, initial)
    unnormalized = ufuncs.exp(ufuncs.subtract(x_safe, _stop_gradient(x_max)))
    result = ufuncs.true_divide(unnormalized, reductions.sum(unnormalized, axis, where=where, keepdims=True))
    return result if where is None else ufuncs.where(where, result, 0)


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
