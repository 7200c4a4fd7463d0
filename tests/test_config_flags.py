"""JAX's config flags: every name of JAX 0.10.2's list is accepted, the implemented ones act as JAX
does (behaviour recorded from JAX on the same programs), and values morphax cannot honour raise."""

from __future__ import annotations

import logging
import pathlib
import warnings

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import config
from morphax._src.jax_only_flags import DEFAULT_ONLY, NO_EFFECT
from morphax.errors import JaxRuntimeError, KeyReuseError
from morphax.test_util import check_grads

R = morphax.random
FLAGS = (pathlib.Path(__file__).parent / "data" / "api" / "jax_config_flags.txt").read_text().split()


def test_every_jax_flag_is_accepted_with_jaxs_default():
    values = config.values
    assert set(FLAGS) <= set(values)
    for name, (default, _) in {**NO_EFFECT, **DEFAULT_ONLY}.items():
        assert values[name] == default, name
    assert config.jax_platform_name == ""
    config.update("jax_platform_name", "cpu")  # what many JAX scripts do first
    try:
        assert config.jax_platform_name == "cpu" and config.platform_name == "cpu"
    finally:
        config.update("jax_platform_name", "")


def test_unknown_and_unsupported_values_raise():
    with pytest.raises(AttributeError, match="unknown option 'jax_no_such_flag'"):
        config.update("jax_no_such_flag", 1)
    with pytest.raises(NotImplementedError, match="jax_error_checking_behavior_nan='raise'"):
        config.update("jax_error_checking_behavior_nan", "raise")
    config.update("jax_error_checking_behavior_nan", "ignore")  # the default is fine
    with pytest.raises(ValueError, match="must be one of"):
        config.update("jax_transfer_guard", "sometimes")
    with pytest.raises(ValueError, match="must be one of"):
        with morphax.numpy_dtype_promotion("loose"):
            pass
    with pytest.raises(ValueError, match="not one of morphax.devices"):
        morphax.default_device("gpu:0")
    with morphax.default_device(morphax.devices()[0]):
        assert config.default_device is morphax.devices()[0]


def test_no_tracing_and_no_execution():
    x = jnp.ones(3)
    f = morphax.jit(lambda a: a * 2)
    f(x)
    with morphax.no_tracing(True):
        np.testing.assert_array_equal(f(x), [2, 2, 2])  # cached: no trace needed
        with pytest.raises(
            RuntimeError, match="re-tracing function <lambda> for `jit`, but 'no_tracing' is set"
        ):
            morphax.jit(lambda a: a + 1)(x)
    with morphax.no_execution(True):
        with pytest.raises(RuntimeError, match="tried to execute add, but the no_execution"):
            x + 1
        with pytest.raises(RuntimeError, match=r"tried to execute jit\(<lambda>\)"):
            f(x)
        assert "mul" in str(morphax.make_jaxpr(f)(x))  # tracing is not execution
    np.testing.assert_array_equal(f(x) + 1, [3, 3, 3])


def test_transfer_guard_levels(caplog):
    x = jnp.ones(3)
    f = morphax.jit(lambda a: a * 2)
    host = np.ones(3, np.float32)
    with morphax.transfer_guard("disallow"):
        for implicit in (lambda: f(host), lambda: jnp.array(host), lambda: x + host):
            with pytest.raises(JaxRuntimeError, match="Disallowed host-to-device transfer"):
                implicit()
        np.testing.assert_array_equal(morphax.device_put(host), host)  # explicit: allowed
        np.testing.assert_array_equal(np.asarray(f(x)), [2, 2, 2])  # device data: no transfer
        np.testing.assert_array_equal(np.asarray(x), host)  # device-to-host: none on the CPU
    with morphax.transfer_guard_host_to_device("disallow_explicit"):
        with pytest.raises(JaxRuntimeError, match=r"\(device_put\)"):
            morphax.device_put(host)
    with caplog.at_level(logging.WARNING, logger="morphax"), morphax.transfer_guard("log"):
        np.testing.assert_array_equal(f(host), [2, 2, 2])
    assert "host-to-device transfer (argument of jit(<lambda>))" in caplog.text
    np.testing.assert_array_equal(f(host), [2, 2, 2])  # guard off again


def test_explain_cache_misses(caplog):
    g = morphax.jit(lambda a, b: a + b)
    x = jnp.ones(3)
    with caplog.at_level(logging.WARNING, logger="morphax"), morphax.explain_cache_misses(True):
        g(x, 1.0)
        g(jnp.ones(4), 1.0)
        g(x, 2)
        g(x, 1.0)  # a hit: nothing logged
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    assert "first call to <lambda>" in lines[0]
    assert "argument 0 was float32[3], is float32[4]" in lines[1]
    assert "argument 1 was float32[] (weak), is int32[] (weak)" in lines[2]


def test_enable_checks_type_checks_traced_and_optimized_jaxprs(monkeypatch):
    from morphax._src.api import jit as jit_module
    from morphax._src.passes import pipeline

    checked = []
    real = jit_module.check_jaxpr
    monkeypatch.setattr(jit_module, "check_jaxpr", lambda j: checked.append("trace") or real(j))
    monkeypatch.setattr(pipeline, "check_jaxpr", lambda j: checked.append("pass") or real(j))
    with morphax.enable_checks(True):
        # sin twice: common-subexpression elimination changes the jaxpr, so a check follows it
        out = morphax.jit(lambda a: jnp.sin(a) + jnp.sin(a))(jnp.arange(3.0))
    np.testing.assert_allclose(out, 2 * np.sin(np.arange(3.0)), rtol=1e-6)
    assert checked[0] == "trace" and "pass" in checked


