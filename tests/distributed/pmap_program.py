"""The program tests/distributed/test_pmap_processes.py runs: pmaps with collectives, either
under ``mpirun -n P python pmap_program.py OUT`` (after morphax.distributed.initialize, each process
feeding its local devices' slices) or as the one-process reference (``pmap_program.py
--reference OUT`` on P * local devices, fed the whole arrays). Each process writes OUT/RANK.json:
its rank and, per case, its local results. Not a test module itself."""

from __future__ import annotations

import json
import pathlib
import sys
import time

import numpy as np


def _inputs(total):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((total, 3, 5)).astype(np.float32)
    w = rng.standard_normal((5, 2)).astype(np.float32)
    blocks = rng.standard_normal((total, 2 * total, 3)).astype(np.float32)
    return x, w, blocks


def cases(total):
    """name -> (function of this process's slices, the global inputs to slice)."""
    import morphax
    import morphax.numpy as jnp
    from morphax import lax

    x, w, blocks = _inputs(total)
    shift = [(i, (i + 1) % total) for i in range(total)]
    partial = [(0, total - 1), (total - 2, 1)]

    def loss(w, x):
        return jnp.mean(jnp.tanh(x @ w) ** 2)

    def data_parallel_grad(w, x):
        return lax.pmean(morphax.grad(loss)(w, x), "i")

    return {
        "psum": (morphax.pmap(lambda v: lax.psum(v, "i"), "i"), (x,)),
        "pmean_pmax_pmin": (
            morphax.pmap(lambda v: (lax.pmean(v, "i"), lax.pmax(v, "i"), lax.pmin(v, "i")), "i"),
            (x,),
        ),
        "psum_tree": (
            morphax.pmap(lambda v: lax.psum((v, (v * 10).astype(jnp.int32), v[0, :2]), "i"), "i"),
            (x,),
        ),
        "psum_int": (morphax.pmap(lambda v: lax.psum((v * 10).astype(jnp.int32), "i"), "i"), (x,)),
        "all_gather": (morphax.pmap(lambda v: lax.all_gather(v, "i"), "i"), (x,)),
        "all_gather_tiled": (morphax.pmap(lambda v: lax.all_gather(v, "i", axis=1, tiled=True), "i"), (x,)),
        "ppermute": (morphax.pmap(lambda v: lax.ppermute(v, "i", shift), "i"), (x,)),
        "ppermute_partial": (morphax.pmap(lambda v: lax.ppermute(v, "i", partial), "i"), (x,)),
        "all_to_all": (morphax.pmap(lambda v: lax.all_to_all(v, "i", 0, 1, tiled=True), "i"), (blocks,)),
        "axis_index": (
            morphax.pmap(lambda v: lax.axis_index("i") + 0 * v[0, 0].astype(jnp.int32), "i"),
            (x,),
        ),
        "jit_of_pmap": (morphax.jit(morphax.pmap(lambda v: 2.0 * lax.psum(v, "i"), "i")), (x,)),
        "grad_pmean": (morphax.pmap(data_parallel_grad, "i", in_axes=(None, 0)), (w, x)),
        "grad_through_pmap": (
            morphax.grad(
                lambda w, x: jnp.sum(
                    morphax.pmap(lambda w, v: lax.psum(loss(w, v), "i"), "i", in_axes=(None, 0))(w, x)
                )
            ),
            (w, x),
        ),
    }


def failure(out_dir):
    """Process 1's devices fail before a psum (a host callback raises): every process raises at
    once, process 0 naming process 1's error, instead of waiting out the collective timeout."""
    import morphax
    from morphax import lax

    morphax.distributed.initialize()
    me = morphax.process_index()

    def check(v):
        if me == 1:
            raise RuntimeError("a device of process 1 failed")
        return v

    def f(v):
        v = morphax.pure_callback(check, morphax.ShapeDtypeStruct(v.shape, v.dtype), v)
        return lax.psum(v, "i")

    start = time.monotonic()
    try:
        morphax.pmap(f, "i")(np.ones((morphax.local_device_count(), 3), np.float32)).block_until_ready()
        out = {"rank": me, "error": None}
    except Exception as e:
        out = {"rank": me, "error": [type(e).__name__, str(e)], "seconds": time.monotonic() - start}
    morphax.distributed.shutdown()
    pathlib.Path(out_dir, f"{me}.json").write_text(json.dumps(out))


def main(argv):
    import morphax

    if "--failure" in argv:
        return failure(argv[-1])
    reference = "--reference" in argv
    if not reference:
        morphax.distributed.initialize()
    rank, count = morphax.process_index(), morphax.process_count()
    local = morphax.local_device_count()
    total = local * count
    out = {"rank": rank, "process_count": count, "local": local, "device_count": morphax.device_count()}
    for name, (fn, inputs) in cases(total).items():
        # Each process feeds its devices' slices of the mapped inputs (w is broadcast whole).
        mine = [v if v.shape[0] != total else v[rank * local : (rank + 1) * local] for v in inputs]
        try:
            result = fn(*mine)
            out[name] = [np.asarray(r).tolist() for r in (result if isinstance(result, tuple) else (result,))]
        except Exception as e:  # the test reports it
            out[name] = f"{type(e).__name__}: {e}"
    if not reference:
        from morphax import lax

        # Processes that disagree on a collective's shapes raise, naming both (the last case:
        # the failure leaves the devices' communicator unusable, as JAX's runs end).
        v = np.zeros((local, 3 + rank), np.float32)
        try:
            morphax.pmap(lambda v: lax.psum(v, "i"), "i")(v).block_until_ready()
            out["mismatch"] = None
        except Exception as e:
            out["mismatch"] = [type(e).__name__, str(e)]
        morphax.distributed.shutdown()
    # A file per process: long lines printed by two processes into one pipe can interleave.
    pathlib.Path(argv[-1], f"{rank}.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
