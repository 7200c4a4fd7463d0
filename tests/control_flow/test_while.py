"""`lax.while_loop` against the same loop written in Python: eval, jit, jvp (finite differences and
the unrolled loop), grad (JAX's reverse-mode error; non-differentiated loops still work), vmap with
each operand batched or not (a batched predicate freezes finished lanes), nesting, compositions,
DCE, and the carry / predicate type errors with JAX's messages.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.higher_order.while_loop import REVERSE_MODE_ERROR, while_p
from morphax.test_util import check_grads

RTOL = 1e-5


def py_while(cond_fun, body_fun, init):
    """The oracle: the same loop run by Python on concrete values."""
    val = init
    while bool(cond_fun(val)):
        val = body_fun(val)
    return val


def close(got, want, rtol=RTOL, atol=1e-6):
    g, w = morphax.tree.leaves(got), morphax.tree.leaves(want)
    assert len(g) == len(w)
    for a, b in zip(g, w):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


# ------------------------------------------------------------------------------------- loops


def count_mul(x):
    """(i, y): multiply by x five times."""
    return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * x), (0, x))


def count_mul_py(x):
    return py_while(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * x), (0, x))


def sin_iter(x):
    """Iterate y <- sin(y) + x*0.3 until y exceeds 2 or 20 steps pass."""
    return lax.while_loop(
        lambda c: (c[0] < 20) & (c[1] < 2.0),
        lambda c: (c[0] + 1, jnp.sin(c[1]) + 0.3 * x + c[1] * 0.5),
        (0, x),
    )


def sin_iter_py(x):
    return py_while(
        lambda c: (c[0] < 20) & (c[1] < 2.0),
        lambda c: (c[0] + 1, jnp.sin(c[1]) + 0.3 * x + c[1] * 0.5),
        (0, x),
    )


def newton_sqrt(a):
    """Newton's iteration for sqrt(a) from x0 = a; the number of steps depends on a."""

    def body(c):
        x, i = c
        return 0.5 * (x + a / x), i + 1

    return lax.while_loop(lambda c: jnp.abs(c[0] * c[0] - a) > 1e-5 * a, body, (a, 0))


def newton_sqrt_py(a):
    x, i = float(a), 0
    while abs(np.float32(x) * np.float32(x) - np.float32(a)) > 1e-5 * a:
        x, i = 0.5 * (x + a / x), i + 1
    return x, i


# ------------------------------------------------------------------------------------ eval / jit


@pytest.mark.parametrize("x", [0.5, 1.5, -2.0])
def test_eval_and_jit_match_python_loop(x):
    for f, f_py in [(count_mul, count_mul_py), (sin_iter, sin_iter_py)]:
        want = f_py(jnp.float32(x))
        close(f(jnp.float32(x)), want)
        close(morphax.jit(f)(jnp.float32(x)), want)


def test_array_carry_and_zero_iterations():
    x = jnp.arange(6.0).reshape(2, 3)
    body = lambda c: (c[0] + 1, c[1] @ jnp.ones((3, 3)) * 0.1 + 1.0)  # noqa: E731
    want = py_while(lambda c: c[0] < 4, body, (0, x))
    close(lax.while_loop(lambda c: c[0] < 4, body, (0, x)), want, rtol=1e-5)
    close(morphax.jit(lambda x: lax.while_loop(lambda c: c[0] < 4, body, (0, x)))(x), want, rtol=1e-5)
    # The predicate is false at once: the init comes back, as arrays of the carry's types.
    out = lax.while_loop(lambda c: c[0] > 100, body, (0, np.ones(3, np.float32)))
    assert out[1].dtype == np.float32 and isinstance(out[1], morphax.Array)
    close(out, (0, np.ones(3)))


def test_pytree_carries():
    Point = collections.namedtuple("Point", "x y")

    def body(c):
        return {"n": c["n"] + 1, "p": Point(c["p"].x * 2.0, c["p"].y + c["p"].x), "l": [c["l"][0] - 1]}

    init = {"n": 0, "p": Point(jnp.float32(1.0), jnp.ones(2)), "l": [jnp.int32(10)]}
    cond = lambda c: c["n"] < 3  # noqa: E731
    out = lax.while_loop(cond, body, init)
    assert isinstance(out["p"], Point) and isinstance(out["l"], list)
    want = py_while(cond, body, init)
    close(out, want)
    close(morphax.jit(lambda i: lax.while_loop(cond, body, i))(init), want)
    # An empty carry (the predicate reads a closed-over value) runs and returns it.
    assert lax.while_loop(lambda c: False, lambda c: c, None) is None
    assert lax.while_loop(lambda c: False, lambda c: c, ()) == ()


