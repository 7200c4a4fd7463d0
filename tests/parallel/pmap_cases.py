"""pmap cases run on 4 CPU devices in a subprocess (test_pmap.py groups them). Each compares pmap
with the same program under vmap with the same axis name, the oracle, or checks an error."""

from __future__ import annotations

import threading
from functools import partial

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.api.pmap import pmap_counters
from morphax._src.compiler.compile import counters as compile_counters
from morphax.test_util import check_grads

N = 4


def _close(a, b, tol=1e-5):
    la, lb = morphax.tree_util.tree_leaves(a), morphax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, x.dtype, y.shape, y.dtype)
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


def _both(f, *args, **kw):
    """pmap(f) and vmap(f) on the same arguments, compared; returns the pmap result."""
    p = morphax.pmap(f, "i", **kw)(*args)
    v = morphax.vmap(f, axis_name="i", **kw)(*args)
    _close(p, v)
    return p


def _rand(*shape, seed=0, dtype=np.float32):
    return np.random.RandomState(seed).randn(*shape).astype(dtype)


# ------------------------------------------------------------------------------------------------


def case_collectives():
    x = _rand(N, 3, N * 2)

    def f(v):
        return dict(
            psum=lax.psum(v, "i"),
            pmean=lax.pmean(v, "i"),
            pmax=lax.pmax(v, "i"),
            pmin=lax.pmin(v, "i"),
            gather=lax.all_gather(v, "i"),
            gather_ax=lax.all_gather(v, "i", axis=1),
            gather_tiled=lax.all_gather(v, "i", axis=1, tiled=True),
            shift=lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 3)]),  # device 0 receives zeros
            ring=lax.ppermute(v, "i", [(j, (j + 1) % N) for j in range(N)]),
            a2a=lax.all_to_all(v[:, :N], "i", 1, 0),
            a2a_tiled=lax.all_to_all(v, "i", 1, 0, tiled=True),
            scatter=lax.psum_scatter(v[:, :N], "i", scatter_dimension=1),
            scatter_tiled=lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True),
            index=lax.axis_index("i"),
            size=lax.psum(1, "i"),
            tree=lax.psum((v, 2 * v), "i"),
        )

    out = _both(f, x)
    np.testing.assert_allclose(out["psum"][2], x.sum(0), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(out["index"]), np.arange(N, dtype=np.int32))
    np.testing.assert_array_equal(np.asarray(out["shift"])[0], 0)
    # Integers and bools (psum counts bools as int32), and float64.
    _both(
        lambda v: (lax.psum(v, "i"), lax.pmax(v, "i"), lax.psum(v > 2, "i")), np.arange(N * 2).reshape(N, 2)
    )
    with morphax.enable_x64():
        out = _both(lambda v: lax.psum(v, "i") * v, _rand(N, 2).astype(np.float64))
        assert out.dtype == np.float64


def case_axis_index_groups():
    x = _rand(N, 3)
    groups = [[0, 1], [2, 3]]
    out = morphax.pmap(lambda v: lax.psum(v, "i", axis_index_groups=groups), "i")(x)
    want = np.concatenate([np.broadcast_to(x[:2].sum(0), (2, 3)), np.broadcast_to(x[2:].sum(0), (2, 3))])
    np.testing.assert_allclose(out, want, rtol=1e-5)
    out = morphax.pmap(lambda v: lax.all_gather(v, "i", axis_index_groups=[[0, 2], [1, 3]]), "i")(x)
    np.testing.assert_allclose(out[1], x[[1, 3]], rtol=1e-6)


def case_axes_and_arguments():
    x, y = _rand(3, N, seed=1), _rand(N, 2, seed=2)
    # in_axes per argument (None broadcasts), out_axes, pytrees, keyword arguments (mapped at 0).
    f = lambda a, b, c: (a * lax.psum(b.sum(), "i") + c, {"b": b})  # noqa: E731
    _both(f, x, y, np.float32(3), in_axes=(1, 0, None), out_axes=(1, 0))
    _both(
        lambda a, s: {k: v * s for k, v in a.items()},
        {"u": x.T, "w": y},
        2.0,
        in_axes=({"u": 0, "w": 0}, None),
    )
    out = morphax.pmap(lambda a, *, k: a + k, "i")(y, k=y)
    np.testing.assert_allclose(out, 2 * y)
    # Negative axes, out_axes=None for a value every device computes alike.
    out, same = morphax.pmap(lambda a: (a, lax.psum(a, "i")), "i", in_axes=-1, out_axes=(-1, None))(x)
    np.testing.assert_allclose(out, x)
    np.testing.assert_allclose(same, x.sum(1), rtol=1e-5)
    # static_broadcasted_argnums: a Python value the program is traced with.
    g = morphax.pmap(lambda a, n, b: a * n + b, "i", static_broadcasted_argnums=(1,))
    np.testing.assert_allclose(g(y, 3, y), 4 * y, rtol=1e-6)
    # Fewer entries than devices, and devices= choosing them.
    _both(lambda a: lax.psum(a, "i"), y[:2])
    devs = morphax.devices()[2:]
    out = morphax.pmap(lambda a: lax.psum(a, "i") + lax.axis_index("i"), "i", devices=devs)(y[:2])
    np.testing.assert_allclose(out, y[:2].sum(0) + np.arange(2.0)[:, None], rtol=1e-6)
    # axis_size given and matching, and no axis name.
    np.testing.assert_allclose(morphax.pmap(jnp.sin, axis_size=N)(y), np.sin(y), rtol=1e-6)


