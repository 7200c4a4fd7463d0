"""shard_map cases run on 4 CPU devices in a subprocess (test_shard_map.py groups them). The oracle
is the same per-block program under nested vmaps with the mesh's axis names, on blocks cut and
assembled with NumPy, or a NumPy computation of the whole."""

from __future__ import annotations

from functools import partial

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.api.shard_map import shard_map_counters
from morphax.sharding import Mesh, NamedSharding
from morphax.sharding import PartitionSpec as P
from morphax.test_util import check_grads


def _mesh():
    return Mesh(np.array(morphax.devices()).reshape(2, 2), ("x", "y"))


def _rand(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


def _close(a, b, tol=1e-5):
    la, lb = morphax.tree_util.tree_leaves(a), morphax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, x.dtype, y.shape, y.dtype)
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


def _oracle(f, x):
    """f on the blocks of x (split P('x', 'y') over a 2x2 mesh) under vmap(vmap) with the mesh's
    axis names, each output assembled P('x', 'y')."""
    r, c = x.shape
    blocks = jnp.asarray(x).reshape(2, r // 2, 2, c // 2).transpose(0, 2, 1, 3)
    outs = morphax.vmap(morphax.vmap(f, axis_name="y"), axis_name="x")(blocks)

    def assemble(o):  # (2, 2, *block) -> blocks placed along dims 0 and 1
        o = o.reshape(o.shape[:2] + (1,) * max(0, 2 - (o.ndim - 2)) + o.shape[2:]) if o.ndim < 4 else o
        return o.transpose(0, 2, 1, 3, *range(4, o.ndim)).reshape(
            2 * o.shape[2], 2 * o.shape[3], *o.shape[4:]
        )

    return morphax.tree_util.tree_map(assemble, outs)


def case_collectives_on_a_2x2_mesh():
    mesh = _mesh()
    x = _rand(4, 8)

    def f(b):  # b: (2, 4) block
        return dict(
            sx=lax.psum(b, "x"),
            sy=lax.pmax(b, "y"),
            sxy=lax.psum(b, ("x", "y")) - lax.pmin(b, ("y", "x")),
            gx=lax.all_gather(b, "x", axis=1, tiled=True)[:, :4],
            px=lax.ppermute(b, "x", [(0, 1), (1, 0)]) * lax.ppermute(b, "y", [(0, 1)]),
            ix=b + lax.axis_index("x") * 10 + lax.axis_index("y"),
            sc=lax.psum_scatter(b, "y", scatter_dimension=1, tiled=True).repeat(2, axis=1),
            a2a=lax.all_to_all(b, "x", 0, 0, tiled=True),
            mean=lax.pmean(b, "x") * lax.axis_size("y"),
        )

    out = morphax.shard_map(f, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))(x)
    _close(out, _oracle(f, x))
    # A known answer: the sum over y of the blocks is the sum of the two column halves.
    g = morphax.shard_map(lambda b: lax.psum(b, "y"), mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", None))
    np.testing.assert_allclose(g(x), x[:, :4] + x[:, 4:], rtol=1e-6)


def case_specs_and_meshes():
    mesh = _mesh()
    x, w = _rand(8, 6, seed=1), _rand(6, 4, seed=2)
    # A dimension split over both axes; a replicated argument; outputs replicated along axes.
    f = morphax.shard_map(
        lambda a, b: (a @ b, lax.psum(a.sum(0), ("x", "y"))),
        mesh=mesh,
        in_specs=(P(("x", "y")), P()),
        out_specs=(P(("x", "y")), P()),
    )
    y, s = f(x, w)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)
    np.testing.assert_allclose(s, x.sum(0), rtol=1e-5)
    # Contracting dimension split: partial products meet in psum (the sharded-matmul pattern).
    mm = morphax.shard_map(
        lambda a, b: lax.psum(a @ b, "y"), mesh=mesh, in_specs=(P("x", "y"), P("y", None)), out_specs=P("x")
    )
    np.testing.assert_allclose(mm(x, w), x @ w, rtol=1e-5)
    # Split along dimension 1 over x only (replicated along y), assembled along dimension 1.
    h = morphax.shard_map(lambda a: a * 2, mesh=mesh, in_specs=P(None, "x"), out_specs=P(None, "x"))
    np.testing.assert_allclose(h(x), 2 * x)
    # A 1-D mesh, pytrees, the decorator form and the experimental signature.
    mesh1 = Mesh(np.array(morphax.devices()), ("i",))

    @partial(morphax.shard_map, mesh=mesh1, in_specs=({"a": P("i")},), out_specs=P("i"))
    def g(d):
        return d["a"] - lax.pmean(d["a"], "i")

    np.testing.assert_allclose(
        g({"a": x}),
        x - x.reshape(4, 2, 6).mean(0).repeat(1, 0).reshape(1, 2, 6).repeat(4, 0).reshape(8, 6),
        rtol=1e-5,
        atol=1e-6,
    )
    from morphax.experimental.shard_map import shard_map as old

    np.testing.assert_allclose(old(lambda a: a + 1, mesh1, P("i"), P("i"))(x), x + 1)
    # Only some axes manual: the function sees blocks along them only.
    k = morphax.shard_map(
        lambda a: lax.psum(a, "x"), mesh=mesh, in_specs=P("x"), out_specs=P(), axis_names={"x"}
    )
    np.testing.assert_allclose(k(x), x[:4] + x[4:], rtol=1e-6)
    # The mesh of set_mesh, and in_specs inferred from an argument sharded over the mesh.
    xs = morphax.device_put(x, NamedSharding(mesh, P("x", "y")))
    with morphax.sharding.set_mesh(mesh):
        out = morphax.shard_map(lambda a: lax.psum(a, "y"), out_specs=P("x"))(xs)
    np.testing.assert_allclose(out, x[:, :3] + x[:, 3:], rtol=1e-6)


