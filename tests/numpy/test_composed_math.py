"""Composed ufuncs, type predicates, calculus and convolve (numpy/{composed_ufuncs,type_predicates,
calculus,convolve}.py) against NumPy: values and JAX dtypes, plus jit samples."""

from __future__ import annotations

import pathlib
import sys
import warnings

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
import morphax.numpy as me
from morphax._src.numpy import statistics as st

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from basic_api_check import assert_matches, rand  # noqa: E402

SHAPES = [(5,), (2, 3), (2, 3, 4)]
FDT = [np.float32, np.int32, np.float16]


def _rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize("name", ["deg2rad", "degrees", "rad2deg", "radians", "fabs", "sinc"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", FDT)
def test_unary(name, shape, dtype):
    x = rand(_rng(), shape, dtype)
    if name == "sinc":
        x.flat[0] = 0
    want = getattr(np, name)(x)
    exp = np.float32 if np.dtype(dtype).kind == "i" else dtype
    assert_matches(
        getattr(me, name)(jnp.asarray(x)), want, dtype=exp, rtol=2e-2 if dtype == np.float16 else None
    )
    got = morphax.jit(getattr(me, name))(jnp.asarray(x))
    assert_matches(got, want, dtype=exp, rtol=2e-2 if dtype == np.float16 else None)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32])
def test_nan_to_num(dtype):
    x = rand(_rng(), (2, 5), dtype)
    if np.dtype(dtype).kind != "i":
        x.flat[0], x.flat[1], x.flat[2] = np.nan, np.inf, -np.inf
    assert_matches(me.nan_to_num(jnp.asarray(x)), np.nan_to_num(x))
    assert_matches(me.nan_to_num(jnp.asarray(x), nan=1.0, posinf=2.0, neginf=-2.0),
                   np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0))  # fmt: skip
    assert_matches(morphax.jit(me.nan_to_num)(jnp.asarray(x)), np.nan_to_num(x))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32])
def test_angle_iscomplex_isreal(dtype):
    x = rand(_rng(), (3, 4), dtype)
    exp = np.float32
    assert_matches(me.angle(jnp.asarray(x)), np.angle(x), dtype=exp)
    assert_matches(me.angle(jnp.asarray(x), deg=True), np.angle(x, deg=True), dtype=exp, rtol=1e-5, atol=1e-4)
    assert_matches(morphax.jit(me.angle)(jnp.asarray(x)), np.angle(x), dtype=exp)
    assert_matches(me.iscomplex(jnp.asarray(x)), np.iscomplex(x))
    assert_matches(me.isreal(jnp.asarray(x)), np.isreal(x))
    assert me.iscomplexobj(jnp.asarray(x)) == np.iscomplexobj(x)
    assert me.isrealobj(jnp.asarray(x)) == np.isrealobj(x)


def test_host_predicates():
    assert me.isscalar(1.0) and me.isscalar(jnp.asarray(1.0)) and not me.isscalar(jnp.ones(3))
    assert not me.isscalar([1])
    assert me.iterable([1]) and me.iterable(jnp.ones(3)) and not me.iterable(1)
    assert me.isdtype(np.float32, "real floating") and not me.isdtype(np.int32, "real floating")
    assert me.isdtype(np.int8, ("bool", "integral")) and me.isdtype(np.complex64, "numeric")
    assert me.isdtype(np.float32, np.float32) and not me.isdtype(np.bool_, "numeric")
    with pytest.raises(ValueError):
        me.isdtype(np.float32, "nope")


@pytest.mark.parametrize("shape", SHAPES)
def test_ldexp_modf(shape):
    r = _rng()
    x = rand(r, shape, np.float32)
    e = r.integers(-3, 4, size=shape).astype(np.int32)
    assert_matches(me.ldexp(jnp.asarray(x), jnp.asarray(e)), np.ldexp(x, e))
    assert_matches(morphax.jit(me.ldexp)(jnp.asarray(x), jnp.asarray(e)), np.ldexp(x, e))
    f, w = me.modf(jnp.asarray(x))
    wf, ww = np.modf(x)
    assert_matches(f, wf)
    assert_matches(w, ww)