def case_grads():
    x, w = _rand(N, 3, seed=3), _rand(3, 2, seed=4)

    def loss(w, x):  # data parallel: w broadcast, x split
        h = jnp.tanh(x @ w)
        return lax.pmean((h**2).sum(), "i")

    # grad inside pmap: each device differentiates, the gradients meet in pmean.
    gp = morphax.pmap(morphax.grad(loss), "i", in_axes=(None, 0))(w, x)
    gv = morphax.vmap(morphax.grad(loss), axis_name="i", in_axes=(None, 0))(w, x)
    _close(gp, gv)

    # grad of pmap, with respect to a broadcast and a mapped input.
    def outer(w, x, mapper):
        return mapper(lambda w, x: jnp.sin(x @ w) * lax.psum(x, "i").sum(), in_axes=(None, 0))(w, x).sum()

    p = morphax.grad(outer, argnums=(0, 1))(w, x, partial(morphax.pmap, axis_name="i"))
    v = morphax.grad(outer, argnums=(0, 1))(w, x, partial(morphax.vmap, axis_name="i"))
    _close(p, v, 1e-4)

    # Every collective differentiates like its vmap counterpart.
    def coll(v):
        return (
            lax.pmax(v, "i") * 2 + lax.pmin(v, "i"),
            lax.all_gather(v, "i").sum(0) * v,
            lax.ppermute(v, "i", [(j, (j + 1) % N) for j in range(N)]) * v,
            lax.all_to_all(v, "i", 0, 0, tiled=True),
            lax.psum_scatter(v, "i", scatter_dimension=0, tiled=True),
        )

    y = _rand(N, N * 2, seed=5)

    def total(mapper, v):
        return sum((o**2).sum() for o in mapper(coll, axis_name="i")(v))

    _close(morphax.grad(partial(total, morphax.pmap))(y), morphax.grad(partial(total, morphax.vmap))(y), 1e-4)

    # An output every device computes alike (out_axes=None) differentiates like vmap's.
    def shared(mapper, v):
        a, s = mapper(lambda a: (jnp.sin(a), lax.psum(a**2, "i")), axis_name="i", out_axes=(0, None))(v)
        return a.sum() + (s * jnp.arange(3.0)).sum()

    _close(
        morphax.grad(partial(shared, morphax.pmap))(x), morphax.grad(partial(shared, morphax.vmap))(x), 1e-4
    )
    # Against finite differences, forward and reverse, to second order.
    f = morphax.pmap(lambda a, b: jnp.sin(a) * lax.psum(b * a, "i"), "i")
    check_grads(f, (_rand(N, 2, seed=6), _rand(N, 2, seed=7)), order=2, modes=("fwd", "rev"))
    # jvp and value_and_grad.
    t = np.ones((N, 2), np.float32)
    pp, pt = morphax.jvp(morphax.pmap(lambda a: lax.psum(a**2, "i"), "i"), (x[:, :2],), (t,))
    vp, vt = morphax.jvp(morphax.vmap(lambda a: lax.psum(a**2, "i"), axis_name="i"), (x[:, :2],), (t,))
    _close((pp, pt), (vp, vt))


