"""Transformation-matrix cases (see fn_matrix.py) for the basic `morphax.numpy` functions:
reductions, array manipulation, creation, basic products (products.py) and the along-axis
indexing helpers."""

from __future__ import annotations

import pathlib
import sys

import numpy as np

import morphax.numpy as jnp

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from fn_matrix import Case, args, booleans, complexes, const, integers, normal, positive, uniform  # noqa: E402

# ---- local builders -----------------------------------------------------------------------------


def distinct(*shape, dtype=np.float32):
    """Values with no ties (a shuffled, jittered grid), so max/min/sort-like functions are smooth."""
    n = int(np.prod(shape))

    def build(rng):
        grid = np.arange(n, dtype=np.float64) - n / 2 + rng.uniform(0.1, 0.4, n)
        return rng.permutation(grid).reshape(shape).astype(dtype)

    return build


def with_nans(*shape, dtype=np.float32, base=None):
    """`base` (default: distinct values) with NaNs at fixed positions, never a whole line of an axis."""
    base = base or distinct(*shape, dtype=dtype)

    def build(rng):
        x = base(rng).copy()
        flat = x.reshape(-1)
        flat[[1, 5]] = np.nan
        return x

    return build


def mask(*shape):
    """A boolean `where=` mask keeping the first two entries along the last axis (no empty reduction,
    and no single-entry one, where std's sqrt has a kink at zero variance)."""

    def build(rng):
        m = rng.random(shape) < 0.6
        m[..., :2] = True
        return m

    return build


def scalar(value=None, lo=0.5, hi=2.0, dtype=np.float32):
    """A 0-d operand."""
    return lambda rng: np.asarray(rng.uniform(lo, hi) if value is None else value, dtype=dtype)


def permuted(values, dtype=np.int32):
    """A permutation of fixed `values` (same multiset, hence same sum, for every sample)."""
    return lambda rng: rng.permutation(np.asarray(values)).astype(dtype)


def argsorted(*shape, axis=-1):
    """Indices valid along `axis` of an operand of `shape` (a random argsort)."""
    return lambda rng: np.argsort(rng.random(shape), axis=axis).astype(np.int32)


def index_array(*shape, n, lo=0):
    return lambda rng: rng.integers(lo, n, size=shape).astype(np.int32)


def _where(name, **kwargs):
    """fn/ref calling `name` with a traced `where=` mask (the second operand) and static kwargs."""
    jf, nf = getattr(jnp, name), getattr(np, name)
    return dict(fn=lambda x, w: jf(x, where=w, **kwargs), ref=lambda x, w: nf(x, where=w, **kwargs))


CASES: list[Case] = []


def add(*cases):
    CASES.extend(cases)


# ---- reductions ---------------------------------------------------------------------------------

X = distinct(3, 4, 5)
X2 = distinct(4, 5)

# Products of many values stay finite only near 1.
P = uniform(3, 4, 5, lo=0.6, hi=1.4)

for _name in ("sum", "mean", "prod", "max", "min", "amax", "amin", "ptp"):
    _x = P if _name == "prod" else X
    add(
        Case(_name, args(_x), label="all"),
        Case(_name, args(_x, const(1)), label="axis1"),
        Case(_name, args(_x), kwargs={"axis": (0, 2), "keepdims": True}, label="axes-keepdims"),
    )
for _name in ("sum", "prod", "max", "min", "amax", "amin", "ptp"):
    add(Case(_name, args(integers(3, 4, lo=-3, hi=4), const(0)), grad=False, label="int32"))
add(
    Case("mean", args(integers(3, 4), const(0)), grad=False, label="int32"),
    Case("sum", args(booleans(3, 4), const(1)), grad=False, label="bool"),
    Case("sum", args(complexes(3, 4)), kwargs={"axis": 0}, label="complex64"),
    Case("prod", args(complexes(2, 3)), kwargs={"axis": -1}, label="complex64"),
    Case("mean", args(complexes(3, 4)), kwargs={"axis": 1}, label="complex64"),
    Case("sum", args(integers(3, 4, dtype=np.int8)), kwargs={"axis": 1}, grad=False, label="int8-promote"),
    Case(
        "prod",
        args(integers(3, 4, lo=0, hi=3, dtype=np.uint8)),
        kwargs={"axis": 1},
        grad=False,
        label="uint8",
    ),
    Case(
        "sum",
        args(X2, mask(4, 5)),
        fn=lambda x, w: jnp.sum(x, axis=1, where=w),
        ref=lambda x, w: np.sum(x, axis=1, where=w),
        label="where",
    ),
    Case("sum", args(X2), kwargs={"axis": 0, "initial": 2.5}, label="initial"),
    Case(
        "prod",
        args(positive(4, 5), mask(4, 5)),
        fn=lambda x, w: jnp.prod(x, axis=1, where=w, initial=1.5),
        ref=lambda x, w: np.prod(x, axis=1, where=w, initial=1.5),
        label="where-initial",
    ),
    Case(
        "mean",
        args(X2, mask(4, 5)),
        fn=lambda x, w: jnp.mean(x, axis=-1, where=w, keepdims=True),
        ref=lambda x, w: np.mean(x, axis=-1, where=w, keepdims=True),
        label="where",
    ),
    Case(
        "max",
        args(X2, mask(4, 5)),
        fn=lambda x, w: jnp.max(x, axis=1, where=w, initial=-100.0),
        ref=lambda x, w: np.max(x, axis=1, where=w, initial=-100.0),
        label="where-initial",
    ),
    Case(
        "min",
        args(X2, mask(4, 5)),
        fn=lambda x, w: jnp.min(x, axis=0, where=w, initial=100.0),
        ref=lambda x, w: np.min(x, axis=0, where=w, initial=100.0),
        label="where-initial",
    ),
    Case("amax", args(X2), kwargs={"axis": 1, "initial": 0.0}, label="initial"),
    Case(
        "amin",
        args(X2, mask(4, 5)),
        fn=lambda x, w: jnp.amin(x, axis=1, where=w, initial=50.0),
        ref=lambda x, w: np.amin(x, axis=1, where=w, initial=50.0),
        label="where-initial",
    ),
    Case("max", args(X2), kwargs={"axis": 1, "initial": 0.0, "keepdims": True}, label="initial-keepdims"),
)

