"""Issue 12 #7 and #12: bad input gets JAX's answer, or a clear error naming what is wrong.

Expected behaviour is JAX 0.10.2's, stated in each test.
"""

import string

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax, tree_util

# ------------------------------------------------------------------------------------------------
# custom_vjp: the bwd rule's output must have the primal arguments' structure and shapes.


def _with_bwd(bwd_out, nargs=1):
    @morphax.custom_vjp
    def f(x, *rest):
        return x * 2.0

    def f_fwd(x, *rest):
        return f(x, *rest), None

    def my_bwd(res, g):
        return bwd_out(g)

    f.defvjp(f_fwd, my_bwd)
    return f


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_custom_vjp_bwd_wrong_shape_raises_naming_the_rule(jit):
    # JAX: ValueError "Custom VJP bwd rule must produce an output with the same type as the args
    # tuple of the primal function, but at output[0] the bwd rule produced an output of type
    # float32[3] corresponding to an input of type float32[], so the shapes do not match".
    f = _with_bwd(lambda g: (jnp.ones(3),))
    g = morphax.grad(f)
    with pytest.raises(
        ValueError, match=r"bwd rule my_bwd.*output\[0\].*f32\[3\].*f32\[\].*shapes do not match"
    ):
        (morphax.jit(g) if jit else g)(1.0)


def test_custom_vjp_bwd_broadcastable_shape_is_still_an_error():
    # JAX does not broadcast: a (1,) cotangent for a scalar input is a ValueError too.
    f = _with_bwd(lambda g: (jnp.ones(1),))
    with pytest.raises(ValueError, match="shapes do not match"):
        morphax.grad(f)(1.0)


def test_custom_vjp_bwd_wrong_shape_under_vmap():
    f = _with_bwd(lambda g: (jnp.ones(3),))
    with pytest.raises(ValueError, match="shapes do not match"):
        morphax.vmap(morphax.grad(f))(jnp.ones(4))


def test_custom_vjp_bwd_wrong_leaf_shape_inside_a_dict_names_the_path():
    @morphax.custom_vjp
    def h(d):
        return d["a"] * 2.0 + d["b"]

    h.defvjp(lambda d: (h(d), None), lambda r, g: ({"a": g, "b": jnp.ones(2)},))
    with pytest.raises(ValueError, match=r"output\[0\]\['b'\].*f32\[2\]"):
        morphax.grad(h)({"a": 1.0, "b": 1.0})


@pytest.mark.parametrize(
    "bwd_out, what",
    [
        (lambda g: jnp.ones(()), "PyTreeDef(*)"),  # not a tuple
        (lambda g: (g, g), "PyTreeDef((*, *))"),  # one too many
    ],
)
def test_custom_vjp_bwd_wrong_structure_is_a_type_error(bwd_out, what):
    # JAX: TypeError "Custom VJP bwd rule must produce an output with the same container (pytree)
    # structure as the args tuple of the primal function, and in particular must produce a tuple
    # of length equal to the number of arguments to the primal function, but got bwd output
    # structure PyTreeDef(*) for primal input structure PyTreeDef((*,))."
    f = _with_bwd(bwd_out)
    with pytest.raises(TypeError, match="same container .pytree. structure") as info:
        morphax.grad(f)(1.0)
    assert what in str(info.value) and "my_bwd" in str(info.value)


def test_custom_vjp_bwd_extra_dict_key_is_a_type_error():
    @morphax.custom_vjp
    def h(d):
        return d["a"] * 2.0

    h.defvjp(lambda d: (h(d), None), lambda r, g: ({"a": g, "b": g},))
    with pytest.raises(TypeError, match="same container .pytree. structure"):
        morphax.grad(h)({"a": 1.0})