def case_nesting_and_jit():
    x = _rand(N, 3, 2, seed=8)

    def body(v):  # v: (2,) on each (device, vmapped entry)
        return lax.psum(v, "i") * lax.psum(v, "j") + lax.psum(v, ("i", "j")) + lax.axis_index("j")

    # pmap(vmap(...)) with collectives over both names, against vmap(vmap(...)).
    p = morphax.pmap(morphax.vmap(body, axis_name="j"), "i")(x)
    v = morphax.vmap(morphax.vmap(body, axis_name="j"), axis_name="i")(x)
    _close(p, v)
    # vmap(pmap(...)): the vmapped axis outside, pmap's inside, in_axes/out_axes moved around.
    p = morphax.vmap(morphax.pmap(body, "i", out_axes=1), axis_name="j", in_axes=1)(x)
    v = morphax.vmap(morphax.vmap(body, axis_name="i", out_axes=1), axis_name="j", in_axes=1)(x)
    _close(p, v)
    p = morphax.vmap(morphax.pmap(lambda a, b: lax.psum(a * b, "i"), "i"), in_axes=(None, 0))(
        x[:, 0], x.transpose(1, 0, 2)
    )
    assert p.shape == (3, N, 2)
    # jit of pmap, pmap of jit, jit of grad of pmap.
    f = lambda v: jnp.cos(v) * lax.psum(v, "i")  # noqa: E731
    _close(morphax.jit(morphax.pmap(f, "i"))(x), morphax.vmap(f, axis_name="i")(x))
    _close(morphax.pmap(morphax.jit(f), "i")(x), morphax.vmap(f, axis_name="i")(x))
    g = morphax.jit(morphax.grad(lambda v: morphax.pmap(f, "i")(v).sum()))
    _close(g(x), morphax.grad(lambda v: morphax.vmap(f, axis_name="i")(v).sum())(x), 1e-4)

    # Control flow with collectives inside the per-device program.
    def loop(v):
        return lax.fori_loop(0, 3, lambda k, c: c + lax.psum(c, "i") * 0.1, v)

    _both(loop, x)
    # (A predicate every device agrees on: a collective inside a branch some devices skip would
    # wait for them, as on any SPMD system, and fail after the communicator's timeout.)
    _both(lambda v: lax.cond(lax.psum(v.sum(), "i") > 0, lambda: lax.pmax(v, "i"), lambda: v * 2), x[:, 0])
    _both(lambda v: lax.cond(lax.axis_index("i") % 2 == 0, lambda: v * 2, lambda: -v), x[:, 0])


def case_output_sharding():
    x = _rand(2, 3)
    y = morphax.pmap(lambda v: v * 2, "i", out_axes=1)(x)
    assert y.sharding.spec == morphax.sharding.PartitionSpec(None, "i"), y.sharding
    assert y.sharding.mesh.axis_names == ("i",) and y.sharding.mesh.devices.tolist() == morphax.devices()[:2]
    y = morphax.pmap(lambda v: v * 2)(x)
    assert y.sharding.spec == morphax.sharding.PartitionSpec("_internal_pmap_axis_name")
    assert [s.data.shape for s in y.addressable_shards] == [(1, 3), (1, 3)]
    np.testing.assert_allclose(y + 1, 2 * x + 1)


def case_trace_and_compile_cache():
    x = _rand(N, 3)
    f = morphax.pmap(lambda v: v * lax.psum(v, "i"), "i")
    f(x)
    traces, compiles = pmap_counters.traces, compile_counters.compiles
    for _ in range(3):
        f(x + 1)
    assert pmap_counters.traces == traces, "a repeated call retraced"
    assert compile_counters.compiles == compiles, "a repeated call recompiled"
    f(x[:2])  # another axis size: one new trace
    assert pmap_counters.traces == traces + 1
    # A new pmap of the same function (inline in a loop) reuses the trace; other settings do not.
    body = f.__wrapped__
    morphax.pmap(body, "i")(x)
    assert pmap_counters.traces == traces + 1
    morphax.pmap(body, "i", out_axes=1)(x)
    assert pmap_counters.traces == traces + 2
    g = morphax.jit(morphax.grad(lambda v: f(v).sum()))
    g(x)
    traces, compiles = pmap_counters.traces, compile_counters.compiles
    g(x * 2)
    assert (pmap_counters.traces, compile_counters.compiles) == (traces, compiles)


