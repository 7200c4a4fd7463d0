"""Primitives defined by user code with JAX's conventions, and JAX's rule tables.

`Primitive` is what `jax.extend.core.Primitive` gives a library: ``def_impl`` takes a function
of arrays (it may call `jax.numpy`), ``def_abstract_eval`` a function of `ShapedArray`s. Such a
primitive is a morphax `core.primitive.Primitive` (kind OPAQUE, kept out of the built-in
catalogue), so eager evaluation, jit, grad and vmap treat it like any other: its morphax ``impl``
(NumPy in, NumPy out) wraps the operands as arrays and runs the user's function on the eager
trace, and its ``abstract_eval`` turns whatever has a shape and a dtype into a `ShapedArray`.

The tables JAX libraries write (`ad.primitive_jvps`, `ad.primitive_transposes`,
`batching.primitive_batchers`, `batching.axis_primitive_batchers`,
`batching.fancy_primitive_batchers`) are views of the primitives' slots: storing a rule adapts
it to morphax's convention and fills the slot, so the rule works for built-in primitives too.
`register_lowering` takes a Python lowering (`lower_fun(f)`, or a rule ``rule(ctx, *args,
**params)`` computing on arrays) and runs it as the primitive's implementation.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping

import numpy as np

from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import Zero, instantiate, is_undefined_primal, is_zero, tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import AxisData
from morphax._src.core.primitive import Kind
from morphax._src.core.primitive import Primitive as _CorePrimitive
from morphax._src.core.trace import Tracer
from morphax._src.core.values import is_concrete_array, make_array
from morphax._src.transforms import staging

logger = logging.getLogger("morphax")


def to_shaped_array(x, where: str) -> ShapedArray:
    """`x` as a ShapedArray: itself, or anything with `shape` and `dtype` (a ShapeDtypeStruct)."""
    if isinstance(x, ShapedArray):
        return x
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(
            f"{where} returned {x!r} of type {type(x).__name__}; an abstract evaluation rule must "
            "return a ShapedArray (jax.core.ShapedArray(shape, dtype)) or, for a primitive with "
            "multiple_results=True, a sequence of them."
        )
    return ShapedArray(tuple(shape), np.dtype(dtype), bool(getattr(x, "weak_type", False)))


class Primitive(_CorePrimitive):
    """A primitive defined outside morphax, with JAX's conventions (`jax.extend.core.Primitive`).

    ``p = Primitive("name"); p.multiple_results = True`` (optional), then ``p.def_impl(f)``,
    ``p.def_abstract_eval(g)`` and rules in the `ad` / `batching` tables; ``p.bind(*args,
    **params)`` applies it under any transformation.
    """

    def __init__(self, name: str):
        # NB: JAX lets two primitives share a name; so do these (they stay out of the registry).
        super().__init__(name, register=False)
        self.kind = Kind.OPAQUE
        self.jvp_takes_python_scalars = True  # JAX passes primals as they are
        self._user_impl = None
        self._user_abstract_eval = None
        self._effectful = False
        self._lowering = None
        self.impl = self._run_impl
        self.abstract_eval = self._eval_abstract
        self.lowered_jaxpr = self._lowered_jaxpr

    # ------------------------------------------------------------------------- JAX's definers

    def def_impl(self, impl):
        self._user_impl = impl
        return impl

    def def_abstract_eval(self, abstract_eval):
        self._user_abstract_eval = abstract_eval
        self._effectful = False
        return abstract_eval

    def def_effectful_abstract_eval(self, effectful_abstract_eval):
        """A rule returning ``(avals, effects)``; a primitive with effects is never dropped or
        merged by the compiler's passes."""
        self._user_abstract_eval = effectful_abstract_eval
        self._effectful = True
        return effectful_abstract_eval

    def def_bind_with_continuation(self, bind_with_continuation):  # pragma: no cover - JAX only
        raise NotImplementedError(
            f"Primitive {self.name!r}: def_bind_with_continuation is not supported by morphax"
        )

    def abstract_eval_rule(self, *avals, **params):
        """The user's abstract evaluation, its results as ShapedArrays (JAX: `abstract_eval`)."""
        return self._eval_abstract(*avals, **params)

    def bind_with_trace(self, trace, args, params):
        with _trace.set_current_trace(trace):
            return self.bind(*args, **params)

    def is_high(self, *avals, **params) -> bool:
        return False

    # --------------------------------------------------------------------- morphax's slots

    def _eval_abstract(self, *avals, **params):
        rule = self._user_abstract_eval
        # NB: morphax's eager evaluation asks for the result types too, so an abstract evaluation
        # rule is needed even without a transformation (JAX needs one only when tracing).
        if rule is None:
            raise NotImplementedError(
                f"Abstract evaluation for '{self.name}' not implemented: call "
                f"{self.name}_p.def_abstract_eval(rule) before binding it under a transformation."
            )
        out = rule(*avals, **params)
        if self._effectful:
            out, effects = out
            if effects:
                # An effectful primitive runs in program order and is never dropped or merged.
                self.kind = Kind.EFFECT
                self.has_side_effects = True
                found = frozenset(effects)
                self.effect_rule = lambda **_: set(found)
        where = f"the abstract evaluation rule of primitive '{self.name}'"
        if self.multiple_results:
            return [to_shaped_array(o, where) for o in out]
        return to_shaped_array(out, where)

    def _run_impl(self, *vals, **params):
        """morphax's impl: NumPy operands in, NumPy results out, the user's function between.
        Called by user code with arrays or tracers (as JAX's `prim.impl`), it is the user's
        function itself (equinox evaluates jaxprs so)."""
        fn = self._user_impl
        if fn is None and self._lowering is not None:
            fn = self._lowering_as_impl(vals, params)
        if fn is None:
            raise NotImplementedError(
                f"Evaluation rule for '{self.name}' not implemented: call {self.name}_p.def_impl(f) "
                "or register a lowering with morphax.interpreters.mlir.register_lowering."
            )
        if any(isinstance(v, Tracer) or is_concrete_array(v) for v in vals):
            return fn(*vals, **params)
        with _trace.set_current_trace(_trace.base_trace()):
            args = [make_array(v) if isinstance(v, (np.ndarray, np.generic)) else v for v in vals]
            out = fn(*args, **params)
        if self.multiple_results:
            return [np.asarray(o) for o in out]
        return np.asarray(out)

    def _lowering_as_impl(self, vals, params):
        lowering = self._lowering
        if isinstance(lowering, LoweredFun):
            return lowering.as_impl(self.multiple_results)
        avals_in = [v if isinstance(v, ShapedArray) else get_aval(v) for v in vals]
        out = self._eval_abstract(*avals_in, **params)
        ctx = LoweringRuleContext(self, avals_in, out if self.multiple_results else [out])
        if self.multiple_results:
            return lambda *args, **kw: lowering(ctx, *args, **kw)
        return lambda *args, **kw: lowering(ctx, *args, **kw)[0]  # rules return a list of results

    def _lowered_jaxpr(self, *avals, **params):
        """The registered lowering traced on `avals` (what JAX compiles for an equation of this
        primitive), for the compiler to inline; None without a lowering, or when tracing it
        fails (the equation then runs its implementation on the host, as before)."""
        if self._lowering is None or self.has_side_effects:
            return None
        multiple = self.multiple_results
        try:
            fn = self._lowering_as_impl(avals, params)

            def flat(*args):
                out = fn(*args, **params)
                return list(out) if multiple else [out]

            return staging.trace_to_jaxpr(flat, list(avals))
        except Exception as e:  # noqa: BLE001 - any failure keeps the host implementation
            logger.debug("morphax: the lowering of %r did not trace (%s); it runs on the host", self.name, e)
            return None


