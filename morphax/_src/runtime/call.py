"""Eager execution of `pjit`: compile its jaxpr (once) and run it on the device stream.

Installed as pjit's impl at import, so the transforms layer never imports the compiler or the
runtime (jit.py keeps a jaxpr-interpreting impl as the fallback definition).
"""

from __future__ import annotations

from morphax._src.compiler.compile import compile_jaxpr
from morphax._src.runtime import dispatch, eager
from morphax._src.transforms.jit import pjit_p


def call_compiled(args, jaxpr, name, backend=None, donate: tuple = ()):
    """Run the compiled `jaxpr` on `args`; the Arrays at positions `donate` are consumed (their
    buffers may hold outputs)."""
    executable = compile_jaxpr(jaxpr, name, backend, donate)
    outs = dispatch.execute(executable, args, executable.out_weak_types, donate=bool(donate))
    if eager._float_checks:
        # jax_debug_nans/infs: a bad output reruns the jaxpr op by op to name the culprit.
        eager.check_call_outputs(name, jaxpr, args, outs)
    return outs


def _pjit_compiled_impl(*args, jaxpr, name):
    return call_compiled(args, jaxpr, name)


pjit_p.impl = _pjit_compiled_impl