def test_custom_vjp_bwd_outputs_jax_accepts():
    # JAX 0.10.2 accepts: a list instead of a tuple, None (zero) for a float argument or a leaf,
    # any cotangent (None, float0, float, int, any shape) for an integer argument, and does not
    # check dtypes (a float16 cotangent for a float32 input passes through).
    assert float(morphax.grad(_with_bwd(lambda g: [g]))(1.0)) == 1.0
    assert float(morphax.grad(_with_bwd(lambda g: (None,)))(1.0)) == 0.0
    f16 = morphax.grad(_with_bwd(lambda g: (g.astype(jnp.float16),)))(1.0)
    assert f16.dtype == np.float16 and float(f16) == 1.0
    for int_ct in (None, jnp.ones(()), jnp.ones((), jnp.int32), jnp.ones(3)):
        f = _with_bwd(lambda g, ct=int_ct: (g, ct))
        assert float(morphax.grad(f)(1.0, 2)) == 1.0

    @morphax.custom_vjp
    def h(d):
        return d["a"] * 2.0 + d["b"]

    h.defvjp(lambda d: (h(d), None), lambda r, g: ({"a": None, "b": g},))
    out = morphax.grad(h)({"a": 1.0, "b": 1.0})
    assert float(out["a"]) == 0.0 and float(out["b"]) == 1.0


# ------------------------------------------------------------------------------------------------
# linalg of 0x0 matrices: JAX returns empty results (det 1, slogdet (1, 0)).


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_linalg_of_empty_matrices(jit):
    def run(fn, *args):
        return (morphax.jit(fn) if jit else fn)(*args)

    z = jnp.zeros((0, 0))
    assert run(jnp.linalg.inv, z).shape == (0, 0)
    assert run(jnp.linalg.inv, jnp.zeros((2, 0, 0))).shape == (2, 0, 0)
    assert run(jnp.linalg.solve, z, jnp.zeros((0,))).shape == (0,)
    assert run(jnp.linalg.solve, z, jnp.zeros((0, 3))).shape == (0, 3)
    assert float(run(jnp.linalg.det, z)) == 1.0
    sign, logdet = run(jnp.linalg.slogdet, z)
    assert float(sign) == 1.0 and float(logdet) == 0.0
    assert run(jnp.linalg.pinv, z).shape == (0, 0)
    assert run(lambda a: jnp.linalg.matrix_power(a, -1), z).shape == (0, 0)


def test_grad_through_inverse_of_empty_matrix():
    g = morphax.grad(lambda a: jnp.linalg.inv(a).sum())(jnp.zeros((0, 0)))
    assert g.shape == (0, 0)


# ------------------------------------------------------------------------------------------------
# Convolution strides/dilations must be positive (JAX: ValueError "expects window to have
# positive stride ..."), never a bare ZeroDivisionError.


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda x, k: lax.conv(x, k, (0, 1), "VALID"), "window_strides"),
        (lambda x, k: lax.conv(x, k, (0, 1), "SAME"), "window_strides"),
        (lambda x, k: lax.conv_general_dilated(x, k, (1, 0), "SAME"), "window_strides"),
        (lambda x, k: lax.conv_general_dilated(x, k, (1, -1), "SAME_LOWER"), "window_strides"),
        (lambda x, k: lax.conv_general_dilated(x, k, (1, 1), "SAME", rhs_dilation=(0, 1)), "rhs_dilation"),
        (
            lambda x, k: lax.conv_general_dilated(x, k, (1, 1), [(0, 0)] * 2, lhs_dilation=(1, 0)),
            "lhs_dilation",
        ),
    ],
)
def test_conv_non_positive_stride_or_dilation_is_a_clear_value_error(call, arg):
    x, k = jnp.ones((1, 1, 5, 5)), jnp.ones((1, 1, 2, 2))
    with pytest.raises(ValueError, match=f"conv_general_dilated: {arg} must be >= 1"):
        call(x, k)


def test_reduce_window_same_padding_with_zero_stride_is_a_value_error():
    with pytest.raises(ValueError, match="window_strides"):
        lax.reduce_window(jnp.ones((4,)), 0.0, lax.add, (2,), (0,), "SAME")


