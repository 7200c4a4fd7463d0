"""Transformation-matrix cases for morphax.numpy.linalg and morphax.numpy.fft: batched matrices
(the linalg functions work over leading dimensions), well-conditioned inputs with distinct
eigenvalues / singular values so that the decompositions' derivatives are defined, and the
complex-to-real and real-to-complex transforms with both kinds of input."""

from __future__ import annotations

import pathlib
import sys

import numpy as np

import morphax.numpy as jnp

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from fn_matrix import Case, args, complexes, const, normal  # noqa: E402


def _spd(*batch, n=3):
    """Symmetric positive definite matrices with well-separated eigenvalues."""

    def build(rng):
        q, _ = np.linalg.qr(rng.standard_normal(batch + (n, n)))
        eig = np.arange(1, n + 1) * 1.5 + rng.uniform(0, 0.3, batch + (n,))
        return ((q * eig[..., None, :]) @ np.swapaxes(q, -1, -2)).astype(np.float32)

    return build


def _well_conditioned(*shape):
    """Matrices near a multiple of the identity (square) with distinct singular values."""

    def build(rng):
        a = rng.standard_normal(shape) * 0.3
        m, n = shape[-2:]
        a[..., np.arange(min(m, n)), np.arange(min(m, n))] += np.arange(1, min(m, n) + 1) + 1.0
        return a.astype(np.float32)

    return build


def _L(name, builder, **kw):
    return Case(name, builder, module="linalg", **kw)


LINALG = [
    _L("cholesky", args(_spd(2))),
    _L("cholesky", args(_spd(n=4)), label="single"),
    _L("cond", args(_well_conditioned(2, 3, 3))),
    _L("cond", args(_well_conditioned(3, 3), const("fro")), label="fro"),
    _L("cross", args(normal(4, 3), normal(4, 3))),
    _L("det", args(_well_conditioned(2, 3, 3))),
    _L("diagonal", args(normal(2, 3, 4))),
    _L("diagonal", args(normal(2, 4, 4)), kwargs={"offset": 1}, label="offset"),
    _L(
        "eig",
        args(_spd(2)),
        fn=lambda a: jnp.linalg.eig(a)[0],
        ref=lambda a: np.linalg.eig(a)[0].astype(np.complex64),
        # As in JAX, eig computes eigenvectors, whose derivatives need lax.linalg.eig's opt-in
        # (enable_eigvec_derivs); eigvals below is differentiated.
        grad=False,
        rtol=1e-4,
        atol=1e-4,
    ),
    _L(
        "eigvals",
        args(_spd(2)),
        ref=lambda a: np.linalg.eigvals(a).astype(np.complex64),
        rtol=1e-4,
        atol=1e-4,
    ),
    _L(
        "eigh",
        args(_spd(2)),
        fn=lambda a: jnp.linalg.eigh(a)[0],
        ref=lambda a: np.linalg.eigh(a)[0],
        rtol=1e-4,
    ),
    _L(
        "eigh",
        args(_spd(2)),
        # Eigenvectors up to sign: compare |v| with NumPy; derivatives of v v^T are sign-free.
        fn=lambda a: (lambda v: v * v)(jnp.linalg.eigh(a)[1]),
        ref=lambda a: np.linalg.eigh(a)[1] ** 2,
        rtol=1e-4,
        atol=1e-4,
        label="vectors",
    ),
    _L("eigvalsh", args(_spd(2)), rtol=1e-4),
    _L("inv", args(_well_conditioned(2, 3, 3)), rtol=1e-4, atol=1e-4),
    _L(
        "lstsq",
        args(_well_conditioned(5, 3), normal(5, 2)),
        fn=lambda a, b: jnp.linalg.lstsq(a, b)[0],
        ref=lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
        rtol=1e-4,
        atol=1e-4,
    ),
    _L("matmul", args(normal(2, 3, 4), normal(2, 4, 2))),
    _L("matrix_norm", args(normal(2, 3, 4)), ref=lambda a: np.linalg.norm(a, axis=(-2, -1))),
    _L(
        "matrix_norm",
        args(_well_conditioned(2, 3, 3)),
        kwargs={"ord": 2},
        ref=lambda a: np.linalg.norm(a, ord=2, axis=(-2, -1)),
        rtol=1e-4,
        label="ord2",
    ),
    _L("matrix_power", args(_well_conditioned(2, 3, 3), const(3)), rtol=1e-4, atol=1e-4),
    _L("matrix_power", args(_well_conditioned(3, 3), const(-2)), rtol=1e-4, atol=1e-4, label="negative"),
    _L("matrix_rank", args(normal(2, 4, 3)), grad=False),
    _L("matrix_transpose", args(normal(2, 3, 4))),
    _L(
        "multi_dot",
        args(normal(2, 3), normal(3, 4), normal(4, 2)),
        fn=lambda a, b, c: jnp.linalg.multi_dot([a, b, c]),
        ref=lambda a, b, c: np.linalg.multi_dot([a, b, c]),
    ),
    _L("norm", args(normal(3, 4))),
    _L("norm", args(normal(2, 5)), kwargs={"ord": 1, "axis": -1}, label="vector-ord1"),
    _L("norm", args(_well_conditioned(3, 3)), kwargs={"ord": "nuc"}, rtol=1e-4, label="nuclear"),
    _L("outer", args(normal(3), normal(4))),
    _L("pinv", args(_well_conditioned(2, 4, 3)), rtol=1e-4, atol=1e-4),
    _L("qr", args(_well_conditioned(2, 4, 3)), rtol=1e-4, atol=1e-4),
    _L("qr", args(_well_conditioned(3, 3)), kwargs={"mode": "r"}, rtol=1e-4, atol=1e-4, label="r"),
    _L(
        "slogdet",
        args(_well_conditioned(2, 3, 3)),
        fn=lambda a: jnp.linalg.slogdet(a)[1],
        ref=lambda a: np.linalg.slogdet(a)[1],
    ),  # fmt: skip
    _L("slogdet", args(_well_conditioned(2, 3, 3)), grad=False, label="both"),
    _L("solve", args(_well_conditioned(2, 3, 3), normal(2, 3, 2)), rtol=1e-4, atol=1e-4),
    _L("svd", args(_well_conditioned(2, 4, 3)), kwargs={"compute_uv": False}, rtol=1e-4),
    _L(
        "svd",
        args(_well_conditioned(4, 3)),
        # Singular vectors up to sign: u * u and v * v are sign-free, and differentiable.
        fn=lambda a: (lambda u, s, vh: (u * u, s, vh * vh))(*jnp.linalg.svd(a, full_matrices=False)),
        ref=lambda a: (lambda u, s, vh: (u * u, s, vh * vh))(*np.linalg.svd(a, full_matrices=False)),
        rtol=1e-4,
        atol=1e-4,
        label="vectors",
    ),
    _L("svdvals", args(_well_conditioned(2, 4, 3)), rtol=1e-4),
    _L("tensordot", args(normal(2, 3, 4), normal(3, 4, 2)), kwargs={"axes": 2}),
    _L(
        "tensorinv",
        lambda rng: (_well_conditioned(6, 6)(rng).reshape(2, 3, 6), 2),
        rtol=1e-4,
        atol=1e-4,
    ),
    _L(
        "tensorsolve",
        lambda rng: (_well_conditioned(6, 6)(rng).reshape(2, 3, 2, 3), normal(2, 3)(rng)),
        rtol=1e-4,
        atol=1e-4,
    ),
    _L("trace", args(normal(2, 3, 3))),
    _L("vecdot", args(normal(2, 4), normal(2, 4))),
    _L("vector_norm", args(normal(3, 4))),
    _L("vector_norm", args(normal(3, 4)), kwargs={"ord": 3, "axis": 0}, label="ord3"),
]


