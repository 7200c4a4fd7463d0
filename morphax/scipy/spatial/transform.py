"""`morphax.scipy.spatial.transform`: 3-D rotations (`Rotation`, held as unit quaternions in
SciPy's scalar-last order) and their spherical linear interpolation (`Slerp`), mirroring
``jax.scipy.spatial.transform``. Both are NamedTuples, so they are pytrees; every conversion works
on any leading batch shape."""

from __future__ import annotations

import re
import typing

import numpy as np

import morphax.numpy as jnp
from morphax import random as _random
from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import util as _util

__all__ = ["Rotation", "Slerp"]


# --- quaternion arithmetic on (..., 4) arrays, scalar last --------------------------------------


def _safe_norm(v):
    """|v| over the last axis, with a zero (not NaN) derivative at v = 0."""
    squared = jnp.sum(v * v, axis=-1)
    positive = squared > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, squared, 1)), 0)


def _normalize(quat):
    return quat / jnp.sqrt(jnp.sum(quat * quat, axis=-1, keepdims=True))


def _compose(p, q):
    """The Hamilton product p q: the rotation q followed by p."""
    pv, pw, qv, qw = p[..., :3], p[..., 3:], q[..., :3], q[..., 3:]
    vector = pw * qv + qw * pv + jnp.cross(pv, qv)
    scalar = pw * qw - jnp.sum(pv * qv, axis=-1, keepdims=True)
    return jnp.concatenate([vector, scalar], axis=-1)


def _conjugate(quat):
    return jnp.concatenate([-quat[..., :3], quat[..., 3:]], axis=-1)


def _as_matrix(quat):
    x, y, z, w = (quat[..., i] for i in range(4))
    rows = [
        [x * x - y * y - z * z + w * w, 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), -x * x + y * y - z * z + w * w, 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), -x * x - y * y + z * z + w * w],
    ]
    return jnp.stack([jnp.stack(row, axis=-1) for row in rows], axis=-2)


def _from_matrix(m):
    """The quaternion of a rotation matrix by the largest of the diagonal and the trace, the
    best-conditioned of the four closed forms (Markley's method, as SciPy)."""
    trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    choice = jnp.argmax(jnp.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2], trace], axis=-1), axis=-1)
    candidates = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        quat = [None] * 4
        quat[i] = 1 - trace + 2 * m[..., i, i]
        quat[j] = m[..., j, i] + m[..., i, j]
        quat[k] = m[..., k, i] + m[..., i, k]
        quat[3] = m[..., k, j] - m[..., j, k]
        candidates.append(jnp.stack(quat, axis=-1))
    candidates.append(
        jnp.stack(
            [
                m[..., 2, 1] - m[..., 1, 2],
                m[..., 0, 2] - m[..., 2, 0],
                m[..., 1, 0] - m[..., 0, 1],
                1 + trace,
            ],
            axis=-1,
        )
    )
    picked = jnp.take_along_axis(jnp.stack(candidates, axis=-2), choice[..., None, None], axis=-2)[..., 0, :]
    return _normalize(picked)


def _from_rotvec(rotvec):
    angle2 = jnp.sum(rotvec * rotvec, axis=-1, keepdims=True)
    # angle <= 1e-3: Taylor series in angle**2 (no square root, whose derivative at 0 is infinite)
    small = angle2 <= 1e-6
    angle = jnp.sqrt(jnp.where(small, 1, angle2))
    scale = jnp.where(small, 0.5 - angle2 / 48 + angle2 * angle2 / 3840, jnp.sin(angle / 2) / angle)
    scalar = jnp.where(small, 1 - angle2 / 8 + angle2 * angle2 / 384, jnp.cos(angle / 2))
    return jnp.concatenate([scale * rotvec, scalar], axis=-1)


def _as_rotvec(quat):
    quat = jnp.where(quat[..., 3:] < 0, -quat, quat)  # w >= 0, so that the angle is in [0, pi]
    angle = 2 * jnp.arctan2(_safe_norm(quat[..., :3]), quat[..., 3])[..., None]
    small = angle <= 1e-3  # the Taylor series of angle / sin(angle / 2)
    safe = jnp.where(small, 1, angle)
    angle2 = angle * angle
    scale = jnp.where(small, 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880, safe / jnp.sin(safe / 2))
    return scale * quat[..., :3]


