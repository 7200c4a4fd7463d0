"""Host callbacks as primitives: `debug_callback` (a side effect with no results) and
`pure_callback` (a host function with declared result types), with their rules for every
transformation. The user-facing wrappers that flatten pytrees live in `_src/api/debugging.py`.
"""

from __future__ import annotations

import traceback

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import bdim_to_front, moveaxis
from morphax._src.core.effects import debug_effect, ordered_debug_effect
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.values import is_concrete_array, make_array
from morphax._src.errors import JaxRuntimeError
from morphax._src.prims import lax_api as L


def stable_key(obj):
    """`obj` itself when hashable, else its identity (the HostCallback keeps it alive)."""
    try:
        hash(obj)
    except TypeError:
        return ("id", id(obj))
    return obj


def check_callable(what: str, callback) -> None:
    if not callable(callback):
        raise TypeError(f"{what}: expected a callable, got {callback!r} of type {type(callback).__name__}")


def _declared_aval(what: str, x) -> ShapedArray:
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(
            f"{what}: result_shape_dtypes must be a pytree of objects with .shape and .dtype "
            f"(e.g. ShapeDtypeStruct), got {x!r} of type {type(x).__name__}"
        )
    return ShapedArray(tuple(int(d) for d in shape), _dtypes.canonicalize_dtype(dtype))


def flat_host_call(what: str, callback, args, kwargs, result_shape_dtypes):
    """What pure_callback and io_callback bind: the flat array leaves of `(args, kwargs)` (checked
    now, before any tracing), the avals of the declared results, their treedef, and a
    HostCallback calling `callback` on flat leaves, keyed by `what`, the callable and the input
    structure."""
    leaves, in_tree = pytree.tree_flatten((args, kwargs))
    for x in leaves:
        get_aval(x)  # a clear error for non-array arguments, before any tracing
    result_leaves, out_tree = pytree.tree_flatten(result_shape_dtypes)
    result_avals = tuple(_declared_aval(what, r) for r in result_leaves)

    def flat(*vals):
        a, k = pytree.tree_unflatten(in_tree, list(vals))
        return pytree.tree_leaves(callback(*a, **k))

    name = getattr(callback, "__name__", None) or type(callback).__name__
    host = HostCallback(flat, (what, stable_key(callback), in_tree), f"{what}({name})")
    return leaves, result_avals, out_tree, host


class HostCallback:
    """A Python callable on flat leaves, used as a primitive param.

    Equal and hashed by `key`, a description of what it does (user callable, pytree structure,
    static arguments), so repeated calls hit the eager type cache and retraces compare equal.
    """

    __slots__ = ("fn", "key", "label")

    def __init__(self, fn, key, label: str):
        self.fn = fn
        self.key = key
        self.label = label

    def __call__(self, *args):
        try:
            return self.fn(*args)
        except (Exception, KeyboardInterrupt):
            raise
        except BaseException as e:
            # SystemExit (sys.exit in a callback) must not end the process from inside a
            # computation: JAX reports it as a runtime error of the call, and so do we.
            raise JaxRuntimeError(
                f"{self.label} raised {type(e).__name__}{e.args!r} while the computation ran; a "
                "host callback must return its results (or raise an Exception), not exit."
            ) from e

    def __hash__(self):
        return hash(self.key)

    def __eq__(self, other):
        return type(other) is HostCallback and self.key == other.key

    def __repr__(self):
        return self.label


def callback_failure(e: BaseException) -> BaseException:
    """What a call sees when a host callback raised `e` while a computation ran: as in JAX, a
    JaxRuntimeError whose message ends with the callback's traceback and exception line (libraries
    look for that line: equinox finds its error_if message by "_EquinoxRuntimeError: "). A
    KeyboardInterrupt stays itself, so Ctrl-C stops the program as it would anywhere else; a
    JaxRuntimeError (from a callback nested in another) is already reported."""
    if isinstance(e, (JaxRuntimeError, KeyboardInterrupt)):
        return e
    text = "".join(traceback.format_exception(type(e), e, e.__traceback__)).rstrip()
    return JaxRuntimeError(f"INTERNAL: CpuCallback error calling callback: {text}")


