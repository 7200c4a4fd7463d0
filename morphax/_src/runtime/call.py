"""Eager execution of `pjit`: compile its jaxpr (once) and run it on the device stream.

Installed as pjit's impl at import, so the transforms layer never imports the compiler or the
runtime (jit.py keeps a jaxpr-interpreting impl as the fallback definition).
"""

from __future__ import annotations

from morphax._src.compiler.compile import compile_jaxpr
from morphax._src.runtime import dispatch, eager
from morphax._src.runtime.array import Array
from morphax._src.transforms.jit import pjit_p


def call_compiled(args, jaxpr, name):
    executable = compile_jaxpr(jaxpr, name)
    outs = dispatch.execute(executable, args, executable.out_weak_types)
    if eager._float_checks:
        # jax_debug_nans/infs: a bad output reruns the jaxpr op by op to name the culprit.
        eager.check_call_outputs(name, jaxpr, args, outs)
    return outs


def _pjit_compiled_impl(*args, jaxpr, name):
    return call_compiled(args, jaxpr, name)


pjit_p.impl = _pjit_compiled_impl


def run_compiled_sync(closed, args):
    """Compile `closed` once and run it now on the calling thread (loop bodies read results
    every iteration, so they must not queue behind the work that runs them)."""
    executable = compile_jaxpr(closed, "loop_body")
    values = [dispatch._host_value(a, v) for a, v in zip(args, executable.in_avals)]
    outs = executable(*values)
    return [Array(o, w) for o, w in zip(outs, executable.out_weak_types)]


def _install_loop_runner():
    from morphax._src.control_flow import while_loop

    while_loop.body_runner[0] = run_compiled_sync


_install_loop_runner()
