"""The transpose of a `jit` is staged into a `jit` of its own and cached on the jaxpr, as in JAX
0.10.2 (issue 33: equinox's test_grad_jit_new / test_grad_jit_old count the traces of a
custom_vjp's bwd under `grad(jit(f))`).

JAX traces the transpose of a jit call once per (jaxpr, which inputs are linear, cotangent
types) and binds `jit` on the result, so a second `grad` of the same jitted function runs the
rules inside (a custom_vjp's fwd and bwd) no more. The jit keeps its name through jvp and
transposition. Expected counts and printed jaxprs are what JAX 0.10.2 gives.
"""

import morphax as jax
import morphax.numpy as jnp


def _counted_custom_vjp():
    calls = {"fwd": 0, "bwd": 0}

    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def f_fwd(x):
        calls["fwd"] += 1
        return jnp.sin(x), jnp.cos(x)

    def f_bwd(c, g):
        calls["bwd"] += 1
        return (g * c * 10.0,)

    f.defvjp(f_fwd, f_bwd)
    return f, calls


def test_bwd_runs_once_per_signature():
    f, calls = _counted_custom_vjp()
    jf = jax.jit(lambda x: f(x) * 2.0)
    # JAX 0.10.2, step by step: 10.806046 {1, 1}; again {1, 1}; another value of the same type
    # {1, 1}; a strong float32 argument is a new signature {2, 2}; value_and_grad and vjp reuse
    # it {2, 2}; a strong cotangent is a new transpose {2, 3}; jit(grad) reuses both {2, 3}.
    steps = [
        (lambda: jax.grad(jf)(1.0), 10.806046, (1, 1)),
        (lambda: jax.grad(jf)(1.0), 10.806046, (1, 1)),
        (lambda: jax.grad(jf)(2.0), -8.322937, (1, 1)),
        (lambda: jax.grad(jf)(jnp.float32(2.0)), -8.322937, (2, 2)),
        (lambda: jax.value_and_grad(jf)(1.0)[1], 10.806046, (2, 2)),
        (lambda: jax.vjp(jf, 1.0)[1](1.0)[0], 10.806046, (2, 2)),
        (lambda: jax.vjp(jf, 1.0)[1](jnp.ones(()))[0], 10.806046, (2, 3)),
        (lambda: jax.jit(jax.grad(jf))(1.0), 10.806046, (2, 3)),
    ]
    for i, (run, value, counts) in enumerate(steps):
        out = run()
        assert abs(float(out) - value) < 1e-5, (i, out)
        assert (calls["fwd"], calls["bwd"]) == counts, (i, calls)


def test_grad_of_jit_is_two_jit_equations_named_after_the_function():
    f, calls = _counted_custom_vjp()

    def g(x):
        return f(x) * 2.0

    closed = jax.make_jaxpr(jax.grad(jax.jit(g)))(1.0)
    # JAX 0.10.2: [('jit', 'g'), ('jit', 'g')]: the linearized forward and its transpose.
    assert [(e.primitive.name, e.params["name"]) for e in closed.eqns] == [("jit", "g"), ("jit", "g")]
    assert calls["bwd"] == 1


JVP_OF_JIT = """\
{ lambda ; a:f32[] b:f32[]. let
    c:f32[] d:f32[] = jit[
      name=f
      jaxpr={ lambda ; a:f32[] b:f32[]. let
          c:f32[] = sin a
          e:f32[] = cos a
          d:f32[] = mul b e
        in (c, d) }
    ] a b
  in (c, d) }"""

TRANSPOSE_OF_JIT = """\
{ lambda ; a:f32[]. let
    b:f32[] = jit[
      name=<lambda>
      jaxpr={ lambda ; a:f32[]. let b:f32[] = mul a 2.0:f32[] in (b,) }
    ] a
  in (b,) }"""


def test_printed_as_jax_prints_them():
    @jax.jit
    def f(x):
        return jnp.sin(x)

    # Both texts as JAX 0.10.2 prints them.
    assert str(jax.make_jaxpr(lambda x, t: jax.jvp(f, (x,), (t,)))(1.0, 2.0)) == JVP_OF_JIT
    transpose = jax.linear_transpose(jax.jit(lambda x: x * 2.0), 1.0)
    assert str(jax.make_jaxpr(transpose)(1.0)) == TRANSPOSE_OF_JIT


def test_bwd_closing_over_an_enclosing_jit_tracer():
    # The transposed jaxpr closes over `y`, a tracer of the enclosing jit: it is passed to the
    # transpose's jit as a leading argument (and such a jaxpr is not cached). NB: JAX 0.10.2
    # raises here ("No constant handler for type: DynamicJaxprTracer"); called without the
    # outer jit it gives 6.0, which this matches.
    def outer(y):
        @jax.custom_vjp
        def f(x):
            return x * y

        def fwd(x):
            return x * y, None

        def bwd(_, g):
            return (g * y * 3.0,)

        f.defvjp(fwd, bwd)
        return jax.grad(jax.jit(f))(1.0)

    assert float(outer(2.0)) == 6.0
    assert float(jax.jit(outer)(2.0)) == 6.0
    assert float(jax.jit(outer)(3.0)) == 9.0
