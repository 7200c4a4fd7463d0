"""The xla backend end to end: programs lowered to StableHLO and run by a PJRT plugin (XLA's CPU
plugin, `pip install --no-deps lammps-jax-pjrt-cpu`) give the results of the c and numpy
backends, under grad, vmap, jvp and control flow; the module text is laid out as JAX prints it;
a primitive without a lowering is an error that names it. Skipped without a plugin."""

import threading

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.compiler import compile as compile_mod
from morphax._src.compiler.backends import get_backend

pytestmark = pytest.mark.skipif(
    not get_backend("xla").available(), reason="no PJRT plugin (pip install --no-deps lammps-jax-pjrt-cpu)"
)


def _same(f, *args, backend="numpy", rtol=2e-5, atol=1e-6):
    want = morphax.jit(f, backend=backend)(*args)
    got = morphax.jit(f, backend="xla")(*args)
    want_leaves, want_tree = morphax.tree_util.tree_flatten(want)
    got_leaves, got_tree = morphax.tree_util.tree_flatten(got)
    assert want_tree == got_tree
    for g, w in zip(got_leaves, want_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return got


def _mlp_params(rng, sizes=(8, 16, 4)):
    return [
        (rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
        for m, n in zip(sizes[:-1], sizes[1:])
    ]


def _mlp_loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    logp = logits - morphax.nn.logsumexp(logits, axis=1, keepdims=True)
    return -jnp.mean(jnp.sum(logp * y, axis=1))


def test_mlp_training_steps_match_the_c_backend():
    rng = np.random.default_rng(0)
    params = _mlp_params(rng)
    x = rng.normal(size=(32, 8)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 32)]

    def step(params, x, y):
        loss, grads = morphax.value_and_grad(_mlp_loss)(params, x, y)
        return loss, morphax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

    p_xla = p_c = params
    for _ in range(5):
        loss_c, p_c = morphax.jit(step, backend="c")(p_c, x, y)
        loss_x, p_xla = morphax.jit(step, backend="xla")(p_xla, x, y)
        np.testing.assert_allclose(float(loss_x), float(loss_c), rtol=1e-5)
    for a, b in zip(morphax.tree_util.tree_leaves(p_xla), morphax.tree_util.tree_leaves(p_c)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)


def test_control_flow_under_transformations():
    def program(x):
        y = lax.cond(x[0] > 0, lambda v: jnp.sin(v) * 2, lambda v: jnp.cos(v) - 1, x)
        _, z = lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 0.9 + 0.1), (0, y))
        carry, ys = lax.scan(lambda c, xi: (c * 0.5 + xi, c * xi), jnp.zeros(()), z)
        return jnp.sum(ys) + carry

    def no_while(x):  # reverse mode: cond and scan (a while loop has no transpose, as in JAX)
        y = lax.cond(x[0] > 0, lambda v: jnp.sin(v) * 2, lambda v: jnp.cos(v) - 1, x)
        carry, ys = lax.scan(lambda c, xi: (c * 0.5 + xi, c * xi), jnp.zeros(()), y)
        return jnp.sum(ys) + carry

    x = np.linspace(-1, 1, 5).astype(np.float32)
    _same(program, x)
    _same(morphax.grad(lambda v: no_while(v[0] * v) ** 2), x)
    _same(lambda v: morphax.jvp(program, (v,), (jnp.ones_like(v),)), x)
    _same(morphax.vmap(program), np.stack([x, -x, x * 2]))  # a batched predicate: select


def test_reverse_scan_and_fori_loop():
    def program(x):
        _, ys = lax.scan(lambda c, xi: (c + xi, c), 0.0, x, reverse=True)
        return ys, lax.fori_loop(0, 7, lambda i, c: c * 1.1 + i, x)

    _same(program, np.arange(6, dtype=np.float32))


def test_integer_and_bool_programs_are_exact():
    def program(i, b):
        j = (i * 7 + 3) // 2 - jnp.abs(i) % 5
        return jnp.where(b, j, -j), jnp.argmax(j), jnp.sum(b), (i << 3) ^ (i >> 1)

    i = np.array([-9, -2, 0, 3, 11, 2**30], np.int32)
    b = np.array([True, False, True, True, False, False])
    _same(program, i, b)


