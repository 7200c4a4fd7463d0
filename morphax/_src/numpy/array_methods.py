"""Installs the NumPy-style surface (operators, methods, properties, `.at`) on `Array` and on
`Tracer`, so user code treats concrete and traced arrays alike.

Methods forward to `morphax.numpy` functions, looked up at call time in the namespace the public
`morphax.numpy` hands over when it has been built (`install_all(namespace)`, its last step): the
numpy layer never imports the public module.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core.state_types import AbstractRef
from morphax._src.core.trace import Tracer
from morphax._src.numpy import ready_shortcuts, ufuncs
from morphax._src.prims import lax_api as L
from morphax._src.runtime import ready_ops
from morphax._src.runtime.array import Array, computed_pair_dtype

_namespace: list = []  # the public morphax.numpy module, once it calls install_all


def _jnp():
    return _namespace[0]


def _binop(fn, fast_prim=None, fast_kinds="fiuc"):
    """`fast_prim`: for two ready Arrays of one dtype (of a kind in `fast_kinds`), shape and weak
    type, the jnp function reduces to binding this primitive: skip promotion (the hot eager path);
    so it does for a ready Array and a Python scalar that does not change its dtype (`x * 2`).
    Where the primitive has a `ready_impl`, two such Arrays skip the bind too
    (runtime/ready_ops.py)."""

    def op(self, other):
        if fast_prim is not None and type(self) is Array:
            if type(other) is Array:
                dtype = computed_pair_dtype(self, other)
                if dtype is not None and dtype.kind in fast_kinds:
                    return fast_prim.bind(self, other)
            elif type(other) in ready_shortcuts.SCALAR_TYPES:
                scalar = ready_shortcuts.scalar_like(self, other, fast_kinds)
                if scalar is not None:
                    return fast_prim.bind(self, scalar)
        if not _is_operand(other):
            return NotImplemented
        return fn(self, other)

    if fast_prim is not None and fast_prim.ready_impl is not None:
        return ready_ops.binary(fast_prim.ready_impl, fast_kinds, op)
    return op


def _rbinop(fn, fast_prim=None, fast_kinds="fiuc"):
    def op(self, other):
        if fast_prim is not None and type(self) is Array and type(other) in ready_shortcuts.SCALAR_TYPES:
            scalar = ready_shortcuts.scalar_like(self, other, fast_kinds)
            if scalar is not None:
                return fast_prim.bind(scalar, self)
        if not _is_operand(other):
            return NotImplemented
        return fn(other, self)

    return op


# Array last: its isinstance hook (tracers are Arrays) costs a Python call for the scalars.
_OPERAND_TYPES = (int, float, complex, Tracer, Array)


def _is_operand(x) -> bool:
    if isinstance(x, _OPERAND_TYPES):
        return True
    import numpy as np

    return isinstance(x, (np.ndarray, np.generic))


def _matmul(a, b):
    return _jnp().matmul(a, b)


def _round_operator(self, ndigits=None):
    """``round(x)`` and ``round(x, n)``: `jnp.round`; without `ndigits` the result is cast to the
    default integer dtype, as Python's round of a float returns an int."""
    out = _jnp().round(self, decimals=0 if ndigits is None else ndigits)
    return out if ndigits is not None else out.astype(int)


def _method(name):
    def method(self, *args, **kwargs):
        return getattr(_jnp(), name)(self, *args, **kwargs)

    method.__name__ = name
    return method


_OPERATORS = {
    "__add__": _binop(ufuncs.add, L.add_p),
    "__radd__": _rbinop(ufuncs.add, L.add_p),
    "__sub__": _binop(ufuncs.subtract, L.sub_p),
    "__rsub__": _rbinop(ufuncs.subtract, L.sub_p),
    "__mul__": _binop(ufuncs.multiply, L.mul_p),
    "__rmul__": _rbinop(ufuncs.multiply, L.mul_p),
    "__truediv__": _binop(ufuncs.true_divide, L.div_p, "fc"),
    "__rtruediv__": _rbinop(ufuncs.true_divide, L.div_p, "fc"),
    "__floordiv__": _binop(ufuncs.floor_divide),
    "__rfloordiv__": _rbinop(ufuncs.floor_divide),
    "__mod__": _binop(ufuncs.remainder),
    "__rmod__": _rbinop(ufuncs.remainder),
    "__divmod__": _binop(ufuncs.divmod),
    "__rdivmod__": _rbinop(ufuncs.divmod),
    "__pow__": _binop(ufuncs.power),
    "__rpow__": _rbinop(ufuncs.power),
    "__matmul__": _binop(_matmul),
    "__rmatmul__": _rbinop(_matmul),
    "__and__": _binop(ufuncs.bitwise_and),
    "__rand__": _rbinop(ufuncs.bitwise_and),
    "__or__": _binop(ufuncs.bitwise_or),
    "__ror__": _rbinop(ufuncs.bitwise_or),
    "__xor__": _binop(ufuncs.bitwise_xor),
    "__rxor__": _rbinop(ufuncs.bitwise_xor),
    "__lshift__": _binop(ufuncs.left_shift),
    "__rlshift__": _rbinop(ufuncs.left_shift),
    "__rshift__": _binop(ufuncs.right_shift),
    "__rrshift__": _rbinop(ufuncs.right_shift),
    "__eq__": _binop(ufuncs.equal),
    "__ne__": _binop(ufuncs.not_equal),
    "__lt__": _binop(ufuncs.less),
    "__le__": _binop(ufuncs.less_equal),
    "__gt__": _binop(ufuncs.greater),
    "__ge__": _binop(ufuncs.greater_equal),
    "__neg__": ufuncs.negative,
    "__pos__": ufuncs.positive,
    "__abs__": ufuncs.absolute,
    "__invert__": ufuncs.invert,
    "__round__": _round_operator,
}

