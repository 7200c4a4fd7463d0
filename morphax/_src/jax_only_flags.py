"""JAX's config flags that morphax accepts without acting on them, each with the reason, so that
programs written for JAX (``jax.config.update("jax_platform_name", "cpu")``) run unchanged.

Two groups:
- `NO_EFFECT`: flags that tune machinery morphax does not have (XLA and PJRT, GPUs and TPUs,
  Pallas, jax2tf/export, XLA's persistent cache, JAX-internal migration switches). Any value is
  accepted and stored; reading it back gives what was set.
- `DEFAULT_ONLY`: flags whose other values would change results or raise errors that morphax does
  not implement yet. Their default is accepted; another value raises NotImplementedError, so a
  program never silently runs with a setting it did not get.

The flags morphax implements are declared in `config.py`.
"""

from __future__ import annotations

_XLA = "XLA/PJRT compiler and runtime option; morphax compiles with its own backends"
_ACCELERATOR = "GPU/TPU option; morphax runs on the CPU"
_PALLAS = "Pallas kernel-language option; morphax has no Pallas"
_EXPORT = "jax2tf/jax.export serialization option; morphax does not export StableHLO"
_XLA_CACHE = "XLA's persistent compilation cache; morphax keeps its own disk cache of C libraries"
_MIGRATION = "switch for one of JAX's internal migrations; morphax has one implementation"
_MULTIHOST = "multi-host runtime option of JAX's distributed service"
_LOGGING = "JAX/XLA logging and dump option; morphax logs through the 'morphax' logger"

