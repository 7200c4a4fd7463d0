"""Mutable array references (`morphax.new_ref`, `Ref`, `freeze`, `free_ref`, `empty_ref`): eager
reads and writes, refs passed to and closed over by `jit` (discharged into functional programs,
written back after the call), refs in fori_loop / scan / while_loop / cond bodies, jvp and vmap,
and every error with its message. Oracle: the same updates on NumPy arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.api.jit import trace_counters
from morphax._src.core.jaxpr import jaxpr_as_fun
from morphax._src.core.state_types import InvalidRefError


def arr(x):
    return np.asarray(x)


# ------------------------------------------------------------------------------------ eager


def test_eager_read_write_index_and_repr():
    r = morphax.new_ref(jnp.arange(4.0))
    assert isinstance(r, morphax.Ref)
    assert (r.shape, r.dtype, r.ndim, r.size, len(r)) == ((4,), np.float32, 1, 4, 4)
    assert repr(r) == "Ref([0., 1., 2., 3.], dtype=float32)"
    assert str(morphax.typeof(r)) == "Ref{float32[4]}"
    want = np.arange(4.0, dtype=np.float32)
    np.testing.assert_array_equal(arr(r[...]), want)
    assert float(r[1]) == 1.0 and r[1].shape == ()
    np.testing.assert_array_equal(arr(r[1:3]), want[1:3])
    np.testing.assert_array_equal(arr(r[::2]), want[::2])
    np.testing.assert_array_equal(arr(r[-1]), want[-1])
    r[1] = 10.0
    want[1] = 10.0
    r[...] += 1.0
    want += 1.0
    r[0:2] = jnp.array([7.0, 8.0])
    want[0:2] = [7.0, 8.0]
    r[::2] = jnp.array([-1.0, -2.0])
    want[::2] = [-1.0, -2.0]
    r.addupdate(jnp.ones(2), slice(1, 3))
    want[1:3] += 1.0
    r[jnp.array(3)] = 5.0  # a dynamic index
    want[3] = 5.0
    np.testing.assert_array_equal(arr(r[...]), want)
    assert r[...].dtype == np.float32


def test_eager_2d_and_scalar_refs():
    m = morphax.new_ref(jnp.ones((2, 3), jnp.int32))
    m[:, 1] += 5
    m[1] = jnp.array([7, 8, 9], jnp.int32)
    np.testing.assert_array_equal(arr(m[...]), [[1, 6, 1], [7, 8, 9]])
    np.testing.assert_array_equal(arr(m[0, 1:]), [6, 1])
    s = morphax.new_ref(3.0)
    assert repr(s) == "Ref(3., dtype=float32, weak_type=True)"
    s[...] = 4.0
    assert float(s[...]) == 4.0 and s[...].weak_type
    b = morphax.new_ref(np.array([True, False]))
    assert repr(b) == "Ref([ True, False], dtype=bool)"


ADVANCED = [
    (np.array([0, 2]),),
    (slice(None), np.array([1, 3])),
    (np.array([0, 2]), np.array([1, 3])),
    (np.array([0, 2]), slice(1, 3)),
    (1, np.array([3, 0, 3])),
    (np.array([[0], [2]]), np.array([1, 3])),
    (np.array([2, -1, 0]),),
    (slice(None, None, 2), np.array([-4, 2])),
]


@pytest.mark.parametrize("idx", ADVANCED, ids=range(len(ADVANCED)))
def test_integer_array_indexing_against_numpy(idx):
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    want = x[idx]
    traced = tuple(jnp.asarray(i) if isinstance(i, np.ndarray) else i for i in idx)
    r = morphax.new_ref(jnp.asarray(x))
    np.testing.assert_array_equal(arr(r[traced]), want)
    np.testing.assert_array_equal(arr(morphax.jit(lambda ref: ref[traced])(r)), want)
    upd = np.arange(want.size, dtype=np.float32).reshape(want.shape) + 100
    expect = x.copy()
    expect[idx] = upd
    r[traced] = jnp.asarray(upd)
    np.testing.assert_array_equal(arr(r[...]), expect)
    q = morphax.new_ref(jnp.asarray(x))
    morphax.jit(lambda ref, u: ref.__setitem__(traced, u))(q, jnp.asarray(upd))
    np.testing.assert_array_equal(arr(q[...]), expect)


def test_integer_array_out_of_bounds_and_repeats():
    # as jnp: reads clamp, writes drop, negatives wrap; addupdate adds repeated positions
    r = morphax.new_ref(jnp.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(arr(r[jnp.array([5, -1])]), np.arange(12.0).reshape(3, 4)[[2, 2]])
    w = morphax.new_ref(jnp.arange(4.0))
    w[jnp.array([1, 7, -1])] = jnp.array([10.0, 20.0, 30.0])
    np.testing.assert_array_equal(arr(w[...]), [0.0, 10.0, 2.0, 30.0])
    f = morphax.jit(lambda ref, i, v: ref.__setitem__(i, v))
    w2 = morphax.new_ref(jnp.arange(4.0))
    f(w2, jnp.array([1, 7, -1]), jnp.array([10.0, 20.0, 30.0]))
    np.testing.assert_array_equal(arr(w2[...]), [0.0, 10.0, 2.0, 30.0])
    for run in (lambda g: g(), lambda g: morphax.jit(g)()):
        a = morphax.new_ref(jnp.zeros(3))
        run(lambda a=a: a.addupdate(jnp.ones(3), (jnp.array([0, 0, 1]),)))
        np.testing.assert_array_equal(arr(a[...]), [2.0, 1.0, 0.0])
    m = morphax.new_ref(jnp.ones((3, 4)))
    text = str(morphax.make_jaxpr(lambda ref, i: ref[i, 1:])(m, jnp.array([0, 2])))
    assert "c:f32[2,3] <- a[b,1:]" in text

    def f2(x):
        q = morphax.new_ref(x)
        q[jnp.array([0, 2])] = q[jnp.array([1, 1])] * 3.0
        return q[...].sum()

    np.testing.assert_array_equal(arr(morphax.grad(f2)(jnp.arange(4.0))), [0.0, 7.0, 0.0, 1.0])
    with pytest.raises(
        IndexError, match=r"the integer-array indices have shapes \[\(2,\), \(3,\)\] that do not broadcast"
    ):
        m[jnp.array([0, 1]), jnp.array([0, 1, 2])]
    with pytest.raises(
        NotImplementedError, match="vmap of a ref `get` with an integer-array index is not supported"
    ):
        morphax.vmap(lambda x: morphax.new_ref(x)[jnp.array([0, 1])])(jnp.ones((2, 3)))


def test_new_ref_copies_its_initial_value():
    x = jnp.arange(3.0)
    r = morphax.new_ref(x)
    r[0] = 9.0
    np.testing.assert_array_equal(arr(x), [0.0, 1.0, 2.0])
    v = r[...]
    r[1] = 7.0  # a value read earlier does not change
    np.testing.assert_array_equal(arr(v), [9.0, 1.0, 2.0])


def test_refs_own_their_buffers():
    x = jnp.ones(2)
    r = morphax.new_ref(x)
    x.delete()  # the ref copied it
    v = r[...]
    v.delete()  # reads copy too
    f = morphax.jit(lambda r, x: (r.__setitem__(..., x), x)[1])
    x = jnp.full(2, 3.0, jnp.float32)
    y = f(r, x)
    x.delete()
    y.delete()  # the value written back is not the returned (or the given) array
    np.testing.assert_array_equal(arr(r[...]), [3.0, 3.0])


def test_x64_ref():
    with morphax.enable_x64():
        r = morphax.new_ref(np.arange(3.0))
        assert r.dtype == np.float64
        r[...] += 0.5
        assert r[...].dtype == np.float64
        np.testing.assert_array_equal(arr(r[...]), [0.5, 1.5, 2.5])


def test_empty_ref():
    r = morphax.empty_ref(morphax.ShapeDtypeStruct((2, 3), jnp.float32))
    assert morphax.typeof(r) == morphax.typeof(morphax.new_ref(jnp.zeros((2, 3))))
    r[...] = jnp.ones((2, 3))
    np.testing.assert_array_equal(arr(r[...]), np.ones((2, 3)))
    e = morphax.empty_ref(morphax.typeof(jnp.zeros(2, jnp.int32)))
    assert e.dtype == np.int32


# ---------------------------------------------------------------------------- freeze / free


def test_freeze_returns_the_value_and_invalidates():
    r = morphax.new_ref(jnp.ones(3))
    r[0] = 2.0
    v = morphax.freeze(r)
    np.testing.assert_array_equal(arr(v), [2.0, 1.0, 1.0])
    msg = r"get: this Ref \(Ref\{float32\[3\]\}\) was invalidated by freeze\(\) and can no longer be read"
    with pytest.raises(InvalidRefError, match=msg):
        r[...]
    with pytest.raises(ValueError, match=r"swap: this Ref .* invalidated by freeze\(\)"):
        r[0] = 1.0
    with pytest.raises(ValueError, match=r"freeze: this Ref .* invalidated by freeze\(\)"):
        morphax.freeze(r)
    assert repr(r) == "Ref(<invalidated by freeze>, Ref{float32[3]})"
    np.testing.assert_array_equal(arr(v), [2.0, 1.0, 1.0])


def test_free_ref_invalidates():
    r = morphax.new_ref(jnp.ones(3))
    assert morphax.free_ref(r) == ()
    with pytest.raises(InvalidRefError, match=r"get: this Ref .* invalidated by free_ref\(\)"):
        r[0]
    with pytest.raises(InvalidRefError, match=r"free_ref: this Ref .* invalidated by free_ref\(\)"):
        morphax.free_ref(r)

    def f(r):
        return r[...]

    with pytest.raises(InvalidRefError, match=r"jit\(f\): this Ref .* invalidated by free_ref\(\)"):
        morphax.jit(f)(r)


def test_use_after_freeze_or_free_under_jit():
    def after_freeze(x):
        q = morphax.new_ref(x)
        morphax.freeze(q)
        return q[...]

    def after_free(x):
        q = morphax.new_ref(x)
        morphax.free_ref(q)
        q[0] = 1.0

    with pytest.raises(InvalidRefError, match=r"get: a Ref \(Ref\{float32\[2\]\}\) is used after freeze\(\)"):
        morphax.jit(after_freeze)(jnp.ones(2))
    with pytest.raises(InvalidRefError, match=r"swap: a Ref .* is used after free_ref\(\)"):
        morphax.jit(after_free)(jnp.ones(2))
    np.testing.assert_array_equal(
        arr(morphax.jit(lambda x: morphax.freeze(morphax.new_ref(x)))(jnp.ones(2))), np.ones(2)
    )
    r = morphax.new_ref(jnp.ones(2))
    with pytest.raises(
        NotImplementedError,
        match=r"freeze: a mutable array reference \(Ref\{float32\[2\]\}\) passed to or closed over by a jitted function",
    ):
        morphax.jit(lambda: morphax.freeze(r))()
    with pytest.raises(
        NotImplementedError, match="free_ref: a mutable array reference .* cannot be invalidated inside it"
    ):
        morphax.jit(morphax.free_ref)(r)
    assert float(r[0]) == 1.0  # still usable


# ---------------------------------------------------------------------------------- errors


def test_index_and_value_errors():
    h = morphax.new_ref(jnp.ones(3))
    with pytest.raises(
        ValueError,
        match=r"Invalid shape for `swap`. Ref shape: \(3,\). Expected shape: \(3,\). Value shape: \(4,\)",
    ):
        h[...] = jnp.ones(4)
    with pytest.raises(ValueError, match=r"Invalid shape for `swap`.*Value shape: \(\)"):
        h[...] = 5.0  # JAX broadcasts nothing into a ref
    with pytest.raises(ValueError, match="Invalid dtype for `swap`. Ref dtype: float32. Value dtype: int32"):
        h[0] = 5
    with pytest.raises(
        ValueError, match="Invalid dtype for `addupdate`. Ref dtype: float32. Value dtype: int32"
    ):
        h.addupdate(jnp.ones(3, jnp.int32))
    with pytest.raises(ValueError, match=r"Out of bound indexer: idx=5, dim=3\."):
        h[5]
    with pytest.raises(IndexError, match=r"too many indices for a Ref of shape \(3,\): 2 were given"):
        h[0, 0]
    with pytest.raises(TypeError, match=r"None \(np.newaxis\) is not supported in a Ref index"):
        h[None]
    with pytest.raises(TypeError, match="boolean indices are not supported on a Ref"):
        h[True]
    with pytest.raises(NotImplementedError, match="negative slice steps are not supported on a Ref"):
        h[::-1]
    with pytest.raises(
        TypeError, match="a Ref index must be made of integers, integer arrays, slices and '...'"
    ):
        h[1.0]
    with pytest.raises(
        TypeError, match=r"cannot be converted to a NumPy array directly: read its value with ref\[...\]"
    ):
        np.asarray(h)
    with pytest.raises(TypeError, match="A Ref is not iterable"):
        list(h)


def test_constructor_errors():
    with pytest.raises(TypeError, match="new_ref: Error interpreting argument to new_ref as a JAX value"):
        morphax.new_ref([1.0, 2.0])
    with pytest.raises(TypeError, match=r"new_ref: init_val is already a Ref \(Ref\{float32\[\]\}\)"):
        morphax.new_ref(morphax.new_ref(1.0))
    with pytest.raises(NotImplementedError, match="new_ref: memory_space='any' is not supported"):
        morphax.new_ref(1.0, memory_space="any")
    with pytest.raises(TypeError, match="freeze: expected a Ref"):
        morphax.freeze(jnp.ones(2))
    with pytest.raises(TypeError, match="free_ref: expected a Ref"):
        morphax.free_ref(jnp.ones(2))
    with pytest.raises(TypeError, match="empty_ref: ty must describe an array type"):
        morphax.empty_ref(3)


# -------------------------------------------------------------------------------------- jit


def test_jit_with_a_ref_argument():
    r = morphax.new_ref(jnp.zeros(3))

    @morphax.jit
    def f(ref, x):
        ref[...] += x
        return ref[0] * 2

    trace_counters.reset()
    assert float(f(r, jnp.ones(3))) == 2.0
    np.testing.assert_array_equal(arr(r[...]), np.ones(3))
    assert float(f(r, jnp.ones(3))) == 4.0
    np.testing.assert_array_equal(arr(r[...]), 2 * np.ones(3))
    other = morphax.new_ref(jnp.full(3, 10.0, jnp.float32))
    assert float(f(other, jnp.ones(3))) == 22.0  # another ref of the same type: same trace
    assert trace_counters.traces == 1
    np.testing.assert_array_equal(arr(r[...]), 2 * np.ones(3))
    # eager writes between calls are seen by the next call
    r[1] = 100.0
    f(r, jnp.ones(3))
    np.testing.assert_array_equal(arr(r[...]), [3.0, 101.0, 3.0])


def test_jit_with_a_closed_over_ref():
    c = morphax.new_ref(jnp.zeros(3))

    @morphax.jit
    def g(x):
        c[...] += x
        return c[...].sum()

    trace_counters.reset()
    assert float(g(jnp.ones(3))) == 3.0
    assert float(g(jnp.ones(3))) == 6.0
    np.testing.assert_array_equal(arr(c[...]), 2 * np.ones(3))
    assert trace_counters.traces == 1


def test_make_jaxpr_shows_the_ref_operations():
    def f(ref, x, i):
        ref[...] += x
        ref[i] = 5.0
        ref.addupdate(x)
        return ref[1:3]

    text = str(morphax.make_jaxpr(f)(morphax.new_ref(jnp.ones(4)), jnp.ones(4), 1))
    assert text.startswith("{ lambda ; a:Ref{f32[4]} b:f32[4] c:i32[]. let")
    assert "d:f32[4] <- a[...]" in text
    # stores whose old value nobody reads print as JAX 0.10 prints them
    assert "a[...] <- e" in text
    assert "a[c] <- 5.0:f32[]" in text
    assert "a[...] += b" in text
    assert "f:f32[2] <- a[1:3]" in text

    c = morphax.new_ref(0.0)
    text = str(morphax.make_jaxpr(lambda x: c.__setitem__(..., x))(1.0))
    assert text.startswith("{ lambda a:Ref{f32[]}; b:f32[]. let")

    def inner(x):
        q = morphax.new_ref(x)
        q[0] = 5.0
        return morphax.freeze(q)

    text = str(morphax.make_jaxpr(inner)(jnp.ones(3)))
    assert "b:Ref{f32[3]} = new_ref[kind=None memory_space=None] a" in text
    assert "c:f32[3] = freeze b" in text
    text = str(morphax.make_jaxpr(lambda: morphax.empty_ref(morphax.ShapeDtypeStruct((2,), jnp.float32)))())
    assert "a:Ref{f32[2]} = empty_ref[memory_space=None ty=f32[2]]" in text
    # a jit call that takes refs stays one equation holding the ref operations, as in JAX
    r = morphax.new_ref(jnp.zeros(3))
    text = str(morphax.make_jaxpr(morphax.jit(lambda ref: ref.__setitem__(0, 1.0)))(r))
    assert text.startswith(
        "{ lambda ; a:Ref{f32[3]}. let\n    jit[\n      name=<lambda>\n      jaxpr={ lambda ; a:Ref{f32[3]}. let"
    )
    assert "b:f32[], a[0] <- a[0], 1.0:f32[]" in text
    c = morphax.new_ref(jnp.zeros(3))
    text = str(morphax.make_jaxpr(morphax.jit(lambda x: c.__setitem__(..., x)))(jnp.ones(3)))
    assert text.startswith("{ lambda a:Ref{f32[3]}; b:f32[3]. let\n    jit[")
    assert text.rstrip().endswith("] a b\n  in () }")


def test_refs_created_inside_jit():
    @morphax.jit
    def h(x):
        q = morphax.new_ref(x)
        q[0] = 5.0
        q[...] *= 2
        e = morphax.empty_ref(morphax.typeof(x))
        e[...] = q[...] + 1
        return e[...]

    np.testing.assert_array_equal(arr(h(jnp.ones(3))), [11.0, 3.0, 3.0])
    # refs made inside are discharged at trace time: the jitted program is functional
    text = h.trace(jnp.ones(3)).jaxpr.pretty_print()
    assert "<-" not in text and "new_ref" not in text


def test_jit_errors():
    @morphax.jit
    def ret(x):
        return morphax.new_ref(x)

    with pytest.raises(
        ValueError,
        match=r"traced for jit returned a mutable array reference of type Ref\{float32\[3\]\}, but mutable array references cannot be returned",
    ):
        ret(jnp.ones(3))

    @morphax.jit
    def ret2(ref):
        return ref

    with pytest.raises(ValueError, match="The returned mutable array was passed in as the argument ref"):
        ret2(morphax.new_ref(jnp.ones(3)))

    @morphax.jit
    def alias(a, b):
        a[...] += 1
        b[...] += 1

    rr = morphax.new_ref(jnp.zeros(2))
    with pytest.raises(
        ValueError,
        match=r"only one reference to a mutable array may be passed as an argument to a function, but when tracing alias at .* for jit the mutable array reference of type Ref\{float32\[2\]\} appeared at both a and b",
    ):
        alias(rr, rr)
    alias(rr, morphax.new_ref(jnp.zeros(2)))
    np.testing.assert_array_equal(arr(rr[...]), np.ones(2))
    with pytest.raises(
        NotImplementedError,
        match=r"jit\(alias\).trace/lower: the function takes or closes over mutable array references",
    ):
        alias.lower(rr, rr)


def test_staged_jit_calls_with_refs_run_everywhere():
    r = morphax.new_ref(jnp.zeros(3))

    @morphax.jit
    def f(ref, x):
        ref[...] += x
        return ref[0] * 2

    closed = morphax.make_jaxpr(f)(r, jnp.ones(3))
    assert float(jaxpr_as_fun(closed)(r, jnp.ones(3))[0]) == 2.0  # evaluated eagerly
    assert float(lax.fori_loop(0, 2, lambda i, a: a + f(r, jnp.ones(3)), 0.0)) == 4.0 + 6.0
    np.testing.assert_array_equal(arr(r[...]), 3 * np.ones(3))
    np.testing.assert_array_equal(
        arr(morphax.vmap(lambda x: f(morphax.new_ref(x), x))(jnp.ones((2, 3)))), [4.0, 4.0]
    )


def test_nested_jit_with_refs():
    r = morphax.new_ref(jnp.zeros(2))

    @morphax.jit
    def inner(ref, x):
        ref[...] += x

    @morphax.jit
    def outer(x):
        inner(r, x)
        inner(r, 2 * x)
        return r[0]

    assert float(outer(jnp.ones(2))) == 3.0
    np.testing.assert_array_equal(arr(r[...]), [3.0, 3.0])


# --------------------------------------------------------------------------- control flow


def test_fori_loop_with_a_closed_over_ref():
    r = morphax.new_ref(jnp.zeros(3))

    def body(i, c):
        r[i] += 1.0 * i
        return c + 1

    assert int(lax.fori_loop(0, 3, body, 0)) == 3
    np.testing.assert_array_equal(arr(r[...]), [0.0, 1.0, 2.0])
    text = str(morphax.make_jaxpr(lambda: lax.fori_loop(0, 3, body, 0))())
    assert "jaxpr={ lambda ; c:Ref{f32[3]} d:i32[] e:i32[]. let" in text
    assert "g:f32[] <- c[d]" in text
    # traced bounds make a while_loop; under jit the ref is an argument
    f = morphax.jit(lambda ref, n: lax.fori_loop(0, n, lambda i, c: (ref.__setitem__(i, c), c * 2)[1], 1.0))
    q = morphax.new_ref(jnp.zeros(4))
    assert float(f(q, 3)) == 8.0
    np.testing.assert_array_equal(arr(q[...]), [1.0, 2.0, 4.0, 0.0])


def test_scan_with_a_closed_over_ref():
    r = morphax.new_ref(jnp.zeros(()))

    def body(c, x):
        r[...] += x
        return c + x, r[...]

    xs = jnp.arange(4.0)
    (c, ys) = lax.scan(body, 0.0, xs)
    np.testing.assert_array_equal(arr(ys), np.cumsum(np.arange(4.0)))
    assert float(r[...]) == 6.0 and float(c) == 6.0
    (c, ys) = morphax.jit(lambda xs: lax.scan(body, 0.0, xs))(xs)
    np.testing.assert_array_equal(arr(ys), 6.0 + np.cumsum(np.arange(4.0)))
    assert float(r[...]) == 12.0
    _, ys = lax.scan(body, 0.0, xs, reverse=True)
    np.testing.assert_array_equal(arr(ys), 12.0 + np.cumsum(np.arange(4.0)[::-1])[::-1])


def test_refs_created_inside_loop_bodies():
    def body(i, c):
        q = morphax.new_ref(c)
        q[...] += 1.0
        return q[...]

    assert float(lax.fori_loop(0, 3, body, 0.0)) == 3.0
    assert float(morphax.jit(lambda: lax.fori_loop(0, 3, body, 0.0))()) == 3.0


def test_while_loop_and_cond_with_refs():
    r = morphax.new_ref(0.0)

    def body(c):
        r[...] += 1.0
        return c + 1

    n = lax.while_loop(lambda c: r[...] < 5.0, body, 0)  # cond reads, body writes
    assert int(n) == 5 and float(r[...]) == 5.0
    lax.cond(True, lambda: r.__setitem__(..., 7.0), lambda: None)
    assert float(r[...]) == 7.0
    lax.cond(False, lambda: r.__setitem__(..., 9.0), lambda: None)
    assert float(r[...]) == 7.0
    # cond_fun may write too; as in JAX, the writes of the final (false) test are not kept
    tests = morphax.new_ref(0)

    def counting_cond(c):
        tests[...] += 1
        return c < 3

    assert int(lax.while_loop(counting_cond, lambda c: c + 1, 0)) == 3 and int(tests[...]) == 3
    assert int(morphax.jit(lambda: lax.while_loop(counting_cond, lambda c: c + 1, 0))()) == 3
    assert int(tests[...]) == 6
    g = morphax.jit(lambda p: lax.cond(p, lambda: r.__setitem__(..., r[...] * 2), lambda: None))
    g(True)
    g(False)
    assert float(r[...]) == 14.0


def test_refs_as_cond_operands_and_in_pytrees():
    r = morphax.new_ref(jnp.zeros(3))
    lax.cond(True, lambda q: q.__setitem__(0, 1.0), lambda q: None, r)
    branches = [lambda q: q.__setitem__(1, 2.0), lambda q: q.__setitem__(2, 3.0)]
    morphax.jit(lambda i: lax.switch(i, branches, r))(1)
    np.testing.assert_array_equal(arr(r[...]), [1.0, 0.0, 3.0])
    morphax.jit(lambda d: d["a"].__setitem__(0, 6.0))({"a": r})
    morphax.jit(lambda q, n: q.__setitem__(1, float(n)), static_argnums=1)(r, 4)
    morphax.jit(lambda q=None: q.__setitem__(2, 5.0))(q=r)
    np.testing.assert_array_equal(arr(r[...]), [6.0, 4.0, 5.0])
    with morphax.disable_jit():
        morphax.jit(lambda q: q.__setitem__(0, 9.0))(r)
    assert float(r[0]) == 9.0
    # refs made inside a checkpointed function are discharged with it
    f = morphax.checkpoint(
        lambda x: (lambda q: (q.__setitem__(..., q[...] * 2), q[...])[1])(morphax.new_ref(x))
    )
    np.testing.assert_array_equal(arr(f(jnp.ones(2))), [2.0, 2.0])


def test_control_flow_errors():
    with pytest.raises(
        TypeError, match=r"Ref\{float32\[3\]\} is the type of a mutable array reference, not of an array"
    ):
        lax.scan(lambda c, x: (c, x), 0.0, morphax.new_ref(jnp.zeros(3)))
    r0 = morphax.new_ref(0.0)
    with pytest.raises(
        NotImplementedError,
        match="A mutable array reference is passed to `checkpoint`, which cannot thread refs yet",
    ):
        morphax.jit(morphax.checkpoint(lambda x: (r0.__setitem__(..., x), x)[1]))(1.0)
    with pytest.raises(
        ValueError, match="scan: a mutable array reference cannot be a carry or a scanned-over input"
    ):
        lax.fori_loop(0, 3, lambda i, q: q, morphax.new_ref(0.0))
    with pytest.raises(ValueError, match="while_loop: a mutable array reference cannot be part of the carry"):
        morphax.jit(lambda: [lax.while_loop(lambda q: False, lambda q: q, morphax.new_ref(0.0)), None][1])()
    r = morphax.new_ref(0.0)

    def cond_writes(c):
        r[...] = 1.0
        return c < 1

    assert int(lax.while_loop(cond_writes, lambda c: c + 1, 0)) == 1 and float(r[...]) == 1.0


# ----------------------------------------------------------------------- jvp, grad, vmap


def _strided_updates(x):
    q = morphax.new_ref(x)
    q[::2] = q[::2] * 3.0
    q[1] += q[0] ** 2
    q.addupdate(jnp.sin(x))
    return morphax.freeze(q)


def _strided_updates_np(x):
    q = np.array(x, dtype=np.float64)
    q[::2] *= 3.0
    q[1] += q[0] ** 2
    return q + np.sin(x)


def _loop_accumulate(x):
    q = morphax.new_ref(jnp.zeros(3, x.dtype))

    def body(i, c):
        q[i] = c * x
        return c + 1.0

    lax.fori_loop(0, 3, body, jnp.ones((), x.dtype))
    return q[...].sum() * x


@pytest.mark.parametrize("fun", [_strided_updates, _loop_accumulate], ids=["updates", "fori_loop"])
def test_check_grads_through_refs(fun):
    with morphax.enable_x64():
        x = jnp.asarray(np.linspace(0.1, 1.0, 4)) if fun is _strided_updates else jnp.asarray(0.7)
        morphax.test_util.check_grads(fun, (x,), order=2, modes=("fwd", "rev"))
        morphax.test_util.check_grads(morphax.jit(fun), (x,), order=1, modes=("fwd", "rev"))
    x = np.linspace(0.1, 1.0, 4).astype(np.float32)
    np.testing.assert_allclose(arr(_strided_updates(jnp.asarray(x))), _strided_updates_np(x), rtol=1e-6)
    np.testing.assert_allclose(float(_loop_accumulate(jnp.asarray(2.0, jnp.float32))), 24.0)


def test_vmap_and_grad_of_loops_with_refs():
    def f(x):
        q = morphax.new_ref(jnp.zeros(3))

        def body(i, c):
            q[i] = c * x
            return c + 1.0

        lax.fori_loop(0, 3, body, 1.0)
        return q[...].sum()

    np.testing.assert_array_equal(arr(morphax.vmap(f)(jnp.arange(3.0))), [0.0, 6.0, 12.0])
    np.testing.assert_array_equal(arr(morphax.vmap(morphax.grad(f))(jnp.arange(3.0))), [6.0, 6.0, 6.0])
    assert float(morphax.grad(f)(2.0)) == 6.0

    def c(p, x):
        q = morphax.new_ref(x)
        lax.cond(p, lambda: q.__setitem__(..., q[...] * 2), lambda: q.__setitem__(..., q[...] + 1))
        return q[...]

    np.testing.assert_array_equal(
        arr(morphax.vmap(c)(jnp.array([True, False]), jnp.array([3.0, 3.0]))), [6.0, 4.0]
    )
    assert float(morphax.grad(lambda x: c(True, x))(3.0)) == 2.0
    outer = morphax.new_ref(jnp.arange(3.0))
    read = morphax.vmap(lambda x: lax.fori_loop(0, 2, lambda i, a: a + outer[...].sum() * x, 0.0))
    np.testing.assert_array_equal(arr(read(jnp.arange(2.0))), [0.0, 6.0])
    write = morphax.vmap(lambda x: lax.fori_loop(0, 2, lambda i, a: (outer.__setitem__(0, x), a)[1], 0.0))
    with pytest.raises(
        ValueError, match="scan: performing a write with a vmapped value on an unbatched array reference"
    ):
        write(jnp.arange(2.0))


def test_jvp_of_refs_made_inside():
    def f(x):
        q = morphax.new_ref(0.0)
        q[...] += x**2
        q[...] += jnp.sin(x)
        return q[...]

    y, t = morphax.jvp(f, (1.0,), (1.0,))
    np.testing.assert_allclose(float(y), 1 + np.sin(1.0), rtol=1e-6)
    np.testing.assert_allclose(float(t), 2 + np.cos(1.0), rtol=1e-6)
    # grad through jit: the refs are discharged, so reverse mode works
    np.testing.assert_allclose(float(morphax.grad(morphax.jit(f))(1.0)), 2 + np.cos(1.0), rtol=1e-6)
    np.testing.assert_allclose(float(morphax.grad(f)(1.0)), 2 + np.cos(1.0), rtol=1e-6)
    np.testing.assert_allclose(float(morphax.jit(morphax.grad(f))(1.0)), 2 + np.cos(1.0), rtol=1e-6)


def test_grad_with_closed_over_refs():
    g = morphax.new_ref(2.0)
    assert float(morphax.grad(lambda x: x * g[...])(3.0)) == 2.0  # reads are constants

    def writes_const(x):
        g[...] = 3.0
        return x * 2

    assert float(morphax.grad(writes_const)(1.0)) == 2.0 and float(g[...]) == 3.0

    def writes_x(x):
        g[...] += x
        return x

    with pytest.raises(
        ValueError,
        match=r"performing a swap operation with a differentiated value on a non-differentiated array reference of type Ref\{float32\[\]\}",
    ):
        morphax.grad(writes_x)(1.0)


def test_vmap_of_refs():
    def f(x):
        q = morphax.new_ref(jnp.zeros(()))
        q[...] += x
        q[...] *= 2
        return q[...]

    np.testing.assert_array_equal(arr(morphax.vmap(f)(jnp.arange(3.0))), [0.0, 2.0, 4.0])

    def g(x):
        q = morphax.new_ref(x)
        q[0] += 5.0
        return q[...]

    np.testing.assert_array_equal(arr(morphax.vmap(g)(jnp.ones((2, 3)))), [[6.0, 1, 1], [6.0, 1, 1]])
    np.testing.assert_array_equal(
        arr(morphax.vmap(g, in_axes=1, out_axes=1)(jnp.ones((3, 2)))), [[6.0, 6.0], [1, 1], [1, 1]]
    )
    ra = morphax.new_ref(jnp.ones((2, 3)))
    morphax.vmap(lambda r, x: r.__setitem__(1, x))(ra, jnp.zeros(2))
    np.testing.assert_array_equal(arr(ra[...]), [[1.0, 0.0, 1.0], [1.0, 0.0, 1.0]])
    closed = morphax.new_ref(jnp.arange(3.0))
    np.testing.assert_array_equal(
        arr(morphax.vmap(lambda x: x * closed[...])(jnp.ones((2, 3)))), [[0.0, 1, 2]] * 2
    )

    def writes(x):
        closed[...] += x
        return x

    with pytest.raises(
        ValueError,
        match=r"performing a swap operation with a vmapped value on an unbatched array reference of type Ref\{float32\[3\]\}",
    ):
        morphax.vmap(writes)(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="performing a swap operation with a vmapped value on an unbatched"):
        morphax.vmap(morphax.jit(writes))(jnp.ones((2, 3)))
    with pytest.raises(
        NotImplementedError, match="vmap of a ref `get` whose index is batched is not supported"
    ):
        morphax.vmap(lambda i: morphax.new_ref(jnp.arange(3.0))[i])(jnp.arange(2))

    def e(x):
        q = morphax.empty_ref(morphax.typeof(x))
        q[...] = x * 2
        return q[...]

    np.testing.assert_array_equal(arr(morphax.vmap(e)(jnp.ones((2, 3)))), 2 * np.ones((2, 3)))
