"""The jnp.ufunc class (call, reduce, accumulate, outer, at, reduceat), frompyfunc, and the ufunc
objects morphax.numpy binds to add, multiply, maximum... in place of the plain functions."""

from __future__ import annotations

import math

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.trace import Tracer
from morphax._src.higher_order.loops import fori_loop
from morphax._src.numpy import creation, indexing, manipulation, reductions, searching, ufuncs, util
from morphax._src.numpy.vectorize import vectorize
from morphax._src.prims import lax_api as L
from morphax._src.transforms.staging import trace_to_jaxpr

__all__ = ["frompyfunc", "ufunc"]


def _shape(x):
    return tuple(np.shape(x))


def _is_concrete(*xs):
    return not any(isinstance(x, Tracer) for x in xs)


_AT_INPLACE = (
    "Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace like np.ufunc.at(). "
    "Instead, you can pass inplace=False and capture the result; e.g. "
    "arr = jnp.add.at(arr, ind, val, inplace=False)"
)


class ufunc:
    """A universal function wrapping a scalar function of ``nin`` inputs and ``nout`` outputs, with
    ``reduce``/``accumulate``/``reduceat``/``outer``/``at`` for binary single-output ufuncs.

    ``call``, ``reduce``, ``accumulate``, ``at`` and ``reduceat`` optionally give faster
    implementations than the generic ones built from ``func`` (as ``jnp.add`` does with
    ``sum``, ``cumsum`` and a scatter-add)."""

    def __init__(
        self,
        func,
        /,
        nin: int,
        nout: int,
        *,
        name: str | None = None,
        nargs=None,
        identity=None,
        call=None,
        reduce=None,
        accumulate=None,
        at=None,
        reduceat=None,
    ):
        self._func = func
        self.nin = int(nin)
        self.nout = int(nout)
        self.nargs = int(nargs) if nargs is not None else self.nin
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self.__doc__ = getattr(func, "__doc__", None)
        self._call = call
        self._reduce = reduce
        self._accumulate = accumulate
        self._at = at
        self._reduceat = reduceat
        self._vectorized = None

    def __repr__(self):
        return f"<jnp.ufunc '{self.__name__}'>"

    def _key(self):
        return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, ufunc) and self._key() == other._key()

    def __call__(self, *args, out=None, where=None):
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        if len(args) != self.nin:
            raise TypeError(
                f"{self.__name__}() takes {self.nin} positional argument(s) but {len(args)} were given"
            )
        if self._call is not None:
            return self._call(*args)
        if self._vectorized is None:
            self._vectorized = vectorize(self._func)
        return self._vectorized(*args)

    def _check_binary(self, method):
        if self.nin != 2:
            raise ValueError(f"{method} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{method} only supported for functions returning a single value")

    def _result_dtype(self, *xs):
        """The dtype this ufunc gives for operands of the dtypes of `xs` (abstract evaluation)."""
        avals = [ShapedArray((), get_aval(x).dtype, get_aval(x).weak_type) for x in xs]
        closed = trace_to_jaxpr(lambda *vals: pytree.tree_leaves(self(*vals)), avals)
        return closed.out_avals[0].dtype

    def _reduce_axis(self, a, axis, initial):
        n = _shape(a)[axis]
        items = [manipulation.squeeze(x, axis) for x in manipulation.split(a, n, axis=axis)] if n else []
        if initial is None:
            if not items:
                if self.identity is None:
                    raise ValueError("zero-size array to reduction operation with no identity")
                return creation.full(_shape(a)[:axis] + _shape(a)[axis + 1 :], self.identity, dtype=a.dtype)
            acc, items = items[0], items[1:]
        else:
            acc = creation.full(_shape(a)[:axis] + _shape(a)[axis + 1 :], initial, dtype=a.dtype)
        for x in items:
            acc = self(acc, x)
        return acc

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
        """Reduce ``a`` along ``axis`` by repeated application of this binary ufunc."""
        self._check_binary("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        util.check_arraylike(f"{self.__name__}.reduce", a)
        if self._reduce is not None:
            return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)
        if where is not None:
            raise NotImplementedError(f"where argument of {self.__name__}.reduce()")
        a = creation.asarray(a, dtype=dtype)
        nd = len(_shape(a))
        axes = tuple(range(nd)) if axis is None else util.canonicalize_axes(axis, nd)
        result = a
        for ax in sorted(axes, reverse=True):
            result = self._reduce_axis(result, ax, initial if ax == min(axes) else None)
        if keepdims:
            result = manipulation.reshape(
                result, tuple(1 if i in axes else s for i, s in enumerate(_shape(a)))
            )
        return result

    def accumulate(self, a, axis: int = 0, dtype=None, out=None):
        """Cumulative application of this binary ufunc along ``axis``."""
        self._check_binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        util.check_arraylike(f"{self.__name__}.accumulate", a)
        if self._accumulate is not None:
            return self._accumulate(a, axis=axis, dtype=dtype)
        a = creation.asarray(a, dtype=dtype)
        axis = util.canonicalize_axis(axis, len(_shape(a)))
        n = _shape(a)[axis]
        if n == 0:
            return a
        items = [manipulation.squeeze(x, axis) for x in manipulation.split(a, n, axis=axis)]
        acc = items[0]
        outs = [acc]
        for x in items[1:]:
            acc = self(acc, x)
            outs.append(acc)
        return manipulation.stack(outs, axis=axis)

    def outer(self, A, B, /):  # noqa: N803 - NumPy's names
        """Apply this binary ufunc to all pairs of elements of ``A`` and ``B``."""
        self._check_binary("outer")
        util.check_arraylike(f"{self.__name__}.outer", A, B)
        A, B = creation.asarray(A), creation.asarray(B)
        A = manipulation.reshape(A, _shape(A) + (1,) * len(_shape(B)))
        return self(A, B)

    def at(self, a, indices, b=None, /, *, inplace: bool = True):
        """A copy of ``a`` with ``a[indices] = ufunc(a[indices], b)`` applied unbuffered: an element
        named several times by ``indices`` is updated once per occurrence, in order (like
        ``np.ufunc.at``). JAX arrays are immutable, so ``inplace=False`` is required."""
        if inplace:
            raise NotImplementedError(_AT_INPLACE)
        if self.nout != 1:
            raise ValueError("at only supported for functions returning a single value")
        if (b is None) != (self.nin == 1):
            raise ValueError(
                f"{self.__name__}.at: {'no' if self.nin == 1 else 'a'} second operand b is needed "
                f"for a ufunc with nin={self.nin}"
            )
        args = () if b is None else (b,)
        util.check_arraylike(f"{self.__name__}.at", a, *args)
        if self._at is not None:
            return self._at(a, indices, *args)
        return _at_unbuffered(self, a, indices, *args)

    def reduceat(self, a, indices, axis: int = 0, dtype=None, out=None):
        """Reductions of the slices ``a[indices[i]:indices[i + 1]]`` along ``axis`` (the last one runs
        to the end; where ``indices[i] >= indices[i + 1]`` the result is ``a[indices[i]]``), as
        ``np.ufunc.reduceat``. Concrete out-of-range indices raise IndexError; traced ones clip.
        ``dtype`` sets the dtype the reduction runs in (NumPy's meaning)."""
        self._check_binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        util.check_arraylike(f"{self.__name__}.reduceat", a, indices)
        a = creation.asarray(a)
        indices = creation.asarray(indices)
        if len(_shape(a)) == 0:
            raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape={_shape(a)}")
        if len(_shape(indices)) != 1:
            raise ValueError(
                f"reduceat: indices must be one-dimensional, got indices.shape={_shape(indices)}"
            )
        if not _dtypes.issubdtype(indices.dtype, np.integer):
            raise TypeError(f"reduceat: indices must be integers, got dtype {indices.dtype}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        axis = util.canonicalize_axis(axis, len(_shape(a)))
        n = _shape(a)[axis]
        if _is_concrete(indices):
            host = np.asarray(indices)
            bad = host[(host < 0) | (host >= n)]
            if bad.size:
                raise IndexError(f"index {int(bad[0])} out-of-bounds in {self.__name__}.reduceat [0, {n})")
        a = util.convert_element_type(a, dtype if dtype is not None else self._result_dtype(a, a))
        x = manipulation.moveaxis(a, axis, 0)
        if _shape(indices)[0] == 0 or n == 0:
            if _shape(indices)[0]:
                raise IndexError(f"{self.__name__}.reduceat: indices into an empty axis")
            return manipulation.moveaxis(x[:0], 0, axis)
        starts = util.convert_element_type(indices, np.int32)
        ends = manipulation.concatenate([starts[1:], creation.full((1,), n, dtype=np.int32)])
        impl = self._reduceat if self._reduceat is not None else _reduceat_fold
        return manipulation.moveaxis(impl(self, x, starts, ends), 0, axis)


# ---- ufunc.at: scatter primitives ---------------------------------------------------------------


def _flat_positions(shape, indices):
    """The flat positions in an array of `shape` of the elements `x[indices]` selects, in the order
    `x[indices]` lists them (out-of-bounds entries get `size`, one past the end)."""
    size = math.prod(shape)
    ids = manipulation.reshape(creation.arange(size, dtype=np.int32), shape)
    return ids.at[indices].get(mode="fill", fill_value=size)


def _at_unbuffered(uf, a, indices, *args):
    """`ufunc.at` for any ufunc: rounds of gather, apply, scatter. The k-th occurrence of a position
    among the flattened `indices` is updated in round k, so repeated positions see every earlier
    update; the rounds run as one loop primitive (their count is the largest multiplicity when the
    indices are concrete, their number otherwise)."""
    a = creation.asarray(a)
    args = tuple(creation.asarray(b) for b in args)
    dtype = uf._result_dtype(a, *args)
    a = util.convert_element_type(a, dtype)
    pos = _flat_positions(_shape(a), indices)
    args = tuple(util.convert_element_type(manipulation.broadcast_to(b, _shape(pos)), dtype) for b in args)
    k = math.prod(_shape(pos))
    size = math.prod(_shape(a))
    if k == 0 or size == 0:
        return a
    pos = manipulation.ravel(pos)
    args = tuple(manipulation.ravel(b) for b in args)
    flat = manipulation.ravel(a)

    # Occurrence rank of each entry among the entries naming the same position (stable order).
    order = searching.argsort(pos, stable=True)
    sorted_pos = indexing.take(pos, order)
    iota = creation.arange(k, dtype=np.int32)
    run_start = ufuncs.where(
        manipulation.concatenate(
            [creation.ones((1,), bool), ufuncs.not_equal(sorted_pos[1:], sorted_pos[:-1])]
        ),
        iota,
        0,
    )
    rank_sorted = ufuncs.subtract(iota, L.cummax(run_start, axis=0))
    rank = creation.zeros((k,), np.int32).at[order].set(rank_sorted, unique_indices=True)
    rounds = int(np.max(np.asarray(rank))) + 1 if _is_concrete(rank) else k
    gather_pos = ufuncs.minimum(pos, size - 1)

    def one_round(r, flat):
        target = ufuncs.where(ufuncs.equal(rank, r), pos, size)  # other ranks: out of bounds, dropped
        new = uf(indexing.take(flat, gather_pos), *args)
        return flat.at[target].set(util.convert_element_type(new, dtype), mode="drop")

    flat = one_round(0, flat) if rounds == 1 else fori_loop(0, rounds, one_round, flat)
    return manipulation.reshape(flat, _shape(a))


def _scatter_at(method, promote=False, fallback=None):
    """`ufunc.at` as one scatter primitive (`x.at[indices].<method>(b)`), which combines repeated
    indices itself. `promote`: the result takes the ufunc's dtype (JAX's maximum/minimum); otherwise
    `a` keeps its dtype, booleans going through int32 as in JAX's add/multiply."""

    def at(a, indices, b):
        a, b = creation.asarray(a), creation.asarray(b)
        if promote:
            a, b = util.promote_dtypes(a, b)
            if a.dtype == np.bool_:
                return _at_unbuffered(fallback, a, indices, b)
        elif a.dtype == np.bool_:
            a32 = util.convert_element_type(a, np.int32)
            b32 = util.convert_element_type(ufuncs.not_equal(b, False), np.int32)
            out = getattr(a32.at[indices], method)(b32)
            return util.convert_element_type(out, np.bool_)
        return getattr(a.at[indices], method)(b)

    return at


# ---- ufunc.reduceat: segment reductions ---------------------------------------------------------


def _bcast_rows(v, x):
    """(m,) `v` reshaped to broadcast against (m, ...) `x`."""
    return manipulation.reshape(v, _shape(v) + (1,) * (len(_shape(x)) - 1))


def _reduceat_fold(uf, x, starts, ends):
    """Any binary ufunc (associative or not): a fold over the axis, as one loop primitive; segment i
    takes ``x[j]`` for ``starts[i] < j < ends[i]`` into its running value, in order."""
    n = _shape(x)[0]
    out = indexing.take(x, starts, axis=0, mode="clip")

    def body(j, out):
        inside = ufuncs.logical_and(ufuncs.less(starts, j), ufuncs.less(j, ends))
        row = manipulation.broadcast_to(indexing.take(x, manipulation.reshape(j, (1,)), axis=0), _shape(out))
        return ufuncs.where(_bcast_rows(inside, out), uf(out, row), out)

    return fori_loop(1, n, body, out) if n > 1 else out


def _reduceat_segments(uf, x, starts, ends):
    """Associative binary ufuncs: segment reductions over power-of-two blocks. Level l holds the
    reductions of every block ``x[j : j + 2**l]`` (built from level l-1 in one vectorized step);
    segment i, of length ``ends[i] - starts[i]`` (1 where that is not positive), combines the blocks
    of the binary digits of its length, left to right. log2(n) gathers per segment, no loop over
    elements, exact order of the operands (only the grouping differs from a left fold)."""
    n = _shape(x)[0]
    length = ufuncs.where(ufuncs.less(starts, ends), ufuncs.subtract(ends, starts), 1)
    levels = [x]
    while 2 ** len(levels) <= n:
        prev, half = levels[-1], 2 ** (len(levels) - 1)
        m = n - 2 * half + 1
        levels.append(uf(prev[:m], prev[half : half + m]))
    pos = starts
    acc = has = None
    for lvl in range(len(levels) - 1, -1, -1):
        width = 2**lvl
        bit = ufuncs.not_equal(ufuncs.bitwise_and(length, width), 0)
        block = indexing.take(levels[lvl], ufuncs.clip(pos, 0, n - width), axis=0)
        b = _bcast_rows(bit, block)
        if acc is None:
            acc, has = block, bit
        else:
            both = _bcast_rows(ufuncs.logical_and(bit, has), block)
            acc = ufuncs.where(both, uf(acc, block), ufuncs.where(b, block, acc))
            has = ufuncs.logical_or(has, bit)
        pos = ufuncs.add(pos, ufuncs.multiply(util.convert_element_type(bit, np.int32), width))
    return acc


def frompyfunc(func, /, nin: int, nout: int, *, identity=None):
    """Create a ``ufunc`` from an arbitrary (array-traceable) scalar function."""
    return ufunc(func, nin, nout, identity=identity)


# ---- The ufunc objects of morphax.numpy (add, multiply, ...) -------------------------------------


def _reduction(fn, takes_dtype=True):
    def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        kw = {"keepdims": keepdims, "where": where}
        if initial is not None:
            kw["initial"] = initial
        if takes_dtype:
            return fn(a, axis=axis, dtype=dtype, **kw)
        return fn(a if dtype is None else creation.asarray(a, dtype=dtype), axis=axis, **kw)

    return reduce


def _bool_reduction(fn):
    def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        if initial is not None:
            raise NotImplementedError("initial argument of a logical ufunc's reduce()")
        out = fn(a, axis=axis, keepdims=keepdims, where=where)
        return out if dtype is None else util.convert_element_type(out, dtype)

    return reduce


def _make_ufunc(name, nin, identity=None, reduce=None, accumulate=None, at=None, associative=True):
    fn = getattr(ufuncs, name)
    return ufunc(
        fn,
        nin,
        1,
        name=name,
        identity=identity,
        call=fn,
        reduce=reduce,
        accumulate=accumulate,
        at=at,
        reduceat=_reduceat_segments if (associative and nin == 2) else None,
    )


add = _make_ufunc("add", 2, 0, _reduction(reductions.sum), reductions.cumsum, _scatter_at("add"))
multiply = _make_ufunc(
    "multiply", 2, 1, _reduction(reductions.prod), reductions.cumprod, _scatter_at("multiply")
)
subtract = _make_ufunc("subtract", 2, at=_scatter_at("subtract"), associative=False)
maximum = _make_ufunc("maximum", 2, reduce=_reduction(reductions.max, takes_dtype=False))
minimum = _make_ufunc("minimum", 2, reduce=_reduction(reductions.min, takes_dtype=False))
maximum._at = _scatter_at("max", promote=True, fallback=maximum)
minimum._at = _scatter_at("min", promote=True, fallback=minimum)
logical_and = _make_ufunc("logical_and", 2, True, _bool_reduction(reductions.all))
logical_or = _make_ufunc("logical_or", 2, False, _bool_reduction(reductions.any))
logical_xor = _make_ufunc("logical_xor", 2, False)
bitwise_and = _make_ufunc("bitwise_and", 2, -1)
bitwise_or = _make_ufunc("bitwise_or", 2, 0)
bitwise_xor = _make_ufunc("bitwise_xor", 2, 0)
logaddexp = _make_ufunc("logaddexp", 2, -np.inf)
logaddexp2 = _make_ufunc("logaddexp2", 2, -np.inf)
negative = _make_ufunc("negative", 1, associative=False)

# The names morphax.numpy binds to these objects (after the plain functions of ufuncs.py).
UFUNC_OBJECTS = (
    "add", "multiply", "subtract", "maximum", "minimum", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2", "negative",
)  # fmt: skip
