"""The per-function transformation matrix for `morphax.numpy`: each public function gets one or
more `Case`s (a sample input builder plus static arguments) in a `fn_cases_*.py` file beside this
one; tests/numpy/test_fn_matrix.py runs every case against NumPy, under jit, under vmap (against a
Python loop) and, for the differentiable ones, through `check_grads` in float64.

A case's `args` builder takes a NumPy Generator and returns the positional arguments: NumPy arrays
are the traced operands (batched by vmap, differentiated by grad when inexact); anything else is a
static argument. The builder must give the same shapes and static values for every generator, so
that several samples can be stacked into a batch.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np

import morphax.numpy as jnp

HERE = pathlib.Path(__file__).parent
API = HERE.parent / "data" / "api"
# Case.module -> (the morphax module, NumPy's module, JAX's name list)
MODULES = {
    "": (jnp, np, "jax_numpy.txt"),
    "linalg": (jnp.linalg, np.linalg, "jax_numpy_linalg.txt"),
    "fft": (jnp.fft, np.fft, "jax_numpy_fft.txt"),
}


@dataclasses.dataclass(frozen=True)
class Case:
    """One sample call of `morphax.numpy.<name>`.

    fn: the callable under test (default: the jnp function `name`); use a lambda to pick a float
      output out of a tuple, or to pass an operand by keyword.
    ref: the NumPy reference taking the same arguments: True means `numpy.<name>` (when NumPy has
      one and `fn` is not overridden), None means no NumPy comparison (the other tests still run).
    grad: check_grads the inexact array operands (False for non-differentiable functions, whose
      outputs are integers, booleans or piecewise constant).
    order: the check_grads order; vmap/jit: whether those samples run.
    dtype: the dtype JAX gives, where it is not NumPy's under x32 (None: derived from NumPy).
    module: "" for morphax.numpy, "linalg" or "fft" for its submodules.
    """

    name: str
    args: Callable[[np.random.Generator], tuple]
    kwargs: dict = dataclasses.field(default_factory=dict)
    fn: Callable | None = None
    ref: Any = True
    grad: bool = True
    order: int = 2
    vmap: bool = True
    jit: bool = True
    dtype: Any = None
    rtol: float | None = None
    atol: float | None = None
    label: str = ""
    module: str = ""

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}" if self.module else self.name

    @property
    def id(self) -> str:
        return f"{self.qualname}-{self.label}" if self.label else self.qualname

    def callable(self):
        f = self.fn if self.fn is not None else getattr(MODULES[self.module][0], self.name)
        if self.kwargs:
            kwargs = self.kwargs
            return lambda *a: f(*a, **kwargs)
        return f

    def reference(self):
        if self.ref is None or self.ref is False:
            return None
        if self.ref is True and self.fn is not None:
            return None  # a custom `fn` needs its own reference
        f = getattr(MODULES[self.module][1], self.name, None) if self.ref is True else self.ref
        if f is None:
            return None
        if self.kwargs and self.ref is True:
            kwargs = self.kwargs
            return lambda *a: f(*a, **kwargs)
        return f


# ---- sample builders: each returns a function of the generator --------------------------------


def normal(*shape, dtype=np.float32):
    return lambda rng: rng.standard_normal(shape).astype(dtype)


def uniform(*shape, lo=0.0, hi=1.0, dtype=np.float32):
    return lambda rng: rng.uniform(lo, hi, shape).astype(dtype)


def positive(*shape, dtype=np.float32):
    return uniform(*shape, lo=0.5, hi=2.0, dtype=dtype)


def integers(*shape, lo=-5, hi=6, dtype=np.int32):
    return lambda rng: rng.integers(lo, hi, size=shape).astype(dtype)


def booleans(*shape):
    return lambda rng: rng.random(shape) < 0.5


def complexes(*shape, dtype=np.complex64):
    return lambda rng: (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def const(value):
    """A static (non-traced) argument."""
    return lambda rng: value


def args(*builders):
    """Combine per-argument builders into a case's `args` builder."""
    return lambda rng: tuple(b(rng) for b in builders)


# ---- collection -------------------------------------------------------------------------------


def _load_case_modules():
    mods = []
    for path in sorted(HERE.glob("fn_cases_*.py")):
        spec = importlib.util.spec_from_file_location(f"_morphax_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mods.append(mod)
    return mods


def collect():
    """All cases and all exemptions ({name: reason}) from the fn_cases_*.py files."""
    cases, exempt = [], {}
    for mod in _load_case_modules():
        cases.extend(getattr(mod, "CASES", []))
        exempt.update(getattr(mod, "EXEMPT", {}))
    return cases, exempt


def public_functions(module: str = ""):
    """The callable names of JAX's name list for `module` (classes, dtypes and constants
    excluded), qualified as Case.qualname spells them."""
    import inspect

    namespace, _, list_name = MODULES[module]
    out = []
    for name in (n.strip() for n in (API / list_name).read_text().splitlines()):
        if not name:
            continue
        obj = getattr(namespace, name, None)
        if obj is None or inspect.isclass(obj) or isinstance(obj, (np.dtype, type)) or not callable(obj):
            continue
        out.append(f"{module}.{name}" if module else name)
    return out
