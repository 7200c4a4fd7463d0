"""vmap of the structural and conversion primitives (broadcast_in_dim, reshape, transpose, squeeze,
rev, pad, concatenate, slice, dynamic_slice, dynamic_update_slice, convert_element_type,
bitcast_convert_type, iota, select_n, clamp, copy, stop_gradient), checked against a Python loop over
the batch and a stack of the results.

Every operand is batched at axis 0, at its last axis or not at all (at least one batched), with
batch sizes 1 and 3 and out_axes 0 and -1; batched members differ (integer starts and `which`
values include out-of-range ones). Also: the parameter rewrites that keep the batch axis in place
(no transposes in the jaxpr), batched padding values and start indices, nested vmap with different
axes, vmap of grad and grad of vmap.
"""

from __future__ import annotations

import itertools
import re
import zlib

import numpy as np
import pytest

import morphax as jax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.core.batch_axes import AxisData
from morphax._src.core.primitive import registry
from morphax._src.prims._spec import random_array
from morphax._src.transforms.batching import MissingBatchRuleError

MINE = (
    "broadcast_in_dim",
    "reshape",
    "transpose",
    "squeeze",
    "rev",
    "pad",
    "concatenate",
    "slice",
    "dynamic_slice",
    "dynamic_update_slice",
    "convert_element_type",
    "bitcast_convert_type",
    "select_n",
    "clamp",
    "copy",
    "stop_gradient",
)

RNG = np.random.default_rng(0)


def _run(fn):
    """Run `fn`; skip when a primitive outside this file's set has no batching rule yet."""
    try:
        return fn()
    except MissingBatchRuleError as e:
        m = re.search(r"'([^']+)'", str(e))
        if m and m.group(1) not in MINE:
            pytest.skip(f"batching rule for {m.group(1)!r} not available yet")
        raise


def _assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if got.dtype.type.__module__.startswith("ml_dtypes"):
        got, want = got.astype(np.float32), want.astype(np.float32)
    np.testing.assert_array_equal(got, want)


def _member(rng, a, k):
    """Batch member k of operand `a`: `a` itself for k = 0, else fresh values of its shape/dtype
    (integers spread a little past the original range, so starts and `which` go out of range)."""
    a = np.asarray(a)
    if k == 0:
        return a
    if a.dtype.kind in "iu":
        lo = int(a.min()) - 3 if a.size else -3
        hi = int(a.max()) + 3 if a.size else 3
        return random_array(rng, a.shape, a.dtype, (lo, hi))
    return random_array(rng, a.shape, a.dtype)


def _check_vmap_vs_loop(prim, args, params, axes, size, out_axis, rng):
    members = [[_member(rng, a, k) for k in range(size)] for a in args]
    batched = [m[0] if ax is None else np.stack(m, axis=ax) for m, ax in zip(members, axes)]
    with np.errstate(all="ignore"):
        want = np.stack(
            [
                np.asarray(
                    prim.bind(*[m[b] if ax is not None else m[0] for m, ax in zip(members, axes)], **params)
                )
                for b in range(size)
            ],
            axis=out_axis,
        )
        got = jax.vmap(lambda *a: prim.bind(*a, **params), in_axes=tuple(axes), out_axes=out_axis)(*batched)
    _assert_same(got, want)


def _axes_combos(n, rng, cap=27):
    combos = [c for c in itertools.product((0, -1, None), repeat=n) if any(x is not None for x in c)]
    if len(combos) > cap:
        combos = [combos[i] for i in sorted(rng.choice(len(combos), cap, replace=False))]
    return combos


def _matrix_params():
    out = []
    for name in MINE:
        prim = registry[name]
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        cases = prim.test_spec.cases(rng)
        if len(cases) > 16:  # a spread over the spec (every dtype, most shapes)
            cases = [cases[i] for i in np.linspace(0, len(cases) - 1, 16).astype(int)]
        out += [pytest.param(prim, case, id=f"{name}-{case.name}") for case in cases]
    return out


@pytest.mark.parametrize("prim,case", _matrix_params())
def test_vmap_matches_loop(prim, case):
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    for axes in _axes_combos(len(case.args), rng):
        for size in (1, 3):
            for out_axis in (0, -1):
                _check_vmap_vs_loop(prim, case.args, case.params, axes, size, out_axis, rng)


# ----------------------------------------------------------------------------- parameter rewrites


def _prims_in(f, *args):
    return [str(e.primitive) for e in jax.make_jaxpr(f)(*args).jaxpr.eqns]


def _starts(*values):
    return tuple(np.array(v, np.int32) for v in values)


