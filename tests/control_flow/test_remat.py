"""`checkpoint` / `remat`: values and derivatives equal those of the plain function under every
transformation and policy; the saved residuals follow the policy, and what is not saved is
recomputed in the backward pass (counted with a primitive that counts its evaluations)."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, check_jaxpr
from morphax._src.higher_order.remat import remat_p, saved_residuals
from morphax.ad_checkpoint import checkpoint, checkpoint_name, checkpoint_policies, print_saved_residuals
from morphax.test_util import check_grads

cp = checkpoint_policies

POLICIES = {
    "default": None,
    "nothing": cp.nothing_saveable,
    "everything": cp.everything_saveable,
    "dots": cp.dots_saveable,
    "checkpoint_dots": cp.checkpoint_dots,
    "dots_no_batch": cp.dots_with_no_batch_dims_saveable,
    "only_a": cp.save_only_these_names("a"),
    "names_but_a": cp.save_any_names_but_these("a"),
    "both": cp.save_from_both_policies(cp.dots_saveable, cp.save_only_these_names("b")),
}


def mlp(x, w1, w2):
    h = checkpoint_name(jnp.tanh(x @ w1), "a")
    h = checkpoint_name(jnp.sin(h) * h, "b")
    return jnp.sum(jnp.cos(h @ w2) ** 2)


def _args(seed=0):
    rng = np.random.default_rng(seed)
    return (
        jnp.asarray(rng.normal(size=(4, 3)).astype(np.float32)),
        jnp.asarray(rng.normal(size=(3, 5)).astype(np.float32) * 0.5),
        jnp.asarray(rng.normal(size=(5, 2)).astype(np.float32) * 0.5),
    )


def _close(a, b, tol=1e-5):
    for x, y in zip(morphax.tree.leaves(a), morphax.tree.leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


# ------------------------------------------------------------------------ a counting primitive


@pytest.fixture(scope="module")
def counted_sin():
    """`sin` as a primitive whose evaluations (eager or compiled) are counted."""
    from morphax._src.core import primitive as prim_mod
    from morphax._src.core.primitive import Primitive

    p = Primitive("test_remat_counted_sin")
    calls = [0]

    def impl(x):
        calls[0] += 1
        return np.sin(x)

    p.impl = impl
    p.abstract_eval = lambda a: a
    p.jvp = lambda primals, tangents: (p.bind(primals[0]), tangents[0] * lax.cos(primals[0]))
    p.batch = lambda vals, dims, *, axis_data: (p.bind(vals[0]), dims[0])
    yield p, calls
    del prim_mod.registry["test_remat_counted_sin"]


def _counts(counted_sin, policy):
    p, calls = counted_sin
    f = lambda x: p.bind(p.bind(x))
    g = f if policy == "plain" else checkpoint(f, policy=policy)
    x = jnp.asarray([0.3, 0.7], dtype=np.float32)
    calls[0] = 0
    out, f_vjp = morphax.vjp(g, x)
    forward = calls[0]
    calls[0] = 0
    (ct,) = f_vjp(jnp.ones_like(out))
    backward = calls[0]
    np.testing.assert_allclose(ct, np.cos(np.sin([0.3, 0.7])) * np.cos([0.3, 0.7]), rtol=1e-6)
    return forward, backward


def test_backward_pass_recomputes_what_is_not_saved(counted_sin):
    # Both sins run forward; d/dx needs cos(sin x), so the inner sin is recomputed unless saved.
    assert _counts(counted_sin, "plain") == (2, 0)
    assert _counts(counted_sin, None) == (2, 1)
    assert _counts(counted_sin, cp.nothing_saveable) == (2, 1)
    assert _counts(counted_sin, cp.everything_saveable) == (2, 0)


def test_recomputation_under_jit(counted_sin):
    p, calls = counted_sin
    x = jnp.asarray([0.3, 0.7], dtype=np.float32)
    want = np.cos(np.sin([0.3, 0.7])) * np.cos([0.3, 0.7])
    # value_and_grad keeps the forward pass live (grad alone lets DCE drop it).
    for policy, expected in ((None, 3), (cp.everything_saveable, 2)):
        f = checkpoint(lambda x: jnp.sum(p.bind(p.bind(x))), policy=policy)
        g = morphax.jit(morphax.value_and_grad(f))
        g(x)  # compile
        calls[0] = 0
        np.testing.assert_allclose(g(x)[1], want, rtol=1e-6)
        assert calls[0] == expected  # two forward (+ one recomputed: passes did not merge them)
    calls[0] = 0
    morphax.jit(morphax.grad(checkpoint(lambda x: jnp.sum(p.bind(p.bind(x))))))(x)
    assert calls[0] == 1  # grad alone: the forward pass is dead code, only the recomputation runs


def test_transposed_jaxpr_holds_the_recomputation():
    f = lambda x: jnp.sin(jnp.sin(x))
    jaxpr = morphax.make_jaxpr(morphax.grad(checkpoint(f)))(1.0).jaxpr
    check_jaxpr(jaxpr)
    (eqn,) = [e for e in jaxpr.eqns if e.primitive is remat_p]
    inner = [e.primitive.name for e in eqn.params["jaxpr"].jaxpr.eqns]
    assert eqn.params["differentiated"] is True
    assert inner.count("sin") == 1 and inner.count("cos") == 2  # recompute sin x, then both cosines
    saved = morphax.make_jaxpr(morphax.grad(checkpoint(f, policy=cp.everything_saveable)))(1.0).jaxpr
    (eqn,) = [e for e in saved.eqns if e.primitive is remat_p]
    assert [e.primitive.name for e in eqn.params["jaxpr"].jaxpr.eqns] == ["mul", "mul"]


# ----------------------------------------------------------------------------- saved residuals


def _sources(f, *args):
    return [src for _, src in saved_residuals(f, *args)]


def test_saved_residuals_differ_by_policy():
    args = _args()
    plain = _sources(mlp, *args)
    nothing = _sources(checkpoint(mlp, policy=cp.nothing_saveable), *args)
    everything = _sources(checkpoint(mlp, policy=cp.everything_saveable), *args)
    assert nothing == ["from the argument x", "from the argument w1", "from the argument w2"]
    assert len(everything) > len(nothing)
    assert everything == plain
    dots = _sources(checkpoint(mlp, policy=cp.dots_saveable), *args)
    assert sorted(dots[3:]) == ["output of dot_general", "output of dot_general"]
    only_a = _sources(checkpoint(mlp, policy=cp.save_only_these_names("a")), *args)
    assert only_a[3:] == ["named 'a'"]
    but_a = _sources(checkpoint(mlp, policy=cp.save_any_names_but_these("a")), *args)
    assert but_a[3:] == ["named 'b'"]
    both = _sources(checkpoint(mlp, policy=POLICIES["both"]), *args)
    assert sorted(both[3:]) == ["named 'b'", "output of dot_general", "output of dot_general"]


def test_linearized_jaxpr_consts_count_the_residuals():
    args = _args()
    n = {}
    for name in ("nothing", "everything"):
        _, f_jvp = morphax.linearize(checkpoint(mlp, policy=POLICIES[name]), *args)
        n[name] = len(f_jvp.jaxpr.consts)
    assert n["nothing"] == 3 and n["everything"] > 3


def test_dots_with_no_batch_dims():
    def f(a, b):
        c = jnp.einsum("bij,bjk->bik", a, b)  # batch dims: not saveable
        d = jnp.einsum("bik,kl->bil", jnp.sin(c), b[0])  # no batch dims: saveable
        return jnp.sum(jnp.sin(d))

    a, b = jnp.ones((2, 3, 3)) * 0.1, jnp.ones((2, 3, 3)) * 0.2
    srcs = _sources(checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable), a, b)
    assert srcs.count("output of dot_general") == 1
    assert _sources(checkpoint(f, policy=cp.dots_saveable), a, b).count("output of dot_general") == 2
    _close(
        morphax.grad(checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable))(a, b), morphax.grad(f)(a, b)
    )


def test_print_saved_residuals(capsys):
    x, w1, w2 = _args()
    print_saved_residuals(checkpoint(mlp, policy=cp.save_only_these_names("a")), x, w1, w2)
    assert capsys.readouterr().out.splitlines() == [
        "f32[4,3] from the argument x",
        "f32[3,5] from the argument w1",
        "f32[5,2] from the argument w2",
        "f32[4,5] named 'a'",
    ]
    print_saved_residuals(lambda x: jnp.sin(x) * 2.0, x)
    assert capsys.readouterr().out.splitlines() == ["f32[4,3] output of cos"]


# ------------------------------------------------------------------------------ values / grads


@pytest.mark.parametrize("policy", list(POLICIES), ids=list(POLICIES))
def test_grad_matches_plain_for_each_policy(policy):
    args = _args()
    g = checkpoint(mlp, policy=POLICIES[policy])
    np.testing.assert_allclose(g(*args), mlp(*args), rtol=1e-6)
    want = morphax.grad(mlp, argnums=(0, 1, 2))(*args)
    _close(morphax.grad(g, argnums=(0, 1, 2))(*args), want)
    _close(morphax.jit(morphax.grad(g, argnums=(0, 1, 2)))(*args), want)
    _close(morphax.grad(morphax.jit(g), argnums=(0, 1, 2))(*args), want)


@pytest.mark.parametrize("policy", list(POLICIES), ids=list(POLICIES))
def test_check_grads_order_2(policy):
    check_grads(checkpoint(mlp, policy=POLICIES[policy]), _args(), order=2, modes=("fwd", "rev"))


def test_jvp_and_linearize():
    args = _args()
    tangents = _args(1)
    g = checkpoint(mlp)
    _close(morphax.jvp(g, args, tangents), morphax.jvp(mlp, args, tangents))
    out, f_jvp = morphax.linearize(g, *args)
    _, want = morphax.jvp(mlp, args, tangents)
    _close(f_jvp(*tangents), want)


def test_hessian_and_jacobians():
    f = lambda x: jnp.sum(jnp.sin(x) * jnp.cos(x[::-1]))
    g = checkpoint(f)
    x = jnp.linspace(0.1, 1.0, 4)
    _close(morphax.hessian(g)(x), morphax.hessian(f)(x))
    h = lambda x: jnp.tanh(x) * x[0]
    _close(morphax.jacrev(checkpoint(h))(x), morphax.jacfwd(h)(x))
    _close(morphax.jacfwd(checkpoint(h))(x), morphax.jacfwd(h)(x))


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (1, 0)])
def test_vmap_each_operand(in_axes):
    def f(x, y):
        return jnp.sin(x * y) + jnp.cos(x) ** 2

    g = checkpoint(f)
    x = jnp.arange(6.0).reshape(2, 3) * 0.1
    y = jnp.arange(3.0) + 0.5
    xs = x if in_axes[0] is not None else x[0]
    if in_axes[0] == 1:
        xs = x.T
    ys = jnp.stack([y, y * 2]) if in_axes[1] == 0 else y
    _close(morphax.vmap(g, in_axes)(xs, ys), morphax.vmap(f, in_axes)(xs, ys))
    loss_g = lambda a, b: jnp.sum(g(a, b))
    loss_f = lambda a, b: jnp.sum(f(a, b))
    want = morphax.vmap(morphax.grad(loss_f, argnums=(0, 1)), in_axes)(xs, ys)
    _close(morphax.vmap(morphax.grad(loss_g, argnums=(0, 1)), in_axes)(xs, ys), want)
    _close(morphax.jit(morphax.vmap(morphax.grad(loss_g, argnums=(0, 1)), in_axes))(xs, ys), want)
    _close(
        morphax.grad(lambda a, b: jnp.sum(morphax.vmap(g, in_axes)(a, b)), argnums=(0, 1))(xs, ys),
        morphax.grad(lambda a, b: jnp.sum(morphax.vmap(f, in_axes)(a, b)), argnums=(0, 1))(xs, ys),
    )


def test_vmap_grad_jit_compositions_with_policy():
    x, w1, w2 = _args()
    xs = jnp.stack([x, x * 0.5, -x])
    for policy in (None, cp.dots_saveable, cp.save_only_these_names("b")):
        g = checkpoint(mlp, policy=policy)
        want = morphax.vmap(morphax.grad(mlp), (0, None, None))(xs, w1, w2)
        _close(morphax.vmap(morphax.grad(g), (0, None, None))(xs, w1, w2), want)
        _close(morphax.jit(morphax.vmap(morphax.grad(g), (0, None, None)))(xs, w1, w2), want)
        _close(morphax.vmap(morphax.jit(morphax.grad(g)), (0, None, None))(xs, w1, w2), want)


# ------------------------------------------------------------------------- API and structure


def test_pytrees_kwargs_and_multiple_outputs():
    def f(p, x, *, scale):
        y = jnp.tanh(p["w"] @ x) * scale
        return {"y": y, "s": jnp.sum(y**2)}, p["b"] + 1.0

    p = {"w": jnp.ones((2, 3)) * 0.3, "b": jnp.arange(2.0)}
    x = jnp.arange(3.0)
    g = checkpoint(f)
    _close(g(p, x, scale=2.0), f(p, x, scale=2.0))
    loss = lambda h: lambda p, x: h(p, x, scale=2.0)[0]["s"] + jnp.sum(h(p, x, scale=2.0)[1])
    _close(morphax.grad(loss(g))(p, x), morphax.grad(loss(f))(p, x))


def test_static_argnums():
    def f(x, n, mode):
        for _ in range(n):
            x = jnp.sin(x) if mode == "sin" else jnp.cos(x)
        return x

    g = checkpoint(f, static_argnums=(1, 2))
    np.testing.assert_allclose(morphax.grad(g)(0.5, 3, "sin"), morphax.grad(f)(0.5, 3, "sin"), rtol=1e-6)
    np.testing.assert_allclose(morphax.grad(g)(0.5, 2, "cos"), morphax.grad(f)(0.5, 2, "cos"), rtol=1e-6)
    g_neg = checkpoint(f, static_argnums=(-2, -1))
    np.testing.assert_allclose(g_neg(0.5, 2, "cos"), f(0.5, 2, "cos"), rtol=1e-6)
    np.testing.assert_allclose(
        morphax.jit(morphax.grad(g), static_argnums=(1, 2))(0.5, 2, "sin"),
        morphax.grad(f)(0.5, 2, "sin"),
        rtol=1e-6,
    )
    g_names = checkpoint(lambda x, *, n: f(x, n, "sin"), static_argnames="n")
    np.testing.assert_allclose(morphax.grad(g_names)(0.5, n=2), morphax.grad(f)(0.5, 2, "sin"), rtol=1e-6)


def test_static_argnums_errors():
    def f(x, n):
        return x * 2 if n > 0 else x

    with pytest.raises(TypeError, match="static_argnums"):
        checkpoint(f)(1.0, 2)
    with pytest.raises(ValueError, match="static_argnums"):
        checkpoint(f, static_argnums=5)(1.0, 2)
    with pytest.raises(TypeError, match="static_argnums"):
        checkpoint(f, static_argnums="n")(1.0, 2)
    with pytest.raises(TypeError, match="policy"):
        checkpoint(f, policy="nothing")


def test_prevent_cse_accepted_and_kept():
    f = lambda x: jnp.sin(x) * 2.0
    for flag in (True, False):
        g = checkpoint(f, prevent_cse=flag)
        np.testing.assert_allclose(morphax.grad(g)(0.3), morphax.grad(f)(0.3), rtol=1e-6)
        (eqn,) = morphax.make_jaxpr(g)(0.3).jaxpr.eqns
        assert eqn.params["prevent_cse"] is flag and eqn.params["differentiated"] is False
    assert morphax.remat is not None and morphax.checkpoint is checkpoint or callable(morphax.checkpoint)


def test_remat_alias_and_public_names():
    f = lambda x: jnp.exp(jnp.sin(x))
    np.testing.assert_allclose(morphax.grad(morphax.remat(f))(0.4), morphax.grad(f)(0.4), rtol=1e-6)
    np.testing.assert_allclose(morphax.grad(morphax.checkpoint(f))(0.4), morphax.grad(f)(0.4), rtol=1e-6)
    assert morphax.checkpoint_policies.nothing_saveable is cp.nothing_saveable


def test_closure_over_outer_tracers_and_constants():
    const = jnp.arange(3.0)

    def outer(w, x):
        return jnp.sum(checkpoint(lambda y: jnp.sin(y * w + const))(x))

    def plain(w, x):
        return jnp.sum(jnp.sin(x * w + const))

    w, x = 0.7, jnp.arange(3.0) * 0.2
    _close(morphax.grad(outer, argnums=(0, 1))(w, x), morphax.grad(plain, argnums=(0, 1))(w, x))
    _close(morphax.jit(morphax.grad(outer, argnums=(0, 1)))(w, x), morphax.grad(plain, argnums=(0, 1))(w, x))
    _close(
        morphax.vmap(morphax.grad(outer), (0, None))(jnp.arange(3.0), x),
        morphax.vmap(morphax.grad(plain), (0, None))(jnp.arange(3.0), x),
    )


def test_nested_checkpoint_and_jit_inside():
    inner = checkpoint(lambda x: jnp.sin(x) ** 2, policy=cp.everything_saveable)
    f = checkpoint(lambda x: jnp.cos(morphax.jit(inner)(x)) * x)
    plain = lambda x: jnp.cos(jnp.sin(x) ** 2) * x
    x = jnp.linspace(0.1, 1.0, 3)
    _close(f(x), plain(x))
    loss = lambda h: lambda x: jnp.sum(h(x))
    _close(morphax.grad(loss(f))(x), morphax.grad(loss(plain))(x))
    check_grads(loss(f), (x,), order=2, modes=("rev",), atol=1e-2, rtol=1e-2)


def test_integer_operands_and_unused_outputs():
    def f(x, n):
        return jnp.sin(x) * n, n + 1

    g = checkpoint(f)
    n = jnp.int32(3)
    np.testing.assert_allclose(morphax.grad(lambda x: g(x, n)[0])(0.5), 3 * np.cos(0.5), rtol=1e-6)
    # DCE drops the unused output of the call inside jit.
    out = morphax.jit(lambda x: g(x, n)[0])(0.5)
    np.testing.assert_allclose(out, 3 * np.sin(0.5), rtol=1e-6)


def test_name_primitive_rules():
    x = jnp.arange(3.0)
    np.testing.assert_array_equal(checkpoint_name(x, "q"), x)
    jaxpr = morphax.make_jaxpr(lambda x: checkpoint_name(x, "q"))(x)
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["name"]
    assert "name[name=q]" in str(jaxpr)
    np.testing.assert_array_equal(morphax.grad(lambda x: jnp.sum(checkpoint_name(x, "q") ** 2))(x), 2 * x)
    np.testing.assert_array_equal(morphax.vmap(lambda x: checkpoint_name(x, "q"))(x), x)
    tree = checkpoint_name({"a": x, "b": (x, x)}, "t")
    assert set(tree) == {"a", "b"}
    (ct,) = morphax.linear_transpose(lambda x: checkpoint_name(x, "q"), x)(x)
    np.testing.assert_array_equal(ct, x)


def test_checkpoint_of_jvp_of_checkpoint_fwd_over_rev():
    f = checkpoint(lambda x: jnp.sin(x) * jnp.exp(x))
    plain = lambda x: jnp.sin(x) * jnp.exp(x)
    x = 0.3
    hvp = lambda h: morphax.jvp(morphax.grad(h), (x,), (1.0,))[1]
    np.testing.assert_allclose(hvp(f), hvp(plain), rtol=1e-5)
    np.testing.assert_allclose(
        morphax.grad(morphax.grad(f))(x), morphax.grad(morphax.grad(plain))(x), rtol=1e-5
    )


def _check_deep(jaxpr):
    """check_jaxpr on `jaxpr` and every jaxpr nested in its equations' params; returns how many
    remat calls it met."""
    jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    check_jaxpr(jaxpr)
    n = 0
    for eqn in jaxpr.eqns:
        n += eqn.primitive is remat_p
        for v in eqn.params.values():
            if isinstance(v, (ClosedJaxpr, Jaxpr)):
                n += _check_deep(v)
    return n


def test_jaxprs_built_by_the_rules_type_check():
    x, w1, w2 = _args()
    s = 0.5
    for policy in (None, cp.everything_saveable, cp.save_only_these_names("a"), cp.dots_saveable):
        g = checkpoint(mlp, policy=policy)
        assert _check_deep(morphax.make_jaxpr(morphax.grad(g, argnums=(0, 1, 2)))(x, w1, w2)) >= 1
        assert _check_deep(
            morphax.make_jaxpr(morphax.vmap(morphax.grad(g), (0, None, None)))(x[None], w1, w2)
        )
        hess = morphax.grad(morphax.grad(lambda s, g=g: g(x * s, w1, w2)))
        assert _check_deep(morphax.make_jaxpr(hess)(s)) >= 1
        np.testing.assert_allclose(
            hess(s), morphax.grad(morphax.grad(lambda s: mlp(x * s, w1, w2)))(s), rtol=1e-4
        )
        _, f_jvp = morphax.linearize(g, x, w1, w2)
        assert _check_deep(f_jvp.jaxpr) == 1


def test_identity_and_constant_outputs():
    f = lambda x, y: (x, 2.0, jnp.sin(y), x * y)
    g = checkpoint(f)
    stack = lambda h: lambda x, y: jnp.stack([jnp.asarray(o, dtype=np.float32) for o in h(x, y)])
    _close(g(1.0, 2.0), f(1.0, 2.0))
    _close(
        morphax.jacrev(stack(g), argnums=(0, 1))(1.0, 2.0), morphax.jacrev(stack(f), argnums=(0, 1))(1.0, 2.0)
    )
    _close(
        morphax.jacfwd(stack(g), argnums=(0, 1))(1.0, 2.0), morphax.jacrev(stack(f), argnums=(0, 1))(1.0, 2.0)
    )
    # An output with no cotangent: the transpose of the call costs nothing.
    assert morphax.grad(lambda x: g(x, 2.0)[1] * 0 + 1.0)(1.0) == 0.0
