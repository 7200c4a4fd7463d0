"""pmap cases for the native all-reduce (test_native_collectives.py runs them on CPU devices in a
subprocess): large psums, pmeans and pmaxes of float32/float64 inside pmap take the native path
and give the bits of NumPy reducing in device order."""

from __future__ import annotations

import numpy as np

import morphax
from morphax import lax
from morphax._src.runtime import native_collectives
from morphax._src.runtime.communicators import PARALLEL_REDUCE_ELEMENTS


def case_pmap_reductions_take_the_native_path():
    n = morphax.device_count()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, PARALLEL_REDUCE_ELEMENTS + 5)).astype(np.float32)
    w = rng.normal(size=(n, 300, 301))  # float64 on the NumPy side: converted by morphax as usual

    def step(x, w):
        return lax.psum(x, "i"), lax.pmax(x, "i"), lax.psum(w.astype(np.float32), "i")

    before = native_collectives.stats["native_all_reduces"]
    # The C backend's native all-reduce (another backend, as MORPHAX_BACKEND=xla, has its own).
    total, biggest, total_w = morphax.block_until_ready(morphax.pmap(step, "i", backend="c")(x, w))
    assert native_collectives.stats["native_all_reduces"] - before >= 3
    want = x[0]
    for row in x[1:]:
        want = want + row
    want_w = w[0].astype(np.float32)
    for row in w[1:]:
        want_w = want_w + row.astype(np.float32)
    for d in range(n):
        assert np.asarray(total[d]).tobytes() == want.tobytes()
        assert np.asarray(biggest[d]).tobytes() == np.max(x, axis=0).tobytes()
        assert np.asarray(total_w[d]).tobytes() == want_w.tobytes()
