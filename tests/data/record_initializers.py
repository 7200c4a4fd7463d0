"""Record JAX's numbers for `jax.nn.initializers` and the samplers they draw from into
initializers.json (the test compares morphax's draws for the same keys bit for bit).

Run with a Python that has the real JAX (never imported by morphax or its tests):

    /tmp/jaxvenv/bin/python tests/data/record_initializers.py

Each case is the source of an expression over `I` (the initializers module), `random`, `jnp` and
`key` (PRNGKey(42)); the test evaluates the same source with morphax's modules. Values are stored
as the hex of their bits, so the comparison is exact.
"""

from __future__ import annotations

import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from jax import random
from jax.nn import initializers as I  # noqa: N812

CASES = [
    "I.zeros(key, (2, 3))",
    "I.ones(key, (3,), jnp.float16)",
    "I.constant(-7.0)(key, (2, 2))",
    "I.uniform(10.0)(key, (4, 5))",
    "I.normal(3.0)(key, (4, 5))",
    "I.normal(3.0, jnp.bfloat16)(key, (4, 5))",
    "I.truncated_normal(2.0, lower=-1.0, upper=3.0)(key, (4, 5))",
    "I.truncated_normal()(key, (50,))",
    "I.glorot_uniform()(key, (6, 7))",
    "I.glorot_normal()(key, (6, 7))",
    "I.lecun_uniform()(key, (3, 3, 4, 5))",
    "I.lecun_normal()(key, (3, 3, 4, 5))",
    "I.he_uniform()(key, (8, 8), jnp.bfloat16)",
    "I.he_normal(in_axis=0, out_axis=1)(key, (5, 6, 2))",
    "I.xavier_uniform()(key, (2, 9))",
    "I.kaiming_normal()(key, (9, 2))",
    "I.variance_scaling(0.5, 'fan_out', 'normal', in_axis=(0, 1), out_axis=-1, batch_axis=2)(key, (2, 3, 4, 5))",
    "I.variance_scaling(0.5, 'fan_avg', 'uniform', in_axis=(0, 1), out_axis=-1, batch_axis=2)(key, (2, 3, 4, 5))",
    "I.variance_scaling(0.5, 'fan_geo_avg', 'truncated_normal')(key, (7, 3))",
    "I.variance_scaling(1.0, 'fan_in', 'uniform')(key, (5, 6), jnp.complex64)",
    "I.glorot_normal()(random.key(7), (3, 4))",
    "random.uniform(key, (64,), minval=-0.3, maxval=2.7)",
    "random.uniform(key, (3, 4), minval=jnp.arange(4.0), maxval=jnp.arange(4.0) * 1.7 + 1)",
]
# Within a few ulps of JAX rather than bit-identical: QR (LAPACK builds round differently),
# complex log/exp, and bounds whose float32 erf differs from XLA's polynomial by an ulp or two.
NEAR = [
    "random.truncated_normal(key, -1.5, 0.5, (64,))",
    "I.orthogonal()(key, (3, 5))",
    "I.orthogonal(2.0, column_axis=0)(key, (4, 3, 2))",
    "I.delta_orthogonal()(key, (3, 3, 4, 5))",
    "I.variance_scaling(1.0, 'fan_in', 'truncated_normal')(key, (5, 6), jnp.complex64)",
]


def _record(source):
    value = np.asarray(eval(source, {"I": I, "random": random, "jnp": jnp, "key": random.PRNGKey(42)}))  # noqa: S307
    bits = value.view(np.uint8).tobytes().hex()
    return {"source": source, "dtype": value.dtype.name, "shape": list(value.shape), "bits": bits}


out = {
    "jax_version": jax.__version__,
    "exact": [_record(s) for s in CASES],
    "near": [_record(s) for s in NEAR],
}
path = pathlib.Path(__file__).with_name("initializers.json")
path.write_text(json.dumps(out, indent=1) + "\n")
print(f"wrote {len(CASES) + len(NEAR)} cases to {path}")
