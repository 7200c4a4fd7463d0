"""Issue 12 #9: numerics that must match JAX 0.10.2.

Each expected value below was produced by JAX 0.10.2 (CPU) and is stated literally.
"""

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax

# ------------------------------------------------------------------------------------------------
# Running sums/products combine as a tree (JAX's associative scan), not left to right.

N = 10**7
# float64 running sum of 1e7 float32 0.1s (each is 0.100000001490116...).
EXACT_SUM = 1000000.0149011612
ULP_AT_1E6 = 0.0625  # spacing of float32 numbers in [2**19, 2**20)


@pytest.fixture(scope="module")
def tenths():
    return jnp.full((N,), 0.1, jnp.float32)


@pytest.mark.parametrize(
    "name, fn",
    [
        ("jnp.cumsum", jnp.cumsum),
        ("jnp.cumulative_sum", lambda x: jnp.cumulative_sum(x, axis=0)),
        ("lax.cumsum", lax.cumsum),
        ("jit(jnp.cumsum)", morphax.jit(jnp.cumsum)),
    ],
)
def test_cumsum_of_1e7_float32_tenths_is_within_a_few_ulp(tenths, name, fn):
    # JAX 0.10.2 gives 1000000.1875 (3 ulp above the exact 1000000.0149); a left-to-right float32
    # accumulation gives 1087937.0, 8.8% off.
    last = float(fn(tenths)[-1])
    assert abs(last - EXACT_SUM) <= 4 * ULP_AT_1E6, (name, last)


def test_cumsum_is_accurate_at_every_position_and_in_reverse(tenths):
    x = np.asarray(tenths)
    exact = np.cumsum(x.astype(np.float64))
    got = np.asarray(jnp.cumsum(tenths)).astype(np.float64)
    assert np.max(np.abs(got - exact) / exact) < 1e-6
    rev = float(lax.cumsum(tenths, reverse=True)[0])
    assert abs(rev - EXACT_SUM) <= 4 * ULP_AT_1E6


def test_cumsum_along_an_inner_axis_is_accurate():
    x = jnp.full((3, 200_000, 2), 0.1, jnp.float32)
    got = np.asarray(jnp.cumsum(x, axis=1))[:, -1, :]
    exact = 200_000 * float(np.float32(0.1))
    assert np.all(np.abs(got - exact) <= 4 * np.spacing(np.float32(exact)))


def test_cumprod_of_1e6_factors_is_accurate():
    # JAX 0.10.2: 1.1265718 (float64 reference 1.1266057); left to right in float32: 1.1192093.
    y = jnp.full((10**6,), 1.0000001, jnp.float32)
    exact = float(np.prod(np.asarray(y).astype(np.float64)))
    got = float(jnp.cumprod(y)[-1])
    assert abs(got - exact) / exact < 1e-4


def test_small_and_integer_scans_are_unchanged():
    assert jnp.cumsum(jnp.arange(5.0)).tolist() == [0.0, 1.0, 3.0, 6.0, 10.0]
    assert jnp.cumprod(jnp.arange(1.0, 6.0)).tolist() == [1.0, 2.0, 6.0, 24.0, 120.0]
    big = np.iinfo(np.int32).max
    assert jnp.cumsum(jnp.array([big, 1, 1], jnp.int32)).tolist() == [big, -(2**31), -(2**31) + 1]
    x = np.random.default_rng(0).standard_normal((4, 37)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(jnp.cumsum(x, axis=1)), np.cumsum(x, axis=1), rtol=1e-5, atol=1e-5)
    specials = jnp.array([1.0, np.inf, 2.0, -np.inf, 3.0], jnp.float32)
    out = np.asarray(jnp.cumsum(specials))
    assert out[:3].tolist() == [1.0, np.inf, np.inf] and np.isnan(out[3:]).all()


# ------------------------------------------------------------------------------------------------
# Division by zero. lax.div gives -1 (signed) / all ones (unsigned) and lax.rem gives x; the
# jnp functions build on those, so JAX's x // 0 for int32 is -2 for x != 0 and -1 for x == 0,
# while remainder/fmod/mod of integers by 0 are 0 (as in NumPy).