def case_jit_grad_vmap_and_cache():
    mesh = _mesh()
    x = _rand(4, 8, seed=3)

    def f(b):
        return jnp.sin(b) * lax.psum(b, "y") + lax.ppermute(b, "x", [(0, 1), (1, 0)]) ** 2

    sm = morphax.shard_map(f, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))
    _close(morphax.jit(sm)(x), _oracle(f, x))
    gs = morphax.grad(lambda v: (sm(v) ** 2).sum())(x)
    go = morphax.grad(lambda v: (_oracle(f, v) ** 2).sum())(x)
    _close(gs, go, 1e-4)
    _close(
        morphax.jit(morphax.grad(lambda v: sm(v).sum()))(x),
        morphax.grad(lambda v: _oracle(f, v).sum())(x),
        1e-4,
    )
    check_grads(sm, (x,), order=2, modes=("fwd", "rev"))
    # grad inside: each device differentiates its block's loss; gradients meet in psum.
    loss = lambda w, b: (jnp.tanh(b @ w) ** 2).sum()  # noqa: E731
    w = _rand(4, 3, seed=4)
    dp = morphax.shard_map(
        lambda w, b: lax.psum(morphax.grad(loss)(w, b), ("x", "y")),
        mesh=mesh,
        in_specs=(P(), P(("x", "y"))),
        out_specs=P(),
    )
    data = _rand(8, 4, seed=5)
    np.testing.assert_allclose(dp(w, data), morphax.grad(loss)(w, data), rtol=1e-4, atol=1e-5)
    # vmap of shard_map.
    xs = np.stack([x, 2 * x])
    _close(morphax.vmap(sm)(xs), morphax.vmap(lambda v: _oracle(f, v))(xs), 1e-5)
    # Repeated calls reuse the trace.
    sm(x)
    traces = shard_map_counters.traces
    sm(x + 1)
    morphax.jit(sm)(x)
    morphax.shard_map(f, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))(x)  # made anew
    assert shard_map_counters.traces == traces
    morphax.shard_map(f, mesh=mesh, in_specs=P("x", "y"), out_specs=P(("x", "y")), check_vma=False)(x)
    assert shard_map_counters.traces == traces + 1


