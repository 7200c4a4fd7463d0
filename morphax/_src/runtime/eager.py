"""The eager trace: runs each primitive at once on ready buffers with its NumPy reference.

Installed as the base of every thread's trace context at import. Output types come from the
primitive's abstract_eval, cached per (primitive, input types, params) so the per-op Python cost
stays in the low microseconds. Calls that compile when evaluated eagerly (pjit:
`Primitive.eager_compiled`) run their compiled program on the device stream (`call_compiled`).
Must not import the public API.
"""

from __future__ import annotations

import warnings

import numpy as np

from morphax._src import errors, events
from morphax._src.compiler import physicalize
from morphax._src.compiler.backends import platform as backend_platform
from morphax._src.compiler.compile import compile_jaxpr
from morphax._src.config import config
from morphax._src.core import dtypes as _dtypes
from morphax._src.core import state_types
from morphax._src.core import trace as _trace
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var, eval_jaxpr
from morphax._src.core.trace import Tracer
from morphax._src.prims import random_keys as _random_keys
from morphax._src.runtime import array as _array
from morphax._src.runtime import dispatch, guards, placement, spmd_runner
from morphax._src.runtime.array import Array
from morphax._src.sharding.propagation import equation_out_shardings
from morphax._src.sharding.shardings import SingleDeviceSharding

# NumPy reports float edge cases (log(-1), inf - inf) as RuntimeWarnings attributed to the calling
# module. JAX is silent there, and so are we, without touching the user's own NumPy settings.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"morphax\._src\..*")

_abstract_cache: dict = {}
_ABSTRACT_CACHE_LIMIT = 4096


def _remember(key, out_aval):
    """Cache an output type; the cache is cleared when full, so eager calls over ever-new shapes
    (a data loader with ragged batches) cannot grow it without bound."""
    if len(_abstract_cache) >= _ABSTRACT_CACHE_LIMIT:
        _abstract_cache.clear()
    _abstract_cache[key] = out_aval
    return out_aval


def _quiet_call(fn, args, params):
    with np.errstate(all="ignore"):
        return fn(*args, **params)


def run_impl(prim, vals, params):
    """Call the reference; if warnings are errors (tests, strict users), rerun with them silenced."""
    try:
        return prim.impl(*vals, **params)
    except (RuntimeWarning, FloatingPointError):
        return _quiet_call(prim.impl, vals, params)


def _to_host(x, prim):
    t = type(x)
    if t is np.ndarray:
        aval = get_aval(x)
        return (x if x.dtype == aval.dtype else x.astype(aval.dtype)), aval
    if isinstance(x, Tracer):
        _trace.check_tracer_valid(x, None)
        raise TypeError(
            f"{prim.name}: got a tracer ({x!r}) in eager evaluation; this means a value from a "
            "transformation leaked out of it."
        )
    aval = get_aval(x)
    if isinstance(x, Array):
        return x._value, aval
    return np.asarray(x, dtype=aval.dtype), aval


def _wrap(out, aval: ShapedArray) -> Array:
    if type(out) is not np.ndarray or out.dtype != aval.dtype:
        out = np.asarray(out, dtype=aval.dtype)
    return Array(out, aval.weak_type)


