"""Inlining: every call-like equation (nested `jit`, `checkpoint`, the custom-derivative calls:
primitives that declare `call_jaxpr_param`) is replaced by the equations of the jaxpr it calls.

Evaluating such an equation is evaluating its body: the custom rules and remat policies it carries
matter only to transformations, which have run by the time a program is compiled. Inlined, the
body's operations fuse with their neighbours and share native segments with them instead of
running as a separate program between them. Bodies are inlined recursively; their constants
become constants of the result. Loop and branch bodies are left alone (each is compiled on its
own, and inlined then), and so are calls that keep their boundary (`checkpoint`: merged with the
forward pass by CSE, its recomputation would be lost).

So are the equations of primitives defined by a Python lowering (`Primitive.lowered_jaxpr`: a user
primitive with a `register_lowering` rule, as equinox's and lineax's are): JAX compiles such an
equation by tracing its lowering into the program, and so does this pass, with the jaxpr the slot
traces. Left as they were, they would run their Python implementation on the host, operation by
operation, and keep any loop around them out of native code.
"""

from __future__ import annotations

from morphax._src.core.jaxpr import ClosedJaxpr, DropVar, Jaxpr, Var
from morphax._src.passes._util import subst

__all__ = ["inline_calls"]


def _inlined(prim) -> bool:
    return (
        prim.call_jaxpr_param is not None and not prim.keeps_call_boundary
    ) or prim.lowered_jaxpr is not None


def _has_call(jaxpr: Jaxpr) -> bool:
    return any(_inlined(e.primitive) for e in jaxpr.eqns)


def _body(eqn, lowered: dict):
    """The closed jaxpr (or jaxpr) `eqn` evaluates, or None when it stays an equation.
    `lowered`: the lowerings traced so far in this compilation, by primitive, operand types and
    params; as JAX lowers equal equations of one module once, each is traced once."""
    prim = eqn.primitive
    if prim.lowered_jaxpr is None:
        return eqn.params[prim.call_jaxpr_param]
    key = (prim, tuple(v.aval for v in eqn.invars), tuple(eqn.params.items()))
    try:
        return lowered[key]
    except KeyError:
        pass
    except TypeError:  # unhashable params: traced for this equation alone
        return _lowered_body(eqn)
    lowered[key] = body = _lowered_body(eqn)
    return body


def _lowered_body(eqn):
    prim = eqn.primitive
    inner = prim.lowered_jaxpr(*(v.aval for v in eqn.invars), **eqn.params)
    if inner is None or len(inner.out_avals) != len(eqn.outvars):
        return None
    for a, v in zip(inner.out_avals, eqn.outvars):
        if a.shape != v.aval.shape or a.dtype != v.aval.dtype:
            return None  # a lowering that disagrees with the abstract evaluation: keep the primitive
    return inner


def inline_calls(closed: ClosedJaxpr) -> ClosedJaxpr:
    """`closed` with its call-like equations inlined; `closed` itself when it has none."""
    jaxpr = closed.jaxpr
    if not _has_call(jaxpr):
        return closed
    constvars, consts = list(jaxpr.constvars), list(closed.consts)
    eqns: list = []

    def emit(body, env: dict) -> None:
        """Append `body`'s equations with their variables renamed through `env` (updated)."""
        for eqn in body.eqns:
            ins = [subst(env, v) for v in eqn.invars]
            inner = _body(eqn, lowered) if _inlined(eqn.primitive) else None
            if inner is None:
                outs = [DropVar(v.aval) if isinstance(v, DropVar) else Var(v.aval) for v in eqn.outvars]
                eqns.append(eqn.replace(invars=ins, outvars=outs))
                env.update(zip(map(id, eqn.outvars), outs))
                continue
            inner_jaxpr = inner.jaxpr if isinstance(inner, ClosedJaxpr) else inner
            inner_env = dict(zip(map(id, inner_jaxpr.invars), ins))
            for v, c in zip(inner_jaxpr.constvars, inner.consts if isinstance(inner, ClosedJaxpr) else ()):
                new = Var(v.aval)
                constvars.append(new)
                consts.append(c)
                inner_env[id(v)] = new
            emit(inner_jaxpr, inner_env)
            env.update(zip(map(id, eqn.outvars), (subst(inner_env, v) for v in inner_jaxpr.outvars)))

    env: dict = {}
    lowered: dict = {}
    emit(jaxpr, env)
    outvars = [subst(env, v) for v in jaxpr.outvars]
    return ClosedJaxpr(Jaxpr(constvars, jaxpr.invars, outvars, eqns, jaxpr.debug_info), consts)
