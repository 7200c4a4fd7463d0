"""The fast path of jitted calls (runtime/call_fast.py) and the C segment launcher
(backends/c/launch_ext.py): repeated calls skip the general path, and every condition that needs
it (new signatures, changed flags, cleared caches, tracing, pending inputs, donation) still
takes it. Results are compared with NumPy."""

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax._src.api.jit import JitWrapped
from morphax._src.compiler.backends import get_backend

RNG = np.random.default_rng(23)


@pytest.fixture
def general_calls(monkeypatch):
    """Counts calls that take the general path."""
    calls = []
    original = JitWrapped._call

    def counting(self, *args, **kwargs):
        calls.append(self._name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(JitWrapped, "_call", counting)
    return calls


def test_repeated_calls_take_the_fast_path_and_stay_correct(general_calls):
    def f(x, y):
        return jnp.sin(x) * y + 1.0, {"sum": jnp.sum(x)}

    jitted = morphax.jit(f)
    x = jnp.asarray(RNG.standard_normal(8).astype(np.float32))
    y = jnp.asarray(RNG.standard_normal(8).astype(np.float32))
    jitted(x, y)
    assert len(general_calls) == 1
    for _ in range(5):
        out, aux = jitted(x, y)
    assert len(general_calls) == 1
    np.testing.assert_allclose(np.asarray(out), np.sin(np.asarray(x)) * np.asarray(y) + 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(aux["sum"]), np.asarray(x).sum(), rtol=1e-5)
    # A new shape is a new signature: the general path, once.
    z = jnp.asarray(RNG.standard_normal(5).astype(np.float32))
    jitted(z, z)
    jitted(z, z)
    assert len(general_calls) == 2


def test_flags_cleared_caches_and_python_values_take_the_general_path(general_calls, private_disk_cache):
    jitted = morphax.jit(lambda x: x * 2)
    x = jnp.asarray(np.arange(4, dtype=np.int32))
    jitted(x)
    jitted(x)
    assert len(general_calls) == 1
    with morphax.enable_x64(True):  # the flags tracing depends on changed
        assert np.asarray(jitted(x)).tolist() == [0, 2, 4, 6]
    assert len(general_calls) == 2
    morphax.clear_caches()
    assert np.asarray(jitted(x)).tolist() == [0, 2, 4, 6]
    assert len(general_calls) == 3
    jitted(np.arange(4, dtype=np.int32))  # a NumPy array, not an Array
    assert len(general_calls) == 4


def test_jitted_functions_inside_transformations_are_traced_not_run():
    jitted = morphax.jit(lambda x: jnp.sum(jnp.tanh(x) ** 2))
    x = jnp.asarray(RNG.standard_normal(6).astype(np.float32))
    jitted(x)
    jitted(x)  # the signature is recorded; under grad and vmap the arguments are tracers
    grad = morphax.grad(jitted)(x)
    t = np.tanh(np.asarray(x))
    np.testing.assert_allclose(np.asarray(grad), 2 * t * (1 - t**2), rtol=1e-5)
    rows = morphax.vmap(jitted)(jnp.stack([x, x * 2]))
    np.testing.assert_allclose(
        np.asarray(rows), [np.sum(t**2), np.sum(np.tanh(2 * np.asarray(x)) ** 2)], rtol=1e-5
    )


def test_an_input_still_being_computed_is_waited_for_in_order():
    big = morphax.jit(lambda x: jnp.cumsum(jnp.sin(x) ** 2))
    small = morphax.jit(lambda x: x[-1:] + 1.0)
    x = jnp.asarray(RNG.standard_normal(2_000_000).astype(np.float32))
    small(big(x)).block_until_ready()
    small(big(x)).block_until_ready()
    for _ in range(3):
        pending = big(x)  # queued on the device stream: its buffer is not ready yet
        out = small(pending)
        want = np.cumsum(np.sin(np.asarray(x)).astype(np.float32) ** 2, dtype=np.float32)[-1:] + 1
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-3)


def test_donated_arguments_always_take_the_general_path(general_calls):
    jitted = morphax.jit(lambda x: x + 1.0, donate_argnums=0)
    for _ in range(3):
        x = jnp.asarray(np.ones(8, np.float32))
        assert np.asarray(jitted(x)).tolist() == [2.0] * 8
        assert x.is_deleted()
    assert len(general_calls) == 3


def test_errors_surface_at_the_wait_on_the_fast_path_too():
    jitted = morphax.jit(lambda x: morphax.pure_callback(_fail_on_negative, x, x))
    x = jnp.asarray(np.ones(3, np.float32))
    jitted(x).block_until_ready()
    jitted(x).block_until_ready()
    with pytest.raises(morphax.errors.JaxRuntimeError, match="ValueError: negative input"):
        jitted(-x).block_until_ready()


def _fail_on_negative(x):
    if (np.asarray(x) < 0).any():
        raise ValueError("negative input")
    return np.asarray(x)


