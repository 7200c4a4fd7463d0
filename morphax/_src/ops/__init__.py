"""`morphax.ops` implementation: segment reductions (`segments`)."""
