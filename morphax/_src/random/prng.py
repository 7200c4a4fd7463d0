"""Threefry PRNG keys: `PRNGKey`, `split`, `fold_in` and raw `bits`, bit for bit as JAX.

A key is a ``uint32[2]`` array. ``config.threefry_partitionable`` picks JAX's counter layout: a
(hi, lo) iota over the output shape (default) or the original flat iota split in halves."""

from __future__ import annotations

import math

import numpy as np

from morphax._src.config import config
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.core.trace import Tracer
from morphax._src.core.values import make_array
from morphax._src.numpy import util as _util
from morphax._src.numpy.creation import canonicalize_shape
from morphax._src.prims import lax_api as L
from morphax._src.runtime.array import Array

__all__ = ["PRNGKey", "bits", "clone", "fold_in", "key_data", "random_bits", "split", "threefry_2x32"]

_UINT_DTYPES = {
    8: np.dtype(np.uint8),
    16: np.dtype(np.uint16),
    32: np.dtype(np.uint32),
    64: np.dtype(np.uint64),
}
_U32 = np.dtype(np.uint32)
_HOW_TO = "A PRNG key is a uint32 array of shape (2,) made by random.PRNGKey(seed), e.g. random.PRNGKey(0)."


def _u32(value):
    return make_array(value, _U32)


def check_key(name: str, key, *, allow_batched: bool = False):
    """Return `key` as a morphax value after checking it is a raw threefry key (``uint32[..., 2]``);
    a key array with leading axes is refused unless `allow_batched`."""
    if isinstance(key, np.ndarray):
        key = make_array(key, key.dtype)
    elif not isinstance(key, (Array, Tracer)):
        raise TypeError(f"{name}: unexpected PRNG key of type {type(key).__name__}: {key!r}. {_HOW_TO}")
    aval = get_aval(key)
    if aval.dtype != _U32:
        raise TypeError(f"{name}: invalid PRNG key {aval.str_short()}: keys have dtype uint32. {_HOW_TO}")
    if aval.shape[-1:] != (2,):
        raise TypeError(
            f"{name}: invalid PRNG key {aval.str_short()}: a key's shape ends with (2,), got shape "
            f"{aval.shape}. {_HOW_TO}"
        )
    if not allow_batched and len(aval.shape) != 1:
        raise ValueError(
            f"{name} accepts a single key, but was given a key array of shape {aval.shape[:-1]} != (). "
            "Use jax.vmap for batching."
        )
    return key


def _key_words(key):
    """The two uint32 scalars of a single key."""
    return tuple(L.reshape(L.slice(key, (i,), (i + 1,)), ()) for i in range(2))


# ---------------------------------------------------------------------------------------- seeding


def PRNGKey(seed, *, impl=None):  # noqa: N802 - JAX's name
    """A raw threefry key ``uint32[2]`` from an integer seed: (high 32 bits, low 32 bits).

    As JAX: a Python int goes through int64 (so >= 2**63 overflows) and, without x64, wraps to
    int32, so a negative seed sign-extends only in x64 mode.
    """
    if impl is None and config.default_prng_impl != "threefry2x32":
        raise NotImplementedError(
            f"PRNGKey: jax_default_prng_impl={config.default_prng_impl!r}, but only the "
            "'threefry2x32' implementation exists; set jax_default_prng_impl='threefry2x32'"
        )
    if impl not in (None, "threefry2x32"):
        raise NotImplementedError(
            f"PRNGKey: only the 'threefry2x32' implementation exists, got impl={impl!r}"
        )
    if isinstance(seed, (bool, int)) and not isinstance(seed, np.integer):
        seed = np.int64(seed)  # OverflowError outside int64, as JAX
    if isinstance(seed, (np.ndarray, np.generic)):
        dt = _dtypes.canonicalize_dtype(seed.dtype)
        with np.errstate(all="ignore"):
            seed = make_array(np.asarray(seed).astype(dt), dt)
    elif not isinstance(seed, (Array, Tracer)):
        raise TypeError(
            f"PRNGKey: seed must be an integer or an integer array, got {type(seed).__name__}: {seed!r}"
        )
    aval = get_aval(seed)
    if aval.shape:
        raise TypeError(f"PRNG key seed must be a scalar; got {aval.str_short()}.")
    if not _dtypes.is_integer(aval.dtype):
        raise TypeError(f"PRNG key seed must be an integer; got {aval.str_short()}.")
    if config.random_seed_offset:
        seed = L.add(seed, make_array(config.random_seed_offset, aval.dtype))
    # The high word is seed >> 32 (0 for seeds of 32 bits or fewer: XLA's over-wide shift gives 0);
    # the low word is the seed's low 32 bits, sign-extended first as the & with uint32 promotes.
    hi = L.convert_element_type(L.shift_right_logical(seed, make_array(32, aval.dtype)), _U32)
    lo = L.convert_element_type(seed, _U32)
    return L.concatenate([L.reshape(hi, (1,)), L.reshape(lo, (1,))], 0)


