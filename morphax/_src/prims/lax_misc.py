"""Small `jax.lax` utilities with a single-device CPU meaning: tokens (`create_token`, `after_all`),
`with_sharding_constraint`, `composite`, `platform_dependent`, `stage`, and `dce_sink` (a primitive
with no outputs that is never dead code). Computations run in program order, so a token is a pytree
with no leaves (a psend's token carries the sent value to its precv)."""

from __future__ import annotations

import functools

from morphax._src.core import pytree
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.pytree_def import register_pytree_node
from morphax._src.prims._shape_util import as_lax_array
from morphax._src.prims._spec import TestSpec

__all__ = [
    "after_all",
    "composite",
    "create_token",
    "dce_sink",
    "dce_sink_p",
    "platform_dependent",
    "stage",
    "with_sharding_constraint",
]

# The platform every morphax computation runs on.
PLATFORM = "cpu"


class Token:
    """An ordering token. `payload` (with its `channel`) is set only on the token of a psend."""

    __slots__ = ("payload", "channel")

    def __init__(self, payload=None, channel=None):
        self.payload = payload
        self.channel = channel

    def block_until_ready(self):
        return self

    def __repr__(self):
        return "Token()" if self.channel is None else f"Token(psend over {self.channel[0]!r})"


def _flatten_token(t):
    return (() if t.channel is None else (t.payload,)), t.channel


def _unflatten_token(channel, children):
    children = list(children)
    return Token(children[0] if children else None, channel)


register_pytree_node(Token, _flatten_token, _unflatten_token)


def create_token(_=None):
    """A new token with no preconditions (the argument is ignored, as in JAX)."""
    return Token()


def after_all(*operands):
    """A token ordered after all the given tokens."""
    if not all(isinstance(t, Token) for t in operands):
        raise TypeError("Arguments to after_all must be tokens")
    return Token()


def with_sharding_constraint(x, shardings):
    """Constrain the sharding of `x` (a pytree). One device holds everything here: the identity,
    whatever `shardings` says."""
    return pytree.tree_map(as_lax_array, x)


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
# It has no outputs to compare, so the generated matrices have nothing to check: see test_lax_misc.
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