for _name in ("std", "var"):
    add(
        Case(_name, args(X), label="all"),
        Case(_name, args(X, const(2)), label="axis2"),
        Case(_name, args(X), kwargs={"axis": (0, 1), "ddof": 1, "keepdims": True}, label="ddof-keepdims"),
        Case(_name, args(integers(3, 4)), kwargs={"axis": 0}, grad=False, label="int32"),
        Case(_name, args(complexes(3, 4)), kwargs={"axis": 1}, label="complex64"),
        Case(
            _name,
            args(X2, mask(4, 5)),
            **_where(_name, axis=1),
            label="where",
        ),
    )
add(
    Case(
        "var",
        args(X2),
        kwargs={"axis": 1, "correction": 1},
        ref=lambda x: np.var(x, axis=1, ddof=1),
        label="correction",
    ),
)

for _name in ("all", "any"):
    add(
        Case(_name, args(booleans(3, 4, 5)), grad=False, label="all"),
        Case(_name, args(booleans(3, 4, 5), const(1)), grad=False, label="axis1"),
        Case(
            _name,
            args(booleans(3, 4, 5)),
            kwargs={"axis": (0, 2), "keepdims": True},
            grad=False,
            label="axes-keepdims",
        ),
        Case(_name, args(integers(3, 4, lo=0, hi=2)), kwargs={"axis": 0}, grad=False, label="int32"),
        Case(_name, args(normal(3, 4)), kwargs={"axis": -1}, grad=False, label="float32"),
        Case(
            _name,
            args(booleans(4, 5), mask(4, 5)),
            **_where(_name, axis=1),
            grad=False,
            label="where",
        ),
    )

for _name in ("argmax", "argmin"):
    add(
        Case(_name, args(X), grad=False, label="flat"),
        Case(_name, args(X, const(1)), grad=False, label="axis1"),
        Case(_name, args(X), kwargs={"axis": -1, "keepdims": True}, grad=False, label="keepdims"),
        Case(_name, args(integers(4, 5, lo=-50, hi=50)), kwargs={"axis": 0}, grad=False, label="int32"),
    )

add(
    Case("count_nonzero", args(integers(3, 4, 5, lo=-1, hi=2)), grad=False, label="all"),
    Case(
        "count_nonzero", args(integers(3, 4, 5, lo=-1, hi=2)), kwargs={"axis": 1}, grad=False, label="axis1"
    ),
    Case(
        "count_nonzero",
        args(booleans(3, 4, 5)),
        kwargs={"axis": (0, 2), "keepdims": True},
        grad=False,
        label="bool-keepdims",
    ),
    Case("count_nonzero", args(normal(3, 4)), kwargs={"axis": 0}, grad=False, label="float32"),
)

for _name in ("cumsum", "cumprod"):
    add(
        Case(_name, args(uniform(3, 4, 5, lo=0.5, hi=1.5)), label="flat"),
        Case(_name, args(uniform(3, 4, 5, lo=0.5, hi=1.5), const(1)), label="axis1"),
        Case(_name, args(integers(3, 4, lo=-2, hi=3)), kwargs={"axis": 0}, grad=False, label="int32"),
        Case(_name, args(complexes(3, 4)), kwargs={"axis": -1}, label="complex64"),
        # JAX keeps a small integer dtype here (NumPy widens to the default integer).
        Case(
            _name,
            args(integers(3, 4, lo=-2, hi=3, dtype=np.int8)),
            kwargs={"axis": 1},
            grad=False,
            dtype=np.int8,
            label="int8",
        ),
    )
