"""`morphax.numpy.fft` and `lax.fft` against `numpy.fft` (values in float64, JAX's x32 dtypes:
complex64 spectra, float32 real outputs) over shapes, axes, `n`/`s` and `norm`, eagerly and
staged; samples under jit and vmap; `check_grads` through real-valued losses; the primitive's
transposes through the inner-product identity; JAX as an optional oracle."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax.test_util import check_grads

# The shared helpers live beside this file (pytest runs with --import-mode=importlib).
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from basic_api_check import assert_matches, check  # noqa: E402

NAMES = (
    "fft fft2 fftfreq fftn fftshift hfft ifft ifft2 ifftn ifftshift ihfft irfft irfft2 irfftn rfft rfft2 "
    "rfftfreq rfftn"
).split()
NORMS = (None, "backward", "ortho", "forward")
TOL = {"rtol": 1e-4, "atol": 1e-4}


def _rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    if dt.kind in "iu":
        return rng.integers(-5, 6, size=shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def _wide(a):
    a = np.asarray(a)
    if a.dtype.kind == "c":
        return a.astype(np.complex128)
    return a.astype(np.float64)


def _out_dtype(name, in_dtype):
    """JAX's x32 result dtype: real outputs for irfft*/hfft, complex64 for the rest."""
    if name.startswith("irfft") or name == "hfft":
        return np.dtype(np.float32)
    return np.dtype(np.complex64)


def test_every_name_exists():
    missing = [n for n in NAMES if not callable(getattr(jnp.fft, n, None))]
    assert not missing, missing
    listing = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "api" / "jax_numpy_fft.txt"
    if listing.exists():
        names = [line.strip() for line in listing.read_text().splitlines() if line.strip()]
        assert not [n for n in names if not hasattr(jnp.fft, n)]
    import morphax.numpy.fft as public

    assert public.fft is jnp.fft.fft
    assert lax.FftType.RFFT == 2 and callable(lax.fft)


# ------------------------------------------------------------------------------------------ 1-D


ONE_D = [
    # (shape, n, axis)
    ((8,), None, -1),
    ((7,), None, 0),
    ((3, 5), None, -1),
    ((3, 5), None, 0),
    ((3, 5), 8, -1),
    ((3, 5), 3, 1),
    ((4, 3, 6), None, 1),
    ((4, 3, 6), 4, 0),
    ((2, 1), None, -1),
    ((1,), 5, -1),
]


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("shape,n,axis", ONE_D)
@pytest.mark.parametrize("norm", NORMS)
def test_one_dimensional(name, shape, n, axis, norm):
    real_in = name in ("rfft", "ihfft")
    x = _rand(shape, np.float32 if real_in else np.complex64)
    if name in ("irfft", "hfft") and n is None and x.shape[axis] == 1:
        pytest.skip("NumPy refuses a zero-point inverse (JAX returns an empty array)")
    jf, nf = getattr(jnp.fft, name), getattr(np.fft, name)
    check(
        lambda a: jf(a, n=n, axis=axis, norm=norm),
        lambda a: nf(_wide(a), n=n, axis=axis, norm=norm),
        x,
        dtype=_out_dtype(name, x.dtype),
        **TOL,
    )


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64, np.complex128, np.bool_, np.float16])
def test_input_dtypes(name, dtype):
    """Integers, bools and half floats become float32/complex64 (float64 is canonicalized first)."""
    if name in ("rfft", "ihfft") and np.dtype(dtype).kind == "c":
        with pytest.raises(ValueError, match="real valued"):
            getattr(jnp.fft, name)(_rand((6,), dtype))
        return
    x = _rand((2, 6), dtype)
    tol = {"rtol": 2e-2, "atol": 2e-2} if dtype == np.float16 else TOL
    check(
        getattr(jnp.fft, name),
        lambda a: getattr(np.fft, name)(_wide(a)),
        x,
        dtype=_out_dtype(name, x.dtype),
        **tol,
    )


def test_python_scalars_and_lists():
    assert_matches(jnp.fft.fftn(3.0), np.fft.fftn(3.0), dtype=np.complex64)
    with pytest.raises(TypeError):
        jnp.fft.fft([1.0, 2.0])


