"""Run under ``mpirun -n N python global_array_program.py``: arrays laid out over the devices of
every process (a one-axis mesh over ``morphax.devices()``), built from each process's data,
computed on eagerly and under jit (SPMD across the processes), and read back. Each process writes
what it saw to $MPI_TEST_OUT/rank<i>.json; test_global_arrays.py compares with NumPy."""

from __future__ import annotations

import json
import os
import pathlib

import numpy as np

ROWS, COLS, OUT = 16, 5, 3


def _error(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 - reported to the test
        return [type(e).__name__, str(e)]
    return None


def data():
    """The global values every process knows (the test recomputes them)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    w = rng.standard_normal((COLS, OUT)).astype(np.float32)
    a = rng.standard_normal((4, ROWS)).astype(np.float32)
    return x, w, a


def main() -> None:
    import morphax
    import morphax.numpy as jnp
    from morphax.experimental import multihost_utils
    from morphax.sharding import Mesh, NamedSharding, SingleDeviceSharding
    from morphax.sharding import PartitionSpec as P

    morphax.distributed.initialize()
    r, n = morphax.process_index(), morphax.process_count()
    local = morphax.local_device_count()
    x, w, a = data()
    mesh = Mesh(np.array(morphax.devices()), ("batch",))
    rows = NamedSharding(mesh, P("batch"))
    cols = NamedSharding(mesh, P(None, "batch"))
    whole = NamedSharding(mesh, P())
    per_process = ROWS // n
    mine = slice(r * per_process, (r + 1) * per_process)

    xs = morphax.make_array_from_process_local_data(rows, x[mine])
    ws = morphax.device_put(w, whole)  # every process passes the whole value
    loss = morphax.jit(lambda w, x: jnp.mean((x @ w) ** 2))
    grad = morphax.jit(morphax.grad(lambda w, x: jnp.mean((x @ w) ** 2)))
    scaled = morphax.jit(lambda x: jnp.tanh(x) * 2)(xs)
    calls = []

    def piece(index):
        calls.append([s.start for s in index])
        return x[index]

    from_callback = morphax.make_array_from_callback(x.shape, rows, piece)
    pieces = [
        morphax.device_put(x[index], d) for d, index in rows.addressable_devices_indices_map(x.shape).items()
    ]
    from_pieces = morphax.make_array_from_single_device_arrays(x.shape, rows, pieces)
    a_cols = morphax.make_array_from_callback(a.shape, cols, lambda index: a[index])
    x_rows = morphax.make_array_from_callback(x.shape, rows, lambda index: x[index])
    contracted = morphax.jit(lambda a, b: a @ b)(a_cols, x_rows)  # contracting dimension split
    grid = Mesh(np.array(morphax.devices()).reshape(n, local), ("proc", "dev"))
    on_grid = morphax.make_array_from_callback(x.shape, NamedSharding(grid, P("proc", None)), lambda i: x[i])

    def column_sums(v):  # each device's rows summed, then over every process's devices
        return morphax.lax.psum(v.sum(0), "batch")

    summed = morphax.shard_map(column_sums, mesh=mesh, in_specs=P("batch"), out_specs=P())
    doubled = morphax.jit(
        morphax.shard_map(lambda v: v * 2, mesh=mesh, in_specs=P("batch"), out_specs=P("batch"))
    )

    def printed(v):
        morphax.debug.print("sum {}", v.sum())  # a callback: runs operation by operation
        return v.sum()

    # pmap over every process's devices, each process passing its devices' values (their ranks).
    ranks_here = np.arange(r * local, (r + 1) * local, dtype=np.float32)
    within = [[p * local + i for i in range(local)] for p in range(n)]  # each process's devices
    across = [[p * local + i for p in range(n)] for i in range(local)]

    def grouped(groups):
        return morphax.pmap(lambda v: morphax.lax.psum(v, "i", axis_index_groups=groups), "i")(ranks_here)

    def mean_loss(w, v):  # each device's rows, averaged over every process's devices
        return morphax.lax.pmean(jnp.mean((v @ w) ** 2), "batch")

    loss_map = morphax.shard_map(mean_loss, mesh=mesh, in_specs=(P(), P("batch")), out_specs=P())

    result = {
        "rank": r,
        "shard_map_grad": np.asarray(morphax.jit(morphax.grad(loss_map))(w, xs)).tolist(),
        "grouped_within": np.asarray(grouped(within)).tolist(),
        "grouped_across": np.asarray(grouped(across)).tolist(),
        "after_groups": np.asarray(
            morphax.pmap(lambda v: morphax.lax.psum(v, "i"), "i")(ranks_here)
        ).tolist(),
        "shard_map": np.asarray(summed(xs)).tolist(),
        "shard_map_jit": np.asarray(morphax.jit(summed)(xs)).tolist(),
        "shard_map_whole": np.asarray(summed(x)).tolist(),  # a NumPy value: every process passes it whole
        "shard_map_split": np.asarray(doubled(xs)).tolist(),
        "with_callback": float(morphax.jit(printed)(xs)),
        "shard_map_callback": np.asarray(
            morphax.shard_map(
                lambda v: morphax.lax.psum(printed(v), "batch"), mesh=mesh, in_specs=P("batch"), out_specs=P()
            )(xs)
        ).tolist(),
        "shape": list(xs.shape),
        "fully_addressable": [xs.is_fully_addressable, ws.is_fully_addressable],
        "replicated": [xs.is_fully_replicated, ws.is_fully_replicated],
        "shards": [[sh.device.id, sh.index[0].start, sh.index[0].stop] for sh in xs.addressable_shards],
        "shard_data": [np.asarray(sh.data).tolist() for sh in xs.addressable_shards],
        "global_shards": [[sh.device.id, sh.data is None] for sh in xs.global_shards],
        "read": _error(lambda: np.asarray(xs)),
        "element": _error(lambda: print(float(xs[ROWS - 1, 2]))) or float(xs[ROWS - 1, 2]),
        "repr": repr(xs),
        "gathered": multihost_utils.process_allgather(xs).tolist(),
        "whole_read": np.asarray(ws).tolist(),
        "loss": float(loss(ws, xs)),
        "grad": np.asarray(grad(ws, xs)).tolist(),
        "eager_sum": float((xs * 2).sum()),
        "eager_plus": multihost_utils.process_allgather(xs + 1).tolist(),
        "eager_max": np.asarray(jnp.max(xs, axis=0)).tolist(),
        "scaled": multihost_utils.process_allgather(scaled).tolist(),
        "scaled_spec": str(scaled.sharding.spec),
        "callback_calls": sorted(calls),
        "from_callback": multihost_utils.process_allgather(from_callback).tolist(),
        "from_pieces": multihost_utils.process_allgather(from_pieces).tolist(),
        "contracted": np.asarray(contracted).tolist(),
        "grid": float(morphax.jit(lambda v: v.sum())(on_grid)),
        "grid_shard_map": np.asarray(
            morphax.shard_map(
                lambda v: morphax.lax.psum(morphax.lax.psum(v.sum(0), "dev"), "proc"),
                mesh=grid,
                in_specs=P(("proc", "dev")),
                out_specs=P(),
            )(x)
        ).tolist(),
        "to_one_device": np.asarray(
            morphax.device_put(xs, SingleDeviceSharding(morphax.local_devices()[0]))
        ).tolist(),
        "to_whole": np.asarray(morphax.device_put(xs, whole)).tolist(),
        "to_other_process": _error(
            lambda: morphax.device_put(xs, morphax.local_devices(process_index=(r + 1) % n)[0])
        ),
        "two_meshes": _error(
            lambda: morphax.jit(lambda u, v: u + v)(
                xs,
                morphax.device_put(
                    x, NamedSharding(Mesh(np.array(morphax.devices()), ("other",)), P("other"))
                ),
            )
        ),
        "relabel": morphax.device_put(xs, NamedSharding(mesh, P("batch", None))).is_fully_addressable,
    }
    morphax.distributed.shutdown()
    out = pathlib.Path(os.environ["MPI_TEST_OUT"]) / f"rank{r}.json"
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