class EvalTrace(_trace.Trace):
    """Evaluate primitives immediately."""

    def process_primitive(self, prim, args, params):
        if guards.active:
            guards.before_eager(prim.name, args)
        if _keys_used[0] and (prim in _key_rules or _key_leaf[0] in map(type, args)):
            return _run_on_keys(prim, args, params)
        if _device_default:
            out = _run_on_device(prim, args, params)
            if out is not None:
                return out
        nargs = len(args)
        if nargs <= 2 and not prim.multiple_results and not prim.higher_order and not _default_elsewhere:
            out = self._fast_path(prim, args, params, nargs)
            if out is not None:
                return out
        if prim.eager_compiled:
            if state_types.state_used[0] and any(type(x) is state_types.Ref for x in args):
                return _run_with_refs(prim, args, params)  # a staged jit call that takes refs
            return call_compiled(args, params[prim.call_jaxpr_param], params.get("name", prim.name))
        # Jaxpr-carrying primitives (below) run their bodies with bind: each operation inside
        # comes back here.
        if _placed and not prim.higher_order and _spans_processes(args):
            return _run_over_processes(prim, args, params)
        if prim.higher_order:
            if state_types.state_used[0] and prim not in state_types.STATE_PRIMS:
                for x in args:
                    if type(x) is state_types.Ref:  # control flow given refs: run it discharged
                        return _run_with_refs(prim, args, params)
            # Jaxpr-carrying primitives evaluate their bodies with bind, so they keep Arrays.
            out = prim.impl(*args, **params)
            if _float_checks:
                check_call_outputs(
                    prim.name, params.get("jaxpr"), args, out if prim.multiple_results else [out]
                )
            return out
        vals = []
        key = [prim]
        for x in args:
            if type(x) is Array:
                buf = x._buf
                if type(buf) is not np.ndarray:
                    buf = x._wait()
                vals.append(buf)
                key.append(buf.shape)
                key.append(buf.dtype)
                key.append(x.weak_type)
            else:
                val, aval = _to_host(x, prim)
                vals.append(val)
                key.append(aval.shape)
                key.append(aval.dtype)
                key.append(aval.weak_type)
        if params:
            try:
                key.append(tuple(params.items()))
                key = tuple(key)
                out_aval = _abstract_cache.get(key)
            except TypeError:  # unhashable params: no caching
                key = None
                out_aval = None
        else:
            key = tuple(key)
            out_aval = _abstract_cache.get(key)
        if out_aval is None:
            in_avals = [get_aval(x) if not isinstance(x, np.ndarray) else None for x in args]
            in_avals = [a if a is not None else get_aval(v) for a, v in zip(in_avals, vals)]
            out_aval = prim.abstract_eval(*in_avals, **params)
            if key is not None:
                _remember(key, out_aval)
        try:
            out = prim.impl(*vals, **params)
        except (RuntimeWarning, FloatingPointError):
            out = _quiet_call(prim.impl, vals, params)
        if _float_checks:
            _check_floats(prim, out if prim.multiple_results else (out,))
        if _placed:  # results go where the inputs are (runtime/placement.py)
            return _placed_outputs(prim, args, params, out, out_aval)
        if prim.multiple_results:
            return [_wrap(o, a) for o, a in zip(out, out_aval)]
        if type(out) is np.ndarray and out.dtype == out_aval.dtype:
            return Array(out, out_aval.weak_type)
        return _wrap(out, out_aval)

    @staticmethod
    def _fast_path(prim, args, params, nargs):
        """One or two ready Arrays: the common eager case, kept to a few dict and attribute reads."""
        try:
            if nargs == 2:
                a, b = args
                if type(a) is not Array or type(b) is not Array:
                    return None
                ba, bb = a._buf, b._buf
                if type(ba) is not np.ndarray or type(bb) is not np.ndarray:
                    return None
                if a._place is not None or b._place is not None:
                    return None  # placed: the general path places the result
                key = (
                    (prim, ba.shape, ba.dtype, a.weak_type, bb.shape, bb.dtype, b.weak_type, *params.items())
                    if params
                    else (prim, ba.shape, ba.dtype, a.weak_type, bb.shape, bb.dtype, b.weak_type)
                )
                out_aval = _abstract_cache.get(key)
                if out_aval is None:
                    out_aval = _remember(key, prim.abstract_eval(a.aval, b.aval, **params))
                vals = (ba, bb)
            elif nargs == 1:
                (a,) = args
                if type(a) is not Array:
                    return None
                ba = a._buf
                if type(ba) is not np.ndarray or a._place is not None:
                    return None
                key = (prim, ba.shape, ba.dtype, a.weak_type, *params.items())
                out_aval = _abstract_cache.get(key)
                if out_aval is None:
                    out_aval = _remember(key, prim.abstract_eval(a.aval, **params))
                vals = (ba,)
            else:
                return None
        except TypeError:  # unhashable params: the general path handles them
            return None
        try:
            out = prim.impl(*vals, **params) if params else prim.impl(*vals)
        except (RuntimeWarning, FloatingPointError):
            out = _quiet_call(prim.impl, vals, params)
        if _float_checks:
            _check_floats(prim, (out,))
        if type(out) is np.ndarray and out.dtype is out_aval.dtype:
            return Array(out, out_aval.weak_type)
        return _wrap(out, out_aval)


