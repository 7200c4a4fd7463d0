"""Transformation-matrix cases (see fn_matrix.py) for the statistics and numerics helpers of
morphax/_src/numpy/ (composed_ufuncs, type_predicates, calculus, convolve) and the sorting,
searching, set and histogram functions of morphax/_src/numpy/searching.py.

Functions whose output shape depends on the data run in their ``size=`` / ``fill_value=`` forms
(the only forms that trace under jit and vmap); their NumPy references pad NumPy's answer the way
JAX does. Functions whose result order JAX leaves unspecified (partition, argpartition) are
compared through a canonical form: each side of the pivot sorted.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

import morphax.numpy as jnp

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from fn_matrix import (  # noqa: E402
    Case,
    args,
    booleans,
    complexes,
    const,
    integers,
    normal,
    positive,
    uniform,
)

F32 = np.float32
I32 = np.int32


# ---- sample builders --------------------------------------------------------------------------


def ascending(n, lo=-2.0, hi=2.0, dtype=F32):
    """A strictly increasing vector (well-separated points)."""

    def build(rng):
        steps = rng.uniform(0.5, 1.5, n)
        x = np.cumsum(steps)
        return (lo + (hi - lo) * (x - x[0]) / (x[-1] - x[0])).astype(dtype)

    return build


def with_nans(*shape, frac=0.25, dtype=F32):
    """Normal samples with about `frac` of the entries NaN (never a whole row along any axis)."""

    def build(rng):
        x = rng.standard_normal(shape)
        mask = rng.random(shape) < frac
        mask.reshape(-1)[:: max(1, shape[-1] + 1)] = False
        x[mask] = np.nan
        return x.astype(dtype)

    return build


def special_floats(*shape, dtype=F32):
    """Normal samples with a NaN, +inf and -inf at fixed places."""

    def build(rng):
        x = rng.standard_normal(shape).astype(dtype)
        flat = x.reshape(-1)
        flat[0], flat[5], flat[7] = np.nan, np.inf, -np.inf
        return x

    return build


def fractional(*shape, dtype=F32):
    """Values whose fractional parts stay away from 0 and 1 (modf's kinks)."""
    return lambda rng: (
        rng.integers(-3, 4, shape) + rng.choice([-1.0, 1.0], shape) * rng.uniform(0.1, 0.9, shape)
    ).astype(dtype)


def phases(*shape, dtype=F32):
    """Wrapped phases of a random walk whose true steps stay below 2.5 (far from the pi cut)."""

    def build(rng):
        p = np.cumsum(rng.uniform(-2.5, 2.5, shape), axis=-1)
        return ((p + np.pi) % (2 * np.pi) - np.pi).astype(dtype)

    return build


def mixed_complex(*shape, dtype=np.complex64):
    """Complex samples, about half of them with a zero imaginary part."""

    def build(rng):
        re, im = rng.standard_normal(shape), rng.standard_normal(shape)
        im[rng.random(shape) < 0.5] = 0.0
        return (re + 1j * im).astype(dtype)

    return build


def frexp_values(*shape, special=False, dtype=F32):
    """Normal samples scaled over many binades; with `special`, also a zero, a subnormal, an
    infinity and a NaN."""

    def build(rng):
        x = (rng.standard_normal(shape) * 2.0 ** rng.integers(-20, 20, shape)).astype(dtype)
        flat = x.reshape(-1)
        if special:
            flat[2] = np.finfo(dtype).tiny / 8
            flat[0], flat[1], flat[3] = 0.0, np.inf, np.nan
        return x

    return build


def distinct(*shape, dtype=F32):
    """A random permutation of well-separated values (no ties, for sorts and order statistics)."""
    n = int(np.prod(shape))
    return lambda rng: (rng.permutation(n).reshape(shape) * 0.5 + rng.uniform(-0.2, 0.2, shape)).astype(dtype)


# ---- NumPy references for the sized forms -----------------------------------------------------


def _pad(v, size, fill):
    v = np.asarray(v)
    out = np.full((size,), fill, v.dtype)
    n = min(size, v.shape[0])
    out[:n] = v[:n]
    return out


def _np_nonzero(a, size, fill=0):
    fills = fill if isinstance(fill, tuple) else (fill,) * np.ndim(a)
    return tuple(_pad(i, size, f) for i, f in zip(np.nonzero(a), fills))


def _np_unique(x, size, fill=None):
    """JAX's sized `unique` with every extra: values (padded with `fill`, default the minimum),
    first indices (padded with the minimum's index), inverse, counts (padded with 0)."""
    vals, idx, inv, cnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    fv = vals[0] if fill is None else fill
    return _pad(vals, size, fv), _pad(idx, size, idx[0]), inv.reshape(np.shape(x)), _pad(cnt, size, 0)


def _canon_partition(p, k):
    """Each side of the kth place sorted: partition's answer up to its unspecified order."""
    return np.concatenate([np.sort(p[..., :k], -1), p[..., k : k + 1], np.sort(p[..., k + 1 :], -1)], -1)


def _jcanon_partition(p, k):
    return jnp.concatenate([jnp.sort(p[..., :k], -1), p[..., k : k + 1], jnp.sort(p[..., k + 1 :], -1)], -1)


def _np_hist(a, w=None, **kw):
    h, e = np.histogram(a, weights=w, **kw)
    return h, e


def _np_histdd(s, w=None, **kw):
    h, edges = np.histogramdd(s, weights=w, **kw)
    return (h, *edges)


def _np_piecewise(x):
    return np.piecewise(x, [x < -0.5, x > 0.7], [lambda v: v**2, lambda v: 2 * v + 1, np.float32(0.25)])


def _piecewise(x):
    return jnp.piecewise(x, [x < -0.5, x > 0.7], [lambda v: v**2, lambda v: 2 * v + 1, 0.25])


# ---- composed ufuncs, predicates, calculus, convolve ----------------------------------------------------------------------------

MATH_CASES = [
    Case("angle", args(complexes(3, 4))),
    Case("angle", args(normal(2, 3, 4)), kwargs={"deg": True}, label="real-deg"),
    Case("angle", args(integers(3, 4)), grad=False, label="int32"),
    Case(
        "average",
        args(normal(3, 4, 5), positive(4)),
        fn=lambda a, w: jnp.average(a, axis=1, weights=w, returned=True),
        ref=lambda a, w: np.average(a, axis=1, weights=w, returned=True),
        label="weights-returned",
    ),
    Case("average", args(normal(3, 4, 5)), kwargs={"axis": (0, 2), "keepdims": True}, label="axes"),
    Case("average", args(integers(4, 5)), grad=False, label="int32"),
    Case("convolve", args(normal(8), normal(3))),
    Case("convolve", args(normal(4), normal(7)), kwargs={"mode": "same"}, label="same-swapped"),
    Case("convolve", args(complexes(6), complexes(3)), kwargs={"mode": "valid"}, label="complex64"),
    Case("correlate", args(normal(8), normal(3))),
    Case("correlate", args(normal(3), normal(8)), kwargs={"mode": "full"}, label="full-swapped"),
    Case("correlate", args(complexes(7), complexes(4)), kwargs={"mode": "same"}, label="complex64"),
    Case("corrcoef", args(normal(3, 6))),
    Case(
        "corrcoef",
        args(normal(6, 2), normal(6, 3)),
        fn=lambda x, y: jnp.corrcoef(x, y, rowvar=False),
        ref=lambda x, y: np.corrcoef(x, y, rowvar=False),
        label="xy-cols",
    ),
    Case("cov", args(normal(3, 6))),
    Case(
        "cov",
        args(normal(2, 7), integers(7, lo=1, hi=4), positive(7)),
        fn=lambda m, fw, aw: jnp.cov(m, fweights=fw, aweights=aw, ddof=2),
        ref=lambda m, fw, aw: np.cov(m, fweights=fw, aweights=aw, ddof=2),
        label="weights",
    ),
    Case(
        "cov",
        args(normal(6, 2), normal(6, 2)),
        fn=lambda m, y: jnp.cov(m, y, rowvar=False, bias=True),
        ref=lambda m, y: np.cov(m, y, rowvar=False, bias=True),
        label="y-bias",
    ),
    Case("cov", args(complexes(2, 5)), label="complex64"),
    Case("cross", args(normal(4, 3), normal(4, 3))),
    Case(
        "cross",
        args(normal(2, 5, 2), normal(5, 3)),
        ref=lambda a, b: np.cross(np.pad(a, [(0, 0), (0, 0), (0, 1)]), b),  # NumPy 2 deprecates 2-vectors
        label="2x3-broadcast",
    ),
    Case("cross", args(normal(3, 5), normal(3, 5)), kwargs={"axis": 0}, label="axis0"),
    Case("cross", args(integers(4, 3), integers(4, 3)), grad=False, label="int32"),
    Case("deg2rad", args(normal(3, 4, 2))),
    Case("deg2rad", args(integers(3, 4, lo=-180, hi=180)), grad=False, label="int32"),
    Case("radians", args(normal(3, 4))),
    Case("radians", args(normal(2, 3, 4)), label="3d"),
    Case("rad2deg", args(normal(3, 4, 2))),
    Case("rad2deg", args(integers(3, 4)), grad=False, label="int32"),
    Case("degrees", args(normal(3, 4))),
    Case("degrees", args(normal(5)), label="1d"),
    Case("diff", args(normal(3, 4, 5), const(2), const(1))),
    Case(
        "diff",
        args(normal(3, 4), normal(3, 1), normal(3, 2)),
        fn=lambda a, p, q: jnp.diff(a, prepend=p, append=q),
        ref=lambda a, p, q: np.diff(a, prepend=p, append=q),
        label="prepend-append",
    ),
    Case("diff", args(integers(4, 5)), kwargs={"axis": 0}, grad=False, label="int32"),
    Case("diff", args(booleans(3, 6)), grad=False, label="bool"),
    Case(
        "ediff1d",
        args(normal(3, 4), normal(2), normal(1)),
        fn=lambda a, b, e: jnp.ediff1d(a, to_end=e, to_begin=b),
        ref=lambda a, b, e: np.ediff1d(a, to_end=e, to_begin=b),
    ),
    Case("ediff1d", args(integers(2, 5)), grad=False, label="int32"),
    Case("fabs", args(normal(3, 4, 2))),
    Case("fabs", args(integers(3, 4)), grad=False, label="int32"),
    # magnitudes well inside their binades, so that finite differences do not cross a power of 2
    Case(
        "frexp",
        args(
            lambda rng: (
                rng.choice([-1.0, 1.0], (3, 4))
                * rng.uniform(0.55, 0.95, (3, 4))
                * 2.0 ** rng.integers(0, 6, (3, 4))
            ).astype(F32)
        ),
    ),
    Case(
        "frexp",
        args(
            lambda rng: (
                rng.choice([-1.0, 1.0], (2, 3, 2))
                * rng.uniform(0.55, 0.95, (2, 3, 2))
                * 2.0 ** rng.integers(-4, 4, (2, 3, 2))
            ).astype(F32)
        ),
        label="3d",
    ),
    Case("frexp", args(frexp_values(3, 4, special=True)), grad=False, label="special"),
    Case("frexp", args(integers(3, 4)), grad=False, label="int32"),
    Case("gcd", args(integers(3, 4, lo=-12, hi=13), integers(4, lo=-12, hi=13)), grad=False),
    Case(
        "gcd", args(integers(2, 1, 3, lo=0, hi=30), integers(4, 1, lo=0, hi=30)), grad=False, label="3d-outer"
    ),
    Case("lcm", args(integers(3, 4, lo=-12, hi=13), integers(4, lo=-12, hi=13)), grad=False),
    Case(
        "lcm", args(integers(2, 1, 3, lo=0, hi=30), integers(4, 1, lo=0, hi=30)), grad=False, label="3d-outer"
    ),
    Case("gradient", args(normal(4, 5))),
    Case("gradient", args(normal(3, 4, 5), const(0.5)), kwargs={"axis": (0, 2)}, label="spacing-axes"),
    Case(
        "gradient",
        args(normal(3, 6), ascending(6, 0.0, 3.0)),
        fn=lambda f, x: jnp.gradient(f, x, axis=1),
        ref=lambda f, x: np.gradient(f, x, axis=1),
        label="coordinates",
    ),
    Case("i0", args(uniform(3, 4, lo=-6.0, hi=6.0))),
    # the asymptotic branch (|x| > 15); float32 values near 1e9
    Case("i0", args(uniform(2, 3, lo=15.5, hi=30.0)), rtol=1e-4, label="large"),
    Case(
        "interp",
        args(uniform(3, 4, lo=-1.0, hi=6.0), ascending(7, 0.0, 5.0), normal(7)),
        ref=np.interp,
    ),
    Case(
        "interp",
        args(uniform(2, 5, lo=-1.0, hi=6.0), ascending(6, 0.0, 5.0), normal(6), const(-2.0), const(3.0)),
        label="left-right",
    ),
    Case(
        "interp",
        args(uniform(3, 4, lo=-7.0, hi=7.0), ascending(5, -2.0, 2.0), normal(5)),
        fn=lambda x, xp, fp: jnp.interp(x, xp, fp, period=5.0),
        ref=lambda x, xp, fp: np.interp(x, xp, fp, period=5.0),
        label="period",
    ),
    Case("iscomplex", args(mixed_complex(3, 4)), grad=False),
    Case("iscomplex", args(normal(3, 4)), grad=False, label="float32"),
    Case("iscomplex", args(mixed_complex(2, 3, 2)), grad=False, label="3d"),
    Case("isreal", args(mixed_complex(3, 4)), grad=False),
    Case("isreal", args(integers(3, 4)), grad=False, label="int32"),
    Case("isreal", args(mixed_complex(6)), grad=False, label="1d"),
    # The type predicates return Python bools (static facts about the operand's dtype/shape);
    # wrapped in an array so the driver can compare them, also under jit and vmap.
    Case(
        "iscomplexobj",
        args(complexes(3, 4)),
        fn=lambda x: jnp.asarray(jnp.iscomplexobj(x)),
        ref=lambda x: np.asarray(np.iscomplexobj(x)),
        grad=False,
    ),
    Case(
        "iscomplexobj",
        args(normal(3, 4)),
        fn=lambda x: jnp.asarray(jnp.iscomplexobj(x)),
        ref=lambda x: np.asarray(np.iscomplexobj(x)),
        grad=False,
        label="float32",
    ),
    Case(
        "iscomplexobj",
        args(complexes(5)),
        fn=lambda x: jnp.asarray(jnp.iscomplexobj(x)),
        ref=lambda x: np.asarray(np.iscomplexobj(x)),
        grad=False,
        label="1d",
    ),
    Case(
        "isrealobj",
        args(normal(3, 4)),
        fn=lambda x: jnp.asarray(jnp.isrealobj(x)),
        ref=lambda x: np.asarray(np.isrealobj(x)),
        grad=False,
    ),
    Case(
        "isrealobj",
        args(complexes(2, 3, 2)),
        fn=lambda x: jnp.asarray(jnp.isrealobj(x)),
        ref=lambda x: np.asarray(np.isrealobj(x)),
        grad=False,
        label="complex64-3d",
    ),
    Case(
        "isscalar",
        args(normal(3, 4)),
        fn=lambda x: jnp.asarray(jnp.isscalar(x)),
        ref=lambda x: np.asarray(np.ndim(x) == 0),  # JAX: a 0-d array is a scalar (NumPy: not)
        grad=False,
    ),
    Case(
        "isscalar",
        args(normal()),
        fn=lambda x: jnp.asarray(jnp.isscalar(x)),
        ref=lambda x: np.asarray(np.ndim(x) == 0),
        grad=False,
        label="0d",
    ),
    Case(
        "iterable",
        args(normal(3, 4)),
        fn=lambda x: jnp.asarray(jnp.iterable(x)),
        ref=lambda x: np.asarray(np.iterable(x)),
        grad=False,
    ),
    Case(
        "iterable",
        args(normal(2, 3, 2)),
        fn=lambda x: jnp.asarray(jnp.iterable(x)),
        ref=lambda x: np.asarray(np.iterable(x)),
        grad=False,
        label="3d",
    ),
    Case("ldexp", args(normal(3, 4), integers(3, 4, lo=-4, hi=5))),
    Case("ldexp", args(integers(3, 4), integers(4, lo=0, hi=4)), grad=False, label="int32"),
    Case("median", args(distinct(3, 4, 5)), kwargs={"axis": 1}),
    Case("median", args(distinct(4, 6)), label="all"),
    Case("median", args(distinct(3, 4, 5)), kwargs={"axis": (0, 2), "keepdims": True}, label="keepdims"),
    Case("modf", args(fractional(3, 4, 2))),
    Case("modf", args(fractional(6)), label="1d"),
    Case("nan_to_num", args(special_floats(3, 4))),
    Case(
        "nan_to_num",
        args(special_floats(3, 4)),
        kwargs={"nan": 1.5, "posinf": 9.0, "neginf": -9.0},
        label="kw",
    ),
    Case("nan_to_num", args(integers(3, 4)), grad=False, label="int32"),
    Case("nan_to_num", args(special_floats(2, 3, 4)), kwargs={"nan": -1.0}, label="3d"),
    Case(
        "nan_to_num",
        args(lambda rng: special_floats(3, 4)(rng) + 1j * normal(3, 4)(rng)),
        ref=lambda x: np.nan_to_num(x).astype(np.complex64),
        label="complex64",
    ),
    Case("nancumsum", args(with_nans(3, 4, 5)), kwargs={"axis": 1}),
    Case("nancumsum", args(with_nans(3, 4)), label="flat"),
    Case("nancumprod", args(with_nans(3, 4, 5)), kwargs={"axis": 2}),
    Case("nancumprod", args(integers(3, 4)), kwargs={"axis": 0}, grad=False, label="int32"),
    Case("nanmedian", args(with_nans(3, 5, 4)), kwargs={"axis": 1}),
    Case("nanmedian", args(with_nans(4, 5)), label="all"),
    Case(
        "nanquantile",
        args(with_nans(3, 6, 4), uniform(2, lo=0.05, hi=0.95)),
        fn=lambda a, q: jnp.nanquantile(a, q, axis=1),
        ref=lambda a, q: np.nanquantile(a, q, axis=1),
    ),
    Case(
        "nanquantile",
        args(with_nans(4, 6), const(0.3)),
        kwargs={"axis": 0, "method": "nearest", "keepdims": True},
        label="nearest",
    ),
    Case(
        "nanpercentile",
        args(with_nans(3, 6, 4), uniform(2, lo=5.0, hi=95.0)),
        fn=lambda a, q: jnp.nanpercentile(a, q, axis=(0, 2)),
        ref=lambda a, q: np.nanpercentile(a, q, axis=(0, 2)),
    ),
    Case(
        "nanpercentile",
        args(with_nans(4, 6), const(40.0)),
        kwargs={"axis": 1, "keepdims": True},
        label="2d-axis1",
    ),
    Case("nanstd", args(with_nans(3, 6, 4)), kwargs={"axis": 1}),
    Case("nanstd", args(with_nans(4, 6)), kwargs={"ddof": 1}, label="ddof"),
    Case("nanvar", args(with_nans(3, 6, 4)), kwargs={"axis": (0, 2), "keepdims": True}),
    Case("nanvar", args(with_nans(4, 6)), kwargs={"axis": 1, "ddof": 1}, label="ddof"),
    Case("nanvar", args(complexes(3, 5)), kwargs={"axis": 1}, label="complex64"),
    Case(
        "quantile",
        args(distinct(3, 6, 4), uniform(3, lo=0.05, hi=0.95)),
        fn=lambda a, q: jnp.quantile(a, q, axis=1),
        ref=lambda a, q: np.quantile(a, q, axis=1),
    ),
    Case("quantile", args(distinct(4, 7), const(0.4)), kwargs={"axis": 1, "method": "lower"}, label="lower"),
    Case(
        "quantile", args(distinct(4, 7), const(0.4)), kwargs={"axis": 0, "method": "higher"}, label="higher"
    ),
    Case("quantile", args(distinct(4, 7), const(0.45)), kwargs={"method": "midpoint"}, label="midpoint"),
    Case("quantile", args(integers(4, 7), const(0.3)), kwargs={"axis": 1}, grad=False, label="int32"),
    Case(
        "percentile",
        args(distinct(3, 6, 4), uniform(2, lo=5.0, hi=95.0)),
        fn=lambda a, q: jnp.percentile(a, q, axis=(0, 2), keepdims=True),
        ref=lambda a, q: np.percentile(a, q, axis=(0, 2), keepdims=True),
    ),
    Case("percentile", args(distinct(4, 7), const(30.0)), kwargs={"method": "nearest"}, label="nearest"),
    Case("sinc", args(normal(3, 4, 2))),
    Case(
        "sinc", args(lambda rng: np.array([0.0, 1.0, -2.5, 0.3], F32) * rng.uniform(0.5, 1.5)), label="zero"
    ),
    Case("spacing", args(frexp_values(3, 4, special=True)), grad=False),  # nextafter: no derivative in JAX
    Case("spacing", args(frexp_values(2, 3, 2)), grad=False, label="3d"),
    Case("trapezoid", args(normal(3, 6))),
    Case(
        "trapezoid",
        args(normal(6, 3), ascending(6, 0.0, 2.0)),
        fn=lambda y, x: jnp.trapezoid(y, x, axis=0),
        ref=lambda y, x: np.trapezoid(y, x, axis=0),
        label="x-axis0",
    ),
    Case("trapezoid", args(normal(2, 3, 5), const(None), const(0.25)), label="dx"),
    Case("trapezoid", args(integers(3, 6)), grad=False, label="int32"),
    Case("unwrap", args(phases(3, 8))),
    Case("unwrap", args(lambda rng: phases(3, 8)(rng).T), kwargs={"axis": 0}, label="axis0"),
    Case("unwrap", args(lambda rng: phases(3, 8)(rng) * 2), kwargs={"period": 4 * np.pi}, label="period"),
]


# ---- searching.py ----------------------------------------------------------------------------

SEARCH_CASES = [
    Case(
        "argpartition",
        args(distinct(3, 7)),
        fn=lambda a: _jcanon_partition(jnp.argpartition(a, 2), 2),
        ref=lambda a: _canon_partition(np.argpartition(a, 2), 2),
        grad=False,
    ),
    Case(
        "argpartition",
        args(distinct(6, 4)),
        fn=lambda a: _jcanon_partition(jnp.moveaxis(jnp.argpartition(a, -2, axis=0), 0, -1), 4),
        ref=lambda a: _canon_partition(np.moveaxis(np.argpartition(a, -2, axis=0), 0, -1), 4),
        grad=False,
        label="axis0",
    ),
    Case(
        "partition",
        args(distinct(3, 7)),
        fn=lambda a: _jcanon_partition(jnp.partition(a, 3), 3),
        ref=lambda a: _canon_partition(np.partition(a, 3), 3),
    ),
    Case(
        "partition",
        args(integers(2, 6, 5)),
        fn=lambda a: _jcanon_partition(jnp.moveaxis(jnp.partition(a, 1, axis=1), 1, -1), 1),
        ref=lambda a: _canon_partition(np.moveaxis(np.partition(a, 1, axis=1), 1, -1), 1),
        grad=False,
        label="int32",
    ),
    Case("argsort", args(distinct(3, 4, 5)), kwargs={"axis": 1}, grad=False),
    Case(
        "argsort",
        args(integers(4, 6, lo=0, hi=3)),
        ref=lambda a: np.argsort(a, kind="stable"),
        grad=False,
        label="int32-ties",
    ),
    Case(
        "argsort",
        args(integers(4, 6, lo=0, hi=3)),
        kwargs={"axis": 0, "descending": True},
        ref=lambda a: np.argsort(-a, axis=0, kind="stable"),
        grad=False,
        label="descending",
    ),
    Case("sort", args(distinct(3, 4, 5)), kwargs={"axis": 1}),
    Case("sort", args(distinct(4, 5)), kwargs={"axis": None}, label="flat"),
    Case(
        "sort",
        args(distinct(4, 5)),
        kwargs={"axis": 0, "descending": True},
        ref=lambda a: np.flip(np.sort(a, axis=0), 0),
        label="descending",
    ),
    Case("sort", args(integers(3, 6)), grad=False, label="int32"),
    Case("sort", args(complexes(3, 5)), label="complex64"),
    Case("sort_complex", args(complexes(4, 3))),
    Case(
        "sort_complex",
        args(integers(5, 2)),
        ref=lambda a: np.sort_complex(a).astype(np.complex64),
        grad=False,
        label="int32",
    ),
    Case(
        "lexsort",
        args(integers(3, 5, lo=0, hi=3), integers(3, 5, lo=0, hi=3)),
        fn=lambda a, b: jnp.lexsort((a, b)),
        ref=lambda a, b: np.lexsort((a, b)),
        grad=False,
    ),
    Case(
        "lexsort",
        args(integers(6, 2, lo=0, hi=3), distinct(6, 2), integers(6, 2, lo=0, hi=2)),
        fn=lambda a, b, c: jnp.lexsort((a, b, c), axis=0),
        ref=lambda a, b, c: np.lexsort((a, b, c), axis=0),
        grad=False,
        label="axis0",
    ),
    Case("searchsorted", args(ascending(9), normal(3, 4)), grad=False),
    Case(
        "searchsorted",
        args(lambda rng: np.round(ascending(9)(rng), 1), lambda rng: np.round(normal(3, 4)(rng), 1)),
        kwargs={"side": "right"},
        grad=False,
        label="right-ties",
    ),
    Case(
        "searchsorted",
        args(integers(8, lo=-6, hi=7), integers(2, 5, lo=-7, hi=8)),
        fn=lambda a, v: jnp.searchsorted(a, v, sorter=jnp.argsort(a)),
        ref=lambda a, v: np.searchsorted(a, v, sorter=np.argsort(a, kind="stable")),
        grad=False,
        label="sorter-int32",
    ),
    Case("digitize", args(normal(3, 4), ascending(5, -1.5, 1.5)), grad=False),
    Case(
        "digitize",
        args(normal(3, 4), ascending(5, -1.5, 1.5)),
        kwargs={"right": True},
        grad=False,
        label="right",
    ),
    Case(
        "digitize",
        args(integers(3, 4, lo=-3, hi=4), lambda rng: np.array([2, 0, -1], I32) + rng.integers(0, 1)),
        grad=False,
        label="decreasing-int32",
    ),
    Case(
        "nonzero",
        args(integers(3, 4, lo=-1, hi=2)),
        kwargs={"size": 5, "fill_value": (-1, -2)},
        ref=lambda a: _np_nonzero(a, 5, (-1, -2)),
        grad=False,
    ),
    Case(
        "nonzero",
        args(booleans(2, 3, 2)),
        kwargs={"size": 14},
        ref=lambda a: _np_nonzero(a, 14),
        grad=False,
        label="bool-pad",
    ),
    Case(
        "flatnonzero",
        args(normal(3, 4)),
        fn=lambda a: jnp.flatnonzero(a > 0.3, size=6, fill_value=-1),
        ref=lambda a: _pad(np.flatnonzero(a > 0.3), 6, -1),
        grad=False,
    ),
    Case(
        "flatnonzero",
        args(integers(2, 3, 2, lo=-1, hi=2)),
        kwargs={"size": 9},
        ref=lambda a: _pad(np.flatnonzero(a), 9, 0),
        grad=False,
        label="3d",
    ),
    Case(
        "argwhere",
        args(integers(3, 4, lo=-1, hi=2)),
        kwargs={"size": 6, "fill_value": -1},
        ref=lambda a: np.stack(_np_nonzero(a, 6, -1), -1),
        grad=False,
    ),
    Case(
        "argwhere",
        args(booleans(2, 3, 2)),
        kwargs={"size": 13},
        ref=lambda a: np.stack(_np_nonzero(a, 13), -1),
        grad=False,
        label="bool-pad",
    ),
    Case(
        "extract",
        args(booleans(3, 4), normal(3, 4)),
        kwargs={"size": 7, "fill_value": -1.0},
        ref=lambda c, a: _pad(np.extract(c, a), 7, -1.0),
    ),
    Case(
        "extract",
        args(booleans(2, 3, 2), normal(2, 3, 2)),
        kwargs={"size": 5},
        ref=lambda c, a: _pad(np.extract(c, a), 5, 0.0),
        label="3d",
    ),
    Case(
        "extract",
        args(booleans(3, 4), integers(3, 4)),
        kwargs={"size": 4},
        ref=lambda c, a: _pad(np.extract(c, a), 4, 0),
        grad=False,
        label="int32",
    ),
    Case(
        "select",
        args(booleans(3, 4), booleans(3, 4), normal(3, 4), normal(4)),
        fn=lambda c1, c2, x1, x2: jnp.select([c1, c2], [x1, x2], -1.0),
        ref=lambda c1, c2, x1, x2: np.select([c1, c2], [x1, x2], -1.0).astype(F32),
    ),
    Case(
        "select",
        args(normal(3, 4), integers(3, 4)),
        fn=lambda x, k: jnp.select([x > 0.5, x < -0.5], [k, 2 * k]),
        ref=lambda x, k: np.select([x > 0.5, x < -0.5], [k, 2 * k]),
        grad=False,
        label="int32",
    ),
    Case("piecewise", args(normal(3, 4)), fn=_piecewise, ref=_np_piecewise),
    Case(
        "piecewise",
        args(integers(3, 5)),
        fn=lambda x: jnp.piecewise(x, [x < 0], [lambda v: -v, lambda v: 3 * v]),
        ref=lambda x: np.piecewise(x, [x < 0], [lambda v: -v, lambda v: 3 * v]),
        grad=False,
        label="int32",
    ),
    Case("nanargmax", args(with_nans(3, 4, 5)), kwargs={"axis": 1}, grad=False),
    Case("nanargmax", args(with_nans(4, 5)), grad=False, label="flat"),
    Case("nanargmin", args(with_nans(3, 4, 5)), kwargs={"axis": -1, "keepdims": True}, grad=False),
    Case("nanargmin", args(integers(4, 5)), kwargs={"axis": 0}, grad=False, label="int32"),
    Case("isin", args(integers(3, 4), integers(5)), grad=False),
    Case(
        "isin", args(integers(2, 3, 2), integers(2, 3)), kwargs={"invert": True}, grad=False, label="invert"
    ),
    Case(
        "bincount",
        args(integers(12, lo=0, hi=6), positive(12)),
        fn=lambda x, w: jnp.bincount(x, w, length=7),
        ref=lambda x, w: np.bincount(x, w, minlength=7),
    ),
    Case(
        "bincount",
        args(integers(12, lo=0, hi=5)),
        kwargs={"minlength": 3, "length": 5},
        ref=lambda x: np.bincount(x, minlength=5),
        grad=False,
        label="counts",
    ),
    Case(
        "histogram",
        args(normal(5, 8), normal(5, 8)),
        fn=lambda a, w: jnp.histogram(a, bins=6, range=(-2.5, 2.5), weights=w),
        ref=lambda a, w: _np_hist(a, w, bins=6, range=(-2.5, 2.5)),
    ),
    Case(
        "histogram",
        args(normal(40)),
        kwargs={"bins": 5},
        ref=lambda a: _np_hist(a, bins=5),
        dtype=F32,  # JAX counts in the float dtype of the edges (NumPy: int64)
        label="minmax",
    ),
    Case(
        "histogram",
        # samples half-way between multiples of 0.1, edges on them: no sample within 0.05 of an edge
        args(
            lambda rng: (np.round(rng.standard_normal((6, 5)), 1) + 0.05).astype(F32),
            lambda rng: np.round(ascending(5, -1.5, 1.5)(rng), 1),
        ),
        fn=lambda a, b: jnp.histogram(a, bins=b, density=True),
        ref=lambda a, b: _np_hist(a, bins=b, density=True),
        label="edges-density",
    ),
    Case("histogram_bin_edges", args(normal(5, 6)), kwargs={"bins": 5}),
    Case("histogram_bin_edges", args(normal(20)), kwargs={"bins": 3}, label="1d"),
    Case(
        "histogram_bin_edges",
        args(integers(5, 6)),
        kwargs={"bins": 4, "range": (-3, 3)},
        grad=False,
        label="int32",
    ),
    Case(
        "histogram2d",
        args(normal(30), normal(30), positive(30)),
        fn=lambda x, y, w: jnp.histogram2d(x, y, bins=(3, 4), range=[(-2, 2), (-2.5, 2.5)], weights=w),
        ref=lambda x, y, w: np.histogram2d(x, y, bins=(3, 4), range=[(-2, 2), (-2.5, 2.5)], weights=w),
    ),
    Case(
        "histogram2d",
        args(normal(30), normal(30)),
        kwargs={"bins": 3, "density": True},
        ref=lambda x, y: np.histogram2d(x, y, bins=3, density=True),
        label="minmax-density",
    ),
    Case(
        "histogramdd",
        args(normal(25, 3), positive(25)),
        fn=lambda s, w: jnp.histogramdd(s, bins=(3, 4, 2), range=[(-2, 2), (-2, 2), (-3, 3)], weights=w),
        ref=lambda s, w: _np_histdd(s, w, bins=(3, 4, 2), range=[(-2, 2), (-2, 2), (-3, 3)]),
    ),
    Case(
        "histogramdd",
        args(normal(25, 2)),
        kwargs={"bins": 3, "density": True},
        ref=lambda s: _np_histdd(s, bins=3, density=True),
        label="minmax-density",
    ),
    Case(
        "unique",
        args(integers(3, 4, lo=0, hi=6)),
        fn=lambda x: jnp.unique(x, True, True, True, size=8, fill_value=-1),
        ref=lambda x: _np_unique(x, 8, -1),
        grad=False,
    ),
    Case(
        "unique",
        args(distinct(3, 4)),
        kwargs={"size": 12},
        ref=lambda x: np.unique(x),
        label="float32-distinct",
    ),
    Case(
        "unique",
        args(integers(3, 4, lo=0, hi=4)),
        kwargs={"size": 3},
        ref=lambda x: np.unique(x)[:3],
        grad=False,
        label="truncated",
    ),
    Case(
        "unique",
        args(integers(10, lo=0, hi=6)),
        fn=lambda x: jnp.unique(x, return_counts=True, size=7, fill_value=-1),
        ref=lambda x: (_np_unique(x, 7, -1)[0], _np_unique(x, 7, -1)[3]),
        grad=False,
        label="1d-counts",
    ),
    Case(
        "unique_values",
        args(integers(3, 4, lo=0, hi=5)),
        kwargs={"size": 7},
        ref=lambda x: _np_unique(x, 7)[0],
        grad=False,
    ),
    Case("unique_values", args(distinct(2, 5)), kwargs={"size": 10}, ref=np.unique, label="float32-distinct"),
    Case(
        "unique_counts",
        args(integers(3, 4, lo=0, hi=5)),
        kwargs={"size": 7, "fill_value": 0},
        ref=lambda x: (_np_unique(x, 7, 0)[0], _np_unique(x, 7, 0)[3]),
        grad=False,
    ),
    Case(
        "unique_counts",
        args(integers(2, 3, 2, lo=0, hi=4)),
        kwargs={"size": 5},
        ref=lambda x: (_np_unique(x, 5)[0], _np_unique(x, 5)[3]),
        grad=False,
        label="3d",
    ),
    Case(
        "unique_inverse",
        args(integers(3, 4, lo=0, hi=5)),
        kwargs={"size": 6},
        ref=lambda x: (_np_unique(x, 6)[0], _np_unique(x, 6)[2]),
        grad=False,
    ),
    Case(
        "unique_inverse",
        args(integers(9, lo=0, hi=4)),
        kwargs={"size": 5, "fill_value": -1},
        ref=lambda x: (_np_unique(x, 5, -1)[0], _np_unique(x, 5, -1)[2]),
        grad=False,
        label="1d",
    ),
    Case(
        "unique_all",
        args(integers(2, 3, 2, lo=0, hi=5)),
        kwargs={"size": 8, "fill_value": 9},
        ref=lambda x: _np_unique(x, 8, 9),
        grad=False,
    ),
    Case(
        "unique_all",
        args(integers(10, lo=0, hi=6)),
        kwargs={"size": 6},
        ref=lambda x: _np_unique(x, 6),
        grad=False,
        label="1d",
    ),
    Case(
        "intersect1d",
        args(integers(2, 4, lo=0, hi=8), integers(6, lo=0, hi=8)),
        kwargs={"size": 6, "fill_value": -1},
        ref=lambda a, b: _pad(np.intersect1d(a, b), 6, -1),
        grad=False,
    ),
    Case(
        "intersect1d",
        args(integers(7, lo=0, hi=6), integers(2, 3, 2, lo=0, hi=6)),
        kwargs={"size": 5, "fill_value": -1},
        ref=lambda a, b: _pad(np.intersect1d(a, b), 5, -1),
        grad=False,
        label="1d-3d",
    ),
    Case(
        "union1d",
        args(integers(2, 4, lo=0, hi=8), integers(6, lo=0, hi=8)),
        kwargs={"size": 12, "fill_value": -1},
        ref=lambda a, b: _pad(np.union1d(a, b), 12, -1),
        grad=False,
    ),
    Case(
        "union1d",
        args(distinct(2, 3), distinct(4)),
        kwargs={"size": 10},
        ref=lambda a, b: _pad(np.union1d(a, b), 10, np.union1d(a, b)[0]),
        label="float32",
    ),
    Case(
        "setdiff1d",
        args(integers(2, 4, lo=0, hi=8), integers(6, lo=0, hi=8)),
        kwargs={"size": 7, "fill_value": -1},
        ref=lambda a, b: _pad(np.setdiff1d(a, b), 7, -1),
        grad=False,
    ),
    Case(
        "setdiff1d",
        args(integers(2, 3, 2, lo=0, hi=10), integers(3, lo=0, hi=10)),
        kwargs={"size": 9, "fill_value": -1},
        ref=lambda a, b: _pad(np.setdiff1d(a, b), 9, -1),
        grad=False,
        label="3d-1d",
    ),
    Case(
        "setxor1d",
        args(integers(2, 4, lo=0, hi=8), integers(6, lo=0, hi=8)),
        kwargs={"size": 9, "fill_value": -1},
        ref=lambda a, b: _pad(np.setxor1d(a, b), 9, -1),
        grad=False,
    ),
    Case(
        "setxor1d",
        args(integers(5, lo=0, hi=8), integers(2, 3, 2, lo=0, hi=8)),
        kwargs={"size": 9, "fill_value": -1},
        ref=lambda a, b: _pad(np.setxor1d(a, b), 9, -1),
        grad=False,
        label="1d-3d",
    ),
]

CASES = MATH_CASES + SEARCH_CASES

# isdtype's operands are a dtype and a kind (string/dtype/tuple): no array operand to transform.
EXEMPT = {"isdtype": "takes a dtype and a kind, no array operand: nothing to jit, vmap or differentiate"}

KNOWN_GAPS: dict[str, str] = {}
