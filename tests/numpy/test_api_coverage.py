"""Coverage of JAX's public name lists (copied from JAX 0.10.2 into tests/data/api): which names
morphax has. Every list is complete except jax.custom_derivatives' primitives (remat_opt_p is
missing); jax.numpy reports its coverage and may not drop below the recorded floor."""

from __future__ import annotations

import pathlib

import pytest

import morphax
import morphax.ad_checkpoint
import morphax.debug
import morphax.experimental.checkify
import morphax.experimental.compilation_cache.compilation_cache
import morphax.experimental.jet
import morphax.experimental.mesh_utils
import morphax.experimental.ode
import morphax.experimental.serialize_executable
import morphax.experimental.sparse
import morphax.ffi
import morphax.lax.linalg
import morphax.nn
import morphax.nn.initializers
import morphax.numpy as jnp
import morphax.profiler
import morphax.scipy.cluster.vq
import morphax.scipy.fft
import morphax.scipy.integrate
import morphax.scipy.interpolate
import morphax.scipy.linalg
import morphax.scipy.ndimage
import morphax.scipy.optimize
import morphax.scipy.signal
import morphax.scipy.sparse.linalg
import morphax.scipy.spatial.transform
import morphax.scipy.special
import morphax.scipy.stats
import morphax.sharding
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
    "jax_custom_derivatives.txt": (morphax.custom_derivatives, 1.0),
    # remat_opt_p (JAX's custom_vjp remat optimization) is missing
    "jax_custom_derivatives_primitives.txt": (morphax.custom_derivatives, 2 / 3),
    "jax_stages.txt": (morphax.stages, 1.0),
    "jax_ad_checkpoint.txt": (morphax.ad_checkpoint, 1.0),
    "jax_dtypes.txt": (morphax.dtypes, 1.0),
    "jax_debug.txt": (morphax.debug, 1.0),
    "jax_sharding.txt": (morphax.sharding, 1.0),
    "jax_top.txt": (morphax, 1.0),
    # The submodules that are attributes of the package (loaded on first access).
    "jax_top_submodules.txt": (morphax, 1.0),
    "jax_lax_linalg.txt": (morphax.lax.linalg, 1.0),
    "jax_lax_linalg_primitives.txt": (morphax.lax.linalg, 1.0),
    "jax_experimental_checkify.txt": (morphax.experimental.checkify, 1.0),
    "jax_experimental_mesh_utils.txt": (morphax.experimental.mesh_utils, 1.0),
    "jax_experimental_ode.txt": (morphax.experimental.ode, 1.0),
    "jax_experimental_jet.txt": (morphax.experimental.jet, 1.0),
    "jax_ffi.txt": (morphax.ffi, 1.0),
    "jax_experimental_compilation_cache.txt": (
        morphax.experimental.compilation_cache.compilation_cache,
        1.0,
    ),
    "jax_experimental_sparse.txt": (morphax.experimental.sparse, 1.0),
    "jax_experimental_sparse_primitives.txt": (morphax.experimental.sparse, 1.0),
    "jax_experimental_sparse_submodules.txt": (morphax.experimental.sparse, 1.0),
    "jax_experimental_serialize_executable.txt": (morphax.experimental.serialize_executable, 1.0),
    "jax_profiler.txt": (morphax.profiler, 1.0),
    "jax_scipy_special.txt": (morphax.scipy.special, 1.0),
    "jax_scipy_stats.txt": (morphax.scipy.stats, 1.0),
    "jax_scipy_linalg.txt": (morphax.scipy.linalg, 1.0),
    "jax_scipy_fft.txt": (morphax.scipy.fft, 1.0),
    "jax_scipy_integrate.txt": (morphax.scipy.integrate, 1.0),
    "jax_scipy_ndimage.txt": (morphax.scipy.ndimage, 1.0),
    "jax_scipy_cluster_vq.txt": (morphax.scipy.cluster.vq, 1.0),
    "jax_scipy_stats_norm.txt": (morphax.scipy.stats.norm, 1.0),
    "jax_scipy_signal.txt": (morphax.scipy.signal, 1.0),
    "jax_scipy_optimize.txt": (morphax.scipy.optimize, 1.0),
    "jax_scipy_sparse_linalg.txt": (morphax.scipy.sparse.linalg, 1.0),
    "jax_scipy_interpolate.txt": (morphax.scipy.interpolate, 1.0),
    "jax_scipy_spatial_transform.txt": (morphax.scipy.spatial.transform, 1.0),
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