def _make_canonical(quat):
    """quat or -quat, whichever has w > 0 (ties broken by x, then y, then z), as SciPy."""
    negative, zero = quat < 0, quat == 0
    flip = negative[..., 3] | (
        zero[..., 3]
        & (negative[..., 0] | (zero[..., 0] & (negative[..., 1] | (zero[..., 1] & negative[..., 2]))))
    )
    return jnp.where(flip[..., None], -quat, quat)


def _wrap_angle(angle):
    # NB: SciPy's wrap into [-pi, pi] (pi stays pi); JAX's modulo sends pi to -pi
    return jnp.where(angle > np.pi, angle - 2 * np.pi, jnp.where(angle < -np.pi, angle + 2 * np.pi, angle))


def _parse_seq(seq, fun, lengths):
    if not isinstance(seq, str) or len(seq) not in lengths:
        raise ValueError(
            f"Rotation.{fun}: expected axis specification to be a string of "
            f"{' or '.join(map(str, lengths))} characters, got {seq!r}"
        )
    intrinsic = re.fullmatch(r"[XYZ]+", seq) is not None
    extrinsic = re.fullmatch(r"[xyz]+", seq) is not None
    if not (intrinsic or extrinsic):
        raise ValueError(
            f"Rotation.{fun}: expected axes from `seq` to be from ['x', 'y', 'z'] or ['X', 'Y', 'Z'], got {seq!r}"
        )
    if any(a == b for a, b in zip(seq, seq[1:])):
        raise ValueError(f"Rotation.{fun}: expected consecutive axes to be different, got {seq!r}")
    return ["xyz".index(a) for a in seq.lower()], extrinsic


def _elementary(axis, angle):
    half = angle / 2
    parts = [jnp.zeros_like(half)] * 3 + [jnp.cos(half)]
    parts[axis] = jnp.sin(half)
    return jnp.stack(parts, axis=-1)


