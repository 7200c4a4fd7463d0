"""Lowering a closed jaxpr to a StableHLO module (MLIR text): arguments, constants, one call of
each equation's primitive rule (its `stablehlo` slot, declared beside its other rules in
prims/ and higher_order/), results. This module never asks a primitive's name: a primitive
without a rule is a LoweringError that names it.

A rule is `rule(ctx, *operands, **params) -> [Value]`: the operands are the Values of the
equation's inputs, `ctx` a LoweringContext with the equation's avals and the builder's helpers.
"""

from __future__ import annotations

import numpy as np

from morphax._src.compiler.backends.xla import mlir_text
from morphax._src.compiler.backends.xla.mlir_text import Builder, LoweringError, Value
from morphax._src.core import pytree
from morphax._src.core.jaxpr import ClosedJaxpr, Literal


class LoweringContext:
    """What a primitive's rule sees: the equation's input and output avals and a builder."""

    def __init__(self, module: ModuleLowering, avals_in, avals_out, name: str):
        self.module = module
        self.avals_in = avals_in
        self.avals_out = avals_out
        self.primitive_name = name  # for error messages only

    @property
    def builder(self) -> Builder:
        return self.module.builder

    @property
    def platform(self) -> str:
        """The PJRT platform the module is for ("cpu", "tpu"): where JAX's lowering of a
        primitive differs between platforms, the rule follows it."""
        return self.module.platform

    def op(self, name: str, operands, results, attributes=None, regions=()) -> list[Value]:
        """One StableHLO operation; `results` are avals, Values or (shape, dtype) pairs."""
        return self.builder.op(name, operands, [_shape_dtype(r) for r in results], attributes, regions)

    def op1(self, name: str, operands, result, attributes=None, regions=()) -> Value:
        return self.op(name, operands, [result], attributes, regions)[0]

    def constant(self, value, dtype=None, shape=None) -> Value:
        """A constant holding `value` (broadcast to `shape` when given)."""
        array = np.asarray(value, dtype=dtype)
        if shape is not None and tuple(shape) != array.shape:
            scalar = self.constant(array.reshape(()) if array.size == 1 else array)
            return self.broadcast(scalar, shape)
        if array.size == 0 and array.ndim != 1:
            return self.broadcast(self.constant(np.zeros((), array.dtype)), array.shape)
        return self.op1(
            "stablehlo.constant", [], (array.shape, array.dtype), {"value": mlir_text.dense(array)}
        )

    def broadcast(self, value: Value, shape, dims=None) -> Value:
        """`value` broadcast to `shape`; `dims`: which output dimension each operand dimension
        becomes (default: the trailing ones, NumPy's rule)."""
        shape = tuple(shape)
        if dims is None:
            dims = range(len(shape) - len(value.shape), len(shape))
        if value.shape == shape and list(dims) == list(range(len(shape))):
            return value
        attrs = {"broadcast_dimensions": mlir_text.i64_array(dims)}
        return self.op1("stablehlo.broadcast_in_dim", [value], (shape, value.dtype), attrs)

    def convert(self, value: Value, dtype) -> Value:
        if value.dtype == np.dtype(dtype):
            return value
        return self.op1("stablehlo.convert", [value], (value.shape, dtype))

    def region(self, arg_avals, body) -> str:
        """A region whose block takes `arg_avals` and yields what `body(*args)` returns."""
        return self.builder.region([_shape_dtype(a) for a in arg_avals], body)

    def lower_jaxpr(self, closed: ClosedJaxpr, operands) -> list[Value]:
        """`closed` applied to `operands`, written inline (bodies of calls, regions)."""
        return self.module.lower_jaxpr(closed.jaxpr, closed.consts, operands)

    # -- named axes (a module lowered for several replicas, one per device of a pmap)

    def axis_size(self, name) -> int:
        return self.module.axis_sizes()[self.module.axis_position(name, self.primitive_name)]

    def replica_groups(self, names, index_groups=None) -> str:
        """The `replica_groups` attribute of a collective over the axes `names`: the replicas that
        differ only along those axes, one group per line; `index_groups` (positions along a
        single axis, as axis_index_groups) split each line further."""
        lines = self.module.lines(names, self.primitive_name)
        if index_groups is not None:
            lines = np.array([[line[int(i)] for i in g] for line in lines for g in index_groups])
        return mlir_text.dense(np.asarray(lines, np.int64))

    def source_target_pairs(self, name, perm) -> str:
        """ppermute's (source, destination) positions along `name` as replica pairs."""
        lines = self.module.lines((name,), self.primitive_name)
        pairs = [[line[int(s)], line[int(t)]] for line in lines for s, t in perm]
        return mlir_text.dense(np.asarray(pairs, np.int64).reshape(len(pairs), 2))

    def axis_index(self, name) -> Value:
        """This replica's position along `name` (int32): its replica id, row-major over the
        module's axes, taken apart."""
        sizes = self.module.axis_sizes()
        position = self.module.axis_position(name, self.primitive_name)
        stride = int(np.prod(sizes[position + 1 :], dtype=np.int64))
        replica = self.op1("stablehlo.replica_id", [], ((), np.uint32))
        index = self.convert(replica, np.int32)
        if stride != 1:
            index = self.op1("stablehlo.divide", [index, self.constant(stride, np.int32)], index)
        if position != 0:
            index = self.op1("stablehlo.remainder", [index, self.constant(sizes[position], np.int32)], index)
        return index

    def scalar_region(self, dtype, op_name: str) -> str:
        """A reduction body combining two scalars of `dtype` with one operation."""

        def body(a, b):
            return [self.op1(op_name, [a, b], ((), dtype))]

        return self.region([((), dtype), ((), dtype)], body)


