"""Jaxpr passes (DCE, CSE, constant folding, forwarding) and the pipeline: each pass on hand-built
examples with exact counts, then every pass and the pipeline on many traced programs (jnp, jit,
grad, vmap), checking types, evaluation, idempotence and that inputs are never mutated."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.nn as nn
import morphax.numpy as jnp
import morphax.random as jr
from morphax import lax, make_jaxpr
from morphax._src.core import primitive as prim_mod
from morphax._src.core.avals import ShapedArray
from morphax._src.core.jaxpr import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Literal,
    Var,
    check_jaxpr,
    eval_jaxpr,
    pretty_print,
)
from morphax._src.passes._util import sub_jaxprs
from morphax._src.passes.constant_folding import FOLD_SIZE_LIMIT, fold_constants, run_constant_folding
from morphax._src.passes.cse import cse, run_cse
from morphax._src.passes.dce import dce, run_dce
from morphax._src.passes.forwarding import forward, forwarded_outputs, run_forwarding
from morphax._src.passes.pipeline import PassStats, optimize

F32 = np.float32
reg = prim_mod.registry


# ------------------------------------------------------------------------------------------ helpers


def check_all(closed):
    """check_jaxpr on the jaxpr and, recursively, on every jaxpr its equations carry."""
    jaxpr = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
    check_jaxpr(jaxpr)
    if isinstance(closed, ClosedJaxpr):
        assert len(closed.consts) == len(jaxpr.constvars)
    for eqn in jaxpr.eqns:
        for sub in sub_jaxprs(eqn.params):
            check_all(sub)


def prims_of(closed, recursive=False) -> list[str]:
    out = []
    for eqn in closed.jaxpr.eqns:
        out.append(eqn.primitive.name)
        if recursive:
            for sub in sub_jaxprs(eqn.params):
                out += prims_of(sub, True)
    return out


def run(closed, *args):
    return [np.asarray(o) for o in eval_jaxpr(closed.jaxpr, closed.consts, *args)]


def assert_same_outputs(a, b, args):
    assert [x for x in a.out_avals] == [x for x in b.out_avals]
    for x, y in zip(run(a, *args), run(b, *args)):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def snapshot(closed):
    """Everything a pass could mutate, by identity and by text."""
    j = closed.jaxpr
    eqns = [
        (id(e), id(e.primitive), tuple(map(id, e.invars)), tuple(map(id, e.outvars)), id(e.params))
        + tuple((k, id(v)) for k, v in e.params.items())
        for e in j.eqns
    ]
    subs = [snapshot(s) for e in j.eqns for s in sub_jaxprs(e.params) if isinstance(s, ClosedJaxpr)]
    return (
        pretty_print(j),
        tuple(map(id, j.constvars)),
        tuple(map(id, j.invars)),
        tuple(map(id, j.outvars)),
        tuple(map(id, closed.consts)),
        eqns,
        subs,
    )


def cj(f, *args):
    return make_jaxpr(f)(*args)


def x3():
    return np.arange(1, 4, dtype=F32)


# ------------------------------------------------------------------------------------------------ DCE


def test_dce_removes_unused_sin():
    closed = cj(lambda x: (jnp.sin(x), x * 3.0)[1], x3())
    assert prims_of(closed) == ["sin", "mul"]
    res = run_dce(closed)
    assert res.changed and res.removed == 1
    assert prims_of(res.closed) == ["mul"]
    check_all(res.closed)
    assert_same_outputs(closed, res.closed, [x3()])


def test_dce_removes_dead_chains_and_keeps_the_interface():
    def f(x, y):
        a = jnp.exp(jnp.cos(x) * 2.0)  # dead, three equations
        del a
        return x + 1.0

    closed = cj(f, x3(), x3())
    res = run_dce(closed)
    assert res.removed == 3
    assert prims_of(res.closed) == ["add"]
    assert len(res.closed.jaxpr.invars) == 2  # unused input y is kept


def test_dce_drops_unused_constvars():
    c1, c2 = np.arange(3, dtype=F32), np.ones(3, F32)
    closed = cj(lambda x: (x * c1, x + c2)[1], x3())
    assert len(closed.consts) == 2
    out = dce(closed)
    assert len(out.consts) == 1 and out.consts[0] is closed.consts[1]
    check_all(out)


def test_dce_no_change_returns_input():
    closed = cj(lambda x: jnp.sin(x) * 2.0, x3())
    res = run_dce(closed)
    assert res.closed is closed and not res.changed and res.removed == 0


@pytest.fixture
def effect_p():
    p = prim_mod.Primitive("test_passes_effect")
    p.impl = lambda x: np.array(x, copy=True)
    p.abstract_eval = lambda x: x
    p.has_side_effects = True
    yield p
    del prim_mod.registry["test_passes_effect"]


def _effect_jaxpr(effect_p, n=1):
    a = Var(ShapedArray((3,), np.dtype(F32)))
    outs = [Var(a.aval) for _ in range(n)]
    eqns = [JaxprEqn(effect_p, [a], [o], {}) for o in outs]
    b = Var(a.aval)
    eqns.append(JaxprEqn(reg["sin"], [a], [b], {"accuracy": None}))
    return ClosedJaxpr(Jaxpr([], [a], [b], eqns), [])


def test_dce_keeps_side_effects(effect_p):
    closed = _effect_jaxpr(effect_p)
    check_all(closed)
    res = run_dce(closed)
    assert not res.changed and prims_of(res.closed) == ["test_passes_effect", "sin"]


def test_dce_keeps_pjit_with_side_effect_inside(effect_p):
    inner = _effect_jaxpr(effect_p)
    a = Var(inner.in_avals[0])
    dead = Var(a.aval)
    eqn = JaxprEqn(reg["jit"], [a], [dead], {"jaxpr": inner, "name": "f"})
    closed = ClosedJaxpr(Jaxpr([], [a], [a], [eqn]), [])
    out = dce(closed)
    check_all(out)
    (call,) = out.jaxpr.eqns
    assert call.outvars == [] and prims_of(call.params["jaxpr"]) == ["test_passes_effect"]


def test_dce_pjit_loses_unused_output_and_input():
    @morphax.jit
    def g(x, y):
        return jnp.sum(x), jnp.sin(y)

    closed = cj(lambda x, y: g(x * 2.0, y)[0] + 1.0, x3(), x3())
    (call,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "jit"]
    assert len(call.outvars) == 2 and len(call.invars) == 2
    res = run_dce(closed)
    assert res.removed == 1  # the inner sin
    (call,) = [e for e in res.closed.jaxpr.eqns if e.primitive.name == "jit"]
    assert len(call.outvars) == 1 and len(call.invars) == 1
    assert prims_of(call.params["jaxpr"]) == ["reduce_sum"]
    check_all(res.closed)
    assert_same_outputs(closed, res.closed, [x3(), x3() + 1])


def test_dce_removes_pjit_with_no_used_outputs():
    g = morphax.jit(lambda x: jnp.cos(x) * 2.0)
    closed = cj(lambda x: (g(x), x + 1.0)[1], x3())
    res = run_dce(closed)
    assert res.removed == 3  # the call and its two equations
    assert prims_of(res.closed) == ["add"]


def test_dce_shared_inner_jaxpr_stays_shared():
    g = morphax.jit(lambda x: (jnp.sin(x), jnp.cos(x)))
    closed = cj(lambda x, y: g(x)[0] + g(y)[0], x3(), x3())
    calls = [e for e in dce(closed).jaxpr.eqns if e.primitive.name == "jit"]
    assert len(calls) == 2 and calls[0].params["jaxpr"] is calls[1].params["jaxpr"]


# ------------------------------------------------------------------------------------------------ CSE


def test_cse_merges_duplicate_mul():
    closed = cj(lambda x: x * 2.0 + x * 2.0, x3())
    assert prims_of(closed).count("mul") == 2
    res = run_cse(closed)
    assert res.removed == 1
    assert prims_of(res.closed) == ["mul", "add"]
    add = res.closed.jaxpr.eqns[1]
    assert add.invars[0] is add.invars[1]
    check_all(res.closed)
    assert_same_outputs(closed, res.closed, [x3()])


def test_cse_chains_and_outputs():
    def f(x):
        a = jnp.sin(x) * 3.0
        b = jnp.sin(x) * 3.0
        return a, b, a + b

    closed = cj(f, x3())
    res = run_cse(closed)
    assert res.removed == 2
    outs = res.closed.jaxpr.outvars
    assert outs[0] is outs[1]


def test_cse_distinguishes_literals_params_and_dtypes():
    def f(x):
        return x * 2.0, x * 3.0, x * 0.0, x * -0.0, jnp.sum(x, 0), jnp.max(x, 0)

    closed = cj(f, x3())
    assert run_cse(closed).removed == 0

    def g(i):
        return i + 1, i + np.int32(1)  # same value and dtype: merged

    assert run_cse(cj(g, np.arange(3, dtype=np.int32))).removed == 1


def _two_const_jaxpr(c, d):
    a = Var(ShapedArray((3,), np.dtype(F32)))
    k1, k2 = Var(a.aval), Var(a.aval)
    m1, m2, s = Var(a.aval), Var(a.aval), Var(a.aval)
    eqns = [
        JaxprEqn(reg["mul"], [a, k1], [m1], {}),
        JaxprEqn(reg["mul"], [a, k2], [m2], {}),
        JaxprEqn(reg["add"], [m1, m2], [s], {}),
    ]
    return ClosedJaxpr(Jaxpr([k1, k2], [a], [s], eqns), [c, d])


def test_cse_merges_identical_constvars():
    c = np.arange(3, dtype=F32)
    closed = _two_const_jaxpr(c, c)
    check_all(closed)
    res = run_cse(closed)
    assert res.removed == 1 and len(res.closed.consts) == 1
    check_all(res.closed)
    assert_same_outputs(closed, res.closed, [x3()])
    # Equal values in different objects are not merged (only identity is cheap and certain).
    assert run_cse(_two_const_jaxpr(c, c.copy())).removed == 0


def test_cse_never_merges_side_effects(effect_p):
    closed = _effect_jaxpr(effect_p, n=2)
    assert not run_cse(closed).changed


def test_cse_merges_identical_pjit_calls():
    g = morphax.jit(lambda x: jnp.sin(x) * 2.0)
    closed = cj(lambda x: g(x) + g(x), x3())
    res = run_cse(closed)
    assert res.removed == 3  # one call with its two equations
    assert prims_of(res.closed) == ["jit", "add"]
    assert_same_outputs(closed, res.closed, [x3()])


def test_cse_inside_pjit():
    g = morphax.jit(lambda x: jnp.cos(x) + jnp.cos(x))
    closed = cj(lambda x: g(x), x3())
    res = run_cse(closed)
    assert res.removed == 1
    assert prims_of(res.closed, recursive=True) == ["jit", "cos", "add"]
    check_all(res.closed)


def test_cse_unhashable_params_compare_by_identity():
    a = Var(ShapedArray((3,), np.dtype(F32)))
    p = [1, 2]  # a list param: unhashable, so only the very same object matches
    b1, b2, b3 = (Var(a.aval) for _ in range(3))
    mk = lambda out, param: JaxprEqn(reg["sin"], [a], [out], {"accuracy": None, "extra": param})
    closed = ClosedJaxpr(Jaxpr([], [a], [b1, b2, b3], [mk(b1, p), mk(b2, p), mk(b3, [1, 2])]), [])
    res = run_cse(closed)
    assert res.removed == 1
    assert res.closed.jaxpr.outvars[0] is res.closed.jaxpr.outvars[1]


# ---------------------------------------------------------------------------------- constant folding


def test_fold_ones_times_two():
    closed = cj(lambda x: jnp.ones(3) * 2 + x, x3())
    assert prims_of(closed) == ["broadcast_in_dim", "mul", "add"]
    res = run_constant_folding(closed)
    assert res.removed == 2
    assert prims_of(res.closed) == ["add"]
    out = dce(res.closed)
    assert len(out.consts) == 1
    np.testing.assert_array_equal(np.asarray(out.consts[0]), np.full(3, 2, F32))
    check_all(res.closed)
    assert_same_outputs(closed, res.closed, [x3()])


def test_fold_closure_constants_and_scalars_become_literals():
    c = np.arange(4, dtype=F32)
    closed = cj(lambda x: jnp.sum(jnp.ones(4) * c + 1.0) * x, np.ones(4, F32))
    res = run_constant_folding(closed)
    assert res.removed == 4
    (mul,) = res.closed.jaxpr.eqns
    lit = [v for v in mul.invars if isinstance(v, Literal)]
    assert len(lit) == 1 and float(np.asarray(lit[0].val)) == 10.0 and lit[0].aval.dtype == F32
    assert_same_outputs(closed, res.closed, [np.ones(4, F32)])


def test_fold_keeps_types_and_weak_types():
    closed = cj(lambda x: (jnp.arange(3) * 2).astype(jnp.float32) + x, x3())
    res = run_constant_folding(closed)
    assert prims_of(res.closed) == ["add"]
    assert_same_outputs(closed, res.closed, [x3()])


def test_fold_skips_large_constants():
    n = FOLD_SIZE_LIMIT + 1
    big = np.ones(n, F32)
    closed = cj(lambda x: big * 2.0 + x, np.ones(n, F32))
    assert run_constant_folding(closed).removed == 0


def test_fold_prng_chain():
    closed = cj(lambda x: x + jr.uniform(jr.PRNGKey(0), (3,)), x3())
    res = run_constant_folding(closed)
    assert prims_of(res.closed) == ["add"]
    check_all(res.closed)
    assert_same_outputs(closed, res.closed, [x3()])
    # normal's typed key and nested jits (as JAX's) fold too once the compiler has inlined and
    # physicalized them: the compiled program is the add alone.
    compiled = morphax.jit(lambda x: x + jr.normal(jr.PRNGKey(0), (3,)), backend="c").lower(x3()).compile()
    assert compiled.num_kernels == 1


def test_fold_inside_pjit_but_not_the_call():
    g = morphax.jit(lambda x: x + jnp.arange(3.0) * 2.0)
    closed = cj(lambda x: g(jnp.ones(3)) + g(x), x3())
    res = run_constant_folding(closed)
    assert prims_of(res.closed) == ["jit", "jit", "add"]  # calls are never folded
    for call in res.closed.jaxpr.eqns[:2]:
        assert prims_of(call.params["jaxpr"]) == ["add"]
    check_all(res.closed)
    assert_same_outputs(closed, res.closed, [x3()])


# --------------------------------------------------------------------------------------- forwarding


def test_forward_identity_equations():
    def f(x):
        y = x.reshape(3).astype(jnp.float32)
        y = lax.broadcast_in_dim(y, (3,), (0,))
        y = jnp.transpose(y, (0,))
        return jnp.sin(lax.reshape(y, (3,)))

    closed = cj(f, x3())
    assert len(closed.jaxpr.eqns) > 1
    res = run_forwarding(closed)
    assert prims_of(res.closed) == ["sin"]
    assert res.removed == len(closed.jaxpr.eqns) - 1
    assert res.closed.jaxpr.eqns[0].invars[0] is closed.jaxpr.invars[0]
    check_all(res.closed)


def test_forward_copy_and_pow_one():
    a = Var(ShapedArray((3,), np.dtype(F32)))
    b, c = Var(a.aval), Var(a.aval)
    eqns = [JaxprEqn(reg["copy"], [a], [b], {}), JaxprEqn(reg["integer_pow"], [b], [c], {"y": 1})]
    closed = ClosedJaxpr(Jaxpr([], [a], [c], eqns), [])
    check_all(closed)
    out = forward(closed)
    assert out.jaxpr.eqns == [] and out.jaxpr.outvars[0] is a
    assert forwarded_outputs(closed) == [0]


def test_forward_keeps_real_conversions():
    closed = cj(
        lambda x, i: (x.astype(jnp.int32), i.astype(jnp.float32), x.reshape(1, 3)), x3(), np.arange(3)
    )
    assert not run_forwarding(closed).changed
    assert forwarded_outputs(closed) == [None, None, None]


def test_forwarded_outputs_through_pjit():
    g = morphax.jit(lambda x, y: (y, x * 2.0, x.reshape(3)))
    closed = cj(lambda a, b: (*g(a, b), b, a.astype(jnp.float32), a + 1.0), x3(), x3())
    assert forwarded_outputs(closed) == [1, None, 0, 1, 0, None]
    out = optimize(closed)
    assert forwarded_outputs(out) == [1, None, 0, 1, 0, None]
    assert [v for v in out.jaxpr.outvars if v in out.jaxpr.invars] == [
        out.jaxpr.invars[i] for i in (1, 0, 1, 0)
    ]
    (call,) = [e for e in out.jaxpr.eqns if e.primitive.name == "jit"]
    assert len(call.outvars) == 1 and len(call.invars) == 1


def test_forward_pjit_literal_output():
    g = morphax.jit(lambda x: (x * 2.0, 3.0))
    closed = cj(lambda x: g(x)[1] * x, x3())
    out = optimize(closed)
    assert prims_of(out) == ["mul"]
    assert_same_outputs(closed, out, [x3()])


# ----------------------------------------------------------------------------------------- pipeline


def test_pipeline_stats_and_idempotence():
    c = np.arange(3, dtype=F32)

    def f(x):
        dead = jnp.sin(x)  # noqa: F841
        a = x * (jnp.ones(3) * c)
        return lax.broadcast_in_dim(a + x * (jnp.ones(3) * c), (3,), (0,))

    closed = cj(f, x3())
    stats = PassStats()
    out = optimize(closed, stats)
    assert stats.dce >= 1 and stats.constant_folding >= 1 and stats.cse >= 1 and stats.forwarding == 1
    assert stats.total == len(closed.jaxpr.eqns) - len(out.jaxpr.eqns)
    assert stats.converged
    assert prims_of(out) == ["mul", "add"]
    again = PassStats()
    assert optimize(out, again) is out
    assert again.total == 0 and again.rounds == 1


MLP_W1 = np.random.default_rng(1).normal(size=(4, 5)).astype(F32)
MLP_W2 = np.random.default_rng(2).normal(size=(5, 2)).astype(F32)


def _mlp_loss(params, x):
    w1, w2 = params
    h = jnp.tanh(x @ w1)
    return jnp.mean((h @ w2) ** 2)


_jit_inner = morphax.jit(lambda x, y: (jnp.sum(x * y), jnp.sin(x), y))
_jit_outer = morphax.jit(lambda x: _jit_inner(x, x * 2.0)[0] + _jit_inner(x, x * 2.0)[1].sum())
_jit_const = morphax.jit(lambda x: x + jnp.arange(3.0) * 2.0)


@morphax.custom_jvp
def _clip_grad(x):
    return jnp.sin(x)


_clip_grad.defjvp(lambda p, t: (jnp.sin(p[0]), t[0] * jnp.cos(p[0]) * 0.5))

A3 = lambda rng: rng.normal(size=3).astype(F32)
A4 = lambda rng: rng.normal(size=4).astype(F32)
M34 = lambda rng: rng.normal(size=(3, 4)).astype(F32)
I3 = lambda rng: rng.integers(-5, 5, size=3).astype(np.int32)
S = lambda rng: np.asarray(rng.normal(), F32)

# (name, function, input makers)
PROGRAMS = [
    ("dup_mul", lambda x: x * 2 + x * 2, [A3]),
    ("dead_sin", lambda x: (jnp.sin(x), x * 3)[1], [A3]),
    ("ones_fold", lambda x: jnp.ones(3) * 2 + x, [A3]),
    (
        "closure_const",
        lambda x: jnp.sum(np.arange(3.0, dtype=F32) * 2 + 1) * x + np.arange(3, dtype=F32),
        [A3],
    ),
    ("identities", lambda x: jnp.transpose(x.reshape(3, 4).astype(jnp.float32)).T * 1.0, [M34]),
    ("jit_unused", lambda x: _jit_inner(x, x)[0], [A3]),
    ("jit_nested", lambda x: _jit_outer(x) * _jit_outer(x), [A3]),
    ("jit_const", lambda x: _jit_const(x) + _jit_const(jnp.ones(3)), [A3]),
    ("grad_jit", morphax.grad(lambda x: jnp.sum(_jit_inner(x, x)[1] ** 2)), [A3]),
    ("grad_tanh", morphax.grad(lambda x: jnp.sum(jnp.tanh(x * x) * jnp.tanh(x * x))), [A4]),
    (
        "grad_mlp",
        morphax.grad(_mlp_loss),
        [lambda r: (MLP_W1, MLP_W2), lambda r: r.normal(size=(3, 4)).astype(F32)],
    ),
    ("value_and_grad_mlp", morphax.value_and_grad(_mlp_loss, argnums=1), [lambda r: (MLP_W1, MLP_W2), M34]),
    ("vmap_dot", morphax.vmap(lambda x: jnp.dot(x, np.arange(4.0, dtype=F32)) + x.reshape(4)[0]), [M34]),
    ("vmap_grad", morphax.vmap(morphax.grad(lambda x: jnp.sum(jnp.sin(x) ** 2))), [M34]),
    ("grad_vmap", morphax.grad(lambda x: jnp.sum(morphax.vmap(jnp.outer)(x, x))), [M34]),
    ("jacfwd", morphax.jacfwd(lambda x: jnp.sin(x) * x), [A3]),
    ("hessian", morphax.hessian(lambda x: jnp.sum(jnp.exp(x) * x)), [A3]),
    ("int_ops", lambda i: ((i * 2 + 3) % 5, jnp.where(i > 0, i, -i), i.astype(jnp.float32) / 2), [I3]),
    ("reductions", lambda x: (jnp.max(x, 0), jnp.mean(x), jnp.var(x, 1), jnp.argmax(x, 1)), [M34]),
    ("softmax", lambda x: (nn.softmax(x), nn.logsumexp(x, axis=1), nn.relu(x) + nn.relu(x)), [M34]),
    ("indexing", lambda x: (x[1:3], x[::-1], x[np.array([0, 2])], x[0, 1:]), [M34]),
    ("concat", lambda x: jnp.concatenate([x, x * 2, jnp.zeros((3, 4))]).sum(0), [M34]),
    ("random", lambda x: x + jr.normal(jr.PRNGKey(0), (3,)) * jr.uniform(jr.PRNGKey(1), (3,)), [A3]),
    ("scalars", lambda s: (s * 2.0 + 1.0, jnp.sin(s) + jnp.sin(s), s), [S]),
    ("weak_input", lambda s: s + 1, [lambda r: 1.5]),
    ("grad_relu", morphax.grad(nn.relu), [S]),
    ("custom_jvp_grad", morphax.grad(lambda x: jnp.sum(_clip_grad(x) * 3.0)), [A3]),
    ("jvp", lambda x, t: morphax.jvp(lambda y: jnp.cos(y) * y, (x,), (t,)), [A3, A3]),
    ("linearize_like", lambda x: morphax.vjp(lambda y: jnp.exp(y) * jnp.exp(y), x)[1](x), [A3]),
    ("passthrough", lambda x, y: (y, x, x), [A3, I3]),
    ("const_only", lambda x: jnp.arange(5) * 3 + jnp.ones(5, jnp.int32), [A3]),
]

PASS_RUNNERS = {
    "dce": run_dce,
    "cse": run_cse,
    "constant_folding": run_constant_folding,
    "forwarding": run_forwarding,
}


def _inputs(makers, seed):
    rng = np.random.default_rng(seed)
    return [m(rng) for m in makers]


def _trace(name):
    _, f, makers = next(p for p in PROGRAMS if p[0] == name)
    args = _inputs(makers, 0)
    closed = make_jaxpr(f)(*args)
    flat = [np.asarray(leaf) for leaf in morphax.tree_util.tree_leaves(args)]
    return closed, makers, flat


def _flat_inputs(makers, seed):
    return [np.asarray(leaf) for leaf in morphax.tree_util.tree_leaves(_inputs(makers, seed))]


PROGRAM_NAMES = [p[0] for p in PROGRAMS]


@pytest.mark.parametrize("name", PROGRAM_NAMES)
@pytest.mark.parametrize("pass_name", sorted(PASS_RUNNERS))
def test_each_pass_on_real_programs(name, pass_name):
    closed, makers, _ = _trace(name)
    check_all(closed)
    before = snapshot(closed)
    res = PASS_RUNNERS[pass_name](closed)
    assert snapshot(closed) == before, "pass mutated its input"
    check_all(res.closed)
    assert res.changed == (res.closed is not closed)
    for seed in (1, 2):
        assert_same_outputs(closed, res.closed, _flat_inputs(makers, seed))
    # A second run of the same pass finds nothing more.
    assert not PASS_RUNNERS[pass_name](res.closed).changed


@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_pipeline_on_real_programs(name):
    closed, makers, _ = _trace(name)
    before = snapshot(closed)
    stats = PassStats()
    out = optimize(closed, stats)
    assert snapshot(closed) == before, "optimize mutated its input"
    assert stats.converged
    check_all(out)
    for seed in (1, 2, 3):
        assert_same_outputs(closed, out, _flat_inputs(makers, seed))
    # Idempotent: a second pipeline run returns the very same object, and its text is stable.
    assert optimize(out) is out
    assert pretty_print(optimize(closed).jaxpr) == pretty_print(out.jaxpr)
    # Never more equations than before, and the forwarded outputs are still right.
    assert len(out.jaxpr.eqns) <= len(closed.jaxpr.eqns)
    fwd = forwarded_outputs(out)
    args = _flat_inputs(makers, 4)
    for o, i in zip(run(out, *args), fwd):
        if i is not None:
            np.testing.assert_array_equal(o, args[i])


def test_pipeline_improves_the_typical_programs():
    shrunk = {}
    for name in ("dup_mul", "dead_sin", "ones_fold", "jit_unused", "grad_jit", "grad_relu", "random"):
        closed, _, _ = _trace(name)
        stats = PassStats()
        optimize(closed, stats)
        shrunk[name] = stats.total
    assert all(v > 0 for v in shrunk.values()), shrunk


def test_pipeline_under_jit_trace_consts_are_not_folded():
    # Optimizing a jaxpr traced inside another trace: its consts are tracers and must stay.
    seen = {}

    @morphax.jit
    def outer(y):
        closed = make_jaxpr(lambda x: x * (y * 2.0) + 1.0)(x3())
        seen["out"] = optimize(closed)
        return y

    outer(x3())
    out = seen["out"]
    check_all(out)
    assert len(out.consts) == 1


def test_convenience_wrappers_match_run_functions():
    closed, _, _ = _trace("hessian")
    for wrapper, runner in (
        (dce, run_dce),
        (cse, run_cse),
        (fold_constants, run_constant_folding),
        (forward, run_forwarding),
    ):
        assert pretty_print(wrapper(closed).jaxpr) == pretty_print(runner(closed).closed.jaxpr)
