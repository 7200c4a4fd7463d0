"""checkify's entry points: `checkify` (trace a function, then interpret its jaxpr with checks),
`check` / `debug_check` (bind the check primitive on a one-check error), `check_error` (bind it on
an error value), and the sets of error kinds `checkify(errors=...)` takes.
"""

from __future__ import annotations

import numpy as np

from morphax._src.checkify import interpreter
from morphax._src.checkify.errors import (
    DivisionByZeroError,
    Error,
    FailedCheckError,
    NaNError,
    OOBError,
    assert_func,
    bind_check,
    init_error,
)
from morphax._src.core import pytree
from morphax._src.core.avals import get_aval
from morphax._src.core.trace import Tracer
from morphax._src.core.values import is_concrete_array
from morphax._src.higher_order.checks import functionalizing
from morphax._src.prims import lax_api as L
from morphax._src.transforms.staging import DebugInfo, fun_name, fun_sourceinfo, trace_to_jaxpr
from morphax._src.wrapping import wraps

__all__ = [
    "all_checks",
    "automatic_checks",
    "check",
    "check_error",
    "checkify",
    "debug_check",
    "div_checks",
    "float_checks",
    "index_checks",
    "nan_checks",
    "user_checks",
]

user_checks = frozenset({FailedCheckError})
nan_checks = frozenset({NaNError})
index_checks = frozenset({OOBError})
div_checks = frozenset({DivisionByZeroError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks


def checkify(f, errors=user_checks):
    """Functionalize the `check`s in `f` and add the automatic checks named in `errors`.

    The returned function takes `f`'s arguments and returns ``(err, out)``: `out` is `f`'s output
    and `err` an `Error` whose ``get()`` is the message of the first failure (None if nothing
    failed) and whose ``throw()`` raises it. `errors` is a set of error kinds: `user_checks` (the
    default), `nan_checks`, `div_checks`, `index_checks`, or unions such as `float_checks`,
    `automatic_checks`, `all_checks`. The result composes with jit, vmap and grad.
    """
    if not callable(f):
        raise TypeError(f"checkify: expected a callable as its first argument, got {f!r} of type {type(f)}.")
    try:
        enabled = frozenset(errors)
    except TypeError:
        raise TypeError(
            f"checkify: `errors` must be a set of error kinds such as checkify.user_checks or "
            f"checkify.float_checks | checkify.index_checks, got {errors!r}."
        ) from None
    unknown = [e for e in enabled if e not in all_checks]
    if unknown:
        raise TypeError(
            f"checkify: `errors` holds {unknown!r}, which is not an error kind; combine "
            "checkify.user_checks, nan_checks, div_checks and index_checks."
        )

    @wraps(f)
    def checked_fun(*args, **kwargs):
        # The arguments are closed over (not abstracted), as in JAX: the traced program holds them
        # as constants, whatever trace they belong to, and the interpreter binds on that trace.
        box = []

        def traced():
            leaves, tree = pytree.tree_flatten(f(*args, **kwargs))
            box.append(tree)
            return leaves

        debug = DebugInfo("checkify", fun_name(f), fun_sourceinfo(f))
        with functionalizing():
            closed = trace_to_jaxpr(traced, [], debug_info=debug)
        error, outs = interpreter.checkify_jaxpr(closed, enabled, init_error)
        return error, pytree.tree_unflatten(box[0], outs)

    return checked_fun


def _is_scalar_pred(pred) -> bool:
    if isinstance(pred, (bool, np.bool_)):
        return True
    if isinstance(pred, Tracer) or is_concrete_array(pred):
        aval = get_aval(pred)
        return aval.shape == () and aval.dtype == np.dtype(bool)
    return False


def _check(pred, msg, debug, *fmt_args, **fmt_kwargs):
    if not _is_scalar_pred(pred):
        name = "debug_check" if debug else "check"
        raise TypeError(f"{name} takes a scalar pred as argument, got {pred}")
    for arg in pytree.tree_leaves((fmt_args, fmt_kwargs)):
        if not (isinstance(arg, (Tracer, np.ndarray)) or is_concrete_array(arg)):
            raise TypeError(
                "Formatting arguments to checkify.check need to be PyTrees of arrays, but got "
                f"{arg!r} of type {type(arg)}."
            )
    if not isinstance(msg, str):
        raise TypeError(f"checkify.check: `msg` must be a (format) string, got {type(msg)}.")
    new_error = FailedCheckError(None, msg, *fmt_args, **fmt_kwargs)
    failed = L.bitwise_not(np.bool_(pred) if isinstance(pred, (bool, np.bool_)) else pred)
    error = assert_func(init_error, failed, new_error)
    bind_check(error, debug=debug)


def check(pred, msg: str, *fmt_args, debug: bool = False, **fmt_kwargs) -> None:
    """Report `msg` (formatted with `fmt_args`/`fmt_kwargs`, arrays whose values it shows) when
    the scalar bool `pred` is False.

    Under `checkify` the failure becomes the returned error; evaluated eagerly it raises
    JaxRuntimeError at once; staged (jit, loop bodies) without `checkify` it cannot be, and
    tracing raises a ValueError. `debug=True` makes it a `debug_check`.
    """
    _check(pred, msg, debug, *fmt_args, **fmt_kwargs)


def debug_check(pred, msg: str, *fmt_args, **fmt_kwargs) -> None:
    """A `check` that does something only under `checkify`; elsewhere (eager or jit) a no-op."""
    _check(pred, msg, True, *fmt_args, **fmt_kwargs)


def check_error(error: Error) -> None:
    """Raise `error` (JaxRuntimeError) if it holds a failure; functionalized by `checkify`, so an
    error from an inner `checkify` can be re-raised inside an outer one."""
    if not isinstance(error, Error):
        raise TypeError(f"check_error takes an Error as argument, got type {type(error)} instead.")
    bind_check(error, debug=False)