def test_closed_over_values_in_cond_and_body():
    def f(x, n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * x + 1.0), (0, x))

    close(
        f(jnp.float32(1.5), 4), py_while(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 1.5 + 1.0), (0, 1.5))
    )
    close(morphax.jit(f)(jnp.float32(1.5), 4), f(jnp.float32(1.5), 4))


def test_jaxpr_prints_like_jax():
    f = lambda x, y: lax.while_loop(lambda c: c[0] < y, lambda c: (c[0] * x, c[1] + 1), (x, 0))  # noqa: E731
    assert str(morphax.make_jaxpr(f)(1.0, 2.0)) == (
        "{ lambda ; a:f32[] b:f32[]. let\n"
        "    c:f32[] d:i32[] = while[\n"
        "      body_jaxpr={ lambda ; e:f32[] f:f32[] g:i32[]. let\n"
        "          h:f32[] = mul f e\n"
        "          i:i32[] = add g 1:i32[]\n"
        "        in (h, i) }\n"
        "      body_nconsts=1\n"
        "      cond_jaxpr={ lambda ; j:f32[] k:f32[] l:i32[]. let\n"
        "          m:bool[] = lt k j\n"
        "        in (m,) }\n"
        "      cond_nconsts=1\n"
        "    ] b a a 0:i32[]\n"
        "  in (c, d) }"
    )


def test_weak_typed_init_is_promoted_like_jax():
    # JAX retraces with a weakly typed init leaf converted to the body's output dtype.
    out = lax.while_loop(lambda c: c < 3, lambda c: c + 1.0, 0)
    assert out.dtype == np.float32 and not out.weak_type and float(out) == 3.0
    out = lax.while_loop(lambda c: c < 3, lambda c: (c + jnp.float32(1)).astype(jnp.float16), 0.0)
    assert out.dtype == np.float16
    # Only the weak type changing is allowed: the result has the body's output type.
    out = lax.while_loop(lambda c: c < 3, lambda c: 5.0, jnp.float32(0))
    assert out.dtype == np.float32 and out.weak_type
    out = lax.while_loop(lambda c: c < 3, lambda c: c + 1.0, 0.0)
    assert out.weak_type


def test_large_carry_under_jit_runs_on_the_device_stream():
    # Big enough to be queued on the stream rather than run inline: the loop must not wait on
    # work queued behind itself.
    x = jnp.ones((300, 300))
    f = morphax.jit(lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, x)))
    np.testing.assert_allclose(np.asarray(f(x)[1]), 8.0 * np.ones((300, 300)))


def test_disable_jit_runs_a_python_loop():
    calls = []

    def body(c):
        calls.append(type(c))
        return c + 1

    with morphax.disable_jit():
        out = lax.while_loop(lambda c: c < 3, body, 0)
    assert int(out) == 3 and len(calls) == 3
    # Under vmap the predicate is batched: the primitive runs instead.
    with morphax.disable_jit():
        out = morphax.vmap(lambda n: lax.while_loop(lambda c: c < n, lambda c: c + 1, 0))(jnp.array([1, 4]))
    np.testing.assert_array_equal(np.asarray(out), [1, 4])


# ------------------------------------------------------------------------------------------ JVP


@pytest.mark.parametrize("x", [0.7, 1.3])
def test_jvp_matches_unrolled_and_finite_differences(x):
    x = jnp.float32(x)
    out, t = morphax.jvp(lambda x: count_mul(x)[1], (x,), (jnp.float32(1.0),))
    want, want_t = morphax.jvp(lambda x: count_mul_py(x)[1], (x,), (jnp.float32(1.0),))
    close(out, want)
    close(t, want_t, rtol=1e-5)
    close(t, 6 * np.float32(x) ** 5, rtol=1e-5)
    check_grads(lambda x: count_mul(x)[1], (x,), order=2, modes=("fwd",))
    check_grads(lambda x: sin_iter(x)[1], (x,), order=2, modes=("fwd",), rtol=2e-3, atol=2e-3)


def test_jvp_tangent_enters_through_body_only():
    # The init carry has no tangent; the body's constant does: the fixed point adds the carry.
    def f(x):
        return lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] + jnp.sin(x)), (0, 0.0))[1]

    out, t = morphax.jvp(f, (jnp.float32(0.5),), (jnp.float32(1.0),))
    close(out, 4 * np.sin(0.5))
    close(t, 4 * np.cos(0.5))
    check_grads(f, (jnp.float32(0.5),), order=2, modes=("fwd",))


