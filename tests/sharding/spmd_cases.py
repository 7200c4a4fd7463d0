"""SPMD cases on 4 CPU devices (run in subprocesses by conftest.py's `run_cases`): jitted programs
on sharded inputs run partitioned on every device of the mesh. Values are checked against the same
program on unsharded inputs (one device) and NumPy; result shardings against JAX 0.10.2's,
recorded as literals; the partitioned-execution counters (`spmd_stats`) say every device ran its
part, which collectives the per-device program holds, and which operations fell back."""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src import events
from morphax._src.sharding.spmd import spmd_stats
from morphax.sharding import AxisType, NamedSharding
from morphax.sharding import PartitionSpec as P

RNG = np.random.default_rng(0)


def _put(x, mesh, spec):
    return morphax.device_put(np.asarray(x), NamedSharding(mesh, spec))


def _program():
    return str(spmd_stats.last.closed)


def _ran_partitioned(calls=1, fallbacks=0):
    """Every one of the 4 devices ran its part of each call, and `fallbacks` operations fell back."""
    assert spmd_stats.calls == calls, spmd_stats.calls
    assert dict(spmd_stats.device_runs) == {d: calls for d in range(4)}, spmd_stats.device_runs
    assert spmd_stats.fallbacks == fallbacks, spmd_stats.fallback_primitives


def _close(a, b, rtol=2e-5, atol=2e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def _shards_match(out):
    """Each shard holds its piece of the global value."""
    full = np.asarray(out)
    for s in out.addressable_shards:
        np.testing.assert_array_equal(np.asarray(s.data), full[s.index])


# ------------------------------------------------------------------------------- data parallel


def _loss(params, x, y):
    h = x
    for w, b in params:
        h = jnp.tanh(h @ w + b)
    return jnp.mean((h - y) ** 2)


def _params():
    return [
        (RNG.normal(size=(8, 16)).astype(np.float32), RNG.normal(size=16).astype(np.float32)),
        (RNG.normal(size=(16, 4)).astype(np.float32), RNG.normal(size=4).astype(np.float32)),
    ]


def case_data_parallel_mlp():
    mesh = morphax.make_mesh((4,), ("x",))
    params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in _params()]
    x = RNG.normal(size=(32, 8)).astype(np.float32)
    y = RNG.normal(size=(32, 4)).astype(np.float32)
    step = morphax.jit(morphax.value_and_grad(_loss))
    v0, g0 = step(params, jnp.asarray(x), jnp.asarray(y))  # one device: the oracle
    assert spmd_stats.calls == 0
    for replicated in (params, morphax.device_put(params, NamedSharding(mesh, P()))):
        spmd_stats.reset()
        v, g = step(replicated, _put(x, mesh, P("x")), _put(y, mesh, P("x")))
        _close(v, v0)
        for a, b in zip(morphax.tree_util.tree_leaves(g), morphax.tree_util.tree_leaves(g0)):
            _close(a, b)
        _ran_partitioned()
        # JAX's shardings: a replicated loss and replicated gradients.
        assert v.sharding.spec == P() and v.sharding.mesh == mesh
        assert [a.sharding.spec for a in morphax.tree_util.tree_leaves(g)] == [
            P(None, None), P(None), P(None, None), P(None)
        ]  # fmt: skip
        # The batch stays split: the gradients' and the loss's sums over it are all-reduced, in
        # one exchange (sharding/collective_merge.py), and nothing is gathered.
        text = _program()
        assert text.count("psum") == 1 and "all_gather" not in text, text
        psum = next(e for e in spmd_stats.last.closed.jaxpr.eqns if e.primitive.name == "psum")
        assert len(psum.invars) >= 5, text
    # The profiler sees one run per device, each on its device's stream (thread).
    events.start()
    try:
        morphax.block_until_ready(step(params, _put(x, mesh, P("x")), _put(y, mesh, P("x"))))
    finally:
        recorded, _ = events.stop()
    runs = [e for e in recorded if e[2] == "device" and e[1].startswith("spmd")]
    assert len(runs) == 4 and len({e[5] for e in runs}) == 4, runs
    # Repeated calls reuse the partitioned program and still run on every device.
    spmd_stats.reset()
    outs = [step(params, _put(x, mesh, P("x")), _put(y, mesh, P("x"))) for _ in range(3)]
    morphax.block_until_ready(outs)
    _ran_partitioned(calls=3)


# ------------------------------------------------------------------------------------ matmuls


