"""`packbits` and `unpackbits`: booleans to and from the bits of uint8, big- or little-endian."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import (
    creation,
    manipulation,
    reductions,
    ufuncs,
    util,
)

__all__ = ["packbits", "unpackbits"]


def packbits(a, axis: int | None = None, bitorder: str = "big"):
    """Pack the elements of a boolean/integer array into the bits of a uint8 array."""
    util.check_arraylike("packbits", a)
    a = creation.asarray(a)
    if not (_dtypes.issubdtype(a.dtype, np.integer) or _dtypes.issubdtype(a.dtype, np.bool_)):
        raise TypeError("Expected an input array of integer or boolean data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    bits = util.convert_element_type(ufuncs.not_equal(a, 0), np.uint8)
    if axis is None:
        bits = manipulation.ravel(bits)
        axis = 0
    axis = util.canonicalize_axis(axis, len(np.shape(bits)))
    bits = manipulation.moveaxis(bits, axis, -1)
    n = np.shape(bits)[-1]
    rem = (-n) % 8
    if rem:
        bits = manipulation.concatenate(
            [bits, creation.zeros(np.shape(bits)[:-1] + (rem,), dtype=np.uint8)], axis=-1
        )
    bits = manipulation.reshape(bits, np.shape(bits)[:-1] + ((n + rem) // 8, 8))
    shifts = np.arange(7, -1, -1) if bitorder == "big" else np.arange(8)
    weights = creation.asarray((1 << shifts).astype(np.uint8))
    packed = reductions.sum(ufuncs.multiply(bits, weights), axis=-1, dtype=np.uint8)
    return manipulation.moveaxis(packed, -1, axis)


def unpackbits(a, axis: int | None = None, count: int | None = None, bitorder: str = "big"):
    """Unpack the bits of a uint8 array into a uint8 array of 0s and 1s."""
    util.check_arraylike("unpackbits", a)
    a = creation.asarray(a)
    if a.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    shifts = np.arange(7, -1, -1) if bitorder == "big" else np.arange(8)
    shifts = creation.asarray(shifts.astype(np.uint8))
    bits = ufuncs.bitwise_and(ufuncs.right_shift(a[..., None], shifts), creation.asarray(1, dtype=np.uint8))
    if axis is None:
        bits = manipulation.ravel(bits)
        axis = 0
    else:
        axis = util.canonicalize_axis(axis, len(np.shape(a)))
        bits = manipulation.moveaxis(bits, axis, -2)
        bits = manipulation.reshape(bits, np.shape(bits)[:-2] + (np.shape(bits)[-2] * 8,))
        bits = manipulation.moveaxis(bits, -1, axis)
    if count is not None:
        count = int(count)
        n = np.shape(bits)[axis]
        if count > n:
            pad_shape = list(np.shape(bits))
            pad_shape[axis] = count - n
            bits = manipulation.concatenate(
                [bits, creation.zeros(tuple(pad_shape), dtype=np.uint8)], axis=axis
            )
        else:
            idx = [slice(None)] * len(np.shape(bits))
            idx[axis] = slice(None, count)
            bits = bits[tuple(idx)]
    return bits