@pytest.mark.parametrize("shape", [(5,), (2, 3)])
def test_gcd_lcm(shape):
    r = _rng()
    a = r.integers(-30, 30, size=shape).astype(np.int32)
    b = r.integers(-30, 30, size=shape).astype(np.int32)
    b.flat[0] = 0
    assert_matches(me.gcd(jnp.asarray(a), jnp.asarray(b)), np.gcd(a, b))
    assert_matches(me.lcm(jnp.asarray(a), jnp.asarray(b)), np.lcm(a, b))
    assert_matches(morphax.jit(me.gcd)(jnp.asarray(a), jnp.asarray(b)), np.gcd(a, b))
    with pytest.raises(ValueError):
        me.gcd(jnp.ones(3), jnp.ones(3))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
@pytest.mark.parametrize("n", [1, 2])
def test_diff(shape, dtype, n):
    x = rand(_rng(), shape, dtype)
    assert_matches(me.diff(jnp.asarray(x), n=n), np.diff(x, n=n))
    assert_matches(me.diff(jnp.asarray(x), axis=0), np.diff(x, axis=0))
    assert_matches(morphax.jit(lambda v: me.diff(v, n=n))(jnp.asarray(x)), np.diff(x, n=n))


def test_diff_prepend_append():
    x = rand(_rng(), (2, 3), np.float32)
    assert_matches(me.diff(jnp.asarray(x), prepend=0.0, append=1.0), np.diff(x, prepend=0.0, append=1.0))
    assert_matches(me.diff(jnp.asarray(x), prepend=jnp.asarray(x)), np.diff(x, prepend=x))


@pytest.mark.parametrize("shape", SHAPES)
def test_ediff1d(shape):
    x = rand(_rng(), shape, np.float32)
    assert_matches(me.ediff1d(jnp.asarray(x)), np.ediff1d(x))
    assert_matches(
        me.ediff1d(jnp.asarray(x), to_end=jnp.asarray([1.0, 2.0]), to_begin=jnp.asarray(3.0)),
        np.ediff1d(x, to_end=[1.0, 2.0], to_begin=3.0),
    )
    assert_matches(morphax.jit(me.ediff1d)(jnp.asarray(x)), np.ediff1d(x))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_trapezoid(shape, dtype):
    r = _rng()
    y = rand(r, shape, dtype)
    x = np.sort(r.standard_normal(shape[-1])).astype(np.float32)
    assert_matches(me.trapezoid(jnp.asarray(y)), np.trapezoid(y), dtype=np.float32)
    assert_matches(me.trapezoid(jnp.asarray(y), dx=0.5), np.trapezoid(y, dx=0.5), dtype=np.float32)
    assert_matches(me.trapezoid(jnp.asarray(y), jnp.asarray(x)), np.trapezoid(y, x), dtype=np.float32)
    assert_matches(me.trapezoid(jnp.asarray(y), axis=0), np.trapezoid(y, axis=0), dtype=np.float32)
    assert_matches(morphax.jit(me.trapezoid)(jnp.asarray(y)), np.trapezoid(y), dtype=np.float32)


