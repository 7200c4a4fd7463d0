"""Error types users see, with messages that say what happened and what to do.

Imports nothing from morphax beyond the standard library, so any layer can raise these.
"""

from __future__ import annotations


class MorphaxTypeError(TypeError):
    pass


def immutable_message(typename: str) -> str:
    return (
        f"{typename!r} object does not support item assignment. morphax arrays are immutable. "
        "Instead of ``x[idx] = y``, use ``x = x.at[idx].set(y)`` or another .at[] method: "
        "https://jax.readthedocs.io/en/latest/_autosummary/jax.numpy.ndarray.at.html"
    )


def _describe(tracer) -> str:
    try:
        return f"traced array with shape {tracer.aval.str_short()}"
    except Exception:  # noqa: BLE001 - descriptions must never fail
        return "traced array"


class ConcretizationTypeError(TypeError):
    """A concrete value was needed from an abstract (staged) tracer."""

    def __init__(self, tracer, context: str = ""):
        super().__init__(
            f"Abstract tracer value encountered where concrete value is expected: {_describe(tracer)}.\n"
            f"{context}\n"
            "This value became a tracer because it depends on an argument of a function being "
            "transformed with `jit` (or staged by `make_jaxpr`, `cond`, `scan`, ...). Python "
            "control flow (`if`, `while`, `bool()`, `int()`) cannot branch on it.\n"
            "What to do: use structured control flow (`lax.cond`, `lax.switch`, `lax.while_loop`, "
            "`jnp.where`), or mark the argument static with `jit(f, static_argnums=...)` / "
            "`static_argnames=...` so its value is known while tracing."
        )


class TracerIntegerConversionError(TypeError):
    def __init__(self, tracer):
        super().__init__(
            f"The __index__() method was called on {_describe(tracer)}. A traced value cannot be used "
            "as a Python integer (for a shape, a range, or list indexing). Mark the argument static "
            "with `static_argnums`, or use `lax.dynamic_slice` / `jnp.take` for data-dependent indexing."
        )


class TracerArrayConversionError(TypeError):
    def __init__(self, tracer):
        super().__init__(
            f"The numpy.ndarray conversion method __array__() was called on {_describe(tracer)}. "
            "A traced value has no data yet: use morphax.numpy functions instead of numpy ones "
            "inside transformed functions, or compute this value outside the transformation."
        )


class UnexpectedTracerError(Exception):
    def __init__(self, tracer):
        super().__init__(
            f"Encountered an unexpected tracer: a {_describe(tracer)} that belongs to a "
            f"transformation ({type(tracer._trace).__name__}) which has already finished. "
            "This usually means a value computed inside a transformed function escaped it, for "
            "example by being stored in a global or an attribute (a side effect). Return the "
            "value from the function instead of storing it."
        )
