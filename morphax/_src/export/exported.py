"""`export(jit(f))(*specs) -> Exported`, as `jax.export`: the traced jaxpr kept with its StableHLO
module (morphax's xla lowering), tree structures, avals (with dimension expressions when shapes are
symbolic), effects and platforms; `call` runs the jaxpr, `vjp` exports its VJP.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from morphax._src.api.stages import Wrapped
from morphax._src.api.tracing import ShapeDtypeStruct
from morphax._src.core import effects as _effects
from morphax._src.core import pytree
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, jaxpr_as_fun
from morphax._src.export import calling, templates
from morphax._src.export.conventions import (
    CALLING_CONVENTION_VERSION,
    STABLEHLO_VERSION,
    DisabledSafetyCheck,
    default_export_platform,
)
from morphax._src.export.dim_expr import InconclusiveDimensionOperation, is_symbolic_dim
from morphax._src.export.shape_specs import SymbolicShapeDtypeStruct, args_kwargs_path_to_str
from morphax._src.passes.dce import dce


@dataclasses.dataclass(frozen=True)
class Exported:
    """A function exported with `export`: JAX's attributes, plus the jaxpr morphax runs.

    `in_avals`/`out_avals` may hold dimension expressions; `mlir_module()` is the StableHLO module
    (lowered at the first sampled sizes when shapes are symbolic); `call` checks its arguments
    against `in_tree`/`in_avals` and runs the kept jaxpr (instantiated at the call's sizes), eagerly
    on the exporting jit's backend or as a jit call inside an enclosing transformation."""

    fun_name: str
    in_tree: Any
    in_avals: tuple
    out_tree: Any
    out_avals: tuple
    _has_named_shardings: bool
    _in_named_shardings: tuple
    _out_named_shardings: tuple
    in_shardings_hlo: tuple
    out_shardings_hlo: tuple
    nr_devices: int
    platforms: tuple
    ordered_effects: tuple
    unordered_effects: tuple
    disabled_safety_checks: Sequence
    mlir_module_serialized: bytes
    calling_convention_version: int
    module_kept_var_idx: tuple
    uses_global_constants: bool
    _get_vjp: Callable | None = dataclasses.field(repr=False)
    # morphax's own: the jaxpr (a template with dimension expressions when shapes are symbolic),
    # the backend `call` runs it on (None: the configured one), why the module did not lower.
    _jaxpr: ClosedJaxpr | None = dataclasses.field(default=None, repr=False, compare=False)
    _backend: str | None = dataclasses.field(default=None, repr=False, compare=False)
    _lowering_error: str | None = dataclasses.field(default=None, repr=False, compare=False)
    _stablehlo_version: tuple = dataclasses.field(default=STABLEHLO_VERSION, repr=False, compare=False)
    _instances: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def unsharded(cls, **fields) -> Exported:
        """An Exported whose inputs and outputs carry no sharding (every export morphax makes):
        the sharding fields follow from the numbers of inputs and outputs."""
        n_in, n_out = len(fields["in_avals"]), len(fields["out_avals"])
        return cls(
            _has_named_shardings=True,
            _in_named_shardings=(None,) * n_in,
            _out_named_shardings=(None,) * n_out,
            in_shardings_hlo=(None,) * n_in,
            out_shardings_hlo=(None,) * n_out,
            **fields,
        )

    def mlir_module(self, serialized: bool = True):
        """The StableHLO module as MLIR text (serialized=False: a StableHLOModule object)."""
        if self._lowering_error is not None:
            from morphax._src.compiler.backends.xla.mlir_text import LoweringError

            raise LoweringError(self._lowering_error)
        text = bytes(self.mlir_module_serialized).decode("utf-8")
        if serialized:
            return text
        from morphax._src.compiler.backends.xla.lowering import StableHLOModule

        return StableHLOModule(text)

    def __str__(self):
        return f"Exported(fun_name={self.fun_name}, ...)"

    def in_shardings_jax(self, mesh=None) -> tuple:
        """Shardings of the inputs (None: unspecified, which is all morphax exports)."""
        return tuple(None for _ in self.in_avals)

    def out_shardings_jax(self, mesh=None) -> tuple:
        return tuple(None for _ in self.out_avals)

    def has_vjp(self) -> bool:
        return self._get_vjp is not None

    def vjp(self) -> Exported:
        """The exported VJP: takes the primal arguments then one cotangent per primal output (all
        flat), returns the cotangents of the flat primal arguments."""
        if self._get_vjp is None:
            raise ValueError("No VJP is available")
        return self._get_vjp(self)

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """The bytes `deserialize` reads back; `vjp_order=N` includes N orders of VJPs."""
        from morphax._src.export import serialization

        return serialization.serialize(self, vjp_order=vjp_order)

    def call(self, *args, **kwargs):
        """Calls the exported function (eagerly, or inside jit, grad, vmap...)."""
        return calling.call_exported(self)(*args, **kwargs)

    # ------------------------------------------------------------------------- morphax's own
    @property
    def _symbolic(self) -> bool:
        return any(is_symbolic_dim(d) for a in self.in_avals for d in a.shape)

    def _jaxpr_for_shapes(self, shapes) -> ClosedJaxpr:
        """The jaxpr for arguments of these shapes (checked against `in_avals` already)."""
        if not self._symbolic:
            return self._jaxpr
        env = calling.solve_dim_vars(self.in_avals, self.in_tree, shapes)
        key = tuple(sorted(env.items()))
        hit = self._instances.get(key)
        if hit is None:
            if len(self._instances) >= 32:
                self._instances.pop(next(iter(self._instances)))
            hit = self._instances[key] = templates.instantiate(self._jaxpr, env, {})
        return hit

    def _check_platform(self):
        here = (default_export_platform(),)
        if (
            here[0] not in self.platforms
            and DisabledSafetyCheck.platform() not in self.disabled_safety_checks
        ):
            raise ValueError(
                f"Function '{self.fun_name}' was exported for platforms '{self.platforms}' but it is used on '{here}'."
            )


def deserialize(blob) -> Exported:
    """The Exported that `Exported.serialize` wrote (from trusted bytes only: they hold a
    pickled jaxpr)."""
    from morphax._src.export import serialization

    return serialization.deserialize(blob, Exported.unsharded, _export_vjp)


# ------------------------------------------------------------------------------------- export
def export(fun_jit, *, platforms=None, disabled_checks=()):
    """Exports a jitted function: returns a function of args and kwargs (arrays or
    ShapeDtypeStructs, whose shapes may be symbolic) giving an `Exported`."""
    if not isinstance(fun_jit, Wrapped):
        raise ValueError(f"Function to be exported must be the result of `jit` but is: {fun_jit}")

    def do_export(*args_specs, **kwargs_specs) -> Exported:
        chosen = tuple(platforms) if platforms is not None else (default_export_platform(),)
        scope = _symbolic_scope(fun_jit, args_specs, kwargs_specs)
        if scope is None:
            traced = fun_jit.trace(*args_specs, **kwargs_specs)
            template = traced.jaxpr
        else:
            traced, template = _trace_symbolic(fun_jit, args_specs, kwargs_specs, scope)
        return _make_exported(traced, template, chosen, tuple(disabled_checks), symbolic=scope is not None)

    return do_export


def _fun_name(fun_jit) -> str:
    return getattr(fun_jit, "__name__", None) or getattr(fun_jit, "_name", "<unnamed function>")


def _symbolic_scope(fun_jit, args, kwargs):
    """The one SymbolicScope of the symbolic dimensions in the specs (JAX's scope check), or None."""
    scope, where = None, None
    for path, leaf in pytree.tree_flatten_with_path((args, kwargs))[0]:
        for d in getattr(leaf, "shape", ()) or ():
            if not is_symbolic_dim(d):
                continue
            if scope is None:
                scope, where = d.scope, path
                continue
            scope._check_same_scope(
                d,
                when=f"when exporting {_fun_name(fun_jit)}",
                self_descr=f"current (from {args_kwargs_path_to_str(where)}) ",
                other_descr=args_kwargs_path_to_str(path),
            )
    return scope


def _trace_symbolic(fun_jit, args, kwargs, scope):
    """Traces at sampled sizes and unifies the jaxprs into a template (templates.py), checked
    against one more trace; a program whose structure depends on the sizes is an error."""
    leaves, treedef = pytree.tree_flatten((args, kwargs))
    symbolic = [any(is_symbolic_dim(d) for d in (getattr(x, "shape", ()) or ())) for x in leaves]
    names = sorted(
        set().union(
            *(d._get_vars() for x, s in zip(leaves, symbolic) if s for d in x.shape if is_symbolic_dim(d))
        )
    )

    def dims(x, env):
        return tuple(d._evaluate(env) if is_symbolic_dim(d) else d for d in x.shape)

    def trace_at(env):
        concrete = [
            ShapeDtypeStruct(dims(x, env), x.dtype, weak_type=x.weak_type) if s else x
            for x, s in zip(leaves, symbolic)
        ]
        a, k = treedef.unflatten(concrete)
        return fun_jit.trace(*a, **k)

    def valid(env):
        return all(d >= 1 for x, s in zip(leaves, symbolic) if s for d in dims(x, env))

    sampling = templates.Sampling(names, scope, valid)
    traces = [trace_at(env) for env in sampling.points]
    try:
        if any(t.out_tree != traces[0].out_tree for t in traces):
            raise templates.StructureMismatch(["results"], "the structure of the results differs")
        template = templates.Unifier(len(traces), sampling.fit).unify([t.jaxpr for t in traces], [])
        for env in sampling.checks:
            check = trace_at(env)
            if check.out_tree != traces[0].out_tree:
                raise templates.StructureMismatch(["results"], "the structure of the results differs")
            instance = templates.instantiate(template, env, {})
            templates.Unifier(2, templates.mismatch_only).unify([instance, check.jaxpr], [])
    except templates.StructureMismatch as e:
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension comparison is inconclusive when exporting {_fun_name(fun_jit)}: the program "
            f"traced at {sampling.points[0]} and at other sizes differs in more than its shapes: "
            f"{e.detail} (at {e.where}). morphax exports symbolic shapes by tracing the function at several "
            "sizes, so its jaxpr may depend on the dimension variables only through shapes, parameters and "
            "literals that are polynomials in them with integer coefficients (no Python branch on a size)."
        ) from None
    return traces[0], template