def _F(name, builder, **kw):
    return Case(name, builder, module="fft", **kw)


FFT = [
    _F("fft", args(complexes(3, 8))),
    _F("fft", args(normal(3, 8)), kwargs={"n": 6, "norm": "ortho"}, label="real-n6"),
    _F("ifft", args(complexes(3, 8)), kwargs={"axis": 0}),
    _F("fft2", args(complexes(2, 4, 6))),
    _F("ifft2", args(complexes(2, 4, 6)), kwargs={"norm": "forward"}),
    _F("fftn", args(complexes(2, 3, 4))),
    _F("ifftn", args(complexes(2, 3, 4)), kwargs={"axes": (0, 2)}),
    _F("rfft", args(normal(3, 8))),
    _F("irfft", args(complexes(3, 5))),
    _F("irfft", args(complexes(3, 5)), kwargs={"n": 9}, label="odd-n"),
    _F("rfft2", args(normal(2, 4, 6))),
    _F("irfft2", args(complexes(2, 4, 4))),
    _F("rfftn", args(normal(2, 3, 4))),
    _F("irfftn", args(complexes(2, 3, 3)), kwargs={"s": (3, 4), "axes": (1, 2)}),
    _F("hfft", args(complexes(3, 5))),
    _F("ihfft", args(normal(3, 8))),
    _F("fftshift", args(normal(4, 5))),
    _F("fftshift", args(complexes(4, 5)), kwargs={"axes": 0}, label="complex"),
    _F("ifftshift", args(normal(4, 5))),
    # The sample spacing is traced (JAX allows an array `d`); n is static.
    _F("fftfreq", lambda rng: (8, np.asarray(rng.uniform(0.5, 2.0), np.float32))),
    _F("rfftfreq", lambda rng: (9, np.asarray(rng.uniform(0.5, 2.0), np.float32))),
]