add(
    Case("cumsum", args(booleans(3, 4)), kwargs={"axis": 1}, grad=False, label="bool"),
    # Python `float`/`complex` as dtype mean JAX's default widths (32-bit here, 64-bit under x64, so
    # check_grads runs at full precision); explicit 32-bit dtypes are in the integer cases.
    Case("cumsum", args(X2), kwargs={"axis": 0, "dtype": float}, label="dtype"),
    Case("cumsum", args(normal(3, 4)), kwargs={"axis": 1, "dtype": bool}, grad=False, label="to-bool"),
    Case("cumprod", args(normal(3, 4)), kwargs={"axis": 0, "dtype": bool}, grad=False, label="to-bool"),
    # cumulative_sum widens small integers (JAX's integer promotion); cumulative_prod does not.
    Case("cumulative_sum", args(integers(3, 4, dtype=np.int8)), kwargs={"axis": 1}, grad=False, label="int8"),
    Case(
        "cumulative_prod",
        args(integers(3, 4, lo=-2, hi=3, dtype=np.int8)),
        kwargs={"axis": 1},
        grad=False,
        dtype=np.int8,
        label="int8",
    ),
)
for _name in ("cumulative_sum", "cumulative_prod"):
    add(
        Case(_name, args(uniform(3, 4, 5, lo=0.5, hi=1.5)), kwargs={"axis": 1}, label="axis1"),
        Case(_name, args(uniform(6, lo=0.5, hi=1.5)), label="1d"),
        Case(
            _name,
            args(uniform(3, 4, lo=0.5, hi=1.5)),
            kwargs={"axis": 0, "include_initial": True},
            label="include_initial",
        ),
        Case(_name, args(integers(3, 4, lo=-2, hi=3)), kwargs={"axis": -1}, grad=False, label="int32"),
        Case(_name, args(complexes(3, 4)), kwargs={"axis": 0}, label="complex64"),
    )

XN = with_nans(3, 4, 5)
XN2 = with_nans(4, 5)
for _name in ("nansum", "nanmean", "nanprod", "nanmax", "nanmin"):
    base = None if _name != "nanprod" else uniform(3, 4, 5, lo=0.7, hi=1.3)
    add(
        Case(_name, args(with_nans(3, 4, 5, base=base)), label="all"),
        Case(_name, args(with_nans(3, 4, 5, base=base), const(2)), label="axis2"),
        Case(
            _name,
            args(with_nans(3, 4, 5, base=base)),
            kwargs={"axis": (0, 1), "keepdims": True},
            label="axes-keepdims",
        ),
        Case(_name, args(integers(3, 4, lo=-3, hi=4)), kwargs={"axis": 0}, grad=False, label="int32"),
    )
add(
    Case(
        "nansum",
        args(XN2, mask(4, 5)),
        fn=lambda x, w: jnp.nansum(x, axis=1, where=w),
        ref=lambda x, w: np.nansum(x, axis=1, where=w),
        label="where",
    ),
    Case(
        "nanmean",
        args(XN2, mask(4, 5)),
        fn=lambda x, w: jnp.nanmean(x, axis=1, where=w),
        ref=lambda x, w: np.nanmean(x, axis=1, where=w),
        label="where",
    ),
    Case("nanmax", args(XN2), kwargs={"axis": 1, "initial": -100.0}, label="initial"),
    Case(
        "nanmin",
        args(XN2, mask(4, 5)),
        fn=lambda x, w: jnp.nanmin(x, axis=1, where=w, initial=100.0),
        ref=lambda x, w: np.nanmin(x, axis=1, where=w, initial=100.0),
        label="where-initial",
    ),
    Case("nansum", args(complexes(3, 4)), kwargs={"axis": 0}, label="complex64"),
)

# ---- manipulation -------------------------------------------------------------------------------

A = normal(3, 4, 5)
A2 = normal(4, 6)

add(
    Case("allclose", args(A, A), grad=False, label="same-shape"),
    Case("allclose", args(normal(3, 4), normal(4)), kwargs={"atol": 1.0}, grad=False, label="broadcast"),
    Case("isclose", args(A2, A2), grad=False, label="float32"),
    Case(
        "isclose",
        args(normal(3, 4), normal(4)),
        kwargs={"rtol": 0.5, "atol": 0.5},
        grad=False,
        label="broadcast",
    ),
    Case(
        "isclose", args(complexes(3, 4), complexes(3, 4)), kwargs={"atol": 1.0}, grad=False, label="complex64"
    ),
    Case(
        "isclose",
        args(with_nans(3, 4), with_nans(3, 4)),
        kwargs={"equal_nan": True, "atol": 3.0},
        grad=False,
        label="equal_nan",
    ),
    Case(
        "array_equal", args(integers(3, 4, lo=0, hi=2), integers(3, 4, lo=0, hi=2)), grad=False, label="int32"
    ),
    Case("array_equal", args(A2, A2), grad=False, label="float32"),
    Case(
        "array_equiv",
        args(integers(3, 4, lo=0, hi=2), integers(4, lo=0, hi=2)),
        grad=False,
        label="broadcast",
    ),
    Case(
        "array_equiv", args(integers(3, 4, lo=0, hi=2), integers(3, 4, lo=0, hi=2)), grad=False, label="int32"
    ),
)
for _name in ("round", "around"):
    add(
        # Piecewise constant: no gradient to check.
        Case(_name, args(normal(3, 4, 5)), grad=False, label="float32"),
        Case(_name, args(normal(3, 4)), kwargs={"decimals": 2}, grad=False, label="decimals"),
        Case(_name, args(integers(3, 4, lo=-50, hi=50)), grad=False, label="int32"),
    )
