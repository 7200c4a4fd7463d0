"""Products (`dot`, `matmul`, `vdot`, `inner`, `outer`, `tensordot`, `kron`, `einsum`) against
NumPy for every rank combination, with JAX's result dtypes, traced through make_jaxpr; einsum
over many subscript patterns against np.einsum in float64; bad shapes raise naming both shapes."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp

# The shared helpers live beside this file (pytest runs with --import-mode=importlib).
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from basic_api_check import assert_matches, check, rand, staged  # noqa: E402

RNG = np.random.default_rng(7)


def _f32(shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _ref64(fn):
    """NumPy reference computed in float64/complex128 (compared at float32 tolerance)."""

    def ref(*args):
        wide = [
            a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) if a.dtype.kind in "fc" else a
            for a in args
        ]
        return fn(*wide)

    return ref


SHAPES = [(), (3,), (2, 3), (4, 2, 3)]


def _dot_partner(sa, sb):
    """Adjust sb so that np.dot(a, b) is defined."""
    if not sa or not sb:
        return sb
    k = sa[-1]
    if len(sb) == 1:
        return (k,)
    return sb[:-2] + (k, sb[-1])


@pytest.mark.parametrize("sa", SHAPES)
@pytest.mark.parametrize("sb", SHAPES)
def test_dot_all_ranks(sa, sb):
    sb = _dot_partner(sa, sb)
    a, b = _f32(sa), _f32(sb)
    check(jnp.dot, _ref64(np.dot), a, b, dtype=np.float32, rtol=1e-5, atol=1e-5)
    check(lambda x, y: x.dot(y), _ref64(np.dot), a, b, dtype=np.float32, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "da,db,expected",
    [
        (np.int32, np.int32, np.int32),
        (np.int8, np.int8, np.int8),
        (np.int8, np.float16, np.float16),
        (np.float32, np.complex64, np.complex64),
        (np.bool_, np.bool_, np.bool_),
        (np.uint8, np.int8, np.int16),
    ],
)
@pytest.mark.parametrize("name", ["dot", "matmul", "inner", "tensordot", "einsum"])
def test_product_dtypes(name, da, db, expected):
    a, b = rand(RNG, (2, 3), da), rand(RNG, (3, 3), db)
    fns = {
        "dot": (jnp.dot, np.dot),
        "matmul": (jnp.matmul, np.matmul),
        "inner": (jnp.inner, np.inner),
        "tensordot": (lambda x, y: jnp.tensordot(x, y, 1), lambda x, y: np.tensordot(x, y, 1)),
        "einsum": (lambda x, y: jnp.einsum("ij,jk->ik", x, y), lambda x, y: np.einsum("ij,jk->ik", x, y)),
    }
    jf, nf = fns[name]
    want = lambda x, y: nf(x.astype(np.result_type(x, y)), y.astype(np.result_type(x, y)))
    check(jf, lambda x, y: want(x, y).astype(expected), a, b, dtype=expected, rtol=2e-2, atol=2e-2)


def test_weak_and_preferred_element_type():
    assert jnp.dot(2.0, 3.0).weak_type
    assert not jnp.dot(jnp.ones(3), 2.0).weak_type
    x = np.arange(6, dtype=np.int8).reshape(2, 3) * 40
    got = jnp.matmul(x, x.T, preferred_element_type=jnp.int32)
    assert_matches(got, x.astype(np.int32) @ x.T.astype(np.int32), dtype=np.int32)
    got = jnp.einsum("ij,kj->ik", x, x, preferred_element_type=jnp.float32)
    assert_matches(got, (x.astype(np.float32) @ x.T.astype(np.float32)), dtype=np.float32)
    got = jnp.dot(x, x.T, preferred_element_type=jnp.int32)
    assert_matches(got, x.astype(np.int32) @ x.T.astype(np.int32), dtype=np.int32)


@pytest.mark.parametrize(
    "sa,sb",
    [
        ((3,), (3,)),
        ((3,), (3, 4)),
        ((2, 3), (3,)),
        ((2, 3), (3, 4)),
        ((5, 2, 3), (3, 4)),
        ((2, 3), (5, 3, 4)),
        ((5, 2, 3), (5, 3, 4)),
        ((1, 2, 3), (5, 3, 4)),
        ((5, 1, 2, 3), (4, 3, 2)),
        ((6, 1, 2, 3), (1, 4, 3, 2)),
        ((3,), (6, 3, 2)),
        ((6, 2, 3), (3,)),
        ((2, 1, 2, 3), (1, 3, 3, 4)),
        ((0, 2, 3), (3, 0)),
        ((2, 0), (0, 3)),
    ],
)
def test_matmul(sa, sb):
    a, b = _f32(sa), _f32(sb)
    check(jnp.matmul, _ref64(np.matmul), a, b, dtype=np.float32, rtol=1e-5, atol=1e-5)
    check(lambda x, y: x @ y, _ref64(np.matmul), a, b, dtype=np.float32, rtol=1e-5, atol=1e-5)


def test_matmul_rmatmul_with_numpy_operand():
    a = _f32((2, 3))
    got = np.ones((4, 2), np.float32) @ jnp.asarray(a)
    assert_matches(got, np.ones((4, 2)) @ a, dtype=np.float32)


def test_matmul_errors():
    with pytest.raises(TypeError, match=r"\(2, 3\).*\(4, 5\)"):
        jnp.matmul(jnp.ones((2, 3)), jnp.ones((4, 5)))
    with pytest.raises(TypeError, match="core dimension"):
        jnp.ones(3) @ jnp.ones(4)
    with pytest.raises(ValueError, match="input operand 0 must have ndim at least 1"):
        jnp.matmul(jnp.float32(1), jnp.ones(3))
    with pytest.raises(ValueError, match=r"batch dimensions.*\(2, 3, 4\).*\(5, 4, 2\)"):
        jnp.matmul(jnp.ones((2, 3, 4)), jnp.ones((5, 4, 2)))
    with pytest.raises(TypeError, match="matmul requires ndarray"):
        jnp.matmul([1.0], jnp.ones(1))
    with pytest.raises(TypeError, match=r"dot: shapes \(2, 3\) and \(2,\) are not aligned"):
        jnp.dot(jnp.ones((2, 3)), jnp.ones(2))


def test_vdot_inner_outer_kron():
    c1 = (RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))).astype(np.complex64)
    c2 = (RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))).astype(np.complex64)
    check(jnp.vdot, _ref64(np.vdot), c1, c2, dtype=np.complex64, rtol=1e-5, atol=1e-5)
    check(jnp.vdot, _ref64(np.vdot), _f32((4,)), _f32((2, 2)), dtype=np.float32, rtol=1e-5, atol=1e-5)
    for sa, sb in [((3,), (3,)), ((2, 3), (4, 3)), ((), (2, 3)), ((2, 2, 3), (3,))]:
        check(jnp.inner, _ref64(np.inner), _f32(sa), _f32(sb), dtype=np.float32, rtol=1e-5, atol=1e-5)
    for sa, sb in [((3,), (4,)), ((2, 3), (2,)), ((), (3,))]:
        check(jnp.outer, _ref64(np.outer), _f32(sa), _f32(sb), dtype=np.float32, rtol=1e-6)
    check(jnp.outer, np.outer, np.array([True, False]), np.array([True, True, False]))
    for sa, sb in [((2, 2), (3, 3)), ((2,), (3, 2)), ((2, 1, 3), (2, 2)), ((), (2,))]:
        check(jnp.kron, _ref64(np.kron), _f32(sa), _f32(sb), dtype=np.float32, rtol=1e-6)
    a = _f32((2, 3, 4))
    check(lambda x, y: jnp.vecdot(x, y), lambda x, y: np.vecdot(x, y), a, _f32((3, 4)), rtol=1e-5, atol=1e-5)
    check(
        lambda x, y: jnp.vecdot(x, y, axis=1),
        lambda x, y: np.vecdot(x, y, axis=1),
        a,
        _f32((2, 3, 1)),
        rtol=1e-5,
        atol=1e-5,
    )
    with pytest.raises(TypeError, match="inner"):
        jnp.inner(jnp.ones(2), jnp.ones(3))


@pytest.mark.parametrize(
    "sa,sb,axes",
    [
        ((2, 3, 4), (3, 4, 5), 2),
        ((2, 3), (3, 4), 1),
        ((2, 3), (4, 5), 0),
        ((3, 4), (3, 4), 2),
        ((2, 3, 4), (4, 2, 5), ([0, 2], [1, 0])),
        ((2, 3, 4), (5, 3), (1, 1)),
        ((2, 3), (3, 2), ((0, 1), (1, 0))),
    ],
)
def test_tensordot(sa, sb, axes):
    check(
        lambda x, y: jnp.tensordot(x, y, axes),
        _ref64(lambda x, y: np.tensordot(x, y, axes)),
        _f32(sa),
        _f32(sb),
        dtype=np.float32,
        rtol=1e-5,
        atol=1e-5,
    )


def test_tensordot_errors():
    with pytest.raises(TypeError, match="equal length"):
        jnp.tensordot(jnp.ones((2, 3)), jnp.ones((3, 2)), ([0, 1], [0]))
    with pytest.raises(TypeError, match=r"shape mismatch.*\(2, 3\).*\(2, 3\)"):
        jnp.tensordot(jnp.ones((2, 3)), jnp.ones((2, 3)), 1)
    with pytest.raises(TypeError, match="axes"):
        jnp.tensordot(jnp.ones((2, 3)), jnp.ones((3, 2)), 3)


# -------------------------------------------------------------------------------------- einsum

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),  # implicit output
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ii->", [(4, 4)]),  # trace
    ("ii->i", [(4, 4)]),  # diagonal
    ("ii", [(3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("iji->ij", [(3, 2, 3)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->i", [(5,), (5,)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),  # batch matmul
    ("bij,bjk->kib", [(5, 2, 3), (5, 3, 4)]),
    ("...ij,...jk->...ik", [(6, 2, 3), (6, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (5, 3, 4)]),  # ellipsis broadcasting
    ("...ij,jk", [(2, 2, 3), (3, 4)]),
    ("i...->...", [(3, 2, 4)]),
    ("...,...->...", [(2, 1), (3,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 5), (5, 2)]),  # 4-operand chain
    ("ab,cd,bc,de->ea", [(2, 3), (4, 5), (3, 4), (5, 2)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ijk,jil->kl", [(3, 2, 4), (2, 3, 5)]),
    ("ii,ij->j", [(3, 3), (3, 4)]),  # diagonal inside a pairwise contraction
    ("ij,jj->ij", [(2, 3), (3, 3)]),
    ("ijk,k->ij", [(2, 3, 4), (4,)]),
    ("ijk,ijk->", [(2, 3, 4), (2, 3, 4)]),
    ("i,->i", [(3,), ()]),
    ("ij,kl->ijkl", [(2, 3), (4, 2)]),
    ("abc,cd,ae->bde", [(2, 3, 4), (4, 5), (2, 6)]),
    ("ij,j->i", [(2, 3), (1,)]),  # size-1 broadcasting of a contracted label
]


@pytest.mark.parametrize(
    "spec,shapes", EINSUM_CASES, ids=[f"{s}-{i}" for i, (s, _) in enumerate(EINSUM_CASES)]
)
@pytest.mark.parametrize("optimize", ["auto", False, "greedy"])
def test_einsum(spec, shapes, optimize):
    ops = [_f32(s) for s in shapes]
    check(
        lambda *xs: jnp.einsum(spec, *xs, optimize=optimize),
        lambda *xs: np.einsum(spec, *[x.astype(np.float64) for x in xs]),
        *ops,
        dtype=np.float32,
        rtol=1e-4,
        atol=1e-4,
    )


def test_einsum_x64_matches_numpy_in_float64():
    with morphax.config._override("jax_enable_x64", True):
        for spec, shapes in EINSUM_CASES[:12] + EINSUM_CASES[19:22]:
            ops = [RNG.standard_normal(s) for s in shapes]
            got = jnp.einsum(spec, *ops)
            assert got.dtype == np.float64
            np.testing.assert_allclose(np.asarray(got), np.einsum(spec, *ops), rtol=1e-12, atol=1e-12)


def test_einsum_dtypes_and_forms():
    i8 = np.arange(6, dtype=np.int8).reshape(2, 3)
    check(lambda x: jnp.einsum("ij,ij->i", x, x), lambda x: np.einsum("ij,ij->i", x, x), i8, dtype=np.int8)
    b = np.array([[True, False], [True, True]])
    check(lambda x: jnp.einsum("ij,jk->ik", x, x), lambda x: np.einsum("ij,jk->ik", x, x), b, dtype=np.bool_)
    check(lambda x: jnp.einsum("ii->", x), lambda x: np.einsum("ii->", x), b, dtype=np.bool_)
    c = (RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))).astype(np.complex64)
    check(
        lambda x, y: jnp.einsum("ij,jk->ik", x, y),
        _ref64(lambda x, y: np.einsum("ij,jk->ik", x, y)),
        c,
        _f32((3, 2)),
        dtype=np.complex64,
        rtol=1e-5,
        atol=1e-5,
    )
    # Interleaved (operand, sublist) form.
    a, m = _f32((2, 3)), _f32((3, 4))
    check(
        lambda x, y: jnp.einsum(x, [0, 1], y, [1, 2], [0, 2]),
        _ref64(lambda x, y: np.einsum(x, [0, 1], y, [1, 2], [0, 2])),
        a,
        m,
        dtype=np.float32,
        rtol=1e-5,
        atol=1e-5,
    )
    out = jnp.einsum("i,->i", 2.0 * jnp.ones(3), 1.5)
    assert_matches(out, np.full(3, 3.0), dtype=np.float32, weak=False)


def test_einsum_path_and_errors():
    path, report = jnp.einsum_path("ij,jk,kl->il", jnp.ones((2, 3)), jnp.ones((3, 4)), jnp.ones((4, 5)))
    # As in JAX, the path is opt_einsum's (no leading 'einsum_path' entry, unlike NumPy's).
    assert len(path) == 2 and all(isinstance(p, tuple) for p in path) and "Optimized" in str(report)
    with pytest.raises(ValueError, match="einsum"):
        jnp.einsum("ij,jk->ik", jnp.ones((2, 3)), jnp.ones((4, 5)))
    with pytest.raises(ValueError):
        jnp.einsum("ij->k", jnp.ones((2, 3)))
    with pytest.raises(NotImplementedError, match="out"):
        jnp.einsum("i->i", jnp.ones(2), out=jnp.ones(2))
    with pytest.raises(TypeError, match="einsum"):
        jnp.einsum("i,i->", [1.0, 2.0], jnp.ones(2))


def test_einsum_trace_is_dot_generals():
    closed = morphax.make_jaxpr(lambda a, b, c: jnp.einsum("ij,jk,kl->il", a, b, c))(
        jnp.ones((2, 3)), jnp.ones((3, 40)), jnp.ones((40, 2))
    )
    names = [e.primitive.name for e in closed.jaxpr.eqns]
    assert names.count("dot_general") == 2, names
    out = staged(
        lambda a: jnp.einsum("ii->i", a), jnp.asarray(np.arange(9.0, dtype=np.float32).reshape(3, 3))
    )
    assert_matches(out, np.array([0.0, 4.0, 8.0]))
