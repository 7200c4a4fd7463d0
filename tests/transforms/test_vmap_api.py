"""The vmap API: the seed examples (shapes and values against a Python loop), in_axes/out_axes
specifications, kwargs, axis_size, nesting, jit and grad in both orders, custom_jvp/custom_vjp
under vmap, and the errors for bad input. Oracle: Python loops over the batch with NumPy stacking.
"""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax, random, vmap

RTOL = 1e-5


def _loop(f, in_axes, args, out_axis=0):
    """The reference: f on each example (args sliced along in_axes), stacked along out_axis."""
    sizes = {np.shape(a)[d] for a, d in zip(args, in_axes) if d is not None}
    (n,) = sizes
    outs = []
    for k in range(n):
        ex = [a if d is None else np.take(np.asarray(a), k, axis=d) for a, d in zip(args, in_axes)]
        outs.append(np.asarray(f(*ex)))
    return np.stack(outs, axis=out_axis)


# ------------------------------------------------------------------------------------------------
# The seed examples (SEED_EXAMPLES.md, "vmap: automatic vectorization, in_axes and out_axes").

key = random.PRNGKey(0)
mat = random.normal(key, (150, 100))
batched_x = random.normal(key, (10, 100))


def apply_matrix(v):
    return jnp.dot(mat, v)


def test_seed_in_axes_none_zero():
    got = vmap(lambda mat, v: jnp.dot(mat, v), (None, 0))(mat, batched_x)
    assert got.shape == (10, 150)
    np.testing.assert_allclose(
        got, _loop(lambda m, v: jnp.dot(m, v), (None, 0), (mat, batched_x)), rtol=RTOL, atol=1e-4
    )
    np.testing.assert_allclose(got, np.asarray(batched_x) @ np.asarray(mat).T, rtol=1e-4, atol=1e-4)


def test_seed_closure_over_mat():
    got = vmap(lambda v: jnp.dot(mat, v), 0)(batched_x)
    assert got.shape == (10, 150)
    np.testing.assert_allclose(got, _loop(apply_matrix, (0,), (batched_x,)), rtol=RTOL, atol=1e-4)


def test_seed_in_axes_1_out_axes_0_and_1():
    xs = random.normal(key, (100, 10))
    got0 = vmap(lambda v: jnp.dot(mat, v), 1, 0)(xs)
    assert got0.shape == (10, 150)
    np.testing.assert_allclose(got0, _loop(apply_matrix, (1,), (xs,), 0), rtol=RTOL, atol=1e-4)
    got1 = vmap(lambda v: jnp.dot(mat, v), 1, 1)(xs)
    assert got1.shape == (150, 10)
    np.testing.assert_allclose(got1, _loop(apply_matrix, (1,), (xs,), 1), rtol=RTOL, atol=1e-4)


def test_seed_vdot_matrix_vector_and_matrix_matrix():
    vv = lambda v1, v2: jnp.vdot(v1, v2)
    mv = vmap(vv, (0, None), 0)  # ([b, a], [a]) -> [b]
    mm = vmap(mv, (None, 1), 0)  # batch along axis 1 of the second argument
    want = np.asarray(batched_x) @ np.asarray(mat).T  # (10, 150)
    got = mm(mat, batched_x.T)
    assert got.shape == (10, 150)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, _loop(lambda v: mv(mat, v), (1,), (batched_x.T,)), rtol=RTOL, atol=1e-4)
    got2 = vmap(mv, (None, 0), 0)(mat, batched_x)
    assert got2.shape == (10, 150)
    np.testing.assert_allclose(got2, want, rtol=1e-4, atol=1e-4)
    assert mv(mat, batched_x[0]).shape == (150,)


# ------------------------------------------------------------------------------------------------
# in_axes / out_axes specifications.

X = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
Y = np.arange(12.0, dtype=np.float32).reshape(3, 4) / 7


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_int_in_axes_including_negative(axis):
    got = vmap(lambda x: jnp.sum(x * x, axis=0), in_axes=axis)(X)
    np.testing.assert_allclose(
        got, _loop(lambda x: np.sum(np.asarray(x) ** 2, axis=0), (axis,), (X,)), rtol=RTOL
    )


