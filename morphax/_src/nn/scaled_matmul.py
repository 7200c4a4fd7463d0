"""Block-scaled matrix products (`nn.scaled_matmul`, `nn.scaled_dot_general`) and their
quantization configs (`nn.get_scaled_dot_general_config`): JAX's microscaling (MX) formats.

`scaled_matmul` multiplies low-precision operands whose last (contracting) axis is split into
blocks, each with one scale: the product of ``lhs * repeat(lhs_scales)`` and
``rhs * repeat(rhs_scales)``, accumulated in float32. JAX runs it only through cuDNN on recent
NVIDIA GPUs; here it is that definition, computed on the host. `scaled_dot_general` quantizes
high-precision operands block by block (mxfp8: float8_e4m3fn data with power-of-two
float8_e8m0fnu scales, blocks of 32; nvfp4: float4_e2m1fn data with float8_e4m3fn scales, blocks of
16 and a global scale), multiplies them with `scaled_matmul`, and differentiates as JAX does:
the cotangent products are quantized with the third config, and for nvfp4 the gradient of an
operand that quantization clipped is zero (a straight-through estimator).
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.numpy import manipulation, products, reductions, ufuncs, util
from morphax._src.prims import lax_api as L
from morphax._src.transforms.custom import custom_vjp

__all__ = ["BlockScaleConfig", "get_scaled_dot_general_config", "scaled_dot_general", "scaled_matmul"]


@dataclasses.dataclass
class BlockScaleConfig:
    """How one operand is quantized: `mode` ("mxfp8" or "nvfp4"), the block length along the
    contracting axis, the element and scale dtypes, and nvfp4's global scale."""

    mode: str
    block_size: int
    data_type: object
    scale_type: object
    global_scale: object
    infer_only: bool