def case_matmul_contracting_and_output_dims():
    a = RNG.normal(size=(16, 32)).astype(np.float32)
    b = RNG.normal(size=(32, 8)).astype(np.float32)
    want = a.astype(np.float64) @ b
    mm = morphax.jit(lambda p, q: p @ q)
    auto = morphax.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,))
    explicit = morphax.make_mesh((4,), ("x",))
    # (mesh, lhs spec, rhs spec, JAX's result spec, collectives in the per-device program).
    cases = [
        (auto, P(None, "x"), P("x"), P(), {"psum"}),  # contracting dim split on both operands
        (auto, P(None, "x"), None, P(), {"psum", "dynamic_slice"}),  # on one: the other is sliced
        (explicit, P(None, "x"), None, P(None, None), {"psum", "dynamic_slice"}),
        (auto, None, P(None, "x"), P(None, "x"), set()),  # an output dim
        (explicit, None, P(None, "x"), P(None, "x"), set()),
        (explicit, P("x"), None, P("x", None), set()),
        (auto, P("x"), None, P("x"), set()),
    ]
    for mesh, sa, sb, spec, collectives in cases:
        spmd_stats.reset()
        lhs = _put(a, mesh, sa) if sa is not None else jnp.asarray(a)
        rhs = _put(b, mesh, sb) if sb is not None else jnp.asarray(b)
        out = mm(lhs, rhs)
        _close(out, want, rtol=1e-5, atol=1e-5)
        assert out.sharding == NamedSharding(mesh, spec), (sa, sb, out.sharding)
        _shards_match(out)
        _ran_partitioned()
        text = _program()
        for name in ("psum", "dynamic_slice", "all_gather"):
            assert (name in text) == (name in collectives), (sa, sb, name, text)


def case_operation_out_sharding():
    """An operation's own out_sharding (JAX's answer to contracting dimensions split on Explicit
    axes): the product is computed on blocks, all-reduced, and each device keeps its block."""
    mesh = morphax.make_mesh((4,), ("x",))
    a = RNG.normal(size=(8, 16)).astype(np.float32)
    b = RNG.normal(size=(16, 8)).astype(np.float32)
    with morphax.sharding.set_mesh(mesh):
        f = morphax.jit(lambda p, q: lax.dot_general(p, q, (((1,), (0,)), ((), ())), out_sharding=P("x")))
        spmd_stats.reset()
        out = f(_put(a, mesh, P(None, "x")), _put(b, mesh, P("x")))
        _close(out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
        assert out.sharding.spec == P("x", None)
        _shards_match(out)
        _ran_partitioned()
        assert "psum" in _program()


def case_two_dimensional_mesh():
    mesh = morphax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))
    x = RNG.normal(size=(8, 6)).astype(np.float32)
    w = RNG.normal(size=(6, 4)).astype(np.float32)
    xs = _put(x, mesh, P("x", "y"))
    spmd_stats.reset()
    out = morphax.jit(lambda v: (jnp.sin(v) * 2).sum(axis=1))(xs)
    _close(out, (np.sin(x) * 2).sum(axis=1))
    assert out.sharding.spec == P("x")
    _ran_partitioned()
    out = morphax.jit(lambda v: v.sum())(xs)
    _close(out, x.sum(), rtol=1e-5)
    assert out.sharding.spec == P()
    out = morphax.jit(lambda v, m: v @ m)(xs, _put(w, mesh, P("y", None)))
    _close(out, x @ w, rtol=1e-5, atol=1e-5)
    assert out.sharding.spec == P("x")
    _shards_match(out)
    _ran_partitioned(calls=3)


# ---------------------------------------------------------- reductions, layout ops, constraints


