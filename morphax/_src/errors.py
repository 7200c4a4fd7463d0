"""Error types users see, with messages that say what happened, where, and what to do.

Imports nothing from morphax beyond the standard library, so any layer can raise these.

The tracer errors ask the tracer where its value came from (``tracer._origin()``, a
`TracerOrigin` or None). Staging tracers answer with the function being traced and the
arguments the value depends on; the answer is computed only when an error is being raised.
"""

from __future__ import annotations

import dataclasses


class MorphaxTypeError(TypeError):
    pass


class JAXTypeError(TypeError):
    """A TypeError morphax raises about tracing (JAX's base of the tracer conversion errors)."""


class JAXIndexError(IndexError):
    """An IndexError morphax raises about tracing (JAX's base of NonConcreteBooleanIndexError)."""


class InconclusiveDimensionOperation(Exception):
    """An operation on symbolic dimensions whose answer cannot be decided (JAX's name)."""


class JaxRuntimeError(RuntimeError):
    """A failure while a computation ran (JAX's name, so `except jax.errors.JaxRuntimeError`
    works). As in JAX, an exception raised by a host callback inside a computation (any
    pure_callback or io_callback, a debug callback under jit) is reported as this, its message
    ending with the callback's traceback (higher_order/callbacks.py). NB: KeyboardInterrupt stays
    itself (JAX wraps it too), so Ctrl-C works as anywhere else."""


class KeyReuseError(RuntimeError):
    """A typed PRNG key was consumed twice while jax_debug_key_reuse was on."""


def immutable_message(typename: str) -> str:
    return (
        f"{typename!r} object does not support item assignment. morphax arrays are immutable. "
        "Instead of ``x[idx] = y``, use ``x = x.at[idx].set(y)`` or another .at[] method: "
        "https://jax.readthedocs.io/en/latest/_autosummary/jax.numpy.ndarray.at.html"
    )


# ------------------------------------------------------------------------------------ origins


@dataclasses.dataclass
class TracerOrigin:
    """Where a traced value came from, as far as the tracer can tell.

    ``description`` is one or more sentences for the message. ``arg_names`` are the names of the
    traced function's (flat) inputs the value depends on, and ``static_args`` the top-level
    arguments they belong to, as (label, positional index or None, parameter name or None): the
    arguments that could be marked static instead, for the transformation ``traced_for``
    ("jit", "make_jaxpr"). ``known`` is False when nothing is known beyond the function.
    ``batched`` is set when the value differs per element of a `vmap`.
    """

    description: str = ""
    arg_names: tuple = ()
    static_args: tuple = ()
    traced_for: str = ""
    fun_name: str = ""
    batched: bool = False


def _origin(tracer) -> TracerOrigin | None:
    try:
        return tracer._origin()
    except Exception:  # noqa: BLE001 - an error message must never fail to build
        return None


def _describe(tracer) -> str:
    try:
        return f"traced array with shape {tracer.aval.str_short()}"
    except Exception:  # noqa: BLE001 - descriptions must never fail
        return "traced array"


def _origin_text(origin: TracerOrigin | None) -> str:
    return f"\n{origin.description}" if origin is not None and origin.description else ""


def _tuple_text(items) -> str:
    return repr(items[0]) if len(items) == 1 else repr(tuple(items))


