"""Transformation-matrix cases for the diagonal, array-editing and index-grid modules of
morphax/_src/numpy/ (diagonals, triangles, index grids, append/insert/delete, pad in every mode...),
the polynomial, window, vectorize, bit-packing and host-utility modules (vectorize/frompyfunc
included) and the dtype/printing helpers."""

from __future__ import annotations

import pathlib
import sys

import numpy as np

import morphax.numpy as jnp

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from fn_matrix import Case, args, booleans, complexes, const, integers, normal, positive  # noqa: E402


def distinct(*shape, dtype=np.float32):
    """Well-separated distinct values (no ties for max/min/median/sort-based functions)."""
    size = int(np.prod(shape))

    def build(rng):
        v = rng.permutation(size) + rng.uniform(0.1, 0.4, size)
        return (v - size / 2).reshape(shape).astype(dtype)

    return build


def perm(n, k, offset=0, dtype=np.int32):
    """k distinct integers from range(n) (shifted by a multiple of `offset` per entry)."""

    def build(rng):
        idx = rng.permutation(n)[:k]
        if offset:
            idx = idx + offset * rng.integers(-1, 2, k)
        return idx.astype(dtype)

    return build


def uint8s(*shape):
    return integers(*shape, lo=0, hi=256, dtype=np.uint8)


def _copy_then(fn):
    """NumPy's in-place functions (put, place, fill_diagonal) as JAX's copying ones."""

    def ref(a, *rest):
        b = np.array(a, copy=True)
        fn(b, *rest)
        return b

    return ref


# ---- diagonals, array editing, index grids -------------------------------------------------------------------------

