"""Library functions that run compiled when called eagerly, as JAX's are: JAX decorates its
samplers, `nn` activations and friends with `jit`, so an eager `random.normal(key, (10**6,))` or
`nn.gelu(x)` is one compiled program per signature rather than its primitives one by one.
`compiled_when_eager(fn)` gives morphax's the same: outside any trace the call goes through a
`jit` of `fn` (with its static arguments). Under a trace, as JAX's: with ``inline=False`` (JAX's
plain ``@jit``) the call is a nested ``jit[name=fn]`` equation, which the compiler inlines; with
``inline=True`` (JAX's ``@jit(inline=True)``, or a function JAX does not jit at all) `fn` runs as
it is, so its primitives join the caller's program."""

from __future__ import annotations

import functools

from morphax._src.api.jit import jit
from morphax._src.config import config
from morphax._src.core import trace as _trace

__all__ = ["compiled_when_eager"]


def compiled_when_eager(fn=None, *, static_argnums=(), static_argnames=(), inline=True):
    """`fn` compiled per signature when called outside any trace, and a nested jit call under
    one unless `inline`. Static arguments that cannot be hashed (a list for an axis, an array for
    a bound) make that call a plain one."""
    if fn is None:
        return functools.partial(
            compiled_when_eager,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            inline=inline,
        )
    static_argnums = tuple(static_argnums)
    static_argnames = tuple(static_argnames)
    compiled = []

    def jitted():
        if not compiled:
            compiled.append(jit(fn, static_argnums=static_argnums, static_argnames=static_argnames))
        return compiled[0]

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if config.disable_jit:
            return fn(*args, **kwargs)
        if inline and _trace.ctx.trace is not _trace.base_trace():
            return fn(*args, **kwargs)
        if not _hashable_statics(args, kwargs, static_argnums, static_argnames):
            return fn(*args, **kwargs)
        return jitted()(*args, **kwargs)

    return call


def _hashable_statics(args, kwargs, nums, names) -> bool:
    try:
        for i in nums:
            if i < len(args):
                hash(args[i])
        for name in names:
            if name in kwargs:
                hash(kwargs[name])
    except TypeError:
        return False
    return True
