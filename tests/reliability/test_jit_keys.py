"""Issue 12 #1, #2: what keys jit's trace cache.

JAX 0.10.2 keys a static argument on its type and its value: with ``static_argnums=1``,
``f(x, 1)``, ``f(x, True)`` and ``f(x, 1.0)`` each trace once, although Python calls the three
equal (with equal hashes). morphax does the same, and goes one step further: JAX compares only the
top-level type, so ``(True,)`` after ``(1,)`` reuses the trace made for ``(1,)`` there (the function
then sees the wrong value), and ``-0.0`` after ``0.0`` reuses the trace for ``0.0``. morphax keys
types at every level of tuples and floats by their bits, so the traced program always sees exactly
the value and type passed, which is what the property tests below state.

Non-static Python scalars key as the arrays they become (JAX: ``g(3)`` gives int32, ``g(3.0)``
float32, ``g(True)`` bool, whatever the order of the calls, and a loop ``i = g(i)`` from ``i = 0``
traces once: the weak int32 scalar it returns keys as 0 did).

JAX holds the jitted function weakly; a callable that cannot be weakly referenced (a ``__slots__``
class without ``__weakref__``) must still never share a trace with another object that happens to
get the same ``id()`` once the first is freed.

Trace counts come from ``jit_api.trace_counters``, never from timings.
"""

from __future__ import annotations

import functools
import gc
import math
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import morphax
import morphax.numpy as jnp
from morphax._src.api import jit as jit_api
from morphax._src.api.jit import trace_counters


