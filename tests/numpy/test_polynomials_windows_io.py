"""Polynomials, windows, vectorize, bit packing, host utilities and the newer scalar types
(morphax/_src/numpy/{polynomials,windows,vectorize,bit_packing,host_io,scalar_types}.py) against
NumPy."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import morphax
import morphax.numpy
import morphax.numpy as m
from morphax._src.numpy import scalar_types
from morphax._src.numpy import ufunc_objects as uo

RNG = np.random.default_rng(0)


def close(a, b, tol=1e-4):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("n,xshape", [(1, ()), (3, (4,)), (5, (2, 3))])
def test_polyval(n, xshape):
    p, x = f32(n), f32(*xshape)
    out = m.polyval(p, x)
    assert out.dtype == np.float32 and out.shape == xshape
    close(out, np.polyval(p, x))
    close(morphax.jit(m.polyval)(p, x), np.polyval(p, x))
    if n > 1:
        g = morphax.grad(lambda x: m.polyval(p, x).sum())(x)
        close(g, np.polyval(np.polyder(p), x))
    assert m.polyval(np.array([1, 2], np.int32), np.int32(3)).dtype == np.int32  # as in JAX


@pytest.mark.parametrize("n1,n2", [(1, 3), (4, 2), (3, 3)])
def test_polyadd_sub_mul(n1, n2):
    a, b = f32(n1), f32(n2)
    close(m.polyadd(a, b), np.polyadd(a, b))
    close(m.polysub(a, b), np.polysub(a, b))
    close(m.polymul(a, b), np.polymul(a, b))
    close(morphax.jit(m.polymul)(a, b), np.polymul(a, b))
    close(morphax.jit(m.polyadd)(a, b), np.polyadd(a, b))
    ai, bi = np.arange(1, n1 + 1, dtype=np.int32), np.arange(1, n2 + 1, dtype=np.int32)
    assert m.polyadd(ai, bi).dtype == np.int32
    assert m.polymul(ai, bi).dtype == np.float32


@pytest.mark.parametrize("n,order", [(4, 1), (5, 2), (2, 3)])
def test_polyder_polyint(n, order):
    p = f32(n)
    close(m.polyder(p, order), np.polyder(p, order))
    close(m.polyint(p, order), np.polyint(p, order))
    close(m.polyint(p, order, k=np.arange(order) + 1.0), np.polyint(p, order, k=np.arange(order) + 1.0))
    close(morphax.jit(m.polyder, static_argnums=1)(p, order), np.polyder(p, order))


@pytest.mark.parametrize("nu,nv", [(5, 2), (3, 3), (6, 3)])
def test_polydiv(nu, nv):
    u, v = f32(nu), f32(nv) + np.float32(3.0) * (np.arange(nv) == 0)
    q, r = m.polydiv(u, v)
    eq, er = np.polydiv(u.astype(np.float64), v.astype(np.float64))
    close(q, eq, 1e-3)
    close(np.asarray(r)[len(r) - len(er) :], er, 1e-3)
    q2, _ = morphax.jit(m.polydiv)(u, v)
    close(q2, eq, 1e-3)


@pytest.mark.parametrize("z", [np.array([1.0, 2.0], np.float32), np.array([0.5, -1, 3, 2], np.float32)])
def test_poly_roots(z):
    close(m.poly(z), np.poly(z))
    close(morphax.jit(m.poly)(z), np.poly(z))
    r = m.roots(np.poly(z).astype(np.float32))
    assert r.dtype == np.complex64
    close(np.sort_complex(np.asarray(r)), np.sort_complex(np.roots(np.poly(z))), 1e-3)


def test_roots_zeros():
    p = np.array([0.0, 1.0, -3.0, 2.0, 0.0], np.float32)
    close(np.sort_complex(np.asarray(m.roots(p))), np.sort_complex(np.roots(p)), 1e-4)
    r = morphax.jit(lambda p: m.roots(p, strip_zeros=False))(np.array([1.0, -3.0, 2.0], np.float32))
    close(np.sort_complex(np.asarray(r)), [1, 2], 1e-4)


def test_poly_matrix():
    a = np.array([[2.0, 0.0], [0.0, 3.0]], np.float32)
    close(m.poly(a), np.poly(a))


@pytest.mark.parametrize("deg,n", [(1, 5), (2, 8), (3, 10)])
def test_polyfit(deg, n):
    x = np.linspace(-1, 1, n).astype(np.float32)
    y = (f32(n) + x**2).astype(np.float32)
    close(m.polyfit(x, y, deg), np.polyfit(x, y, deg), 1e-3)
    w = np.abs(f32(n)) + 0.5
    close(m.polyfit(x, y, deg, w=w), np.polyfit(x, y, deg, w=w), 1e-3)
    y2 = np.stack([y, 2 * y], axis=1)
    close(m.polyfit(x, y2, deg), np.polyfit(x, y2, deg), 1e-3)
    _, cv = m.polyfit(x, y, deg, cov=True)
    close(cv, np.polyfit(x, y, deg, cov=True)[1], 1e-3)
    _, cvu = m.polyfit(x, y, deg, cov="unscaled")
    close(cvu, np.polyfit(x, y, deg, cov="unscaled")[1], 1e-3)
    close(morphax.jit(m.polyfit, static_argnums=2)(x, y, deg), np.polyfit(x, y, deg), 1e-3)


@pytest.mark.parametrize("M", [0, 1, 6, 11])
def test_windows(M):
    for name in ("bartlett", "blackman", "hamming", "hanning"):
        out = getattr(m, name)(M)
        assert out.dtype == np.float32 and out.shape == (M,)
        close(out, getattr(np, name)(M), 1e-5)
    for beta in (0.0, 3.0, 14.0):
        out = m.kaiser(M, beta)
        assert out.dtype == np.float32
        close(out, np.kaiser(M, beta), 1e-4)
    close(morphax.jit(lambda b: m.kaiser(7, b))(np.float32(5.0)), np.kaiser(7, 5.0))


def test_vectorize():
    f = m.vectorize(lambda x, y: x * y + 1)
    x, y = f32(3), f32(2, 1)
    close(f(x, y), x * y + 1)
    close(morphax.jit(f)(x, y), x * y + 1)
    g = m.vectorize(lambda a, b: a @ b, signature="(n,k),(k)->(n)")
    a, b = f32(4, 2, 3), f32(5, 1, 3)
    out = g(a, b)
    assert out.shape == (5, 4, 2)
    close(out, np.einsum("ink,jk->jin", a, b[:, 0]), 1e-4)
    h = m.vectorize(lambda x, p: x**p, excluded={1})
    close(h(x, 2), x**2)
    k = m.vectorize(lambda x, *, scale: x * scale, excluded={"scale"})
    close(k(x, scale=3.0), x * 3)
    two = m.vectorize(lambda x: (x.sum(), x.max()), signature="(n)->(),()")
    s, mx = two(f32(3, 4))
    assert s.shape == (3,) and mx.shape == (3,)
    with pytest.raises(ValueError):
        g(f32(2, 3), f32(4))


def test_frompyfunc_ufunc():
    u = uo.frompyfunc(lambda x, y: x * y, 2, 1, identity=1)
    assert u.nin == 2 and u.nout == 1 and isinstance(u, uo.ufunc)
    a = f32(3, 4)
    close(u(a, a), a * a)
    close(u.reduce(a, axis=1), np.prod(a, axis=1))
    close(u.reduce(a, axis=None), np.prod(a), 1e-3)
    close(u.reduce(a, axis=0, keepdims=True), np.prod(a, axis=0, keepdims=True))
    close(u.accumulate(a, axis=1), np.cumprod(a, axis=1))
    close(u.outer(a[0], a[1, :2]), np.multiply.outer(a[0], a[1, :2]))
    close(morphax.jit(lambda x: u.reduce(x, axis=0))(a), np.prod(a, axis=0))
    add = uo.ufunc(lambda x, y: x + y, 2, 1, name="add2", identity=0)
    close(add.reduce(np.zeros((0, 2), np.float32)), np.zeros(2))
    with pytest.raises(ValueError):
        uo.frompyfunc(lambda x: x, 1, 1).reduce(a)


@pytest.mark.parametrize("shape,axis", [((10,), None), ((3, 9), 1), ((2, 5, 3), 0)])
@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_packbits(shape, axis, bitorder):
    a = RNG.integers(0, 2, shape).astype(np.int32)
    out = m.packbits(a, axis=axis, bitorder=bitorder)
    expect = np.packbits(a, axis=axis, bitorder=bitorder)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(np.asarray(out), expect)
    back = m.unpackbits(out, axis=axis, bitorder=bitorder)
    np.testing.assert_array_equal(np.asarray(back), np.unpackbits(expect, axis=axis, bitorder=bitorder))
    for count in (3, -2, 20):
        np.testing.assert_array_equal(
            np.asarray(m.unpackbits(out, axis=axis, count=count, bitorder=bitorder)),
            np.unpackbits(expect, axis=axis, count=count, bitorder=bitorder),
        )
    jitted = morphax.jit(lambda x: m.packbits(x, axis=axis, bitorder=bitorder))(a)
    np.testing.assert_array_equal(np.asarray(jitted), expect)


def test_printing():
    x = np.arange(3.0)
    assert m.array_repr(x) == "Array([0., 1., 2.], dtype=float32)"
    assert m.array_str(x) == "[0. 1. 2.]"
    opts = m.get_printoptions()
    assert "precision" in opts
    with m.printoptions(precision=2):
        assert m.get_printoptions()["precision"] == 2
    assert m.get_printoptions()["precision"] == opts["precision"]
    m.set_printoptions(**opts)


def test_save_load():
    x = f32(2, 3)
    buf = io.BytesIO()
    m.save(buf, morphax.numpy.asarray(x))
    buf.seek(0)
    y = m.load(buf)
    assert isinstance(y, morphax.Array)
    close(y, x)
    buf = io.BytesIO()
    m.savez(buf, x, b=x * 2)
    buf.seek(0)
    z = m.load(buf)
    close(z["b"], x * 2)


def test_load_restores_bfloat16():
    # JAX 0.10.2: jnp.save writes bfloat16 as NumPy's two-byte void ("V2") and jnp.load reads it
    # back as a bfloat16 Array (equinox's tree_deserialise_leaves needs the Array type back).
    buf = io.BytesIO()
    m.save(buf, m.array([1.5, -2.0], dtype=m.bfloat16))
    buf.seek(0)
    y = m.load(buf)
    assert isinstance(y, morphax.Array) and y.dtype == m.bfloat16
    assert y.tolist() == [1.5, -2.0]


def test_from_functions(tmp_path):
    data = np.arange(4, dtype=np.float32)
    out = m.frombuffer(data.tobytes(), dtype=np.float32)
    assert isinstance(out, morphax.Array)
    close(out, data)
    close(m.fromiter(iter(range(4)), dtype=np.float32), data)
    close(m.fromstring("0 1 2 3", dtype=np.float32, sep=" "), data)
    path = tmp_path / "d.bin"
    data.tofile(path)
    close(m.fromfile(path, dtype=np.float32), data)
    close(m.from_dlpack(data), data)
    assert m.frombuffer(np.arange(2.0).tobytes()).dtype == np.float32


def test_complex_warning_and_dtypes():
    assert issubclass(m.ComplexWarning, Warning)
    with pytest.raises(m.ComplexWarning), warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.warn("x", m.ComplexWarning, stacklevel=1)
    import ml_dtypes

    for name in ("float6_e2m3fn", "float6_e3m2fn", "int1", "uint1"):
        if hasattr(ml_dtypes, name):
            t = getattr(m, name)
            assert t.dtype == np.dtype(getattr(ml_dtypes, name))
            assert name in dir(m) and name in scalar_types.LAZY_NAMES  # made at first use