def _spans_processes(args) -> bool:
    """Whether an argument is an Array holding only its process's pieces of a global array."""
    return any(placement.holds_local_pieces(x) for x in args)


_one_equation_programs: dict = {}  # (primitive, input avals, params) -> its closed jaxpr


def _one_equation(prim, in_avals, params, cache_only=False):
    """The closed jaxpr applying `prim` to inputs of `in_avals`, cached (compile_jaxpr memoizes
    its executable on it). `cache_only`: None instead of a jaxpr that cannot be cached
    (unhashable params), which would compile at every call."""
    try:
        key = (prim, in_avals, tuple(params.items()))
        closed = _one_equation_programs.get(key)
    except TypeError:  # unhashable params: built each time
        if cache_only:
            return None
        key, closed = None, None
    if closed is None:
        out = prim.abstract_eval(*in_avals, **params)
        out_avals = list(out) if prim.multiple_results else [out]
        invars = [Var(a) for a in in_avals]
        outvars = [Var(a) for a in out_avals]
        closed = ClosedJaxpr(Jaxpr([], invars, outvars, [JaxprEqn(prim, invars, outvars, params)]), [])
        if key is not None:
            if len(_one_equation_programs) >= 1024:
                _one_equation_programs.clear()
            _one_equation_programs[key] = closed
    return closed


def _run_over_processes(prim, args, params):
    """`prim` on arrays laid out over the devices of several processes: each process holds only
    its pieces, so, as JAX runs every eager operation, it runs as a jitted one-equation program,
    split over the processes' devices (runtime/spmd_runner.py)."""
    closed = _one_equation(prim, tuple(get_aval(x) for x in args), params)
    outs = call_compiled(list(args), closed, prim.name)
    return outs if prim.multiple_results else outs[0]


_HOST_VALUE_TYPES = (int, float, complex, bool, np.ndarray, np.generic)


def _run_on_device(prim, args, params):
    """On a device platform (a TPU: compiler/backends/platform.py), an eager operation runs
    there as JAX runs it: a compiled one-equation program, cached per (primitive, input types,
    params), its outputs device arrays. None where it runs on the host instead: on the CPU
    platform, for arrays committed to the CPU's devices, host callbacks, refs, typed keys and
    unhashable params; jit calls (pjit) compile for the device by themselves."""
    if _device_platform[0] is None and backend_platform.chosen() == "cpu":  # (_on_platform sets both)
        return None
    if prim.eager_compiled or prim.calls_host or prim.has_side_effects:
        return None
    in_avals = []
    for x in args:
        t = type(x)
        if t is Array:
            buf = x._buf
            in_avals.append(ShapedArray(buf.shape, buf.dtype, x.weak_type))
        elif isinstance(x, _HOST_VALUE_TYPES):
            aval = get_aval(x)
            if not isinstance(aval.dtype, np.dtype):
                return None
            in_avals.append(aval)
        else:  # tracers (the general path says what leaked), refs, key arrays
            return None
    if _placed and placement.on_host_device(args):
        return None
    closed = _one_equation(prim, tuple(in_avals), params, cache_only=True)
    if closed is None:
        return None
    outs = call_compiled(list(args), closed, prim.name)
    return outs if prim.multiple_results else outs[0]


