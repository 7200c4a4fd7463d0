"""`conv_general_dilated_local`: the unshared-weight ("locally connected") convolution of JAX, every
output position with its own kernel. Composed from `conv_general_dilated_patches` and one
`dot_general` batched over the output positions, so its rules are those of the primitives used."""

from __future__ import annotations

from morphax._src.core.avals import get_aval
from morphax._src.core.batch_axes import moveaxis
from morphax._src.prims._shape_util import as_lax_array
from morphax._src.prims.conv_composites import conv_general_dilated_patches
from morphax._src.prims.conv_layouts import conv_dimension_numbers
from morphax._src.prims.dot import canonicalize_precision, dot_general
from morphax._src.prims.shape import transpose

__all__ = ["conv_general_dilated_local"]


def conv_general_dilated_local(
    lhs,
    rhs,
    window_strides,
    padding,
    filter_shape,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    precision=None,
):
    """Unshared N-d convolution. `rhs` has the layout ``dimension_numbers[1]`` (default
    ('NCHW', 'OIHW', 'NCHW')) but its spatial dims index *output* positions, and its I dim fuses
    the input channel with the receptive window: size ``C * prod(filter_shape)``, channel major,
    then the window in the kernel string's spatial order. `filter_shape` is the window, in that
    order; strides, padding ('SAME', 'VALID' or (low, high) pairs) and dilations are as in
    `conv_general_dilated`."""
    lhs, rhs = as_lax_array(lhs), as_lax_array(rhs)
    c_precision = canonicalize_precision(precision)
    if c_precision is None:
        lhs_precision = None
    elif isinstance(c_precision, tuple) and len(c_precision) == 2:
        lhs_precision = c_precision[0]
    else:
        raise ValueError(f"Unsupported precision for conv_general_dilated_local: {precision}")
    filter_shape = tuple(int(k) for k in filter_shape)
    ls, rs = get_aval(lhs).shape, get_aval(rhs).shape
    if len(rs) != len(ls):
        raise TypeError(
            f"conv_general_dilated_local: lhs and rhs must have the same rank, got shapes {ls} and {rs}."
        )
    if len(filter_shape) != len(ls) - 2:
        raise ValueError(
            f"conv_general_dilated_local: filter_shape needs one size per spatial dimension ({len(ls) - 2}), "
            f"got {filter_shape}."
        )
    patches = conv_general_dilated_patches(
        lhs,
        filter_shape,
        window_strides,
        padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dimension_numbers,
        precision=lhs_precision,
    )
    lhs_spec, rhs_spec, out_spec = conv_dimension_numbers(ls, (1, 1) + filter_shape, dimension_numbers)
    ps = get_aval(patches).shape
    want = [None] * len(rs)
    want[rhs_spec[0]] = rs[rhs_spec[0]]  # any number of output features
    want[rhs_spec[1]] = ps[out_spec[1]]
    for o_dim, r_dim in zip(out_spec[2:], rhs_spec[2:]):
        want[r_dim] = ps[o_dim]
    if tuple(want) != tuple(rs):
        raise TypeError(
            f"conv_general_dilated_local: rhs must have shape {tuple(want)} (output features, "
            f"C * prod(filter_shape) = {ps[out_spec[1]]}, then the output spatial sizes in the rhs layout), "
            f"got {rs}."
        )
    # Contract the fused window/channel dims; the output positions are batch dims of the product,
    # taken in the output's axis order (the rhs lists them in kernel order).
    pairs = sorted(zip(out_spec[2:], rhs_spec[2:]))
    dims = (((out_spec[1],), (rhs_spec[1],)), (tuple(o for o, _ in pairs), tuple(r for _, r in pairs)))
    out = dot_general(patches, rhs, dims, precision=precision)
    # Product layout: output positions, then N (the patches' free dim), then O (the rhs free dim).
    n = len(ls)
    out = moveaxis(out, n - 2, 0)
    out = moveaxis(out, n - 1, 1)
    perm = [0] * n
    perm[out_spec[0]], perm[out_spec[1]] = 0, 1
    for i, (o_dim, _) in enumerate(pairs):
        perm[o_dim] = 2 + i
    return transpose(out, tuple(perm))
