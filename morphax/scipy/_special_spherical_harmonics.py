"""Spherical harmonics for `morphax.scipy.special`: sph_harm_y(n, m, theta, phi) = N P_n^|m|(cos
theta) e^(i m phi), orthonormal on the sphere, with the Condon-Shortley phase. Private: import
from `morphax.scipy.special`.

As in JAX, the normalized associated Legendre functions of every degree and order up to a static
n_max are built by three recurrences (the diagonal P_m^m from P_(m-1)^(m-1), the first
off-diagonal P_(m+1)^m from P_m^m, and the rest along the degree), then gathered at each (n, |m|);
negative orders are (-1)^m times the conjugate. Everything is array code, so theta and phi
differentiate by autodiff.
"""

from __future__ import annotations

import numpy as np

import morphax.numpy as jnp
from morphax._src.numpy import util as _util


def _normalized_legendre(n_max, x, sin_theta):
    """The table P[l, m, i] of the orthonormal associated Legendre functions at x[i] = cos theta
    (zero where m > l), shape (n_max + 1, n_max + 1, len(x))."""
    size = n_max + 1
    m = np.arange(size, dtype=np.float64)
    # The diagonal: P_0^0 = 1 / sqrt(4 pi), P_m^m = -sqrt(1 + 1/(2m)) sin(theta) P_(m-1)^(m-1)
    # (products rather than powers of sin(theta), whose derivative would be nan at the poles).
    diagonal = [jnp.full_like(x, 0.5 / np.sqrt(np.pi))]
    for order in range(1, size):
        diagonal.append(diagonal[-1] * (-np.sqrt(1 + 0.5 / order)) * sin_theta)
    rows = [jnp.zeros((size, x.shape[0]), x.dtype).at[0].set(diagonal[0])]
    if n_max >= 1:
        # Row l = 1: P_1^0 = sqrt(3) x P_0^0 and P_1^1 on the diagonal.
        rows.append(jnp.zeros_like(rows[0]).at[0].set(np.sqrt(3.0) * x * diagonal[0]).at[1].set(diagonal[1]))
    for l in range(2, size):  # noqa: E741 - the degree, as in the formulas
        # P_l^m = a x P_(l-1)^m - b P_(l-2)^m for m <= l - 2, with
        # a = sqrt((4 l^2 - 1) / (l^2 - m^2)), b = sqrt((2l + 1) ((l - 1)^2 - m^2) / ((2l - 3) (l^2 - m^2))).
        mm = m[: l - 1]
        a = np.sqrt((4.0 * l * l - 1) / (l * l - mm * mm))
        b = np.sqrt((2.0 * l + 1) * ((l - 1.0) ** 2 - mm * mm) / ((2.0 * l - 3) * (l * l - mm * mm)))
        interior = (
            jnp.asarray(a[:, None], x.dtype) * x[None, :] * rows[l - 1][: l - 1]
            - jnp.asarray(b[:, None], x.dtype) * rows[l - 2][: l - 1]
        )
        # The first off-diagonal P_l^(l-1) = sqrt(2l + 1) x P_(l-1)^(l-1), then the diagonal.
        off_diagonal = np.sqrt(2.0 * l + 1) * x * diagonal[l - 1]
        above = jnp.zeros((size - l - 1, x.shape[0]), x.dtype)
        rows.append(jnp.concatenate([interior, off_diagonal[None], diagonal[l][None], above]))
    return jnp.stack(rows)


def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
    """The spherical harmonic Y_n^m(theta, phi) (theta the polar angle in [0, pi], phi the
    azimuth), complex. n, m, theta and phi broadcast together; `n_max` (at least max(n); larger
    n are clipped to it, as in JAX) must be given statically under jit."""
    if diff_n is not None:
        raise NotImplementedError("The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported.")
    _util.check_arraylike("sph_harm_y", n, m, theta, phi)
    if n_max is None:
        try:
            n_max = int(np.max(_util.host_value(n, "scipy.special.sph_harm_y", "n")))
        except ValueError:
            raise ValueError(
                "scipy.special.sph_harm_y: the degrees `n` are traced, so their maximum is unknown; pass "
                "n_max (a Python int, at least max(n)) to use sph_harm_y within jit or other transformations."
            ) from None
    n_max = int(n_max)
    theta, phi = _util.promote_dtypes_inexact(theta, phi)
    n, m, theta, phi = jnp.broadcast_arrays(jnp.asarray(n), jnp.asarray(m), theta, phi)
    shape = theta.shape
    n, m, theta, phi = (a.reshape(-1) for a in (n, m, theta, phi))
    table = _normalized_legendre(n_max, jnp.cos(theta), jnp.sin(theta))
    order = jnp.abs(m)
    index = jnp.arange(theta.shape[0])
    value = table[jnp.clip(n, 0, n_max), jnp.clip(order, 0, n_max), index]
    angle = order.astype(phi.dtype) * phi
    harmonic = value * (jnp.cos(angle) + 1j * jnp.sin(angle))
    # Y_n^(-m) = (-1)^m conj(Y_n^m).
    sign = jnp.where(order % 2 == 1, -1.0, 1.0).astype(phi.dtype)
    harmonic = jnp.where(m < 0, sign * jnp.conj(harmonic), harmonic)
    return harmonic.reshape(shape)
