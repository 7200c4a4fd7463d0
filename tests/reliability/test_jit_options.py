"""Issue 12 #3, #10, #11, #12: jit's ahead-of-time path, its options, odd function names,
recursion under jit, and `device_put` of values that are not arrays.

What JAX 0.10.2 does, stated per test:
- ``jit(f).lower(x).compile()`` called with other shapes or dtypes raises ``TypeError:
  Argument types differ from the types for which this computation was compiled ... Argument 'x'
  compiled with float32[3] and called with float32[4]``, one line per differing argument; weak
  types may differ (a Python float where f32[] was compiled is accepted, a Python int is not).
  A different pytree raises TypeError too. The compiled object takes the dynamic arguments only.
- Options are checked when ``jit`` is applied to a function with a signature: static_argnums /
  donate_argnums out of range and unknown static_argnames / donate_argnames raise ValueError
  (unless ``*args`` / ``**kwargs`` accept them); an argument both static and donated raises
  ValueError; ``backend=`` warns (DeprecationWarning) and an unknown one raises RuntimeError at the
  call. A buffer donated and passed again in the same call raises JaxRuntimeError (a RuntimeError).
- A function named anything (``ℌ``, ``my-fn``, ``class``) jits; the jaxpr shows the real name.
- A jitted function that calls itself through jit with the same argument types raises
  RecursionError ("Recursively calling ...") instead of overflowing the stack.
- ``device_put(object())`` and ``device_put("abc")`` raise TypeError (not a valid JAX type).
"""

from __future__ import annotations

import functools
import sys

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax._src.core import trace as _trace

# ------------------------------------------------------------------------- lower(...).compile()


def _add(x, y):
    return x + y


def test_compiled_rejects_another_shape():
    c = morphax.jit(_add).lower(jnp.ones(3), 2.0).compile()
    with pytest.raises(TypeError, match="Argument types differ") as e:
        c(jnp.ones(4), 2.0)
    assert "Argument 'x' compiled with float32[3] and called with float32[4]" in str(e.value)
    assert "_add" in str(e.value)  # names the function


def test_compiled_rejects_another_dtype_and_lists_every_mismatch():
    c = morphax.jit(_add).lower(jnp.ones(3), 2.0).compile()
    with pytest.raises(TypeError, match="Argument types differ") as e:
        c(jnp.ones(4, jnp.int32), jnp.ones(2))
    msg = str(e.value)
    assert "Argument 'x' compiled with float32[3] and called with int32[4]" in msg
    assert "Argument 'y' compiled with float32[] and called with float32[2]" in msg


def test_compiled_weak_types_may_differ_but_dtypes_may_not():
    c = morphax.jit(_add).lower(jnp.ones(3), 2.0).compile()  # y: f32[] weak
    np.testing.assert_array_equal(c(jnp.ones(3), 3.0), np.full(3, 4.0))
    np.testing.assert_array_equal(c(jnp.ones(3), np.float32(3)), np.full(3, 4.0))
    np.testing.assert_array_equal(c(jnp.ones(3), jnp.float32(3)), np.full(3, 4.0))
    with pytest.raises(TypeError, match="compiled with float32\\[\\] and called with int32\\[\\]"):
        c(jnp.ones(3), 3)
    strong = morphax.jit(_add).lower(jnp.ones(3), jnp.float32(2)).compile()
    np.testing.assert_array_equal(strong(jnp.ones(3), 3.0), np.full(3, 4.0))
    np.testing.assert_array_equal(strong(np.ones(3), np.float64(3)), np.full(3, 4.0))  # canonicalized


def test_compiled_names_nested_and_keyword_arguments():
    def g(d, *, k):
        return d["a"] + d["b"][0] + k

    c = morphax.jit(g).lower({"a": jnp.ones(3), "b": [jnp.ones(3)]}, k=jnp.ones(3)).compile()
    with pytest.raises(TypeError) as e:
        c({"a": jnp.ones(3), "b": [jnp.ones(2)]}, k=jnp.ones(3, jnp.int32))
    msg = str(e.value)
    assert "Argument 'd['b'][0]' compiled with float32[3] and called with float32[2]" in msg
    assert "Argument 'k' compiled with float32[3] and called with int32[3]" in msg


def test_compiled_with_static_arguments_takes_the_dynamic_ones():
    def f(x, s, y):
        return x * s + y

    c = morphax.jit(f, static_argnums=1).lower(jnp.ones(3), 2, jnp.ones(3)).compile()
    np.testing.assert_array_equal(c(jnp.ones(3), jnp.ones(3)), np.full(3, 3.0))
    with pytest.raises(TypeError, match="Argument 'y' compiled with float32\\[3\\]"):
        c(jnp.ones(3), jnp.ones(2))
    with pytest.raises(TypeError):  # another pytree (here: the static argument passed again)
        c(jnp.ones(3), 2, jnp.ones(3))


def test_compiled_rejects_another_pytree():
    c = morphax.jit(_add).lower(jnp.ones(3), 2.0).compile()
    with pytest.raises(TypeError):
        c((jnp.ones(3),), 2.0)


