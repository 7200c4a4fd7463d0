"""Cases on 4 CPU devices (test_replicated_outputs.py runs them in a subprocess): pmap outputs
with out_axes=None that every device computes alike are computed by one device each
(runtime/replicated_outputs.py). Each case checks the values against NumPy or the same program
under vmap, and checks the plan: which device computes which output."""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.runtime import replicated_outputs

N = 4
# The cases' arrays are small: split whatever is alike (the default threshold is checked in
# case_small_outputs_are_not_split).
DEFAULT_MIN_SPLIT_BYTES = replicated_outputs.MIN_SPLIT_BYTES
replicated_outputs.MIN_SPLIT_BYTES = 0


def _rand(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


def _plan(f, *args, **kw):
    """The plan the pmap of `f` runs with on N devices."""
    closed = morphax.make_jaxpr(morphax.pmap(f, "i", **kw))(*args)
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "xla_pmap"]
    p = eqn.params
    return replicated_outputs.plan(p["jaxpr"], p["mesh_axes"], p["in_axes"], p["out_axes"], N)


def _same(a, b, tol=1e-5):
    la, lb = morphax.tree_util.tree_leaves(a), morphax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


def case_optimizer_step():
    """Data-parallel SGD with momentum over layers of different sizes: each layer's new weight
    and new velocity come from one device (they share the velocity update), the layers spread
    over the devices, and the results equal the same step under vmap."""
    sizes = [(40, 64), (64, 48), (48, 8), (8, 3)]
    params = [_rand(m, n, seed=k) for k, (m, n) in enumerate(sizes)]
    velocity = [_rand(m, n, seed=10 + k) for k, (m, n) in enumerate(sizes)]
    x, y = _rand(N, 5, 40, seed=20), _rand(N, 5, 3, seed=21)

    def loss(ws, x, y):
        for w in ws[:-1]:
            x = jnp.tanh(x @ w)
        return jnp.mean((x @ ws[-1] - y) ** 2)

    def step(ws, vs, x, y):
        value, grads = morphax.value_and_grad(loss)(ws, x, y)
        grads = lax.pmean(grads, "i")
        vs = [0.9 * v + g for v, g in zip(vs, grads)]
        ws = [w - 0.1 * v for w, v in zip(ws, vs)]
        return ws, vs, value

    axes = dict(in_axes=(None, None, 0, 0), out_axes=(None, None, 0))
    got = morphax.pmap(step, "i", **axes)(params, velocity, x, y)
    want = morphax.vmap(step, axis_name="i", **axes)(params, velocity, x, y)
    _same(got, want)
    # Against NumPy: the full-batch gradient (the mean of the devices' means).
    full = morphax.grad(lambda ws: sum(loss(ws, x[d], y[d]) for d in range(N)) / N)(params)
    for k in range(len(sizes)):
        v = 0.9 * velocity[k] + np.asarray(full[k])
        np.testing.assert_allclose(got[1][k], v, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got[0][k], params[k] - 0.1 * v, rtol=1e-4, atol=1e-5)

    plan = _plan(step, params, velocity, x, y, **axes)
    assert plan.split
    layers = len(sizes)
    for k in range(layers):  # outputs: the weights, then the velocities, then the losses
        assert plan.owner[k] == plan.owner[layers + k], plan.owner
    assert plan.owner[-1] is None  # the per-device losses are stacked from every device
    assert len({plan.owner[k] for k in range(layers)}) == N, plan.owner
    # The device with the largest layer computes nothing else.
    assert [plan.owner[k] for k in range(layers)].count(plan.owner[0]) == 1


def case_varying_output_comes_from_the_first_device():
    """An out_axes=None output that differs between devices is the first device's (as JAX), and
    stays with it; the alike ones go elsewhere."""
    x, w = _rand(N, 6), _rand(6, 300)

    def f(v, w):
        return 2 * v, lax.psum(v, "i") @ w, w + 1.0

    got = morphax.pmap(f, "i", in_axes=(0, None), out_axes=None)(x, w)
    np.testing.assert_allclose(got[0], 2 * x[0])
    np.testing.assert_allclose(got[1], x.sum(0) @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2], w + 1.0)
    plan = _plan(f, x, w, in_axes=(0, None), out_axes=None)
    assert plan.owner[0] == 0 and plan.split
    assert plan.owner[1] != plan.owner[2]


def case_collectives_stay_on_every_device():
    """Two psums of the same shape feed two outputs that different devices compute, and a psum in
    a cond feeds only a third, which the first device computes: every device still makes every collective call, in one order (a
    device that skipped one would wait for the others until the timeout; one that swapped the
    two same-shaped psums would mix their values)."""
    morphax.config.update("morphax_collective_timeout", 20.0)
    x, w = _rand(N, 200), _rand(200, seed=1)

    def f(v, w):
        a = lax.psum(v * w, "i")
        b = lax.psum(v + w, "i")
        c = lax.cond(w[0] > 0, lambda u: lax.psum(u, "i"), lambda u: lax.pmax(u, "i"), v[:3])
        return 2.0 * a, 3.0 * b, c

    got = morphax.pmap(f, "i", in_axes=(0, None), out_axes=None)(x, w)
    np.testing.assert_allclose(got[0], 2.0 * (x * w).sum(0), rtol=1e-5)
    np.testing.assert_allclose(got[1], 3.0 * (x + w).sum(0), rtol=1e-5)
    c = x[:, :3].sum(0) if w[0] > 0 else x[:, :3].max(0)
    np.testing.assert_allclose(got[2], c, rtol=1e-5)
    plan = _plan(f, x, w, in_axes=(0, None), out_axes=None)
    # The cond's result counts as varying (a collective in a body: conservative), so it is the
    # first device's; the devices that compute `b` or nothing still run the cond's collective.
    assert plan.owner[0] != plan.owner[1] and plan.owner[2] == 0, plan.owner
    # Under grad too (the transposed program's alike outputs are the unmapped inputs' cotangents).
    g = morphax.grad(lambda w: morphax.pmap(f, "i", in_axes=(0, None), out_axes=None)(x, w)[0].sum())(w)
    np.testing.assert_allclose(g, 2.0 * x.sum(0), rtol=1e-5)


