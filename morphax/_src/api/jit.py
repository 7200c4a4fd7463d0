"""`jit`: trace once per argument signature, then run the compiled jaxpr through `pjit`.

The trace cache is keyed by the function (held weakly, so a function that goes away takes its
entries with it), the argument tree, each leaf's (shape, dtype, weak type), static arguments
(by type and value) and the tracing config (x64). Counters of traces are exposed for tests; with
``config.update("jax_log_compiles", True)`` each retrace logs why the cache missed.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import struct
import sys
import threading
import warnings
import weakref

import numpy as np

from morphax._src import events
from morphax._src.api import jit_shardings
from morphax._src.api.jit_options import check_backend, int_tuple, resolve_argnums, str_tuple
from morphax._src.api.jit_refs import StatefulCall, call_stateful, stateful_form
from morphax._src.api.stages import Lowered, Traced, _short
from morphax._src.api.tracing import _abstractify, _has_signature, flatten_fun
from morphax._src.api.transfers import device_get, device_put  # noqa: F401  (public from here)
from morphax._src.compiler.backends import NAMES as BACKEND_NAMES
from morphax._src.config import TRACE_FLAGS, config
from morphax._src.core import pytree, state_types
from morphax._src.core import trace as _trace
from morphax._src.core.avals import ShapedArray
from morphax._src.core.dtypes import float0
from morphax._src.core.jaxpr import check_jaxpr
from morphax._src.core.memo import memoized
from morphax._src.errors import JaxRuntimeError
from morphax._src.higher_order.pjit import pjit_p
from morphax._src.runtime import call_fast
from morphax._src.runtime.array import Array, type_key
from morphax._src.runtime.eager import call_compiled
from morphax._src.runtime.placement import IncompatibleDevicesError
from morphax._src.traceback_util import api_boundary, filter_leaving_boundary, register_boundary
from morphax._src.transforms.staging import closure_convert_tracers, fun_name, make_debug_info, trace_to_jaxpr

logger = logging.getLogger("morphax")


class TraceCounters:
    """Counts traces of jitted functions (tests assert these, never wall times)."""

    def __init__(self):
        self.traces = 0

    def reset(self):
        self.traces = 0


trace_counters = TraceCounters()

# function -> {signature key: (closed jaxpr, out tree)}; weak so dead functions free their entries.
_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# Traces kept per function: a function called with ever-new shapes (ragged batches) would
# otherwise keep every trace and its compiled program; the oldest is dropped first.
MAX_TRACES_PER_FUNCTION = 1024
# Wrappers of callables that cannot be weakly referenced (or hashed) keep their cache themselves:
# the wrapper holds the callable strongly, so the cache cannot outlive it or be found by a new
# object that happens to reuse a freed id(). Listed (weakly) only so `clear_caches` reaches them.
_own_caches: weakref.WeakSet = weakref.WeakSet()


def _cache_for(fun) -> dict | None:
    """The trace cache shared by every `jit` of `fun`, or None when `fun` cannot key one."""
    try:
        cache = _caches.get(fun)
        if cache is None:
            cache = _caches[fun] = {}
        return cache
    except TypeError:  # not weak-referenceable (__slots__ classes, method-wrappers) or unhashable
        return None


def clear_caches():
    _caches.clear()
    for wrapped in list(_own_caches):
        wrapped._cache.clear()
    from morphax._src.compiler.compile import clear_cache

    clear_cache()


def _leaf_key(x):
    """A cheap hashable stand-in for a leaf's aval. An Array and a tracer of the same aval key
    alike: JAX's cache is keyed on avals, so `jit(f)` called eagerly and then inside another
    transformation (or the other way round) traces `f` once."""
    t = type(x)
    if t is Array:
        return type_key(x)
    if t in _PYTHON_SCALARS:
        return _scalar_key(t)
    if isinstance(x, _trace.Tracer):
        aval = x.aval
        if type(aval) is ShapedArray:
            return (aval.shape, aval.dtype, aval.weak_type)
        return aval
    aval = _abstractify(x)  # a NumPy array or scalar keys as the Array it becomes
    if type(aval) is ShapedArray:
        return (aval.shape, aval.dtype, aval.weak_type)
    return aval


def _float0_outputs(closed) -> frozenset:
    """The positions of `closed`'s float0 outputs (integer inputs' cotangents), found once per
    jaxpr (every eager call on the general path asks)."""
    return memoized(
        closed,
        "float0 outputs",
        lambda: frozenset(k for k, a in enumerate(closed.out_avals) if a.dtype == float0),
    )


_positional_trees: dict = {}


def _positional_tree(n: int):
    """The treedef of `n` positional array arguments and no keywords: the same key as the general
    path computes for them, so NumPy values and Arrays of one type share a trace."""
    tree = _positional_trees.get(n)
    if tree is None:
        tree = _positional_trees[n] = pytree.tree_flatten((tuple(range(n)), {}))[1]
    return tree


def _positional_keys(args) -> tuple | None:
    """The leaf keys of positional arguments if all are arrays or tracers, else None (Python
    scalars take the general path, which converts them; they key as the arrays they become)."""
    keys = []
    for a in args:
        if type(a) is Array:
            keys.append(type_key(a))
        elif isinstance(a, _trace.Tracer):
            keys.append(_leaf_key(a))
        else:
            return None
    return tuple(keys)


_PYTHON_SCALARS = (int, float, complex, bool)
_scalar_keys: dict = {}


def _scalar_key(t) -> tuple:
    """The key of a Python scalar argument: the (shape, dtype, weak type) of the value it traces
    as (weak int32/float32/complex64, strong bool; 64-bit under x64), so that `i = f(i)` from
    `i = 0` and a weak scalar Array share one trace, as in JAX."""
    x64 = config.enable_x64
    key = _scalar_keys.get((t, x64))
    if key is None:
        aval = _abstractify(t(0))
        key = _scalar_keys[(t, x64)] = (aval.shape, aval.dtype, aval.weak_type)
    return key


def _axis_env() -> tuple:
    """(name, size) of every named vmap axis enclosing the current trace, innermost first."""
    env = []
    t = _trace.ctx.trace
    while t is not None:
        data = getattr(t, "axis_data", None)
        if data is not None and data.name is not None:
            env.append((data.name, data.size))
        t = t.parent
    return tuple(env)


def _hashable_static(value, where):
    try:
        hash(value)
    except TypeError:
        raise ValueError(
            f"Non-hashable static arguments are not supported: {where} is {value!r} of type "
            f"{type(value).__name__}. Static arguments key the compilation cache, so they must be "
            "hashable: pass a tuple instead of a list, or make the argument non-static (an array)."
        ) from None
    return _Static(value)


def _typed_key(value):
    """`value` with its type attached at every level of tuples and frozensets.

    Python calls 1, 1.0 and True equal (with equal hashes), yet a function traced with each sees a
    different value and can build a different program, so the cache must tell them apart. JAX
    keys the top-level type only, so `(1,)` then `(True,)` reuses the first trace there; keying
    nested types too only costs a retrace. Floats key on their bits: -0.0 is not 0.0, and a NaN
    matches itself (JAX retraces for every NaN).
    """
    t = type(value)
    if isinstance(value, tuple):  # namedtuples too
        return (t, tuple([_typed_key(v) for v in value]))
    if t is frozenset:
        return (t, frozenset([_typed_key(v) for v in value]))
    if t is float:
        return (t, struct.pack("<d", value))
    if t is complex:
        return (t, struct.pack("<dd", value.real, value.imag))
    return (t, value)


class _Static:
    """A static argument in a cache key: equal only to the same type and value (see `_typed_key`);
    prints as the value, for the retrace log."""

    __slots__ = ("value", "_key", "_hash")

    def __init__(self, value):
        self.value = value
        self._key = _typed_key(value)
        self._hash = hash(self._key)

    def __eq__(self, other):
        return type(other) is _Static and self._hash == other._hash and self._key == other._key

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return repr(self.value)


def _leaf_text(k) -> str:
    """A cache key's entry for one argument, as a type: ``float32[3]``, ``float``."""
    if isinstance(k, type):  # a Python scalar
        return k.__name__
    if isinstance(k, tuple):  # an Array: (shape, dtype, weak type)
        return f"{np.dtype(k[1]).name}[{','.join(map(str, k[0]))}]" + (" (weak)" if k[2] else "")
    return _short(k)


