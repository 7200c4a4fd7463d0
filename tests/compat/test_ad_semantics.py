"""JAX 0.10.2's autodiff semantics that equinox, lineax, optimistix and diffrax rely on (issue 33).

1. A custom_jvp function applied to a *tangent* inside another JVP rule (lineax's `_asarray`): under
   `grad` the call lands in the linear part of the linearization, where JAX inlines it (its body is
   linear there), so it transposes.
2. Symbolic zeros (`ad.Zero`) and undefined primals are pytree nodes without leaves: `vmap` passes
   them through as unmapped arguments and returns them as they are (equinox's vprim rules).
3. Under `jvp`, an output whose tangent is a symbolic zero (a `jit` output that does not depend on
   the input, a stop_gradient, an integer) is the plain primal, not a tracer of the JVP.
4. A `cond`'s result types are branch 0's (the false branch), weak types included: a weak int
   stays weak beside a strong branch (equinox's `error_if`); a batched predicate joins them.
5. A custom_vjp under `vmap`: residuals the forward rule computes from unbatched values stay
   unbatched (equinox's Python-bool `perturbed` flags), and a bwd rule with `symbolic_zeros` gets a
   `SymbolicZero` (of one element's type) where no cotangent flows.
6. `linear_transpose` of a `jit`: a Python-scalar cotangent reaches the rules inside as a weakly
   typed array, as binding `jit` makes it in JAX (equinox's primitives take a float for static).

Each expected value is what JAX 0.10.2 gives for the same program; where possible it is also
checked against something independent (NumPy, finite differences, promotion rules).
"""

import numpy as np
import pytest

import morphax as jax
import morphax.numpy as jnp
from morphax import lax
from morphax.core import ShapedArray
from morphax.custom_derivatives import SymbolicZero
from morphax.extend.core import Primitive
from morphax.interpreters import ad
from morphax.test_util import check_grads

# ----------------------------------------------------------- 1. custom_jvp applied to a tangent


@jax.custom_jvp
def ident(x):
    return x


@ident.defjvp
def _ident_jvp(p, t):
    return ident(p[0]), ident(t[0])


@jax.custom_jvp
def triple(x):
    return 3.0 * x


@triple.defjvp
def _triple_jvp(p, t):
    # The tangent goes through a custom_jvp function: linear in it, but only its body says so.
    return triple(p[0]), ident(3.0 * t[0])


@jax.custom_jvp
def mul2(a, b):
    return a * b


@mul2.defjvp
def _mul2_jvp(p, t):
    return mul2(*p), mul2(t[0], p[1]) + mul2(p[0], t[1])


@jax.custom_jvp
def sin_(x):
    return jnp.sin(x)


@sin_.defjvp
def _sin_jvp(p, t):
    # A custom_jvp call with one known operand (cos x, a residual) and one unknown (the tangent).
    return sin_(p[0]), mul2(jnp.cos(p[0]), t[0])


def test_the_grad_through_a_custom_jvp_applied_to_its_tangent_is_3():
    # JAX: 3.0 in each form (morphax raised MissingRuleError: no transpose rule for custom_jvp_call).
    assert float(jax.grad(triple)(1.0)) == 3.0
    assert float(jax.jit(jax.grad(triple))(1.0)) == 3.0
    assert float(jax.grad(jax.jit(triple))(1.0)) == 3.0
    (ct,) = jax.vjp(triple, 2.0)[1](1.0)
    assert float(ct) == 3.0
    # Reverse mode agrees with forward mode, which applies the rule directly.
    assert float(jax.jvp(triple, (2.0,), (1.0,))[1]) == 3.0
    assert float(jax.linearize(triple, 1.0)[1](2.0)) == 6.0


def test_the_inlined_call_leaves_the_linear_part_of_the_jaxpr():
    # JAX 0.10.2 prints exactly this: the primal call keeps its rule, the tangent's call is gone.
    assert str(jax.make_jaxpr(jax.grad(triple))(1.0)) == (
        "{ lambda ; a:f32[]. let\n"
        "    _:f32[] = custom_jvp_call[\n"
        "      name=triple\n"
        "      call_jaxpr={ lambda ; b:f32[]. let c:f32[] = mul 3.0:f32[] b in (c,) }\n"
        "      jvp=_triple_jvp\n"
        "      symbolic_zeros=False\n"
        "    ] a\n"
        "    d:f32[] = mul 3.0:f32[] 1.0:f32[]\n"
        "  in (d,) }"
    )


