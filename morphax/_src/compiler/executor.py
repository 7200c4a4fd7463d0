"""The one executor of compiled programs: renders a `Program` (compiler/kernel_ir.py) into one
generated straight-line Python function that calls each step in order, so a compiled call pays no
per-operation dispatch. Fused kernels are callables the backend built; opaque equations call
their primitive's NumPy reference (with the numpy backend, every equation is opaque).
Intermediates are deleted right after their last use, so their buffers are freed early.

Call-like equations (nested `pjit`, `checkpoint`, custom-rule calls: `Primitive.call_jaxpr_param`)
compile their bodies recursively (same backend) and are called inline.
Other higher-order primitives run through `bind` on Arrays (a fallback that stays correct).
"""

from __future__ import annotations

import copy
import itertools
import math
import re
import threading
import unicodedata
import warnings
import weakref

import numpy as np

from morphax._src import events
from morphax._src.compiler import donation
from morphax._src.core.jaxpr import ClosedJaxpr, Literal, any_eqn
from morphax._src.higher_order.host_eval import host_rules

_MODULE = "morphax._src.compiler.generated"
# NumPy's float warnings (log(-1), inf - inf) are attributed to the generated module: silence them
# there, like the eager path does, without touching the user's NumPy settings.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"morphax\._src\.compiler\.generated")

_counter = itertools.count()


class Executable:
    """A compiled jaxpr: call with NumPy arrays, get the list of NumPy outputs."""

    def __init__(
        self,
        fn,
        source: str,
        closed: ClosedJaxpr,
        name: str,
        backend: str = "numpy",
        kernels=(),
        num_kernels=0,
    ):
        self.fn = fn
        self.source = source
        self.backend = backend
        # The backend's rendering of each fused kernel (C source, ...), shown by as_text().
        self._kernel_sources = kernels  # may render lazily (a disk-cache hit renders nothing)
        self.num_kernels = num_kernels
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
        # Estimated flops plus bytes accessed of one run (set by compile_jaxpr; unknown: inf).
        self.work = math.inf
        # Input positions whose buffers the program may overwrite when donated (runtime/dispatch.py).
        self.donated: tuple = ()
        # {donated input position: the output that ends in its buffer} (compiler/donation.py).
        self.output_aliases: dict = {}
        # Compiled.cost_analysis() / memory_analysis() (compiler/analysis.py), set by compile_jaxpr.
        self.cost: dict = {}
        self.memory = None
        # Native segments (compiler/segments.py): (name, steps, scratch bytes) each, in order.
        self.segments: list = []
        # A program that is one native segment, with the program's inputs and outputs as its
        # own: its launcher, which the fast path of a call (runtime/call_fast.py) runs directly.
        self.direct = None
        # An xla program on a device platform (a TPU): `device_run(inputs) -> outputs` takes
        # device buffers (or host arrays) and returns device buffers (runtime/dispatch.py).
        self.device_run = None

    def __call__(self, *args, reuse=()):
        if reuse:
            # Quiet from the start: a rerun (below) could read a donated input already overwritten.
            with np.errstate(all="ignore"):
                outs = self.fn(*args, reuse=reuse)
            if self.output_aliases:
                return donation.land(self.output_aliases, args, list(outs), reuse)
            return outs
        try:
            return self.fn(*args)
        except (RuntimeWarning, FloatingPointError):
            # Warnings turned into errors (strict test settings): rerun quietly.
            with np.errstate(all="ignore"):
                return self.fn(*args)

    @property
    def num_segments(self) -> int:
        """How many native calls the program makes per run (Python steps in between)."""
        return len(self.segments)

    def as_text(self) -> str:
        sources = list(self._kernel_sources)
        if not sources:
            return self.source
        n = self.num_segments
        summary = ", ".join(f"{name} ({k} steps, {b} bytes of scratch)" for name, k, b in self.segments)
        header = f"# {n} native segment{'s' * (n != 1)}{': ' + summary if summary else ''}"
        return "\n\n".join([*sources, f"{header}\n# the program, run by the executor\n{self.source}"])


