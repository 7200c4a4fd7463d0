"""Shape-generic libraries (backends/c/generic.py): a program traced again at a new shape reuses
a library compiled for another shape of the same structure, with the shape-dependent numbers
passed at run time. Results are compared with the numpy backend at every shape; the counters
show how many C compiles happened."""

import glob
import threading

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax._src.api.jit import trace_counters
from morphax._src.compiler.backends import get_backend
from morphax._src.compiler.backends.c import build, generic

pytestmark = pytest.mark.skipif(not get_backend("c").available(), reason="no C compiler")
RNG = np.random.default_rng(17)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """A private empty disk cache, no libraries or executables in memory and an empty registry;
    builds in the calling thread (the test suite's setting): compiles are countable."""
    monkeypatch.setenv("MORPHAX_CACHE_DIR", str(tmp_path))
    saved, saved_aliases = dict(build._libraries), dict(build._aliases)
    build.reset_cache_dir()
    _new_process()
    yield tmp_path
    generic.REGISTRY.clear()
    build._libraries.clear()
    build._libraries.update(saved)
    build._aliases.clear()
    build._aliases.update(saved_aliases)
    build.reset_cache_dir()


def _new_process():
    """What a new process knows: the disk cache only (no library, alias or structure in memory,
    no compiled executable)."""
    from morphax._src.compiler import compile as compile_mod

    build._libraries.clear()
    build._aliases.clear()
    generic.REGISTRY.clear()
    compile_mod._generation += 1


def _mlp_step(params, x, y):
    def loss(params):
        (w1, b1), (w2, b2) = params
        h = jnp.maximum(x @ w1 + b1, 0.0)
        logits = h @ w2 + b2
        return -jnp.mean(jnp.sum(y * morphax.nn.log_softmax(logits), axis=-1))

    value, grads = morphax.value_and_grad(loss)(params)
    return value, morphax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)


def _mlp_params(d_in=12, hidden=24, classes=5):
    return (
        (RNG.standard_normal((d_in, hidden)).astype(np.float32) * 0.2, np.zeros(hidden, np.float32)),
        (RNG.standard_normal((hidden, classes)).astype(np.float32) * 0.2, np.zeros(classes, np.float32)),
    )


def _agree(got, want, tol=2e-5):
    for g, w in zip(morphax.tree_util.tree_leaves(got), morphax.tree_util.tree_leaves(want)):
        assert np.asarray(g).shape == np.asarray(w).shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)


def _mlp_batch(batch):
    x = RNG.standard_normal((batch, 12)).astype(np.float32)
    return x, np.eye(5, dtype=np.float32)[RNG.integers(0, 5, batch)]


def test_five_batch_sizes_compile_c_once_and_match_the_numpy_backend(fresh_cache):
    """The first size's library reads the batch-dependent numbers at run time: every later size
    reuses it (a trace and a render each, no C compile)."""
    params = _mlp_params()
    step = morphax.jit(_mlp_step, backend="c")
    reference = morphax.jit(_mlp_step, backend="numpy")
    compiles, hits = build.stats["compiles"], build.stats["generic_hits"]
    traces = trace_counters.traces
    for batch in (16, 24, 7, 40, 64):
        x, y = _mlp_batch(batch)
        _agree(step(params, x, y), reference(params, x, y))
    assert build.stats["compiles"] - compiles == 1
    assert build.stats["generic_hits"] - hits == 4
    # Per batch size, one of the step (both backends share it), and one of the nested jit of
    # log_softmax (JAX's is jitted too) unless an earlier test traced it at that shape.
    assert 5 <= trace_counters.traces - traces <= 10


def test_with_shape_generic_off_the_first_library_is_specialized(fresh_cache):
    """morphax_shape_generic=False: the first size compiles specialized, the second compiles the
    generic library that the later sizes reuse."""
    params = _mlp_params()
    step = morphax.jit(_mlp_step, backend="c")
    reference = morphax.jit(_mlp_step, backend="numpy")
    compiles, hits = build.stats["compiles"], build.stats["generic_hits"]
    morphax.config.update("morphax_shape_generic", False)
    try:
        for batch in (16, 24, 7, 40):
            x, y = _mlp_batch(batch)
            _agree(step(params, x, y), reference(params, x, y))
    finally:
        morphax.config.update("morphax_shape_generic", True)
    assert build.stats["compiles"] - compiles == 2
    assert build.stats["generic_hits"] - hits == 2


