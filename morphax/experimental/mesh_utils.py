"""`morphax.experimental.mesh_utils` (JAX's `jax.experimental.mesh_utils`): device arrays shaped
for `sharding.Mesh`."""

from morphax._src.sharding.mesh_utils import create_device_mesh, create_hybrid_device_mesh

__all__ = ["create_device_mesh", "create_hybrid_device_mesh"]
