"""`morphax.image`: resize and scale_and_translate against independent formulas (nearest's index
rule, half-pixel linear interpolation by np.interp, area's block means, constants preserved) and
against JAX's recorded outputs (tests/data/image.json); dtypes, jit, vmap and gradients."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import image
from morphax.test_util import check_grads

_DATA = json.loads((pathlib.Path(__file__).parents[1] / "data" / "image.json").read_text())
_X = np.array(_DATA["input"], np.float32)


def _case_id(c):
    return f"{c['call']}-{c['method']}-{tuple(c['shape'])}-{c.get('antialias', '')}"


@pytest.mark.parametrize("case", _DATA["cases"], ids=[_case_id(c) for c in _DATA["cases"]])
def test_matches_jax(case):
    if case["call"] == "resize":
        got = image.resize(_X, case["shape"], case["method"], antialias=case["antialias"])
    else:
        got = image.scale_and_translate(
            _X,
            case["shape"],
            (0, 1),
            jnp.array(case["scale"]),
            jnp.array(case["translation"]),
            case["method"],
        )
    np.testing.assert_allclose(np.asarray(got, np.float64), np.array(case["out"]), rtol=1e-5, atol=1e-5)


def test_nearest_index_rule():
    x = np.arange(35, dtype=np.float32).reshape(5, 7)
    got = np.asarray(image.resize(x, (8, 3), "nearest"))
    rows = np.floor((np.arange(8) + 0.5) * 5 / 8).astype(int)
    cols = np.floor((np.arange(3) + 0.5) * 7 / 3).astype(int)
    np.testing.assert_array_equal(got, x[rows][:, cols])


def test_linear_upsampling_is_half_pixel_interpolation():
    x = np.random.default_rng(1).normal(size=(4, 5)).astype(np.float64)

    def interp(v, n, axis):
        m = v.shape[axis]
        pos = np.clip((np.arange(n) + 0.5) * m / n - 0.5, 0, m - 1)
        return np.apply_along_axis(lambda r: np.interp(pos, np.arange(m), r), axis, v)

    want = interp(interp(x, 11, 0), 13, 1)
    with morphax.enable_x64():
        got = image.resize(x, (11, 13), "linear")
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def test_area_downsampling_averages_blocks_and_kernels_keep_constants():
    x = np.random.default_rng(2).normal(size=(6, 9)).astype(np.float32)
    got = image.resize(x, (3, 3), "area")
    np.testing.assert_allclose(np.asarray(got), x.reshape(3, 2, 3, 3).mean(axis=(1, 3)), rtol=1e-5, atol=1e-6)
    ones = np.ones((5, 7), np.float32)
    for method in ("linear", "cubic", "lanczos3", "lanczos5", "cubic-pytorch", "area"):
        for shape in ((9, 3), (2, 11)):
            np.testing.assert_allclose(np.asarray(image.resize(ones, shape, method)), 1.0, rtol=1e-5)


def test_identity_dtypes_and_methods_by_enum():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert image.resize(x, (3, 4), "linear").dtype == jnp.float32  # integers promote
    np.testing.assert_array_equal(np.asarray(image.resize(x, (3, 4), "cubic")), x)
    assert image.resize(x.astype(np.float16), (6, 2), image.ResizeMethod.LANCZOS3).dtype == jnp.float16
    assert image.ResizeMethod.from_string("bilinear") is image.ResizeMethod.LINEAR


def test_jit_vmap_and_gradients():
    x = np.random.default_rng(3).normal(size=(2, 5, 6, 3)).astype(np.float32)
    f = lambda v: image.resize(v, (2, 9, 4, 3), "cubic")  # noqa: E731
    np.testing.assert_allclose(np.asarray(morphax.jit(f)(x)), np.asarray(f(x)), rtol=1e-6, atol=1e-6)
    per_image = morphax.vmap(lambda v: image.resize(v, (9, 4, 3), "cubic"))(x)
    np.testing.assert_allclose(np.asarray(per_image), np.asarray(f(x)), rtol=1e-5, atol=1e-6)
    with morphax.enable_x64():
        check_grads(
            lambda v: image.resize(v, (7, 3), "lanczos3"), (x[0, :, :, 0].astype(np.float64),), order=2
        )
        check_grads(
            lambda s: image.scale_and_translate(
                x[0, :, :, 0].astype(np.float64), (7, 4), (0, 1), s, jnp.zeros(2), "linear"
            ),
            (np.array([1.4, 0.8]),),
            order=1,
        )


def test_errors():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError, match="shape must have length"):
        image.resize(x, (3, 4, 1), "linear")
    with pytest.raises(ValueError, match="Unknown resize method"):
        image.resize(x, (6, 8), "bogus")
    with pytest.raises(ValueError, match="Nearest neighbor"):
        image.scale_and_translate(x, (6, 8), (0, 1), jnp.ones(2), jnp.zeros(2), "nearest")