add(Case("round", args(complexes(3, 4)), kwargs={"decimals": 1}, grad=False, label="complex64"))

for _name in ("split", "array_split"):
    add(
        Case(_name, args(normal(6, 4), const(3)), label="sections"),
        Case(_name, args(normal(3, 7, 2), const([1, 4]), const(1)), label="indices-axis1"),
        Case(_name, args(integers(4, 6), const(2), const(-1)), grad=False, label="int32"),
    )
add(
    Case("array_split", args(normal(7, 3), const(3)), label="uneven"),
    Case("hsplit", args(normal(3, 6), const(3)), label="2d"),
    Case("hsplit", args(normal(6), const([2, 5])), label="1d"),
    Case("vsplit", args(normal(6, 3, 2), const(2)), label="3d"),
    Case("vsplit", args(integers(4, 3), const([1])), grad=False, label="int32"),
    Case("dsplit", args(normal(2, 3, 6), const(3)), label="sections"),
    Case("dsplit", args(normal(2, 3, 6), const([1, 4])), label="indices"),
    Case("dsplit", args(normal(2, 2, 4, 3), const(2)), label="4d"),
)

for _name in ("atleast_1d", "atleast_2d", "atleast_3d"):
    add(
        Case(_name, args(scalar()), label="0d"),
        Case(_name, args(normal(4)), label="1d"),
        Case(_name, args(normal(3, 4)), label="2d"),
        Case(_name, args(scalar(), normal(4), normal(2, 3)), label="several"),
        Case(_name, args(integers(4)), grad=False, label="int32"),
    )

add(
    Case("broadcast_arrays", args(normal(3, 1, 5), normal(4, 1), scalar()), label="three"),
    Case("broadcast_arrays", args(normal(2, 3), integers(3)), label="mixed-dtype"),
    Case("broadcast_to", args(normal(4, 1), const((3, 4, 5))), label="float32"),
    Case("broadcast_to", args(integers(5), const((2, 5))), grad=False, label="int32"),
    Case("expand_dims", args(A2, const(1)), label="axis1"),
    Case("expand_dims", args(A2, const((0, 3))), label="axes"),
    Case("expand_dims", args(integers(3, 4), const(-1)), grad=False, label="int32"),
    Case("flip", args(A), label="all"),
    Case("flip", args(A, const(1)), label="axis1"),
    Case("flip", args(A, const((0, 2))), label="axes"),
    Case("flip", args(integers(3, 4), const(0)), grad=False, label="int32"),
    Case("fliplr", args(A), label="3d"),
    Case("fliplr", args(integers(3, 4)), grad=False, label="int32"),
    Case("flipud", args(A2), label="2d"),
    Case("flipud", args(complexes(3, 4)), label="complex64"),
    Case("matrix_transpose", args(A), label="3d"),
    Case("matrix_transpose", args(integers(3, 4)), grad=False, label="int32"),
    Case("moveaxis", args(A, const(0), const(-1)), label="one"),
    Case("moveaxis", args(A, const((0, 1)), const((2, 0))), label="several"),
    Case("moveaxis", args(normal(2, 3, 4, 5), const(-1), const(1)), label="4d"),
    Case("permute_dims", args(A, const((2, 0, 1))), label="3d"),
    Case(
        "permute_dims",
        args(integers(3, 4)),
        kwargs={"axes": (1, 0)},
        fn=lambda x, **k: jnp.permute_dims(x, **k),
        grad=False,
        label="int32",
    ),
    Case("transpose", args(A), label="default"),
    Case("transpose", args(A, const((1, 2, 0))), label="axes"),
    Case("transpose", args(complexes(3, 4)), label="complex64"),
    Case("swapaxes", args(A, const(0), const(2)), label="3d"),
    Case("swapaxes", args(integers(3, 4), const(0), const(-1)), grad=False, label="int32"),
    Case("ravel", args(A), label="3d"),
    Case("ravel", args(integers(3, 4)), grad=False, label="int32"),
    Case("ravel", args(A2), kwargs={"order": "F"}, label="order-F"),
    Case("reshape", args(A, const((5, 12))), label="2d"),
    Case("reshape", args(A, const((-1, 10))), label="minus1"),
    Case("reshape", args(A2, const((3, 8))), kwargs={"order": "F"}, label="order-F"),
    Case("reshape", args(integers(3, 4), const((2, 2, 3))), grad=False, label="int32"),
    Case("squeeze", args(normal(3, 1, 4, 1)), label="all"),
    Case("squeeze", args(normal(3, 1, 4, 1), const(1)), label="axis"),
    Case("squeeze", args(integers(1, 4)), kwargs={"axis": 0}, grad=False, label="int32"),
    Case("roll", args(A, const(2)), label="flat"),
    Case("roll", args(A, const(-1), const(1)), label="axis1"),
    Case("roll", args(A, const((1, 2)), const((0, 2))), label="axes"),
    Case("roll", args(integers(3, 4), const(1), const(0)), grad=False, label="int32"),
    # A traced shift.
    Case("roll", args(A2, index_array(n=6, lo=-6)), kwargs={"axis": 1}, label="traced-shift"),
    Case("rot90", args(A2), label="default"),
    Case("rot90", args(A, const(3), const((2, 0))), label="k3-axes"),
    Case("rot90", args(integers(3, 4), const(2)), grad=False, label="int32"),
    Case("repeat", args(A2, const(2)), label="flat"),
    Case("repeat", args(A2, const(3), const(1)), label="axis1"),
    Case("repeat", args(integers(3, 4), const(2), const(-1)), grad=False, label="int32"),
    # Traced repeats, with the static total length JAX requires.
    Case(
        "repeat",
        args(A2, permuted([0, 1, 2, 3])),
        kwargs={"axis": 0, "total_repeat_length": 6},
        ref=lambda a, r: np.repeat(a, r, axis=0),
        label="traced-repeats",
    ),
    Case("tile", args(A2, const(2)), label="int-reps"),
    Case("tile", args(A2, const((2, 1, 3))), label="tuple-reps"),
    Case("tile", args(integers(3, 4), const((1, 2))), grad=False, label="int32"),
)


