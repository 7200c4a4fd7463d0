"""Global configuration flags (x64 mode, threefry mode, logging).

Sits below everything: any module may import it; it imports only the catalogue of JAX's flags
that morphax accepts without acting on them (jax_only_flags.py).
Flags are read through attributes (``config.enable_x64``) so hot paths pay one lookup.

Two layers, as in JAX: ``config.update`` sets the process-wide value; the context managers
(``enable_x64``, ``disable_x64``, ``config._override``) set a *thread-local* override on top of it, so
one thread computing in float64 inside ``with enable_x64():`` does not change what other threads
compute. ``Config`` is a ``threading.local`` whose per-thread attributes hold each thread's
*effective* values (the override where there is one, else the global value): a flag read stays a
single C-level attribute lookup, and ``trace_context()`` (part of every trace-cache key) is per
thread for free. ``update`` pushes the new global value into every thread that does not override it.
"""

from __future__ import annotations

import contextlib
import enum
import os
import re
import threading
import weakref

from morphax._src.jax_only_flags import DEFAULT_ONLY, NO_EFFECT


def _env_flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return raw.strip().lower() in ("1", "true", "yes", "on")


# option name -> (attribute, default factory)
_KNOWN = {
    "jax_enable_x64": (
        "enable_x64",
        lambda: _env_flag("MORPHAX_ENABLE_X64", _env_flag("JAX_ENABLE_X64", False)),
    ),
    "jax_threefry_partitionable": ("threefry_partitionable", lambda: True),
    "jax_log_compiles": ("log_compiles", lambda: False),
    # Static Python ints out of bounds raise IndexError in reads under the default (or
    # 'promise_in_bounds') mode, instead of clamping (numpy/indexing.py).
    "jax_check_static_indices": ("check_static_indices", lambda: False),
    "jax_disable_jit": ("disable_jit", lambda: False),
    "jax_numpy_rank_promotion": ("numpy_rank_promotion", lambda: "allow"),
    "jax_default_matmul_precision": ("default_matmul_precision", lambda: None),
    "jax_debug_nans": ("debug_nans", lambda: False),
    "jax_debug_infs": ("debug_infs", lambda: False),
    "jax_traceback_filtering": ("traceback_filtering", lambda: "auto"),
    # Under tracing, evaluate operations whose operands are all concrete instead of staging them
    # (what `ensure_compile_time_eval` turns on).
    "eager_constant_folding": ("eager_constant_folding", lambda: False),
    # Guards: raise if a jit traces (no_tracing) or anything executes (no_execution).
    "jax_no_tracing": ("no_tracing", lambda: False),
    "jax_no_execution": ("no_execution", lambda: False),
    # What an implicit host-to-device transfer does (runtime/guards.py); None: the general level.
    "jax_transfer_guard": ("transfer_guard", lambda: None),
    "jax_transfer_guard_host_to_device": ("transfer_guard_host_to_device", lambda: None),
    "jax_transfer_guard_device_to_host": ("transfer_guard_device_to_host", lambda: None),
    "jax_transfer_guard_device_to_device": ("transfer_guard_device_to_device", lambda: None),
    # "strict": arrays of different strong dtypes do not promote implicitly (core/dtypes.py).
    "jax_numpy_dtype_promotion": ("numpy_dtype_promotion", lambda: "standard"),
    # What random functions do with a raw uint32 key: "allow", "warn" or "error".
    "jax_legacy_prng_key": ("legacy_prng_key", lambda: "allow"),
    # Added to every seed (random.key, random.PRNGKey).
    "jax_random_seed_offset": ("random_seed_offset", lambda: 0),
    "jax_default_prng_impl": ("default_prng_impl", lambda: "threefry2x32"),
    # Log (logger 'morphax', WARNING) why each jit trace missed the cache.
    "jax_explain_cache_misses": ("explain_cache_misses", lambda: False),
    # Raise KeyReuseError when a typed key is consumed twice (random/key_reuse.py).
    "jax_debug_key_reuse": ("debug_key_reuse", lambda: False),
    # Raise when a tracer outlives the trace that made it (transforms/staging.py).
    "jax_check_tracer_leaks": ("check_tracer_leaks", lambda: False),
    # Type-check every jaxpr jit traces and optimizes (core.jaxpr.check_jaxpr).
    "jax_enable_checks": ("enable_checks", lambda: False),
    # nn.softmax differentiates by its own rule instead of through its formula.
    "jax_softmax_custom_jvp": ("softmax_custom_jvp", lambda: False),
    # False: reduce_sum of float16/bfloat16 raises.
    "jax_allow_f16_reductions": ("allow_f16_reductions", lambda: True),
    "jax_default_device": ("default_device", lambda: None),
    # The disk cache's directory (compiled C libraries and XLA executables): set here or by
    # experimental.compilation_cache.set_cache_dir; None: MORPHAX_CACHE_DIR, else ~/.cache/morphax.
    "jax_compilation_cache_dir": ("compilation_cache_dir", lambda: None),
    # The platforms to use, in order of preference ("cpu", "tpu", "tpu,cpu"; "xla_cpu": XLA's CPU
    # plugin as a device platform), read at the first computation (compiler/backends/platform.py).
    "jax_platforms": ("platforms", lambda: os.environ.get("JAX_PLATFORMS") or None),
    # How many CPU devices (runtime/devices.py); -1: XLA_FLAGS's count, else one.
    "jax_num_cpu_devices": ("num_cpu_devices", lambda: -1),
    # Seconds a collective between processes (morphax.distributed) waits for the others to arrive
    # before it raises instead of hanging.
    "morphax_collective_timeout": (
        "morphax_collective_timeout",
        lambda: float(os.environ.get("MORPHAX_COLLECTIVE_TIMEOUT", "60")),
    ),
    # Which compiler backend jit uses: "c" (fused native kernels; falls back to "numpy" where no C
    # compiler works) or "numpy" (every equation runs its NumPy reference).
    "morphax_backend": ("morphax_backend", lambda: os.environ.get("MORPHAX_BACKEND", "c")),
    # Threads for the native backend's parallel loops (0: the machine's core count).
    "morphax_num_threads": ("morphax_num_threads", lambda: int(os.environ.get("MORPHAX_NUM_THREADS", "0"))),
    # A program's first C library reads the numbers it uses once per call (batch extents, scratch
    # offsets, matmul sizes) at run time, so later batch sizes reuse it without a C compile
    # (backends/c/generic.py). Off: the first library is fully specialized, and a generic one is
    # compiled when a second shape comes.
    "morphax_shape_generic": (
        "morphax_shape_generic",
        lambda: os.environ.get("MORPHAX_SHAPE_GENERIC", "1").lower() not in ("0", "false", "no", "off"),
    ),
    # A program whose C library is in no cache yet runs its kernels with NumPy while the compiler
    # builds it in a background thread, then switches (the first call does not wait for the C
    # compiler). Off: the first call waits for the build.
    "morphax_compile_in_background": (
        "morphax_compile_in_background",
        lambda: (
            os.environ.get("MORPHAX_COMPILE_IN_BACKGROUND", "1").lower() not in ("0", "false", "no", "off")
        ),
    ),
}