# ------------------------------------------------------------------------------------------------
# Pytree nodes whose flatten function returns the wrong thing. JAX: ValueError "The to_iterable
# function for a custom PyTree node should return a (children, aux_data) tuple, got 3".


def _register(flatten):
    class Node:
        def __init__(self, x):
            self.x = x

    tree_util.register_pytree_node(Node, flatten, lambda aux, ch: Node(*ch))
    return Node


@pytest.mark.parametrize(
    "flatten, match",
    [
        (lambda n: 3, r"must return a \(children, aux_data\) tuple, got 3"),
        (lambda n: (n.x,), r"tuple, got \(1.0,\)"),
        (lambda n: ((n.x,), None, 1), "tuple, got"),
        (lambda n: [[n.x], None], "tuple, got"),  # a list is not accepted either
        (lambda n: (5, None), "children is an iterable"),
    ],
)
def test_bad_flatten_function_is_a_clear_value_error(flatten, match):
    node_type = _register(flatten)
    for call in (
        tree_util.tree_flatten,
        tree_util.tree_leaves,
        lambda t: tree_util.tree_flatten(t, is_leaf=lambda x: False),
        tree_util.tree_flatten_with_path,
        morphax.jit(lambda t: 1.0),
    ):
        with pytest.raises(ValueError, match=match) as info:
            call(node_type(1.0))
        assert "Node" in str(info.value)


def test_flatten_may_return_any_iterable_of_children():
    node_type = _register(lambda n: (iter([n.x]), None))
    assert tree_util.tree_leaves(node_type(1.0)) == [1.0]


# ------------------------------------------------------------------------------------------------
# Unhashable (list/dict) aux data: JAX accepts it under jit, comparing it with ==; a second call
# with an equal node reuses the trace, a different one retraces.


class Meta:
    def __init__(self, x, meta):
        self.x = x
        self.meta = meta


tree_util.register_pytree_node(Meta, lambda n: ((n.x,), n.meta), lambda aux, ch: Meta(ch[0], aux))


def test_list_aux_data_under_jit():
    traces = []

    @morphax.jit
    def f(n):
        traces.append(1)
        return n.x * len(n.meta)

    assert float(f(Meta(jnp.ones(()), [1, 2]))) == 2.0
    assert float(f(Meta(jnp.ones(()), [1, 2]))) == 2.0
    assert len(traces) == 1
    assert float(f(Meta(jnp.ones(()), [1, 2, 3]))) == 3.0
    assert len(traces) == 2
    assert float(f(Meta(jnp.ones(()), {"a": 1}))) == 1.0
    assert morphax.jit(lambda x: Meta(x, [1, 2]))(jnp.ones(())).meta == [1, 2]


def test_treedef_with_list_aux_is_hashable_and_comparable():
    a = tree_util.tree_structure(Meta(1.0, [1, [2]]))
    b = tree_util.tree_structure(Meta(2.0, [1, [2]]))
    c = tree_util.tree_structure(Meta(2.0, [1, [3]]))
    assert a == b and hash(a) == hash(b) and a != c
    assert {a: 1}[b] == 1


# ------------------------------------------------------------------------------------------------
# size= of the fixed-size variants must be a non-negative int. JAX fails for size=-1 with a
# TypeError ("broadcast_in_dim shape must have every element be nonnegative, got (-1,)") and for
# size=1.5 with a TypeError too; ours are TypeErrors that name the function and the argument.


@pytest.mark.parametrize(
    "name, call",
    [
        ("nonzero", lambda s: jnp.nonzero(jnp.array([1, 0, 2]), size=s)),
        ("nonzero", lambda s: jnp.flatnonzero(jnp.array([1, 0, 2]), size=s)),
        ("nonzero", lambda s: jnp.argwhere(jnp.array([1, 0, 2]), size=s)),
        ("unique", lambda s: jnp.unique(jnp.array([1, 0, 2]), size=s)),
        ("unique", lambda s: jnp.unique(jnp.array([1, 0, 2]), size=s, return_counts=True)),
        ("setdiff1d", lambda s: jnp.setdiff1d(jnp.array([1, 2]), jnp.array([2]), size=s)),
    ],
)
@pytest.mark.parametrize("size", [-1, 1.5])
def test_bad_size_argument_is_a_clear_type_error(name, call, size):
    with pytest.raises(TypeError, match=f"jnp.{name}: size must be a .*non-negative integer"):
        call(size)