class CallPrimitive(Primitive):
    """A primitive whose `bind` takes a function first (JAX's call primitives):
    ``p.bind(fun, *args, **params)`` applies `fun` (a `WrappedFun` or a callable returning a list)
    to `args` under the current transformations."""

    def __init__(self, name: str):
        super().__init__(name)
        self.multiple_results = True

    def bind(self, fun, *args, **params):
        # NB: JAX records a call equation holding `fun`'s jaxpr; morphax inlines the call (the
        # values, and what every transformation computes from them, are the same).
        return call_impl(fun, *args, **params)


def call_impl(fun, *args, **params):
    """``fun(*args)`` as a list, for a `WrappedFun` or a plain callable."""
    call = getattr(fun, "call_wrapped", fun)
    return list(call(*args))


# ----------------------------------------------------------------------------------- lowerings


class LoweredFun:
    """`mlir.lower_fun(fun, multiple_results)`: a lowering that is `fun` applied to the operands."""

    def __init__(self, fun, multiple_results: bool):
        self.fun = fun
        self.multiple_results = multiple_results

    def as_impl(self, prim_multiple_results: bool):
        fun, multiple = self.fun, self.multiple_results
        if multiple == prim_multiple_results:
            return fun
        if multiple:  # a one-result primitive lowered by a function returning a list of one
            return lambda *args, **params: fun(*args, **params)[0]
        return lambda *args, **params: [fun(*args, **params)]

    def __call__(self, ctx, *args, **params):
        out = self.fun(*args, **params)
        return out if self.multiple_results else [out]