CONSTRUCTION = [
    Case("append", args(normal(3, 4), normal(2, 4))),
    Case("append", args(normal(3, 4), normal(2, 4), const(0)), label="axis0"),
    Case("append", args(integers(2, 3), integers(2, 2), const(1)), grad=False, label="int-axis1"),
    Case(
        "apply_along_axis",
        args(normal(3, 4, 5)),
        fn=lambda x: jnp.apply_along_axis(lambda v: (v * v).sum(), 1, x),
        ref=lambda x: np.apply_along_axis(lambda v: (v * v).sum(), 1, x),
    ),
    Case(
        "apply_along_axis",
        args(normal(3, 4)),
        fn=lambda x: jnp.apply_along_axis(lambda v: v[::-1] * v[0], 0, x),
        ref=lambda x: np.apply_along_axis(lambda v: v[::-1] * v[0], 0, x),
        label="vector-out",
    ),
    Case(
        "apply_over_axes",
        args(normal(2, 3, 4)),
        fn=lambda x: jnp.apply_over_axes(jnp.sum, x, [0, 2]),
        ref=lambda x: np.apply_over_axes(np.sum, x, [0, 2]),
    ),
    Case(
        "apply_over_axes",
        args(normal(4, 5)),
        fn=lambda x: jnp.apply_over_axes(jnp.mean, x, 1),
        ref=lambda x: np.apply_over_axes(np.mean, x, 1),
        label="2d",
    ),
    Case(
        "block",
        args(normal(2, 3), normal(2, 1), normal(1, 3), normal(1, 1)),
        fn=lambda a, b, c, d: jnp.block([[a, b], [c, d]]),
        ref=lambda a, b, c, d: np.block([[a, b], [c, d]]),
    ),
    Case(
        "block",
        args(integers(2, 2), integers(2, 3)),
        fn=lambda a, b: jnp.block([a, b]),
        ref=lambda a, b: np.block([a, b]),
        grad=False,
        label="int",
    ),
    Case("choose", args(integers(3, 4, lo=0, hi=3), normal(3, 3, 4)), kwargs={"mode": "clip"}),
    Case(
        "choose",
        args(integers(3, 4, lo=-4, hi=7), normal(3, 1, 4)),
        kwargs={"mode": "wrap"},
        label="wrap-broadcast",
    ),
    Case(
        "compress",
        args(normal(4, 3)),
        fn=lambda a: jnp.compress(np.array([True, False, True, True]), a, axis=0),
        ref=lambda a: np.compress(np.array([True, False, True, True]), a, axis=0),
        label="static-condition",
    ),
    Case(
        "compress",
        args(booleans(5), normal(3, 5)),
        kwargs={"axis": 1, "size": 3, "fill_value": 0},
        # JAX's size= form: the first `size` selected slices, padded with fill_value.
        ref=lambda c, a: np.concatenate([np.compress(c, a, axis=1), np.zeros((3, 5), a.dtype)], axis=1)[
            :, :3
        ],
        label="size",
    ),
    Case("delete", args(normal(3, 4), const(1), const(1))),
    Case("delete", args(normal(3, 4), const((0, 2)), const(0)), label="array-obj"),
    Case("delete", args(integers(3, 4), const(slice(None, None, 2))), grad=False, label="int-slice"),
    Case("delete", args(normal(2, 3, 5), const((0, 3)), const(2)), label="3d-axis2"),
    Case("diag", args(normal(4)), kwargs={"k": 1}),
    Case("diag", args(normal(3, 5)), kwargs={"k": -1}, label="extract"),
    Case("diag", args(integers(3, 3)), grad=False, label="int"),
    Case(
        "diag_indices_from",
        args(normal(3, 3, 3)),
        ref=lambda a: tuple(i.astype(np.int32) for i in np.diag_indices_from(a)),
        grad=False,
    ),
    Case(
        "diag_indices_from",
        args(integers(4, 4)),
        ref=lambda a: tuple(i.astype(np.int32) for i in np.diag_indices_from(a)),
        grad=False,
        label="2d",
    ),
    Case("diagflat", args(normal(2, 3)), kwargs={"k": 1}),
    Case("diagflat", args(complexes(2, 2)), kwargs={"k": -2}, label="complex"),
    Case("diagonal", args(normal(3, 4, 5)), kwargs={"offset": 1, "axis1": 2, "axis2": 0}),
    Case("diagonal", args(integers(4, 3)), kwargs={"offset": -1}, grad=False, label="int"),
    Case(
        "fill_diagonal",
        args(normal(4, 5), normal(3)),
        fn=lambda a, v: jnp.fill_diagonal(a, v, inplace=False),
        ref=_copy_then(np.fill_diagonal),
    ),
    Case(
        "fill_diagonal",
        args(integers(3, 3, 3), integers()),
        fn=lambda a, v: jnp.fill_diagonal(a, v, inplace=False),
        ref=_copy_then(np.fill_diagonal),
        grad=False,
        label="int-3d",
    ),
    Case(
        "fromfunction",
        args(normal()),
        fn=lambda x: jnp.fromfunction(lambda i, j: i * x + j, (3, 4), dtype=jnp.float32),
        ref=lambda x: np.fromfunction(lambda i, j: i * x + j, (3, 4), dtype=np.float32),
    ),
    Case(
        "fromfunction",
        args(normal(4)),
        fn=lambda x: jnp.fromfunction(lambda i, j, k: i * x + j - k, (2, 3, 4), dtype=jnp.float32),
        ref=lambda x: np.fromfunction(lambda i, j, k: i * x + j - k, (2, 3, 4), dtype=np.float32),
        label="3d",
    ),
    Case("insert", args(normal(3, 4), const(1), normal(4), const(0))),
    Case("insert", args(normal(3, 4), const((0, 2, 2)), normal(3, 3), const(1)), label="multi-axis1"),
    Case("insert", args(integers(2, 3), const(4), integers(2)), grad=False, label="int-flat"),
    Case("ix_", args(normal(3), normal(4), normal(2))),
    Case("ix_", args(integers(3), integers(2)), grad=False, label="int"),
    Case("matvec", args(normal(2, 3, 4), normal(4)), ref=lambda a, b: np.matvec(a, b)),
    Case("matvec", args(complexes(3, 2), complexes(4, 1, 2)), label="complex"),
    Case("meshgrid", args(normal(3), normal(4))),
    Case(
        "meshgrid",
        args(normal(3), normal(2), normal(4)),
        kwargs={"indexing": "ij", "sparse": True},
        label="ij-sparse",
    ),
    Case(
        "place",
        args(normal(3, 4), normal(3)),
        fn=lambda a, v: jnp.place(a, np.arange(12).reshape(3, 4) % 3 == 1, v, inplace=False),
        ref=_copy_then(lambda b, v: np.place(b, np.arange(12).reshape(3, 4) % 3 == 1, v)),
    ),
    Case(
        "place",
        args(normal(2, 3, 2), normal(2)),
        fn=lambda a, v: jnp.place(a, np.arange(12).reshape(2, 3, 2) % 4 < 2, v, inplace=False),
        ref=_copy_then(lambda b, v: np.place(b, np.arange(12).reshape(2, 3, 2) % 4 < 2, v)),
        label="3d-cycled",
    ),
    Case(
        "put",
        args(normal(3, 4), perm(12, 5), normal(5)),
        fn=lambda a, i, v: jnp.put(a, i, v, inplace=False),
        ref=_copy_then(np.put),
    ),
    Case(
        "put",
        args(normal(3, 4), perm(12, 4, offset=12), normal(2)),
        fn=lambda a, i, v: jnp.put(a, i, v, mode="wrap", inplace=False),
        ref=_copy_then(lambda b, i, v: np.put(b, i, v, mode="wrap")),
        label="wrap-cycled",
    ),
    Case(
        "put",
        args(integers(2, 3), const([0, 9, -3]), integers(3)),
        fn=lambda a, i, v: jnp.put(a, i, v, mode="clip", inplace=False),
        ref=_copy_then(lambda b, i, v: np.put(b, i, v, mode="clip")),
        grad=False,
        label="clip-int",
    ),
    Case(
        "ravel_multi_index",
        args(integers(3, 2, lo=-2, hi=6), integers(3, 2, lo=0, hi=4)),
        fn=lambda i, j: jnp.ravel_multi_index((i, j), (3, 4), mode="clip"),
        ref=lambda i, j: np.ravel_multi_index((i, j), (3, 4), mode="clip"),
        grad=False,
    ),
    Case(
        "ravel_multi_index",
        args(integers(5, lo=-9, hi=9), integers(5, lo=-9, hi=9)),
        fn=lambda i, j: jnp.ravel_multi_index((i, j), (3, 4), mode="wrap", order="F"),
        ref=lambda i, j: np.ravel_multi_index((i, j), (3, 4), mode="wrap", order="F"),
        grad=False,
        label="wrap-F",
    ),
    Case("resize", args(normal(3, 4), const((5, 3)))),
    Case("resize", args(integers(2, 3), const(4)), grad=False, label="int-shrink"),
    Case("rollaxis", args(normal(2, 3, 4, 5), const(3), const(1))),
    Case("rollaxis", args(integers(2, 3, 4), const(0), const(3)), grad=False, label="int-forward"),
    Case("trace", args(normal(3, 4, 5)), kwargs={"offset": 1, "axis1": 1, "axis2": 2}),
    Case("trace", args(integers(4, 4)), grad=False, label="int"),
    Case("trace", args(complexes(3, 3)), kwargs={"offset": -1}, label="complex"),
    Case("tril", args(normal(2, 4, 5)), kwargs={"k": -1}),
    Case("tril", args(integers(3, 3)), kwargs={"k": 1}, grad=False, label="int"),
    Case(
        "tril_indices_from",
        args(normal(4, 5)),
        kwargs={"k": 1},
        ref=lambda a, k=1: tuple(i.astype(np.int32) for i in np.tril_indices_from(a, k)),
        grad=False,
    ),
    Case(
        "tril_indices_from",
        args(integers(3, 3)),
        ref=lambda a: tuple(i.astype(np.int32) for i in np.tril_indices_from(a)),
        grad=False,
        label="square",
    ),
    Case("triu", args(normal(2, 4, 5)), kwargs={"k": 1}),
    Case("triu", args(complexes(3, 4)), label="complex"),
    Case(
        "triu_indices_from",
        args(normal(5, 4)),
        kwargs={"k": -1},
        ref=lambda a, k=-1: tuple(i.astype(np.int32) for i in np.triu_indices_from(a, k)),
        grad=False,
    ),
    Case(
        "triu_indices_from",
        args(integers(3, 6)),
        kwargs={"k": 2},
        ref=lambda a, k=2: tuple(i.astype(np.int32) for i in np.triu_indices_from(a, k)),
        grad=False,
        label="wide",
    ),
    Case("unravel_index", args(integers(3, 4, lo=0, hi=60), const((3, 4, 5))), grad=False),
    Case(
        "unravel_index",
        args(integers(6, lo=-20, hi=30)),
        fn=lambda i: jnp.unravel_index(i, (4, 5)),
        # JAX clips out-of-range flat indices (negative ones count from the end).
        ref=lambda i: np.unravel_index(
            np.where(np.clip(i, -20, 19) < 0, np.clip(i, -20, 19) + 20, np.clip(i, -20, 19)), (4, 5)
        ),
        grad=False,
        label="clip",
    ),
    Case("unstack", args(normal(3, 4, 5)), kwargs={"axis": 1}),
    Case("unstack", args(integers(2, 3)), grad=False, label="int"),
    Case("vander", args(normal(4), const(3), const(True))),
    Case("vander", args(integers(3, lo=-3, hi=4)), grad=False, label="int"),
    Case("vecmat", args(normal(2, 4), normal(4, 3)), ref=lambda a, b: np.vecmat(a, b)),
    Case("vecmat", args(complexes(3), complexes(2, 3, 4)), label="complex"),
]