# JAX's flags that morphax accepts without acting on them (jax_only_flags.py); attribute names
# drop the "jax_" prefix, as JAX's do.
for _name, (_default, _why) in {**NO_EFFECT, **DEFAULT_ONLY}.items():
    _KNOWN[_name] = (_name.removeprefix("jax_"), lambda d=_default: d)

_TRANSFER_LEVELS = (None, "allow", "log", "disallow", "log_explicit", "disallow_explicit")
# attribute -> the values it accepts
_CHOICES = {
    "numpy_rank_promotion": ("allow", "warn", "raise"),
    "numpy_dtype_promotion": ("standard", "strict"),
    "legacy_prng_key": ("allow", "warn", "error"),
    # JAX's implementations; only threefry2x32 exists here (the others raise when a key is made).
    "default_prng_impl": ("threefry2x32", "threefry4x32", "rbg", "unsafe_rbg", "philox2x32", "philox4x32"),
    "transfer_guard": _TRANSFER_LEVELS,
    "transfer_guard_host_to_device": _TRANSFER_LEVELS,
    "transfer_guard_device_to_host": _TRANSFER_LEVELS,
    "transfer_guard_device_to_device": _TRANSFER_LEVELS,
    "morphax_backend": ("c", "numpy", "xla"),
}

# The process-wide values (what config.update set), by attribute name.
_global_values = {attr: default() for attr, default in _KNOWN.values()}
# Each live thread's attribute dict, so update() can reach threads without an override. Keyed
# weakly by the Thread object: a finished thread's entry goes away with it.
_thread_dicts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# Guards _global_values, _thread_dicts and the per-thread override sets against a concurrent
# update() racing an override's enter/exit (either could otherwise lose the other's write).
_lock = threading.RLock()
_listeners: list = []
_validators: list = []


