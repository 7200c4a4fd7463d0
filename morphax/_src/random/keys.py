"""Typed PRNG keys: `key(seed)` gives a `KeyArray` of dtype ``key<fry>`` whose shape leaves out
the two uint32 words of each threefry key. As in JAX it is one leaf for the user-facing tree
functions (``tree.leaves({"k": key}) == [key]``); the transformations' internal flattening goes
through it to one value of aval ``key<fry>[*shape]`` (a `_KeyLeaf` over concrete words), so jit,
vmap, scan, cond and grad trace keys as JAX does, with the ``random_*`` primitives of
prims/random_keys.py; `typed_key_api` lets every jax.random entry point take typed keys (and
return them from split/fold_in/clone)."""

from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np

from morphax._src.config import config
from morphax._src.core.avals import ShapedArray, get_aval, is_valid_value, pytype_aval_mappings
from morphax._src.core.dtypes import float0 as _float0
from morphax._src.core.pytree_api import register_array_leaf
from morphax._src.core.pytree_registry import register_pytree_node
from morphax._src.core.trace import Tracer
from morphax._src.errors import KeyReuseError
from morphax._src.prims import lax_api as L
from morphax._src.prims import random_keys as _rk
from morphax._src.prims.random_keys import KEY_DTYPE, PRNGKeyDtype, prng_key
from morphax._src.random.prng import PRNGKey, check_key, is_key_value
from morphax._src.runtime.array import register_virtual_array_type

__all__ = [
    "KeyArray",
    "PRNGKeyDtype",
    "key",
    "key_data",
    "key_dtype",
    "key_impl",
    "prng_key",
    "typed_key_api",
    "wrap_key_data",
]

_IMPL = "threefry2x32"


def _check_impl(name, impl):
    if impl not in (None, _IMPL, KEY_DTYPE):
        raise NotImplementedError(f"{name}: only the '{_IMPL}' PRNG implementation exists, got impl={impl!r}")


