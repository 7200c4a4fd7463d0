"""Top-level helpers about the process and its configuration: the config flags usable as context
managers (``with morphax.debug_nans(True):``), `ensure_compile_time_eval`, `typeof`,
`copy_to_host_async`, the process/device counts (several processes after
morphax.distributed.initialize), and
`print_environment_info`."""

from __future__ import annotations

import contextlib
import platform
import sys
import warnings

import numpy as np

from morphax._src.config import config
from morphax._src.core import pytree
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.dtypes import ExtendedDType
from morphax._src.runtime import devices as _devices
from morphax._src.runtime.array import Array
from morphax._src.runtime.devices import local_devices

__all__ = [
    "auto_pcast",
    "remove_size_one_mesh_axis_from_type",
    "allow_f16_reductions",
    "array_garbage_collection_guard",
    "check_tracer_leaks",
    "checking_leaks",
    "debug_key_reuse",
    "default_device",
    "default_prng_impl",
    "enable_checks",
    "enable_custom_prng",
    "explain_cache_misses",
    "jax2tf_associative_scan_reductions",
    "live_arrays",
    "legacy_prng_key",
    "no_execution",
    "no_tracing",
    "numpy_dtype_promotion",
    "softmax_custom_jvp",
    "thread_guard",
    "transfer_guard",
    "transfer_guard_device_to_device",
    "transfer_guard_device_to_host",
    "transfer_guard_host_to_device",
    "copy_to_host_async",
    "debug_infs",
    "debug_nans",
    "default_matmul_precision",
    "ensure_compile_time_eval",
    "host_count",
    "host_id",
    "host_ids",
    "local_device_count",
    "log_compiles",
    "numpy_rank_promotion",
    "print_environment_info",
    "process_count",
    "process_index",
    "process_indices",
    "threefry_partitionable",
    "typeof",
]


_NO_VALUE = object()


def _flag(option: str, doc: str):
    """A config option as JAX exposes it at top level: ``name(value)`` is a context manager that
    sets the option for the block, in this thread only (``config.update(option, value)`` sets it
    for the process)."""

    def flag(new_val=_NO_VALUE):
        if new_val is _NO_VALUE:
            # As in JAX: a boolean option's context manager turns it on when called without a value.
            if not isinstance(getattr(config, config._attr(option, flag.__name__)), bool):
                raise TypeError(
                    f"morphax.{flag.__name__}(): the context manager for config option {option!r} "
                    "requires an argument, the option's value inside the block."
                )
            new_val = True
        return config._override(option, new_val)

    flag.__name__ = flag.__qualname__ = option.removeprefix("jax_")
    flag.__doc__ = f"{doc} Use as ``with morphax.{flag.__name__}(value):``; process-wide: ``config.update({option!r}, value)``."
    return flag


debug_nans = _flag("jax_debug_nans", "Raise FloatingPointError where a computation produces a NaN.")
debug_infs = _flag("jax_debug_infs", "Raise FloatingPointError where a computation produces an infinity.")
log_compiles = _flag(
    "jax_log_compiles", "Log each trace and compilation of a jitted function (logger 'morphax')."
)
default_matmul_precision = _flag(
    "jax_default_matmul_precision", "The precision of matrix products that do not name one ('highest', ...)."
)
numpy_rank_promotion = _flag(
    "jax_numpy_rank_promotion",
    "What morphax.numpy does when operands of different ranks broadcast: 'allow', 'warn' or 'raise'.",
)
threefry_partitionable = _flag(
    "jax_threefry_partitionable", "JAX's partitionable threefry counter layout (the default, as in JAX 0.10)."
)
no_tracing = _flag("jax_no_tracing", "Raise instead of tracing a jitted function (a cache miss).")
no_execution = _flag("jax_no_execution", "Raise instead of running any computation, eager or compiled.")
transfer_guard = _flag(
    "jax_transfer_guard",
    "What implicit host-to-device transfers do: 'allow', 'log', 'disallow' (and '*_explicit' to "
    "cover device_put too).",
)
transfer_guard_host_to_device = _flag(
    "jax_transfer_guard_host_to_device", "The transfer guard for host-to-device transfers only."
)
transfer_guard_device_to_host = _flag(
    "jax_transfer_guard_device_to_host",
    "The transfer guard for device-to-host transfers (none happen on morphax's CPU device).",
)
transfer_guard_device_to_device = _flag(
    "jax_transfer_guard_device_to_device",
    "The transfer guard for device-to-device transfers (none happen with one device).",
)
numpy_dtype_promotion = _flag(
    "jax_numpy_dtype_promotion",
    "'standard' or 'strict': in strict mode, arrays of different dtypes do not promote implicitly.",
)
legacy_prng_key = _flag(
    "jax_legacy_prng_key", "What random functions do with raw uint32 keys: 'allow', 'warn' or 'error'."
)
default_prng_impl = _flag("jax_default_prng_impl", "The PRNG implementation of new keys.")
explain_cache_misses = _flag(
    "jax_explain_cache_misses", "Log (logger 'morphax', WARNING) why each jit trace missed its cache."
)
debug_key_reuse = _flag("jax_debug_key_reuse", "Raise KeyReuseError when a typed PRNG key is consumed twice.")
check_tracer_leaks = _flag(
    "jax_check_tracer_leaks", "Raise when a tracer outlives the transformation that created it."
)
enable_checks = _flag("jax_enable_checks", "Type-check every jaxpr jit traces and optimizes (slower).")
softmax_custom_jvp = _flag(
    "jax_softmax_custom_jvp", "nn.softmax differentiates by its own rule instead of through its formula."
)
allow_f16_reductions = _flag(
    "jax_allow_f16_reductions", "If False, reduce_sum of float16 or bfloat16 operands raises."
)
array_garbage_collection_guard = _flag(
    "jax_array_garbage_collection_guard", "Accepted for JAX compatibility; no effect (host buffers)."
)
thread_guard = _flag(
    "jax_thread_guard", "Accepted for JAX compatibility; no effect (multi-process collectives only)."
)
jax2tf_associative_scan_reductions = _flag(
    "jax2tf_associative_scan_reductions", "Accepted for JAX compatibility; no effect (jax2tf only)."
)
auto_pcast = _flag("jax_auto_pcast", "Accepted for JAX compatibility; no effect (sharding-in-types casts).")
remove_size_one_mesh_axis_from_type = _flag(
    "jax_remove_size_one_mesh_axis_from_type",
    "Accepted for JAX compatibility; no effect (sharding in types).",
)
enable_custom_prng = _flag("jax_enable_custom_prng", "Accepted for JAX compatibility; no effect.")


