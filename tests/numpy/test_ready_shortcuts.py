"""`x + 2`, `2.5 * x`, `x / 3`, `1 - x` on ready Arrays: the operators' shortcut for a Python
scalar that keeps the array's dtype (ready_shortcuts.scalar_like) against the general path
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
from morphax._src.numpy import ready_shortcuts
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
    real = ready_shortcuts.scalar_like
    monkeypatch.setattr(ready_shortcuts, "scalar_like", lambda a, s, k: taken.append(s) or real(a, s, k))
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
    assert ready_shortcuts.scalar_like(f32, 2, kinds) is not None
    assert ready_shortcuts.scalar_like(f32, 2.5, kinds) is not None
    assert ready_shortcuts.scalar_like(f32, float("nan"), kinds) is None
    assert ready_shortcuts.scalar_like(f32, 1e300, kinds) is None  # rounds to inf: general path
    assert ready_shortcuts.scalar_like(i32, 2, kinds) is not None
    assert ready_shortcuts.scalar_like(i32, 2.5, kinds) is None  # promotes to float
    assert ready_shortcuts.scalar_like(u8, 300, kinds) is None  # out of range: the general path
    assert ready_shortcuts.scalar_like(f32, 2**40, kinds) is None  # not an int32: JAX's error
    assert ready_shortcuts.scalar_like(i32, 2, "fc") is None  # division of ints promotes
    big = morphax.device_put(np.zeros(10_000, np.float32))
    view = ready_shortcuts.scalar_like(big, 3.0, kinds)
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


INDICES = [
    3,
    -1,
    10,  # out of bounds: JAX clamps a read (7.0 for arange(8.)) and drops a write
    -9,
    slice(1, 5),
    slice(None, None, -2),
    slice(5, 1, -1),
    slice(2, 2),
    slice(-100, 100, 3),
    (1, slice(None, None, 2)),
    (None, -1, slice(1, 3)),
    (Ellipsis, 1),
    (slice(None), None, 0),
    (),
    Ellipsis,
    (1, 2, 3),  # too many indices: JAX's error either way
    True,  # a bool is not an int here (the general path)
    (0, 1.5),  # not an index: the general path raises
]


def _general_take(x, idx):
    from morphax._src.numpy import indexing

    return indexing.getitem(x, idx)


def _general_set(x, idx, v):
    from morphax._src.numpy.indexing import _IndexUpdateRef

    return _IndexUpdateRef(x, idx)._update("set", v, False, False, None, "set", True)


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8", "bfloat16", "bool"])
def test_static_indexing_matches_the_general_path(dtype):
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    for shape in ((8,), (3, 4)):
        x = morphax.device_put((np.arange(np.prod(shape)) % 7).reshape(shape).astype(dt))
        for idx in INDICES:
            fast = _outcome(lambda: x[idx])  # noqa: B023
            general = _outcome(lambda: _general_take(x, idx))  # noqa: B023
            assert fast == general, (shape, idx, fast, general)


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8", "float16"])
def test_static_set_matches_the_general_path(dtype):
    dt = np.dtype(dtype)
    values = [5, -3, 300, 2.5, float("nan"), 1e6, True]
    for shape in ((8,), (3, 4)):
        x = morphax.device_put((np.arange(np.prod(shape)) % 7).reshape(shape).astype(dt))
        arrays = [
            morphax.device_put(np.array(9, dt)),
            morphax.device_put(np.full(shape[-1:], 4, dt)),
            morphax.device_put(np.full((1, 2), 4, dt)),  # leading axis: JAX's error for most
            morphax.device_put(np.full(shape[-1:], 4, np.int64 if dtype != "int32" else np.float32)),
        ]
        for idx in INDICES:
            for v in values + arrays:
                fast = _outcome(lambda: x.at[idx].set(v))  # noqa: B023
                general = _outcome(lambda: _general_set(x, idx, v))  # noqa: B023
                assert fast == general, (shape, idx, v, fast, general)


def test_static_shortcuts_are_taken_and_copy(no_x64):
    x = morphax.device_put(np.arange(8, dtype=np.float32))
    assert ready_shortcuts.static_take(x, 3) is not None
    assert ready_shortcuts.static_take(x, (Ellipsis, slice(1, 4))) is not None
    assert ready_shortcuts.static_take(x, 10) is None  # out of bounds: clamped by the general path
    assert ready_shortcuts.static_take(x, np.int32(3)) is None
    assert ready_shortcuts.static_set(x, 2, 5.0) is not None
    assert ready_shortcuts.static_set(x, 10, 5.0) is None  # dropped by the general path
    assert ready_shortcuts.static_set(x, 2, float("inf")) is None
    # The results own their memory: nothing done to them reaches x.
    y = x[1:5]
    assert not np.shares_memory(np.asarray(y), np.asarray(x))
    z = x.at[1:3].set(7.0)
    assert list(np.asarray(x)) == list(range(8)) and list(np.asarray(z)[:4]) == [0, 7, 7, 3]
    # JAX 0.10.2: a read past the end clamps, a write there is dropped.
    assert float(x[10]) == 7.0 and list(np.asarray(x.at[10].set(1.0))) == list(range(8))


# ---------------------------------------------------------------- two ready Arrays, and sin(x)

PAIR_SHAPES = [((6,), (6,)), ((2, 3), (1, 3)), ((2, 1), (1, 3)), ((2, 3), (3, 2)), ((), ())]


@pytest.fixture
def bind_calls(monkeypatch):
    """Primitives the eager trace was asked to evaluate."""
    from morphax._src.runtime import eager

    calls = []
    real = eager.EvalTrace.process_primitive

    def counting(self, prim, args, params):
        calls.append(prim.name)
        return real(self, prim, args, params)

    monkeypatch.setattr(eager.EvalTrace, "process_primitive", counting)
    return calls


def _like(model, values):
    """`values` (float64) as an Array of `model`'s dtype and weak type (integers wrap)."""
    dt = np.dtype(model.dtype)
    host = values.astype(np.int64).astype(dt) if dt.kind in "iu" else values.astype(dt)
    out = morphax.device_put(host)
    return _convert_element_type(out, dt, weak_type=True) if model.weak_type else out


