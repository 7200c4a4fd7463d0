"""The StableHLO text the xla backend writes, checked without a plugin (`compiler_ir("stablehlo")`
lowers for any backend): the module's layout, exact constants, names that never collide inside
regions, and the attributes that change results on an accelerator (matmul precision)."""

import re

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax


def _module(f, *args) -> str:
    return str(morphax.jit(f).lower(*args).compiler_ir("stablehlo"))


def test_precision_is_written_as_jax_writes_it():
    a = np.ones((4, 4), np.float32)
    highest = _module(lambda p, q: jnp.dot(p, q, precision=lax.Precision.HIGHEST), a, a)
    assert "precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]" in highest
    assert "precision_config" not in _module(lambda p, q: p @ q, a, a)  # DEFAULT: the plugin's choice
    mixed = _module(lambda p, q: jnp.dot(p, q, precision=(lax.Precision.HIGH, lax.Precision.DEFAULT)), a, a)
    assert "[#stablehlo<precision HIGH>, #stablehlo<precision DEFAULT>]" in mixed
    conv = _module(
        lambda x, k: lax.conv_general_dilated(
            x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), precision=lax.Precision.HIGHEST
        ),
        np.ones((1, 4, 4, 2), np.float32),
        np.ones((3, 3, 2, 2), np.float32),
    )
    assert "precision_config = [#stablehlo<precision HIGHEST>" in conv


def test_constants_keep_every_bit():
    special = np.array([np.nan, -0.0, np.inf, 1e-45, 3.14159], np.float32)
    text = _module(lambda x: x + special, np.zeros(5, np.float32))
    want = special.view(np.uint8).tobytes().hex().upper()
    assert f'dense<"0x{want}"> : tensor<5xf32>' in text


def test_region_arguments_never_shadow_the_function_arguments():
    def f(x, y):
        _, out = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * y), (0, x))
        return lax.cond(x[0] > 0, lambda v: v + y, lambda v: v - y, out)

    text = _module(f, np.ones(3, np.float32), np.ones(3, np.float32))
    block_args = re.findall(r"\^bb0\(([^)]*)\)", text)
    assert block_args, text
    for group in block_args:
        assert "%arg" not in group, group  # %arg0, %arg1 are main's
    defined = re.findall(r"^\s*(%[\w#:]+) =", text, flags=re.M)
    assert len(defined) == len(set(defined))


def test_module_layout():
    text = _module(lambda x: (jnp.sin(x), x * 2), np.ones(2, np.float32))
    first, second = text.splitlines()[:2]
    assert (
        first
        == "module @jit__lambda_ attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {"
    )
    assert second.startswith("  func.func public @main(%arg0: tensor<2xf32>) -> (")
    assert '{jax.result_info = "result[0]"}' in second and '{jax.result_info = "result[1]"}' in second


def test_fma_for_a_tpu_is_jaxs_multiply_and_add_without_float64():
    """A TPU has no float64: there fma (which the samplers bind where JAX writes u * (hi - lo) +
    lo) lowers to that multiply and add, and random numbers are JAX's on the chip (measured on a
    TPU v5e: random.normal of 2**20 bit-identical); elsewhere it is rounded once, via float64."""
    from morphax._src.compiler.backends.xla.lowering import lower_module

    closed = morphax.make_jaxpr(lambda k: morphax.random.uniform(k, (4,), minval=-3.0, maxval=5.0))(
        morphax.random.PRNGKey(0)
    )
    tpu = lower_module(closed, "f", platform="tpu")
    assert "f64" not in tpu and '"stablehlo.multiply"' in tpu
    assert "f64" in lower_module(closed, "f")
