"""The `check` primitive behind `checkify.check`, `debug_check` and `check_error`, with its rules.

Its operands are the leaves of an error value (`_src/checkify/errors.py`'s `Error`) and its
`err_tree` param their structure; the primitive only asks the unflattened object to raise
(`_throw`) or to merge its leading batch axis (`_reduced_over_leading_axis`), so it imports nothing
of the checkify package, which sits above it. `checkify` discharges the primitive (turns it into
error values threaded through the program); evaluated eagerly it raises at once; staged without
`checkify` (under `jit`, in a loop body) tracing fails with the functionalization error.
"""

from __future__ import annotations

import contextlib
import threading

from morphax._src.core import pytree
from morphax._src.core.batch_axes import bdim_to_front
from morphax._src.core.primitive import Kind, Primitive

__all__ = ["JaxRuntimeError", "check_p", "functionalizing"]


class JaxRuntimeError(ValueError):
    """A failed `checkify.check` (or an error value thrown with `Error.throw` / `check_error`).

    NB: this is checkify's class (a ValueError, as in JAX), distinct from
    `morphax.errors.JaxRuntimeError`, which reports failures of the runtime itself."""


FUNCTIONALIZATION_ERROR = (
    "Cannot abstractly evaluate a checkify.check which was not functionalized. This probably means "
    "you tried to stage (jit/scan/pmap/...) a `check` without functionalizing it through "
    "`checkify.checkify`."
)


class _Depth(threading.local):
    def __init__(self):
        self.n = 0


# How many `checkify` traces are open on this thread: a `check` staged inside one is discharged
# by it; staged anywhere else nothing would ever discharge it, so tracing stops with an error.
_depth = _Depth()


@contextlib.contextmanager
def functionalizing():
    """Open while `checkify` traces the function whose checks it will discharge."""
    _depth.n += 1
    try:
        yield
    finally:
        _depth.n -= 1


check_p = Primitive("check", multiple_results=True)
# A side effect with no results: the runtime runs a program holding it on the calling thread,
# so its exception is raised at the call; passes never drop or merge it.
check_p.kind = Kind.EFFECT
check_p.has_side_effects = True
check_p.calls_host = True
# `impl` receives the original Arrays, and the primitive stays out of the generated NumPy tests.
check_p.higher_order = True
check_p.test_spec = None


def _check_impl(*leaves, err_tree, debug):
    if debug:  # a debug_check does something only when checkify discharges it
        return []
    pytree.tree_unflatten(err_tree, leaves)._throw()
    return []


# NB: JAX stages a `check` anywhere and refuses to lower it outside `checkify`; here staging it
# outside `checkify` is refused instead (the same error, at trace time, so `make_jaxpr` and
# `eval_shape` of a function with a `check` fail too, where JAX's succeed). A jitted function first
# traced inside `checkify` keeps its cached trace, and called outside runs the check when it
# runs, raising JaxRuntimeError on failure (JAX's behaviour with `jax_xla_runtime_errors`).
def _check_abstract_eval(*avals, err_tree, debug):
    if not debug and _depth.n == 0:
        raise ValueError(FUNCTIONALIZATION_ERROR)
    return []


def _check_jvp(primals, tangents, *, err_tree, debug):
    # The predicate and message values are checked; derivatives pass nothing through a check.
    check_p.bind(*primals, err_tree=err_tree, debug=debug)
    return [], []


def _check_batch(vals, dims, *, axis_data, err_tree, debug):
    # One check for the whole batch: the error keeps one failing element per kind of error (the
    # last, as JAX picks it) and is checked unbatched on the trace below.
    vals = [bdim_to_front(v, d, axis_data.size) for v, d in zip(vals, dims)]
    reduced = pytree.tree_unflatten(err_tree, vals)._reduced_over_leading_axis()
    leaves, tree = pytree.tree_flatten(reduced)
    check_p.bind(*leaves, err_tree=tree, debug=debug)
    return [], []


def _check_transpose(cts, *args, err_tree, debug):
    # A check reads primal values only (its JVP rule drops tangents), so it is never transposed.
    raise ValueError("checkify.check has no transpose: it is never applied to a linear value.")


check_p.impl = _check_impl
check_p.abstract_eval = _check_abstract_eval
check_p.jvp = _check_jvp
check_p.batch = _check_batch
check_p.transpose = _check_transpose
