"""`rng_bit_generator` (XLA's RngBitGenerator with the Threefry and Philox expansions XLA CPU
uses, bit for bit) and the stateful `rng_uniform`, for `jax.lax` parity. Prefer morphax.random.
Imports the core and the primitive families only.
"""

from __future__ import annotations

import enum
import functools
import math

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims import _stablehlo_bits as hlo_bits
from morphax._src.prims._ad import defjvp, defjvp_zero
from morphax._src.prims._shape_util import as_lax_array, canonical_shape
from morphax._src.prims._spec import Case, TestSpec
from morphax._src.prims.arithmetic import div, mul, sub
from morphax._src.prims.compare import eq
from morphax._src.prims.conversion import full_like
from morphax._src.prims.prng import threefry2x32_p
from morphax._src.prims.selection import select_n
from morphax._src.prims.shape import reshape

__all__ = [
    "RandomAlgorithm",
    "rng_bit_generator",
    "rng_bit_generator_p",
    "rng_uniform",
    "rng_uniform_p",
]

_LO32 = np.uint64(0xFFFFFFFF)

# ------------------------------------------------------------------------------------------------
# rng_bit_generator: XLA's RngBitGenerator as its CPU expansion computes it. The key is uint32[4]
# (the two uint64 state words, low halves first) or uint64[2]; word 0 is the cipher key, word 1 a
# counter that advances by the number of blocks consumed. RNG_DEFAULT is Philox on CPU. Leading
# key dimensions (from vmap) give independent generators, computed together.


class RandomAlgorithm(enum.IntEnum):
    """Which PRNG algorithm `rng_bit_generator` uses."""

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self):
        return self.name


_U32, _U64 = np.uint32, np.uint64


def _halves(v):
    return (v & _LO32).astype(_U32), (v >> _U64(32)).astype(_U32)


def _join(lo, hi):
    return lo.astype(_U64) | (hi.astype(_U64) << _U64(32))


