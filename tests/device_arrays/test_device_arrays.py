"""Arrays that live on a PJRT plugin's device (docs/tpu.md): what a TPU does, checked on XLA's CPU
plugin opened as the "xla_cpu" platform, where device buffers, one-equation eager programs,
donation and transfers take the same paths as on the chip. The platform is chosen once per
process, so this folder runs in a process of its own:

    JAX_PLATFORMS=xla_cpu python -m pytest -q tests/device_arrays

(on a TPU machine, JAX_PLATFORMS=tpu runs it on the chip). Skipped on the CPU platform."""

from __future__ import annotations

import gc
import logging

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.compiler.compile import counters
from morphax._src.pjrt import plugin as pjrt_plugin
from morphax._src.runtime.buffers import DeviceBuffer

pytestmark = pytest.mark.skipif(
    morphax.default_backend() == "cpu",
    reason="the default platform is the CPU: run with JAX_PLATFORMS=xla_cpu (or tpu) to test device arrays",
)


def on_device(x) -> bool:
    return type(x._buf) is DeviceBuffer


def test_the_platforms_devices_are_listed_and_the_cpu_stays_reachable():
    devices = morphax.devices()
    assert devices and all(d.platform == morphax.default_backend() for d in devices)
    assert morphax.device_count() == len(devices) == len(morphax.local_devices())
    cpus = morphax.devices("cpu")
    assert [d.platform for d in cpus] == ["cpu"] * len(cpus)
    with pytest.raises(RuntimeError, match="Unknown backend"):
        morphax.devices("rocm" if morphax.default_backend() != "rocm" else "tpu")


@pytest.mark.parametrize(
    "dtype", ["float32", "bfloat16", "float16", "int8", "uint32", "int32", "bool", "complex64"]
)
def test_values_go_to_the_device_and_back_exactly(dtype):
    rng = np.random.default_rng(0)
    host = (rng.standard_normal((3, 5)) * 20).astype(
        np.dtype(getattr(jnp, dtype) if dtype == "bfloat16" else dtype)
    )
    x = morphax.device_put(host)
    assert on_device(x) and x.dtype == host.dtype and x.shape == host.shape
    assert np.asarray(x).tobytes() == host.tobytes()
    assert x.devices() == {morphax.devices()[0]}


def test_eager_operations_run_on_the_device_compiled_once_per_signature():
    x = morphax.device_put(np.arange(6, dtype=np.float32))
    y = jnp.sin(x) * 2 + x  # warm: one program per operation and signature
    before = counters.compiles
    for _ in range(3):
        y = jnp.sin(x) * 2 + x
    assert counters.compiles == before
    assert on_device(y)
    np.testing.assert_allclose(np.asarray(y), np.sin(np.arange(6.0)) * 2 + np.arange(6.0), rtol=1e-6)
    z = jnp.sin(morphax.device_put(np.arange(7, dtype=np.float32)))  # a new shape: compiled once
    assert counters.compiles == before + 1 and on_device(z)


def test_jit_takes_and_returns_device_arrays():
    # HIGHEST: a TPU's default float32 product takes bfloat16 passes (as JAX's does).
    f = morphax.jit(lambda a, b: (jnp.matmul(a, b, precision="highest"), jnp.tanh(a).sum(axis=0)))
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32)
    p, s = f(morphax.device_put(a), morphax.device_put(b))
    assert on_device(p) and on_device(s)
    q, _ = f(morphax.device_put(a), b)  # a device array and a host one
    np.testing.assert_allclose(np.asarray(p), a @ b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(s), np.tanh(a).sum(0), rtol=1e-4)  # the TPU's own tanh
    np.testing.assert_allclose(np.asarray(q), a @ b, rtol=1e-5, atol=1e-6)


def test_block_until_ready_waits_without_copying_and_reads_copy_once():
    x = morphax.jit(lambda a: a * 3)(morphax.device_put(np.ones(4, np.float32)))
    assert x.block_until_ready() is x
    assert x._buf._value is None  # no host copy was made
    x.copy_to_host_async()
    assert x.tolist() == [3.0] * 4 and x.item(1) == 3.0 and float(x[2]) == 3.0
    assert x._buf._value is not None and on_device(x)  # the copy is kept; the buffer too
    assert "3." in repr(x) and str(x)


