"""Closed-form transforms of uniform and normal draws, written as JAX writes them so the bits
follow: laplace, logistic, cauchy, pareto, weibull_min, rayleigh, maxwell, double_sided_maxwell,
lognormal, triangular, wald, geometric; and the linear-algebra samplers orthogonal (QR of a
normal matrix) and multivariate_normal (cholesky, eigh or svd factor)."""

from __future__ import annotations

import numpy as np

from morphax._src.config import config
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.numpy import creation as _creation
from morphax._src.numpy import manipulation as _manip
from morphax._src.numpy import ufuncs as _uf
from morphax._src.numpy import util as _util
from morphax._src.prims import lax_api as L
from morphax._src.prims import linalg
from morphax._src.random.distributions import (
    _check_shape,
    _float_dtype,
    _uniform,
    exponential,
    normal,
    rademacher,
)
from morphax._src.random.prng import check_key
from morphax._src.random.rejection_samplers import as_dtype, broadcast_shapes_of, c, split_n

__all__ = [
    "cauchy",
    "double_sided_maxwell",
    "geometric",
    "laplace",
    "logistic",
    "lognormal",
    "maxwell",
    "multivariate_normal",
    "orthogonal",
    "pareto",
    "rayleigh",
    "triangular",
    "wald",
    "weibull_min",
]


def _fdtype(name, dtype):
    return _float_dtype(name, float if dtype is None else dtype)


def _shape(name, shape):
    return _creation.canonicalize_shape(shape, name)


# --------------------------------------------------------------------- transforms of one uniform


def laplace(key, shape=(), dtype=None):
    """Laplace(0, 1) samples: sign(u) * log1p(-|u|) for u uniform in (-1, 1)."""
    key = check_key("laplace", key)
    dtype = _fdtype("laplace", dtype)
    shape = _shape("laplace", shape)
    u = _uniform(key, shape, dtype, -1.0 + float(_dtypes.finfo(dtype).epsneg), 1.0)
    return L.mul(L.sign(u), L.log1p(L.neg(L.abs(u))))


def logistic(key, shape=(), dtype=None):
    """Standard logistic samples: the logit log(u) - log1p(-u) of u uniform in [tiny, 1)."""
    key = check_key("logistic", key)
    dtype = _fdtype("logistic", dtype)
    shape = _shape("logistic", shape)
    x = _uniform(key, shape, dtype, float(_dtypes.finfo(dtype).tiny), 1.0)
    return L.sub(L.log(x), L.log1p(L.neg(x)))


