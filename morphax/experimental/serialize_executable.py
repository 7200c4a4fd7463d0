"""`morphax.experimental.serialize_executable` (JAX's module of the same name): a compiled program
as bytes, and back."""

from morphax._src.export.executable_serialization import deserialize_and_load, serialize

__all__ = ["deserialize_and_load", "serialize"]
