"""`morphax.image` implementation: resampling (`scale`)."""