@pytest.mark.parametrize(
    "name,params,shape,extra,in_axis,out_axis",
    [
        ("transpose", dict(permutation=(2, 0, 1)), (2, 3, 5, 4), (), 1, 1),
        ("transpose", dict(permutation=(1, 0)), (2, 3, 4), (), 2, 2),
        (
            "broadcast_in_dim",
            dict(shape=(2, 6, 3), broadcast_dimensions=(0, 2), sharding=None),
            (2, 4, 3),
            (),
            1,
            1,
        ),
        ("broadcast_in_dim", dict(shape=(3, 2), broadcast_dimensions=(0,), sharding=None), (3, 4), (), 1, 1),
        (
            "broadcast_in_dim",
            dict(shape=(5, 2, 3), broadcast_dimensions=(1, 2), sharding=None),
            (4, 2, 3),
            (),
            0,
            0,
        ),
        ("squeeze", dict(dimensions=(0, 2)), (1, 3, 4, 1), (), 2, 1),
        ("squeeze", dict(dimensions=(0, 2)), (1, 4, 3, 1), (), 1, 0),
        ("squeeze", dict(dimensions=(0,)), (1, 3, 4), (), 2, 1),
        ("rev", dict(dimensions=(0, 1)), (2, 4, 3), (), 1, 1),
        ("slice", dict(start_indices=(0, 1), limit_indices=(2, 3), strides=(1, 2)), (2, 4, 3), (), 1, 1),
        ("slice", dict(start_indices=(0, 1), limit_indices=(2, 3), strides=None), (2, 3, 4), (), 2, 2),
        ("pad", dict(padding_config=((1, 1, 1), (0, -1, 0))), (2, 4, 3), (np.float32(0),), 1, 1),
        ("dynamic_slice", dict(slice_sizes=(1, 2)), (2, 4, 3), _starts(1, 2), 1, 1),
        ("concatenate", dict(dimension=1), (2, 4, 3), (np.zeros((2, 1), np.float32),), 1, 1),
        ("bitcast_convert_type", dict(new_dtype=np.dtype(np.uint8)), (2, 4, 3), (), 2, 2),
        (
            "convert_element_type",
            dict(new_dtype=np.dtype(np.int32), weak_type=False, sharding=None),
            (2, 4),
            (),
            1,
            1,
        ),
        ("reshape", dict(new_sizes=(6,), dimensions=None, sharding=None), (2, 5, 3), (), 1, 0),
    ],
)
def test_rules_keep_the_batch_axis_without_transposes(name, params, shape, extra, in_axis, out_axis):
    # Called directly, each rule binds only its own primitive (a parameter rewrite, no transposes)
    # and reports where the batch axis ended up; vmap then agrees with the loop.
    prim = registry[name]
    x = random_array(RNG, shape, "float32")
    dims = [in_axis] + [None] * len(extra)
    seen = []

    def rule(x):
        out, d = prim.batch([x, *extra], dims, axis_data=AxisData(shape[in_axis]), **params)
        seen.append(d)
        return out

    # (unbatched operands are broadcast along the batch axis: that is not a transpose)
    assert [p for p in _prims_in(rule, x) if p != "broadcast_in_dim" or p == name] == [name]
    assert seen == [out_axis]
    f = lambda x: prim.bind(x, *extra, **params)
    got = jax.vmap(f, in_axes=in_axis, out_axes=out_axis)(x)
    want = np.stack([np.asarray(f(np.take(x, b, in_axis))) for b in range(shape[in_axis])], axis=out_axis)
    _assert_same(got, want)


def test_reshape_with_dimensions_is_one_primitive():
    x = random_array(RNG, (2, 5, 3, 4), "float32")
    f = lambda v: lax.reshape(v, (4, 6), dimensions=(2, 0, 1))
    g = jax.vmap(f, in_axes=1)
    assert _prims_in(g, x) == ["reshape"]
    _assert_same(g(x), np.stack([np.asarray(f(x[:, b])) for b in range(5)]))


def test_squeeze_output_axis_shifts_past_removed_axes():
    x = random_array(RNG, (1, 1, 3, 2, 1), "float32")  # batch at axis 3 of the operand
    f = lambda v: lax.squeeze(v, (0, 1, 3))
    _assert_same(jax.vmap(f, in_axes=3, out_axes=1)(x), np.asarray(x).reshape(3, 2))


