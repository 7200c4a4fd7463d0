"""`x + 2`, `2.5 * x`, `x / 3`, `1 - x` on ready Arrays: the operators' shortcut for a Python
scalar that keeps the array's dtype (array_methods._scalar_like) against the general path
(jnp.add and friends, which promote as JAX does) and NumPy, bit for bit: dtype, weak type and
values, for every dtype the shortcut takes and the scalars it must leave to the general path
(NaN, infinities, out-of-range values, an int array with a float)."""

from __future__ import annotations

import operator

import ml_dtypes
import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax._src.numpy import array_methods
from morphax._src.prims.conversion import _convert_element_type

DTYPES = [
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "int8",
    "int32",
    "int64",
    "uint8",
    "uint32",
]
SCALARS = [0, 3, -2, 300, 2**40, 2.5, -0.0, 1e300, float("nan"), float("inf")]
OPS = [
    (operator.add, jnp.add),
    (operator.sub, jnp.subtract),
    (operator.mul, jnp.multiply),
    (operator.truediv, jnp.true_divide),
]


def _array(dtype, weak):
    if dtype in ("float64", "int64", "complex128") and not morphax.config.jax_enable_x64:
        pytest.skip("64-bit dtypes need x64")
    dt = np.dtype(getattr(ml_dtypes, dtype, dtype) if dtype == "bfloat16" else dtype)
    base = np.array([0, 1, 2, 5, 7, 100], dtype=np.float64)
    x = morphax.device_put(base.astype(dt))
    if weak:
        x = _convert_element_type(x, dt, weak_type=True)
        assert x.weak_type
    return x


def _outcome(fn):
    try:
        with np.errstate(all="ignore"):
            out = fn()
        return (out.dtype, out.weak_type, np.asarray(out).tobytes())
    except Exception as e:  # noqa: BLE001 - the same error either way
        return (type(e), str(e))


@pytest.mark.parametrize("weak", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_operators_with_python_scalars_match_the_general_path(dtype, weak, monkeypatch):
    x = _array(dtype, weak)
    taken = []
    real = array_methods._scalar_like
    monkeypatch.setattr(array_methods, "_scalar_like", lambda a, s, k: taken.append(s) or real(a, s, k))
    for op, fn in OPS:
        for s in SCALARS:
            for left in (False, True):
                fast = _outcome(lambda: op(s, x) if left else op(x, s))  # noqa: B023
                general = _outcome(lambda: fn(s, x) if left else fn(x, s))  # noqa: B023
                assert fast == general, (op.__name__, s, left, fast, general)
    # The shortcut is taken where the scalar keeps the dtype (the general path agrees above).
    assert taken, "the shortcut never ran"


@pytest.fixture
def no_x64():
    with morphax.enable_x64(False):
        yield


def test_which_scalars_take_the_shortcut(no_x64):
    f32 = morphax.device_put(np.arange(4, dtype=np.float32))
    i32 = morphax.device_put(np.arange(4, dtype=np.int32))
    u8 = morphax.device_put(np.arange(4, dtype=np.uint8))
    kinds = "fiuc"
    assert array_methods._scalar_like(f32, 2, kinds) is not None
    assert array_methods._scalar_like(f32, 2.5, kinds) is not None
    assert array_methods._scalar_like(f32, float("nan"), kinds) is None
    assert array_methods._scalar_like(f32, 1e300, kinds) is None  # rounds to inf: general path
    assert array_methods._scalar_like(i32, 2, kinds) is not None
    assert array_methods._scalar_like(i32, 2.5, kinds) is None  # promotes to float
    assert array_methods._scalar_like(u8, 300, kinds) is None  # out of range: the general path
    assert array_methods._scalar_like(f32, 2**40, kinds) is None  # not an int32: JAX's error
    assert array_methods._scalar_like(i32, 2, "fc") is None  # division of ints promotes
    big = morphax.device_put(np.zeros(10_000, np.float32))
    view = array_methods._scalar_like(big, 3.0, kinds)
    assert view.weak_type and view.shape == big.shape and float(view[17]) == 3.0


def test_results_are_what_jax_gives(no_x64):
    # JAX 0.10.2: x * 2 keeps float32 (strong stays strong, weak stays weak); uint8 + 3 is uint8;
    # 1 - x for int32 is int32; x / 2 for float16 is float16; u8 + 300 wraps around (uint8
    # [38, 47] for [250, 3]); a float32 array + 2**40 raises OverflowError (the int is int32 first).
    x = morphax.device_put(np.array([1.0, 2.0], np.float32))
    assert (x * 2).dtype == np.float32 and not (x * 2).weak_type
    w = jnp.asarray(1.5) * 2  # a weak float32 scalar stays weak
    assert w.dtype == np.float32 and w.weak_type
    u = morphax.device_put(np.array([250, 3], np.uint8))
    assert (u + 3).dtype == np.uint8 and list(np.asarray(u + 10)) == [4, 13]
    i = morphax.device_put(np.array([5, -7], np.int32))
    assert (1 - i).dtype == np.int32 and list(np.asarray(1 - i)) == [-4, 8]
    h = morphax.device_put(np.array([3.0], np.float16))
    assert (h / 2).dtype == np.float16 and float((h / 2)[0]) == 1.5
    wrapped = u + 300
    assert wrapped.dtype == np.uint8 and list(np.asarray(wrapped)) == [38, 47]
    with pytest.raises(OverflowError):
        x + 2**40