def _seq(jfn, nfn, **kwargs):
    return dict(fn=lambda *xs: jfn(list(xs), **kwargs), ref=lambda *xs: nfn(list(xs), **kwargs))


add(
    Case(
        "concatenate",
        args(normal(2, 3), normal(4, 3)),
        **_seq(jnp.concatenate, np.concatenate),
        label="axis0",
    ),
    Case(
        "concatenate",
        args(normal(2, 3, 4), normal(2, 1, 4), normal(2, 2, 4)),
        **_seq(jnp.concatenate, np.concatenate, axis=1),
        label="axis1-three",
    ),
    Case(
        "concatenate",
        args(normal(2, 3), integers(2, 2)),
        **_seq(jnp.concatenate, np.concatenate, axis=-1),
        label="mixed-dtype",
    ),
    Case(
        "concatenate",
        args(normal(2, 3), normal(3, 4)),
        **_seq(jnp.concatenate, np.concatenate, axis=None),
        label="axis-none",
    ),
    Case(
        "concatenate",
        args(integers(2, 3), integers(2, 3)),
        grad=False,
        **_seq(jnp.concatenate, np.concatenate, dtype=np.float32),
        label="dtype",
    ),
    Case("concat", args(normal(2, 3), normal(4, 3)), **_seq(jnp.concat, np.concat), label="axis0"),
    Case(
        "concat", args(normal(2, 3, 4), normal(2, 3, 1)), **_seq(jnp.concat, np.concat, axis=2), label="axis2"
    ),
    Case("stack", args(normal(3, 4), normal(3, 4), normal(3, 4)), **_seq(jnp.stack, np.stack), label="axis0"),
    Case("stack", args(normal(3, 4), normal(3, 4)), **_seq(jnp.stack, np.stack, axis=-1), label="axis-1"),
    Case(
        "stack", args(normal(3, 4), integers(3, 4)), **_seq(jnp.stack, np.stack, axis=1), label="mixed-dtype"
    ),
    Case("hstack", args(normal(3, 2), normal(3, 4)), **_seq(jnp.hstack, np.hstack), label="2d"),
    Case("hstack", args(normal(3), normal(2)), **_seq(jnp.hstack, np.hstack), label="1d"),
    Case(
        "hstack",
        args(integers(3, 2), integers(3, 1)),
        grad=False,
        **_seq(jnp.hstack, np.hstack),
        label="int32",
    ),
    Case("vstack", args(normal(2, 3), normal(4, 3)), **_seq(jnp.vstack, np.vstack), label="2d"),
    Case("vstack", args(normal(3), normal(3)), **_seq(jnp.vstack, np.vstack), label="1d"),
    Case("vstack", args(scalar(), scalar()), **_seq(jnp.vstack, np.vstack), label="0d"),
    Case("dstack", args(normal(2, 3), normal(2, 3)), **_seq(jnp.dstack, np.dstack), label="2d"),
    Case("dstack", args(normal(2, 3, 1), normal(2, 3, 2)), **_seq(jnp.dstack, np.dstack), label="3d"),
    Case("dstack", args(normal(3), integers(3)), **_seq(jnp.dstack, np.dstack), label="1d-mixed"),
    Case(
        "column_stack",
        args(normal(4), normal(4, 2)),
        **_seq(jnp.column_stack, np.column_stack),
        label="mixed",
    ),
    Case(
        "column_stack",
        args(normal(3), normal(3), normal(3)),
        **_seq(jnp.column_stack, np.column_stack),
        label="1d",
    ),
    Case(
        "column_stack",
        args(integers(3, 2), integers(3)),
        grad=False,
        **_seq(jnp.column_stack, np.column_stack),
        label="int32",
    ),
)

