"""Eager execution of `pjit`: compile its jaxpr (once) and run it on the device stream.

Installed as pjit's impl at import, so the transforms layer never imports the compiler or the
runtime (jit.py keeps a jaxpr-interpreting impl as the fallback definition).
"""

from __future__ import annotations

from morphax._src.compiler.compile import compile_jaxpr
from morphax._src.runtime import dispatch
from morphax._src.transforms.jit import pjit_p


def call_compiled(args, jaxpr, name):
    executable = compile_jaxpr(jaxpr, name)
    return dispatch.execute(executable, args, executable.out_weak_types)


def _pjit_compiled_impl(*args, jaxpr, name):
    return call_compiled(args, jaxpr, name)


pjit_p.impl = _pjit_compiled_impl
