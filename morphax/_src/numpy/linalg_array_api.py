"""Norms and array-API helpers of `morphax.numpy.linalg` (vector/matrix norms, diagonal, trace,
cross, outer and the product re-exports), plus the argument helpers the linalg module shares.

Compositions of jnp functions and the svd primitive; no rules of their own.
"""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.numpy import manipulation, products, reductions, ufuncs, util
from morphax._src.prims import linalg as _la


def _shape(x):
    return get_aval(x).shape


def _dtype(x):
    return get_aval(x).dtype


def _arr(name, *xs):
    util.check_arraylike(name, *xs)
    return [util.asarray_like(x) for x in xs]


def _inexact(name, *xs):
    """Check, then promote to a common inexact dtype (ints and bools become the default float)."""
    util.check_arraylike(name, *xs)
    return util.promote_dtypes_inexact(*[util.asarray_like(x) for x in xs])


# ------------------------------------------------------------------------------------------------
# Norms.


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):  # noqa: A002 - NumPy's name
    """Vector p-norm over `axis` (all axes by default). As in JAX, integer inputs keep their dtype
    for ord in (1, inf, -inf); the other orders are computed in floating point."""
    (x,) = _arr("jnp.linalg.vector_norm", x)
    if ord is None or ord == 2:
        return ufuncs.sqrt(
            reductions.sum(ufuncs.real(ufuncs.multiply(x, ufuncs.conj(x))), axis=axis, keepdims=keepdims)
        )
    if isinstance(ord, str):
        msg = f"Invalid order '{ord}' for vector norm."
        if ord in ("inf", "-inf"):
            msg += f" Use '{ord[:-3]}jax.numpy.inf' instead."
        raise ValueError(msg)
    if ord == np.inf:
        return reductions.max(ufuncs.abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return reductions.min(ufuncs.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        rdt = _dtypes.real_dtype(_dtypes.to_inexact_dtype(_dtype(x)))
        return reductions.sum(ufuncs.not_equal(x, 0), dtype=rdt, axis=axis, keepdims=keepdims)
    if ord == 1:
        return reductions.sum(ufuncs.abs(x), axis=axis, keepdims=keepdims)
    (x,) = util.promote_dtypes_inexact(x)
    abs_x = ufuncs.abs(x)
    rdt = _dtype(abs_x)
    ord_arr = util.convert_element_type(ord, rdt)
    total = reductions.sum(ufuncs.power(abs_x, ord_arr), axis=axis, keepdims=keepdims)
    return ufuncs.power(total, ufuncs.divide(util.convert_element_type(1, rdt), ord_arr))


def norm(x, ord=None, axis=None, keepdims: bool = False):  # noqa: A002 - NumPy's name
    """Vector or matrix norm (NumPy's `ord` choices); with axis=None and ord=None the 2-norm of
    the flattened array."""
    (x,) = _inexact("jnp.linalg.norm", x)
    nd = len(_shape(x))
    if axis is None:
        if ord is None:
            return ufuncs.sqrt(
                reductions.sum(ufuncs.real(ufuncs.multiply(x, ufuncs.conj(x))), keepdims=keepdims)
            )
        axis = tuple(range(nd))
    elif isinstance(axis, tuple):
        axis = tuple(util.canonicalize_axis(a, nd, "norm") for a in axis)
    else:
        axis = (util.canonicalize_axis(axis, nd, "norm"),)
    if len(axis) == 1:
        return vector_norm(x, ord=2 if ord is None else ord, axis=axis, keepdims=keepdims)
    if len(axis) != 2:
        raise ValueError(
            f"Improper number of axes for norm: axis={axis}. Pass one axis to compute a vector-norm, or two "
            "axes to compute a matrix-norm."
        )
    row, col = axis
    absx = ufuncs.abs(x)
    if ord is None or ord in ("f", "fro"):
        return ufuncs.sqrt(
            reductions.sum(ufuncs.real(ufuncs.multiply(x, ufuncs.conj(x))), axis=axis, keepdims=keepdims)
        )
    if ord in (1, -1):
        if not keepdims and col > row:
            col -= 1
        red = reductions.max if ord == 1 else reductions.min
        extra = {"initial": 0} if ord == 1 else {}
        return red(reductions.sum(absx, axis=row, keepdims=keepdims), axis=col, keepdims=keepdims, **extra)
    if ord in (np.inf, -np.inf):
        if not keepdims and row > col:
            row -= 1
        red = reductions.max if ord == np.inf else reductions.min
        extra = {"initial": 0} if ord == np.inf else {}
        return red(reductions.sum(absx, axis=col, keepdims=keepdims), axis=row, keepdims=keepdims, **extra)
    if ord in ("nuc", 2, -2):
        moved = manipulation.moveaxis(x, axis, (-2, -1))
        sv = _la.svd(moved, full_matrices=False, compute_uv=False)
        if ord == 2:
            y = reductions.max(sv, axis=-1, initial=0)
        elif ord == -2:
            y = reductions.min(sv, axis=-1)
        else:
            y = reductions.sum(sv, axis=-1)
        if keepdims:
            y = manipulation.expand_dims(y, axis)
        return y
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):  # noqa: A002 - NumPy's name
    """Matrix norm over the last two axes."""
    (x,) = _arr("jnp.linalg.matrix_norm", x)
    return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


# ------------------------------------------------------------------------------------------------
# Array-API helpers.


def diagonal(x, /, *, offset: int = 0):
    """Diagonal `offset` of the last two axes."""
    (x,) = _arr("jnp.linalg.diagonal", x)
    s = _shape(x)
    if len(s) < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions, got shape {s}")
    m, n = s[-2:]
    offset = operator.index(offset)
    k = max(0, min(m + min(offset, 0), n - max(offset, 0)))
    rows = np.arange(k) + max(-offset, 0)
    cols = np.arange(k) + max(offset, 0)
    return x[..., rows, cols]


def trace(x, /, *, offset: int = 0, dtype=None):
    """Sum of diagonal `offset` of the last two axes (integers accumulate as in jnp.sum)."""
    (x,) = _arr("jnp.linalg.trace", x)
    return reductions.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def cross(x1, x2, /, *, axis=-1):
    """Cross product of (arrays of) 3-vectors along `axis`."""
    x1, x2 = _arr("jnp.linalg.cross", x1, x2)
    s1, s2 = _shape(x1), _shape(x2)
    if not s1 or not s2 or s1[axis] != 3 or s2[axis] != 3:
        raise ValueError(
            "Both input arrays must be (arrays of) 3-dimensional vectors, but they have "
            f"x1.shape[axis]={s1[axis] if s1 else None} and x2.shape[axis]={s2[axis] if s2 else None}"
        )
    x1, x2 = util.promote_dtypes(x1, x2)
    a = manipulation.moveaxis(x1, axis, -1)
    b = manipulation.moveaxis(x2, axis, -1)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    mul, sub = ufuncs.multiply, ufuncs.subtract
    c = manipulation.stack(
        [sub(mul(a1, b2), mul(a2, b1)), sub(mul(a2, b0), mul(a0, b2)), sub(mul(a0, b1), mul(a1, b0))], axis=-1
    )
    return manipulation.moveaxis(c, -1, axis)


def outer(x1, x2, /):
    """Outer product of two vectors."""
    x1, x2 = _arr("jnp.linalg.outer", x1, x2)
    if len(_shape(x1)) != 1 or len(_shape(x2)) != 1:
        raise ValueError(
            f"Input arrays must be one-dimensional, but they are x1.ndim={len(_shape(x1))} x2.ndim={len(_shape(x2))}"
        )
    return ufuncs.multiply(x1[:, None], x2[None, :])


def matrix_transpose(x, /):
    """Swap the last two axes."""
    (x,) = _arr("jnp.linalg.matrix_transpose", x)
    if len(_shape(x)) < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions; got ndim={len(_shape(x))}")
    return manipulation.matrix_transpose(x)


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """Matrix product (numpy.matmul's rules)."""
    x1, x2 = _arr("jnp.linalg.matmul", x1, x2)
    return products.matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """Vector dot product along `axis`, conjugating x1."""
    x1, x2 = _arr("jnp.linalg.vecdot", x1, x2)
    return products.vecdot(
        x1, x2, axis=axis, precision=precision, preferred_element_type=preferred_element_type
    )


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None, out_sharding=None):
    """Tensor contraction over `axes` (an int or a pair of axis sequences)."""
    x1, x2 = _arr("jnp.linalg.tensordot", x1, x2)
    return products.tensordot(
        x1, x2, axes=axes, precision=precision, preferred_element_type=preferred_element_type
    )


def multi_dot(arrays, *, precision=None):
    """Product of a chain of matrices (first and last may be vectors), in the cheapest order."""
    arrs = _arr("jnp.linalg.multi_dot", *arrays)
    if len(arrs) < 2:
        raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrs)}")
    shapes = [_shape(a) for a in arrs]
    if not (
        len(shapes[0]) in (1, 2) and len(shapes[-1]) in (1, 2) and all(len(s) == 2 for s in shapes[1:-1])
    ):
        raise ValueError(
            "multi_dot: input arrays must all be two-dimensional, except for the first and last array which may "
            f"be 1 or 2 dimensional. Got array shapes {shapes}"
        )
    if any(a[-1] != b[0] for a, b in zip(shapes[:-1], shapes[1:])):
        raise ValueError(
            f"multi_dot: last dimension of each array must match first dimension of following array. Got array shapes {shapes}"
        )
    operands = []
    for i, a in enumerate(arrs):
        labels = [i, i + 1]
        if i == 0 and len(shapes[0]) == 1:
            labels = [1]
        if i == len(arrs) - 1 and len(shapes[-1]) == 1:
            labels = [i]
        operands += [a, labels]
    return products.einsum(*operands, optimize="auto", precision=precision)