def case_errors():
    x = _rand(N + 1, 2)

    def raises(exc, match, fn, *args):
        try:
            fn(*args)
        except exc as e:
            assert match in str(e), str(e)
            return
        raise AssertionError(f"no {exc.__name__} raised")

    ident = morphax.pmap(lambda v: v)
    raises(ValueError, "requires 5 logical devices, but only 4", ident, x)
    raises(ValueError, "inconsistent sizes", morphax.pmap(lambda a, b: a + b), x[:2], x[:3])
    raises(ValueError, "at least one argument with a mapped axis", morphax.pmap(lambda a: a, in_axes=None), x)
    raises(
        ValueError,
        "axis_size 3 doesn't match received axis_size 2",
        morphax.pmap(lambda a: a, axis_size=3),
        x[:2],
    )
    raises(ValueError, "devices= lists 2", morphax.pmap(lambda a: a, devices=morphax.devices()[:2]), x[:3])
    raises(ValueError, "rank should be at least 3", morphax.pmap(lambda a: a, in_axes=2), x)
    raises(
        ValueError,
        "only 1 positional argument",
        morphax.pmap(lambda a, b: a, static_broadcasted_argnums=1),
        x,
    )
    raises(TypeError, "in_axes must be an int", lambda: morphax.pmap(lambda a: a, in_axes=1.5))
    raises(ValueError, "pmaps do not nest", morphax.pmap(morphax.pmap(lambda a: a, "j"), "i"), x[:2, None])
    raises(NameError, "unbound axis name: j", morphax.pmap(lambda a: lax.psum(a, "j"), "i"), x[:2])

    # A device that fails stops the others at their next collective instead of hanging them.
    def cb(v):
        if int(v[0]) == 2:
            raise RuntimeError("device 2 gave up")
        return v

    def body(v):
        v = morphax.pure_callback(cb, morphax.ShapeDtypeStruct(v.shape, v.dtype), v)
        return lax.psum(v, "i")

    raises(
        RuntimeError,
        "device 2 gave up",
        morphax.pmap(body, "i"),
        np.arange(8.0, dtype=np.float32).reshape(4, 2),
    )


def case_pmaps_from_several_threads():
    # Launches from two threads interleave on the streams in one order, so neither waits at a
    # collective for work queued behind the other's.
    f = morphax.pmap(lambda v: lax.psum(v, "i") * lax.axis_index("i"), "i")
    errors, done = [], []

    def worker(seed):
        try:
            x = _rand(N, 8, seed=seed)
            for _ in range(15):
                np.testing.assert_allclose(f(x), x.sum(0) * np.arange(N)[:, None], rtol=1e-5)
            done.append(seed)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert sorted(done) == [0, 1, 2]


def case_jit_of_pmap_between_eager_pmaps():
    # A jitted program containing a pmap launches its devices' work at the call, in order with
    # eager pmaps launched around it (queued for later, it would launch behind them on some
    # streams and ahead on others, and both would wait at their collectives).
    f = morphax.pmap(lambda v: lax.psum(v, "i"), "i")
    g = morphax.jit(lambda v: f(jnp.sin(v)) * 2)
    x = _rand(N, 64, seed=9)
    morphax.config.update("morphax_collective_timeout", 20.0)
    try:
        outs = []
        for _ in range(5):
            outs += [g(x), f(x)]
        for k, o in enumerate(outs):
            want = 2 * np.sin(x).sum(0) if k % 2 == 0 else x.sum(0)
            np.testing.assert_allclose(np.asarray(o), np.broadcast_to(want, x.shape), rtol=1e-5, atol=1e-5)
    finally:
        morphax.config.update("morphax_collective_timeout", 60.0)


def case_devices_run_concurrently():
    # Each device's program enters a host callback, marks itself inside, and waits (bounded) for
    # the other device to be inside too: both see each other only if the two streams run at
    # the same time. Decided by events, not by timing.
    inside = [threading.Event(), threading.Event()]
    saw_other = [False, False]
    threads = [None, None]

    def cb(i):
        i = int(i)
        threads[i] = threading.current_thread().name
        inside[i].set()
        saw_other[i] = inside[1 - i].wait(timeout=30)
        return np.int32(i)

    def body(i):
        return morphax.pure_callback(cb, morphax.ShapeDtypeStruct((), np.int32), i)

    out = morphax.pmap(body)(np.arange(2, dtype=np.int32))
    np.testing.assert_array_equal(out, [0, 1])
    assert saw_other == [True, True], saw_other
    assert threads[0] != threads[1], threads


def case_loops_with_collectives_in_their_tests():
    # A while_loop whose test (and body) use a collective: the loop is compiled with the axis
    # name bound (it once failed with "unbound axis name" at compile time).
    def body(v):
        return lax.while_loop(
            lambda c: lax.psum(c.sum(), "i") < 100.0, lambda c: c * 2.0 + lax.pmean(c, "i"), v
        )

    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    want = morphax.vmap(body, axis_name="i")(x)
    np.testing.assert_allclose(morphax.pmap(body, axis_name="i")(x), want, rtol=1e-6)
    np.testing.assert_allclose(morphax.jit(morphax.pmap(body, axis_name="i"))(x), want, rtol=1e-6)