def case_programs_with_effects_are_not_split():
    seen = []
    x, w = _rand(N, 3), _rand(3, 200)

    def f(v, w):
        morphax.debug.callback(lambda a: seen.append(np.asarray(a)), v)
        return lax.psum(v, "i") @ w, w * 2.0

    got = morphax.pmap(f, "i", in_axes=(0, None), out_axes=None)(x, w)
    morphax.effects_barrier()
    np.testing.assert_allclose(got[0], x.sum(0) @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], w * 2.0)
    assert len(seen) == N
    assert not _plan(f, x, w, in_axes=(0, None), out_axes=None).split


def case_shard_map_on_a_2x2_mesh():
    """shard_map's replicated outputs go through the same plan: a psum over both mesh axes is
    alike on every device and goes to one; a psum over one axis varies along the other (allowed
    with check_vma=False) and is the first device's, as JAX returns it."""
    from morphax.sharding import PartitionSpec as P

    mesh = morphax.make_mesh((2, 2), ("x", "y"))
    x, w = _rand(4, 300), _rand(300, seed=1)

    def f(v, w):
        return lax.psum(v, ("x", "y"))[0] * w, lax.psum(v, "x")[0], w - 1.0

    g = morphax.shard_map(f, mesh=mesh, in_specs=(P(("x", "y")), P()), out_specs=P(), check_vma=False)
    got = g(x, w)
    np.testing.assert_allclose(got[0], x.sum(0) * w, rtol=1e-5, atol=1e-5)
    # Device 0 holds rows 0 of the blocks along x at y = 0: rows 0 and 2 of x.
    np.testing.assert_allclose(got[1], x[0] + x[2], rtol=1e-5)
    np.testing.assert_allclose(got[2], w - 1.0)
    closed = morphax.make_jaxpr(g)(x, w)
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "xla_pmap"]
    p = eqn.params
    plan = replicated_outputs.plan(p["jaxpr"], p["mesh_axes"], p["in_axes"], p["out_axes"], N)
    assert plan.split and plan.owner[1] == 0 and plan.owner[0] != plan.owner[2], plan.owner


def case_sharded_jit_step():
    """jit on a batch split over a mesh (SPMD, runtime/spmd_runner.py) goes through the same
    plan: after the gradients' psum the new weights and velocities, replicated, are each computed
    by one device; the results equal the one-device step."""
    from morphax._src.sharding.spmd import spmd_stats
    from morphax.sharding import Mesh, NamedSharding
    from morphax.sharding import PartitionSpec as P

    sizes = [(40, 64), (64, 48), (48, 3)]
    params = [_rand(m, n, seed=k) for k, (m, n) in enumerate(sizes)]
    velocity = [_rand(m, n, seed=10 + k) for k, (m, n) in enumerate(sizes)]
    x, y = _rand(N * 5, 40, seed=20), _rand(N * 5, 3, seed=21)

    def loss(ws, x, y):
        for w in ws[:-1]:
            x = jnp.tanh(x @ w)
        return jnp.mean((x @ ws[-1] - y) ** 2)

    @morphax.jit
    def step(ws, vs, x, y):
        value, grads = morphax.value_and_grad(loss)(ws, x, y)
        vs = [0.9 * v + g for v, g in zip(vs, grads)]
        ws = [w - 0.1 * v for w, v in zip(ws, vs)]
        return ws, vs, value

    want = step(params, velocity, x, y)  # one device
    mesh = Mesh(np.array(morphax.devices()), ("batch",))
    rows = NamedSharding(mesh, P("batch"))
    spmd_stats.reset()
    got = step(params, velocity, morphax.device_put(x, rows), morphax.device_put(y, rows))
    _same(got, want, tol=1e-4)
    part = spmd_stats.last
    in_axes = [None] * (2 * len(sizes)) + [0, 0]
    plan = replicated_outputs.plan(part.closed, part.mesh_axes, in_axes, [None] * (2 * len(sizes) + 1), N)
    assert plan.split and len(set(plan.owner)) > 1, plan.owner


def case_small_outputs_are_not_split():
    """Alike outputs under MIN_SPLIT_BYTES in all stay on every device (no extra compilations);
    above it they are split."""
    small, large = _rand(8, 8), _rand(300, 300)

    def f(v, w):
        return lax.psum(v, "i")[0] * w

    replicated_outputs.MIN_SPLIT_BYTES = DEFAULT_MIN_SPLIT_BYTES
    try:
        x = _rand(N, 3)
        assert not _plan(f, x, small, in_axes=(0, None), out_axes=None).split
        plan = _plan(lambda v, w: (f(v, w), w + 1.0), x, large, in_axes=(0, None), out_axes=None)
        assert plan.split and plan.owner[0] != plan.owner[1]
    finally:
        replicated_outputs.MIN_SPLIT_BYTES = 0