def _as_euler(quat, axes, extrinsic):
    """Euler angles by Bernardes and Viollet's direct quaternion method (SciPy's algorithm);
    `axes` and `extrinsic` are static, only the gimbal-lock case depends on the data."""
    first, third = (0, 2) if extrinsic else (2, 0)
    i, j, k = axes if extrinsic else axes[::-1]
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    q = [quat[..., n] for n in range(4)]
    if symmetric:
        a, b, c, d = q[3], q[i], q[j], q[k] * sign
    else:
        a, b, c, d = q[3] - q[j], q[i] + q[k] * sign, q[j] + q[3], q[k] * sign - q[i]
    middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
    eps = 1e-7
    at_zero, at_pi = jnp.abs(middle) <= eps, jnp.abs(middle - np.pi) <= eps
    half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
    # gimbal lock: the third angle is set to zero and the first carries the whole rotation
    locked_first = jnp.where(at_zero, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    locked = at_zero | at_pi
    angles = [None] * 3
    angles[1] = middle
    angles[first] = jnp.where(locked, locked_first if first == 0 else 0, half_sum - half_diff)
    angles[third] = jnp.where(locked, locked_first if third == 0 else 0, half_sum + half_diff)
    if not symmetric:
        angles[third] = angles[third] * sign
        angles[1] = angles[1] - np.pi / 2
    return _wrap_angle(jnp.stack(angles, axis=-1))


def _inexact(x):
    # lists are accepted, as SciPy (and JAX, except in from_euler) accept them
    return _util.promote_dtypes_inexact(jnp.asarray(x))[0]


def _check_last(fun, x, size, what):
    if x.ndim < 1 or x.shape[-1] != size:
        raise ValueError(f"Rotation.{fun}: expected {what} of shape (..., {size}), got shape {x.shape}")


class Rotation(typing.NamedTuple):
    """Rotations in 3 dimensions, as unit quaternions `quat` (x, y, z, w) of shape (4,) for a
    single rotation or (N, 4) for a stack of them."""

    quat: typing.Any

    @classmethod
    def concatenate(cls, rotations: typing.Sequence):
        """The rotations of every element of `rotations`, single ones included, in one stack."""
        # NB: a single rotation counts as one (JAX joins the 4-vectors into one of length 8)
        return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations]))

    @classmethod
    def from_euler(cls, seq, angles, degrees=False):
        """Rotations from Euler angles about the axes in `seq`: lower case for extrinsic (fixed)
        axes, upper case for intrinsic (rotating) ones. `angles` has shape (..., len(seq))."""
        axes, extrinsic = _parse_seq(seq, "from_euler", (1, 2, 3))
        angles = jnp.atleast_1d(_inexact(angles))
        _check_last("from_euler", angles, len(axes), f"angles for seq={seq!r}")
        if degrees:
            angles = jnp.deg2rad(angles)
        quat = _elementary(axes[0], angles[..., 0])
        for n in range(1, len(axes)):
            step = _elementary(axes[n], angles[..., n])
            quat = _compose(step, quat) if extrinsic else _compose(quat, step)
        return cls(quat)

    @classmethod
    def from_matrix(cls, matrix):
        """Rotations from rotation matrices (..., 3, 3)."""
        matrix = _inexact(matrix)
        if matrix.ndim < 2 or matrix.shape[-2:] != (3, 3):
            raise ValueError(
                f"Rotation.from_matrix: expected matrices of shape (..., 3, 3), got shape {matrix.shape}"
            )
        return cls(_from_matrix(matrix))

    @classmethod
    def from_mrp(cls, mrp):
        """Rotations from Modified Rodrigues Parameters (..., 3): the axis times tan(angle / 4)."""
        mrp = _inexact(mrp)
        _check_last("from_mrp", mrp, 3, "MRPs")
        squared = jnp.sum(mrp * mrp, axis=-1, keepdims=True)
        return cls(jnp.concatenate([2 * mrp, 1 - squared], axis=-1) / (1 + squared))

    @classmethod
    def from_quat(cls, quat):
        """Rotations from quaternions (..., 4) in scalar-last order, normalized."""
        quat = _inexact(quat)
        _check_last("from_quat", quat, 4, "quaternions")
        return cls(_normalize(quat))

    @classmethod
    def from_rotvec(cls, rotvec, degrees=False):
        """Rotations from rotation vectors (..., 3): the axis times the angle."""
        rotvec = _inexact(rotvec)
        _check_last("from_rotvec", rotvec, 3, "rotation vectors")
        return cls(_from_rotvec(jnp.deg2rad(rotvec) if degrees else rotvec))

    @classmethod
    def identity(cls, num=None, dtype=float):
        """The identity rotation, or `num` of them."""
        # NB: `num` is honoured (JAX asserts it is None)
        dtype = _dtypes.canonicalize_dtype(dtype)
        quat = jnp.array([0.0, 0.0, 0.0, 1.0], dtype=dtype)
        return cls(quat if num is None else jnp.tile(quat, (num, 1)))

    @classmethod
    def random(cls, random_key, num=None):
        """Rotations drawn uniformly from SO(3) with `random_key`: one, or `num` of them."""
        # NB: JAX raises NotImplementedError; a normalized 4-D standard normal draw is uniform on
        # the unit quaternions and so on the rotations (SciPy's method too)
        shape = (4,) if num is None else (num, 4)
        return cls(_normalize(_random.normal(random_key, shape)))

    def __getitem__(self, indexer):
        """The rotation(s) at `indexer` of a stack."""
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self):
        """The number of rotations in a stack."""
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    def __mul__(self, other) -> Rotation:
        """The composition `self` after `other` (pairwise, or one against many)."""
        if not isinstance(other, Rotation):
            return NotImplemented
        return Rotation.from_quat(_compose(self.quat, other.quat))

    def apply(self, vectors, inverse=False):
        """The rotated vectors (..., 3), by the inverse rotations when `inverse`."""
        vectors = _inexact(vectors)
        _check_last("apply", vectors, 3, "vectors")
        matrix = self.as_matrix()
        matrix = jnp.where(inverse, jnp.swapaxes(matrix, -1, -2), matrix)
        return jnp.matmul(matrix, vectors[..., None])[..., 0]

    def as_euler(self, seq, degrees=False):
        """Euler angles (..., 3) about the axes of `seq` (see `from_euler`); the middle angle is
        in [0, pi] for symmetric sequences and [-pi/2, pi/2] otherwise."""
        axes, extrinsic = _parse_seq(seq, "as_euler", (3,))
        angles = _as_euler(self.quat, axes, extrinsic)
        return jnp.rad2deg(angles) if degrees else angles

    def as_matrix(self):
        """Rotation matrices (..., 3, 3)."""
        return _as_matrix(self.quat)

    def as_mrp(self):
        """Modified Rodrigues Parameters (..., 3), of the quaternion with w >= 0."""
        sign = jnp.where(self.quat[..., 3:] < 0, -1, 1).astype(self.quat.dtype)
        return sign * self.quat[..., :3] / (1 + sign * self.quat[..., 3:])

    def as_rotvec(self, degrees=False):
        """Rotation vectors (..., 3), with angles in [0, pi]."""
        rotvec = _as_rotvec(self.quat)
        return jnp.rad2deg(rotvec) if degrees else rotvec

    def as_quat(self, canonical=False, scalar_first=False):
        """Quaternions (..., 4), scalar last unless `scalar_first`; `canonical` picks the sign with
        w > 0."""
        quat = _make_canonical(self.quat) if canonical else self.quat
        return jnp.roll(quat, 1, axis=-1) if scalar_first else quat

    def inv(self):
        """The inverse rotation(s)."""
        return Rotation(_conjugate(self.quat))

    def magnitude(self):
        """The rotation angle(s), in [0, pi]."""
        return 2 * jnp.arctan2(_safe_norm(self.quat[..., :3]), jnp.abs(self.quat[..., 3]))

    def mean(self, weights=None):
        """The (weighted) mean rotation of a stack: the dominant eigenvector of the weighted sum of
        the quaternions' outer products (Markley et al. 2007)."""
        n = len(self)
        weights = jnp.ones(n, self.quat.dtype) if weights is None else jnp.asarray(weights, self.quat.dtype)
        if weights.ndim != 1:
            raise ValueError(
                f"Rotation.mean: expected `weights` to be 1 dimensional, got shape {weights.shape}."
            )
        if weights.shape[0] != n:
            raise ValueError(
                "Rotation.mean: expected `weights` to have number of values equal to number of rotations, got "
                f"{weights.shape[0]} values and {n} rotations."
            )
        outer = jnp.matmul(weights * self.quat.T, self.quat)
        return Rotation(jnp.linalg.eigh(outer)[1][:, -1])

    @property
    def single(self):
        """Whether this holds one rotation rather than a stack."""
        return self.quat.ndim == 1