# ------------------------------------------------------------------------------------- options


def _f(x, s):
    return x


@pytest.mark.parametrize("nums", [2, 5, -3, (0, 2)])
def test_static_argnums_out_of_range(nums):
    # JAX: ValueError "Jitted function has static_argnums=(5,), but only accepts 2 positional
    # arguments", when jit is applied.
    with pytest.raises(ValueError, match="static_argnums") as e:
        morphax.jit(_f, static_argnums=nums)
    assert "jit(_f)" in str(e.value) and "2 positional" in str(e.value)


def test_negative_static_argnums_count_from_the_last_parameter():
    t0 = _count()
    jf = morphax.jit(lambda x, s: x * s, static_argnums=-1)
    assert float(jf(1.0, 2)) == 2.0
    assert float(jf(1.0, s=2)) == 2.0  # by keyword: still the static parameter s
    assert float(jf(1.0, s=3)) == 3.0  # a new static value: traced again (dynamic s would not be)
    assert _count() - t0 == 3


def test_static_argnums_beyond_the_parameters_are_fine_with_varargs_or_no_signature():
    def v(*args):
        return args[0]

    assert float(morphax.jit(v, static_argnums=5)(1.0)) == 1.0
    morphax.jit(max, static_argnums=5)  # no signature to check against


def test_unknown_static_argnames():
    # JAX: ValueError "Jitted function has invalid argnames {'sss'} in static_argnames".
    with pytest.raises(ValueError, match="static_argnames") as e:
        morphax.jit(_f, static_argnames="sss")
    assert "'sss'" in str(e.value) and "jit(_f)" in str(e.value)

    def kwonly(x, *, k):
        return x * k

    assert float(morphax.jit(kwonly, static_argnames="k")(1.0, k=2)) == 2.0
    with pytest.raises(ValueError):
        morphax.jit(kwonly, static_argnames="kk")

    def varkw(x, **kws):
        return x

    morphax.jit(varkw, static_argnames="anything")  # **kwargs takes any name


def test_donate_options_out_of_range_or_unknown():
    with pytest.raises(ValueError, match="donate_argnums"):
        morphax.jit(_f, donate_argnums=5)
    with pytest.raises(ValueError, match="donate_argnames"):
        morphax.jit(_f, donate_argnames="zz")


@pytest.mark.parametrize(
    "options",
    [
        {"static_argnums": 1, "donate_argnums": 1},
        {"static_argnames": "s", "donate_argnames": "s"},
        {"static_argnums": 1, "donate_argnames": "s"},
        {"static_argnames": "s", "donate_argnums": (0, 1)},
    ],
)
def test_static_and_donated_cannot_intersect(options):
    # JAX: ValueError "static_argnames and donate_argnames cannot intersect".
    with pytest.raises(ValueError, match="cannot intersect") as e:
        morphax.jit(_f, **options)
    assert "jit(_f)" in str(e.value)


def test_static_and_donated_cannot_intersect_without_names():
    def v(*args):
        return args[0]

    with pytest.raises(ValueError, match="static_argnums and donate_argnums cannot intersect"):
        morphax.jit(v, static_argnums=1, donate_argnums=1)


def test_bad_option_types():
    with pytest.raises(TypeError, match="static_argnums"):
        morphax.jit(_f, static_argnums="s")
    with pytest.raises(TypeError, match="static_argnames"):
        morphax.jit(_f, static_argnames=1)


def test_the_same_buffer_donated_twice_in_one_call():
    # JAX: JaxRuntimeError "Attempt to use a buffer that was previously donated in the same call".
    a = jnp.ones(3)
    jf = morphax.jit(_add, donate_argnums=(0, 1))
    with pytest.raises(morphax.errors.JaxRuntimeError, match="donated") as e:
        jf(a, a)
    assert isinstance(e.value, RuntimeError) and "jit(_add)" in str(e.value)
    assert not a.is_deleted()  # refused before running: nothing consumed
    b = jnp.ones(3)
    with pytest.raises(morphax.errors.JaxRuntimeError):
        morphax.jit(_add, donate_argnums=0)(b, b)  # donated, then passed again undonated
    with pytest.raises(morphax.errors.JaxRuntimeError):
        morphax.jit(_add, donate_argnames="y")(b, y=b)
    c, d = jnp.ones(3), jnp.ones(3)
    # JAX: one output for two donated f32[3] inputs, so its first compilation warns.
    with pytest.warns(UserWarning, match=r"not usable: float32\[3\]"):
        np.testing.assert_array_equal(jf(c, d), np.full(3, 2.0))
    assert c.is_deleted() and d.is_deleted()


def test_donated_keyword_arguments_are_consumed():
    c, d = jnp.ones(3), jnp.ones(3)
    morphax.jit(_add, donate_argnames="y")(c, y=d)
    assert d.is_deleted() and not c.is_deleted()