class KeyArray:
    """An array of typed PRNG keys: `shape` counts keys; `key_data` gives the ``uint32[*shape, 2]``
    words. Immutable; supports indexing and reshaping, not arithmetic.

    Transformations see the keys as one value of aval ``key<fry>[*shape]`` (no key-word axis)."""

    # _consumed and _source serve jax_debug_key_reuse only (`consume`): whether the keys were
    # used (False, True, or a NumPy bool mask over `shape` when some were), and for a key taken
    # from another by indexing, (that key array, the index).
    __slots__ = ("_data", "_consumed", "_source")
    __array_priority__ = 100

    @property
    def _counts_as_array(self) -> bool:
        # Tree utilities unflatten key arrays around placeholders (None, sentinels: flax.nnx
        # does); those are not arrays. In JAX a key array is a leaf, so they never arise.
        return is_valid_value(self._data)

    def __init__(self, data, source=None):
        # `_data` is the key words (concrete ``uint32[..., 2]``) or, inside a transformation, a
        # tracer of the keys themselves (``key<fry>[...]``); traced words are wrapped into one.
        if type(data) is _KeyLeaf:
            data = data._data
        elif isinstance(data, Tracer) and data.dtype == np.uint32:
            data = _rk.random_wrap(data)
        self._data = data
        self._consumed = False
        self._source = source

    # ----------------------------------------------------------------------- array-like metadata
    @property
    def dtype(self):
        return KEY_DTYPE

    @property
    def shape(self):
        aval = get_aval(self._data)
        return tuple(aval.shape) if aval.dtype is KEY_DTYPE else tuple(aval.shape[:-1])

    def _value(self):
        """The keys as one value of aval ``key<fry>[*shape]``, what the primitives take: the
        tracer inside a transformation, else a `_KeyLeaf` over the concrete words."""
        data = self._data
        return data if is_key_value(data) else _KeyLeaf(data)

    def _words(self):
        """The ``uint32[*shape, 2]`` words (`random_unwrap` of traced keys)."""
        data = self._data
        return _rk.random_unwrap(data) if is_key_value(data) else data

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self):
        return KEY_DTYPE.itemsize

    @property
    def nbytes(self):
        return self.size * self.itemsize

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        if is_key_value(self._data):  # JAX unstacks traced keys with unit strides
            return (
                KeyArray(L.squeeze(L.slice(self._data, (i, *starts), (i + 1, *rest), (1,) * self.ndim), (0,)))
                for starts, rest in [((0,) * (self.ndim - 1), self.shape[1:])]
                for i in range(self.shape[0])
            )
        return (self[i] for i in range(self.shape[0]))

    # ------------------------------------------------------------------------- structural ops
    def __getitem__(self, idx):
        if isinstance(idx, KeyArray):
            raise TypeError("key arrays cannot index other arrays")
        idx = idx if isinstance(idx, tuple) else (idx,)
        if is_key_value(self._data):
            return KeyArray(_index_traced(self._data, idx))
        if any(i is Ellipsis for i in idx):
            # Keep the key words out of the Ellipsis: they sit after everything it covers.
            return KeyArray(self._data[(*idx, slice(None))])
        ndim_used = sum(1 for i in idx if i is not None)
        if ndim_used > self.ndim:
            raise IndexError(f"Too many indices for key array of shape {self.shape}: {len(idx)} indices")
        return KeyArray(self._data[idx], source=(self, idx))

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        size = self.size
        shape = tuple(int(s) for s in shape)
        if shape.count(-1) == 1:
            known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
            shape = tuple(size // known if s == -1 else s for s in shape)
        if is_key_value(self._data) and order == "C":
            return KeyArray(L.reshape(self._data, shape))
        return KeyArray(self._words().reshape(*shape, 2, order=order))

    def ravel(self, order="C"):
        return self.reshape(-1, order=order)

    flatten = ravel

    def squeeze(self, axis=None):
        shape = self.shape
        axes = range(len(shape)) if axis is None else (axis if isinstance(axis, (tuple, list)) else (axis,))
        axes = tuple(a % len(shape) for a in axes if axis is not None or shape[a] == 1)
        return KeyArray(L.squeeze(self._data, axes))

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        axes = (
            tuple(range(self.ndim))[::-1]
            if not axes or axes == (None,)
            else tuple(a % self.ndim for a in axes)
        )
        if is_key_value(self._data):
            return KeyArray(L.transpose(self._data, axes))
        return KeyArray(L.transpose(self._data, (*axes, self.ndim)))

    @property
    def T(self):  # noqa: N802 - NumPy's name
        return self.transpose()

    def copy(self):
        return KeyArray(self._data)

    def block_until_ready(self):
        if hasattr(self._data, "block_until_ready"):
            self._data.block_until_ready()
        return self

    # ------------------------------------------------------------------------------ comparison
    def __eq__(self, other):
        if not isinstance(other, KeyArray):
            return self._binary_error(other, "equal", "eq", "")
        from morphax._src.numpy import ufuncs

        # Keys are equal when both words are; jnp's equal broadcasts the key shapes.
        return L.reduce_and(ufuncs.equal(self._words(), other._words()), (max(self.ndim, other.ndim),))

    def __ne__(self, other):
        if not isinstance(other, KeyArray):
            return self._binary_error(other, "not_equal", "ne", "")
        return L.bitwise_not(self == other)

    __hash__ = None  # arrays are unhashable

    # ---------------------------------------------------------------------------------- errors
    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "A morphax array with PRNG key dtype cannot be converted to a NumPy array. Use "
            "random.key_data(arr) to extract the underlying integer array."
        )

    def __bool__(self):
        raise TypeError("The truth value of a key array is ambiguous")

    # Arithmetic raises JAX's TypeErrors: "add does not accept dtypes key<fry>, int32." against a
    # non-key, and lax's "at position 0" message between two key arrays.
    def _binary_error(self, other, name, lax_name, accepted, reflected=False):
        if isinstance(other, KeyArray):
            raise TypeError(
                f"{lax_name} does not accept dtype {self.dtype} at position 0. Accepted dtypes at "
                f"position 0 are subtypes of {accepted}."
            )
        try:
            other_name = str(get_aval(other).dtype)
        except TypeError:
            return NotImplemented
        names = (other_name, str(self.dtype)) if reflected else (str(self.dtype), other_name)
        raise TypeError(f"{name} does not accept dtypes {names[0]}, {names[1]}.")

    def _unary_error(self, name, accepted):
        raise TypeError(
            f"{name} does not accept dtype {self.dtype}. Accepted dtypes are subtypes of {accepted}."
        )

    def __pow__(self, other):
        raise TypeError(f"Cannot interpret '{self.dtype}' as a data type")

    __rpow__ = __pow__

    def __neg__(self):
        self._unary_error("neg", "integer, floating, complexfloating")

    def __abs__(self):
        self._unary_error("abs", "floating, complexfloating, signedinteger")

    def __invert__(self):
        self._unary_error("not", "integer, bool")

    def __pos__(self):
        return self

    def __repr__(self):
        if isinstance(self._data, Tracer):
            return f"Traced<{self.dtype.name}[{','.join(map(str, self.shape))}]>"
        return f"Array({self.shape}, dtype={self.dtype.name}) overlaying:\n{np.asarray(self._data)}"

    __str__ = __repr__


