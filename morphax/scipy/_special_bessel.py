"""Bessel functions of the first kind of integer order for `morphax.scipy.special`: bessel_jn,
J_0(z) .. J_v(z) at once for real z. Private: import from `morphax.scipy.special`.

Miller's backward recurrence (Zhang and Jin, "Computation of Special Functions", 1996, BJNDD),
as in JAX: from a tiny seed at order n_iter down to 0 by f_k = 2 (k + 1) f_(k+1) / z - f_(k+2),
normalized by J_0 + 2 (J_2 + J_4 + ...) = 1. The recurrence is a `lax.scan`, so z differentiates
by autodiff (JAX's too).
"""

from __future__ import annotations

import operator

import numpy as np

import morphax.numpy as jnp
from morphax import lax
from morphax.scipy._special_gamma import _const, _inexact


def bessel_jn(z, *, v, n_iter=50):
    """J_0(z), ..., J_v(z) stacked along a new leading axis: shape (v + 1, *z.shape), z's float
    dtype. `n_iter` is the order the recurrence starts from; it must exceed |z| comfortably (the
    smallest n with 0.5 log10(6.28 + n) - n log10(1.36 + |z| / n) > 20 suffices)."""
    (z,) = _inexact("bessel_jn", jnp.asarray(z))
    if jnp.iscomplexobj(z):
        raise ValueError("complex input not supported.")
    v = operator.index(v)
    n_iter = operator.index(n_iter)
    if v < 0 or n_iter < v:
        raise ValueError(f"bessel_jn needs 0 <= v <= n_iter; got v={v}, n_iter={n_iter}.")
    if z.dtype not in (np.float32, np.float64):
        # NB: half precisions recur in float32 (the 1e-16 seed alone underflows in float16).
        return _bessel_jn(z.astype(np.float32), v, n_iter).astype(z.dtype)
    return _bessel_jn(z, v, n_iter)


def _bessel_jn(z, v, n_iter):
    # NB: JAX's recurrence overflows (and returns nan) in float32 for |z| below ~3 with the
    # default n_iter, and returns nan at z = 0. Here the running values are divided by a power of
    # two whenever they pass it (the divisors are carried out and applied to the stored orders in
    # the end), and z = 0 gives J_0 = 1, J_k = 0.
    threshold = float(2.0 ** (np.finfo(z.dtype).maxexp // 2))
    zero = z == 0
    zs = jnp.where(zero, _const(z, 1.0), z)

    def step(carry, k):
        f0, f1, even_sum = carry
        f = 2 * (k + 1) * f1 / zs - f0
        even_sum = even_sum + jnp.where(k % 2 == 0, 2 * f, 0.0)
        scale = jnp.where(jnp.abs(f) > threshold, _const(z, 1 / threshold), _const(z, 1.0))
        return (f1 * scale, f * scale, even_sum * scale), (f, scale)

    init = (jnp.zeros_like(z), jnp.full_like(z, 1e-16), jnp.zeros_like(z))
    orders = jnp.arange(n_iter + 1, dtype=z.dtype)
    (_, _, even_sum), (values, scales) = lax.scan(step, init, orders, reverse=True)
    # values[k] was stored before the divisions made at orders k, k - 1, ..., 0.
    values = values * jnp.cumprod(scales, axis=0)
    result = values[: v + 1] / (even_sum - values[0])
    exact_at_zero = (jnp.arange(v + 1) == 0).astype(z.dtype).reshape((v + 1,) + (1,) * z.ndim)
    return jnp.where(zero, exact_at_zero, result)
