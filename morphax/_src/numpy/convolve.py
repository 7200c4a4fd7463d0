"""One-dimensional `convolve` and `correlate` (modes full, same and valid), each one
`conv_general_dilated`, so they differentiate and batch like any convolution."""

from __future__ import annotations

from morphax._src.numpy import manipulation, ufuncs, util
from morphax._src.prims import lax_api as L

__all__ = ["convolve", "correlate"]


def _conv(name, a, v, mode, flip, precision, preferred_element_type):
    util.check_arraylike(name, a, v)
    a, v = util.promote_dtypes_inexact(a, v)
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {a.shape} and {v.shape}.")
    swapped = False
    if v.shape[0] > a.shape[0]:
        a, v = v, a
        swapped = True
    if not flip:
        v = ufuncs.conj(v)
    else:
        v = manipulation.flip(v)
    m = v.shape[0]
    if mode == "valid":
        pad = (0, 0)
    elif mode == "same":
        pad = (m // 2, m - m // 2 - 1)
    elif mode == "full":
        pad = (m - 1, m - 1)
    else:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    out = L.conv_general_dilated(
        a[None, None, :], v[None, None, :], (1,), [pad], precision=precision,
        preferred_element_type=preferred_element_type,
    )[0, 0]  # fmt: skip
    if swapped and not flip:
        out = ufuncs.conj(manipulation.flip(out))
    return out


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    return _conv("convolve", a, v, mode, True, precision, preferred_element_type)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    return _conv("correlate", a, v, mode, False, precision, preferred_element_type)
