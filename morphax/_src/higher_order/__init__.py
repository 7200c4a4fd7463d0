"""The higher-order primitives: those whose parameters hold jaxprs (or host functions) and whose
rules transform them with the jaxpr-to-jaxpr transformations of `transforms/`. Each is declared in
one block, like the primitives of `prims/`: calls (`pjit`), custom-rule calls (`custom_calls`),
host callbacks (`callbacks`), branches (`conditionals`), loops (`while_loop`, `scan`, `loops`),
`reduce` with a jaxpr combiner, linear solvers (`solvers`) and rematerialization (`remat`).

Importing this package registers custom_calls with the staging trace
(`transforms.staging.custom_call_stagers`), which records custom_jvp / custom_vjp calls as its
primitives.
"""

from morphax._src.higher_order import custom_calls  # noqa: F401