def test_backend_option():
    # JAX: a DeprecationWarning when jit is applied; RuntimeError "Unknown backend bogus.
    # Available backends are ['cpu']" at the call.
    with pytest.warns(DeprecationWarning, match="backend"):
        jf = morphax.jit(_f, backend="bogus")
    with pytest.raises(RuntimeError, match="'bogus'") as e:
        jf(1.0, 2)
    assert "jit(_f)" in str(e.value) and "cpu" in str(e.value)
    with pytest.warns(DeprecationWarning):
        assert float(morphax.jit(_f, backend="cpu")(1.0, 2)) == 1.0
    deco = morphax.jit(backend="bogus")
    with pytest.warns(DeprecationWarning):
        jf = deco(_f)
    with pytest.raises(RuntimeError):
        jf(1.0, 2)


# --------------------------------------------------------------------------------------- names


@pytest.mark.parametrize("name", ["f²", "ℌ", "my-fn", "<lambda>", "class", "1abc", "", "ℌ²-x"])
def test_any_function_name(name):
    def f(x):
        return x * 2

    f.__name__ = name
    jf = morphax.jit(f)
    assert float(jf(3.0)) == 6.0
    assert f"name={name}" in str(morphax.make_jaxpr(jf)(3.0))  # the real name in the jaxpr
    text = jf.lower(3.0).compile().as_text()
    assert text.isascii()  # C kernels (native backend) and the Python program that calls them
    source = text.split("# the program, run by the executor\n")[-1]
    assert source.splitlines()[0].startswith("def ")
    compile(source, "<check>", "exec")
    with pytest.raises(TypeError, match="Argument types differ") as e:
        jf.lower(3.0).compile()(jnp.ones(2))
    assert f"jit({name})" in str(e.value)  # and in messages


def test_two_functions_whose_names_sanitize_alike():
    def f(x):
        return x + 1

    def g(x):
        return f(x) * 10

    f.__name__, g.__name__ = "ℌ", "H"
    assert float(morphax.jit(lambda x: morphax.jit(g)(x) + morphax.jit(f)(x))(1.0)) == 22.0


# ----------------------------------------------------------------------------------- recursion


def _count():
    from morphax._src.api.jit import trace_counters

    return trace_counters.traces


def test_unbounded_recursion_under_jit_with_the_same_types():
    @morphax.jit
    def rec(x, n):
        return rec(x, n - 1)  # n is traced: nothing can stop this

    with pytest.raises(RecursionError, match="calls itself recursively") as e:
        rec(1.0, 3)
    msg = str(e.value)
    assert "jit(rec)" in msg and "static_argnums" in msg and "while_loop" in msg
    assert _trace.ctx.trace is _trace.base_trace()
    assert float(morphax.jit(lambda x: x * 2)(3.0)) == 6.0  # nothing left behind


def test_unbounded_recursion_through_static_values():
    @functools.partial(morphax.jit, static_argnums=1)
    def rec(x, n):
        return rec(x, n + 1) + 1  # a new static value at each level: no repeated key

    limit = sys.getrecursionlimit()
    with pytest.raises(RecursionError, match="jit\\(rec\\)") as e:
        rec(1.0, 0)
    assert "static" in str(e.value) and "while_loop" in str(e.value)
    assert sys.getrecursionlimit() == limit
    assert _trace.ctx.trace is _trace.base_trace()
    assert float(morphax.jit(lambda x: x * 2)(3.0)) == 6.0


def test_recursion_bounded_by_a_static_value_works():
    @functools.partial(morphax.jit, static_argnums=1)
    def power(x, n):
        return x if n == 0 else power(x, n - 1) * 2

    assert float(power(1.0, 5)) == 32.0


def test_a_recursion_error_of_the_users_own_code_is_left_alone():
    def deep(n):
        return deep(n + 1)

    @morphax.jit
    def f(x):
        deep(0)
        return x

    with pytest.raises(RecursionError) as e:
        f(1.0)
    assert "calls itself" not in str(e.value)


# ---------------------------------------------------------------------------------- device_put


@pytest.mark.parametrize("value", [object(), "abc", b"xy", np.array(["a"]), {"k": object()}])
def test_device_put_of_values_that_are_not_arrays(value):
    # JAX: TypeError ("... is not a valid JAX type" / "Cannot interpret value of type ...").
    with pytest.raises(TypeError, match="not a valid JAX type") as e:
        morphax.device_put(value)
    assert "device_put" in str(e.value)


def test_device_put_of_numbers_and_pytrees():
    out = morphax.device_put([1, 2.0, np.ones(2), None])
    assert out[0].dtype == np.int32 and out[1].dtype == np.float32 and out[3] is None


def test_jit_without_a_function_forwards_every_option():
    """`jit(**options)` is a decorator that applies all of them, as `jit(f, **options)` does."""
    import inspect

    params = inspect.signature(morphax.jit).parameters.values()
    options = {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
    decorator = morphax.jit(**options)
    assert set(decorator.keywords) == set(options)
    assert float(decorator(lambda x: x + 1)(1.0)) == 2.0