# ---- creation -----------------------------------------------------------------------------------

add(
    Case("array", args(A), label="float32"),
    Case("array", args(integers(3, 4)), grad=False, label="int32"),
    Case("array", args(A2), kwargs={"dtype": float, "ndmin": 4}, label="ndmin"),
    Case(
        "array",
        args(normal(3), normal(3)),
        fn=lambda a, b: jnp.array([a, b]),
        ref=lambda a, b: np.array([a, b]),
        label="nested-list",
    ),
    Case("array", args(integers(3, 4)), kwargs={"dtype": np.float32}, grad=False, label="int-to-float"),
    Case("asarray", args(A), label="float32"),
    Case("asarray", args(complexes(3, 4)), label="complex64"),
    Case("asarray", args(integers(3, 4)), kwargs={"dtype": np.int8}, grad=False, label="int8"),
    Case("asarray", args(A2), kwargs={"dtype": complex}, label="to-complex"),
    Case("astype", args(A2, const(float)), label="float"),
    Case("astype", args(A2, const(complex)), label="to-complex"),
    Case("astype", args(uniform(3, 4, lo=-10, hi=10), const(np.int32)), grad=False, label="to-int32"),
    Case("astype", args(integers(3, 4), const(np.float32)), grad=False, label="int-to-float"),
    Case("astype", args(integers(3, 4, lo=0, hi=2), const(np.bool_)), grad=False, label="to-bool"),
    Case("copy", args(A), label="float32"),
    Case("copy", args(integers(3, 4)), grad=False, label="int32"),
    Case("zeros_like", args(A), label="float32"),
    Case(
        "zeros_like", args(A2), kwargs={"dtype": np.int32, "shape": (2, 3)}, grad=False, label="dtype-shape"
    ),
    Case("ones_like", args(A), label="float32"),
    Case("ones_like", args(integers(3, 4)), grad=False, label="int32"),
    Case("ones_like", args(complexes(3, 4)), label="complex64"),
    # JAX's empty_like gives zeros (NumPy's gives whatever memory holds).
    Case("empty_like", args(A), ref=lambda a: np.zeros_like(a), label="float32"),
    Case(
        "empty_like",
        args(integers(3, 4)),
        kwargs={"dtype": np.float32},
        ref=lambda a: np.zeros(a.shape, np.float32),
        grad=False,
        label="dtype",
    ),
    Case("full_like", args(A, scalar()), label="traced-fill"),
    Case("full_like", args(A2, normal(6)), label="broadcast-fill"),
    Case("full_like", args(integers(3, 4), const(7)), grad=False, label="int32"),
    Case(
        "full_like",
        args(A2, scalar()),
        kwargs={"shape": (2, 3), "dtype": float},
        ref=lambda a, v: np.full((2, 3), v, np.float32),
        label="shape",
    ),
    Case("full", args(const((3, 4)), scalar()), label="scalar-fill"),
    Case("full", args(const((2, 3, 4)), normal(3, 4)), label="broadcast-fill"),
    Case("full", args(const((3, 4)), integers(4)), grad=False, label="int32"),
    Case("full", args(const((3, 4)), scalar()), kwargs={"dtype": complex}, label="dtype"),
    Case("linspace", args(scalar(lo=-2, hi=0), scalar(lo=1, hi=3)), kwargs={"num": 7}, label="scalars"),
    Case("linspace", args(normal(3), normal(3)), kwargs={"num": 5}, label="vectors"),
    Case(
        "linspace",
        args(normal(2, 3), normal(3)),
        kwargs={"num": 4, "axis": -1, "endpoint": False},
        label="axis-endpoint",
    ),
    Case(
        "linspace",
        args(normal(3), normal(3)),
        fn=lambda a, b: jnp.linspace(a, b, 6, retstep=True)[1],
        ref=lambda a, b: np.linspace(a, b, 6, retstep=True)[1],
        label="retstep",
    ),
    Case(
        "linspace",
        args(integers(3), integers(3, lo=10, hi=20)),
        kwargs={"num": 4, "dtype": np.int32},
        grad=False,
        label="int32",
    ),
    Case("geomspace", args(scalar(), scalar(lo=3, hi=5)), kwargs={"num": 6}, label="scalars"),
    Case(
        "geomspace", args(positive(3), uniform(3, lo=3, hi=6)), kwargs={"num": 5, "axis": 1}, label="vectors"
    ),
    Case(
        "geomspace",
        args(positive(2, 3), uniform(3, lo=3, hi=6)),
        kwargs={"num": 4, "endpoint": False},
        label="endpoint",
    ),
    Case("logspace", args(scalar(lo=-1, hi=0), scalar(lo=1, hi=2)), kwargs={"num": 5}, label="scalars"),
    Case("logspace", args(normal(3), normal(3)), kwargs={"num": 4, "base": 2.0, "axis": -1}, label="base2"),
    Case("logspace", args(normal(2, 3), normal(3)), kwargs={"num": 4, "endpoint": False}, label="endpoint"),
)

