"""Where errors surface. As in JAX: an exception raised by a host callback (debug.callback,
pure_callback) is raised at the call that runs it, wherever the callback sits (jit, cond, switch,
scan, while, fori, vmap, nested jit, custom rules) and whether or not the outputs are used -- as
a JaxRuntimeError carrying the callback's traceback, except a debug callback run eagerly, whose
exception propagates as itself (answers recorded with JAX 0.10.2); an
error inside queued work without callbacks surfaces at the wait (a host read or
block_until_ready) and follows the arrays computed from the failed one."""

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax


class CallbackFailed(Exception):
    pass


def _fail(*args):
    raise CallbackFailed("raised inside the host callback")


def _debug_cb(x):
    morphax.debug.callback(_fail, x)
    return x


def _pure_cb(x):
    return morphax.pure_callback(
        _fail, morphax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential"
    )


CALLBACKS = {"debug_callback": _debug_cb, "pure_callback": _pure_cb}


def _in_context(context, cb):
    """A function of x (f32[4]) that runs `cb` inside `context`."""
    if context == "eager":
        return cb
    if context == "jit":
        return morphax.jit(cb)
    if context == "nested_jit":
        return morphax.jit(lambda x: morphax.jit(cb)(x) + 1)
    if context == "cond":
        return morphax.jit(lambda x: lax.cond(x[0] > 0, cb, lambda v: v * 2, x))
    if context == "switch":
        return morphax.jit(lambda x: lax.switch(1, [lambda v: v, cb], x))
    if context == "scan":
        return morphax.jit(lambda x: lax.scan(lambda c, _: (cb(c), None), x, None, length=3)[0])
    if context == "while":
        return morphax.jit(lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: cb(c) + 1, x))
    if context == "fori":
        return morphax.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: cb(c), x))
    if context == "vmap":
        return morphax.jit(morphax.vmap(cb))
    if context == "eager_vmap":
        return morphax.vmap(cb)
    if context == "custom_jvp":
        f = morphax.custom_jvp(cb)
        f.defjvp(lambda p, t: (f(p[0]), t[0]))
        return morphax.jit(f)
    if context == "checkpoint":
        return morphax.jit(morphax.checkpoint(cb))
    raise AssertionError(context)


CONTEXTS = [
    "eager",
    "jit",
    "nested_jit",
    "cond",
    "switch",
    "scan",
    "while",
    "fori",
    "vmap",
    "eager_vmap",
    "custom_jvp",
    "checkpoint",
]


@pytest.mark.parametrize("kind", sorted(CALLBACKS))
@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("outputs", ["used", "discarded"])
def test_callback_errors_raise_at_the_call(kind, context, outputs):
    fn = _in_context(context, CALLBACKS[kind])
    x = jnp.ones((2, 4)) if "vmap" in context else jnp.ones(4)
    if outputs == "discarded":
        inner = fn
        fn = lambda v: (inner(v), v + 1)[1]  # noqa: E731 - the callback's result is dropped
        if context != "eager" and "eager" not in context:
            fn = morphax.jit(fn)
    if kind == "pure_callback" and outputs == "discarded" and context not in ("eager", "eager_vmap"):
        # A pure callback whose result is unused is dead code under jit (JAX drops it too).
        np.testing.assert_array_equal(np.asarray(fn(x)), np.asarray(x) + 1)
        return
    # JAX: only a debug callback called eagerly (not compiled) raises the callback's exception.
    raw = kind == "debug_callback" and context in ("eager", "eager_vmap")
    with pytest.raises(CallbackFailed if raw else morphax.errors.JaxRuntimeError) as info:
        fn(x)
    assert "raised inside the host callback" in str(info.value)
    assert info.value.__cause__ is None


def test_callback_error_has_the_callbacks_traceback():
    # JAX: the JaxRuntimeError's message is the callback's traceback, ending with its exception.
    f = morphax.jit(_debug_cb)
    with pytest.raises(morphax.errors.JaxRuntimeError) as info:
        f(jnp.ones(3))
    text = str(info.value)
    assert text.startswith("INTERNAL: CpuCallback error calling callback: Traceback (most recent call last):")
    assert ", in _fail\n" in text
    assert text.endswith("CallbackFailed: raised inside the host callback")


def test_system_exit_in_a_callback_is_a_runtime_error():
    # JAX: jax.errors.JaxRuntimeError; the process does not exit.
    def exit_now(x):
        raise SystemExit(3)

    f = morphax.jit(lambda x: morphax.pure_callback(exit_now, morphax.ShapeDtypeStruct((3,), jnp.float32), x))
    with pytest.raises(morphax.errors.JaxRuntimeError, match="SystemExit") as info:
        f(jnp.ones(3))
    assert isinstance(info.value.__cause__, SystemExit)
    g = morphax.jit(lambda x: morphax.debug.callback(exit_now, x))
    with pytest.raises(morphax.errors.JaxRuntimeError):
        g(jnp.ones(3))


def test_the_program_runs_again_after_a_callback_error():
    calls = []

    def maybe_fail(x):
        calls.append(float(x[0]))
        if x[0] < 0:
            raise CallbackFailed("negative")

    f = morphax.jit(lambda x: (morphax.debug.callback(maybe_fail, x), x * 2)[1])
    with pytest.raises(morphax.errors.JaxRuntimeError, match="CallbackFailed: negative"):
        f(-jnp.ones(3))
    np.testing.assert_array_equal(np.asarray(f(jnp.ones(3))), [2.0, 2.0, 2.0])
    assert calls == [-1.0, 1.0]


class WorkFailed(Exception):
    pass


class _FailingExecutable:
    """Queued work that fails (an executable without host callbacks)."""

    in_avals = []
    calls_host = False
    total_elements = 1_000_000
    work = float("inf")

    def __init__(self, n_out):
        self.out_avals = [morphax._src.core.avals.ShapedArray((1_000_000,), np.float32)] * n_out
        self.out_weak_types = [False] * n_out

    def __call__(self):
        raise WorkFailed("failed inside the queued work")


def test_queued_work_errors_surface_at_every_wait_and_follow_dependents():
    from morphax._src.runtime import dispatch

    a, b = dispatch.execute(_FailingExecutable(2), [], [False, False])
    c = morphax.jit(lambda v: v * 2)(a)  # depends on the failed array: fails the same way
    for arr in (a, b, c, a):  # every read raises, the first and the later ones
        with pytest.raises(WorkFailed, match="inside the queued work"):
            arr.block_until_ready()
    with pytest.raises(WorkFailed):
        np.asarray(b)
    with pytest.raises(WorkFailed):
        float(c[0])


def test_debug_nans_raises_at_the_call_of_a_jitted_function():
    with morphax.debug_nans(True) if hasattr(morphax, "debug_nans") else _flag("jax_debug_nans"):
        f = morphax.jit(lambda x: jnp.log(x) * 2)
        with pytest.raises(FloatingPointError):
            f(-jnp.ones(3))


class _flag:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.old = getattr(morphax.config, self.name.replace("jax_", ""))
        morphax.config.update(self.name, True)

    def __exit__(self, *exc):
        morphax.config.update(self.name, self.old)
