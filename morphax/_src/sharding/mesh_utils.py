"""Device meshes for `sharding.Mesh` (JAX's `jax.experimental.mesh_utils`): the devices of a run
laid out in a NumPy array of the mesh's shape.

A mesh is filled in the order of the device list, as JAX does for CPU devices and for anything
that is not a multi-chip TPU slice. NB: JAX orders the chips of a multi-chip TPU slice by their
physical torus coordinates; morphax has run on one chip only, so it keeps the list's order there
too.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Sequence

import numpy as np


def _mesh_shape(mesh_shape, where: str) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in mesh_shape)
    except (TypeError, ValueError):
        raise ValueError(
            f"`{where}` passed to `create_device_mesh` should be a sequence of ints. Got {mesh_shape}"
        ) from None


def _default_devices(devices):
    if devices is None:
        from morphax._src.runtime.devices import devices as all_devices

        return all_devices()
    return list(devices)


def create_device_mesh(
    mesh_shape: Sequence[int],
    devices: Sequence | None = None,
    *,
    contiguous_submeshes: bool = False,
    allow_split_physical_axes: bool = False,
) -> np.ndarray:
    """A NumPy array of `devices` (default: every device) of shape `mesh_shape`, for
    `sharding.Mesh`. The product of `mesh_shape` must be the number of devices."""
    del contiguous_submeshes, allow_split_physical_axes  # one order for every platform (above)
    devices = _default_devices(devices)
    shape = _mesh_shape(mesh_shape, "mesh_shape")
    if math.prod(shape) != len(devices):
        raise ValueError(f"Number of devices {len(devices)} must equal the product of mesh_shape {shape}")
    mesh = np.empty(len(devices), dtype=object)
    mesh[:] = devices
    return mesh.reshape(shape)


def create_hybrid_device_mesh(
    mesh_shape: Sequence[int],
    dcn_mesh_shape: Sequence[int],
    devices: Sequence | None = None,
    *,
    process_is_granule: bool = False,
    should_sort_granules_by_key: bool = True,
    allow_split_physical_axes: bool = False,
) -> np.ndarray:
    """A mesh for two networks: the devices are grouped into granules (slices, or processes when
    `process_is_granule`), each granule laid out as `mesh_shape`, and the granules tiled by
    `dcn_mesh_shape`; the result's shape is their elementwise product."""
    devices = _default_devices(devices)
    attr = "process_index" if process_is_granule else "slice_index"
    if not hasattr(devices[0], attr):
        raise ValueError(
            f"Device {devices[0]} does not have attribute {attr}. See `process_is_granule` option."
        )
    groups: dict = collections.defaultdict(list)
    for device in devices:
        groups[getattr(device, attr)].append(device)
    keys = sorted(groups) if should_sort_granules_by_key else list(groups)
    granules = [groups[k] for k in keys]
    dcn_shape = _mesh_shape(dcn_mesh_shape, "dcn_mesh_shape")
    if math.prod(dcn_shape) != len(granules):
        raise ValueError(
            f"Number of slices {len(granules)} must equal the product of dcn_mesh_shape {tuple(dcn_mesh_shape)}"
        )
    per_granule = [
        create_device_mesh(mesh_shape, granule, allow_split_physical_axes=allow_split_physical_axes)
        for granule in granules
    ]
    # Granule g sits at position unravel(g, dcn_shape) of the outer grid; each grid cell is a
    # whole per-granule mesh, so the result's axis i has mesh_shape[i] * dcn_shape[i] devices.
    inner = per_granule[0].shape
    if len(inner) != len(dcn_shape):
        raise ValueError(
            f"create_hybrid_device_mesh: mesh_shape {tuple(inner)} and dcn_mesh_shape {dcn_shape} "
            "must have the same number of axes."
        )
    out = np.empty(tuple(a * b for a, b in zip(inner, dcn_shape)), dtype=object)
    for g, mesh in enumerate(per_granule):
        cell = np.unravel_index(g, dcn_shape)
        out[tuple(slice(c * n, (c + 1) * n) for c, n in zip(cell, inner))] = mesh
    return out