def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy samples: tan(pi * (u - 1/2)) for u uniform in [eps, 1)."""
    key = check_key("cauchy", key)
    dtype = _fdtype("cauchy", dtype)
    shape = _shape("cauchy", shape)
    u = _uniform(key, shape, dtype, float(_dtypes.finfo(dtype).eps), 1.0)
    return L.tan(L.mul(c(np.pi, dtype), L.sub(u, c(0.5, dtype))))


def pareto(key, b, shape=None, dtype=None):
    """Pareto(b) samples on [1, inf): exp(E / b) for E ~ Exponential(1)."""
    key = check_key("pareto", key)
    dtype = _fdtype("pareto", dtype)
    shape = broadcast_shapes_of("pareto", shape, b)
    b = as_dtype(b, dtype)
    e = exponential(key, shape, dtype)
    return L.exp(e / b)


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull samples by the inverse CDF: (-log1p(-u)) ** (1 / concentration) * scale."""
    key = check_key("weibull_min", key)
    dtype = _fdtype("weibull_min", dtype)
    shape = _shape("weibull_min", shape)
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    # Plain operators, as JAX: a Python `concentration` is inverted in double precision.
    return _uf.power(-_uf.log1p(-u), 1.0 / concentration) * scale


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh(scale) samples: scale * sqrt(-2 log u)."""
    key = check_key("rayleigh", key)
    dtype = _fdtype("rayleigh", dtype)
    shape = broadcast_shapes_of("rayleigh", shape, scale)
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    scale = _manip.broadcast_to(as_dtype(scale, dtype), shape)
    return L.mul(scale, L.sqrt(L.mul(L.log(u), c(-2, dtype))))


def geometric(key, p, shape=None, dtype=None):
    """Geometric(p) trial counts on {1, 2, ...}: floor(log u / log1p(-p)) + 1."""
    key = check_key("geometric", key)
    dtype = _dtypes.canonicalize_dtype(int if dtype is None else dtype)
    if not _dtypes.is_integer(dtype):
        raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dtype}")
    shape = broadcast_shapes_of("geometric", shape, p)
    _util.check_arraylike("geometric", p)
    (p,) = _util.promote_dtypes_inexact(p)
    u = _uniform(key, shape, get_aval(p).dtype, 0.0, 1.0)
    # u == 0 maps to 1 (log u = 0) rather than -inf; JAX keeps this for stable samples.
    u = _uf.where(u == 0, 1, u)
    log_one_minus_p = _manip.broadcast_to(L.log1p(L.neg(p)), shape)
    g = L.floor(L.div(L.log(u), log_one_minus_p)) + 1
    return L.convert_element_type(g, dtype)


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular(left, mode, right) samples by the two-branch inverse CDF."""
    key = check_key("triangular", key)
    dtype = _fdtype("triangular", dtype)
    shape = broadcast_shapes_of("triangular", shape, left, mode, right)
    left = _manip.broadcast_to(as_dtype(left, dtype), shape)
    right = _manip.broadcast_to(as_dtype(right, dtype), shape)
    mode = _manip.broadcast_to(as_dtype(mode, dtype), shape)
    fc = (mode - left) / (right - left)
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    out1 = left + L.sqrt(u * (right - left) * (mode - left))
    out2 = right - L.sqrt((1 - u) * (right - left) * (right - mode))
    return L.select(u < fc, out1, out2)


# ------------------------------------------------------------------------ transforms of normals


def maxwell(key, shape=(), dtype=None):
    """Maxwell samples: the Euclidean norm of three standard normals."""
    key = check_key("maxwell", key)
    dtype = _fdtype("maxwell", dtype)
    shape = _shape("maxwell", shape)
    return _maxwell(key, shape, dtype)


def _maxwell(key, shape, dtype):
    x = normal(key, (*shape, 3), dtype)
    sq = [L.squeeze(L.slice_in_dim(x * x, i, i + 1, axis=len(shape)), (len(shape),)) for i in range(3)]
    # The norm of the last axis. XLA:CPU reduces a row of three as (x0 + x2) + x1; adding in that
    # order reproduces JAX's bits (a plain sum rounds differently in about a fifth of rows).
    return L.sqrt(L.add(L.add(sq[0], sq[2]), sq[1]))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell(loc, scale): a Maxwell draw with a random sign, scaled and shifted.
    As JAX, the result shape is ``(shape or param_shape) + param_shape``."""
    key = check_key("double_sided_maxwell", key)
    dtype = _fdtype("double_sided_maxwell", dtype)
    shape = _shape("double_sided_maxwell", shape)
    params_shape = tuple(np.broadcast_shapes(np.shape(loc), np.shape(scale)))
    if not shape:
        shape = params_shape
    shape = shape + params_shape
    maxwell_key, rademacher_key = split_n(key)
    maxwell_rvs = _maxwell(maxwell_key, shape, dtype)
    random_sign = rademacher(rademacher_key, shape, dtype)
    return random_sign * maxwell_rvs * scale + loc


_ONE = np.float32(1)


def lognormal(key, sigma=_ONE, shape=None, dtype=None):
    """Log-normal samples exp(sigma * N(0, 1))."""
    key = check_key("lognormal", key)
    dtype = _float_dtype("lognormal", float if dtype is None else dtype, allow_complex=True)
    shape = broadcast_shapes_of("lognormal", shape, sigma)
    sigma = as_dtype(sigma, dtype)
    return L.exp(normal(key, shape, dtype) * sigma)


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian) samples with scale 1, by Michael, Schucany and Haas."""
    key = check_key("wald", key)
    dtype = _fdtype("wald", dtype)
    shape = broadcast_shapes_of("wald", shape, mean)
    k1, k2 = split_n(key)
    mean = _manip.broadcast_to(as_dtype(mean, dtype), shape)
    v = normal(k1, shape, dtype)
    z = _uniform(k2, shape, dtype, 0.0, 1.0)
    y = L.integer_pow(v, 2)
    y_sq = L.integer_pow(y, 2)
    mean_sq = L.integer_pow(mean, 2)
    sqrt_term = L.sqrt(4 * mean * y + mean_sq * y_sq)
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return L.select(L.le(z, mean / (mean + x)), x, mean_sq / x)