# ------------------------------------------------------------------------------------------ n-D


ND = [
    # (shape, s, axes)
    ((4, 6), None, None),
    ((4, 6), (3, 8), None),
    ((2, 3, 4), None, None),
    ((2, 3, 4), None, (0, 2)),
    ((2, 3, 4), None, (2, 0)),
    ((2, 3, 4), (5, 2), (0, 1)),
    ((2, 3, 4), (4,), None),
    ((2, 3, 4), (3, 3), (-1, -3)),
    ((3, 4, 5), None, (1,)),
    ((2, 2, 3, 4), None, None),  # four axes: more than XLA's three
    ((5,), None, None),
]


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
@pytest.mark.parametrize("shape,s,axes", ND)
@pytest.mark.parametrize("norm", NORMS)
def test_n_dimensional(name, shape, s, axes, norm):
    x = _rand(shape, np.float32 if name == "rfftn" else np.complex64, seed=3)
    jf, nf = getattr(jnp.fft, name), getattr(np.fft, name)
    # NumPy 2 deprecates s without axes; JAX keeps the old meaning (the last len(s) axes).
    np_axes = tuple(range(len(shape) - len(s), len(shape))) if s is not None and axes is None else axes
    check(
        lambda a: jf(a, s=s, axes=axes, norm=norm),
        lambda a: nf(_wide(a), s=s, axes=np_axes, norm=norm),
        x,
        dtype=_out_dtype(name, x.dtype),
        **TOL,
    )


TWO_D = [
    ((4, 6), None, (-2, -1)),
    ((3, 4, 6), None, (0, 2)),
    ((3, 4, 6), (5, 4), (2, 1)),
    ((3, 4, 6), (2, 9), (-2, -1)),
]


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2"])
@pytest.mark.parametrize("shape,s,axes", TWO_D)
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_two_dimensional(name, shape, s, axes, norm):
    x = _rand(shape, np.float32 if name == "rfft2" else np.complex64, seed=4)
    jf, nf = getattr(jnp.fft, name), getattr(np.fft, name)
    check(
        lambda a: jf(a, s=s, axes=axes, norm=norm),
        lambda a: nf(_wide(a), s=s, axes=axes, norm=norm),
        x,
        dtype=_out_dtype(name, x.dtype),
        **TOL,
    )


def test_round_trips():
    x = _rand((3, 7), np.float32)
    np.testing.assert_allclose(jnp.fft.irfft(jnp.fft.rfft(x), n=7), x, atol=1e-5)
    np.testing.assert_allclose(jnp.fft.ifftn(jnp.fft.fftn(x)).real, x, atol=1e-5)
    np.testing.assert_allclose(jnp.fft.hfft(jnp.fft.ihfft(x), n=7), x, atol=1e-5)


# ---------------------------------------------------------------------- frequencies and shifts


@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("d", [1.0, 0.1, 3])
def test_freqs(n, d):
    assert_matches(jnp.fft.fftfreq(n, d), np.fft.fftfreq(n, d), dtype=np.float32)
    assert_matches(jnp.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d), dtype=np.float32)
    assert_matches(jnp.fft.fftfreq(n, d, dtype=np.float16), np.fft.fftfreq(n, d), dtype=np.float16)


def test_freq_traced_spacing_and_errors():
    f = morphax.jit(lambda d: jnp.fft.fftfreq(6, d))
    assert_matches(f(jnp.asarray(0.5)), np.fft.fftfreq(6, 0.5), dtype=np.float32)
    assert jnp.fft.fftfreq(0).shape == (0,)
    with pytest.raises(ValueError, match="only takes an int"):
        jnp.fft.fftfreq([4])
    with pytest.raises(ValueError, match="single value"):
        jnp.fft.rfftfreq(4, [1.0])