def test_iota_under_vmap_is_unbatched():
    def f(x):
        return x + lax.broadcasted_iota(np.int32, (3, 2), 1)

    x = np.arange(12, dtype=np.int32).reshape(2, 3, 2)
    _assert_same(jax.vmap(f)(x), x + np.arange(2, dtype=np.int32))
    got = jax.vmap(lambda: lax.iota(np.int32, 4), axis_size=3)()
    _assert_same(got, np.tile(np.arange(4, dtype=np.int32), (3, 1)))


# --------------------------------------------------------------------------------------------- pad


@pytest.mark.parametrize("x_axis", [0, 1, None])
def test_pad_batched_padding_value(x_axis):
    config = ((1, -1, 2), (-2, 3, 1))
    xs = random_array(RNG, (3, 4, 5), "float32")
    x = xs[0] if x_axis is None else np.moveaxis(xs, 0, x_axis)
    v = np.array([10.0, 20.0, 30.0], np.float32)
    got = jax.vmap(lambda x, v: lax.pad(x, v, config), in_axes=(x_axis, 0), out_axes=-1)(x, v)
    want = np.stack(
        [np.asarray(lax.pad(xs[0] if x_axis is None else xs[b], v[b], config)) for b in range(3)], axis=-1
    )
    _assert_same(got, want)


def test_pad_batched_value_keeps_weak_type_and_bool():
    x = np.array([[True, False], [False, True]])
    v = np.array([True, False])
    got = jax.vmap(lambda x, v: lax.pad(x, v, ((1, 0, 1),)), in_axes=(1, 0))(x, v)
    want = np.stack([np.asarray(lax.pad(x[:, b], v[b], ((1, 0, 1),))) for b in range(2)])
    _assert_same(got, want)


# ------------------------------------------------------------------------------------- concatenate


def test_concatenate_mixed_batch_axes_and_unbatched():
    a = random_array(RNG, (2, 3, 4), "float32")  # batch at 2
    b = random_array(RNG, (4, 2, 1), "float32")  # batch at 0
    c = random_array(RNG, (2, 5), "float32")  # unbatched
    f = lambda a, b, c: lax.concatenate([a, b, c], 1)
    got = jax.vmap(f, in_axes=(2, 0, None))(a, b, c)
    want = np.stack([np.asarray(f(a[..., k], b[k], c)) for k in range(4)])
    _assert_same(got, want)


# --------------------------------------------------------------------------- dynamic start indices


def _clamped(i, n, w):
    return min(max(int(i), 0), n - w)


@pytest.mark.parametrize("x_axis", [None, 0, 2])
@pytest.mark.parametrize("idt", ["int32", "uint8", "int8"])
def test_dynamic_slice_batched_starts_clamp_like_xla(x_axis, idt):
    xs = random_array(RNG, (4, 5, 6), "float32")
    x = xs[0] if x_axis is None else np.moveaxis(xs, 0, x_axis)
    lo = 0 if idt == "uint8" else -9
    i = RNG.integers(lo, 12, size=4).astype(idt)
    j = np.array(3, idt)  # unbatched
    got = jax.vmap(
        lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 4), allow_negative_indices=False),
        in_axes=(x_axis, 0, None),
    )(x, i, j)
    want = []
    for b in range(4):
        xb = xs[0] if x_axis is None else xs[b]
        s0, s1 = _clamped(i[b], 5, 2), _clamped(j, 6, 4)
        want.append(xb[s0 : s0 + 2, s1 : s1 + 4])
    _assert_same(got, np.stack(want))


def test_dynamic_slice_batched_starts_lowers_to_one_gather():
    x = random_array(RNG, (3, 5), "float32")
    i = np.array([0, 4, -2], np.int32)
    g = jax.vmap(lambda x, i: lax.dynamic_slice_p.bind(x, i, slice_sizes=(2,)))
    assert _prims_in(g, x, i).count("gather") == 1


@pytest.mark.parametrize("x_axis,u_axis", [(None, 0), (0, None), (1, 2), (None, None)])
def test_dynamic_update_slice_batched_starts(x_axis, u_axis):
    xs = random_array(RNG, (3, 4, 5), "float32")
    us = random_array(RNG, (3, 2, 3), "float32")
    x = xs[0] if x_axis is None else np.moveaxis(xs, 0, x_axis)
    u = us[0] if u_axis is None else np.moveaxis(us, 0, u_axis)
    i = np.array([-1, 3, 1], np.int32)
    j = np.array([4, 0, 9], np.int32)
    got = jax.vmap(
        lambda x, u, i, j: lax.dynamic_update_slice_p.bind(x, u, i, j),
        in_axes=(x_axis, u_axis, 0, 0),
        out_axes=1,
    )(x, u, i, j)
    want = []
    for b in range(3):
        xb = np.array(xs[0] if x_axis is None else xs[b])
        ub = us[0] if u_axis is None else us[b]
        s0, s1 = _clamped(i[b], 4, 2), _clamped(j[b], 5, 3)
        xb[s0 : s0 + 2, s1 : s1 + 3] = ub
        want.append(xb)
    _assert_same(got, np.stack(want, axis=1))


