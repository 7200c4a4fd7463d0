"""Collectives under vmap: psum/pmean/pmax/pmin, all_gather, axis_index, psum_scatter,
ppermute/pshuffle and all_to_all over named axes, against NumPy on the stacked batch; nested
names; jit inside and outside; derivatives (jvp and vjp inside vmap equal those of the whole
batched function; grad through psum) and the errors for unbound names.
"""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax, vmap
from morphax._src.core.primitive import registry
from morphax.test_util import check_grads

COLLECTIVES = ("psum", "pmax", "pmin", "all_gather", "axis_index", "psum_scatter", "ppermute", "all_to_all")


def _rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def _vm(f, **kw):
    return vmap(f, axis_name="i", **kw)


# ------------------------------------------------------------------------------------------------
# Registration.


@pytest.mark.parametrize("name", COLLECTIVES)
def test_registered_with_named_axes_and_no_matrix_cases(name):
    prim = registry[name]
    assert prim.named_axes_param in ("axes", "axis_name")
    assert prim.batch is not None
    # They cannot run outside a transformation binding their axis: the generated matrices skip them.
    assert prim.test_spec is not None and prim.test_spec.cases(np.random.default_rng(0)) == []


# ------------------------------------------------------------------------------------------------
# Reductions.


def test_psum_is_the_batch_sum():
    x = _rand((4, 3))
    got = _vm(lambda v: lax.psum(v, "i"))(x)
    np.testing.assert_allclose(got, np.broadcast_to(x.sum(0), (4, 3)), rtol=1e-6)


def test_psum_batched_along_another_axis():
    x = _rand((3, 5))
    got = vmap(lambda v: lax.psum(v, "i"), in_axes=1, out_axes=1, axis_name="i")(x)
    np.testing.assert_allclose(got, np.broadcast_to(x.sum(1, keepdims=True), (3, 5)), rtol=1e-6)


def test_psum_pytree_and_bool_and_int():
    x = {"a": _rand((3, 2)), "b": np.array([True, False, True]), "c": np.arange(3, dtype=np.int32)}
    got = _vm(lambda t: lax.psum(t, "i"))(x)
    np.testing.assert_allclose(got["a"], np.broadcast_to(x["a"].sum(0), (3, 2)), rtol=1e-6)
    assert got["b"].dtype == np.int32  # bools are counted as int32, as in JAX
    np.testing.assert_array_equal(got["b"], [2, 2, 2])
    np.testing.assert_array_equal(got["c"], [3, 3, 3])


def test_psum_of_unbatched_value_is_value_times_size():
    c = np.array([1.0, 2.0], np.float32)
    got = _vm(lambda v: lax.psum(c, "i") + 0 * v)(np.zeros((5, 2), np.float32))
    np.testing.assert_array_equal(got, np.broadcast_to(c * 5, (5, 2)))
    n = _vm(lambda v: lax.psum(1, "i"), axis_size=None)(np.zeros(7))
    np.testing.assert_array_equal(n, np.full(7, 7))
    assert _vm(lambda v: lax.psum(1, "i"), out_axes=None)(np.zeros(7)) == 7


def test_pmean_pmax_pmin():
    x = _rand((4, 3), seed=1)
    np.testing.assert_allclose(
        _vm(lambda v: lax.pmean(v, "i"))(x), np.broadcast_to(x.mean(0), x.shape), rtol=1e-6
    )
    np.testing.assert_array_equal(_vm(lambda v: lax.pmax(v, "i"))(x), np.broadcast_to(x.max(0), x.shape))
    np.testing.assert_array_equal(_vm(lambda v: lax.pmin(v, "i"))(x), np.broadcast_to(x.min(0), x.shape))
    ints = np.array([[3, -1], [7, 2], [0, 5]], np.int32)
    np.testing.assert_array_equal(_vm(lambda v: lax.pmax(v, "i"))(ints), [[7, 5]] * 3)
    m = _vm(lambda v: lax.pmean(v, "i"))(ints)
    assert m.dtype == np.float32
    np.testing.assert_allclose(m, [[10 / 3, 2.0]] * 3, rtol=1e-6)


