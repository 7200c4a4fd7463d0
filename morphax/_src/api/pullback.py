"""The pullback `vjp` returns: `VJP`, a callable pytree over the residuals of the linearization
(so it can be passed to and returned from jitted functions, as JAX's), with `with_refs` to skip
chosen cotangents (`DontWant`) or add them into mutable refs (`GradRef`) instead of returning
them; these marker classes are JAX's ``jax.ad`` namespace."""

from __future__ import annotations

import dataclasses

from morphax._src import events
from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core.ad_util import is_zero, tangent_aval, tangent_dtype, zeros_like_aval
from morphax._src.core.avals import get_aval
from morphax._src.core.jaxpr import ClosedJaxpr
from morphax._src.core.state_types import Ref
from morphax._src.core.values import make_array
from morphax._src.transforms import ad


@dataclasses.dataclass(frozen=True)
class DontWant:
    """In `VJP.with_refs`: this input's cotangent is not wanted (`DidntWant` comes back)."""


@dataclasses.dataclass(frozen=True)
class DidntWant:
    """Returned by `VJP.with_refs` in place of a cotangent that was marked `DontWant`."""


@dataclasses.dataclass(frozen=True)
class GradRef:
    """Returned by `VJP.with_refs` in place of a cotangent that was added into a ref."""


@dataclasses.dataclass(frozen=True)
class GradValue:
    """In `VJP.with_refs`: return this input's cotangent (what plain calls do for every input)."""


for _marker in (DidntWant, GradRef):  # leaves of the returned structure, as in JAX
    pytree.register_pytree_node(_marker, lambda m: ((), None), lambda _, __, cls=_marker: cls())


@dataclasses.dataclass(eq=False)  # compared by identity: one per linearization
class _Structure:
    jaxpr: object  # the linear Jaxpr; its constants are the VJP's residual arrays
    out_zero_avals: list
    in_avals: list
    in_tree: object
    out_tree: object
    out_avals: list
    name: str


class VJP:
    """``vjp_fun(cotangents)``: the cotangents of the primal inputs. A pytree whose leaves are the
    residual arrays; its structure is the linear program, so two pullbacks of one trace (of a
    jitted function) have equal structures."""

    def __init__(self, residuals, structure: _Structure):
        self.residuals = list(residuals)
        self.structure = structure
        self.single = False  # fwd_and_bwd: the caller asked for one argument's cotangent

    @classmethod
    def of(cls, lin, in_tree, out_tree, out_avals, name):
        s = _Structure(lin.jaxpr.jaxpr, lin.out_zero_avals, lin.in_avals, in_tree, out_tree, out_avals, name)
        return cls(lin.jaxpr.consts, s)

    def _input_cotangents(self, cts):
        s = self.structure
        ct_leaves = check_cotangents(s.out_tree, s.out_avals, cts)
        ct_leaves = [
            make_array(c, dtype=a.dtype, weak_type=True) if _dtypes.is_python_scalar(c) else c  # weak, as JAX
            for c, a in zip(ct_leaves, s.out_avals)
        ]
        lin = ad.LinearFunction(ClosedJaxpr(s.jaxpr, self.residuals), s.out_zero_avals, s.in_avals)
        with events.span(f"transpose(jvp({s.name}))", "autodiff"):
            cts_in = lin.transpose(ct_leaves)
        return [zeros_like_aval(tangent_aval(a)) if is_zero(c) else c for c, a in zip(cts_in, s.in_avals)]

    def __call__(self, cotangents, *extra):
        if extra:
            raise TypeError(
                f"the vjp function of {self.structure.name} takes one cotangent argument (a pytree "
                f"like the primal output), got {1 + len(extra)}; pass a tuple for several outputs."
            )
        return pytree.tree_unflatten(self.structure.in_tree, self._input_cotangents(cotangents))

    def with_refs(self, *maybe_ct_refs):
        """A pullback that, for each primal input, returns its cotangent (`GradValue()`), skips it
        (`DontWant()`, giving `DidntWant()`), or adds it into a `Ref` (giving `GradRef()`).
        `maybe_ct_refs` has the structure of the primal inputs."""
        s = self.structure
        wants, tree = pytree.tree_flatten(
            maybe_ct_refs, is_leaf=lambda x: isinstance(x, (DontWant, GradValue, Ref))
        )
        if tree != s.in_tree:
            raise TypeError(
                f"with_refs: the arguments must have the structure of the primal inputs {s.in_tree}, got {tree}"
            )

        def pullback(cotangents):
            out = []
            for want, ct in zip(wants, self._input_cotangents(cotangents)):
                if isinstance(want, DontWant):
                    out.append(DidntWant())
                elif isinstance(want, Ref):
                    want[...] += ct
                    out.append(GradRef())
                else:
                    out.append(ct)
            return pytree.tree_unflatten(s.in_tree, out)

        return pullback


def _unflatten_vjp(aux, residuals):
    out = VJP(residuals, aux[0])
    out.single = aux[1]
    return out


pytree.register_pytree_node(VJP, lambda v: (v.residuals, (v.structure, v.single)), _unflatten_vjp)


def check_cotangents(out_tree, out_avals, cts):
    ct_leaves, ct_tree = pytree.tree_flatten(cts)
    if ct_tree != out_tree:
        raise TypeError(
            "Tree structure of cotangent input to the vjp function does not match the structure of the "
            f"primal output: got {ct_tree}, expected {out_tree}."
        )
    for a, ct in zip(out_avals, ct_leaves):
        ca = get_aval(ct)
        if ca.shape != a.shape:
            raise ValueError(
                f"Shape of cotangent input to the vjp function {ca.shape} does not match the shape of the "
                f"primal output {a.shape}."
            )
        want = tangent_dtype(a.dtype)
        if ca.dtype != want and not (
            ca.weak_type and _dtypes.is_inexact(ca.dtype) and _dtypes.is_inexact(want)
        ):
            raise TypeError(
                f"Type of cotangent input to the vjp function ({ca.dtype.name}) is not the expected tangent "
                f"type ({want.name}) of the primal output (dtype {a.dtype.name})."
            )
    return ct_leaves
