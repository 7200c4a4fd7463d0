"""Small API names JAX programs and libraries use, each behaving as in JAX 0.10.2: `typeof`,
`log_compiles` (context manager and the `jax_log_compiles` option), `dtypes.prng_key`,
`Lowered.compiler_ir` and `ShapeDtypeStruct.like`."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import random
from morphax._src.core.avals import ShapedArray


# ------------------------------------------------------------------------------------- typeof
def test_typeof_gives_the_aval():
    # JAX: jax.typeof(jnp.ones((2, 3))) is ShapedArray(float32[2,3]); Python scalars are weak.
    a = morphax.typeof(jnp.ones((2, 3)))
    assert isinstance(a, ShapedArray)
    assert (a.shape, a.dtype, a.weak_type) == ((2, 3), np.dtype("float32"), False)
    s = morphax.typeof(1.0)
    assert (s.shape, s.dtype, s.weak_type) == ((), np.dtype("float32"), True)
    assert morphax.typeof(np.ones(2)).dtype == np.dtype("float32")  # canonicalized, as in JAX
    assert morphax.typeof(np.int32(3)).weak_type is False


def test_typeof_under_transformations():
    seen = []

    def f(x):
        seen.append(morphax.typeof(x))
        return x * 2

    morphax.jit(f)(jnp.ones((4, 3)))
    morphax.vmap(f)(jnp.ones((4, 3)))
    morphax.grad(lambda x: f(x).sum())(jnp.ones(3))
    assert [t.shape for t in seen] == [(4, 3), (3,), (3,)]
    assert all(t.dtype == np.dtype("float32") for t in seen)


def test_typeof_sharding():
    # JAX: outside an explicit-axes mesh, jax.typeof(x).sharding is
    # NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P(None,)): fully replicated, and
    # optax reads `.mesh.are_all_axes_explicit` (False) before its tree dot products.
    s = morphax.typeof(jnp.ones(3)).sharding
    assert isinstance(s, morphax.sharding.NamedSharding)
    assert s.mesh.empty and s.is_fully_replicated and s.spec == morphax.P(None)
    assert not s.mesh.are_all_axes_explicit and not s.mesh.are_all_axes_auto
    assert morphax.typeof(1.0).sharding.spec == morphax.P()
    seen = []
    morphax.jit(lambda x: seen.append(morphax.typeof(x).sharding) or x)(jnp.ones((2, 2)))
    assert seen[0].spec == morphax.P(None, None) and seen[0].is_fully_replicated
    mesh = morphax.sharding.AbstractMesh((2,), ("x",), (morphax.sharding.AxisType.Explicit,))
    assert mesh.are_all_axes_explicit and not mesh.are_all_axes_auto


def test_typeof_of_keys_and_bad_input():
    # JAX: jax.typeof(jax.random.key(0)) is ShapedArray(key<fry>[]).
    k = random.key(0)
    a = morphax.typeof(k)
    assert a.shape == () and a.dtype == k.dtype and repr(a) == "ShapedArray(key<fry>[])"
    assert morphax.typeof(random.split(k, 3)).shape == (3,)
    got = []
    morphax.jit(lambda k: got.append(morphax.typeof(k)) or 0)(k)
    assert got[0].dtype == k.dtype and got[0].shape == ()
    with pytest.raises(TypeError, match="typeof.*str"):
        morphax.typeof("a")


# ------------------------------------------------------------------------------- log_compiles
def _records(caplog, f):
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="morphax"):
        f()
    return [r for r in caplog.records if r.name.startswith("morphax")]


def test_log_compiles_context_manager(caplog):
    # JAX: `with jax.log_compiles():` (no argument: on) logs, at WARNING level, each trace and
    # each compilation of a jitted function; a cache hit logs nothing.
    def f(x):
        return x * 3

    jf = morphax.jit(f)

    def run():
        with morphax.log_compiles():
            jf(jnp.ones(3))
            jf(jnp.ones(3))  # cache hit: no new lines

    recs = _records(caplog, run)
    warn = [r.getMessage() for r in recs if r.levelno == logging.WARNING]
    assert any("Tracing f" in m for m in warn), warn
    assert sum("Compiling f" in m for m in warn) == 1, warn
    assert any("f32[3]" in m for m in warn if "Compiling" in m)
    # One "Finished ... compilation" line per compilation (optax's tests count them with this
    # regex), even when the native build runs in the background behind an interim program.
    assert sum(bool(re.search(r"Finished .* compilation", m)) for m in warn) == 1, warn
    # Off again after the block: the same lines at DEBUG level only, as JAX logs them.
    recs = _records(caplog, lambda: morphax.jit(lambda x: x - 1)(jnp.ones(2)))
    assert not [r for r in recs if r.levelno >= logging.WARNING]
    debug = [r.getMessage() for r in recs if r.levelno == logging.DEBUG]
    assert sum(bool(re.search(r"Finished .* compilation of jit\(<lambda>\)", m)) for m in debug) == 1, debug


def test_log_compiles_counts_loops_once(caplog):
    def body(i, c):
        return c * 1.5 + i

    def run():
        with morphax.log_compiles(True):
            morphax.jit(lambda x: morphax.lax.fori_loop(0, 3, body, x))(jnp.ones(3))

    warn = [r.getMessage() for r in _records(caplog, run) if r.levelno == logging.WARNING]
    assert sum(bool(re.search(r"Finished .* compilation", m)) for m in warn) == 1, warn


def test_log_compiles_option(caplog):
    def run():
        morphax.config.update("jax_log_compiles", True)
        try:
            morphax.jit(lambda x: x + 7)(jnp.ones(5))
        finally:
            morphax.config.update("jax_log_compiles", False)

    warn = [r.getMessage() for r in _records(caplog, run) if r.levelno == logging.WARNING]
    assert any("Compiling" in m and "f32[5]" in m for m in warn), warn
    assert morphax.config.jax_log_compiles is False


def test_boolean_flag_context_managers_default_to_true():
    # JAX: a boolean option's context manager called without a value turns the option on; a
    # non-boolean one requires the value.
    with morphax.debug_nans():
        assert morphax.config.jax_debug_nans is True
    assert morphax.config.jax_debug_nans is False
    with pytest.raises(TypeError, match="numpy_rank_promotion.*requires an argument"):
        with morphax.numpy_rank_promotion():
            pass


# ---------------------------------------------------------------------------- dtypes.prng_key
def test_prng_key_dtype_category():
    k = random.key(0)
    assert jnp.issubdtype(k.dtype, morphax.dtypes.prng_key)
    assert morphax.dtypes.issubdtype(k.dtype, morphax.dtypes.prng_key)
    assert jnp.issubdtype(k.dtype, morphax.dtypes.extended)
    # Raw uint32 keys and ordinary arrays are not of the key category.
    assert not jnp.issubdtype(random.PRNGKey(0).dtype, morphax.dtypes.prng_key)
    assert not jnp.issubdtype(jnp.float32, morphax.dtypes.prng_key)
    assert str(k.dtype) == "key<fry>"


# ---------------------------------------------------------------------- Lowered.compiler_ir
def test_lowered_compiler_ir():
    lowered = morphax.jit(lambda x: jnp.sin(x) + 1.0).lower(jnp.ones(3))
    ir = lowered.compiler_ir()
    # morphax's IR is the jaxpr the backends compile (JAX: the StableHLO module).
    assert ir is lowered.compiler_ir(dialect="jaxpr")
    assert "sin" in str(ir) and "f32[3]" in str(ir)
    source = lowered.compiler_ir("source")
    assert isinstance(source, str) and source in lowered.as_text()
    # The StableHLO module (what the xla backend hands XLA), whatever the backend; no HLO: None,
    # as JAX's contract says for a representation it lacks.
    module = lowered.compiler_ir("stablehlo")
    assert str(module).startswith("module @jit_") and '"stablehlo.sine"' in str(module)
    assert lowered.compiler_ir("hlo") is None
    with pytest.raises(ValueError, match="unknown dialect"):
        lowered.compiler_ir("mhlo-ish")


# ------------------------------------------------------------------- ShapeDtypeStruct.like
def test_shape_dtype_struct_like():
    s = morphax.ShapeDtypeStruct.like(jnp.ones((2, 3), jnp.int8))
    assert (s.shape, s.dtype, s.weak_type) == ((2, 3), np.dtype("int8"), False)
    # JAX: Python scalars stay weak, NumPy float64 arrays are canonicalized to float32.
    assert morphax.ShapeDtypeStruct.like(1.0) == morphax.ShapeDtypeStruct((), jnp.float32, weak_type=True)
    assert morphax.ShapeDtypeStruct.like(np.ones(4)).dtype == np.dtype("float32")
    with morphax.enable_x64():
        assert morphax.ShapeDtypeStruct.like(np.ones(4)).dtype == np.dtype("float64")
    t = morphax.ShapeDtypeStruct((5,), jnp.uint16)
    assert morphax.ShapeDtypeStruct.like(t) == t
    # Usable where JAX takes a ShapeDtypeStruct, and from inside a trace.
    out = morphax.eval_shape(lambda x: x @ x.T, morphax.ShapeDtypeStruct.like(jnp.ones((4, 2))))
    assert out.shape == (4, 4)
    inner = []
    morphax.jit(lambda x: inner.append(morphax.ShapeDtypeStruct.like(x)) or x)(jnp.ones(6))
    assert inner[0] == morphax.ShapeDtypeStruct((6,), jnp.float32)
    with pytest.raises(TypeError, match="ShapeDtypeStruct.like"):
        morphax.ShapeDtypeStruct.like("abc")


def test_shape_dtype_struct_of_keys():
    # JAX: a ShapeDtypeStruct may have a key dtype; eval_shape takes it as a key array and gives
    # key outputs as ShapeDtypeStructs of the key dtype (not their key words).
    k = random.key(0)
    kd = morphax.ShapeDtypeStruct((), k.dtype)
    assert repr(kd) == "ShapeDtypeStruct(shape=(), dtype=key<fry>)"
    assert morphax.ShapeDtypeStruct.like(k) == kd
    assert morphax.ShapeDtypeStruct.like(random.split(k, 3)) == morphax.ShapeDtypeStruct((3,), k.dtype)
    assert morphax.eval_shape(lambda: random.key(1)) == kd
    assert morphax.eval_shape(lambda k: random.split(k), kd) == morphax.ShapeDtypeStruct((2,), k.dtype)
    out = morphax.eval_shape(lambda k, x: (random.normal(k, (3,)) + x, k), kd, jnp.ones(3))
    assert out == (morphax.ShapeDtypeStruct((3,), jnp.float32), kd)
    tree = morphax.eval_shape(lambda d: d, {"a": jnp.ones(2), "k": k})
    assert tree == {"a": morphax.ShapeDtypeStruct((2,), jnp.float32), "k": kd}
    _, shapes = morphax.make_jaxpr(lambda k: random.uniform(k, (2,)), return_shape=True)(kd)
    assert shapes == morphax.ShapeDtypeStruct((2,), jnp.float32)
    # morphax's ShapeDtypeStruct.aval (JAX's has none) is the keys' own aval.
    assert kd.aval.str_short() == "key<fry>[]"


def test_linearize_returns_a_pytree_that_jit_takes_as_jax_does():
    # JAX's f_jvp is a Partial over the residuals (equinox passes it through filter_jit).
    x = np.arange(3.0, dtype=np.float32)
    y, f_jvp = morphax.linearize(lambda v: jnp.sin(v) * 2, x)
    assert len(morphax.tree_util.tree_leaves(f_jvp)) >= 1
    through = morphax.jit(lambda f, t: f(t))(f_jvp, jnp.ones(3))
    np.testing.assert_allclose(np.asarray(through), 2 * np.cos(x), rtol=1e-6)
    back = morphax.jit(lambda v: morphax.linearize(jnp.tanh, v)[1])(x)
    np.testing.assert_allclose(np.asarray(back(jnp.ones(3))), 1 - np.tanh(x) ** 2, rtol=1e-5)


def test_lowered_compile_takes_compiler_options_and_refuses_unknown_ones():
    lowered = morphax.jit(lambda x, y: 2 * x + y).lower(jnp.array(3), 4)
    compiled = lowered.compile(compiler_options={"xla_gpu_autotune_level": "0"})
    assert int(compiled(3, 4)) == 10 and compiled.compiler_options == {"xla_gpu_autotune_level": "0"}
    assert lowered.compile(compiler_options=None).compiler_options == {}
    with pytest.raises(morphax.errors.JaxRuntimeError, match="No such compile option"):
        lowered.compile(compiler_options={"an option that does not make sense": "bad value"})


def test_float0_results_of_jit_are_numpy_arrays_as_in_jax():
    # An integer input's cotangent: JAX returns a NumPy float0 array from jit as from eager code
    # (equinox's tree_equal compares two of them with NumPy's ==).
    for fn in (lambda f: f, morphax.jit):
        out = fn(lambda x, i: morphax.vjp(lambda a, b: a * b, x, i)[1](1.0))(1.0, 2)
        assert type(out[1]) is np.ndarray and out[1].dtype == morphax.dtypes.float0
        assert bool(np.all(out[1] == out[1])) and float(out[0]) == 2.0


def test_transformations_wrap_callables_whose_name_is_not_a_string():
    # An equinox Module rebuilt inside scan answers __name__ with a sentinel object; JAX's vmap,
    # grad and jit wrap it all the same.
    class Sentinel:
        pass

    class Odd:
        __name__ = Sentinel()
        __doc__ = None

        def __call__(self, x):
            return x * 2

    for transform in (morphax.vmap, morphax.grad, morphax.jit, morphax.checkpoint):
        f = transform(Odd())
        out = f(jnp.ones(3)) if transform is not morphax.grad else f(1.0)
        assert np.asarray(out).size >= 1


def test_pmap_lowers_ahead_of_time():
    f = morphax.pmap(lambda x, y: 2 * x + y, in_axes=(0, None))
    lowered = f.lower(jnp.array([3]), 4)
    assert "xla_pmap" in lowered.as_text()
    assert np.asarray(lowered.compile()(jnp.array([3]), 4)).tolist() == [10]


# ------------------------------------------------------------- what differentiation returns
def _documented(x, y):
    """The function's own doc."""
    return x * y


@pytest.mark.parametrize(
    "transform, doc",
    [
        (morphax.grad, "Gradient of _documented with respect to positional argument(s) 1. Takes the same"),
        (
            morphax.value_and_grad,
            "Value and gradient of _documented with respect to positional argument(s) 1.",
        ),
        (morphax.jacfwd, "Jacobian of _documented with respect to positional argument(s) 1. Takes the same"),
        (morphax.jacrev, "Jacobian of _documented with respect to positional argument(s) 1. Takes the same"),
        (morphax.hessian, "Jacobian of _documented with respect to positional argument(s) 1. Takes the same"),
    ],
)
def test_differentiated_functions_wrap_the_function(transform, doc):
    # JAX 0.10.2: the result has the function's name, JAX's docstring, and a __wrapped__ chain
    # back to the function (equinox follows it to warn about a transformed Module as a field).
    g = transform(_documented, argnums=1)
    assert g.__name__ == "_documented"
    assert g.__doc__.startswith(doc)
    seen = g
    while seen is not _documented:
        seen = seen.__wrapped__
