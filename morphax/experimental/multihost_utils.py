"""`morphax.experimental.multihost_utils` (JAX's `jax.experimental.multihost_utils`): collectives
between the processes of a run on host data (after morphax.distributed.initialize)."""

from morphax._src.distributed.multihost import (
    assert_equal,
    broadcast_one_to_all,
    process_allgather,
    sync_global_devices,
)

__all__ = ["assert_equal", "broadcast_one_to_all", "process_allgather", "sync_global_devices"]