# (dtypes, JAX 0.10.2's result under jax_numpy_dtype_promotion="strict"; None: TypePromotionError)
STRICT = [
    (("int32", 1.0), None),
    (("bool", "int32"), None),
    (("int8", 1), "int8"),
    (("float32", 1), "float32"),
    (("float32", 1j), None),
    (("float32", "int32"), None),
    (("float32", "float16"), None),
    ((1, 1.0), "float32"),
    (("float32", "float32"), "float32"),
]


@pytest.mark.parametrize("operands,want", STRICT)
def test_strict_dtype_promotion(operands, want):
    args = [jnp.ones(2, o) if isinstance(o, str) else o for o in operands]
    with morphax.numpy_dtype_promotion("strict"):
        if want is None:
            with pytest.raises(morphax.dtypes.TypePromotionError, match="jax_numpy_dtype_promotion=strict"):
                jnp.add(*args)
        else:
            assert jnp.add(*args).dtype == want
    jnp.add(*args)  # standard promotion again


def test_legacy_prng_key_and_seed_offset_and_impl():
    with morphax.legacy_prng_key("error"):
        with pytest.raises(ValueError, match="Legacy uint32 key array passed as key to normal"):
            R.normal(R.PRNGKey(0))
        R.normal(R.key(0))
    with morphax.legacy_prng_key("warn"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        R.normal(R.PRNGKey(0))
    assert any("Legacy uint32 key" in str(w.message) for w in caught)
    config.update("jax_random_seed_offset", 3)
    try:
        # JAX 0.10.2: key_data(key(0)) with offset 3 is [0, 3]
        np.testing.assert_array_equal(R.key_data(R.key(0)), [0, 3])
        np.testing.assert_array_equal(morphax.jit(lambda s: R.PRNGKey(s))(0), [0, 3])
    finally:
        config.update("jax_random_seed_offset", 0)
    np.testing.assert_array_equal(R.PRNGKey(0), [0, 0])
    with morphax.default_prng_impl("rbg"), pytest.raises(NotImplementedError, match="threefry2x32"):
        R.key(0)


def test_debug_key_reuse_follows_jax():
    with morphax.debug_key_reuse(True):
        k = R.key(0)
        R.fold_in(k, 1)
        R.key_data(k)
        R.normal(R.clone(k))
        R.normal(k)  # fold_in, key_data and clone do not consume
        with pytest.raises(KeyReuseError, match="Previously-consumed key passed to uniform"):
            R.uniform(k)
        ks = R.split(R.key(1))
        R.normal(ks[0])
        with pytest.raises(KeyReuseError):
            R.normal(ks[0])
        R.normal(ks[1])
        with pytest.raises(KeyReuseError, match="split"):
            R.split(ks)
        with pytest.raises(KeyReuseError):
            morphax.jit(lambda key: R.normal(key) + R.normal(key))(R.key(2))
        morphax.jit(lambda key: R.normal(key))(R.key(2))
        morphax.vmap(R.normal)(R.split(R.key(3), 4))
    k = R.key(0)
    R.normal(k)
    R.normal(k)  # off: reuse is allowed


def test_softmax_custom_jvp_matches_the_formulas_derivative():
    x = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    mask = np.array([[True, False, True, True]] * 3)
    plain = morphax.jacrev(morphax.nn.softmax)(x)
    masked = morphax.grad(lambda v: (morphax.nn.softmax(v, where=mask) ** 2).sum())(x)
    with morphax.softmax_custom_jvp(True):
        assert "custom_jvp_call" in str(morphax.make_jaxpr(morphax.nn.softmax)(x))
        np.testing.assert_allclose(morphax.jacrev(morphax.nn.softmax)(x), plain, atol=1e-6)
        got = morphax.grad(lambda v: (morphax.nn.softmax(v, where=mask) ** 2).sum())(x)
        np.testing.assert_allclose(got, masked, atol=1e-6)
        with morphax.enable_x64():
            check_grads(lambda v: morphax.nn.softmax(v, axis=0), (x.astype(np.float64),), order=2)


def test_allow_f16_reductions():
    h = jnp.ones(4, jnp.float16)
    with morphax.allow_f16_reductions(False):
        with pytest.raises(TypeError, match="jax_allow_f16_reductions=False"):
            morphax.lax.reduce_sum(h, (0,))
        assert morphax.lax.reduce_sum(h.astype(jnp.float32), (0,)) == 4
    assert morphax.lax.reduce_sum(h, (0,)) == 4


def test_top_level_flag_context_managers_set_their_option():
    pairs = {
        morphax.check_tracer_leaks: "jax_check_tracer_leaks",
        morphax.enable_checks: "jax_enable_checks",
        morphax.array_garbage_collection_guard: "jax_array_garbage_collection_guard",
        morphax.thread_guard: "jax_thread_guard",
        morphax.jax2tf_associative_scan_reductions: "jax2tf_associative_scan_reductions",
        morphax.enable_custom_prng: "jax_enable_custom_prng",
    }
    for manager, option in pairs.items():
        before = config.read(option)
        with manager(True):
            assert config.read(option) is True
        assert config.read(option) == before
    with morphax.checking_leaks():
        assert config.check_tracer_leaks


def test_check_tracer_leaks():
    leaked = []
    with morphax.check_tracer_leaks(True):
        np.testing.assert_array_equal(morphax.jit(lambda a: a * 2)(jnp.ones(3)), [2, 2, 2])
        with pytest.raises(Exception, match=r"Leaked trace of <lambda> .* for jit: 1 tracer\(s\) .* list"):
            morphax.jit(lambda a: leaked.append(a) or a)(jnp.ones(3))
    leaked.clear()
    morphax.jit(lambda a: leaked.append(a) or a)(jnp.ones(3))  # off: not checked
