"""`morphax.scipy.cluster.vq.vq`: the nearest code of each observation."""

from __future__ import annotations

import morphax.numpy as jnp
from morphax._src.numpy import util as _util

__all__ = ["vq"]


def vq(obs, code_book, check_finite=True):
    """(codes, distances): for each observation (row), the index of the nearest code (Euclidean)
    and its distance."""
    _util.check_arraylike("scipy.cluster.vq.vq", obs, code_book)
    obs, code_book = _util.promote_dtypes_inexact(obs, code_book)
    if obs.ndim != code_book.ndim:
        raise ValueError("Observation and code_book should have the same rank")
    if obs.ndim == 1:
        obs, code_book = obs[..., None], code_book[..., None]
    if obs.ndim != 2:
        raise ValueError("ndim different than 1 or 2 are not supported")
    dist = jnp.linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)
    code = jnp.argmin(dist, axis=-1)
    return code, jnp.take_along_axis(dist, code[:, None], axis=-1)[:, 0]
