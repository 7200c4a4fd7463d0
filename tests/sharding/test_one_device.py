"""morphax.sharding on the one default device, in this process: the API of `jax.sharding` (every
name of JAX's list), PartitionSpec, meshes and shardings (reprs and errors as JAX 0.10.2's),
placement defaults, with_sharding_constraint under jit/grad/vmap, and the pictures."""

from __future__ import annotations

import io
import pathlib
from contextlib import redirect_stdout

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax.sharding import (
    AbstractDevice,
    AbstractMesh,
    AxisType,
    ManualAxisType,
    Mesh,
    NamedSharding,
    SingleDeviceSharding,
    get_abstract_mesh,
    make_single_device_sharding,
    use_abstract_mesh,
)
from morphax.sharding import PartitionSpec as P

API = pathlib.Path(__file__).resolve().parents[1] / "data" / "api"
D0 = morphax.devices()[0]


def test_every_name_of_jax_sharding_and_the_top_level_ones():
    names = (API / "jax_sharding.txt").read_text().split()
    assert len(names) == 17
    assert [n for n in names if not hasattr(morphax.sharding, n)] == []
    top = ["P", "NamedSharding", "Shard", "make_mesh", "set_mesh", "reshard", "make_array_from_callback",
           "make_array_from_single_device_arrays", "make_array_from_process_local_data"]  # fmt: skip
    assert [n for n in top if not hasattr(morphax, n)] == []
    assert morphax.P is morphax.sharding.PartitionSpec
    debug = ["inspect_array_sharding", "visualize_array_sharding", "visualize_sharding"]
    assert [n for n in debug if not hasattr(morphax.debug, n)] == []


def test_partition_spec():
    assert repr(P("x", None)) == "P('x', None)" and repr(P("x")) == "P('x',)" and repr(P()) == "P()"
    assert repr(P(("x", "y"), None)) == "P(('x', 'y'), None)" and repr(P(("x",), "y")) == "P('x', 'y')"
    assert repr(P("x", P.UNCONSTRAINED)) == "P('x', UNCONSTRAINED)"
    assert repr(P("x", unreduced={"y"})) == "P('x', unreduced={'y'})"
    # As JAX: equal only to an equal spec (P('x') and P('x', None) are one layout, not equal).
    assert P("x") != P("x", None) and P(None) != P() and P("x") != ("x",) and P("x") == P("x")
    assert hash(P("x")) == hash(P("x")) and len(P("x", None)) == 2 and P("x", None)[1] is None
    assert tuple(P(("x", "y"))) == (("x", "y"),)
    with pytest.raises(TypeError, match="must be a mesh axis name"):
        P(3)


def test_meshes_on_one_device():
    mesh = morphax.make_mesh((1,), ("x",))
    assert repr(mesh) == "Mesh(axis_sizes=(1,), axis_names=('x',), axis_types=(Explicit,))"
    assert str(mesh) == "Mesh('x': 1, axis_types=(Explicit,))"
    assert mesh.shape == {"x": 1} and mesh.axis_sizes == (1,) and mesh.size == 1 and not mesh.empty
    assert mesh.shape_tuple == (("x", 1),) and mesh.local_devices == [D0] and not mesh.is_multi_process
    assert mesh == morphax.make_mesh((1,), ("x",)) and hash(mesh) == hash(morphax.make_mesh((1,), ("x",)))
    assert Mesh([[D0]], ("a", "b")).devices.shape == (1, 1)  # nested lists as JAX takes them
    plain = Mesh([D0], "i")
    assert repr(plain) == "Mesh(axis_sizes=(1,), axis_names=('i',), axis_types=(Auto,))"
    abstract = AbstractMesh((2, 2), ("a", "b"))
    assert repr(abstract) == "AbstractMesh('a': 2, 'b': 2, axis_types=(Auto, Auto))"
    assert abstract.size == 4 and abstract.axis_types == (AxisType.Auto, AxisType.Auto)
    assert repr(mesh.abstract_mesh) == (
        "AbstractMesh('x': 1, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu)"
    )
    assert mesh.abstract_mesh.abstract_device == AbstractDevice("cpu")
    assert [repr(t) for t in AxisType] == ["Auto", "Explicit", "Manual"]
    with pytest.raises(ValueError, match="ndim of its first argument"):
        Mesh(np.array([D0]).reshape(1, 1), ("a",))
    with pytest.raises(ValueError, match="Number of devices 1 must be >= the product of mesh_shape"):
        morphax.make_mesh((2,), ("x",))
    assert repr(get_abstract_mesh()) == "AbstractMesh((), axis_types=())"
    with use_abstract_mesh(abstract):
        assert get_abstract_mesh() == abstract
    with morphax.set_mesh(mesh):
        assert morphax.sharding.get_mesh() == mesh
    assert morphax.sharding.get_mesh().empty
    with pytest.warns(DeprecationWarning, match="with mesh"):
        with mesh:
            pass
    m = ManualAxisType(varying={"x"})
    assert m.varying == frozenset({"x"}) and m == ManualAxisType(varying=frozenset({"x"}))
    with pytest.raises(ValueError, match="varying and unreduced cannot have common mesh axes"):
        ManualAxisType(varying={"x"}, unreduced={"x"})


