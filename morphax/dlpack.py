"""`morphax.dlpack`: arrays from other libraries through the DLPack protocol, mirroring
``jax.dlpack`` (`from_dlpack`, and `is_supported_dtype`: the dtypes DLPack exchange covers)."""

from __future__ import annotations

from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import host_io as _host_io

__all__ = ["from_dlpack", "is_supported_dtype"]

# The dtypes JAX exchanges through DLPack, by name (so asking does not load ml_dtypes): the
# integer, floating (bfloat16 included), complex and boolean types; not float8/int4 and the like.
_SUPPORTED_NAMES = frozenset(
    "int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 bfloat16 float32 float64 "
    "complex64 complex128 bool".split()
)


def is_supported_dtype(dtype) -> bool:
    """Whether arrays of `dtype` can be exchanged through DLPack (as `jax.dlpack` decides)."""
    if dtype is None:
        # np.dtype(None) is float64, which would answer a question nobody asked.
        raise TypeError(f"Expected a string or dtype-like object; got {dtype=}")
    return _dtypes._np_dtype(dtype).name in _SUPPORTED_NAMES


def from_dlpack(external_array, device=None, copy=None):
    """An Array holding the data of `external_array`, an object with ``__dlpack__`` and
    ``__dlpack_device__`` methods (a NumPy array, a torch tensor, another Array). `device`
    places the result (a Device or Sharding); `copy` is passed to the exporter. The same
    function as `morphax.numpy.from_dlpack`."""
    return _host_io.from_dlpack(external_array, device=device, copy=copy)