def _same(a, b) -> bool:
    """Same type and value at every level; floats by their bits (so -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is float:
        return struct.pack("<d", a) == struct.pack("<d", b)
    return a == b


def _recording_jit(**options):
    """A jitted function that records the static value of each trace; its result tells which
    trace ran: ``seen[int(f(zero, s))]`` is the value the program was traced with."""
    seen = []

    def f(x, s):
        seen.append(s)
        return x + (len(seen) - 1)

    return morphax.jit(f, **options), seen


ZERO = jnp.zeros((), jnp.int32)


def _run(jf, seen, s, by_name=False):
    out = jf(ZERO, s=s) if by_name else jf(ZERO, s)
    return seen[int(out)]


@pytest.mark.parametrize("by_name", [False, True])
def test_static_values_equal_in_python_but_of_different_types_trace_separately(by_name):
    # JAX: each of 1, True, 1.0 traces once and the function sees the value passed.
    jf, seen = _recording_jit(**({"static_argnames": "s"} if by_name else {"static_argnums": 1}))
    t0 = trace_counters.traces
    for s in (1, True, 1.0, 1, True, 1.0):
        got = _run(jf, seen, s, by_name)
        assert _same(got, s), (got, s)
    assert trace_counters.traces - t0 == 3


def test_static_values_of_a_type_that_compare_equal_still_hit():
    jf, seen = _recording_jit(static_argnums=1)
    t0 = trace_counters.traces
    for s in (2, 2, "a", "a", None, None, (1, "b"), (1, "b"), 0.5, 0.5):
        assert _same(_run(jf, seen, s), s)
    assert trace_counters.traces - t0 == 5


def test_nested_static_values_key_their_types_too():
    # JAX 0.10.2 keys the top-level type only: (True,) and (1.0,) after (1,) reuse the trace for
    # (1,), and the function sees (1,). morphax retraces, so the function sees what was passed.
    jf, seen = _recording_jit(static_argnums=1)
    values = [(1,), (True,), (1.0,), ((1,),), ((True,),), frozenset([1]), frozenset([True])]
    t0 = trace_counters.traces
    for s in values + values:
        got = _run(jf, seen, s)
        assert type(got) is type(s) and repr(got) == repr(s)
    assert trace_counters.traces - t0 == len(values)


def test_negative_zero_and_nan_statics():
    # JAX reuses the trace for 0.0 when given -0.0 (copysign sees +1) and retraces for every NaN
    # (nan != nan). morphax keys floats by their bits: -0.0 retraces, the same NaN hits.
    jf = morphax.jit(lambda x, s: x * math.copysign(1.0, s), static_argnums=1)
    assert float(jf(1.0, 0.0)) == 1.0
    assert float(jf(1.0, -0.0)) == -1.0
    nan = float("nan")
    t0 = trace_counters.traces
    jf(1.0, nan)
    jf(1.0, nan)
    jf(1.0, float("nan"))
    assert trace_counters.traces - t0 == 1


def test_non_static_python_scalars_key_on_their_type():
    # JAX: int32, float32, bool (weakly typed for int and float), in either order.
    for order in ([3, 3.0, True], [3.0, 3, True], [True, 3.0, 3]):
        g = morphax.jit(lambda s: s)
        for v in order:
            out = g(v)
            want = {int: np.int32, float: np.float32, bool: np.bool_}[type(v)]
            assert out.dtype == want, (order, v, out.dtype)
            assert out.weak_type == (type(v) is not bool)
            assert out == v


def test_python_scalars_and_weak_scalar_arrays_share_one_trace():
    # JAX 0.10.2 traces each of these loops once.
    for start in (0, 1.5, 2j, True):
        g = morphax.jit(jnp.logical_not if start is True else (lambda s: s + 1))
        before = trace_counters.traces
        v = start
        for _ in range(3):
            v = g(v)
        assert trace_counters.traces - before == 1, start
        assert v.weak_type == (type(start) is not bool)
    # A strong int32 scalar is another signature (JAX traces it again), and so is a Python
    # scalar under x64, which becomes a 64-bit one.
    g = morphax.jit(lambda s: s * 2)
    before = trace_counters.traces
    g(3)
    g(np.int32(3))
    assert trace_counters.traces - before == 2
    with morphax.enable_x64():
        assert g(3).dtype == np.int64
    assert trace_counters.traces - before == 3
    assert g(4).dtype == np.int32 and trace_counters.traces - before == 3


def test_non_static_python_scalars_inside_containers_and_keywords():
    g = morphax.jit(lambda d, s: (d["a"] + 0, s))
    assert g({"a": 3}, s=4)[0].dtype == np.int32
    a, s = g({"a": 3.0}, s=4.0)
    assert a.dtype == np.float32 and s.dtype == np.float32


_scalars = st.one_of(
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.0, -0.0, 1.0, 0.5]),
    st.booleans(),
    st.text(max_size=3),
    st.none(),
)
_statics = st.recursive(_scalars, lambda inner: st.tuples(inner) | st.tuples(inner, inner), max_leaves=4)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=_statics, b=_statics)
@example(a=1, b=1.0)
@example(a=("x", (False,)), b=("x", (0,)))
def test_property_traced_program_sees_the_static_value_and_type_passed(a, b):
    jf, seen = _recording_jit(static_argnums=1)
    t0 = trace_counters.traces
    assert _same(_run(jf, seen, a), a)
    assert trace_counters.traces - t0 == 1
    assert _same(_run(jf, seen, b), b)
    # Equal and of the same type (at every level) hits the cache; anything else retraces.
    assert trace_counters.traces - t0 == (1 if _same(a, b) else 2)
    assert _same(_run(jf, seen, a), a)  # both stay cached
    assert trace_counters.traces - t0 == (1 if _same(a, b) else 2)


@settings(max_examples=40, deadline=None)
@given(a=_statics, b=_statics)
@example(a=1, b=True)
@example(a=(1,), b=(1.0,))
@example(a=0.0, b=-0.0)
def test_property_jit_matches_the_unjitted_function(a, b):
    def describe(s):
        """A number that differs for values that differ in type or value (a tiny program)."""
        return float(hash(repr(s) + type(s).__name__) % 1000)

    f = lambda x, s: x + describe(s)  # noqa: E731
    jf = morphax.jit(f, static_argnums=1)
    for s in (a, b, a):
        assert float(jf(0.0, s)) == pytest.approx(f(0.0, s))


# ------------------------------------------------------------------------------------- callables


class _SlotsScale:
    """A callable that cannot be weakly referenced (``__slots__`` without ``__weakref__``)."""

    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x * self.k


def test_unweakrefable_callables_never_share_traces_through_a_reused_id():
    # JAX: each object traces itself. Freed objects' ids are reused at once by CPython, which
    # gave the old trace (and the old k) to the new object when caches were keyed by id().
    x = jnp.ones(3)
    for k in range(20):
        s = _SlotsScale(k)
        np.testing.assert_array_equal(morphax.jit(s)(x), np.full(3, float(k)))
        del s
        gc.collect()


def test_unweakrefable_callable_cache_lives_on_the_wrapper(private_disk_cache):
    s = _SlotsScale(2.0)
    js = morphax.jit(s)
    t0 = trace_counters.traces
    js(jnp.ones(3))
    js(jnp.ones(3))
    assert trace_counters.traces - t0 == 1
    assert len(js._cache) == 1
    morphax.clear_caches()  # reaches wrapper-held caches too
    assert len(js._cache) == 0
    js(jnp.ones(3))
    assert trace_counters.traces - t0 == 2


def test_unhashable_callables_get_their_own_cache():
    class Unhashable:  # defines __eq__ without __hash__: not usable as a dict key
        def __init__(self, k):
            self.k = k

        def __eq__(self, other):
            return isinstance(other, Unhashable) and other.k == self.k

        __hash__ = None

        def __call__(self, x):
            return x + self.k

    for k in range(5):
        assert float(morphax.jit(Unhashable(k))(0.0)) == k


def test_partials_of_one_function_do_not_collide():
    def f(k, x):
        return x * k

    x = jnp.ones(2)
    for k in range(10):
        p = functools.partial(f, float(k))
        np.testing.assert_array_equal(morphax.jit(p)(x), np.full(2, float(k)))
        del p
        gc.collect()


def test_bound_methods_of_unweakrefable_instances_do_not_collide():
    class Slotted:
        __slots__ = ("k",)

        def __init__(self, k):
            self.k = k

        def scale(self, x):
            return x * self.k

    x = jnp.ones(2)
    for k in range(10):
        obj = Slotted(float(k))
        np.testing.assert_array_equal(morphax.jit(obj.scale)(x), np.full(2, float(k)))
        del obj
        gc.collect()
    a, b = Slotted(2.0), Slotted(3.0)
    ja, jb = morphax.jit(a.scale), morphax.jit(b.scale)
    assert float(ja(1.0)) == 2.0 and float(jb(1.0)) == 3.0


def test_weakrefable_functions_still_share_one_cache_and_free_it():
    def f(x):
        return x + 1

    t0 = trace_counters.traces
    morphax.jit(f)(1.0)
    morphax.jit(f)(1.0)  # a second jit of the same function reuses the trace, as in JAX
    assert trace_counters.traces - t0 == 1
    assert f in jit_api._caches
