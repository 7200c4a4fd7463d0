"""Typed PRNG keys in jaxprs: the ``key<fry>`` dtype and the primitives on key values.

A typed key is, to every transformation, one value of aval ``key<fry>[*shape]`` (no trailing
axis for the two key words), and the key operations are primitives, as JAX prints them:
``random_seed[impl=fry]``, ``random_wrap[impl=fry]``, ``random_unwrap``,
``random_split[shape=...]``, ``random_fold_in``, ``random_bits[bit_width=... shape=...]`` and
``random_clone``.

Physically a key is its ``uint32[*shape, 2]`` words. Every rule below that computes is written
on those words: `PHYSICAL` maps each primitive to ``rule(phys_operands, in_avals, **params) ->
[phys results]`` for a single key (leading key axes are mapped over by the caller,
compiler/physicalize.py), built from the Threefry-2x32 hash (prims/prng.py) exactly as
random/prng.py hashes raw keys, so typed and raw keys give the same bits. The layout primitives
that also accept key operands (slice, reshape, ...) get `LAYOUT` rules: the same primitive on
the words with the word axis appended to their params. The compiler rewrites every
``key<fry>`` value and equation of a jaxpr by these rules before a backend sees it, and eager
operations on concrete keys run them directly.
"""

from __future__ import annotations

import math

import numpy as np

from morphax._src.config import config
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.structural import broadcast_in_dim_p, reshape_p, transpose_p
from morphax._src.core.values import make_array
from morphax._src.prims._ad import defjvp_zero
from morphax._src.prims._spec import TestSpec
from morphax._src.prims.concatenate import concatenate_p
from morphax._src.prims.conversion import copy_p
from morphax._src.prims.dynamic_slicing import dynamic_slice_p, dynamic_update_slice_p
from morphax._src.prims.prng import threefry2x32
from morphax._src.prims.selection import select_n_p
from morphax._src.prims.shape import rev_p, squeeze_p
from morphax._src.prims.slicing import slice_p

__all__ = [
    "KEY_DTYPE",
    "LAYOUT",
    "PHYSICAL",
    "PRNGKeyDtype",
    "is_key_aval",
    "random_bits",
    "random_bits_p",
    "random_clone",
    "random_clone_p",
    "random_fold_in",
    "random_fold_in_p",
    "random_seed",
    "random_seed_p",
    "random_split",
    "random_split_p",
    "random_unwrap",
    "random_unwrap_p",
    "random_wrap",
    "random_wrap_p",
]

_U32 = np.dtype(np.uint32)
_UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32, 64: np.dtype(np.uint64)}


class prng_key(_dtypes.extended):  # noqa: N801 - JAX's name for the category
    """Abstract category of PRNG key dtypes: ``issubdtype(k.dtype, prng_key)``."""


class PRNGKeyDtype(_dtypes.ExtendedDType):
    """The dtype of typed threefry keys, shown ``key<fry>``; each element is a ``uint32[2]``."""

    type = prng_key
    # The dtype of the key words, and how the layers above (random/keys.py, which sets
    # `_wrap`) make a key array of given words without being imported here.
    physical_dtype = _U32
    _wrap = None

    def __init__(self, impl: str = "threefry2x32"):
        self.impl = impl
        self.name = "key<fry>"
        self.key_shape = (2,)
        self.itemsize = 8

    def __eq__(self, other):
        return isinstance(other, PRNGKeyDtype) and other.impl == self.impl

    def __hash__(self):
        return hash((PRNGKeyDtype, self.impl))

    def __str__(self):
        return self.name

    def wrap_physical(self, data):
        return PRNGKeyDtype._wrap(data)

    def physical(self, keys):
        """The ``uint32[..., 2]`` words of the key array `keys` (what `wrap_physical` wraps)."""
        return keys._words()


KEY_DTYPE = PRNGKeyDtype()
# The `impl` param of random_seed and random_wrap: JAX prints its threefry implementation "fry".
_IMPL_NAME = "fry"
# Set once a key value has been made: the eager trace checks for key operands only after that.
KEYS_USED = [False]
# [the class of concrete key values] (random/keys.py's `_KeyLeaf`: the words of concrete keys as
# one value of aval ``key<fry>[...]``), for the eager trace and the compiled-call boundary.
KEY_LEAF: list = [None]


