"""Eager loops reuse their traced bodies: counted with the trace cache's counters (a body is
traced once per function, structure, abstract types and flags), never reused across traces
that close over tracers, and results stay those of a fresh trace."""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.higher_order import trace_cache


def _traces():
    return trace_cache.stats["traces"]


def test_eager_scan_while_fori_trace_once():
    def body(c, x):
        return c + jnp.sin(x), c * 2

    xs = jnp.arange(5.0)
    first = lax.scan(body, 0.0, xs)
    n = _traces()
    for _ in range(3):
        again = lax.scan(body, 0.0, xs)
    assert _traces() == n
    np.testing.assert_array_equal(again[1], first[1])
    lax.scan(body, 0.0, jnp.arange(6.0))  # another length: the body's types are the same
    assert _traces() == n
    lax.scan(body, 0.0, xs.astype(jnp.int32))  # another element type: traced again
    assert _traces() == n + 1

    def step(i, c):
        return c * 2 + i

    assert int(lax.fori_loop(0, 4, step, 1)) == 27
    n = _traces()
    assert int(lax.fori_loop(0, 4, step, 1)) == 27
    assert int(lax.fori_loop(1, 3, step, 1)) == 8  # other static bounds: same body types
    assert _traces() == n

    def cond(c):
        return c < 10

    def inc(c):
        return c + 3

    assert int(lax.while_loop(cond, inc, 0)) == 12
    n = _traces()
    assert int(lax.while_loop(cond, inc, 1)) == 10
    assert _traces() == n


def test_closures_over_tracers_and_transformations_are_not_reused():
    def outer(y):
        return lax.scan(lambda c, x: (c + x * y, None), 0.0, jnp.arange(3.0))[0]

    assert float(morphax.grad(outer)(2.0)) == 3.0
    assert float(morphax.grad(outer)(5.0)) == 3.0
    np.testing.assert_array_equal(morphax.vmap(outer)(jnp.array([1.0, 2.0])), [3.0, 6.0])
    assert float(morphax.jit(outer)(4.0)) == 12.0


def test_x64_flag_is_part_of_the_key():
    def body(c, x):
        return c + x, None

    xs = np.arange(3.0)
    assert lax.scan(body, jnp.float32(0), jnp.asarray(xs, jnp.float32))[0].dtype == jnp.float32
    with morphax.enable_x64():
        out = lax.scan(body, jnp.zeros((), jnp.float64), jnp.asarray(xs, jnp.float64))[0]
        assert out.dtype == jnp.float64