# ---- products (products.py) --------------------------------------------------------------------

add(
    Case("dot", args(normal(3, 4), normal(4, 5)), label="matrix"),
    Case("dot", args(normal(4), normal(4)), label="vectors"),
    Case("dot", args(normal(2, 3, 4), normal(5, 4, 2)), label="nd"),
    Case("dot", args(normal(3, 4), scalar()), label="scalar"),
    Case("dot", args(integers(3, 4), integers(4, 2)), grad=False, label="int32"),
    Case("dot", args(normal(3, 4), integers(4, 2)), label="mixed-dtype"),
    Case("dot", args(complexes(3, 4), complexes(4)), label="complex64"),
    Case("matmul", args(normal(3, 4), normal(4, 5)), label="matrix"),
    Case("matmul", args(normal(2, 3, 4), normal(4, 5)), label="batched"),
    Case("matmul", args(normal(2, 1, 3, 4), normal(3, 4, 2)), label="broadcast"),
    Case("matmul", args(normal(4), normal(2, 4, 3)), label="vector-matrix"),
    Case("matmul", args(normal(2, 3, 4), normal(4)), label="matrix-vector"),
    Case("matmul", args(integers(3, 4), integers(4, 2)), grad=False, label="int32"),
    Case("matmul", args(complexes(3, 4), complexes(4, 2)), label="complex64"),
    Case("inner", args(normal(3, 4), normal(5, 4)), label="2d"),
    Case("inner", args(normal(2, 3, 4), normal(4)), label="3d-1d"),
    Case("inner", args(integers(3, 4), integers(2, 4)), grad=False, label="int32"),
    Case("outer", args(normal(3), normal(4)), label="vectors"),
    Case("outer", args(normal(2, 3), normal(4)), label="ravel"),
    Case("outer", args(integers(3), integers(4)), grad=False, label="int32"),
    Case("kron", args(normal(2, 3), normal(3, 2)), label="2d"),
    Case("kron", args(normal(2, 2, 2), normal(3, 2)), label="3d-2d"),
    Case("kron", args(integers(2, 3), integers(2, 2)), grad=False, label="int32"),
    Case("tensordot", args(normal(3, 4, 5), normal(4, 5, 2)), label="axes2"),
    Case("tensordot", args(normal(3, 4, 5), normal(5, 2)), kwargs={"axes": 1}, label="axes1"),
    Case("tensordot", args(normal(3, 4, 5), normal(4, 2, 3), const(([0, 1], [2, 0]))), label="pairs"),
    Case("tensordot", args(normal(3, 4), normal(2, 5)), kwargs={"axes": 0}, label="outer"),
    Case("tensordot", args(integers(3, 4), integers(4, 2)), kwargs={"axes": 1}, grad=False, label="int32"),
    Case("vdot", args(normal(3, 4), normal(12)), label="ravel"),
    Case("vdot", args(complexes(3, 4), complexes(3, 4)), label="complex64"),
    Case("vdot", args(integers(5), integers(5)), grad=False, label="int32"),
    Case("vecdot", args(normal(3, 4), normal(3, 4)), label="2d"),
    Case("vecdot", args(normal(2, 3, 4), normal(4)), label="broadcast"),
    Case(
        "vecdot",
        args(normal(3, 4), normal(5, 3, 1)),
        kwargs={"axis": -2},
        fn=lambda a, b, **k: jnp.vecdot(a, b, **k),
        ref=lambda a, b: np.vecdot(a, b, axis=-2),
        label="axis",
    ),
    Case("vecdot", args(complexes(3, 4), complexes(3, 4)), label="complex64"),
    Case("vecdot", args(integers(3, 4), integers(3, 4)), grad=False, label="int32"),
    Case("einsum", args(const("ij,jk->ik"), normal(3, 4), normal(4, 5)), label="matmul"),
    Case("einsum", args(const("bij,bjk->bik"), normal(2, 3, 4), normal(2, 4, 5)), label="batched"),
    Case("einsum", args(const("ii->i"), normal(4, 4)), label="diagonal"),
    Case("einsum", args(const("ii"), normal(4, 4)), label="trace"),
    Case("einsum", args(const("ijk->kj"), normal(2, 3, 4)), label="sum-transpose"),
    Case("einsum", args(const("i,j,k->ijk"), normal(2), normal(3), normal(4)), label="three-outer"),
    Case("einsum", args(const("ij,jk,kl->il"), normal(2, 3), normal(3, 4), normal(4, 2)), label="chain"),
    Case("einsum", args(const("...ij,...jk"), normal(2, 3, 4), normal(4, 5)), label="ellipsis"),
    Case("einsum", args(const("ij,ij->"), integers(3, 4), integers(3, 4)), grad=False, label="int32"),
    Case("einsum", args(const("ij,j->i"), complexes(3, 4), complexes(4)), label="complex64"),
)