_NUMERIC = "integer, floating, complexfloating"
_KEY_BINARY_OPS = [  # (dunder name, jnp's name, lax's name, dtypes lax accepts)
    ("add", "add", "add", _NUMERIC),
    ("sub", "subtract", "sub", _NUMERIC),
    ("mul", "multiply", "mul", _NUMERIC),
    ("truediv", "true_divide", "div", _NUMERIC),
    ("floordiv", "floor_divide", "div", _NUMERIC),
    ("mod", "remainder", "rem", _NUMERIC),
    ("and", "bitwise_and", "and", "integer, bool"),
    ("or", "bitwise_or", "or", "integer, bool"),
    ("xor", "bitwise_xor", "xor", "integer, bool"),
    ("lshift", "left_shift", "shift_left", "integer"),
    ("rshift", "right_shift", "shift_right_arithmetic", "integer"),
]
_KEY_COMPARISONS = [
    ("lt", "less", "lt"),
    ("le", "less_equal", "le"),
    ("gt", "greater", "gt"),
    ("ge", "greater_equal", "ge"),
]


def _install_binary_errors():
    for op, name, lax_name, accepted in _KEY_BINARY_OPS:

        def forward(self, other, name=name, lax_name=lax_name, accepted=accepted):
            return self._binary_error(other, name, lax_name, accepted)

        def reflected(self, other, name=name, lax_name=lax_name, accepted=accepted):
            return self._binary_error(other, name, lax_name, accepted, reflected=True)

        setattr(KeyArray, f"__{op}__", forward)
        setattr(KeyArray, f"__r{op}__", reflected)
    for op, name, lax_name in _KEY_COMPARISONS:

        def compare(self, other, name=name, lax_name=lax_name):
            return self._binary_error(other, name, lax_name, "integer, floating, bool")

        setattr(KeyArray, f"__{op}__", compare)


_install_binary_errors()


class _KeyLeaf(KeyArray):
    """Concrete keys as the one value of aval ``key<fry>[*shape]`` that transformations see (a
    leaf of their flattening): jit passes its words to the compiled program, vmap and the eager
    operations on keys (runtime/eager.py) run the key primitives on them. Behaves as a KeyArray."""

    __slots__ = ()

    def __init__(self, data):
        _rk.KEYS_USED[0] = True
        self._data = data
        self._consumed = False
        self._source = None

    @property
    def aval(self):
        return ShapedArray(self.shape, KEY_DTYPE)


pytype_aval_mappings[_KeyLeaf] = lambda k: ShapedArray(k.shape, KEY_DTYPE)
_rk.KEY_LEAF[0] = _KeyLeaf
PRNGKeyDtype._wrap = KeyArray


def _flatten_keys(k):
    data = k._data
    # Placeholders (None, sentinels) that tree utilities unflatten around stay themselves.
    return ((_KeyLeaf(data) if is_valid_value(data) and not is_key_value(data) else data,), None)