def _kept_vars(closed, symbolic: bool) -> tuple:
    jaxpr = closed.jaxpr
    if symbolic:
        return tuple(range(len(jaxpr.invars)))  # as JAX: every argument kept under shape polymorphism
    used = {id(v) for e in jaxpr.eqns for v in e.invars} | {id(v) for v in jaxpr.outvars}
    return tuple(i for i, v in enumerate(jaxpr.invars) if id(v) in used)


def _module_text(closed, kept, fun_name, out_tree, symbolic):
    """The StableHLO module of `closed` over the kept arguments, with JAX's result names and module
    attributes; or (b"", why) when a primitive has no StableHLO rule."""
    from morphax._src.compiler.backends.xla.lowering import lower_module, result_names
    from morphax._src.compiler.backends.xla.mlir_text import LoweringError

    jaxpr = closed.jaxpr
    if len(kept) != len(jaxpr.invars):
        pruned = Jaxpr(
            jaxpr.constvars, [jaxpr.invars[i] for i in kept], jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info
        )
        closed = ClosedJaxpr(pruned, closed.consts)
    try:
        text = lower_module(closed, f"jit_{fun_name}", result_names(out_tree))
    except LoweringError as e:
        return b"", str(e)
    # NB: JAX serializes VHLO bytecode; morphax keeps the MLIR text (and the jaxpr, which runs).
    flag = "true" if symbolic else "false"
    text = text.replace("attributes {", f"attributes {{jax.uses_shape_polymorphism = {flag}, ", 1)
    return text.encode("utf-8"), None