class Slerp(typing.NamedTuple):
    """Spherical linear interpolation between key rotations at increasing `times`: between two
    keys the rotation turns at a constant rate about one axis. Build it with `Slerp.init`."""

    times: typing.Any
    timedelta: typing.Any
    rotations: Rotation
    rotvecs: typing.Any

    @classmethod
    def init(cls, times, rotations):
        """The interpolator through `rotations` (a stack of at least 2) at `times` (increasing)."""
        if not isinstance(rotations, Rotation):
            raise TypeError(
                f"Slerp.init: `rotations` must be a `Rotation` instance, got {type(rotations).__name__}."
            )
        if rotations.single or len(rotations) == 1:
            raise ValueError("Slerp.init: `rotations` must be a sequence of at least 2 rotations.")
        times = jnp.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1:
            raise ValueError(
                f"Slerp.init: expected times to be specified in a 1 dimensional array, got shape {times.shape}."
            )
        if times.shape[0] != len(rotations):
            raise ValueError(
                "Slerp.init: expected number of rotations to be equal to number of timestamps given, got "
                f"{len(rotations)} rotations and {times.shape[0]} timestamps."
            )
        # NB: the times are not checked for increasing: that needs their values (JAX skips it too)
        starts = Rotation(rotations.quat[:-1])
        steps = starts.inv() * Rotation(rotations.quat[1:])
        return cls(times=times, timedelta=jnp.diff(times), rotations=starts, rotvecs=steps.as_rotvec())

    def __call__(self, times):
        """The interpolated rotations at `times` (a scalar gives a single rotation)."""
        at = jnp.asarray(times, dtype=self.times.dtype)
        if at.ndim > 1:
            raise ValueError(f"Slerp: `times` must be at most 1-dimensional, got shape {at.shape}.")
        single = at.ndim == 0
        at = jnp.atleast_1d(at)
        # NB: times outside the keys extrapolate the first or last interval (SciPy raises, which
        # needs the values; JAX mixes the last key's time with the interval before it)
        index = jnp.clip(jnp.searchsorted(self.times, at) - 1, 0, self.timedelta.shape[0] - 1)
        fraction = (at - self.times[index]) / self.timedelta[index]
        result = self.rotations[index] * Rotation.from_rotvec(self.rotvecs[index] * fraction[:, None])
        return result[0] if single else result