@pytest.mark.parametrize("shape,axis", [((5,), None), ((2, 3), 1), ((2, 3, 4), 0), ((2, 3, 4), None)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_average(shape, axis, dtype):
    r = _rng()
    a = rand(r, shape, dtype)
    w = r.random(shape).astype(np.float32) + 0.1
    assert_matches(st.average(jnp.asarray(a), axis=axis), np.average(a, axis=axis), dtype=np.float32)
    got, gs = st.average(jnp.asarray(a), axis=axis, weights=jnp.asarray(w), returned=True)
    want, ws = np.average(a, axis=axis, weights=w, returned=True)
    assert_matches(got, want, dtype=np.float32)
    assert_matches(gs, ws, dtype=np.float32)
    if axis is not None:
        w1 = r.random(shape[axis]).astype(np.float32) + 0.1
        assert_matches(st.average(jnp.asarray(a), axis=axis, weights=jnp.asarray(w1)),
                       np.average(a, axis=axis, weights=w1), dtype=np.float32)  # fmt: skip
    f = morphax.jit(lambda v, ww: st.average(v, axis=axis, weights=ww))
    assert_matches(f(jnp.asarray(a), jnp.asarray(w)), np.average(a, axis=axis, weights=w), dtype=np.float32)


QSHAPES = [((7,), None), ((4, 5), 1), ((3, 4, 5), (0, 2)), ((3, 4, 5), None), ((4, 6), 0)]


@pytest.mark.parametrize("shape,axis", QSHAPES)
@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_quantile(shape, axis, method, keepdims):
    a = rand(_rng(), shape, np.float32)
    q = np.array([0.0, 0.3, 0.5, 1.0], np.float32)
    kw = dict(axis=axis, method=method, keepdims=keepdims)
    assert_matches(st.quantile(jnp.asarray(a), jnp.asarray(q), **kw), np.quantile(a, q, **kw))
    assert_matches(st.quantile(jnp.asarray(a), 0.25, **kw), np.quantile(a, 0.25, **kw).astype(np.float32))
    assert_matches(st.percentile(jnp.asarray(a), jnp.asarray(q * 100), **kw), np.percentile(a, q * 100, **kw),
                   rtol=1e-5, atol=1e-5)  # fmt: skip
    an = a.copy()
    an.flat[::7] = np.nan
    assert_matches(st.nanquantile(jnp.asarray(an), jnp.asarray(q), **kw), np.nanquantile(an, q, **kw))
    assert_matches(st.nanpercentile(jnp.asarray(an), jnp.asarray(q * 100), **kw),
                   np.nanpercentile(an, q * 100, **kw), rtol=1e-5, atol=1e-5)  # fmt: skip
    assert_matches(st.quantile(jnp.asarray(an), jnp.asarray(q), **kw), np.quantile(an, q, **kw))


@pytest.mark.parametrize("shape,axis", QSHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_median(shape, axis, dtype):
    a = rand(_rng(), shape, dtype)
    assert_matches(st.median(jnp.asarray(a), axis=axis), np.median(a, axis=axis), dtype=np.float32)
    assert_matches(st.median(jnp.asarray(a), axis=axis, keepdims=True),
                   np.median(a, axis=axis, keepdims=True), dtype=np.float32)  # fmt: skip
    an = a.astype(np.float32)
    an.flat[::4] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.nanmedian(an, axis=axis)
    assert_matches(st.nanmedian(jnp.asarray(an), axis=axis), want)
    assert_matches(morphax.jit(lambda v: st.median(v, axis=axis))(jnp.asarray(a)),
                   np.median(a, axis=axis), dtype=np.float32)  # fmt: skip


@pytest.mark.parametrize("shape,axis", [((6,), None), ((3, 5), 1), ((3, 5, 2), (0, 2))])
@pytest.mark.parametrize("ddof", [0, 1])
def test_nanvar_nanstd(shape, axis, ddof):
    a = rand(_rng(), shape, np.float32)
    a.flat[::3] = np.nan
    assert_matches(st.nanvar(jnp.asarray(a), axis=axis, ddof=ddof), np.nanvar(a, axis=axis, ddof=ddof))
    assert_matches(st.nanstd(jnp.asarray(a), axis=axis, ddof=ddof, keepdims=True),
                   np.nanstd(a, axis=axis, ddof=ddof, keepdims=True))  # fmt: skip
    assert_matches(morphax.jit(lambda v: st.nanvar(v, axis=axis))(jnp.asarray(a)), np.nanvar(a, axis=axis))


@pytest.mark.parametrize("shape,axis", [((6,), None), ((3, 5), 1), ((3, 5, 2), 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_nancum(shape, axis, dtype):
    a = rand(_rng(), shape, dtype)
    if dtype == np.float32:
        a.flat[::3] = np.nan
    assert_matches(st.nancumsum(jnp.asarray(a), axis=axis), np.nancumsum(a, axis=axis))
    assert_matches(st.nancumprod(jnp.asarray(a), axis=axis), np.nancumprod(a, axis=axis))
    assert_matches(
        morphax.jit(lambda v: st.nancumsum(v, axis=axis))(jnp.asarray(a)), np.nancumsum(a, axis=axis)
    )


@pytest.mark.parametrize("shape", [(5,), (3, 6), (4, 4)])
@pytest.mark.parametrize("rowvar", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_cov_corrcoef(shape, rowvar, dtype):
    r = _rng()
    m = rand(r, shape, dtype)
    assert_matches(st.cov(jnp.asarray(m), rowvar=rowvar), np.cov(m, rowvar=rowvar), dtype=np.float32,
                   rtol=1e-4, atol=1e-5)  # fmt: skip
    assert_matches(st.cov(jnp.asarray(m), rowvar=rowvar, bias=True), np.cov(m, rowvar=rowvar, bias=True),
                   dtype=np.float32, rtol=1e-4, atol=1e-5)  # fmt: skip
    assert_matches(st.corrcoef(jnp.asarray(m), rowvar=rowvar), np.corrcoef(m, rowvar=rowvar),
                   dtype=np.float32, rtol=1e-4, atol=1e-5)  # fmt: skip
    n = shape[-1] if rowvar or len(shape) == 1 else shape[0]
    fw = r.integers(1, 4, size=n).astype(np.int32)
    aw = r.random(n).astype(np.float32) + 0.1
    assert_matches(st.cov(jnp.asarray(m), rowvar=rowvar, fweights=jnp.asarray(fw), aweights=jnp.asarray(aw)),
                   np.cov(m, rowvar=rowvar, fweights=fw, aweights=aw), dtype=np.float32,
                   rtol=1e-4, atol=1e-5)  # fmt: skip
    assert_matches(morphax.jit(st.cov)(jnp.asarray(m)), np.cov(m), dtype=np.float32, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(3,), (4, 3), (2, 4, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_cross(shape, dtype):
    r = _rng()
    a, b = rand(r, shape, dtype), rand(r, shape, dtype)
    assert_matches(me.cross(jnp.asarray(a), jnp.asarray(b)), np.cross(a, b))
    a2, b2 = a[..., :2], b[..., :2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want_mixed, want2 = np.cross(a2, b), np.cross(a2, b2)
    assert_matches(me.cross(jnp.asarray(a2), jnp.asarray(b)), want_mixed)
    assert_matches(me.cross(jnp.asarray(a2), jnp.asarray(b2)), want2)
    if len(shape) > 1:
        at, bt = np.moveaxis(a, -1, 0), np.moveaxis(b, -1, 0)
        assert_matches(me.cross(jnp.asarray(at), jnp.asarray(bt), axis=0), np.cross(at, bt, axis=0))
    assert_matches(morphax.jit(me.cross)(jnp.asarray(a), jnp.asarray(b)), np.cross(a, b))


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("lens", [(7, 3), (3, 7), (5, 5), (1, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_convolve_correlate(mode, lens, dtype):
    r = _rng()
    a, v = rand(r, (lens[0],), dtype), rand(r, (lens[1],), dtype)
    tol = dict(rtol=1e-5, atol=1e-5)
    assert_matches(me.convolve(jnp.asarray(a), jnp.asarray(v), mode), np.convolve(a, v, mode),
                   dtype=np.float32, **tol)  # fmt: skip
    assert_matches(me.correlate(jnp.asarray(a), jnp.asarray(v), mode), np.correlate(a, v, mode),
                   dtype=np.float32, **tol)  # fmt: skip
    f = morphax.jit(lambda p, q: me.convolve(p, q, mode))
    assert_matches(f(jnp.asarray(a), jnp.asarray(v)), np.convolve(a, v, mode), dtype=np.float32, **tol)


@pytest.mark.parametrize("shape,axis", [((10,), -1), ((3, 10), -1), ((6, 4), 0)])
def test_unwrap(shape, axis):
    p = np.cumsum(_rng().standard_normal(shape) * 3, axis=axis).astype(np.float32)
    assert_matches(me.unwrap(jnp.asarray(p), axis=axis), np.unwrap(p, axis=axis), rtol=1e-5, atol=1e-4)
    assert_matches(me.unwrap(jnp.asarray(p), axis=axis, period=4.0), np.unwrap(p, axis=axis, period=4.0),
                   rtol=1e-5, atol=1e-4)  # fmt: skip
    assert_matches(morphax.jit(me.unwrap)(jnp.asarray(np.moveaxis(p, axis, -1))),
                   np.unwrap(np.moveaxis(p, axis, -1)), rtol=1e-5, atol=1e-4)  # fmt: skip


@pytest.mark.parametrize("xshape", [(), (5,), (2, 5)])
def test_interp(xshape):
    r = _rng()
    xp = np.sort(r.standard_normal(6)).astype(np.float32)
    fp = r.standard_normal(6).astype(np.float32)
    x = (r.standard_normal(xshape) * 2).astype(np.float32)
    j = [jnp.asarray(v) for v in (x, xp, fp)]
    tol = dict(rtol=1e-5, atol=1e-5)
    assert_matches(me.interp(*j), np.interp(x, xp, fp), dtype=np.float32, **tol)
    assert_matches(me.interp(*j, left=-9.0, right=9.0), np.interp(x, xp, fp, left=-9.0, right=9.0),
                   dtype=np.float32, **tol)  # fmt: skip
    assert_matches(me.interp(*j, period=3.0), np.interp(x, xp, fp, period=3.0), dtype=np.float32, **tol)
    assert_matches(morphax.jit(me.interp)(*j), np.interp(x, xp, fp), dtype=np.float32, **tol)


@pytest.mark.parametrize("shape", [(5,), (4, 5), (3, 4, 2)])
def test_gradient(shape):
    r = _rng()
    f = r.standard_normal(shape).astype(np.float32)
    got, want = me.gradient(jnp.asarray(f)), np.gradient(f)
    if len(shape) == 1:
        got, want = [got], [want]
    for g, w in zip(got, want):
        assert_matches(g, w, rtol=1e-5, atol=1e-5)
    assert_matches(
        me.gradient(jnp.asarray(f), 0.5, axis=-1), np.gradient(f, 0.5, axis=-1), rtol=1e-5, atol=1e-5
    )
    c = np.sort(r.random(shape[0])).astype(np.float32) + np.arange(shape[0], dtype=np.float32)
    assert_matches(me.gradient(jnp.asarray(f), jnp.asarray(c), axis=0), np.gradient(f, c, axis=0),
                   rtol=1e-4, atol=1e-4)  # fmt: skip
    assert_matches(morphax.jit(lambda v: me.gradient(v, axis=0))(jnp.asarray(f)), np.gradient(f, axis=0),
                   rtol=1e-5, atol=1e-5)  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_frexp(dtype):
    tiny = 1e-40 if dtype == np.float32 else 1e-6
    x = np.array([0.0, -0.0, 1.0, -3.5, tiny, np.inf, -np.inf, np.nan, 7.25e3, 0.3], dtype)
    x = np.concatenate([x, rand(_rng(), (6,), dtype)])
    m, e = me.frexp(jnp.asarray(x))
    wm, we = np.frexp(x)
    assert_matches(m, wm)
    assert_matches(e, we, dtype=np.int32)
    m2, e2 = morphax.jit(me.frexp)(jnp.asarray(x))
    assert_matches(m2, wm)
    assert_matches(e2, we, dtype=np.int32)


def test_spacing():
    x = np.array([0.0, 1.0, -3.5, 1e-40, 7.25e3, 0.3, -1e-3], np.float32)
    assert_matches(me.spacing(jnp.asarray(x)), np.spacing(x))
    assert_matches(morphax.jit(me.spacing)(jnp.asarray(x)), np.spacing(x))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_i0(dtype):
    x = np.concatenate([np.linspace(-20, 20, 41), [0.0, 14.99, 15.01, 40.0, 80.0]]).astype(dtype)
    assert_matches(me.i0(jnp.asarray(x)), np.i0(x), dtype=np.float32, rtol=2e-6, atol=0)
    assert_matches(morphax.jit(me.i0)(jnp.asarray(x)), np.i0(x), dtype=np.float32, rtol=2e-6, atol=0)
