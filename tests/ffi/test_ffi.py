"""morphax.ffi: a small C library built with the system compiler against morphax_ffi.h
(tests/ffi/targets.c), called through ffi_call eagerly, under jit on the c, numpy and xla (XLA's
CPU plugin) backends, under vmap with each vmap_method (checked against a Python loop), and under
grad through a custom_vjp; attributes, several results, aliasing, side effects, and errors."""

from __future__ import annotations

import ctypes
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import ffi
from morphax._src.compiler.backends import get_backend

HERE = pathlib.Path(__file__).resolve().parent
BACKENDS = ["c", "numpy"] + (["xla"] if get_backend("xla").available() else [])


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("ffi") / "libtargets.so"
    subprocess.run(
        [cc, "-O2", "-shared", "-fPIC", "-I", ffi.include_dir(), str(HERE / "targets.c"), "-o", str(out)],
        check=True,
        capture_output=True,
    )
    library = ctypes.CDLL(str(out))
    for name in ("scale", "matvec", "sum_and_product", "add_one_in_place", "always_fails", "count_calls"):
        ffi.register_ffi_target(name, ffi.pycapsule(getattr(library, name)))
    return library


def _scale(x, factor, vmap_method=None):
    return ffi.ffi_call("scale", morphax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method=vmap_method)(
        x, factor=factor
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_eager_and_jit(lib, backend):
    x = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    np.testing.assert_allclose(_scale(x, 2.5), np.asarray(x) * 2.5)
    f = morphax.jit(lambda x: jnp.sin(_scale(x * 2, 0.5)) + 1, backend=backend)
    np.testing.assert_allclose(f(x), np.sin(np.asarray(x)) + 1, rtol=1e-5, atol=1e-6)
    assert "ffi_call" in str(morphax.make_jaxpr(lambda x: _scale(x, 3.0))(x))


def test_several_results_and_array_attribute(lib):
    x, y = jnp.arange(5, dtype=jnp.int32), jnp.full(5, 3, jnp.int32)
    call = ffi.ffi_call("sum_and_product", [morphax.ShapeDtypeStruct((5,), jnp.int32)] * 2)
    total, product = morphax.jit(lambda a, b: call(a, b, offset=np.array([10], np.int32)))(x, y)
    np.testing.assert_array_equal(total, np.arange(5) + 13)
    np.testing.assert_array_equal(product, np.arange(5) * 3)
    as_tuple = ffi.ffi_call("sum_and_product", (morphax.ShapeDtypeStruct((5,), jnp.int32),) * 2)(x, y)
    assert isinstance(as_tuple, tuple) and len(as_tuple) == 2


def test_input_output_aliases(lib):
    x = jnp.arange(4.0, dtype=jnp.float32)
    call = ffi.ffi_call(
        "add_one_in_place", morphax.ShapeDtypeStruct((4,), jnp.float32), input_output_aliases={0: 0}
    )
    np.testing.assert_allclose(morphax.jit(call)(x), np.arange(4.0) + 1)
    np.testing.assert_allclose(x, np.arange(4.0))  # the argument itself is unchanged
    with pytest.raises(ValueError, match="different abstract value"):
        ffi.ffi_call(
            "add_one_in_place", morphax.ShapeDtypeStruct((3,), jnp.float32), input_output_aliases={0: 0}
        )(x)


@pytest.mark.parametrize("vmap_method", ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all"])
def test_vmap_methods_against_a_loop(lib, vmap_method):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 3, 5))
    v = rng.normal(size=5)
    with morphax.enable_x64():
        call = ffi.ffi_call("matvec", morphax.ShapeDtypeStruct((3,), jnp.float64), vmap_method=vmap_method)
        got = morphax.jit(morphax.vmap(call, in_axes=(0, None)))(jnp.asarray(a), jnp.asarray(v))
        want = np.stack([np.asarray(call(jnp.asarray(a[i]), jnp.asarray(v))) for i in range(4)])
        np.testing.assert_allclose(got, want, rtol=1e-12)
        np.testing.assert_allclose(got, a @ v, rtol=1e-12)
        # Both arguments batched.
        vs = rng.normal(size=(4, 5))
        got = morphax.vmap(call)(jnp.asarray(a), jnp.asarray(vs))
        np.testing.assert_allclose(got, np.einsum("bij,bj->bi", a, vs), rtol=1e-12)


