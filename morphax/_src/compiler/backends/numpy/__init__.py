"""The reference backend: fuses nothing, so every equation runs its primitive's NumPy reference
from the executor's straight-line program. Always available; the oracle for the others.

`evaluate_kernel` is the NumPy meaning of a fused `Kernel` (whole arrays, node by node): other
backends fall back to it for a kernel they fail to build, and tests compare against it.
"""

from __future__ import annotations

import numpy as np

from morphax._src.compiler import kernel_ops
from morphax._src.core.index_expr import IndexExpr
from morphax._src.higher_order.host_eval import host_rules


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
    def build(program, on_ready=None):
        fns = {id(k): kernel_callable(k) for k in program.kernels}
        return fns, []


def segment_callable(segment):
    """A native segment (compiler/segments.py) run step by step with NumPy: the fallback when
    its C does not build. Inputs in order -> outputs in order."""
    from morphax._src.compiler.kernel_ir import Kernel

    steps = [(step, kernel_callable(step) if isinstance(step, Kernel) else None) for step in segment.steps]
    in_ids = [id(v) for v in segment.inputs]

    def run(*inputs, outs=None):
        env = dict(zip(in_ids, inputs))
        for step, fn in steps:
            if fn is not None:
                results = fn(*[env[id(v)] for v in step.inputs])
            else:
                # Loops through their host rule: their eager impl compiles a program around
                # them, which would land back here if the C compiler keeps failing.
                eqn = step.eqn
                args = [env[id(v)] for v in eqn.invars]
                rule = host_rules.get(eqn.primitive)
                if rule is not None:
                    results = rule(args, **eqn.params)
                else:
                    result = eqn.primitive.impl(*args, **eqn.params)
                    results = result if eqn.primitive.multiple_results else [result]
            for v, r in zip(step.outputs, results):
                env[id(v)] = np.asarray(r, dtype=v.aval.dtype)
        return [env[id(v)] for v in segment.outputs]

    return run


def kernel_callable(kernel):
    """A callable running `kernel` with NumPy: inputs in slot order -> outputs in store order."""

    def run(*inputs, outs=None):  # donated buffers are not reused here: NumPy allocates
        return evaluate_kernel(kernel, inputs)

    return run


def _grid_env(domain, offsets=None) -> dict:
    grids = np.indices(domain, dtype=np.int64, sparse=True) if domain else ()
    env = {f"i{d}": g for d, g in enumerate(grids)}
    env.update(offsets or {})
    return env


def _offsets(kernel, inputs) -> dict:
    """The kernel's run-time offsets (dynamic_slice starts), clamped."""
    out = {}
    for off in kernel.offsets:
        buf = np.asarray(inputs[off.slot])
        value = int(buf[tuple(int(i) for i in off.index)]) if off.index else int(buf.reshape(()))
        out[off.name] = min(max(value, off.lo), off.hi)
    return out


def _gather(buf: np.ndarray, index, domain, clip: bool = False, offsets=None) -> np.ndarray:
    """`buf` read at `index` (IndexExprs over the loop variables) at every point of `domain`
    (indices clipped into range with `clip`: a guarded load's values outside its guard are
    replaced afterwards)."""
    if not index:
        return np.broadcast_to(buf.reshape(()), domain)
    env = _grid_env(domain, offsets)
    coords = tuple(np.broadcast_to(np.asarray(i.evaluate(env), np.int64), domain) for i in index)
    if clip:
        if buf.size == 0:
            return np.zeros(domain, buf.dtype)
        coords = tuple(np.clip(c, 0, n - 1) for c, n in zip(coords, buf.shape))
    return buf[coords]


def _inside(guard, domain) -> np.ndarray:
    """Where `guard` (Primitive.piecewise_map) holds, over `domain`."""
    env = _grid_env(domain)
    mask = np.ones(domain, bool)
    for expr, lo, hi, step in guard:
        e = np.asarray(IndexExpr.lift(expr).evaluate(env), np.int64)
        mask = mask & (e >= lo) & (e < hi) & ((e - lo) % step == 0)
    return mask


def _evaluate_nodes(kernel, inputs, phase, domain, values, reduced) -> None:
    offsets = _offsets(kernel, inputs) if kernel.offsets else None
    for nid, node in enumerate(kernel.nodes):
        if node.phase != phase:
            continue
        if node.op == "load":
            load = node.params["load"]
            got = _gather(np.asarray(inputs[load.slot]), load.index, domain, bool(load.guard), offsets)
            if load.guard:
                got = np.where(_inside(load.guard, domain), got, values[node.args[0]])
            values[nid] = got
        elif node.op == "guarded":
            inside, outside = (values[a] for a in node.args)
            values[nid] = np.where(_inside(node.params["guard"], domain), inside, outside).astype(node.dtype)
        elif node.op == "const":
            values[nid] = np.broadcast_to(np.asarray(node.params["value"], node.dtype), domain)
        elif node.op == "reduced":
            values[nid] = reduced[id(node.params["var"])].reshape(domain)
        elif node.op == "result":
            values[nid] = np.asarray(values[node.args[0]][node.params["index"]])
        else:
            fn = kernel_ops.reference(node.op)
            args = [values[a] for a in node.args]
            out = fn(*args, **node.params) if node.params else fn(*args)
            if node.dtype is not None:
                out = np.broadcast_to(np.asarray(out, node.dtype), domain)
            values[nid] = out


def evaluate_kernel(kernel, inputs) -> list:
    values: dict = {}
    reduced: dict = {}
    with np.errstate(all="ignore"):
        _evaluate_nodes(kernel, inputs, 0, kernel.domain, values, reduced)
        for store in kernel.stores:
            if store.reduce is None:
                continue
            value, aval = values[store.node], store.var.aval
            # The domain drops unit dims (compiler/fusion.py), so reduce over its own axes.
            params = dict(store.reduce_params, axes=tuple(kernel.reduce_axes))
            if params["axes"] or store.reduce not in ("argmax", "argmin"):
                value = kernel_ops.reference(store.reduce)(value, **params)
            else:  # an arg reduction over a unit axis
                value = np.zeros(value.shape, aval.dtype)
            reduced[id(store.var)] = np.asarray(value, aval.dtype)
        _evaluate_nodes(kernel, inputs, 1, kernel.epilogue_domain, values, reduced)
        outs = []
        for store in kernel.stores:
            aval = store.var.aval
            value = reduced[id(store.var)] if store.reduce is not None else values[store.node]
            outs.append(np.array(value, dtype=aval.dtype).reshape(aval.shape))
    return outs


BACKEND = NumpyBackend()
