"""`Primitive`: the unit every transformation understands, with one slot per rule.

A primitive is declared once, in one block under `_src/prims/`, which fills the slots below.
`bind` hands the primitive to the current trace; this module knows no trace types.
"""

from __future__ import annotations

import enum

from morphax._src.core import trace as _trace

# Every primitive ever created, by name: the test matrix and the docs enumerate this.
registry: dict[str, Primitive] = {}


class Kind(enum.Enum):
    """What a compiler may do with an equation, read per node without asking the primitive's name."""

    # Output element i depends only on the operands' elements at the same (broadcast) index i
    # (iota has no operands, threefry2x32 two results): fuse freely into a loop nest; `kernel_op`
    # names the scalar operation.
    ELEMENTWISE = "elementwise"
    # Combines operand elements along `axes` (argmax/argmin: one axis): the loop nest's inner
    # reduction loop, with elementwise producers fused in; `kernel_op` names the combiner.
    REDUCE = "reduce"
    # Pure data movement: each output element is one operand element; with an `index_map` it is
    # a load at a computed index inside a fused kernel, without one it stays a copy kernel.
    LAYOUT = "layout"
    # Loads at indices read from another operand (data-dependent addresses): a loop over the
    # output with indirect loads; a fusion producer, but its index operand must be materialized.
    GATHER = "gather"
    # Writes (or combines) updates into a copy of the operand at data-dependent indices: the
    # output is materialized and the writes run in order; an end of fusion.
    SCATTER = "scatter"
    # A library call or the primitive's reference (BLAS, LAPACK, FFT, sort, windows, collectives):
    # a fusion boundary, run as one node; its operands and results are materialized buffers.
    OPAQUE = "opaque"
    # Evaluates a jaxpr held in its params on its operands (jit, checkpoint, custom-rule calls):
    # the compiler may inline it or compile it as a sub-program.
    CALL = "call"
    # Control flow over jaxprs in its params (cond, while, scan, ...): a loop/branch node whose
    # bodies are compiled as sub-programs.
    LOOP = "loop"
    # Talks to the host or holds state (callbacks, stateful RNG, effect sinks): never fused,
    # reordered or merged; run in program order. Whether it may be dropped when unused is
    # `has_side_effects`, not the kind.
    EFFECT = "effect"