def get_scaled_dot_general_config(mode, global_scale=None):
    """The quantization config of `mode`: "mxfp8" or "nvfp4" (with an optional float32 global
    scale, default 1)."""
    if mode == "nvfp4":
        one = util.asarray_like(np.ones((1,), np.float32))
        return BlockScaleConfig(
            "nvfp4",
            16,
            _dtypes.float4_e2m1fn,
            _dtypes.float8_e4m3fn,
            one if global_scale is None else global_scale,
            False,
        )
    if mode == "mxfp8":
        return BlockScaleConfig("mxfp8", 32, _dtypes.float8_e4m3fn, _dtypes.float8_e8m0fnu, None, False)
    raise ValueError(f"Unsupported mode: {mode}")


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    """``einsum('BMK,BNK->BMN', lhs * repeat(lhs_scales), rhs * repeat(rhs_scales))`` in float32,
    the scales repeated over blocks of K // K_scales elements of the contracting axis."""
    a, b, sa, sb = (util.asarray_like(x) for x in (lhs, rhs, lhs_scales, rhs_scales))
    shapes = [get_aval(x).shape for x in (a, b, sa, sb)]
    if any(len(s) != 3 for s in shapes):
        raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
    (ba, m, ka), (bb, n, kb), (bsa, msa, ksa), (bsb, nsb, ksb) = shapes
    if ka != kb or ba != bb:
        raise ValueError(
            "scaled_matmul requires inputs a and b to have matching batch (B) and contract (K) dimensions, "
            f"but got shapes {shapes[0]} and {shapes[1]}"
        )
    if ksa != ksb or bsa != bsb:
        raise ValueError(
            "scaled_matmul requires scales to have matching batch (B) and contract (K) dimensions, but got "
            f"shapes {shapes[2]} and {shapes[3]}"
        )
    if msa != m or nsb != n:
        raise ValueError(
            "scaled_matmul requires scales to match non-contract dimensions of inputs, but got shapes "
            f"a: {shapes[0]}, b: {shapes[1]}, a_scales: {shapes[2]}, b_scales: {shapes[3]}"
        )
    if ksa == 0 or ka % ksa:
        raise ValueError(f"scaled_matmul: the contracting size {ka} must be a multiple of the scales' {ksa}.")
    preferred = _dtypes.canonicalize_dtype(_dtypes.dtype(preferred_element_type))

    def scaled(x, s):
        s = manipulation.repeat(util.convert_element_type(s, np.float32, False), ka // ksa, axis=-1)
        return ufuncs.multiply(util.convert_element_type(x, np.float32, False), s)

    out = products.einsum("BMK,BNK->BMN", scaled(a, sa), scaled(b, sb), preferred_element_type=np.float32)
    return util.convert_element_type(out, preferred, False)


# ------------------------------------------------------------------------------- quantization


def _e8m0_rounding_up(x):
    """The float8_e8m0fnu exponent byte of positive float32 `x`, rounded up to a power of two
    (kept at the largest finite exponent and at zero/subnormal halves, as JAX does)."""
    bits = L.bitcast_convert_type(util.convert_element_type(x, np.float32, False), np.uint32)
    exp = L.shift_right_logical(bits, np.uint32(23))
    mant = L.bitwise_and(bits, np.uint32(0x7FFFFF))
    up = ufuncs.logical_and(
        ufuncs.logical_and(ufuncs.greater(mant, np.uint32(0)), ufuncs.not_equal(exp, np.uint32(0xFE))),
        ufuncs.logical_not(
            ufuncs.logical_and(ufuncs.equal(exp, np.uint32(0)), ufuncs.less_equal(mant, np.uint32(0x400000)))
        ),
    )
    exp = ufuncs.where(up, ufuncs.add(exp, np.uint32(1)), exp)
    return util.convert_element_type(exp, np.uint8, False)


def _e8m0_value(byte, dtype):
    """The power of two a float8_e8m0fnu exponent byte stands for, in `dtype` (a zero byte is taken
    as 2**-15 in float16, 2**-127 otherwise, so dividing by it stays finite)."""
    value = L.bitcast_convert_type(
        L.shift_left(util.convert_element_type(byte, np.uint32, False), np.uint32(23)), np.float32
    )
    tiny = np.float32(2.0**-15 if np.dtype(dtype) == np.float16 else 2.0**-127)
    value = ufuncs.where(ufuncs.equal(value, 0), tiny, value)
    return util.convert_element_type(value, dtype, False)


def _quantize(x, config):
    """(elements, scales) of a (B, M, K) operand: one scale per block of `block_size` along K."""
    shape = get_aval(x).shape
    dtype = get_aval(x).dtype
    k, block = shape[-1], config.block_size
    if k < block or k % block:
        raise ValueError(
            f"scaled_dot_general: the contracting size {k} must be a multiple of the block size {block}."
        )
    x = manipulation.reshape(x, shape[:-1] + (k // block, block))
    top = util.convert_element_type(float(_dtypes.finfo(config.data_type).max), dtype, False)

    def block_scales(values):
        return ufuncs.true_divide(reductions.max(ufuncs.absolute(values), axis=-1, keepdims=True), top)

    if config.mode == "mxfp8":
        exponents = _e8m0_rounding_up(block_scales(x))
        scaled_x = ufuncs.true_divide(x, _e8m0_value(exponents, dtype))
        scales = L.bitcast_convert_type(exponents, config.scale_type)
    elif config.mode == "nvfp4":
        scale_top = util.convert_element_type(float(_dtypes.finfo(config.scale_type).max), dtype, False)
        x = ufuncs.true_divide(x, config.global_scale)
        scales = L.optimization_barrier(
            util.convert_element_type(ufuncs.clip(block_scales(x), 0, scale_top), config.scale_type, False)
        )
        scaled_x = ufuncs.true_divide(x, util.convert_element_type(scales, np.float32, False))
    else:
        raise ValueError(f"Unrecognized mode: {config.mode}.")
    elements = util.convert_element_type(
        ufuncs.clip(scaled_x, ufuncs.negative(top), top), config.data_type, False
    )
    return manipulation.reshape(elements, shape), manipulation.reshape(scales, get_aval(scales).shape[:-1])


def _as_bmk(x, contract, batch):
    """`x` transposed to (batch, kept, contracting) axes and reshaped to (B, M, K)."""
    shape = get_aval(x).shape
    kept = [d for d in range(len(shape)) if d not in contract and d not in batch]
    order = sorted(batch) + kept + sorted(contract)
    size = lambda axes: int(np.prod([shape[d] for d in axes], dtype=np.int64))  # noqa: E731
    return manipulation.reshape(manipulation.transpose(x, order), (size(batch), size(kept), size(contract)))


def _dot_shape(lhs_shape, rhs_shape, lhs_dn, rhs_dn):
    """dot_general's output shape: batch axes, then the lhs's kept axes, then the rhs's."""
    (lc, lb), (rc, rb) = lhs_dn, rhs_dn
    out = [d for i, d in enumerate(lhs_shape) if i in lb]
    out += [d for i, d in enumerate(lhs_shape) if i not in lc and i not in lb]
    return tuple(out + [d for i, d in enumerate(rhs_shape) if i not in rc and i not in rb])


def _scaled_dot(lhs, rhs, dn, preferred, configs):
    (lc, rc), (lb, rb) = dn
    a, sa = _quantize(_as_bmk(lhs, lc, lb), configs[0])
    b, sb = _quantize(_as_bmk(rhs, rc, rb), configs[1])
    nvfp4 = configs[0].mode == "nvfp4"
    out = scaled_matmul(a, b, sa, sb, preferred_element_type=np.float32 if nvfp4 else preferred)
    if nvfp4:
        out = ufuncs.multiply(out, ufuncs.multiply(configs[0].global_scale, configs[1].global_scale))
        out = util.convert_element_type(out, preferred, False)
    shape = _dot_shape(get_aval(lhs).shape, get_aval(rhs).shape, (lc, lb), (rc, rb))
    return manipulation.reshape(out, shape)


def _cotangent(g, x, y, dn, preferred, configs, swap):
    """The cotangent of `x` in dot_general(x, y) (or of the rhs, with `swap`): g contracted with y
    by a quantized product, transposed back to x's axes."""
    (x_contract, y_contract), (x_batch, y_batch) = dn
    x_nd, y_nd = len(get_aval(x).shape), len(get_aval(y).shape)
    x_kept = [d for d in range(x_nd) if d not in x_contract and d not in x_batch]
    y_kept = [d for d in range(y_nd) if d not in y_contract and d not in y_batch]
    nb = len(x_batch)
    ans_batch = list(range(nb))
    if swap:
        ans_y = list(range(nb, nb + len(y_kept)))
    else:
        ans_y = list(range(nb + len(x_kept), nb + len(x_kept) + len(y_kept)))
    x_contract_by_y = list(np.take(x_contract, np.argsort(y_contract)))
    out_axes = tuple(int(i) for i in np.argsort(list(x_batch) + x_kept + x_contract_by_y))
    y3, g3 = _as_bmk(y, y_kept, y_batch), _as_bmk(g, ans_y, ans_batch)
    if configs[0].mode != "nvfp4":
        gq, gs = _quantize(g3, configs[0])
        yq, ys = _quantize(y3, configs[1])
        out = scaled_matmul(gq, yq, gs, ys, preferred)
    else:
        out = products.matmul(g3, manipulation.transpose(y3, (0, 2, 1)), preferred_element_type=preferred)
    shape = _dot_shape(get_aval(g).shape, get_aval(y).shape, (ans_y, ans_batch), (y_kept, y_batch))
    return L.transpose(manipulation.reshape(out, shape), out_axes)


def scaled_dot_general(
    lhs, rhs, dimension_numbers, preferred_element_type=np.float32, configs=None, implementation=None
):
    """dot_general of `lhs` and `rhs` through block-scaled quantization (`configs`: the lhs's,
    the rhs's and the cotangents' BlockScaleConfig, from get_scaled_dot_general_config); without
    configs, plain `lax.dot_general`. The result has dot_general's axes: batch, then the lhs's
    kept axes, then the rhs's."""
    if implementation is not None:
        warnings.warn(
            "Backend selector, now ignored. The system chooses the backend automatically.",
            DeprecationWarning,
            stacklevel=2,
        )
    if configs is None:
        return L.dot_general(lhs, rhs, dimension_numbers, preferred_element_type=preferred_element_type)
    preferred = _dtypes.canonicalize_dtype(_dtypes.dtype(preferred_element_type))
    if preferred not in (np.dtype(np.float32), np.dtype(_dtypes.bfloat16), np.dtype(np.float16)):
        raise TypeError(f"Only support preferred_element_type in (f32, bf16, f16), but got {preferred}")
    lhs, rhs = util.asarray_like(lhs), util.asarray_like(rhs)
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = (tuple(int(d) for d in axes) for axes in (lc, rc, lb, rb))
    unbatched = not lb and not rb
    if not lb:
        lhs, lb = manipulation.expand_dims(lhs, len(get_aval(lhs).shape)), (len(get_aval(lhs).shape),)
    if not rb:
        rhs, rb = manipulation.expand_dims(rhs, len(get_aval(rhs).shape)), (len(get_aval(rhs).shape),)
    dn = ((lc, rc), (lb, rb))

    @custom_vjp
    def product(x, y):
        return _scaled_dot(x, y, dn, preferred, configs)

    def forward(x, y):
        return product(x, y), (x, y)

    def backward(residuals, g):
        x, y = residuals
        swapped = ((rc, lc), (rb, lb))
        gx = _cotangent(g, x, y, dn, preferred, [configs[2], configs[1]], swap=False)
        gy = _cotangent(g, y, x, swapped, preferred, [configs[2], configs[0]], swap=True)
        if configs[2].mode == "nvfp4":
            # Straight-through estimator: no gradient where quantization clipped the operand.
            top = float(_dtypes.finfo(configs[0].data_type).max) * float(
                _dtypes.finfo(configs[0].scale_type).max
            )
            gx = ufuncs.where(
                ufuncs.less_equal(ufuncs.absolute(x), ufuncs.multiply(configs[0].global_scale, top)), gx, 0
            )
            gy = ufuncs.where(
                ufuncs.less_equal(ufuncs.absolute(y), ufuncs.multiply(configs[1].global_scale, top)), gy, 0
            )
        return gx, gy

    product.defvjp(forward, backward)
    out = product(lhs, rhs)
    # The batch axis added to unbatched operands comes first in the result.
    return manipulation.squeeze(out, 0) if unbatched else out
