"""`morphax.image.resize` and `scale_and_translate`: resampling by separable kernels, as JAX does.

Each resized axis contributes a weight matrix (input positions x output positions) built from the
kernel evaluated at the distance between an output pixel's sample point, mapped back into the
input (pixel centres at half-integers), and every input pixel; columns are normalized to sum to 1,
and sample points outside the input get zero weight. The image is contracted with the matrices
in one einsum. With `antialias`, a downscaling kernel is widened by the scale factor, so it
averages over every input pixel an output pixel covers. NEAREST indexes instead.
"""

from __future__ import annotations

import enum
import math

import numpy as np

from morphax._src.core.avals import get_aval
from morphax._src.core.promotion import result_type
from morphax._src.numpy import creation, products, reductions, ufuncs, util
from morphax._src.prims import lax_api as L

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """Resampling kernels: NEAREST, LINEAR (triangle), LANCZOS3, LANCZOS5, CUBIC (Keys, a = -0.5),
    CUBIC_PYTORCH (a = -0.75 with repeated edges, as torch), AREA (overlap of pixel intervals)."""

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str):
        names = {
            "nearest": ResizeMethod.NEAREST,
            "linear": ResizeMethod.LINEAR,
            "bilinear": ResizeMethod.LINEAR,
            "trilinear": ResizeMethod.LINEAR,
            "triangle": ResizeMethod.LINEAR,
            "lanczos3": ResizeMethod.LANCZOS3,
            "lanczos5": ResizeMethod.LANCZOS5,
            "cubic": ResizeMethod.CUBIC,
            "bicubic": ResizeMethod.CUBIC,
            "tricubic": ResizeMethod.CUBIC,
            "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
            "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
            "area": ResizeMethod.AREA,
        }
        if s not in names:
            raise ValueError(f'Unknown resize method "{s}"')
        return names[s]


def _lanczos(radius):
    def kernel(x):
        y = ufuncs.multiply(
            radius, ufuncs.multiply(ufuncs.sin(np.pi * x), ufuncs.sin(ufuncs.true_divide(np.pi * x, radius)))
        )
        safe = ufuncs.where(ufuncs.not_equal(x, 0), ufuncs.multiply(np.pi**2, ufuncs.square(x)), 1)
        out = ufuncs.where(ufuncs.greater(x, 1e-3), ufuncs.true_divide(y, safe), 1)
        return ufuncs.where(ufuncs.greater(x, radius), 0.0, out)

    return kernel


def _cubic(a):
    """Keys' cubic convolution kernel with parameter `a` (JAX's CUBIC uses -0.5 in Horner form,
    CUBIC_PYTORCH OpenCV's -0.75)."""

    def kernel(x):
        if a == -0.5:
            inner = ufuncs.add(
                ufuncs.multiply(ufuncs.multiply(ufuncs.subtract(ufuncs.multiply(1.5, x), 2.5), x), x), 1.0
            )
            outer = ufuncs.add(
                ufuncs.multiply(
                    ufuncs.subtract(ufuncs.multiply(ufuncs.add(ufuncs.multiply(-0.5, x), 2.5), x), 4.0), x
                ),
                2.0,
            )
        else:
            inner = ufuncs.add(
                ufuncs.multiply(ufuncs.multiply(ufuncs.subtract(ufuncs.multiply(a + 2.0, x), a + 3.0), x), x),
                1.0,
            )
            outer = ufuncs.subtract(
                ufuncs.multiply(
                    ufuncs.add(ufuncs.multiply(ufuncs.subtract(ufuncs.multiply(a, x), 5.0 * a), x), 8.0 * a),
                    x,
                ),
                4.0 * a,
            )
        out = ufuncs.where(ufuncs.greater_equal(x, 1.0), outer, inner)
        return ufuncs.where(ufuncs.greater_equal(x, 2.0), 0.0, out)

    return kernel


def _triangle(x):
    return ufuncs.maximum(0, ufuncs.subtract(1, ufuncs.absolute(x)))


_AREA = object()  # not a kernel of a distance: the overlap of pixel intervals
_KERNELS = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.0)),
    ResizeMethod.CUBIC: (2, _cubic(-0.5)),
    ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)),
    ResizeMethod.AREA: (1, _AREA),
}


def _normalized(weights):
    """Columns scaled to sum to 1; a column whose sum is (nearly) 0 becomes 0."""
    total = reductions.sum(weights, axis=0, keepdims=True)
    tiny = 1000.0 * float(np.finfo(np.float32).eps)
    scaled = ufuncs.true_divide(weights, ufuncs.where(ufuncs.not_equal(total, 0), total, 1))
    return ufuncs.where(ufuncs.greater(ufuncs.absolute(total), tiny), scaled, 0)