def _index_traced(keys, idx):
    """Traced keys indexed by `idx`: as JAX, slice and squeeze for integers and unit-step slices,
    broadcast_in_dim for new axes (None); other indices index the words, wrapped again."""
    shape = get_aval(keys).shape
    used = [i for i in idx if i is not None]
    if len(used) <= len(shape) and all(
        (isinstance(i, (int, np.integer)) and not isinstance(i, bool) and -n <= i < n)
        or (isinstance(i, slice) and i.step in (None, 1))
        for i, n in zip(used, shape)
    ):
        starts, limits, squeeze, out_shape, kept = [], [], [], [], []
        d = 0
        for i in (*idx, *[slice(None)] * (len(shape) - len(used))):
            if i is None:
                out_shape.append(1)
                continue
            n = shape[d]
            if isinstance(i, slice):
                lo, hi, _ = i.indices(n)
                starts.append(lo)
                limits.append(max(lo, hi))
                kept.append(len(out_shape))
                out_shape.append(limits[-1] - lo)
            else:
                i = int(i) % n
                starts.append(i)
                limits.append(i + 1)
                squeeze.append(d)
            d += 1
        out = keys
        if tuple(starts) != (0,) * len(shape) or tuple(limits) != tuple(shape):
            out = L.slice(keys, tuple(starts), tuple(limits))
        if squeeze:
            out = L.squeeze(out, tuple(squeeze))
        if len(out_shape) != len(kept):
            out = L.broadcast_in_dim(out, tuple(out_shape), tuple(kept))
        return out
    words = _rk.random_unwrap(keys)
    if any(i is Ellipsis for i in idx):
        return _rk.random_wrap(words[(*idx, slice(None))])
    return _rk.random_wrap(words[idx])


