"""`morphax.scipy.interpolate.RegularGridInterpolator` against SciPy's, in float32 and float64: 1-D,
2-D and 3-D grids (uneven spacing, trailing value axes), both methods, NaN / constant fill outside
the grid and extrapolation with fill_value=None; the interpolator as a pytree under jit and vmap;
gradients in the values and the query points (check_grads); JAX's errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.interpolate as si

import morphax
import morphax.numpy as jnp
from morphax.scipy.interpolate import RegularGridInterpolator
from morphax.test_util import check_grads

rng = np.random.default_rng(0)
GRIDS = {
    1: (np.array([0.0, 0.4, 1.0, 1.5, 3.0]),),
    2: (np.linspace(0, 1, 5), np.array([-1.0, 0.3, 0.5, 1.2])),
    3: (np.linspace(0, 2, 4), np.array([0.0, 1.0, 3.0]), np.linspace(-1, 1, 5)),
}


def _query(grid, n=13, seed=1, ties=True):
    r = np.random.default_rng(seed)
    # a margin outside every axis, the grid's own nodes, and the cells' midpoints (where "nearest"
    # takes the lower node; in float32 rounding decides a tie, so those points move off it)
    inside = np.stack([r.uniform(g[0] - 0.3, g[-1] + 0.3, n) for g in grid], axis=-1)
    nodes = np.stack([g[np.arange(3) % len(g)] for g in grid], axis=-1)
    middles = np.stack([(g[:2] + g[1:3]) / 2 for g in grid], axis=-1) + (0 if ties else 1e-3)
    return np.concatenate([inside, nodes, middles])


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("method", ["linear", "nearest"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_against_scipy(ndim, method, dtype):
    grid = GRIDS[ndim]
    values = rng.normal(size=tuple(len(g) for g in grid))
    xi = _query(grid, ties=dtype == np.float64)
    tol = 2e-6 if dtype == np.float32 else 1e-13
    with morphax.enable_x64(dtype == np.float64):
        for fill_value in (np.nan, None, -2.5):
            got = RegularGridInterpolator(
                [g.astype(dtype) for g in grid], values.astype(dtype), method=method, fill_value=fill_value
            )(xi.astype(dtype))
            want = si.RegularGridInterpolator(
                grid, values, method=method, bounds_error=False, fill_value=fill_value
            )(xi)
            assert got.dtype == dtype and got.shape == want.shape
            np.testing.assert_allclose(np.asarray(got), want, rtol=tol * 10, atol=tol * 10)
        # trailing axes of values are carried along; xi of any batch shape
        values = rng.normal(size=(*(len(g) for g in grid), 2, 3))
        got = RegularGridInterpolator(grid, values.astype(dtype), method)(
            xi.reshape(3, -1, ndim).astype(dtype)
        )
        want = si.RegularGridInterpolator(grid, values, method, bounds_error=False)(xi.reshape(3, -1, ndim))
        assert got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=tol * 10, atol=tol * 10)


def test_query_forms_and_method_override():
    grid, values = GRIDS[2], rng.normal(size=(5, 4))
    xi = _query(grid, ties=False)
    interp = RegularGridInterpolator(grid, values.astype(np.float32))
    ref = si.RegularGridInterpolator(grid, values, bounds_error=False)
    # a tuple of coordinate arrays broadcasts; a 1-tuple holds the points array
    got = interp((xi[:, :1], xi[None, :, 1]))
    assert got.shape == (len(xi), len(xi))
    np.testing.assert_allclose(np.asarray(got), ref((xi[:, :1], xi[None, :, 1])), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(interp((xi,))), ref(xi), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        np.asarray(interp(xi, method="nearest")), ref(xi, method="nearest"), rtol=1e-6, atol=1e-6
    )
    # a 1-D query on a 1-D grid is a list of points; integer values are promoted
    one = RegularGridInterpolator(GRIDS[1], np.arange(5))
    assert one.values.dtype == np.float32
    np.testing.assert_allclose(
        np.asarray(one(np.array([0.2, 1.2, 2.0]))),
        si.RegularGridInterpolator(GRIDS[1], np.arange(5.0))(np.array([0.2, 1.2, 2.0])),
        rtol=1e-6,
    )


def test_pytree_jit_and_vmap():
    grid, values = GRIDS[2], rng.normal(size=(5, 4)).astype(np.float32)
    xi = _query(grid, ties=False).astype(np.float32)
    interp = RegularGridInterpolator(grid, values, fill_value=0.0)
    leaves, tree = morphax.tree_util.tree_flatten(interp)
    assert len(leaves) == 4  # two grid axes, the values, the fill value
    rebuilt = morphax.tree_util.tree_unflatten(tree, leaves)
    assert rebuilt.method == "linear" and not rebuilt.bounds_error
    want = si.RegularGridInterpolator(grid, values, bounds_error=False, fill_value=0.0)(xi)
    # the interpolator itself as a jit argument
    np.testing.assert_allclose(
        np.asarray(morphax.jit(lambda f, q: f(q))(interp, xi)), want, rtol=1e-5, atol=1e-6
    )
    # vmapped over a batch of value tables, and over query points
    tables = rng.normal(size=(3, 5, 4)).astype(np.float32)
    got = morphax.vmap(lambda v: RegularGridInterpolator(grid, v, method="nearest")(xi))(tables)
    for table, row in zip(tables, np.asarray(got)):
        np.testing.assert_allclose(
            row, si.RegularGridInterpolator(grid, table, "nearest", bounds_error=False)(xi), rtol=1e-6
        )
    got = morphax.vmap(interp)(xi)  # a single point (ndim,) is a list of one point, as in JAX
    assert got.shape == (len(xi), 1)
    np.testing.assert_allclose(np.asarray(got)[:, 0], want, rtol=1e-5, atol=1e-6)


def test_gradients():
    with morphax.enable_x64():
        grid, values = GRIDS[3], rng.normal(size=(4, 3, 5))
        xi = np.array([[0.3, 0.4, -0.55], [1.7, 2.2, 0.1], [2.3, -0.2, 0.9]])  # the last one outside
        check_grads(
            lambda v: RegularGridInterpolator(grid, v)(xi[:2]), (values,), order=2, modes=("fwd", "rev")
        )
        check_grads(
            lambda q: RegularGridInterpolator(grid, values, fill_value=None)(q),
            (xi,),
            order=1,
            modes=("fwd", "rev"),
        )
        # the gradient in the values is the corner weights: it sums to 1 per point
        weights = morphax.grad(lambda v: RegularGridInterpolator(grid, v)(xi[:1])[0])(values)
        np.testing.assert_allclose(float(weights.sum()), 1.0, rtol=1e-12)
        assert int((np.asarray(weights) != 0).sum()) == 8
        # nearest is piecewise constant in the query points
        g = morphax.grad(lambda q: RegularGridInterpolator(grid, values, "nearest")(q).sum())(xi[:2])
        np.testing.assert_array_equal(np.asarray(g), 0.0)


def test_errors():
    grid, values = GRIDS[2], rng.normal(size=(5, 4))
    with pytest.raises(ValueError, match="method 'cubic' is not defined"):
        RegularGridInterpolator(grid, values, method="cubic")
    with pytest.raises(ValueError, match="method 'spline' is not defined"):
        RegularGridInterpolator(grid, values)(grid[0][:1, None].repeat(2, 1), method="spline")
    with pytest.raises(NotImplementedError, match="bounds_error"):
        RegularGridInterpolator(grid, values, bounds_error=True)
    with pytest.raises(ValueError, match="3 point arrays, but values has 2 dimensions"):
        RegularGridInterpolator((*grid, grid[0]), values)
    with pytest.raises(ValueError, match="5 points and 4 values in dimension 0"):
        RegularGridInterpolator(grid, values.T)
    with pytest.raises(ValueError, match="at least 2"):
        RegularGridInterpolator((np.zeros(1),), np.ones(1))
    with pytest.raises(ValueError, match="compatible with values"):
        RegularGridInterpolator(grid, values, fill_value=1j)
    with pytest.raises(ValueError, match="have dimension 3"):
        RegularGridInterpolator(grid, values)(np.zeros((2, 3)))
    with pytest.raises(TypeError):
        RegularGridInterpolator(grid, values.tolist())
    assert (
        RegularGridInterpolator(grid, jnp.asarray(values, jnp.complex64), fill_value=1j).values.dtype
        == np.complex64
    )