def is_key_aval(aval) -> bool:
    return type(aval) is ShapedArray and aval.dtype is KEY_DTYPE


def physical_aval(aval: ShapedArray) -> ShapedArray:
    """The ``uint32[*shape, 2]`` aval holding the words of a ``key<fry>[*shape]`` aval."""
    return ShapedArray((*aval.shape, 2), _U32) if is_key_aval(aval) else aval


def _key_aval(shape) -> ShapedArray:
    return ShapedArray(tuple(shape), KEY_DTYPE)


def _check_keys(name, aval):
    if not is_key_aval(aval):
        raise TypeError(f"{name} accepts a key array of dtype key<fry>, got {aval.str_short()}")


# --------------------------------------------------------------------- the hash on the key words


def _u32(value):
    return make_array(value, _U32)


def _key_words(key):
    """The two uint32 scalars of a single ``uint32[2]`` key."""
    L = _lax()
    return tuple(L.reshape(L.slice(key, (i,), (i + 1,)), ()) for i in range(2))


def _lax():
    from morphax._src.prims import lax_api  # noqa: PLC0415 - the catalogue imports this family

    return lax_api


def threefry_2x32(key, count):
    """Encipher the uint32 array `count` with a single key, JAX's original way: the flattened
    counts (padded by one zero when odd) are split in halves that form the counter pairs."""
    L = _lax()
    k1, k2 = _key_words(key)
    shape = get_aval(count).shape
    size = math.prod(shape)
    flat = L.reshape(count, (size,))
    odd = size % 2
    if odd:
        flat = L.concatenate([flat, L.broadcast_in_dim(_u32(0), (1,), ())], 0)
    half = (size + odd) // 2
    x1 = L.slice(flat, (0,), (half,))
    x2 = L.slice(flat, (half,), (2 * half,))
    y1, y2 = threefry2x32(k1, k2, x1, x2)
    out = L.concatenate([y1, y2], 0)
    if odd:
        out = L.slice(out, (0,), (size,))
    return L.reshape(out, shape)


def _hash_shape(key, shape):
    """Partitionable layout: threefry of each element's (hi, lo) 64-bit row-major index."""
    L = _lax()
    k1, k2 = _key_words(key)
    size = math.prod(shape)
    if size > 2**32:
        raise NotImplementedError(f"random bits for an array of {size} elements (more than 2**32)")
    # Every index fits in 32 bits, so the high word is zero: a scalar the primitive broadcasts.
    lo = L.reshape(L.iota(_U32, size), shape) if shape else _u32(0)
    return threefry2x32(k1, k2, _u32(0), lo)


def seed_words(seed):
    """The ``uint32[2]`` key of an integer scalar seed: (seed >> 32, the seed's low 32 bits)."""
    L = _lax()
    dt = get_aval(seed).dtype
    # The high word is 0 for seeds of 32 bits or fewer (XLA's over-wide shift gives 0); the low
    # word is the seed's low 32 bits, sign-extended first as the & with uint32 promotes.
    hi = L.convert_element_type(L.shift_right_logical(seed, make_array(32, dt)), _U32)
    lo = L.convert_element_type(seed, _U32)
    return L.concatenate([L.reshape(hi, (1,)), L.reshape(lo, (1,))], 0)


def split_words(key, shape: tuple):
    """The ``uint32[*shape, 2]`` keys split from the single key `key`."""
    L = _lax()
    if config.threefry_partitionable:
        b1, b2 = _hash_shape(key, shape)
        return L.concatenate([L.expand_dims(b1, (len(shape),)), L.expand_dims(b2, (len(shape),))], len(shape))
    n = math.prod(shape)
    return L.reshape(threefry_2x32(key, L.iota(_U32, 2 * n)), (*shape, 2))


def fold_in_words(key, data):
    """The key folded from `key` and the uint32 scalar `data`: threefry of (0, data)."""
    L = _lax()
    counts = L.concatenate([L.broadcast_in_dim(_u32(0), (1,), ()), L.reshape(data, (1,))], 0)
    return threefry_2x32(key, counts)


