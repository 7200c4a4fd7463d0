"""Record JAX's `jax.experimental.jet` results into jet.json (the test evaluates the same
expressions with morphax and compares). Run with a Python that has the real JAX:

    /tmp/jaxvenv/bin/python tests/data/record_jet.py

Each case is the source of a function of one array `v` over `jnp`, `lax`, `nn` and `special`;
the jet is taken at X with the four derivative terms TERMS, in float64.
"""

from __future__ import annotations

import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.jet import jet

jax.config.update("jax_enable_x64", True)

X = [0.3, 0.7, 1.4]
TERMS = [[1.0, -0.5, 0.25], [0.2, 0.1, -0.3], [0.05, 0.4, 0.1], [-0.3, 0.2, 0.6]]
CASES = [
    "jnp.sin(v)", "jnp.cos(v)", "jnp.exp(v)", "jnp.log(v)", "jnp.tanh(v)", "nn.sigmoid(v)",
    "jnp.sqrt(v)", "lax.rsqrt(v)", "jnp.expm1(v)", "jnp.log1p(v)", "jnp.sinh(v)", "jnp.cosh(v)",
    "v ** 2.5", "v ** 3", "v ** -2", "special.erf(v)", "special.erfinv(v / 2)", "special.erfc(v)",
    "jnp.arctan2(v, 1.5 - v)", "jnp.sin(v) / (1 + v * v)", "(1 + v) ** v", "jnp.maximum(v, 0.7)",
    "jnp.abs(v - 0.5)", "jnp.dot(v, jnp.sin(v)) * jnp.sum(v ** 2)", "nn.softmax(v)",
    "special.logsumexp(v)", "jax.jit(lambda w: jnp.tanh(w) * jnp.exp(-w) + jnp.sqrt(w))(v)",
    "jnp.where(v > 0.5, v ** 2, jnp.sin(v))", "jnp.cumsum(v)", "jnp.linalg.norm(v)", "nn.gelu(v)",
    "jnp.arcsinh(v)", "jnp.square(v)", "jnp.max(v * jnp.array([1.0, 1.0, 0.5]))",
    "jnp.outer(v, v) @ jnp.cos(v)",
]  # fmt: skip


def main():
    x = jnp.array(X)
    terms = [jnp.array(t) for t in TERMS]
    out = {}
    for src in CASES:
        fun = eval(f"lambda v: {src}")  # noqa: S307 - our own expressions
        primal, series = jet(fun, (x,), (terms,))
        out[src] = [np.asarray(primal).tolist()] + [np.asarray(s).tolist() for s in series]
    path = pathlib.Path(__file__).with_name("jet.json")
    path.write_text(
        json.dumps({"jax": jax.__version__, "x": X, "terms": TERMS, "cases": out}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
