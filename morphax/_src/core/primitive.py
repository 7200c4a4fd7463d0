"""`Primitive`: the unit every transformation understands, with one slot per rule.

A primitive is declared once, in one block under `_src/prims/`, which fills the slots below.
`bind` hands the primitive to the current trace; this module knows no trace types.
"""

from __future__ import annotations

from morphax._src.core import trace as _trace

# Every primitive ever created, by name: the test matrix and the docs enumerate this.
registry: dict[str, Primitive] = {}


class Primitive:
    """A named operation with static params and its rules.

    Slots (all optional except ``impl`` and ``abstract_eval``):
      impl(*np_arrays, **params)       the NumPy reference: semantics, eager path, test oracle
      abstract_eval(*avals, **params)  output aval(s); raises a clear error on bad input
      jvp, transpose, batch, lower     filled by the autodiff, vmap and compiler issues
      test_spec                        domain/dtypes/special values for the generated tests
    """

    def __init__(self, name: str, *, multiple_results: bool = False):
        if name in registry:
            raise ValueError(f"primitive {name!r} is defined twice; each primitive lives in one block")
        self.name = name
        self.multiple_results = multiple_results
        self.impl = None
        self.abstract_eval = None
        self.jvp = None
        self.transpose = None
        self.batch = None
        self.partial_eval = None
        # Collectives name the param holding the vmap/pmap axis names they act on.
        self.named_axes_param = None  # higher-order primitives: split known/unknown work (see pjit)
        self.lower = None
        self.test_spec = None
        # Higher-order primitives (jit calls, control flow) carry jaxprs in their params.
        self.higher_order = False
        # Call-like primitives (jit, checkpoint, custom-rule calls) whose evaluation is exactly
        # their jaxpr on their operands name the param holding it; compilers inline or call it.
        self.call_jaxpr_param: str | None = None
        # Must run even when its outputs are unused, and never be merged with an identical call.
        self.has_side_effects = False
        # Runs user Python on the host (callbacks): the runtime runs a program containing it on
        # the calling thread, never on a device stream, so a blocking callback stalls only its
        # own computation, and its exceptions are raised at the call as in JAX.
        self.calls_host = False
        # Params left out of the printed jaxpr while they hold these values (JAX hides e.g.
        # ``accuracy=None`` on transcendental functions).
        self.print_hidden_defaults: dict = {}
        registry[name] = self

    def bind(self, *args, **params):
        return _trace.ctx.trace.process_primitive(self, args, params)

    def def_impl(self, fn):
        self.impl = fn
        return fn

    def def_abstract_eval(self, fn):
        self.abstract_eval = fn
        return fn

    def __repr__(self):
        return self.name

    def __reduce__(self):
        return (_lookup, (self.name,))


def _lookup(name):
    return registry[name]