def bits_words(key, bit_width: int, shape: tuple):
    """Unsigned integers of `bit_width` bits (8, 16, 32, 64) and `shape` from a single key."""
    L = _lax()
    dtype = _UINT_DTYPES[bit_width]
    if config.threefry_partitionable:
        b1, b2 = _hash_shape(key, shape)
        if bit_width == 64:
            hi = L.convert_element_type(b1, dtype)
            return L.bitwise_or(L.shift_left(hi, make_array(32, dtype)), L.convert_element_type(b2, dtype))
        out = L.bitwise_xor(b1, b2)
        return out if bit_width == 32 else L.convert_element_type(out, dtype)
    size = math.prod(shape)
    max_count = -(-bit_width * size // 32)
    if max_count >= 2**32 - 1:
        raise NotImplementedError(
            f"random bits of {size} elements of {bit_width} bits in the original layout"
        )
    words = threefry_2x32(key, L.iota(_U32, max_count))
    if bit_width == 64:
        hi = L.convert_element_type(L.slice(words, (0,), (size,)), dtype)
        lo = L.convert_element_type(L.slice(words, (size,), (2 * size,)), dtype)
        words = L.bitwise_or(L.shift_left(hi, make_array(32, dtype)), lo)
    elif bit_width < 32:
        # Each word yields 32 // bit_width values, least significant first (a little-endian view).
        per = 32 // bit_width
        shifts = L.mul(_u32(bit_width), L.broadcasted_iota(_U32, (per, 1), 0))
        parts = L.shift_right_logical(
            L.broadcast_in_dim(words, (per, max_count), (1,)),
            L.broadcast_in_dim(L.reshape(shifts, (per,)), (per, max_count), (0,)),
        )
        parts = L.bitwise_and(parts, _u32(np.iinfo(dtype).max))
        parts = L.reshape(L.transpose(parts, (1, 0)), (max_count * per,))
        words = L.slice(L.convert_element_type(parts, dtype), (0,), (size,))
    return L.reshape(words, shape)


# ------------------------------------------------------------------------------------ primitives

random_seed_p = Primitive("random_seed")
random_wrap_p = Primitive("random_wrap")
random_unwrap_p = Primitive("random_unwrap")
random_split_p = Primitive("random_split")
random_fold_in_p = Primitive("random_fold_in")
random_bits_p = Primitive("random_bits")
random_clone_p = Primitive("random_clone")
_ALL = (
    random_seed_p,
    random_wrap_p,
    random_unwrap_p,
    random_split_p,
    random_fold_in_p,
    random_bits_p,
    random_clone_p,
)


def _seed_abstract_eval(seeds, *, impl):
    if not _dtypes.is_integer(seeds.dtype):
        raise TypeError(f"PRNG key seed must be an integer; got {seeds.str_short()}.")
    return _key_aval(seeds.shape)


def _wrap_abstract_eval(data, *, impl):
    if data.dtype != _U32 or data.shape[-1:] != (2,):
        raise TypeError(
            f"random_wrap: key data must be a uint32 array whose last axis holds the 2 key words, "
            f"got {data.str_short()}"
        )
    return _key_aval(data.shape[:-1])


def _unwrap_abstract_eval(keys):
    _check_keys("random_unwrap", keys)
    return ShapedArray((*keys.shape, 2), _U32)


def _clone_abstract_eval(keys):
    _check_keys("random_clone", keys)
    return keys


def _split_abstract_eval(keys, *, shape):
    _check_keys("random_split", keys)
    return _key_aval((*keys.shape, *shape))


def _fold_in_abstract_eval(keys, msgs):
    _check_keys("random_fold_in", keys)
    if msgs.dtype != _U32:
        raise TypeError(f"random_fold_in: the data must be uint32, got {msgs.str_short()}")
    if msgs.shape and keys.shape and msgs.shape != keys.shape:
        raise TypeError(
            f"random_fold_in: keys {keys.str_short()} and data {msgs.str_short()} must have one shape"
        )
    return _key_aval(keys.shape or msgs.shape)


def _bits_abstract_eval(keys, *, bit_width, shape):
    _check_keys("random_bits", keys)
    if bit_width not in _UINT_DTYPES:
        raise TypeError(f"random bits requires 8-, 16-, 32- or 64-bit field width, got {bit_width}.")
    return ShapedArray((*keys.shape, *shape), _UINT_DTYPES[bit_width])


random_seed_p.abstract_eval = _seed_abstract_eval
random_wrap_p.abstract_eval = _wrap_abstract_eval
random_unwrap_p.abstract_eval = _unwrap_abstract_eval
random_split_p.abstract_eval = _split_abstract_eval
random_fold_in_p.abstract_eval = _fold_in_abstract_eval
random_bits_p.abstract_eval = _bits_abstract_eval
random_clone_p.abstract_eval = _clone_abstract_eval


# The physical rules, for a single key (scalar seed, ``uint32[2]`` key words, scalar message).
PHYSICAL = {
    random_seed_p: lambda seed, *, impl: [seed_words(seed)],
    random_wrap_p: lambda data, *, impl: [data],
    random_unwrap_p: lambda key: [key],
    random_clone_p: lambda key: [key],
    random_split_p: lambda key, *, shape: [split_words(key, shape)],
    random_fold_in_p: lambda key, msg: [fold_in_words(key, msg)],
    random_bits_p: lambda key, *, bit_width, shape: [bits_words(key, bit_width, shape)],
}


def _numpy_impl(prim):
    """The reference on NumPy values: the physical rule on the words of one key at a time
    (leading key axes looped over), keys in and out as their ``uint32[..., 2]`` words."""

    def impl(*vals, **params):
        from morphax._src.core.trace import base_trace, set_current_trace  # noqa: PLC0415

        vals = [np.asarray(v) for v in vals]
        lead = vals[0].shape if prim is random_seed_p else vals[0].shape[:-1]
        if prim is random_fold_in_p:
            lead = np.broadcast_shapes(lead, vals[1].shape)
            vals = [np.broadcast_to(vals[0], (*lead, 2)), np.broadcast_to(vals[1], lead)]
        rule = PHYSICAL[prim]
        outs = []
        with set_current_trace(base_trace()):
            for idx in np.ndindex(*lead):
                one = [make_array(np.ascontiguousarray(v[idx]), v.dtype) for v in vals]
                outs.append(np.asarray(rule(*one, **params)[0]))
        out_aval = prim.abstract_eval(*(_impl_aval(prim, i, v) for i, v in enumerate(vals)), **params)
        phys = physical_aval(out_aval)
        if not outs:
            return np.zeros(phys.shape, phys.dtype)
        return np.stack(outs).reshape(phys.shape)

    return impl


def _impl_aval(prim, i, v):
    if i == 0 and prim not in (random_seed_p, random_wrap_p):
        return _key_aval(v.shape[:-1])
    return ShapedArray(v.shape, v.dtype)


for _p in _ALL:
    _p.impl = _numpy_impl(_p)
    # No matrix cases: a key operand is no NumPy value (the matrix feeds NumPy operands and
    # compares NumPy results). tests/random/test_key_primitives.py checks each of them eagerly,
    # under jit, jvp and vmap, against the raw-key path and JAX's printed jaxprs.
    _p.test_spec = TestSpec(cases=lambda rng: [], differentiable=False, grad_order=0)
    # Calls of the threefry hash and data movement, expanded before any backend sees them.
    _p.kind = Kind.OPAQUE
    # Keys have float0 tangents and random bits are integers: nothing to differentiate.
    defjvp_zero(_p)


# ------------------------------------------------------------------------------------- batching


def _keeps_axis(prim):
    # Each result element depends on the key (or seed) at the same leading index, with the
    # primitive's own axes appended: the batch axis stays where it is.
    def rule(vals, dims, *, axis_data, **params):
        (x,), (d,) = vals, dims
        if prim is random_wrap_p and d is not None and d % get_aval(x).ndim == get_aval(x).ndim - 1:
            x, d = moveaxis(x, d, 0), 0  # the batch axis after the key words: move it before
        return prim.bind(x, **params), d

    prim.batch = rule


for _p in (random_seed_p, random_wrap_p, random_unwrap_p, random_split_p, random_bits_p, random_clone_p):
    _keeps_axis(_p)


def _fold_in_batch(vals, dims, *, axis_data):
    keys, msgs = vals
    dk, dm = dims
    size = axis_data.size
    out = []
    for v, d in ((keys, dk), (msgs, dm)):
        aval = get_aval(v)
        if d is None:
            shape = (size, *aval.shape)
            v = broadcast_in_dim_p.bind(
                v, shape=shape, broadcast_dimensions=tuple(range(1, len(shape))), sharding=None
            )
        else:
            v = moveaxis(v, d, 0)
        out.append(v)
    keys, msgs = out
    kshape, mshape = get_aval(keys).shape, get_aval(msgs).shape
    if kshape != mshape:  # one of them is a scalar per example: broadcast it to the other
        full = kshape if len(kshape) > len(mshape) else mshape
        keys, msgs = (
            broadcast_in_dim_p.bind(v, shape=full, broadcast_dimensions=(0,), sharding=None)
            if len(get_aval(v).shape) == 1 and len(full) > 1
            else v
            for v in (keys, msgs)
        )
    return random_fold_in_p.bind(keys, msgs), 0


random_fold_in_p.batch = _fold_in_batch


# ------------------------------------------------------- layout primitives on key operands


def _slice(x, aval, *, start_indices, limit_indices, strides):
    return slice_p.bind(
        x,
        start_indices=(*start_indices, 0),
        limit_indices=(*limit_indices, 2),
        strides=None if strides is None else (*strides, 1),
    )


def _reshape(x, aval, *, new_sizes, dimensions, sharding):
    dims = None if dimensions is None else (*dimensions, len(aval.shape))
    return reshape_p.bind(x, new_sizes=(*new_sizes, 2), dimensions=dims, sharding=None)


def _broadcast(x, aval, *, shape, broadcast_dimensions, sharding):
    return broadcast_in_dim_p.bind(
        x, shape=(*shape, 2), broadcast_dimensions=(*broadcast_dimensions, len(shape)), sharding=None
    )


def _transpose(x, aval, *, permutation):
    return transpose_p.bind(x, permutation=(*permutation, len(permutation)))


def _select_n(pred, *cases, avals, **params):
    shape = avals[1].shape
    if get_aval(pred).shape:
        pred = broadcast_in_dim_p.bind(
            pred, shape=(*shape, 2), broadcast_dimensions=tuple(range(len(shape))), sharding=None
        )
    return select_n_p.bind(pred, *cases, **params)


def _dynamic_slice(x, *starts, avals, slice_sizes, **params):
    zero = make_array(0, get_aval(starts[0]).dtype if starts else np.int32)
    return dynamic_slice_p.bind(x, *starts, zero, slice_sizes=(*slice_sizes, 2), **params)


def _dynamic_update_slice(x, update, *starts, avals, **params):
    zero = make_array(0, get_aval(starts[0]).dtype if starts else np.int32)
    return dynamic_update_slice_p.bind(x, update, *starts, zero, **params)


def _same(prim):
    def rule(*xs, avals, **params):
        return prim.bind(*xs, **params)

    return rule


def _first(rule):
    def wrapped(x, *rest, avals, **params):
        return rule(x, avals[0], **params)

    return wrapped


# prim -> rule(*phys_operands, avals=in_avals, **params) -> phys result, for the layout
# primitives that move key elements around without looking inside them.
LAYOUT = {
    slice_p: _first(_slice),
    reshape_p: _first(_reshape),
    broadcast_in_dim_p: _first(_broadcast),
    transpose_p: _first(_transpose),
    squeeze_p: _same(squeeze_p),
    rev_p: _same(rev_p),
    copy_p: _same(copy_p),
    concatenate_p: _same(concatenate_p),
    select_n_p: _select_n,
    dynamic_slice_p: _dynamic_slice,
    dynamic_update_slice_p: _dynamic_update_slice,
}


# --------------------------------------------------------------------------------- the binders


def random_seed(seeds):
    KEYS_USED[0] = True
    return random_seed_p.bind(seeds, impl=_IMPL_NAME)


def random_wrap(data):
    KEYS_USED[0] = True
    return random_wrap_p.bind(data, impl=_IMPL_NAME)


def random_unwrap(keys):
    return random_unwrap_p.bind(keys)


def random_clone(keys):
    return random_clone_p.bind(keys)


def random_split(keys, shape: tuple):
    return random_split_p.bind(keys, shape=tuple(shape))


def random_fold_in(keys, msgs):
    return random_fold_in_p.bind(keys, msgs)


def random_bits(keys, bit_width: int, shape: tuple):
    return random_bits_p.bind(keys, bit_width=int(bit_width), shape=tuple(shape))
