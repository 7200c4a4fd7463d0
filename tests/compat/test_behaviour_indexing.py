"""Out-of-bounds indexing behaves as in JAX 0.10.2 (each expected value below is what JAX returns
for the same expression): reads clamp (static Python ints included), `mode="fill"` reads return
the fill value, updates out of bounds are dropped unless `mode="clip"`; negative indices wrap once
as in NumPy. Checked eagerly, under jit on the C and the NumPy backends, under vmap, and through
grad (default-mode reads clamp forward, but their transpose drops out-of-bounds cotangents, as
XLA's scatter does in JAX)."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.compiler.backends import get_backend
from morphax.experimental import checkify

NAN = np.nan
X = np.arange(5.0, dtype=np.float32)
M = np.arange(12.0, dtype=np.float32).reshape(3, 4)
IDX = np.array([1, 10, -1, -10], np.int32)
OOB = np.array([10, -10, -1, 2], np.int32)
_DN1 = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
_SDN1 = lax.ScatterDimensionNumbers(
    update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
_DNW = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1))
_SDNW = lax.ScatterDimensionNumbers(
    update_window_dims=(1, 2), inserted_window_dims=(), scatter_dims_to_operand_dims=(0, 1)
)

# (name, function of arrays, arguments, JAX's result)
CASES = [
    # static Python / NumPy ints out of bounds clamp (JAX lowers them to a dynamic_slice)
    ("int_past_end", lambda x: x[10], (X,), 4.0),
    ("int_before_start", lambda x: x[-10], (X,), 0.0),
    ("numpy_int", lambda x: x[np.int64(10)], (X,), 4.0),
    ("row_past_end", lambda m: m[5], (M,), [8.0, 9.0, 10.0, 11.0]),
    ("int_pair", lambda m: m[1, 5], (M,), 7.0),
    ("newaxis_int", lambda x: x[None, 7], (X,), [4.0]),
    ("slice_past_end", lambda x: x[2:10], (X,), [2.0, 3.0, 4.0]),
    ("at_get_int", lambda x: x.at[10].get(), (X,), 4.0),
    ("at_get_int_fill", lambda x: x.at[10].get(mode="fill", fill_value=3.0), (X,), 3.0),
    ("at_get_int_fill_nan", lambda x: x.at[10].get(mode="fill"), (X,), NAN),
    ("at_get_int_clip", lambda x: x.at[-10].get(mode="clip"), (X,), 0.0),
    ("at_get_int_promise", lambda x: x.at[-10].get(mode="promise_in_bounds"), (X,), 0.0),
    # array indices: negative ones wrap once, then the mode applies
    ("array_default", lambda x, i: x[i], (X, IDX), [1.0, 4.0, 4.0, 0.0]),
    ("traced_scalar", lambda x, i: x[i], (X, np.int32(10)), 4.0),
    ("traced_scalar_neg", lambda x, i: x[i], (X, np.int32(-10)), 0.0),
    ("fill", lambda x, i: x.at[i].get(mode="fill", fill_value=-7.0), (X, IDX), [1.0, -7.0, 4.0, -7.0]),
    ("fill_default", lambda x, i: x.at[i].get(mode="fill"), (X, IDX), [1.0, NAN, 4.0, NAN]),
    (
        "fill_int",
        lambda x, i: x.at[i].get(mode="fill"),
        (X.astype(np.int32), IDX),
        [1, -(2**31), 4, -(2**31)],
    ),
    ("fill_uint8", lambda x, i: x.at[i].get(mode="fill"), (X.astype(np.uint8), IDX), [1, 255, 4, 255]),
    ("fill_bool", lambda x, i: x.at[i].get(mode="fill"), (X > 2, IDX), [False, True, True, True]),
    ("clip", lambda x, i: x.at[i].get(mode="clip"), (X, IDX), [1.0, 4.0, 4.0, 0.0]),
    ("promise", lambda x, i: x.at[i].get(mode="promise_in_bounds"), (X, IDX), [1.0, 4.0, 4.0, 0.0]),
    ("uint_indices", lambda x, i: x[i], (X, np.array([3, 250], np.uint8)), [3.0, 4.0]),
    (
        "uint_indices_fill",
        lambda x, i: x.at[i].get(mode="fill"),
        (X, np.array([3, 250], np.uint8)),
        [3.0, NAN],
    ),
    (
        "row_and_slice_fill",
        lambda m, i: m.at[i, 1:3].get(mode="fill", fill_value=0.0),
        (M, np.array([1, 7])),
        [[5.0, 6.0], [0.0, 0.0]],
    ),
    (
        "two_arrays_fill",
        lambda m, i, j: m.at[i, j].get(mode="fill", fill_value=0.0),
        (M, np.array([1, 7]), np.array([4, 0])),
        [0.0, 0.0],
    ),
    ("take", lambda x, i: jnp.take(x, i), (X, np.array([10, -1])), [NAN, 4.0]),
    ("take_clip", lambda x, i: jnp.take(x, i, mode="clip"), (X, np.array([10, -1])), [4.0, 0.0]),
    ("take_wrap", lambda x, i: jnp.take(x, i, mode="wrap"), (X, np.array([10, -1])), [0.0, 4.0]),
    ("take_along_axis", lambda x, i: jnp.take_along_axis(x, i, axis=0), (X, np.array([10, -1])), [NAN, 4.0]),
    # updates: dropped out of bounds by default and under 'drop'/'fill', clamped under 'clip'
    ("set", lambda x, i: x.at[i].set(9.0), (X, IDX[[0, 1, 3]]), [0.0, 9.0, 2.0, 3.0, 4.0]),
    ("set_int", lambda x: x.at[10].set(9.0), (X,), [0.0, 1.0, 2.0, 3.0, 4.0]),
    ("set_int_neg", lambda x: x.at[-10].set(7.0), (X,), [0.0, 1.0, 2.0, 3.0, 4.0]),
    ("set_int_neg_in_bounds", lambda x: x.at[-5].set(7.0), (X,), [7.0, 1.0, 2.0, 3.0, 4.0]),
    ("set_int_clip", lambda x: x.at[10].set(7.0, mode="clip"), (X,), [0.0, 1.0, 2.0, 3.0, 7.0]),
    ("set_int_neg_clip", lambda x: x.at[-10].set(7.0, mode="clip"), (X,), [7.0, 1.0, 2.0, 3.0, 4.0]),
    ("add", lambda x, i: x.at[i].add(9.0), (X, IDX[:3]), [0.0, 10.0, 2.0, 3.0, 13.0]),
    ("mul", lambda x, i: x.at[i].mul(9.0), (X, IDX[:3]), [0.0, 9.0, 2.0, 3.0, 36.0]),
    ("set_clip", lambda x, i: x.at[i].set(9.0, mode="clip"), (X, IDX[[0, 1, 3]]), [9.0, 9.0, 2.0, 3.0, 9.0]),
    ("set_drop", lambda x, i: x.at[i].set(9.0, mode="drop"), (X, IDX[[0, 1, 3]]), [0.0, 9.0, 2.0, 3.0, 4.0]),
    ("set_fill", lambda x, i: x.at[i].set(9.0, mode="fill"), (X, IDX[[0, 1, 3]]), [0.0, 9.0, 2.0, 3.0, 4.0]),
    ("min_clip", lambda x, i: x.at[i].min(-9.0, mode="clip"), (X, IDX[:3]), [0.0, -9.0, 2.0, 3.0, -9.0]),
    ("traced_int_set", lambda x, i: x.at[i].set(9.0), (X, np.int32(-10)), [0.0, 1.0, 2.0, 3.0, 4.0]),
    (
        "traced_int_set_clip",
        lambda x, i: x.at[i].set(9.0, mode="clip"),
        (X, np.int32(-10)),
        [9.0, 1.0, 2.0, 3.0, 4.0],
    ),
    (
        "rows_set",
        lambda m, i: m.at[i, 1:3].set(-1.0),
        (M, np.array([1, 7])),
        [[0, 1, 2, 3], [4, -1, -1, 7], [8, 9, 10, 11]],
    ),
    # lax.gather / lax.scatter: gather's default mode is PROMISE_IN_BOUNDS (clamps the start so the
    # window fits); scatter's default drops updates whose window is not fully in bounds.
    ("lax_gather", lambda x, i: lax.gather(x, i, _DN1, (1,)), (X, np.array([[10], [-3]])), [4.0, 0.0]),
    (
        "lax_gather_fill",
        lambda x, i: lax.gather(x, i, _DN1, (1,), mode="fill"),
        (X, np.array([[10], [-3]])),
        [NAN, NAN],
    ),
    (
        "lax_window_gather",
        lambda m, i: lax.gather(m, i, _DNW, (2, 2)),
        (M, np.array([[2, 3]])),
        [[[6.0, 7.0], [10.0, 11.0]]],
    ),
    (
        "lax_window_gather_fill",
        lambda m, i: lax.gather(m, i, _DNW, (2, 2), mode="fill", fill_value=-1),
        (M, np.array([[2, 3], [0, 0]])),
        [[[-1.0, -1.0], [-1.0, -1.0]], [[0.0, 1.0], [4.0, 5.0]]],
    ),
    (
        "lax_scatter",
        lambda x, i: lax.scatter(x, i, jnp.ones(3), _SDN1),
        (X, np.array([[10], [-3], [1]])),
        [0.0, 1.0, 2.0, 3.0, 4.0],
    ),
    (
        "lax_scatter_add",
        lambda x, i: lax.scatter_add(x, i, jnp.ones(3), _SDN1),
        (X, np.array([[10], [-3], [1]])),
        [0.0, 2.0, 2.0, 3.0, 4.0],
    ),
    (
        "lax_scatter_add_clip",
        lambda x, i: lax.scatter_add(x, i, jnp.ones(3), _SDN1, mode="clip"),
        (X, np.array([[10], [-3], [1]])),
        [1.0, 2.0, 2.0, 3.0, 5.0],
    ),
    (
        "lax_window_scatter",
        lambda m, i: lax.scatter(m, i, -jnp.ones((2, 2, 2)), _SDNW),
        (M, np.array([[2, 3], [0, 0]])),
        [[-1, -1, 2, 3], [-1, -1, 6, 7], [8, 9, 10, 11]],
    ),
    (
        "lax_window_scatter_clip",
        lambda m, i: lax.scatter(m, i, -jnp.ones((2, 2, 2)), _SDNW, mode="clip"),
        (M, np.array([[2, 3], [0, 0]])),
        [[-1, -1, 2, 3], [-1, -1, -1, -1], [8, 9, -1, -1]],
    ),
    ("dynamic_slice", lambda x: lax.dynamic_slice(x, (4,), (2,)), (X,), [3.0, 4.0]),
    (
        "dynamic_update_slice",
        lambda x: lax.dynamic_update_slice(x, jnp.ones(2), (4,)),
        (X,),
        [0.0, 1.0, 2.0, 1.0, 1.0],
    ),
]

_RUNNERS = {
    "eager": lambda f: f,
    "jit_c": lambda f: morphax.jit(f, backend="c"),
    "jit_numpy": lambda f: morphax.jit(f, backend="numpy"),
}


def _check(got, want, where):
    got = np.asarray(got)
    want = np.asarray(want, dtype=got.dtype)
    assert got.shape == want.shape, f"{where}: shape {got.shape} != {want.shape}"
    np.testing.assert_array_equal(got, want, err_msg=where)  # NaN == NaN here


@pytest.mark.parametrize("runner", list(_RUNNERS))
def test_out_of_bounds_cases(runner):
    if runner == "jit_c" and not get_backend("c").available():
        pytest.skip("no working C compiler")
    for name, f, args, want in CASES:
        args = [jnp.asarray(a) for a in args]
        _check(_RUNNERS[runner](f)(*args), want, f"{name} ({runner})")


def test_out_of_bounds_under_vmap():
    x = jnp.asarray(X)
    i = jnp.asarray(OOB)
    _check(morphax.vmap(lambda i: x[i])(i), [4.0, 0.0, 4.0, 2.0], "vmap read")
    _check(
        morphax.vmap(lambda r, i: r[i])(jnp.arange(12.0).reshape(4, 3), i), [2.0, 3.0, 8.0, 11.0], "vmap rows"
    )
    fill = morphax.vmap(lambda i: x.at[i].get(mode="fill", fill_value=-1.0))(i)
    _check(fill, [-1.0, -1.0, 4.0, 2.0], "vmap fill")
    base = np.tile(X, (4, 1))
    dropped = base.copy()
    dropped[2, 4], dropped[3, 2] = -1, -1
    _check(morphax.vmap(lambda i: x.at[i].set(-1.0))(i), dropped, "vmap set")
    clipped = dropped.copy()
    clipped[0, 4], clipped[1, 0] = -1, -1
    _check(morphax.vmap(lambda i: x.at[i].set(-1.0, mode="clip"))(i), clipped, "vmap set clip")
    _check(
        morphax.jit(morphax.vmap(lambda i: x.at[i].get(mode="fill", fill_value=-1.0)))(i),
        fill,
        "jit(vmap) fill",
    )


GRAD_CASES = [
    # default-mode reads: clamped forward, out-of-bounds cotangents dropped (JAX)
    ("read", lambda x: x[jnp.asarray(OOB)].sum(), [0.0, 0.0, 1.0, 0.0, 1.0]),
    (
        "read_promise",
        lambda x: x.at[jnp.asarray(OOB)].get(mode="promise_in_bounds").sum(),
        [0.0, 0.0, 1.0, 0.0, 1.0],
    ),
    (
        "read_fill",
        lambda x: x.at[jnp.asarray(OOB)].get(mode="fill", fill_value=-1.0).sum(),
        [0.0, 0.0, 1.0, 0.0, 1.0],
    ),
    ("read_clip", lambda x: x.at[jnp.asarray(OOB)].get(mode="clip").sum(), [1.0, 0.0, 1.0, 0.0, 2.0]),
    # static ints: a clamped dynamic_slice, whose transpose writes at the clamped place
    ("static_int", lambda x: x[10], [0.0, 0.0, 0.0, 0.0, 1.0]),
    ("static_int_neg", lambda x: x[-10], [1.0, 0.0, 0.0, 0.0, 0.0]),
    ("set_operand", lambda x: x.at[jnp.asarray(OOB)].set(3.0).sum(), [1.0, 1.0, 0.0, 1.0, 0.0]),
    (
        "lax_gather",
        lambda x: lax.gather(x, jnp.array([[10], [-3], [4]]), _DN1, (1,)).sum(),
        [0.0, 0.0, 0.0, 0.0, 1.0],
    ),
]


@pytest.mark.parametrize("name,f,want", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_out_of_bounds_gradients(name, f, want):
    x = jnp.asarray(X)
    _check(morphax.grad(f)(x), want, f"grad {name}")
    _check(morphax.jit(morphax.grad(f))(x), want, f"jit(grad) {name}")


def test_out_of_bounds_gradients_of_updates_and_traced_ints():
    x = jnp.asarray(X)
    i = jnp.asarray(OOB)
    v = jnp.ones(4)
    _check(morphax.grad(lambda v: x.at[i].set(v).sum())(v), [0.0, 0.0, 1.0, 1.0], "grad set values")
    _check(morphax.grad(lambda v: x.at[i].set(v, mode="fill").sum())(v), [0.0, 0.0, 1.0, 1.0], "fill values")
    _check(morphax.grad(lambda v: x.at[i].add(v, mode="clip").sum())(v), [1.0, 1.0, 1.0, 1.0], "clip values")
    g = morphax.grad(lambda x, j: x[j])
    _check(g(x, 10), [0.0, 0.0, 0.0, 0.0, 1.0], "grad traced int")
    _check(g(x, -10), [1.0, 0.0, 0.0, 0.0, 0.0], "grad traced negative int")
    rows = morphax.vmap(morphax.grad(lambda x, j: x[j]), (None, 0))(x, i)
    _check(rows, np.eye(5, dtype=np.float32)[[4, 0, 4, 2]], "vmap(grad)")


def test_static_out_of_bounds_ints_are_dynamic_slices():
    # As in JAX, `x[10]` stages a dynamic_slice with the constant start (not an error, not a
    # static slice), so checkify's index checks report it.
    x = jnp.asarray(X)
    jaxpr = morphax.make_jaxpr(lambda x: x[10])(x)
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns][0] == "dynamic_slice"
    assert [e.primitive.name for e in morphax.make_jaxpr(lambda x: x[3])(x).jaxpr.eqns] != ["dynamic_slice"]
    err, out = checkify.checkify(lambda x: x[10], errors=checkify.index_checks)(x)
    assert float(out) == 4.0
    assert err.get().startswith("out-of-bounds indexing for array of shape (5,): index 10 is out of bounds")
    err, out = checkify.checkify(lambda x: x[-10], errors=checkify.index_checks)(x)
    assert float(out) == 0.0 and "index -5 is out of bounds" in err.get()  # normalized once, as JAX reports
    err, _ = checkify.checkify(lambda x: x.at[10].get(mode="clip"), errors=checkify.index_checks)(x)
    assert err.get() is None


def test_errors_that_remain():
    x = jnp.asarray(X)
    # An integer into an empty axis has nothing to clamp to (JAX raises too).
    with pytest.raises(IndexError, match="size 0"):
        jnp.zeros((0,))[0]
    with pytest.raises(IndexError, match="size 0"):
        jnp.zeros((0, 2))[jnp.array([0])]
    # Too many indices and unknown modes still raise.
    with pytest.raises(IndexError, match="Too many indices"):
        x[1, 2]
    with pytest.raises(ValueError, match="unknown out-of-bounds mode 'foo'"):
        x.at[1].get(mode="foo")
    with pytest.raises(ValueError, match='Unknown gather mode "foo"'):
        lax.gather(x, jnp.array([[1]]), _DN1, (1,), mode="foo")


def test_check_static_indices_option():
    # JAX: with jax_check_static_indices, a static int out of bounds raises IndexError in reads
    # under the default or 'promise_in_bounds' mode; 'clip' and 'fill' reads and updates do not.
    x = jnp.asarray(X)
    f = morphax.jit(lambda x: x[10])
    assert float(f(x)) == 4.0
    morphax.config.update("jax_check_static_indices", True)
    try:
        with pytest.raises(IndexError, match="index 10 out of bounds for axis 0 with size 5"):
            x[10]
        with pytest.raises(IndexError, match="index -6 out of bounds"):
            x[-6]
        with pytest.raises(IndexError, match="index 10 out of bounds"):
            x.at[10].get(mode="promise_in_bounds")
        with pytest.raises(IndexError, match="index 7 out of bounds for axis 1 with size 4"):
            jnp.asarray(M)[jnp.array([0]), 7]
        with pytest.raises(IndexError, match="index 10 out of bounds"):
            f(x)  # the option is part of jit's cache key: this retraces
        assert float(x[-5]) == 0.0
        assert float(x.at[10].get(mode="clip")) == 4.0
        assert np.isnan(float(x.at[10].get(mode="fill")))
        _check(x.at[10].set(1.0), X, "update")
    finally:
        morphax.config.update("jax_check_static_indices", False)
    assert float(f(x)) == 4.0