I32 = [7, -7, 0]
U32 = [7, 4294967289, 0]
UMAX = 4294967295

INT_DIV_BY_ZERO = {
    # name: (fn, int32 result for I32 // 0, uint32 result for U32 // 0)
    "floor_divide": (jnp.floor_divide, [-2, -2, -1], [UMAX] * 3),
    "//": (lambda a, b: a // b, [-2, -2, -1], [UMAX] * 3),
    "remainder": (jnp.remainder, [0, 0, 0], [0, 0, 0]),
    "mod": (jnp.mod, [0, 0, 0], [0, 0, 0]),
    "%": (lambda a, b: a % b, [0, 0, 0], [0, 0, 0]),
    "fmod": (jnp.fmod, [0, 0, 0], [0, 0, 0]),
    "divmod[0]": (lambda a, b: jnp.divmod(a, b)[0], [-2, -2, -1], [UMAX] * 3),
    "divmod[1]": (lambda a, b: jnp.divmod(a, b)[1], [0, 0, 0], [0, 0, 0]),
    "lax.div": (lax.div, [-1, -1, -1], [UMAX] * 3),
    "lax.rem": (lax.rem, I32, U32),
}


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("dtype", ["int32", "uint32"])
@pytest.mark.parametrize("name", list(INT_DIV_BY_ZERO))
def test_integer_division_by_zero_matches_jax(name, dtype, jit):
    fn, want_i32, want_u32 = INT_DIV_BY_ZERO[name]
    x = jnp.array(I32 if dtype == "int32" else U32, dtype)
    zero = jnp.zeros(3, dtype)
    f = morphax.jit(fn) if jit else fn
    out = f(x, zero)
    assert out.dtype == np.dtype(dtype)
    assert np.asarray(out).tolist() == (want_i32 if dtype == "int32" else want_u32)


def test_integer_division_by_a_python_zero():
    x = jnp.array(I32, jnp.int32)
    assert np.asarray(x // 0).tolist() == [-2, -2, -1]
    assert np.asarray(x % 0).tolist() == [0, 0, 0]
    xu = jnp.array(U32, jnp.uint32)
    assert np.asarray(xu // 0).tolist() == [UMAX] * 3
    assert np.asarray(xu % 0).tolist() == [0, 0, 0]


def test_integer_division_by_nonzero_is_unchanged():
    a = jnp.array([7, -7, 7, -7, 0], jnp.int32)
    b = jnp.array([2, 2, -2, -2, 3], jnp.int32)
    assert np.asarray(a // b).tolist() == [3, -4, -4, 3, 0]
    assert np.asarray(a % b).tolist() == [1, 1, -1, -1, 0]
    assert np.asarray(jnp.fmod(a, b)).tolist() == [1, -1, 1, -1, 0]
    m = jnp.array([-(2**31)], jnp.int32)
    assert np.asarray(m // -1).tolist() == [-(2**31)] and np.asarray(m % -1).tolist() == [0]


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_float_floor_divide_by_zero_is_signed_inf(jit):
    # JAX and NumPy: x // 0.0 is +-inf (nan for 0/0); the remainder is nan.
    x = jnp.array([1.0, -1.0, 0.0, 5.5], jnp.float32)
    zero = jnp.zeros(4, jnp.float32)

    def all_forms(a, b):
        return jnp.floor_divide(a, b), a // b, jnp.divmod(a, b)[0], jnp.remainder(a, b), jnp.divmod(a, b)[1]

    f = morphax.jit(all_forms) if jit else all_forms
    fd, op, dm0, rem, dm1 = (np.asarray(v) for v in f(x, zero))
    for q in (fd, op, dm0):
        assert q[0] == np.inf and q[1] == -np.inf and np.isnan(q[2]) and q[3] == np.inf
    assert np.isnan(rem).all() and np.isnan(dm1).all()
    assert np.asarray(jnp.floor_divide(x, 0.0)).tolist()[:2] == [np.inf, -np.inf]
    # Nonzero divisors keep NumPy's fmod-based answer: floor_divide(1, 0.1) == 9.
    assert float(jnp.floor_divide(jnp.float32(1.0), jnp.float32(0.1))) == 9.0


# ------------------------------------------------------------------------------------------------
# dtypes in x64 mode (JAX 0.10.2): ints up to 32 bits become float32, not float64, when a function
# needs a float (to_inexact); index results along an axis that fits int32 are int32 for
# searchsorted/digitize/argpartition, but argmax/argsort/nonzero/... use the default int (int64).

X64_DTYPES = {
    "searchsorted": (lambda a, f: jnp.searchsorted(a, 2), "int32"),
    "searchsorted float": (lambda a, f: jnp.searchsorted(f, f), "int32"),
    "searchsorted int64 table": (lambda a, f: jnp.searchsorted(a.astype("int64"), 2), "int32"),
    "digitize": (lambda a, f: jnp.digitize(f, f), "int32"),
    "argpartition": (lambda a, f: jnp.argpartition(f, 1), "int32"),
    "mean int32": (lambda a, f: jnp.mean(a), "float32"),
    "mean int8": (lambda a, f: jnp.mean(a.astype("int8")), "float32"),
    "mean bool": (lambda a, f: jnp.mean(a > 1), "float32"),
    "mean uint32": (lambda a, f: jnp.mean(a.astype("uint32")), "float32"),
    "mean int64": (lambda a, f: jnp.mean(a.astype("int64")), "float64"),
    "mean dtype=float": (lambda a, f: jnp.mean(a, dtype=float), "float64"),
    "nanmean int32": (lambda a, f: jnp.nanmean(a), "float32"),
    "average int32": (lambda a, f: jnp.average(a), "float32"),
    "average weights": (lambda a, f: jnp.average(a, weights=a), "float32"),
    "var int32": (lambda a, f: jnp.var(a), "float32"),
    "std int32": (lambda a, f: jnp.std(a), "float32"),
    "var int64": (lambda a, f: jnp.var(a.astype("int64")), "float64"),
    "median int32": (lambda a, f: jnp.median(a), "float32"),
    "quantile int32": (lambda a, f: jnp.quantile(a, 0.5), "float32"),
    "quantile float64 q": (lambda a, f: jnp.quantile(f, jnp.array(0.5, "float64")), "float32"),
    "percentile int32": (lambda a, f: jnp.percentile(a, 50), "float32"),
    "cov int32": (lambda a, f: jnp.cov(a), "float32"),
    "corrcoef int32": (lambda a, f: jnp.corrcoef(a), "float32"),
    "sqrt int32": (lambda a, f: jnp.sqrt(a), "float32"),
    "true_divide int32": (lambda a, f: a / a, "float32"),
    "int32 * python float": (lambda a, f: a * 1.5, "float64"),
    "argmax": (lambda a, f: jnp.argmax(f), "int64"),
    "argmin": (lambda a, f: jnp.argmin(a), "int64"),
    "argsort": (lambda a, f: jnp.argsort(f), "int64"),
    "nonzero": (lambda a, f: jnp.nonzero(a, size=3)[0], "int64"),
    "argwhere": (lambda a, f: jnp.argwhere(a, size=3), "int64"),
    "flatnonzero": (lambda a, f: jnp.flatnonzero(a, size=3), "int64"),
    "lax.argmax int32": (lambda a, f: lax.argmax(f, 0, jnp.int32), "int32"),
    "sum int32": (lambda a, f: jnp.sum(a), "int64"),
    "cumsum int32": (lambda a, f: jnp.cumsum(a), "int32"),
    "mean float16": (lambda a, f: jnp.mean(f.astype("float16")), "float16"),
}


@pytest.mark.parametrize("name", list(X64_DTYPES))
def test_x64_result_dtypes_match_jax(name):
    fn, want = X64_DTYPES[name]
    with morphax.enable_x64(True):
        a = jnp.array([3, 1, 2], "int32")
        f = jnp.array([3.0, 1.0, 2.0], "float32")
        assert fn(a, f).dtype == np.dtype(want), name
        assert morphax.jit(fn)(a, f).dtype == np.dtype(want), name


def test_x32_result_dtypes_are_unchanged():
    a = jnp.array([3, 1, 2], "int32")
    assert jnp.mean(a).dtype == np.float32
    assert jnp.searchsorted(a, 2).dtype == np.int32
    assert jnp.median(a).dtype == np.float32