def _threefry_bits(key, ctr, shape, wide):
    """(bits of `shape`, blocks used) from counters ctr, ctr+1, ...; rows of key/ctr are generators."""
    k0, k1 = (k[:, None] for k in _halves(key))
    b = key.shape[0]
    if wide:  # one 64-bit value per block
        n = math.prod(shape)
        o0, o1 = threefry2x32_p.impl(k0, k1, *_halves(ctr[:, None] + np.arange(n, dtype=_U64)))
        return _join(o0, o1).reshape((b, *shape)), n
    # 32-bit values: the two words of a block land side by side along the first even axis (else
    # the longest), which XLA splits in half.
    if not shape:
        o0, _ = threefry2x32_p.impl(k0, k1, *_halves(ctr[:, None]))
        return o0.reshape(b), 1
    axis = next((i for i, d in enumerate(shape) if d % 2 == 0), None)
    if axis is None:
        axis = max(range(len(shape)), key=lambda i: (shape[i], -i))
    half = tuple(-(-d // 2) if i == axis else d for i, d in enumerate(shape))
    m = math.prod(half)
    o0, o1 = threefry2x32_p.impl(k0, k1, *_halves(ctr[:, None] + np.arange(m, dtype=_U64)))
    pairs = np.stack([o0.reshape((b, *half)), o1.reshape((b, *half))], axis=axis + 2)
    full = pairs.reshape((b, *shape[:axis], 2 * half[axis], *shape[axis + 1 :]))
    return np.take(full, np.arange(shape[axis]), axis=axis + 1), m


_PHILOX_W = (_U32(0x9E3779B9), _U32(0xBB67AE85))
_PHILOX_M = (_U64(0xD2511F53), _U64(0xCD9E8D57))


def _philox_bits(key, ctr, shape, wide):
    """Philox-4x32-10 on the 128-bit counters (low = ctr + i, high = key) with the key's halves."""
    n = math.prod(shape) * (2 if wide else 1)
    blocks = -(-n // 4)
    lo = ctr[:, None] + np.arange(blocks, dtype=_U64)
    hi = key[:, None] + (lo < ctr[:, None]).astype(_U64)  # carry out of the low word
    x0, x1 = _halves(lo)
    x2, x3 = _halves(hi)
    k0, k1 = (k[:, None] for k in _halves(key))
    for _ in range(10):
        p0, p1 = x0.astype(_U64) * _PHILOX_M[0], x2.astype(_U64) * _PHILOX_M[1]
        h0, l0 = _halves(p0)[::-1]
        h1, l1 = _halves(p1)[::-1]
        x0, x1, x2, x3 = h1 ^ x1 ^ k0, l1, h0 ^ x3 ^ k1, l0
        k0, k1 = k0 + _PHILOX_W[0], k1 + _PHILOX_W[1]
    words = (_join(x0, x1), _join(x2, x3)) if wide else (x0, x1, x2, x3)
    out = np.stack(words, axis=-1).reshape(key.shape[0], -1)[:, : math.prod(shape)]
    return out.reshape((key.shape[0], *shape)), blocks


def _rbg_key_kind(key):
    if key.dtype == np.uint32 and key.shape[-1:] == (4,):
        return 4
    if key.dtype == np.uint64 and key.shape[-1:] == (2,):
        return 2
    return None


def _rbg_abstract_eval(key, *, shape, dtype, algorithm, out_sharding):
    if _rbg_key_kind(key) is None:
        raise TypeError(
            f"rng_bit_generator: the key must be a uint32[4] (or, with x64, uint64[2]) array, got "
            f"{key.str_short()}."
        )
    dtype = np.dtype(dtype)
    if dtype not in (np.uint8, np.uint16, np.uint32, np.uint64):
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype.name}")
    if not isinstance(algorithm, RandomAlgorithm):
        raise TypeError(f"rng_bit_generator: algorithm must be a lax.RandomAlgorithm, got {algorithm!r}")
    return [key, ShapedArray(key.shape[:-1] + tuple(shape), dtype, False)]


def _rbg_impl(key, *, shape, dtype, algorithm, out_sharding):
    key = np.asarray(key)
    batch = key.shape[:-1]
    if _rbg_key_kind(key) == 4:
        k32 = key.reshape(-1, 4)
        k, ctr = _join(k32[:, 0], k32[:, 1]), _join(k32[:, 2], k32[:, 3])
    else:
        k64 = key.reshape(-1, 2)
        k, ctr = k64[:, 0], k64[:, 1]
    dtype = np.dtype(dtype)
    wide = dtype.itemsize == 8
    gen = _threefry_bits if algorithm == RandomAlgorithm.RNG_THREE_FRY else _philox_bits
    with np.errstate(over="ignore"):
        bits, used = gen(k, ctr, tuple(shape), wide)
        new = ctr + _U64(used)
    # Narrow dtypes keep the low bits of 32-bit values, as XLA converts them.
    bits = bits.astype(dtype).reshape(batch + tuple(shape))
    if _rbg_key_kind(key) == 4:
        new_key = np.concatenate([k32[:, :2], np.stack(_halves(new), axis=-1)], axis=-1)
    else:
        new_key = np.stack([k, new], axis=-1)
    return [new_key.reshape(key.shape).astype(key.dtype), bits]


def _rbg_batch(vals, dims, *, axis_data, **params):
    key = moveaxis(vals[0], dims[0], 0)
    return rng_bit_generator_p.bind(key, **params), [0, 0]


def _rbg_cases(rng):
    out = []
    shapes = ((), (5,), (2, 3), (3, 5), (4, 1, 3), (0,), (1, 7))
    for alg in RandomAlgorithm:
        for dt in ("uint32", "uint8", "uint16"):
            for shape in shapes:
                key = rng.integers(0, 2**32, size=4, dtype=np.uint64).astype(np.uint32)
                params = {"shape": shape, "dtype": np.dtype(dt), "algorithm": alg, "out_sharding": None}
                out.append(Case((key,), params, f"{alg.name}-{dt}{list(shape)}"))
    carry = np.array([1, 2, 0xFFFFFFFF, 0xFFFFFFFF], np.uint32)  # the counter wraps: Philox carries
    for alg in RandomAlgorithm:
        params = {"shape": (9,), "dtype": np.dtype("uint32"), "algorithm": alg, "out_sharding": None}
        out.append(Case((carry,), params, f"{alg.name}-counter-wraps"))
    return out


rng_bit_generator_p = Primitive("rng_bit_generator", multiple_results=True)
# A pure function of its key: a library call (Philox/threefry/...) run as one node.
rng_bit_generator_p.kind = Kind.OPAQUE
rng_bit_generator_p.stablehlo = hlo_bits.rng_bit_generator
rng_bit_generator_p.abstract_eval = _rbg_abstract_eval
rng_bit_generator_p.impl = _rbg_impl
rng_bit_generator_p.batch = _rbg_batch
rng_bit_generator_p.test_spec = TestSpec(cases=_rbg_cases, differentiable=False, grad_order=0)
defjvp_zero(rng_bit_generator_p)


def rng_bit_generator(
    key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *, out_sharding=None
):
    """(new key, uniformly random bits of `shape`) from a uint32[4] key: XLA's stateless
    RngBitGenerator with its CPU algorithms (RNG_DEFAULT is Philox), bit for bit."""
    shape = canonical_shape(shape, "rng_bit_generator")
    dtype = _dtypes.canonicalize_dtype(dtype)
    if dtype not in (np.uint8, np.uint16, np.uint32, np.uint64):
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype.name}")
    key = as_lax_array(key)
    if len(get_aval(key).shape) != 1:
        raise TypeError(f"rng_bit_generator: the key must be a vector, got {get_aval(key).str_short()}.")
    return tuple(
        rng_bit_generator_p.bind(
            key, shape=shape, dtype=dtype, algorithm=RandomAlgorithm(algorithm), out_sharding=out_sharding
        )
    )


# ------------------------------------------------------------------------------------------------
# rng_uniform: XLA's stateful RngUniform. Values come from a process-wide generator, so no two calls
# agree (the primitive is marked effectful: never folded, merged or dropped). Samples lie in [a, b);
# when b <= a (undefined in XLA) they equal a. a and b may broadcast against `shape` under lax's
# rule (vmap relies on it); the wrapper requires scalars, as JAX does.


@functools.cache
def _uniform_state():
    # Made at the first draw: numpy.random is not imported with morphax.
    return np.random.default_rng(0x5EED)


def _uniform_dtype_ok(dt):
    return _dtypes.is_floating(dt) or (_dtypes.is_integer(dt) and dt.itemsize >= 4)


def _uniform_abstract_eval(a, b, *, shape):
    if a.dtype != b.dtype:
        raise ValueError(f"Arguments to rng_uniform must have identical dtypes, got {a.dtype} and {b.dtype}.")
    if not _uniform_dtype_ok(a.dtype):
        raise TypeError(
            f"rng_uniform does not accept dtype {a.dtype.name}: use a floating type or a 32/64-bit integer."
        )
    for v in (a, b):
        if v.shape and (len(v.shape) != len(shape) or any(d not in (1, s) for d, s in zip(v.shape, shape))):
            raise ValueError(f"Arguments to rng_uniform must be scalars; got shapes {a.shape} and {b.shape}.")
    return ShapedArray(tuple(shape), a.dtype, a.weak_type and b.weak_type)


def _uniform_impl(a, b, *, shape):
    a, b = np.asarray(a), np.asarray(b)
    dt = a.dtype
    lo, hi = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    if _dtypes.is_integer(dt):
        span = hi.astype(object) - lo.astype(object)  # exact for 64-bit ranges
        ok = span > 0
        draws = [int(_uniform_state().integers(0, s)) if s > 0 else 0 for s in np.ravel(span)]
        out = lo.astype(object) + np.array(draws, dtype=object).reshape(shape)
        return np.where(ok, out, lo).astype(dt)
    wide = np.float64
    u = _uniform_state().random(shape)
    out = (lo.astype(wide) + u * (hi.astype(wide) - lo.astype(wide))).astype(dt)
    # Rounding may reach b; such samples (and every sample when b <= a) become a.
    return np.where(out < hi, out, lo).astype(dt)


def _uniform_batch(vals, dims, *, axis_data, shape):
    out = []
    for v, d in zip(vals, dims):
        if d is None:
            out.append(v)  # a scalar: broadcasts freely
            continue
        v = moveaxis(v, d, 0)
        rank = len(get_aval(v).shape) - 1
        if rank < len(shape):  # a batched scalar: (B,) -> (B, 1, ..., 1)
            v = reshape(v, (axis_data.size,) + (1,) * len(shape))
        out.append(v)
    return rng_uniform_p.bind(*out, shape=(axis_data.size,) + tuple(shape)), 0


def _uniform_partial(which):
    # The sample is a + u (b - a) for a fixed draw u = (out - a) / (b - a): its derivative in a is
    # 1 - u and in b is u (the reparameterization gradient; JAX defines none).
    def partial(g, ans, a, b, *, shape):
        span = sub(b, a)
        degenerate = eq(span, full_like(span, 0))
        u = div(sub(ans, a), select_n(degenerate, span, full_like(span, 1)))
        weight = u if which == "b" else sub(full_like(u, 1), u)
        return mul(g, weight)

    return partial


rng_uniform_p = Primitive("rng_uniform")
# Stateful (a new draw per call, like XLA's RngUniform): never merged or reordered.
rng_uniform_p.kind = Kind.EFFECT
rng_uniform_p.stablehlo = hlo_bits.rng_uniform
rng_uniform_p.abstract_eval = _uniform_abstract_eval
rng_uniform_p.impl = _uniform_impl
rng_uniform_p.batch = _uniform_batch
rng_uniform_p.has_side_effects = True
defjvp(rng_uniform_p, _uniform_partial("a"), _uniform_partial("b"))


def _uniform_cases(rng):
    # Deterministic cases for the generated matrices: [a, b) holds a alone, because b is the next
    # integer or b <= a (then the result is a). The values are fixed, so the vmap matrix's
    # variants (floats shifted by the example index, integer scalars repeated) stay deterministic.
    # Randomness itself is tested separately.
    out = []
    pairs = (
        ("float32", 3e38, 2.0),
        ("float32", 1.5, -2.0),
        ("int32", 3, 4),
        ("uint32", 7, 8),
        ("int32", 5, 5),
    )
    for dt, a, b in pairs:
        for shape in ((), (3,), (2, 3), (0,)):
            args = (np.asarray(a, dt), np.asarray(b, dt))
            out.append(Case(args, {"shape": shape}, f"{dt}({a},{b}){list(shape)}"))
    return out


rng_uniform_p.test_spec = TestSpec(cases=_uniform_cases, differentiable=False, grad_order=0)


def rng_uniform(a, b, shape):
    """Stateful uniform samples in [a, b) of `shape` (XLA's RngUniform: no key; every call
    differs). Prefer morphax.random."""
    a, b = as_lax_array(a), as_lax_array(b)
    aa, ba = get_aval(a), get_aval(b)
    if aa.dtype != ba.dtype:
        raise ValueError(
            f"Arguments to rng_uniform must have identical dtypes, got {aa.dtype} and {ba.dtype}."
        )
    if aa.shape or ba.shape:
        raise ValueError(f"Arguments to rng_uniform must be scalars; got shapes {aa.shape} and {ba.shape}.")
    return rng_uniform_p.bind(a, b, shape=canonical_shape(shape, "rng_uniform"))
