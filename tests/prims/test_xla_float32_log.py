"""XLA-order float32 log/log1p (used by erf_inv, hence by random.normal): known-answer vectors
recorded from JAX 0.10.2 on CPU at inputs where XLA's result differs from NumPy's, accuracy
against float64 NumPy, IEEE special values, and (when JAX is installed) bit equality with JAX on
random bit patterns."""

from __future__ import annotations

import numpy as np
import pytest

from morphax._src.prims.xla_float32_log import log1p_f32, log_f32

# (input bits, JAX's output bits): each pair is one where NumPy's float32 result differs.
LOG_VECTORS = [
    (0x3FAFB963, 0x3EA23ECA), (0x40A15F09, 0x3FCF19B1), (0x40D5304B, 0x3FF2BE98),
    (0x40D791FB, 0x3FF42AA0), (0x40B125A5, 0x3FDB0A0D), (0x3FAFF6D9, 0x3EA2F1BD),
    (0x3FC7F455, 0x3EE461DE), (0x405D64C1, 0x3F9EDB04), (0x3E88BF4A, 0xBFA8FC00),
    (0x3EDFCB47, 0xBF53DD7D), (0x40BD70E5, 0x3FE3A0B3), (0x3FADFDD5, 0x3E9D2C02),
]  # fmt: skip
LOG1P_VECTORS = [
    (0x3F3FBE49, 0x3F0F1D6A), (0x3F0E8ED8, 0x3EE2A65E), (0x3F1582A9, 0x3EEB810F),
    (0x3F8F7A86, 0x3F407971), (0x3EDB1902, 0x3EB662C9), (0x3FA46140, 0x3F537649),
    (0x3FA52FCA, 0x3F542AE0), (0x3F341FE9, 0x3F086258), (0x3FD45FEF, 0x3F7A5F52),
    (0x3F2C6BDF, 0x3F03D271), (0x3F0BD01D, 0x3EDF1C7E), (0x3FFEE081, 0x3F8C3F5A),
]  # fmt: skip


def _bits(values):
    return np.array(values, np.uint32).view(np.float32)


@pytest.mark.parametrize("fn,vectors", [(log_f32, LOG_VECTORS), (log1p_f32, LOG1P_VECTORS)])
def test_known_answers(fn, vectors):
    x = _bits([a for a, _ in vectors])
    want = np.array([b for _, b in vectors], np.uint32)
    np.testing.assert_array_equal(fn(x).view(np.uint32), want)
    # The vectors were chosen where NumPy's result differs, so they test XLA's order of operations;
    # NumPy's float32 loops vary by CPU, so require most of them (not all) to differ here.
    differs = getattr(np, fn.__name__[:-4])(x).view(np.uint32) != want
    assert differs.mean() > 0.5


@pytest.mark.parametrize("fn,domain", [(log_f32, (1e-30, 1e30)), (log1p_f32, (-0.999, 1e6))])
def test_within_three_ulp_of_float64(fn, domain):
    rng = np.random.default_rng(0)
    lo, hi = domain
    x = np.concatenate([rng.uniform(lo, 10, 50_000), np.exp(rng.uniform(-20, np.log(hi), 50_000))])
    x = x[(x > lo) & (x < hi)].astype(np.float32)
    exact = getattr(np, fn.__name__[:-4])(x.astype(np.float64))
    got = fn(x).astype(np.float64)
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - exact) / ulp) <= 3.0  # XLA's own accuracy: up to ~2.4 ulp


def test_special_values():
    tiny = np.finfo(np.float32).tiny
    x = np.array([0.0, -0.0, 1e-40, -1e-40, np.inf, -np.inf, np.nan, -1.0, 1.0, tiny], np.float32)
    with np.errstate(all="ignore"):
        got = log_f32(x)
    assert np.isneginf(got[:4]).all()  # zero and denormals (flushed to zero)
    assert got[4] == np.inf and np.isnan(got[5:8]).all() and got[8] == 0.0
    assert got[9] == np.log(tiny)
    x = np.array([0.0, -0.0, 1e-40, -1e-40, -1.0, -2.0, np.inf, np.nan, 1e-30], np.float32)
    with np.errstate(all="ignore"):
        got = log1p_f32(x)
    assert (got[:4] == 0).all() and np.signbit(got[[1, 3]]).all() and not np.signbit(got[[0, 2]]).any()
    assert got[4] == -np.inf and np.isnan(got[5]) and got[6] == np.inf and np.isnan(got[7])
    assert got[8] == np.float32(1e-30)
    assert log_f32(np.ones((2, 0, 3), np.float32)).shape == (2, 0, 3)


def test_bit_exact_against_jax_on_random_bit_patterns():
    jnp = pytest.importorskip("jax.numpy")
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2**32, 1_000_000, dtype=np.int64).astype(np.uint32).view(np.float32)
    for fn, ref in ((log_f32, jnp.log), (log1p_f32, jnp.log1p)):
        with np.errstate(all="ignore"):
            got = fn(x)
        want = np.asarray(ref(x))
        same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), (fn.__name__, x[~same][:5])
