"""`morphax.scipy.interpolate.RegularGridInterpolator`: linear and nearest-neighbour interpolation
on a rectilinear grid, mirroring ``jax.scipy.interpolate``. The interpolator is a pytree (grid,
values and fill value are its leaves), so it passes through jit, vmap and grad."""

from __future__ import annotations

import itertools

import numpy as np

import morphax.numpy as jnp
from morphax import tree_util
from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import util as _util

__all__ = ["RegularGridInterpolator"]

_METHODS = ("linear", "nearest")


def _check_method(method):
    if method not in _METHODS:
        raise ValueError(
            f"RegularGridInterpolator: method {method!r} is not defined; expected 'linear' or 'nearest'"
        )


class RegularGridInterpolator:
    """Interpolation of `values` given on the grid whose axis i has the strictly increasing
    coordinates ``points[i]``: "linear" weighs the 2**n corners of the cell holding a query
    point, "nearest" takes the closest node (ties go to the lower one). Query points outside the
    grid get `fill_value`, or are extrapolated from the edge cell when it is None. Axes of
    `values` beyond ``len(points)`` are carried along.

    As in JAX, `bounds_error` cannot be honoured under jit and raises NotImplementedError, and the
    grid is not checked for being increasing (that would need its values); a decreasing axis gives
    wrong answers."""

    def __init__(self, points, values, method="linear", bounds_error=False, fill_value=np.nan):
        _check_method(method)
        if bounds_error:
            raise NotImplementedError("RegularGridInterpolator: `bounds_error` takes no effect under JIT")
        _util.check_arraylike("RegularGridInterpolator", values)
        (values,) = _util.promote_dtypes_inexact(jnp.asarray(values))
        if len(points) > values.ndim:
            raise ValueError(
                f"RegularGridInterpolator: there are {len(points)} point arrays, but values has {values.ndim} "
                f"dimensions (shape {values.shape})"
            )
        _util.check_arraylike("RegularGridInterpolator", *points)
        grid = tuple(jnp.asarray(p) for p in points)
        # NB: SciPy's static shape checks, which JAX skips (its answers are then garbage)
        for i, g in enumerate(grid):
            if g.ndim != 1:
                raise ValueError(
                    f"RegularGridInterpolator: points[{i}] must be 1-dimensional, got shape {g.shape}"
                )
            if g.shape[0] != values.shape[i]:
                raise ValueError(
                    f"RegularGridInterpolator: there are {g.shape[0]} points and {values.shape[i]} values in "
                    f"dimension {i}"
                )
            if g.shape[0] < 2:
                raise ValueError(
                    f"RegularGridInterpolator: there are {g.shape[0]} points in dimension {i}, but at least 2 "
                    "are needed"
                )
        if fill_value is not None:
            _util.check_arraylike("RegularGridInterpolator", fill_value)
            fill_value = jnp.asarray(fill_value)
            if not _dtypes.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError(
                    f"RegularGridInterpolator: fill_value must be either 'None' or of a type compatible with "
                    f"values; got {fill_value.dtype} for values of {values.dtype}"
                )
        self.method = method
        self.bounds_error = bounds_error
        self.fill_value = fill_value
        self.grid = grid
        self.values = values

    def __call__(self, xi, method=None):
        """The interpolant at `xi`: an array (..., ndim) of points, or a tuple of ndim coordinate
        arrays that broadcast together. The result has shape ``xi.shape[:-1] + values.shape[ndim:]``."""
        method = self.method if method is None else method
        _check_method(method)
        ndim = len(self.grid)
        xi = self._points(xi, ndim)
        if xi.shape[-1] != ndim:
            raise ValueError(
                f"RegularGridInterpolator: the requested sample points xi have dimension {xi.shape[-1]}, but this "
                f"RegularGridInterpolator has dimension {ndim}"
            )
        batch = xi.shape[:-1]
        xi = xi.reshape(-1, ndim)
        lower, fraction, outside = [], [], jnp.zeros(xi.shape[0], bool)
        for x, g in zip(xi.T, self.grid):
            # the cell [g[i], g[i + 1]] holding x; the edge cells extend outwards
            i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.shape[0] - 2)
            lower.append(i)
            fraction.append((x - g[i]) / (g[i + 1] - g[i]))
            outside = outside | (x < g[0]) | (x > g[-1])
        trailing = (None,) * (self.values.ndim - ndim)
        if method == "linear":
            result = 0
            for corner in itertools.product((0, 1), repeat=ndim):
                weight = 1
                for upper, t in zip(corner, fraction):
                    weight = weight * (t if upper else 1 - t)
                index = tuple(i + upper for i, upper in zip(lower, corner))
                result = result + self.values[index] * weight[(slice(None), *trailing)]
        else:
            result = self.values[tuple(jnp.where(t <= 0.5, i, i + 1) for i, t in zip(lower, fraction))]
        if self.fill_value is not None:
            result = jnp.where(outside[(slice(None), *trailing)], self.fill_value, result)
        return result.reshape(batch + self.values.shape[ndim:])

    @staticmethod
    def _points(xi, ndim):
        if isinstance(xi, tuple) and len(xi) == 1:
            xi = xi[0]
        if isinstance(xi, tuple):
            _util.check_arraylike("RegularGridInterpolator", *xi)
            coordinates = jnp.broadcast_arrays(*_util.promote_dtypes_inexact(*xi))
            return jnp.stack(coordinates, axis=-1)
        _util.check_arraylike("RegularGridInterpolator", xi)
        xi = jnp.asarray(xi)
        return xi.reshape(-1, ndim) if xi.ndim == 1 else xi


def _flatten(interpolator):
    children = (interpolator.grid, interpolator.values, interpolator.fill_value)
    return children, (interpolator.method, interpolator.bounds_error)


def _unflatten(aux, children):
    # rebuilt without __init__: the leaves may be tracers or placeholders that its checks reject
    interpolator = object.__new__(RegularGridInterpolator)
    interpolator.method, interpolator.bounds_error = aux
    interpolator.grid, interpolator.values, interpolator.fill_value = children
    return interpolator


tree_util.register_pytree_node(RegularGridInterpolator, _flatten, _unflatten)
