"""Small public names of JAX's modules: `debug.log` (a logging record at the caller's line, at
run time, also under jit and vmap; the two-call form of print and log), the `ad_checkpoint`
policy markers (Saveable, Recompute, Offloadable), and `dtypes.prng_key`."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import ad_checkpoint as ac
from morphax import random


def test_debug_log_emits_records_at_run_time(caplog):
    def f(x):
        morphax.debug.log("x is {x}", x=x)
        return x + 1

    line = f.__code__.co_firstlineno + 1
    with caplog.at_level(logging.INFO, logger="morphax.debug"):
        jitted = morphax.jit(f)
        jitted(jnp.arange(3.0))
        jitted(jnp.ones(3))  # no retrace: the record comes from the run
        morphax.vmap(f)(jnp.arange(2.0))
    messages = [r.getMessage() for r in caplog.records if r.name == "morphax.debug"]
    assert messages == ["x is [0. 1. 2.]", "x is [1. 1. 1.]", "x is 0.0", "x is 1.0"]
    assert all(
        r.lineno == line and r.pathname == __file__ and r.levelno == logging.INFO for r in caplog.records
    )


def test_two_call_forms(capsys):
    morphax.debug.print(ordered=True)("v={}", jnp.float32(2.0))
    assert capsys.readouterr().out == "v=2.0\n"
    with pytest.raises(TypeError, match="two-call form"):
        morphax.debug.print(None, 1)
    assert callable(morphax.debug.log(ordered=True))


@pytest.mark.parametrize(
    "answer, saved",
    [
        (ac.Recompute, ["from the argument x"]),
        (ac.Saveable, ["output of cos"] * 2),
        (ac.Offloadable("device", "pinned_host"), ["output of cos"] * 2),
    ],
)
def test_policy_markers(answer, saved, capsys):
    f = morphax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=lambda prim, *a, **k: answer)
    np.testing.assert_allclose(float(morphax.grad(f)(1.0)), np.cos(np.sin(1.0)) * np.cos(1.0), rtol=1e-6)
    ac.print_saved_residuals(f, 1.0)
    assert [line.split(" ", 1)[1] for line in capsys.readouterr().out.splitlines()] == saved


def test_prng_key_dtype_category():
    assert jnp.issubdtype(random.key(0).dtype, morphax.dtypes.prng_key)
    assert not jnp.issubdtype(jnp.float32, morphax.dtypes.prng_key)
