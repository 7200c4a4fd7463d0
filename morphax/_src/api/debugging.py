"""User-facing debugging and host-callback functions: `debug_print`, `debug_callback`,
`pure_callback`, `named_call` and `named_scope`. They flatten pytree arguments and bind the
callback primitives of `higher_order/callbacks.py`, so they work under jit, vmap and grad.
"""

from __future__ import annotations

import contextlib
import sys

from morphax._src.core import pytree
from morphax._src.core.avals import is_valid_value
from morphax._src.higher_order.callbacks import (
    VMAP_METHODS,
    HostCallback,
    check_callable,
    debug_callback_p,
    flat_host_call,
    pure_callback_p,
    stable_key,
)
from morphax._src.wrapping import wraps


def _callable_name(fn) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


def _split_static(leaves):
    """Array-like leaves are traced; anything else (strings, objects) is passed through as is,
    like JAX's static debug arguments."""
    dynamic = [x for x in leaves if is_valid_value(x)]
    static = tuple(None if is_valid_value(x) else x for x in leaves)
    is_dyn = tuple(is_valid_value(x) for x in leaves)
    return dynamic, static, is_dyn


def _bind_debug(kind, fn, user_fn, label, args, kwargs, ordered):
    leaves, tree = pytree.tree_flatten((args, kwargs))
    dynamic, static, is_dyn = _split_static(leaves)

    def flat(*vals):
        it = iter(vals)
        full = [next(it) if d else s for d, s in zip(is_dyn, static)]
        a, k = pytree.tree_unflatten(tree, full)
        fn(*a, **k)

    key = (kind, stable_key(user_fn), tree, is_dyn, tuple(stable_key(s) for s in static))
    callback = HostCallback(flat, key, label)
    debug_callback_p.bind(*dynamic, callback=callback, ordered=bool(ordered))


def debug_callback(callback, *args, ordered=False, partitioned=False, **kwargs):
    """Call `callback(*args, **kwargs)` on the host with concrete Arrays, wherever it is staged:
    at every call of a jitted function (not at trace time), once per element under vmap, on
    primal values only under differentiation. Returns None; the callback's result is ignored."""
    if not callable(callback):
        raise TypeError(
            f"debug.callback: expected a callable, got {callback!r} of type {type(callback).__name__}"
        )
    _bind_debug("debug_callback", callback, callback, _callable_name(callback), args, kwargs, ordered)


def _two_call_form(name, fmt, args, kwargs, emit):
    """JAX's two ways to call print/log: ``f(fmt, *args, **kwargs)`` or ``f(**options)(fmt, ...)``."""
    if fmt is not None:
        emit(fmt, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"{name} received unexpected arguments in the two-call form: {args=} {kwargs=}")
    return emit


def _checked_format(name, fmt):
    if not isinstance(fmt, str):
        raise TypeError(f"{name}: the format string must be a str, got {type(fmt).__name__}")


def debug_print(fmt=None, *args, ordered=False, partitioned=False, skip_format_check=False, **kwargs):
    """Print ``fmt.format(*args, **kwargs)`` with the concrete values, at run time (see
    `debug_callback` for when it runs under each transformation). ``debug.print(ordered=True)``
    returns the printing function (JAX's two-call form)."""

    def emit(fmt, *a, **k):
        _checked_format("debug.print", fmt)

        def _print(*values, **kw):
            print(fmt.format(*values, **kw))

        # Keyed by the format string, so repeated prints of the same shape reuse cached types.
        _bind_debug("debug_print", _print, fmt, f"print({fmt!r})", a, k, ordered)

    return _two_call_form("debug.print", fmt, args, kwargs, emit)


def debug_log(fmt=None, *args, ordered=False, partitioned=False, skip_format_check=False, **kwargs):
    """Like `debug_print`, but each message is a record of the ``morphax.debug`` logger at level
    INFO, attributed to the file and line that called `log` (standard logging handlers, levels
    and filters apply)."""

    def emit(fmt, *a, **k):
        _checked_format("debug.log", fmt)
        caller = sys._getframe(2 if fmt is not None else 1)
        while caller is not None and caller.f_code.co_filename == __file__:
            caller = caller.f_back
        where = (caller.f_code.co_filename, caller.f_lineno) if caller is not None else ("(unknown file)", 0)

        def _emit(*values, **kw):
            import logging  # here: `import morphax` does not load the logging package

            _log = logging.getLogger("morphax.debug")
            record = _log.makeRecord(
                _log.name, logging.INFO, where[0], where[1], fmt.format(*values, **kw), (), None
            )
            _log.handle(record)

        _bind_debug("debug_log", _emit, (fmt, where), f"log({fmt!r})", a, k, ordered)

    return _two_call_form("debug.log", fmt, args, kwargs, emit)


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None, **kwargs):
    """Call a pure host function on NumPy arrays and return its results as Arrays of the declared
    `result_shape_dtypes` (a pytree of ShapeDtypeStruct-likes). Works under jit; under vmap it is
    batched per `vmap_method`: "sequential" (a host loop over the batch), "expand_dims" (one call,
    unbatched arguments get a size-1 leading axis), "broadcast_all" (one call, every argument
    broadcast to the batch) or "legacy_vectorized". Not differentiable (wrap it in custom_jvp)."""
    check_callable("pure_callback", callback)
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise ValueError(
            f"vmap_method must be on of the allowed methods {list(VMAP_METHODS) + [None]}, but got: {vmap_method}"
        )
    leaves, result_avals, out_tree, host = flat_host_call(
        "pure_callback", callback, args, kwargs, result_shape_dtypes
    )
    outs = pure_callback_p.bind(*leaves, callback=host, result_avals=result_avals, vmap_method=vmap_method)
    return pytree.tree_unflatten(out_tree, outs)


@contextlib.contextmanager
def named_scope(name: str):
    """Accepted for compatibility: JAX uses the name in profiles and HLO metadata; morphax has
    no such metadata yet, so the block runs unchanged."""
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    yield


def named_call(fun, *, name: str | None = None):
    """`fun` run under ``named_scope(name)`` (default: its __name__). Like current JAX, this adds
    no call equation: the body is inlined into the surrounding jaxpr."""
    if not callable(fun):
        raise TypeError(f"named_call: expected a callable, got {fun!r} of type {type(fun).__name__}")
    scope = _callable_name(fun) if name is None else name

    @wraps(fun)
    def named(*args, **kwargs):
        with named_scope(scope):
            return fun(*args, **kwargs)

    return named


def breakpoint(*args, **kwargs):  # noqa: A001 - JAX's name
    raise NotImplementedError(
        "morphax.debug.breakpoint is not implemented; use morphax.debug.callback with a function that "
        "inspects the values (e.g. calls pdb.set_trace())"
    )


__all__ = [
    "breakpoint",
    "debug_callback",
    "debug_log",
    "debug_print",
    "named_call",
    "named_scope",
    "pure_callback",
]
