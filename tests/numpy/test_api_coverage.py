"""Coverage of JAX's public name lists (copied from JAX 0.10.2 into tests/data/api): which names
morphax has. linalg, fft, random, lax and the pytree APIs are complete; jax.numpy reports
their coverage and may not drop below the recorded floor."""

from __future__ import annotations

import pathlib

import pytest

import morphax
import morphax.ad_checkpoint
import morphax.debug
import morphax.nn
import morphax.nn.initializers
import morphax.numpy as jnp
import morphax.scipy.cluster.vq
import morphax.scipy.fft
import morphax.scipy.integrate
import morphax.scipy.linalg
import morphax.scipy.ndimage
import morphax.scipy.special
import morphax.scipy.stats
import morphax.tree_util

API = pathlib.Path(__file__).resolve().parents[1] / "data" / "api"

# name list -> (module, minimum fraction covered)
LISTS = {
    "jax_numpy_linalg.txt": (jnp.linalg, 1.0),
    "jax_numpy_fft.txt": (jnp.fft, 1.0),
    "jax_random.txt": (morphax.random, 1.0),
    "jax_tree_util.txt": (morphax.tree_util, 1.0),
    "jax_tree.txt": (morphax.tree, 1.0),
    "jax_numpy.txt": (jnp, 0.95),
    "jax_lax.txt": (morphax.lax, 1.0),
    "jax_nn.txt": (morphax.nn, 1.0),
    "jax_nn_initializers.txt": (morphax.nn.initializers, 1.0),
    "jax_flatten_util.txt": (morphax.flatten_util, 1.0),
    "jax_ops.txt": (morphax.ops, 1.0),
    "jax_image.txt": (morphax.image, 1.0),
    "jax_custom_derivatives.txt": (morphax.custom_derivatives, 8 / 9),  # linear_call missing
    "jax_stages.txt": (morphax.stages, 1.0),
    "jax_ad_checkpoint.txt": (morphax.ad_checkpoint, 1.0),
    "jax_dtypes.txt": (morphax.dtypes, 1.0),
    # debug: the sharding visualizers belong to the devices issue; the effect types are missing
    "jax_debug.txt": (morphax.debug, 4 / 9),
    # scipy.special: the gamma, beta, error-function, entropy and Bessel-I families so far
    "jax_scipy_special.txt": (morphax.scipy.special, 38 / 53),
    "jax_scipy_stats.txt": (morphax.scipy.stats, 1.0),
    # scipy.linalg: missing eigh_tridiagonal, expm_frechet, funm, hessenberg, qr_multiply,
    # rsf2csf, schur, solve_sylvester, sqrtm
    "jax_scipy_linalg.txt": (morphax.scipy.linalg, 31 / 40),
    "jax_scipy_fft.txt": (morphax.scipy.fft, 1.0),
    "jax_scipy_integrate.txt": (morphax.scipy.integrate, 1.0),
    "jax_scipy_ndimage.txt": (morphax.scipy.ndimage, 1.0),
    "jax_scipy_cluster_vq.txt": (morphax.scipy.cluster.vq, 1.0),
    "jax_scipy_stats_norm.txt": (morphax.scipy.stats.norm, 1.0),
}


def _has(module, dotted):
    for part in dotted.split("."):
        if not hasattr(module, part):
            return False
        module = getattr(module, part)
    return True


@pytest.mark.parametrize("list_name", sorted(LISTS))
def test_coverage(list_name):
    module, floor = LISTS[list_name]
    names = [n.strip() for n in (API / list_name).read_text().splitlines() if n.strip()]
    missing = [n for n in names if not _has(module, n)]
    covered = 1 - len(missing) / len(names)
    print(
        f"{list_name}: {len(names) - len(missing)}/{len(names)} ({covered:.1%}); missing: {' '.join(missing)}"
    )
    assert covered >= floor, f"{list_name}: coverage {covered:.1%} below {floor:.0%}; missing {missing}"