_PAD_W = ((1, 2), (2, 0))

PAD = [
    Case("pad", args(normal(3, 4), const(_PAD_W)), label="constant-default"),
    Case(
        "pad",
        args(normal(3, 4), const(_PAD_W)),
        kwargs={"mode": "constant", "constant_values": ((1.5, -2.0), (3.0, 0.25))},
        label="constant-values",
    ),
    Case(
        "pad",
        args(normal(3, 4), normal()),
        fn=lambda a, c: jnp.pad(a, _PAD_W, constant_values=c),
        ref=lambda a, c: np.pad(a, _PAD_W, constant_values=c),
        label="constant-traced-value",
    ),
    Case(
        "pad", args(integers(2, 3), const(2)), kwargs={"constant_values": 7}, grad=False, label="constant-int"
    ),
    Case("pad", args(normal(3, 4), const(_PAD_W)), kwargs={"mode": "edge"}, label="edge"),
    Case("pad", args(normal(3, 4), const(((3, 2), (1, 5)))), kwargs={"mode": "reflect"}, label="reflect"),
    Case(
        "pad",
        args(normal(3, 4), const(((3, 2), (1, 5)))),
        kwargs={"mode": "reflect", "reflect_type": "odd"},
        label="reflect-odd",
    ),
    Case("pad", args(normal(3, 4), const(((3, 2), (1, 5)))), kwargs={"mode": "symmetric"}, label="symmetric"),
    Case(
        "pad",
        args(normal(3, 4), const(((3, 2), (1, 5)))),
        kwargs={"mode": "symmetric", "reflect_type": "odd"},
        label="symmetric-odd",
    ),
    Case("pad", args(normal(3, 4), const(((4, 2), (1, 6)))), kwargs={"mode": "wrap"}, label="wrap"),
    Case(
        "pad",
        args(normal(3, 4), const(_PAD_W)),
        kwargs={"mode": "linear_ramp", "end_values": ((1.0, -1.0), (0.5, 2.0))},
        label="linear_ramp",
    ),
    Case(
        "pad",
        args(distinct(3, 4), const(_PAD_W)),
        kwargs={"mode": "maximum", "stat_length": 2},
        label="maximum",
    ),
    Case("pad", args(distinct(3, 4), const(_PAD_W)), kwargs={"mode": "minimum"}, label="minimum"),
    Case("pad", args(normal(3, 4), const(_PAD_W)), kwargs={"mode": "mean"}, label="mean"),
    Case(
        "pad",
        args(integers(4, 5), const(_PAD_W)),
        kwargs={"mode": "mean", "stat_length": ((2, 3), (1, 4))},
        grad=False,
        label="mean-int",
    ),
    Case(
        "pad",
        args(distinct(4, 5), const(_PAD_W)),
        kwargs={"mode": "median", "stat_length": 3},
        label="median",
    ),
    Case(
        "pad",
        args(normal(3, 4), const(_PAD_W)),
        kwargs={"mode": "empty"},
        # 'empty' leaves the padding unspecified; JAX (and morphax) fill it with zeros.
        ref=lambda a, w: np.pad(a, w),
        label="empty",
    ),
]