def case_reductions_layout_ops_and_constraints():
    mesh = morphax.make_mesh((4,), ("x",))
    x = RNG.normal(size=(8, 6)).astype(np.float32)
    xs = _put(x, mesh, P("x"))
    spmd_stats.reset()
    checks = [
        (lambda v: v.sum(0), x.sum(0), P(None)),  # over the split dim: local sum + psum
        (lambda v: v.max(1), x.max(1), P("x")),
        (lambda v: jnp.min(v), x.min(), P()),  # pmin
        (lambda v: (v.T * 2).reshape(6, 4, 2), (x.T * 2).reshape(6, 4, 2), P(None, "x", None)),
        (lambda v: jnp.where(v > 0, v, 0.5 * v).astype(jnp.float16), np.where(x > 0, x, 0.5 * x).astype(np.float16), P("x", None)),
        (lambda v: v + jnp.arange(6.0), x + np.arange(6.0, dtype=np.float32), P("x", None)),
    ]  # fmt: skip
    for fn, want, spec in checks:
        out = morphax.jit(fn)(xs)
        _close(out, want, rtol=2e-3 if want.dtype == np.float16 else 2e-5)
        assert out.sharding.spec == spec, (out.sharding, spec)
        _shards_match(out)
    _ran_partitioned(calls=len(checks))
    # Inputs split by jit's in_shardings (uncommitted here), a split over two mesh axes.
    mesh2 = morphax.make_mesh((2, 2), ("x", "y"))
    spmd_stats.reset()
    f = morphax.jit(lambda u: jnp.exp(u).T, in_shardings=NamedSharding(mesh2, P(("x", "y"))))
    out = f(jnp.asarray(x))
    _close(out, np.exp(x).T)
    assert out.sharding.spec == P(None, ("x", "y"))
    _shards_match(out)
    _ran_partitioned()
    # A constraint inside the program splits an unsharded input (each device slices its block).
    auto = morphax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))
    spmd_stats.reset()
    g = morphax.jit(lambda u: lax.with_sharding_constraint(u, NamedSharding(auto, P("x", "y"))) * 3)
    out = g(jnp.asarray(x))
    _close(out, x * 3)
    assert out.sharding.spec == P("x", "y")
    _shards_match(out)
    _ran_partitioned()
    assert "all_gather" not in _program()
    # out_shardings that differ from the propagated layout: each device gathers what it needs.
    spmd_stats.reset()
    h = morphax.jit(lambda u: u * 2, out_shardings=NamedSharding(mesh, P(None, "x")))
    out = h(_put(x[:, :4], mesh, P("x")))
    _close(out, x[:, :4] * 2)
    assert out.sharding.spec == P(None, "x")
    _shards_match(out)
    _ran_partitioned()
    # Unsharded calls keep the one-device path.
    spmd_stats.reset()
    morphax.jit(lambda v: v * 2)(jnp.asarray(x)).block_until_ready()
    assert spmd_stats.calls == 0 and not spmd_stats.device_runs


# ------------------------------------------------------------------ operations along dimensions


def case_along_axis_ops():
    """Running reductions, sort, rev and argmax keep the other dimensions split: local where their
    own dimension is whole, else that dimension alone is gathered first."""
    auto = morphax.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,))
    explicit = morphax.make_mesh((4,), ("x",))
    x = RNG.normal(size=(8, 6)).astype(np.float32)
    local = [
        (lambda v: jnp.cumsum(v, axis=1), np.cumsum(x, axis=1), P("x", None)),
        (lambda v: jnp.sort(v, axis=1), np.sort(x, axis=1), P("x", None)),
        (lambda v: jnp.argsort(v, axis=1), np.argsort(x, axis=1), P("x", None)),
        (lambda v: jnp.flip(v, 1), x[:, ::-1], P("x", None)),
        (lambda v: jnp.argmax(v, 1), np.argmax(x, 1), P("x")),
        (lambda v: jnp.prod(v, 1), np.prod(x, 1), P("x")),
    ]
    for fn, want, spec in local:
        spmd_stats.reset()
        out = morphax.jit(fn)(_put(x, explicit, P("x")))
        _close(out, want)
        assert out.sharding.spec == spec, (out.sharding, spec)
        _shards_match(out)
        _ran_partitioned()
        text = _program()
        assert "all_gather" not in text and "psum" not in text, text
    joined = [
        (auto, lambda v: jnp.cumsum(v, axis=0) + 1, np.cumsum(x, axis=0) + 1, P("x")),
        (explicit, lambda v: jnp.argmax(v, 0), np.argmax(x, 0), P(None)),
    ]
    for mesh, fn, want, spec in joined:
        spmd_stats.reset()
        out = morphax.jit(fn)(_put(x, mesh, P("x")))
        _close(out, want, rtol=1e-5, atol=1e-5)
        assert out.sharding.spec == spec, (out.sharding, spec)
        _shards_match(out)
        _ran_partitioned()
        assert "all_gather" in _program()


