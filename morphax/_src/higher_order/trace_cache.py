"""A cache of traced loop bodies and cond branches for eager control flow.

Called eagerly, `lax.scan` / `while_loop` / `fori_loop` / `cond` would otherwise retrace their
Python bodies on every call. As in JAX, a traced body is reused for the same function object, argument
structure, abstract types and tracing flags; like `jit`, this means a global the body reads is
captured when it is first traced. Only top-level (eager) calls are cached, and only traces that
close over concrete values: under an enclosing transformation the enclosing trace is what gets
cached, and a closed-over tracer belongs to one trace. Entries live as long as their function.
"""

from __future__ import annotations

import weakref

from morphax._src.config import config
from morphax._src.core import trace as _trace
from morphax._src.core.trace import Tracer

_MAX_PER_FUNCTION = 8
_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
stats = {"hits": 0, "traces": 0}


def cached_trace(funs: tuple, key, trace, consts_of):
    """`trace()` (which traces `funs`), or its cached result for (`funs`, `key`).

    `consts_of(result)` lists the values the traced jaxprs close over; a result closing over a
    tracer is not cached."""
    top_level = _trace.current_trace() is _trace.base_trace()
    try:
        per_fun = _cache.get(funs[0]) if top_level else None
    except TypeError:  # not weakly referenceable: never cached
        top_level, per_fun = False, None
    full_key = (funs[1:], key, config.trace_context())
    if per_fun is not None:
        try:
            hit = per_fun.get(full_key)
        except TypeError:  # an unhashable function or static value in the key
            hit, top_level = None, False
        if hit is not None:
            stats["hits"] += 1
            return hit
    stats["traces"] += 1
    result = trace()
    if top_level and not any(isinstance(c, Tracer) for c in consts_of(result)):
        try:
            per_fun = _cache.setdefault(funs[0], {})
            if len(per_fun) >= _MAX_PER_FUNCTION:
                per_fun.pop(next(iter(per_fun)))
            per_fun[full_key] = result
        except TypeError:
            pass
    return result
