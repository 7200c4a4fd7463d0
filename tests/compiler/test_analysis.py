"""Compiled.cost_analysis() and memory_analysis() (compiler/analysis.py): XLA's counting
conventions, checked on programs whose counts follow from their shapes, and on one program whose
numbers JAX 0.10.2 reported (recorded here: flops 215, transcendentals 24, bytes accessed 372;
arguments 176, output 4, temporaries 96 bytes)."""

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.compiler.backends import get_backend

NEEDS_C = pytest.mark.skipif(not get_backend("c").available(), reason="no working C compiler")


def _compiled(f, *args, **jit_kwargs):
    return morphax.jit(f, **jit_kwargs).lower(*args).compile()


@pytest.mark.parametrize("backend", [pytest.param("c", marks=NEEDS_C), "numpy"])
def test_the_numbers_jax_reports(backend):
    x, w = np.ones((8, 4), np.float32), np.ones((4, 3), np.float32)
    compiled = _compiled(lambda x, w: jnp.tanh(x @ w).sum(), x, w, backend=backend)
    cost = compiled.cost_analysis()
    assert cost["flops"] == 215.0  # 2*8*3*4 for the matmul, 23 adds for the sum
    assert cost["transcendentals"] == 24.0  # one tanh per element
    memory = compiled.memory_analysis()
    assert memory.argument_size_in_bytes == 176
    assert memory.output_size_in_bytes == 4
    temp = 96 if backend == "c" else 2 * 96  # unfused, tanh's result is a buffer too
    assert memory.temp_size_in_bytes == temp  # the matmul's result, alive until read
    assert memory.peak_memory_in_bytes == 176 + 4 + temp
    if backend == "c":
        assert cost["bytes accessed"] == 372.0  # matmul 128 + 96, fused tanh+sum 96 + 4 (+48)
        assert memory.generated_code_size_in_bytes > 0


@pytest.mark.parametrize("m,k,n,batch", [(3, 5, 7, ()), (16, 8, 4, (2,)), (1, 9, 1, (3, 2))])
def test_matmul_flops_are_two_per_multiply_add(m, k, n, batch):
    a = np.ones((*batch, m, k), np.float32)
    b = np.ones((*batch, k, n), np.float32)
    cost = _compiled(jnp.matmul, a, b).cost_analysis()
    assert cost["flops"] == 2 * int(np.prod(batch, dtype=np.int64)) * m * k * n
    assert cost["transcendentals"] == 0


def test_elementwise_and_reduction_counts():
    x = np.ones((6, 5), np.float32)

    def f(x):
        y = jnp.exp(x) * 2.0 + 1.0  # 30 transcendentals, 60 flops
        return jnp.max(y, axis=1), jnp.sum(jnp.sin(y))  # 24 + 29 flops, 30 transcendentals

    cost = _compiled(f, x).cost_analysis()
    assert cost["transcendentals"] == 60
    assert cost["flops"] == 60 + (30 - 6) + (30 - 1)


def test_nested_calls_count_their_bodies_and_loops_count_once():
    x = np.ones((4,), np.float32)
    inner = morphax.jit(lambda v: v * 3.0)
    assert _compiled(lambda v: inner(v) + 1.0, x).cost_analysis()["flops"] == 8

    def loop(v):
        return lax.fori_loop(0, 10, lambda i, c: c * 2.0, v)

    # The body's 4 multiplies once (XLA's convention for loops), plus the counter's bookkeeping.
    flops = _compiled(loop, x).cost_analysis()["flops"]
    assert 4 <= flops <= 8


@NEEDS_C
def test_temporaries_peak_when_most_intermediates_are_alive():
    x = np.ones((100,), np.float32)
    w = np.ones((100, 100), np.float32)

    def f(x, w):
        a = x @ w  # 400 bytes, alive until the last line
        b = a @ w  # 400 bytes
        return jnp.tanh(a) + jnp.tanh(b)

    memory = _compiled(f, x, w, backend="c").memory_analysis()
    assert memory.temp_size_in_bytes == 800
    assert memory.output_size_in_bytes == 400
    assert memory.argument_size_in_bytes == 400 + 40000


@NEEDS_C
def test_donated_inputs_that_hold_outputs_count_as_aliased():
    x = np.ones((10,), np.float32)
    memory = _compiled(lambda x: jnp.exp(x) + 1.0, x, backend="c", donate_argnums=0).memory_analysis()
    undonated = _compiled(lambda x: jnp.exp(x) + 1.0, x, backend="c").memory_analysis()
    assert undonated.alias_size_in_bytes == 0
    assert memory.alias_size_in_bytes in (0, 40)  # 40 when the plan reuses x for the output


# (window_strides, padding, lhs_dilation, rhs_dilation, feature_group_count), lhs and rhs shapes,
# and the flops JAX 0.10.2 reported: taps over padding and lhs-dilation holes do not count.
_CONVS = [
    (((1, 1), "VALID", (1, 1), (1, 1), 1), (2, 3, 8, 8), (4, 3, 3, 3), 15552),
    (((1, 1), "SAME", (1, 1), (1, 1), 1), (2, 3, 8, 8), (4, 3, 3, 3), 23232),
    (((2, 2), "SAME", (1, 1), (1, 1), 3), (2, 6, 8, 8), (6, 2, 3, 3), 5808),
    (((1, 1), ((2, 2), (1, 1)), (2, 2), (1, 1), 1), (2, 3, 7, 6), (4, 3, 3, 2), 12096),
    (((1, 2), ((0, 0), (3, 1)), (1, 1), (2, 1), 1), (2, 3, 7, 6), (4, 3, 3, 2), 2592),
    (((1, 1), ((1, 0), (0, 1)), (3, 1), (1, 2), 1), (2, 3, 7, 6), (4, 3, 3, 2), 7776),
]


@pytest.mark.parametrize("config,lhs_shape,rhs_shape,flops", _CONVS)
def test_convolution_flops_are_jaxs(config, lhs_shape, rhs_shape, flops):
    strides, padding, lhs_dil, rhs_dil, groups = config

    def conv(x, w):
        return lax.conv_general_dilated(
            x, w, strides, padding, lhs_dilation=lhs_dil, rhs_dilation=rhs_dil, feature_group_count=groups
        )

    x, w = np.ones(lhs_shape, np.float32), np.ones(rhs_shape, np.float32)
    assert _compiled(conv, x, w).cost_analysis()["flops"] == flops
