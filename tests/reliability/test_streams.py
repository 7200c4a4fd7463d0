"""The device stream never waits on user Python: a host callback that blocks stalls only the
computation (and the thread) that contains it, a callback may wait for work other threads launch
later, and callbacks run in program order within a thread. Synchronised with events and
timeouts (a failure is a stalled stream, which a timeout turns into an assertion)."""

import threading

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.runtime import dispatch

TIMEOUT = 20.0
BIG = 300_000  # large enough that calls are queued on the stream, not run inline


def _blocking_program(kind, started, release):
    def wait_for_release(x):
        started.set()
        assert release.wait(TIMEOUT), "the test never released the callback"
        return np.asarray(x)

    def body(x):
        if kind == "pure_callback":
            return morphax.pure_callback(wait_for_release, morphax.ShapeDtypeStruct(x.shape, x.dtype), x)
        morphax.debug.callback(wait_for_release, x)
        return x * 1

    # Inside a cond branch: the callback is found by the walk over nested jaxprs.
    return morphax.jit(lambda x: lax.cond(x[0] > 0, body, lambda v: v, x) + 1)


@pytest.mark.parametrize("kind", ["pure_callback", "debug_callback"])
def test_a_blocked_callback_does_not_stall_other_threads(kind):
    started, release = threading.Event(), threading.Event()
    f = _blocking_program(kind, started, release)
    g = morphax.jit(lambda v: jnp.sin(v) * 2)
    other_done = threading.Event()
    results = {}

    def blocked_caller():
        results["blocked"] = np.asarray(f(jnp.ones(BIG)))

    def other_caller():
        results["other"] = np.asarray(g(jnp.ones(BIG)))
        other_done.set()

    a = threading.Thread(target=blocked_caller)
    a.start()
    try:
        assert started.wait(TIMEOUT)
        b = threading.Thread(target=other_caller)
        b.start()
        assert other_done.wait(TIMEOUT), "unrelated work stalled behind a blocked host callback"
        b.join(TIMEOUT)
    finally:
        release.set()
        a.join(TIMEOUT)
    np.testing.assert_allclose(results["other"][:3], np.sin(1.0) * 2, rtol=1e-6)
    np.testing.assert_array_equal(results["blocked"][:3], [2.0, 2.0, 2.0])


def test_a_callback_may_wait_for_work_launched_later_by_another_thread():
    started, produced = threading.Event(), threading.Event()
    box = {}

    def consume(x):
        started.set()
        assert produced.wait(TIMEOUT), "the producer's work never ran"
        return np.asarray(x) + np.asarray(box["later"])[: x.shape[0]]

    def read_later(v):
        return morphax.pure_callback(consume, morphax.ShapeDtypeStruct(v.shape, v.dtype), v)

    f = morphax.jit(lambda x: lax.cond(x[0] > 0, read_later, lambda v: v, x))

    def producer():
        assert started.wait(TIMEOUT)
        box["later"] = morphax.jit(lambda v: v * 3)(jnp.ones(BIG))  # queued after the callback began
        box["later"].block_until_ready()
        produced.set()

    t = threading.Thread(target=producer)
    t.start()
    try:
        out = np.asarray(f(jnp.ones(BIG)))
    finally:
        produced.set()
        t.join(TIMEOUT)
    np.testing.assert_array_equal(out[:4], [4.0] * 4)


def test_callbacks_run_in_program_order_within_a_thread():
    seen = []
    tag = morphax.jit(lambda x, i: (morphax.debug.callback(lambda v, k: seen.append(int(k)), x, i), x)[1])
    heavy = morphax.jit(lambda v: jnp.tanh(v) + 1)
    x = jnp.ones(BIG)
    for i in range(6):
        x = heavy(x)  # queued work between the callbacks
        tag(x[:2], i)
    x.block_until_ready()
    assert seen == list(range(6))


def test_morphax_calls_inside_a_callback_do_not_deadlock():
    def inner(x):
        big = morphax.jit(lambda v: v + 1)(jnp.ones(BIG))  # queued work, waited on inside
        return np.asarray(x) + float(big[0])

    f = morphax.jit(
        lambda x: lax.cond(
            x[0] > 0,
            lambda v: morphax.pure_callback(inner, morphax.ShapeDtypeStruct(v.shape, v.dtype), v),
            lambda v: v,
            x,
        )
    )
    np.testing.assert_array_equal(np.asarray(f(jnp.ones(3))), [3.0, 3.0, 3.0])


def test_one_stream_per_device():
    devices = morphax.devices()
    streams = [dispatch.stream_for(d.id) for d in devices]
    assert len({id(s) for s in streams}) == len(devices)
    assert dispatch.stream_for(devices[0].id) is streams[0]


def test_programs_with_callbacks_never_run_on_the_stream():
    threads = []
    f = morphax.jit(
        lambda x: lax.cond(
            x[0] > 0,
            lambda v: (morphax.debug.callback(lambda _: threads.append(threading.current_thread()), v), v)[1],
            lambda v: v,
            x,
        )
    )
    f(jnp.ones(BIG)).block_until_ready()
    assert threads == [threading.current_thread()]


def test_effects_barrier_waits_for_queued_work():
    y = morphax.jit(lambda v: jnp.cos(v) * 2)(jnp.ones(BIG))
    morphax.effects_barrier()
    assert y.is_ready()