def _general(fn):
    """`fn()` with the operators' shortcut for ready Arrays off (eager.READY_SHORTCUT)."""
    from morphax._src.runtime import eager

    saved = eager.READY_SHORTCUT[0]
    eager.READY_SHORTCUT[0] = False
    try:
        return _outcome(fn)
    finally:
        eager.READY_SHORTCUT[0] = saved


@pytest.mark.parametrize("weak", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_operators_on_two_ready_arrays_match_the_general_path(dtype, weak, bind_calls):
    rng = np.random.default_rng(7)
    for sx, sy in PAIR_SHAPES:
        # Large magnitudes too: int8 wraps, float16 overflows (warnings are errors here).
        raw = [rng.uniform(-3e4, 3e4, s) for s in (sx, sy)]
        x, y = (_like(_array(dtype, weak), r) for r in raw)
        for op, _ in OPS:
            if op is operator.truediv and np.dtype(x.dtype).kind not in "fc":
                continue
            del bind_calls[:]
            fast = _outcome(lambda: op(x, y))  # noqa: B023
            took_shortcut = not bind_calls
            general = _general(lambda: op(x, y))  # noqa: B023
            assert fast == general, (op.__name__, sx, sy, fast, general)
            if op is not operator.truediv and np.dtype(x.dtype).kind in "fiuc" and sx == sy != ():
                # (div has no NumPy ufunc as its impl; 0-d operands give NumPy scalars.)
                # Float16's overflow, a warning and an error here, goes to the general path.
                assert took_shortcut or dtype == "float16", (op.__name__, sx)


@pytest.mark.parametrize("dtype", ["float16", "float32", "complex64", "int32", "bfloat16"])
def test_sin_of_a_ready_array_matches_the_general_path(dtype):
    x = _array(dtype, False)
    specials = morphax.device_put(np.array([np.inf, -np.inf, np.nan, 0.0, 1e30], np.float32))
    for arg in (x, specials.astype(x.dtype) if np.dtype(x.dtype).kind in "fc" else x):
        assert _outcome(lambda: jnp.sin(arg)) == _general(lambda: jnp.sin(arg))  # noqa: B023


def test_the_ready_arrays_shortcut_stays_out_of_traces_and_checks(no_x64):
    x = morphax.device_put(np.arange(3, dtype=np.float32))
    y = morphax.device_put(np.ones(3, np.float32))
    # Concrete Arrays under a trace are staged, not computed.
    text = str(morphax.make_jaxpr(lambda: (x + y, jnp.sin(x)))())
    assert "add" in text and "sin" in text
    np.testing.assert_array_equal(np.asarray(morphax.jit(lambda a: a * y)(x)), np.arange(3, dtype=np.float32))
    # jax_debug_nans sees each operation.
    inf = morphax.device_put(np.array([np.inf], np.float32))
    with morphax.debug_nans(True):
        with pytest.raises(FloatingPointError, match="sin"):
            jnp.sin(inf)
        with pytest.raises(FloatingPointError, match="sub"):
            inf - inf
    assert np.isnan(np.asarray(inf - inf)).all()
    # Ranks differ: rank promotion is the general path's (and jax_numpy_rank_promotion's) call.
    with morphax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="rank"):
            x + morphax.device_put(np.ones((2, 3), np.float32))


