"""`morphax.export` (JAX's `jax.export`): exporting jitted functions with their jaxpr and StableHLO
module, symbolic shapes, calling exported functions, and (de)serializing them. The public names
are re-exported by `morphax/export.py`."""
