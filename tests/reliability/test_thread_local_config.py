"""Issue 12 #6: config context managers are thread-local, as in JAX.

JAX 0.10.2: inside ``with jax.enable_x64(True):`` in thread A, thread B still computes in float32
(``jnp.asarray(1.5).dtype == float32``, ``jax.config.jax_enable_x64 is False``, jitted functions
trace in 32-bit mode); ``config.update`` sets the process-wide value, which every thread without an
override sees, while a thread inside an override keeps its override until the block ends.
Synchronisation is by events only, never by sleeping.
"""

import threading

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import config
from morphax._src.jax_only_flags import DEFAULT_ONLY, NO_EFFECT

TIMEOUT = 60


def _run_pair(a, b):
    """Run a() and b() in two threads; re-raise the first error either raised."""
    errors = []

    def guard(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - reported in the main thread
                errors.append(e)

        return run

    threads = [threading.Thread(target=guard(a)), threading.Thread(target=guard(b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
        assert not t.is_alive(), "thread did not finish (deadlock?)"
    if errors:
        raise errors[0]


def test_enable_x64_does_not_leak_into_other_threads():
    inside, b_done = threading.Event(), threading.Event()
    seen = {}

    @morphax.jit
    def scale(x):
        return x * 1.5

    def a():
        with morphax.enable_x64(True):
            seen["a_before"] = jnp.asarray(1.5).dtype
            seen["a_jit_before"] = scale(jnp.arange(3)).dtype
            inside.set()
            assert b_done.wait(TIMEOUT)
            # B's 32-bit work meanwhile did not switch A out of 64-bit mode either.
            seen["a_after"] = jnp.asarray(1.5).dtype
            seen["a_jit_after"] = scale(jnp.arange(3)).dtype
            seen["a_ctx"] = config.trace_context()

    def b():
        assert inside.wait(TIMEOUT)
        try:
            seen["b_flag"] = config.enable_x64
            seen["b_flag_jax_name"] = config.jax_enable_x64
            seen["b"] = jnp.asarray(1.5).dtype
            seen["b_int"] = jnp.arange(3).dtype
            seen["b_jit"] = scale(jnp.arange(3)).dtype
            seen["b_ctx"] = config.trace_context()
        finally:
            b_done.set()

    _run_pair(a, b)
    assert seen["b_flag"] is False and seen["b_flag_jax_name"] is False
    assert seen["b"] == np.float32 and seen["b_int"] == np.int32
    assert seen["b_jit"] == np.float32
    assert seen["a_before"] == seen["a_after"] == np.float64
    assert seen["a_jit_before"] == seen["a_jit_after"] == np.float64
    # jit's cache key differs per thread, so neither thread reused the other's trace.
    assert seen["a_ctx"] != seen["b_ctx"]
    assert config.enable_x64 is False
    assert jnp.asarray(1.5).dtype == np.float32


def test_new_thread_started_inside_override_sees_the_global_value():
    seen = {}
    with morphax.enable_x64(True):

        def child():
            seen["child"] = jnp.asarray(1.5).dtype

        t = threading.Thread(target=child)
        t.start()
        t.join(TIMEOUT)
        seen["parent"] = jnp.asarray(1.5).dtype
    assert seen == {"child": np.float32, "parent": np.float64}


def test_update_reaches_threads_without_override_but_not_overriding_ones():
    a_inside, updated, a_checked = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with morphax.enable_x64(False):
            a_inside.set()
            assert updated.wait(TIMEOUT)
            seen["a_in_override"] = config.enable_x64  # its override still wins
        seen["a_after_override"] = config.enable_x64  # back to the (new) global value
        a_checked.set()

    def b():
        assert a_inside.wait(TIMEOUT)
        config.update("jax_enable_x64", True)
        try:
            seen["b"] = jnp.asarray(1.5).dtype
        finally:
            updated.set()
        assert a_checked.wait(TIMEOUT)

    try:
        _run_pair(a, b)
    finally:
        config.update("jax_enable_x64", False)
    assert seen == {"a_in_override": False, "a_after_override": True, "b": np.float64}
    assert config.enable_x64 is False


def test_nested_overrides_restore_in_order():
    with morphax.enable_x64(True):
        with morphax.enable_x64(False):
            assert jnp.asarray(1.5).dtype == np.float32
        assert jnp.asarray(1.5).dtype == np.float64
    assert jnp.asarray(1.5).dtype == np.float32


def test_every_context_manager_flag_is_thread_local():
    # Each flag config._override can set, with a non-default value to set it to.
    flags = {
        "jax_enable_x64": True,
        "jax_threefry_partitionable": False,
        "jax_log_compiles": True,
        "jax_numpy_rank_promotion": "raise",
        "jax_default_matmul_precision": "highest",
        "jax_debug_nans": True,
        "jax_debug_infs": True,
        "jax_traceback_filtering": "off",
        "eager_constant_folding": True,
        "jax_disable_jit": True,
        "morphax_backend": "numpy",
        "morphax_num_threads": 1,
        "morphax_compile_in_background": not config.morphax_compile_in_background,
        "morphax_shape_generic": not config.morphax_shape_generic,
        "jax_no_tracing": True,
        "jax_no_execution": True,
        "jax_transfer_guard": "disallow",
        "jax_transfer_guard_host_to_device": "log",
        "jax_transfer_guard_device_to_host": "disallow",
        "jax_transfer_guard_device_to_device": "disallow",
        "jax_numpy_dtype_promotion": "strict",
        "jax_legacy_prng_key": "error",
        "jax_random_seed_offset": 7,
        "jax_default_prng_impl": "rbg",
        "jax_explain_cache_misses": True,
        "jax_debug_key_reuse": True,
        "jax_check_tracer_leaks": True,
        "jax_enable_checks": True,
        "jax_softmax_custom_jvp": True,
        "jax_allow_f16_reductions": False,
        "jax_default_device": morphax.devices()[0],
        "jax_num_cpu_devices": morphax.device_count(),  # the count already made: accepted
        "morphax_collective_timeout": 5.0,
        "jax_check_static_indices": True,
        "jax_platforms": "cpu",  # read once, at the first computation: overriding it changes nothing then
        # One directory per process: a thread's override is read back but moves no cache.
        "jax_compilation_cache_dir": "/nonexistent/thread-override",
    }
    # The flags morphax accepts without acting on them: any other value of the same kind.
    for name, (default, _) in NO_EFFECT.items():
        flags[name] = (not default) if isinstance(default, bool) else f"set by {name}"
    # DEFAULT_ONLY flags take no other value, so they have nothing to override.
    # (make_user_context adds options of its own, which other tests may have made)
    assert set(flags) | set(DEFAULT_ONLY) == {n for n in config._known if not n.startswith("user_context_")}
    defaults = {name: config.read(name) for name in flags}
    for name, value in flags.items():
        inside, b_done = threading.Event(), threading.Event()
        seen = {}

        def a(name=name, value=value, inside=inside, b_done=b_done, seen=seen):
            with config._override(name, value):
                seen["a"] = config.read(name)
                inside.set()
                assert b_done.wait(TIMEOUT)

        def b(name=name, inside=inside, b_done=b_done, seen=seen):
            assert inside.wait(TIMEOUT)
            seen["b"] = config.read(name)
            seen["b_ctx"] = config.trace_context()
            b_done.set()

        _run_pair(a, b)
        assert seen["a"] == value, name
        assert seen["b"] == defaults[name], name
        assert seen["b_ctx"] == config.trace_context(), name
        assert config.read(name) == defaults[name], name


def test_rank_promotion_override_in_one_thread_does_not_raise_in_another():
    inside, b_done = threading.Event(), threading.Event()
    seen = {}

    def a():
        with config._override("jax_numpy_rank_promotion", "raise"):
            inside.set()
            assert b_done.wait(TIMEOUT)

    def b():
        assert inside.wait(TIMEOUT)
        try:
            seen["shape"] = (jnp.ones(3) + jnp.ones((2, 3))).shape
        finally:
            b_done.set()

    _run_pair(a, b)
    assert seen["shape"] == (2, 3)


def test_disable_jit_is_thread_local():
    inside, b_done = threading.Event(), threading.Event()
    traced_in_b = []
    f = morphax.jit(lambda x: x * 2)

    def a():
        with morphax.disable_jit():
            inside.set()
            assert b_done.wait(TIMEOUT)
            assert config.disable_jit

    def b():
        assert inside.wait(TIMEOUT)
        # Still compiled here: the argument is a tracer while f traces.
        morphax.jit(lambda x: traced_in_b.append(type(x).__name__) or x)(jnp.ones(2))
        assert not config.disable_jit
        np.testing.assert_array_equal(np.asarray(f(jnp.ones(2))), [2.0, 2.0])
        b_done.set()

    _run_pair(a, b)
    assert traced_in_b and traced_in_b[0] != "Array"


def test_debug_nans_override_checks_only_its_own_thread():
    inside, b_done = threading.Event(), threading.Event()

    def a():
        with config._override("jax_debug_nans", True):
            inside.set()
            try:
                jnp.log(-jnp.ones(2))
            except FloatingPointError:
                pass
            else:
                raise AssertionError("debug_nans did not check inside its block")
            assert b_done.wait(TIMEOUT)

    def b():
        assert inside.wait(TIMEOUT)
        assert np.isnan(np.asarray(jnp.log(-jnp.ones(2)))).all()  # no error in this thread
        b_done.set()

    _run_pair(a, b)
    assert np.isnan(np.asarray(jnp.log(-jnp.ones(2)))).all()
