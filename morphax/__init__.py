"""morphax: JAX's programming model (differentiate, vectorize, compile) in pure Python on NumPy.

Public modules are thin re-exports of `morphax._src`; see README.md for a tour.
"""

from types import SimpleNamespace as _SimpleNamespace

from morphax import (
    ad_checkpoint,
    custom_derivatives,
    debug,
    distributed,
    dtypes,
    errors,
    flatten_util,
    image,
    lax,
    nn,
    numpy,
    ops,
    profiler,
    random,
    sharding,
    stages,
    test_util,
    tree,
    tree_util,
)
from morphax._src import prims as _prims  # noqa: F401  (registers the primitive catalogue)
from morphax._src.api import pullback as _pullback
from morphax._src.api.autodiff import (
    closure_convert,
    custom_gradient,
    fwd_and_bwd,
    grad,
    hessian,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    linear_transpose,
    linearize,
    value_and_grad,
    vjp,
)
from morphax._src.api.debugging import named_call, named_scope, pure_callback
from morphax._src.api.environment import (
    allow_f16_reductions,
    array_garbage_collection_guard,
    auto_pcast,
    check_tracer_leaks,
    checking_leaks,
    copy_to_host_async,
    debug_infs,
    debug_key_reuse,
    debug_nans,
    default_device,
    default_matmul_precision,
    default_prng_impl,
    enable_checks,
    enable_custom_prng,
    ensure_compile_time_eval,
    explain_cache_misses,
    host_count,
    host_id,
    host_ids,
    jax2tf_associative_scan_reductions,
    legacy_prng_key,
    live_arrays,
    local_device_count,
    log_compiles,
    no_execution,
    no_tracing,
    numpy_dtype_promotion,
    numpy_rank_promotion,
    print_environment_info,
    process_count,
    process_index,
    process_indices,
    remove_size_one_mesh_axis_from_type,
    softmax_custom_jvp,
    thread_guard,
    threefry_partitionable,
    transfer_guard,
    transfer_guard_device_to_device,
    transfer_guard_device_to_host,
    transfer_guard_host_to_device,
    typeof,
)
from morphax._src.api.jit import (
    block_until_ready,
    clear_caches,
    default_backend,
    device_get,
    device_put,
    disable_jit,
    effects_barrier,
    jit,
)
from morphax._src.api.pmap import pmap
from morphax._src.api.shard_map import shard_map, smap
from morphax._src.api.tracing import ShapeDtypeStruct, eval_shape, make_jaxpr
from morphax._src.api.vmap import vmap
from morphax._src.config import config, enable_x64, make_user_context
from morphax._src.core.dtypes import float0
from morphax._src.core.state_types import Ref
from morphax._src.higher_order import pjit as _jit_rules  # noqa: F401  (registers pjit)
from morphax._src.higher_order.remat import checkpoint, checkpoint_policies, remat
from morphax._src.numpy.indexing import ds
from morphax._src.prims.state import empty_ref, free_ref, freeze, new_ref
from morphax._src.runtime import eager as _eager  # noqa: F401  (installs the eager trace)
from morphax._src.runtime.array import Array
from morphax._src.runtime.devices import Device, MemorySpace, device_count, devices, local_devices
from morphax._src.runtime.placement import (
    make_array_from_callback,
    make_array_from_process_local_data,
    make_array_from_single_device_arrays,
)
from morphax._src.sharding.mesh import make_mesh, set_mesh
from morphax._src.sharding.partition_spec import PartitionSpec as P
from morphax._src.sharding.resharding import reshard
from morphax._src.sharding.shardings import NamedSharding, Shard
from morphax._src.traceback_util import api_boundary as _boundary
from morphax._src.traceback_util import transformation_boundary as _tboundary
from morphax._src.transforms.custom import custom_jvp, custom_vjp

# Entry points users call hide morphax's frames from tracebacks (jit and make_jaxpr do it themselves).
grad, value_and_grad, jacfwd, jacrev, hessian, linear_transpose, vmap = map(
    _tboundary, (grad, value_and_grad, jacfwd, jacrev, hessian, linear_transpose, vmap)
)
jvp, vjp, linearize = map(_boundary, (jvp, vjp, linearize))

from morphax._src.version import __version__, __version_info__  # noqa: E402, F401

# JAX's `jax.memory` namespace: the memory spaces buffers may live in.
memory = _SimpleNamespace(Space=MemorySpace)
# JAX's `jax.ad` namespace: the markers of `vjp_fun.with_refs`.
ad = _SimpleNamespace(
    DontWant=_pullback.DontWant,
    DidntWant=_pullback.DidntWant,
    GradRef=_pullback.GradRef,
    GradValue=_pullback.GradValue,
)

__all__ = [
    "auto_pcast",
    "remove_size_one_mesh_axis_from_type",
    "smap",
    "ad",
    "Device",
    "ds",
    "fwd_and_bwd",
    "live_arrays",
    "make_user_context",
    "memory",
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
    "Ref",
    "new_ref",
    "empty_ref",
    "free_ref",
    "freeze",
    "float0",
    "profiler",
    "random",
    "flatten_util",
    "custom_derivatives",
    "stages",
    "image",
    "ops",
    "ad_checkpoint",
    "checkpoint",
    "checkpoint_policies",
    "remat",
    "block_until_ready",
    "clear_caches",
    "effects_barrier",
    "default_backend",
    "device_get",
    "device_put",
    "disable_jit",
    "vmap",
    "pmap",
    "shard_map",
    "debug",
    "distributed",
    "named_call",
    "named_scope",
    "pure_callback",
    "eval_shape",
    "jit",
    "closure_convert",
    "custom_gradient",
    "custom_jvp",
    "custom_vjp",
    "grad",
    "hessian",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jvp",
    "linear_transpose",
    "linearize",
    "test_util",
    "value_and_grad",
    "vjp",
    "Array",
    "ShapeDtypeStruct",
    "config",
    "device_count",
    "devices",
    "dtypes",
    "enable_x64",
    "errors",
    "lax",
    "local_devices",
    "make_jaxpr",
    "nn",
    "numpy",
    "tree",
    "tree_util",
    # sharding (morphax/sharding.py)
    "NamedSharding",
    "P",
    "Shard",
    "make_array_from_callback",
    "make_array_from_process_local_data",
    "make_array_from_single_device_arrays",
    "make_mesh",
    "reshard",
    "set_mesh",
    "sharding",
]

# Submodules JAX makes attributes of the package (`jax.scipy.special.erf` after `import jax`),
# imported on first access so that `import morphax` stays cheap.
_LAZY_SUBMODULES = (
    "api_util",
    "core",
    "custom_batching",
    "dlpack",
    "experimental",
    "export",
    "ffi",
    "interpreters",
    "lib",
    "monitoring",
    "ref",
    "scipy",
    "typing",
    "version",
)


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"morphax.{name}")
    raise AttributeError(f"module 'morphax' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))
