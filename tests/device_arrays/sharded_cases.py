"""Cases for test_sharded_device_arrays.py, run in an interpreter of their own on the `xla_cpu`
platform with 4 devices: arrays laid out over several of a plugin's devices, each device holding
its block in device memory, and jitted programs over them partitioned by XLA."""

from __future__ import annotations

import contextlib

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax._src.pjrt import client as pjrt_client
from morphax._src.runtime.buffers import DeviceBuffer, ShardedDeviceBuffer
from morphax.sharding import Mesh, NamedSharding
from morphax.sharding import PartitionSpec as P


def _mesh():
    devices = morphax.devices()
    assert len(devices) == 4 and devices[0].platform == "xla_cpu", devices
    return Mesh(np.array(devices).reshape(2, 2), ("x", "y"))


def _check_shards(x, want):
    """Every device holds its block of `want` in its own memory, as the sharding says."""
    assert type(x._buf) is ShardedDeviceBuffer
    shards = x.addressable_shards
    assert {s.device for s in shards} == set(x.sharding.device_set)
    for s in shards:
        assert type(s.data._buf) is DeviceBuffer and s.data._buf.pjrt.device is s.device.pjrt
        np.testing.assert_array_equal(np.asarray(s.data), want[s.index])
    np.testing.assert_array_equal(np.asarray(x), want)


def device_put_lays_blocks_on_their_devices():
    mesh = _mesh()
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    for spec in (P("x", "y"), P("x"), P(None, "y"), P(("x", "y")), P()):
        x = morphax.device_put(a, NamedSharding(mesh, spec))
        assert x.sharding == NamedSharding(mesh, spec)
        _check_shards(x, a)
    for dtype in ("int8", "bool", "bfloat16", "uint32"):
        v = (np.arange(8) % 3).astype(jnp.bfloat16 if dtype == "bfloat16" else dtype)
        x = morphax.device_put(v, NamedSharding(mesh, P(("x", "y"))))
        assert np.asarray(x).tobytes() == v.tobytes()


def jit_runs_one_partitioned_program_and_keeps_results_on_the_devices():
    mesh = _mesh()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 6)).astype(np.float32)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    x = morphax.device_put(a, NamedSharding(mesh, P("x", "y")))
    wd = morphax.device_put(w, NamedSharding(mesh, P("y", None)))
    f = morphax.jit(lambda x, w: (jnp.tanh(x) @ w, x.sum(axis=1), jnp.max(x)))
    y, s, m = f(x, wd)
    want = np.tanh(a).astype(np.float64) @ w
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(s), a.sum(1), rtol=1e-5)
    assert float(m) == a.max()
    assert y.sharding == NamedSharding(mesh, P("x")) and s.sharding == NamedSharding(mesh, P("x"))
    _check_shards(y, np.asarray(y))
    # out_shardings lay a result out as asked.
    g = morphax.jit(lambda x: x * 2, out_shardings=NamedSharding(mesh, P(None, "y")))
    z = g(x)
    assert z.sharding == NamedSharding(mesh, P(None, "y"))
    _check_shards(z, a * 2)


def a_programs_results_feed_the_next_in_place():
    mesh = _mesh()
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    x = morphax.device_put(a, NamedSharding(mesh, P("x", "y")))
    f = morphax.jit(lambda v: v * 2 + 1)
    y = f(x)
    with _no_host_copies():  # each device's block stayed where it was
        z = f(f(y))
        z.block_until_ready()
    _check_shards(z, ((a * 2 + 1) * 2 + 1) * 2 + 1)


def eager_operations_and_gradients_on_sharded_arrays():
    mesh = _mesh()
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 4)).astype(np.float32)
    x = morphax.device_put(a, NamedSharding(mesh, P("x")))
    e = jnp.sin(x) + 1
    assert e.sharding == NamedSharding(mesh, P("x"))
    _check_shards(e, np.asarray(e))
    np.testing.assert_allclose(np.asarray(e), np.sin(a) + 1, rtol=1e-6)
    w = morphax.device_put(np.ones((4,), np.float32), NamedSharding(mesh, P()))

    def loss(w, x):
        return jnp.mean(jnp.tanh(x @ w) ** 2)

    value, grad = morphax.jit(morphax.value_and_grad(loss))(w, x)
    t = np.tanh(a @ np.ones(4))
    np.testing.assert_allclose(float(value), np.mean(t**2), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(grad), (2 * t * (1 - t**2)) @ a / 8, rtol=1e-4, atol=1e-6)