def case_batched_linear_algebra_and_ffts():
    """Split batch dimensions: every device factors its own matrices (JAX's shardings)."""
    explicit = morphax.make_mesh((4,), ("x",))
    auto = morphax.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,))
    b = np.eye(3, dtype=np.float32) * 3 + RNG.normal(size=(8, 3, 3)).astype(np.float32) * 0.3
    spd = b @ np.swapaxes(b, 1, 2)
    c = (RNG.normal(size=(8, 8)) + 1j * RNG.normal(size=(8, 8))).astype(np.complex64)
    cases = [
        (auto, jnp.linalg.inv, b, np.linalg.inv(b), P("x")),
        (explicit, jnp.linalg.cholesky, spd, np.linalg.cholesky(spd), P("x", None, None)),
        (explicit, lambda v: jnp.linalg.eigh(v)[0], spd, np.linalg.eigvalsh(spd), P("x", None)),
        (explicit, lambda v: jnp.abs(jnp.linalg.qr(v)[1]), b, np.abs(np.linalg.qr(b)[1]), P("x", None, None)),
        (explicit, jnp.fft.fft, c, np.fft.fft(c), P("x", None)),
    ]
    for mesh, fn, a, want, spec in cases:
        spmd_stats.reset()
        out = morphax.jit(fn)(_put(a, mesh, P("x")))
        _close(out, want, rtol=1e-4, atol=1e-4)
        assert out.sharding.spec == spec, (out.sharding, spec)
        _shards_match(out)
        _ran_partitioned()
        assert "all_gather" not in _program()


def case_slices_pads_concatenations_gathers():
    """Data movement that keeps the split dimension whole stays local (JAX's shardings); along
    the split dimension the operand is joined first, and the result cut again."""
    explicit = morphax.make_mesh((4,), ("x",))
    auto = morphax.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,))
    x = RNG.normal(size=(8, 6)).astype(np.float32)
    idx = np.array([5, 0, 3])
    local = [
        (lambda v: jnp.concatenate([v, v * 2], axis=1), np.concatenate([x, x * 2], axis=1)),
        (lambda v: v.reshape(8, 1, 6).squeeze(1) + 1, x + 1),
        (lambda v: jnp.pad(v, ((0, 0), (1, 2))), np.pad(x, ((0, 0), (1, 2)))),
        (lambda v: v[:, 1:4], x[:, 1:4]),
        (lambda v: v[:, jnp.asarray(idx)], x[:, idx]),
        (lambda v: v.at[:, jnp.asarray([5, 0, 9])].get(mode="fill", fill_value=-1.0), np.where([1, 1, 0], x[:, [5, 0, 0]], -1.0)),
    ]  # fmt: skip
    for fn, want in local:
        spmd_stats.reset()
        out = morphax.jit(fn)(_put(x, explicit, P("x")))
        _close(out, want)
        assert out.sharding.spec == P("x", None), out.sharding
        _shards_match(out)
        _ran_partitioned()
        assert "all_gather" not in _program(), _program()
    joined = [
        (explicit, lambda v: jnp.concatenate([v, v], axis=0), np.concatenate([x, x]), P("x", None)),
        (explicit, lambda v: v[2:6] * 2, x[2:6] * 2, P("x", None)),
        (auto, lambda v: jnp.pad(v, ((1, 0), (0, 0))), np.pad(x, ((1, 0), (0, 0))), P()),
        (auto, lambda v: v[jnp.asarray(idx)], x[idx], P()),
    ]
    for mesh, fn, want, spec in joined:
        spmd_stats.reset()
        out = morphax.jit(fn)(_put(x, mesh, P("x")))
        _close(out, want)
        assert out.sharding.spec == spec, (out.sharding, spec)
        _shards_match(out)
        _ran_partitioned()


# ---------------------------------------------------------------------------------- fallbacks