def _static_fix(origin: TracerOrigin | None) -> str:
    """The 'mark it static' advice, naming the arguments when they are known."""
    if origin is None or not origin.static_args:
        if origin is not None and origin.description:
            return ""  # the value does not come from an argument: nothing to mark static
        return (
            "If the value does not need to be traced, mark the argument it comes from static with "
            "`jit(f, static_argnums=...)` or `static_argnames=...`, so that it is a Python constant "
            "while tracing (each new value then triggers a retrace)."
        )
    fn = origin.fun_name or "f"
    labels = [label for label, _, _ in origin.static_args]
    nums = [pos for _, pos, _ in origin.static_args]
    names = [name for _, _, name in origin.static_args]
    ways = []
    if None not in nums and origin.traced_for in ("jit", "make_jaxpr"):
        ways.append(f"`{origin.traced_for}({fn}, static_argnums={_tuple_text(nums)})`")
    if origin.traced_for == "jit":
        if None not in names:
            ways.append(f"`jit({fn}, static_argnames={_tuple_text(names)})`")
        elif None in nums:
            unnamed = [pos for pos, name in zip(nums, names) if name is None]
            named = [name for name in names if name is not None]
            ways.append(
                f"`jit({fn}, static_argnums={_tuple_text(unnamed)}, static_argnames={_tuple_text(named)})`"
            )
    many = len(labels) > 1
    if not ways:
        return (
            f"If the argument{'s' if many else ''} {' and '.join(labels)} need{'' if many else 's'} no "
            "tracing, make it a static argument of the transformation (`jit(f, static_argnums=...)` or "
            "`static_argnames=...`), so that it is a Python constant while tracing."
        )
    return (
        f"If the argument{'s' if many else ''} {' and '.join(labels)} need{'' if many else 's'} no "
        f"tracing, mark {'them' if many else 'it'} static with {' or '.join(ways)}: "
        f"{'they are then Python constants' if many else 'it is then a Python constant'} while tracing, and each new value "
        "triggers a retrace."
    )


_GENERIC_ORIGIN = (
    "\nThis value became a tracer because it depends on an argument of a function being transformed "
    "with `jit` (or staged by `make_jaxpr`, `cond`, `scan`, ...), so its concrete value is not known "
    "while tracing."
)


def _bool_fix(origin: TracerOrigin | None) -> str:
    if origin is not None and origin.batched:
        return (
            "\nWhat to do: Python control flow (`if`, `while`, `and`/`or`) takes one path for the whole "
            "batch, but each element of a vmap may need a different one. Select elementwise with "
            "`jnp.where(pred, x, y)` (or `lax.select`), or use `lax.cond` / `lax.while_loop`, which "
            "vmap turns into selects over the batch."
        )
    return (
        "\nWhat to do: Python control flow (`if`, `while`, `and`/`or`, `bool()`) cannot branch on a "
        "traced value. Use structured control flow instead: `lax.cond` or `lax.switch` for branches, "
        "`lax.while_loop` or `lax.fori_loop` for loops, and `jnp.where` to select between values. "
        + _static_fix(origin)
    )


def _concrete_fix(origin: TracerOrigin | None) -> str:
    if origin is not None and origin.batched:
        return (
            "\nWhat to do: the value is batched by vmap (it differs for each element of the mapped "
            "axis), so it has no single Python value. Keep the computation in morphax.numpy/lax "
            "operations, or pass it with `in_axes=None` if it should not be mapped."
        )
    return (
        "\nWhat to do: keep the computation on arrays (use `x.astype(...)` or `jnp.asarray(x, dtype)` "
        "to change a dtype, and `lax.cond` / `lax.while_loop` / `jnp.where` for control flow). "
        + _static_fix(origin)
    )


# ------------------------------------------------------------------------------------- errors


class ConcretizationTypeError(JAXTypeError):
    """A concrete (Python) value was needed from an abstract tracer."""

    def __init__(self, tracer, context: str = ""):
        origin = _origin(tracer)
        context = f"\n{context}" if context else ""
        super().__init__(
            f"Abstract tracer value encountered where concrete value is expected: {_describe(tracer)}."
            f"{context}{_origin_text(origin) or _GENERIC_ORIGIN}{_concrete_fix(origin)}"
        )


class TracerBoolConversionError(ConcretizationTypeError):
    """`bool()` (an `if`, `while`, `and`, `or`, `not`) was applied to an abstract tracer."""

    def __init__(self, tracer):
        origin = _origin(tracer)
        TypeError.__init__(
            self,
            f"Attempted boolean conversion of {_describe(tracer)}."
            f"{_origin_text(origin) or _GENERIC_ORIGIN}{_bool_fix(origin)}",
        )