class ModuleContext:
    """``ctx.module_context`` of a lowering rule: what the rule hands the program to keep alive
    (JAX's `add_keepalive`, which equinox's noinline calls), held here with the context."""

    def __init__(self):
        self.keepalives = []

    def add_keepalive(self, keepalive):
        self.keepalives.append(keepalive)


class LoweringRuleContext:
    """What a Python lowering rule receives first: the primitive and its operand/result types."""

    def __init__(self, primitive, avals_in, avals_out):
        self.primitive = primitive
        self.avals_in = list(avals_in)
        self.avals_out = list(avals_out)
        self.module_context = ModuleContext()
        self.tokens_in = None
        self.tokens_out = None

    def set_tokens_out(self, tokens_out):
        self.tokens_out = tokens_out


def lower_fun(fun, multiple_results: bool = True):
    """A lowering computing the primitive as `fun(*operands, **params)` with morphax operations."""
    return LoweredFun(fun, multiple_results)


def register_lowering(prim, rule, platform: str | None = None, **_):
    """Run `rule` as the implementation of `prim` (a primitive made with `Primitive` here).

    `rule` is `lower_fun(f)` (then `f(*operands, **params)` computes the results) or a function
    ``rule(ctx, *operands, **params)`` returning the results (a list of them), with operands as
    arrays. As on JAX's CPU backend, a lowering registered for another platform is not used.
    """
    if not isinstance(prim, Primitive):
        # NB: JAX lets a lowering replace a built-in primitive's; morphax compiles its own
        # primitives from their kernel metadata, so only user primitives take Python lowerings.
        raise NotImplementedError(
            f"register_lowering({prim!r}, ...): morphax compiles its built-in primitives itself; a "
            "Python lowering can be registered only for a primitive made with "
            "morphax.extend.core.Primitive."
        )
    if not callable(rule):
        raise TypeError(f"register_lowering({prim.name!r}, rule): rule must be callable, got {rule!r}")
    if platform not in (None, "cpu"):
        return rule  # a lowering for another platform (cuda, rocm, tpu) never runs on morphax's CPU
    prim._lowering = rule
    return rule


# ----------------------------------------------------------------------------------- rule tables


class _RuleTable(MutableMapping):
    """A dict-like view of one rule slot of every primitive: ``table[prim] = rule`` adapts a
    JAX-convention rule and stores it in the slot; reading gives back the rule as stored (or,
    for a built-in primitive, its own rule when the conventions agree)."""

    def __init__(self, slot: str, adapt, readable: bool):
        self._slot = slot
        self._adapt = adapt
        self._readable = readable  # built-in rules already follow JAX's convention for this slot
        self._rules: dict = {}

    def __setitem__(self, prim, rule):
        if not isinstance(prim, _CorePrimitive):
            raise TypeError(f"rule tables are keyed by primitives, got {prim!r}")
        self._rules[prim] = rule
        setattr(prim, self._slot, self._adapt(prim, rule))

    def __getitem__(self, prim):
        rule = self._rules.get(prim)
        if rule is not None:
            return rule
        if self._readable and isinstance(prim, _CorePrimitive):
            own = getattr(prim, self._slot, None)
            if own is not None:
                return own
        raise KeyError(prim)

    def __delitem__(self, prim):
        del self._rules[prim]
        setattr(prim, self._slot, None)

    def __contains__(self, prim):
        try:
            self[prim]
        except KeyError:
            return False
        return True

    def __iter__(self):
        return iter(list(self._rules))

    def __len__(self):
        return len(self._rules)

    def __repr__(self):
        return f"<rule table {self._slot!r}: {len(self._rules)} user rules>"


def _adapt_jvp(prim, rule):
    """JAX's JVP convention is morphax's; the outputs are normalised (lists, Zero for None)."""

    def jvp(primals, tangents, **params):
        out, out_t = rule(tuple(primals), tuple(tangents), **params)  # tuples, as JAX passes them
        if not prim.multiple_results:
            return out, _tangent_or_zero(out, out_t)
        out = list(out)
        return out, [_tangent_or_zero(o, t) for o, t in zip(out, out_t)]

    return jvp