def test_delete_frees_the_buffer_and_reads_then_raise():
    gc.collect()
    live = pjrt_plugin.live_objects()["buffers"]
    x = morphax.device_put(np.ones((2, 2), np.float32))
    assert pjrt_plugin.live_objects()["buffers"] == live + 1
    x.delete()
    assert x.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)
    y = morphax.device_put(np.ones(3, np.float32))
    del y, x
    gc.collect()
    assert pjrt_plugin.live_objects()["buffers"] == live


def test_donated_arguments_are_consumed_as_in_jax():
    step = morphax.jit(lambda p, g: p - 0.5 * g, donate_argnums=0)
    p = morphax.device_put(np.arange(4, dtype=np.float32))
    g = morphax.device_put(np.ones(4, np.float32))
    q = step(p, g)
    assert p.is_deleted() and not g.is_deleted()
    np.testing.assert_array_equal(np.asarray(q), np.arange(4) - 0.5)
    with pytest.raises(RuntimeError, match="Array has been deleted"):
        p + 1


def test_arrays_move_between_the_device_and_the_cpu():
    cpu = morphax.devices("cpu")[0]
    x = morphax.device_put(np.arange(5, dtype=np.int32))
    h = morphax.device_put(x, cpu)
    assert type(h._buf) is np.ndarray and h.devices() == {cpu} and h.committed
    # Committed to the CPU: computations on it run on the host, and their results stay there.
    r = h * 2
    assert type(r._buf) is np.ndarray and r.devices() == {cpu}
    j = morphax.jit(lambda v: v + 1)(h)
    assert type(j._buf) is np.ndarray and j.devices() == {cpu}
    back = morphax.device_put(r, morphax.devices()[0])
    assert on_device(back) and back.devices() == {morphax.devices()[0]}
    np.testing.assert_array_equal(np.asarray(back), np.arange(5) * 2)
    np.testing.assert_array_equal(np.asarray(j), np.arange(5) + 1)


def test_unsafe_buffer_pointer_is_the_devices_memory():
    x = morphax.device_put(np.arange(3, dtype=np.float32))
    try:
        pointer = x.unsafe_buffer_pointer()
    except NotImplementedError:
        pytest.skip("this plugin gives no buffer pointers")
    assert isinstance(pointer, int) and pointer != 0


def test_transformations_and_control_flow_run_on_the_device():
    x = morphax.device_put(np.linspace(-1, 1, 5).astype(np.float32))

    def loss(w):
        return jnp.sum(jnp.tanh(w * x) ** 2)

    g = morphax.grad(loss)(morphax.device_put(np.float32(0.7)))
    w = 0.7
    expect = np.sum(
        2
        * np.tanh(w * np.linspace(-1, 1, 5))
        * (1 - np.tanh(w * np.linspace(-1, 1, 5)) ** 2)
        * np.linspace(-1, 1, 5)
    )
    np.testing.assert_allclose(float(g), expect, rtol=1e-5)
    rows = morphax.vmap(lambda r: jnp.dot(r, r))(
        morphax.device_put(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    )
    np.testing.assert_allclose(np.asarray(rows), [5.0, 50.0])
    total, ys = lax.scan(lambda c, v: (c + v, c * v), jnp.float32(0), x)
    np.testing.assert_allclose(float(total), 0.0, atol=1e-6)
    n = lax.while_loop(lambda c: c < 10, lambda c: c * 2 + 1, 1)
    assert int(n) == 15
    picked = lax.cond(x[0] < 0, lambda v: -v, lambda v: v, x)
    np.testing.assert_allclose(np.asarray(picked), -np.linspace(-1, 1, 5), rtol=1e-6)
    assert on_device(ys) and on_device(picked)


def test_random_numbers_match_the_host():
    key = morphax.random.PRNGKey(42)
    sample = morphax.jit(lambda k: morphax.random.uniform(k, (1000,)))(key)
    assert on_device(sample)
    bits = morphax.jit(lambda k: morphax.random.bits(k, (16,)))(key)
    with morphax.default_device(morphax.devices("cpu")[0]):
        host_key = morphax.device_put(np.asarray(key), morphax.devices("cpu")[0])
        host_bits = morphax.jit(lambda k: morphax.random.bits(k, (16,)))(host_key)
    np.testing.assert_array_equal(np.asarray(bits), np.asarray(host_bits))
    assert 0.45 < float(sample.mean()) < 0.55


def test_a_callback_inside_a_device_program_runs_on_the_host():
    seen = []

    def f(x):
        morphax.debug.callback(lambda v: seen.append(np.asarray(v).sum()), x)
        return morphax.pure_callback(lambda v: np.asarray(v) * 2, jax_struct(x), x) + 1

    def jax_struct(x):
        return morphax.ShapeDtypeStruct(x.shape, x.dtype)

    out = morphax.jit(f)(morphax.device_put(np.ones(3, np.float32)))
    np.testing.assert_array_equal(np.asarray(out), [3.0, 3.0, 3.0])
    assert seen == [3.0]


def test_an_operation_without_a_lowering_runs_on_the_host_with_a_note(caplog):
    a = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
    with caplog.at_level(logging.WARNING, logger="morphax"):
        w = morphax.jit(lambda m: jnp.linalg.eigh(m)[0])(morphax.device_put(a))
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(a), rtol=1e-5)


