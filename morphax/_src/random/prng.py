"""Threefry PRNG keys: `PRNGKey`, `split`, `fold_in` and raw `bits`, bit for bit as JAX.

A key is a ``uint32[2]`` array. ``config.threefry_partitionable`` picks JAX's counter layout: a
(hi, lo) iota over the output shape (default) or the original flat iota split in halves."""

from __future__ import annotations

import numpy as np

from morphax._src.api.eager_compiled import compiled_when_eager
from morphax._src.config import config
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.core.trace import Tracer
from morphax._src.core.values import make_array
from morphax._src.numpy import util as _util
from morphax._src.numpy.creation import canonicalize_shape
from morphax._src.prims import lax_api as L
from morphax._src.prims import random_keys as _rk
from morphax._src.prims.random_keys import KEY_DTYPE
from morphax._src.runtime.array import Array

__all__ = [
    "PRNGKey",
    "bits",
    "clone",
    "fold_in",
    "is_key_value",
    "key_data",
    "key_row",
    "random_bits",
    "split",
    "threefry_2x32",
]

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
    elif is_key_value(key):
        shape = get_aval(key).shape
        if not allow_batched and shape:
            raise ValueError(
                f"{name} accepts a single key, but was given a key array of shape {shape} != (). "
                "Use jax.vmap for batching."
            )
        return key
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


def is_key_value(x) -> bool:
    """Whether `x` is a typed key value (of aval ``key<fry>[...]``: a tracer, or a concrete key
    array's leaf) rather than raw ``uint32[..., 2]`` words; those go through the primitives."""
    return getattr(x, "dtype", None) is KEY_DTYPE and not isinstance(x, (np.ndarray, np.generic))


def key_row(keys, i: int):
    """Key `i` of a one-dimensional key array (raw ``uint32[n, 2]`` or typed ``key<fry>[n]``)."""
    if is_key_value(keys):
        return L.squeeze(L.slice(keys, (i,), (i + 1,), (1,)), (0,))
    return L.reshape(L.slice(keys, (i, 0), (i + 1, 2)), (2,))


# ---------------------------------------------------------------------------------------- seeding


def PRNGKey(seed, *, impl=None, typed=False):  # noqa: N802 - JAX's name
    """A raw threefry key ``uint32[2]`` from an integer seed: (high 32 bits, low 32 bits).

    As JAX: a Python int goes through int64 (so >= 2**63 overflows) and, without x64, wraps to
    int32, so a negative seed sign-extends only in x64 mode. With `typed`, the ``key<fry>[]``
    value of that key instead (random_seed): what `random.key` wraps.
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
    return _rk.random_seed(seed) if typed else _rk.seed_words(seed)


def key_data(keys):
    """The raw ``uint32[..., 2]`` data of a key array (raw keys are returned as they are)."""
    return check_key("key_data", keys, allow_batched=True)


def clone(key):
    """A copy of `key` (keys are immutable values, so the key itself; typed keys: random_clone)."""
    key = check_key("clone", key, allow_batched=True)
    return _rk.random_clone(key) if is_key_value(key) else key


# -------------------------------------------------------------------------------------- the hash


threefry_2x32 = _rk.threefry_2x32


# ---------------------------------------------------------------------------------- split, fold_in


def _split_shape(num) -> tuple:
    if isinstance(num, (tuple, list)):
        return canonicalize_shape(tuple(num), "split")
    return canonicalize_shape((num,), "split")


def split(key, num=2):
    """`num` new keys from `key` (an int, or a shape tuple: keys of shape ``(*num, 2)``)."""
    key = check_key("split", key)
    return _split_compiled(key, _split_shape(num))


def _split(key, shape):
    if is_key_value(key):
        return _rk.random_split(key, shape)
    return _rk.split_words(key, shape)


# Called eagerly, one compiled program per shape, as JAX's jit-decorated split.
_split_compiled = compiled_when_eager(_split, static_argnums=(1,))


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
    if is_key_value(key):
        return _rk.random_fold_in(key, data)
    return _rk.fold_in_words(key, data)


# ------------------------------------------------------------------------------------------ bits


def random_bits(key, bit_width: int, shape: tuple):
    """Unsigned integers of `bit_width` bits (8, 16, 32, 64) and `shape` from a checked key."""
    if bit_width not in _UINT_DTYPES:
        raise TypeError(f"random bits requires 8-, 16-, 32- or 64-bit field width, got {bit_width}.")
    if is_key_value(key):
        return _rk.random_bits(key, bit_width, shape)
    return _rk.bits_words(key, bit_width, shape)


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
