"""`check_grads` and helpers: derivatives checked against float64 finite differences.

JVPs are compared with central differences in a random direction; VJPs with the JVP through
the inner-product identity <ct, J t> = <J^T ct, t>; higher orders recurse on the derivative.
"""

from __future__ import annotations

import numpy as np

from morphax._src.api import autodiff as _ad_api
from morphax._src.config import enable_x64
from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core.avals import get_aval
from morphax._src.core.values import make_array

DEFAULT_TOLERANCE = {
    np.dtype(np.float16): 5e-2,
    np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 2e-3,
    np.dtype(np.complex128): 1e-5,
}
_dtypes.when_ml_dtypes_loaded(lambda: DEFAULT_TOLERANCE.setdefault(_dtypes.bfloat16, 1e-1))
EPS = 1e-4


def _tol(dtypes, given):
    if given is not None:
        return given
    return max((DEFAULT_TOLERANCE.get(np.dtype(d), 1e-5) for d in dtypes), default=1e-5)


def _leaves_dtypes(tree):
    return [get_aval(x).dtype for x in pytree.tree_leaves(tree)]


def _rand_like(rng, x):
    aval = get_aval(x)
    if not _dtypes.is_inexact(aval.dtype):
        return make_array(np.zeros(aval.shape, _dtypes.float0), dtype=_dtypes.float0)
    if _dtypes.is_complex(aval.dtype):
        v = rng.standard_normal(aval.shape) + 1j * rng.standard_normal(aval.shape)
    else:
        v = rng.standard_normal(aval.shape)
    return make_array(np.asarray(v).astype(aval.dtype), dtype=aval.dtype)


def _cast_like(t, like):
    """Fixed random directions follow the dtype of the point (finite differences run in float64)."""
    dt = get_aval(like).dtype
    if not _dtypes.is_inexact(dt):
        return make_array(np.zeros(np.shape(t), _dtypes.float0), dtype=_dtypes.float0)
    return make_array(np.asarray(t).astype(dt), dtype=dt)


def _to_host64(x):
    v = np.asarray(x)
    if np.iscomplexobj(v):
        return v.astype(np.complex128)
    if v.dtype.kind == "f" or _dtypes.is_bfloat16(v.dtype):
        return v.astype(np.float64)
    return v


def _inner(xs, ys):
    total = 0.0
    for x, y in zip(pytree.tree_leaves(xs), pytree.tree_leaves(ys)):
        a, b = _to_host64(x), _to_host64(y)
        if a.dtype.kind in "fc" and b.dtype.kind in "fc":
            # Plain (non-conjugated) products: JAX's transposes do not conjugate, so the identity
            # holds for the real part of the bilinear form.
            total = total + np.real(np.sum(a * b))
    return total


def numerical_jvp(f, primals, tangents, eps=EPS):
    """Central differences of `f` at `primals` along `tangents`, evaluated in float64."""
    with enable_x64():
        p64 = [make_array(_to_host64(p)) for p in primals]
        t64 = [_to_host64(t) for t in tangents]
        plus = [make_array(np.asarray(p) + eps * t) for p, t in zip(p64, t64)]
        minus = [make_array(np.asarray(p) - eps * t) for p, t in zip(p64, t64)]
        f_plus = pytree.tree_map(_to_host64, f(*plus))
        f_minus = pytree.tree_map(_to_host64, f(*minus))
        # Integer outputs (indices, counts) have no derivative: their tangents are float0 zeros.
        return pytree.tree_map(
            lambda a, b: (a - b) / (2 * eps) if a.dtype.kind in "fc" else np.zeros(a.shape, _dtypes.float0),
            f_plus,
            f_minus,
        )


def _assert_close(name, got, want, atol, rtol):
    g_leaves, g_tree = pytree.tree_flatten(got)
    w_leaves, w_tree = pytree.tree_flatten(want)
    if g_tree != w_tree:
        raise AssertionError(f"{name}: output structures differ: {g_tree} vs {w_tree}")
    for g, w in zip(g_leaves, w_leaves):
        if np.asarray(g).dtype == _dtypes.float0 or np.asarray(w).dtype == _dtypes.float0:
            assert np.shape(g) == np.shape(w), f"{name}: float0 tangent shapes differ"
            continue
        np.testing.assert_allclose(_to_host64(g), _to_host64(w), atol=atol, rtol=rtol, err_msg=name)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, rng=None):
    rng = rng or np.random.default_rng(0)
    tangents = [_rand_like(rng, a) for a in args]
    v_out, t_out = f_jvp(args, tangents)
    tol_dtypes = _leaves_dtypes(args) + _leaves_dtypes(v_out)
    atol, rtol = _tol(tol_dtypes, atol), _tol(tol_dtypes, rtol)
    _assert_close("JVP primal output", v_out, f(*args), atol, rtol)
    _assert_close(
        "JVP tangent vs finite differences", t_out, numerical_jvp(f, args, tangents, eps), atol, rtol
    )


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, rng=None):
    rng = rng or np.random.default_rng(1)
    v_out, vjp_fn = f_vjp(*args)
    tangents = [_rand_like(rng, a) for a in args]
    t_out = numerical_jvp(f, args, tangents, eps)
    cts = pytree.tree_map(lambda o: _rand_like(rng, o), v_out)
    ct_in = vjp_fn(cts)
    tol_dtypes = _leaves_dtypes(args) + _leaves_dtypes(v_out)
    atol, rtol = _tol(tol_dtypes, atol), _tol(tol_dtypes, rtol)
    ip = _inner(tangents, ct_in)
    ip_expected = _inner(t_out, cts)
    scale = max(1.0, abs(ip_expected))
    if not abs(ip - ip_expected) <= atol * scale + rtol * abs(ip_expected):
        raise AssertionError(
            f"VJP inner-product check failed: <J^T ct, t> = {ip} but <ct, J t> (finite differences) = "
            f"{ip_expected} (atol={atol}, rtol={rtol})"
        )


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check `f`'s derivatives at `args` up to `order` in the given modes ("fwd" and/or "rev")."""
    eps = EPS if eps is None else eps
    args = tuple(args)
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {mode!r}; use 'fwd' and/or 'rev'")

    def _check(fun, primals, order, seed):
        rng = np.random.default_rng(seed)
        if "fwd" in modes:
            check_jvp(fun, lambda p, t: _ad_api.jvp(fun, tuple(p), tuple(t)), primals, atol, rtol, eps, rng)
            if order > 1:
                tangents = [_rand_like(rng, a) for a in primals]
                _check(
                    lambda *p: _ad_api.jvp(fun, p, tuple(_cast_like(t, x) for t, x in zip(tangents, p)))[1],
                    primals,
                    order - 1,
                    seed + 1,
                )
        if "rev" in modes:
            check_vjp(fun, lambda *p: _ad_api.vjp(fun, *p), primals, atol, rtol, eps, rng)
            if order > 1:
                out = fun(*primals)
                cts = pytree.tree_map(lambda o: _rand_like(rng, o), out)

                def pullback(*p):
                    out, vjp_fn = _ad_api.vjp(fun, *p)
                    return vjp_fn(pytree.tree_map(_cast_like, cts, out))

                _check(pullback, primals, order - 1, seed + 2)

    _check(f, args, order, 0)
