"""Record JAX 0.10.2's `make_jaxpr` text of library functions that JAX decorates with `jit`
(nested ``jit[name=...]`` equations) and of some it does not (softmax), into
library_jit_text.json; tests/compat/test_library_jit_text.py compares morphax's text with it.

Run with a Python that has the real JAX (never imported by morphax or its tests):

    /tmp/jaxvenv/bin/python tests/data/record_library_jit_text.py

Each case is the source of an expression over `jax`, `jnp`, `random` and `make_jaxpr`; the test
evaluates the same source with morphax's modules.
"""

from __future__ import annotations

import json
import pathlib

import jax
import jax.numpy as jnp  # noqa: F401  (used by the cases' source)
from jax import make_jaxpr, random  # noqa: F401

CASES = [
    "make_jaxpr(jax.nn.selu)(jnp.ones(3))",
    "make_jaxpr(jax.nn.selu)(jnp.ones((2, 5)))",
    "make_jaxpr(jax.nn.selu)(jnp.ones(4, jnp.bfloat16))",
    "make_jaxpr(jax.nn.selu)(jnp.ones((), jnp.float16))",
    "make_jaxpr(jax.nn.relu)(jnp.ones(3))",
    "make_jaxpr(jax.nn.relu)(jnp.ones((2, 2), jnp.int32))",
    "make_jaxpr(jax.nn.relu)(jnp.ones(5, jnp.bfloat16))",
    "make_jaxpr(jax.nn.softmax)(jnp.ones((3, 4)))",
    "make_jaxpr(lambda x: jax.nn.softmax(x, axis=0))(jnp.ones((2, 3, 4)))",
    "make_jaxpr(jax.nn.softmax)(jnp.ones(5, jnp.float16))",
    "make_jaxpr(jnp.linalg.norm)(jnp.ones((3, 4)))",
    "make_jaxpr(jnp.linalg.norm)(jnp.ones(7))",
    "make_jaxpr(lambda x: jnp.linalg.norm(x, axis=1, keepdims=True))(jnp.ones((3, 4)))",
    "make_jaxpr(lambda x: jnp.linalg.norm(x, ord=1))(jnp.ones(5))",
    "make_jaxpr(jnp.linalg.norm)(jnp.ones((2, 2), jnp.bfloat16))",
    "make_jaxpr(lambda x: jnp.where(x > 0, x, 0.0))(jnp.ones(3))",
    "make_jaxpr(lambda x: jnp.where(x > 0, x, 1.5 * x))(jnp.ones((2, 3)))",
    "make_jaxpr(lambda k: random.normal(k, (3,)))(random.PRNGKey(0))",
    "make_jaxpr(lambda k: random.normal(k, (2, 3), jnp.bfloat16))(random.PRNGKey(0))",
    "make_jaxpr(lambda k: random.normal(k, (4,)))(random.key(0))",
]


def main():
    out = {"jax_version": jax.__version__, "cases": {src: str(eval(src)) for src in CASES}}
    path = pathlib.Path(__file__).with_name("library_jit_text.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {len(CASES)} cases to {path}")


if __name__ == "__main__":
    main()