def waiting_deleting_and_moving_sharded_arrays():
    mesh = _mesh()
    a = np.arange(16, dtype=np.int32).reshape(4, 4)
    x = morphax.device_put(a, NamedSharding(mesh, P("x", "y")))
    y = morphax.jit(lambda v: v + 1)(x)
    assert y.block_until_ready() is y and y._buf._value is None  # waited, nothing copied
    one = morphax.device_put(y, morphax.devices()[1])
    assert type(one._buf) is DeviceBuffer and one._buf.pjrt.device is morphax.devices()[1].pjrt
    np.testing.assert_array_equal(np.asarray(one), a + 1)
    host = morphax.device_put(y, morphax.devices("cpu")[0])
    np.testing.assert_array_equal(np.asarray(host), a + 1)
    x.delete()
    assert x.is_deleted()
    assert all(s.is_deleted() for s, _ in y._buf.shards) is False
    try:
        np.asarray(x)
    except RuntimeError as e:
        assert "deleted" in str(e)
    else:
        raise AssertionError("reading a deleted array did not raise")


def donation_in_shardings_and_callbacks():
    mesh = _mesh()
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    x = morphax.device_put(a, NamedSharding(mesh, P("x")))
    y = morphax.jit(lambda v: v + 1, donate_argnums=0)(x)
    assert x.is_deleted()
    np.testing.assert_array_equal(np.asarray(y), a + 1)
    # jit's in_shardings lay a host value out before the partitioned program runs.
    z = morphax.jit(lambda v: v * 2, in_shardings=NamedSharding(mesh, P(None, "y")))(a)
    assert z.sharding == NamedSharding(mesh, P(None, "y"))
    _check_shards(z, a * 2)
    # A program that calls back into Python is not XLA's to partition: it runs whole, correctly.
    seen = []
    w = morphax.jit(lambda v: morphax.debug.callback(seen.append, v) or v - 1)(y)
    np.testing.assert_array_equal(np.asarray(w), a)
    assert len(seen) >= 1


@contextlib.contextmanager
def _no_host_copies():
    """The block runs without copying anything from the host to a device."""
    copies = [0]
    original = pjrt_client.Client.buffer_from_host

    def counted(self, *args, **kwargs):
        copies[0] += 1
        return original(self, *args, **kwargs)

    pjrt_client.Client.buffer_from_host = counted
    try:
        yield
    finally:
        pjrt_client.Client.buffer_from_host = original
    assert copies[0] == 0, f"{copies[0]} host-to-device copies"


def pmap_results_stay_on_their_devices():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 3)).astype(np.float32)
    f = morphax.pmap(lambda v: jnp.sin(v) * 2)
    y = f(a)
    assert type(y._buf) is ShardedDeviceBuffer  # each device's row, where it computed it
    for k, s in enumerate(y.addressable_shards):
        assert s.device == morphax.devices()[k] and s.index[0] == slice(k, k + 1)
        assert type(s.data._buf) is DeviceBuffer and s.data._buf.pjrt.device is s.device.pjrt
        np.testing.assert_allclose(np.asarray(s.data), np.sin(a[k : k + 1]) * 2, rtol=1e-6)
    # A pmap over the same devices takes them as they lie: nothing comes from the host.
    with _no_host_copies():
        z = f(f(y))
        z.block_until_ready()
    want = a
    for _ in range(3):
        want = np.sin(want) * 2
    np.testing.assert_allclose(np.asarray(z), want, rtol=1e-5)
    # Collectives, an unmapped argument, out_axes None and 1, mapping along axis 1: a loop of
    # NumPy over the devices is the reference.
    g = morphax.pmap(
        lambda x, w: (morphax.lax.psum(x * w, "i"), x - morphax.lax.pmean(x, "i") + w),
        axis_name="i",
        in_axes=(1, None),
        out_axes=(None, 1),
    )
    xs = rng.standard_normal((3, 4)).astype(np.float32)
    s, t = g(xs, np.float32(2.0))
    assert s.shape == (3,) and t.shape == (3, 4)
    np.testing.assert_allclose(np.asarray(s), (xs * 2).sum(1), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(t), xs - xs.mean(1, keepdims=True) + 2, rtol=1e-5, atol=1e-6)

    # A data-parallel step: gradients averaged over the devices, parameters replicated on each;
    # the updated parameters go into the next step where they are.
    def step(w, x):
        grad = morphax.grad(lambda w: jnp.sum(jnp.tanh(x @ w) ** 2))(w)
        return w - 0.1 * morphax.lax.pmean(grad, "d")

    pstep = morphax.pmap(step, axis_name="d", in_axes=(None, 0), out_axes=None)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    batch = rng.standard_normal((4, 5, 3)).astype(np.float32)
    w1 = pstep(w, batch)
    assert type(w1._buf) is ShardedDeviceBuffer and len(w1._buf.shards) == 4
    w2 = pstep(w1, batch)

    def numpy_step(w):
        grads = [2 * x.T @ (np.tanh(x @ w) * (1 - np.tanh(x @ w) ** 2)) for x in batch.astype(np.float64)]
        return w - 0.1 * np.mean(grads, axis=0)

    np.testing.assert_allclose(np.asarray(w2), numpy_step(numpy_step(w)), rtol=1e-4, atol=1e-5)
    # Other programs read them too (through the host, for a layout they do not share).
    np.testing.assert_allclose(
        np.asarray(morphax.jit(lambda v: v.sum())(y)), (np.sin(a) * 2).sum(), rtol=1e-5
    )