def test_lowered_text_is_laid_out_as_jax_prints_it():
    def f(x, y):
        return {"s": jnp.sin(x) * y, "t": (x + 1, y)}

    x = np.ones(3, np.float32)
    text = morphax.jit(f, backend="xla").lower(x, x).as_text()
    lines = text.splitlines()
    assert (
        lines[0] == "module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {"
    )
    assert lines[1].startswith("  func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>) -> (")
    for name in ("result['s']", "result['t'][0]", "result['t'][1]"):
        assert f'{{jax.result_info = "{name}"}}' in lines[1]
    assert '"stablehlo.sine"(%arg0)' in text
    # compiler_ir("stablehlo") gives the module whatever the backend.
    module = morphax.jit(f, backend="c").lower(x, x).compiler_ir("stablehlo")
    assert str(module).startswith("module @jit_f")
    with pytest.raises(ValueError, match="dialect"):
        morphax.jit(f, backend="xla").lower(x, x).as_text(dialect="hlo")


def test_one_compile_per_signature():
    f = morphax.jit(lambda x: jnp.exp(x) - x, backend="xla")
    before = compile_mod.counters.compiles
    for _ in range(3):
        f(np.ones(4, np.float32))
    assert compile_mod.counters.compiles == before + 1
    f(np.ones(5, np.float32))
    assert compile_mod.counters.compiles == before + 2


def test_equations_without_a_lowering_run_on_the_host_between_device_programs():
    from morphax.extend.core import Primitive

    mystery = Primitive("mystery_op")
    mystery.def_impl(lambda x: np.asarray(x) * 2)
    mystery.def_abstract_eval(lambda x: x)
    seen = []

    def f(a):
        q, r = jnp.linalg.qr(a @ a.T + 1.0)  # qr has no lowering: a host step
        w = jnp.linalg.eigvalsh(a + a.T)
        morphax.debug.callback(lambda t: seen.append(float(t)), jnp.trace(a))
        return mystery.bind(jnp.sum(jnp.abs(r)) + jnp.sum(q * q)) + 1.0, w

    a = np.random.default_rng(3).normal(size=(4, 4)).astype(np.float32)
    got = _same(f, a, rtol=1e-5, atol=1e-5)
    assert len(seen) == 2 and np.allclose(seen, np.trace(a), rtol=1e-6)  # numpy, then xla
    compiled = morphax.jit(f, backend="xla").lower(a).compile()
    assert compiled.num_kernels > 1  # several device programs, host steps between them
    np.testing.assert_allclose(np.asarray(got[1]), np.linalg.eigvalsh(a + a.T), rtol=1e-4, atol=1e-5)


def test_an_unlowerable_equation_inside_a_loop_runs_the_loop_on_the_host():
    def f(xs):
        def body(c, x):
            q, _ = jnp.linalg.qr(x)
            return c + jnp.sum(jnp.abs(q)), jnp.trace(q)

        return lax.scan(body, 0.0, xs)

    xs = np.random.default_rng(4).normal(size=(3, 4, 4)).astype(np.float32)
    _same(f, xs, rtol=1e-5, atol=1e-5)


def test_eight_threads_call_one_program():
    f = morphax.jit(lambda x, k: jnp.tanh(x * k).sum(), backend="xla")
    x = np.linspace(-2, 2, 101).astype(np.float32)
    f(x, np.float32(1))  # compiled once, before the threads
    errors, results = [], {}

    def work(k):
        try:
            for _ in range(20):
                results[k] = float(f(x, np.float32(k)))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(8):
        np.testing.assert_allclose(results[k], np.tanh(x * k).sum(), rtol=1e-5, atol=1e-5)