def _key_differences(old, key) -> list[str]:
    """What differs between two cache keys of one function, as sentences."""
    o_tree, o_leaves, o_static, o_ctx = old
    tree, leaves, static, ctx = key
    out = []
    if o_ctx != ctx:
        changed = [f"{n}: {a!r} -> {b!r}" for n, a, b in zip(TRACE_FLAGS, o_ctx, ctx) if a != b]
        out.append("a config flag that tracing depends on changed (" + "; ".join(changed) + ")")
    if o_static != static:
        out.append(f"static arguments changed: {o_static} -> {static}")
    for i, (a, b) in enumerate(zip(o_leaves, leaves)):
        if _leaf_text(a) != _leaf_text(b):
            out.append(f"argument {i} was {_leaf_text(a)}, is {_leaf_text(b)}")
    if not out and o_tree != tree:
        out.append(f"the argument structure changed: {o_tree} -> {tree}")
    return out


def _explain_miss(cache: dict, key, name: str) -> str:
    """Why `key` missed `cache`: the differences from the closest key traced before."""
    if not cache:
        return f"first call to {name}"
    closest = None
    for old in list(cache):
        if len(old[1]) != len(key[1]):
            continue
        diffs = _key_differences(old, key)
        if diffs and (closest is None or len(diffs) < len(closest)):
            closest = diffs
    if closest is None:
        counts = sorted({len(old[1]) for old in list(cache)})
        return f"the number of array arguments changed: {len(key[1])}, traced before with {counts}"
    return "closest earlier call: " + "; ".join(closest[:4])


