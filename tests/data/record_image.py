"""Record JAX's `jax.image.resize` / `scale_and_translate` outputs on small inputs into image.json.

Run with a Python that has the real JAX (never imported by morphax or its tests):

    /tmp/jaxvenv/bin/python tests/data/record_image.py
"""

from __future__ import annotations

import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from jax import image

X = np.random.default_rng(0).normal(size=(5, 6)).astype(np.float32)
CASES = []
for method in ["nearest", "linear", "cubic", "lanczos3", "lanczos5", "cubic-pytorch", "area"]:
    for shape in [(9, 4), (3, 11), (2, 2)]:
        for antialias in (True, False):
            CASES.append({"call": "resize", "method": method, "shape": shape, "antialias": antialias})
for method in ["linear", "cubic", "lanczos3", "area", "cubic-pytorch"]:
    CASES.append(
        {
            "call": "scale_and_translate",
            "method": method,
            "shape": (7, 4),
            "scale": [1.3, 0.7],
            "translation": [0.5, -1.0],
        }
    )

for case in CASES:
    if case["call"] == "resize":
        out = image.resize(X, case["shape"], case["method"], antialias=case["antialias"])
    else:
        out = image.scale_and_translate(
            X, case["shape"], (0, 1), jnp.array(case["scale"]), jnp.array(case["translation"]), case["method"]
        )
    case["out"] = np.asarray(out, np.float64).tolist()

path = pathlib.Path(__file__).with_name("image.json")
path.write_text(json.dumps({"jax_version": jax.__version__, "input": X.tolist(), "cases": CASES}) + "\n")
print(f"wrote {len(CASES)} cases to {path}")