class ReplicatedProgram:
    """A pmap's program that a backend runs on all its devices at once, collectives inside
    (compile.compile_replicated): `run(per_device_args) -> per_device_outputs`."""

    def __init__(self, run, source: str, replicas: int):
        self.run = run
        self.source = source
        self.replicas = replicas
        # Where the backend keeps results in device memory (a plugin's devices): the pjrt
        # devices it runs on, and `device_run(per_device_inputs) -> per_device_buffers` on the
        # devices' blocks of the mapped arrays (backends/xla).
        self.devices = None
        self.device_run = None

    def __repr__(self):
        return f"<program of {self.replicas} replicas>"


def _as_array(dtype):
    def cast(x):
        if type(x) is np.ndarray and x.dtype == dtype:
            return x
        return np.asarray(x, dtype=dtype)

    return cast


class _BodyBackend(threading.local):
    """The backend the loop and branch bodies of the running program compile for (None: the
    default backend, as for eager control flow)."""

    name = None


body_backend = _BodyBackend()


def _host_rule_call(rule, params, backend, out_dtypes):
    """A loop or branch equation: its host rule (higher_order/host_eval.py) on NumPy values,
    its bodies compiled for `backend` and run by this executor."""

    def call(*args):
        saved = body_backend.name
        body_backend.name = backend
        try:
            outs = rule(list(args), **params)
        finally:
            body_backend.name = saved
        return [
            o if type(o) is np.ndarray and o.dtype == d else np.asarray(o, dtype=d)
            for o, d in zip(outs, out_dtypes)
        ]

    return call


def _fallback_call(prim, params, n_out):
    """Higher-order primitives without a compiled form: evaluate through bind on Arrays."""
    from morphax._src.core.values import make_array

    host_error = prim.host_error

    def call(*args):
        arrays = [make_array(a) for a in args]
        try:
            out = prim.bind(*arrays, **params)
        except BaseException as e:  # noqa: BLE001 - reported as the primitive says (host callbacks)
            failure = host_error(e) if host_error is not None else e
            if failure is e:
                raise
            raise failure from None
        outs = out if prim.multiple_results else [out]
        return [np.asarray(o) for o in outs]

    return call


