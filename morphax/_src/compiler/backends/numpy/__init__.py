"""The reference backend: fuses nothing, so every equation runs its primitive's NumPy reference
from the executor's straight-line program. Always available; the oracle for the others.

`evaluate_kernel` is the NumPy meaning of a fused `Kernel` (whole arrays, node by node): other
backends fall back to it for a kernel they fail to build, and tests compare against it.
"""

from __future__ import annotations

import numpy as np

from morphax._src.compiler import kernel_ops


class _Caps:
    @staticmethod
    def fuses_view(eqn) -> bool:
        return False

    @staticmethod
    def supports(eqn) -> bool:
        return False

    @staticmethod
    def supports_op(op: str, eqn) -> bool:
        return False


class NumpyBackend:
    name = "numpy"
    caps = _Caps()

    @staticmethod
    def available() -> bool:
        return True

    @staticmethod
    def build(program, name: str = "kernel"):
        fns = {id(k): kernel_callable(k) for k in program.kernels}
        return fns, []


def kernel_callable(kernel):
    """A callable running `kernel` with NumPy: inputs in slot order -> outputs in store order."""

    def run(*inputs):
        return evaluate_kernel(kernel, inputs)

    return run


def _gather(buf: np.ndarray, index, domain) -> np.ndarray:
    """`buf` read at `index` (IndexExprs over the loop variables) at every point of `domain`."""
    if not index:
        return np.broadcast_to(buf.reshape(()), domain)
    grids = np.indices(domain, dtype=np.int64, sparse=True) if domain else ()
    env = {f"i{d}": g for d, g in enumerate(grids)}
    coords = tuple(np.broadcast_to(np.asarray(i.evaluate(env), np.int64), domain) for i in index)
    return buf[coords]


def evaluate_kernel(kernel, inputs) -> list:
    domain = kernel.domain
    values: list = []
    with np.errstate(all="ignore"):
        for node in kernel.nodes:
            if node.op == "load":
                load = node.params["load"]
                values.append(_gather(np.asarray(inputs[load.slot]), load.index, domain))
            elif node.op == "const":
                values.append(np.broadcast_to(np.asarray(node.params["value"], node.dtype), domain))
            elif node.op == "result":
                values.append(np.asarray(values[node.args[0]][node.params["index"]]))
            else:
                fn = kernel_ops.reference(node.op)
                args = [values[a] for a in node.args]
                out = fn(*args, **node.params) if node.params else fn(*args)
                if node.dtype is not None:
                    out = np.broadcast_to(np.asarray(out, node.dtype), domain)
                values.append(out)
        outs = []
        for store in kernel.stores:
            value = values[store.node]
            if store.reduce is None:
                outs.append(np.array(value, dtype=store.var.aval.dtype))
            else:
                fn = kernel_ops.reference(store.reduce)
                outs.append(np.asarray(fn(value, **store.reduce_params), store.var.aval.dtype))
    return outs


BACKEND = NumpyBackend()
