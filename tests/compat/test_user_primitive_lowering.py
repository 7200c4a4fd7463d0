"""A user primitive with a Python lowering (`mlir.register_lowering(p, mlir.lower_fun(f))`, as
equinox's and lineax's primitives are defined) is compiled into the program as JAX compiles it: its
lowering is traced once per compilation and inlined (passes/inline.py), so a jitted loop around it
runs no Python per iteration. Before, each equation ran the lowering eagerly on the host, once per
loop iteration, and kept the loop out of native code. Asserts counts, not times."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax.extend.core import Primitive
from morphax.interpreters import ad, mlir

calls = {"lowering": 0}


def _lowering(x, y, *, scale):
    calls["lowering"] += 1
    return [scale * x * y + 1.0, x - y]


affine_p = Primitive("test_lowering_affine")
affine_p.multiple_results = True
affine_p.def_impl(_lowering)
affine_p.def_abstract_eval(lambda x, y, *, scale: [x, x])
mlir.register_lowering(affine_p, mlir.lower_fun(_lowering, multiple_results=True))


def _loop(x, y, n):
    def body(carry):
        i, a = carry
        out, _ = affine_p.bind(a, y, scale=0.5)
        return i + 1, out

    return lax.while_loop(lambda c: c[0] < n, body, (0, x))[1]


def _reference(x, y, n):
    a = np.asarray(x, np.float64)
    for _ in range(n):
        a = 0.5 * a * np.asarray(y, np.float64) + 1.0
    return a


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_lowering_is_traced_per_compilation_not_run_per_iteration(backend):
    x, y = jnp.linspace(0.0, 1.0, 5), jnp.linspace(1.0, 2.0, 5)
    f = morphax.jit(_loop, static_argnums=2, backend=backend)
    calls["lowering"] = 0
    out = f(x, y, 40)
    np.testing.assert_allclose(np.asarray(out), _reference(x, y, 40), rtol=1e-5)
    # Traced once when the loop body compiled (not 40 times, one per iteration).
    assert calls["lowering"] == 1
    out = f(x, y, 40)
    np.testing.assert_allclose(np.asarray(out), _reference(x, y, 40), rtol=1e-5)
    assert calls["lowering"] == 1  # the compiled program is reused


def test_inlined_lowering_lets_the_loop_run_natively():
    from morphax._src.compiler.backends import get_backend

    if not get_backend("c").available():
        pytest.skip("no C compiler")
    x, y = jnp.linspace(0.0, 1.0, 5), jnp.linspace(1.0, 2.0, 5)
    compiled = morphax.jit(_loop, static_argnums=2, backend="c").lower(x, y, 7).compile()
    # The whole program, loop included, is one native segment; no Python step is left.
    assert compiled.num_segments == 1
    assert "test_lowering_affine" not in compiled.as_text()


def test_eager_binding_still_runs_the_implementation():
    x, y = jnp.arange(3.0), jnp.ones(3)
    calls["lowering"] = 0
    out, diff = affine_p.bind(x, y, scale=2.0)
    assert calls["lowering"] == 1
    np.testing.assert_allclose(np.asarray(out), 2 * np.arange(3.0) + 1)
    np.testing.assert_allclose(np.asarray(diff), np.arange(3.0) - 1)


def test_the_primitive_stays_one_equation_for_transformations():
    jaxpr = morphax.make_jaxpr(lambda a, b: affine_p.bind(a, b, scale=1.0))(jnp.ones(2), jnp.ones(2))
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["test_lowering_affine"]


def test_a_lowering_that_does_not_trace_runs_on_the_host():
    host_calls = []

    def host_only(x):  # reads its operand's value: fine eagerly, not traceable
        host_calls.append(1)
        return [jnp.asarray(np.asarray(x) * 3.0)]

    p = Primitive("test_lowering_host_only")
    p.multiple_results = True
    p.def_abstract_eval(lambda x: [x])
    mlir.register_lowering(p, mlir.lower_fun(host_only, multiple_results=True))
    ad.primitive_jvps[p] = lambda primals, tangents: (p.bind(*primals), [3.0 * tangents[0]])
    out = morphax.jit(lambda v: p.bind(v)[0] + 1.0)(jnp.arange(4.0))
    np.testing.assert_allclose(np.asarray(out), 3.0 * np.arange(4.0) + 1.0)
    assert len(host_calls) >= 2  # one failed trace, then the host run


def test_a_lowering_disagreeing_with_the_abstract_evaluation_is_not_inlined():
    p = Primitive("test_lowering_wrong_shape")
    p.multiple_results = True
    p.def_abstract_eval(lambda x: [x])
    p.def_impl(lambda x: [x * 2.0])
    mlir.register_lowering(p, mlir.lower_fun(lambda x: [jnp.concatenate([x, x])], multiple_results=True))
    jitted = morphax.jit(lambda v: p.bind(v)[0])
    # The traced lowering has a (6,) result, the declared one is (3,): the equation is kept.
    closed = morphax.make_jaxpr(jitted)(jnp.ones(3))
    from morphax._src.passes.inline import inline_calls

    inlined = inline_calls(closed)
    assert "test_lowering_wrong_shape" in str(inlined)
