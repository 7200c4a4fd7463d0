"""`morphax.distributed` (JAX's `jax.distributed`): join the processes of a run started with
``mpirun -n N python script.py`` (needs ``pip install 'morphax[distributed]'``)."""

from morphax._src.distributed.state import initialize, is_initialized, shutdown

__all__ = ["initialize", "is_initialized", "shutdown"]
