"""What JAX libraries reach for in `jax._src.dispatch` (the module `morphax.compat` maps that name
to): `wait_for_tokens`, which waits for pending effects (equinox calls it after a run), and
`apply_primitive`, evaluating one primitive eagerly."""

from __future__ import annotations


def wait_for_tokens() -> None:
    """Wait until every computation with ordered effects dispatched so far has run."""
    from morphax._src.api.jit import effects_barrier  # noqa: PLC0415

    effects_barrier()


def apply_primitive(prim, *args, **params):
    """`prim` applied to concrete `args` now (on the eager trace)."""
    from morphax._src.core import trace as _trace  # noqa: PLC0415

    with _trace.set_current_trace(_trace.base_trace()):
        return prim.bind(*args, **params)


__all__ = ["apply_primitive", "wait_for_tokens"]