_identities: dict = {}  # aval -> the closed jaxpr returning its one input


def _relayout(x, sharding):
    """`x` laid out per `sharding` by a program that returns it unchanged: split over the mesh
    (runtime/spmd_runner.py), the pieces travel between devices and processes as needed."""
    aval = get_aval(x)
    closed = _identities.get(aval)
    if closed is None:
        v = Var(aval)
        if len(_identities) >= 256:
            _identities.clear()
        closed = _identities[aval] = ClosedJaxpr(Jaxpr([], [v], [v], []), [])
    return call_compiled([x], closed, "device_put", shardings=((None,), (sharding,)))[0]


placement.relayout[0] = _relayout


def _placed_outputs(prim, args, params, out, out_aval):
    """The outputs of an eagerly evaluated primitive, placed where its inputs are: committed to
    their devices (shardings propagated) if any is committed, else on the default device."""
    outs = [_wrap(o, a) for o, a in zip(out, out_aval)] if prim.multiple_results else [_wrap(out, out_aval)]
    committed = placement.committed_inputs(args, prim.name)
    if not committed:
        place = placement.default_place()
        for o in outs:
            o._place = place
    else:
        shardings = [s for _, s in committed]
        if all(type(s) is SingleDeviceSharding for s in shardings):
            for o in outs:
                o._place = (shardings[0], True)
        else:
            by_pos = dict(committed)
            ins = [by_pos.get(i) for i in range(len(args))]
            avals = [get_aval(x) for x in args]
            found = equation_out_shardings(prim, params, avals, [o.aval for o in outs], ins)
            for o, s in zip(outs, found):
                o._place = (s if s is not None else shardings[0], True)
    return outs if prim.multiple_results else outs[0]


def _run_with_refs(prim, args, params):
    """`prim` given concrete Refs: its discharged form runs compiled; the refs get the results."""
    from morphax._src.higher_order.state_discharge import run_with_refs

    return run_with_refs(
        prim, list(args), params, lambda closed, vals: call_compiled(vals, closed, prim.name)
    )


def _run_on_keys(prim, args, params):
    """An operation on concrete typed keys: its rule on their words (compiler/physicalize.py),
    the key results made key values again."""
    leaf = _key_leaf[0]
    in_avals = [get_aval(x) for x in args]
    outs = physicalize.physical_apply(prim, [physicalize.physical_value(x) for x in args], in_avals, params)
    out_avals = prim.abstract_eval(*in_avals, **params)
    out_avals = out_avals if prim.multiple_results else [out_avals]
    outs = [leaf(o) if _random_keys.is_key_aval(a) else o for o, a in zip(outs, out_avals)]
    return outs if prim.multiple_results else outs[0]


def _call_on_keys(args, jaxpr, name, backend, donate, shardings):
    """`call_compiled` of a program with typed keys: its physical form on the keys' words."""
    leaf = _key_leaf[0]
    outs = call_compiled(
        [physicalize.physical_value(x) for x in args],
        physicalize.physicalize(jaxpr),
        name,
        backend,
        donate,
        shardings,
    )
    return [leaf(o) if _random_keys.is_key_aval(a) else o for o, a in zip(outs, jaxpr.out_avals)]