# The flags that change what tracing produces (`Config.trace_context`), kept as one tuple in
# each thread's dict and rebuilt whenever one of them changes: every jitted call reads it.
TRACE_FLAGS = [
    "enable_x64",
    "threefry_partitionable",
    "numpy_rank_promotion",
    "default_matmul_precision",
    "eager_constant_folding",
    "numpy_dtype_promotion",
    "legacy_prng_key",
    "random_seed_offset",
    "softmax_custom_jvp",
    "allow_f16_reductions",
    "check_static_indices",
]  # make_user_context appends


# Besides TRACE_FLAGS, what work run on another thread for this one must see.
_EXECUTION_FLAGS = ("debug_nans", "debug_infs", "morphax_backend", "disable_jit", "log_compiles")


def _refresh_trace_context(d: dict) -> None:
    d["_trace_context"] = tuple(d[a] for a in TRACE_FLAGS)
    # Which of result_type's caches the thread uses (core/dtypes.py): bit 0 is x64, bit 1 strict
    # dtype promotion.
    d["_promotion_mode"] = int(d["enable_x64"]) + 2 * (d["numpy_dtype_promotion"] == "strict")
    # What the fast path of a jitted call checks (runtime/call_fast.py), as one object that
    # changes whenever one of the flags does: a call compares it by identity.
    d["_call_state"] = (d["_trace_context"], d["disable_jit"], d["morphax_backend"])


def _coerce(name, attr, value):
    """Check `value` for flag `name` and return it as stored."""
    # The dtype caches are indexed by the x64 flag itself, so it is kept a real bool.
    if attr == "enable_x64":
        return bool(value)
    choices = _CHOICES.get(attr)
    if choices is not None and isinstance(value, enum.Enum):
        value = value.value  # an enum member, as JAX's own enums spell these values
    if choices is not None and value not in choices:
        raise ValueError(f"config option {name}: the value must be one of {list(choices)}, got {value!r}")
    if name in DEFAULT_ONLY and value != DEFAULT_ONLY[name][0]:
        raise NotImplementedError(f"config option {name}={value!r}: {DEFAULT_ONLY[name][1]}")
    return value


