"""The founding article's examples (SEED_EXAMPLES.md), written once against a library namespace
so the same code runs on morphax and, to record reference numbers, on JAX:

    python -m morphax.examples.seed_examples            # morphax
    python -m morphax.examples.seed_examples --jax out.json   # JAX, if installed: writes references
"""

from __future__ import annotations

import argparse
import importlib
import json

import numpy as np


def run(lib: str = "morphax") -> dict:
    """Run every snippet with `lib` ("morphax" or "jax"); returns named results as nested lists."""
    jax = importlib.import_module(lib)
    jnp = importlib.import_module(f"{lib}.numpy")
    random = importlib.import_module(f"{lib}.random")
    tree_util = importlib.import_module(f"{lib}.tree_util")
    nn = importlib.import_module(f"{lib}.nn")
    vmap, jit, grad, jvp, vjp = jax.vmap, jax.jit, jax.grad, jax.jvp, jax.vjp
    out = {}

    # -- vmap: automatic vectorization, in_axes and out_axes
    key = random.PRNGKey(0)
    mat = random.normal(key, (150, 100))
    batched_x = random.normal(key, (10, 100))
    out["vmap_none_0"] = vmap(lambda mat, v: jnp.dot(mat, v), (None, 0))(mat, batched_x)
    out["vmap_0"] = vmap(lambda v: jnp.dot(mat, v), 0)(batched_x)
    out["vmap_1_0"] = vmap(lambda v: jnp.dot(mat, v), 1, 0)(random.normal(key, (100, 10)))
    out["vmap_1_1"] = vmap(lambda v: jnp.dot(mat, v), 1, 1)(random.normal(key, (100, 10)))
    vv = lambda v1, v2: jnp.vdot(v1, v2)
    mv = vmap(vv, (0, None), 0)
    mm = vmap(mv, (None, 1), 0)
    out["mm_unusual_layout"] = mm(mat, batched_x.T)
    out["mv_none_0"] = vmap(mv, (None, 0), 0)(mat, batched_x)

    # -- Pytrees: a user class, then jit and grad over it
    @tree_util.register_pytree_node_class
    class Point:
        def __init__(self, x, y, z):
            self.x = x
            self.y = y
            self.z = z

        def __repr__(self):
            return f"Point({self.x}, {self.y}, {self.z})"

        def tree_flatten(self):
            return ((self.x, self.y, self.z), None)

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            return cls(*children)

    @jit
    def dist_orig(pt: Point):
        return jnp.sqrt(pt.x**2 + pt.y**2 + pt.z**2)

    g = grad(dist_orig)(Point(1.0, 2.0, 3.0))
    out["grad_point"] = [g.x, g.y, g.z]

    # -- jvp and vjp on a logistic-regression model
    key = random.PRNGKey(0)

    def predict(W, b, inputs):
        return nn.sigmoid(jnp.dot(inputs, W) + b)

    inputs = jnp.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.39], [0.74, -2.49, 1.39]])
    targets = jnp.array([True, True, False, True])

    def loss(W, b):
        preds = predict(W, b, inputs)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))

    key, W_key, b_key = random.split(key, 3)
    W = random.normal(W_key, (3,))
    b = random.normal(b_key, ())
    out["W"], out["b"] = W, b
    key, subkey = random.split(key)
    v = random.normal(subkey, W.shape)
    y, u = jvp(lambda W: predict(W, b, inputs), primals=(W,), tangents=(v,))
    out["jvp_y"], out["jvp_u"] = y, u
    y, vjp_fun = vjp(lambda W: predict(W, b, inputs), W)
    key, subkey = random.split(key)
    u = random.normal(subkey, y.shape)
    identity = jnp.eye(*y.shape, dtype=jnp.float32)
    out["vjp_u"] = vjp_fun(u)[0]
    out["vjp_rows"] = [vjp_fun(identity[i])[0] for i in range(4)]
    gW, gb = grad(loss, argnums=(0, 1))(W, b)
    out["grad_loss_W"], out["grad_loss_b"] = gW, gb
    return {k: np.asarray(v, dtype=np.float64).tolist() for k, v in out.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jax", metavar="OUT_JSON", help="run with JAX and write the reference results here")
    args = parser.parse_args()
    if args.jax:
        results = run("jax")
        with open(args.jax, "w") as f:
            json.dump(results, f)
        print(f"wrote {len(results)} reference results to {args.jax}")
        return
    for name, value in run("morphax").items():
        arr = np.asarray(value)
        print(f"{name:18s} shape={arr.shape} first={arr.ravel()[:3]}")


if __name__ == "__main__":
    main()