def test_jvp_through_tracer_in_cond_has_no_tangent_from_it():
    # x bounds the loop (a cond constant): the output is piecewise constant in it.
    def f(x):
        return lax.while_loop(lambda c: c < x, lambda c: c + 1.0, 0.0)

    out, t = morphax.jvp(f, (jnp.float32(3.5),), (jnp.float32(1.0),))
    assert float(out) == 4.0 and float(t) == 0.0


def test_jvp_pytree_and_integer_carries():
    def f(x, v):
        def body(c):
            return {"i": c["i"] + 1, "a": c["a"] * x, "b": c["b"] + v * c["a"]}

        return lax.while_loop(lambda c: c["i"] < 3, body, {"i": 0, "a": x, "b": v})

    x, v = jnp.float32(1.2), jnp.arange(3.0)
    (out, t) = morphax.jvp(f, (x, v), (jnp.float32(1.0), jnp.ones(3)))

    def f_py(x, v):
        return py_while(
            lambda c: c["i"] < 3,
            lambda c: {"i": c["i"] + 1, "a": c["a"] * x, "b": c["b"] + v * c["a"]},
            {"i": 0, "a": x, "b": v},
        )

    want, want_t = morphax.jvp(f_py, (x, v), (jnp.float32(1.0), jnp.ones(3)))
    close(out, want)
    close(t["a"], want_t["a"])
    close(t["b"], want_t["b"])
    assert t["i"].dtype == morphax.dtypes.float0
    check_grads(lambda x, v: f(x, v)["b"], (x, v), order=2, modes=("fwd",))


def test_linearize_works_forward():
    y, f_lin = morphax.linearize(lambda x: count_mul(x)[1], 1.5)
    close(y, 1.5**6)
    close(f_lin(1.0), 6 * 1.5**5)
    close(f_lin(2.0), 12 * 1.5**5)


def test_jvp_under_jit_and_jit_under_jvp():
    x = jnp.float32(1.1)
    want = morphax.jvp(lambda x: count_mul(x)[1], (x,), (jnp.float32(1.0),))
    close(
        morphax.jit(lambda x, t: morphax.jvp(lambda x: count_mul(x)[1], (x,), (t,)))(x, jnp.float32(1.0)),
        want,
    )
    close(morphax.jvp(morphax.jit(lambda x: count_mul(x)[1]), (x,), (jnp.float32(1.0),)), want)


# ----------------------------------------------------------------------------------- reverse mode


def test_grad_raises_jax_error():
    with pytest.raises(ValueError) as info:
        morphax.grad(lambda x: count_mul(x)[1])(1.5)
    assert str(info.value) == REVERSE_MODE_ERROR
    assert REVERSE_MODE_ERROR == (
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
        "start/stop values. Try using lax.scan, or using fori_loop with static start/stop."
    )
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        morphax.vjp(lambda x: sin_iter(x)[1], jnp.float32(0.3))[1](jnp.float32(1.0))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        morphax.grad(morphax.jit(lambda x: count_mul(x)[1]))(1.5)


def test_grad_through_non_differentiated_loop_works():
    # The loop computes an iteration count and a bound from x: no tangent reaches its result.
    def f(x):
        n = lax.while_loop(lambda c: c * c < x, lambda c: c + 1.0, 0.0)
        return x * n + jnp.sin(x)

    g = morphax.grad(f)(jnp.float32(10.0))
    close(g, 4.0 + np.cos(10.0))
    close(morphax.jit(morphax.grad(f))(jnp.float32(10.0)), g)

    # A differentiated carry whose value is never used: only the counter flows into the result.
    def h(x):
        i, y = count_mul(x)
        return x * i

    close(morphax.grad(h)(jnp.float32(2.0)), 5.0)
    close(morphax.grad(morphax.jit(h))(jnp.float32(2.0)), 5.0)
    # A loop over constants only.
    close(morphax.grad(lambda x: x * lax.while_loop(lambda c: c < 3.0, lambda c: c + 1.0, 0.0))(2.0), 3.0)


# ------------------------------------------------------------------------------------------ vmap


def _per_lane(f, in_axes, args):
    n = {np.shape(a)[d] for a, d in zip(args, in_axes) if d is not None}.pop()
    outs = [
        f(*[a if d is None else np.take(np.asarray(a), k, axis=d) for a, d in zip(args, in_axes)])
        for k in range(n)
    ]
    return morphax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *outs)