def test_vmap_without_a_method_raises(lib):
    with pytest.raises(NotImplementedError, match="vmap_method"):
        morphax.vmap(lambda x: _scale(x, 2.0))(jnp.ones((3, 2)))
    with pytest.raises(ValueError, match="vmap_method must be"):
        ffi.ffi_call("scale", morphax.ShapeDtypeStruct((2,), jnp.float32), vmap_method="parallel")


def test_grad_through_custom_vjp(lib):
    @morphax.custom_vjp
    def scaled(x):
        return _scale(x, 3.0, "expand_dims")

    scaled.defvjp(lambda x: (scaled(x), None), lambda _, g: (_scale(g, 3.0, "expand_dims"),))
    x = jnp.linspace(0.0, 1.0, 5, dtype=jnp.float32)
    g = morphax.jit(morphax.grad(lambda x: jnp.sum(jnp.sin(scaled(x)))))(x)
    np.testing.assert_allclose(g, 3.0 * np.cos(3.0 * np.asarray(x)), rtol=1e-5)
    with pytest.raises(ValueError, match="cannot be differentiated"):
        morphax.grad(lambda x: jnp.sum(_scale(x, 2.0)))(x)


def test_side_effects_run_even_when_unused(lib):
    count = ffi.ffi_call("count_calls", morphax.ShapeDtypeStruct((), jnp.int32), has_side_effect=True)

    @morphax.jit
    def f(x):
        count()  # result unused: kept because of has_side_effect
        return x + 1

    before = lib.read_count()
    f(1.0)
    f(2.0)
    assert lib.read_count() == before + 2


def test_errors(lib):
    fails = ffi.ffi_call("always_fails", morphax.ShapeDtypeStruct((), jnp.float32))
    with pytest.raises(morphax.errors.JaxRuntimeError, match="always_fails.*disk on fire"):
        morphax.jit(lambda: fails(what="disk on fire"))()
    with pytest.raises(morphax.errors.JaxRuntimeError, match="no FFI target named 'nowhere'"):
        ffi.ffi_call("nowhere", morphax.ShapeDtypeStruct((), jnp.float32))()
    with pytest.raises(TypeError, match="Non-hashable keyword argument"):
        _scale(jnp.ones(2), [1.0])
    with pytest.raises(TypeError, match="PyCapsule"):
        ffi.register_ffi_target("bad", "not a function")
    with pytest.raises(NotImplementedError, match="row-major"):
        ffi.ffi_call("scale", morphax.ShapeDtypeStruct((2, 2), jnp.float32), input_layouts=[(0, 1)])


def test_include_dir_has_the_header():
    assert (pathlib.Path(ffi.include_dir()) / "morphax_ffi.h").is_file()


@pytest.mark.skipif(not get_backend("c").available(), reason="no working C compiler")
def test_the_c_backend_calls_targets_from_its_generated_code(lib):
    x = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    f = morphax.jit(lambda x: jnp.sin(_scale(x * 2, 0.5)) + 1, backend="c")
    compiled = f.lower(x).compile()
    assert compiled.num_segments == 1  # no host step: the target is called from the segment
    assert 'mx_ffi_run(0, "scale"' in compiled.as_text()
    # Inside a loop body, aliased: the loop runs natively and calls the target each iteration.
    step = ffi.ffi_call(
        "add_one_in_place", morphax.ShapeDtypeStruct((4,), jnp.float32), input_output_aliases={0: 0}
    )
    loop = morphax.jit(lambda x: morphax.lax.fori_loop(0, 5, lambda i, c: step(c * 2), x), backend="c")
    assert loop.lower(jnp.zeros(4)).compile().num_segments == 1
    want = np.zeros(4)
    for _ in range(5):
        want = want * 2 + 1
    np.testing.assert_allclose(loop(jnp.zeros(4)), want)
    # A failure inside the loop stops it and raises the target's message.
    fails = ffi.ffi_call("always_fails", morphax.ShapeDtypeStruct((), jnp.float32))
    stop = morphax.jit(
        lambda: morphax.lax.while_loop(lambda c: c < 10.0, lambda c: c + fails(what="in the loop"), 0.0),
        backend="c",
    )
    with pytest.raises(morphax.errors.JaxRuntimeError, match="always_fails.*in the loop"):
        stop()
