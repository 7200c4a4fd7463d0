"""Memoization of what is derived from a jaxpr (its compiled executable, JVP and batched forms,
pass results), stored on the jaxpr object itself.

A global table keyed by `id(jaxpr)` would keep every jaxpr it saw (and the closed-over constants
in it) alive until the table filled up; storing the results on the object ties their lifetime to
the program they describe, and a recycled id can never hit. Each object keeps at most
`PER_OBJECT_LIMIT` results (oldest dropped first). Imports nothing from morphax.
"""

from __future__ import annotations

PER_OBJECT_LIMIT = 64

MISSING = object()


def memo_get(obj, key):
    """The result stored on `obj` under `key`, or `MISSING`."""
    table = obj._memo
    if table is None:
        return MISSING
    return table.get(key, MISSING)


def memo_put(obj, key, value):
    """Store `value` on `obj` under `key` (dropping the oldest entry when full); returns `value`."""
    table = obj._memo
    if table is None:
        table = obj._memo = {}
    elif len(table) >= PER_OBJECT_LIMIT and key not in table:
        try:
            del table[next(iter(table))]
        except (KeyError, RuntimeError, StopIteration):  # another thread evicted at the same time
            pass
    table[key] = value
    return value


def memoized(obj, key, build):
    """`build()` computed once per (`obj`, `key`)."""
    value = memo_get(obj, key)
    if value is MISSING:
        value = memo_put(obj, key, build())
    return value
