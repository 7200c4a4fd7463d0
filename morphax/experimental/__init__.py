"""`morphax.experimental` (JAX's `jax.experimental`): APIs that JAX marks experimental. Submodules
are imported on use (`from morphax.experimental import checkify`)."""