def case_control_flow():
    """Loops and conditionals run on every device with their bodies partitioned: a data-parallel
    training loop all-reduces its gradients inside the loop; carries keep their splits (JAX's
    shardings)."""
    explicit = morphax.make_mesh((4,), ("x",))
    auto = morphax.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,))
    x = RNG.normal(size=(32, 8)).astype(np.float32)
    y = RNG.normal(size=(32, 2)).astype(np.float32)
    w0 = jnp.asarray(RNG.normal(size=(8, 2)).astype(np.float32) * 0.1)

    def loss(w, a, b):
        return jnp.mean((jnp.tanh(a @ w) - b) ** 2)

    train = morphax.jit(
        lambda w, a, b: lax.fori_loop(0, 5, lambda i, w: w - 0.1 * morphax.grad(loss)(w, a, b), w)
    )
    want = train(w0, jnp.asarray(x), jnp.asarray(y))
    spmd_stats.reset()
    out = train(w0, _put(x, explicit, P("x")), _put(y, explicit, P("x")))
    _close(out, want)
    assert out.sharding.spec == P(None, None)
    _ran_partitioned()
    text = _program()
    assert "psum" in text and "all_gather" not in text, text
    v = RNG.normal(size=(8, 6)).astype(np.float32)
    w = RNG.normal(size=6).astype(np.float32)
    cases = [
        (lambda a: lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c * w) + 1, a * 2) - 1, P("x", None), P("x")),
        (
            lambda a: lax.while_loop(lambda c: jnp.sum(c) < 1e3, lambda c: c * 2 + 1, jnp.abs(a)),
            P("x", None),
            P("x"),
        ),
        (
            lambda a: lax.cond(a.sum() > 0, lambda u: u * 2, lambda u: jnp.sin(u) @ jnp.ones((6, 6)), a),
            P("x", None),
            P("x"),
        ),
        (lambda a: lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(8), a.T)[0], P("x"), P("x")),
    ]
    for fn, spec_explicit, spec_auto in cases:
        want = morphax.jit(fn)(jnp.asarray(v))
        for mesh, spec in ((explicit, spec_explicit), (auto, spec_auto)):
            spmd_stats.reset()
            out = morphax.jit(fn)(_put(v, mesh, P("x")))
            _close(out, want)
            assert out.sharding.spec == spec, (out.sharding, spec)
            _shards_match(out)
            _ran_partitioned()


def case_cross_entropy_stays_split():
    """The integer-label cross-entropy of a batch split over the mesh: take_along_axis is a gather
    with batching dimensions (as JAX builds it) and its gradient a scatter-add of the same form,
    so each device gathers from and scatters into its own rows; nothing is gathered across
    devices, and the loss and gradient equal the one-device ones."""
    mesh = morphax.make_mesh((4,), ("x",))
    logits = RNG.normal(size=(16, 10)).astype(np.float32)
    labels = RNG.integers(0, 10, 16).astype(np.int32)

    def xent(z, y):
        logp = z - morphax.nn.logsumexp(z, axis=1, keepdims=True)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    step = morphax.jit(morphax.value_and_grad(xent))
    v0, g0 = step(logits, labels)
    spmd_stats.reset()
    v, g = step(_put(logits, mesh, P("x")), _put(labels, mesh, P("x")))
    _close(v, v0)
    _close(g, g0)
    _ran_partitioned(fallbacks=0)
    text = _program()
    assert "all_gather" not in text and "gather[" in text and "scatter-add" in text, text


def case_fallback_is_still_correct():
    auto = morphax.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,))
    explicit = morphax.make_mesh((4,), ("x",))
    x = RNG.normal(size=(8, 6)).astype(np.float32)
    # A scatter between partitioned operations (JAX's sharding: the operand's). Into columns of
    # a row-split operand, each device scatters into its rows; into rows, it falls back.
    for mesh, spec in ((explicit, P("x", None)), (auto, P("x"))):
        for where, fallbacks in (((slice(None), [5, 0, 3]), 0), (([5, 0, 3],), 1)):
            spmd_stats.reset()
            index = tuple(jnp.asarray(w) if isinstance(w, list) else w for w in where)
            out = morphax.jit(lambda v, index=index: jnp.sin(v.at[index].add(1.0)) * 2)(_put(x, mesh, P("x")))
            want = x.copy()
            want[where] += 1.0
            _close(out, np.sin(want) * 2)
            assert out.sharding.spec == spec, (out.sharding, spec)
            _shards_match(out)
            _ran_partitioned(fallbacks=fallbacks)
            assert dict(spmd_stats.fallback_primitives) == ({"scatter-add": 1} if fallbacks else {}), (
                spmd_stats.fallback_primitives
            )
    # Linear algebra on a matrix split along a matrix dimension (Auto axes: JAX gives a
    # replicated result).
    m = RNG.normal(size=(8, 8)).astype(np.float32) + 8 * np.eye(8, dtype=np.float32)
    spmd_stats.reset()
    out = morphax.jit(lambda v: jnp.linalg.inv(v) * 2)(_put(m, auto, P("x")))
    _close(out, np.linalg.inv(m) * 2, rtol=1e-4, atol=1e-5)
    assert out.sharding.spec == P()
    _ran_partitioned(fallbacks=1)
    assert dict(spmd_stats.fallback_primitives) == {"lu": 1}, spmd_stats.fallback_primitives