def test_valid_size_arguments_still_work():
    assert jnp.nonzero(jnp.array([1, 0, 2]), size=0)[0].shape == (0,)
    assert jnp.nonzero(jnp.array([1, 0, 2]), size=np.int64(4))[0].tolist() == [0, 2, 0, 0]
    assert jnp.unique(jnp.array([1, 0, 1]), size=3, fill_value=9).tolist() == [0, 1, 9]


# ------------------------------------------------------------------------------------------------
# einsum with more distinct indices than np.einsum handles (JAX succeeds).


def test_einsum_with_60_distinct_indices():
    ops = [jnp.ones((1,) * 30), jnp.ones((1,) * 30)]
    out = jnp.einsum(ops[0], list(range(30)), ops[1], list(range(30, 60)), list(range(60)))
    assert out.shape == (1,) * 60
    letters = (string.ascii_letters + "ÀÁÂÃÄÅÆÇ")[:60]
    spec = f"{letters[:30]},{letters[30:]}->{letters}"
    assert jnp.einsum(spec, *ops).shape == (1,) * 60
    jitted = morphax.jit(lambda a, b: jnp.einsum(spec, a, b))
    assert jitted(*ops).shape == (1,) * 60


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_einsum_contracting_40_indices(dtype):
    # 20 + 20 axes of size 2, 10 shared (contracted), 5 kept: JAX gives 2**25 at every position.
    a = jnp.ones((2,) * 20, dtype)
    out = jnp.einsum(a, list(range(20)), a, list(range(10, 30)), list(range(5)))
    assert out.shape == (2,) * 5 and out.dtype == np.dtype(dtype)
    assert np.all(np.asarray(out) == 2**25)


# ------------------------------------------------------------------------------------------------
# lax.pad: the padding value's dtype must be the operand's. A Python scalar counts as its default
# dtype (int32 for 0, float32 for 0.0) and is not cast. JAX: TypeError "pad operand and
# padding_value must be same dtype: got float32 and int32."


@pytest.mark.parametrize(
    "operand_dtype, value",
    [
        ("float32", 0),
        ("float32", np.int32(0)),
        ("float32", jnp.int32(0)),
        ("float32", jnp.float16(0)),
        ("float32", True),
        ("int32", 0.0),
        ("int8", 0),
        ("float16", 0.0),
    ],
)
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_pad_value_of_another_dtype_is_a_type_error(operand_dtype, value, jit):
    def f(x):
        return lax.pad(x, value, [(1, 1, 0)])

    with pytest.raises(TypeError, match="pad: operand and padding_value must have the same dtype"):
        (morphax.jit(f) if jit else f)(jnp.ones(3, operand_dtype))


@pytest.mark.parametrize(
    "operand_dtype, value",
    [("float32", 0.0), ("float32", np.float64(0)), ("float32", np.float32(0)), ("int32", 0), ("bool", False)],
)
def test_pad_value_of_the_operand_dtype_is_accepted(operand_dtype, value):
    out = lax.pad(jnp.ones(3, operand_dtype), value, [(1, 1, 0)])
    assert out.dtype == np.dtype(operand_dtype) and out.shape == (5,)


def test_reduce_window_gradient_with_strides_still_pads():
    # Its transpose pads the cotangent with a zero of the cotangent's dtype.
    def f(x):
        return lax.reduce_window(x, 0.0, lax.add, (2,), (2,), "VALID").sum()

    assert morphax.grad(f)(jnp.ones(4)).tolist() == [1.0, 1.0, 1.0, 1.0]
