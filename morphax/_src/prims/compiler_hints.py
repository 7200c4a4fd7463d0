"""`jax.lax`'s hints to a compiler, which change no value on one CPU device: `composite`,
`platform_dependent`, `stage`, `optimization_barrier` (a primitive that keeps operations from
moving across it) and `dce_sink` (a primitive with no outputs that is never dead code). Tokens are
in tokens.py; `with_sharding_constraint` in sharding/constraint.py."""

from __future__ import annotations

import functools

from morphax._src.core import pytree
from morphax._src.core.ad_util import instantiate, is_zero
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._shape_util import as_lax_array, fresh
from morphax._src.prims._spec import Case, TestSpec, random_array

__all__ = [
    "composite",
    "dce_sink",
    "dce_sink_p",
    "optimization_barrier",
    "optimization_barrier_p",
    "platform_dependent",
    "stage",
]

# The platform every morphax computation runs on.
PLATFORM = "cpu"


def stage(x, /):
    """The identity that makes `x` (a Python scalar or NumPy array) an array of the current trace."""
    return as_lax_array(x)


def composite(decomposition, name, version=0):
    """Mark `decomposition` as the composite op `name` (a hint a compiler may pattern-match). The
    returned function calls `decomposition`: positional arguments are its inputs, keyword
    arguments its attributes, and every transformation sees the decomposition."""
    if not isinstance(name, str):
        raise TypeError(f"composite: name must be a string, got {name!r}")
    if not isinstance(version, int):
        raise TypeError(f"composite: version must be an int, got {version!r}")

    @functools.wraps(decomposition)
    def _composite(*args, **kwargs):
        return decomposition(*args, **kwargs)

    return _composite


def platform_dependent(*args, default=None, **per_platform):
    """``per_platform[platform](*args)`` for the platform the computation runs on (here always
    'cpu'), else ``default(*args)``."""
    for name, fn in per_platform.items():
        if not callable(fn):
            raise TypeError(f"platform_dependent: the branch for {name!r} must be callable, got {fn!r}")
    branch = per_platform.get(PLATFORM, default)
    if branch is None:
        raise NotImplementedError(
            f"platform_dependent: no branch for the platform {PLATFORM!r} (branches given for "
            f"{sorted(per_platform)}); pass {PLATFORM}=... or default=..."
        )
    return branch(*args)


# ------------------------------------------------------------------------------------- dce_sink

dce_sink_p = Primitive("dce_sink", multiple_results=True)
dce_sink_p.kind = Kind.EFFECT
# Never dead code: it keeps the computation of its operand alive through DCE.
dce_sink_p.has_side_effects = True
# It has no outputs to compare, so the generated matrices have nothing to check: see tests/prims/test_lax_smaller_names.py.
dce_sink_p.test_spec = TestSpec(cases=lambda rng: [], differentiable=False)


def _dce_sink_impl(x, *, prevent_mlir_dce):
    return []


def _dce_sink_abstract_eval(x, *, prevent_mlir_dce):
    return []


def _dce_sink_jvp(primals, tangents, *, prevent_mlir_dce):
    dce_sink_p.bind(*primals, prevent_mlir_dce=prevent_mlir_dce)
    return [], []


def _dce_sink_transpose(cts, x, *, prevent_mlir_dce):
    # No outputs, hence no cotangents: nothing flows back.
    return [None]


def _dce_sink_batch(vals, dims, *, axis_data, prevent_mlir_dce):
    dce_sink_p.bind(*vals, prevent_mlir_dce=prevent_mlir_dce)
    return [], []


dce_sink_p.impl = _dce_sink_impl
dce_sink_p.abstract_eval = _dce_sink_abstract_eval
dce_sink_p.jvp = _dce_sink_jvp
dce_sink_p.transpose = _dce_sink_transpose
dce_sink_p.batch = _dce_sink_batch


def dce_sink(val, *, prevent_mlir_dce=False):
    """Mark every leaf of `val` as used, so dead-code elimination keeps what computes it. Returns None."""
    for leaf in pytree.tree_leaves(val):
        dce_sink_p.bind(as_lax_array(leaf), prevent_mlir_dce=bool(prevent_mlir_dce))


# ------------------------------------------------------------------------------------------------
# optimization_barrier: the identity on any number of operands. Compilers may not move work across
# it; here it only has to survive every transformation as itself.

optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)
# The identity, run as one node so nothing fuses across it. Not an EFFECT: like JAX's it has no
# side effects, so an unused barrier may be dropped.
optimization_barrier_p.kind = Kind.OPAQUE
optimization_barrier_p.abstract_eval = lambda *avals: list(avals)
optimization_barrier_p.impl = lambda *xs: [fresh(x) for x in xs]
optimization_barrier_p.batch = lambda vals, dims, *, axis_data: (
    optimization_barrier_p.bind(*vals),
    list(dims),
)
optimization_barrier_p.stablehlo = lambda ctx, *xs: ctx.op("stablehlo.optimization_barrier", xs, xs)


def _barrier_jvp(primals, tangents):
    # Two barriers: the primal one must stay known when linearizing, the tangent one is linear.
    out = optimization_barrier_p.bind(*primals)
    live = [t for t in tangents if not is_zero(t)]
    it = iter(optimization_barrier_p.bind(*live) if live else [])
    return out, [t if is_zero(t) else next(it) for t in tangents]


def _barrier_transpose(cts, *args):
    live = [instantiate(ct) for ct, a in zip(cts, args) if not is_zero(ct)]
    it = iter(optimization_barrier_p.bind(*live) if live else [])
    return [ct if is_zero(ct) else next(it) for ct in cts]


optimization_barrier_p.jvp = _barrier_jvp
optimization_barrier_p.transpose = _barrier_transpose


def _barrier_cases(rng):
    out = []
    for dts in (("float32",), ("int32",), ("bool",), ("float32", "int32"), ("float32", "bfloat16", "bool")):
        for shape in ((), (3,), (2, 3), (0, 2)):
            args = tuple(random_array(rng, shape, dt) for dt in dts)
            out.append(Case(args, {}, f"{'+'.join(dts)}{list(shape)}"))
    return out


optimization_barrier_p.test_spec = TestSpec(cases=_barrier_cases)


def optimization_barrier(operand, /):
    """The pytree `operand` unchanged, behind a barrier compilers may not move work across."""
    leaves, tree = pytree.tree_flatten(operand)
    if not leaves:
        return operand
    return pytree.tree_unflatten(tree, optimization_barrier_p.bind(*[as_lax_array(x) for x in leaves]))