def call_compiled(args, jaxpr, name, backend=None, donate: tuple = (), shardings=None):
    """Run the compiled `jaxpr` on `args` on the device stream; the Arrays at positions `donate`
    are consumed (their buffers may hold outputs). `shardings`: jit's (in_shardings,
    out_shardings), one entry (a Sharding or None) per flat argument and result, or None."""
    if _keys_used[0] and physicalize.has_keys(jaxpr):
        return _call_on_keys(args, jaxpr, name, backend, donate, shardings)
    if guards.active:
        guards.before_call(name, args)
    if backend is None and _placed and _device_platform[0] not in (None, "cpu"):
        if placement.on_host_device(args):
            backend = "cpu"  # committed to the CPU's devices: runs there, not on the device
    executable = compile_jaxpr(jaxpr, name, backend, donate)
    if _placed or shardings is not None:
        return _call_placed(executable, args, jaxpr, name, donate, shardings, backend)
    outs = dispatch.execute(executable, args, executable.out_weak_types, donate=bool(donate))
    if _float_checks:
        # jax_debug_nans/infs: a bad output reruns the jaxpr op by op to name the culprit.
        check_call_outputs(name, jaxpr, args, outs)
    return outs


def _call_placed(executable, args, jaxpr, name, donate, shardings, backend=None):
    """`call_compiled` where placement matters: run on the device of the committed inputs (or
    jit's in_shardings), and lay the outputs out per out_shardings or the propagated shardings."""
    in_s, out_s = shardings if shardings is not None else (None, None)
    _array.mark_placed()
    committed = placement.committed_inputs(args, name)
    typed = None
    if in_s is not None:
        typed = {i for i, _ in committed}
        committed = placement.apply_in_shardings(args, in_s, committed, name)
    if out_s is not None and not committed:
        given = [s for s in out_s if s is not None]
        device_id = given[0]._device_assignment[0].id if given else placement.default_device().id
    else:
        device_id = placement.run_device(committed)
    # Placements first: propagation answers inspect_array_sharding before the program runs.
    places = placement.result_shardings(jaxpr, args, committed, out_s, typed)
    # Split over a mesh of several devices: every device computes its blocks (SPMD).
    outs = spmd_runner.run_partitioned(
        executable, jaxpr, args, committed, places, name, backend, executable.out_weak_types
    )
    if outs is not None:
        if _float_checks:
            check_call_outputs(name, jaxpr, args, outs)
        return outs
    if _spans_processes(args):
        # Holding only this process's pieces, the inputs cannot go to one device: a program that
        # cannot be split over the processes (one that calls back into Python, as shard_map's
        # does) runs operation by operation, each split over them (or mapping its own devices).
        eqns = jaxpr.jaxpr.eqns
        if len(eqns) == 1 and not eqns[0].primitive.higher_order:  # one operation: no smaller steps
            raise NotImplementedError(
                f"{name}: an input is laid out over the devices of several processes, and this operation "
                f"({eqns[0].primitive.name}) cannot be split over them (it calls back into Python); gather "
                "the input first (morphax.experimental.multihost_utils.process_allgather)."
            )
        return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)
    outs = dispatch.execute(
        executable, args, executable.out_weak_types, device_id=device_id, donate=bool(donate)
    )
    if _float_checks:
        check_call_outputs(name, jaxpr, args, outs)
    for o, place in zip(outs, places):
        o._place = place
    return outs


def clear_caches():
    _abstract_cache.clear()
    _one_equation_programs.clear()
    _identities.clear()


# Typed PRNG keys: whether any key value was made yet, the class of concrete ones, and the key
# primitives (prims/random_keys.py), which always run through their physical rules eagerly.
_keys_used = _random_keys.KEYS_USED
_key_leaf = _random_keys.KEY_LEAF
_key_rules = _random_keys.PHYSICAL

# jax_debug_nans / jax_debug_infs, folded into one module global so the hot path pays one read.
_float_checks = False
# While a profiler trace is collected (events.py), eager operations are timed by swapping the
# class's method, so outside a trace eager dispatch has no check at all.
_untimed_process_primitive = EvalTrace.process_primitive


def _timed_process_primitive(self, prim, args, params):
    start = events.now()
    try:
        return _untimed_process_primitive(self, prim, args, params)
    finally:
        events.complete(prim.name, "eager", start)


def _on_profiling(on):
    EvalTrace.process_primitive = _timed_process_primitive if on else _untimed_process_primitive
    _refresh_ready_shortcut()