@pytest.mark.parametrize("out_axes", [0, 1, 2, -1, -2, -3])
def test_int_out_axes_including_negative(out_axes):
    f = lambda x: jnp.sin(x)
    got = vmap(f, in_axes=1, out_axes=out_axes)(X)
    np.testing.assert_allclose(got, _loop(f, (1,), (X,), out_axes % 3), rtol=RTOL)


def test_tuple_and_list_in_axes_with_none():
    f = lambda x, y: x * y + 1
    want = _loop(f, (1, None), (X, Y[0]))
    for spec in [(1, None), [1, None]]:
        np.testing.assert_allclose(vmap(f, in_axes=spec)(X, Y[0]), want, rtol=RTOL)
    # An unbatched argument may have any shape; None everywhere else.
    got = vmap(lambda x, y: x + y.sum(), in_axes=(0, None))(X, Y)
    np.testing.assert_allclose(got, X + Y.sum(), rtol=RTOL)


def test_dict_in_axes_and_nested_prefixes():
    params = {"w": np.ones((4, 3), np.float32), "b": np.arange(5 * 3, dtype=np.float32).reshape(5, 3)}
    xs = np.arange(20, dtype=np.float32).reshape(4, 5)  # batch along axis 1

    def f(p, x):
        return x @ p["w"] + p["b"]

    got = vmap(f, in_axes=({"w": None, "b": 0}, 1))(params, xs)
    want = np.stack([xs[:, k] @ params["w"] + params["b"][k] for k in range(5)])
    np.testing.assert_allclose(got, want, rtol=RTOL)
    # A prefix: one spec for the whole dict.
    both = {"w": np.ones((5, 4, 3), np.float32), "b": params["b"]}
    got = vmap(f, in_axes=(0, 1))(both, xs)
    np.testing.assert_allclose(got, want, rtol=RTOL)
    # Nested containers: a tuple inside a list inside the argument tuple.
    tree = [(X, Y), Y]
    g = lambda t: t[0][0].sum() + t[0][1] * t[1]
    got = vmap(g, in_axes=([(1, 0), 0],))(tree)
    want = np.stack([X[:, k].sum() + Y[k] * Y[k] for k in range(3)])
    np.testing.assert_allclose(got, want, rtol=RTOL)


def test_pytree_out_axes():
    f = lambda x: {"a": x * 2, "b": (x.sum(), x[0])}
    got = vmap(f, in_axes=1, out_axes={"a": 1, "b": (0, -1)})(X)
    np.testing.assert_allclose(got["a"], np.moveaxis(2 * X, 1, 1), rtol=RTOL)
    np.testing.assert_allclose(got["b"][0], X.sum((0, 2)), rtol=RTOL)
    np.testing.assert_allclose(got["b"][1], X[0].T, rtol=RTOL)  # per example x[0]: (4,), batch last
    got = vmap(lambda x: (x, 3.0), out_axes=(0, None))(Y)
    assert float(got[1]) == 3.0
    np.testing.assert_array_equal(got[0], Y)


def test_unbatched_output_broadcast_by_integer_out_axes():
    got = vmap(lambda x: Y, in_axes=0, out_axes=1)(X)
    assert got.shape == (3, 2, 4)
    np.testing.assert_array_equal(got, np.broadcast_to(Y[:, None], (3, 2, 4)))


def test_kwargs_mapped_over_leading_axis():
    f = lambda x, *, scale, shift=None: x * scale + (0 if shift is None else shift)
    # x batched along axis 1 (3 examples of (2, 4)); kwargs along axis 0 must have size 3 too.
    with pytest.raises(ValueError, match="inconsistent sizes"):
        f2 = vmap(f, in_axes=1)
        f2(X, scale=np.ones((2, 4)))
    scale = np.arange(3.0, dtype=np.float32)
    got = vmap(f, in_axes=1)(X, scale=scale)
    np.testing.assert_allclose(got, np.stack([X[:, k] * scale[k] for k in range(3)]), rtol=RTOL)
    got = vmap(f, in_axes=None)(X, scale=scale, shift={"s": 1.0}["s"] * np.ones(3, np.float32))
    np.testing.assert_allclose(got, np.stack([X * scale[k] + 1 for k in range(3)]), rtol=RTOL)