def run_callback(callback, args):
    """`callback(*args)`, its exceptions reported as `callback_failure`s (raised from None: the
    traceback is in the message, and JAX's error has no cause)."""
    try:
        return callback(*args)
    except BaseException as e:  # noqa: BLE001 - SystemExit in a callback must not end the process
        failure = callback_failure(e)
        if failure is e:
            raise
    raise failure from None


def _as_array(x):
    # Python scalars (jaxpr literals) and NumPy values become Arrays with their canonical type.
    if is_concrete_array(x):
        return x
    aval = get_aval(x)
    return make_array(x, aval.dtype, weak_type=aval.weak_type)


# ----------------------------------------------------------------------------------- debug_callback

debug_callback_p = Primitive("debug_callback", multiple_results=True)
debug_callback_p.kind = Kind.EFFECT
# Higher-order in the eager sense: `impl` receives the original Arrays (weak types intact) and the
# primitive stays out of the per-primitive NumPy test matrices (its behaviour is the user's).
debug_callback_p.higher_order = True
# Never dead code: a pass that drops equations with unused results must keep this one.
debug_callback_p.has_side_effects = True
debug_callback_p.effect_rule = lambda *, ordered, **_: {ordered_debug_effect if ordered else debug_effect}
debug_callback_p.calls_host = True


def _debug_callback_impl(*args, callback, ordered):
    # Eagerly the callback's exception propagates as itself (JAX calls it directly); inside a
    # compiled program it is reported as a runtime error (`host_error`).
    callback(*[_as_array(x) for x in args])
    return []


def _debug_callback_abstract_eval(*avals, callback, ordered):
    return []


def _debug_callback_jvp(primals, tangents, *, callback, ordered):
    # The callback sees primals only, as in JAX; it has no outputs, hence no output tangents.
    debug_callback_p.bind(*primals, callback=callback, ordered=ordered)
    return [], []


def _debug_callback_batch(vals, dims, *, axis_data, callback, ordered):
    # JAX unrolls the batch: one call per element, with unbatched operands passed whole. This
    # loop is the semantics (one print per element), not a missing vectorization.
    for i in range(axis_data.size):
        sliced = [v if d is None else L.index_in_dim(v, i, d, keepdims=False) for v, d in zip(vals, dims)]
        debug_callback_p.bind(*sliced, callback=callback, ordered=ordered)
    return [], []


def _debug_callback_transpose(cts, *args, callback, ordered):
    # Reached only if a callback was applied to a linear value, which the JVP rule never does.
    raise ValueError("Transpose doesn't support debugging callbacks.")


debug_callback_p.impl = _debug_callback_impl
# How a compiled program reports an exception the primitive raised (compiler/executor.py).
debug_callback_p.host_error = callback_failure
debug_callback_p.abstract_eval = _debug_callback_abstract_eval
debug_callback_p.jvp = _debug_callback_jvp
debug_callback_p.batch = _debug_callback_batch
debug_callback_p.transpose = _debug_callback_transpose


# ------------------------------------------------------------------------------------ pure_callback

pure_callback_p = Primitive("pure_callback", multiple_results=True)
# Runs user Python on the host; it may still be dropped when unused (has_side_effects is False).
pure_callback_p.kind = Kind.EFFECT
pure_callback_p.higher_order = True  # see debug_callback_p
pure_callback_p.has_side_effects = False
pure_callback_p.calls_host = True

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized")