# flag -> (JAX's default, why morphax ignores it)
NO_EFFECT: dict = {
    "check_vma": (False, "shard_map's varying-manual-axes check; morphax has no shard_map yet"),
    "jax2tf_associative_scan_reductions": (False, _EXPORT),
    "jax2tf_default_native_serialization": (True, _EXPORT),
    "jax_array_garbage_collection_guard": (
        None,
        "device-memory guard for Arrays freed by the cycle collector; a morphax buffer is host "
        "memory and is freed either way",
    ),
    "jax_auto_pcast": (True, "sharding-in-types option; morphax has no sharding yet"),
    "jax_backend_target": ("", _XLA),
    "jax_bcoo_cusparse_lowering": (False, _ACCELERATOR),
    "jax_captured_constants_report_frames": (0, _XLA),
    "jax_captured_constants_warn_bytes": (2_000_000_000, _XLA),
    "jax_check_proxy_envs": (True, _MULTIHOST),
    "jax_compilation_cache_check_contents": (False, _XLA_CACHE),
    "jax_compilation_cache_expect_pgle": (False, _XLA_CACHE),
    "jax_compilation_cache_include_metadata_in_key": (False, _XLA_CACHE),
    "jax_compilation_cache_max_size": (-1, _XLA_CACHE),
    "jax_compiler_detailed_logging_min_ops": (10, _LOGGING),
    "jax_compiler_enable_remat_pass": (True, _XLA),
    "jax_cpu_collectives_implementation": ("gloo", _MULTIHOST),
    "jax_cpu_enable_async_dispatch": (True, "morphax always dispatches asynchronously"),
    "jax_cpu_get_global_topology_timeout_minutes": (5, _MULTIHOST),
    "jax_cpu_get_local_topology_timeout_minutes": (2, _MULTIHOST),
    "jax_cross_host_transfer_socket_address": ("", _MULTIHOST),
    "jax_cross_host_transfer_timeout_seconds": (None, _MULTIHOST),
    "jax_cross_host_transfer_transfer_size": (None, _MULTIHOST),
    "jax_cross_host_transport_addresses": ("", _MULTIHOST),
    "jax_cuda_visible_devices": ("all", _ACCELERATOR),
    "jax_custom_vjp3": (False, _MIGRATION),
    "jax_debug_leaked_clients_on_clear_backends": (False, _XLA),
    "jax_debug_log_modules": ("", _LOGGING),
    "jax_disable_bwd_checks": (False, _MIGRATION),
    "jax_disable_most_optimizations": (False, _XLA),
    "jax_disable_vmap_shmap_error": (False, "vmap-of-shard_map workaround; morphax has no shard_map yet"),
    "jax_disallow_mesh_context_manager": (False, "mesh option; morphax has no meshes yet"),
    "jax_distributed_debug": (False, _MULTIHOST),
    "jax_dump_ir_modes": ("stablehlo", _LOGGING),
    "jax_dump_ir_to": ("", _LOGGING),
    "jax_embedded_constants_max_bytes": (32, _XLA),
    "jax_enable_compilation_cache": (True, _XLA_CACHE),
    "jax_enable_custom_prng": (False, _MIGRATION),
    "jax_enable_pgle": (False, _XLA),
    "jax_enable_preemption_service": (True, _MULTIHOST),
    "jax_enable_recoverability": (False, _MULTIHOST),
    "jax_exec_time_optimization_effort": (0.0, _XLA),
    "jax_experimental_unsafe_xla_runtime_errors": (False, _XLA),
    "jax_explicit_x64_dtypes": ("warn", _MIGRATION),
    "jax_export_calling_convention_version": (10, _EXPORT),
    "jax_export_ignore_forward_compatibility": (False, _EXPORT),
    "jax_force_dcn_cross_host_transfers": (False, _MULTIHOST),
    "jax_hlo_source_file_canonicalization_regex": (None, _LOGGING),
    "jax_include_debug_info_in_dumps": (True, _LOGGING),
    "jax_include_full_tracebacks_in_locations": (True, _LOGGING),
    "jax_log_checkpoint_residuals": (False, _LOGGING),
    "jax_logging_level": ("NOTSET", _LOGGING),
    "jax_memory_fitting_effort": (0.0, _XLA),
    "jax_memory_fitting_level": ("O2", _XLA),
    "jax_mock_gpu_topology": ("", _ACCELERATOR),
    "jax_mosaic_allow_hlo": (False, _PALLAS),
    "jax_mutable_array_checks": (True, _MIGRATION),
    "jax_oneapi_visible_devices": ("all", _ACCELERATOR),
    "jax_optimization_level": ("UNKNOWN", _XLA),
    "jax_pallas_enable_debug_checks": (False, _PALLAS),
    "jax_pallas_poison_buffers": (False, _PALLAS),
    "jax_pallas_use_mosaic_gpu": (True, _PALLAS),
    "jax_pallas_verbose_errors": (False, _PALLAS),
    "jax_persistent_cache_enable_xla_caches": ("xla_gpu_per_fusion_autotune_cache_dir", _XLA_CACHE),
    "jax_persistent_cache_min_compile_time_secs": (1.0, _XLA_CACHE),
    "jax_persistent_cache_min_entry_size_bytes": (0, _XLA_CACHE),
    "jax_pgle_aggregation_percentile": (90, _XLA),
    "jax_pgle_profiling_runs": (3, _XLA),
    "jax_pjrt_client_create_options": (None, _XLA),
    "jax_platform_name": ("", "platform choice; morphax has one platform, the CPU"),
    "jax_pprint_use_color": (True, "jaxpr printing colour; morphax prints plain text"),
    "jax_ragged_dot_use_gpu_pallas_triton_lowering": (False, _ACCELERATOR),
    "jax_ragged_dot_use_ragged_dot_instruction": (True, _XLA),
    "jax_raise_persistent_cache_errors": (False, _XLA_CACHE),
    "jax_refs_to_pins": (False, _MIGRATION),
    "jax_remat3": (False, _MIGRATION),
    "jax_remove_custom_partitioning_ptr_from_cache_key": (False, _XLA_CACHE),
    "jax_remove_size_one_mesh_axis_from_type": (False, "mesh option; morphax has no meshes yet"),
    "jax_rocm_visible_devices": ("all", _ACCELERATOR),
    "jax_scan3": (False, _MIGRATION),
    "jax_send_traceback_to_runtime": ("off", _XLA),
    "jax_serialization_version": (0, _EXPORT),
    "jax_share_binary_between_hosts": (False, _MULTIHOST),
    "jax_share_binary_between_hosts_timeout_ms": (1_200_000, _MULTIHOST),
    "jax_sort_devices_by_process_index": (True, _MULTIHOST),
    "jax_source_url_schema": (None, _LOGGING),
    "jax_thread_guard": (False, "guards multi-process collectives; morphax runs one process so far"),
    "jax_threefry_gpu_kernel_lowering": (False, _ACCELERATOR),
    "jax_traceback_in_locations_limit": (100, _LOGGING),
    "jax_tracer_error_num_traceback_frames": (5, _LOGGING),
    "jax_use_direct_linearize": (True, _MIGRATION),
    "jax_use_emit_pipeline_primitive": (False, _PALLAS),
    "jax_use_magma": ("auto", _ACCELERATOR),
    "jax_use_shardy_partitioner": (True, _XLA),
    "jax_use_simplified_jaxpr_constants": (False, _MIGRATION),
    "jax_xla_backend": ("", _XLA),
    "jax_xla_profile_version": (0, _XLA),
    "mock_num_gpu_processes": (0, _ACCELERATOR),
}

# flag -> (JAX's default, what morphax lacks for other values)
DEFAULT_ONLY: dict = {
    "jax_error_checking_behavior_divide": (
        "ignore",
        "raising on division by zero is not implemented; use morphax.experimental.checkify",
    ),
    "jax_error_checking_behavior_nan": (
        "ignore",
        "raising on NaNs this way is not implemented; use jax_debug_nans or checkify",
    ),
    "jax_error_checking_behavior_oob": (
        "ignore",
        "raising on out-of-bounds indices is not implemented; use morphax.experimental.checkify",
    ),
    "jax_high_dynamic_range_gumbel": (
        False,
        "the high-dynamic-range Gumbel sampler is not implemented; random.gumbel uses JAX's default one",
    ),
}