def live_arrays(platform=None):
    """Every Array of this process that is alive and not deleted (on any platform)."""
    import gc

    return [x for x in gc.get_objects() if type(x) is Array and not x.is_deleted()]


def checking_leaks():
    """``with morphax.checking_leaks():`` is ``with morphax.check_tracer_leaks(True):``."""
    return check_tracer_leaks(True)


def default_device(device):
    """Context manager placing new arrays on `device` (one of this process's devices)."""
    if device is not None and device not in local_devices() and device not in local_devices(backend="cpu"):
        raise ValueError(f"default_device: {device!r} is not one of morphax.devices() = {local_devices()}")
    return config._override("jax_default_device", device)


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Inside the block, operations whose operands are all known while tracing (not traced values)
    are computed then, their results becoming constants of the jaxpr, instead of being staged."""
    with config._override("eager_constant_folding", True):
        yield


def typeof(x):
    """The abstract type of `x` (ShapedArray: shape, dtype, weak type), as tracing sees it. Typed
    PRNG key arrays give a ShapedArray of their extended dtype (``key<fry>[]``), as in JAX."""
    dtype = getattr(x, "dtype", None)
    if isinstance(dtype, ExtendedDType):
        # ShapedArray's constructor takes NumPy dtypes only; the key aval keeps the extended one.
        aval = ShapedArray.__new__(ShapedArray)
        aval.shape, aval.dtype, aval.weak_type = tuple(x.shape), dtype, False
        return aval
    try:
        return get_aval(x)
    except TypeError:
        raise TypeError(
            f"typeof: argument {x!r} of type {type(x).__name__} is not a valid morphax type "
            "(expected an array, tracer, NumPy array or Python scalar)."
        ) from None


def copy_to_host_async(x):
    """Start copying the arrays among `x`'s leaves to the host; returns `x`."""
    for leaf in pytree.tree_leaves(x):
        start = getattr(leaf, "copy_to_host_async", None)
        if start is not None:
            start()
    return x


def local_device_count(backend=None) -> int:
    """The number of devices this process drives."""
    return len(local_devices(backend=backend))


def process_index(backend=None) -> int:
    """This process's index among the processes of a run (its MPI rank after
    morphax.distributed.initialize; 0 in a one-process run)."""
    return _devices.process_index()


def process_count(backend=None) -> int:
    """The number of processes of the run (the MPI world's size after
    morphax.distributed.initialize; 1 in a one-process run)."""
    return _devices.process_count()


def process_indices(backend=None) -> list:
    """The indices of the processes of the run."""
    return list(range(process_count(backend)))


def _renamed(old, new):
    def alias(backend=None):
        warnings.warn(
            f"morphax.{old} has been renamed to morphax.{new.__name__}. This alias will eventually be removed.",
            UserWarning,
            stacklevel=2,
        )
        return new(backend)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated name of `{new.__name__}`."
    return alias


host_id = _renamed("host_id", process_index)
host_count = _renamed("host_count", process_count)
host_ids = _renamed("host_ids", process_indices)


def print_environment_info(return_string: bool = False):
    """The versions and platform to quote in a bug report (printed, or returned as a string)."""
    from morphax._src.compiler.backends import platform as backend_platform
    from morphax._src.pjrt import plugin as pjrt_plugin
    from morphax._src.version import __version__

    devices = local_devices()
    chosen = backend_platform.chosen()
    not_opened = "; ".join(f"{k}: {v}" for k, v in backend_platform.failures().items())
    text = "\n".join(
        [
            f"morphax: {__version__}",
            f"numpy:   {np.__version__}",
            f"python:  {sys.version}",
            f"device info: {devices[0].platform}-{len(devices)}, {len(devices)} local devices",
            f"process_count: {process_count()}",
            f"platform: {platform.uname()}",
            f"default platform: {chosen} (jax_platforms={config.platforms!r})"
            + (f"; not opened: {not_opened}" if not_opened else ""),
            f"backend: {'xla' if chosen != 'cpu' else config.morphax_backend}",
            f"device kind: {devices[0].device_kind}",
            # Found (opened only when it is the platform: a TPU admits one process).
            f"PJRT plugin: {pjrt_plugin.find_plugin() or 'none found'}",
            f"libtpu: {pjrt_plugin.find_tpu_plugin() or 'not found'}",
        ]
    )
    if return_string:
        return text
    print(text)
    return None
