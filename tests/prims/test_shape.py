"""Independent checks of the structural and conversion primitives (shape, slicing, conversion):
known answers built by hand, by Python loops or by a different NumPy route, plus bad-input errors.
The generated matrix only compares each primitive with its own NumPy reference; these do not."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import morphax
from morphax import lax
from morphax._src.core.jaxpr import eval_jaxpr
from morphax._src.prims.dynamic_slicing import dynamic_slice_p, dynamic_update_slice_p
from morphax._src.prims.shape import broadcast_in_dim_p, reshape_p, squeeze_p


def _np(x):
    return np.asarray(x)


# ------------------------------------------------------------------------------------------------ pad


def _pad_by_formula(x, value, config):
    """Output element j along each axis comes from input (j - low) / (interior + 1) when that is an
    exact in-range index, else it is padding."""
    out_shape = tuple(lo + hi + (0 if n == 0 else n + (n - 1) * i) for (lo, hi, i), n in zip(config, x.shape))
    out = np.empty(out_shape, x.dtype)
    for j in itertools.product(*(range(n) for n in out_shape)):
        src = []
        for jj, (lo, _, i), n in zip(j, config, x.shape):
            q, r = divmod(jj - lo, i + 1)
            src.append(q if r == 0 and 0 <= q < n else None)
        out[j] = value if None in src else x[tuple(src)]
    return out


def _pad_by_assignment(x, value, config):
    """np.full + strided assignment + cropping, written out per axis."""
    grown = []
    for (lo, hi, i), n in zip(config, x.shape):
        grown.append(max(lo, 0) + max(hi, 0) + (0 if n == 0 else (n - 1) * (i + 1) + 1))
    buf = np.full(grown, value, x.dtype)
    where = tuple(
        slice(max(lo, 0), max(lo, 0) + n * (i + 1), i + 1) for (lo, _, i), n in zip(config, x.shape)
    )
    buf[where] = x
    crop = tuple(
        slice(-lo if lo < 0 else 0, g + hi if hi < 0 else g) for (lo, hi, _), g in zip(config, grown)
    )
    return buf[crop]


@pytest.mark.parametrize(
    "shape,config",
    [
        ((5,), ((2, 3, 0),)),
        ((5,), ((-2, -1, 0),)),
        ((4,), ((-1, 2, 2),)),
        ((4,), ((1, -3, 1),)),
        ((3,), ((-5, 0, 1),)),
        ((2,), ((-3, 1, 2),)),
        ((0,), ((1, 2, 3),)),
        ((3, 4), ((1, -1, 2), (-2, 3, 1))),
        ((2, 3), ((0, 0, 0), (0, 0, 3))),
        ((1, 3, 2), ((1, 1, 5), (-1, -1, 0), (2, -2, 1))),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_pad_matches_hand_construction(shape, config, dtype):
    x = (np.arange(int(np.prod(shape))) + 1).reshape(shape).astype(dtype)
    want = _pad_by_formula(x, dtype(-7), config)
    np.testing.assert_array_equal(_pad_by_assignment(x, dtype(-7), config), want)
    got = lax.pad(x, dtype(-7), config)
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_array_equal(_np(got), want)


def test_pad_python_scalar_padding_value_keeps_its_own_dtype():
    # JAX 0.10.2: a Python scalar padding value is not cast to the operand's dtype; 0 is int32,
    # so padding an int8 operand with it is "TypeError: pad operand and padding_value must be same
    # dtype: got int8 and int32." A value of the operand's dtype works.
    x = np.array([1, 2], np.int8)
    with pytest.raises(TypeError, match="must have the same dtype, got int8 and int32"):
        lax.pad(x, 0, [(1, 1, 1)])
    got = lax.pad(x, np.int8(0), [(1, 1, 1)])
    assert got.dtype == np.int8 and not got.weak_type
    np.testing.assert_array_equal(_np(got), [0, 1, 0, 2, 0])


# -------------------------------------------------------------------------------- dynamic slicing


def _ds_loop(x, starts, sizes):
    clamped = [min(max(s, 0), n - w) for s, n, w in zip(starts, x.shape, sizes)]
    out = np.empty(sizes, x.dtype)
    for k in itertools.product(*(range(w) for w in sizes)):
        out[k] = x[tuple(c + kk for c, kk in zip(clamped, k))]
    return out


def _dus_loop(x, update, starts):
    clamped = [min(max(s, 0), n - w) for s, n, w in zip(starts, x.shape, update.shape)]
    out = x.copy()
    for k in itertools.product(*(range(w) for w in update.shape)):
        out[tuple(c + kk for c, kk in zip(clamped, k))] = update[k]
    return out


@pytest.mark.parametrize("start", range(-9, 11))
@pytest.mark.parametrize("size", [0, 1, 3, 6])
def test_dynamic_slice_1d_clamps_like_loop(start, size):
    x = np.arange(6, dtype=np.float32) * 10
    # The primitive never wraps negative starts: they clamp to 0.
    got = dynamic_slice_p.bind(x, np.int32(start), slice_sizes=(size,))
    np.testing.assert_array_equal(_np(got), _ds_loop(x, [start], [size]))
    got = lax.dynamic_slice(x, (start,), (size,), allow_negative_indices=False)
    np.testing.assert_array_equal(_np(got), _ds_loop(x, [start], [size]))
    # The lax wrapper, like JAX's, wraps a negative start once before clamping.
    wrapped = start + 6 if start < 0 else start
    np.testing.assert_array_equal(
        _np(lax.dynamic_slice(x, (start,), (size,))), _ds_loop(x, [wrapped], [size])
    )


@pytest.mark.parametrize("index_dtype", [np.int32, np.uint8, np.int8, np.int16, np.uint32])
def test_dynamic_slice_2d_any_index_dtype(index_dtype):
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    lo = 0 if np.dtype(index_dtype).kind == "u" else -6
    for s0, s1 in itertools.product(range(lo, 7, 2), range(lo, 8, 3)):
        got = dynamic_slice_p.bind(x, index_dtype(s0), index_dtype(s1), slice_sizes=(2, 3))
        np.testing.assert_array_equal(_np(got), _ds_loop(x, [s0, s1], [2, 3]))


@pytest.mark.parametrize("start", range(-7, 9))
def test_dynamic_update_slice_clamps_like_loop(start):
    x = np.zeros((3, 5), np.float32)
    upd = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    got = dynamic_update_slice_p.bind(x, upd, np.int32(start), np.int32(start + 1))
    np.testing.assert_array_equal(_np(got), _dus_loop(x, upd, [start, start + 1]))
    got = lax.dynamic_update_slice(x, upd, (start, start + 1), allow_negative_indices=False)
    np.testing.assert_array_equal(_np(got), _dus_loop(x, upd, [start, start + 1]))


def test_dynamic_slice_traced_negative_start_wraps():
    x = np.arange(6, dtype=np.float32)

    def f(x, i):
        return lax.dynamic_slice(x, (i,), (2,))

    closed = morphax.make_jaxpr(f)(x, np.int32(0))
    names = [e.primitive.name for e in closed.jaxpr.eqns]
    assert names[-1] == "dynamic_slice" and "select_n" in names
    for i in range(-8, 8):
        (got,) = eval_jaxpr(closed.jaxpr, closed.consts, x, np.int32(i))
        want = _ds_loop(x, [i + 6 if i < 0 else i], [2])
        np.testing.assert_array_equal(_np(got), want)


def test_dynamic_in_dim_helpers():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(_np(lax.dynamic_slice_in_dim(x, 1, 2, axis=1)), x[:, 1:3])
    np.testing.assert_array_equal(_np(lax.dynamic_slice_in_dim(x, 3, 2, axis=1)), x[:, 2:4])
    np.testing.assert_array_equal(_np(lax.dynamic_index_in_dim(x, -1, axis=0, keepdims=False)), x[2])
    np.testing.assert_array_equal(_np(lax.dynamic_index_in_dim(x, np.int8(2), axis=1)), x[:, 2:3])
    got = lax.dynamic_update_index_in_dim(x, np.zeros(4, np.float32), 1, 0)
    want = x.copy()
    want[1] = 0
    np.testing.assert_array_equal(_np(got), want)
    got = lax.dynamic_update_slice_in_dim(x, -np.ones((3, 2), np.float32), 9, axis=1)
    want = x.copy()
    want[:, 2:] = -1
    np.testing.assert_array_equal(_np(got), want)


def test_python_int_starts_take_index_dtype():
    x = np.arange(10, dtype=np.float32)
    closed = morphax.make_jaxpr(lambda x, i: lax.dynamic_slice(lax.reshape(x, (2, 5)), (i, 3), (1, 2)))(
        x, np.uint8(1)
    )
    ds = closed.jaxpr.eqns[-1]
    assert [v.aval.dtype for v in ds.invars[1:]] == [np.uint8, np.uint8]


# ---------------------------------------------------------------------------------------------- slice


def test_slice_known_answers():
    x = np.arange(24, dtype=np.int32).reshape(4, 6)
    np.testing.assert_array_equal(_np(lax.slice(x, (1, 0), (3, 6), (1, 4))), x[1:3, 0:6:4])
    np.testing.assert_array_equal(_np(lax.slice(x, (0, 5), (4, 6))), x[:, 5:6])
    np.testing.assert_array_equal(_np(lax.slice(x, (2, 2), (2, 2))), np.zeros((0, 0), np.int32))
    np.testing.assert_array_equal(_np(lax.slice_in_dim(x, -3, None, 2, axis=1)), x[:, 3::2])
    np.testing.assert_array_equal(_np(lax.index_in_dim(x, -1, axis=0, keepdims=False)), x[3])
    with pytest.raises(IndexError):
        lax.index_in_dim(x, 4)


# ------------------------------------------------------------------------------ shape primitives


def test_broadcast_in_dim_and_helpers():
    x = np.array([[1.0], [2.0]], np.float32)  # (2, 1)
    got = lax.broadcast_in_dim(x, (3, 2, 4), (1, 2))
    want = np.empty((3, 2, 4), np.float32)
    for a, b, c in itertools.product(range(3), range(2), range(4)):
        want[a, b, c] = x[b, 0]
    np.testing.assert_array_equal(_np(got), want)
    assert lax.broadcast(np.float32(2), (2, 3)).shape == (2, 3)
    assert lax.broadcast(x, (5,)).shape == (5, 2, 1)
    assert lax.broadcast_to_rank(x, 4).shape == (1, 1, 2, 1)
    assert lax.expand_dims(x, (0, -1)).shape == (1, 2, 1, 1)
    assert lax.expand_dims(np.ones(3), (1,)).shape == (3, 1)
    # Weak types survive structural ops.
    w = lax.broadcast(2.0, (3,))
    assert w.weak_type and w.dtype == np.float32
    assert lax.reshape(w, (3, 1)).weak_type


def test_reshape_dimensions_and_transpose():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    got = lax.reshape(x, (4, 6), dimensions=(2, 0, 1))
    np.testing.assert_array_equal(_np(got), np.transpose(x, (2, 0, 1)).reshape(4, 6))
    flat = [x[i, j, k] for k in range(4) for i in range(2) for j in range(3)]
    np.testing.assert_array_equal(_np(got).ravel(), flat)
    t = lax.transpose(x, (1, 2, 0))
    assert t.shape == (3, 4, 2) and _np(t)[2, 3, 1] == x[1, 2, 3]
    closed = morphax.make_jaxpr(lambda y: lax.reshape(y, (2, 3, 4), dimensions=(0, 1, 2)))(x)
    assert closed.jaxpr.eqns == []  # identity reshapes bind nothing, as in JAX


def test_results_do_not_alias_numpy_inputs():
    x = np.arange(6, dtype=np.float32)
    y = lax.reshape(x, (2, 3))
    z = lax.squeeze(lax.reshape(x, (1, 6)), (0,))
    x[0] = 100.0
    assert _np(y)[0, 0] == 0.0 and _np(z)[0] == 0.0


def test_rev_squeeze_concatenate_iota():
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    np.testing.assert_array_equal(_np(lax.rev(x, (1, 2))), x[:, ::-1, ::-1])
    assert lax.squeeze(x, (-3,)).shape == (2, 3)
    got = lax.concatenate(
        [np.zeros((2, 1), np.int32), np.ones((2, 0), np.int32), np.full((2, 2), 7, np.int32)], 1
    )
    np.testing.assert_array_equal(_np(got), [[0, 7, 7], [0, 7, 7]])
    np.testing.assert_array_equal(_np(lax.iota(np.int32, 4)), [0, 1, 2, 3])
    np.testing.assert_array_equal(_np(lax.broadcasted_iota(np.float32, (2, 3), 0)), [[0, 0, 0], [1, 1, 1]])
    np.testing.assert_array_equal(_np(lax.iota(np.int8, 130))[-2:], [-128, -127])  # wraps like int8 counting
    assert not lax.iota(np.int32, 3).weak_type


def test_select_n_clamp_copy():
    a = np.array([1.0, 2.0, 3.0], np.float32)
    b, c = a * 10, a * 100
    np.testing.assert_array_equal(_np(lax.select_n(np.array([True, False, True]), a, b)), [10, 2, 30])
    # Out-of-range integer `which` values clamp to the first / last case.
    np.testing.assert_array_equal(_np(lax.select_n(np.array([-5, 1, 9], np.int8), a, b, c)), [1, 20, 300])
    np.testing.assert_array_equal(_np(lax.select_n(np.uint32(7), a, b, c)), c)
    np.testing.assert_array_equal(_np(lax.select(np.array([True, False, False]), a, b)), [1, 20, 30])
    got = _np(lax.clamp(np.float32(-1), np.array([np.nan, -3, 0.5, 4], np.float32), np.float32(2)))
    np.testing.assert_array_equal(got, [np.nan, -1, 0.5, 2])
    np.testing.assert_array_equal(_np(lax.clamp(0, np.array([-1, 5, 3], np.int8), 4)), [0, 4, 3])
    np.testing.assert_array_equal(
        _np(lax.clamp(np.float32(3), a, np.float32(1))), [1, 1, 1]
    )  # min > max: max
    cp = morphax.lax.copy_p.bind(a)
    np.testing.assert_array_equal(_np(cp), a)


def test_full_and_full_like():
    f = lax.full((2, 3), 1.5)
    assert f.shape == (2, 3) and f.dtype == np.float32 and f.weak_type
    g = lax.full((2,), 7, np.int8)
    assert g.dtype == np.int8 and not g.weak_type
    h = lax.full_like(np.zeros((3,), np.uint8), 300)
    np.testing.assert_array_equal(_np(h), [44, 44, 44])  # Python ints wrap into the target dtype
    z = lax.zeros_like_array(lax.broadcast(2.0, (2,)))
    assert z.weak_type and _np(z).tolist() == [0.0, 0.0]
    with pytest.raises(TypeError, match="scalar fill_value"):
        lax.full((2,), np.ones(2))


# ------------------------------------------------------------------------------------------ conversion


def test_convert_float_to_int32_saturates_truncates_nan_zero():
    x = np.array(
        [np.nan, np.inf, -np.inf, 2.9, -2.9, -0.5, 3e9, -3e9, 2147483520.0, 2147483648.0, -2147483648.0],
        np.float32,
    )
    want = [
        0,
        2147483647,
        -2147483648,
        2,
        -2,
        0,
        2147483647,
        -2147483648,
        2147483520,
        2147483647,
        -2147483648,
    ]
    got = lax.convert_element_type(x, np.int32)
    assert got.dtype == np.int32 and not got.weak_type
    assert _np(got).tolist() == want


def test_convert_float_to_uint8():
    x = np.array([np.nan, np.inf, -np.inf, -1.0, -0.9, 0.9, 254.99, 255.5, 256.0, 1e5], np.float32)
    assert _np(lax.convert_element_type(x, np.uint8)).tolist() == [0, 255, 0, 0, 0, 0, 254, 255, 255, 255]
    bf = np.array([300.0, -3.5, np.nan], ml_dtypes.bfloat16)
    assert _np(lax.convert_element_type(bf, np.int8)).tolist() == [127, -3, 0]


def test_convert_other_rules():
    ints = np.array([-129, -1, 0, 255, 256, 70000], np.int32)
    assert _np(lax.convert_element_type(ints, np.int8)).tolist() == [127, -1, 0, -1, 0, 112]
    assert _np(lax.convert_element_type(ints, np.uint8)).tolist() == [127, 255, 0, 255, 0, 112]
    vals = np.array([0.0, -0.0, np.nan, 0.1, -3.0], np.float32)
    assert _np(lax.convert_element_type(vals, np.bool_)).tolist() == [False, False, True, True, True]
    z = np.array([1.5 - 2j, 0j, 1j, -7.9 + 1j], np.complex64)
    assert _np(lax.convert_element_type(z, np.bool_)).tolist() == [True, False, True, True]
    assert _np(lax.convert_element_type(z, np.float32)).tolist() == [1.5, 0.0, 0.0, -7.900000095367432]
    assert _np(lax.convert_element_type(z, np.int32)).tolist() == [1, 0, 0, -7]
    assert lax.convert_element_type(np.zeros(2), np.int64).dtype == np.int32  # canonicalized under x32
    assert float(lax.convert_element_type(2**70, np.float32)) == float(np.float32(2.0**70))
    assert int(lax.convert_element_type(2**32 + 5, np.int32)) == 5
    assert int(lax.convert_element_type(-1.5, np.int32)) == -1
    b = lax.convert_element_type(np.array([1, 0, 1], np.bool_), np.float32)
    assert _np(b).tolist() == [1.0, 0.0, 1.0]


def test_bitcast_matches_numpy_view_and_shape_rules():
    x = np.array([1.0, -2.5, np.inf, 0.0], np.float32)
    got = lax.bitcast_convert_type(x, np.int32)
    np.testing.assert_array_equal(_np(got), x.view(np.int32))
    back = lax.bitcast_convert_type(got, np.float32)
    np.testing.assert_array_equal(_np(back), x)
    u = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    wide = lax.bitcast_convert_type(u, np.uint32)
    assert wide.shape == (2, 3)
    np.testing.assert_array_equal(_np(wide), u.view(np.uint32).reshape(2, 3))
    narrow = lax.bitcast_convert_type(np.array([0x01020304, 0xFFFFFFFF], np.uint32), np.uint8)
    assert narrow.shape == (2, 4)
    assert _np(narrow).tolist() == [[4, 3, 2, 1], [255, 255, 255, 255]]  # little-endian byte order
    assert lax.bitcast_convert_type(np.float32(1.0), np.uint16).shape == (2,)
    with pytest.raises(ValueError, match=r"bitcast_convert_type.*u8\[2,3\].*uint32.*\(2, 3\)"):
        lax.bitcast_convert_type(np.zeros((2, 3), np.uint8), np.uint32)
    with pytest.raises(ValueError, match="bitcast_convert_type"):
        lax.bitcast_convert_type(np.uint8(3), np.uint16)
    with pytest.raises(TypeError, match="bool or complex"):
        lax.bitcast_convert_type(np.zeros(4, np.bool_), np.uint8)


# ------------------------------------------------------------------------------------------ bad inputs


@pytest.mark.parametrize(
    "fn,exc,pattern",
    [
        (
            lambda: lax.broadcast_in_dim(np.zeros((2, 3)), (2, 4), (0, 1)),
            TypeError,
            r"broadcast_in_dim.*\(2, 3\).*\(2, 4\)",
        ),
        (
            lambda: lax.broadcast_in_dim(np.zeros((2,)), (2, 2), (0, 1)),
            TypeError,
            r"broadcast_in_dim.*ndim 1",
        ),
        (
            lambda: lax.broadcast_in_dim(np.zeros((1, 1)), (2, 2), (1, 0)),
            TypeError,
            "broadcast_in_dim.*strictly increasing",
        ),
        (lambda: lax.broadcast_in_dim(np.zeros((3,)), (3,), (1,)), TypeError, r"broadcast_in_dim.*\(3,\)"),
        (lambda: lax.reshape(np.zeros((2, 3)), (4, 2)), TypeError, r"reshape.*\(4, 2\).*8.*\(2, 3\).*6"),
        (lambda: lax.reshape(np.zeros((2, 3)), (-1,)), TypeError, "reshape.*jnp.reshape"),
        (lambda: lax.reshape(np.zeros((2, 3)), (6,), (0, 0)), TypeError, "reshape.*permutation"),
        (
            lambda: lax.concatenate([np.zeros(2, np.float32), np.zeros(2, np.int32)], 0),
            TypeError,
            "concatenate.*float32.*int32",
        ),
        (
            lambda: lax.concatenate([np.zeros((2, 2)), np.zeros(2)], 0),
            TypeError,
            r"concatenate.*different numbers of dimensions.*\(2, 2\), \(2,\)",
        ),
        (
            lambda: lax.concatenate([np.zeros((2, 2)), np.zeros((3, 3))], 0),
            TypeError,
            r"concatenate.*\(2, 2\), \(3, 3\)",
        ),
        (lambda: lax.slice(np.zeros((3, 4)), (0, 0), (3, 5)), TypeError, r"slice.*\(3, 5\).*\(3, 4\)"),
        (lambda: lax.slice(np.zeros(4), (3,), (2,)), TypeError, "slice.*start_indices"),
        (lambda: lax.slice(np.zeros(4), (0,), (4,), (0,)), TypeError, "slice.*strides must be positive"),
        (lambda: lax.squeeze(np.zeros((2, 1)), (0,)), ValueError, r"squeeze.*\(2, 1\).*\(0,\)"),
        (lambda: lax.squeeze(np.zeros((2, 1)), (2,)), ValueError, "squeeze.*out of bounds"),
        (lambda: lax.transpose(np.zeros((2, 1)), (0, 0)), TypeError, r"transpose.*\(2, 1\)"),
        (lambda: lax.rev(np.zeros((2, 1)), (2,)), TypeError, r"rev.*\(2, 1\)"),
        (
            lambda: lax.pad(np.zeros(3, np.float32), np.int32(0), [(0, 0, 0)]),
            TypeError,
            "pad.*float32.*int32",
        ),
        (lambda: lax.pad(np.zeros(3), 0.0, [(-2, -2, 0)]), ValueError, r"pad.*\(-1,\).*\(3,\)"),
        (lambda: lax.pad(np.zeros(3), 0.0, [(0, 0, -1)]), ValueError, "pad.*interior"),
        (lambda: lax.pad(np.zeros(3), 0.0, [(0, 0, 0), (0, 0, 0)]), ValueError, r"pad.*\(3,\)"),
        (lambda: lax.dynamic_slice(np.zeros(3), (0,), (4,)), TypeError, r"dynamic_slice.*\(4,\).*\(3,\)"),
        (lambda: lax.dynamic_slice(np.zeros((3, 3)), (0,), (1, 1)), ValueError, r"dynamic_slice.*\(3, 3\)"),
        (
            lambda: lax.dynamic_slice(np.zeros((3, 3)), (np.int8(0), np.int32(0)), (1, 1)),
            TypeError,
            "dynamic_slice.*int8, int32",
        ),
        (lambda: lax.dynamic_slice(np.zeros(3), (np.float32(0),), (1,)), TypeError, "dynamic_slice.*integer"),
        (
            lambda: lax.dynamic_update_slice(np.zeros(3), np.zeros(4), (0,)),
            TypeError,
            r"dynamic_update_slice.*\(4,\).*\(3,\)",
        ),
        (
            lambda: lax.dynamic_update_slice(np.zeros(3, np.float32), np.zeros(2, np.int32), (0,)),
            TypeError,
            "dynamic_update_slice.*float32.*int32",
        ),
        (
            lambda: lax.select_n(np.array([1, 2]), np.zeros(3), np.zeros(3)),
            TypeError,
            r"select_n.*\(2,\).*\(3,\)",
        ),
        (lambda: lax.select_n(np.array(True), *[np.zeros(2)] * 3), TypeError, "select_n.*at most 2"),
        (lambda: lax.select_n(np.float32(0), np.zeros(2), np.zeros(2)), TypeError, "select_n.*f32"),
        (lambda: lax.clamp(np.zeros(2), np.zeros(3), np.zeros(3)), TypeError, r"clamp.*f32\[2\].*f32\[3\]"),
        (
            lambda: lax.clamp(np.complex64(0), np.zeros(3, np.complex64), np.complex64(1)),
            TypeError,
            "clamp.*complex64",
        ),
        (lambda: lax.iota(np.bool_, 3), TypeError, "iota.*bool"),
        (lambda: lax.broadcasted_iota(np.int32, (2, 3), 2), ValueError, r"iota.*\(2, 3\)"),
    ],
)
def test_bad_inputs_raise_clear_errors(fn, exc, pattern):
    with pytest.raises(exc, match=pattern):
        fn()


def test_bad_params_caught_by_abstract_eval_under_staging():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match="broadcast_in_dim"):
        morphax.make_jaxpr(
            lambda y: broadcast_in_dim_p.bind(y, shape=(3, 3), broadcast_dimensions=(0, 1), sharding=None)
        )(x)
    with pytest.raises(TypeError, match="reshape"):
        morphax.make_jaxpr(lambda y: reshape_p.bind(y, new_sizes=(5,), dimensions=None, sharding=None))(x)
    with pytest.raises(ValueError, match="squeeze"):
        morphax.make_jaxpr(lambda y: squeeze_p.bind(y, dimensions=(1,)))(x)
