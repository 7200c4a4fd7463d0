"""Transformation-matrix cases for the elementwise functions (morphax/_src/numpy/ufuncs.py):
each on a matrix, binary ones also broadcast against a row, with inputs inside the function's
domain and away from its kinks so that finite differences are meaningful."""

from __future__ import annotations

import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from fn_matrix import Case, args, booleans, complexes, integers, normal, uniform  # noqa: E402

M = (3, 4)


def _away_from_integers(*shape):
    # floor/ceil/trunc/rint/remainder: keep samples off the jumps.
    return lambda rng: (rng.integers(-4, 4, shape) + rng.uniform(0.1, 0.4, shape)).astype(np.float32)


def _nonzero(*shape):
    return lambda rng: (rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape)).astype(np.float32)


def _unary(name, builder, grad=True, **kw):
    return [
        Case(name, args(builder(*M)), grad=grad, **kw),
        Case(name, args(builder(2, 3, 2)), grad=grad, label="3d", **kw),
    ]


def _binary(name, left, right, grad=True, **kw):
    return [
        Case(name, args(left(*M), right(*M)), grad=grad, **kw),
        Case(name, args(left(*M), right(M[1])), grad=grad, label="broadcast", **kw),
    ]


CASES: list[Case] = []

# Unary functions over the whole real line.
for _name in (
    "sin cos sinh cosh tanh arctan atan arcsinh asinh exp exp2 expm1 negative positive square absolute abs"
).split():
    CASES += _unary(_name, _nonzero if _name in ("abs", "absolute") else normal)
CASES += _unary("tan", lambda *s: uniform(*s, lo=-1.2, hi=1.2))
CASES += _unary("cbrt", _nonzero)
CASES += _unary("sign", _nonzero)
CASES += _unary("reciprocal", _nonzero)
for _name in "floor ceil trunc rint".split():
    CASES += _unary(_name, _away_from_integers)
for _name in "log log1p log2 log10 sqrt".split():
    CASES += _unary(_name, lambda *s: uniform(*s, lo=0.2, hi=3.0))
for _name in "arcsin asin arccos acos arctanh atanh".split():
    CASES += _unary(_name, lambda *s: uniform(*s, lo=-0.9, hi=0.9))
for _name in "arccosh acosh".split():
    CASES += _unary(_name, lambda *s: uniform(*s, lo=1.2, hi=3.0))

# Integer operands promote to float for the transcendental functions.
for _name in "sin exp sqrt log1p arctan".split():
    CASES.append(Case(_name, args(integers(*M, lo=0, hi=5)), grad=False, label="int32"))

# Complex operands.
for _name in "sin exp log sqrt tanh square reciprocal negative".split():
    CASES.append(Case(_name, args(complexes(*M)), label="complex64", rtol=1e-4, atol=1e-5))
for _name in "conj conjugate real imag absolute abs".split():
    CASES.append(Case(_name, args(complexes(*M)), label="complex64"))
    CASES.append(Case(_name, args(normal(*M) if "abs" not in _name else _nonzero(*M)), label="float32"))
for _name in "conj conjugate real imag".split():
    CASES.append(Case(_name, args(complexes(2, 3, 2)), label="complex64-3d"))
CASES.append(Case("abs", args(integers(*M)), grad=False, label="int32"))
CASES.append(Case("sign", args(integers(*M)), grad=False, label="int32"))

# Predicates and bitwise/logical unary functions: boolean or integer results.


