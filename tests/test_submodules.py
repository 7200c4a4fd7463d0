"""The small top-level submodules JAX has and morphax mirrors: `morphax.dlpack` (arrays in and
out through DLPack, checked against the NumPy source), `morphax.ref` (the functional forms of a
ref's reads and writes, checked against the indexing they stand for and JAX's values), and
`morphax.version` (morphax's own version; `morphax.compat` keeps reporting JAX's API version).
custom_batching has its own file, tests/transforms/test_custom_vmap.py."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import dlpack, ref, version
from morphax._src.version import version_as_tuple

# ----------------------------------------------------------------------------------- dlpack


@pytest.mark.parametrize(
    "src, dtype32, dtype64",
    [
        (np.arange(6, dtype=np.float32).reshape(2, 3), np.float32, np.float32),
        (np.linspace(0, 1, 5), np.float32, np.float64),
        (np.arange(5, dtype=np.int64) - 2, np.int32, np.int64),
        (np.array([1 + 2j, -3j], np.complex64), np.complex64, np.complex64),
        (np.array([True, False]), np.bool_, np.bool_),
        (np.array(2.5, np.float16), np.float16, np.float16),
    ],
)
def test_from_dlpack_round_trip_from_numpy(src, dtype32, dtype64):
    out = dlpack.from_dlpack(src)
    assert isinstance(out, morphax.Array) and out.shape == src.shape and out.dtype == dtype32
    np.testing.assert_array_equal(np.asarray(out), src.astype(dtype32))
    with morphax.enable_x64():
        out64 = dlpack.from_dlpack(src)
        assert out64.dtype == dtype64
        np.testing.assert_array_equal(np.asarray(out64), src)
    # and back out: NumPy reads the morphax array through its __dlpack__
    back = np.from_dlpack(out)
    assert back.dtype == dtype32
    np.testing.assert_array_equal(back, src.astype(dtype32))


def test_from_dlpack_options_and_sharing_with_jnp():
    src = np.arange(8.0, dtype=np.float32)
    assert jnp.from_dlpack is not dlpack.from_dlpack  # jnp's is positional-only with keywords
    np.testing.assert_array_equal(jnp.from_dlpack(src, copy=True), src)
    np.testing.assert_array_equal(dlpack.from_dlpack(src, morphax.devices()[0], False), src)
    out = dlpack.from_dlpack(src[::2])  # NB: strided exports are read (JAX refuses them)
    np.testing.assert_array_equal(out, src[::2])
    # the result does not change with the source (morphax copies)
    src[0] = 100.0
    assert float(out[0]) == 0.0
    # a morphax array through the protocol, and inside jit (a constant)
    x = jnp.arange(3)
    np.testing.assert_array_equal(dlpack.from_dlpack(x), [0, 1, 2])
    np.testing.assert_array_equal(morphax.jit(lambda: dlpack.from_dlpack(np.ones(2)) * 2)(), [2.0, 2.0])
    assert x.__dlpack_device__() == (1, 0)


def test_from_dlpack_torch_tensor():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    np.testing.assert_array_equal(dlpack.from_dlpack(t), np.arange(6, dtype=np.float32).reshape(2, 3))
    back = torch.from_dlpack(jnp.ones(3))
    assert back.tolist() == [1.0, 1.0, 1.0]


def test_from_dlpack_bad_input():
    with pytest.raises(TypeError, match="must have __dlpack__ and __dlpack_device__"):
        dlpack.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError, match="must have __dlpack__"):
        dlpack.from_dlpack(np.float32(1.0))  # NumPy scalars do not export DLPack (as in JAX)
    with pytest.raises(BufferError):
        dlpack.from_dlpack(np.array(["a"]))
    with pytest.raises(TypeError, match="copy must be None, True or False"):
        dlpack.from_dlpack(np.ones(2), copy="yes")


def test_is_supported_dtype():
    # JAX's answers.
    for dt in (np.int8, np.uint64, np.float16, "bfloat16", np.float32, "float64", np.complex128, bool):
        assert dlpack.is_supported_dtype(dt), dt
    for dt in (object, "float8_e4m3fn", "int4", np.str_, "datetime64[s]"):
        assert not dlpack.is_supported_dtype(dt), dt
    with pytest.raises(TypeError, match="Expected a string or dtype-like object"):
        dlpack.is_supported_dtype(None)
    with pytest.raises(TypeError):
        dlpack.is_supported_dtype("not_a_dtype")


# -------------------------------------------------------------------------------------- ref


def test_ref_names_are_jaxs():
    assert sorted(ref.__all__) == sorted(
        [
            "AbstractRef",
            "Ref",
            "addupdate",
            "empty_ref",
            "free_ref",
            "freeze",
            "get",
            "new_ref",
            "set",
            "swap",
        ]
    )
    assert ref.new_ref is morphax.new_ref and ref.Ref is morphax.Ref
    r = ref.new_ref(jnp.zeros(2))
    assert isinstance(r, ref.Ref) and isinstance(morphax.typeof(r), ref.AbstractRef)


def test_ref_functions_match_indexing():
    r = ref.new_ref(jnp.arange(4.0))
    assert float(ref.get(r, 1)) == 1.0
    assert float(ref.swap(r, 1, 5.0)) == 1.0  # swap returns the old value
    assert ref.set(r, (), jnp.ones(4)) is None
    assert ref.addupdate(r, 2, 3.0) is None
    np.testing.assert_array_equal(r[...], [1.0, 1.0, 4.0, 1.0])  # JAX's values
    np.testing.assert_array_equal(ref.get(r), r[...])
    np.testing.assert_array_equal(ref.get(r, (slice(1, 3),)), [1.0, 4.0])
    ref.set(r, None, jnp.arange(4.0))
    ref.addupdate(r, jnp.array([0, 3]), jnp.array([10.0, 20.0]))
    np.testing.assert_array_equal(ref.freeze(r), [10.0, 1.0, 2.0, 23.0])
    e = ref.empty_ref(morphax.ShapeDtypeStruct((2,), jnp.int32))
    ref.set(e, ..., jnp.array([4, 5]))
    np.testing.assert_array_equal(ref.get(e), [4, 5])
    ref.free_ref(e)
    with pytest.raises(Exception, match="invalidated"):
        ref.get(e)


def _update(a):
    r = ref.new_ref(a)
    ref.addupdate(r, None, 2 * a)
    old = ref.swap(r, ..., 10.0 * a)
    return ref.freeze(r), old


def test_ref_functions_under_jit_vmap_and_grad():
    a = jnp.arange(3.0)
    for fn in (_update, morphax.jit(_update), morphax.vmap(_update)):
        new, old = fn(a)
        np.testing.assert_allclose(new, [0.0, 10.0, 20.0])
        np.testing.assert_allclose(old, [0.0, 3.0, 6.0])
    np.testing.assert_allclose(morphax.grad(lambda a: _update(a)[0].sum())(a), [10.0, 10.0, 10.0])
    text = str(morphax.make_jaxpr(_update)(a))
    assert "b[...] += c" in text and "e:f32[3], b[...] <- b[...], d" in text


def test_ref_functions_bad_input():
    with pytest.raises(TypeError, match="ref_get: expected a Ref"):
        ref.get(jnp.ones(3))
    with pytest.raises(TypeError, match="ref_set: expected a Ref"):
        ref.set(np.ones(3), None, 1.0)
    with pytest.raises(IndexError, match="ref_swap: too many indices"):
        ref.swap(ref.new_ref(jnp.ones(3)), (0, 1), 1.0)


# ---------------------------------------------------------------------------------- version


def test_version_is_morphaxs_own():
    assert version.__version__ == morphax.__version__
    assert version.__version_info__ == tuple(int(p) for p in morphax.__version__.split("."))
    assert all(type(p) is int for p in version.__version_info__)
    assert version_as_tuple("0.2.0.dev20260101+abc") == (0, 2, 0)
    assert morphax.__version_info__ == version.__version_info__  # as jax.__version_info__
    assert version.JAX_API_VERSION == "0.10.2" and version.JAX_API_VERSION_INFO == (0, 10, 2)


def test_compat_still_reports_the_jax_api_version():
    from morphax import compat

    was_installed = compat.is_installed()
    saved = {k: v for k, v in sys.modules.items() if k == "jax" or k.startswith("jax.")}
    compat.install()
    try:
        import jax
        import jax.custom_batching
        import jax.dlpack
        import jax.ref
        import jax.version

        assert jax.__version__ == "0.10.2" and jax.version.__version_info__ == (0, 10, 2)
        assert jax.dlpack.from_dlpack is dlpack.from_dlpack and jax.ref.swap is ref.swap
        assert jax.custom_batching.custom_vmap is morphax.custom_batching.custom_vmap
    finally:
        if not was_installed:
            compat.uninstall()
        sys.modules.update(saved)
