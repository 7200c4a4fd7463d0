"""The small `morphax.experimental` modules: `mesh_utils` (device arrays for a Mesh, laid out as
JAX lays out CPU devices), `compilation_cache` (pointing the disk cache of compiled programs) and
`serialize_executable` (a compiled program as bytes, loaded back in another process)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax.experimental import mesh_utils, serialize_executable


@dataclasses.dataclass(frozen=True)
class _Dev:
    id: int
    process_index: int = 0
    slice_index: int = 0


def test_create_device_mesh_lays_out_the_list_in_order():
    devs = [_Dev(i) for i in range(8)]
    mesh = mesh_utils.create_device_mesh((2, 4), devs)
    assert mesh.shape == (2, 4) and mesh.dtype == object
    assert [d.id for d in mesh.ravel()] == list(range(8))
    # JAX converts each size with int(): 2.0 is accepted.
    assert mesh_utils.create_device_mesh([4.0, 2], devs).shape == (4, 2)
    with pytest.raises(
        ValueError, match=r"Number of devices 8 must equal the product of mesh_shape \(3, 2\)"
    ):
        mesh_utils.create_device_mesh((3, 2), devs)
    with pytest.raises(ValueError, match="should be a sequence of ints"):
        mesh_utils.create_device_mesh(("a", 2), devs)
    # Default: every device of the run, usable as a Mesh.
    mesh = mesh_utils.create_device_mesh((len(morphax.devices()),))
    assert list(mesh) == morphax.devices()
    morphax.sharding.Mesh(mesh, ("x",))


def test_create_hybrid_device_mesh_tiles_granules():
    # Two slices of four devices each, listed interleaved; slices are the outer (DCN) axis.
    devs = [_Dev(i, slice_index=i % 2) for i in range(8)]
    mesh = mesh_utils.create_hybrid_device_mesh((1, 4), (2, 1), devs)
    assert mesh.shape == (2, 4)
    assert [d.id for d in mesh[0]] == [0, 2, 4, 6] and [d.id for d in mesh[1]] == [1, 3, 5, 7]
    mesh = mesh_utils.create_hybrid_device_mesh((2, 2), (1, 2), devs)
    assert mesh.shape == (2, 4)
    assert [[d.id for d in row] for row in mesh] == [[0, 2, 1, 3], [4, 6, 5, 7]]
    by_process = [_Dev(i, process_index=i // 2) for i in range(4)]
    mesh = mesh_utils.create_hybrid_device_mesh((2,), (2,), by_process, process_is_granule=True)
    assert [d.id for d in mesh] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="Number of slices 2 must equal the product of dcn_mesh_shape"):
        mesh_utils.create_hybrid_device_mesh((4,), (1,), devs)
    # morphax's devices, as JAX's CPU devices, have no slice_index.
    with pytest.raises(ValueError, match="does not have attribute slice_index. See `process_is_granule`"):
        mesh_utils.create_hybrid_device_mesh((1,), (1,))


def test_set_cache_dir_moves_the_disk_cache(tmp_path, python_child):
    target = tmp_path / "chosen"
    res = python_child(
        f"""
        import os
        import morphax, morphax.numpy as jnp
        from morphax.experimental.compilation_cache import compilation_cache as cc
        from morphax._src.compiler.backends.c import disk_cache
        cc.set_cache_dir({str(target)!r})
        assert morphax.config.jax_compilation_cache_dir == {str(target)!r}
        f = morphax.jit(lambda x: jnp.sin(x) * 3.25 + jnp.cos(x) / 7.5)
        f(jnp.arange(5.0)).block_until_ready()
        print(disk_cache.directory())
        cc.set_cache_dir(None)
        cc.reset_cache()
        print(disk_cache.directory())
        """,
        env_extra={"MORPHAX_CACHE_DIR": str(tmp_path / "from-env"), "MORPHAX_COMPILE_IN_BACKGROUND": "0"},
    )
    chosen, after = res.stdout.split()
    assert chosen == str(target / "c")
    assert after == str(tmp_path / "from-env" / "c")
    if morphax.config.morphax_backend == "c":
        assert any(p.suffix == ".so" for p in (target / "c").rglob("*")), sorted((target / "c").rglob("*"))


def test_serialize_and_load_in_another_process(tmp_path, python_child):
    def f(x, p):
        return {"y": jnp.tanh(x @ p["w"]) + p["b"], "n": jnp.sum(x)}

    x = jnp.arange(6.0).reshape(2, 3) / 5
    params = {"w": jnp.ones((3, 2)) * 0.5, "b": jnp.float32(0.25)}
    compiled = morphax.jit(f).lower(x, params).compile()
    blob, in_tree, out_tree = serialize_executable.serialize(compiled)
    assert isinstance(blob, bytes) and in_tree == compiled._traced.in_tree
    loaded = serialize_executable.deserialize_and_load(blob, in_tree, out_tree)
    want = f(x, params)
    got = loaded(x, params)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-6)
    np.testing.assert_allclose(got["n"], want["n"])
    assert loaded.num_kernels == compiled.num_kernels
    # The bytes stand alone: a fresh process rebuilds the program from them and the trees.
    (tmp_path / "prog.bin").write_bytes(blob)
    res = python_child(
        f"""
        import numpy as np
        import morphax, morphax.numpy as jnp
        from morphax.experimental import serialize_executable as se
        x = jnp.arange(6.0).reshape(2, 3) / 5
        params = {{"w": jnp.ones((3, 2)) * 0.5, "b": jnp.float32(0.25)}}
        in_tree = morphax.tree.structure(((x, params), {{}}))
        out_tree = morphax.tree.structure({{"n": 0, "y": 0}})
        blob = open({str(tmp_path / "prog.bin")!r}, "rb").read()
        out = se.deserialize_and_load(blob, in_tree, out_tree)(x, params)
        print(np.asarray(out["y"]).round(6).tolist())
        """
    )
    assert res.stdout.strip() == str(np.asarray(want["y"]).round(6).tolist())
    with pytest.raises(TypeError, match="Argument types differ"):
        loaded(x.astype(jnp.int32), params)
    with pytest.raises(ValueError, match="not written by morphax"):
        serialize_executable.deserialize_and_load(b"junk", in_tree, out_tree)
    with pytest.raises(TypeError, match="expected a Compiled"):
        serialize_executable.serialize(morphax.jit(f))