def test_vmap_newton_sqrt_per_lane_iteration_counts():
    a = jnp.array([1.0, 4.0, 100.0, 1e4, 2.0, 0.25], dtype=jnp.float32)
    x, n = morphax.vmap(newton_sqrt)(a)
    want_x = [newton_sqrt_py(float(v))[0] for v in np.asarray(a)]
    want_n = [newton_sqrt_py(float(v))[1] for v in np.asarray(a)]
    np.testing.assert_allclose(np.asarray(x), np.sqrt(np.asarray(a)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(x), want_x, rtol=1e-5)
    # Each lane stopped at its own count: finished lanes were frozen, not stepped on.
    np.testing.assert_array_equal(np.asarray(n), want_n)
    assert len(set(want_n)) > 2
    close((x, n), _per_lane(newton_sqrt, [0], [a]))
    close(morphax.jit(morphax.vmap(newton_sqrt))(a), (x, n))
    close(morphax.vmap(morphax.jit(newton_sqrt))(a), (x, n))


def _bounded_loop(n, x, s):
    """Counter up to n (cond constant), a body constant s, a carry x."""
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * s + 1.0), (0, x))


@pytest.mark.parametrize(
    "in_axes",
    [
        (0, None, None),
        (None, 0, None),
        (None, None, 0),
        (0, 0, None),
        (None, 0, 0),
        (0, 0, 0),
        (0, 1, None),
        (None, 1, 0),
    ],
)
def test_vmap_each_operand_batched_or_not(in_axes):
    rng = np.random.default_rng(0)
    n = np.array([0, 3, 1, 5], np.int32)
    x = rng.normal(size=(4, 2)).astype(np.float32)
    s = rng.uniform(0.5, 1.5, size=4).astype(np.float32)
    args = [
        n if in_axes[0] == 0 else np.int32(3),
        x if in_axes[1] == 0 else x[0],
        s if in_axes[2] == 0 else np.float32(0.9),
    ]
    if in_axes[1] == 1:
        args[1] = x.T
    got = morphax.vmap(_bounded_loop, in_axes=in_axes)(*args)
    close(got, _per_lane(_bounded_loop, in_axes, args))
    close(morphax.jit(morphax.vmap(_bounded_loop, in_axes=in_axes))(*args), got)


def test_vmap_out_axes_and_unbatched_results():
    # Only the body constant is batched and the counter stays unbatched.
    s = jnp.array([0.5, 2.0, 1.0])
    i, y = morphax.vmap(lambda s: _bounded_loop(3, jnp.ones(2), s), out_axes=(None, 1))(s)
    assert i.shape == () and int(i) == 3
    close(y, _per_lane(lambda s: _bounded_loop(3, jnp.ones(2), s)[1], [0], [s]).T)


def test_vmap_carry_becomes_batched_inside_the_loop():
    # The init is unbatched, but the body mixes in a batched value: the carry is batched throughout.
    s = jnp.array([1.0, 2.0, 3.0])

    def f(s):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + s, c[2]), (0, 0.0, 7.0))

    i, y, z = morphax.vmap(f, out_axes=(None, 0, None))(s)
    close(y, 3 * np.asarray(s))
    assert i.shape == () and z.shape == ()  # never batched: they stay unbatched


def test_vmap_of_jvp_and_jvp_of_vmap():
    a = jnp.array([2.0, 4.0, 100.0])
    x_t = morphax.vmap(lambda a: morphax.jvp(lambda a: newton_sqrt(a)[0], (a,), (jnp.float32(1.0),)))(a)
    close(x_t[0], np.sqrt(a))
    close(x_t[1], 0.5 / np.sqrt(a), rtol=2e-3)
    y, t = morphax.jvp(lambda a: morphax.vmap(newton_sqrt)(a)[0], (a,), (jnp.ones(3),))
    close(t, x_t[1])


def test_vmap_of_grad_of_non_differentiated_loop():
    def f(x):
        n = lax.while_loop(lambda c: c * c < x, lambda c: c + 1.0, 0.0)
        return x * n

    g = morphax.vmap(morphax.grad(f))(jnp.array([2.0, 10.0, 30.0]))
    close(g, np.array([2.0, 4.0, 6.0]))


# ----------------------------------------------------------------------------------------- nested


