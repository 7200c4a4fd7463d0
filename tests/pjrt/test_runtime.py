"""The PJRT runtime against a real plugin (XLA's CPU plugin from `lammps-jax-pjrt-cpu`, or
$MORPHAX_PJRT_PLUGIN), compared with NumPy: devices and attributes, bit-exact round trips of every
dtype, hand-written StableHLO modules compiled and run, errors as PjrtError or clear Python errors
(never a crash), donation, threads, and no leaks. Skipped as a whole where no plugin is found."""

from __future__ import annotations

import gc
import threading
import zlib

import ml_dtypes
import numpy as np
import pytest

from morphax._src import pjrt

if pjrt.find_plugin() is None:
    pytest.skip("no PJRT plugin (pip install --no-deps lammps-jax-pjrt-cpu)", allow_module_level=True)


@pytest.fixture(scope="module")
def client():
    return pjrt.get_client()


def _rng(request):
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


ADD = """module {
  func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>) -> tensor<3xf32> {
    %0 = "stablehlo.add"(%arg0, %arg1) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%0) : (tensor<3xf32>) -> ()
  }
}"""

ADD_BIG = ADD.replace("3xf32", "1024xf32")

DOT = """module {
  func.func public @main(%arg0: tensor<4x3xf64>, %arg1: tensor<3x5xf64>) -> tensor<4x5xf64> {
    %0 = "stablehlo.dot_general"(%arg0, %arg1) <{dot_dimension_numbers = #stablehlo.dot<
        lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}>
        : (tensor<4x3xf64>, tensor<3x5xf64>) -> tensor<4x5xf64>
    "func.return"(%0) : (tensor<4x5xf64>) -> ()
  }
}"""

TWO_OUTPUTS = """module {
  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>) {
    %0 = "stablehlo.multiply"(%arg0, %arg1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %z = "stablehlo.constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
    %1 = "stablehlo.reduce"(%arg0, %z) <{dimensions = array<i64: 0>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
    "func.return"(%0, %1) : (tensor<2x3xf32>, tensor<3xf32>) -> ()
  }
}"""

# Fully generic form (no func.func sugar): integer ops with wrap-around, and a comparison to i1.
INTEGER = """"builtin.module"() ({
  "func.func"() <{function_type = (tensor<6xi32>, tensor<6xi32>) -> (tensor<6xi32>, tensor<6xi1>),
                  sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<6xi32>, %arg1: tensor<6xi32>):
    %c = "stablehlo.constant"() <{value = dense<3> : tensor<6xi32>}> : () -> tensor<6xi32>
    %0 = "stablehlo.multiply"(%arg0, %arg1) : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
    %1 = "stablehlo.add"(%0, %c) : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
    %2 = "stablehlo.compare"(%arg0, %arg1) <{comparison_direction = #stablehlo<comparison_direction LT>}>
        : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi1>
    "func.return"(%1, %2) : (tensor<6xi32>, tensor<6xi1>) -> ()
  }) : () -> ()
}) : () -> ()"""

SCALAR = """module {
  func.func public @main(%arg0: tensor<bf16>, %arg1: tensor<ui8>) -> (tensor<bf16>, tensor<ui8>) {
    %0 = "stablehlo.negate"(%arg0) : (tensor<bf16>) -> tensor<bf16>
    %1 = "stablehlo.add"(%arg1, %arg1) : (tensor<ui8>, tensor<ui8>) -> tensor<ui8>
    "func.return"(%0, %1) : (tensor<bf16>, tensor<ui8>) -> ()
  }
}"""

# Argument 0 may be reused for the result (JAX's donation marker).
ALIASED = ADD.replace("%arg0: tensor<3xf32>", "%arg0: tensor<3xf32> {tf.aliasing_output = 0 : i32}")


def _run(client, text, *arrays, **kwargs):
    exe = client.compile(text)
    outs = exe.execute([client.buffer_from_host(a) for a in arrays], **kwargs)
    return [o.to_numpy() for o in outs]