def key_data(keys):
    """The raw ``uint32[..., 2]`` data of a key array (raw keys are returned as they are)."""
    return check_key("key_data", keys, allow_batched=True)


def clone(key):
    """A copy of `key` (keys are immutable values, so the key itself)."""
    return check_key("clone", key, allow_batched=True)


# -------------------------------------------------------------------------------------- the hash


def threefry_2x32(key, count):
    """Encipher the uint32 array `count` with a single key, JAX's original way: the flattened
    counts (padded by one zero when odd) are split in halves that form the counter pairs."""
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
    y1, y2 = L.threefry2x32(k1, k2, x1, x2)
    out = L.concatenate([y1, y2], 0)
    if odd:
        out = L.slice(out, (0,), (size,))
    return L.reshape(out, shape)


def _iota_2x32(shape):
    """The (hi, lo) words of the 64-bit row-major index of each element of `shape`."""
    size = math.prod(shape)
    if size > 2**32:
        raise NotImplementedError(f"random bits for an array of {size} elements (more than 2**32)")
    # Every index fits in 32 bits, so the high word is zero: a scalar the primitive broadcasts.
    lo = L.reshape(L.iota(_U32, size), shape) if shape else _u32(0)
    return _u32(0), lo


def _hash_shape(key, shape):
    """Partitionable layout: threefry of each element's (hi, lo) index under the key."""
    k1, k2 = _key_words(key)
    hi, lo = _iota_2x32(shape)
    return L.threefry2x32(k1, k2, hi, lo)


# ---------------------------------------------------------------------------------- split, fold_in


def _split_shape(num) -> tuple:
    if isinstance(num, (tuple, list)):
        return canonicalize_shape(tuple(num), "split")
    return canonicalize_shape((num,), "split")


def split(key, num=2):
    """`num` new keys from `key` (an int, or a shape tuple: keys of shape ``(*num, 2)``)."""
    key = check_key("split", key)
    shape = _split_shape(num)
    if config.threefry_partitionable:
        b1, b2 = _hash_shape(key, shape)
        return L.concatenate([L.expand_dims(b1, (len(shape),)), L.expand_dims(b2, (len(shape),))], len(shape))
    n = math.prod(shape)
    return L.reshape(threefry_2x32(key, L.iota(_U32, 2 * n)), (*shape, 2))


def fold_in(key, data):
    """A new key from `key` and an integer `data` (a uint32 scalar): threefry of (0, data)."""
    key = check_key("fold_in", key)
    data_shape = get_aval(data).shape if isinstance(data, (Array, Tracer)) else np.shape(data)
    if data_shape:
        raise TypeError(
            f"fold_in accepts a scalar, but was given an array of shape {data_shape} != (). "
            "Use jax.vmap for batching."
        )
    if isinstance(data, (np.ndarray, np.generic)):
        data = make_array(data, _dtypes.canonicalize_dtype(data.dtype))
    data = _util.convert_element_type(data, _U32)
    counts = L.concatenate([L.broadcast_in_dim(_u32(0), (1,), ()), L.reshape(data, (1,))], 0)
    return threefry_2x32(key, counts)


# ------------------------------------------------------------------------------------------ bits


def random_bits(key, bit_width: int, shape: tuple):
    """Unsigned integers of `bit_width` bits (8, 16, 32, 64) and `shape` from a checked key."""
    if bit_width not in _UINT_DTYPES:
        raise TypeError(f"random bits requires 8-, 16-, 32- or 64-bit field width, got {bit_width}.")
    dtype = _UINT_DTYPES[bit_width]
    if config.threefry_partitionable:
        b1, b2 = _hash_shape(key, shape)
        if bit_width == 64:
            hi = L.convert_element_type(b1, dtype)
            return L.bitwise_or(L.shift_left(hi, make_array(32, dtype)), L.convert_element_type(b2, dtype))
        out = L.bitwise_xor(b1, b2)
        return out if bit_width == 32 else L.convert_element_type(out, dtype)
    return _bits_original(key, bit_width, shape, dtype)


def _bits_original(key, bit_width, shape, dtype):
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


def bits(key, shape=(), dtype=None):
    """Uniform random bits as an unsigned integer array (uint32, or uint64 under x64, by default)."""
    key = check_key("bits", key)
    if dtype is None:
        dtype = _dtypes.default_uint_dtype()
    else:
        _dtypes.check_user_dtype_supported(dtype, "bits")
    if not _dtypes.is_unsigned(np.dtype(dtype)):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {np.dtype(dtype)}")
    dtype = _dtypes.canonicalize_dtype(dtype)
    shape = canonicalize_shape(shape, "bits")
    return random_bits(key, dtype.itemsize * 8, shape)