def _tangent_or_zero(primal, t):
    if t is None:
        return Zero(tangent_aval(get_aval(primal)))
    return t


def _adapt_transpose(prim, rule):
    def transpose(cts, *args, **params):
        out = rule(cts, *args, **params)
        return list(out)

    return transpose


def _adapt_batcher(prim, rule):
    """`rule(vals, dims, **params) -> (out, out_dims)`: JAX's `primitive_batchers` (operands and
    their batch dims come as tuples, as JAX passes them)."""

    def batch(vals, dims, *, axis_data, **params):
        return _batched_result(prim, rule(tuple(vals), tuple(dims), **params))

    return batch


def _adapt_axis_batcher(prim, rule):
    """`rule(axis_size, axis_name, trace_type, vals, dims, **params)`: `axis_primitive_batchers`."""

    def batch(vals, dims, *, axis_data, **params):
        return _batched_result(
            prim, rule(axis_data.size, axis_data.name, None, tuple(vals), tuple(dims), **params)
        )

    return batch


def _adapt_fancy_batcher(prim, rule):
    """`rule(axis_data, vals, dims, **params)`: `fancy_primitive_batchers`."""

    def batch(vals, dims, *, axis_data, **params):
        return _batched_result(prim, rule(axis_data, tuple(vals), tuple(dims), **params))

    return batch


def _batched_result(prim, result):
    out, out_dims = result
    if prim.multiple_results:
        out = list(out)
        if out_dims is None or isinstance(out_dims, int):  # one dim for every output
            out_dims = [out_dims] * len(out)
        return out, list(out_dims)
    return out, out_dims


primitive_jvps = _RuleTable("jvp", _adapt_jvp, readable=True)
# ``rule(used_outputs, eqn) -> (used_inputs, new_eqn or None)``: morphax's dead-code convention.
dce_rules = _RuleTable("dce_rule", lambda prim, rule: rule, readable=True)
primitive_transposes = _RuleTable("transpose", _adapt_transpose, readable=True)
# The batcher tables are write-mostly in JAX; reading one gives back only the rules stored here,
# since morphax's own batching rules take the axis data as a keyword.
primitive_batchers = _RuleTable("batch", _adapt_batcher, readable=False)
axis_primitive_batchers = _RuleTable("batch", _adapt_axis_batcher, readable=False)
fancy_primitive_batchers = _RuleTable("batch", _adapt_fancy_batcher, readable=False)


# ------------------------------------------------------------------- JAX's rule-making helpers


def defjvp(prim, *jvprules):
    """One rule per operand, ``rule(g, *primals, **params)`` -> that operand's tangent
    contribution (None: the output does not depend on it); contributions are summed."""
    return _def_partials_jvp(prim, jvprules, with_ans=False)


def defjvp2(prim, *jvprules):
    """As `defjvp`, with the primal output first: ``rule(g, ans, *primals, **params)``."""
    return _def_partials_jvp(prim, jvprules, with_ans=True)


def _def_partials_jvp(prim, jvprules, with_ans):
    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        acc = None
        for rule, t in zip(jvprules, tangents):
            if rule is None or is_zero(t):
                continue
            contrib = rule(t, ans, *primals, **params) if with_ans else rule(t, *primals, **params)
            acc = contrib if acc is None else add_tangents(acc, contrib)
        if acc is None:
            if prim.multiple_results:
                return ans, [Zero(tangent_aval(get_aval(a))) for a in ans]
            return ans, Zero(tangent_aval(get_aval(ans)))
        return ans, acc

    primitive_jvps[prim] = jvp
    return jvp


def add_tangents(a, b):
    """The sum of two tangents (lists of them for several results); symbolic zeros cost nothing."""
    if isinstance(a, (list, tuple)):
        return [add_tangents(x, y) for x, y in zip(a, b)]
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    return a + b


def deflinear(prim, transpose_rule):
    """A primitive linear in all its operands; ``transpose_rule(ct, **params)`` gives the list of
    operand cotangents."""
    return _def_linear(prim, lambda ct, *args, **params: transpose_rule(ct, **params))


def deflinear2(prim, transpose_rule):
    """As `deflinear` with the operands: ``transpose_rule(ct, *args, **params)``."""
    return _def_linear(prim, transpose_rule)


