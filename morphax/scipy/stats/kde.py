"""Gaussian kernel density estimation: `gaussian_kde`, as SciPy's `scipy.stats.gaussian_kde` and
JAX's `jax.scipy.stats.gaussian_kde` define it (a weighted sum of normal densities centred on the
data, with the data's weighted covariance scaled by a bandwidth factor)."""

from __future__ import annotations

import numpy as np

import morphax.numpy as jnp
from morphax import random
from morphax._src.api.jit import jit
from morphax._src.api.vmap import vmap
from morphax._src.numpy import util as _util
from morphax._src.tree_util import register_pytree_node_class
from morphax.scipy import linalg, special

_FIELDS = ("neff", "dataset", "weights", "covariance", "inv_cov")


def _real(name: str, x):
    if jnp.issubdtype(jnp.result_type(x), np.complexfloating):
        raise NotImplementedError(f"gaussian_kde.{name}: complex data is not supported; pass real arrays.")


@register_pytree_node_class
class gaussian_kde:
    """A Gaussian KDE of `dataset` ((n,) for one dimension, else (d, n)), with bandwidth
    `bw_method` ("scott" by default, "silverman", a scalar factor, or a callable of the estimator)
    and optional `weights` of shape (n,). A pytree: it passes through jit, vmap and grad."""

    __slots__ = _FIELDS

    def __init__(self, dataset, bw_method=None, weights=None):
        _util.check_arraylike("gaussian_kde", dataset)
        _real("__init__", dataset)
        dataset = jnp.atleast_2d(dataset)
        if not dataset.size > 1:
            raise ValueError(
                f"gaussian_kde: `dataset` must have more than one element, got shape {dataset.shape}."
            )
        d, n = dataset.shape
        if weights is None:
            (dataset,) = _util.promote_dtypes_inexact(dataset)
            weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
        else:
            _util.check_arraylike("gaussian_kde", weights)
            dataset, weights = _util.promote_dtypes_inexact(dataset, weights)
            weights = jnp.atleast_1d(weights)
            if weights.ndim != 1:
                raise ValueError(
                    f"gaussian_kde: `weights` must be one-dimensional, got shape {weights.shape}."
                )
            if weights.shape[0] != n:
                raise ValueError(
                    f"gaussian_kde: `weights` must have one entry per data point ({n}), got {weights.shape[0]}."
                )
            weights = weights / jnp.sum(weights)
        object.__setattr__(self, "dataset", dataset)
        object.__setattr__(self, "weights", weights)
        neff = 1 / jnp.sum(weights**2)
        object.__setattr__(self, "neff", neff)
        factor = self._bandwidth_factor("scott" if bw_method is None else bw_method)
        data_cov = jnp.atleast_2d(jnp.cov(dataset, rowvar=True, bias=False, aweights=weights))
        object.__setattr__(self, "covariance", data_cov * factor**2)
        object.__setattr__(self, "inv_cov", jnp.linalg.inv(data_cov) / factor**2)

    def _bandwidth_factor(self, bw_method):
        d = self.d
        if isinstance(bw_method, str):
            if bw_method == "scott":
                return jnp.power(self.neff, -1.0 / (d + 4))
            if bw_method == "silverman":
                return jnp.power(self.neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif jnp.isscalar(bw_method):
            return bw_method
        elif callable(bw_method):
            return bw_method(self)
        raise ValueError(
            f"gaussian_kde: `bw_method` should be 'scott', 'silverman', a scalar, or a callable; got {bw_method!r}."
        )

    def __setattr__(self, name, value):
        raise AttributeError(f"gaussian_kde is immutable: cannot set {name!r}")

    # -- pytree -------------------------------------------------------------------------------
    def tree_flatten(self):
        return tuple(getattr(self, f) for f in _FIELDS), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        kde = cls.__new__(cls)
        for name, value in zip(_FIELDS, children):
            object.__setattr__(kde, name, value)
        return kde

    @property
    def d(self) -> int:
        return self.dataset.shape[0]

    @property
    def n(self) -> int:
        return self.dataset.shape[1]

    # -- densities ----------------------------------------------------------------------------
    def evaluate(self, points):
        """The density at `points` ((d, m), or (m,) / (d,) where that is unambiguous): shape (m,)."""
        _util.check_arraylike("gaussian_kde.evaluate", points)
        return _kernel_sum(False, self.dataset, self.weights, self._points("evaluate", points), self.inv_cov)

    __call__ = evaluate
    pdf = evaluate

    def logpdf(self, x):
        """log of `evaluate`, summed in log space (no underflow far from the data)."""
        _util.check_arraylike("gaussian_kde.logpdf", x)
        return _kernel_sum(True, self.dataset, self.weights, self._points("logpdf", x), self.inv_cov)

    def _points(self, name, points):
        _real(name, points)
        points = jnp.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:  # one point given as a flat vector
                return jnp.reshape(points, (self.d, 1))
            raise ValueError(
                f"gaussian_kde.{name}: points have dimension {d}, dataset has dimension {self.d}"
            )
        return points

    # -- integrals ----------------------------------------------------------------------------
    def integrate_gaussian(self, mean, cov):
        """The integral of the density times N(mean, cov)."""
        mean = jnp.atleast_1d(jnp.squeeze(mean))
        cov = jnp.atleast_2d(cov)
        if mean.shape != (self.d,):
            raise ValueError(
                f"gaussian_kde.integrate_gaussian: mean must have shape ({self.d},), got {mean.shape}"
            )
        if cov.shape != (self.d, self.d):
            raise ValueError(
                f"gaussian_kde.integrate_gaussian: cov must have shape ({self.d}, {self.d}), got {cov.shape}"
            )
        chol = linalg.cho_factor(self.covariance + cov)
        scale = 1.0 / (jnp.sqrt(2 * np.pi) ** self.d * jnp.prod(jnp.diag(chol[0])))
        return _gaussian_overlap(chol, scale, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low, high):
        """The probability of [low, high] (one-dimensional estimators only)."""
        if self.d != 1:
            raise ValueError("gaussian_kde.integrate_box_1d only handles one-dimensional densities")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("gaussian_kde.integrate_box_1d: the limits of integration must be scalars")
        return _box_1d(self, low, high)

    def integrate_kde(self, other):
        """The integral of the product of this density and `other`'s."""
        if other.d != self.d:
            raise ValueError(f"gaussian_kde.integrate_kde: dimensions differ ({self.d} and {other.d})")
        chol = linalg.cho_factor(self.covariance + other.covariance)
        scale = 1.0 / (jnp.sqrt(2 * np.pi) ** self.d * jnp.prod(jnp.diag(chol[0])))
        small, large = (self, other) if self.n < other.n else (other, self)
        per_point = vmap(
            lambda m: _gaussian_overlap(chol, scale, large.dataset, large.weights, m), in_axes=1
        )(small.dataset)
        return jnp.sum(per_point * small.weights)

    def resample(self, key, shape=()):
        """Samples of the density, shape (d, *shape): a data point drawn by weight, plus normal
        noise of the kernel's covariance."""
        return _resample(self, key, tuple(shape))

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        raise NotImplementedError(
            "gaussian_kde.integrate_box: only one-dimensional boxes are supported; use integrate_box_1d"
        )

    def set_bandwidth(self, bw_method=None):
        raise NotImplementedError(
            "gaussian_kde.set_bandwidth: the estimator is immutable; build a new gaussian_kde with bw_method"
        )


@jit
def _box_1d(kde, low, high):
    sigma = jnp.squeeze(jnp.sqrt(kde.covariance))
    upper = special.ndtr(jnp.squeeze((high - kde.dataset) / sigma))
    lower = special.ndtr(jnp.squeeze((low - kde.dataset) / sigma))
    return jnp.sum(kde.weights * (upper - lower))


def _resample_impl(kde, key, shape):
    # The same draws as JAX's: the key split in two, one for the data indices, one for the noise.
    index_key, noise_key = random.split(key)
    index = random.choice(index_key, kde.n, shape=shape, p=kde.weights)
    zero = jnp.zeros(kde.d, kde.covariance.dtype)
    noise = random.multivariate_normal(noise_key, zero, kde.covariance, shape=shape, dtype=kde.dataset.dtype)
    return kde.dataset[:, index] + noise.T


_resample = jit(_resample_impl, static_argnums=2)


def _gaussian_overlap(chol, scale, target, weights, mean):
    # sum_i w_i N(mean; target_i, C) with C's Cholesky factor `chol`, scale = 1/sqrt(det(2 pi C)).
    diff = target - mean[:, None]
    quad = jnp.sum(diff * linalg.cho_solve(chol, diff), axis=0)
    return scale * jnp.sum(jnp.exp(-0.5 * quad) * weights)


def _kernel_sum_impl(in_log, dataset, weights, points, precision):
    dataset, weights, points, precision = _util.promote_dtypes_inexact(dataset, weights, points, precision)
    d = dataset.shape[0]
    # precision = W W^T (W lower triangular): the quadratic form is a squared distance after
    # projecting data and points on W, and log det(precision)^(1/2) = sum(log diag W).
    whiten = linalg.cholesky(precision, lower=True)
    data_w = dataset.T @ whiten  # (n, d)
    points_w = points.T @ whiten  # (m, d)
    log_norm = jnp.sum(jnp.log(jnp.diag(whiten))) - 0.5 * d * jnp.log(2 * np.pi)

    def at_point(p):
        log_kernel = log_norm - 0.5 * jnp.sum(jnp.square(data_w - p), axis=1)
        if in_log:
            return special.logsumexp(log_kernel + jnp.log(weights))
        return jnp.sum(weights * jnp.exp(log_kernel))

    return vmap(at_point)(points_w)


_kernel_sum = jit(_kernel_sum_impl, static_argnums=0)

__all__ = ["gaussian_kde"]