def test_shardings_on_one_device():
    mesh = morphax.make_mesh((1,), ("x",))
    s = NamedSharding(mesh, P("x"))
    assert (
        repr(s)
        == "NamedSharding(mesh=Mesh('x': 1, axis_types=(Explicit,)), spec=P('x',), memory_kind=device)"
    )
    assert s.device_set == {D0} and s.is_fully_replicated and s.memory_kind == "device" and s.num_devices == 1
    assert s.devices_indices_map((4, 2)) == {D0: (slice(None), slice(None))}  # one piece
    assert s.shard_shape((4, 2)) == (4, 2) and s.is_fully_addressable
    with pytest.raises(ValueError, match=r"Resource axis: z of P\('z',\) is not found in mesh: \('x',\)\."):
        NamedSharding(mesh, P("z"))
    with pytest.raises(TypeError, match="spec must be a PartitionSpec"):
        NamedSharding(mesh, ("x",))
    one = SingleDeviceSharding(D0)
    assert repr(one) == "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"
    assert one == make_single_device_sharding(D0) and one.devices_indices_map((2, 3)) == {
        D0: (slice(None),) * 2
    }
    assert one.is_equivalent_to(s, 2) and s.is_equivalent_to(NamedSharding(mesh, P()), 1)


def test_arrays_know_their_placement():
    x = jnp.arange(6.0).reshape(2, 3)
    assert x.sharding == SingleDeviceSharding(D0) and not x.committed and x.devices() == {D0}
    assert x.device is D0 and x.is_fully_replicated and x.is_fully_addressable
    [shard] = x.addressable_shards
    assert shard.device is D0 and shard.index == (slice(None), slice(None)) and shard.replica_id == 0
    np.testing.assert_array_equal(np.asarray(shard.data), np.asarray(x))
    y = morphax.device_put(x, D0)
    assert y.committed and (y + 1).committed and morphax.jit(lambda v: v * 2)(y).committed
    assert not morphax.device_put(x).committed
    mesh = morphax.make_mesh((1,), ("x",))
    z = morphax.device_put(np.ones((2, 3), np.float32), NamedSharding(mesh, P("x")))
    assert z.sharding.spec == P("x") and z.committed
    assert morphax.jit(lambda v: v.sum(1))(z).sharding.spec == P("x")
    np.testing.assert_allclose(np.asarray(morphax.jit(lambda v: v * 3)(z)), 3 * np.ones((2, 3)))


def test_with_sharding_constraint_is_the_identity_on_values():
    auto = Mesh([D0], ("i",))  # an Auto axis, which with_sharding_constraint may name
    s = NamedSharding(auto, P("i"))
    x = np.arange(4.0, dtype=np.float32)
    f = lambda v: (lax.with_sharding_constraint(jnp.sin(v), s) ** 2).sum()  # noqa: E731
    np.testing.assert_allclose(np.asarray(morphax.jit(f)(x)), (np.sin(x) ** 2).sum(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(morphax.grad(f)(x)), 2 * np.sin(x) * np.cos(x), rtol=1e-6)
    batched = morphax.vmap(lambda v: lax.with_sharding_constraint(v * 2, s))(np.ones((3, 4), np.float32))
    np.testing.assert_allclose(np.asarray(batched), 2 * np.ones((3, 4)))
    jaxpr = str(morphax.make_jaxpr(lambda v: lax.with_sharding_constraint(v, s))(x))
    assert "sharding_constraint" in jaxpr
    assert morphax.jit(lambda v: lax.with_sharding_constraint(v, s))(x).sharding.spec == P("i")
    with pytest.raises(TypeError, match="expected a Sharding"):
        lax.with_sharding_constraint(x, object())
    explicit = NamedSharding(morphax.make_mesh((1,), ("x",)), P("x"))
    with pytest.raises(ValueError, match="can only refer to Auto axes of the mesh"):
        lax.with_sharding_constraint(x, explicit)


def test_pictures_and_inspection_on_one_device():
    buf = io.StringIO()
    with redirect_stdout(buf):
        morphax.debug.visualize_array_sharding(jnp.arange(8.0))
        morphax.debug.visualize_array_sharding(jnp.ones((8, 4)))
    # JAX 0.10.2's pictures (no colour: drawn to a non-terminal).
    assert buf.getvalue() == (
        "┌───────┐\n│ CPU 0 │\n└───────┘\n"
        "┌──────────┐\n│          │\n│          │\n│          │\n│          │\n│  CPU 0   │\n"
        "│          │\n│          │\n│          │\n│          │\n└──────────┘\n"
    )
    with pytest.raises(ValueError, match="only works for shapes with 1 and 2 dimensions"):
        morphax.debug.visualize_array_sharding(jnp.ones((2, 2, 2)))
    got = []
    morphax.debug.inspect_array_sharding({"a": jnp.ones(2)}, callback=got.append)
    f = morphax.jit(lambda v: morphax.debug.inspect_array_sharding(v * 2, callback=got.append) or v + 1)
    np.testing.assert_allclose(np.asarray(f(jnp.ones(2))), 2 * np.ones(2))
    f(jnp.ones(2))
    assert got == [SingleDeviceSharding(D0), SingleDeviceSharding(D0)]