def _unflatten_keys(_, children):
    (child,) = children
    # Tangents of keys are float0 arrays of the keys' shape (jvp's key outputs), as in JAX.
    dtype = getattr(child, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype == _float0:
        return child
    return KeyArray(child)


register_pytree_node(KeyArray, _flatten_keys, _unflatten_keys)
# One leaf for the user-facing tree functions, as in JAX; the transformations flatten through it
# to the keys as one value of their key dtype and rebuild the key array on the way out.
register_array_leaf(KeyArray)
register_virtual_array_type(KeyArray)  # a typed key array is a morphax.Array, as in JAX


# ------------------------------------------------------------------------------------- public API


def key(seed, *, impl=None, dtype=None):
    """A typed key ``key<fry>[]`` from an integer seed (same words as `PRNGKey(seed)`)."""
    _check_impl("key", impl)
    _check_impl("key", dtype)
    if isinstance(seed, KeyArray):
        raise TypeError("key: seed must be a scalar integer, got a key array")
    return KeyArray(PRNGKey(seed, typed=isinstance(seed, Tracer)))


def key_dtype(impl_spec=None):
    """The dtype of typed keys of implementation `impl_spec` (only threefry2x32)."""
    _check_impl("key_dtype", impl_spec)
    return KEY_DTYPE


def key_data(keys):
    """The raw ``uint32[..., 2]`` words of typed keys (raw keys are returned as they are)."""
    if isinstance(keys, KeyArray):
        return keys._words()
    if is_key_value(keys):
        return _rk.random_unwrap(keys)
    return check_key("key_data", keys, allow_batched=True)


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    """Typed keys over raw ``uint32[..., 2]`` key words (the inverse of `key_data`)."""
    _check_impl("wrap_key_data", impl)
    _check_impl("wrap_key_data", dtype)
    if isinstance(key_bits_array, KeyArray):
        raise TypeError(
            "wrap_key_data: the argument is already a typed key array; pass random.key_data(keys)"
        )
    return KeyArray(check_key("wrap_key_data", key_bits_array, allow_batched=True))


def key_impl(keys):
    """The name of the PRNG implementation behind `keys` ('threefry2x32')."""
    if not isinstance(keys, KeyArray):
        check_key("key_impl", keys, allow_batched=True)
    return _IMPL


def _consumed_mask(keys: KeyArray):
    """Which of `keys` were consumed, as a bool or a NumPy bool mask over their shape."""
    state = keys._consumed
    if state is True or keys._source is None:
        return state
    parent, idx = keys._source
    mask = _consumed_mask(parent)
    if mask is False or mask is True:
        return mask
    try:
        return mask[idx]
    except IndexError:  # an index NumPy cannot apply to the mask (traced): judge by this key
        return state


def _mark_consumed(keys: KeyArray) -> None:
    keys._consumed = True
    if keys._source is None:
        return
    parent, idx = keys._source
    mask = parent._consumed
    if mask is True:
        return
    if mask is False:
        mask = np.zeros(parent.shape, dtype=bool)
    try:
        mask[idx] = True
    except (IndexError, TypeError, ValueError):  # a traced index: mark the whole parent
        mask = True
    parent._consumed = mask
    _mark_consumed_upwards(parent)


def _mark_consumed_upwards(keys: KeyArray) -> None:
    # A parent taken from a grandparent by indexing passes its fully used state up.
    if keys._consumed is True and keys._source is not None:
        _mark_consumed(keys)


def consume(keys: KeyArray, name: str) -> None:
    """jax_debug_key_reuse: record that `name` consumed `keys`, raising if any was consumed before.

    NB: tracked per key array object, eagerly and inside one trace; unlike JAX, a jitted function
    does not mark the keys passed to it as consumed after the call."""
    mask = _consumed_mask(keys)
    if mask is True or (mask is not False and np.any(mask)):
        raise KeyReuseError(
            f"Previously-consumed key passed to {name}: a key is used by at most one sampler or "
            "split. Split it first (k1, k2 = random.split(key)) and use each new key once, or use "
            "random.clone(key) for a deliberate copy."
        )
    _mark_consumed(keys)


def _legacy_key_used(name: str) -> None:
    """jax_legacy_prng_key: what a raw uint32 key passed to `name` does."""
    message = (
        f"Legacy uint32 key array passed as key to {name}. Please create keys using "
        'random.key(). If use of a raw key array was intended, set jax_legacy_prng_key="allow".'
    )
    if config.legacy_prng_key == "error":
        raise ValueError(message)
    warnings.warn(message, stacklevel=3)


def is_typed(x) -> bool:
    return isinstance(x, KeyArray)


def typed_key_api(fn=None, *, returns_key=False, default_dtype=None, consumes=True, sharded=False):
    """Wrap a sampler on raw keys so it also takes a typed key first: the key's data goes in, and
    with `returns_key` a typed key in gives typed keys out. `default_dtype` stands in for
    ``dtype=None`` and ``mode=None`` is dropped, for samplers whose raw form lacks those defaults.
    `sharded`: the sampler takes JAX's ``out_sharding`` keyword, where the result is placed."""
    if fn is None:
        return functools.partial(
            typed_key_api,
            returns_key=returns_key,
            default_dtype=default_dtype,
            consumes=consumes,
            sharded=sharded,
        )
    sig = (
        inspect.signature(fn)
        if default_dtype is not None or "mode" in inspect.signature(fn).parameters
        else None
    )

    @functools.wraps(fn)
    def wrapper(key, *args, **kwargs):
        out_sharding = kwargs.pop("out_sharding", None) if sharded else None
        typed = isinstance(key, KeyArray)
        if is_key_value(key) and not typed:  # a bare traced key (of a key array's tracer)
            key, typed = KeyArray(key), True
        if typed:
            if consumes and config.debug_key_reuse:
                consume(key, fn.__name__)
        elif config.legacy_prng_key != "allow":
            _legacy_key_used(fn.__name__)
        raw = key._value() if typed else key
        if sig is not None:
            bound = sig.bind(raw, *args, **kwargs)
            if default_dtype is not None and bound.arguments.get("dtype", 0) is None:
                bound.arguments["dtype"] = default_dtype
            if "mode" in bound.arguments and bound.arguments["mode"] is None:
                del bound.arguments["mode"]
            out = fn(*bound.args, **bound.kwargs)
        else:
            out = fn(raw, *args, **kwargs)
        # A sharding over the empty mesh (what `typeof(x).sharding` gives outside a mesh) asks for
        # nothing, as in JAX.
        if out_sharding is not None and not getattr(getattr(out_sharding, "mesh", None), "empty", False):
            from morphax._src.sharding.resharding import reshard  # noqa: PLC0415

            out = reshard(out, out_sharding)
        return KeyArray(out) if returns_key and typed else out

    return wrapper
