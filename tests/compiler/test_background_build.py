"""Background C builds (`morphax_compile_in_background`, the default outside this test suite): a
program whose library no cache holds runs on the NumPy backend while the compiler works in a
background thread, then switches to the native kernels; a cached library is used at once; a
process that exits waits for the builds it started, so the next process finds them on disk; a
compiler failure leaves the program on NumPy with a warning."""

import json
import threading

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax._src.compiler.backends import get_backend
from morphax._src.compiler.backends.c import background, build, generic

pytestmark = pytest.mark.skipif(not get_backend("c").available(), reason="no working C compiler")


@pytest.fixture
def background_builds(tmp_path, monkeypatch):
    """Background builds on, a private empty disk cache and in-memory library table."""
    monkeypatch.setenv("MORPHAX_CACHE_DIR", str(tmp_path / "cache"))
    saved_libs, saved_stats = dict(build._libraries), dict(build.stats)
    build._libraries.clear()
    build.reset_cache_dir()
    for k in build.stats:
        build.stats[k] = 0
    # Programs here differ only in a constant, which a shape-generic library would cover
    # (test_shape_generic.py): each must build its own cache entry.
    monkeypatch.setattr(generic.REGISTRY, "seen", lambda structure: False)
    morphax.config.update("morphax_compile_in_background", True)
    yield tmp_path / "cache"
    background.wait()
    morphax.config.update("morphax_compile_in_background", False)
    build._libraries.clear()
    build._libraries.update(saved_libs)
    build.stats.update(saved_stats)
    build.reset_cache_dir()


_tags = iter(range(10**6))


def _program(c=None):
    if c is None:
        c = 0.5 + next(_tags)  # its own constant: its own C source and cache entry

    def f(x):
        return jnp.tanh(x * c) + jnp.sin(x) * jnp.exp(-x * x)

    return f


X = np.linspace(-3, 3, 1001, dtype=np.float32)


def _same_as_numpy_backend(f, got):
    want = np.asarray(morphax.jit(f, backend="numpy")(X))
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-6)


def test_first_call_runs_on_numpy_while_the_compiler_works(background_builds, monkeypatch):
    release = threading.Event()
    real_load = build.load

    def held_load(*args, **kwargs):
        release.wait(60)  # the build finishes only once the test has seen the interim program
        return real_load(*args, **kwargs)

    monkeypatch.setattr(build, "load", held_load)
    f = morphax.jit(_program(), backend="c")
    first = f(X)
    executable = f.lower(X).compile()._executable  # the one the call used (memoized on the jaxpr)
    interim = executable.fn.__wrapped__  # the NumPy program, noting the build it waits for
    assert background.pending() == 1
    assert not any(name.startswith(("f_k", "f_seg")) for name in interim.__globals__), (
        "the interim program runs on the numpy backend: no native segment"
    )
    _same_as_numpy_backend(f, first)
    release.set()
    assert background.wait(120)
    assert build.stats["compiles"] == 1
    native = executable.fn
    assert native is not interim
    assert any("_seg0_" in name for name in native.__globals__), "the native program calls segment 0"
    _same_as_numpy_backend(f, f(X))


def test_a_cached_library_is_used_at_once(background_builds):
    c = 0.25 + next(_tags)
    morphax.config.update("morphax_compile_in_background", False)
    morphax.jit(_program(c), backend="c")(X)  # compiles synchronously into the disk cache
    assert build.stats["compiles"] == 1
    morphax.config.update("morphax_compile_in_background", True)
    build._libraries.clear()  # as in a new process: an empty memory cache, the disk cache kept
    f = _program(c)  # a new function: a new trace of the same program
    got = morphax.jit(f, backend="c")(X)
    assert background.pending() == 0
    assert build.stats["compiles"] == 1
    assert build.stats["disk_hits"] == 1
    _same_as_numpy_backend(f, got)


def test_a_failing_compiler_leaves_numpy_with_a_warning(background_builds, monkeypatch):
    def broken(*args, **kwargs):
        raise build.CompileError("cc: simulated failure")

    monkeypatch.setattr(build, "load", broken)
    f = _program()
    with pytest.warns(UserWarning, match="simulated failure"):
        got = morphax.jit(f, backend="c")(X)
        background.wait()
    _same_as_numpy_backend(f, got)
    _same_as_numpy_backend(f, morphax.jit(f, backend="c")(X))


_CHILD = """
    import json, numpy as np, morphax, morphax.numpy as jnp
    from morphax._src.compiler.backends.c import build
    f = lambda x: jnp.cosh(x) * 1.75 - jnp.expm1(x)
    print(np.asarray(morphax.jit(f, backend="c")(np.linspace(-1, 1, 9, dtype=np.float32))).sum())
    print(json.dumps(build.stats))
"""


def test_a_short_process_still_fills_the_disk_cache(tmp_path, python_child):
    def child():
        env = {"MORPHAX_CACHE_DIR": str(tmp_path / "cache"), "MORPHAX_COMPILE_IN_BACKGROUND": "1"}
        out = python_child(_CHILD, env, timeout=180).stdout
        return json.loads(out.strip().splitlines()[-1]), float(out.split()[0])

    first, value1 = child()
    second, value2 = child()
    # The first process returned before its build finished (its stats were printed first), but
    # waited for it at exit: the second finds the library on disk and compiles nothing.
    assert second["compiles"] == 0 and second["disk_hits"] == 1, (first, second)
    assert abs(value1 - value2) <= 1e-5 * max(1.0, abs(value1))


def test_a_python_lowering_is_traced_once_per_compilation(background_builds):
    # The interim NumPy program of a background build is the same compilation: a user
    # primitive's lowering inlined into it is traced once, as JAX lowers it once (equinox's
    # test_noinline counts them).
    from morphax.extend.core import Primitive
    from morphax.interpreters import mlir

    traced = []
    p = Primitive("test_background_lowering_count")
    p.multiple_results = True
    p.def_abstract_eval(lambda x: [x])

    def lowering(x):
        traced.append(1)
        return [jnp.tanh(x) * 2.0]

    mlir.register_lowering(p, mlir.lower_fun(lowering, multiple_results=True))
    f = morphax.jit(lambda x: p.bind(x * (0.5 + next(_tags)))[0] + jnp.sin(x), backend="c")
    f(X)
    background.wait()
    f(X)
    assert len(traced) == 1


def test_a_long_loop_of_the_interim_program_finishes_natively(background_builds, monkeypatch):
    # diffrax's first diffeqsolve call is one program with a 100000-step while loop: run on
    # NumPy while its library builds, it took minutes. A loop still running after
    # HANDOFF_SECONDS (0 here) compiles itself as a program of its own, waits for the native
    # build and runs its remaining iterations there: a second build, the same values.
    from morphax._src.higher_order import while_loop

    monkeypatch.setattr(while_loop, "HANDOFF_SECONDS", 0.0)
    c = 0.5 + next(_tags)

    def f(x):
        body = lambda s: (s[0] + 1, s[1] * 0.5 + c)  # noqa: E731
        return morphax.lax.while_loop(lambda s: s[0] < 50, body, (0, x))[1]

    got = morphax.jit(f, backend="c")(X)
    assert background.wait(120)
    assert build.stats["compiles"] == 2, "the program, and its loop on its own"
    _same_as_numpy_backend(f, got)