class Config(threading.local):
    """Holds the flags; ``update`` is the JAX-compatible setter.

    Being a ``threading.local``, ``__init__`` runs once in each thread, at that thread's first use.
    """

    _known = _KNOWN

    def __init__(self):
        with _lock:
            d = self.__dict__
            d.update(_global_values)
            # The attributes this thread overrides (update() leaves those alone).
            d["_overridden"] = set()
            _refresh_trace_context(d)
            _thread_dicts[threading.current_thread()] = d

    @staticmethod
    def _attr(name: str, where: str) -> str:
        try:
            return _KNOWN[name][0]
        except KeyError:
            raise AttributeError(
                f"config.{where}: unknown option {name!r}; the options are JAX's (config.values lists "
                "them) and morphax_backend, morphax_num_threads, morphax_shape_generic, "
                "morphax_compile_in_background"
            ) from None

    def update(self, name: str, value) -> None:
        """Set the process-wide value; threads inside an override of `name` keep their override."""
        attr = self._attr(name, "update")
        value = _coerce(name, attr, value)
        for check in _validators:
            check(name, value)
        with _lock:
            _global_values[attr] = value
            for d in list(_thread_dicts.values()):
                if attr not in d["_overridden"]:
                    d[attr] = value
                    _refresh_trace_context(d)
        self._notify(name, value)

    def read(self, name: str):
        return getattr(self, _KNOWN[name][0])

    @property
    def values(self) -> dict:
        """Every flag's value in this thread, by JAX's option name."""
        return {
            name: getattr(self, attr)
            for name, (attr, _) in _KNOWN.items()
            if not name.startswith("user_context_")
        }

    def __getattr__(self, name):
        # JAX spells flags both ways: config.jax_enable_x64 and config.x64_enabled.
        if name in _KNOWN:
            return getattr(self, _KNOWN[name][0])
        if name == "x64_enabled":
            return self.enable_x64
        raise AttributeError(name)

    def trace_context(self) -> tuple:
        """The flags that change what tracing produces; part of every trace-cache key.

        Reads this thread's effective values, so a trace made inside another thread's
        ``enable_x64`` block is never reused here.
        """
        return self._trace_context

    def set_anywhere(self, name: str) -> bool:
        """Whether flag `name` is truthy globally or in any thread's override: for hot paths that
        fold a flag into one module global and re-read it per call only when it may be on."""
        attr = self._attr(name, "set_anywhere")
        with _lock:
            return bool(_global_values[attr]) or any(d.get(attr) for d in list(_thread_dicts.values()))

    def add_listener(self, fn) -> None:
        """``fn(name, value)`` runs after each change of a flag, global or (in the changing thread)
        thread-local; caches that depend on flags clear here."""
        _listeners.append(fn)

    def snapshot(self) -> dict:
        """This thread's values of the flags that change what computations produce, for work
        another thread does on its behalf (`adopted`)."""
        d = self.__dict__
        return {attr: d[attr] for attr in (*TRACE_FLAGS, *_EXECUTION_FLAGS)}

    @contextlib.contextmanager
    def adopted(self, snapshot: dict):
        """Run the block with `snapshot`'s values (from `snapshot()` in another thread) as this
        thread's: a device stream runs a job under the flags of the thread that queued it (an
        `enable_x64` block's work is 64-bit work wherever it runs). Listeners are not told:
        nothing changed for the thread that set the flags."""
        d = self.__dict__
        saved = {attr: d[attr] for attr in snapshot}
        d.update(snapshot)
        _refresh_trace_context(d)
        try:
            yield
        finally:
            d.update(saved)
            _refresh_trace_context(d)

    def add_validator(self, fn) -> None:
        """``fn(name, value)`` runs before a flag changes and may refuse the value by raising."""
        _validators.append(fn)

    @staticmethod
    def _notify(name, value):
        for listener in list(_listeners):
            listener(name, value)

    @contextlib.contextmanager
    def _override(self, name, value):
        """Thread-local override of one flag for the duration of a ``with`` block (nests)."""
        attr = self._attr(name, "_override")
        value = _coerce(name, attr, value)
        for check in _validators:
            check(name, value)
        d = self.__dict__
        with _lock:
            was_overridden = attr in d["_overridden"]
            old = d[attr]
            d["_overridden"].add(attr)
            d[attr] = value
            _refresh_trace_context(d)
        self._notify(name, value)
        try:
            yield
        finally:
            with _lock:
                if was_overridden:
                    d[attr] = old
                else:
                    # Back to the global value, which update() may have changed meanwhile.
                    d["_overridden"].discard(attr)
                    d[attr] = _global_values[attr]
                _refresh_trace_context(d)
                restored = d[attr]
            self._notify(name, restored)


config = Config()

_XLA_DEVICE_COUNT = re.compile(r"--xla_force_host_platform_device_count=(\d+)")


def requested_cpu_devices() -> int:
    """How many CPU devices this process asks for: `jax_num_cpu_devices` when set, else XLA_FLAGS's
    `--xla_force_host_platform_device_count`, else one (runtime/devices.py makes them; the xla
    backend opens XLA's CPU plugin with as many)."""
    n = config.num_cpu_devices
    if n is not None and n > 0:
        return int(n)
    found = _XLA_DEVICE_COUNT.findall(os.environ.get("XLA_FLAGS", ""))
    return int(found[-1]) if found else 1


def make_user_context(default_value=None):
    """A new context whose value is part of every jit cache key (JAX's `jax.make_user_context`):
    ``ctx = make_user_context(); with ctx(1): f(x)`` traces `f` again whenever the value inside
    the block differs from the values it was traced with. The value must be hashable. Not
    thread-safe to create (make contexts at import time); using one is."""
    with _lock:
        name = f"user_context_{sum(1 for n in _KNOWN if n.startswith('user_context_'))}"
        _KNOWN[name] = (name, lambda: default_value)
        _global_values[name] = default_value
        TRACE_FLAGS.append(name)
        for d in list(_thread_dicts.values()):
            d[name] = default_value
            _refresh_trace_context(d)

    def user_context(value):
        hash(value)  # a cache key part: raise TypeError now, not at the next jitted call
        return config._override(name, value)

    user_context.__name__ = user_context.__qualname__ = name
    return user_context


def enable_x64(new_val: bool = True):
    """Context manager that switches 64-bit mode on (or off) inside its block, in this thread only."""
    return config._override("jax_enable_x64", bool(new_val))


def disable_x64():
    """Context manager that switches 64-bit mode off inside its block, in this thread only."""
    return config._override("jax_enable_x64", False)
