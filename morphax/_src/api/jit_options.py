"""Checking `jit`'s options against the function's signature, as JAX does when `jit` is applied:
argument positions in range, argument names that exist, a known backend."""

from __future__ import annotations

import contextlib
import inspect
import operator

from morphax._src.runtime.devices import devices as _devices


def int_tuple(fun_name, what, value) -> tuple:
    if value is None:
        return ()
    with contextlib.suppress(TypeError):
        return (operator.index(value),)
    try:
        return tuple(operator.index(i) for i in value)
    except TypeError:
        raise TypeError(
            f"jit({fun_name}): {what} must be an int or a sequence of ints (argument positions), "
            f"got {value!r}. Use the matching *_argnames option to refer to arguments by name."
        ) from None


def str_tuple(fun_name, what, value) -> tuple:
    if value is None:
        return ()
    items = (value,) if isinstance(value, str) else value
    try:
        items = tuple(items)
    except TypeError:
        items = (value,)
    if not all(isinstance(n, str) for n in items):
        raise TypeError(
            f"jit({fun_name}): {what} must be a str or a sequence of str (parameter names), got "
            f"{value!r}. Use the matching *_argnums option to refer to arguments by position."
        )
    return tuple(dict.fromkeys(items))


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def resolve_argnums(fun_name, sig, nums, names, what) -> tuple[tuple, tuple]:
    """Check `{what}_argnums`/`{what}_argnames` against the signature (when there is one), and
    complete each from the other, so an argument is treated alike passed by position or by name."""
    if sig is None:  # builtins and the like: nothing to check against, positions stay as given
        return tuple(sorted(set(nums))), names
    params = list(sig.parameters.values())
    positional = [p.name for p in params if p.kind in _POSITIONAL]
    keyword = [p.name for p in params if p.kind in _KEYWORD]
    n = len(positional)
    if not any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        bad = [i for i in nums if not -n <= i < n]
        if bad:
            raise ValueError(
                f"jit({fun_name}): {what}_argnums={nums} is out of range: {fun_name} accepts only {n} "
                f"positional argument{'s' if n != 1 else ''} {tuple(positional)}. Use positions in "
                f"range({-n}, {n}), or {what}_argnames to refer to keyword arguments."
            )
        nums = tuple(i % n for i in nums)  # a negative position counts from the last parameter
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        bad = [m for m in names if m not in keyword]
        if bad:
            raise ValueError(
                f"jit({fun_name}): invalid argnames {bad} in {what}_argnames: {fun_name} has no such "
                f"parameter{'s' if len(bad) > 1 else ''} (it takes {tuple(keyword)} by name). Fix the "
                f"spelling, or use {what}_argnums for positional-only arguments."
            )
    for i in nums:
        if 0 <= i < n and positional[i] in keyword and positional[i] not in names:
            names += (positional[i],)
    nums += tuple(positional.index(m) for m in names if m in positional)
    return tuple(sorted(set(nums))), names


def check_backend(fun_name, backend) -> str | None:
    """The error for an unknown `backend=`, raised when the function is called (as JAX does)."""
    if backend is None:
        return None
    from morphax._src.compiler.backends import NAMES

    # A platform ("cpu"), or one of morphax's compiler backends ("c", "numpy", "xla").
    known = sorted({d.platform for d in _devices()} | set(NAMES))
    if backend in known:
        return None
    return (
        f"jit({fun_name}): unknown backend {backend!r}. Available backends are {known}: pass one of "
        "them, or leave backend=None (the default device)."
    )