class Primitive:
    """A named operation with static params and its rules.

    Slots (all optional except ``impl`` and ``abstract_eval``):
      impl(*np_arrays, **params)       the NumPy reference: semantics, eager path, test oracle
      abstract_eval(*avals, **params)  output aval(s); raises a clear error on bad input
      jvp, transpose, batch, lower     filled by the autodiff, vmap and compiler issues
      test_spec                        domain/dtypes/special values for the generated tests
      kind, kernel_op, index_map       kernel metadata the compiler reads (see `Kind`)
      param_defaults                   params applied in `bind` when a binder leaves them out
    """

    def __init__(self, name: str, *, multiple_results: bool = False, register: bool = True):
        # register=False: a primitive defined by user code (morphax.extend.core.Primitive), which
        # may reuse a name as JAX allows and stays out of the catalogue the tests enumerate.
        if register and name in registry:
            raise ValueError(f"primitive {name!r} is defined twice; each primitive lives in one block")
        self.name = name
        self.multiple_results = multiple_results
        self.impl = None
        self.abstract_eval = None
        self.jvp = None
        self.transpose = None
        self.batch = None
        self.partial_eval = None
        # Collectives name the param holding the vmap/pmap axis names they act on.
        self.named_axes_param = None  # higher-order primitives: split known/unknown work (see pjit)
        self.lower = None
        # The StableHLO lowering (the xla backend): ``stablehlo(ctx, *operands, **params) ->
        # [Value]``, writing operations through `ctx` (compiler/backends/xla/lowering.py); the
        # makers of common rules are in prims/_stablehlo.py.
        self.stablehlo = None
        self.test_spec = None
        # Higher-order primitives (jit calls, control flow) carry jaxprs in their params.
        self.higher_order = False
        # Call-like primitives (jit, checkpoint, custom-rule calls) whose evaluation is exactly
        # their jaxpr on their operands name the param holding it; compilers inline or call it.
        self.call_jaxpr_param: str | None = None
        # A call whose rules beyond its jaxpr only say how to differentiate it (custom_jvp_call):
        # partial evaluation with an unknown operand evaluates its jaxpr (`call_jaxpr_param`) on
        # the partial-evaluation trace instead of staging the equation, as JAX inlines such a call
        # into the linear part of a linearization, where its body is linear and transposes.
        self.inline_when_unknown = False
        # A call the compiler must keep a call (not inline into its caller): checkpoint, whose
        # recomputation the caller's CSE would otherwise merge with the forward pass.
        self.keeps_call_boundary = False
        # A primitive the compiler replaces by a jaxpr, as JAX lowers a primitive whose lowering is
        # a Python function by tracing it (user primitives with a `register_lowering` rule):
        # ``lowered_jaxpr(*in_avals, **params) -> ClosedJaxpr | None`` (None: keep the equation).
        self.lowered_jaxpr = None
        # Control flow (Kind.LOOP): `loop_form(params) -> core.loop_form.LoopForm | None`, how a
        # compiler may run the equation as a native loop or branch over its bodies.
        self.loop_form = None
        # A plain call (its outputs are those of a jaxpr applied to its operands, as pjit and
        # remat): the param holding that ClosedJaxpr. DCE drops the outputs nobody reads and the
        # operands the reduced jaxpr no longer needs; forwarding sees outputs that are operands.
        self.call_jaxpr_param = None
        # A call whose jaxpr, evaluated eagerly, is compiled and run on the device stream (pjit):
        # the eager trace (runtime/eager.py) does it, so `impl` can stay an interpreter.
        self.eager_compiled = False
        # An elementwise primitive whose result, for ready NumPy operands of one dtype and shape
        # and its params left at their defaults, is this NumPy callable's (np.add, np.sin): the
        # eager operators' shortcut (numpy/array_methods.py, numpy/ufuncs.py) calls it directly.
        self.ready_impl = None
        # Other higher-order primitives' dead-code rule: `dce_rule(used_outputs, eqn) ->
        # (used_inputs, new_eqn or None)` (passes/dce.py).
        self.dce_rule = None
        # One-operand primitives that can return their operand unchanged (a reshape to the same
        # shape, x ** 1): ``is_identity(in_aval, **params) -> bool``. Forwarding (passes/) then
        # lets readers of the output read the operand.
        self.is_identity = None
        # Must run even when its outputs are unused, and never be merged with an identical call.
        self.has_side_effects = False
        # The JVP trace hands a primal that is a Python scalar (an argument of jvp/grad passed
        # through unchanged, as JAX does) to this primitive's JVP rule as it is. Built-in rules
        # compute on arrays, so for them it is made a weakly typed array first; a user
        # primitive's rule (JAX's convention) gets the scalar, as in JAX.
        self.jvp_takes_python_scalars = False
        # The effects (core/effects.py) an equation of it has: ``effect_rule(**params) -> set``.
        self.effect_rule = None
        # Runs user Python on the host (callbacks): the runtime runs a program containing it on
        # the calling thread, never on a device stream, so a blocking callback stalls only its
        # own computation, and its exceptions are raised at the call as in JAX.
        self.calls_host = False
        # `exception -> exception`: what a compiled program raises when this primitive raised
        # while it ran (host callbacks: JAX's JaxRuntimeError carrying the callback's traceback).
        # None: the exception itself.
        self.host_error = None
        # Params left out of the printed jaxpr while they hold these values (JAX hides e.g.
        # ``accuracy=None`` on transcendental functions).
        self.print_hidden_defaults: dict = {}
        # The rest of how an equation prints (core/jaxpr.py), for JAX's per-primitive printing
        # rules: ``pp_params(eqn, params) -> params`` rewrites what is printed of the params,
        # ``pp_leading_params`` go first (``name=``), ``pp_shares_names`` names a call's jaxpr
        # variables after the equation's (jit), and ``pp_rule(eqn, names) -> str`` replaces the
        # whole equation (the ref operations' ``a[i] <- b``).
        self.pp_params = None
        self.pp_leading_params: tuple = ()
        self.pp_shares_names = False
        self.pp_rule = None
        # The API a user calls to bind it, where that differs from its name (``checkpoint`` for
        # remat2), for error messages.
        self.api_name: str | None = None
        # Kernel metadata, the only thing compilers read (never the name; see DESIGN.md, "The
        # backend seam"). Every registered primitive declares a kind; a test checks it.
        self.kind: Kind | None = None
        # The compiler's name for the operation (a key of compiler/kernel_ops.py): the primitive's
        # own name for ELEMENTWISE and REDUCE primitives ("sin", "select_n", "reduce_sum",
        # "argmax"), None for every other kind.
        self.kernel_op: str | None = None
        # The rare primitive whose kind depends on its operands or params says so here:
        # ``kind_rule(*in_avals, **params) -> Kind``, read through `kind_of`; `kind` is then the
        # kind of its common case (bitcast_convert_type: ELEMENTWISE unless the width changes).
        self.kind_rule = None
        # LAYOUT primitives whose every output element is one operand element at an affine-ish
        # index: ``index_map(out_index, *in_avals, **params) -> [operand index tuple, ...]``, each
        # tuple of `index_expr.IndexExpr` over the output index expressions (one per operand).
        self.index_map = None
        # A non-elementwise primitive some of whose equations are one elementwise op on operands
        # read through index maps (dot_general without contracting dims is a broadcast multiply):
        # ``elementwise_form(*in_avals, **params) -> (kernel_op, [index_map per operand]) | None``,
        # each index_map(out_index) -> operand index tuple. The compiler fuses such equations.
        self.elementwise_form = None
        # A primitive whose result, permuted by a transpose, is the same primitive on reordered
        # operands with other params (a matmul's transpose is the matmul of its swapped
        # operands): ``permuted_form(perm, *in_avals, **params) -> (operand order, params) | None``.
        # The compiler folds such transposes instead of copying the result.
        self.permuted_form = None
        # Likewise for an operand: ``permuted_operand_form(k, perm, *in_avals, **params) -> params
        # | None`` gives the params under which the primitive reads operand k's untransposed base
        # (x.T @ y is a matmul that reads x transposed).
        self.permuted_operand_form = None
        # LAYOUT primitives whose output element comes from one of several operands, or from a
        # fallback, depending on where it is (pad, concatenate): ``piecewise_map(out_index,
        # *in_avals, **params) -> (pieces, default)``. Each piece is ``(operand, guard, index)``:
        # inside `guard` (a tuple of ``(expr, lo, hi, step)``: ``lo <= expr < hi`` and
        # ``(expr - lo) % step == 0``) the element is that operand at `index`; `default` is
        # ``(operand, index)`` read elsewhere, or None where the pieces cover every element.
        self.piecewise_map = None
        # LAYOUT primitives reading one operand at an offset given at run time by scalar operands
        # (dynamic_slice): ``dynamic_index_map(*in_avals, **params) -> (source operand,
        # [(start operand, lo, hi), ...], index_fn)``. Each start is clamped into [lo, hi];
        # ``index_fn(out_index, starts)`` is the source index, `starts` IndexExprs of the clamped
        # values.
        self.dynamic_index_map = None
        # What an opaque primitive costs, for Compiled.cost_analysis(): ``cost_rule(*in_avals,
        # **params) -> {"flops": n, ...}`` (elementwise and reduction costs follow from `kind`).
        self.cost_rule = None
        # Canonical values of params that some binders leave out, filled in by `bind`, so equal
        # programs have equal params (CSE and compile caches compare params).
        self.param_defaults: dict = {}
        if register:
            registry[name] = self

    def bind(self, *args, **params):
        if self.param_defaults:  # the hot path pays one attribute check
            params = {**self.param_defaults, **params}
        return _trace.ctx.trace.process_primitive(self, args, params)

    def kind_of(self, *in_avals, **params) -> Kind | None:
        """The kind of one equation of this primitive: `kind`, refined by `kind_rule` if any."""
        if self.kind_rule is None:
            return self.kind
        return self.kind_rule(*in_avals, **params)

    def get_bind_params(self, params):
        """The params to rebind an equation of this primitive with (JAX's interface for
        interpreters that re-evaluate a jaxpr: ``prim.bind(*args, **get_bind_params(params))``).
        morphax binds with the params as recorded, jaxprs included."""
        return params

    def def_impl(self, fn):
        self.impl = fn
        return fn

    def def_abstract_eval(self, fn):
        self.abstract_eval = fn
        return fn

    def __repr__(self):
        return self.name

    def __reduce__(self):
        return (_lookup, (self.name,))


def _lookup(name):
    return registry[name]