def _special_floats(*shape):
    def build(rng):
        x = rng.standard_normal(shape).astype(np.float32)
        flat = x.reshape(-1)
        flat[:: max(1, flat.size // 4)] = [np.inf, -np.inf, np.nan, -0.0][
            : len(flat[:: max(1, flat.size // 4)])
        ]
        return x

    return build


for _name in "isfinite isnan isinf isposinf isneginf signbit".split():
    CASES += _unary(_name, _special_floats, grad=False)
CASES += _unary("logical_not", booleans, grad=False)
CASES.append(Case("logical_not", args(integers(*M)), grad=False, label="int32"))
for _name in "bitwise_not invert bitwise_invert bitwise_count".split():
    CASES += _unary(_name, lambda *s: integers(*s, lo=-100, hi=100), grad=False)
    CASES.append(Case(_name, args(integers(*M, lo=0, hi=200, dtype=np.uint8)), grad=False, label="uint8"))
CASES.append(Case("invert", args(booleans(*M)), grad=False, label="bool"))

# Binary arithmetic.
for (
    _name
) in "add subtract multiply maximum minimum fmax fmin logaddexp logaddexp2 arctan2 atan2 hypot".split():
    CASES += _binary(_name, normal, normal)
for _name in "divide true_divide".split():
    CASES += _binary(_name, normal, _nonzero)
    CASES.append(Case(_name, args(integers(*M), integers(*M, lo=1, hi=5)), grad=False, label="int32"))
CASES += _binary("copysign", _nonzero, _nonzero)
for _name in "power pow float_power".split():
    CASES += _binary(_name, lambda *s: uniform(*s, lo=0.5, hi=2.0), normal)
CASES.append(Case("power", args(integers(*M), integers(*M, lo=0, hi=4)), grad=False, label="int32"))
CASES.append(Case("float_power", args(integers(*M), integers(*M, lo=0, hi=4)), grad=False, label="int32"))


def _remainder_args(rng):
    # x / y stays away from integers, so the remainder is smooth around the sample.
    y = (rng.choice([-1.0, 1.0], M) * rng.uniform(1.0, 2.0, M)).astype(np.float32)
    q = rng.integers(-3, 4, M) + rng.uniform(0.2, 0.8, M)
    return ((q * y).astype(np.float32), y)


def _remainder_args_broadcast(rng):
    # A 3-D dividend against a row of divisors (broadcast), with x / y away from integers.
    y = (rng.choice([-1.0, 1.0], 4) * rng.uniform(1.0, 2.0, 4)).astype(np.float32)
    q = rng.integers(-3, 4, (2, 3, 4)) + rng.uniform(0.2, 0.8, (2, 3, 4))
    return ((q * y).astype(np.float32), y)


for _name in "remainder mod fmod floor_divide".split():
    CASES.append(Case(_name, _remainder_args))
    CASES.append(Case(_name, _remainder_args_broadcast, label="3d-broadcast"))
    CASES.append(
        Case(_name, args(integers(*M, lo=-20, hi=20), integers(*M, lo=1, hi=6)), grad=False, label="int32")
    )
CASES.append(
    Case(
        "divmod",
        _remainder_args,
        fn=lambda x, y: __import__("morphax").numpy.divmod(x, y)[1],
        ref=lambda x, y: np.divmod(x, y)[1],
    )
)
CASES.append(
    Case("divmod", args(integers(*M, lo=-20, hi=20), integers(*M, lo=1, hi=6)), grad=False, label="int32")
)
CASES.append(
    Case(
        "divmod",
        _remainder_args_broadcast,
        fn=lambda x, y: __import__("morphax").numpy.divmod(x, y)[1],
        ref=lambda x, y: np.divmod(x, y)[1],
        label="3d-broadcast",
    )
)
CASES += _binary("heaviside", _nonzero, normal)
CASES += _binary("nextafter", normal, normal, grad=False)

# Comparisons, bitwise and logical binary functions.
for _name in "equal not_equal less less_equal greater greater_equal".split():
    CASES += _binary(
        _name, lambda *s: integers(*s, lo=0, hi=3), lambda *s: integers(*s, lo=0, hi=3), grad=False
    )
    CASES.append(Case(_name, args(normal(*M), normal(*M)), grad=False, label="float32"))
for _name in "bitwise_and bitwise_or bitwise_xor".split():
    CASES += _binary(
        _name, lambda *s: integers(*s, lo=-50, hi=50), lambda *s: integers(*s, lo=-50, hi=50), grad=False
    )
    CASES.append(Case(_name, args(booleans(*M), booleans(*M)), grad=False, label="bool"))
for _name in "left_shift right_shift bitwise_left_shift bitwise_right_shift".split():
    CASES += _binary(
        _name, lambda *s: integers(*s, lo=-50, hi=50), lambda *s: integers(*s, lo=0, hi=8), grad=False
    )
for _name in "logical_and logical_or logical_xor".split():
    CASES += _binary(_name, booleans, booleans, grad=False)
    CASES.append(Case(_name, args(integers(*M, lo=0, hi=2), normal(*M)), grad=False, label="mixed"))

# Selection.
CASES.append(Case("where", args(booleans(*M), normal(*M), normal(*M))))
CASES.append(Case("where", args(booleans(*M), normal(M[1]), normal(3, 1)), label="broadcast"))
CASES.append(Case("where", args(booleans(*M), integers(*M), integers(*M)), grad=False, label="int32"))


def _clip_args(rng):
    x = rng.uniform(-3, 3, M).astype(np.float32)
    lo = rng.uniform(-2.0, -0.5, M).astype(np.float32)
    hi = rng.uniform(0.5, 2.0, M).astype(np.float32)
    # Keep x away from the bounds (the derivative jumps there).
    x = np.where(np.abs(x - lo) < 0.1, x + 0.2, x)
    x = np.where(np.abs(x - hi) < 0.1, x + 0.2, x).astype(np.float32)
    return (x, lo, hi)


CASES.append(Case("clip", _clip_args))
CASES.append(Case("clip", lambda rng: (_clip_args(rng)[0], -1.0, 1.0), label="scalar-bounds"))
CASES.append(
    Case("clip", args(integers(*M, lo=-10, hi=10)), kwargs={"min": -3, "max": 4}, grad=False, label="int32")
)

EXEMPT: dict[str, str] = {}
