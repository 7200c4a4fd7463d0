"""`import morphax` stays cheap: SciPy and ml_dtypes (together several times the cost of `import
numpy`) are imported only when something that needs them runs. Each check runs in a fresh
interpreter and counts modules in sys.modules (never times): after `import morphax` neither is
loaded; `jnp.bfloat16`, the string "bfloat16", `morphax.dtypes.float8_e4m3fn` and
`morphax.scipy.special.erf` then load what they need and work; ml_dtypes values made by the caller
(who imported ml_dtypes first) are known to morphax's dtype rules."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_import_morphax_loads_neither_scipy_nor_ml_dtypes():
    out = _run(
        """
        import sys
        import morphax, morphax.numpy, morphax.lax, morphax.dtypes, morphax.random, morphax.nn
        print(sorted(m for m in ("scipy", "ml_dtypes") if m in sys.modules))
        """
    )
    assert out.strip() == "[]"


def test_float32_programs_do_not_need_ml_dtypes():
    # A jitted training step with reductions, a host read and an array's repr: numpy's own dtypes.
    # (SciPy may load: the C backend's matrix products call SciPy's BLAS.)
    out = _run(
        """
        import sys
        import morphax, morphax.numpy as jnp

        def loss(w, x):
            return jnp.mean(jnp.tanh(x @ w) ** 2) + jnp.max(jnp.abs(w))

        w, x = jnp.ones((4, 3)), jnp.linspace(0, 1, 8).reshape(2, 4)
        g = morphax.jit(morphax.grad(loss))(w, x)
        print(repr(g.sum()), float(loss(w, x)), jnp.finfo(jnp.float32).eps, jnp.iinfo(jnp.int8).max)
        print("ml_dtypes" in sys.modules)
        """
    )
    assert out.splitlines()[-1] == "False", out


@pytest.mark.parametrize(
    "make",
    ["jnp.ones(3, jnp.bfloat16)", "jnp.ones(3, 'bfloat16')", "jnp.ones(3, morphax.dtypes.bfloat16)"],
)
def test_bfloat16_loads_ml_dtypes_on_first_use(make):
    out = _run(
        f"""
        import sys
        import morphax, morphax.numpy as jnp
        x = {make}
        y = morphax.jit(lambda x: x * 2 + 1.0)(x)
        print(y.dtype, y.tolist(), (x + jnp.ones(3, jnp.float16)).dtype, jnp.finfo(x.dtype).bits)
        print(jnp.issubdtype(x.dtype, jnp.floating), "bfloat16" in dir(jnp), "ml_dtypes" in sys.modules)
        """
    )
    assert out.splitlines() == ["bfloat16 [3.0, 3.0, 3.0] float32 16", "True True True"]


def test_narrow_types_and_scipy_on_first_use():
    out = _run(
        """
        import math, sys
        import morphax, morphax.numpy as jnp
        import morphax.scipy.special as special
        print("scipy" in sys.modules, "ml_dtypes" in sys.modules)
        print(abs(float(special.erf(0.5)) - math.erf(0.5)) < 1e-6, "scipy" in sys.modules)
        f8 = morphax.dtypes.float8_e4m3fn
        print(jnp.zeros(2, f8).dtype, jnp.zeros(2, jnp.int4).dtype, morphax.dtypes.itemsize_bits(jnp.int4))
        """
    )
    lines = out.splitlines()
    assert lines[0] == "False False" and lines[1] == "True True"
    assert lines[2] == "float8_e4m3fn int4 4"


def test_ml_dtypes_values_made_by_the_caller_are_known():
    # The caller imported ml_dtypes itself; morphax's tables learn its types on first sight.
    out = _run(
        """
        import ml_dtypes, numpy as np
        import morphax.numpy as jnp
        x = jnp.asarray(np.ones(2, ml_dtypes.bfloat16))
        print(x.dtype, jnp.result_type(x, jnp.float16), (x + 1).dtype)
        print(jnp.zeros(2, ml_dtypes.float8_e5m2).dtype, jnp.issubdtype(ml_dtypes.int4, jnp.integer))
        """
    )
    assert out.splitlines() == ["bfloat16 float32 bfloat16", "float8_e5m2 True"]