def test_axis_size_without_mapped_inputs():
    got = vmap(lambda x: x * 2, in_axes=None, axis_size=4)(Y)
    np.testing.assert_array_equal(got, np.broadcast_to(Y * 2, (4, 3, 4)))
    got = vmap(lambda: jnp.ones(2), axis_size=3)()
    np.testing.assert_array_equal(got, np.ones((3, 2)))
    got = vmap(lambda x: lax.axis_index("b") + x, in_axes=None, axis_size=3, axis_name="b")(np.int32(10))
    np.testing.assert_array_equal(got, [10, 11, 12])


def test_nested_vmap_depth_three_with_different_axes():
    A = np.random.default_rng(0).normal(size=(2, 4, 3, 5)).astype(np.float32)
    B = np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)

    def f(a, b):  # a: (4,) ; b: (4,)
        return jnp.tanh(a * b).sum() + a[0]

    # Outer: A axis 3 with B axis 0; middle: A axis 0 (B unbatched); inner: A axis 1 of what is left.
    g = vmap(vmap(vmap(f, in_axes=(1, None)), in_axes=(0, None)), in_axes=(3, 0), out_axes=-1)
    got = g(A, B)
    want = np.empty((2, 3, 5), np.float32)
    for i in range(5):
        for j in range(2):
            for k in range(3):
                a, b = A[j, :, k, i], B[i]
                want[j, k, i] = np.tanh(a * b).sum() + a[0]
    assert got.shape == (2, 3, 5)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-6)
    # The same through out_axes at every level.
    h = vmap(
        vmap(vmap(f, in_axes=(1, None), out_axes=0), in_axes=(0, None), out_axes=-1),
        in_axes=(3, 0),
        out_axes=1,
    )
    np.testing.assert_allclose(h(A, B), np.transpose(want, (1, 2, 0)), rtol=RTOL, atol=1e-6)


# ------------------------------------------------------------------------------------------------
# jit and grad.


def test_vmap_of_jit_and_jit_of_vmap():
    f = lambda x, y: jnp.sin(x) @ y
    want = _loop(f, (1, None), (X, Y.T))
    np.testing.assert_allclose(vmap(morphax.jit(f), in_axes=(1, None))(X, Y.T), want, rtol=RTOL)
    np.testing.assert_allclose(morphax.jit(vmap(f, in_axes=(1, None)))(X, Y.T), want, rtol=RTOL)
    jitted = morphax.jit(vmap(morphax.jit(f), in_axes=(1, None)))
    np.testing.assert_allclose(jitted(X, Y.T), want, rtol=RTOL)


def _mlp_params():
    rng = np.random.default_rng(3)
    return {
        "w1": rng.normal(size=(4, 8)).astype(np.float32) * 0.5,
        "b1": rng.normal(size=(8,)).astype(np.float32) * 0.1,
        "w2": rng.normal(size=(8, 2)).astype(np.float32) * 0.5,
        "b2": rng.normal(size=(2,)).astype(np.float32) * 0.1,
    }


def _mlp_loss(p, x, y):
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    out = jnp.tanh(h @ p["w2"] + p["b2"])
    return jnp.sum((out - y) ** 2)