def test_printing_and_errors_name_the_array():
    x = morphax.device_put(np.array([1.5, 2.5], np.float32))
    assert repr(x) == "Array([1.5, 2.5], dtype=float32)"
    with pytest.raises(ValueError, match=r"add: .*shapes \(2,\) \(3,\)"):
        x + jnp.ones(3)


def test_program_outputs_are_owned_by_the_c_launcher_and_freed_with_their_arrays():
    from morphax._src.compiler.backends.c import build as c_build
    from morphax._src.compiler.backends.xla import launch

    if c_build.compiler() is None:
        pytest.skip("no C compiler: programs run through ctypes")
    mod = launch.module()  # built in the background by the first program; wait for it here
    assert mod is not None
    f = morphax.jit(lambda a: (a + 1, a * 2))
    x = morphax.device_put(np.arange(4, dtype=np.float32))
    f(x)  # a launcher made now that the extension exists
    gc.collect()
    held = mod.live_held_buffers()
    a, b = f(x)
    assert type(a._buf.pjrt).__name__ == "OwnedBuffer" and mod.live_held_buffers() == held + 2
    np.testing.assert_array_equal(np.asarray(b), np.arange(4) * 2)
    del a, b
    gc.collect()
    assert mod.live_held_buffers() == held


def test_outputs_are_awaited_and_read_by_the_launcher_and_a_deleted_one_still_raises():
    from morphax._src.compiler.backends.c import build as c_build
    from morphax._src.compiler.backends.xla import launch

    if c_build.compiler() is None:
        pytest.skip("no C compiler: programs run through ctypes")
    assert launch.module() is not None
    f = morphax.jit(lambda a: (a.astype(jnp.int8) * 2, a.reshape(2, 3).T, jnp.zeros((0, 2))))
    x = morphax.device_put(np.arange(6, dtype=np.float32))
    f(x)  # a launcher made now that the extension exists
    events = pjrt_plugin.live_objects()["events"]
    small, transposed, empty = f(x)
    assert small._buf.pjrt._launcher is not None
    assert small.block_until_ready() is small and small._buf._value is None
    np.testing.assert_array_equal(np.asarray(small), (np.arange(6) * 2).astype(np.int8))
    np.testing.assert_array_equal(np.asarray(transposed), np.arange(6, dtype=np.float32).reshape(2, 3).T)
    assert np.asarray(empty).shape == (0, 2)
    assert pjrt_plugin.live_objects()["events"] == events  # every event awaited and destroyed
    _, again, _ = f(x)
    again.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(again)