def test_a_custom_jvp_of_a_residual_and_a_tangent_transposes():
    # JAX: grad 0.87758255 (cos 0.5), second order -0.47942555 (-sin 0.5), also under vmap/jacfwd.
    np.testing.assert_allclose(jax.grad(sin_)(0.5), np.cos(0.5), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(jax.grad(sin_))(0.5), np.cos(0.5), rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(jax.grad(sin_))(jnp.array([0.5, 1.0])), np.cos([0.5, 1.0]), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(jax.grad(sin_))(0.5), -np.sin(0.5), rtol=1e-6)
    np.testing.assert_allclose(jax.jacfwd(jax.grad(sin_))(0.5), -np.sin(0.5), rtol=1e-6)
    assert float(jax.grad(jax.grad(triple))(1.0)) == 0.0
    # Against finite differences, both modes, to second order.
    check_grads(sin_, (0.5,), order=2, modes=("fwd", "rev"))


def test_a_custom_jvp_on_a_tangent_inside_control_flow_and_checkpoint():
    # JAX: 27.0 (3 ** 3), 3.0, 9.0 (3 ** 2), 3.0.
    scan = lambda x: lax.scan(lambda c, _: (triple(c), None), x, None, length=3)[0]  # noqa: E731
    assert float(jax.grad(scan)(1.0)) == 27.0
    assert float(jax.grad(lambda x: lax.cond(x > 0, triple, lambda y: y, x))(1.0)) == 3.0
    assert float(jax.grad(lambda x: lax.fori_loop(0, 2, lambda i, c: triple(c), x))(1.0)) == 9.0
    assert float(jax.grad(jax.checkpoint(triple))(1.0)) == 3.0


def test_linear_transpose_inlines_a_custom_jvp_call():
    # JAX: (2.0,)
    (out,) = jax.linear_transpose(ident, 1.0)(2.0)
    assert float(out) == 2.0


# --------------------------------------------------------------- 2. symbolic zeros through vmap


Z3 = ad.Zero(ShapedArray((3,), np.float32))


def test_a_symbolic_zero_is_a_pytree_without_leaves():
    assert jax.tree_util.tree_leaves(Z3) == []
    assert jax.tree_util.tree_leaves(ad.UndefinedPrimal(Z3.aval)) == []
    rebuilt = jax.tree_util.tree_map(lambda x: x, Z3)
    assert type(rebuilt) is ad.Zero and rebuilt.aval == Z3.aval


@pytest.mark.parametrize("out_axes", [0, (0, None)])
def test_a_symbolic_zero_passed_unmapped_through_vmap_comes_back_a_zero(out_axes):
    # JAX: the function sees Zero(float32[3]) and vmap returns it, whatever out_axes says.
    seen = []

    def f(x, t):
        seen.append(type(t))
        return x * 2, t

    y, t = jax.vmap(f, in_axes=(0, None), out_axes=out_axes)(jnp.ones((2, 3)), Z3)
    assert seen == [ad.Zero]
    assert type(t) is ad.Zero and t.aval == Z3.aval
    np.testing.assert_array_equal(y, np.full((2, 3), 2.0, np.float32))


def test_a_vmapped_jvp_rule_keeps_symbolic_zero_tangents():
    # equinox's vprim batches a primitive's JVP rule by vmapping it, tangents that are Zero
    # unmapped: the rule sees the Zero (and may return one), as in JAX.
    def jvp_rule(primals, tangents):
        (x,), (t,) = primals, tangents
        out_t = ad.Zero(ShapedArray(x.shape, x.dtype)) if type(t) is ad.Zero else 2 * t
        return 2 * x, out_t

    xs = jnp.arange(6.0).reshape(2, 3)
    out, out_t = jax.vmap(jvp_rule, in_axes=((0,), (None,)))((xs,), (Z3,))
    assert type(out_t) is ad.Zero and out_t.aval.shape == (3,)
    np.testing.assert_array_equal(out, 2 * np.arange(6.0).reshape(2, 3))
    undefined = ad.UndefinedPrimal(Z3.aval)
    _, back = jax.vmap(lambda x, u: (x, u), in_axes=(0, None))(xs, undefined)
    assert type(back) is ad.UndefinedPrimal


# ------------------------------------------------- 3. outputs with a symbolic-zero tangent under jvp


def _tracer_flags(x, seen):
    ys = jax.jit(lambda x: (x * 2, jnp.ones(2), x.shape[0]))(x)
    seen["jit"] = [isinstance(y, jax.core.Tracer) for y in ys]
    seen["jit_zeros"] = isinstance(jax.jit(lambda x: jnp.zeros(3))(x), jax.core.Tracer)
    seen["stop_gradient"] = isinstance(lax.stop_gradient(x), jax.core.Tracer)
    seen["argmax"] = isinstance(jnp.argmax(x), jax.core.Tracer)
    seen["astype_int"] = isinstance(x.astype(jnp.int32), jax.core.Tracer)
    seen["sin"] = isinstance(jnp.sin(x), jax.core.Tracer)
    branches = (lambda x: (x, jnp.zeros(2)), lambda x: (x * 2, jnp.ones(2)))
    seen["cond"] = [isinstance(y, jax.core.Tracer) for y in lax.cond(True, *branches, x)]
    return x.sum()