def test_reduction_with_empty_axis_name_tuple_is_identity():
    x = _rand((3,))
    np.testing.assert_array_equal(_vm(lambda v: lax.psum(v, ()))(x), x)


# ------------------------------------------------------------------------------------------------
# axis_index, all_gather, psum_scatter.


def test_axis_index_is_arange():
    got = _vm(lambda v: lax.axis_index("i"))(np.zeros((6, 2)))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.arange(6))
    got = vmap(lambda: lax.axis_index("i") * 2, axis_name="i", axis_size=4)()
    np.testing.assert_array_equal(got, [0, 2, 4, 6])


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_all_gather_stacks(axis):
    x = _rand((3, 4, 2), seed=2)
    got = _vm(lambda v: lax.all_gather(v, "i", axis=axis))(x)
    want = np.stack(list(x), axis=axis)
    np.testing.assert_array_equal(got, np.broadcast_to(want, (3,) + want.shape))


@pytest.mark.parametrize("axis", [0, 1])
def test_all_gather_tiled_concatenates(axis):
    x = _rand((3, 4, 2), seed=3)
    got = _vm(lambda v: lax.all_gather(v, "i", axis=axis, tiled=True))(x)
    want = np.concatenate(list(x), axis=axis)
    np.testing.assert_array_equal(got, np.broadcast_to(want, (3,) + want.shape))


def test_all_gather_of_unbatched_and_batched_along_last_axis():
    c = _rand((2,), seed=4)
    got = _vm(lambda v: lax.all_gather(c, "i") + 0 * v)(np.zeros((3, 1), np.float32))
    np.testing.assert_array_equal(got, np.broadcast_to(np.stack([c] * 3), (3, 3, 2)))
    x = _rand((2, 5), seed=5)
    got = vmap(lambda v: lax.all_gather(v, "i"), in_axes=1, axis_name="i")(x)
    np.testing.assert_array_equal(got, np.broadcast_to(x.T, (5, 5, 2)))


def test_psum_scatter():
    x = _rand((3, 3, 2), seed=6)  # the scattered dimension has the axis size
    got = _vm(lambda v: lax.psum_scatter(v, "i"))(x)
    np.testing.assert_allclose(got, x.sum(0), rtol=1e-6)
    x = _rand((3, 2, 6), seed=7)
    got = _vm(lambda v: lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True))(x)
    want = np.stack(np.split(x.sum(0), 3, axis=1))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    c = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    got = _vm(lambda v: lax.psum_scatter(c, "i") + 0 * v)(np.zeros((3, 1), np.float32))
    np.testing.assert_array_equal(got, c * 3)


# ------------------------------------------------------------------------------------------------
# ppermute, pshuffle, all_to_all.


def test_ppermute_cycle_is_a_row_permutation():
    x = _rand((4, 3), seed=8)
    perm = [(i, (i + 1) % 4) for i in range(4)]
    got = _vm(lambda v: lax.ppermute(v, "i", perm))(x)
    np.testing.assert_array_equal(got, np.roll(x, 1, axis=0))


def test_ppermute_partial_fills_zeros_and_int_dtypes():
    x = np.arange(12, dtype=np.int32).reshape(4, 3)
    got = _vm(lambda v: lax.ppermute(v, "i", [(0, 2), (3, 1)]))(x)
    want = np.zeros_like(x)
    want[2], want[1] = x[0], x[3]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int32
    got = vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 0)]), in_axes=1, out_axes=1, axis_name="i")(
        np.arange(6.0).reshape(3, 2)
    )
    np.testing.assert_array_equal(got, np.arange(6.0).reshape(3, 2)[:, ::-1])