class JitRecursionError(RecursionError):
    """A jitted function calls itself under jit without a static bound."""


_tracing = threading.local()


def _active_traces() -> list:
    """[cache id, key, re-entered] of each jit trace in progress on this thread, outermost first."""
    active = getattr(_tracing, "active", None)
    if active is None:
        active = _tracing.active = []
    return active


def _describe_key(key) -> str:
    """The argument types of a cache key, e.g. ``float32[3], float; static ((1, 2),)``."""
    _, leaves, static, _ = key

    def leaf(k):
        if isinstance(k, type):  # a Python scalar
            return k.__name__
        if isinstance(k, tuple):  # an Array: (shape, dtype, weak type)
            return f"{np.dtype(k[1]).name}[{','.join(map(str, k[0]))}]"
        return _short(k)

    text = ", ".join(leaf(k) for k in leaves) or "no array arguments"
    return text + (f"; static {static}" if any(static) else "")


class JitWrapped:
    """What `jit(f)` returns: traces once per argument signature and runs the compiled jaxpr."""

    def __init__(
        self, fun, static_argnums, static_argnames, donate_argnums, donate_argnames, backend=None,
        in_shardings=None, out_shardings=None,
    ):  # fmt: skip
        if not callable(fun):
            raise TypeError(f"jit: expected a callable, got {fun!r} of type {type(fun).__name__}")
        functools.update_wrapper(self, fun, updated=())
        # fun's attributes, as functools.wraps gives them, except those that would shadow this
        # class's own (a function wrapping a jnp ufunc object carries its `_call`).
        for k, v in getattr(fun, "__dict__", {}).items():
            if not hasattr(type(self), k):
                self.__dict__.setdefault(k, v)
        self._fun = fun
        # The wrapped function's name, a partial's function's (JAX's name= in a printed jaxpr).
        # NB: a callable object without __name__ goes by its type's name (JAX: "<unnamed function>").
        self._name = name = fun_name(fun)
        sig = inspect.signature(fun) if _has_signature(fun) else None
        nums, names = resolve_argnums(
            name, sig, int_tuple(name, "static_argnums", static_argnums),
            str_tuple(name, "static_argnames", static_argnames), "static",
        )  # fmt: skip
        dnums, dnames = resolve_argnums(
            name, sig, int_tuple(name, "donate_argnums", donate_argnums),
            str_tuple(name, "donate_argnames", donate_argnames), "donate",
        )  # fmt: skip
        both = sorted(set(names) & set(dnames))
        if both:
            raise ValueError(
                f"jit({name}): static_argnames and donate_argnames cannot intersect: {both} appear in "
                "both (static_argnums and donate_argnums count too). A static argument is a Python "
                "value baked into the program, with no buffer to donate: remove it from one of them."
            )
        both = sorted(set(nums) & set(dnums))
        if both:
            raise ValueError(
                f"jit({name}): static_argnums and donate_argnums cannot intersect: {both} appear in "
                "both. A static argument is a Python value baked into the program, with no buffer to "
                "donate: remove it from one of them."
            )
        self._static_argnums, self._static_argnames = nums, names
        self._donate_argnums, self._donate_argnames = dnums, dnames
        self._backend_error = check_backend(name, backend)
        # "c" / "numpy" choose the compiler backend for this function; a platform ("cpu") or None
        # leaves the configured default. Honoured where the function is called eagerly; inside
        # an enclosing transformation the program runs on the default backend.
        self._compiler_backend = backend if backend in BACKEND_NAMES else None
        cache = _cache_for(fun)
        if cache is None:
            cache = {}
            _own_caches.add(self)
        self._cache = cache
        # Signatures this wrapper ran eagerly, for the fast path of later calls (call_fast.py).
        # Static and donated arguments always take the general path.
        self._fast = None
        # in_shardings/out_shardings (jit_shardings.py), applied when called eagerly.
        self._shardings = None
        if in_shardings is not None or out_shardings is not None:
            self._shardings = (
                jit_shardings.check(name, "in_shardings", in_shardings),
                jit_shardings.check(name, "out_shardings", out_shardings),
            )
        if not (nums or names or dnums or dnames or self._backend_error or self._shardings):
            self._fast = call_fast.FastCalls()

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def clear_cache(self):
        self._cache.clear()

    def _split(self, args, kwargs):
        if not self._static_argnums and not self._static_argnames:
            return args, kwargs, (), ()
        nargs = len(args)
        static_nums = tuple(i % nargs if i < 0 else i for i in self._static_argnums if -nargs <= i < nargs)
        static_pos = tuple((i, _hashable_static(args[i], f"static argument {i}")) for i in static_nums)
        static_kw = tuple(
            sorted(
                (k, _hashable_static(v, f"static argument {k!r}"))
                for k, v in kwargs.items()
                if k in self._static_argnames
            )
        )
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static_nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        return dyn_args, dyn_kwargs, static_pos, static_kw

    def _lookup(self, args, kwargs):
        if _trace.ctx.trace is not _trace.base_trace():
            # Named vmap axes in scope change what collectives trace to: key on them too.
            env = _axis_env()
            if env:
                kwargs = dict(kwargs)
                return self._lookup_with_env(args, kwargs, env)
        keys = None if kwargs or self._static_argnums else _positional_keys(args)
        if keys is not None:
            # The common call: positional arrays (or tracers) only. Its key needs no pytree
            # flattening.
            key = (_positional_tree(len(args)), keys, ((), ()), config.trace_context())
            hit = self._cache.get(key)
            if hit is None:
                hit = self._trace_and_store(key, args, {}, (), ())
            return hit, args, None
        dyn_args, dyn_kwargs, static_pos, static_kw = self._split(args, kwargs)
        leaves, in_tree = pytree.tree_flatten((dyn_args, dyn_kwargs))
        key = (in_tree, tuple(_leaf_key(x) for x in leaves), (static_pos, static_kw), config.trace_context())
        hit = self._cache.get(key)
        if hit is None:
            hit = self._trace_and_store(key, args, kwargs, static_pos, static_kw)
        return hit, leaves, in_tree

    def _lookup_with_env(self, args, kwargs, env):
        dyn_args, dyn_kwargs, static_pos, static_kw = self._split(args, kwargs)
        leaves, in_tree = pytree.tree_flatten((dyn_args, dyn_kwargs))
        key = (
            in_tree,
            tuple(_leaf_key(x) for x in leaves),
            (static_pos, static_kw, env),
            config.trace_context(),
        )
        hit = self._cache.get(key)
        if hit is None:
            hit = self._trace_and_store(key, args, kwargs, static_pos, static_kw)
        return hit, leaves, in_tree

    def _trace_and_store(self, key, args, kwargs, static_pos, static_kw):
        # A function that calls itself under jit traces itself again before its first trace ends:
        # with the same key it would never end (traced values cannot stop the recursion).
        active = _active_traces()
        cache_id = id(self._cache)
        outer = None
        for entry in active:
            if entry[0] == cache_id:
                if entry[1] == key:
                    raise JitRecursionError(
                        f"jit({self._name}) calls itself recursively with the same argument types "
                        f"({_describe_key(key)}), so its tracing would never end: a traced value "
                        "cannot stop a recursion under jit. End the recursion with a static argument "
                        "(static_argnums) that changes at each level, or write the loop with "
                        "lax.while_loop, lax.fori_loop or lax.scan."
                    )
                outer = outer or entry
        if outer is not None:
            outer[2] = True  # the outermost trace of this function has been re-entered
        entry = [cache_id, key, False]
        active.append(entry)
        try:
            return self._trace(key, args, kwargs, static_pos, static_kw)
        except RecursionError as e:
            if isinstance(e, JitRecursionError) or outer is not None or not entry[2]:
                raise  # ours, not the outermost trace of the recursion, or not a jit recursion
            raise JitRecursionError(
                f"maximum recursion depth exceeded while tracing jit({self._name}), which calls "
                "itself recursively under jit with ever-changing argument types or static values. "
                "Bound the recursion with a static argument (static_argnums) that reaches a base "
                "case in a few levels, or write the loop with lax.while_loop, lax.fori_loop or "
                "lax.scan."
            ) from None
        finally:
            active.pop()

    def _trace(self, key, args, kwargs, static_pos, static_kw):
        dyn_args, dyn_kwargs, _, _ = self._split(args, kwargs)
        leaves, in_tree = pytree.tree_flatten((dyn_args, dyn_kwargs))
        if config.no_tracing:
            raise RuntimeError(
                f"re-tracing function {self._name} for `jit`, but 'no_tracing' is set: the call's "
                f"signature ({_describe_key(key)}) is not in its cache. Call it once with this "
                "signature before the `with morphax.no_tracing(True):` block."
            )
        if config.log_compiles:
            logger.warning("Tracing %s because %s", self._name, _explain_miss(self._cache, key, self._name))
        elif config.explain_cache_misses:
            logger.warning(
                "TRACING CACHE MISS for jit(%s): %s", self._name, _explain_miss(self._cache, key, self._name)
            )
        static_pos_d = {i: s.value for i, s in static_pos}
        static_kw_d = {k: s.value for k, s in static_kw}
        nargs = len(args)
        fun = self._fun

        def target(*dyn, **kw):
            it = iter(dyn)
            full = [static_pos_d[i] if i in static_pos_d else next(it) for i in range(nargs)]
            return fun(*full, **kw, **static_kw_d)

        out_store: list = []
        trace_counters.traces += 1
        dbg = make_debug_info(
            "jit", fun, args, kwargs, static_argnums=static_pos_d, static_argnames=static_kw_d
        )
        with events.span(f"trace jit({self._name})", "trace"):
            closed = trace_to_jaxpr(
                flatten_fun(target, in_tree, out_store), [_abstractify(x) for x in leaves], debug_info=dbg
            )
        if config.enable_checks:
            check_jaxpr(closed.jaxpr)
        out_tree = out_store[0]
        single = pytree.treedef_is_leaf(out_tree) and out_tree.num_leaves == 1
        closed, lifted = closure_convert_tracers(closed)
        if state_types.state_used[0]:  # refs: a functional program plus reads and writes (jit_refs.py)
            closed = stateful_form(closed, len(lifted), dbg)
        if lifted:
            # The function closed over values of an enclosing transformation (e.g. jit inside
            # grad): they become leading arguments of the call, and this trace is not cached,
            # since those values belong to this one transformation.
            return (closed, out_tree, single, tuple(lifted))
        cache = self._cache
        if len(cache) >= MAX_TRACES_PER_FUNCTION:
            try:
                del cache[next(iter(cache))]
            except (KeyError, RuntimeError, StopIteration):  # another thread evicted it first
                pass
        hit = cache[key] = (closed, out_tree, single, ())
        return hit

    @api_boundary
    def trace(self, *args, **kwargs) -> Traced:
        if self._backend_error is not None:
            raise RuntimeError(self._backend_error)
        (closed, out_tree, _, lifted), leaves, in_tree = self._lookup(args, kwargs)
        if type(closed) is StatefulCall:
            raise NotImplementedError(
                f"jit({self._name}).trace/lower: the function takes or closes over mutable array "
                "references (Refs), which staged programs cannot hold yet; call jit(f) directly, or "
                "lower a function that takes the refs' values (ref[...]) and returns the new ones."
            )
        if lifted:
            raise NotImplementedError(
                f"jit({self._name}).trace/lower: the function closes over values of an enclosing "
                "transformation; pass them as arguments instead."
            )
        if in_tree is None:
            in_tree = pytree.tree_structure((args, {}))
        _, _, static_pos, static_kw = self._split(args, kwargs)
        dbg = make_debug_info(
            "jit", self._fun, args, kwargs, static_argnums=dict(static_pos), static_argnames=dict(static_kw)
        )
        return Traced(
            closed, in_tree, out_tree, list(leaves), self._name, dbg.arg_names, self._compiler_backend
        )

    @register_boundary
    def __call__(self, *args, **kwargs):
        try:
            # The fast path (call_fast.py): positional ready Arrays at a signature called
            # before, eagerly, with nothing that needs the general path. Otherwise (or when it
            # declines), the general path.
            if not kwargs and self._fast:
                outs = call_fast.run(self._fast, args)
                if outs is not None:
                    return outs
            return self._call(*args, **kwargs)
        except Exception as e:
            # A boundary (traceback_util.api_boundary) without a wrapper frame.
            filter_leaving_boundary(e, sys._getframe().f_back)
            raise

    def _call(self, *args, **kwargs):
        if self._backend_error is not None:
            raise RuntimeError(self._backend_error)
        if config.disable_jit:
            return self._fun(*args, **kwargs)
        donated = None
        if self._donate_argnums or self._donate_argnames:
            donated = self._donated_arrays(args, kwargs)
        (closed, out_tree, single, lifted), leaves, _ = self._lookup(args, kwargs)
        if type(closed) is StatefulCall:
            outs = self._call_stateful(closed, lifted, leaves)
            return outs[0] if single else pytree.tree_unflatten(out_tree, outs)
        if lifted:
            leaves = list(lifted) + list(leaves)
        if _trace.ctx.trace is _trace.base_trace():
            # Eager caller: skip bind and run the compiled executable directly.
            positions = ()
            if donated:
                ids = {id(leaf) for leaf in donated}
                positions = tuple(i for i, leaf in enumerate(leaves) if id(leaf) in ids)
            shardings = None
            if self._shardings is not None:
                dyn_args = self._split(args, kwargs)[0]
                shardings = jit_shardings.flat(self._name, *self._shardings, dyn_args, len(leaves), out_tree)
            try:
                outs = call_compiled(leaves, closed, self._name, self._compiler_backend, positions, shardings)
            except IncompatibleDevicesError as e:  # name the arguments as JAX does
                raise e.with_labels(self._arg_names(args, kwargs, len(leaves))) from None
            zeros = _float0_outputs(closed)
            if zeros:  # float0 results are NumPy arrays, as JAX returns them (no device holds them)
                outs = [np.zeros(o.shape, float0) if k in zeros else o for k, o in enumerate(outs)]
            elif self._fast is not None and not kwargs and (leaves is args or not lifted):
                call_fast.remember(
                    self._fast, args, closed, self._name, self._compiler_backend, out_tree, single
                )
        else:
            outs = pjit_p.bind(*leaves, jaxpr=closed, name=self._name)
        if donated:
            for leaf in donated:
                leaf.delete()
        if single:
            return outs[0]
        return pytree.tree_unflatten(out_tree, outs)

    def _call_stateful(self, sc, lifted, leaves):
        eager = None
        if _trace.ctx.trace is _trace.base_trace():

            def eager(vals):
                return call_compiled(vals, sc.discharged, self._name, self._compiler_backend)

        def bind(vals, closed):
            return pjit_p.bind(*vals, jaxpr=closed, name=self._name)

        return call_stateful(sc, lifted, leaves, self._name, eager, bind)

    def _arg_names(self, args, kwargs, n) -> list:
        """The names of the flat arguments (``p['a']``, ``r[0]``), for error messages."""
        _, _, static_pos, static_kw = self._split(args, kwargs)
        dbg = make_debug_info(
            "jit", self._fun, args, kwargs, static_argnums=dict(static_pos), static_argnames=dict(static_kw)
        )
        names = list(dbg.arg_names or ())
        return names if len(names) == n else list(range(n))

    def _donated_arrays(self, args, kwargs) -> list:
        """The arrays this call donates. A donated buffer is consumed by the call, so it may not
        also be passed a second time in the same call (JAX refuses this when it runs)."""
        nargs = len(args)
        donated_pos = {i % nargs if i < 0 else i for i in self._donate_argnums if -nargs <= i < nargs}
        donated, others = [], []
        for i, a in enumerate(args):
            (donated if i in donated_pos else others).append((f"argument {i}", a))
        for k, v in kwargs.items():
            (donated if k in self._donate_argnames else others).append((f"argument {k!r}", v))
        seen: dict[int, str] = {}
        out = []
        for label, value in donated:
            for leaf in pytree.tree_leaves(value):
                if type(leaf) is Array:
                    if id(leaf) in seen:
                        self._raise_donated_twice(seen[id(leaf)], label)
                    seen[id(leaf)] = label
                    out.append(leaf)
        for label, value in others:
            for leaf in pytree.tree_leaves(value):
                if type(leaf) is Array and id(leaf) in seen:
                    self._raise_donated_twice(seen[id(leaf)], label)
        return out

    def _raise_donated_twice(self, first, second):
        raise JaxRuntimeError(
            f"jit({self._name}): the same array is passed as donated {first} and again as {second}. "
            "A donated buffer is consumed by the call and can be used only once in it: pass a copy "
            "(jnp.array(x, copy=True)) for one of them, or do not donate it."
        )

    @api_boundary
    def lower(self, *args, **kwargs) -> Lowered:
        return self.trace(*args, **kwargs).lower()

    @api_boundary
    def eval_shape(self, *args, **kwargs):
        return self.trace(*args, **kwargs).out_info


