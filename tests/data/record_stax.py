"""Record the initial parameters JAX's stax draws for a few networks (same key) into stax.json.

Run with a Python that has the real JAX (never imported by morphax or its tests):

    /tmp/jaxvenv/bin/python tests/data/record_stax.py

Each network is the source of an expression over `stax`, evaluated with morphax's stax by the
test; parameters are stored as the hex of their bits (the comparison is exact).
"""

from __future__ import annotations

import json
import pathlib

import jax
import numpy as np
from jax.example_libraries import stax  # noqa: F401  (used by the evaluated sources)

NETWORKS = [
    ("stax.serial(stax.Dense(5), stax.Relu, stax.Dense(3), stax.LogSoftmax)", [-1, 4]),
    (
        "stax.serial(stax.Conv(6, (3, 3), padding='SAME'), stax.BatchNorm(), stax.Relu, "
        "stax.MaxPool((2, 2), strides=(2, 2)), stax.Flatten, stax.Dense(10))",
        [-1, 8, 8, 1],
    ),
    (
        "stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(4), stax.serial(stax.Dense(4), stax.Tanh)), "
        "stax.FanInConcat(), stax.Dense(2))",
        [-1, 3],
    ),
    (
        "stax.serial(stax.ConvTranspose(3, (2, 2), strides=(2, 2)), stax.AvgPool((2, 2)), stax.Gelu)",
        [-1, 4, 4, 2],
    ),
    ("stax.GeneralConv(('NCHW', 'OIHW', 'NHWC'), 4, (3, 2), strides=(1, 2))", [-1, 2, 7, 9]),
]

out = []
for source, shape in NETWORKS:
    init, _ = eval(source)  # noqa: S307
    out_shape, params = init(jax.random.PRNGKey(7), tuple(shape))
    leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(params)]
    out.append(
        {
            "source": source,
            "input_shape": shape,
            "output_shape": [int(d) for d in out_shape],
            "leaves": [
                {"dtype": x.dtype.name, "shape": list(x.shape), "bits": x.tobytes().hex()} for x in leaves
            ],
        }
    )
path = pathlib.Path(__file__).with_name("stax.json")
path.write_text(json.dumps({"jax_version": jax.__version__, "networks": out}) + "\n")
print(f"wrote {len(out)} networks to {path}")