@pytest.mark.parametrize("shape", [(), (5,), (4,), (3, 4), (2, 3, 5)])
@pytest.mark.parametrize("axes", [None, 0, -1, (0,), (-1, 0)])
def test_shifts(shape, axes):
    if shape == ():
        # NumPy's roll fails on rank 0; there is nothing to shift.
        if axes is None:
            assert_matches(jnp.fft.fftshift(np.float32(2.0)), np.float32(2.0))
            assert_matches(jnp.fft.ifftshift(np.float32(2.0)), np.float32(2.0))
        return
    if isinstance(axes, tuple) and len(shape) < len(set(a % max(len(shape), 1) for a in axes)):
        return
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    check(lambda a: jnp.fft.fftshift(a, axes), lambda a: np.fft.fftshift(a, axes), x)
    check(lambda a: jnp.fft.ifftshift(a, axes), lambda a: np.fft.ifftshift(a, axes), x)


# ----------------------------------------------------------------------------- jit and vmap


def test_jit_samples():
    x = _rand((3, 6), np.float32)
    for name, kw in [("fft", {"n": 8}), ("rfft", {"axis": 0}), ("irfft", {"norm": "ortho"}), ("fft2", {})]:
        jf = morphax.jit(lambda a, _n=name, _k=kw: getattr(jnp.fft, _n)(a, **_k))
        assert_matches(jf(x), getattr(np.fft, name)(_wide(x), **kw), dtype=_out_dtype(name, x.dtype), **TOL)


@pytest.mark.parametrize("in_axis", [0, 1, -1])
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "fftn", "rfft2", "irfftn", "fftshift"])
def test_vmap_samples(name, in_axis):
    x = _rand((3, 4, 5), np.complex64 if name in ("ifft", "irfft", "irfftn") else np.float32, seed=9)
    f = getattr(jnp.fft, name)
    got = morphax.vmap(f, in_axes=in_axis)(x)
    want = np.stack([np.asarray(f(np.take(x, i, axis=in_axis))) for i in range(x.shape[in_axis])])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_vmap_of_grad():
    x = _rand((3, 6), np.float32)

    def loss(v):
        y = jnp.fft.rfft(v)
        return jnp.sum(jnp.real(y) ** 2 + jnp.imag(y) ** 2)

    got = morphax.vmap(morphax.grad(loss))(x)
    want = np.stack([np.asarray(morphax.grad(loss)(r)) for r in x])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------ gradients


def _loss(fn):
    # A real-valued loss that sees both parts of a complex spectrum, non-quadratically.
    def loss(x):
        y = fn(x)
        if np.dtype(y.dtype).kind == "c":
            return jnp.sum(jnp.real(y) ** 2 + jnp.sin(jnp.imag(y)))
        return jnp.sum(y**2 * jnp.cos(y))

    return loss


GRAD_CASES = [
    ("fft", lambda x: jnp.fft.fft(x), (2, 5), np.complex128),
    ("fft-n-axis", lambda x: jnp.fft.fft(x, n=6, axis=0, norm="ortho"), (3, 4), np.complex128),
    ("fft-real-input", lambda x: jnp.fft.fft(x), (2, 5), np.float64),
    ("ifft", lambda x: jnp.fft.ifft(x, norm="forward"), (4, 3), np.complex128),
    ("rfft", lambda x: jnp.fft.rfft(x), (2, 6), np.float64),
    ("rfft-odd", lambda x: jnp.fft.rfft(x, n=5, axis=0), (4, 3), np.float64),
    ("irfft", lambda x: jnp.fft.irfft(x), (2, 4), np.complex128),
    ("irfft-odd", lambda x: jnp.fft.irfft(x, n=7, norm="ortho"), (3, 4), np.complex128),
    ("rfftn", lambda x: jnp.fft.rfftn(x, axes=(0, 2)), (3, 2, 4), np.float64),
    ("irfft2", lambda x: jnp.fft.irfft2(x, s=(3, 5)), (3, 3), np.complex128),
    ("hfft", lambda x: jnp.fft.hfft(x), (4,), np.complex128),
    ("ihfft", lambda x: jnp.fft.ihfft(x), (5,), np.float64),
]