def test_an_inner_extent_that_changes_adds_one_generic_library(fresh_cache):
    """A first library is generic only in the numbers read once per call; a shape that changes
    an inner loop's extent compiles one more generic library (parameters: every number that
    differed), which the shapes after it reuse."""
    f = morphax.jit(lambda x: jnp.tanh(x).sum(axis=1) * 3.0 + x[:, 0], backend="c")
    compiles, hits = build.stats["compiles"], build.stats["generic_hits"]
    for rows, cols in ((20, 5), (36, 5), (17, 7), (44, 3), (32, 7)):
        x = RNG.standard_normal((rows, cols)).astype(np.float32)
        want = np.tanh(x).sum(axis=1) * 3.0 + x[:, 0]
        np.testing.assert_allclose(np.asarray(f(x)), want, rtol=2e-6, atol=2e-6)
    assert build.stats["compiles"] - compiles == 2
    assert build.stats["generic_hits"] - hits == 3


def test_a_skeleton_reached_from_two_programs_checks_the_rendering_its_library_came_from(fresh_cache):
    """Two programs (different jaxprs) can render to one skeleton; the latest generic library is
    then checked against the numbers of the rendering it was built from, not the first one seen
    (a regression: a 2-d contraction reused a library built for a 3-d one with other constants)."""
    cases = [
        ((4, 3), (3, 5), (((1,), (0,)), ((), ()))),
        ((4, 3, 2), (3, 2, 5), (((1, 2), (0, 1)), ((), ()))),
        ((4, 1), (1, 5), (((1,), (0,)), ((), ()))),
        ((6, 2), (2, 3), (((1,), (0,)), ((), ()))),
    ]
    for lhs_shape, rhs_shape, numbers in cases:
        a = RNG.standard_normal(lhs_shape).astype(np.float32)
        b = RNG.standard_normal(rhs_shape).astype(np.float32)

        def f(a, b, numbers=numbers):
            return morphax.lax.dot_general(a * 2.0, b + 1.0, numbers) - 1.0

        want = np.tensordot(a * 2.0, b + 1.0, axes=(numbers[0][0], numbers[0][1])) - 1.0
        np.testing.assert_allclose(np.asarray(morphax.jit(f, backend="c")(a, b)), want, rtol=1e-5, atol=1e-5)


def test_a_new_process_finds_the_generic_library_on_disk(fresh_cache):
    """The shape a library was built for finds it through its alias (no render); another shape
    finds it through the skeleton's key; neither compiles."""
    params = _mlp_params()
    x16, y16 = _mlp_batch(16)
    want = morphax.jit(_mlp_step, backend="numpy")(params, x16, y16)
    _agree(morphax.jit(_mlp_step, backend="c")(params, x16, y16), want)
    assert build.stats["compiles"] >= 1
    assert glob.glob(str(fresh_cache / "c" / "*" / "*.alias"))
    compiles, disk_hits = build.stats["compiles"], build.stats["disk_hits"]

    _new_process()
    _agree(morphax.jit(_mlp_step, backend="c")(params, x16, y16), want)
    assert build.stats["compiles"] == compiles and build.stats["disk_hits"] == disk_hits + 1

    _new_process()
    # A process whose first shape is another batch size picks the same parameters (the numbers of
    # at least 16 read once per call), so it finds the library by the skeleton's key.
    x40, y40 = _mlp_batch(40)
    reference = morphax.jit(_mlp_step, backend="numpy")(params, x40, y40)
    _agree(morphax.jit(_mlp_step, backend="c")(params, x40, y40), reference)
    assert build.stats["compiles"] == compiles and build.stats["disk_hits"] == disk_hits + 2