def jit(
    fun=None,
    *,
    static_argnums=None,
    static_argnames=None,
    donate_argnums=None,
    donate_argnames=None,
    keep_unused=False,
    inline=False,
    device=None,
    backend=None,
    in_shardings=None,
    out_shardings=None,
    abstracted_axes=None,
    compiler_options=None,
):
    """Stage `fun` into a jaxpr once per argument signature and run it compiled, asynchronously."""
    if fun is None:
        return functools.partial(
            jit,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            donate_argnums=donate_argnums,
            donate_argnames=donate_argnames,
            keep_unused=keep_unused,
            inline=inline,
            device=device,
            backend=backend,
            in_shardings=in_shardings,
            out_shardings=out_shardings,
            abstracted_axes=abstracted_axes,
            compiler_options=compiler_options,
        )
    # NB: backend="c" / "numpy" choose morphax's compiler backend and are not deprecated; JAX's
    # platform names ("cpu", "gpu") and device= are, as in JAX.
    if (backend is not None and backend not in BACKEND_NAMES) or device is not None:
        warnings.warn(
            "jit: the backend and device arguments are deprecated (as in JAX). Place the inputs "
            'instead: morphax.device_put(x, morphax.local_devices(backend="cpu")[0]).',
            DeprecationWarning,
            stacklevel=2,
        )
    return JitWrapped(
        fun, static_argnums, static_argnames, donate_argnums, donate_argnames, backend,
        in_shardings, out_shardings,
    )  # fmt: skip


@contextlib.contextmanager
def disable_jit(disable: bool = True):
    """Run jitted functions as plain Python inside the block (for debugging with prints), in this
    thread only (as in JAX, the context managers are thread-local)."""
    with config._override("jax_disable_jit", disable):
        yield


def effects_barrier():
    """Wait until every computation dispatched so far, on every device, has finished. Host
    callbacks already run before their call returns (see docs/reliability.md), so this waits
    for queued work only."""
    from morphax._src.runtime import dispatch

    dispatch.synchronize_all()


def block_until_ready(tree):
    """Wait for every array in `tree`; returns `tree`."""
    if type(tree) is Array and not events.on:
        return tree.block_until_ready()  # one Array: no tree to walk
    with events.span("block_until_ready", "transfer"):
        for leaf in pytree.tree_leaves(tree):
            if hasattr(leaf, "block_until_ready"):
                leaf.block_until_ready()
    return tree


def default_backend() -> str:
    """The platform computations run on by default: "cpu", or "tpu" where libtpu is found and
    opens (jax_platforms / JAX_PLATFORMS choose)."""
    from morphax._src.runtime import devices as _devices

    return _devices.platform()