class TracerIntegerConversionError(JAXTypeError):
    """`__index__` (a `range`, list index, or shape) was applied to an abstract tracer."""

    def __init__(self, tracer):
        origin = _origin(tracer)
        if origin is not None and origin.batched:
            fix = (
                "\nWhat to do: the value is batched by vmap, so each element would need a different "
                "integer. Use `jnp.take` or `lax.dynamic_slice` / `lax.dynamic_index_in_dim` to index "
                "with it, or pass it with `in_axes=None` if it should not be mapped."
            )
        else:
            fix = (
                "\nWhat to do: a traced value cannot be used as a Python integer (a shape, a `range`, "
                "or a list/tuple index). To index an array with it use `jnp.take`, `x[i]` on the "
                "array itself, or `lax.dynamic_slice` / `lax.dynamic_index_in_dim`; for loops use "
                "`lax.fori_loop`. " + _static_fix(origin)
            )
        super().__init__(
            f"The __index__() method was called on {_describe(tracer)}."
            f"{_origin_text(origin) or _GENERIC_ORIGIN}{fix}"
        )


class TracerArrayConversionError(JAXTypeError):
    """`numpy.asarray` (``__array__``) was applied to a tracer, which has no data yet."""

    def __init__(self, tracer):
        origin = _origin(tracer)
        super().__init__(
            f"The numpy.ndarray conversion method __array__() was called on {_describe(tracer)}."
            f"{_origin_text(origin)}\n"
            "What to do: a traced value has no data while the function is being transformed, so NumPy "
            "functions cannot compute with it. Use `morphax.numpy` functions instead of `numpy` ones "
            "inside transformed functions; to run host code on the value use `morphax.pure_callback`, "
            "and to print it use `morphax.debug.print`."
        )


class NonConcreteBooleanIndexError(JAXIndexError):
    """A boolean mask known only at run time would give the result a data-dependent shape."""

    def __init__(self, tracer):
        super().__init__(
            f"Array boolean indices must be concrete; got a boolean {_describe(tracer)}."
            f"{_origin_text(_origin(tracer))}\n"
            "The result shape of boolean-mask indexing depends on the mask's values, which are not "
            "known while tracing. Keep the shape static instead: use `jnp.where(mask, x, fill)` for "
            "elementwise selection or `x.at[...]` updates, or get a fixed number of indices with "
            "`jnp.nonzero(mask, size=N, fill_value=...)` and index with those (the `size=` argument "
            "bounds the count)."
        )


_TRACE_KINDS = {
    "StagingTrace": "staging (jit / make_jaxpr / control flow)",
    "JVPTrace": "differentiation (grad / jvp / vjp)",
    "BatchTrace": "batching (vmap)",
}


class UnexpectedTracerError(JAXTypeError):
    """A tracer was used after the transformation that made it had finished (it escaped)."""

    def __init__(self, tracer):
        trace = getattr(tracer, "_trace", None)
        dbg = getattr(trace, "debug_info", None)
        kind = type(trace).__name__
        if dbg is not None:
            where = (
                f"The function being traced when the value escaped was {dbg.func_src_info}, "
                f"traced for {dbg.traced_for}."
            )
        else:
            where = f"It belonged to a {_TRACE_KINDS.get(kind, kind)} transformation."
        super().__init__(
            f"Encountered an unexpected tracer: an intermediate value ({_describe(tracer)}, a "
            f"{type(tracer).__name__}) escaped the scope of the transformation that created it, and "
            f"was used after that transformation had finished.\n{where}\n"
            "This happens when a transformed function has a side effect that keeps a traced value: "
            "storing it in a global variable, appending it to a list or dict from an enclosing scope "
            "(a closure), or setting it as an attribute of an object.\n"
            "What to do: transformed functions must return their outputs explicitly. Return the value "
            "from the function (with its other outputs) and use the returned array outside; for state "
            "that changes between calls, pass it in as an argument and return the new state."
        )