def test_ppermute_of_unbatched_value():
    c = np.float32(2.5)
    full = _vm(lambda v: lax.ppermute(c, "i", [(0, 1), (1, 0)]) + 0 * v)(np.zeros(2, np.float32))
    np.testing.assert_array_equal(full, [2.5, 2.5])
    part = _vm(lambda v: lax.ppermute(c, "i", [(0, 1)]) + 0 * v)(np.zeros(3, np.float32))
    np.testing.assert_array_equal(part, [0.0, 2.5, 0.0])


def test_pshuffle():
    x = _rand((4,), seed=9)
    got = _vm(lambda v: lax.pshuffle(v, "i", [2, 0, 3, 1]))(x)
    np.testing.assert_array_equal(got, x[[2, 0, 3, 1]])


def test_ppermute_bad_perm():
    with pytest.raises(ValueError, match="outside the axis"):
        _vm(lambda v: lax.ppermute(v, "i", [(0, 5)]))(np.zeros(3))
    with pytest.raises(ValueError, match="partial permutation"):
        _vm(lambda v: lax.ppermute(v, "i", [(0, 1), (2, 1)]))(np.zeros(3))


def _all_to_all_ref(X, sa, ca, tiled):
    n = X.shape[0]
    outs = []
    for i in range(n):
        if tiled:
            outs.append(np.concatenate([np.split(X[j], n, axis=sa)[i] for j in range(n)], axis=ca))
        else:
            outs.append(np.stack([np.take(X[j], i, axis=sa) for j in range(n)], axis=ca))
    return np.stack(outs)


@pytest.mark.parametrize("sa,ca", [(0, 0), (0, 1), (1, 0), (1, 2), (2, 1)])
def test_all_to_all_untiled(sa, ca):
    n = 3
    shape = [2, 4, 5]
    shape[sa] = n
    X = _rand((n, *shape), seed=10)
    got = _vm(lambda v: lax.all_to_all(v, "i", sa, ca))(X)
    np.testing.assert_array_equal(got, _all_to_all_ref(X, sa, ca, False))


@pytest.mark.parametrize("sa,ca", [(0, 0), (0, 1), (1, 0), (2, 2)])
def test_all_to_all_tiled(sa, ca):
    n = 2
    X = _rand((n, 4, 6, 2), seed=11)
    got = _vm(lambda v: lax.all_to_all(v, "i", sa, ca, tiled=True))(X)
    np.testing.assert_array_equal(got, _all_to_all_ref(X, sa, ca, True))


def test_all_to_all_batched_along_last_axis_and_twice_is_identity():
    X = _rand((3, 5, 3), seed=12)  # batch along the last axis
    f = lambda v: lax.all_to_all(v, "i", 0, 0)
    got = vmap(f, in_axes=-1, axis_name="i")(X)
    np.testing.assert_array_equal(got, _all_to_all_ref(np.moveaxis(X, -1, 0), 0, 0, False))
    back = vmap(lambda v: f(f(v)), in_axes=-1, out_axes=-1, axis_name="i")(X)
    np.testing.assert_array_equal(back, X)


# ------------------------------------------------------------------------------------------------
# Nested names.


def test_psum_over_two_nested_names():
    x = _rand((2, 3, 4), seed=13)
    f = vmap(vmap(lambda v: lax.psum(v, ("i", "j")), axis_name="j"), axis_name="i")
    np.testing.assert_allclose(f(x), np.broadcast_to(x.sum((0, 1)), x.shape), rtol=1e-5)
    # The order of the names in the tuple does not matter.
    g = vmap(vmap(lambda v: lax.psum(v, ("j", "i")), axis_name="j"), axis_name="i")
    np.testing.assert_allclose(g(x), f(x), rtol=1e-6)


