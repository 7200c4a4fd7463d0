"""`lax.scan`, `lax.map`, `lax.fori_loop` and `lax.associative_scan` against the same loops written
in Python: eval, jit, jvp, grad, vmap with each operand (consts, carry, xs) batched or not, and
their compositions; check_grads to order 2; an RNN; DCE; residual hoisting; the carry type errors
with JAX's messages. Oracles: unrolled Python loops, NumPy, float64 finite differences.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.higher_order.scan import scan_p
from morphax._src.passes.dce import run_dce
from morphax.test_util import check_grads

RTOL = 2e-5


def close(got, want, rtol=RTOL, atol=2e-6):
    g, w = morphax.tree.leaves(got), morphax.tree.leaves(want)
    assert morphax.tree.structure(got) == morphax.tree.structure(want)
    for a, b in zip(g, w):
        assert np.asarray(a).shape == np.asarray(b).shape
        assert np.asarray(a).dtype == np.asarray(b).dtype, (np.asarray(a).dtype, np.asarray(b).dtype)
        if np.asarray(a).dtype != morphax.dtypes.float0:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def py_scan(f, init, xs=None, length=None, reverse=False):
    """The oracle: the loop scan stands for, run by Python."""
    if length is None:
        length = morphax.tree.leaves(xs)[0].shape[0]
    carry, ys = init, []
    for i in reversed(range(length)) if reverse else range(length):
        carry, y = f(carry, morphax.tree.map(lambda a, i=i: a[i], xs))
        ys.append(y)
    if reverse:
        ys.reverse()
    return carry, morphax.tree.map(lambda *a: jnp.stack(a), *ys)


def scan_nodes(jaxpr):
    return [e for e in jaxpr.jaxpr.eqns if e.primitive is scan_p]


# --------------------------------------------------------------------------------------- bodies
# Each case: body(params, carry, x) -> (carry, y), params, init, xs. Params are closed over by
# the scan body, so they become the scan's consts.

rng = np.random.default_rng(0)
T = 5


def _r(*shape, scale=0.5):
    return jnp.asarray(rng.standard_normal(shape).astype(np.float32) * scale)


def rnn_body(p, h, x):
    h = jnp.tanh(p["W"] @ h + p["U"] @ x + p["b"])
    return h, jnp.sin(h).sum() * x


def tree_body(p, c, x):
    a, b = x
    h = c["h"] * p + a
    n = c["n"] + jnp.sum(h * b)
    return {"h": jnp.cos(h), "n": n}, (h * 2.0, n * b)


def int_carry_body(p, c, x):
    i, v = c
    v = v * x + p * i.astype(jnp.float32)
    return (i + 1, jnp.sin(v)), v * v


def const_y_body(p, c, x):
    # The output y ignores the loop: under vmap it may stay unbatched.
    return c * x + p, p * 3.0


CASES = {
    "rnn": (rnn_body, {"W": _r(3, 3), "U": _r(3, 2), "b": _r(3)}, _r(3), _r(T, 2)),
    "tree": (tree_body, _r(2), {"h": _r(2), "n": _r()}, (_r(T, 2), _r(T))),
    "int_carry": (int_carry_body, _r(), (jnp.int32(0), _r(4)), _r(T, 4)),
    "const_y": (const_y_body, _r(3), _r(3), _r(T, 3)),
}


def run_scan(body, reverse=False):
    return lambda p, init, xs: lax.scan(lambda c, x: body(p, c, x), init, xs, reverse=reverse)


def run_py(body, reverse=False):
    return lambda p, init, xs: py_scan(lambda c, x: body(p, c, x), init, xs, reverse=reverse)


def float_loss(out):
    return sum(
        jnp.sum(leaf.astype(jnp.float32) ** 2)
        for leaf in morphax.tree.leaves(out)
        if jnp.issubdtype(leaf.dtype, jnp.floating)
    )


def tangent_like(x):
    x = np.asarray(x)
    if np.issubdtype(x.dtype, np.floating):
        return jnp.asarray(rng.standard_normal(x.shape).astype(x.dtype))
    return np.zeros(x.shape, dtype=morphax.dtypes.float0)


CASE_IDS = [(name, rev) for name in CASES for rev in (False, True)]


@pytest.mark.parametrize("name,reverse", CASE_IDS)
def test_eval_and_jit(name, reverse):
    body, p, init, xs = CASES[name]
    want = run_py(body, reverse)(p, init, xs)
    close(run_scan(body, reverse)(p, init, xs), want)
    close(morphax.jit(run_scan(body, reverse))(p, init, xs), want)


@pytest.mark.parametrize("name,reverse", CASE_IDS)
def test_jvp(name, reverse):
    body, p, init, xs = CASES[name]
    args = (p, init, xs)
    tangents = morphax.tree.map(tangent_like, args)
    got = morphax.jvp(run_scan(body, reverse), args, tangents)
    want = morphax.jvp(run_py(body, reverse), args, tangents)
    close(got, want)
    close(morphax.jit(lambda a, t: morphax.jvp(run_scan(body, reverse), a, t))(args, tangents), want)


def _float_argnums(name):
    return (0, 1, 2) if name != "int_carry" else (0, 2)


@pytest.mark.parametrize("name,reverse", CASE_IDS)
def test_grad(name, reverse):
    body, p, init, xs = CASES[name]
    argnums = _float_argnums(name)
    got = morphax.grad(lambda *a: float_loss(run_scan(body, reverse)(*a)), argnums)(p, init, xs)
    want = morphax.grad(lambda *a: float_loss(run_py(body, reverse)(*a)), argnums)(p, init, xs)
    close(got, want, rtol=1e-4, atol=1e-5)
    got_jit = morphax.jit(morphax.grad(lambda *a: float_loss(run_scan(body, reverse)(*a)), argnums))(
        p, init, xs
    )
    close(got_jit, want, rtol=1e-4, atol=1e-5)


# Each of (params, init, xs) batched at axis 0, at its last axis, or not; at least one batched.
VMAP_AXES = [a for a in itertools.product((None, 0, -1), repeat=3) if a != (None, None, None)]


def _batch(x, axis, b=2):
    if axis is None:
        return x
    x = np.asarray(x)
    stacked = np.stack([x + np.asarray(k, x.dtype) * (0.25 if x.dtype.kind == "f" else 1) for k in range(b)])
    return jnp.asarray(np.moveaxis(stacked, 0, axis))


def _unbatch(x, axis, k):
    return x if axis is None else jnp.asarray(np.take(np.asarray(x), k, axis=axis))


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("axes", VMAP_AXES, ids=str)
def test_vmap(name, axes):
    body, p, init, xs = CASES[name]
    args = [p, init, xs]
    batched = [morphax.tree.map(lambda x, a=a: _batch(x, a), arg) for arg, a in zip(args, axes)]
    got = morphax.vmap(run_scan(body), in_axes=axes)(*batched)
    per_example = [
        run_py(body)(
            *[morphax.tree.map(lambda x, a=a, k=k: _unbatch(x, a, k), arg) for arg, a in zip(batched, axes)]
        )
        for k in range(2)
    ]
    want = morphax.tree.map(lambda *e: jnp.stack(e), *per_example)
    close(got, want)


def test_vmap_of_grad_and_grad_of_vmap():
    body, p, init, xs = CASES["rnn"]
    loss = lambda p, h, x: float_loss(run_scan(body)(p, h, x))
    loss_py = lambda p, h, x: float_loss(run_py(body)(p, h, x))
    hs = jnp.stack([init, init * 2.0])
    got = morphax.vmap(morphax.grad(loss), in_axes=(None, 0, None))(p, hs, xs)
    want = [morphax.grad(loss_py)(p, hs[k], xs) for k in range(2)]
    close(got, morphax.tree.map(lambda *e: jnp.stack(e), *want), rtol=1e-4, atol=1e-5)
    total = lambda p: jnp.sum(morphax.vmap(loss, in_axes=(None, 0, None))(p, hs, xs))
    total_py = lambda p: loss_py(p, hs[0], xs) + loss_py(p, hs[1], xs)
    close(morphax.grad(total)(p), morphax.grad(total_py)(p), rtol=1e-4, atol=1e-5)


def test_carry_batched_only_by_the_body():
    # The carry starts unbatched and becomes batched through a batched const: fixed point.
    f = lambda w, c, xs: lax.scan(lambda c, x: (c * w + x, c), c, xs)
    ws = jnp.array([0.5, 2.0])
    got = morphax.vmap(f, in_axes=(0, None, None))(ws, jnp.float32(1.0), jnp.arange(3.0))
    want = [
        py_scan(lambda c, x, w=ws[k]: (c * w + x, c), jnp.float32(1.0), jnp.arange(3.0)) for k in range(2)
    ]
    close(got, morphax.tree.map(lambda *e: jnp.stack(e), *want))


# ------------------------------------------------------------------------------ semantics & API


def test_length_without_xs_and_reverse():
    f = lambda c: lax.scan(lambda c, _: (c * 2.0, c + 1.0), c, None, length=4)
    close(f(jnp.float32(1.5)), (jnp.float32(24.0), jnp.array([2.5, 4.0, 7.0, 13.0])))
    g = lambda c: lax.scan(lambda c, _: (c * 2.0, c), c, None, length=3, reverse=True)
    close(g(jnp.float32(1.0)), (jnp.float32(8.0), jnp.array([4.0, 2.0, 1.0])))
    close(
        morphax.grad(lambda c: f(c)[0] + jnp.sum(f(c)[1]))(jnp.float32(1.5)),
        jnp.float32(16.0 + 1 + 2 + 4 + 8),
    )


def test_zero_length_scan():
    carry, ys = lax.scan(lambda c, x: (c + x, x * 2.0), jnp.float32(1.0), jnp.zeros((0,)))
    close((carry, ys), (jnp.float32(1.0), jnp.zeros((0,))))


def test_ys_none_and_python_scalar_outputs():
    carry, ys = lax.scan(lambda c, x: (c + x, None), 0.0, jnp.arange(4.0))
    assert ys is None and float(carry) == 6.0
    carry, ys = lax.scan(lambda c, x: (c, 1.0), jnp.float32(0.0), jnp.arange(3.0))
    close(ys, jnp.ones(3, jnp.float32))


def test_weak_typed_init_takes_the_body_type():
    # As in JAX: a Python int carry that the body turns into floats is promoted, not an error.
    carry, _ = lax.scan(lambda c, x: (c + 0.5, x), 1, jnp.ones(3))
    assert carry.dtype == jnp.float32 and float(carry) == 2.5


def test_unroll_values_agree():
    f = lambda c, x: (jnp.sin(c) + x, c)
    xs = jnp.arange(7.0)
    want = lax.scan(f, jnp.float32(0.1), xs)
    for unroll in (2, 3, True, 0):
        close(lax.scan(f, jnp.float32(0.1), xs, unroll=unroll), want)
    with pytest.raises(ValueError, match="non-negative"):
        lax.scan(f, jnp.float32(0.1), xs, unroll=-1)


def test_jaxpr_matches_jax_text():
    f = lambda c, xs: lax.scan(lambda c, x: (c * x + 1.0, c), c, xs)
    text = str(morphax.make_jaxpr(f)(jnp.float32(1.0), jnp.ones(3)))
    assert text == (
        "{ lambda ; a:f32[] b:f32[3]. let\n"
        "    c:f32[] d:f32[3] = scan[\n"
        "      jaxpr={ lambda ; e:f32[] f:f32[]. let\n"
        "          g:f32[] = mul e f\n"
        "          h:f32[] = add g 1.0:f32[]\n"
        "        in (h, e) }\n"
        "      length=3\n"
        "      num_carry=1\n"
        "      num_consts=0\n"
        "      reverse=False\n"
        "      unroll=1\n"
        "    ] a b\n"
        "  in (c, d) }"
    )


def test_closed_over_values_become_consts():
    w = jnp.arange(3.0)
    f = lambda c, xs: lax.scan(lambda c, x: (c * w + x, c), c, xs)
    (eqn,) = scan_nodes(morphax.make_jaxpr(f)(jnp.ones(3), jnp.ones((2, 3))))
    assert eqn.params["num_consts"] == 1 and eqn.params["num_carry"] == 1


def test_nested_scan_and_its_grad():
    def inner(c, row):
        return lax.scan(lambda a, x: (a * jnp.cos(x) + x, a), c, row)

    f = lambda c, m: lax.scan(inner, c, m)
    f_py = lambda c, m: py_scan(lambda c, row: py_scan(lambda a, x: (a * jnp.cos(x) + x, a), c, row), c, m)
    m = _r(3, 4)
    close(f(jnp.float32(0.3), m), f_py(jnp.float32(0.3), m))
    loss = lambda f: lambda c, m: float_loss(f(c, m))
    close(
        morphax.grad(loss(f), (0, 1))(jnp.float32(0.3), m),
        morphax.grad(loss(f_py), (0, 1))(jnp.float32(0.3), m),
        rtol=1e-4,
    )


def test_disable_jit_runs_python_loop():
    seen = []

    def body(c, x):
        seen.append(type(x).__name__)
        return c + x, c

    with morphax.disable_jit():
        carry, ys = lax.scan(body, jnp.float32(0.0), jnp.arange(3.0))
    assert seen == ["Array"] * 3
    close((carry, ys), (jnp.float32(3.0), jnp.array([0.0, 0.0, 1.0])))


# --------------------------------------------------------------------------------- check_grads


@pytest.mark.parametrize("reverse", [False, True])
def test_check_grads_order_2(reverse):
    w = jnp.array([0.7, -0.3], jnp.float32)

    def f(c, xs):
        carry, ys = lax.scan(lambda c, x: (jnp.sin(c * w) + x * c, jnp.cos(c) * x), c, xs, reverse=reverse)
        return carry, ys

    check_grads(f, (jnp.array([0.2, 0.5]), _r(3, 2)), order=2, modes=("fwd", "rev"))


def test_check_grads_order_2_consts_and_pytree():
    def f(p, h, n, a, b):
        return lax.scan(lambda c, x: tree_body(p, c, x), {"h": h, "n": n}, (a, b))

    _, p, init, (a, b) = CASES["tree"]
    check_grads(f, (p, init["h"], init["n"], a[:3], b[:3]), order=2, modes=("fwd", "rev"))


# ------------------------------------------------------------------------------------------ RNN


def test_rnn_grad_matches_unrolled():
    hidden, steps, batch, features = 16, 10, 4, 8
    r = np.random.default_rng(1)
    params = {
        "Wh": jnp.asarray(r.standard_normal((hidden, hidden)).astype(np.float32) / 4),
        "Wx": jnp.asarray(r.standard_normal((features, hidden)).astype(np.float32) / 3),
        "b": jnp.zeros(hidden),
        "Wo": jnp.asarray(r.standard_normal((hidden, 1)).astype(np.float32) / 4),
    }
    xs = jnp.asarray(r.standard_normal((steps, batch, features)).astype(np.float32))
    targets = jnp.asarray(r.standard_normal((steps, batch, 1)).astype(np.float32))

    def cell(p, h, x):
        h = jnp.tanh(h @ p["Wh"] + x @ p["Wx"] + p["b"])
        return h, h @ p["Wo"]

    def loss(p, xs):
        _, out = lax.scan(lambda h, x: cell(p, h, x), jnp.zeros((batch, hidden)), xs)
        return jnp.mean((out - targets) ** 2)

    def loss_unrolled(p, xs):
        h, outs = jnp.zeros((batch, hidden)), []
        for t in range(steps):
            h, o = cell(p, h, xs[t])
            outs.append(o)
        return jnp.mean((jnp.stack(outs) - targets) ** 2)

    want_v, want_g = morphax.value_and_grad(loss_unrolled)(params, xs)
    got_v, got_g = morphax.value_and_grad(loss)(params, xs)
    close(got_v, want_v, rtol=1e-5)
    close(got_g, want_g, rtol=1e-4, atol=1e-6)
    close(morphax.jit(morphax.grad(loss))(params, xs), want_g, rtol=1e-4, atol=1e-6)
    # A few steps of gradient descent lower the loss.
    step = morphax.jit(lambda p: morphax.tree.map(lambda a, g: a - 0.1 * g, p, morphax.grad(loss)(p, xs)))
    p = params
    for _ in range(5):
        p = step(p)
    assert float(loss(p, xs)) < float(want_v)


def test_loop_invariant_residuals_are_not_stacked():
    # W is a const of the loop: the backward pass must read it once, not T stacked copies.
    W = _r(6, 6)
    loss = lambda W, h, xs: jnp.sum(lax.scan(lambda h, x: (jnp.tanh(W @ h + x), h), h, xs)[0])
    jaxpr = morphax.make_jaxpr(morphax.grad(loss))(W, _r(6), _r(T, 6))
    shapes = [v.aval.shape for e in scan_nodes(jaxpr) for v in e.outvars]
    assert (T, 6, 6) not in shapes
    loss_py = lambda W, h, xs: jnp.sum(py_scan(lambda h, x: (jnp.tanh(W @ h + x), h), h, xs)[0])
    args = (W, _r(6), _r(T, 6))
    close(morphax.grad(loss)(*args), morphax.grad(loss_py)(*args), rtol=1e-4)


def test_linearize_and_vjp():
    body, p, init, xs = CASES["rnn"]
    f = lambda h: run_scan(body)(p, h, xs)
    f_py = lambda h: run_py(body)(p, h, xs)
    t = _r(3)
    _, lin = morphax.linearize(f, init)
    close(lin(t), morphax.jvp(f_py, (init,), (t,))[1])
    out, vjp = morphax.vjp(f, init)
    ct = morphax.tree.map(lambda o: jnp.ones_like(o), out)
    close(vjp(ct), morphax.vjp(f_py, init)[1](ct), rtol=1e-4)


# --------------------------------------------------------------------------------------- DCE


def test_dce_drops_unused_carries_and_ys():
    def f(a, b, xs):
        (ca, cb), (ya, yb) = lax.scan(lambda c, x: ((c[0] * x, c[1] + x), (c[0], jnp.sin(c[1]))), (a, b), xs)
        return ca

    jaxpr = morphax.make_jaxpr(f)(jnp.float32(1.0), jnp.float32(2.0), jnp.arange(3.0))
    (eqn,) = scan_nodes(run_dce(jaxpr).closed)
    assert eqn.params["num_carry"] == 1 and len(eqn.outvars) == 1
    assert float(morphax.jit(f)(1.0, 2.0, jnp.arange(1.0, 4.0))) == 6.0


def test_dce_keeps_carries_feeding_used_outputs():
    def f(a, b, xs):
        # yb reads carry 1, whose update reads carry 0: both carries stay, the unused y goes.
        (_, _), (yb, _) = lax.scan(lambda c, x: ((c[0] * x, c[1] + c[0]), (c[1], jnp.sin(x))), (a, b), xs)
        return yb

    jaxpr = morphax.make_jaxpr(f)(jnp.float32(1.0), jnp.float32(2.0), jnp.arange(3.0))
    (eqn,) = scan_nodes(run_dce(jaxpr).closed)
    assert eqn.params["num_carry"] == 2 and len(eqn.outvars) == 3
    assert not any(e.primitive.name == "sin" for e in eqn.params["jaxpr"].eqns)
    close(morphax.jit(f)(1.0, 2.0, jnp.arange(1.0, 4.0)), jnp.array([2.0, 3.0, 4.0]))


def test_jitted_scan_on_large_inputs_does_not_deadlock():
    # Large calls run on the device stream's thread; the loop must not queue work behind itself.
    W = jnp.ones((200, 200)) * 1e-3
    f = morphax.jit(lambda W, h, xs: lax.scan(lambda h, x: (jnp.tanh(W @ h + x), h), h, xs)[0])
    box = []
    t = threading.Thread(
        target=lambda: box.append(np.asarray(f(W, jnp.ones(200), jnp.ones((3, 200))))), daemon=True
    )
    t.start()
    t.join(60)
    assert box, "jitted scan did not finish"


# ------------------------------------------------------------------------------------- errors


def test_carry_structure_errors():
    xs = jnp.ones(3)
    with pytest.raises(TypeError) as e:
        lax.scan(lambda c, x: ((c[0], c[1], 1.0), x), (1.0, 2.0), xs)
    assert str(e.value) == (
        "scan body function carry input and carry output must have the same pytree structure, but they "
        "differ:\n\nThe input carry c is a tuple of length 2 but the corresponding component of the carry "
        "output is a tuple of length 3, so the lengths do not match.\n\nRevise the function so that the "
        "carry output has the same pytree structure as the carry input."
    )
    with pytest.raises(TypeError, match=r"The input carry c is a <class 'tuple'> but the corresponding component of "
                       r"the carry output is a <class 'list'>, so their Python types differ"):  # fmt: skip
        lax.scan(lambda c, x: ([c[0], c[1]], x), (1.0, 2.0), xs)
    with pytest.raises(TypeError, match=r"pytree node metadata does not match"):
        lax.scan(lambda c, x: ({"a": c["a"], "c": 1.0}, x), {"a": 1.0, "b": 2.0}, xs)
    with pytest.raises(TypeError, match=r"input carry component carry\['inner'\]\[1\] is a"):
        lax.scan(lambda carry, x: ({"inner": (1.0, None)}, x), {"inner": (1.0, 2.0)}, xs)


def test_carry_type_errors_leaf_by_leaf():
    xs = jnp.ones(3)
    with pytest.raises(TypeError) as e:
        lax.scan(
            lambda carry, x: ((carry[0].astype(jnp.int32), jnp.ones(4)), x),
            (jnp.float32(1.0), jnp.ones(3)),
            xs,
        )
    assert str(e.value) == (
        "scan body function carry input and carry output must have equal types, but they differ:\n\n"
        "  * the input carry component carry[0] has type float32[] but the corresponding output carry "
        "component has type int32[], so the dtypes do not match;\n"
        "  * the input carry component carry[1] has type float32[3] but the corresponding output carry "
        "component has type float32[4], so the shapes do not match.\n\n"
        "Revise the function so that all output types match the corresponding input types."
    )
    with pytest.raises(TypeError, match=r"The input carry c has type int32\[\] but the corresponding output carry "
                       r"component has type float32\[\], so the dtypes do not match"):  # fmt: skip
        lax.scan(lambda c, x: (c + 0.5, x), jnp.int32(1), xs)


def test_length_and_output_errors():
    f = lambda c, x: (c, x)
    with pytest.raises(
        ValueError, match=r"scan got `length` argument of 4 which disagrees with leading axis sizes \[3\]"
    ):
        lax.scan(f, 1.0, jnp.ones(3), length=4)
    with pytest.raises(ValueError, match="scan got values with different leading axis sizes: 3, 4."):
        lax.scan(f, 1.0, (jnp.ones(3), jnp.ones(4)))
    with pytest.raises(ValueError, match="scan got no values to scan over and `length` not provided."):
        lax.scan(f, 1.0, None)
    with pytest.raises(ValueError, match="no leading axis"):
        lax.scan(f, 1.0, jnp.float32(1.0))
    with pytest.raises(TypeError, match=r"scan body output must be a pair, got int32\[\]"):
        lax.scan(lambda c, x: c, jnp.int32(1), jnp.ones(3))
    with pytest.raises(morphax.errors.ConcretizationTypeError, match="`length` argument to `scan`"):
        morphax.jit(lambda n: lax.scan(lambda c, _: (c, c), 1.0, None, length=n))(3)
    with pytest.raises(TypeError, match="callable"):
        lax.scan(None, 1.0, jnp.ones(3))


# -------------------------------------------------------------------------------------- map


def _map_f(x):
    return {"s": jnp.sin(x["a"]) * x["b"], "t": jnp.sum(x["a"])}


@pytest.mark.parametrize("batch_size", [None, 1, 2, 3, 4, 7, 10])
def test_map(batch_size):
    xs = {"a": _r(7, 2), "b": _r(7, 1)}
    want = morphax.tree.map(
        lambda *e: jnp.stack(e), *[_map_f(morphax.tree.map(lambda a, i=i: a[i], xs)) for i in range(7)]
    )
    close(lax.map(_map_f, xs, batch_size=batch_size), want)
    close(morphax.jit(lambda xs: lax.map(_map_f, xs, batch_size=batch_size))(xs), want)
    loss = lambda xs: float_loss(lax.map(_map_f, xs, batch_size=batch_size))
    loss_py = lambda xs: float_loss(want_of(xs))
    want_of = lambda xs: morphax.tree.map(
        lambda *e: jnp.stack(e), *[_map_f(morphax.tree.map(lambda a, i=i: a[i], xs)) for i in range(7)]
    )
    close(morphax.grad(loss)(xs), morphax.grad(loss_py)(xs), rtol=1e-4)


def test_map_uses_vmap_inside_batches():
    jaxpr = morphax.make_jaxpr(lambda x: lax.map(jnp.sin, x, batch_size=2))(jnp.ones(6))
    (eqn,) = scan_nodes(jaxpr)
    assert eqn.params["length"] == 3
    assert eqn.params["jaxpr"].in_avals[-1].shape == (2,)


# --------------------------------------------------------------------------- associative_scan


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 9, 16])
@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_cumsum_and_cummax(n, reverse):
    x = np.asarray(rng.standard_normal((n, 3)).astype(np.float32))
    flip = (lambda a: a[::-1]) if reverse else (lambda a: a)
    close(
        lax.associative_scan(lax.add, jnp.asarray(x), reverse=reverse),
        jnp.asarray(flip(np.cumsum(flip(x), axis=0))),
        rtol=1e-5,
    )
    close(
        lax.associative_scan(lax.max, jnp.asarray(x), reverse=reverse),
        jnp.asarray(flip(np.maximum.accumulate(flip(x), axis=0))),
    )
    xi = np.arange(n * 2, dtype=np.int32).reshape(n, 2) % 5
    close(
        lax.associative_scan(lax.add, jnp.asarray(xi), reverse=reverse),
        jnp.asarray(flip(np.cumsum(flip(xi), axis=0)).astype(np.int32)),
    )


def test_associative_scan_axis_pytree_and_noncommutative():
    x = np.asarray(rng.standard_normal((2, 7)).astype(np.float32))
    close(lax.associative_scan(lax.add, jnp.asarray(x), axis=1), jnp.asarray(np.cumsum(x, axis=1)), rtol=1e-5)
    close(
        lax.associative_scan(lax.add, jnp.asarray(x), axis=-1), jnp.asarray(np.cumsum(x, axis=1)), rtol=1e-5
    )
    # A linear recurrence h[t] = a[t] h[t-1] + b[t] as a scan over (a, b) pairs: order matters.
    a, b = _r(6, scale=1.0), _r(6, scale=1.0)
    combine = lambda l, r: (l[0] * r[0], r[0] * l[1] + r[1])
    got = lax.associative_scan(combine, (a, b))[1]
    h, want = 0.0, []
    for t in range(6):
        h = float(a[t]) * h + float(b[t])
        want.append(h)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    # Matrix products (non-commutative).
    ms = np.asarray(rng.standard_normal((5, 2, 2)).astype(np.float32))
    got = lax.associative_scan(lambda p, q: jnp.matmul(p, q), jnp.asarray(ms))
    acc, want = np.eye(2, dtype=np.float32), []
    for m in ms:
        acc = acc @ m
        want.append(acc)
    np.testing.assert_allclose(np.asarray(got), np.stack(want), rtol=1e-4, atol=1e-5)


def test_associative_scan_transforms():
    x = _r(6, 2)
    op = lambda a, b: a + b + a * b  # associative: (1 + a)(1 + b) - 1
    f = lambda x: lax.associative_scan(op, x)
    f_py = lambda x: jnp.stack(list(itertools.accumulate([x[i] for i in range(6)], op)))
    close(f(x), f_py(x), rtol=1e-5)
    close(morphax.jit(f)(x), f_py(x), rtol=1e-5)
    close(
        morphax.grad(lambda x: jnp.sum(f(x) ** 2))(x),
        morphax.grad(lambda x: jnp.sum(f_py(x) ** 2))(x),
        rtol=1e-4,
    )
    close(morphax.vmap(f, in_axes=1, out_axes=1)(x), f_py(x), rtol=1e-5)
    with pytest.raises(ValueError, match="same first dimension"):
        lax.associative_scan(lambda a, b: a, (jnp.ones(3), jnp.ones(4)))


# -------------------------------------------------------------------------------- fori_loop


def test_fori_loop_concrete_bounds_is_a_scan_and_reverse_differentiable():
    body = lambda i, x: x * jnp.cos(x) + i.astype(jnp.float32) * 0.1
    f = lambda x: lax.fori_loop(2, 6, body, x)

    def f_py(x):
        for i in range(2, 6):
            x = body(jnp.int32(i), x)
        return x

    x = jnp.float32(0.7)
    close(f(x), f_py(x))
    close(morphax.jit(f)(x), f_py(x))
    close(morphax.grad(f)(x), morphax.grad(f_py)(x), rtol=1e-5)
    close(morphax.jit(morphax.grad(f))(x), morphax.grad(f_py)(x), rtol=1e-5)
    close(morphax.vmap(f)(jnp.array([0.1, 0.7])), jnp.stack([f_py(jnp.float32(0.1)), f_py(x)]))
    assert len(scan_nodes(morphax.make_jaxpr(f)(x))) == 1
    check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    # Concrete array bounds also make a scan; empty and negative ranges return the init value.
    assert (
        len(scan_nodes(morphax.make_jaxpr(lambda x: lax.fori_loop(jnp.int32(0), jnp.int32(3), body, x))(x)))
        == 1
    )
    close(lax.fori_loop(5, 2, body, x), x)
    close(
        lax.fori_loop(0, 3, lambda i, c: (c[0] + i, c[1] * 2.0), (0, 1.0)), (jnp.int32(3), jnp.float32(8.0))
    )


def test_fori_loop_traced_bounds_uses_while():
    body = lambda i, x: x + i.astype(jnp.float32)
    f = morphax.jit(lambda n, x: lax.fori_loop(0, n, body, x))
    close(f(4, jnp.float32(1.0)), jnp.float32(7.0))
    with pytest.raises(ValueError, match="statically known"):
        morphax.jit(lambda n, x: lax.fori_loop(0, n, body, x, unroll=2))(4, jnp.float32(1.0))
    with pytest.raises(TypeError, match="must have equal types"):
        lax.fori_loop(jnp.int32(0), jnp.int16(3), body, 1.0)


def test_rnn_at_benchmark_size_matches_unrolled():
    # The RNN: hidden 256, T = 100, batch 32; grad through scan == grad of the unrolled loop.
    import morphax
    import morphax.numpy as jnp
    from morphax import lax

    hidden, steps, batch, feats = 256, 100, 32, 8
    rng = np.random.default_rng(0)
    w_h = jnp.asarray((rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32))
    w_x = jnp.asarray((rng.standard_normal((feats, hidden)) / np.sqrt(feats)).astype(np.float32))
    xs = jnp.asarray(rng.standard_normal((steps, batch, feats)).astype(np.float32))

    def scanned(w_h, w_x):
        h, _ = lax.scan(lambda h, x: (jnp.tanh(h @ w_h + x @ w_x), None), jnp.zeros((batch, hidden)), xs)
        return jnp.mean(h**2)

    def unrolled(w_h, w_x):
        h = jnp.zeros((batch, hidden))
        for t in range(steps):
            h = jnp.tanh(h @ w_h + xs[t] @ w_x)
        return jnp.mean(h**2)

    g_scan = morphax.jit(morphax.grad(scanned, argnums=(0, 1)))(w_h, w_x)
    g_loop = morphax.grad(unrolled, argnums=(0, 1))(w_h, w_x)
    for a, b in zip(g_scan, g_loop):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)
