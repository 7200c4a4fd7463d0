"""Cases on 4 CPU devices (run in subprocesses by conftest.py's `run_cases`). Expected devices,
shardings, pictures and error messages are JAX 0.10.2's, recorded as literals (jax_num_cpu_devices=4)."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax.sharding import AxisType, Mesh, NamedSharding, SingleDeviceSharding
from morphax.sharding import PartitionSpec as P

D = morphax.devices()
A = np.arange(32.0, dtype=np.float32).reshape(8, 4)


def _ids(x):
    return sorted(d.id for d in x.devices())


def _spec(x):
    return x.sharding.spec


def _raises(exc, fn, match_all):
    with pytest.raises(exc) as info:
        fn()
    text = str(info.value)
    for part in match_all:
        assert part in text, f"{part!r} not in {text!r}"
    return text


# --------------------------------------------------------------------------------- placement


def case_placement():
    x = jnp.ones(3)
    assert _ids(x) == [0] and not x.committed and x.device is D[0]
    assert repr(x.sharding) == "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"
    y = morphax.device_put(x, D[1])
    assert _ids(y) == [1] and y.committed and y.device is D[1]
    assert repr(y.sharding) == "SingleDeviceSharding(device=CpuDevice(id=1), memory_kind=device)"
    assert not morphax.device_put(np.ones(3)).committed
    # Eager ops follow committed inputs (uncommitted ones follow too), and stay committed.
    for r in (y + x, y + 1, jnp.add(y, 1), jnp.sin(y), jnp.stack([y, x])):
        assert _ids(r) == [1] and r.committed
    with morphax.default_device(D[2]):
        w = jnp.ones(3)
        assert _ids(w) == [2] and not w.committed
        assert _ids(x + 1) == [2]
        assert _ids(morphax.jit(lambda a: a * 2)(x)) == [2]
        assert _ids(morphax.device_put(np.ones(2))) == [2] and not morphax.device_put(np.ones(2)).committed
        assert _ids(y + 1) == [1]  # committed inputs win over the context
    # Outside the context, computations on uncommitted inputs run on the default device again.
    assert _ids(w + 1) == [0] and not (w + 1).committed
    assert _ids(w + x) == [0]
    assert _ids(morphax.jit(lambda a: a * 2)(w)) == [0]
    r = morphax.jit(lambda a: a * 2)(y)
    assert _ids(r) == [1] and r.committed
    assert _ids(morphax.device_put(y)) == [1] and morphax.device_put(y).committed
    assert _ids(morphax.device_put(y, D[3])) == [3]
    assert _ids(morphax.device_put(w)) == [2] and not morphax.device_put(w).committed
    np.testing.assert_allclose(np.asarray(r), 2 * np.ones(3))
    # Rows of a committed array stay there; pytrees are placed leaf by leaf.
    assert [_ids(row) for row in morphax.device_put(jnp.ones((2, 2)), D[3])] == [[3], [3]]
    tree = morphax.device_put({"a": np.ones(2), "b": (1.0, np.int32(2))}, D[2])
    assert {_ids(v)[0] for v in morphax.tree_util.tree_leaves(tree)} == {2}
    # Creation functions' device= commits their result there (JAX 0.10.2).
    made = [
        jnp.ones(3, device=D[2]),
        jnp.asarray(np.ones(3), device=D[2]),
        jnp.arange(3, device=D[2]),
        jnp.zeros_like(jnp.ones(3), device=D[1]),
        jnp.ones(3).astype(jnp.int32, device=D[3]),
    ]
    assert [(_ids(m), m.committed) for m in made] == [
        ([2], True),
        ([2], True),
        ([2], True),
        ([1], True),
        ([3], True),
    ]
    m4 = morphax.make_mesh((4,), ("x",))
    made = jnp.ones(8, device=NamedSharding(m4, P("x")))
    assert _spec(made) == P("x") and made.committed


def case_jit_runs_on_the_committed_device():
    from morphax._src.runtime import dispatch

    seen = []
    real = dispatch.execute

    def spy(executable, args, out_weak_types, device_id=0, donate=False):
        seen.append(device_id)
        return real(executable, args, out_weak_types, device_id=device_id, donate=donate)

    dispatch.execute = spy
    try:
        f = morphax.jit(lambda a, b: a @ b + 1)
        big = np.ones((300, 300), np.float32)
        y = morphax.device_put(big, D[3])
        out = f(y, big)
        assert seen[-1] == 3 and _ids(out) == [3] and out.committed
        out.block_until_ready()
        assert 3 in dispatch._streams  # the work was queued on device 3's stream
        f(big, big)
        assert seen[-1] == 0
        with morphax.default_device(D[1]):
            f(big, big)
        assert seen[-1] == 1
        xs = morphax.device_put(big, NamedSharding(morphax.make_mesh((2, 2), ("x", "y")), P("x")))
        before = len(seen)
        f(xs, big)
        assert len(seen) == before  # sharded: every device of the mesh runs its part (test_spmd.py)
    finally:
        dispatch.execute = real
    np.testing.assert_allclose(np.asarray(out), big @ big + 1)


def case_incompatible_devices():
    y1, y2 = morphax.device_put(jnp.ones(3), D[1]), morphax.device_put(jnp.ones(3), D[2])
    tail = (
        "with shape float32[3] and with device ids [1] on platform CPU and argument 1 of add with shape "
        "float32[3] and with device ids [2] on platform CPU"
    )
    _raises(ValueError, lambda: y1 + y2, ["Received incompatible devices for jitted computation", tail])
    # jit names its arguments as JAX does (an eager primitive names positions: NB in placement.py).
    _raises(
        ValueError,
        lambda: morphax.jit(lambda a, b: a + b)(y1, y2),
        [
            "Received incompatible devices for jitted computation. Got argument a of <lambda> with shape "
            "float32[3] and with device ids [1] on platform CPU and argument b of <lambda> with shape "
            "float32[3] and with device ids [2] on platform CPU"
        ],
    )
    _raises(
        ValueError,
        lambda: morphax.jit(lambda p: p["a"] + p["b"])({"a": y1, "b": y2}),
        ["Got argument p['a'] of <lambda>", "and argument p['b'] of <lambda>"],
    )

    def g(x, z=None):
        return x + z

    _raises(ValueError, lambda: morphax.jit(g)(y1, z=y2), ["Got argument x of g", "and argument z of g"])
    mesh = morphax.make_mesh((2, 2), ("x", "y"))
    xs = morphax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P(("x", "y"))))
    _raises(
        ValueError,
        lambda: xs + morphax.device_put(jnp.ones((8, 4)), D[0]),
        [
            "with shape float32[8@(x,y),4] and with device ids [0, 1, 2, 3] on platform CPU and argument 1 of add "
            "with shape float32[8,4] and with device ids [0] on platform CPU"
        ],
    )


# ------------------------------------------------------------------------------ sharded arrays


def case_sharded_arrays():
    mesh = morphax.make_mesh((2, 2), ("x", "y"))
    assert repr(mesh) == "Mesh(axis_sizes=(2, 2), axis_names=('x', 'y'), axis_types=(Explicit, Explicit))"
    assert str(mesh) == "Mesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit))"
    assert [[d.id for d in row] for row in mesh.devices] == [[0, 1], [2, 3]]
    assert mesh.device_ids.tolist() == [[0, 1], [2, 3]] and mesh.size == 4
    s = NamedSharding(mesh, P("x", None))
    assert repr(s) == (
        "NamedSharding(mesh=Mesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit)), spec=P('x', None), "
        "memory_kind=device)"
    )
    assert s.shard_shape((8, 4)) == (4, 4) and s.num_devices == 4 and not s.is_fully_replicated
    assert s.is_equivalent_to(NamedSharding(mesh, P("x")), 2) and s != NamedSharding(mesh, P("x"))
    xs = morphax.device_put(A, s)
    assert xs.sharding == s and xs.committed and not xs.is_fully_replicated and _ids(xs) == [0, 1, 2, 3]
    assert xs.device == s  # several devices: JAX's Array.device is the sharding
    shards = xs.addressable_shards
    assert [(sh.device.id, sh.index, sh.replica_id) for sh in shards] == [
        (0, (slice(0, 4), slice(None)), 0),
        (1, (slice(0, 4), slice(None)), 1),
        (2, (slice(4, 8), slice(None)), 0),
        (3, (slice(4, 8), slice(None)), 1),
    ]
    for sh in shards:
        np.testing.assert_array_equal(np.asarray(sh.data), A[sh.index])
        assert _ids(sh.data) == [sh.device.id] and sh.data.committed
        # One global host buffer: a shard's data is a view of it.
        assert np.shares_memory(np.asarray(sh.data), np.asarray(xs))
    assert repr(shards[2]).startswith(
        "Shard(device=CpuDevice(id=2), index=(slice(4, 8, None), slice(None, None, None)), replica_id=0, data=[[16."
    )
    assert [(g.device.id, g.index) for g in xs.global_shards] == [(sh.device.id, sh.index) for sh in shards]
    np.testing.assert_array_equal(np.asarray(xs.addressable_data(3)), A[4:])
    both = morphax.device_put(A, NamedSharding(mesh, P("x", "y")))
    assert [sh.index for sh in both.addressable_shards][1] == (slice(0, 4), slice(2, 4))
    rep = morphax.device_put(np.float32(3.0), NamedSharding(mesh, P()))
    assert rep.is_fully_replicated and [sh.replica_id for sh in rep.addressable_shards] == [0, 1, 2, 3]
    moved = morphax.device_put(xs, SingleDeviceSharding(D[3]))
    assert repr(moved.sharding) == "SingleDeviceSharding(device=CpuDevice(id=3), memory_kind=device)"
    _raises(
        ValueError,
        lambda: morphax.device_put(jnp.ones(3), NamedSharding(mesh, P("x"))),
        ["implies that array axis 0 is partitioned 2 times, but does not evenly divide the dimension size 3"],
    )
    m4 = morphax.make_mesh((4,), ("i",), devices=D[::-1])
    assert [d.id for d in m4.devices] == [3, 2, 1, 0]
    assert [
        sh.device.id
        for sh in morphax.device_put(np.arange(8.0), NamedSharding(m4, P("i"))).addressable_shards
    ][0] == 3
    _raises(
        ValueError,
        lambda: morphax.make_mesh((2, 4), ("a", "b")),
        ["Number of devices 4 must be >= the product of mesh_shape (2, 4)"],
    )
    plain = Mesh(np.array(D).reshape(2, 2), ("a", "b"))
    assert repr(plain) == "Mesh(axis_sizes=(2, 2), axis_names=('a', 'b'), axis_types=(Auto, Auto))"
    assert repr(plain.abstract_mesh) == (
        "AbstractMesh('a': 2, 'b': 2, axis_types=(Auto, Auto), device_kind=cpu, num_cores=None, platform=cpu)"
    )


def case_make_array_from():
    mesh = morphax.make_mesh((2, 2), ("x", "y"))
    full = np.arange(32.0).reshape(8, 4)
    seen = []

    def cb(index):
        seen.append(index)
        return full[index]

    arr = morphax.make_array_from_callback((8, 4), NamedSharding(mesh, P("x", "y")), cb)
    assert _spec(arr) == P("x", "y") and arr.dtype == np.float32 and float(arr.sum()) == 496.0
    assert len(seen) == 4 and seen[3] == (slice(4, 8), slice(2, 4))
    pieces = [morphax.device_put(np.full((4, 4), float(d.id), np.float32), d) for d in mesh.devices.flat]
    arr2 = morphax.make_array_from_single_device_arrays((8, 4), NamedSharding(mesh, P("x")), pieces)
    np.testing.assert_array_equal(np.asarray(arr2)[:, 0], [0, 0, 0, 0, 2, 2, 2, 2])
    arr3 = morphax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), np.ones((8, 4)))
    assert _spec(arr3) == P("x") and arr3.shape == (8, 4) and arr3.dtype == np.float32
    _raises(
        ValueError,
        lambda: morphax.make_array_from_callback((8, 4), NamedSharding(mesh, P("x")), lambda i: np.ones(3)),
        ["expected (4, 4)"],
    )


# ----------------------------------------------------------------------- propagation and jit


def case_explicit_propagation():
    mesh = morphax.make_mesh((2, 2), ("x", "y"))
    xs = morphax.device_put(A, NamedSharding(mesh, P("x", None)))
    xc = morphax.device_put(A, NamedSharding(mesh, P(None, "y")))
    w = np.ones((4, 3), np.float32)
    wc = morphax.device_put(w, NamedSharding(mesh, P("y", None)))
    cases = {
        "elementwise": (morphax.jit(lambda v: v * 2 + 1)(xs), P("x", None), A * 2 + 1),
        "eager": (xs * 2, P("x", None), A * 2),
        "matmul": (morphax.jit(lambda v, m: v @ m)(xs, w), P("x", None), A @ w),
        "matmul eager": (xs @ w, P("x", None), A @ w),
        "contract one side": (morphax.jit(lambda v, m: v @ m)(xc, w), P(None, None), A @ w),
        "out dim": (
            morphax.jit(lambda v, m: v @ m)(
                A, morphax.device_put(np.ones((4, 4), np.float32), NamedSharding(mesh, P(None, "y")))
            ),
            P(None, "y"),
            A @ np.ones((4, 4)),
        ),
        "sum0": (morphax.jit(lambda v: v.sum(0))(xs), P(None), A.sum(0)),
        "sum1": (morphax.jit(lambda v: v.sum(1))(xs), P("x"), A.sum(1)),
        "T": (morphax.jit(lambda v: v.T)(xs), P(None, "x"), A.T),
        "xs + xc": (xs + xc, P("x", "y"), 2 * A),
        "xs + a": (xs + jnp.asarray(A), P("x", None), 2 * A),
        "reshape": (xs.reshape(32), P("x"), A.reshape(32)),
        "bcast": (xs[None], P(None, "x", None), A[None]),
        "exp": (jnp.exp(xs), P("x", None), np.exp(A)),
        "xs + row": (xs + jnp.ones(4), P("x", None), A + 1),
        "mean": (jnp.mean(xs), P(), A.mean()),
        "jit sum": (morphax.jit(lambda v: v.sum())(xs), P(), A.sum()),
        "jit tuple": (morphax.jit(lambda v: (v, v * 2))(xs)[0], P("x", None), A),
    }
    for name, (out, spec, want) in cases.items():
        assert out.sharding.mesh == mesh and out.committed, name
        assert _spec(out) == spec, f"{name}: {_spec(out)} != {spec}"
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6, err_msg=name)
    # NB: JAX raises ShardingTypeError for contracting dimensions split on both sides on Explicit
    # axes (unless out_sharding is named); morphax's types carry no sharding, so it gives the
    # replicated result, which is what a gradient's dot_general must give (below, as JAX).
    both = morphax.jit(lambda v, m: v @ m)(xc, wc)
    assert _spec(both) == P(None, None)
    np.testing.assert_allclose(np.asarray(both), A @ w)
    # Data-parallel gradients (JAX 0.10.2): a batch split over 'x', weights replicated on the mesh.
    m4 = morphax.make_mesh((4,), ("x",))
    batch = morphax.device_put(A, NamedSharding(m4, P("x")))
    weights = morphax.device_put(np.ones((4, 2), np.float32), NamedSharding(m4, P()))

    def loss(wt, x):
        return ((x @ wt) ** 2).sum()

    value, grad = morphax.jit(morphax.value_and_grad(loss))(weights, batch)
    assert _spec(value) == P() and _spec(grad) == P(None, None) and grad.sharding.mesh == m4
    np.testing.assert_allclose(np.asarray(grad), 2 * A.T @ (A @ np.ones((4, 2))), rtol=1e-6)
    # An uncommitted input gives an uncommitted single-device result.
    assert (
        repr(morphax.jit(lambda v: v + 1)(A).sharding)
        == "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"
    )


def case_auto_propagation():
    mesh = morphax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    xs = morphax.device_put(A, NamedSharding(mesh, P("x", None)))
    xc = morphax.device_put(A, NamedSharding(mesh, P(None, "y")))
    w = np.ones((4, 3), np.float32)
    wc = morphax.device_put(w, NamedSharding(mesh, P("y", None)))
    mm = morphax.jit(lambda v, m: v @ m)
    cases = {
        "matmul": (mm(xs, w), P("x", None), A @ w),
        "contract": (mm(xc, wc), P(), A @ w),
        "contract one side": (mm(xc, w), P(), A @ w),
        "sum0": (morphax.jit(lambda v: v.sum(0))(xs), P(), A.sum(0)),
        "sum1": (morphax.jit(lambda v: v.sum(1))(xs), P("x"), A.sum(1)),
        "wsc": (
            morphax.jit(lambda v: lax.with_sharding_constraint(v * 2, NamedSharding(mesh, P("y"))))(A),
            P("y"),
            2 * A,
        ),
        "wsc eager": (lax.with_sharding_constraint(jnp.asarray(A), NamedSharding(mesh, P("y"))), P("y"), A),
        "T": (morphax.jit(lambda v: v.T)(xs), P(None, "x"), A.T),
        "xs + xc": (xs + xc, P("x", "y"), 2 * A),
        "reshape": (xs.reshape(32), P("x"), A.reshape(32)),
        "bcast": (xs[None], P(None, "x"), A[None]),
        "mean": (jnp.mean(xs), P(), A.mean()),
        # An equation with no outputs (a callback) inside: nothing to lay out there.
        "callback": (
            morphax.jit(lambda v: morphax.debug.callback(lambda t: None, v) or v + 1)(xs),
            P("x", None),
            A + 1,
        ),
    }
    for name, (out, spec, want) in cases.items():
        assert out.sharding.mesh == mesh, name
        assert _spec(out) == spec, f"{name}: {_spec(out)} != {spec}"
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6, err_msg=name)


def case_jit_in_out_shardings():
    mesh = morphax.make_mesh((2, 2), ("x", "y"))
    sx = NamedSharding(mesh, P("x"))
    out = morphax.jit(lambda v: v * 2, out_shardings=NamedSharding(mesh, P(None, "x")))(A)
    assert _spec(out) == P(None, "x") and out.committed
    np.testing.assert_allclose(np.asarray(out), 2 * A)
    assert _spec(morphax.jit(lambda v: v * 2, in_shardings=sx)(A)) == P("x")
    r = morphax.jit(lambda v, w: (v * 2, w + 1), out_shardings=(sx, None))(A, A)
    assert _spec(r[0]) == P("x") and _spec(r[1]) == P() and r[0].committed and r[1].committed
    r = morphax.jit(lambda v, w: (v * 2, w + 1), in_shardings=(sx, None))(A, A)
    assert _spec(r[0]) == P("x") and _spec(r[1]) == P()
    r = morphax.jit(lambda v: v * 2, out_shardings=SingleDeviceSharding(D[2]))(A)
    assert (
        repr(r.sharding) == "SingleDeviceSharding(device=CpuDevice(id=2), memory_kind=device)" and r.committed
    )
    # device_put inside jit: a NamedSharding lays the result out, a device leaves it (JAX 0.10.2).
    m4 = morphax.make_mesh((4,), ("x",))
    inside = morphax.jit(lambda v: morphax.device_put(v, NamedSharding(m4, P("x"))) * 2)(jnp.ones(8))
    assert _spec(inside) == P("x")
    np.testing.assert_allclose(np.asarray(inside), 2 * np.ones(8))
    inside = morphax.jit(lambda v: morphax.device_put(v, D[2]) * 2)(jnp.ones(8))
    assert repr(inside.sharding) == "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"
    with morphax.set_mesh(mesh):
        assert _spec(morphax.jit(lambda v: v * 2, out_shardings=P("x"))(A)) == P("x")
    _raises(
        RuntimeError,
        lambda: morphax.jit(lambda v: v * 2, out_shardings=P("x"))(A),
        ["jit requires a non-empty mesh in context if you are passing `PartitionSpec`s to out_shardings"],
    )
    xc = morphax.device_put(A, NamedSharding(mesh, P(None, "y")))
    _raises(
        ValueError,
        lambda: morphax.jit(lambda v: v * 2, in_shardings=sx)(xc),
        [
            "Sharding passed to jit does not match the sharding on the respective arg. Got jit sharding: "
            "NamedSharding(mesh=Mesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit)), spec=P('x',), memory_kind=device),\n"
            "arg sharding: NamedSharding(mesh=Mesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit)), spec=P(None, 'y'), "
            "memory_kind=device) for arg type: float32[8,4@y]"
        ],
    )
    _raises(
        ValueError,
        lambda: morphax.jit(lambda v: v * 2, in_shardings=sx)(morphax.device_put(A, D[1])),
        [
            "arg sharding: SingleDeviceSharding(device=CpuDevice(id=1), memory_kind=device) for arg type: float32[8,4]"
        ],
    )
    _raises(
        ValueError,
        lambda: morphax.jit(lambda v: v * 2, in_shardings=sx)(jnp.ones(3)),
        ["partitioned 2 times"],
    )
    # grad and vmap of a function with a constraint: values unchanged.
    auto = morphax.make_mesh((4,), ("i",), axis_types=(AxisType.Auto,))
    f = lambda v: (lax.with_sharding_constraint(v, NamedSharding(auto, P("i"))) ** 2).sum()  # noqa: E731
    np.testing.assert_allclose(np.asarray(morphax.jit(morphax.grad(f))(A[0])), 2 * A[0])
    np.testing.assert_allclose(np.asarray(morphax.vmap(f)(A)), (A**2).sum(1))


def case_mesh_context_and_reshard():
    from morphax.sharding import auto_axes, explicit_axes, get_abstract_mesh, get_mesh, reshard

    mesh = morphax.make_mesh((2, 2), ("a", "b"))
    assert (
        repr(get_abstract_mesh()) == "AbstractMesh((), axis_types=())"
        and repr(get_mesh()) == "Mesh(axis_sizes=(), axis_names=())"
    )
    a = jnp.arange(8.0)
    with morphax.set_mesh(mesh):
        assert repr(get_abstract_mesh()) == (
            "AbstractMesh('a': 2, 'b': 2, axis_types=(Explicit, Explicit), device_kind=cpu, num_cores=None, platform=cpu)"
        )
        assert get_mesh() == mesh
        r = reshard(a, P("a"))
        assert (
            repr(r.sharding)
            == "NamedSharding(mesh=Mesh('a': 2, 'b': 2, axis_types=(Explicit, Explicit)), spec=P('a',), memory_kind=device)"
        )
        _raises(
            ValueError,
            lambda: reshard(a, P("z")),
            ["Resource axis: z of P('z',) is not found in mesh: ('a', 'b')."],
        )
        out = auto_axes(lambda v: v * 2, out_sharding=P("a"))(
            morphax.device_put(a, NamedSharding(mesh, P("a")))
        )
        assert _spec(out) == P("a")
        np.testing.assert_allclose(np.asarray(out), 2 * np.arange(8.0))
        assert _spec(explicit_axes(lambda v: v + 1, in_sharding=P("b"))(a)) == P("b")
        assert _spec(morphax.jit(lambda v: reshard(v * 2, P("b")))(a)) == P("b")
    assert _spec(reshard(a, NamedSharding(mesh, P("b")))) == P("b")
    _raises(
        ValueError,
        lambda: reshard(a, P("a")),
        [
            "Using PartitionSpec when you are not under a mesh context is not allowed. Please pass a NamedSharding instance"
        ],
    )
    auto = Mesh(np.array(D).reshape(2, 2), ("a", "b"))
    with morphax.set_mesh(auto):
        _raises(
            ValueError,
            lambda: reshard(a, P("a")),
            ["PartitionSpec passed to reshard cannot contain axis names that are of type Auto or Manual"],
        )
    _raises(
        ValueError,
        lambda: lax.with_sharding_constraint(a, NamedSharding(mesh, P("a"))),
        [
            "The spec of NamedSharding passed to with_sharding_constraint can only refer to Auto axes of the mesh. Got spec=P('a',)",
            "You probably meant to use `reshard` API?",
        ],
    )
    morphax.set_mesh(mesh)  # on its own: for the whole process
    try:
        assert get_mesh() == mesh
    finally:
        morphax.set_mesh(None)
    assert get_mesh().empty


# ------------------------------------------------------------------- inspect and visualize

PICTURE_X_NONE = """\
┌──────────┐
│          │
│ CPU 0,1  │
│          │
│          │
├──────────┤
│          │
│ CPU 2,3  │
│          │
│          │
└──────────┘
"""
PICTURE_X_Y = """\
┌───────┬───────┐
│       │       │
│ CPU 0 │ CPU 1 │
│       │       │
│       │       │
├───────┼───────┤
│       │       │
│ CPU 2 │ CPU 3 │
│       │       │
│       │       │
└───────┴───────┘
"""
PICTURE_NONE_Y = """\
┌───────┬───────┐
│       │       │
│       │       │
│       │       │
│       │       │
│CPU 0,2│CPU 1,3│
│       │       │
│       │       │
│       │       │
│       │       │
└───────┴───────┘
"""
PICTURE_1D = """\
┌───────┬───────┬───────┬───────┐
│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │
└───────┴───────┴───────┴───────┘
"""
PICTURE_ROWS = """\
┌──────────┐
│  CPU 0   │
├──────────┤
│  CPU 1   │
├──────────┤
│  CPU 2   │
├──────────┤
│  CPU 3   │
└──────────┘
"""
PICTURE_REPLICATED_1D = """\
┌───────────┐
│CPU 0,1,2,3│
└───────────┘
"""
PICTURE_SMALL = """\
┌─────┬─────┐
│CPU 0│CPU 1│
├─────┼─────┤
│CPU 2│CPU 3│
└─────┴─────┘
"""
PICTURE_BIG = """\
┌──────────┬──────────┐
│          │          │
│  CPU 0   │  CPU 1   │
│          │          │
│          │          │
├──────────┼──────────┤
│          │          │
│  CPU 2   │  CPU 3   │
│          │          │
│          │          │
└──────────┴──────────┘
"""
PICTURE_SCALED = """\
┌───────┬───────┬───────┬───────┐
│       │       │       │       │
│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │
│       │       │       │       │
│       │       │       │       │
└───────┴───────┴───────┴───────┘
"""


def _drawn(fn, *args, **kwargs) -> str:
    buf = io.StringIO()
    with redirect_stdout(buf):
        fn(*args, **kwargs)
    return buf.getvalue()


def case_visualize():
    mesh = morphax.make_mesh((2, 2), ("x", "y"))
    m4 = morphax.make_mesh((4,), ("x",))
    show = morphax.debug.visualize_sharding
    assert (
        _drawn(
            morphax.debug.visualize_array_sharding, morphax.device_put(A, NamedSharding(mesh, P("x", None)))
        )
        == PICTURE_X_NONE
    )
    assert _drawn(show, (8, 4), NamedSharding(mesh, P("x", "y"))) == PICTURE_X_Y
    assert _drawn(show, (8, 4), NamedSharding(mesh, P(None, "y"))) == PICTURE_NONE_Y
    assert _drawn(show, (8,), NamedSharding(m4, P("x"))) == PICTURE_1D
    assert _drawn(show, (8, 4), NamedSharding(m4, P("x"))) == PICTURE_ROWS
    assert _drawn(show, (8, 4), NamedSharding(mesh, P(("x", "y")))) == PICTURE_ROWS
    assert _drawn(show, (3,), NamedSharding(mesh, P())) == PICTURE_REPLICATED_1D
    assert (
        _drawn(
            show,
            (8, 4),
            NamedSharding(mesh, P("x", "y")),
            use_color=False,
            scale=0.5,
            min_width=5,
            max_width=40,
        )
        == PICTURE_SMALL
    )
    assert _drawn(show, (100, 100), NamedSharding(mesh, P("x", "y"))) == PICTURE_BIG
    assert _drawn(show, (4, 8), NamedSharding(m4, P(None, "x")), scale=0.5) == PICTURE_SCALED
    _raises(
        ValueError,
        lambda: show((2, 2, 2), NamedSharding(mesh, P())),
        ["`visualize_sharding` only works for shapes with 1 and 2 dimensions."],
    )


def case_inspect():
    mesh = morphax.make_mesh((2, 2), ("x", "y"))
    xs = morphax.device_put(A, NamedSharding(mesh, P("x")))
    got = []
    morphax.debug.inspect_array_sharding(xs, callback=got.append)
    assert got == [NamedSharding(mesh, P("x"))]
    got.clear()
    g = morphax.jit(lambda v: morphax.debug.inspect_array_sharding(v.T * 2, callback=got.append) or v)
    g(xs)
    g(xs)  # once per compiled program and input shardings, as JAX (while compiling)
    assert got == [NamedSharding(mesh, P(None, "x"))]
    got.clear()
    morphax.jit(lambda v: morphax.debug.inspect_array_sharding(v, callback=got.append) or v)(
        morphax.device_put(A, D[2])
    )
    # NB: JAX reports GSPMDSharding({replicated}) here (a class morphax lacks); the same layout.
    assert got == [SingleDeviceSharding(D[2])]