def test_per_example_gradients_of_an_mlp():
    p = _mlp_params()
    rng = np.random.default_rng(4)
    xs = rng.normal(size=(6, 4)).astype(np.float32)
    ys = rng.normal(size=(6, 2)).astype(np.float32)
    per_ex = vmap(morphax.grad(_mlp_loss), in_axes=(None, 0, 0))(p, xs, ys)
    loop = [morphax.grad(_mlp_loss)(p, xs[k], ys[k]) for k in range(6)]
    for name in p:
        assert per_ex[name].shape == (6,) + p[name].shape
        np.testing.assert_allclose(per_ex[name], np.stack([g[name] for g in loop]), rtol=1e-5, atol=1e-6)
    # Their mean is the gradient of the mean loss.
    mean_loss = lambda p: jnp.mean(vmap(_mlp_loss, in_axes=(None, 0, 0))(p, xs, ys))
    full = morphax.grad(mean_loss)(p)
    for name in p:
        np.testing.assert_allclose(np.mean(per_ex[name], 0), full[name], rtol=1e-5, atol=1e-6)


def test_grad_of_vmap_and_jacobian_of_vmap():
    f = lambda x: jnp.sum(vmap(lambda v: jnp.sin(v) * v[0], in_axes=1)(x) ** 2)
    g = morphax.grad(f)(Y)
    # d/dY[i,k] of sum_k sum_i (sin(Y[i,k]) Y[0,k])^2
    s = np.sin(Y)
    want = 2 * s * Y[0] * np.cos(Y) * Y[0]
    want[0] += (2 * (s * Y[0]) * s).sum(0)
    np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)
    jac = morphax.jacrev(vmap(jnp.sin))(np.arange(3.0, dtype=np.float32))
    np.testing.assert_allclose(jac, np.diag(np.cos(np.arange(3.0))), rtol=1e-6, atol=1e-7)
    jac = morphax.jacfwd(vmap(jnp.sin))(np.arange(3.0, dtype=np.float32))
    np.testing.assert_allclose(jac, np.diag(np.cos(np.arange(3.0))), rtol=1e-6, atol=1e-7)


def test_vmap_of_custom_jvp_keeps_the_rule():
    @morphax.custom_jvp
    def f(x):
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), 3.0 * t  # deliberately not cos(x): shows the rule is used

    xs = np.array([0.1, 0.2, 0.3], np.float32)
    np.testing.assert_allclose(vmap(f)(xs), np.sin(xs), rtol=1e-6)
    np.testing.assert_allclose(vmap(morphax.grad(f))(xs), [3.0, 3.0, 3.0])
    np.testing.assert_allclose(morphax.grad(lambda x: jnp.sum(vmap(f)(x)))(xs), [3.0, 3.0, 3.0])
    _, t = morphax.jvp(vmap(f), (xs,), (np.ones(3, np.float32),))
    np.testing.assert_allclose(t, [3.0, 3.0, 3.0])
    # Batched along another axis, and with an unbatched argument.
    g = morphax.custom_jvp(lambda x, y: x * y)
    g.defjvp(lambda p, t: (g(*p), 5.0 * t[0] + 7.0 * t[1]))
    loss = lambda x, y: jnp.sum(g(x, y))
    got = vmap(morphax.grad(loss, argnums=(0, 1)), in_axes=(1, None))(
        np.ones((2, 3), np.float32), np.float32(2.0)
    )
    np.testing.assert_allclose(got[0], np.full((3, 2), 5.0))
    np.testing.assert_allclose(got[1], np.full((3,), 14.0))


def test_vmap_of_custom_vjp_keeps_the_rule():
    @morphax.custom_vjp
    def clip_grad(x, bound):
        return x

    def fwd(x, bound):
        return x, bound

    def bwd(bound, g):
        return (jnp.clip(g, -bound, bound), None)

    clip_grad.defvjp(fwd, bwd)

    def loss(x, bound):
        return jnp.sum(clip_grad(x, bound) * 10.0)

    xs = np.ones((4, 3), np.float32)
    bounds = np.array([1.0, 2.0, 20.0, 0.5], np.float32)
    got = vmap(morphax.grad(loss))(xs, bounds)
    np.testing.assert_allclose(got, np.minimum(10.0, bounds)[:, None] * np.ones((4, 3)))
    np.testing.assert_allclose(vmap(clip_grad)(xs, bounds), xs)