def _weight_matrix(input_size, output_size, scale, translation, kernel, antialias, edge_padding, radius):
    """(input_size, output_size) weights: column j resamples output pixel j."""
    dtype = result_type(scale, translation)
    inv_scale = ufuncs.true_divide(1.0, scale)
    kernel_scale = ufuncs.maximum(inv_scale, 1.0) if antialias else 1.0
    out_pos = creation.arange(output_size, dtype=dtype)
    sample = ufuncs.subtract(
        ufuncs.subtract(
            ufuncs.multiply(ufuncs.add(out_pos, 0.5), inv_scale), ufuncs.multiply(translation, inv_scale)
        ),
        0.5,
    )
    if edge_padding:
        k = radius
        if antialias:
            k = math.ceil(radius * max(1.0 / float(np.asarray(scale)), 1.0))
    else:
        k = 0
    positions = creation.arange(-k, input_size + k, dtype=dtype)
    if kernel is _AREA:
        left_out = ufuncs.subtract(
            ufuncs.multiply(out_pos, inv_scale), ufuncs.multiply(translation, inv_scale)
        )
        right_out = ufuncs.add(left_out, inv_scale)
        left_in = creation.arange(input_size, dtype=dtype)
        right_in = ufuncs.add(left_in, 1.0)
        overlap = ufuncs.subtract(
            ufuncs.minimum(right_out[None, :], right_in[:, None]),
            ufuncs.maximum(left_out[None, :], left_in[:, None]),
        )
        weights = ufuncs.maximum(0.0, overlap)
    else:
        distance = ufuncs.absolute(ufuncs.subtract(sample[None, :], positions[:, None]))
        weights = kernel(ufuncs.true_divide(distance, kernel_scale))
    if edge_padding:
        # Taps beyond the edges read the edge pixels: fold their weights onto them.
        clamped = ufuncs.clip(util.convert_element_type(positions, np.int32, False), 0, input_size - 1)
        matrix = creation.zeros((input_size, output_size), dtype=get_aval(weights).dtype)
        cols = L.broadcast_in_dim(
            creation.arange(output_size), (get_aval(positions).shape[0], output_size), (1,)
        )
        return _normalized(matrix.at[clamped[:, None], cols].add(weights))
    weights = _normalized(weights)
    inside = ufuncs.logical_and(
        ufuncs.greater_equal(sample, -0.5), ufuncs.less_equal(sample, input_size - 0.5)
    )
    return ufuncs.where(inside[None, :], weights, 0)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _scale_and_translate(
    x, shape, spatial_dims, scale, translation, kernel, antialias, precision, edge_padding, radius
):
    in_shape = get_aval(x).shape
    if not spatial_dims:
        return x
    ndim = len(in_shape)
    in_sub = list(_LETTERS[:ndim])
    out_sub = list(in_sub)
    operands, subscripts = [x], ["".join(in_sub)]
    for i, d in enumerate(spatial_dims):
        d = util.canonicalize_axis(d, ndim, "scale_and_translate")
        w = _weight_matrix(
            in_shape[d], shape[d], scale[i], translation[i], kernel, antialias, edge_padding, radius
        )
        operands.append(util.convert_element_type(w, get_aval(x).dtype, False))
        new = _LETTERS[ndim + i]
        subscripts.append(in_sub[d] + new)
        out_sub[d] = new
    spec = ",".join(subscripts) + "->" + "".join(out_sub)
    return products.einsum(spec, *operands, precision=precision)


def _method(method):
    return ResizeMethod.from_string(method) if isinstance(method, str) else method


def _check_rank(shape, image):
    if len(shape) != len(get_aval(image).shape):
        raise ValueError(
            "shape must have length equal to the number of dimensions of x; "
            f" {tuple(shape)} vs {get_aval(image).shape}"
        )


def scale_and_translate(
    image, shape, spatial_dims, scale, translation, method, antialias=True, precision=L.Precision.HIGHEST
):
    """Resample `image` to `shape` under the map ``x -> x * scale + translation`` of each axis in
    `spatial_dims` (the inverse map gives each output pixel's sample point; pixel centres at
    half-integers). Output pixels whose sample point falls outside the input are zero. NEAREST is
    not supported (as in JAX)."""
    shape = tuple(int(d) for d in shape)
    util.check_arraylike("scale_and_translate", image)
    image = util.asarray_like(image)
    _check_rank(shape, image)
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for scale_and_translate.")
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    (image,) = util.promote_dtypes_inexact(image)
    scale, translation = util.promote_dtypes_inexact(scale, translation)
    scale = [scale[i] for i in range(len(spatial_dims))] if get_aval(scale).shape else [scale]
    translation = (
        [translation[i] for i in range(len(spatial_dims))] if get_aval(translation).shape else [translation]
    )
    edge_padding = method == ResizeMethod.CUBIC_PYTORCH and not antialias
    return _scale_and_translate(
        image,
        shape,
        tuple(spatial_dims),
        scale,
        translation,
        kernel,
        antialias,
        precision,
        edge_padding,
        radius,
    )


def _resize_nearest(x, shape):
    in_shape = get_aval(x).shape
    for d, (m, n) in enumerate(zip(in_shape, shape)):
        if m == n:
            continue
        offsets = ufuncs.true_divide(
            ufuncs.multiply(ufuncs.add(creation.arange(n, dtype=np.float32), 0.5), float(m)), float(n)
        )
        offsets = util.convert_element_type(ufuncs.floor(offsets), np.int32, False)
        index = [slice(None)] * len(in_shape)
        index[d] = offsets
        x = x[tuple(index)]
    return x


def resize(image, shape, method, antialias=True, precision=L.Precision.HIGHEST):
    """Resize `image` to `shape` with `method` (a ResizeMethod or its name: "nearest", "linear",
    "cubic", "lanczos3", "lanczos5", "cubic-pytorch", "area"); only the axes whose size changes
    are resampled. With `antialias` (the default), downscaling low-pass filters as it samples."""
    shape = tuple(int(d) for d in shape)
    util.check_arraylike("resize", image)
    image = util.asarray_like(image)
    _check_rank(shape, image)
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    (image,) = util.promote_dtypes_inexact(image)
    in_shape = get_aval(image).shape
    spatial_dims = tuple(d for d in range(len(shape)) if in_shape[d] != shape[d])
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    scale = [1.0 if shape[d] == 0 else shape[d] / in_shape[d] for d in spatial_dims]
    edge_padding = method == ResizeMethod.CUBIC_PYTORCH and not antialias
    return _scale_and_translate(
        image,
        shape,
        spatial_dims,
        scale,
        [0.0] * len(spatial_dims),
        kernel,
        antialias,
        precision,
        edge_padding,
        radius,
    )
