"""`morphax.scipy.spatial.transform` against `scipy.spatial.transform`, in float32 and float64:
every conversion of `Rotation` both ways (quaternions with canonical/scalar-first, matrices,
rotation vectors with the small-angle series, MRPs, Euler angles for intrinsic and extrinsic,
symmetric and asymmetric sequences and the gimbal-lock cases), apply, composition, inverse,
magnitude, mean, indexing and concatenation on single and batched rotations; `Slerp`; uniform
random rotations; jit, vmap and check_grads; errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.spatial.transform import Rotation as SciRotation
from scipy.spatial.transform import Slerp as SciSlerp

import morphax
import morphax.numpy as jnp
from morphax.scipy.spatial.transform import Rotation, Slerp
from morphax.test_util import check_grads

rng = np.random.default_rng(0)
QUATS = rng.normal(size=(7, 4))
VECTORS = rng.normal(size=(7, 3))
SEQS = ["xyz", "zyx", "XYZ", "ZXY", "zxz", "XZX", "yzy", "YXY"]
DTYPES = [np.float32, np.float64]


def _tol(dtype):
    return 5e-6 if dtype == np.float32 else 1e-12


def _close(got, want, dtype, scale=1.0):
    assert got.dtype == dtype, (got.dtype, dtype)
    np.testing.assert_allclose(np.asarray(got), want, rtol=_tol(dtype) * scale, atol=_tol(dtype) * scale)


def _pair(dtype, quats=QUATS):
    return Rotation.from_quat(quats.astype(dtype)), SciRotation.from_quat(quats)


@pytest.mark.parametrize("dtype", DTYPES)
def test_quaternions_matrices_rotvecs_mrps(dtype):
    with morphax.enable_x64(dtype == np.float64):
        ours, theirs = _pair(dtype)
        _close(ours.as_quat(), theirs.as_quat(), dtype)
        for canonical in (False, True):
            for scalar_first in (False, True):
                _close(
                    ours.as_quat(canonical=canonical, scalar_first=scalar_first),
                    theirs.as_quat(canonical=canonical, scalar_first=scalar_first),
                    dtype,
                )
        # canonical's ties: w = 0 goes to x, then y, then z
        ties = np.array([[-1.0, 0, 0, 0], [0, -1, 0, 0], [0, 0, -1, 0], [0, -0.6, 0.8, 0]])
        _close(
            _pair(dtype, ties)[0].as_quat(canonical=True),
            SciRotation.from_quat(ties).as_quat(canonical=True),
            dtype,
        )
        _close(ours.as_matrix(), theirs.as_matrix(), dtype, 2)
        _close(
            Rotation.from_matrix(theirs.as_matrix().astype(dtype)).as_matrix(), theirs.as_matrix(), dtype, 4
        )
        # each branch of the matrix-to-quaternion choice: trace and every diagonal element largest
        branches = SciRotation.from_rotvec(
            np.array([[0.1, 0.2, 0.1], [3.0, 0.1, 0.0], [0.0, 3.0, 0.2], [0.1, 0, 3.0]])
        )
        got = Rotation.from_matrix(branches.as_matrix().astype(dtype))
        _close(got.as_quat(canonical=True), branches.as_quat(canonical=True), dtype, 4)
        _close(ours.as_rotvec(), theirs.as_rotvec(), dtype, 4)
        _close(ours.as_rotvec(degrees=True), theirs.as_rotvec(degrees=True), dtype, 400)
        _close(
            Rotation.from_rotvec(theirs.as_rotvec().astype(dtype)).as_matrix(), theirs.as_matrix(), dtype, 4
        )
        degrees = theirs.as_rotvec(degrees=True)
        _close(
            Rotation.from_rotvec(degrees.astype(dtype), degrees=True).as_matrix(),
            theirs.as_matrix(),
            dtype,
            4,
        )
        # rotation vectors near zero take the Taylor series
        tiny = np.array([[1e-5, -2e-5, 3e-6], [0.0, 0.0, 0.0], [4e-4, 0, 0]])
        _close(
            Rotation.from_rotvec(tiny.astype(dtype)).as_quat(), SciRotation.from_rotvec(tiny).as_quat(), dtype
        )
        _close(Rotation.from_rotvec(tiny.astype(dtype)).as_rotvec(), tiny, dtype)
        _close(ours.as_mrp(), theirs.as_mrp(), dtype, 4)
        _close(Rotation.from_mrp(theirs.as_mrp().astype(dtype)).as_matrix(), theirs.as_matrix(), dtype, 4)
        _close(ours.magnitude(), theirs.magnitude(), dtype, 2)
        _close(ours.inv().as_matrix(), theirs.inv().as_matrix(), dtype, 2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_euler(dtype):
    with morphax.enable_x64(dtype == np.float64):
        ours, theirs = _pair(dtype)
        for seq in SEQS:
            _close(ours.as_euler(seq), theirs.as_euler(seq), dtype, 20)
            _close(ours.as_euler(seq, degrees=True), theirs.as_euler(seq, degrees=True), dtype, 2000)
            angles = theirs.as_euler(seq)
            _close(Rotation.from_euler(seq, angles.astype(dtype)).as_matrix(), theirs.as_matrix(), dtype, 4)
        # fewer axes, degrees, a scalar angle, batches of any shape
        for seq, angles in (
            ("z", 30.0),
            ("Y", [[10.0], [-70.0]]),
            ("XZ", [15.0, 100.0]),
            ("zyx", [[[5, 6, 7]] * 2] * 3),
        ):
            angles = np.asarray(angles)
            got = Rotation.from_euler(seq, angles.astype(dtype), degrees=True).as_quat()
            want = SciRotation.from_euler(seq, angles.reshape(-1, len(seq)), degrees=True).as_quat()
            np.testing.assert_allclose(
                np.asarray(got).reshape(-1, 4), want, rtol=_tol(dtype), atol=_tol(dtype)
            )
        # gimbal lock: the third angle is zero and the first carries the rotation
        for seq, angles in (
            ("xyz", [0.3, np.pi / 2, 0.2]),
            ("xyz", [0.1, -np.pi / 2, 0.4]),
            ("ZXZ", [0.3, 0, 0.2]),
        ):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # SciPy warns of the gimbal lock
                want = SciRotation.from_euler(seq, angles).as_euler(seq)
            got = Rotation.from_euler(seq, np.asarray(angles, dtype)).as_euler(seq)
            np.testing.assert_allclose(np.asarray(got), want, atol=2e-3 if dtype == np.float32 else 1e-7)
        # SciPy's wrap keeps pi as pi
        got = Rotation.from_euler("ZXZ", np.array([0.5, np.pi, 0.1])).as_euler("ZXZ")
        np.testing.assert_allclose(np.asarray(got)[1], np.pi, rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_apply_compose_and_mean(dtype):
    with morphax.enable_x64(dtype == np.float64):
        ours, theirs = _pair(dtype)
        v = VECTORS.astype(dtype)
        for inverse in (False, True):
            _close(ours.apply(v, inverse=inverse), theirs.apply(VECTORS, inverse=inverse), dtype, 4)
            _close(ours.apply(v[0], inverse=inverse), theirs.apply(VECTORS[0], inverse=inverse), dtype, 4)
            _close(ours[2].apply(v, inverse=inverse), theirs[2].apply(VECTORS, inverse=inverse), dtype, 4)
        _close(ours[2].apply(v[1]), theirs[2].apply(VECTORS[1]), dtype, 4)
        _close((ours * ours[::-1]).as_quat(), (theirs * theirs[::-1]).as_quat(), dtype, 4)
        _close((ours[0] * ours).as_matrix(), (theirs[0] * theirs).as_matrix(), dtype, 4)
        _close((ours * ours[3]).as_matrix(), (theirs * theirs[3]).as_matrix(), dtype, 4)
        _close((ours * ours.inv()).magnitude(), np.zeros(7), dtype, 100)
        weights = rng.uniform(0.1, 1, 7)
        for w in (None, weights):
            _close(ours.mean(w).as_matrix(), theirs.mean(w).as_matrix(), dtype, 20)
        assert ours.mean().single


@pytest.mark.parametrize("dtype", DTYPES)
def test_container_identity_and_random(dtype):
    with morphax.enable_x64(dtype == np.float64):
        ours, theirs = _pair(dtype)
        assert len(ours) == 7 and not ours.single and ours[1].single
        _close(ours[1:3].as_quat(), theirs[1:3].as_quat(), dtype)
        _close(ours[np.array([4, 0])].as_matrix(), theirs[[4, 0]].as_matrix(), dtype, 2)
        joined = Rotation.concatenate([ours[:2], ours[4], ours[5:]])
        want = SciRotation.concatenate([theirs[:2], theirs[4], theirs[5:]])
        assert len(joined) == len(want) == 5
        _close(joined.as_quat(), want.as_quat(), dtype)
        assert Rotation.identity().quat.dtype == dtype
        _close(Rotation.identity().as_matrix(), np.eye(3), dtype)
        _close(Rotation.identity(3, dtype=dtype).as_quat(), SciRotation.identity(3).as_quat(), dtype)
        many = Rotation.random(morphax.random.key(0), 3000)
        assert many.quat.shape == (3000, 4) and many.quat.dtype == dtype
        _close(jnp.linalg.norm(many.quat, axis=-1), np.ones(3000), dtype, 10)
        # uniform on SO(3): the mean matrix vanishes, and the angle has density (1 - cos t) / pi
        np.testing.assert_allclose(np.asarray(many.as_matrix()).mean(0), np.zeros((3, 3)), atol=0.05)
        angles = np.asarray(many.magnitude())
        np.testing.assert_allclose((angles < np.pi / 2).mean(), (np.pi / 2 - 1) / np.pi, atol=0.03)
        one = Rotation.random(morphax.random.key(1))
        assert one.single
        np.testing.assert_array_equal(
            np.asarray(one.quat), np.asarray(Rotation.random(morphax.random.key(1)).quat)
        )


@pytest.mark.parametrize("dtype", DTYPES)
def test_slerp(dtype):
    with morphax.enable_x64(dtype == np.float64):
        ours, theirs = _pair(dtype)
        times = np.array([0.0, 1.0, 2.5, 3.0, 4.0, 6.0, 6.5])
        slerp, reference = Slerp.init(times.astype(dtype), ours), SciSlerp(times, theirs)
        at = np.array([0.0, 0.3, 1.0, 2.7, 3.0, 5.9, 6.5])
        _close(slerp(at.astype(dtype)).as_matrix(), reference(at).as_matrix(), dtype, 10)
        single = slerp(dtype(1.7))
        assert single.single
        _close(single.as_matrix(), reference(1.7).as_matrix(), dtype, 10)
        assert slerp.rotations.quat.shape == (6, 4) and slerp.rotvecs.shape == (6, 3)
        # beyond the keys, the end intervals extrapolate at their constant rate
        ends = Slerp.init(np.array([0.0, 1.0], dtype), ours[:2])
        got = ends(np.array([1.5, -0.5], dtype))
        step = (theirs[0].inv() * theirs[1]).as_rotvec()
        want = [
            theirs[0] * SciRotation.from_rotvec(1.5 * step),
            theirs[0] * SciRotation.from_rotvec(-0.5 * step),
        ]
        _close(got.as_matrix(), np.stack([w.as_matrix() for w in want]), dtype, 10)


def test_jit_and_vmap():
    ours, theirs = _pair(np.float32)
    to_euler = morphax.jit(lambda r: r.as_euler("zyx"))
    np.testing.assert_allclose(np.asarray(to_euler(ours)), theirs.as_euler("zyx"), rtol=1e-4, atol=1e-5)
    composed = morphax.jit(lambda a, b: a * b.inv())(ours, ours[::-1])
    assert isinstance(composed, Rotation)
    np.testing.assert_allclose(
        np.asarray(composed.as_matrix()), (theirs * theirs[::-1].inv()).as_matrix(), rtol=1e-5, atol=1e-5
    )
    applied = morphax.vmap(lambda r, v: r.apply(v))(ours, VECTORS.astype(np.float32))
    np.testing.assert_allclose(np.asarray(applied), theirs.apply(VECTORS), rtol=1e-5, atol=1e-5)
    per_rotation = morphax.vmap(lambda q: Rotation.from_quat(q).as_rotvec())(QUATS.astype(np.float32))
    np.testing.assert_allclose(np.asarray(per_rotation), theirs.as_rotvec(), rtol=1e-5, atol=1e-5)
    times = np.arange(7.0, dtype=np.float32)
    slerp = Slerp.init(times, ours)
    at = np.array([0.5, 2.2, 5.9], np.float32)
    got = morphax.vmap(lambda s, t: slerp(t).as_quat(canonical=True), in_axes=(None, 0))(slerp, at)
    np.testing.assert_allclose(
        np.asarray(got), SciSlerp(times, theirs)(at).as_quat(canonical=True), rtol=1e-5, atol=1e-5
    )
    jitted = morphax.jit(lambda s, t: s(t).as_matrix())(slerp, at)
    np.testing.assert_allclose(
        np.asarray(jitted), SciSlerp(times, theirs)(at).as_matrix(), rtol=1e-5, atol=1e-5
    )


def test_gradients():
    with morphax.enable_x64():
        q, v, rotvec = QUATS[:3], VECTORS[:3], VECTORS[3:6]
        modes = ("fwd", "rev")
        check_grads(lambda x: Rotation.from_quat(x).apply(v), (q,), order=2, modes=modes)
        check_grads(lambda x: Rotation.from_quat(q).apply(x, inverse=True), (v,), order=1, modes=modes)
        check_grads(lambda x: Rotation.from_rotvec(x).as_matrix(), (rotvec,), order=2, modes=modes)
        check_grads(lambda x: Rotation.from_quat(x).as_rotvec(), (q,), order=1, modes=modes)
        check_grads(lambda x: Rotation.from_quat(x).as_euler("xyz"), (q,), order=1, modes=modes)
        check_grads(lambda x: Rotation.from_euler("ZXZ", x).as_quat(), (rotvec,), order=2, modes=modes)
        check_grads(
            lambda x: Rotation.from_matrix(x).as_mrp(), (SciRotation.from_quat(q).as_matrix(),), order=1
        )
        check_grads(lambda x: Rotation.from_mrp(x).magnitude(), (0.3 * rotvec,), order=1, modes=modes)
        slerp = Slerp.init(np.arange(3.0), Rotation.from_quat(q))
        check_grads(lambda t: slerp(t).as_quat(), (np.array([0.2, 1.6]),), order=1, modes=modes)
        # the identity's rotation vector has the derivative of the series, not a NaN
        jac = morphax.jacobian(lambda x: Rotation.from_rotvec(x).as_rotvec())(np.zeros(3))
        np.testing.assert_allclose(np.asarray(jac), np.eye(3), atol=1e-12)


def test_errors():
    ours = Rotation.from_quat(QUATS)
    with pytest.raises(TypeError, match="not subscriptable"):
        ours[0][0]
    with pytest.raises(TypeError, match="no len"):
        len(ours[0])
    with pytest.raises(ValueError, match="string of 1 or 2 or 3 characters"):
        Rotation.from_euler("xyzx", np.zeros(4))
    with pytest.raises(ValueError, match="from \\['x', 'y', 'z'\\]"):
        Rotation.from_euler("xYz", np.zeros(3))
    with pytest.raises(ValueError, match="consecutive axes to be different"):
        ours.as_euler("xxy")
    with pytest.raises(ValueError, match="string of 3 characters"):
        ours.as_euler("xy")
    with pytest.raises(ValueError, match="shape \\(..., 2\\)"):
        Rotation.from_euler("xy", np.zeros(3))
    with pytest.raises(ValueError, match="shape \\(..., 4\\)"):
        Rotation.from_quat(np.ones(3))
    with pytest.raises(ValueError, match="\\(..., 3, 3\\)"):
        Rotation.from_matrix(np.eye(4))
    with pytest.raises(ValueError, match="number of values equal to number of rotations"):
        ours.mean(np.ones(3))
    with pytest.raises(ValueError, match="1 dimensional"):
        ours.mean(np.ones((7, 1)))
    with pytest.raises(TypeError, match="must be a `Rotation`"):
        Slerp.init([0, 1], QUATS[:2])
    with pytest.raises(ValueError, match="at least 2 rotations"):
        Slerp.init([0], ours[:1])
    with pytest.raises(ValueError, match="7 rotations and 3 timestamps"):
        Slerp.init([0, 1, 2], ours)
    with pytest.raises(ValueError, match="at most 1-dimensional"):
        Slerp.init(np.arange(7.0), ours)(np.zeros((2, 2)))