def test_grad_of_vmap_of_custom_vjp():
    # bwd returns None for the non-differentiable bound (batched, then unbatched).
    @morphax.custom_vjp
    def clip_grad(x, bound):
        return x

    clip_grad.defvjp(lambda x, bound: (x, bound), lambda bound, g: (jnp.clip(g, -bound, bound), None))
    xs = np.ones((4, 3), np.float32)
    bounds = np.array([1.0, 2.0, 20.0, 0.5], np.float32)
    total = morphax.grad(lambda x: jnp.sum(vmap(lambda a, b: clip_grad(a, b) * 10.0)(x, bounds)))(xs)
    np.testing.assert_allclose(total, np.minimum(10.0, bounds)[:, None] * np.ones((4, 3)))
    total = morphax.grad(lambda x: jnp.sum(vmap(lambda a: clip_grad(a, 2.0) * 10.0)(x)))(xs)
    np.testing.assert_allclose(total, np.full((4, 3), 2.0))


# ------------------------------------------------------------------------------------------------
# Errors.


def test_inconsistent_sizes_lists_every_argument():
    f = lambda a, b, c: a
    with pytest.raises(ValueError, match="inconsistent sizes") as e:
        vmap(f, in_axes=(0, 1, None))(np.ones((3, 2)), {"k": np.ones((4, 5))}, np.ones(7))
    msg = str(e.value)
    assert "args[0] has size 3 along axis 0" in msg
    assert "args[1]['k'] has size 5 along axis 1" in msg
    assert "args[2]" not in msg
    with pytest.raises(ValueError, match=r"kwargs\['z'\] has size 2 along axis 0"):
        vmap(lambda x, z: x)(np.ones(3), z=np.ones(2))


def test_in_axes_not_matching_argument_structure():
    with pytest.raises(ValueError) as e:
        vmap(lambda d: d["a"], in_axes=({"a": 0, "c": 0},))({"a": np.ones(3), "b": np.ones(3)})
    msg = str(e.value)
    assert "in_axes" in msg and "'c'" in msg and "'b'" in msg  # both structures are shown
    with pytest.raises(ValueError, match=r"len\(in_axes\)=2, len\(args\)=1"):
        vmap(lambda x: x, in_axes=(0, 0))(np.ones(3))
    with pytest.raises(ValueError, match="out_axes"):
        vmap(lambda x: (x, x), out_axes=(0, 0, 0))(np.ones(3))
    with pytest.raises(TypeError, match="in_axes must be an int"):
        vmap(lambda x: x, in_axes="0")(np.ones(3))


def test_axis_out_of_range_names_the_argument():
    with pytest.raises(ValueError, match=r"axis 2.*rank.*args\[0\]"):
        vmap(lambda x: x, in_axes=2)(np.ones((3, 4)))
    with pytest.raises(ValueError, match=r"axis -3.*args\[1\]\['w'\]"):
        vmap(lambda a, p: a, in_axes=(0, {"w": -3}))(np.ones(3), {"w": np.ones((3, 4))})
    with pytest.raises(ValueError, match="rank"):
        vmap(lambda x: x, in_axes=0)(np.float32(1.0))
    with pytest.raises(ValueError, match="out_axes=3 is out of range"):
        vmap(lambda x: x, out_axes=3)(np.ones((3, 4)))


def test_out_axes_none_for_a_batched_output():
    with pytest.raises(ValueError, match="out_axes=None.*batched"):
        vmap(lambda x: x * 2, out_axes=None)(np.ones(3))


def test_no_mapped_argument_and_no_axis_size():
    with pytest.raises(ValueError, match="axis_size"):
        vmap(lambda x: x, in_axes=None)(np.ones(3))
    with pytest.raises(ValueError, match="axis_size=2"):
        vmap(lambda x: x, axis_size=2)(np.ones(3))


def test_unknown_axis_name_in_a_collective():
    with pytest.raises(NameError, match="unbound axis name: j"):
        vmap(lambda x: lax.psum(x, "j"), axis_name="i")(np.ones(3))
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.psum(np.ones(3), "i")


def test_not_callable():
    with pytest.raises(TypeError, match="callable"):
        vmap(3)
