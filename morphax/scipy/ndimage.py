"""`morphax.scipy.ndimage.map_coordinates`: sample an array at fractional coordinates (order 0:
nearest, 1: linear), with SciPy's boundary modes."""

from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

import morphax.numpy as jnp

__all__ = ["map_coordinates"]


def _mirror(index, size):
    s = size - 1  # the half-period of a triangular wave
    return jnp.abs((index + s) % (2 * s) - s)


def _reflect(index, size):
    return jnp.floor_divide(_mirror(2 * index + 1, 2 * size + 1) - 1, 2)


_INDEX_FIXERS = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round_half_away_from_zero(a):
    return (
        a if jnp.issubdtype(a.dtype, np.integer) else jnp.where(a >= 0, jnp.floor(a + 0.5), jnp.ceil(a - 0.5))
    )


def _nearest(coordinate):
    return [(_round_half_away_from_zero(coordinate).astype(np.int32), coordinate.dtype.type(1))]


def _linear(coordinate):
    lower = jnp.floor(coordinate)
    upper_weight = coordinate - lower
    index = lower.astype(np.int32)
    return [(index, 1 - upper_weight), (index + 1, upper_weight)]


def map_coordinates(input, coordinates, order, mode="constant", cval=0.0):  # noqa: A002 - SciPy's name
    """input sampled at `coordinates` (one array per axis of `input`, all of one shape): order 0
    takes the nearest element, order 1 interpolates linearly; outside the array, `mode` picks
    ("constant" with `cval`, "nearest", "wrap", "mirror", "reflect")."""
    input = jnp.asarray(input)  # noqa: A001
    coordinates = [jnp.asarray(c) for c in coordinates]
    cval = jnp.asarray(cval, input.dtype)
    if len(coordinates) != input.ndim:
        raise ValueError(
            f"coordinates must be a sequence of length input.ndim, but {len(coordinates)} != {input.ndim}"
        )
    fixer = _INDEX_FIXERS.get(mode)
    if fixer is None:
        raise NotImplementedError(
            f"morphax.scipy.ndimage.map_coordinates does not support mode {mode}; the supported modes are "
            f"{sorted(_INDEX_FIXERS)}."
        )
    if order not in (0, 1):
        raise NotImplementedError("morphax.scipy.ndimage.map_coordinates currently requires order<=1")
    nodes_of = _nearest if order == 0 else _linear
    per_axis = []
    for coordinate, size in zip(coordinates, input.shape):
        nodes = []
        for index, weight in nodes_of(coordinate):
            valid = (index >= 0) & (index < size) if mode == "constant" else None
            nodes.append((fixer(index, size), valid, weight))
        per_axis.append(nodes)
    terms = []
    for combination in itertools.product(*per_axis):
        indices, validities, weights = zip(*combination)
        value = input[tuple(indices)]
        if mode == "constant":
            value = jnp.where(functools.reduce(operator.and_, validities), value, cval)
        terms.append(functools.reduce(operator.mul, weights) * value)
    result = functools.reduce(operator.add, terms)
    if jnp.issubdtype(input.dtype, np.integer):
        result = _round_half_away_from_zero(result)
    return result.astype(input.dtype)
