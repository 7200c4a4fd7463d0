"""`morphax.sharding`: meshes, partition specs and shardings (`jax.sharding`)."""

from morphax._src.sharding.mesh import (
    AbstractDevice,
    AbstractMesh,
    AxisType,
    ManualAxisType,
    Mesh,
    get_abstract_mesh,
    get_mesh,
    set_mesh,
    use_abstract_mesh,
)
from morphax._src.sharding.partition_spec import PartitionSpec
from morphax._src.sharding.resharding import auto_axes, explicit_axes, reshard
from morphax._src.sharding.shardings import (
    NamedSharding,
    Sharding,
    SingleDeviceSharding,
    make_single_device_sharding,
)

__all__ = [
    "AbstractDevice",
    "AbstractMesh",
    "AxisType",
    "ManualAxisType",
    "Mesh",
    "NamedSharding",
    "PartitionSpec",
    "Sharding",
    "SingleDeviceSharding",
    "auto_axes",
    "explicit_axes",
    "get_abstract_mesh",
    "get_mesh",
    "make_single_device_sharding",
    "reshard",
    "set_mesh",
    "use_abstract_mesh",
]