# What JAX 0.10.2 answers, under jvp and under grad alike.
JAX_TRACER_FLAGS = {
    "jit": [True, False, False],
    "jit_zeros": False,
    "stop_gradient": False,
    "argmax": False,
    "astype_int": False,
    "sin": True,
    "cond": [True, False],
}


@pytest.mark.parametrize("transform", ["jvp", "grad"])
def test_the_inner_jvp_output_is_not_a_tracer(transform):
    x, seen = jnp.arange(3.0), {}
    if transform == "jvp":
        primal, tangent = jax.jvp(lambda x: _tracer_flags(x, seen), (x,), (x,))
        assert float(tangent) == 3.0  # d/dx sum(x) . x = sum(x): the zero-tangent outputs change nothing
    else:
        np.testing.assert_array_equal(jax.grad(lambda x: _tracer_flags(x, seen))(x), np.ones(3))
    assert seen == JAX_TRACER_FLAGS


def test_a_jit_output_independent_of_the_input_is_the_plain_value():
    seen = {}

    def f(x):
        y = jax.jit(lambda x: jnp.zeros(3))(x)
        seen["y"] = y
        return x * 2 + y.sum()

    out, tangent = jax.jvp(f, (1.0,), (1.0,))
    assert float(out) == 2.0 and float(tangent) == 2.0
    assert not isinstance(seen["y"], jax.core.Tracer)
    np.testing.assert_array_equal(seen["y"], np.zeros(3, np.float32))


# ------------------------------------------------------------------------- 4. cond result types


def _weak(x) -> bool:
    return jax.typeof(x).weak_type


WEAK_INT = lambda *_: 1  # noqa: E731
STRONG_INT = lambda *_: jnp.int32(2)  # noqa: E731


@pytest.mark.parametrize(
    ("true_fun", "false_fun", "weak"),
    [
        (WEAK_INT, WEAK_INT, True),  # JAX: Array(1, dtype=int32, weak_type=True)
        (WEAK_INT, STRONG_INT, False),  # JAX: Array(1, dtype=int32)
        (STRONG_INT, WEAK_INT, True),  # JAX: Array(2, dtype=int32, weak_type=True)
        (lambda: 1.0, lambda: jnp.float32(2.0), False),  # JAX: Array(1., dtype=float32)
    ],
)
def test_the_cond_result_keeps_its_weak_type(true_fun, false_fun, weak):
    # JAX takes the false branch's (branch 0's) output types, weak types included.
    assert _weak(lax.cond(True, true_fun, false_fun)) is weak
    assert _weak(jax.jit(lambda p: lax.cond(p, true_fun, false_fun))(True)) is weak
    (aval,) = jax.make_jaxpr(lambda p: lax.cond(p, true_fun, false_fun))(True).out_avals
    assert aval.weak_type is weak
    # Independent: a weak int does not widen an int8, a strong int32 does.
    out = lax.cond(True, true_fun, false_fun)
    if out.dtype == np.int32:
        assert (out + jnp.int8(1)).dtype == (np.int8 if weak else np.int32)


def test_the_switch_result_takes_branch_0s_weak_type():
    # JAX: Array(2, dtype=int32, weak_type=True) and Array(1, dtype=int32).
    assert repr(lax.switch(1, [WEAK_INT, STRONG_INT])) == "Array(2, dtype=int32, weak_type=True)"
    assert repr(lax.switch(1, [STRONG_INT, WEAK_INT])) == "Array(1, dtype=int32)"


def test_a_batched_predicate_joins_the_weak_types():
    # JAX: under vmap with a batched predicate the cond is a select_n, weak only if all are.
    ps = jnp.array([True, False])
    assert not _weak(jax.vmap(lambda p: lax.cond(p, STRONG_INT, WEAK_INT))(ps))
    assert _weak(jax.vmap(lambda p: lax.cond(p, WEAK_INT, WEAK_INT))(ps))
    assert _weak(jax.vmap(lambda p: lax.cond(True, STRONG_INT, WEAK_INT))(ps))


def test_the_error_if_pattern_keeps_a_weak_int_weak():
    # equinox's error_if: cond(pred, <callback returning x's shape>, lambda: x). JAX:
    # Array(3, dtype=int32, weak_type=True), and adding an int8 gives Array(4, dtype=int8).
    x = 3

    def handle():
        return jax.pure_callback(lambda: np.int32(0), jax.eval_shape(lambda: x))

    out = jax.jit(lambda p: lax.cond(p, handle, lambda: x))(False)
    assert repr(out) == "Array(3, dtype=int32, weak_type=True)"
    assert repr(out + jnp.int8(1)) == "Array(4, dtype=int8)"


