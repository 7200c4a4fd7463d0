"""The fast path of a jitted call.

Most calls of a jitted function repeat a signature it has run before: positional Arrays (or
pytrees of them: a model's parameters) whose values are ready, no static or donated arguments, called eagerly, and small enough to run on the
calling thread (runtime/dispatch.py's inline rule). For those, `JitWrapped.__call__` skips the
general path (flattening, the trace-cache lookup, the executable's memo lookup, the dispatch
decisions): one dictionary lookup on the arguments' shapes, dtypes and weak types (and their
pytree structure, when an argument is a container) finds the
executable and what to check before running it -- that the flags tracing depends on, the
compiled-program generation (`clear_caches`) and the backend are those it was recorded under,
that no transformation is tracing, and that the device stream has no queued work the call would
overtake. Anything else, or any check failing, returns None and the general path runs, which
records the signature for next time.
"""

from __future__ import annotations

import threading

import numpy as np

from morphax._src import events
from morphax._src.compiler import compile as _compile
from morphax._src.config import config
from morphax._src.core import pytree
from morphax._src.core import trace as _trace
from morphax._src.runtime import dispatch, eager, guards
from morphax._src.runtime.array import Array

# Signatures kept per jitted function: a function called with ever-new shapes stops recording.
MAX_SIGNATURES = 64
_ndarray = np.ndarray
_get_ident = threading.get_ident
_base_trace = _trace._base_trace_holder  # [the base trace]: current when nothing is tracing


class FastCalls(dict):
    """signature -> _Entry, for one jitted function."""


class _Entry:
    __slots__ = ("state", "generation", "executable", "weak_types", "out_tree", "single")

    def __init__(self, state, generation, executable, out_tree, single):
        # The flags tracing depends on, disable_jit and the default backend when recorded.
        self.state = state
        self.generation = generation
        self.executable = executable
        self.weak_types = executable.out_weak_types
        self.out_tree = out_tree
        self.single = single


def remember(table: FastCalls, args, closed, name, backend, out_tree, single) -> None:
    """Record the signature of a call the general path just ran eagerly: positional arguments,
    each an Array or a pytree (list, tuple, dict, registered node) of Arrays."""
    if len(table) >= MAX_SIGNATURES or eager._float_checks:
        return
    key, leaves = _signature(args)
    if key is None:
        return
    if eager._placed and any(type(a) is Array and a._place is not None for a in leaves):
        return  # placed inputs always take the general path (`run` declines them)
    executable = _compile.compile_jaxpr(closed, name, backend)  # the memoized one just run
    if executable.device_run is None and not dispatch.runs_inline(executable):
        return  # queued on the stream: the general path's cost is small beside the work
    table[key] = _Entry(config._call_state, _compile._generation, executable, out_tree, single)


def _signature(args):
    """(key, leaves): the shapes, dtypes and weak types of the arguments, with the pytree
    structure when one is not a bare Array; (None, None) when a leaf is not an Array."""
    try:
        return tuple([(a._buf.shape, a._buf.dtype, a.weak_type) for a in args]), args
    except AttributeError:
        pass
    leaves, tree = pytree.tree_flatten(args)
    try:
        return (tree, tuple([(a._buf.shape, a._buf.dtype, a.weak_type) for a in leaves])), leaves
    except AttributeError:  # a tracer, a NumPy array, a Python scalar
        return None, None


def run(table: FastCalls, args):
    """The outputs of the call, or None when it must take the general path."""
    try:
        key = tuple([(a._buf.shape, a._buf.dtype, a.weak_type) for a in args])
    except AttributeError:  # a pytree argument, or not all Arrays
        key, args = _signature(args)
        if key is None:
            return None
    entry = table.get(key)
    if entry is None:
        return None
    if entry.generation != _compile._generation:
        table.clear()  # caches were cleared: drop the old executables too
        return None
    state = config._call_state
    if entry.state is not state and entry.state != state:
        return None  # a flag changed since the signature was recorded
    if (
        _trace.ctx.trace is not _base_trace[0]
        or eager._float_checks
        or guards.active
        or eager._default_elsewhere
    ):
        return None
    executable = entry.executable
    if executable.device_run is not None:  # a device platform's program: device arrays in and out
        for a in args:
            if type(a) is not Array or a._place is not None:
                return None
        arrays = dispatch.execute_on_device(executable, args, entry.weak_types)
        return arrays[0] if entry.single else pytree.tree_unflatten(entry.out_tree, arrays)
    values = []
    for a in args:
        v = a._buf
        # Exactly Arrays (the general path recorded only those), with values computed: a
        # buffer still being computed is ordered by the general path.
        if type(v) is not _ndarray or type(a) is not Array or a._place is not None:
            return None
        values.append(v)
    stream = dispatch._streams.get(0)
    if stream is not None and (stream._pending or stream._ident == _get_ident()):
        return None
    direct = executable.direct
    try:
        outs = direct(*values) if direct is not None else None
        if outs is None:
            outs = executable(*values)
    except Exception as e:  # noqa: BLE001 - surfaces at the wait, as on the general path
        arrays = dispatch._failed(executable.out_avals, entry.weak_types, e)
    else:
        if entry.single:
            return Array(outs[0], entry.weak_types[0])
        arrays = [Array(o, w) for o, w in zip(outs, entry.weak_types)]
    if entry.single:
        return arrays[0]
    return pytree.tree_unflatten(entry.out_tree, arrays)


# While a profiler trace is collected (events.py), every call takes the general path, which
# records it: `run` is swapped for a function that declines, so outside a trace the fast path
# has no check at all.
_run = run


def _declined(table, args):
    return None


def _on_profiling(on):
    global run
    run = _declined if on else _run


events.add_listener(_on_profiling)