def check_results(outs, result_avals):
    """The callback's flat results as NumPy arrays of the declared types, or a RuntimeError that
    names the expected and actual shape or dtype (JAX's wording)."""
    outs = list(outs)
    if len(outs) != len(result_avals):
        raise RuntimeError(
            f"Mismatched number of outputs from callback. Expected: {len(result_avals)}, Actual: {len(outs)}"
        )
    checked = []
    for i, (o, aval) in enumerate(zip(outs, result_avals)):
        arr = np.asarray(o)
        if arr.shape != aval.shape:
            raise RuntimeError(
                f"Incorrect output shape for return value #{i}: Expected: {aval.shape}, Actual: {arr.shape}"
            )
        # A float64 result for a declared float32 is fine without x64 (JAX canonicalizes it too).
        if _dtypes.canonicalize_dtype(arr.dtype) != aval.dtype:
            raise RuntimeError(
                f"Incorrect output dtype for return value #{i}: Expected: {aval.dtype.name}, "
                f"Actual: {arr.dtype.name}"
            )
        checked.append(arr if arr.dtype == aval.dtype else arr.astype(aval.dtype))
    return checked


def _checked_call(callback, args, result_avals):
    return check_results(callback(*args), result_avals)


def _pure_callback_impl(*args, callback, result_avals, vmap_method):
    # The callback receives (immutable) Arrays, as in JAX; np.asarray on them is free. JAX runs
    # even an eager pure_callback as a compiled program, so its errors (the callback's own and
    # wrong result types) are runtime errors of the call.
    outs = run_callback(_checked_call, (callback, [_as_array(x) for x in args], result_avals))
    return [make_array(o, a.dtype, weak_type=a.weak_type) for o, a in zip(outs, result_avals)]


def _pure_callback_abstract_eval(*avals, callback, result_avals, vmap_method):
    return list(result_avals)


def _pure_callback_jvp(primals, tangents, **params):
    raise ValueError(
        "Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks while taking gradients."
    )


def _sequential(callback, batched, size, result_avals):
    """A callback looping over the leading batch axis on the host, stacking the results."""

    def run(*args):
        if size == 0:
            return [np.zeros((0,) + a.shape, a.dtype) for a in result_avals]
        rows = []
        for i in range(size):
            row_args = [a[i] if b else a for a, b in zip(args, batched)]
            rows.append(check_results(callback(*row_args), result_avals))
        return [np.stack(col) for col in zip(*rows)] if result_avals else []

    return run


def vectorized_operands(prim_name: str, vals, dims, size: int, vmap_method):
    """The operands of one batched call under `vmap_method` (a non-sequential one): batch axes
    in front; unbatched operands get a size-1 leading axis ("expand_dims"), the batch axis
    ("broadcast_all"), or stay as they are ("legacy_vectorized")."""
    if vmap_method == "expand_dims":
        return [L.expand_dims(v, (0,)) if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    if vmap_method == "broadcast_all":
        return [bdim_to_front(v, d, size) for v, d in zip(vals, dims)]
    if vmap_method == "legacy_vectorized":
        return [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    raise NotImplementedError(
        f"vmap is only supported for the {prim_name} primitive when vmap_method is one of "
        "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or 'legacy_vectorized'. "
        f"Got vmap_method={vmap_method!r}."
    )


def _pure_callback_batch(vals, dims, *, axis_data, callback, result_avals, vmap_method):
    size = axis_data.size
    if vmap_method in ("sequential", "sequential_unrolled"):
        batched = tuple(d is not None for d in dims)
        vals = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
        fn = _sequential(callback, batched, size, result_avals)
        callback = HostCallback(fn, ("sequential", callback, batched, size), f"sequential({callback!r})")
    else:
        vals = vectorized_operands("pure_callback", vals, dims, size, vmap_method)
    batched_avals = tuple(a.update(shape=(size,) + a.shape) for a in result_avals)
    outs = pure_callback_p.bind(*vals, callback=callback, result_avals=batched_avals, vmap_method=vmap_method)
    return outs, [0] * len(outs)


pure_callback_p.impl = _pure_callback_impl
pure_callback_p.host_error = callback_failure
pure_callback_p.abstract_eval = _pure_callback_abstract_eval
pure_callback_p.jvp = _pure_callback_jvp
pure_callback_p.batch = _pure_callback_batch
pure_callback_p.differentiable = False

__all__ = [
    "HostCallback",
    "VMAP_METHODS",
    "callback_failure",
    "check_results",
    "debug_callback_p",
    "pure_callback_p",
    "run_callback",
    "stable_key",
    "vectorized_operands",
]