def test_cnn_training_step_matches_the_c_backend():
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(params, x, y):
        k1, k2, w = params
        h = jnp.maximum(lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn), 0.0)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")  # max pool
        h = jnp.maximum(lax.conv_general_dilated(h, k2, (2, 2), "SAME", dimension_numbers=dn), 0.0)
        logits = h.reshape(h.shape[0], -1) @ w
        return -jnp.mean(jnp.sum(y * morphax.nn.log_softmax(logits), axis=-1))

    def step(params, x, y):
        value, grads = morphax.value_and_grad(loss)(params, x, y)
        return value, [p - 0.05 * g for p, g in zip(params, grads)]

    rng = np.random.default_rng(1)
    params = [
        (rng.standard_normal((3, 3, 1, 4)) * 0.3).astype(np.float32),
        (rng.standard_normal((3, 3, 4, 8)) * 0.2).astype(np.float32),
        (rng.standard_normal((4 * 4 * 8, 10)) * 0.05).astype(np.float32),
    ]
    x = rng.standard_normal((8, 16, 16, 1)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 8)]
    p_c = p_x = params
    for _ in range(3):
        loss_c, p_c = morphax.jit(step, backend="c")(p_c, x, y)
        loss_x, p_x = morphax.jit(step, backend="xla")(p_x, x, y)
        np.testing.assert_allclose(float(loss_x), float(loss_c), rtol=1e-5)
    for a, b in zip(p_x, p_c):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def test_random_numbers_are_bit_identical():
    def sample(key):
        k1, k2 = morphax.random.split(key)
        return (
            morphax.random.normal(k1, (64,)),
            morphax.random.uniform(k2, (3, 5)),
            morphax.random.randint(morphax.random.fold_in(key, 7), (10,), -5, 100),
            morphax.random.permutation(k2, 12),
        )

    key = morphax.random.PRNGKey(42)
    want = morphax.jit(sample, backend="numpy")(key)
    got = morphax.jit(sample, backend="xla")(key)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_transformer_block_value_and_grad_matches_the_c_backend():
    batch, seq, width, heads = 2, 8, 16, 2

    def layer_norm(x):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        return (x - mean) / jnp.sqrt(jnp.mean((x - mean) ** 2, axis=-1, keepdims=True) + 1e-5)

    def loss(params, x):
        wq, wk, wv, wo, w1, w2 = params
        h = layer_norm(x)

        def split(t):
            return t.reshape(batch, seq, heads, width // heads).transpose(0, 2, 1, 3)

        q, k, v = split(h @ wq), split(h @ wk), split(h @ wv)
        scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.float32(np.sqrt(width // heads))
        attn = jnp.einsum("bhqk,bhkd->bhqd", morphax.nn.softmax(scores, axis=-1), v)
        x = x + attn.transpose(0, 2, 1, 3).reshape(batch, seq, width) @ wo
        return jnp.mean((x + morphax.nn.gelu(layer_norm(x) @ w1) @ w2) ** 2)

    rng = np.random.default_rng(5)
    shapes = [(width, width)] * 4 + [(width, 4 * width), (4 * width, width)]
    params = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32) for s in shapes]
    x = rng.standard_normal((batch, seq, width)).astype(np.float32)
    _same(morphax.value_and_grad(loss), params, x, backend="c", rtol=1e-4, atol=1e-5)


def test_cost_analysis_counts_as_the_c_backend_and_small_calls_run_inline():
    """The xla backend's programs carry the same flop counts as the c backend's (XLA fuses, so
    bytes accessed are the inputs and outputs), and a small program runs on the calling thread
    rather than paying a handoff to the stream's worker."""
    from morphax._src.runtime import dispatch

    x = np.ones((4, 8), np.float32)
    w = np.ones((8, 3), np.float32)

    def f(x, w):
        return jnp.tanh(x @ w) + 1.0

    xla = morphax.jit(f, backend="xla").lower(x, w).compile()
    c = morphax.jit(f, backend="c").lower(x, w).compile()
    got, want = xla.cost_analysis(), c.cost_analysis()
    assert got["flops"] == want["flops"] == 2 * 4 * 8 * 3 + 4 * 3
    assert got["transcendentals"] == want["transcendentals"] == 12
    assert got["bytes accessed"] == (4 * 8 + 8 * 3 + 4 * 3) * 4
    assert xla.memory_analysis().argument_size_in_bytes == (4 * 8 + 8 * 3) * 4
    assert dispatch.runs_inline(xla._executable)


def test_boolean_constants_are_written_nested_like_their_shape():
    """A flat list of booleans for a tensor of rank 2 parses on XLA's CPU plugin but not on a
    TPU's ("inferred shape of elements literal ([n]) does not match type"): the literal nests."""
    from morphax._src.compiler.backends.xla.mlir_text import dense

    mask = np.tril(np.ones((2, 3), bool))
    assert dense(mask) == "dense<[[true, false, false], [true, true, false]]> : tensor<2x3xi1>"
    assert dense(np.zeros((2, 2), bool)) == "dense<false> : tensor<2x2xi1>"
    assert dense(np.array([True, False])) == "dense<[true, false]> : tensor<2xi1>"


def test_a_scan_of_length_zero_returns_its_initial_carry():
    """The body never runs: its slices of the empty xs are not even written (they would not
    type-check), and the stacked outputs are empty."""

    def f(c, xs):
        return morphax.lax.scan(lambda c, x: (c + x, c * x), c, xs)

    carry, ys = morphax.jit(f, backend="xla")(np.float32(3.0), np.zeros((0,), np.float32))
    assert float(carry) == 3.0 and np.asarray(ys).shape == (0,)