# ---- polynomials, windows, vectorize, bit packing -------------------------------------------------------------------------------


def _polydiv_ref(u, v):
    # JAX keeps the remainder at u's length (leading entries ~0); NumPy trims them.
    q, r = np.polydiv(u.astype(np.float64), v.astype(np.float64))
    return q, np.concatenate([np.zeros(len(u) - len(r)), r])


def _scaled_sum(a, b):
    return a * 2 + b


def _dot_last(a, b):
    return (a * b).sum(-1)


MISC = [
    Case("kaiser", args(const(7), positive()), ref=lambda m, b: np.kaiser(m, b)),
    Case(
        "kaiser",
        args(const(12), lambda rng: np.asarray(rng.uniform(3.0, 6.0), np.float32)),
        ref=lambda m, b: np.kaiser(m, b),
        label="long",
    ),
    Case("packbits", args(booleans(3, 10)), kwargs={"axis": 1}, grad=False),
    Case(
        "packbits",
        args(integers(2, 3, 4, lo=0, hi=3)),
        kwargs={"bitorder": "little"},
        grad=False,
        label="flat",
    ),
    Case("unpackbits", args(uint8s(3, 2)), kwargs={"axis": 1}, grad=False),
    Case(
        "unpackbits",
        args(uint8s(2, 3)),
        kwargs={"axis": 0, "count": 11, "bitorder": "little"},
        grad=False,
        label="count",
    ),
    Case("poly", args(normal(4))),
    Case(
        "poly",
        args(normal(3, 3)),
        # JAX leaves the coefficients of a matrix's characteristic polynomial complex.
        ref=lambda a: np.poly(a).astype(np.complex128),
        # eigvals of a general matrix: check the values only (no JVP of a complex eig here).
        grad=False,
        rtol=1e-4,
        atol=1e-4,
        label="matrix",
    ),
    Case("polyadd", args(normal(4), normal(2))),
    Case("polyadd", args(integers(2), integers(3)), grad=False, label="int"),
    Case("polysub", args(normal(2), normal(5))),
    Case("polysub", args(complexes(3), normal(3)), label="complex"),
    Case("polymul", args(normal(3), normal(4))),
    Case("polymul", args(integers(2), integers(3)), grad=False, dtype=np.float32, label="int"),
    Case("polyder", args(normal(5), const(2))),
    Case("polyder", args(integers(4)), grad=False, dtype=np.float32, label="int"),
    Case("polyint", args(normal(4), const(2))),
    Case(
        "polyint",
        args(normal(3), normal(2)),
        fn=lambda p, k: jnp.polyint(p, 2, k),
        ref=lambda p, k: np.polyint(p, 2, k),
        label="traced-k",
    ),
    Case(
        "polydiv",
        args(normal(5), lambda rng: np.array([1.5, *rng.standard_normal(2)], np.float32)),
        ref=_polydiv_ref,
        atol=1e-4,
        rtol=1e-4,
    ),
    Case(
        "polydiv",
        args(normal(7), lambda rng: np.array([-2.0, *rng.standard_normal(3)], np.float32)),
        ref=_polydiv_ref,
        atol=1e-4,
        rtol=1e-4,
        label="deg6-by-deg3",
    ),
    Case("polyval", args(normal(4), normal(3, 5))),
    Case("polyval", args(integers(3), integers(2, 2)), grad=False, label="int"),
    Case(
        "polyfit",
        args(lambda rng: (np.arange(6) + rng.uniform(-0.3, 0.3, 6)).astype(np.float32), normal(6), const(2)),
        rtol=1e-3,
        atol=1e-3,
    ),
    Case(
        "polyfit",
        args(
            lambda rng: (np.arange(7) + rng.uniform(-0.3, 0.3, 7)).astype(np.float32), normal(7, 2), const(1)
        ),
        rtol=1e-3,
        atol=1e-3,
        label="2d-y",
    ),
    Case(
        "roots",
        args(lambda rng: np.array([1.0, *rng.uniform(-3, 3, 3)], np.float32)),
        # strip_zeros=True needs concrete coefficients (the output length depends on them).
        kwargs={"strip_zeros": False},
        ref=lambda p: np.roots(p),
        grad=False,
        rtol=1e-3,
        atol=1e-3,
    ),
    Case(
        "roots",
        args(lambda rng: np.array([2.0, *rng.uniform(-3, 3, 5)], np.float32)),
        kwargs={"strip_zeros": False},
        ref=lambda p: np.roots(p),
        grad=False,
        rtol=1e-3,
        atol=1e-3,
        label="deg5",
    ),
    Case(
        "vectorize",
        args(normal(3, 1), normal(4)),
        fn=lambda x, y: jnp.vectorize(lambda a, b: a * jnp.sin(b))(x, y),
        ref=lambda x, y: x * np.sin(y),
    ),
    Case(
        "vectorize",
        args(normal(2, 3, 4), normal(4)),
        fn=lambda x, y: jnp.vectorize(_dot_last, signature="(n),(n)->()")(x, y),
        ref=lambda x, y: (x * y).sum(-1),
        label="signature",
    ),
    Case(
        "vectorize",
        args(normal(3, 4)),
        fn=lambda x: jnp.vectorize(lambda v: (v[::-1], v.sum()), signature="(n)->(n),()")(x),
        ref=lambda x: (x[..., ::-1], x.sum(-1)),
        label="signature-two-outputs",
    ),
    Case(
        "vectorize",
        args(normal(3, 4), const(3)),
        fn=lambda x, p: jnp.vectorize(lambda a, n: a**n, excluded={1})(x, p),
        ref=lambda x, p: x**p,
        label="excluded-position",
    ),
    Case(
        "vectorize",
        args(normal(2, 3), normal(3)),
        fn=lambda x, y: jnp.vectorize(_scaled_sum, excluded={"b"})(x, b=y),
        # `b` excluded: passed whole to each call (its shape (3,) broadcasts inside).
        ref=lambda x, y: x[..., None] * 2 + y,
        label="excluded-name",
    ),
    Case(
        "frompyfunc",
        args(normal(3, 1), normal(4)),
        fn=lambda x, y: jnp.frompyfunc(lambda a, b: a * b + a, 2, 1)(x, y),
        ref=lambda x, y: x * y + x,
    ),
    Case(
        "frompyfunc",
        args(normal(3, 4)),
        fn=lambda x: jnp.frompyfunc(_scaled_sum, 2, 1, identity=0).reduce(x, axis=1),
        ref=lambda x: np.frompyfunc(_scaled_sum, 2, 1, identity=0).reduce(x, axis=1).astype(np.float32),
        label="reduce",
    ),
    Case(
        "frompyfunc",
        args(normal(3, 4)),
        fn=lambda x: jnp.frompyfunc(_scaled_sum, 2, 1).accumulate(x, axis=0),
        ref=lambda x: np.frompyfunc(_scaled_sum, 2, 1).accumulate(x, axis=0).astype(np.float32),
        label="accumulate",
    ),
    Case(
        "frompyfunc",
        args(normal(3), normal(2, 2)),
        fn=lambda x, y: jnp.frompyfunc(_scaled_sum, 2, 1).outer(x, y),
        ref=lambda x, y: np.frompyfunc(_scaled_sum, 2, 1).outer(x, y).astype(np.float32),
        label="outer",
    ),
    Case(
        "frompyfunc",
        args(normal(6), integers(5, lo=0, hi=6), normal(5)),
        fn=lambda a, i, b: jnp.frompyfunc(_scaled_sum, 2, 1).at(a, i, b, inplace=False),
        ref=_copy_then(lambda x, i, b: np.frompyfunc(_scaled_sum, 2, 1).at(x, i, b)),
        label="at",
    ),
    Case(
        "frompyfunc",
        args(normal(7, 3)),
        fn=lambda a: jnp.frompyfunc(_scaled_sum, 2, 1).reduceat(a, np.array([0, 3, 3, 1, 5])),
        ref=lambda a: np.frompyfunc(_scaled_sum, 2, 1).reduceat(a, [0, 3, 3, 1, 5]).astype(np.float32),
        label="reduceat",
    ),
]

