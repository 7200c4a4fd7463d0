"""`morphax.example_libraries`: JAX's small neural-network library (`stax`) and first-order
optimizers (`optimizers`), written on morphax's public API like JAX's own, with the same API
and, for the same key, the same initial parameters."""