def _shape_dtype(r):
    if isinstance(r, tuple):
        return r
    return (tuple(r.shape), r.dtype)


class ModuleLowering:
    """One module: a `main` function over the jaxpr's inputs, its equations written in order.
    `axis_env` ((name, size), ..., outermost first) names the axes of a module run on several
    replicas (a pmap's devices, numbered row-major over the axes): the collectives' rules read
    their replica groups from it."""

    def __init__(self, axis_env=(), platform: str = "cpu"):
        self.builder = Builder()
        self.axis_env = tuple((name, int(size)) for name, size in axis_env)
        self.platform = platform

    def axis_sizes(self) -> list:
        return [size for _, size in self.axis_env]

    def axis_position(self, name, primitive_name: str) -> int:
        for k, (bound, _) in enumerate(self.axis_env):
            if bound == name:
                return k
        raise LoweringError(
            f"{primitive_name}: the axis name {name!r} is not an axis of this module (its axes: "
            f"{[n for n, _ in self.axis_env]}); collectives lower only inside a pmap's program"
        )

    def lines(self, names, primitive_name: str):
        """Replica ids grouped by the axes `names`: one row per combination of the other axes,
        ordered row-major over `names` as given."""
        names = tuple(names) if isinstance(names, (tuple, list)) else (names,)
        positions = [self.axis_position(n, primitive_name) for n in names]
        sizes = self.axis_sizes()
        ranks = np.arange(int(np.prod(sizes, dtype=np.int64))).reshape(sizes)
        moved = np.moveaxis(ranks, positions, list(range(len(sizes) - len(positions), len(sizes))))
        width = int(np.prod([sizes[p] for p in positions], dtype=np.int64))
        return moved.reshape(-1, width)

    def num_replicas(self) -> int:
        return int(np.prod(self.axis_sizes(), dtype=np.int64))

    def lower_jaxpr(self, jaxpr, consts, operands) -> list[Value]:
        env: dict = {}

        def read(atom) -> Value:
            if isinstance(atom, Literal):
                return self._constant(atom.val, atom.aval.dtype)
            return env[atom]

        for var, value in zip(jaxpr.constvars, consts):
            env[var] = self._constant(value, var.aval.dtype)
        for var, value in zip(jaxpr.invars, operands):
            env[var] = value
        for eqn in jaxpr.eqns:
            prim = eqn.primitive
            rule = getattr(prim, "stablehlo", None)
            if rule is None and prim.call_jaxpr_param is not None:
                rule = _inline_call(prim.call_jaxpr_param)
            if rule is None:
                raise LoweringError(
                    f"morphax cannot lower the primitive {prim.name!r} to StableHLO yet (backend "
                    f"'xla'); run this program with backend='c' or 'numpy'."
                )
            ins = [read(v) for v in eqn.invars]
            ctx = LoweringContext(
                self, [v.aval for v in eqn.invars], [v.aval for v in eqn.outvars], prim.name
            )
            outs = rule(ctx, *ins, **eqn.params)
            if not isinstance(outs, (list, tuple)):
                outs = [outs]
            if len(outs) != len(eqn.outvars):
                raise LoweringError(
                    f"the StableHLO rule of {prim.name!r} gave {len(outs)} results, not {len(eqn.outvars)}"
                )
            for var, value in zip(eqn.outvars, outs):
                want = (tuple(var.aval.shape), np.dtype(var.aval.dtype))
                if (value.shape, value.dtype) != want:
                    raise LoweringError(
                        f"the StableHLO rule of {prim.name!r} gave {value.type} where the jaxpr has "
                        f"{mlir_text.tensor_type(*want)}"
                    )
                env[var] = value
        return [read(v) for v in jaxpr.outvars]

    def _constant(self, value, dtype) -> Value:
        ctx = LoweringContext(self, [], [], "constant")
        return ctx.constant(np.asarray(value, dtype))