# ------------------------------------------------------------------------------------------ bitcast


def test_bitcast_widening_with_trailing_batch_axis():
    x = RNG.integers(0, 256, size=(3, 4, 5)).astype(np.uint8)  # batch at the last axis
    f = lambda v: lax.bitcast_convert_type(v, np.float32)
    got = jax.vmap(f, in_axes=-1, out_axes=-1)(x)
    want = np.stack([np.asarray(f(x[..., b])) for b in range(5)], axis=-1)
    _assert_same(got, want)


def test_bitcast_narrowing_with_trailing_batch_axis():
    x = random_array(RNG, (3, 4), "float32")
    f = lambda v: lax.bitcast_convert_type(v, np.uint16)
    got = jax.vmap(f, in_axes=1)(x)
    want = np.stack([np.asarray(f(x[:, b])) for b in range(4)])
    _assert_same(got, want)


# ---------------------------------------------------------------------------------- select_n, clamp


def test_select_n_scalar_which_batched_cases_at_different_axes():
    which = np.array([0, 2, 1, 5], np.int32)  # rank-0 per member; 5 is out of range (clamps)
    c0 = random_array(RNG, (4, 2, 3), "float32")  # batch at 0
    c1 = random_array(RNG, (2, 3, 4), "float32")  # batch at 2
    c2 = random_array(RNG, (2, 3), "float32")  # unbatched
    got = jax.vmap(lax.select_n, in_axes=(0, 0, 2, None), out_axes=1)(which, c0, c1, c2)
    want = np.stack([np.asarray(lax.select_n(which[b], c0[b], c1[..., b], c2)) for b in range(4)], axis=1)
    _assert_same(got, want)


def test_select_n_unbatched_scalar_which_stays_scalar():
    c0, c1 = random_array(RNG, (3, 4), "float32"), random_array(RNG, (4, 3), "float32")
    g = jax.vmap(lambda a, b: lax.select_n(np.bool_(True), a, b), in_axes=(0, 1))
    assert "broadcast_in_dim" not in _prims_in(g, c0, c1)
    _assert_same(g(c0, c1), np.asarray(c1).T)


def test_select_n_shaped_which_batched_cases_not():
    which = RNG.random((2, 3, 5)) < 0.5  # batch at 2
    a, b = random_array(RNG, (2, 3), "int32"), random_array(RNG, (2, 3), "int32")
    got = jax.vmap(lax.select_n, in_axes=(2, None, None))(which, a, b)
    _assert_same(got, np.where(np.moveaxis(which, 2, 0), b, a))


@pytest.mark.parametrize("axes", [a for a in itertools.product((0, 1, None), repeat=3) if a != (None,) * 3])
def test_clamp_scalar_and_shaped_bounds(axes):
    # min: a scalar per member (batched rank-0); operand and max: shaped per member.
    lo = np.array([-1.0, 0.0, 0.5], np.float32)
    x = random_array(RNG, (3, 4), "float32")
    hi = random_array(RNG, (3, 4), "float32", (0, 3))
    lo_axis = None if axes[0] is None else 0  # rank-0 members: axis 0 is the only axis

    def arg(a, ax):
        return a[0] if ax is None else np.moveaxis(a, 0, ax)

    got = jax.vmap(lax.clamp, in_axes=(lo_axis, axes[1], axes[2]))(
        arg(lo, lo_axis), arg(x, axes[1]), arg(hi, axes[2])
    )
    want = []
    for b in range(3):
        pick = [a[b] if ax is not None else a[0] for a, ax in ((lo, lo_axis), (x, axes[1]), (hi, axes[2]))]
        want.append(np.asarray(lax.clamp(*pick)))
    _assert_same(got, np.stack(want))


# ------------------------------------------------------------------------------------ composition