def test_the_c_form_matches_the_python_form(no_x64):
    """runtime/ready_ext.py: the shortcuts' C form, installed over the Python form where a C
    compiler works, gives the Python form's outcome for each operator and function it replaced."""
    from morphax._src.runtime import ready_ops

    if not ready_ops.accelerate():
        pytest.skip("no C compiler: the Python shortcuts stay")
    assert type(morphax.Array.__add__).__name__ == "ReadyOp"
    assert type(jnp.sin).__name__ == "ReadyOp" and jnp.sin.__name__ == "sin"
    # The Python forms, by what they replaced: each C op keeps its Python form's fallback.
    by_fallback = {id(fallback): py for py, _, _, fallback, _ in ready_ops._made.values()}
    pairs = [
        (by_fallback[id(c.__wrapped__)], c)
        for c in (morphax.Array.__add__, morphax.Array.__sub__, morphax.Array.__mul__, jnp.sin, jnp.exp)
    ]
    made = {"sin": by_fallback[id(jnp.sin.__wrapped__)]}
    values = [
        morphax.device_put(np.arange(6, dtype=np.float32).reshape(2, 3)),
        morphax.device_put(np.array([np.inf, -np.inf, np.nan], np.float32)),
        _convert_element_type(morphax.device_put(np.ones(3, np.float32)), np.float32, weak_type=True),
        morphax.device_put(np.arange(3, dtype=np.int32)),
        morphax.device_put(np.ones(4, np.float32)),
        morphax.device_put(np.float32(2.5)),
        jnp.ones(3, jnp.bfloat16),
    ]
    for py, c in pairs:
        arity = ready_ops._made[id(py)][4]
        for x in values:
            for y in values if arity == 2 else [None]:
                args = (x,) if arity == 1 else (x, y)
                assert _outcome(lambda: c(*args)) == _outcome(lambda: py(*args)), (py, args)  # noqa: B023
    # Bound as a method, documented as the function it replaced, and staged under a trace.
    x = values[0]
    assert _outcome(lambda: x.__mul__(x)) == _outcome(lambda: x * x)
    assert jnp.sin.__doc__ == made["sin"].__doc__ and jnp.sin.__wrapped__ is made["sin"].__wrapped__
    text = str(morphax.make_jaxpr(lambda: (x + x, jnp.sin(x)))())
    assert "add" in text and "sin" in text