# ---- indexing -----------------------------------------------------------------------------------

add(
    Case("take", args(A2, index_array(5, n=24)), label="flat"),
    Case("take", args(A, index_array(2, 3, n=4), const(1)), label="axis1"),
    Case(
        "take",
        args(A2, index_array(3, n=6, lo=-6)),
        kwargs={"axis": -1, "mode": "wrap"},
        ref=lambda a, i: np.take(a, i, axis=-1, mode="wrap"),
        label="negative-wrap",
    ),
    Case("take", args(A2, index_array(3, n=9)), kwargs={"axis": 1, "mode": "clip"}, label="clip"),
    # Out-of-bounds indices: JAX's default mode "fill" gives NaN for inexact dtypes (so no gradient
    # check: the output holds NaNs), or `fill_value`.
    Case(
        "take",
        args(A2, permuted([0, 3, 7, 9])),
        kwargs={"axis": 1},
        ref=lambda a, i: np.where(i < a.shape[1], np.take(a, np.minimum(i, a.shape[1] - 1), axis=1), np.nan),
        grad=False,
        label="fill-nan",
    ),
    Case(
        "take",
        args(A2, permuted([0, 3, 7, 9])),
        kwargs={"axis": 1, "fill_value": -1.5},
        ref=lambda a, i: np.where(i < a.shape[1], np.take(a, np.minimum(i, a.shape[1] - 1), axis=1), -1.5),
        label="fill-value",
    ),
    Case("take", args(integers(4, 6), index_array(2, 2, n=4), const(0)), grad=False, label="int32"),
    Case("take_along_axis", args(A2, argsorted(4, 6), const(1)), label="argsort"),
    Case("take_along_axis", args(A, argsorted(3, 4, 5, axis=0), const(0)), label="axis0"),
    Case("take_along_axis", args(A, index_array(3, 1, 5, n=4), const(1)), label="broadcast"),
    Case(
        "take_along_axis",
        args(A2, index_array(7, n=24)),
        kwargs={"axis": None},
        fn=lambda a, i, axis: jnp.take_along_axis(a, i, axis=axis),
        ref=lambda a, i: np.take_along_axis(a, i, None),
        label="axis-none",
    ),
    Case("take_along_axis", args(integers(4, 6), argsorted(4, 6), const(-1)), grad=False, label="int32"),
)


def _put_along_axis_ref(axis):
    def ref(arr, idx, values):
        out = arr.copy()
        np.put_along_axis(out, idx, values, axis)
        return out

    return ref


add(
    # JAX's put_along_axis is functional (inplace=False); NumPy's writes into its argument.
    Case(
        "put_along_axis",
        args(A2, index_array(4, 1, n=6), normal(4, 1)),
        fn=lambda a, i, v: jnp.put_along_axis(a, i, v, 1, inplace=False),
        ref=_put_along_axis_ref(1),
        label="axis1",
    ),
    # Distinct indices along the axis (two of four positions per line), so no write collides.
    Case(
        "put_along_axis",
        args(
            A, lambda rng: np.argsort(rng.random((3, 4, 5)), axis=1)[:, :2].astype(np.int32), normal(3, 2, 5)
        ),
        fn=lambda a, i, v: jnp.put_along_axis(a, i, v, 1, inplace=False),
        ref=_put_along_axis_ref(1),
        label="3d-unique",
    ),
    Case(
        "put_along_axis",
        args(A2, index_array(4, 1, n=6), scalar()),
        fn=lambda a, i, v: jnp.put_along_axis(a, i, v, -1, inplace=False),
        ref=_put_along_axis_ref(-1),
        label="scalar-value",
    ),
    Case(
        "put_along_axis",
        args(integers(4, 6), index_array(1, 6, n=4), integers(1, 6)),
        fn=lambda a, i, v: jnp.put_along_axis(a, i, v, 0, inplace=False),
        ref=_put_along_axis_ref(0),
        grad=False,
        label="int32",
    ),
)

# ---- not in the matrix --------------------------------------------------------------------------

EXEMPT = {
    "arange": "no array operand: start/stop/step fix the output shape, so they must be concrete Python scalars",
    "empty": "no array operand: creation from a static shape only",
    "eye": "no array operand: creation from static sizes only",
    "identity": "no array operand: creation from a static size only",
    "ones": "no array operand: creation from a static shape only",
    "zeros": "no array operand: creation from a static shape only",
    "broadcast_shapes": "no array operand: takes and returns static shape tuples",
    "shape": "returns a static Python tuple of ints, not an array",
    "ndim": "returns a static Python int, not an array",
    "size": "returns a static Python int, not an array",
    "einsum_path": "returns a static contraction path and a report string, not arrays",
}

KNOWN_GAPS: dict[str, str] = {}