def test_collective_over_the_outer_name_inside_an_inner_vmap():
    x = _rand((2, 3, 4), seed=14)
    outer = vmap(vmap(lambda v: lax.psum(v, "i"), axis_name="j"), axis_name="i")
    np.testing.assert_allclose(outer(x), np.broadcast_to(x.sum(0, keepdims=True), x.shape), rtol=1e-6)
    inner = vmap(vmap(lambda v: lax.pmax(v, "j"), axis_name="j"), axis_name="i")
    np.testing.assert_array_equal(inner(x), np.broadcast_to(x.max(1, keepdims=True), x.shape))
    idx = vmap(vmap(lambda v: lax.axis_index("i") * 10 + lax.axis_index("j"), axis_name="j"), axis_name="i")(
        x
    )
    np.testing.assert_array_equal(idx, 10 * np.arange(2)[:, None] + np.arange(3)[None, :])
    lin = vmap(vmap(lambda v: lax.axis_index(("i", "j")), axis_name="j"), axis_name="i")(x)
    np.testing.assert_array_equal(lin, np.arange(6).reshape(2, 3))


def test_nested_names_with_other_in_axes():
    x = _rand((4, 2, 3), seed=15)  # i along axis 2, j along axis 0 of what remains
    f = vmap(vmap(lambda v: lax.all_gather(v, "i"), in_axes=0, axis_name="j"), in_axes=2, axis_name="i")
    got = f(x)  # [i, j, gathered i, 2]
    want = np.transpose(x, (0, 2, 1))  # per j: rows over i
    assert got.shape == (3, 4, 3, 2)
    for i in range(3):
        np.testing.assert_array_equal(got[i], want)
    g = vmap(
        vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)]), axis_name="j"),
        in_axes=2,
        axis_name="i",
    )
    np.testing.assert_array_equal(g(x), np.roll(np.transpose(x, (2, 0, 1)), 1, axis=0))
    h = vmap(vmap(lambda v: lax.all_to_all(v, "i", 0, 0), axis_name="j"), in_axes=0, axis_name="i")
    y = _rand((3, 2, 3, 5), seed=16)  # [i, j, 3, 5]
    want = np.stack([_all_to_all_ref(y[:, j], 0, 0, False) for j in range(2)], axis=1)
    np.testing.assert_array_equal(h(y), want)
    k = vmap(vmap(lambda v: lax.psum_scatter(v, "i", tiled=True), axis_name="j"), axis_name="i")
    z = _rand((2, 3, 4), seed=17)
    want = np.stack([np.stack(np.split(z[:, j].sum(0), 2)) for j in range(3)], axis=1)
    np.testing.assert_allclose(k(z), want, rtol=1e-6)


# ------------------------------------------------------------------------------------------------
# jit.


def test_vmap_of_jit_and_jit_of_vmap():
    x = _rand((4, 3), seed=18)

    @morphax.jit
    def centered(v):
        return v - lax.pmean(v, "i") + lax.axis_index("i")

    want = x - x.mean(0) + np.arange(4)[:, None]
    np.testing.assert_allclose(_vm(centered)(x), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        morphax.jit(_vm(lambda v: v - lax.pmean(v, "i") + lax.axis_index("i")))(x), want, rtol=1e-5, atol=1e-6
    )
    gathered = _vm(morphax.jit(lambda v: lax.all_gather(v, "i", axis=1)))(x)
    np.testing.assert_array_equal(gathered, np.broadcast_to(x.T, (4, 3, 4)))


def test_make_jaxpr_of_vmapped_collective_and_abstract_eval_inside_jit():
    x = _rand((4, 3), seed=19)
    jaxpr = morphax.make_jaxpr(_vm(lambda v: lax.psum(v, "i")))(x)
    prims = [e.primitive.name for e in jaxpr.jaxpr.eqns]
    assert "reduce_sum" in prims and "psum" not in prims
    # Traced by jit under the vmap: the collectives are staged, so their abstract evaluation runs.
    shapes = _vm(
        lambda v: morphax.jit(
            lambda u: (
                lax.all_gather(u, "i"),
                lax.all_to_all(lax.all_gather(u, "i"), "i", 0, 1),
                lax.psum_scatter(lax.all_gather(u, "i"), "i"),
            )
        )(v)
    )(x)
    assert [s.shape for s in shapes] == [(4, 4, 3), (4, 3, 4), (4, 3)]


