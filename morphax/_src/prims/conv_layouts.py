"""Convolution dimension numbers and shapes: `ConvDimensionNumbers`, the layout strings ("NHWC",
"HWIO", ...) turned into axis permutations, and the output shapes of a convolution and of its
transpose (conv_shape_tuple, conv_general_shape_tuple, conv_transpose_shape_tuple)."""

from __future__ import annotations

from typing import NamedTuple

from morphax._src.prims.windowed import (
    padtype_to_pads,
    stride_dim,
)

__all__ = [
    "ConvDimensionNumbers",
    "conv_general_permutations",
    "conv_dimension_numbers",
    "conv_shape_tuple",
    "conv_general_shape_tuple",
    "conv_transpose_shape_tuple",
]


class ConvDimensionNumbers(NamedTuple):
    """Axis positions: lhs_spec = (batch, feature, spatial...), rhs_spec = (out feature, in
    feature, spatial...), out_spec = (batch, feature, spatial...)."""

    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def conv_general_permutations(dimension_numbers):
    """Layout strings such as ('NCHW', 'OIHW', 'NCHW') -> (lhs, rhs, out) axis permutations; the
    spatial order is the kernel string's."""
    lhs_s, rhs_s, out_s = dimension_numbers
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(pairs):
        spec = dimension_numbers[i]
        if not (spec.count(a) == spec.count(b) == 1):
            raise TypeError(
                f"convolution dimension_numbers[{i}] must contain the characters '{a}' and '{b}' exactly "
                f"once, got {spec}."
            )
        if len(spec) != len(set(spec)):
            raise TypeError(
                f"convolution dimension_numbers[{i}] cannot have duplicate characters, got {spec}."
            )
    spatial = [set(s) - set(p) for s, p in zip(dimension_numbers, pairs)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise TypeError(
            f"convolution dimension_numbers elements must each have the same set of spatial characters, got "
            f"{tuple(dimension_numbers)}."
        )
    order = [c for c in rhs_s if c not in "OI"]

    def perm(spec, pair):
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spec.index(c) for c in order)

    return perm(lhs_s, pairs[0]), perm(rhs_s, pairs[1]), perm(out_s, pairs[2])


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """None (NCHW/OIHW/NCHW), a triple of layout strings, or a ConvDimensionNumbers -> the latter."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(
            f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} and {len(rhs_shape)}."
        )
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise TypeError(
            f"convolution dimension_numbers must be tuple/list or None, got {type(dimension_numbers)}."
        )
    if len(dimension_numbers) != 3:
        raise TypeError(
            f"convolution dimension_numbers list/tuple must be length 3, got {len(dimension_numbers)}."
        )
    if not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError(
            f"convolution dimension_numbers elements must be strings, got {tuple(map(type, dimension_numbers))}."
        )
    for i, s in enumerate(dimension_numbers):
        if len(s) != len(lhs_shape):
            raise TypeError(
                f"convolution dimension_numbers[{i}] must have len equal to the ndim of lhs and rhs, got "
                f"{len(s)} for lhs and rhs shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}."
            )
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """Output shape of a convolution with operands in canonical (NC..., OI...) layout."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(
            f"Wrong number of explicit pads for convolution: expected {len(lhs_shape) - 2}, got {len(pads)}."
        )
    padded = [n + lo + hi for n, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError(
            "Negative padding is larger than the size of the corresponding dimension: got padding="
            f"{list(pads)} for lhs_shape[2:]={tuple(lhs_shape[2:])}"
        )
    space = tuple(stride_dim(p, k, s) for p, k, s in zip(padded, rhs_shape[2:], strides))
    return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + space


def _take(shape, perm):
    return tuple(shape[i] for i in perm)


def _untake(values, perm):
    out = [None] * len(perm)
    for v, p in zip(values, perm):
        out[p] = v
    return tuple(out)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    out = conv_shape_tuple(
        _take(lhs_shape, dn.lhs_spec), _take(rhs_shape, dn.rhs_spec), window_strides, padding
    )
    return _untake(out, dn.out_spec)


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs_t, rhs_t = _take(lhs_shape, dn.lhs_spec), _take(rhs_shape, dn.rhs_spec)
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding) for k, s in zip(rhs_t[2:], window_strides)]
    space = [
        (i - 1) * s - k + 2 + lo + hi
        for i, k, s, (lo, hi) in zip(lhs_t[2:], rhs_t[2:], window_strides, padding)
    ]
    return _untake((lhs_t[0], rhs_t[0]) + tuple(space), dn.out_spec)


def _conv_transpose_padding(k, s, padding):
    # Padding of the fractionally strided convolution, from the forward conv's padding mode.
    if padding == "SAME":
        total = k + s - 2
        before = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        before = k - 1
    elif isinstance(padding, tuple):
        before, after = k - padding[0] - 1, k - padding[1] - 1
        total = before + after
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return before, total - before
