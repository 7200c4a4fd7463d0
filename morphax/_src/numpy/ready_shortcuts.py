"""Shortcuts of the eager operators for ready arrays (computed NumPy values, not placed): where
JAX's answer is what NumPy computes on the value, skip promotion, index parsing and the
primitives' dispatch, and give exactly what the general path would (tests/numpy/
test_ready_shortcuts.py compares both, bit for bit). Each returns None where it does not apply
(tracers, device buffers, pending values, any doubt), and the caller takes the general path,
which also raises JAX's errors.

- `scalar_like`: a Python scalar operand that keeps the array's dtype (`x * 2`), filled to its
  shape for the operator's primitive;
- `static_take`: `x[3]`, `x[1:5, ::2]`, `x[..., None]`: ints, slices, Ellipsis and None;
- `static_set`: `x.at[2].set(5.0)` with such an index and a scalar or an array of the dtype.
"""

from __future__ import annotations

import numpy as np

from morphax._src.config import config
from morphax._src.runtime.array import Array, computed_host_value

SCALAR_TYPES = (int, float)


def scalar_like(a, s, kinds):
    """The Python scalar `s` as a weak Array of `a`'s dtype and shape (a broadcast view of large
    ones), where `a`'s dtype is of a kind in `kinds` (those where the operator's result keeps it)
    and `s` keeps it (`_keeps_dtype`): what the general path would make of it. Else None."""
    buf = computed_host_value(a)
    if buf is None:
        return None
    dtype = buf.dtype
    if dtype.kind not in kinds or not _keeps_dtype(dtype, a.weak_type, s):
        return None
    try:
        if buf.size <= 4096:  # filled: cheaper than a broadcast view (3 us) for small arrays
            value = np.empty(buf.shape, dtype)
            value.fill(s)
        else:
            value = np.broadcast_to(np.array(s, dtype), buf.shape)
    except OverflowError:  # an int out of the dtype's range: the general path (JAX wraps it)
        return None
    return Array(value, True)


def _scalar_rule(dtype):
    """(whether a float keeps `dtype`, the largest finite value) for a number dtype, made at its
    first use (bfloat16's needs ml_dtypes, imported only where such arrays exist); None for
    others (bool, float8, int4: the general path)."""
    if dtype.name not in _RULE_NAMES:
        return None
    if dtype.kind in "iu":
        rule = (False, None)
    else:
        real = np.empty(0, dtype).real.dtype
        info = np.finfo(real) if real.kind == "f" else _ml_finfo(real)
        rule = (True, float(info.max))
    _SCALAR_RULES[dtype] = rule
    return rule


def _ml_finfo(dtype):
    import ml_dtypes

    return ml_dtypes.finfo(dtype)


_RULE_NAMES = frozenset(
    "float16 bfloat16 float32 float64 complex64 complex128 int8 int16 int32 int64 uint8 uint16 uint32 uint64".split()
)
_SCALAR_RULES: dict = {}
# By the x64 flag: the dtypes of weak values (what a Python scalar becomes), and the bound of
# the Python ints that convert.
_WEAK_DEFAULTS = {
    False: frozenset(map(np.dtype, ("int32", "float32", "complex64"))),
    True: frozenset(map(np.dtype, ("int64", "float64", "complex128"))),
}
_INT_BOUND = {False: 2**31, True: 2**63}


def _keeps_dtype(dtype, weak, s) -> bool:
    """Whether the Python scalar `s` converts to `dtype` without changing it under JAX's promotion
    and within range (an int with any number dtype, a float with floats and complex numbers;
    NaN and infinities excluded), the array being weak only with a default dtype."""
    rule = _SCALAR_RULES.get(dtype) or _scalar_rule(dtype)
    if rule is None:
        return False
    x64 = config.enable_x64
    if weak and dtype not in _WEAK_DEFAULTS[x64]:
        return False
    takes_float, limit = rule
    if type(s) is float:
        return takes_float and -limit <= s <= limit
    return -_INT_BOUND[x64] <= s < _INT_BOUND[x64]


_INDEX_TYPES = (int, slice, type(None), type(Ellipsis))


def _static_index(idx) -> bool:
    """Whether `idx` is basic and static: Python ints (not bools), slices of ints, Ellipsis and
    None, alone or in a tuple."""
    items = idx if type(idx) is tuple else (idx,)
    for i in items:
        t = type(i)
        if t not in _INDEX_TYPES:
            return False
        if t is slice:
            for part in (i.start, i.stop, i.step):
                if part is not None and type(part) is not int:
                    return False
    return True


def static_take(x, idx):
    """`x[idx]` for a static basic index, where NumPy indexes as JAX does (an int out of bounds
    takes the general path: JAX clamps it); a copy, since the value's buffer may later be
    donated."""
    buf = computed_host_value(x)
    if buf is None or not _static_index(idx):
        return None
    try:
        value = buf[idx]
    except (IndexError, TypeError, ValueError):
        return None
    return Array(np.array(value), x.weak_type)


def static_set(x, idx, values):
    """`x.at[idx].set(values)` for a static basic index and a Python scalar that keeps `x`'s dtype
    or a ready array of `x`'s dtype broadcasting to `x[idx]` by NumPy's rules (no extra leading
    axes), else None (out-of-bounds ints, which JAX drops, included)."""
    buf = computed_host_value(x)
    if buf is None or not _static_index(idx):
        return None
    t = type(values)
    if t in SCALAR_TYPES:
        if not _keeps_dtype(buf.dtype, False, values):
            return None
        update = values
    elif t is Array:
        update = computed_host_value(values)
        if update is None or update.dtype != buf.dtype:
            return None
    else:
        return None
    try:
        if type(update) is np.ndarray and update.ndim > np.ndim(buf[idx]):
            return None
        out = buf.copy()
        out[idx] = update
    except (IndexError, TypeError, ValueError, OverflowError):
        return None
    return Array(out, x.weak_type)
