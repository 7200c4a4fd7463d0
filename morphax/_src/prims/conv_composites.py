"""Convolutions JAX composes from `conv_general_dilated`: `conv_transpose` (a gradient-style
transposed convolution, with the padding JAX derives for it) and `conv_general_dilated_patches`
(the patches a convolution reads, as channels)."""

from __future__ import annotations

import numpy as np

from morphax._src.core.avals import get_aval
from morphax._src.prims.conv_layouts import _conv_transpose_padding, _take, conv_dimension_numbers
from morphax._src.prims.convolution import _operand, conv_general_dilated
from morphax._src.prims.shape import rev, transpose
from morphax._src.prims.windowed import (
    dilate_dim,
)

__all__ = ["conv_transpose", "conv_general_dilated_patches"]


_TRANSPOSE_DEFAULT_DN = {
    2: ("NC", "IO", "NC"),
    3: ("NHC", "HIO", "NHC"),
    4: ("NHWC", "HWIO", "NHWC"),
    5: ("NHWDC", "HWDIO", "NHWDC"),
}


def conv_transpose(
    lhs,
    rhs,
    strides,
    padding,
    rhs_dilation=None,
    dimension_numbers=None,
    transpose_kernel=False,
    precision=None,
    preferred_element_type=None,
    use_consistent_padding=False,
):
    """Fractionally strided ("transposed") convolution: lhs dilated by `strides`; 'SAME'/'VALID'
    (or, with use_consistent_padding, explicit pairs) name the forward conv's padding. With
    transpose_kernel the kernel is flipped and its I/O swapped (the gradient of `conv`)."""
    lhs, rhs = _operand(lhs), _operand(rhs)
    ls, rs = get_aval(lhs).shape, get_aval(rhs).shape
    if len(ls) != len(rs) or len(ls) < 2:
        raise TypeError(
            f"conv_transpose: lhs and rhs must have the same rank (at least 2), got {ls} and {rs}."
        )
    if dimension_numbers is None:
        if len(ls) not in _TRANSPOSE_DEFAULT_DN:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_DEFAULT_DN[len(ls)]
    dn = conv_dimension_numbers(ls, rs, dimension_numbers)
    ksp = _take(rs, dn.rhs_spec)[2:]
    rhs_dilation = tuple(rhs_dilation) if rhs_dilation is not None else (1,) * len(ksp)
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        modes = [padding] * len(strides) if isinstance(padding, str) else [tuple(p) for p in padding]
        pads = [
            _conv_transpose_padding(dilate_dim(k, r), s, m)
            for k, r, s, m in zip(ksp, rhs_dilation, strides, modes)
        ]
    else:
        pads = padding
    if transpose_kernel:
        rhs = rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(len(rs)))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
        rhs = transpose(rhs, tuple(perm))
    return conv_general_dilated(
        lhs,
        rhs,
        (1,) * len(ksp),
        pads,
        strides,
        rhs_dilation,
        dn,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def conv_general_dilated_patches(
    lhs,
    filter_shape,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    precision=None,
    preferred_element_type=None,
):
    """The patches a convolution with `filter_shape` windows would read, flattened into the output
    feature dimension (channel major, then the window in the kernel layout's spatial order)."""
    lhs = _operand(lhs)
    aval = get_aval(lhs)
    filter_shape = tuple(int(k) for k in filter_shape)
    dn = conv_dimension_numbers(aval.shape, (1, 1) + filter_shape, dimension_numbers)
    c = aval.shape[dn.lhs_spec[1]]
    k = int(np.prod(filter_shape, dtype=np.int64))
    # One-hot kernel: output feature c * k + j copies window position j of channel c.
    eye = np.eye(k, dtype=aval.dtype).reshape((k, 1) + filter_shape)
    kernel = np.tile(eye, (c,) + (1,) * (len(filter_shape) + 1))
    kernel = np.ascontiguousarray(np.transpose(kernel, np.argsort(dn.rhs_spec)))
    return conv_general_dilated(
        lhs,
        kernel,
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        dn,
        feature_group_count=c,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )
