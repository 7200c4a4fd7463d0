"""The `xla` backend: a whole optimized jaxpr lowered to one StableHLO module (lowering.py),
compiled and run by a PJRT plugin (morphax._src.pjrt) -- XLA's CPU plugin here, an accelerator's
plugin the same way. Inputs and outputs are NumPy arrays; a call goes through the C launcher
(launch.py): on XLA's CPU plugin outputs view XLA's buffers and pass back in uncopied, elsewhere
each call copies its inputs to the device and its outputs back.

Unlike the c and numpy backends it fuses nothing itself (XLA does), so it offers
`compile_whole(closed, name) -> Executable` instead of building a Program's kernels, and
`compile_replicated` for a pmap's program run on several devices at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading

import numpy as np

from morphax._src.compiler.backends.xla import executable_cache, host_steps, launch
from morphax._src.compiler.backends.xla.lowering import block_shape, lower_module
from morphax._src.compiler.backends.xla.mlir_text import LoweringError
from morphax._src.config import requested_cpu_devices
from morphax._src.core.dtypes import float0
from morphax._src.core.jaxpr import Literal

__all__ = ["BACKEND", "LoweringError"]

logger = logging.getLogger("morphax")
_noted_on_host: set = set()  # primitives said to run on the host (once each)


class _Caps:
    """No fusion of the kernel IR: the module goes to XLA whole."""

    native_scratch = None

    def supports(self, eqn) -> bool:
        return False

    def fuses_view(self, eqn) -> bool:
        return False


# XLA flags that give JAX's semantics where a plugin's own defaults differ: XLA's CPU plugin on
# PyPI builds min/max that drop NaN (`fast_min_max`), where jaxlib's XLA propagates it as
# StableHLO specifies. A plugin reads XLA_FLAGS when its client is created; a flag the user set
# wins. (An unknown flag aborts the process, so only flags every XLA build knows go here.)
_JAX_SEMANTICS_FLAGS = ("--xla_cpu_enable_fast_min_max=false",)


@contextlib.contextmanager
def _jax_semantics_flags():
    before = os.environ.get("XLA_FLAGS")
    given = before or ""
    extra = [f for f in _JAX_SEMANTICS_FLAGS if f.split("=")[0] not in given]
    if extra:
        os.environ["XLA_FLAGS"] = " ".join([given, *extra]).strip()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("XLA_FLAGS", None)
        else:
            os.environ["XLA_FLAGS"] = before


def _open_client(pjrt_client, path=None):
    """The client of the plugin at `path` (default: the one found). XLA's CPU plugin is asked to
    run programs on the calling thread ("asynchronous": false): morphax's own streams make
    dispatch asynchronous, and a PJRT execution handed to the plugin's threads cost a thread
    handoff per call (a jitted per-example gradient took 120 us instead of 25)."""
    from morphax._src.pjrt import plugin as pjrt_plugin

    plugin = pjrt_plugin.load(path)
    if os.path.basename(plugin.path) != pjrt_plugin.CPU_LIBRARY:  # not known by its name: ask it
        client = pjrt_client.Client.for_plugin(plugin)
        if client.platform_name != "cpu":
            return client
    # As many devices as morphax's CPU devices (a pmap's replicas run on them), at least the
    # plugin's default of 4.
    count = max(requested_cpu_devices(), 4)
    return pjrt_client.Client(plugin, {"asynchronous": False, "cpu_device_count": count})


class XlaBackend:
    name = "xla"
    caps = _Caps()

    def __init__(self):
        self._client = None
        self._lock = threading.Lock()
        self._reason = None
        self._path = None
        # The device platform ("tpu", "xla_cpu") whose arrays this backend's programs hold, or
        # None: programs take and return NumPy arrays (platform.py decides).
        self.device_platform = None

    def client(self):
        """The PJRT client of the plugin found (created once); raises what went wrong."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    from morphax._src.pjrt import client as pjrt_client

                    with _jax_semantics_flags():
                        self._client = _open_client(pjrt_client, self._path)
        return self._client

    def open_for_devices(self, path: str, platform: str) -> None:
        """Open the plugin at `path` as the device platform `platform`: from now on this
        backend's programs take and return device buffers (arrays living on its devices)."""
        if self._client is not None and os.path.realpath(self._client.plugin.path) != os.path.realpath(path):
            raise RuntimeError(
                f"the xla backend already runs on {self._client.plugin.path}; the {platform} platform "
                f"needs {path}: choose the platform (jax_platforms) before the first xla program"
            )
        self._path = path
        self._reason = None
        self.client()
        self.device_platform = platform

    def available(self) -> bool:
        if self._reason is None:
            try:
                self.client()
                self._reason = ""
            except Exception as e:  # noqa: BLE001 - any failure means: not here
                self._reason = f"{type(e).__name__}: {e}"
        return not self._reason

    def platform(self) -> str:
        """The PJRT platform of the plugin found ("cpu", "tpu")."""
        return self.client().platform_name

    def unavailable_reason(self) -> str:
        self.available()
        return self._reason

    def build(self, program, on_ready=None):
        raise LoweringError("the xla backend compiles whole programs (compile_whole), not kernels")

    def compile_whole(self, closed, name: str):
        from morphax._src.compiler.executor import Executable

        if any(a.dtype == float0 for a in (*closed.in_avals, *closed.out_avals)):
            return self._without_float0(closed, name)
        steps = host_steps.plan(closed.jaxpr)
        device_run = None
        if len(steps) == 1 and steps[0][0] == "device" or not closed.jaxpr.eqns:
            text = lower_module(closed, f"jit_{name}", platform=self.platform())
            if self.device_platform is not None:
                run, device_run = self._resident_call(closed, text)
                direct = None
            else:
                run, direct = self._device_call(closed, text)
            sources = [text]
        else:  # host steps between device programs (host_steps.py)
            run, sources = self._split_program(closed, name, steps)
            text = "\n\n".join(sources)
            direct = None
            if self.device_platform is not None:
                device_run = _through_host(run)
                self._note_host_steps(steps)
        executable = Executable(run, text, closed, name, "xla", sources, len(sources))
        # The fast path of a call (runtime/call_fast.py) runs the C launcher directly.
        executable.direct = direct
        # On a device platform: device buffers (or NumPy arrays) in, device buffers out.
        executable.device_run = device_run
        # The module as Lowered.as_text() shows it: the same, with JAX's names of the results.
        if len(sources) == 1:
            executable.stablehlo_text = lambda result_names=None: lower_module(
                closed, f"jit_{name}", result_names, platform=self.platform()
            )
        return executable

    def _device_call(self, closed, text):
        """`run(*numpy arrays) -> [numpy arrays]` of one device program, and its C launcher
        (launch.py; None where it cannot be built), which `run` also calls first."""
        client = self.client()
        compiled = executable_cache.compile(client, text)
        device = client.addressable_devices[0]
        out_dtypes = [np.dtype(a.dtype) for a in closed.out_avals]
        in_dtypes = [np.dtype(a.dtype) for a in closed.in_avals]
        direct = launch.launcher(client, compiled, device, closed.in_avals, closed.out_avals)

        def run(*args, reuse=()):
            args = [np.asarray(a, dtype=d, order="C") for a, d in zip(args, in_dtypes)]
            if direct is not None:
                outs = direct(*args)
                if outs is not None:
                    return outs
            # Through ctypes (no C launcher here, or an input it declined).
            buffers = [client.buffer_from_host(a, device) for a in args]
            outs = compiled.execute(buffers)
            return [o.to_numpy().astype(d, copy=False) for o, d in zip(outs, out_dtypes)]

        return run, direct

    def _without_float0(self, closed, name):
        """A program with float0 inputs or outputs (the tangents of integer values, which hold no
        data and StableHLO has no type for): compiled without them, its float0 outputs made on
        the host. A float0 input that an equation reads keeps the program off XLA."""
        from morphax._src.compiler.executor import Executable
        from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr

        jaxpr = closed.jaxpr
        dropped = [v for v in jaxpr.invars if v.aval.dtype == float0]
        used = {id(v) for e in jaxpr.eqns for v in e.invars if not isinstance(v, Literal)}
        if any(id(v) in used for v in dropped):
            raise LoweringError(f"{name}: an equation reads a float0 value, which has no StableHLO type")
        keep_in = [i for i, v in enumerate(jaxpr.invars) if v.aval.dtype != float0]
        zero_out = [i for i, v in enumerate(jaxpr.outvars) if v.aval.dtype == float0]
        outvars = [v for v in jaxpr.outvars if v.aval.dtype != float0]
        reduced = ClosedJaxpr(
            Jaxpr(jaxpr.constvars, [jaxpr.invars[i] for i in keep_in], outvars, jaxpr.eqns), closed.consts
        )
        inner = self.compile_whole(reduced, name)
        shapes = [closed.out_avals[i].shape for i in zero_out]

        def fill(outs):
            outs = list(outs)
            for i, shape in zip(zero_out, shapes):
                outs.insert(i, np.zeros(shape, float0))
            return outs

        def run(*args, reuse=()):
            return fill(inner.fn(*[args[i] for i in keep_in]))

        executable = Executable(
            run, inner.source, closed, name, "xla", inner._kernel_sources, inner.num_kernels
        )
        if inner.device_run is not None:
            executable.device_run = lambda inputs: fill(inner.device_run([inputs[i] for i in keep_in]))
        return executable

    def _note_host_steps(self, steps):
        """Say once per primitive that it runs on the host, not on the device platform."""
        for kind, eqn in steps:
            name = eqn.primitive.name if kind == "host" else None
            if name is not None and name not in _noted_on_host and not eqn.primitive.calls_host:
                _noted_on_host.add(name)
                logger.warning(
                    "morphax: %s has no lowering for the %s platform; it runs on the host (its "
                    "operands are copied there and back)",
                    name,
                    self.device_platform,
                )

    def _resident_call(self, closed, text):
        """`run(*numpy arrays) -> [numpy arrays]` and `device_run(inputs) -> [pjrt Buffers]` of one
        program whose arrays live on the device: inputs are the plugin's Buffers (passed as they
        are) or host arrays (copied in), and the outputs stay on the device, returned before the
        computation finishes (its errors surface where they are awaited)."""
        from morphax._src.pjrt.buffer import Buffer, OwnedBuffer

        client = self.client()
        compiled = executable_cache.compile(client, text)
        device = client.addressable_devices[0]
        in_dtypes = [np.dtype(a.dtype) for a in closed.in_avals]
        out_types = [(tuple(a.shape), np.dtype(a.dtype)) for a in closed.out_avals]

        def make_launcher(wait):
            return launch.launcher(
                client, compiled, device, closed.in_avals, closed.out_avals, device_outputs=True, wait=wait
            )

        # Made at the first call after the extension is built (in the background: a fresh
        # machine's first program does not wait for the C compiler).
        launcher = [make_launcher(False)]

        def device_run(inputs):
            direct = launcher[0]
            if direct is None and launch.module(wait=False) is not None:
                direct = launcher[0] = make_launcher(True)
            if direct is not None:
                args = [
                    a._ptr if isinstance(a, Buffer) else np.asarray(a, dtype=d, order="C")
                    for a, d in zip(inputs, in_dtypes)
                ]
                held = direct(*args)
                if held is not None:
                    return [
                        OwnedBuffer(client, h, s, d, direct, k)
                        for k, (h, (s, d)) in enumerate(zip(held, out_types))
                    ]
            # Through ctypes (no C launcher here, or an input it declined).
            buffers = [
                a if isinstance(a, Buffer) else client.buffer_from_host(np.asarray(a, dtype=d), device)
                for a, d in zip(inputs, in_dtypes)
            ]
            return compiled.execute(buffers)

        def run(*args, reuse=()):
            return [b.to_numpy() for b in device_run(args)]

        return run, device_run

    def compile_replicated(self, closed, name: str, axis_env: tuple, blocks=None):
        from morphax._src.compiler.executor import ReplicatedProgram
        from morphax._src.pjrt.buffer import Buffer

        """A pmap's per-device program as one module of N replicas (N the product of the axes'
        sizes), its collectives cross-replica operations: `run(per_device_args) ->
        per_device_outputs` runs it on the plugin's first N devices at once, NumPy in and out;
        with `blocks` (the pmap's in_axes and out_axes) the module's arguments and results are
        the devices' blocks of the mapped arrays (lower_module), and `device_run(per_device_inputs)
        -> per_device_buffers` takes blocks in device memory (or NumPy) and leaves its results
        there. None where a step must run on the host (a callback, a decomposition without a
        lowering) or the plugin has fewer devices."""
        axes = frozenset(n for n, _ in axis_env)
        steps = host_steps.plan(closed.jaxpr, axes)
        if any(kind == "host" for kind, _ in steps):
            return None
        client = self.client()
        replicas = int(np.prod([size for _, size in axis_env], dtype=np.int64))
        devices = client.addressable_devices[:replicas]
        if len(devices) < replicas:
            return None
        text = lower_module(
            closed, f"pmap_{name}", axis_env=axis_env, platform=client.platform_name, blocks=blocks
        )
        compiled = executable_cache.compile(client, text, devices)
        in_axes = blocks[0] if blocks is not None else (None,) * len(closed.in_avals)
        in_blocks = [block_shape(a.shape, ax) for a, ax in zip(closed.in_avals, in_axes)]
        in_dtypes = [np.dtype(a.dtype) for a in closed.in_avals]
        out_types = [(tuple(a.shape), np.dtype(a.dtype)) for a in closed.out_avals]

        def device_run(per_device_inputs):
            buffers = [
                [
                    x
                    if isinstance(x, Buffer)
                    else client.buffer_from_host(np.asarray(x, dtype=t).reshape(shape), d)
                    for x, t, shape in zip(args, in_dtypes, in_blocks)
                ]
                for args, d in zip(per_device_inputs, devices)
            ]
            return compiled.execute_replicated(buffers)

        def run(per_device_args):
            outs = device_run(per_device_args)
            return [
                [o.to_numpy().astype(t, copy=False).reshape(shape) for o, (shape, t) in zip(row, out_types)]
                for row in outs
            ]

        program = ReplicatedProgram(run, text, replicas)
        if blocks is not None:
            program.device_run = device_run
            program.devices = devices
        return program

    def _split_program(self, closed, name, steps):
        jaxpr = closed.jaxpr
        later = host_steps.uses_after(jaxpr, steps)
        runners, sources = [], []
        for k, (kind, body) in enumerate(steps):
            if kind == "device":
                part = host_steps.device_program(body, later[k])
                text = lower_module(part, f"jit_{name}_part{len(sources)}", platform=self.platform())
                sources.append(text)
                runners.append(
                    ("device", part.jaxpr.invars, part.jaxpr.outvars, self._device_call(part, text)[0])
                )
            else:
                runners.append(("host", body.invars, body.outvars, _host_call(body)))
        consts = list(zip(jaxpr.constvars, closed.consts))

        def run(*args, reuse=()):
            env = dict(consts)
            env.update(zip(jaxpr.invars, args))

            def read(v):
                return np.asarray(v.val, v.aval.dtype) if isinstance(v, Literal) else env[v]

            for _, ins, outs, call in runners:
                env.update(zip(outs, call(*[read(v) for v in ins])))
            return [read(v) for v in jaxpr.outvars]

        return run, sources


def _through_host(run):
    """`device_run` of a program with host steps: device inputs are copied to the host and it
    runs there step by step; its outputs are NumPy arrays."""

    def device_run(inputs):
        return run(*[a.to_numpy() if hasattr(a, "to_numpy") else a for a in inputs])

    return device_run


def _host_call(eqn):
    """One equation by its NumPy reference, on the host; a loop or branch by its host rule, its
    bodies compiled for this backend (whose own steps may run on the host again)."""
    from morphax._src.compiler.executor import _host_rule_call
    from morphax._src.higher_order.host_eval import host_rules

    prim, params = eqn.primitive, eqn.params
    dtypes = [np.dtype(v.aval.dtype) for v in eqn.outvars]
    rule = host_rules.get(prim)
    if rule is not None:
        return _host_rule_call(rule, params, "xla", dtypes)

    def call(*args):
        outs = prim.impl(*args, **params)
        outs = list(outs) if prim.multiple_results else [outs]
        return [np.asarray(o, dtype=d) for o, d in zip(outs, dtypes)]

    return call


BACKEND = XlaBackend()