# ---------------------------------------------------------------- plugin and devices


def test_plugin_version_and_attributes():
    plugin = pjrt.load()
    assert pjrt.load(plugin.path) is plugin  # once per path per process
    major, minor = plugin.api_version
    assert major == 0 and minor >= 57
    current = plugin.attributes["stablehlo_current_version"]
    minimum = plugin.attributes["stablehlo_minimum_version"]
    assert len(current) == 3 and all(isinstance(v, int) for v in current)
    assert minimum <= current
    assert "PJRT" in repr(plugin)


def test_client_and_devices(client):
    assert pjrt.get_client() is client and pjrt.Client.for_plugin() is client
    assert client.platform_name == "cpu"
    assert isinstance(client.platform_version, str)
    assert client.process_index == 0
    assert len(client.devices) >= 1
    assert client.addressable_devices == client.devices
    for i, device in enumerate(client.devices):
        assert (device.id, device.process_index, device.local_hardware_id) == (i, 0, i)
        assert device.kind == "cpu" and device.platform == "cpu"
        assert device.is_addressable and isinstance(device.attributes, dict)
        assert device.debug_string == f"cpu:{i}"
        assert repr(device) == f"CpuDevice(id={i})"
    with pytest.raises(ValueError, match="already made with options"):
        pjrt.get_client(options={"cpu_device_count": 1})


def test_a_separate_client_with_create_options():
    before = pjrt.live_objects()["clients"]
    other = pjrt.Client(options={"cpu_device_count": 2})
    assert len(other.devices) == 2
    assert pjrt.live_objects()["clients"] == before + 1
    b = other.buffer_from_host(np.arange(3.0), other.devices[1])
    assert b.device is other.devices[1]
    with pytest.raises(ValueError, match="not a device of this client"):
        pjrt.get_client().buffer_from_host(np.ones(2), other.devices[0])
    np.testing.assert_array_equal(b.to_numpy(), np.arange(3.0))
    del b, other
    gc.collect()
    assert pjrt.live_objects()["clients"] == before


# ---------------------------------------------------------------- buffers

DTYPES = [
    np.float16,
    ml_dtypes.bfloat16,
    np.float32,
    np.float64,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.bool_,
    np.complex64,
    np.complex128,
    ml_dtypes.float8_e4m3fn,
    ml_dtypes.float8_e5m2,
]
SHAPES = [(), (0,), (3, 0, 2), (7,), (2, 3, 4)]


