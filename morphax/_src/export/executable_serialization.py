"""Compiled programs as bytes (JAX's `jax.experimental.serialize_executable`): `serialize` writes
a `Compiled`'s program (its jaxpr, in export's pickled form, with the function's name, backend and
argument names) and returns the argument and result tree structures beside the bytes, as JAX
does (tree structures do not serialize); `deserialize_and_load` builds the `Compiled` back.

morphax compiles a jaxpr to C (or for a PJRT plugin) and keeps the result in its disk cache, keyed
by the generated code: loading the same program in another process finds the compiled library
there and does not run the C compiler again. Loading reads a pickle: only load bytes you trust,
as with JAX.
"""

from __future__ import annotations

import io
import pickle

from morphax._src.api.stages import Compiled, Traced
from morphax._src.export import jaxpr_pickle
from morphax._src.export.shape_specs import SymbolicScope

_MAGIC = b"morphax-executable-1\n"


def serialize(compiled: Compiled):
    """(bytes, in_tree, out_tree) for `compiled` (`jit(f).lower(...).compile()`)."""
    if not isinstance(compiled, Compiled):
        raise TypeError(
            f"serialize: expected a Compiled (jit(f).lower(*args).compile()), got {type(compiled).__name__}"
        )
    traced = compiled._traced
    record = {
        "fun_name": traced.fun_name,
        "backend": traced.backend,
        "arg_names": traced.arg_names,
        "donated": list(getattr(traced, "donated", None) or []),
        "compiler_options": dict(compiled.compiler_options),
        "jaxpr": jaxpr_pickle.dumps(traced.jaxpr, traced.fun_name),
    }
    buf = io.BytesIO()
    buf.write(_MAGIC)
    pickle.dump(record, buf, protocol=5)
    return buf.getvalue(), traced.in_tree, traced.out_tree


def deserialize_and_load(serialized, in_tree, out_tree, backend=None, execution_devices=None) -> Compiled:
    """The `Compiled` that `serialize` wrote, called with arguments of structure `in_tree`.
    `backend` ("c", "numpy", "xla"; default: the one it was compiled for) picks the compiler."""
    del execution_devices  # a morphax program runs on the devices of its arguments
    data = bytes(serialized)
    if not data.startswith(_MAGIC):
        raise ValueError(
            "deserialize_and_load: these bytes were not written by morphax's serialize_executable.serialize."
        )
    record = pickle.loads(data[len(_MAGIC) :])
    closed = jaxpr_pickle.loads(record["jaxpr"], SymbolicScope(()))
    traced = Traced(
        closed,
        in_tree,
        out_tree,
        None,
        record["fun_name"],
        record["arg_names"],
        backend if isinstance(backend, str) else record["backend"],
    )
    if record["donated"]:
        traced.donated = record["donated"]
    compiled = Compiled(traced)
    compiled.compiler_options = record["compiler_options"]
    return compiled