def _on_float_flags(name, value):
    # On while any thread (or the global setting) asks for checks; _check_floats then reads the
    # calling thread's own flags, so a thread-local `debug_nans(True)` block checks only there.
    global _float_checks
    _float_checks = config.set_anywhere("jax_debug_nans") or config.set_anywhere("jax_debug_infs")


def _check_floats(prim, outs):
    """Raise naming `prim` when one of its outputs holds a NaN (or inf) the flags ask about."""
    name = prim if isinstance(prim, str) else prim.name
    for out in outs:
        arr = np.asarray(out)
        if not _dtypes.is_inexact(arr.dtype):
            continue
        if config.debug_nans and np.isnan(arr).any():
            raise FloatingPointError(f"invalid value (nan) encountered in {name}")
        if config.debug_infs and np.isinf(arr).any():
            raise FloatingPointError(f"invalid value (inf) encountered in {name}")


def check_call_outputs(name, closed, args, outs):
    """For compiled calls while jax_debug_nans/infs is on (callers test `_float_checks` first): on
    a bad output, rerun the jaxpr op by op, as JAX does, so the error names the primitive that
    made the value; the call itself is blamed if the rerun stays clean."""
    try:
        _check_floats(name, outs)
    except FloatingPointError:
        # Only a call whose jaxpr takes exactly these arguments (pjit) can be replayed; loop
        # bodies (scan, while) take per-iteration slices and are blamed as a whole.
        if (
            isinstance(closed, ClosedJaxpr)
            and len(closed.in_avals) == len(args)
            and all(get_aval(a).shape == v.shape for a, v in zip(args, closed.in_avals))
        ):
            eval_jaxpr(closed.jaxpr, closed.consts, *args)
        raise


# Whether placement matters yet (runtime/array.py's `placed`): until an Array is placed off the
# default or a default_device context is used, the general paths skip it altogether. The fast
# paths (here and call_fast.py) instead decline placed inputs one by one, and any call while a
# default_device context is on somewhere (`_default_elsewhere`).
_placed = False
_default_elsewhere = False
# Whether eager operations may run on a device platform: True until the platform is known to be
# the CPU (decided at the first operation), [the platform] once known.
_device_default = True
_device_platform: list = [None]


def _on_platform(name):
    global _device_default
    _device_platform[0] = name
    _device_default = name != "cpu"
    _refresh_ready_shortcut()


# Whether the eager operators may compute a primitive on ready NumPy values without binding it
# (`Primitive.ready_impl`; numpy/array_methods.py, numpy/ufuncs.py): only while the platform is
# known to be the CPU and nothing asks to see each operation (transfer guards, jax_debug_nans or
# infs, a default_device context, a profiler trace). The callers still check the current trace
# and each operand. One list read on their hot path, kept up to date by the listeners here.
READY_SHORTCUT = [False]


def _refresh_ready_shortcut(*_):
    READY_SHORTCUT[0] = not (
        _device_default or _default_elsewhere or _float_checks or guards.active or events.on
    )


backend_platform.on_chosen(_on_platform)


def _on_placed():
    global _placed
    _placed = True


def _on_default_device(name, value):
    global _default_elsewhere
    if name == "jax_default_device":
        _default_elsewhere = config.set_anywhere("jax_default_device")
        if value is not None:
            _array.mark_placed()


_array.on_placed(_on_placed)
config.add_listener(lambda name, value: clear_caches())
config.add_listener(_on_default_device)
config.add_listener(_on_float_flags)
config.add_listener(_refresh_ready_shortcut)  # after guards' and the two above
events.add_listener(_on_profiling)
eval_trace = EvalTrace()
_trace.set_base_trace(eval_trace)

__all__ = [
    "EvalTrace",
    "call_compiled",
    "check_call_outputs",
    "eval_trace",
    "run_impl",
    "clear_caches",
    "errors",
]