def _inline_call(param: str):
    """The rule of a call-like primitive (jit, checkpoint, custom-rule calls): its jaxpr, inline."""

    def rule(ctx, *operands, **params):
        return ctx.lower_jaxpr(params[param], operands)

    return rule


def lower_module(
    closed: ClosedJaxpr,
    name: str = "main",
    result_names=None,
    axis_env=(),
    platform: str = "cpu",
    shardings=None,
    blocks=None,
) -> str:
    """The StableHLO module (MLIR text) of `closed`: `@main` takes its inputs, returns its outputs,
    laid out as JAX prints its modules (`module @jit_f attributes {...}`, `func.func public @main`,
    each result named by `jax.result_info` when `result_names` gives the names).
    NB: the operations are in MLIR's generic form (`"stablehlo.add"(%a, %b) : ...`), which every
    plugin parses; JAX prints the pretty form (`stablehlo.add %a, %b`), tied to one version.
    `axis_env`: the named axes of a program run on several replicas (ModuleLowering); `platform`:
    the PJRT platform it is for (a few rules differ by platform, as JAX's do); `shardings`:
    (argument shardings, result shardings, partitions), HLO sharding strings of a program XLA
    partitions over that many devices (runtime/xla_partitioned.py); `blocks`: (in_axes, out_axes)
    of a pmap's program, whose arguments and results are then each device's block of the mapped
    arrays, the mapped axis kept with extent 1 (reshaped away inside), so that they are the
    blocks of the global arrays a device holds."""
    module = ModuleLowering(axis_env, platform)
    b = module.builder
    in_axes, out_axes = blocks if blocks is not None else ((None,) * len(closed.jaxpr.invars), ())
    args = [
        Value(f"%arg{k}", block_shape(v.aval.shape, ax), v.aval.dtype)
        for k, (v, ax) in enumerate(zip(closed.jaxpr.invars, in_axes))
    ]
    b.push_block()
    inner = [
        a if ax is None else b.op("stablehlo.reshape", [a], [(v.aval.shape, v.aval.dtype)])[0]
        for a, v, ax in zip(args, closed.jaxpr.invars, in_axes)
    ]
    results = module.lower_jaxpr(closed.jaxpr, closed.consts, inner)
    results = [
        r if ax is None else b.op("stablehlo.reshape", [r], [(block_shape(r.shape, ax), r.dtype)])[0]
        for r, ax in zip(results, (*out_axes, *(None,) * (len(results) - len(out_axes))))
    ]
    b.op("func.return", results, [])
    body = b.pop_block()
    in_s, out_s, partitions = shardings if shardings is not None else (None, None, 1)
    params = ", ".join(
        f"{a.name}: {a.type}" + (f' {{mhlo.sharding = "{in_s[k]}"}}' if in_s else "")
        for k, a in enumerate(args)
    )
    if out_s:
        outs = ", ".join(f'{r.type} {{mhlo.sharding = "{s}"}}' for r, s in zip(results, out_s))
    elif result_names is not None and len(result_names) == len(results):
        outs = ", ".join(
            f'{r.type} {{jax.result_info = "{_escape(n)}"}}' for r, n in zip(results, result_names)
        )
    else:
        outs = ", ".join(r.type for r in results)
    lines = [
        f"module @{_symbol(name)} attributes {{mhlo.num_partitions = {partitions} : i32, "
        f"mhlo.num_replicas = {module.num_replicas()} : i32}} {{",
        f"  func.func public @main({params}) -> ({outs}) {{",
        *body,
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"


def block_shape(shape, axis) -> tuple:
    """A device's block of an array mapped along `axis` (a pmap's): the axis kept with extent 1;
    the whole shape for None."""
    return tuple(shape) if axis is None else (*shape[:axis], 1, *shape[axis:])


def result_names(out_tree) -> list:
    """JAX's `jax.result_info` of each output leaf of a tree: "result", "result[0]", "result['w']"."""
    placeholders = pytree.tree_unflatten(out_tree, list(range(out_tree.num_leaves)))
    return ["result" + pytree.keystr(path) for path, _ in pytree.tree_flatten_with_path(placeholders)[0]]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _symbol(name: str) -> str:
    plain = "".join(c if c.isascii() and (c.isalnum() or c in "_.$") else "_" for c in name)
    if not plain or plain[0].isdigit():
        plain = "_" + plain
    return plain


class StableHLOModule:
    """What `Lowered.compiler_ir("stablehlo")` returns: the module of a traced jaxpr (before
    morphax's passes, as JAX lowers before XLA optimizes); `str()` gives its text."""

    def __init__(self, text: str):
        self.text = text

    @classmethod
    def of(cls, closed: ClosedJaxpr, name: str, result_names=None) -> StableHLOModule:
        return cls(lower_module(closed, f"jit_{name}", result_names))

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"StableHLOModule({self.text.splitlines()[0]} ...)"
