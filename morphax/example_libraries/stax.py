"""`stax`: neural networks as pairs of pure functions.

A layer is ``(init_fun, apply_fun)``: ``init_fun(rng, input_shape) -> (output_shape, params)``
draws the parameters for inputs of that shape, and ``apply_fun(params, inputs, **kwargs)``
computes the outputs (``rng=`` reaches the layers that need randomness, such as Dropout).
Combinators (`serial`, `parallel`, `shape_dependent`) build networks from layers. Keys are split
exactly as in JAX's stax, so a key gives JAX's initial parameters.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from morphax._src.nn import functions as nn
from morphax._src.nn.initializers import glorot_normal, normal, ones, zeros
from morphax._src.numpy import manipulation, products, ufuncs
from morphax._src.prims import lax_api as lax
from morphax._src.random import distributions, prng
from morphax._src.random.keys import typed_key_api

__all__ = [
    "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout", "Elu", "Exp",
    "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv", "GeneralConvTranspose", "Identity",
    "LeakyRelu", "LogSoftmax", "MaxPool", "Relu", "Selu", "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh",
    "elementwise", "glorot", "logsoftmax", "parallel", "randn", "serial", "shape_dependent",
    "elu", "gelu", "leaky_relu", "log_softmax", "relu", "selu", "sigmoid", "softmax", "softplus", "standardize",
    "glorot_normal", "normal", "ones", "zeros",
]  # fmt: skip

# The activations and initializers stax re-exports under JAX's names.
relu, log_softmax, softmax, softplus, sigmoid = nn.relu, nn.log_softmax, nn.softmax, nn.softplus, nn.sigmoid
elu, leaky_relu, selu, gelu, standardize = nn.elu, nn.leaky_relu, nn.selu, nn.gelu, nn.standardize
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


# Typed keys (random.key) and raw uint32 keys (random.PRNGKey) both work, as in JAX.
_split = typed_key_api(prng.split, returns_key=True)
_bernoulli = typed_key_api(distributions.bernoulli)

# Default initializers (built once: they are pure functions of the key).
_GLOROT = glorot_normal()
_NORMAL = normal()
_TINY_NORMAL = normal(1e-6)


def Dense(out_dim, W_init=_GLOROT, b_init=_NORMAL):  # noqa: N802, N803 - JAX's names
    """A fully connected layer: ``inputs @ W + b``."""

    def init_fun(rng, input_shape):
        output_shape = tuple(input_shape[:-1]) + (out_dim,)
        k1, k2 = _split(rng)
        return output_shape, (W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,)))

    def apply_fun(params, inputs, **kwargs):
        W, b = params  # noqa: N806
        return ufuncs.add(products.dot(inputs, W), b)

    return init_fun, apply_fun


def _conv_layer(transpose, dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init):  # noqa: N803
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))  # noqa: N806

    def init_fun(rng, input_shape):
        spatial = iter(filter_shape)
        kernel_shape = [
            out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I" else next(spatial)
            for c in rhs_spec
        ]
        shape_of = lax.conv_transpose_shape_tuple if transpose else lax.conv_general_shape_tuple
        output_shape = shape_of(input_shape, kernel_shape, strides, padding, dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = _split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params  # noqa: N806
        if transpose:
            out = lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers)
        else:
            out = lax.conv_general_dilated(
                inputs, W, strides, padding, one, one, dimension_numbers=dimension_numbers
            )
        return ufuncs.add(out, b)

    return init_fun, apply_fun


def GeneralConv(
    dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID", W_init=None, b_init=_TINY_NORMAL
):  # noqa: N802, N803
    """A convolution layer with the given (lhs, rhs, out) layout specs, e.g. ('NHWC', 'HWIO', 'NHWC')."""
    return _conv_layer(False, dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init)


def GeneralConvTranspose(
    dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID", W_init=None, b_init=_TINY_NORMAL
):  # noqa: N802, N803
    """A transposed-convolution layer with the given (lhs, rhs, out) layout specs."""
    return _conv_layer(True, dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init)


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros, gamma_init=ones):  # noqa: N802
    """Normalize over `axis` (the batch statistics of each call), then scale by gamma and shift
    by beta, which have the shape of the remaining axes."""
    axis = (axis,) if np.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = _split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        expand = tuple(None if i in axis else slice(None) for i in range(np.ndim(x)))
        z = nn.standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return ufuncs.add(ufuncs.multiply(gamma[expand], z), beta[expand])
        if center:
            return ufuncs.add(z, beta[expand])
        if scale:
            return ufuncs.multiply(gamma[expand], z)
        return z

    return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
    """A layer without parameters applying ``fun(inputs, **fun_kwargs)``."""

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)

    return init_fun, apply_fun


Tanh = elementwise(ufuncs.tanh)
Relu = elementwise(relu)
Exp = elementwise(ufuncs.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _pooling_layer(reducer, init_val, rescaler=None):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):  # noqa: N802
        """A pooling layer over the spatial axes (NHWC unless `spec` names the layout)."""
        strides = strides or (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        non_spatial = (0, len(window_shape) + 1) if spec is None else (spec.index("N"), spec.index("C"))
        window, step = tuple(window_shape), tuple(strides)
        for i in sorted(non_spatial):
            window = window[:i] + (1,) + window[i:]
            step = step[:i] + (1,) + step[i:]

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, window, step, padding)
            ones_ = (1,) * len(window)
            return lax.reduce_window_shape_tuple(input_shape, window, step, pads, ones_, ones_), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, window, step, padding)
            return rescale(out, inputs, spec) if rescale else out

        return init_fun, apply_fun

    return PoolingLayer


MaxPool = _pooling_layer(lax.max, -np.inf)
SumPool = _pooling_layer(lax.add, 0.0)


def _normalize_by_window_size(dims, strides, padding):
    def rescale(outputs, inputs, spec):
        nd = np.ndim(inputs)
        non_spatial = (0, nd - 1) if spec is None else (spec.index("N"), spec.index("C"))
        spatial_shape = tuple(inputs.shape[i] for i in range(nd) if i not in non_spatial)
        one = manipulation.broadcast_to(np.ones((), inputs.dtype), spatial_shape)
        window_sizes = lax.reduce_window(one, 0.0, lax.add, dims, strides, padding)
        for i in sorted(non_spatial):
            window_sizes = manipulation.expand_dims(window_sizes, i)
        return ufuncs.true_divide(outputs, window_sizes)

    return rescale


AvgPool = _pooling_layer(lax.add, 0.0, _normalize_by_window_size)


def _flatten():
    def init_fun(rng, input_shape):
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params, inputs, **kwargs):
        return manipulation.reshape(inputs, (inputs.shape[0], -1))

    return init_fun, apply_fun


Flatten = _flatten()  # a layer (not a constructor), as in JAX


def _identity():
    return (lambda rng, input_shape: (input_shape, ())), (lambda params, inputs, **kwargs: inputs)


Identity = _identity()


def FanOut(num):  # noqa: N802
    """Copy the input into a list of `num` inputs (for `parallel`)."""
    return (lambda rng, input_shape: ([input_shape] * num, ())), (
        lambda params, inputs, **kwargs: [inputs] * num
    )


def _fan_in_sum():
    def apply_fun(params, inputs, **kwargs):
        total = inputs[0]
        for x in inputs[1:]:
            total = ufuncs.add(total, x)
        return total

    return (lambda rng, input_shape: (input_shape[0], ())), apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis=-1):  # noqa: N802
    """Concatenate a list of inputs along `axis`."""

    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        return tuple(input_shape[0][:ax]) + (size,) + tuple(input_shape[0][ax + 1 :]), ()

    def apply_fun(params, inputs, **kwargs):
        return manipulation.concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate, mode="train"):  # noqa: N802
    """Keep each input with probability `rate` (scaling kept ones by 1/rate) in mode "train";
    the identity otherwise. Needs ``rng=`` at apply time. (`rate` is the keep probability, as in
    JAX's stax.)"""

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng")
        if rng is None:
            raise ValueError(
                "Dropout layer requires apply_fun to be called with a PRNG key argument. That is, instead of "
                "`apply_fun(params, inputs)`, call it like `apply_fun(params, inputs, rng)` where `rng` is a PRNG "
                "key (e.g. from `morphax.random.key`)."
            )
        if mode == "train":
            keep = _bernoulli(rng, rate, inputs.shape)
            return ufuncs.where(keep, ufuncs.true_divide(inputs, rate), 0)
        return inputs

    return init_fun, apply_fun


def serial(*layers):
    """Compose layers one after another (each layer's key split from the previous one's)."""
    n = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = _split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = _split(rng, n) if rng is not None else (None,) * n
        for fun, param, r in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=r, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers):
    """Apply layers side by side: a list of inputs in, the list of their outputs out (with
    FanOut and FanInSum/FanInConcat around it)."""
    n = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        rngs = _split(rng, n)
        return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)])

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = _split(rng, n) if rng is not None else (None,) * n
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built by ``make_layer(input_shape)`` once the input shape is known."""

    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