def test_the_generic_library_serves_shapes_on_several_threads_at_once(fresh_cache):
    """Each call's parameters travel with the call (a thread-local set by the segment), so two
    threads running the same library at different shapes do not see each other's extents."""
    f = morphax.jit(lambda x: jnp.sin(x) * 2.0 + jnp.sum(x, axis=0), backend="c")
    inputs = {n: RNG.standard_normal((n, 3)).astype(np.float32) for n in (5, 8, 11, 13)}
    for n in (5, 8):
        f(inputs[n]).block_until_ready()
    compiles = build.stats["compiles"]
    errors = []

    def worker(n):
        want = np.sin(inputs[n]) * 2.0 + inputs[n].sum(axis=0)
        for _ in range(200):
            got = np.asarray(f(inputs[n]))
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
                errors.append(n)
                return

    threads = [threading.Thread(target=worker, args=(n,)) for n in (11, 13, 11, 13)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert build.stats["compiles"] == compiles


def test_generic_kernels_run_on_openmp_threads(fresh_cache):
    """Sizes above the threading threshold: the parallel loops read the extents from locals."""
    f = morphax.jit(lambda x: jnp.exp(-x * x) + x[::-1], backend="c")
    for n in (300_000, 400_000, 500_000):
        x = RNG.standard_normal(n).astype(np.float32)
        np.testing.assert_allclose(np.asarray(f(x)), np.exp(-x * x) + x[::-1], rtol=2e-6, atol=1e-6)
    assert build.stats["generic_hits"] >= 1


def test_a_scan_loop_and_its_trip_count_stay_generic(fresh_cache):
    def f(xs, h):
        def body(h, x):
            h = jnp.tanh(h * 0.5 + x)
            return h, h.sum()

        return morphax.lax.scan(body, h, xs)

    jitted, reference = morphax.jit(f, backend="c"), morphax.jit(f, backend="numpy")
    for steps, width in ((5, 3), (9, 3), (4, 7), (12, 2)):
        xs = RNG.standard_normal((steps, width)).astype(np.float32)
        h = RNG.standard_normal(width).astype(np.float32)
        _agree(jitted(xs, h), reference(xs, h))
    assert build.stats["generic_hits"] >= 2


def test_templates_find_numbers_not_names_comments_or_hex_digits():
    text = (
        "/* f32[32,784] */\n"
        "void k0(void *const *restrict buf) {\n"
        "  float *restrict out_b2 = (float *)buf[1];\n"
        "  for (int64_t i = 0; i < 25088; i++) out_b2[i] = 0x1.0p-5f * i + 1e-3 + 0x7fffffff;\n"
        "  #pragma omp simd safelen(8)\n"
        "  static const uint8_t lit0[] = {1, 2};\n"
        "}\n"
    )
    tmpl = generic.template([text])
    assert tmpl.numbers[0] == ["1", "0", "25088", "0x1.0p-5f", "1e-3", "0x7fffffff", "8", "1", "2"]
    assert [tmpl.fixed(0, n) for n in range(9)] == [False] * 5 + [True] * 4
    other = generic.template([text.replace("25088", "512").replace("0x1.0p-5f", "0x1.0p-6f")])
    assert other.key == tmpl.key  # the same skeleton: only numbers differ
    assert generic.differing(other, tmpl) == [(0, 2), (0, 3)]
    # A number C needs as a constant (an initializer, a pragma) cannot become a parameter.
    frozen = generic.template([text.replace("{1, 2}", "{1, 3}")])
    assert generic.differing(frozen, tmpl) is None
    # Read once per call: the top-level loop bound; not 0 or 1, nor a non-integral float.
    assert generic.per_call_positions(tmpl) == [(0, 2)]
    assert generic.per_call_positions(generic.template([text.replace("buf[1]", "buf[2]")])) == [(0, 2)]
    nested = generic.template(
        [
            "void k1(void *const *restrict buf) {\n  for (i = 0; i < 64; i++) {\n"
            "    for (j = 0; j < 3; j++) y[i * 3 + j] = x[j] / 64.0f;\n  }\n}\n"
        ]
    )
    assert nested.numbers[0] == ["0", "64", "0", "3", "3", "64.0f"]
    assert generic.per_call_positions(nested) == [(0, 1), (0, 5)]
    source = generic.generic_source(other, [(0, 2), (0, 3)], {})
    assert "i < mxd0" in source and "mxd1 * i" in source and "const float mxd1" in source
    assert generic.value_bits("0x1.0p-6f") == np.float64(2.0**-6).view(np.int64)