# Methods that are the jnp function of the same name applied to self.
_METHODS = (
    "all any argmax argmin argpartition argsort choose clip conj conjugate cumprod cumsum diagonal "
    "dot max mean min nonzero prod ptp ravel repeat round searchsorted sort squeeze std sum swapaxes "
    "take trace var"
).split()


def _compress(self, condition, axis=None, *, size=None, fill_value=0):
    # NumPy's method takes the condition first; the function takes it before the array.
    return _jnp().compress(condition, self, axis=axis, size=size, fill_value=fill_value)


def _view(self, dtype=None, type=None):
    """The same bits seen as `dtype` (NumPy's rule: the last axis is rescaled by the itemsize
    ratio), via bitcast_convert_type."""
    if type is not None:
        raise NotImplementedError("`type` argument of array.view() is not supported.")
    if dtype is None:
        return self
    new = np.dtype(dtype)
    old = self.dtype
    if new == old:
        return self
    if self.ndim == 0 and new.itemsize != old.itemsize:
        raise ValueError("view() of a 0-d array needs a dtype of the same itemsize")
    if new.itemsize == old.itemsize:
        return L.bitcast_convert_type(self, new)
    jnp = _jnp()
    if new.itemsize < old.itemsize:
        out = L.bitcast_convert_type(self, new)  # adds a trailing axis of old/new elements
        return jnp.reshape(out, self.shape[:-1] + (self.shape[-1] * (old.itemsize // new.itemsize),))
    ratio = new.itemsize // old.itemsize
    if new.itemsize % old.itemsize or self.shape[-1] % ratio:
        raise ValueError(
            f"view: the last axis of size {self.shape[-1]} ({old.name}) cannot be viewed as {new.name}"
        )
    grouped = jnp.reshape(self, self.shape[:-1] + (self.shape[-1] // ratio, ratio))
    return L.bitcast_convert_type(grouped, new)


def _no_flat(self):
    raise NotImplementedError(
        "JAX Arrays do not implement the arr.flat property: consider arr.flatten() instead."
    )


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return _jnp().transpose(self, axes or None)


def _reshape(self, *shape, order="C"):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return _jnp().reshape(self, shape, order=order)


def _flatten(self, order="C"):
    return _jnp().ravel(self, order=order)


def _astype(self, dtype, copy=False, device=None):
    return _jnp().astype(self, dtype, device=device)


def _copy(self):
    return _jnp().array(self, copy=True)


def _getitem(self, idx):
    if type(self) is Array:  # ints and slices of a ready array: NumPy's view, copied
        out = ready_shortcuts.static_take(self, idx)
        if out is not None:
            return out
    from morphax._src.numpy import indexing

    return indexing.getitem(self, idx)


def _tracer_getitem(self, idx):
    aval = self.aval
    if type(aval) is AbstractRef:  # a traced mutable array reference: ref[idx] reads it
        return aval._getitem(self, idx)
    return _getitem(self, idx)


def _at(self):
    from morphax._src.numpy import indexing

    return indexing.AtIndexer(self)


def _T(self):
    return _jnp().transpose(self)


def _mT(self):
    nd = self.ndim
    if nd < 2:
        raise ValueError(f"mT requires an array of at least 2 dimensions, got shape {self.shape}")
    return _jnp().swapaxes(self, -1, -2)


def _real(self):
    return ufuncs.real(self)


def _imag(self):
    return ufuncs.imag(self)


def _item_tracer(self, *args):
    # Tracers have no value; __float__ produces the concretization error with its explanation.
    return self.__float__()


def _tolist_tracer(self):
    return self.__array__()


def install(cls) -> None:
    for name, fn in _OPERATORS.items():
        setattr(cls, name, fn)
    for name in _METHODS:
        setattr(cls, name, _method(name))
    cls.transpose = _transpose
    cls.compress = _compress
    cls.view = _view
    cls.flat = property(_no_flat)
    cls.reshape = _reshape
    cls.astype = _astype
    cls.flatten = _flatten
    cls.copy = _copy
    cls.__getitem__ = _getitem
    cls.at = property(_at)
    cls.T = property(_T)
    cls.mT = property(_mT)
    cls.real = property(_real)
    cls.imag = property(_imag)


def install_all(namespace) -> None:
    """Install the methods on Array and Tracer, forwarding to the functions of `namespace`."""
    _namespace[:] = [namespace]
    install(Array)
    install(Tracer)
    Tracer.__getitem__ = _tracer_getitem
    Array.clone = _copy
    Array.tobytes = lambda self, order="C": np.asarray(self).tobytes(order=order)
    Tracer.item = _item_tracer
    Tracer.tolist = _tolist_tracer
    Tracer.itemsize = property(lambda self: self.aval.dtype.itemsize)
    Tracer.nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)