def _def_linear(prim, transpose_rule):
    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if all(is_zero(t) for t in tangents):
            if prim.multiple_results:
                return ans, [Zero(tangent_aval(get_aval(a))) for a in ans]
            return ans, Zero(tangent_aval(get_aval(ans)))
        return ans, prim.bind(*[instantiate(t) for t in tangents], **params)

    def transpose(ct, *args, **params):
        if (not isinstance(ct, list) and is_zero(ct)) or (
            isinstance(ct, list) and all(is_zero(c) for c in ct)
        ):
            return [None] * len(args)
        return transpose_rule(ct, *args, **params)

    primitive_jvps[prim] = jvp
    primitive_transposes[prim] = transpose
    return jvp


def defbilinear(prim, lhs_rule, rhs_rule):
    """A primitive linear in each of its two operands separately: its JVP binds it on one tangent
    and the other primal; ``lhs_rule(ct, x, y, **params)`` / ``rhs_rule`` give the cotangent of
    whichever operand is the linear one (an `UndefinedPrimal`)."""

    def jvp(primals, tangents, **params):
        x, y = primals
        tx, ty = tangents
        ans = prim.bind(x, y, **params)
        out = Zero(tangent_aval(get_aval(ans)))
        if not is_zero(tx):
            out = add_tangents(out, prim.bind(tx, y, **params))
        if not is_zero(ty):
            out = add_tangents(out, prim.bind(x, ty, **params))
        return ans, out

    def transpose(ct, x, y, **params):
        if is_zero(ct):
            return [None, None]
        if is_undefined_primal(x):
            return [lhs_rule(ct, x, y, **params), None]
        return [None, rhs_rule(ct, x, y, **params)]

    primitive_jvps[prim] = jvp
    primitive_transposes[prim] = transpose
    return jvp


def get_primitive_transpose(prim):
    try:
        return primitive_transposes[prim]
    except KeyError as err:
        raise NotImplementedError(
            f"Transpose rule (for reverse-mode differentiation) for '{prim}' not implemented"
        ) from err


def vectorized_batcher(prim, axis_data, vals, dims, **params):
    """Batching rule of a shape-preserving one-operand primitive (JAX's `defvectorized`)."""
    ((x,), (d,)) = vals, dims
    return prim.bind(x, **params), d


def defvectorized(prim):
    fancy_primitive_batchers[prim] = lambda axis_data, vals, dims, **params: vectorized_batcher(
        prim, axis_data, vals, dims, **params
    )


def defreducer(prim):
    """A reduction whose `axes` param names the reduced axes: operands get their batch axis first
    (unbatched ones are broadcast) and the axes shift past it."""

    def rule(axis_data, vals, dims, *, axes, **params):
        from morphax._src.core.batch_axes import bdim_to_front  # noqa: PLC0415

        vals = [bdim_to_front(v, d, axis_data.size) for v, d in zip(vals, dims)]
        out = prim.bind(*vals, axes=tuple(a + 1 for a in axes), **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)

    fancy_primitive_batchers[prim] = rule


def defbroadcasting(prim):
    """An elementwise n-ary primitive under NumPy broadcasting: batch axes moved to the front and
    operands of lower rank given leading size-1 axes."""

    def rule(axis_data, vals, dims, **params):
        from morphax._src.core.batch_axes import bdim_to_front  # noqa: PLC0415

        ranks = [len(get_aval(v).shape) - (d is not None) for v, d in zip(vals, dims)]
        rank = max(ranks)
        out = []
        for v, d, r in zip(vals, dims, ranks):
            if d is None:
                out.append(v.reshape((1,) * (rank - r + 1) + tuple(get_aval(v).shape)) if r else v)
            else:
                v = bdim_to_front(v, d, axis_data.size)
                out.append(v.reshape((v.shape[0],) + (1,) * (rank - r) + tuple(v.shape[1:])))
        return prim.bind(*out, **params), 0

    fancy_primitive_batchers[prim] = rule


__all__ = [
    "AxisData",
    "CallPrimitive",
    "LoweredFun",
    "LoweringRuleContext",
    "Primitive",
    "add_tangents",
    "axis_primitive_batchers",
    "call_impl",
    "dce_rules",
    "defbilinear",
    "defbroadcasting",
    "defjvp",
    "defjvp2",
    "deflinear",
    "deflinear2",
    "defreducer",
    "defvectorized",
    "fancy_primitive_batchers",
    "get_primitive_transpose",
    "lower_fun",
    "primitive_batchers",
    "primitive_jvps",
    "primitive_transposes",
    "register_lowering",
    "to_shaped_array",
    "vectorized_batcher",
]