# ------------------------------------------------------------------------------------------------
# Derivatives: a jvp/vjp taken per member (inside vmap) is the jvp/vjp of the batched function.

CASES = {
    "psum": (lambda v: lax.psum(v, "i"), (3, 2)),
    "pmean": (lambda v: lax.pmean(v, "i"), (3, 2)),
    "pmax": (lambda v: lax.pmax(v, "i"), (3, 2)),
    "pmin": (lambda v: lax.pmin(v, "i"), (3, 2)),
    "all_gather": (lambda v: lax.all_gather(v, "i", axis=1), (3, 2)),
    "all_gather_tiled": (lambda v: lax.all_gather(v, "i", tiled=True), (3, 2)),
    "psum_scatter": (lambda v: lax.psum_scatter(v, "i"), (3, 3)),
    "psum_scatter_tiled": (lambda v: lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True), (3, 2, 6)),
    "ppermute": (lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2)]), (3, 2)),
    "all_to_all": (lambda v: lax.all_to_all(v, "i", 0, 1), (3, 3, 2)),
    "all_to_all_tiled": (lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True), (3, 2, 6)),
}


def _wrap(c):
    return lambda v: jnp.cos(c(jnp.sin(v) * v))


@pytest.mark.parametrize("name", sorted(CASES))
def test_jvp_inside_vmap_equals_jvp_of_vmap(name):
    c, shape = CASES[name]
    f = _wrap(c)
    x, t = _rand(shape, seed=20), _rand(shape, seed=21)
    y1, t1 = _vm(lambda a, b: morphax.jvp(f, (a,), (b,)))(x, t)
    y2, t2 = morphax.jvp(_vm(f), (x,), (t,))
    np.testing.assert_allclose(y1, y2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(t1, t2, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vjp_inside_vmap_equals_vjp_of_vmap(name):
    c, shape = CASES[name]
    f = _wrap(c)
    x = _rand(shape, seed=22)
    y = _vm(f)(x)
    ct = _rand(np.shape(y), seed=23)
    (g1,) = _vm(lambda a, b: morphax.vjp(f, a)[1](b))(x, ct)
    (g2,) = morphax.vjp(_vm(f), x)[1](ct)
    np.testing.assert_allclose(g1, g2, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["psum", "all_gather", "ppermute", "all_to_all", "pmax"])
def test_check_grads_of_vmapped_function(name):
    c, shape = CASES[name]
    f = _wrap(c)
    x = _rand(shape, seed=24).astype(np.float64)
    with morphax.enable_x64():
        # vmap inside the differentiated function, and derivatives taken inside the vmap.
        check_grads(_vm(f), (x,), order=2)
        check_grads(lambda a: _vm(lambda b: morphax.grad(lambda u: jnp.sum(f(u)))(b))(a), (x,), order=1)


def test_grad_through_psum_under_vmap():
    x = _rand((4, 3), seed=25)

    def loss(xs):
        # Each member's squared distance to the batch mean, summed.
        return jnp.sum(_vm(lambda v: (v - lax.psum(v, "i") / 4.0) ** 2)(xs))

    want = 2 * (x - x.mean(0))  # the mean's own derivative terms cancel
    np.testing.assert_allclose(morphax.grad(loss)(x), want, rtol=1e-5, atol=1e-6)
    # grad inside vmap: psum's transpose is psum, so each member's cotangent reaches every member.
    per_member = _vm(morphax.grad(lambda v: lax.psum(v, "i") ** 2))(x[:, 0])
    np.testing.assert_allclose(per_member, np.full(4, 4 * 2 * x[:, 0].sum()), rtol=1e-5)


def test_pmax_jvp_averages_ties():
    x = np.array([1.0, 3.0, 3.0], np.float32)
    t = np.array([10.0, 1.0, 2.0], np.float32)
    _, tan = _vm(lambda a, b: morphax.jvp(lambda u: lax.pmax(u, "i"), (a,), (b,)))(x, t)
    np.testing.assert_allclose(tan, [1.5, 1.5, 1.5])


def test_axis_index_has_no_tangent():
    g = _vm(morphax.grad(lambda v: v * lax.axis_index("i")))(np.ones(3, np.float32))
    np.testing.assert_array_equal(g, [0.0, 1.0, 2.0])


# ------------------------------------------------------------------------------------------------
# Errors.


def test_unbound_axis_name_outside_vmap():
    x = np.ones(3, np.float32)
    for f in (
        lambda: lax.psum(x, "i"),
        lambda: lax.pmax(x, "i"),
        lambda: lax.axis_index("i"),
        lambda: lax.all_gather(x, "i"),
        lambda: lax.pmean(x, "i"),
        lambda: lax.ppermute(x, "i", [(0, 1)]),
        lambda: lax.psum_scatter(x, "i"),
        lambda: lax.all_to_all(x, "i", 0, 0),
    ):
        with pytest.raises(NameError, match=r"unbound axis name: i\b.*vmap\(f, axis_name='i'\)"):
            f()
    with pytest.raises(NameError, match="unbound axis name: i"):
        morphax.jit(lambda v: lax.psum(v, "i"))(x)


def test_unknown_axis_name_inside_vmap():
    with pytest.raises(NameError, match="unbound axis name: k"):
        _vm(lambda v: lax.psum(v, "k"))(np.ones(3))
    with pytest.raises(NameError, match="unbound axis name: k"):
        _vm(lambda v: lax.psum(v, ("i", "k")))(np.ones(3))
    with pytest.raises(NameError, match="unbound axis name: k"):
        vmap(lambda v: lax.axis_index("k"))(np.ones(3))


def test_axis_index_groups_unsupported_under_vmap():
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        _vm(lambda v: lax.psum(v, "i", axis_index_groups=((0, 1), (2, 3))))(np.ones(4))


def test_bad_sizes():
    with pytest.raises(ValueError, match="tiled=False"):
        _vm(lambda v: lax.all_to_all(v, "i", 0, 0))(np.ones((3, 4)))
    with pytest.raises(ValueError, match="psum_scatter"):
        _vm(lambda v: lax.psum_scatter(v, "i"))(np.ones((3, 4)))
    with pytest.raises(TypeError, match="None is not an axis name"):
        vmap(lambda v: lax.psum(v, None))(np.ones(3))


def test_axis_size():
    got = vmap(
        vmap(lambda v: v * lax.axis_size(("i", "j")) + lax.axis_size("j"), axis_name="j"), axis_name="i"
    )(np.ones((2, 5)))
    np.testing.assert_array_equal(got, np.full((2, 5), 15.0))


def test_jit_retraces_under_a_different_axis_size():
    g = morphax.jit(lambda v: lax.all_gather(v, "i"))
    assert _vm(g)(np.ones((3, 2))).shape == (3, 3, 2)
    assert _vm(g)(np.ones((4, 2))).shape == (4, 4, 2)


def test_jit_cached_collective_reused_outside_its_axis_still_fails():
    g = morphax.jit(lambda v: lax.psum(v, "i"))
    np.testing.assert_array_equal(_vm(g)(np.ones(3, np.float32)), [3.0, 3.0, 3.0])
    with pytest.raises(NameError, match="unbound axis name: i"):
        np.asarray(vmap(g, axis_name="j")(np.ones(3, np.float32)))