def case_errors():
    mesh = _mesh()
    x = _rand(4, 6)

    def raises(exc, match, fn, *args):
        try:
            fn(*args)
        except exc as e:
            assert match in str(e), str(e)
            return
        raise AssertionError(f"no {exc.__name__} raised")

    sm = partial(morphax.shard_map, mesh=mesh, out_specs=P())
    raises(ValueError, "in_specs refers to 'z'", sm(lambda a: a, in_specs=P("z")), x)
    raises(ValueError, "which has length 3", sm(lambda a: a, in_specs=P("x", "y", None)), x)
    raises(ValueError, "4 does not evenly divide 6", sm(lambda a: a, in_specs=P(None, ("x", "y"))), x)
    raises(ValueError, "duplicate entries for `x`", sm(lambda a: a, in_specs=P("x", "x")), x)
    raises(ValueError, "possibly varying over ['x']", sm(lambda a: a, in_specs=P("x")), x)
    # The check follows jit calls: a psum inside one makes the result invariant.
    out = sm(morphax.jit(lambda a: lax.psum(a, "x")), in_specs=P("x"))(x)
    np.testing.assert_allclose(out, x[:2] + x[2:], rtol=1e-6)
    # check_vma=False: the first device's value along axes the out spec leaves out.
    out = morphax.shard_map(lambda a: a, mesh=mesh, in_specs=P("x"), out_specs=P(), check_vma=False)(x)
    np.testing.assert_allclose(out, x[:2])
    raises(
        ValueError,
        "out_specs refers to 'z'",
        morphax.shard_map(lambda a: a, mesh=mesh, in_specs=P(), out_specs=P("z")),
        x,
    )
    raises(ValueError, "no mesh", morphax.shard_map(lambda a: a, in_specs=P(), out_specs=P()), x)


def case_smap_over_one_axis():
    # JAX 0.10.2 (4 devices, mesh ('x',)): jit(smap(x * axis_index('x'))) of arange(8.) is
    # [0, 0, 2, 3, 8, 10, 18, 21].
    mesh = morphax.make_mesh((4,), ("x",))
    with morphax.set_mesh(mesh):
        f = morphax.smap(lambda x: x * morphax.lax.axis_index("x"), in_axes=0, out_axes=0, axis_name="x")
        x = jnp.arange(8.0)
        want = np.array([0, 0, 2, 3, 8, 10, 18, 21], np.float32)
        _close(morphax.jit(f)(x), want)
        _close(f(x), want)
        g = morphax.smap(lambda x, y: x + y.sum(), in_axes=(0, None), out_axes=0, axis_name="x")
        _close(g(x, jnp.ones(3)), np.arange(8, dtype=np.float32) + 3)
        h = morphax.smap(lambda x: morphax.lax.psum(x, "x"), in_axes=1, out_axes=1, axis_name="x")
        m = np.arange(8, dtype=np.float32).reshape(2, 4)
        _close(h(m), np.repeat(m.sum(1, keepdims=True), 4, 1))


def case_result_shardings():
    # JAX 0.10.2: a shard_map's results are laid out as out_specs say, eagerly and under jit:
    # `.sharding` is NamedSharding(mesh, spec), P() for a replicated result; each device's shard
    # is its block of the whole.
    mesh = _mesh()
    x = _rand(8, 6, seed=5)
    cases = [
        (P("x"), P("x"), lambda a: a * 2, 2 * x),
        (P("x", "y"), P("x", "y"), lambda a: a + 1, x + 1),
        (P(("x", "y")), P(("x", "y")), lambda a: -a, -x),
        (P(None, "y"), P(None, "y"), lambda a: a * a, x * x),
        (P("x"), P(), lambda a: lax.psum(a, "x"), x[:4] + x[4:]),
    ]
    for in_spec, out_spec, body, want in cases:
        f = morphax.shard_map(body, mesh=mesh, in_specs=in_spec, out_specs=out_spec)
        for run in (f, morphax.jit(f)):
            y = run(x)
            assert y.sharding == NamedSharding(mesh, out_spec), (out_spec, y.sharding)
            np.testing.assert_allclose(np.asarray(y), want, rtol=1e-5, atol=1e-6)
            for shard in y.addressable_shards:
                np.testing.assert_allclose(np.asarray(shard.data), want[shard.index], rtol=1e-5, atol=1e-6)
    # Pytree outputs each get their own spec; in_specs inferred from such a result keep it.
    g = morphax.shard_map(
        lambda a: {"s": a.sum(0), "a": a}, mesh=mesh, in_specs=P("x"), out_specs={"s": P("x"), "a": P("x")}
    )
    out = g(x)
    assert out["a"].sharding == NamedSharding(mesh, P("x")) and out["s"].sharding == NamedSharding(
        mesh, P("x")
    )
    with morphax.sharding.set_mesh(mesh):
        again = morphax.shard_map(lambda a: a * 3, out_specs=P("x"))(out["a"])
    assert again.sharding == NamedSharding(mesh, P("x"))
    np.testing.assert_allclose(np.asarray(again), 3 * x, rtol=1e-6)
