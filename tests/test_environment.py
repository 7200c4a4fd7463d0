"""Top-level helpers: config flags as thread-local context managers (rank promotion's warn and
raise modes, debug_nans), ensure_compile_time_eval (constants computed while tracing), typeof,
the single-process counts and their renamed aliases, copy_to_host_async, print_environment_info."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp


def test_rank_promotion_modes():
    a, b = jnp.ones(3), jnp.ones((2, 3))
    with morphax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
            a + b
        assert (jnp.ones(()) + b).shape == (2, 3)  # scalars broadcast freely
        assert (b + b).shape == (2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with morphax.numpy_rank_promotion("warn"):
            a * b
    assert len(caught) == 1 and "rank promotion for multiply" in str(caught[0].message)
    assert (a + b).shape == (2, 3)  # back to "allow" after the block


def test_flags_are_thread_local_context_managers():
    seen = {}

    def other():
        seen["other"] = morphax.config.debug_nans

    with morphax.debug_nans(True):
        with pytest.raises(FloatingPointError):
            jnp.log(-jnp.ones(2))
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen["other"] is False and morphax.config.debug_nans is False


def test_ensure_compile_time_eval_folds_known_values():
    @morphax.jit
    def f(x):
        with morphax.ensure_compile_time_eval():
            c = jnp.sin(jnp.arange(3.0)) * 2
            shift = int(jnp.argmax(c))  # concrete inside the block: usable as a Python int
        return x + c + shift

    closed = morphax.make_jaxpr(f)(jnp.ones(3))
    inner = closed.jaxpr.eqns[0].params["jaxpr"].jaxpr
    assert [e.primitive.name for e in inner.eqns] == ["add", "add"]
    np.testing.assert_allclose(np.asarray(f(jnp.ones(3))), 1 + 2 * np.sin(np.arange(3.0)) + 2, rtol=1e-6)


def test_small_helpers(capsys):
    t = morphax.typeof(jnp.ones((2, 3), jnp.float16))
    assert t.shape == (2, 3) and t.dtype == jnp.float16
    assert morphax.typeof(2).weak_type
    assert morphax.local_device_count() == len(morphax.local_devices()) == 1
    assert (morphax.process_index(), morphax.process_count(), morphax.process_indices()) == (0, 1, [0])
    with pytest.warns(UserWarning, match="renamed"):
        assert morphax.host_id() == 0
    x = {"a": jnp.ones(2), "b": 3}
    assert morphax.copy_to_host_async(x) is x
    assert morphax.float0 == morphax.dtypes.float0
    text = morphax.print_environment_info(return_string=True)
    assert "morphax:" in text and "numpy:" in text
    morphax.print_environment_info()
    assert capsys.readouterr().out.strip() == text


def test_version_matches_pyproject():
    import pathlib

    import tomllib

    meta = tomllib.loads((pathlib.Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert morphax.__version__ == meta["project"]["version"]


def test_environment_info_names_the_pjrt_plugins_found(monkeypatch, tmp_path):
    """The plugins are found as the xla backend and JAX find them, and named without being
    opened (a TPU admits one process at a time)."""
    monkeypatch.setenv("MORPHAX_PJRT_PLUGIN", str(tmp_path / "plugin.so"))
    monkeypatch.setenv("TPU_LIBRARY_PATH", str(tmp_path / "libtpu.so"))
    text = morphax.print_environment_info(return_string=True)
    assert f"PJRT plugin: {tmp_path / 'plugin.so'}" in text
    assert f"libtpu: {tmp_path / 'libtpu.so'}" in text
    monkeypatch.delenv("TPU_LIBRARY_PATH")
    from morphax._src.pjrt import plugin

    monkeypatch.setattr(plugin, "TPU_PACKAGE", "morphax_no_such_package_here")
    assert "libtpu: not found" in morphax.print_environment_info(return_string=True)
