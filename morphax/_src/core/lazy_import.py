"""Deferred imports of the heavy optional-at-startup dependencies (SciPy, ml_dtypes).

`import morphax` should cost little more than `import numpy`; SciPy (about 0.15 s) and
ml_dtypes (about 0.5 s on a small machine) are loaded only when a function that needs them runs.
`LazyModule("scipy.special")` stands for the module and imports it at the first attribute read;
`LazyModule.deferred(name)` is a function that looks the attribute up at its first call, for
module-level code that stores a SciPy function in a table at import.
"""

from __future__ import annotations

import importlib


class LazyModule:
    """A module imported at its first attribute read (then the real attributes, unchanged)."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def _load(self):
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return module

    def __getattr__(self, attr):
        return getattr(self._load(), attr)

    def deferred(self, attr: str):
        """A function calling ``module.attr`` without importing the module until its first call."""
        lazy = self
        target = None

        def call(*args, **kwargs):
            nonlocal target
            if target is None:
                target = getattr(lazy._load(), attr)
            return target(*args, **kwargs)

        call.__name__ = call.__qualname__ = attr
        call.__doc__ = f"{self._name}.{attr}, imported at the first call."
        return call

    def __repr__(self):
        state = "loaded" if self._module is not None else "not loaded yet"
        return f"<lazy module {self._name!r} ({state})>"
