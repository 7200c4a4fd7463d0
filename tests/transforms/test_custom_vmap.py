"""`morphax.custom_batching`: custom_vmap functions run as written outside vmap and through
their rule under vmap (nested, with jit on either side, under jvp), the rule seeing the batch
size and in_batched pattern JAX gives it; sequential_vmap loops. Rules here deliberately
compute something other than the function (an added constant), so that which one ran shows.
Expected values come from NumPy loops; the in_batched patterns and printed jaxprs are JAX's."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax.custom_batching import custom_vmap, sequential_vmap


def _make_affine():
    """f(d, y) = d["a"] * y + d["b"]; its rule adds 100 and records (axis_size, in_batched)."""
    calls = []

    @custom_vmap
    def f(d, y):
        return {"s": d["a"] * y + d["b"]}

    @f.def_vmap
    def rule(axis_size, in_batched, d, y):
        calls.append((axis_size, in_batched))
        assert isinstance(in_batched, list)
        for leaf, b in ((d["a"], in_batched[0]["a"]), (d["b"], in_batched[0]["b"]), (y, in_batched[1])):
            assert leaf.shape[:1] == ((axis_size,) if b else leaf.shape[:1])
        batched = in_batched[0]["a"] or in_batched[0]["b"] or in_batched[1]
        return {"s": d["a"] * y + d["b"] + 100.0}, {"s": batched}

    return f, calls


def test_outside_vmap_runs_the_function():
    f, calls = _make_affine()
    out = f({"a": jnp.float32(2.0), "b": 1.0}, 3.0)
    np.testing.assert_allclose(out["s"], 7.0)
    assert calls == []
    jitted = morphax.jit(f)({"a": jnp.arange(3.0), "b": 1.0}, 2.0)
    np.testing.assert_allclose(jitted["s"], np.arange(3.0) * 2 + 1)
    assert calls == []


def test_rule_gets_axis_size_and_in_batched_pattern():
    f, calls = _make_affine()
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    out = morphax.vmap(f, ({"a": 1, "b": None}, None))({"a": x, "b": 1.0}, 2.0)
    assert calls == [(3, [{"a": True, "b": False}, False])]
    np.testing.assert_allclose(out["s"], (x * 2 + 1 + 100).T)  # batch axis 1 moved to the front


def test_nested_vmap_calls_the_rule_at_each_level():
    f, calls = _make_affine()
    a, b, y = np.arange(3.0, dtype=np.float32), np.ones(2, np.float32), np.arange(2.0, dtype=np.float32)
    inner = morphax.vmap(f, ({"a": 0, "b": None}, None))
    out = morphax.vmap(inner, ({"a": None, "b": 0}, 0))({"a": a, "b": b}, y)
    # The inner vmap's rule runs first (under the outer vmap), then the outer one batches the
    # rule's own code, which is plain: the outer level sees the inner rule's +100 only once.
    assert calls == [(3, [{"a": True, "b": False}, False])]
    expect = np.array([[a[j] * y[i] + b[i] + 100 for j in range(3)] for i in range(2)])
    np.testing.assert_allclose(out["s"], expect)


def test_unbatched_outputs_stay_unbatched_and_broadcast_when_returned():
    @custom_vmap
    def total(x):
        return jnp.sum(x)

    @total.def_vmap
    def rule(axis_size, in_batched, xs):
        return jnp.float32(7.0), False

    xs = jnp.arange(3.0)
    np.testing.assert_allclose(morphax.vmap(total)(xs), [7.0, 7.0, 7.0])
    np.testing.assert_allclose(morphax.vmap(lambda x: total(x) + x)(xs), [7.0, 8.0, 9.0])


@pytest.mark.parametrize("order", ["jit_of_vmap", "vmap_of_jit"])
def test_jit_on_either_side_uses_the_rule(order):
    f, calls = _make_affine()
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    in_axes = ({"a": 0, "b": 0}, None)
    g = (
        morphax.jit(morphax.vmap(f, in_axes))
        if order == "jit_of_vmap"
        else morphax.vmap(morphax.jit(f), in_axes)
    )
    out = g({"a": x, "b": x}, 2.0)
    np.testing.assert_allclose(out["s"], x * 2 + x + 100)
    assert calls[-1] == (2, [{"a": True, "b": True}, False])


def test_out_axes_moves_the_rule_output():
    f, _ = _make_affine()
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    out = morphax.vmap(f, ({"a": 0, "b": 0}, None), out_axes=1)({"a": x, "b": x}, 2.0)
    np.testing.assert_allclose(out["s"], (x * 3 + 100).T)


def _sin_mul():
    @custom_vmap
    def f(x, y):
        return jnp.sin(x) * y

    @f.def_vmap
    def rule(axis_size, in_batched, xs, ys):
        return jnp.sin(xs) * ys + 100.0, True

    return f


def test_jvp_differentiates_the_function_and_vmap_of_jvp_uses_the_rule():
    f = _sin_mul()
    p, t = morphax.jvp(f, (1.0, 2.0), (1.0, 0.5))
    np.testing.assert_allclose(p, np.sin(1.0) * 2, rtol=1e-6)
    np.testing.assert_allclose(t, np.cos(1.0) * 2 + np.sin(1.0) * 0.5, rtol=1e-6)
    xs = np.arange(3.0, dtype=np.float32)
    # Primals and tangents batched together: the rule (+100) gives the primal output, its JVP
    # (the derivative of the rule, where the constant vanishes) the tangent.
    ps, ts = morphax.vmap(lambda x: morphax.jvp(f, (x, 2.0), (x, 1.0)))(xs)
    np.testing.assert_allclose(ps, np.sin(xs) * 2 + 100, rtol=1e-6)
    np.testing.assert_allclose(ts, np.cos(xs) * xs * 2 + np.sin(xs), rtol=1e-5, atol=1e-6)
    # Only the primal batched (the tangent a constant): JAX vmaps the rule's JVP over that axis.
    ps, ts = morphax.vmap(lambda x: morphax.jvp(f, (x, 2.0), (1.0, 0.0)))(xs)
    np.testing.assert_allclose(ps, np.sin(xs) * 2 + 100, rtol=1e-6)
    np.testing.assert_allclose(ts, np.cos(xs) * 2, rtol=1e-6)


def test_jvp_in_float64():
    f = _sin_mul()
    with morphax.enable_x64():
        x = jnp.asarray(0.3, dtype=jnp.float64)
        p, t = morphax.jvp(f, (x, 2.0), (1.0, 0.0))
        assert p.dtype == np.float64 and t.dtype == np.float64
        np.testing.assert_allclose(t, 2 * np.cos(0.3), rtol=1e-13)


def test_reverse_mode_is_refused_as_in_jax():
    f = _sin_mul()
    with pytest.raises(ValueError, match="Linearization failed"):
        morphax.grad(f)(1.0, 2.0)
    with pytest.raises(ValueError, match="reverse-mode"):
        morphax.linearize(f, 1.0, 2.0)


def test_custom_vjp_outside_gives_reverse_mode():
    @morphax.custom_vjp
    @custom_vmap
    def g(x, y):
        return jnp.sin(x) * y

    @g.def_vmap  # reached through the custom_vjp, as in JAX
    def rule(axis_size, in_batched, xs, ys):
        return jnp.cos(xs) * ys, True

    def fwd(x, y):
        return g(x, y), (jnp.cos(x), jnp.sin(x), y)

    def bwd(res, ct):
        c, s, y = res
        return c * ct * y, s * ct

    g.defvjp(fwd, bwd)
    np.testing.assert_allclose(morphax.vmap(g)(jnp.zeros(3), jnp.ones(3)), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(morphax.grad(g)(0.5, 2.0), 2 * np.cos(0.5), rtol=1e-6)
    np.testing.assert_allclose(
        morphax.vmap(morphax.grad(g))(jnp.arange(3.0), jnp.ones(3)), np.cos(np.arange(3.0)), rtol=1e-6
    )


def test_make_jaxpr_shows_custom_vmap_call():
    f = _sin_mul()
    text = str(morphax.make_jaxpr(f)(1.0, 2.0))
    assert "custom_vmap_call[" in text
    assert "in_tree=PyTreeDef(([], (*, *)))" in text and "out_tree=PyTreeDef(*)" in text
    assert "rule=<function _sin_mul.<locals>.rule at" in text
    # Under vmap the rule's own code is traced instead.
    batched = str(morphax.make_jaxpr(morphax.vmap(f, (0, None)))(jnp.arange(3.0), 2.0))
    assert "custom_vmap_call" not in batched and "sin" in batched
    jvp_text = str(morphax.make_jaxpr(lambda x: morphax.jvp(f, (x, 2.0), (1.0, 0.0)))(1.0))
    assert "jvp_of_rule_rule" in jvp_text


def test_sequential_vmap_loops_over_batched_arguments():
    seen = []

    @sequential_vmap
    def solve(a, t):
        seen.append(a.shape)
        return a @ t[0] + t[1]

    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 2, 2)).astype(np.float32)
    v = np.array([1.0, 2.0], np.float32)
    shifts = rng.standard_normal((3, 2)).astype(np.float32)
    out = morphax.vmap(solve, (0, (None, 0)))(a, (v, shifts))
    np.testing.assert_allclose(out, np.stack([a[i] @ v + shifts[i] for i in range(3)]), rtol=1e-5)
    assert seen[-1] == (2, 2)  # the function only ever sees one element
    text = str(morphax.make_jaxpr(morphax.vmap(solve, (0, None)))(a, (v, v)))
    assert "scan[" in text and "custom_vmap_call[" in text
    twice = morphax.vmap(morphax.vmap(solve, (0, None)), (0, None))(np.stack([a, a]), (v, v))
    np.testing.assert_allclose(twice[1], np.stack([a[i] @ v + v for i in range(3)]), rtol=1e-5)


def test_sequential_vmap_jvp_under_vmap():
    @sequential_vmap
    def cube(x):
        return x**3

    xs = np.array([0.5, 1.0, 2.0], np.float32)
    ps, ts = morphax.vmap(lambda x: morphax.jvp(cube, (x,), (jnp.ones_like(x),)))(xs)
    np.testing.assert_allclose(ps, xs**3, rtol=1e-6)
    np.testing.assert_allclose(ts, 3 * xs**2, rtol=1e-6)


def test_integer_outputs_and_dtype():
    @custom_vmap
    def h(i):
        return i * 2

    @h.def_vmap
    def rule(axis_size, in_batched, i):
        return i * 3, True

    out = morphax.vmap(h)(jnp.arange(3))
    assert out.dtype == jnp.int32
    np.testing.assert_array_equal(out, [0, 3, 6])
    assert int(h(2)) == 4


def test_keyword_arguments_resolve_to_positions():
    @custom_vmap
    def f(x, scale=2.0):
        return x * scale

    @f.def_vmap
    def rule(axis_size, in_batched, x, scale):
        assert in_batched == [True, False]
        return x * scale + 1.0, True

    np.testing.assert_allclose(f(1.0), 2.0)
    np.testing.assert_allclose(morphax.vmap(lambda x: f(x, scale=3.0))(jnp.ones(2)), [4.0, 4.0])

    @custom_vmap
    def g(x, *, scale=2.0):
        return x * scale

    g.def_vmap(rule)
    with pytest.raises(TypeError, match="could not be resolved to positional-only arguments"):
        g(1.0, scale=3.0)


def test_errors():
    @custom_vmap
    def no_rule(x):
        return x

    with pytest.raises(AttributeError, match="No batching rule defined for custom_vmap function no_rule"):
        no_rule(1.0)

    @custom_vmap
    def pair(x):
        return x, x * 2

    pair.def_vmap(lambda n, b, x: ((x, x * 2), (True,)))
    with pytest.raises(ValueError, match="output batching specification"):
        morphax.vmap(pair)(jnp.ones(3))
    pair.def_vmap(lambda n, b, x: ([x, x * 2], [True, True]))
    with pytest.raises(ValueError, match="does not match that of original custom-vmapped function"):
        morphax.vmap(pair)(jnp.ones(3))
    pair.def_vmap(lambda n, b, x: ((x, x[0]), (True, True)))
    with pytest.raises(ValueError, match=r"output 1 of shape \(\), marked batched.*expected shape \(3,\)"):
        morphax.vmap(pair)(jnp.ones(3))

    def closes_over_batched(c):
        @custom_vmap
        def q(x):
            return x + c

        q.def_vmap(lambda n, b, x: (x + c, True))
        return q(1.0)

    with pytest.raises(ValueError, match="closes over a value that is batched"):
        morphax.vmap(closes_over_batched)(jnp.arange(3.0))


def test_jacfwd_and_mixed_batching_under_jvp():
    seen = []

    @custom_vmap
    def f(x, y):
        return jnp.sin(x) * y

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        seen.append(list(in_batched))
        return jnp.sin(x) * y, any(in_batched)  # honest: batched iff an input is

    xs = np.arange(3.0, dtype=np.float32)
    # jacfwd: only the tangents carry the axis, so the rule runs on unbatched primals (as in JAX)
    np.testing.assert_allclose(morphax.jacfwd(f)(xs, 2.0), np.diag(2 * np.cos(xs)), rtol=1e-6, atol=1e-7)
    assert seen[-1] == [False, False]
    # x's primal and tangent batched, y's primal only. NB: JAX returns (3, 3) outputs here; the
    # rule sees both batched and the outputs are right.
    ys = xs + 1
    p, t = morphax.vmap(lambda x, tx, y: morphax.jvp(f, (x, y), (tx, 0.0)))(xs, xs, ys)
    assert p.shape == t.shape == (3,)
    assert seen[-1] == [True, True]
    np.testing.assert_allclose(p, np.sin(xs) * ys, rtol=1e-6)
    np.testing.assert_allclose(t, np.cos(xs) * xs * ys, rtol=1e-5, atol=1e-6)

    # A rule that calls everything batched fails jacfwd in JAX too; here the error names it.
    f.def_vmap(lambda n, b, x, y: (jnp.sin(x) * y, True))
    with pytest.raises(ValueError, match=r"custom vmap rule \(<lambda>\), called by the JVP"):
        morphax.jacfwd(f)(xs, 2.0)


def test_custom_jvp_inside_keeps_its_rule_and_def_attributes_forward():
    @custom_vmap
    @morphax.custom_jvp
    def f(x):
        return jnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), t[0] * 100.0))  # reaches the custom_jvp inside
    f.def_vmap(lambda n, b, x: (x + 1.0, True))
    _, t = morphax.jvp(f, (1.0,), (1.0,))
    np.testing.assert_allclose(t, 100.0)
    np.testing.assert_allclose(morphax.vmap(f)(jnp.ones(2)), [2.0, 2.0])
    with pytest.raises(AttributeError, match="'custom_vmap' object has no attribute 'foo'"):
        f.foo  # noqa: B018