# ------------------------------------------------------------------------- 5. custom_vjp under vmap

C = np.arange(3.0, dtype=np.float32)


def _flagged_vjp(seen):
    @jax.custom_vjp
    def f(x, c):
        return x * c

    def fwd(x, c):
        return x * c, (True, c)

    def bwd(res, g):
        flag, c = res
        seen.append(type(flag))
        return (g * c if flag else None, None)  # Python control flow on the residual flag

    f.defvjp(fwd, bwd)
    return f


@pytest.mark.parametrize("order", ["grad_of_vmap", "vmap_of_grad", "jit_grad_of_vmap"])
def test_an_unbatched_residual_stays_unbatched_under_vmap(order):
    # JAX: the bwd rule sees the Python bool; the gradient is c on every row.
    seen = []
    f = _flagged_vjp(seen)
    xs = jnp.ones((2, 3))
    batched_loss = lambda x: jax.vmap(f, in_axes=(0, None))(x, C).sum()  # noqa: E731
    if order == "grad_of_vmap":
        g = jax.grad(batched_loss)(xs)
    elif order == "jit_grad_of_vmap":
        g = jax.jit(jax.grad(batched_loss))(xs)
    else:
        g = jax.vmap(jax.grad(lambda x: f(x, C).sum()))(xs)
    np.testing.assert_array_equal(g, np.broadcast_to(C, (2, 3)))
    assert seen == [bool]


@pytest.mark.parametrize("order", ["grad_of_vmap", "vmap_of_grad"])
@pytest.mark.parametrize("returns", ["g0", "g1"])
def test_a_symbolic_zero_cotangent_reaches_bwd_as_a_symbolic_zero(order, returns):
    # JAX: the unused output's cotangent is SymbolicZero of one element's shape (3,), also under
    # vmap; a bwd rule may hand it back as the zero cotangent of the input.
    seen = []

    @jax.custom_vjp
    def f(x):
        return x, x * 2

    def fwd(x):
        x = x.value
        return (x, x * 2), None

    def bwd(res, g):
        seen.append((type(g[1]), tuple(g[1].shape)))
        return (g[0] if returns == "g0" else g[1],)

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    xs = jnp.ones((2, 3))
    if order == "grad_of_vmap":
        g = jax.grad(lambda x: jax.vmap(f)(x)[0].sum())(xs)
    else:
        g = jax.vmap(jax.grad(lambda x: f(x)[0].sum()))(xs)
    np.testing.assert_array_equal(g, np.ones((2, 3)) if returns == "g0" else np.zeros((2, 3)))
    assert seen == [(SymbolicZero, (3,))]


def test_a_python_scalar_tangent_passed_through_comes_back_an_array():
    # JAX: jvp(lambda x: x + 1, (1.0,), (1.0,)) gives the tangent Array(1., weak_type=True);
    # equinox's filter_jvp compares it with jnp.array(1.0).
    primal, tangent = jax.jvp(lambda x: x + 1, (1.0,), (1.0,))
    assert isinstance(tangent, jax.Array) and tangent.weak_type and float(tangent) == 1.0
    assert float(primal) == 2.0


# ------------------------------------------- 6. linear_transpose's Python-scalar cotangents into jit


double_p = Primitive("test_ad_semantics_double")
double_p.def_impl(lambda x: 2 * x)
double_p.def_abstract_eval(lambda x: x)


def _double_transpose(ct, x, *, seen):
    seen.append((isinstance(ct, jax.Array), ct.weak_type))
    return [2 * ct]


@pytest.mark.parametrize("outer_jit", [False, True])
def test_a_python_scalar_cotangent_reaches_a_rule_inside_jit_as_an_array(outer_jit):
    # JAX: transposing a `jit` binds `jit` on the cotangents, so a rule inside sees an array (a
    # tracer under an outer jit), never the Python float the user passed (lineax's
    # test_pytree_transpose hands [a(1.0), 2.0, 3.0] to equinox's primitive rules this way).
    seen = []
    ad.primitive_transposes[double_p] = lambda ct, x: _double_transpose(ct, x, seen=seen)
    f = jax.jit(lambda v: double_p.bind(v))
    g = lambda: jax.linear_transpose(f, 1.0)(3.0)  # noqa: E731
    (out,) = (jax.jit(g) if outer_jit else g)()  # under jit the 3.0 stays a Python float
    assert float(out) == 2 * 3.0  # d(2v)/dv applied to the cotangent
    assert seen == [(True, True)]