def _make_exported(traced, template, platforms, disabled_checks, symbolic) -> Exported:
    in_avals, out_avals = tuple(template.in_avals), tuple(template.out_avals)
    if symbolic:
        calling.solve_dim_vars(in_avals, traced.in_tree, None)  # JAX's error when unsolvable
    pruned = dce(traced.jaxpr)  # the module holds what the results need, as JAX's lowering does
    kept = _kept_vars(pruned, symbolic)
    module, error = _module_text(pruned, kept, traced.fun_name, traced.out_tree, symbolic)
    effects = sorted(template.jaxpr.effects, key=lambda e: type(e).__name__)
    ordered = tuple(e for e in effects if isinstance(e, _effects.OrderedDebugEffect))
    return Exported.unsharded(
        fun_name=traced.fun_name,
        in_tree=traced.in_tree,
        in_avals=in_avals,
        out_tree=traced.out_tree,
        out_avals=out_avals,
        nr_devices=1,
        platforms=platforms,
        ordered_effects=ordered,
        unordered_effects=tuple(e for e in effects if e not in ordered),
        disabled_safety_checks=disabled_checks,
        mlir_module_serialized=module,
        calling_convention_version=CALLING_CONVENTION_VERSION,
        module_kept_var_idx=kept,
        uses_global_constants=symbolic,
        _get_vjp=_export_vjp,
        _jaxpr=template,
        _backend=traced.backend,
        _lowering_error=error,
    )


def _spec(aval):
    if any(is_symbolic_dim(d) for d in aval.shape):
        return SymbolicShapeDtypeStruct(aval.shape, aval.dtype)
    return ShapeDtypeStruct(aval.shape, aval.dtype)


def _export_vjp(primal: Exported) -> Exported:
    """JAX's `_get_vjp_fun`: the VJP of the kept jaxpr as a flat function of the primal
    arguments and the output cotangents, exported like the primal (same platforms, checks and
    symbolic dimensions)."""
    from morphax._src.api.autodiff import vjp
    from morphax._src.api.jit import jit

    n = len(primal.in_avals)

    def fun_vjp_jax(*args_and_out_cts_flat_jax):
        args, cts = args_and_out_cts_flat_jax[:n], args_and_out_cts_flat_jax[n:]
        closed = primal._jaxpr_for_shapes([tuple(a.shape) for a in args])
        _, pullback = vjp(jaxpr_as_fun(closed), *args)
        return pullback(list(cts))

    vjp_in_avals = [*primal.in_avals, *(a.to_tangent_aval() for a in primal.out_avals)]
    jitted = jit(fun_vjp_jax, backend=primal._backend) if primal._backend else jit(fun_vjp_jax)
    return export(jitted, platforms=primal.platforms, disabled_checks=primal.disabled_safety_checks)(
        *[_spec(a) for a in vjp_in_avals]
    )