def nested(x):
    """Outer loop over i; the inner loop runs i times (a bound from the outer carry)."""

    def outer_body(c):
        i, acc = c
        j, acc = lax.while_loop(lambda d: d[0] < i, lambda d: (d[0] + 1, d[1] * x + 1.0), (0, acc))
        return i + 1, acc

    return lax.while_loop(lambda c: c[0] < 4, outer_body, (0, x))


def nested_py(x):
    i, acc = 0, x
    while i < 4:
        j = 0
        while j < i:
            acc = acc * x + 1.0
            j += 1
        i += 1
    return i, acc


def test_nested_while():
    x = jnp.float32(0.9)
    close(nested(x), nested_py(x))
    close(morphax.jit(nested)(x), nested_py(x))
    xs = jnp.array([0.5, 0.9, 1.1])
    close(morphax.vmap(nested)(xs), _per_lane(nested_py, [0], [xs]))
    _, t = morphax.jvp(lambda x: nested(x)[1], (x,), (jnp.float32(1.0),))
    _, want = morphax.jvp(lambda x: nested_py(x)[1], (x,), (jnp.float32(1.0),))
    close(t, want, rtol=1e-5)
    check_grads(lambda x: nested(x)[1], (x,), order=2, modes=("fwd",), rtol=2e-3, atol=2e-3)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        morphax.grad(lambda x: nested(x)[1])(x)


def test_nested_while_batched_inner_bound():
    # Under vmap the inner loop's bound is batched (per-lane counts inside a batched outer loop).
    def f(n, x):
        def outer_body(c):
            i, acc = c
            _, acc = lax.while_loop(lambda d: d[0] < n + i, lambda d: (d[0] + 1, d[1] + x), (0, acc))
            return i + 1, acc

        return lax.while_loop(lambda c: c[0] < 3, outer_body, (0, jnp.float32(0)))

    n = jnp.array([0, 1, 4])
    x = jnp.array([1.0, 2.0, 0.5])
    close(morphax.vmap(f)(n, x), _per_lane(f, [0, 0], [n, x]))
    close(morphax.vmap(f, in_axes=(0, None))(n, 1.5), _per_lane(f, [0, None], [n, 1.5]))


# ------------------------------------------------------------------------------------------- DCE


def test_dce_drops_unused_carries():
    from morphax._src.passes.pipeline import optimize

    def f(x):
        # Carry 2 is needed by nothing the caller reads; carry 1 only feeds carry 2.
        out = lax.while_loop(
            lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0, c[2] + c[1], c[3] + 1.0), (0, x, x, x)
        )
        return out[0], out[3]

    closed = morphax.make_jaxpr(f)(jnp.float32(1.0))
    opt = optimize(closed)
    (eqn,) = [e for e in opt.jaxpr.eqns if e.primitive is while_p]
    assert len(eqn.outvars) == 2 and len(eqn.params["body_jaxpr"].out_avals) == 2
    close(morphax.jit(f)(jnp.float32(1.0)), (3, 4.0))
    # Nothing read: the loop goes.
    closed = morphax.make_jaxpr(lambda x: (count_mul(x), x)[1])(jnp.float32(1.0))
    opt = optimize(closed)
    assert not [e for e in opt.jaxpr.eqns if e.primitive is while_p]


# ---------------------------------------------------------------------------------------- errors


def test_cond_must_return_a_bool_scalar():
    with pytest.raises(TypeError) as info:
        lax.while_loop(lambda c: c, lambda c: c + 1, 0.0)
    assert str(info.value) == (
        "cond_fun must return a boolean scalar, but got output type(s) [ShapedArray(float32[], weak_type=True)]."
    )
    with pytest.raises(TypeError, match=r"got output type\(s\) \[ShapedArray\(bool\[1\]"):
        lax.while_loop(lambda c: (c < 3)[None], lambda c: c + 1, jnp.float32(0))
    with pytest.raises(TypeError, match=r"got output type\(s\) \[ShapedArray\(int32\[\]\)\]"):
        lax.while_loop(lambda c: (c < 3).astype(jnp.int32), lambda c: c + 1, 0.0)
    with pytest.raises(TypeError) as info:
        lax.while_loop(lambda c: (c < 3,), lambda c: c + 1, 0.0)
    assert str(info.value) == "cond_fun must return a boolean scalar, but got pytree PyTreeDef((*,))."


def test_carry_dtype_mismatch_names_the_leaf():
    with pytest.raises(TypeError) as info:
        lax.while_loop(
            lambda c: c["a"] < 3,
            lambda c: {"a": c["a"] + 1, "b": c["b"].astype(jnp.int32)},
            {"a": 0.0, "b": jnp.zeros(3)},
        )
    assert str(info.value) == (
        "while_loop body function carry input and carry output must have equal types, but they differ:\n\n"
        "The input carry component c['b'] has type float32[3] but the corresponding output carry component "
        "has type int32[3], so the dtypes do not match.\n\n"
        "Revise the function so that all output types match the corresponding input types."
    )