@pytest.mark.skipif(not get_backend("c").available(), reason="no C compiler")
def test_the_c_launcher_declines_inputs_it_cannot_pass_and_ctypes_runs_them():
    from morphax._src.compiler.backends.c import launch_ext

    if launch_ext.module() is None:
        pytest.skip("no Python headers to build the launcher extension")
    jitted = morphax.jit(lambda a, b: a * 2.0 + b, backend="c")
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.ones((3, 4), np.float32)
    compiled = jitted.lower(a, b).compile()
    launch = compiled._executable.direct
    assert launch is not None and type(launch).__name__ == "Launcher"
    assert np.asarray(launch(a, b)[0]).tolist() == (a * 2 + 1).tolist()
    assert launch(a.T.copy().T, b) is None  # not C-contiguous: declined
    assert launch(a.astype(np.float64), b) is None  # another dtype: declined
    # The jitted call converts such inputs and runs them through the ctypes launcher.
    np.testing.assert_allclose(np.asarray(jitted(np.asfortranarray(a), b)), a * 2 + 1)


def test_without_python_headers_the_launcher_extension_is_not_built(monkeypatch, tmp_path):
    """The extension is optional: no headers (or no compiler) means ctypes launches everything.
    (An extension already in the disk cache loads without headers: an empty cache here.)"""
    from morphax._src.compiler.backends.c import disk_cache, launch_ext

    monkeypatch.setenv("MORPHAX_CACHE_DIR", str(tmp_path / "cache"))
    # The resolved cache directory is forgotten here and again afterwards.
    monkeypatch.setattr(disk_cache, "_state", {})
    monkeypatch.setattr(launch_ext.sysconfig, "get_paths", lambda: {"include": str(tmp_path)})
    assert launch_ext._build() is None
    monkeypatch.setattr(launch_ext.sysconfig, "get_paths", lambda: {})
    assert launch_ext._build() is None


def test_donate_argnums_that_name_no_passed_argument_still_run():
    """A donated position beyond the arguments given donates nothing; the call must still run
    (and never records a fast-path signature: donation always takes the general path)."""
    jitted = morphax.jit(lambda x, y=1.0: x * y, donate_argnums=1)
    x = jnp.asarray(np.arange(3, dtype=np.float32))
    for _ in range(2):
        assert np.asarray(jitted(x)).tolist() == [0.0, 1.0, 2.0]


def test_pytree_arguments_take_the_fast_path_keyed_on_their_structure(general_calls):
    @morphax.tree_util.register_pytree_node_class
    class Scaled:
        def __init__(self, value, scale):
            self.value, self.scale = value, scale

        def tree_flatten(self):
            return (self.value,), self.scale

        @classmethod
        def tree_unflatten(cls, scale, children):
            return cls(children[0], scale)

    def step(params, x, extra):
        h = x
        for w, b in params["layers"]:
            h = jnp.tanh(h @ w + b)
        return {"out": h * extra.scale + extra.value}, [jnp.sum(h)]

    jitted = morphax.jit(step)
    w = [RNG.standard_normal((4, 4)).astype(np.float32) for _ in range(2)]
    b = [RNG.standard_normal(4).astype(np.float32) for _ in range(2)]
    params = {"layers": [(jnp.asarray(w[k]), jnp.asarray(b[k])) for k in range(2)], "unused": None}
    x = jnp.asarray(RNG.standard_normal((3, 4)).astype(np.float32))
    extra = Scaled(jnp.asarray(np.float32(0.5)), 2.0)

    def expected(scale):
        h = np.asarray(x)
        for k in range(2):
            h = np.tanh(h @ w[k] + b[k])
        return h * scale + 0.5

    jitted(params, x, extra)
    assert len(general_calls) == 1
    for _ in range(3):
        out, (total,) = jitted(params, x, extra)
    assert len(general_calls) == 1
    np.testing.assert_allclose(np.asarray(out["out"]), expected(2.0), rtol=1e-5)
    np.testing.assert_allclose(
        np.asarray(total), np.tanh(np.tanh(np.asarray(x) @ w[0] + b[0]) @ w[1] + b[1]).sum(), rtol=1e-5
    )
    # Other aux data (the node's static scale) is another structure: traced and run anew.
    out, _ = jitted(params, x, Scaled(extra.value, 3.0))
    assert len(general_calls) == 2
    np.testing.assert_allclose(np.asarray(out["out"]), expected(3.0), rtol=1e-5)
    # Another container layout, and a leaf that is not an Array, take the general path.
    jitted({"layers": params["layers"], "unused": ()}, x, extra)
    assert len(general_calls) == 3
    jitted({"layers": params["layers"], "unused": None}, np.asarray(x), extra)
    jitted({"layers": params["layers"], "unused": None}, np.asarray(x), extra)
    assert len(general_calls) == 5
