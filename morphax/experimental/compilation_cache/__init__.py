"""`morphax.experimental.compilation_cache` (JAX's package of the same name): its one module,
`compilation_cache`, points morphax's disk cache of compiled programs."""