def compile_program(
    program,
    name: str,
    kernel_fns: dict,
    compile_call,
    backend: str = "numpy",
    sources=(),
    opaque=None,
    reuse_plan=None,
):
    """Generate and compile the Python source that runs `program`. `kernel_fns` maps each Kernel
    step (by id) to the callable the backend built for it: inputs in slot order -> outputs in
    store order. `reuse_plan` ({input position: (step, store)}, compiler/donation.py) names the
    donated inputs a kernel may write into; the generated function takes `reuse`, the positions
    whose buffers the runtime found free to overwrite on this call."""
    reuse_plan = reuse_plan or {}
    reuse_at: dict[int, list] = {}
    for pos, (j, k) in reuse_plan.items():
        reuse_at.setdefault(j, []).append((k, pos))
    from morphax._src.compiler.kernel_ir import Kernel, Segment

    closed = program.closed
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
    for i, step in enumerate(program.steps):
        for v in step.inputs:
            if type(v) is not Literal:
                last_use[id(v)] = i
    outvar_ids = {id(v) for v in jaxpr.outvars if type(v) is not Literal}
    invar_ids = {id(v) for v in jaxpr.invars}

    lines = []
    args = [var_name(v) for v in jaxpr.invars]
    consts = [bind_global(np.asarray(c), "const") for c in closed.consts]
    for v, c in zip(jaxpr.constvars, consts):
        lines.append(f"    {var_name(v)} = {c}")
    for i, step in enumerate(program.steps):
        if isinstance(step, (Kernel, Segment)):
            fn = bind_global(kernel_fns[id(step)], f"{step.name}_")
            ins = ", ".join(operand(v) for v in step.inputs)
            outs = [var_name(v) for v in step.outputs]
            given = reuse_at.get(i)
            if given:
                triples = ", ".join(f"({k}, {pos}, {var_name(jaxpr.invars[pos])})" for k, pos in given)
                ins += f", outs={{k: a for k, p, a in ({triples},) if p in reuse}}"
            lines.append(f"    {', '.join(outs)}, = {fn}({ins})")
        else:
            native = opaque(step.eqn) if opaque is not None else None
            if native is not None:
                # The backend's own implementation of this equation (e.g. a gather as a C loop).
                fn = bind_global(native, f"{identifier(step.eqn.primitive.name)}_native_")
                ins = ", ".join(operand(v) for v in step.eqn.invars)
                lines.append(f"    {', '.join(var_name(v) for v in step.eqn.outvars)}, = {fn}({ins})")
            else:
                lines.extend(
                    _opaque_lines(step.eqn, i, operand, var_name, bind_global, compile_call, backend)
                )
        dead = [
            var_name(v)
            for v in step.inputs
            if type(v) is not Literal
            and last_use.get(id(v)) == i
            and id(v) not in outvar_ids
            and id(v) not in invar_ids
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
    fn_name = f"{identifier(name)}_{next(_counter)}"
    while fn_name in env:  # a function named like a primitive ("add") must not shadow its impl ("add_0")
        fn_name += "_"
    source = f"def {fn_name}({', '.join([*args, 'reuse=()'])}):\n" + "\n".join(lines) + "\n"
    code = compile(source, f"<morphax generated {fn_name}>", "exec")
    exec(code, env)
    # Popped from its own globals: env -> function -> env would be a reference cycle holding the
    # constants until the cyclic GC runs.
    fn = env.pop(fn_name)
    fn._morphax_source = source  # what `profiled` rewrites into a version timing each step
    fn._morphax_backend = backend  # an interim program runs the numpy backend's function
    executable = Executable(fn, source, closed, name, backend, sources, len(program.kernels))
    executable.donated = tuple(sorted(reuse_plan))
    executable.segments = [(s.name, len(s.steps), s.scratch_bytes) for s in program.segments]
    executable.direct = _direct_launcher(program, kernel_fns)
    return executable


def _direct_launcher(program, kernel_fns):
    """The native launcher of a program that is exactly one segment called with the program's
    inputs in order and returning its outputs in order, or None. It returns None itself when an
    input needs converting (the C launcher of launch_ext.py): then the executable runs."""
    from morphax._src.compiler.kernel_ir import Segment

    steps, jaxpr = program.steps, program.closed.jaxpr
    if len(steps) != 1 or not isinstance(steps[0], Segment) or jaxpr.constvars:
        return None
    segment = steps[0]
    launch = kernel_fns.get(id(segment))
    if not getattr(launch, "native", False):
        return None
    same = lambda a, b: len(a) == len(b) and all(x is y for x, y in zip(a, b))  # noqa: E731
    if not (same(segment.inputs, jaxpr.invars) and same(segment.outputs, jaxpr.outvars)):
        return None
    return launch.fast or launch


def _opaque_lines(eqn, i, operand, var_name, bind_global, compile_call, backend) -> list:
    """The lines running one equation outside the fused kernels."""
    prim = eqn.primitive
    if getattr(prim, "compile_error", None):
        raise TypeError(prim.compile_error)
    ins = ", ".join(operand(v) for v in eqn.invars)
    outs = [var_name(v) for v in eqn.outvars]
    if prim.call_jaxpr_param is not None and compile_call is not None:
        inner = compile_call(eqn.params[prim.call_jaxpr_param], eqn.params.get("name", prim.name))
        fn = bind_global(inner, "call")
        return [_call_line(outs, fn, ins)]
    rule = host_rules.get(prim)
    if rule is not None:
        out_dtypes = [v.aval.dtype for v in eqn.outvars]
        fn = bind_global(_host_rule_call(rule, eqn.params, backend, out_dtypes), f"{identifier(prim.name)}_")
        return [_call_line(outs, fn, ins)]
    if prim.higher_order:
        fn = bind_global(_fallback_call(prim, eqn.params, len(outs)), "ho")
        return [_call_line(outs, fn, ins)]
    impl = bind_global(prim.impl, f"{identifier(prim.name)}_")
    call = f"{impl}({ins}"
    if eqn.params:
        params = bind_global(eqn.params, "p")
        call += f"{', ' if ins else ''}**{params}"  # no-operand primitives (iota) too
    call += ")"
    if prim.multiple_results:
        casts = [bind_global(_as_array(v.aval.dtype), "as_") for v in eqn.outvars]
        tmp = f"t{i}"
        return [f"    {tmp} = {call}"] + [
            f"    {o} = {c}({tmp}[{j}])" for j, (o, c) in enumerate(zip(outs, casts))
        ]
    cast = bind_global(_as_array(eqn.outvars[0].aval.dtype), "as_")
    return [f"    {outs[0]} = {cast}({call})"]


def _call_line(outs, fn, ins) -> str:
    """`outs, = fn(ins)`, or a bare call for an equation without outputs."""
    return f"    {', '.join(outs)}, = {fn}({ins})" if outs else f"    {fn}({ins})"


def identifier(name: str) -> str:
    """An ASCII identifier for `name` in generated source. Only ASCII letters, digits and "_"
    are kept: Python rejects some other "alphanumeric" characters in identifiers ("f²") and
    NFKC-normalises others ("ℌ" is read as "H", so the name bound by exec would differ from the
    one looked up). Callers append a numeric suffix, so the result is never a keyword."""
    name = unicodedata.normalize("NFKC", name)  # "ℌ" -> "H", "f²" -> "f2": readable where possible
    out = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name)
    return out if out and not out[0].isdigit() else f"f_{out}"


