"""`lax.cond`, `lax.switch` (and `lax.select`) under eval, jit, jvp, grad, vmap (each operand batched
or not) and their compositions, against the unrolled Python version of the same computation (the
branch called directly with the concrete predicate); `check_grads` order 2 through them; clamped
switch indices; nesting; Python loops of conds; the branch type-mismatch errors; DCE; printing.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax.test_util import check_grads

RTOL, ATOL = 2e-5, 2e-6
rng = np.random.default_rng(0)


def _close(got, want, rtol=RTOL, atol=ATOL):
    got_l, want_l = morphax.tree_util.tree_leaves(got), morphax.tree_util.tree_leaves(want)
    assert morphax.tree_util.tree_structure(got) == morphax.tree_util.tree_structure(want)
    for g, w in zip(got_l, want_l):
        g, w = np.asarray(g), np.asarray(jnp.asarray(w))
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if g.dtype == np.dtype([("float0", "V")]) or g.dtype.kind == "V":
            continue
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _scalar(out):
    """A scalar loss from every inexact leaf (weighted so that leaves are told apart)."""
    total = 0.0
    for k, leaf in enumerate(morphax.tree_util.tree_leaves(out)):
        if jnp.issubdtype(jnp.result_type(leaf), jnp.inexact):
            total = total + (k + 1.0) * jnp.sum(jnp.sin(leaf))
    return total


# -------------------------------------------------------------------------------------------------
# The cases: branch functions of (x, y), and the two drivers (cond/switch, and the unrolled Python).

C = np.linspace(-1.0, 1.0, 3).astype(np.float32)  # a closed-over constant array


def _b_sin(x, y):
    return jnp.sin(x) * y


def _b_poly(x, y):
    return x * x + 2.0 * y


def _b_closure(x, y):
    return x * C + jnp.cos(y)


def _b_const(x, y):
    return jnp.ones_like(x) * 0.5  # no dependence on the operand values: zero tangent


def _b_only_y(x, y):
    return y * 3.0  # unbatched when y is, batched when only x is


def _b_tree(x, y):
    return {"a": x + y, "b": (jnp.exp(0.1 * x), 7)}


def _b_tree2(x, y):
    return {"a": x * y, "b": (x - y, 3)}


def _b_int(x, y):
    i = jnp.argmax(x).astype(jnp.int32)
    return x * 2.0 + y, i + 1


def _b_int2(x, y):
    return x - y * y, jnp.int32(4)


def _b_nested(x, y):
    return lax.cond(jnp.sum(y) > 0, lambda a, b: a * b, lambda a, b: a - jnp.tanh(b), x, y)


def _b_nested2(x, y):
    return lax.switch(jnp.argmax(x), [lambda a: a * 2.0, lambda a: jnp.sin(a), lambda a: a * a], x + y)


COND_CASES = {
    "basic": (_b_sin, _b_poly),
    "closure": (_b_closure, _b_sin),
    "const_branch": (_b_const, _b_poly),
    "only_y": (_b_only_y, _b_sin),
    "pytree": (_b_tree, _b_tree2),
    "int_output": (_b_int, _b_int2),
    "nested": (_b_nested, _b_nested2),
}
SWITCH_CASES = {
    "switch3": (_b_sin, _b_poly, _b_closure),
    "switch_const": (_b_const, _b_only_y, _b_sin, _b_poly),
}
PREDS = {"cond": [True, False], "switch": [0, 1, 2, -1, 7]}


def _driver(kind, branches):
    if kind == "cond":
        true_fun, false_fun = branches

        def f(p, x, y):
            return lax.cond(p, true_fun, false_fun, x, y)

        def ref(p, x, y):
            return true_fun(x, y) if bool(p) else false_fun(x, y)

    else:

        def f(p, x, y):
            return lax.switch(p, branches, x, y)

        def ref(p, x, y):
            return branches[int(np.clip(int(p), 0, len(branches) - 1))](x, y)

    return f, ref


ALL = [("cond", n, b) for n, b in COND_CASES.items()] + [("switch", n, b) for n, b in SWITCH_CASES.items()]
IDS = [n for _, n, _ in ALL]


def _xy(shape=(3,)):
    x = rng.uniform(-1.5, 1.5, shape).astype(np.float32)
    y = rng.uniform(-1.5, 1.5, shape).astype(np.float32)
    return jnp.asarray(x), jnp.asarray(y)


def _pred(kind, p):
    return jnp.asarray(p, jnp.bool_ if kind == "cond" else jnp.int32)


# ------------------------------------------------------------------------------------------- eval/jit


@pytest.mark.parametrize("kind,name,branches", ALL, ids=IDS)
def test_eval_and_jit(kind, name, branches):
    f, ref = _driver(kind, branches)
    x, y = _xy()
    jf = morphax.jit(f)
    for p in PREDS[kind]:
        want = ref(p, x, y)
        _close(f(p, x, y), want)
        _close(f(_pred(kind, p), x, y), want)
        _close(jf(_pred(kind, p), x, y), want)


@pytest.mark.parametrize("kind,name,branches", ALL, ids=IDS)
def test_jvp(kind, name, branches):
    f, ref = _driver(kind, branches)
    x, y = _xy()
    tx, ty = _xy()
    for p in PREDS[kind]:
        got = morphax.jvp(lambda a, b, p=p: f(_pred(kind, p), a, b), (x, y), (tx, ty))
        want = morphax.jvp(lambda a, b, p=p: ref(p, a, b), (x, y), (tx, ty))
        _close(got, want)
        got = morphax.jit(
            lambda a, b, ta, tb, p=p: morphax.jvp(lambda u, v, p=p: f(_pred(kind, p), u, v), (a, b), (ta, tb))
        )(x, y, tx, ty)
        _close(got, want)
        # only one operand perturbed: the other's tangent is a symbolic zero
        got = morphax.jvp(lambda a, p=p: f(_pred(kind, p), a, y), (x,), (tx,))
        _close(got, morphax.jvp(lambda a, p=p: ref(p, a, y), (x,), (tx,)))


@pytest.mark.parametrize("kind,name,branches", ALL, ids=IDS)
def test_grad(kind, name, branches):
    f, ref = _driver(kind, branches)
    x, y = _xy()
    for p in PREDS[kind]:
        want = morphax.grad(lambda a, b, p=p: _scalar(ref(p, a, b)), argnums=(0, 1))(x, y)
        g = morphax.grad(lambda a, b, p=p: _scalar(f(_pred(kind, p), a, b)), argnums=(0, 1))
        _close(g(x, y), want)
        _close(morphax.jit(g)(x, y), want)
        # one argument differentiated: the other is a known operand of the linearized cond
        want0 = morphax.grad(lambda a, p=p: _scalar(ref(p, a, y)))(x)
        _close(morphax.grad(lambda a, p=p: _scalar(f(_pred(kind, p), a, y)))(x), want0)


@pytest.mark.parametrize("kind,name,branches", ALL, ids=IDS)
def test_grad_pred_traced_under_jit(kind, name, branches):
    # The predicate is a jit argument: the index stays unknown until run time.
    f, ref = _driver(kind, branches)
    x, y = _xy()
    g = morphax.jit(morphax.grad(lambda p, a, b: _scalar(f(p, a, b)), argnums=(1, 2)))
    for p in PREDS[kind]:
        want = morphax.grad(lambda a, b, p=p: _scalar(ref(p, a, b)), argnums=(0, 1))(x, y)
        _close(g(_pred(kind, p), x, y), want)


@pytest.mark.parametrize("kind,name,branches", ALL, ids=IDS)
@pytest.mark.parametrize("p_index", [0, 1])
def test_check_grads_order2(kind, name, branches, p_index):
    f, _ = _driver(kind, branches)
    x, y = _xy()
    p = _pred(kind, PREDS[kind][p_index])
    check_grads(lambda a, b: f(p, a, b), (x, y), order=2, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)


# ---------------------------------------------------------------------------------------------- vmap

B = 4
IN_AXES = [ax for ax in itertools.product([0, None], repeat=3) if ax != (None, None, None)]


def _batched_inputs(kind, in_axes):
    if kind == "cond":
        ps = jnp.asarray([True, False, False, True])
    else:
        ps = jnp.asarray([0, 2, -3, 9], jnp.int32)
    p0 = _pred(kind, PREDS[kind][1])
    x, y = _xy((B, 3))
    xs = x if in_axes[1] == 0 else x[0]
    ys = y if in_axes[2] == 0 else y[0]
    return (ps if in_axes[0] == 0 else p0), xs, ys


def _lane(args, in_axes, k):
    return [a if d is None else a[k] for a, d in zip(args, in_axes)]


def _stack(outs):
    return morphax.tree_util.tree_map(lambda *ls: jnp.stack(ls), *outs)


@pytest.mark.parametrize("in_axes", IN_AXES, ids=[str(a) for a in IN_AXES])
@pytest.mark.parametrize("kind,name,branches", ALL, ids=IDS)
def test_vmap(kind, name, branches, in_axes):
    f, ref = _driver(kind, branches)
    args = _batched_inputs(kind, in_axes)
    want = _stack([ref(*_lane(args, in_axes, k)) for k in range(B)])
    _close(morphax.vmap(f, in_axes)(*args), want)
    _close(morphax.jit(morphax.vmap(f, in_axes))(*args), want)


@pytest.mark.parametrize("in_axes", [(0, 0, 0), (0, None, 0), (None, 0, None), (0, 0, None)], ids=str)
@pytest.mark.parametrize("kind,name,branches", ALL, ids=IDS)
def test_vmap_grad_compositions(kind, name, branches, in_axes):
    f, ref = _driver(kind, branches)
    args = _batched_inputs(kind, in_axes)
    lanes = [_lane(args, in_axes, k) for k in range(B)]
    # vmap of grad: per-lane gradients
    g = morphax.grad(lambda p, a, b: _scalar(f(p, a, b)), argnums=(1, 2))
    want = _stack(
        [morphax.grad(lambda a, b, p=p: _scalar(ref(p, a, b)), argnums=(0, 1))(a, b) for p, a, b in lanes]
    )
    _close(morphax.vmap(g, in_axes)(*args), want)
    # grad of vmap: gradients of the summed per-lane losses (unbatched operands accumulate)
    got = morphax.grad(lambda a, b: _scalar(morphax.vmap(f, in_axes)(args[0], a, b)), argnums=(0, 1))(
        args[1], args[2]
    )
    want = morphax.grad(
        lambda a, b: _scalar(_stack([ref(*_lane((args[0], a, b), in_axes, k)) for k in range(B)])),
        argnums=(0, 1),
    )(args[1], args[2])
    _close(got, want, rtol=1e-4, atol=1e-5)
    # jvp of vmap
    ta, tb = jnp.ones_like(args[1]), 0.5 * jnp.ones_like(args[2])
    got = morphax.jvp(lambda a, b: morphax.vmap(f, in_axes)(args[0], a, b), (args[1], args[2]), (ta, tb))
    want = morphax.jvp(
        lambda a, b: _stack([ref(*_lane((args[0], a, b), in_axes, k)) for k in range(B)]),
        (args[1], args[2]),
        (ta, tb),
    )
    _close(got, want)


def test_vmap_batched_pred_is_a_select_of_both_branches():
    f = lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x)  # noqa: E731
    jaxpr = str(morphax.make_jaxpr(morphax.vmap(f))(jnp.asarray([True, False]), jnp.ones((2, 3))))
    assert "cond[" not in jaxpr and "select_n" in jaxpr and "sin" in jaxpr and "cos" in jaxpr
    # an unbatched predicate keeps the cond
    jaxpr = str(morphax.make_jaxpr(morphax.vmap(f, (None, 0)))(True, jnp.ones((2, 3))))
    assert "cond[" in jaxpr and "select_n" not in jaxpr


@pytest.mark.parametrize("order", ["vmap_of_grad", "grad_of_vmap"])
def test_batched_pred_discarded_branch_gradient_does_not_leak_nan(order):
    # sqrt has an infinite derivative at 0; lanes that take the other branch must not see it.
    f = lambda p, x: lax.cond(p, jnp.sqrt, lambda x: 2.0 * x, x)  # noqa: E731
    ps = jnp.asarray([True, False, True, False])
    xs = jnp.asarray([1.0, 0.0, 4.0, 0.0])
    if order == "vmap_of_grad":
        got = morphax.vmap(morphax.grad(f, argnums=1))(ps, xs)
    else:
        got = morphax.grad(lambda x: jnp.sum(morphax.vmap(f)(ps, x)))(xs)
    np.testing.assert_allclose(np.asarray(got), [0.5, 2.0, 0.25, 2.0], rtol=1e-6)


# ------------------------------------------------------------------------------------------- switch


def test_switch_clamps_out_of_range_index():
    branches = [lambda x: x + 10.0, lambda x: x * 2.0, lambda x: -x]
    x = jnp.float32(3.0)
    for i, want in [(-5, 13.0), (-1, 13.0), (0, 13.0), (1, 6.0), (2, -3.0), (3, -3.0), (100, -3.0)]:
        assert float(lax.switch(i, branches, x)) == want
        assert float(morphax.jit(lambda i, x: lax.switch(i, branches, x))(i, x)) == want
    got = morphax.vmap(lambda i: lax.switch(i, branches, x))(jnp.asarray([-5, 0, 1, 2, 3, 100]))
    np.testing.assert_array_equal(np.asarray(got), [13.0, 13.0, 6.0, -3.0, -3.0, -3.0])
    jaxpr = str(morphax.make_jaxpr(lambda i, x: lax.switch(i, branches, x))(1, x))
    assert "clamp 0:i32[]" in jaxpr and "2:i32[]" in jaxpr


def test_switch_single_branch_is_called_directly():
    jaxpr = str(morphax.make_jaxpr(lambda i, x: lax.switch(i, [jnp.sin], x))(1, 2.0))
    assert "cond" not in jaxpr and "sin" in jaxpr
    assert float(lax.switch(5, [lambda x: x + 1], 1.0)) == 2.0


def test_switch_operand_keyword_and_unsigned_index():
    assert float(lax.switch(np.uint8(1), [jnp.sin, lambda x: x * 3.0], operand=2.0)) == 6.0


# ------------------------------------------------------------------------------------------ old forms


def test_old_one_operand_form():
    out = lax.cond(True, 2.0, lambda x: x + 1.0, 10.0, lambda x: x - 1.0)
    assert float(out) == 3.0
    out = lax.cond(False, 2.0, lambda x: x + 1.0, 10.0, lambda x: x - 1.0)
    assert float(out) == 9.0
    g = morphax.grad(lambda a, b: lax.cond(False, a, lambda x: x * x, b, lambda x: x * x * x), argnums=(0, 1))
    ga, gb = g(2.0, 3.0)
    assert float(ga) == 0.0 and float(gb) == 27.0


def test_operand_keyword_and_no_operands():
    assert float(lax.cond(True, lambda x: x + 1, lambda x: x - 1, operand=1.0)) == 2.0
    assert float(lax.cond(False, lambda: 1.0, lambda: 2.0)) == 2.0
    assert float(morphax.jit(lambda p: lax.cond(p, lambda: 1.0, lambda: 2.0))(True)) == 1.0
    with pytest.raises(TypeError, match="'operand' keyword"):
        lax.cond(True, lambda x: x, lambda x: x, 1.0, operand=2.0)


@pytest.mark.parametrize("pred,want", [(3, 1.0), (0, -1.0), (2.5, 1.0), (0.0, -1.0), (np.int8(-1), 1.0)])
def test_numeric_predicates(pred, want):
    f = lambda p: lax.cond(p, lambda: 1.0, lambda: -1.0)  # noqa: E731
    assert float(f(pred)) == want
    assert float(morphax.jit(f)(pred)) == want
    jaxpr = str(morphax.make_jaxpr(f)(pred))
    assert "ne " in jaxpr


def test_pred_errors():
    t, f = (lambda x: x), (lambda x: x)
    with pytest.raises(TypeError, match=r"Pred must be a scalar, got \[ True  True\] of shape \(2,\)"):
        lax.cond(np.array([True, True]), t, f, 1.0)
    with pytest.raises(TypeError, match="Pred must be a scalar, got a of type <class 'str'>"):
        lax.cond("a", t, f, 1.0)
    with pytest.raises(TypeError, match="cond predicate is None"):
        lax.cond(None, t, f, 1.0)
    with pytest.raises(TypeError, match="Pred type must be either boolean or number, got complex64"):
        lax.cond(np.complex64(1), t, f, 1.0)
    with pytest.raises(TypeError, match="true_fun and false_fun arguments should be callable"):
        lax.cond(True, 1, t, 1.0)
    with pytest.raises(TypeError, match="Pred must be a scalar"):
        morphax.jit(lambda p: lax.cond(p, t, f, 1.0))(jnp.ones(2) > 0)


def test_switch_errors():
    with pytest.raises(TypeError, match="Index type must be an integer, got 1.5 as float32"):
        lax.switch(1.5, [lambda x: x], 1.0)
    with pytest.raises(ValueError, match="Empty branch sequence"):
        lax.switch(1, [], 1.0)
    with pytest.raises(TypeError, match="branches argument should be a sequence of callables"):
        lax.switch(0, [lambda x: x, 3], 1.0)
    with pytest.raises(TypeError, match=r"Branch index must be scalar, got \[0 1\] of shape \(2,\)"):
        lax.switch(np.array([0, 1]), [lambda x: x, lambda x: x], 1.0)


# ---------------------------------------------------------------------------------- type mismatches


def test_branch_dtype_mismatch_shows_paths():
    t = lambda x: {"a": x, "b": (x, x)}  # noqa: E731
    f = lambda x: {"a": x, "b": (x, x.astype(jnp.int32))}  # noqa: E731
    with pytest.raises(TypeError) as e:
        lax.cond(True, t, f, jnp.ones(3))
    msg = str(e.value)
    assert "cond branches must have equal output types but they differ." in msg
    assert "true_fun is <lambda> at " in msg and "false_fun is <lambda> at " in msg
    assert (
        "The output of false_fun at path ['b'][1] has type int32[3] but the corresponding output of true_fun "
        in msg
    )
    assert "has type float32[3], so the dtypes do not match." in msg
    assert "Revise false_fun and/or true_fun so that all output types match." in msg


def test_branch_several_mismatches_listed_leaf_by_leaf():
    with pytest.raises(TypeError) as e:
        lax.cond(True, lambda x: (x, x[:2], x), lambda x: (x, x, x.astype(jnp.int32)[:1]), jnp.ones(3))
    msg = str(e.value)
    assert (
        "  * the output of false_fun at path [1] has type float32[3] but the corresponding output of true_fun "
        in msg
    )
    assert "has type float32[2], so the shapes do not match;" in msg
    assert "at path [2] has type int32[1]" in msg and "so the shapes and dtypes do not match." in msg


def test_branch_structure_mismatch():
    with pytest.raises(TypeError) as e:
        lax.cond(True, lambda x: (x, x), lambda x: x, jnp.ones(3))
    msg = str(e.value)
    assert "cond branch outputs must have the same pytree structure, but they differ" in msg
    assert "PyTreeDef(*)" in msg and "PyTreeDef((*, *))" in msg
    with pytest.raises(TypeError) as e:
        lax.cond(True, lambda x: {"a": x, "b": x}, lambda x: {"a": x, "c": x}, jnp.ones(3))
    assert "same pytree structure" in str(e.value)


def test_switch_mismatch_names_branches():
    with pytest.raises(TypeError) as e:
        lax.switch(1, [lambda x: x, lambda x: x, lambda x: x[:2]], jnp.ones(3))
    msg = str(e.value)
    assert msg.startswith("switch branches must have equal output types but they differ.")
    assert (
        "The output of branch 0 has type float32[3] but the corresponding output of branch 2 has type " in msg
    )


def test_weak_types_join():
    f = lambda p, x: lax.cond(p, lambda x: 1.0, lambda x: x, x)  # noqa: E731
    for p in (True, False):
        out = f(p, jnp.float32(2.0))
        assert out.dtype == jnp.float32 and not out.weak_type
        assert not morphax.jit(f)(p, jnp.float32(2.0)).weak_type
    out = lax.cond(True, lambda: 1.0, lambda: 2.0)
    assert out.dtype == jnp.float32 and out.weak_type


def test_abstract_eval_rejects_mismatched_branch_jaxprs():
    one = morphax.make_jaxpr(lambda x: x)(jnp.ones(3))
    two = morphax.make_jaxpr(lambda x: x[:2])(jnp.ones(3))
    with pytest.raises(TypeError, match=r"output 0: branch 0 has f32\[3\], branch 1 has f32\[2\]"):
        lax.cond_p.abstract_eval(
            _aval(jnp.int32(0)),
            _aval(jnp.ones(3)),
            branches=(_closed(one), _closed(two)),
        )


def _aval(x):
    from morphax._src.core.avals import get_aval

    return get_aval(x)


def _closed(j):
    from morphax._src.core.jaxpr import ClosedJaxpr

    return j if isinstance(j, ClosedJaxpr) else ClosedJaxpr(j, [])


# ------------------------------------------------------------------------ nesting, loops, closures


def test_nested_cond_all_transforms():
    def f(p, q, x):
        inner = lambda x: lax.cond(q, lambda x: jnp.sin(x) * x, lambda x: jnp.cos(x) + x, x)  # noqa: E731
        return lax.cond(p, inner, lambda x: x * 3.0, x)

    def ref(p, q, x):
        if p:
            return jnp.sin(x) * x if q else jnp.cos(x) + x
        return x * 3.0

    x = jnp.asarray([0.3, -1.2, 2.0])
    for p, q in itertools.product([True, False], repeat=2):
        _close(f(p, q, x), ref(p, q, x))
        _close(morphax.jit(f)(p, q, x), ref(p, q, x))
        _close(
            morphax.grad(lambda x, p=p, q=q: jnp.sum(f(p, q, x)))(x),
            morphax.grad(lambda x, p=p, q=q: jnp.sum(ref(p, q, x)))(x),
        )
        check_grads(lambda x, p=p, q=q: f(p, q, x), (x,), order=2, atol=5e-2, rtol=5e-2)
    ps, qs = jnp.asarray([True, True, False]), jnp.asarray([True, False, True])
    got = morphax.vmap(f, (0, 0, 0))(ps, qs, jnp.stack([x, x, x]))
    _close(got, jnp.stack([ref(bool(p), bool(q), x) for p, q in zip(ps, qs)]))
    got = morphax.vmap(morphax.grad(lambda p, q, x: jnp.sum(f(p, q, x)), argnums=2), (None, 0, 0))(
        True, qs, jnp.stack([x, x, x])
    )
    want = jnp.stack([morphax.grad(lambda x, q=q: jnp.sum(ref(True, bool(q), x)))(x) for q in qs])
    _close(got, want)


def _loop_f(x):
    # Data-dependent predicates inside a Python loop: each iteration's branch depends on x.
    for i in range(5):
        x = lax.cond(jnp.sum(x) > 0, lambda x: jnp.sin(x) - 0.5, lambda x: x * 1.5 + 0.3, x)
        x = lax.switch(i % 3, [lambda x: x * x, lambda x: jnp.tanh(x), lambda x: x + 1.0], x)
    return x


def _loop_ref(x, preds):
    for i, p in enumerate(preds):
        x = jnp.sin(x) - 0.5 if p else x * 1.5 + 0.3
        x = [lambda x: x * x, lambda x: jnp.tanh(x), lambda x: x + 1.0][i % 3](x)
    return x


def _loop_preds(x):
    preds = []
    x = np.asarray(x, np.float32)
    for i in range(5):
        p = bool(np.sum(x) > 0)
        preds.append(p)
        x = np.sin(x) - 0.5 if p else x * 1.5 + 0.3
        x = [lambda x: x * x, np.tanh, lambda x: x + 1.0][i % 3](x).astype(np.float32)
    return preds


def test_conds_in_a_python_loop():
    for x in (jnp.asarray([0.2, 0.4, -0.1]), jnp.asarray([-0.9, 0.1, -0.3])):
        preds = _loop_preds(x)
        _close(_loop_f(x), _loop_ref(x, preds), rtol=1e-4)
        _close(morphax.jit(_loop_f)(x), _loop_ref(x, preds), rtol=1e-4)
        want = morphax.grad(lambda x, preds=preds: jnp.sum(_loop_ref(x, preds)))(x)
        _close(morphax.grad(lambda x: jnp.sum(_loop_f(x)))(x), want, rtol=1e-4)
        _close(morphax.jit(morphax.grad(lambda x: jnp.sum(_loop_f(x))))(x), want, rtol=1e-4)
        check_grads(_loop_f, (x,), order=2, atol=5e-2, rtol=5e-2)
    xs = jnp.asarray([[0.2, 0.4, -0.1], [-0.9, 0.1, -0.3], [1.0, 1.0, 1.0]])
    want = jnp.stack([_loop_ref(x, _loop_preds(x)) for x in xs])
    _close(morphax.vmap(_loop_f)(xs), want, rtol=1e-4)


def test_cond_closes_over_outer_tracers():
    # `w` is a tracer of the enclosing jit/grad/vmap: it becomes an operand of the cond.
    def f(p, w, x):
        return lax.cond(p, lambda x: x * w, lambda x: x + jnp.sum(w), x)

    w, x = jnp.asarray([1.0, 2.0, 3.0]), jnp.asarray([0.5, -0.5, 2.0])
    for p in (True, False):
        want = x * w if p else x + jnp.sum(w)
        _close(morphax.jit(f)(p, w, x), want)
        gw = morphax.grad(lambda w, p=p: jnp.sum(f(p, w, x)))(w)
        _close(gw, x if p else jnp.full(3, 3.0))
    got = morphax.vmap(f, (None, 0, None))(True, jnp.stack([w, 2 * w]), x)
    _close(got, jnp.stack([x * w, x * 2 * w]))
    # w is read by both branches, so it is one operand of the cond (after the index)
    eqn = [e for e in morphax.make_jaxpr(f)(True, w, x).jaxpr.eqns if e.primitive.name == "cond"][0]
    assert len(eqn.invars) == 3


def test_integer_operand_passes_through_grad():
    def f(p, x, n):
        return lax.cond(p, lambda x, n: (x * n, n + 1), lambda x, n: (x - n, n * 2), x, n)

    x, n = jnp.asarray([1.0, 2.0]), jnp.int32(3)
    for p in (True, False):
        g = morphax.grad(lambda x, p=p: jnp.sum(f(p, x, n)[0]))(x)
        _close(g, jnp.full(2, 3.0 if p else 1.0))
        out, tan = morphax.jvp(lambda x, p=p: f(p, x, n), (x,), (jnp.ones(2),))
        assert tan[1].dtype == morphax.dtypes.float0


# ------------------------------------------------------------------------------- eager and effects


def test_eager_runs_only_the_selected_branch():
    hits = []
    t = lambda x: (morphax.debug.callback(lambda: hits.append("t")), x + 1)[1]  # noqa: E731
    f = lambda x: (morphax.debug.callback(lambda: hits.append("f")), x - 1)[1]  # noqa: E731
    assert float(lax.cond(True, t, f, 1.0)) == 2.0
    assert hits == ["t"]
    hits.clear()
    assert float(morphax.jit(lambda p, x: lax.cond(p, t, f, x))(False, 1.0)) == 0.0
    assert hits == ["f"]
    hits.clear()
    # the outputs are unused, but the branches have effects: the cond stays
    morphax.jit(lambda p, x: (lax.cond(p, t, f, x), x)[1])(True, 1.0)
    assert hits == ["t"]


def test_disable_jit_calls_the_branch():
    with morphax.disable_jit():
        assert float(lax.cond(True, lambda x: x + 1, lambda x: x - 1, 1.0)) == 2.0
        assert float(lax.switch(9, [lambda x: x + 1, lambda x: x - 1], 1.0)) == 0.0


def test_dce_drops_unused_outputs_and_operands():
    from morphax._src.core.jaxpr import eval_jaxpr
    from morphax._src.passes.dce import dce

    def f(p, x, y):
        a, b = lax.cond(p, lambda x, y: (jnp.sin(x), jnp.exp(y)), lambda x, y: (x * 2.0, y + x), x, y)
        return a

    x, y = jnp.asarray([1.0, 2.0]), jnp.asarray([3.0, 4.0])
    closed = morphax.make_jaxpr(f)(True, x, y)
    reduced = dce(closed)
    (eqn,) = [e for e in reduced.jaxpr.eqns if e.primitive.name == "cond"]
    assert len(eqn.outvars) == 1 and len(eqn.invars) == 2  # index and x; y is no longer read
    text = str(reduced)
    assert "exp" not in text and "sin" in text
    for p in (True, False):
        (got,) = eval_jaxpr(reduced.jaxpr, reduced.consts, p, x, y)
        _close(got, f(p, x, y))


# ------------------------------------------------------------------------------------------ printing


def test_make_jaxpr_prints_cond_with_branches():
    c = np.ones(3, np.float32)

    def f(p, x):
        return lax.cond(p, lambda x: jnp.sin(x) * c, lambda x: x + 1.0, x)

    text = str(morphax.make_jaxpr(f)(True, jnp.ones(3)))
    expected_cond = """\
    e:f32[3] = cond[
      branches=(
        { lambda ; f:f32[3] g:f32[3]. let h:f32[3] = add g 1.0:f32[] in (h,) }
        { lambda ; i:f32[3] j:f32[3]. let
            k:f32[3] = sin j
            l:f32[3] = mul k i
          in (l,) }
      )
    ] d a c"""
    assert text.startswith("{ lambda a:f32[3]; b:bool[] c:f32[3]. let\n    d:i32[] = convert_element_type[")
    # One-equation branches print on one line in JAX; morphax's printer may spread them.
    compact = text.replace(
        "let\n            h:f32[3] = add g 1.0:f32[]\n          in (h,) }",
        "let h:f32[3] = add g 1.0:f32[] in (h,) }",
    )
    assert expected_cond in compact, text
    text = str(morphax.make_jaxpr(lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda x: x], x))(1, 2.0))
    assert "cond[\n      branches=(\n" in text and "clamp 0:i32[] c 2:i32[]" in text
    assert "{ lambda ; j:f32[]. let  in (j,) }" in text


# -------------------------------------------------------------------------------------------- select


def test_lax_select():
    p = jnp.asarray([True, False, True])
    a, b = jnp.asarray([1.0, 2.0, 3.0]), jnp.asarray([-1.0, -2.0, -3.0])
    _close(lax.select(p, a, b), jnp.asarray([1.0, -2.0, 3.0]))
    _close(morphax.jit(lax.select)(p, a, b), jnp.asarray([1.0, -2.0, 3.0]))
    ga, gb = morphax.grad(lambda a, b: jnp.sum(lax.select(p, a, b) * jnp.asarray([1.0, 2.0, 3.0])), (0, 1))(
        a, b
    )
    _close(ga, jnp.asarray([1.0, 0.0, 3.0]))
    _close(gb, jnp.asarray([0.0, 2.0, 0.0]))
    got = morphax.vmap(lax.select, (0, 0, None))(jnp.stack([p, ~p]), jnp.stack([a, 2 * a]), b)
    _close(got, jnp.stack([jnp.where(p, a, b), jnp.where(~p, 2 * a, b)]))
    check_grads(lambda a, b: lax.select(p, a, b), (a, b), order=2)