CASES = CONSTRUCTION + PAD + MISC

_SHAPE_ONLY = "creation from static shape/size arguments only (no array operand)"
_DTYPE_ONLY = "takes and returns dtypes/type metadata (no array data; the answer is static)"

EXEMPT = {
    "diag_indices": _SHAPE_ONLY,
    "indices": _SHAPE_ONLY,
    "tri": _SHAPE_ONLY,
    "tril_indices": _SHAPE_ONLY,
    "triu_indices": _SHAPE_ONLY,
    "mask_indices": _SHAPE_ONLY + " (the mask function is applied to ones((n, n)))",
    "bartlett": _SHAPE_ONLY + " (window length M is static)",
    "blackman": _SHAPE_ONLY + " (window length M is static)",
    "hamming": _SHAPE_ONLY + " (window length M is static)",
    "hanning": _SHAPE_ONLY + " (window length M is static)",
    "trim_zeros": "output length depends on the values and JAX has no size= form (concrete input only)",
    "array_repr": "printing: returns a string",
    "array_str": "printing: returns a string",
    "get_printoptions": "printing options (host state, no array)",
    "set_printoptions": "printing options (host state, no array)",
    "printoptions": "printing options context manager (host state, no array)",
    "save": "host I/O: writes a file",
    "savez": "host I/O: writes a file",
    "load": "host I/O: reads a file",
    "frombuffer": "host I/O: builds an array from a bytes buffer",
    "fromfile": "host I/O: builds an array from a file",
    "fromiter": "host I/O: builds an array from a Python iterable",
    "fromstring": "host I/O: parses text",
    "from_dlpack": "host interop: imports a DLPack capsule",
    "can_cast": _DTYPE_ONLY,
    "finfo": _DTYPE_ONLY,
    "iinfo": _DTYPE_ONLY,
    "issubdtype": _DTYPE_ONLY,
    "promote_types": _DTYPE_ONLY,
    "result_type": _DTYPE_ONLY + " (arrays are accepted but only their dtypes are read)",
}

KNOWN_GAPS: dict[str, str] = {}
