"""sharding/collective_merge.py: independent psums (pmax, pmin) of a per-device program merged
into one equation, delayed with the pure equations that use them; checked on the structure of the
rewritten program and, under vmap with the axis name bound, against the program as traced."""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.core.avals import ShapedArray
from morphax._src.core.jaxpr import eval_jaxpr
from morphax._src.higher_order.pmap import axis_frame
from morphax._src.sharding.collective_merge import merge_reductions
from morphax._src.transforms.staging import trace_to_jaxpr


def _per_device(a, b, c):
    s1 = lax.psum(a * 2, "i")
    t = s1.T  # pure: delayed with s1
    s2 = lax.psum(b + 1, "i")
    m = lax.pmax(c, "i")
    s3 = lax.psum(jnp.sin(s2), "i")  # reduces a delayed value: the first group is issued before it
    u = lax.pmin(c * -1, "i")
    return t, s3, m, u


AVALS = [ShapedArray((2, 3), np.float32), ShapedArray((3,), np.float32), ShapedArray((3,), np.float32)]


def _traced():
    with axis_frame((("i", 4),)):
        return trace_to_jaxpr(_per_device, AVALS)


def _collectives(closed):
    return [
        (e.primitive.name, len(e.invars))
        for e in closed.jaxpr.eqns
        if e.primitive.name in ("psum", "pmax", "pmin")
    ]


def test_independent_reductions_merge_and_a_dependent_one_waits():
    closed = _traced()
    assert _collectives(closed) == [("psum", 1), ("psum", 1), ("pmax", 1), ("psum", 1), ("pmin", 1)]
    merged = merge_reductions(closed)
    # s1 and s2 in one psum, the pmax beside them; s3 reads s2 (delayed), so the group is issued
    # first; pmin joins nothing of its kind.
    assert _collectives(merged) == [("psum", 2), ("pmax", 1), ("psum", 1), ("pmin", 1)]
    names = [e.primitive.name for e in merged.jaxpr.eqns]
    assert names.index("transpose") > names.index("psum")  # the user of s1 moved after it


def test_merged_program_computes_what_the_traced_one_does():
    closed = _traced()
    merged = merge_reductions(closed)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((4, *a.shape)).astype(np.float32) for a in AVALS]

    def run(program):
        fn = morphax.vmap(lambda *xs: eval_jaxpr(program.jaxpr, program.consts, *xs), axis_name="i")
        return [np.asarray(o) for o in fn(*args)]

    for got, want in zip(run(merged), run(closed)):
        np.testing.assert_array_equal(got, want)
    a, b, c = args
    np.testing.assert_allclose(run(merged)[0][0], (2 * a).sum(0).T, rtol=1e-6)
    np.testing.assert_allclose(run(merged)[1][0], 4 * np.sin((b + 1).sum(0)), rtol=1e-5)


def test_nothing_to_merge_leaves_the_program_as_is():
    with axis_frame((("i", 2),)):
        one = trace_to_jaxpr(lambda x: lax.psum(x, "i") * 2, [ShapedArray((3,), np.float32)])
    assert merge_reductions(one) is one