def test_carry_mismatches_listed_leaf_by_leaf():
    def body(c):
        return {"a": c["a"] + 1, "b": jnp.zeros(4), "c": c["c"][None]}

    with pytest.raises(TypeError) as info:
        lax.while_loop(lambda c: c["a"] < 3, body, {"a": 0.0, "b": jnp.zeros(3), "c": 1.0})
    assert str(info.value) == (
        "while_loop body function carry input and carry output must have equal types, but they differ:\n\n"
        "  * the input carry component c['b'] has type float32[3] but the corresponding output carry "
        "component has type float32[4], so the shapes do not match;\n"
        "  * the input carry component c['c'] has type float32[] but the corresponding output carry "
        "component has type float32[1], so the shapes do not match.\n\n"
        "Revise the function so that all output types match the corresponding input types."
    )
    with pytest.raises(
        TypeError,
        match=r"The input carry c has type int32\[\] but the corresponding output carry component has type float32\[\], so the dtypes do not match",
    ):
        lax.while_loop(lambda c: c < 3, lambda c: c + 1.0, jnp.int32(0))


def test_carry_structure_mismatch():
    with pytest.raises(TypeError) as info:
        lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1,), (0.0, 1.0))
    assert str(info.value) == (
        "while_loop body function carry input and carry output must have the same pytree structure, but they "
        "differ:\n\n"
        "The input carry c is a tuple of length 2 but the corresponding component of the carry output is a "
        "tuple of length 1, so the lengths do not match.\n\n"
        "Revise the function so that the carry output has the same pytree structure as the carry input."
    )
    with pytest.raises(
        TypeError,
        match="is a <class 'tuple'> but the corresponding component of the carry output is a <class 'list'>, so their Python types differ",
    ):
        lax.while_loop(lambda c: c[0] < 3, lambda c: [c[0] + 1, c[1]], (0.0, 1.0))
    with pytest.raises(TypeError) as info:
        lax.while_loop(lambda c: c["a"] < 3, lambda c: {"a": c["a"] + 1}, {"a": 0.0, "b": 1.0})
    assert (
        "The input carry c is a <class 'dict'> with 2 children but the corresponding component of the carry "
        "output is a <class 'dict'> with 1 child, so the numbers of children do not match, with the symmetric "
        "difference of key sets: {'b'}." in str(info.value)
    )
    with pytest.raises(TypeError, match=r"The input carry component state\[1\]\['x'\] is a"):
        lax.while_loop(
            lambda state: state[0] < 3, lambda state: (state[0] + 1, {"x": (1.0,)}), (0.0, {"x": 1.0})
        )


def test_vmap_with_collective_in_body():
    def f(x):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + lax.psum(c[1], "i")), (0, x))

    _, y = morphax.vmap(f, axis_name="i")(jnp.arange(3.0))
    close(y, np.array([63.0, 64.0, 65.0]))  # JAX's values


# -------------------------------------------------------------------------------- partial eval


@pytest.mark.parametrize("unknowns", [[True, False], [False, True], [True, True]])
def test_partial_eval_splits_known_and_unknown_carries(unknowns):
    from morphax._src.core.jaxpr import eval_jaxpr
    from morphax._src.transforms.partial_eval import partial_eval_jaxpr

    def h(n, x):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * x, c[2] + 1.0), (0, x, x))

    args = [jnp.int32(5), jnp.float32(2.0)]
    closed = morphax.make_jaxpr(h)(*args)
    known, unknown, out_uk, n_res = partial_eval_jaxpr(closed, unknowns)
    # An unknown bound makes everything unknown; a known one leaves the counter known.
    assert out_uk == ([True] * 3 if unknowns[0] else [False, True, True])
    k_outs = eval_jaxpr(known.jaxpr, known.consts, *[a for a, u in zip(args, unknowns) if not u])
    res = k_outs[len(k_outs) - n_res :]
    u_outs = iter(eval_jaxpr(unknown.jaxpr, unknown.consts, *res, *[a for a, u in zip(args, unknowns) if u]))
    k_it = iter(k_outs)
    got = [next(u_outs) if u else next(k_it) for u in out_uk]
    close(got, (5, 64.0, 7.0))