# A second operand shape (rank, batch dimensions, axis) for each function.
LINALG_SHAPES = [
    _L("cross", args(normal(2, 3, 3), normal(3, 3)), label="broadcast"),
    _L("det", args(_well_conditioned(4, 4)), label="single"),
    _L(
        "eig",
        args(_spd(n=4)),
        fn=lambda a: jnp.linalg.eig(a)[0],
        grad=False,
        ref=lambda a: np.linalg.eig(a)[0].astype(np.complex64),
        rtol=1e-4,
        atol=1e-4,
        label="single",
    ),  # fmt: skip
    # LAPACK leaves the order of eigenvalues unspecified: compare them sorted (real for SPD input).
    _L(
        "eigvals",
        args(_spd(2, 2)),
        fn=lambda a: jnp.sort(jnp.linalg.eigvals(a).real),
        ref=lambda a: np.sort(np.linalg.eigvals(a).real),
        rtol=1e-4,
        atol=1e-4,
        label="batch2",
    ),  # fmt: skip
    _L(
        "eigh",
        args(_spd(n=4)),
        fn=lambda a: jnp.linalg.eigh(a)[0],
        ref=lambda a: np.linalg.eigh(a)[0],
        rtol=1e-4,
        label="single",
    ),  # fmt: skip
    _L("eigvalsh", args(_spd(2, 2, n=2)), rtol=1e-4, label="batch2"),
    _L("inv", args(_well_conditioned(4, 4)), rtol=1e-4, atol=1e-4, label="single"),
    _L(
        "lstsq",
        args(_well_conditioned(6, 4), normal(6)),
        fn=lambda a, b: jnp.linalg.lstsq(a, b)[0],
        ref=lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
        rtol=1e-4,
        atol=1e-4,
        label="vector-b",
    ),  # fmt: skip
    _L("matmul", args(normal(3, 4), normal(4)), label="matvec"),
    _L("matrix_rank", args(normal(5, 2)), grad=False, label="single"),
    _L("matrix_transpose", args(normal(2, 2, 3, 4)), label="4d"),
    _L(
        "multi_dot",
        args(normal(3), normal(3, 4), normal(4)),
        fn=lambda a, b, c: jnp.linalg.multi_dot([a, b, c]),
        ref=lambda a, b, c: np.linalg.multi_dot([a, b, c]),
        label="vector-ends",
    ),  # fmt: skip
    _L("outer", args(normal(2), normal(5)), label="2x5"),
    _L("pinv", args(_well_conditioned(3, 5)), rtol=1e-4, atol=1e-4, label="wide"),
    _L(
        "slogdet",
        args(_well_conditioned(4, 4)),
        fn=lambda a: jnp.linalg.slogdet(a)[1],
        ref=lambda a: np.linalg.slogdet(a)[1],
        label="single",
    ),  # fmt: skip
    _L("solve", args(_well_conditioned(3, 3), normal(3)), rtol=1e-4, atol=1e-4, label="vector-b"),
    _L("svdvals", args(_well_conditioned(3, 5)), rtol=1e-4, label="wide"),
    _L("tensordot", args(normal(3, 4), normal(4, 5)), kwargs={"axes": 1}, label="axes1"),
    _L(
        "tensorinv",
        lambda rng: (_well_conditioned(4, 4)(rng).reshape(4, 2, 2), 1),
        rtol=1e-4,
        atol=1e-4,
        label="ind1",
    ),  # fmt: skip
    _L(
        "tensorsolve",
        lambda rng: (_well_conditioned(4, 4)(rng).reshape(4, 2, 2), normal(4)(rng)),
        rtol=1e-4,
        atol=1e-4,
        label="2x2",
    ),  # fmt: skip
    _L("trace", args(normal(3, 4)), kwargs={"offset": 1}, label="offset"),
    _L("vecdot", args(normal(3, 2, 4), normal(4)), label="broadcast"),
    _L("vector_norm", args(normal(2, 3, 4)), kwargs={"axis": (1, 2)}, label="axes"),
]

FFT_SHAPES = [
    _F("fft", args(complexes(8)), label="1d"),
    _F("ifft", args(complexes(2, 3, 6)), label="3d"),
    _F("fft2", args(complexes(4, 6)), kwargs={"s": (3, 4)}, label="2d-s"),
    _F("ifft2", args(complexes(3, 4)), label="2d"),
    _F("fftn", args(complexes(4, 6)), kwargs={"axes": (0,)}, label="axis0"),
    _F("ifftn", args(complexes(3, 4)), label="2d"),
    _F("rfft", args(normal(2, 3, 7)), kwargs={"axis": 1}, label="axis1"),
    _F("irfft", args(complexes(5)), label="1d"),
    _F("rfft2", args(normal(4, 6)), label="2d"),
    _F("irfft2", args(complexes(4, 4)), label="2d"),
    _F("rfftn", args(normal(4, 6)), label="2d"),
    _F("irfftn", args(complexes(4, 3)), label="2d"),
    _F("hfft", args(complexes(2, 3, 4)), kwargs={"axis": 1}, label="axis1"),
    _F("ihfft", args(normal(7)), label="1d"),
    _F("fftshift", args(normal(2, 3, 5)), kwargs={"axes": (0, 2)}, label="3d"),
    _F("ifftshift", args(normal(7)), label="1d"),
    _F("fftfreq", lambda rng: (5, np.asarray(rng.uniform(0.5, 2.0), np.float32)), label="odd"),
    _F("rfftfreq", lambda rng: (8, np.asarray(rng.uniform(0.5, 2.0), np.float32)), label="even"),
]

CASES = LINALG + FFT + LINALG_SHAPES + FFT_SHAPES
EXEMPT: dict[str, str] = {}
