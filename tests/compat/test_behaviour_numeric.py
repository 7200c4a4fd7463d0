"""JAX's behaviour in the details that libraries (optax, chex, flax, equinox, jaxtyping) and
users rely on: tracers are Arrays, scalar types compare, `*_like` of shape-dtype structs, round,
complex ordering, weak types of gradients, gradients at tie points, wrapping of weak Python ints,
rank promotion, and `lax.top_k`'s list. Every expected value here is what JAX 0.10 gives."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.core.trace import Tracer

# -- 1. tracers are instances of Array ------------------------------------------------------------
_TRANSFORMS = {
    "jit": lambda f: morphax.jit(f)(1.0),
    "grad": lambda f: morphax.grad(f)(1.0),
    "vjp": lambda f: morphax.vjp(f, 1.0),
    "jvp": lambda f: morphax.jvp(f, (1.0,), (1.0,)),
    "vmap": lambda f: morphax.vmap(f)(jnp.ones(3)),
    "checkpoint": lambda f: morphax.grad(morphax.checkpoint(f))(1.0),
    "scan": lambda f: lax.scan(lambda c, x: (f(c), x), 1.0, jnp.ones(2)),
    "while_loop": lambda f: lax.while_loop(lambda c: c < 10.0, f, 1.0),
    "cond": lambda f: lax.cond(True, f, f, 1.0),
    "custom_jvp": lambda f: morphax.grad(_custom_jvp_of(f))(1.0),
    "grad_of_vmap_of_jit": lambda f: morphax.grad(
        lambda x: morphax.vmap(morphax.jit(f))(x * jnp.ones(2)).sum()
    )(1.0),
}


def _custom_jvp_of(f):
    @morphax.custom_jvp
    def g(x):
        return f(x)

    @g.defjvp
    def g_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), f(t)

    return g


@pytest.mark.parametrize("name", sorted(_TRANSFORMS))
def test_tracers_are_arrays(name):
    seen = []

    def record(x):
        typed = type(x).__name__ == "TypedFloat" and x.dtype == jnp.float32
        seen.append(
            (
                isinstance(x, morphax.Array) or typed,
                isinstance(x, jnp.ndarray) or typed,
                isinstance(x, Tracer),
            )
        )
        return x * 2.0

    _TRANSFORMS[name](record)
    # (A custom_jvp rule under grad sees its Python-number primal as JAX 0.10.2's rule does: a
    # TypedFloat, a float with a dtype, not an Array.)
    assert seen and all(a and b for a, b, _ in seen), seen
    assert any(t for _, _, t in seen), "the function was never traced"


def test_array_instance_checks_outside_transformations():
    x = jnp.ones(3)
    assert isinstance(x, morphax.Array) and isinstance(x, jnp.ndarray)
    assert type(x) is morphax.Array  # the dispatch fast paths' test still means "concrete"
    for other in (np.ones(3), np.float32(1), 1.0, 1, True, None, [1.0], "a"):
        assert not isinstance(other, morphax.Array), other
        assert not isinstance(other, jnp.ndarray), other
    assert issubclass(Tracer, morphax.Array) and not issubclass(np.ndarray, morphax.Array)
    assert isinstance(x, (int, morphax.Array))


def test_tree_leaves_filtered_by_array_type_under_jit():
    # The optax idiom: keep the leaves that are arrays, inside a jitted update.
    def count(tree):
        return sum(isinstance(leaf, morphax.Array) for leaf in morphax.tree_util.tree_leaves(tree))

    tree = {"a": jnp.ones(2), "b": jnp.zeros(())}
    assert count(tree) == 2
    assert morphax.jit(lambda t: jnp.float32(count(t)))(tree) == 2


# -- 2. scalar types compare ----------------------------------------------------------------------
def test_scalar_types_compare_and_hash():
    assert jnp.float16 != jnp.float32
    assert not (jnp.float32 != jnp.float32)
    assert jnp.float32 == np.float32 and not (jnp.float32 != np.float32)
    assert jnp.float32 != "float32"  # as JAX: only the NumPy scalar type itself is equal
    assert hash(jnp.float32) == hash(np.float32)
    assert {jnp.float32: 1}[np.float32] == 1
    assert len({jnp.float16, jnp.float32, jnp.int32}) == 3


# -- 3. *_like accept anything with a shape and a dtype -------------------------------------------
class _ShapeDtype:
    shape = (2,)
    dtype = np.dtype(np.float16)


@pytest.mark.parametrize("fn", ["zeros_like", "ones_like", "empty_like", "full_like"])
def test_like_functions_accept_shape_dtype_structs(fn):
    f = getattr(jnp, fn)
    args = (7,) if fn == "full_like" else ()
    fill = 7 if fn == "full_like" else (1 if fn == "ones_like" else 0)
    s = morphax.ShapeDtypeStruct((2, 3), jnp.int32)
    out = f(s, *args)
    assert out.dtype == np.int32 and out.shape == (2, 3) and not out.weak_type
    if fn != "empty_like":
        np.testing.assert_array_equal(np.asarray(out), np.full((2, 3), fill, np.int32))
    assert f(s, *args, dtype=jnp.float32).dtype == np.float32
    assert f(s, *args, shape=(4,)).shape == (4,)
    assert f(_ShapeDtype(), *args).dtype == np.float16  # any object with shape and dtype
    # A weakly typed struct still gives a strong result, as in JAX.
    assert not f(morphax.ShapeDtypeStruct((), jnp.float32, weak_type=True), *args).weak_type
    assert morphax.jit(lambda: f(s, *args))().shape == (2, 3)
    with pytest.raises(TypeError, match=fn):
        f([1.0, 2.0], *args)


def test_full_like_of_struct_casts_fill_value():
    s = morphax.ShapeDtypeStruct((2,), jnp.int32)
    np.testing.assert_array_equal(np.asarray(jnp.full_like(s, 2.7)), [2, 2])
    np.testing.assert_array_equal(np.asarray(jnp.full_like(s, jnp.array([1, 2]))), [1, 2])


# -- 4. round() ----------------------------------------------------------------------------------
def test_round_operator():
    out = round(jnp.array(2.567))
    assert out.dtype == np.int32 and int(out) == 3
    out = round(jnp.float32(2.567), 1)
    assert out.dtype == np.float32 and abs(float(out) - 2.6) < 1e-6
    np.testing.assert_array_equal(np.asarray(round(jnp.array([1.5, 2.5, -0.5]))), [2, 2, 0])  # halves to even
    assert round(jnp.array([1, 2])).dtype == np.int32
    traced = morphax.jit(lambda x: round(x))(2.5)
    assert traced.dtype == np.int32 and int(traced) == 2
    np.testing.assert_array_equal(np.asarray(morphax.vmap(round)(jnp.array([0.4, 3.6]))), [0, 4])
    with morphax.enable_x64():
        assert round(jnp.array(2.5)).dtype == np.int64


# -- 10. lax.top_k returns a list ----------------------------------------------------------------
def test_top_k_returns_a_list():
    out = lax.top_k(jnp.array([1.0, 4.0, 3.0]), 2)
    assert type(out) is list and len(out) == 2
    np.testing.assert_array_equal(np.asarray(out[0]), [4.0, 3.0])
    np.testing.assert_array_equal(np.asarray(out[1]), [1, 2])
    assert type(morphax.jit(lambda x: lax.top_k(x, 1))(jnp.ones(3))) is list
    assert type(lax.approx_max_k(jnp.arange(5.0), 2)) is list
    assert type(lax.approx_min_k(jnp.arange(5.0), 2)) is list
    with pytest.raises(ValueError, match="top_k is not compatible with complex"):
        lax.top_k(jnp.array([1j, 2.0]), 1)


# -- 8. weak Python ints wrap into narrow integer dtypes -----------------------------------------
@pytest.mark.parametrize(
    "fn,want,dtype",
    [
        (lambda: jnp.uint8(1) + 300, 45, np.uint8),
        (lambda: jnp.int8(1) + 200, -55, np.int8),
        (lambda: jnp.int8(1) + (-300), -43, np.int8),
        (lambda: jnp.uint8(1) + (-3), 254, np.uint8),
        (lambda: jnp.uint32(1) + (-1), 0, np.uint32),
        (lambda: jnp.uint32(1) + (2**31 - 1), 2**31, np.uint32),
        (lambda: jnp.int8(3) * 1000, -72, np.int8),
        (lambda: jnp.maximum(jnp.uint8(1), 300), 44, np.uint8),
        (lambda: jnp.where(True, jnp.uint8(1), 300), 1, np.uint8),
        (lambda: jnp.full((), 300, dtype=jnp.uint8), 44, np.uint8),
        (lambda: jnp.full_like(jnp.uint8(1), 300), 44, np.uint8),
        (lambda: jnp.zeros(2, jnp.uint8).at[0].set(300)[0], 44, np.uint8),
        (lambda: morphax.jit(lambda x: x + 300)(jnp.uint8(1)), 45, np.uint8),
        (lambda: jnp.uint8(44) == 300, True, np.bool_),
    ],
)
def test_weak_python_int_wraps(fn, want, dtype):
    out = fn()
    assert out.dtype == dtype and not out.weak_type
    assert out.item() == want


def _weak_array(dtype, shape=(2,)):
    from morphax._src.prims.conversion import _convert_element_type

    return _convert_element_type(jnp.ones(shape, dtype), np.dtype(dtype), weak_type=True)


# JAX 0.10.2's answers (dtypes.lattice_result_type): operands that are all weak keep the join of
# their own dtypes, where jnp.result_type answers the kind's default (float32, int32).
@pytest.mark.parametrize(
    "fn, want",
    [
        (lambda: _weak_array(np.float16) + _weak_array(np.float16, (1,)), np.float16),
        (lambda: _weak_array(np.int16) + _weak_array(np.int8), np.int16),
        (lambda: _weak_array(np.float16) + _weak_array(np.int8), np.float16),
        (lambda: _weak_array(np.uint8) * _weak_array(np.int8), np.int16),
        (lambda: _weak_array(np.int8) - _weak_array(np.int8, (1,)), np.int8),
        (lambda: _weak_array(np.float16) + 1.0, np.float32),
        (lambda: _weak_array(np.float16) + _weak_array(np.float32), np.float32),
        (lambda: _weak_array(np.int8) + 3, np.int32),
        (lambda: jnp.sin(_weak_array(np.float16)), np.float16),
        (lambda: jnp.sin(_weak_array(np.int8)), np.float32),
        (lambda: jnp.where(True, _weak_array(np.int8), _weak_array(np.int8)), np.int8),
        (
            lambda: morphax.jit(lambda a, b: a + b)(_weak_array(np.float16), _weak_array(np.float16)),
            np.float16,
        ),
    ],
)
def test_all_weak_operands_keep_their_join(fn, want):
    out = fn()
    assert out.dtype == want and out.weak_type
    assert jnp.result_type(_weak_array(np.float16), _weak_array(np.float16)) == np.float32


def test_python_int_overflow_of_default_int_raises():
    # Beyond the default integer dtype (int32, int64 under x64) JAX raises, whatever the other
    # operand's dtype, floats included.
    for fn in (lambda: jnp.int8(1) + 2**40, lambda: jnp.uint32(1) + 2**31, lambda: jnp.float32(1) + 2**40):
        with pytest.raises(OverflowError, match="too large to convert to int32"):
            fn()
    # An explicit dtype does not wrap.
    with pytest.raises(OverflowError, match="asarray: Python int 300 out of bounds for uint8"):
        jnp.asarray(300, dtype=jnp.uint8)
    with morphax.enable_x64():
        assert (jnp.uint8(1) + 300).item() == 45
        assert (jnp.int32(1) + 2**31).item() == -(2**31) + 1
        assert (jnp.int8(1) + 2**40).item() == 1
        assert (jnp.uint64(1) + (-1)).item() == 0
        for big in (2**63, 2**64, -(2**63) - 1):
            with pytest.raises(OverflowError, match="too large to convert to int64"):
                jnp.uint64(1) + big


# -- 6. gradients keep JAX's weak types ----------------------------------------------------------
_S = np.float32(1.0)


def _weak(tree):
    return [bool(leaf.weak_type) for leaf in morphax.tree_util.tree_leaves(tree)]


@pytest.mark.parametrize(
    "name,fn,want",
    [
        ("grad", lambda: morphax.grad(lambda x: x * 2)(1.0), [True]),
        ("grad sin", lambda: morphax.grad(jnp.sin)(1.0), [True]),
        ("grad strong", lambda: morphax.grad(lambda x: x * 2)(jnp.float32(1.0)), [False]),
        ("grad weak times strong", lambda: morphax.grad(lambda x: x * jnp.float32(2))(1.0), [True]),
        ("grad broadcast", lambda: morphax.grad(lambda x: jnp.sum(x * jnp.ones(3)))(1.0), [True]),
        (
            "grad dict",
            lambda: morphax.grad(lambda p: p["a"] * p["b"])({"a": 1.0, "b": jnp.float32(2)}),
            [True, False],
        ),
        ("grad maximum", lambda: morphax.grad(lambda x: jnp.maximum(x, 0.0))(1.0), [True]),
        ("grad clip", lambda: morphax.grad(lambda x: jnp.clip(x, 0.0, 2.0))(1.0), [True]),
        ("grad relu", lambda: morphax.grad(morphax.nn.relu)(1.0), [True]),
        ("grad softplus", lambda: morphax.grad(morphax.nn.softplus)(1.0), [True]),
        ("value_and_grad", lambda: morphax.value_and_grad(lambda x: x * 2)(1.0), [True, True]),
        ("jit of grad", lambda: morphax.jit(morphax.grad(lambda x: x * 2))(1.0), [True]),
        ("vmap of grad", lambda: morphax.vmap(morphax.grad(lambda x: x * 2))(jnp.ones(2)), [False]),
        ("jvp weak", lambda: morphax.jvp(lambda x: x * 2, (1.0,), (1.0,)), [True, True]),
        ("jvp strong tangent", lambda: morphax.jvp(jnp.sin, (1.0,), (jnp.float32(1),)), [True, True]),
        (
            "jvp strong primal",
            lambda: morphax.jvp(lambda x: x * 2, (jnp.float32(1),), (1.0,)),
            [False, False],
        ),
        ("vjp weak ct", lambda: morphax.vjp(lambda x: x * 2, 1.0)[1](1.0), [True]),
        ("vjp strong ct", lambda: morphax.vjp(lambda x: x * 2, 1.0)[1](jnp.float32(1)), [False]),
        ("vjp strong primal", lambda: morphax.vjp(lambda x: x * 2, jnp.float32(1))[1](1.0), [False]),
        ("jacfwd", lambda: morphax.jacfwd(lambda x: x * 2)(1.0), [True]),
        ("jacfwd strong out", lambda: morphax.jacfwd(lambda x: x * jnp.ones(2))(1.0), [False]),
        ("jacrev", lambda: morphax.jacrev(lambda x: x * 2)(1.0), [True]),
        ("jacrev strong out", lambda: morphax.jacrev(lambda x: x * jnp.ones(2))(1.0), [True]),
        ("hessian", lambda: morphax.hessian(lambda x: x**3)(1.0), [True]),
        ("hessian array", lambda: morphax.hessian(lambda x: jnp.sum(x**3))(jnp.ones(2)), [False]),
    ],
)
def test_gradient_weak_types(name, fn, want):
    out = fn()
    assert _weak(out) == want, name
    assert all(leaf.dtype == np.float32 for leaf in morphax.tree_util.tree_leaves(out))


def test_jacobian_dtypes_follow_jax():
    # jacfwd blocks take the output's dtype, jacrev blocks the input's (JAX's downcast).
    assert morphax.jacfwd(lambda x: x.astype(jnp.float16))(jnp.ones(2)).dtype == np.float16
    assert morphax.jacrev(lambda x: x.astype(jnp.float16))(jnp.ones(2)).dtype == np.float32
    jac = morphax.jacrev(lambda x, i: x * i, argnums=(0, 1), allow_int=True)(1.0, 2)
    assert jac[1].dtype == np.int32 and int(jac[1]) == 0 and _weak(jac) == [True, True]
    np.testing.assert_allclose(float(morphax.hessian(lambda x: x**3)(2.0)), 12.0)


# -- 7. gradients at tie points (tests/reliability/test_tie_gradients.py has the full table) -----
@pytest.mark.parametrize(
    "fn,args,want",
    [
        (morphax.nn.softplus, (0.0,), [0.5]),
        (jnp.logaddexp, (1.0, 1.0), [0.5, 0.5]),
        (jnp.maximum, (1.0, 1.0), [0.5, 0.5]),
        (jnp.minimum, (1.0, 1.0), [0.5, 0.5]),
        (jnp.fmax, (1.0, 1.0), [0.0, 1.0]),
        (morphax.nn.relu, (0.0,), [0.0]),
        (jnp.abs, (0.0,), [1.0]),
        (lambda x, lo, hi: jnp.clip(x, lo, hi), (0.0, 0.0, 1.0), [0.5, 0.5, 0.0]),
        (lambda x, lo, hi: jnp.clip(x, lo, hi), (1.0, 0.0, 1.0), [0.5, 0.0, 0.5]),
        (lambda x, lo, hi: lax.clamp(lo, x, hi), (1.0, 0.0, 1.0), [0.0, 0.0, 0.0]),
        (lambda x: jnp.max(x), (jnp.array([1.0, 3.0, 3.0]),), [[0.0, 0.5, 0.5]]),
        (lambda x: jnp.sort(x)[1], (jnp.array([2.0, 2.0, 2.0]),), [[0.0, 1.0, 0.0]]),
        (lambda x: lax.top_k(x, 1)[0][0], (jnp.array([2.0, 2.0]),), [[1.0, 0.0]]),
        (lambda x: jnp.sum(lax.cummax(x)), (jnp.array([2.0, 2.0]),), [[1.5, 0.5]]),
        (lambda x: jnp.median(x), (jnp.array([1.0, 2.0, 2.0, 3.0]),), [[0.0, 0.5, 0.5, 0.0]]),
    ],
)
def test_tie_point_gradients_match_jax(fn, args, want):
    got = morphax.grad(fn, argnums=tuple(range(len(args))))(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6)
    got_jit = morphax.jit(morphax.grad(fn, argnums=tuple(range(len(args)))))(*args)
    for g, w in zip(got_jit, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6)


# -- 5. complex ordering --------------------------------------------------------------------------
_Z = np.array([1 + 2j, 1 + 1j, 0 + 5j, 1 + 1.5j, np.nan + 0j], np.complex64)


def _numpy_comparison(name):
    # NumPy orders complex numbers lexicographically too: the independent reference.
    def ref(x, y):
        with np.errstate(invalid="ignore"):  # the NaN entry
            return getattr(np, name)(x, y)

    return ref


@pytest.mark.parametrize("name", ["less", "less_equal", "greater", "greater_equal"])
def test_complex_comparisons_are_lexicographic(name):
    fn, ref = getattr(jnp, name), _numpy_comparison(name)
    w = np.complex64(1 + 1.5j)
    np.testing.assert_array_equal(np.asarray(fn(_Z, w)), ref(_Z, w))
    np.testing.assert_array_equal(np.asarray(fn(_Z[:, None], _Z[None, :])), ref(_Z[:, None], _Z[None, :]))
    np.testing.assert_array_equal(np.asarray(morphax.jit(fn)(_Z, w)), ref(_Z, w))
    np.testing.assert_array_equal(np.asarray(morphax.vmap(fn, (0, None))(_Z, w)), ref(_Z, w))
    with morphax.enable_x64():
        z = _Z.astype(np.complex128)
        assert fn(z, w).dtype == np.bool_
        np.testing.assert_array_equal(np.asarray(fn(z, w)), ref(z, w))


def test_complex_ordering_in_jnp_functions():
    a = jnp.asarray(_Z[:4])
    np.testing.assert_array_equal(np.asarray(a < (1 + 1.5j)), [False, True, True, False])
    np.testing.assert_array_equal(np.asarray(a >= (1 + 1j)), [True, True, False, True])
    np.testing.assert_array_equal(np.asarray(jnp.maximum(a, 1 + 1.5j)), np.maximum(_Z[:4], 1 + 1.5j))
    np.testing.assert_array_equal(np.asarray(jnp.minimum(a, 1 + 1.5j)), np.minimum(_Z[:4], 1 + 1.5j))
    np.testing.assert_array_equal(np.asarray(jnp.sort(a)), np.sort(_Z[:4]))
    np.testing.assert_array_equal(np.asarray(jnp.argsort(a)), np.argsort(_Z[:4]))
    assert complex(jnp.max(a)) == 1 + 2j and complex(jnp.min(a)) == 5j
    s = jnp.sort(a)
    assert int(jnp.searchsorted(s, 1 + 1.2j)) == int(np.searchsorted(np.sort(_Z[:4]), 1 + 1.2j)) == 2
    # As JAX: lax's comparisons, argmax and clip refuse complex operands.
    with pytest.raises(TypeError, match="complex64"):
        lax.lt(a, a)
    with pytest.raises(TypeError, match="complex64"):
        jnp.argmax(a)
    with pytest.raises(ValueError, match="clip received a complex value"):
        jnp.clip(a, 0, 1)
    with pytest.raises(ValueError, match="clip received a complex value"):
        jnp.clip(jnp.ones(2), 0, 1j)


# -- 9. jax_numpy_rank_promotion ------------------------------------------------------------------
@pytest.fixture
def _rank_promotion_restored():
    yield
    morphax.config.update("jax_numpy_rank_promotion", "allow")


def test_rank_promotion_raise(_rank_promotion_restored):
    morphax.config.update("jax_numpy_rank_promotion", "raise")
    msg = r"Operands could not be broadcast together for add on shapes \(3,\) \(2, 3\) and with the config option jax_numpy_rank_promotion='raise'"
    with pytest.raises(ValueError, match=msg):
        jnp.ones(3) + jnp.ones((2, 3))
    with pytest.raises(ValueError, match="for multiply on shapes"):
        morphax.jit(lambda a, b: a * b)(jnp.ones(3), jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="for arctan2 on shapes"):
        jnp.arctan2(jnp.ones(3), jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="for maximum on shapes"):
        jnp.clip(jnp.ones((2, 3)), jnp.zeros(3), 1)
    # Allowed under 'raise', as in JAX: scalars, equal ranks, matmul and where.
    assert (jnp.ones(3) + 1.0).shape == (3,)
    assert (jnp.ones(()) + jnp.ones(3)).shape == (3,)
    assert (jnp.ones((1, 3)) + jnp.ones((2, 3))).shape == (2, 3)
    assert (jnp.ones(3) @ jnp.ones((3, 2))).shape == (2,)
    assert jnp.where(jnp.ones((2, 3)) > 0, jnp.ones(3), 0.0).shape == (2, 3)


def test_rank_promotion_warn_and_context(_rank_promotion_restored):
    morphax.config.update("jax_numpy_rank_promotion", "warn")
    with pytest.warns(
        UserWarning, match=r"Following NumPy automatic rank promotion for add on shapes \(3,\) \(2, 3\)"
    ):
        out = jnp.ones(3) + jnp.ones((2, 3))
    assert out.shape == (2, 3)
    morphax.config.update("jax_numpy_rank_promotion", "allow")
    assert (jnp.ones(3) + jnp.ones((2, 3))).shape == (2, 3)
    with morphax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
            jnp.ones(3) + jnp.ones((2, 3))
    assert (jnp.ones(3) + jnp.ones((2, 3))).shape == (2, 3)
    with pytest.raises(ValueError, match="allow"):
        morphax.config.update("jax_numpy_rank_promotion", "bad")


def test_full_wraps_python_ints_as_jax():
    # lax.full's rule: the int goes through NumPy's int64 (uint64 above it), then wraps.
    np.testing.assert_array_equal(np.asarray(jnp.full(2, 2**40, dtype=jnp.uint8)), [0, 0])
    np.testing.assert_array_equal(np.asarray(jnp.full(2, 2**63, dtype=jnp.uint8)), [0, 0])
    np.testing.assert_array_equal(np.asarray(jnp.full(2, -1, dtype=jnp.uint32)), [2**32 - 1] * 2)
    out = jnp.full(2, 2**40)
    assert out.dtype == np.int32 and out.weak_type and out.tolist() == [0, 0]
    np.testing.assert_allclose(np.asarray(jnp.full(2, 2**64, dtype=jnp.float32)), [2.0**64] * 2)
    np.testing.assert_allclose(np.asarray(jnp.full_like(jnp.ones(2), 2**40)), [2.0**40] * 2)
    with pytest.raises(OverflowError, match="beyond the 64-bit integers"):
        jnp.full(2, -(2**63) - 1, dtype=jnp.int32)


def test_int4_scalars_are_created_and_wrap_as_in_jax():
    # JAX: jnp.int4(3) is int4 3, jnp.int4(7) + 1 wraps to -8, a Python int outside int4's range
    # given with an explicit dtype raises OverflowError.
    assert int(jnp.int4(3)) == 3 and jnp.int4(3).dtype == jnp.int4
    assert int(jnp.asarray(3, dtype=jnp.uint4)) == 3
    assert int(jnp.int4(7) + 1) == -8
    with pytest.raises(OverflowError, match="int4"):
        jnp.asarray(9, dtype=jnp.int4)


def test_float0_gradients_are_numpy_arrays_as_in_jax():
    # JAX: the cotangent of an integer input under allow_int is a NumPy array of dtype float0
    # (== works on it: True), not a device array.
    g = morphax.grad(lambda x, i: x * 2, argnums=(0, 1), allow_int=True)(1.0, 3)
    assert isinstance(g[1], np.ndarray) and g[1].dtype == morphax.dtypes.float0
    assert bool(g[1] == g[1]) and g[1].shape == ()
    _, pullback = morphax.vjp(lambda i: i * 2.0, jnp.arange(3))
    (ct,) = pullback(jnp.ones(3))
    assert isinstance(ct, np.ndarray) and ct.dtype == morphax.dtypes.float0 and ct.shape == (3,)


def test_asarray_of_a_typed_key_array_returns_it():
    # JAX: jnp.asarray(key) is key; jnp.array(key) has the key dtype; no other dtype converts.
    k = morphax.random.key(0)
    assert jnp.asarray(k) is k and jnp.array(k).dtype == k.dtype
    assert morphax.jit(lambda k: jnp.asarray(k))(k).dtype == k.dtype
    np.testing.assert_array_equal(
        np.asarray(morphax.random.normal(jnp.asarray(k), (3,))), np.asarray(morphax.random.normal(k, (3,)))
    )
    with pytest.raises(ValueError, match="convert_element_type from key<fry> to float32"):
        jnp.asarray(k, dtype=jnp.float32)
