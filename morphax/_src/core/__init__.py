"""morphax's core: avals, primitives, traces, jaxprs, pytrees and dtypes (see DESIGN.md).

Libraries written for JAX that import its internal `jax._src.core` (which `morphax.compat` maps
here) read a few types from the package itself; they are looked up on first use, so importing
one core module does not import the others.
"""

_FROM_SUBMODULES = {
    "ShapedArray": "avals",
    "get_aval": "avals",
    "Tracer": "trace",
    "Trace": "trace",
}


def __getattr__(name):
    module = _FROM_SUBMODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'morphax._src.core' has no attribute {name!r}")
    import importlib  # noqa: PLC0415

    return getattr(importlib.import_module(f"morphax._src.core.{module}"), name)
