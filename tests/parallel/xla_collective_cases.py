"""pmap on the xla backend over 4 CPU devices (run in a subprocess by test_xla_collectives.py): the
per-device program is one StableHLO module of 4 replicas whose collectives are cross-replica
operations. Each case checks that path was taken (pmap_runner.stats) and compares with the same
program under vmap with the same axis name and with NumPy."""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.runtime import pmap_runner

N = 4


def _replicated(f, *args, **kw):
    """pmap(f, backend="xla") on `args`, checked to run as one replicated program, and compared
    with vmap(f) under the same axis name."""
    before = pmap_runner.stats["replicated"]
    got = morphax.pmap(f, "i", backend="xla", **kw)(*args)
    assert pmap_runner.stats["replicated"] == before + 1, "not run as one replicated program"
    want = morphax.vmap(f, axis_name="i", **kw)(*args)
    for g, w in zip(morphax.tree_util.tree_leaves(got), morphax.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    return got


def case_every_collective():
    x = np.arange(N * 6, dtype=np.float32).reshape(N, 6) - 7.5
    s, mx, mn, idx = _replicated(
        lambda v: (lax.psum(v, "i"), lax.pmax(v, "i"), lax.pmin(v, "i"), lax.axis_index("i")), x
    )
    np.testing.assert_array_equal(np.asarray(s), np.broadcast_to(x.sum(0), x.shape))
    np.testing.assert_array_equal(np.asarray(mx), np.broadcast_to(x.max(0), x.shape))
    np.testing.assert_array_equal(np.asarray(idx), np.arange(N, dtype=np.int32))
    gathered, tiled = _replicated(
        lambda v: (lax.all_gather(v, "i"), lax.all_gather(v, "i", axis=0, tiled=True)), x
    )
    np.testing.assert_array_equal(np.asarray(gathered)[2], x)
    np.testing.assert_array_equal(np.asarray(tiled)[1], x.reshape(-1))
    y = np.arange(N * N * 2, dtype=np.float32).reshape(N, N, 2)
    scattered, scattered_tiled = _replicated(
        lambda v: (lax.psum_scatter(v, "i"), lax.psum_scatter(v, "i", scatter_dimension=0, tiled=True)), y
    )
    np.testing.assert_array_equal(np.asarray(scattered), y.sum(0))
    shifted = _replicated(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 3)]), x)
    np.testing.assert_array_equal(np.asarray(shifted), np.concatenate([np.zeros((1, 6), np.float32), x[:3]]))
    _replicated(lambda v: lax.all_to_all(v, "i", 0, 1), y)
    _replicated(lambda v: lax.pmean(v, "i"), x)


def case_integer_and_bool_operands():
    k = np.arange(N * 3, dtype=np.int32).reshape(N, 3) * 7 - 20
    total, top = _replicated(lambda v: (lax.psum(v, "i"), lax.pmax(v, "i")), k)
    np.testing.assert_array_equal(np.asarray(total)[0], k.sum(0))
    flags = np.array([[True, False], [False, False], [False, True], [False, False]])
    any_, all_ = _replicated(lambda v: (lax.pmax(v, "i"), lax.pmin(v, "i")), flags)
    np.testing.assert_array_equal(np.asarray(any_)[0], flags.any(0))
    np.testing.assert_array_equal(np.asarray(all_)[0], flags.all(0))


def case_axis_index_groups():
    x = np.arange(N * 2, dtype=np.float32).reshape(N, 2)
    got = morphax.pmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 2], [1, 3]]), "i", backend="xla")(x)
    want = np.stack([x[0] + x[2], x[1] + x[3], x[0] + x[2], x[1] + x[3]])
    np.testing.assert_array_equal(np.asarray(got), want)


def case_a_2d_mesh_numbers_replicas_row_major():
    """shard_map over a 2 x 2 mesh (on the default backend, set to xla here): one module of 4
    replicas whose groups for "i" and "j" are the mesh's columns and rows."""
    from morphax.sharding import Mesh
    from morphax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(morphax.devices()[:4]).reshape(2, 2), ("i", "j"))
    x = np.arange(2 * 2 * 3, dtype=np.float32).reshape(2, 2, 3)

    def f(v):
        ids = lax.axis_index("i") * 10 + lax.axis_index("j")
        return lax.psum(v, "i"), lax.psum(v, "j"), jnp.full((1, 1, 1), ids)

    spec = P("i", "j")
    g = morphax.shard_map(f, mesh=mesh, in_specs=spec, out_specs=(spec, spec, spec))
    before = pmap_runner.stats["replicated"]
    saved = morphax.config.morphax_backend
    morphax.config.update("morphax_backend", "xla")
    try:
        a, b, ids = g(x)
    finally:
        morphax.config.update("morphax_backend", saved)
    assert pmap_runner.stats["replicated"] == before + 1
    np.testing.assert_array_equal(np.asarray(a), np.broadcast_to(x.sum(0, keepdims=True), x.shape))
    np.testing.assert_array_equal(np.asarray(b), np.broadcast_to(x.sum(1, keepdims=True), x.shape))
    np.testing.assert_array_equal(np.asarray(ids)[..., 0], [[0, 1], [10, 11]])


def case_gradients_and_a_training_step():
    rng = np.random.RandomState(0)
    w = rng.randn(5, 3).astype(np.float32)
    xs = rng.randn(N, 8, 5).astype(np.float32)
    ys = rng.randn(N, 8, 3).astype(np.float32)

    def step(w, x, y):
        loss, g = morphax.value_and_grad(lambda w: jnp.mean((jnp.tanh(x @ w) - y) ** 2))(w)
        g = lax.pmean(g, "i")
        return w - 0.1 * g, lax.pmean(loss, "i")

    new_w, loss = _replicated(step, w, xs, ys, in_axes=(None, 0, 0))
    # NumPy's check of the averaged loss.
    losses = [np.mean((np.tanh(xs[k] @ w) - ys[k]) ** 2) for k in range(N)]
    np.testing.assert_allclose(np.asarray(loss), np.full(N, np.mean(losses)), rtol=1e-5)
    assert np.allclose(np.asarray(new_w)[0], np.asarray(new_w)[3])


def case_control_flow_with_collectives():
    x = np.arange(N * 3, dtype=np.float32).reshape(N, 3)

    def f(v):
        def body(c, _):
            return c + lax.psum(c, "i") * 0.01, lax.axis_index("i")

        out, ks = lax.scan(body, v, None, length=3)
        return lax.cond(lax.axis_index("i") % 2 == 0, lambda: out, lambda: -out), ks

    _replicated(f, x)


def case_a_callback_falls_back_to_the_host_collectives():
    seen = []
    x = np.arange(N, dtype=np.float32)

    def f(v):
        morphax.debug.callback(lambda a: seen.append(float(a)), v)
        return lax.psum(v, "i")

    before = pmap_runner.stats["replicated"]
    out = morphax.pmap(f, "i", backend="xla")(x)
    morphax.effects_barrier()
    np.testing.assert_array_equal(np.asarray(out), np.full(N, x.sum()))
    assert pmap_runner.stats["replicated"] == before and sorted(seen) == x.tolist()
