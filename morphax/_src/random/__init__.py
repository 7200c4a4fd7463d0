"""`morphax.random` implementation: threefry2x32 keys (`prng`) and the samplers (`distributions`).

Keys are raw ``uint32[..., 2]`` arrays as made by ``PRNGKey``; every sampler is a composition of
primitives, so it traces, differentiates (to zero) and gives JAX's bits.
"""
