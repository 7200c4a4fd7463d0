"""A tour of what morphax does today; run with ``python -m morphax.examples.tour``.

Each section prints a heading, the code, and what it gives. It grows with every capability
(grad, vmap, jit and random join as they land).
"""

from __future__ import annotations

import textwrap

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax.tree_util import register_pytree_node_class, tree_flatten, tree_map, tree_unflatten


def section(title: str, code: str, env: dict) -> None:
    print(f"\n== {title} ==")
    for line in textwrap.dedent(code).strip().splitlines():
        print(f">>> {line}" if not line.startswith(" ") else f"... {line}")
    block = textwrap.dedent(code).strip()
    *body, last = block.splitlines()
    exec("\n".join(body), env)
    if last.startswith((" ", "print(")):
        exec(last, env)
    else:
        print(eval(last, env))


def main() -> None:
    env = {
        "np": np,
        "jnp": jnp,
        "lax": lax,
        "morphax": morphax,
        "tree_flatten": tree_flatten,
        "tree_unflatten": tree_unflatten,
        "tree_map": tree_map,
        "register_pytree_node_class": register_pytree_node_class,
    }
    section(
        "Immutable arrays with NumPy's API",
        """
        x = jnp.arange(6.0).reshape(2, 3)
        y = x.at[0, 1].set(10.0)
        (x[0, 1], y[0, 1])
    """,
        env,
    )
    section(
        "In-place writes are refused, with the fix in the message",
        """
        try:
            x[0, 0] = 1.0
        except TypeError as e:
            msg = str(e)
        msg.split('. ')[1]
    """,
        env,
    )
    section(
        "JAX's type promotion with weak types",
        """
        f16 = jnp.ones(3, dtype=jnp.float16)
        ((f16 * 2.0).dtype, (f16 + jnp.ones(3)).dtype, (jnp.int8(1) + 1).dtype, jnp.array(2.0))
    """,
        env,
    )
    section(
        "Tracing to a jaxpr",
        """
        print(morphax.make_jaxpr(lambda x, y: jnp.sin(x) * y + 2.0)(jnp.ones(3), jnp.ones(3)))
    """,
        env,
    )
    section(
        "Broadcasting, reductions, einsum",
        """
        a = jnp.arange(12.0).reshape(3, 4)
        (a.sum(axis=0), a.mean(), jnp.einsum('ij,j->i', a, jnp.ones(4)))
    """,
        env,
    )
    section(
        "Advanced indexing lowers to one gather",
        """
        print(morphax.make_jaxpr(lambda a, i: a[i, 1:])(jnp.zeros((4, 3)), jnp.array([0, 2])))
    """,
        env,
    )
    section(
        "Pytrees: user classes flatten and unflatten",
        """
        @register_pytree_node_class
        class Point:
            def __init__(self, x, y, z):
                self.x = x; self.y = y; self.z = z
            def __repr__(self):
                return f"Point({self.x}, {self.y}, {self.z})"
            def tree_flatten(self):
                return ((self.x, self.y, self.z), None)
            @classmethod
            def tree_unflatten(cls, aux_data, children):
                return cls(*children)
        leaves, treedef = tree_flatten({"p": Point(1.0, 2.0, 3.0), "n": None})
        (leaves, treedef, tree_map(lambda v: v * 10, Point(1, 2, 3)))
    """,
        env,
    )
    env.update(morphax=morphax)
    section(
        "grad, jvp and higher derivatives",
        """
        f = lambda x: jnp.sin(x) * x
        (morphax.grad(f)(1.0), morphax.grad(morphax.grad(morphax.grad(jnp.tanh)))(1.0), morphax.jvp(f, (1.0,), (1.0,)))
    """,
        env,
    )
    section(
        "Jacobians and Hessians of pytree functions",
        """
        loss = lambda p: jnp.sum(p["w"] ** 3) + p["b"] * jnp.sum(p["w"])
        morphax.hessian(loss)({"w": jnp.array([1.0, 2.0]), "b": jnp.array(3.0)})["w"]["w"]
    """,
        env,
    )
    section(
        "vmap: per-example gradients",
        """
        w = jnp.array([0.5, -1.0])
        xs = jnp.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        per_example = morphax.vmap(morphax.grad(lambda w, x: jnp.tanh(jnp.dot(w, x))), in_axes=(None, 0))
        per_example(w, xs)
    """,
        env,
    )
    section(
        "jit composes with every transformation",
        """
        f = morphax.jit(lambda x: jnp.sum(jnp.tanh(x) ** 2))
        (f(jnp.ones(3)), morphax.grad(f)(jnp.ones(3)), morphax.vmap(morphax.grad(f))(jnp.ones((2, 3))).shape)
    """,
        env,
    )
    section(
        "random: bit-identical to JAX's threefry",
        """
        key = morphax.random.PRNGKey(0)
        k1, k2 = morphax.random.split(key)
        (k1, morphax.random.normal(k2, (3,)), morphax.random.randint(k1, (4,), 0, 10))
    """,
        env,
    )
    print("\n== The founding article's examples (SEED_EXAMPLES.md) ==")
    from morphax.examples import seed_examples

    results = seed_examples.run("morphax")
    for name in ("vmap_none_0", "vmap_1_1", "mm_unusual_layout", "grad_point", "jvp_u", "grad_loss_W"):
        value = np.asarray(results[name])
        print(f"{name:18s} shape={value.shape} values[:3]={np.round(value.ravel()[:3], 6)}")
    print("\nThe tour ran to the end.")


if __name__ == "__main__":
    main()