@pytest.mark.parametrize("name,fn,shape,dtype", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_check_grads(name, fn, shape, dtype):
    with morphax.enable_x64():
        x = jnp.asarray(_rand(shape, dtype, seed=11))
        check_grads(_loss(fn), (x,), order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)
        check_grads(fn, (x,), order=1, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_check_grads_float32():
    x = jnp.asarray(_rand((2, 6), np.float32, seed=12))
    check_grads(_loss(jnp.fft.rfft), (x,), order=2)
    check_grads(_loss(jnp.fft.irfft), (jnp.asarray(_rand((2, 4), np.complex64, seed=13)),), order=2)


def test_grad_of_energy_is_parseval():
    # d/dx sum|fft x|^2 = 2 N x for real x (Parseval).
    x = _rand((8,), np.float32)
    g = morphax.grad(lambda v: jnp.sum(jnp.abs(jnp.fft.fft(v)) ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * 8 * x, rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------- the primitive's rules


def _ip(a, b):
    """The plain bilinear form the transposes are taken against: Re(sum(a * b))."""
    return float(np.real(np.sum(_wide(a).astype(np.complex128) * _wide(b).astype(np.complex128))))


TRANSPOSE_CASES = [
    ("fft", (2, 5), (5,)),
    ("fft", (2, 3, 4), (3, 4)),
    ("ifft", (6,), (6,)),
    ("ifft", (2, 2, 3, 2), (2, 3, 2)),
    ("rfft", (3, 6), (6,)),
    ("rfft", (3, 5), (5,)),
    ("rfft", (2, 3, 4), (3, 4)),
    ("rfft", (1,), (1,)),
    ("irfft", (2, 4), (6,)),
    ("irfft", (2, 4), (7,)),
    ("irfft", (3, 3), (3, 4)),
    ("irfft", (2, 3, 2), (2, 3, 3)),
    ("irfft", (1,), (1,)),
]


@pytest.mark.parametrize("kind,shape,lengths", TRANSPOSE_CASES)
def test_transpose_inner_product(kind, shape, lengths):
    rng = np.random.default_rng(5)
    with morphax.enable_x64():
        real_in = kind == "rfft"
        x = rng.standard_normal(shape) + (0 if real_in else 1j * rng.standard_normal(shape))
        x = jnp.asarray(x)

        def f(v):
            return lax.fft(v, kind, lengths)

        y = np.asarray(f(x))
        c = rng.standard_normal(y.shape) + (1j * rng.standard_normal(y.shape) if y.dtype.kind == "c" else 0)
        c = jnp.asarray(c.astype(y.dtype))
        (ct,) = morphax.linear_transpose(f, x)(c)
        assert ct.dtype == x.dtype and ct.shape == x.shape
        # <f(x), c> = <x, f^T(c)>, with f applied to a fresh direction t (f is linear).
        t = jnp.asarray(rng.standard_normal(shape) + (0 if real_in else 1j * rng.standard_normal(shape)))
        np.testing.assert_allclose(_ip(f(t), c), _ip(t, ct), rtol=1e-10, atol=1e-10)
        (ct_vjp,) = morphax.vjp(f, x)[1](c)
        np.testing.assert_allclose(np.asarray(ct_vjp), np.asarray(ct), rtol=1e-12, atol=1e-12)


def test_lax_fft_dtypes_and_jaxpr():
    x = _rand((3, 4), np.float32)
    assert lax.fft(x, "rfft", (4,)).dtype == np.complex64
    assert lax.fft(x, lax.FftType.FFT, (4,)).dtype == np.complex64
    assert lax.fft(x, "FFT", ()).dtype == np.complex64  # no axes: only the conversion
    assert lax.fft(lax.fft(x, "rfft", (3, 4)), "irfft", (3, 4)).dtype == np.float32
    text = str(morphax.make_jaxpr(lambda v: lax.fft(v, "rfft", (3, 4)))(x))
    assert "fft[" in text and "fft_lengths=(3, 4)" in text
    with morphax.enable_x64():
        assert lax.fft(np.ones(4), "rfft", (4,)).dtype == np.complex128
        assert lax.fft(np.ones(4, np.complex128), "irfft", (6,)).dtype == np.float64


def test_lax_fft_errors():
    x = jnp.asarray(_rand((3, 4), np.complex64))
    with pytest.raises(ValueError, match="Unknown FFT type"):
        lax.fft(x, "dft", (4,))
    with pytest.raises(TypeError, match="Unknown FFT type"):
        lax.fft(x, 7, (4,))
    with pytest.raises(ValueError, match="real valued"):
        lax.fft(x, "rfft", (4,))
    with pytest.raises(ValueError, match=r"minor dimensions.*\(5,\)"):
        lax.fft(x, "fft", (5,))
    with pytest.raises(ValueError, match="IRFFT input shape"):
        lax.fft(x, "irfft", (4,))
    with pytest.raises(ValueError, match="at least as many dimensions"):
        lax.fft(x, "fft", (2, 3, 4))
    with pytest.raises(ValueError, match="float32 or float64"):
        lax.fft(jnp.ones(4, jnp.float16), "rfft", (4,))


def test_numpy_fft_errors():
    x = _rand((3, 4), np.float32)
    with pytest.raises(ValueError, match="multiple axes"):
        jnp.fft.fft(x, axis=(0,))
    with pytest.raises(ValueError, match="only supports 2 axes"):
        jnp.fft.fft2(x, axes=(0,))
    with pytest.raises(ValueError, match="repeated axes"):
        jnp.fft.fftn(x, axes=(0, -2))
    with pytest.raises(ValueError, match="Invalid norm"):
        jnp.fft.fft(x, norm="bad")
    with pytest.raises(ValueError, match="positive"):
        jnp.fft.fft(x, n=0)
    with pytest.raises(ValueError, match="different lengths"):
        jnp.fft.fftn(x, s=(2,), axes=(0, 1))
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.fft.fft(x, axis=2)


def test_empty_and_size_one():
    assert jnp.fft.fft(np.ones((0,), np.float32)).shape == (0,)
    assert jnp.fft.fft(np.ones((2, 0, 3), np.float32), axis=0).shape == (2, 0, 3)
    out = jnp.fft.irfft(np.ones((1,), np.complex64))
    assert out.shape == (0,) and out.dtype == np.float32
    assert_matches(
        jnp.fft.rfft(np.ones((2, 1), np.float32)), np.fft.rfft(np.ones((2, 1))), dtype=np.complex64
    )


# -------------------------------------------------------------------------- JAX as an oracle


def test_against_jax():
    jax = pytest.importorskip("jax")
    jjnp = jax.numpy
    x = _rand((3, 4, 5), np.float32, seed=21)
    z = _rand((3, 4, 5), np.complex64, seed=22)
    calls = [
        ("fft", (z,), {"n": 7, "axis": 1, "norm": "ortho"}),
        ("ifft", (x,), {"norm": "forward"}),
        ("rfft", (x,), {"axis": 0}),
        ("irfft", (z,), {"n": 9}),
        ("hfft", (z,), {"norm": "ortho"}),
        ("ihfft", (x,), {"n": 6, "norm": "forward"}),
        ("fftn", (x,), {"axes": (2, 0), "s": (4, 2)}),
        ("irfftn", (z,), {"axes": (0, 2)}),
        ("rfft2", (x,), {"norm": "ortho"}),
        ("irfft2", (z,), {"s": (3, 6), "axes": (2, 1)}),
        ("fftshift", (x,), {"axes": (0, 2)}),
        ("ifftshift", (x,), {}),
        ("fftfreq", (7, 0.3), {}),
        ("fftfreq", (6,), {"dtype": np.int32}),
        ("rfftfreq", (5,), {"dtype": np.int32}),
        ("fft", (np.arange(6, dtype=np.int32),), {}),
        ("fftn", (np.float32(2.0),), {"axes": ()}),
    ]
    for name, args, kw in calls:
        got = getattr(jnp.fft, name)(*args, **kw)
        want = getattr(jjnp.fft, name)(*args, **kw)
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
        assert got.shape == want.shape, (name, got.shape, want.shape)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4, err_msg=name)
