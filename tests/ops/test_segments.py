"""`morphax.ops.segment_*` against a NumPy loop over segments: dtypes, empty segments (the
identity), dropped and clipped out-of-range ids, buckets, trailing axes; under jit (static
num_segments), vmap and grad (check_grads)."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
from morphax import ops
from morphax.test_util import check_grads

_NP = {
    "segment_sum": np.add,
    "segment_prod": np.multiply,
    "segment_max": np.maximum,
    "segment_min": np.minimum,
}


def _identity(name, dtype):
    if name == "segment_sum":
        return 0
    if name == "segment_prod":
        return 1
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return info.min if name == "segment_max" else info.max
    return -np.inf if name == "segment_max" else np.inf


def _reference(name, data, ids, n, clip=False):
    out = np.full((n,) + data.shape[1:], _identity(name, data.dtype), dtype=data.dtype)
    for row, i in zip(data, ids):
        if clip:
            i = min(max(i, 0), n - 1)
        elif not 0 <= i < n:
            continue
        out[i] = _NP[name](out[i], row)
    return out


@pytest.mark.parametrize("name", sorted(_NP))
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_against_a_loop(name, dtype):
    rng = np.random.default_rng(0)
    data = (rng.normal(size=(20, 3)) * 3).astype(dtype)
    ids = rng.integers(-2, 7, size=20).astype(np.int32)  # some out of range: dropped
    fn = getattr(ops, name)
    np.testing.assert_allclose(np.asarray(fn(data, ids, 6)), _reference(name, data, ids, 6), rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(fn(data, ids, 6, mode="clip")), _reference(name, data, ids, 6, clip=True), rtol=1e-6
    )
    got = fn(data, ids, 6, bucket_size=4)
    assert got.dtype == dtype
    np.testing.assert_allclose(np.asarray(got), _reference(name, data, ids, 6), rtol=1e-5)


def test_default_num_segments_sorted_ids_and_jit():
    data, ids = np.arange(5), np.array([0, 0, 1, 1, 2])
    np.testing.assert_array_equal(ops.segment_sum(data, ids), [1, 5, 4])
    np.testing.assert_array_equal(ops.segment_sum(data, ids, indices_are_sorted=True), [1, 5, 4])
    np.testing.assert_array_equal(morphax.jit(ops.segment_sum, static_argnums=2)(data, ids, 3), [1, 5, 4])
    with pytest.raises(TypeError, match="num_segments must be given"):
        morphax.jit(ops.segment_sum)(data, ids)


def test_vmap_and_gradients():
    rng = np.random.default_rng(1)
    data = rng.normal(size=(4, 6, 2)).astype(np.float32)
    ids = np.array([0, 2, 2, 1, 0, 2], np.int32)
    batched = morphax.vmap(lambda d: ops.segment_sum(d, ids, 3))(data)
    np.testing.assert_allclose(
        np.asarray(batched), np.stack([_reference("segment_sum", d, ids, 3) for d in data]), rtol=1e-6
    )
    with morphax.enable_x64():
        d64 = data[0].astype(np.float64)
        check_grads(lambda d: ops.segment_sum(d, ids, 3), (d64,), order=2)
        check_grads(lambda d: ops.segment_max(d, ids, 3), (d64,), order=1)
        check_grads(lambda d: ops.segment_prod(d, ids, 3), (d64,), order=2)


def test_errors():
    with pytest.raises(ValueError, match="non-negative"):
        ops.segment_sum(np.ones(3), np.zeros(3, np.int32), -1)
    with pytest.raises(TypeError, match="integer dtype"):
        ops.segment_sum(np.ones(3), np.zeros(3))
    with pytest.raises(ValueError, match="one id per row"):
        ops.segment_sum(np.ones(3), np.zeros(4, np.int32))
