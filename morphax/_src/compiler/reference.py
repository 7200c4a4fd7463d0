"""The reference (NumPy) backend: turns a closed jaxpr into one generated straight-line Python
function calling each primitive's NumPy reference, so a compiled call pays no per-operation
dispatch. Intermediates are deleted right after their last use, so their buffers are freed early.

Call-like equations (nested `pjit`, `checkpoint`, custom-rule calls: `Primitive.call_jaxpr_param`)
compile their bodies recursively and are called inline.
Other higher-order primitives run through `eval_jaxpr` on Arrays (a fallback that stays correct).
"""

from __future__ import annotations

import itertools
import unicodedata
import warnings

import numpy as np

from morphax._src.core.jaxpr import ClosedJaxpr, Literal, any_eqn

_MODULE = "morphax._src.compiler.generated"
# NumPy's float warnings (log(-1), inf - inf) are attributed to the generated module: silence them
# there, like the eager path does, without touching the user's NumPy settings.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"morphax\._src\.compiler\..*")

_counter = itertools.count()


class Executable:
    """A compiled jaxpr: call with NumPy arrays, get the list of NumPy outputs."""

    def __init__(self, fn, source: str, closed: ClosedJaxpr, name: str):
        self.fn = fn
        self.source = source
        # Not the jaxpr itself: the executable is memoized on it, and a reference back would
        # make a cycle that only the cyclic GC frees (with the constants inside).
        self.name = name
        self.out_avals = closed.out_avals
        self.in_avals = closed.in_avals
        self.out_weak_types = [a.weak_type for a in self.out_avals]
        # Host callbacks anywhere inside (cond branches, loop bodies, nested calls): the runtime
        # runs the program on the calling thread and raises their errors at the call.
        self.calls_host = any_eqn(closed, lambda e: e.primitive.calls_host or e.primitive.has_side_effects)
        self.total_elements = sum(a.size for a in self.out_avals) + sum(a.size for a in self.in_avals)

    def __call__(self, *args):
        try:
            return self.fn(*args)
        except (RuntimeWarning, FloatingPointError):
            # Warnings turned into errors (strict test settings): rerun quietly.
            with np.errstate(all="ignore"):
                return self.fn(*args)

    def as_text(self) -> str:
        return self.source


def _as_array(dtype):
    def cast(x):
        if type(x) is np.ndarray and x.dtype == dtype:
            return x
        return np.asarray(x, dtype=dtype)

    return cast


def _fallback_call(prim, params, n_out):
    """Higher-order primitives without a compiled form: evaluate through bind on Arrays."""
    from morphax._src.core.values import make_array

    def call(*args):
        arrays = [make_array(a) for a in args]
        out = prim.bind(*arrays, **params)
        outs = out if prim.multiple_results else [out]
        return [np.asarray(o) for o in outs]

    return call


def compile_closed_jaxpr(closed: ClosedJaxpr, name: str = "jitted", compile_call=None) -> Executable:
    """Generate and compile the Python source for `closed`."""
    jaxpr = closed.jaxpr
    names: dict[int, str] = {}
    env: dict[str, object] = {"__name__": _MODULE, "np": np}
    counter = itertools.count()

    def bind_global(value, prefix):
        key = f"{prefix}{next(counter)}"
        env[key] = value
        return key

    def var_name(v):
        key = id(v)
        got = names.get(key)
        if got is None:
            got = names[key] = f"v{len(names)}"
        return got

    def operand(v):
        if type(v) is Literal:
            return bind_global(np.asarray(v.val, dtype=v.aval.dtype), "lit")
        return var_name(v)

    # Last use of each variable, so it can be deleted right after.
    last_use: dict[int, int] = {}
    for i, eqn in enumerate(jaxpr.eqns):
        for v in eqn.invars:
            if type(v) is not Literal:
                last_use[id(v)] = i
    outvar_ids = {id(v) for v in jaxpr.outvars if type(v) is not Literal}

    lines = []
    args = [var_name(v) for v in jaxpr.invars]
    consts = [bind_global(np.asarray(c), "const") for c in closed.consts]
    for v, c in zip(jaxpr.constvars, consts):
        lines.append(f"    {var_name(v)} = {c}")
    for i, eqn in enumerate(jaxpr.eqns):
        prim = eqn.primitive
        if getattr(prim, "compile_error", None):
            raise TypeError(prim.compile_error)
        ins = ", ".join(operand(v) for v in eqn.invars)
        outs = [var_name(v) for v in eqn.outvars]
        if prim.call_jaxpr_param is not None and compile_call is not None:
            inner = compile_call(eqn.params[prim.call_jaxpr_param], eqn.params.get("name", prim.name))
            fn = bind_global(inner, "call")
            lines.append(f"    {', '.join(outs)}, = {fn}({ins})" if outs else f"    {fn}({ins})")
        elif prim.higher_order:
            fn = bind_global(_fallback_call(prim, eqn.params, len(outs)), "ho")
            lines.append(f"    {', '.join(outs)}, = {fn}({ins})" if outs else f"    {fn}({ins})")
        else:
            impl = bind_global(prim.impl, f"{_safe(prim.name)}_")
            call = f"{impl}({ins}"
            if eqn.params:
                params = bind_global(eqn.params, "p")
                call += f"{', ' if ins else ''}**{params}"  # no-operand primitives (iota) too
            call += ")"
            if prim.multiple_results:
                casts = [bind_global(_as_array(v.aval.dtype), "as_") for v in eqn.outvars]
                tmp = f"t{i}"
                lines.append(f"    {tmp} = {call}")
                for j, (o, c) in enumerate(zip(outs, casts)):
                    lines.append(f"    {o} = {c}({tmp}[{j}])")
            else:
                cast = bind_global(_as_array(eqn.outvars[0].aval.dtype), "as_")
                lines.append(f"    {outs[0]} = {cast}({call})")
        dead = [
            var_name(v)
            for v in eqn.invars
            if type(v) is not Literal
            and last_use.get(id(v)) == i
            and id(v) not in outvar_ids
            and v not in jaxpr.invars
        ]
        if dead:
            lines.append(f"    del {', '.join(sorted(set(dead)))}")
    results = []
    for v in jaxpr.outvars:
        if type(v) is Literal:
            results.append(bind_global(np.asarray(v.val, dtype=v.aval.dtype), "lit"))
        else:
            results.append(var_name(v))
    lines.append(f"    return [{', '.join(results)}]")
    fn_name = f"{_safe(name)}_{next(_counter)}"
    while fn_name in env:  # a function named like a primitive ("add") must not shadow its impl ("add_0")
        fn_name += "_"
    source = f"def {fn_name}({', '.join(args)}):\n" + "\n".join(lines) + "\n"
    code = compile(source, f"<morphax generated {fn_name}>", "exec")
    exec(code, env)
    # Popped from its own globals: env -> function -> env would be a reference cycle holding the
    # constants until the cyclic GC runs.
    return Executable(env.pop(fn_name), source, closed, name)


def _safe(name: str) -> str:
    """An ASCII identifier for `name` in generated source. Only ASCII letters, digits and "_"
    are kept: Python rejects some other "alphanumeric" characters in identifiers ("f²") and
    NFKC-normalises others ("ℌ" is read as "H", so the name bound by exec would differ from the
    one looked up). Callers append a numeric suffix, so the result is never a keyword."""
    name = unicodedata.normalize("NFKC", name)  # "ℌ" -> "H", "f²" -> "f2": readable where possible
    out = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name)
    return out if out and not out[0].isdigit() else f"f_{out}"