# ---------------------------------------------------------------------------------- profiling
# While a profiler trace is collected, the runtime runs `profiled(executable)`: a copy whose
# function records the run and each of its steps (a native segment, a fused kernel, an opaque
# call, a nested program) as spans of the thread running it. The timed function is generated
# once per program function, from the same source with a clock read around each step, so the
# plain function, the one every call runs when nothing is traced, is left exactly as it was.
_timed_fns: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CALLEE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(")
_SUFFIX = re.compile(r"_+[0-9]+_*$")


def profiled(executable: Executable) -> Executable:
    """A copy of `executable` that records its run (named like the program) and its steps."""
    plain = executable.fn
    timed = _timed_fns.get(plain)
    if timed is None:
        timed = _timed_fns[plain] = _timed_program(plain, executable.segments)
    name, backend = executable.name, getattr(plain, "_morphax_backend", executable.backend)
    origin, queued_at = events.current_thread_id(), events.now()

    def run(*args, **kwargs):
        start = events.now()
        if events._get_ident() != origin:  # queued: an arrow from where it was dispatched
            events.flow("dispatch", "execute", origin, queued_at, start)
        try:
            return timed(*args, **kwargs)
        finally:
            events.complete(name, "execute", start, events.now(), {"backend": backend})

    out = copy.copy(executable)
    out.fn = run
    out.direct = None
    return out


def _step_name(line: str, env: dict) -> str | None:
    """What a line of a generated program runs, for its span: the callee's name without its
    numeric suffix (a kernel "f_k0", a segment "f_seg0", a primitive "sin"), a nested program's
    own name; None for lines that only move values (constants, casts of a tuple's parts)."""
    for callee in _CALLEE.findall(line):
        if callee.startswith("as_") or callee not in env:
            continue
        target = env[callee]
        if isinstance(target, Executable):
            return target.name
        return _SUFFIX.sub("", callee) or callee
    return None


def _timed_program(fn, segments=()):
    """`fn` generated again with each step timed; a native segment's span also says how many
    steps (kernels, BLAS calls, loops) run inside it, which are not timed one by one."""
    source = getattr(fn, "_morphax_source", None)
    if source is None:  # not a generated program (a test's stand-in): time it as one step
        return fn
    env = dict(fn.__globals__)
    env["_mx_now"], env["_mx_step"] = events.now, events.complete
    inside = {name: (steps, scratch) for name, steps, scratch in segments}
    header, *body = source.splitlines()
    lines = [header]
    for line in body:
        name = None
        stripped = line.strip()
        if not stripped.startswith(("del ", "return ")):
            name = _step_name(line, env)
        if name is None:
            lines.append(line)
            continue
        args = {"code": stripped}
        if name in inside:
            args["native steps"], args["scratch bytes"] = inside[name]
        lines.append("    _mx_t = _mx_now()")
        lines.append(line)
        lines.append(f"    _mx_step({name!r}, 'kernel', _mx_t, _mx_now(), {args!r})")
    fn_name = header[len("def ") : header.index("(")]
    exec(compile("\n".join(lines) + "\n", f"<morphax profiled {fn_name}>", "exec"), env)
    return env.pop(fn_name)
