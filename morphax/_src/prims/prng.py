"""The `threefry2x32` primitive: the Threefry-2x32 block cipher (20 rounds, Random123 / JAX).

Operands key1, key2, x1, x2 are uint32 arrays under lax broadcasting; the result is the two
uint32 words of the enciphered counter pairs. Imports the core and the rule helpers only.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core.avals import ShapedArray
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims import _stablehlo_bits as hlo_bits
from morphax._src.prims._ad import defjvp_zero
from morphax._src.prims._spec import Case, TestSpec
from morphax._src.prims.builders import broadcasting_shape, elementwise_batcher

__all__ = ["threefry2x32", "threefry2x32_p"]

# Rotation constants of Threefry-2x32 (Salmon et al. 2011, table 4): one group of four rounds
# alternates with the other between key injections.
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
# Skein's key-schedule parity constant: the third key word is key1 ^ key2 ^ this.
_KS_PARITY = np.uint32(0x1BD11BDA)

threefry2x32_p = Primitive("threefry2x32", multiple_results=True)
# Two results, each elementwise in the four (broadcast) operands.
threefry2x32_p.kind = Kind.ELEMENTWISE
threefry2x32_p.kernel_op = "threefry2x32"
threefry2x32_p.stablehlo = hlo_bits.threefry2x32(_ROTATIONS, _KS_PARITY)


def _abstract_eval(key1, key2, x1, x2):
    avals = (key1, key2, x1, x2)
    bad = [a.str_short() for a in avals if a.dtype != np.uint32]
    if bad:
        raise TypeError(
            "threefry2x32: every operand (key1, key2, x1, x2) must have dtype uint32, got "
            f"{', '.join(a.str_short() for a in avals)}. Keys come from random.PRNGKey(seed); counters "
            "are uint32 arrays (lax.convert_element_type(x, 'uint32'))."
        )
    shape = broadcasting_shape("threefry2x32", *avals)
    out = ShapedArray(shape, np.dtype(np.uint32), False)
    return [out, out]


def _rotl(v, r):
    return (v << np.uint32(r)) | (v >> np.uint32(32 - r))


def _impl(key1, key2, x1, x2):
    arrs = [np.asarray(a, dtype=np.uint32) for a in (key1, key2, x1, x2)]
    shape = np.broadcast_shapes(*(a.shape for a in arrs))
    # Work on 1-d copies: NumPy warns on wrapping arithmetic of 0-d values but not of arrays.
    k1, k2, v0, v1 = (np.broadcast_to(a, shape).reshape(-1).copy() for a in arrs)
    ks = (k1, k2, k1 ^ k2 ^ _KS_PARITY)
    v0 = v0 + ks[0]
    v1 = v1 + ks[1]
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            v0 = v0 + v1
            v1 = _rotl(v1, r) ^ v0
        # Key injection `block + 1`: the schedule rotates by one word and the counter is added.
        v0 = v0 + ks[(block + 1) % 3]
        v1 = v1 + ks[(block + 2) % 3] + np.uint32(block + 1)
    return [v0.reshape(shape), v1.reshape(shape)]


threefry2x32_p.impl = _impl
threefry2x32_p.abstract_eval = _abstract_eval
# Elementwise in all four operands under lax broadcasting (rank-0 keys with counter arrays, size-1
# axes), so vmap lines them up like any elementwise primitive; both words keep the batch axis.
elementwise_batcher(threefry2x32_p)
# Integer valued: no derivative (float0 tangents), as in JAX.
defjvp_zero(threefry2x32_p)


def _u32(*vals):
    return np.array(vals, dtype=np.uint32)


def _cases(rng):
    def rand(shape):
        return rng.integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32)

    out = [
        # Random123's known-answer vectors (kat_vectors, threefry2x32_20).
        Case((_u32(0), _u32(0), _u32(0), _u32(0)), {}, "kat-zeros"),
        Case((_u32(0xFFFFFFFF),) * 4, {}, "kat-ones"),
        Case(
            (np.uint32(0x13198A2E), np.uint32(0x03707344), _u32(0x243F6A88), _u32(0x85A308D3)),
            {},
            "kat-pi",
        ),
    ]
    for kshape, xshape in (
        ((), ()),
        ((), (5,)),
        ((), (2, 3)),
        ((2, 3), (2, 3)),
        ((1, 3), (2, 3)),
        ((), (0,)),
    ):
        args = (rand(kshape), rand(kshape), rand(xshape), rand(xshape))
        out.append(Case(args, {}, f"key{list(kshape)}x{list(xshape)}"))
    return out


threefry2x32_p.test_spec = TestSpec(cases=_cases, differentiable=False, grad_order=0)


def threefry2x32(key1, key2, x1, x2):
    """Threefry-2x32 of the counter pairs (x1, x2) under the key (key1, key2); all uint32."""
    return tuple(threefry2x32_p.bind(key1, key2, x1, x2))