def test_nested_vmap_dynamic_slice_different_axes():
    # Outer vmap over the operand's axis 1, inner over the starts: the inner rule's gather is then
    # batched by the outer vmap.
    x = random_array(RNG, (6, 2, 5), "float32")
    starts = np.array([[0, 3], [7, -1], [2, 2]], np.int32)  # (inner 3, 2 starts)
    f = lambda x, s: lax.dynamic_slice(x, (s[0], s[1]), (3, 2), allow_negative_indices=False)
    got = _run(lambda: jax.vmap(jax.vmap(f, in_axes=(None, 0)), in_axes=(1, None), out_axes=-1)(x, starts))
    want = np.stack(
        [np.stack([np.asarray(f(x[:, o], starts[k])) for k in range(3)]) for o in range(2)], axis=-1
    )
    _assert_same(got, want)


def test_nested_vmap_update_slice_and_pad():
    x = random_array(RNG, (2, 4, 3), "float32")
    u = random_array(RNG, (3, 2), "float32")
    i = np.array([[0, 1, 5], [-3, 2, 2]], np.int32)  # (outer 2, inner 3)

    def f(x, u, i, v):
        return lax.pad(lax.dynamic_update_slice_p.bind(x, u, i), v, ((1, 2, 1),))

    v = np.array([7.0, 8.0], np.float32)
    g = jax.vmap(jax.vmap(f, in_axes=(1, None, 0, None)), in_axes=(0, 1, 0, 0), out_axes=1)
    got = _run(lambda: g(x, u, i, v))
    want = np.stack(
        [np.stack([np.asarray(f(x[o, :, k], u[:, o], i[o, k], v[o])) for k in range(3)]) for o in range(2)],
        axis=1,
    )
    _assert_same(got, want)


def _loss(x, i, v, lo):
    y = lax.dynamic_slice(x, (i, np.int32(0)), (2, 3))
    y = lax.pad(y, v, ((1, 1, 1), (0, 1, 0)))  # (5, 4)
    y = lax.clamp(lo, y, np.float32(2.0))
    y = lax.select_n(
        lax.gt(y, np.float32(0)), lax.rev(y, (0,)), lax.transpose(lax.reshape(y, (4, 5)), (1, 0))
    )
    z = lax.concatenate([y, lax.broadcast_in_dim(v, (1, 4), ())], 0)
    w = lax.dynamic_update_slice(z, lax.mul(lax.slice(z, (0, 0), (2, 2)), np.float32(2.0)), (i, i))
    w = lax.convert_element_type(lax.convert_element_type(w, np.complex64), np.float32)
    return jnp.sum(lax.mul(w, w)) + jnp.sum(lax.stop_gradient(w))


def _loss_args(size):
    x = random_array(RNG, (size, 4, 3), "float32")
    i = np.array([0, 3, -1, 1][:size], np.int32)
    v = random_array(RNG, (size,), "float32")
    lo = random_array(RNG, (size,), "float32", (-2, -0.5))
    return x, i, v, lo


@pytest.mark.parametrize(
    "in_axes", [(0, 0, 0, 0), (0, None, None, None), (None, 0, 0, None), (None, None, None, 0)]
)
def test_vmap_of_grad(in_axes):
    x, i, v, lo = _loss_args(3)
    args = [a if ax is not None else a[0] for a, ax in zip((x, i, v, lo), in_axes)]
    g = jax.grad(_loss, argnums=(0, 2, 3))
    got = _run(lambda: jax.vmap(g, in_axes=in_axes)(*args))
    for k, gk in enumerate(got):
        want = np.stack(
            [
                np.asarray(g(*[a[b] if ax is not None else a for a, ax in zip(args, in_axes)])[k])
                for b in range(3)
            ]
        )
        np.testing.assert_allclose(np.asarray(gk), want, rtol=1e-6, atol=1e-6)


def test_grad_of_vmap():
    x, i, v, lo = _loss_args(3)

    def total(x, v, lo):
        return jax.vmap(_loss, in_axes=(0, 0, 0, 0))(x, i, v, lo).sum()

    got = _run(lambda: jax.grad(total, argnums=(0, 1, 2))(x, v, lo))
    for k, gk in enumerate(got):
        want = np.stack(
            [np.asarray(jax.grad(_loss, argnums=(0, 2, 3))(x[b], i[b], v[b], lo[b])[k]) for b in range(3)]
        )
        np.testing.assert_allclose(np.asarray(gk), want, rtol=1e-6, atol=1e-6)


def test_jit_of_vmap_dynamic_slice():
    x = random_array(RNG, (3, 5), "float32")
    i = np.array([4, -1, 2], np.int32)
    f = jax.jit(jax.vmap(lambda x, i: lax.dynamic_slice(x, (i,), (2,))))
    want = np.stack([np.asarray(lax.dynamic_slice(x[b], (i[b],), (2,))) for b in range(3)])
    _assert_same(f(x, i), want)