def _random(rng, shape, dtype):
    """Arbitrary bit patterns (NaNs, infinities and subnormals included) of `dtype`."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    raw = rng.integers(0, 256, int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_is_bit_exact(client, request, dtype, shape):
    x = _random(_rng(request), shape, dtype)
    b = client.buffer_from_host(x)
    assert b.shape == x.shape and b.dtype == x.dtype and b.ndim == x.ndim and b.nbytes == x.nbytes
    y = b.to_numpy()
    assert y.dtype == x.dtype and y.shape == x.shape and y.flags.c_contiguous
    assert y.tobytes() == x.tobytes()


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a[::2, ::-3],
        lambda a: a.T,
        lambda a: a[:, 1],
        lambda a: np.broadcast_to(a[:1], (5, 6)),
        lambda a: a.astype(">f8"),  # byte-swapped
        lambda a: np.asfortranarray(a),
    ],
)
def test_non_contiguous_inputs(client, view):
    x = view(np.arange(30, dtype=np.float64).reshape(5, 6))
    y = client.buffer_from_host(x).to_numpy()
    np.testing.assert_array_equal(y, x)
    assert y.dtype == np.float64 and y.shape == x.shape


def test_python_scalars_and_lists(client):
    assert client.buffer_from_host(3.5).to_numpy() == np.float64(3.5)
    np.testing.assert_array_equal(np.asarray(client.buffer_from_host([[1, 2], [3, 4]])), [[1, 2], [3, 4]])
    with pytest.raises(TypeError, match="no PJRT buffer type"):
        client.buffer_from_host(np.array(["a", "b"]))


def test_buffer_device_delete_and_metadata(client):
    device = client.devices[-1]
    b = client.buffer_from_host(np.ones((4, 5), np.float32), device)
    assert b.device is device and b.client is client
    assert b.on_device_size_in_bytes == 80
    assert b.block_until_ready() is b and b.is_ready()
    assert "float32[4, 5]" in repr(b)
    assert not b.is_deleted()
    b.delete()
    b.delete()  # idempotent
    assert b.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        b.to_numpy()
    with pytest.raises(ValueError, match="was deleted"):
        client.compile(ADD).execute([b, b])


def test_the_host_array_may_change_right_after_the_copy(client):
    x = np.arange(1000, dtype=np.int64)
    b = client.buffer_from_host(x)
    x[:] = -1
    np.testing.assert_array_equal(b.to_numpy(), np.arange(1000))


# ---------------------------------------------------------------- compiling and running


def test_add(client):
    x, y = np.float32([1.5, -2, 3e30]), np.float32([0.25, 2, 3e30])
    (out,) = _run(client, ADD, x, y)
    np.testing.assert_array_equal(out, x + y)
    assert out.dtype == np.float32


def test_dot_general(client, request):
    rng = _rng(request)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 5))
    (out,) = _run(client, DOT, a, b)
    np.testing.assert_allclose(out, a @ b, rtol=1e-13)


def test_two_outputs(client, request):
    rng = _rng(request)
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    exe = client.compile(TWO_OUTPUTS)
    assert exe.num_outputs == 2
    assert exe.out_shapes == ((2, 3), (3,))
    assert exe.out_dtypes == (np.dtype(np.float32),) * 2
    prod, total = (
        o.to_numpy() for o in exe.execute([client.buffer_from_host(a), client.buffer_from_host(b)])
    )
    np.testing.assert_array_equal(prod, a * b)
    np.testing.assert_allclose(total, a.sum(axis=0), rtol=1e-6)


def test_integer_ops_in_generic_form(client):
    x = np.int32([1, -2, 2**30, 7, 0, -(2**31)])
    y = np.int32([5, 3, 4, 7, 9, 1])
    exe = client.compile(INTEGER)
    assert exe.in_avals == [((6,), "int32"), ((6,), "int32")]
    out, less = (o.to_numpy() for o in exe.execute([client.buffer_from_host(x), client.buffer_from_host(y)]))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, x * y + np.int32(3))  # wraps around like NumPy
    np.testing.assert_array_equal(less, x < y)
    assert less.dtype == np.bool_


def test_zero_dimensional_bf16_and_unsigned(client):
    neg, twice = _run(client, SCALAR, np.asarray(1.5, ml_dtypes.bfloat16), np.uint8(200))
    assert neg.shape == () and neg.dtype == ml_dtypes.bfloat16 and float(neg) == -1.5
    assert twice.dtype == np.uint8 and int(twice) == (400 % 256)


def test_executable_metadata_and_serialize(client):
    exe = client.compile(ADD)
    assert exe.name == "main"
    assert exe.num_replicas == 1 and exe.num_partitions == 1
    assert exe.addressable_devices == (client.devices[0],)
    assert exe.in_avals == [((3,), "float32")] * 2
    assert len(exe.serialize()) > 0
    assert exe.fingerprint is None or isinstance(exe.fingerprint, str)


def test_compile_for_a_chosen_device(client):
    device = client.devices[-1]
    exe = client.compile(ADD, device=device)
    assert exe.addressable_devices == (device,)
    x = client.buffer_from_host(np.float32([1, 2, 3]), device)
    (out,) = exe.execute([x, x])
    assert out.device is device
    np.testing.assert_array_equal(out.to_numpy(), [2, 4, 6])


def test_replicated_execution(client):
    if len(client.devices) < 2:
        pytest.skip("one device")
    exe = client.compile(ADD, num_replicas=2)
    devices = exe.addressable_devices
    assert len(devices) == 2
    with pytest.raises(ValueError, match="execute_replicated"):
        exe.execute([])
    args = [
        [
            client.buffer_from_host(np.full(3, i, np.float32), d),
            client.buffer_from_host(np.ones(3, np.float32), d),
        ]
        for i, d in enumerate(devices)
    ]
    outs = exe.execute_replicated(args)
    for i, ((out,), device) in enumerate(zip(outs, devices)):
        assert out.device is device
        np.testing.assert_array_equal(out.to_numpy(), np.full(3, i + 1, np.float32))


def test_asynchronous_client_outlives_what_it_was_given():
    """With the CPU plugin's asynchronous mode, execute returns before the result exists; the
    executable and the inputs may go while the computation is still running."""
    other = pjrt.Client(options={"asynchronous": True})
    n = 256
    square = (
        DOT.replace("4x3xf64", f"{n}x{n}xf64")
        .replace("3x5xf64", f"{n}x{n}xf64")
        .replace("4x5xf64", f"{n}x{n}xf64")
    )
    a = np.random.default_rng(1).standard_normal((n, n)) / 16
    pending = []
    for _ in range(4):
        exe = other.compile(square)
        x = other.buffer_from_host(a)
        (out,) = exe.execute([x, x])
        (out2,) = exe.execute([out, x])
        pending.append(out2)
        del exe, x, out
        gc.collect()
    for out in pending:
        assert out.block_until_ready().is_ready()
        np.testing.assert_allclose(out.to_numpy(), a @ a @ a, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="not among this executable's devices"):
        other.compile(ADD).execute([], device=other.devices[-1])


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "text",
    [
        "module { this is not mlir }",
        "",
        "module { }",  # no main
        ADD.replace("stablehlo.add", "stablehlo.no_such_op"),
        ADD.replace("-> tensor<3xf32> {", "-> tensor<4xf32> {"),  # result type disagrees
        b"\x00\x01 not bytecode",
    ],
)
def test_malformed_modules_raise_pjrt_error(client, text):
    with pytest.raises(pjrt.PjrtError) as info:
        client.compile(text)
    err = info.value
    assert isinstance(err, RuntimeError)
    assert err.code in ("INVALID_ARGUMENT", "UNKNOWN", "INTERNAL", "FAILED_PRECONDITION")
    assert err.message and err.message in str(err) and err.code in str(err)
    assert pjrt.live_objects()["events"] == 0


def test_wrong_arguments_raise_clear_errors(client):
    exe = client.compile(ADD)
    a = client.buffer_from_host(np.float32([1, 2, 3]))
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        exe.execute([a])
    with pytest.raises(TypeError, match="takes 2 arguments, got 3"):
        exe.execute([a, a, a])
    with pytest.raises(
        ValueError, match=r"argument 1: the program expects float32\[3\], got a buffer of float32\[4\]"
    ):
        exe.execute([a, client.buffer_from_host(np.ones(4, np.float32))])
    # Same byte size: XLA itself would accept these and compute garbage.
    with pytest.raises(ValueError, match=r"expects float32\[3\], got a buffer of int32\[3\]"):
        exe.execute([a, client.buffer_from_host(np.ones(3, np.int32))])
    with pytest.raises(ValueError, match=r"expects float32\[3\], got a buffer of float32\[1, 3\]"):
        exe.execute([a, client.buffer_from_host(np.ones((1, 3), np.float32))])
    with pytest.raises(TypeError, match="is a ndarray, not a pjrt Buffer"):
        exe.execute([a, np.ones(3, np.float32)])
    with pytest.raises(ValueError, match="donate: no argument 5"):
        exe.execute([a, a], donate=(5,))


def test_the_plugins_own_argument_check_becomes_pjrt_error(client):
    exe = client.compile(ADD)
    exe.in_avals = None  # as for bytecode, whose signature is not read here
    a = client.buffer_from_host(np.float32([1, 2, 3]))
    with pytest.raises(pjrt.PjrtError, match="expected 2") as info:
        exe.execute([a])
    assert info.value.code == "INVALID_ARGUMENT"


# ---------------------------------------------------------------- donation


def test_donation(client):
    exe = client.compile(ALIASED)
    a, b = client.buffer_from_host(np.float32([1, 2, 3])), client.buffer_from_host(np.float32([1, 1, 1]))
    (kept,) = exe.execute([a, b])  # not donated: marked non-donatable, so `a` survives
    assert not a.is_deleted()
    np.testing.assert_array_equal(kept.to_numpy(), [2, 3, 4])
    with pytest.raises(ValueError, match="donated but passed more than once"):
        exe.execute([a, a], donate=(0,))
    (out,) = exe.execute([a, b], donate=(0,))
    assert a.is_deleted() and not b.is_deleted()
    np.testing.assert_array_equal(out.to_numpy(), [2, 3, 4])
    with pytest.raises(ValueError, match="donated to an earlier call"):
        exe.execute([a, b])


# ---------------------------------------------------------------- threads and leaks


def test_eight_threads_share_one_executable(client):
    exe = client.compile(ADD_BIG)
    errors, barrier = [], threading.Barrier(8)

    def work(k):
        try:
            barrier.wait()
            for i in range(40):
                x = np.arange(1024, dtype=np.float32) * k
                y = np.full(1024, i, np.float32)
                (out,) = exe.execute([client.buffer_from_host(x), client.buffer_from_host(y)])
                np.testing.assert_array_equal(out.to_numpy(), x + y)
        except BaseException as exc:  # reported below, on the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_no_leaks_over_ten_thousand_calls(client, rss_bytes):
    gc.collect()
    base = pjrt.live_objects()
    exe = client.compile(ADD_BIG)
    x = np.arange(1024, dtype=np.float32)

    def calls(exe, n):
        for _ in range(n):
            (out,) = exe.execute([client.buffer_from_host(x), client.buffer_from_host(x)])
            out.to_numpy()

    calls(exe, 500)  # warm up allocators and caches
    rss = rss_bytes()
    calls(exe, 10_000)  # 3 buffers of 4 KiB a call: a leak of any of them would be 40 MiB and more
    grown = rss_bytes() - rss
    assert grown < 8 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 10,000 calls"
    del exe
    gc.collect()
    assert pjrt.live_objects() == base


def test_every_object_is_destroyed(client):
    gc.collect()
    base = pjrt.live_objects()
    exe = client.compile(TWO_OUTPUTS)
    a = client.buffer_from_host(np.ones((2, 3), np.float32))
    outs = exe.execute([a, a])
    live = pjrt.live_objects()
    assert live["buffers"] == base["buffers"] + 3
    assert live["loaded_executables"] == base["loaded_executables"] + 1
    assert live["executables"] == base["executables"] + 1  # the one GetExecutable returned
    assert live["events"] == 0
    del exe, a, outs
    gc.collect()
    assert pjrt.live_objects() == base


def test_unsafe_pointer_is_the_cpu_buffers_memory(client):
    """On the CPU plugin a buffer's device address is host memory holding its value."""
    import ctypes

    if client.platform_name != "cpu":
        pytest.skip("device addresses are host memory only on a CPU plugin")
    x = np.arange(6, dtype=np.float32) * 1.5
    buf = client.buffer_from_host(x).block_until_ready()
    address = buf.unsafe_pointer()
    view = np.frombuffer((ctypes.c_char * x.nbytes).from_address(address), np.float32)
    np.testing.assert_array_equal(view, x)
    buf.delete()
    with pytest.raises(RuntimeError):
        buf.unsafe_pointer()