# --------------------------------------------------------------------------- linear algebra


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """Haar-random matrices with orthonormal columns (or rows), shape ``(*shape, n, m)``: QR of
    a normal matrix with R's diagonal signs folded into Q (Mezzadri 2007)."""
    key = check_key("orthogonal", key)
    dtype = _fdtype("orthogonal", dtype)
    shape = _shape("orthogonal", shape)
    n = _creation.concrete_int(n, "The error occurred in random.orthogonal()")
    m = n if m is None else _creation.concrete_int(m, "The error occurred in random.orthogonal()")
    z = normal(key, (*shape, max(n, m), min(n, m)), dtype)
    q, r = linalg.qr(z, full_matrices=False)
    d = _diag(r)
    x = q * _manip.expand_dims(L.sign(d), -2)
    return _manip.swapaxes(x, -1, -2) if n < m else x


def _diag(r):
    k = min(get_aval(r).shape[-2:])
    return _manip.stack([r[..., i, i] for i in range(k)], -1)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Normal vectors with mean `mean` (..., n) and covariance `cov` (..., n, n): ``mean + A z``
    for a factor A A^T = cov from `method` ('cholesky', 'eigh' or 'svd'; the last two also take
    singular covariances)."""
    key = check_key("multivariate_normal", key)
    mean, cov = _util.promote_dtypes_inexact(mean, cov)
    if method not in {"svd", "eigh", "cholesky"}:
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    dtype = get_aval(mean).dtype if dtype is None else _float_dtype("multivariate_normal", dtype)
    if not _dtypes.is_floating(dtype):
        raise ValueError(f"dtype argument to `multivariate_normal` must be a float dtype, got {dtype}")
    mshape, cshape = get_aval(mean).shape, get_aval(cov).shape
    if len(mshape) < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {len(mshape)}")
    if len(cshape) < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {len(cshape)}")
    n = mshape[-1]
    if cshape[-2:] != (n, n):
        raise ValueError(
            f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but got cov.shape == {cshape}."
        )
    if shape is None:
        shape = tuple(np.broadcast_shapes(mshape[:-1], cshape[:-2]))
    else:
        shape = _creation.canonicalize_shape(shape, "multivariate_normal")
        _check_shape("normal", shape, mshape[:-1], cshape[:-2])
    if method == "svd":
        u, s, _ = linalg.svd(cov, full_matrices=True)
        factor = u * _uf.sqrt(_manip.expand_dims(s, -2))
    elif method == "eigh":
        v, w = linalg.eigh(cov)
        factor = v * _uf.sqrt(_manip.expand_dims(w, -2))
    else:
        factor = linalg.cholesky(cov)
    z = normal(key, shape + mshape[-1:], dtype)
    # `mean` broadcasts against the samples' leading axes whatever jax_numpy_rank_promotion says,
    # as in JAX (diffrax's tests run with "raise").
    with config._override("jax_numpy_rank_promotion", "allow"):
        return mean + _linalg_einsum(factor, z)


def _linalg_einsum(factor, z):
    from morphax._src.numpy import products

    return products.einsum("...ij,...j->...i", factor, z)
