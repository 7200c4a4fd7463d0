"""What libraries import from JAX's internal `jax._src.state` (the package `morphax.compat` maps
that name to): the types of mutable array references, in `types`."""
