"""morphax.api_util (jax.api_util): each function against JAX 0.10.2's documented behaviour (the
expected values below are what JAX returns for the same calls), and the partial-evaluation
pattern flax's lazy_init builds from them, checked against NumPy float64."""

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import api_util
from morphax.extend import linear_util as lu
from morphax.interpreters import partial_eval as pe
from morphax.tree_util import tree_flatten, tree_structure, tree_unflatten

# ----------------------------------------------------------------------------------- flattening


def test_flatten_fun_unflattens_args_and_kwargs_and_records_the_output_tree():
    def f(x, pair, *, scale):
        return {"sum": x + pair[0], "prod": pair[1] * scale}

    args, kwargs = (1.0, (2.0, 3.0)), {"scale": 4.0}
    leaves, in_tree = tree_flatten((args, kwargs))
    flat, out_tree = api_util.flatten_fun(lu.wrap_init(f), in_tree)
    out = flat.call_wrapped(*leaves)
    assert tree_unflatten(out_tree(), out) == {"sum": 3.0, "prod": 12.0}


def test_flatten_fun_nokwargs_takes_the_positional_tree_alone():
    leaves, in_tree = tree_flatten(([1, 2], {"a": 3}))
    flat, out_tree = api_util.flatten_fun_nokwargs(lu.wrap_init(lambda xs, d: (sum(xs), d["a"])), in_tree)
    assert flat.call_wrapped(*leaves) == [3, 3]
    assert out_tree() == tree_structure((0, 0))


def test_flatten_fun_store_is_write_once_unless_use_eq_store():
    leaves, in_tree = tree_flatten(((1.0, 2.0), {}))
    flat, out_tree = api_util.flatten_fun(lu.wrap_init(lambda a, b: (a, b)), in_tree)
    with pytest.raises(lu.StoreException):
        out_tree()  # not called yet
    flat.call_wrapped(*leaves)
    with pytest.raises(lu.StoreException):
        flat.call_wrapped(*leaves)
    flat, out_tree = api_util.flatten_fun(lu.wrap_init(lambda a, b: (a, b)), in_tree, use_eq_store=True)
    assert flat.call_wrapped(*leaves) == flat.call_wrapped(*leaves) == [1.0, 2.0]
    assert out_tree() == tree_structure((0, 0))


def test_flatten_fun_rejects_a_plain_function():
    with pytest.raises(TypeError, match="flatten_fun: expected a WrappedFun"):
        api_util.flatten_fun(lambda x: x, tree_structure(((1,), {})))


# ----------------------------------------------------------------------------- argnums_partial


def test_argnums_partial_fixes_the_static_arguments():
    wrapped = lu.wrap_init(lambda a, b, c: a + b * c)
    f, dyn = api_util.argnums_partial(wrapped, (0, 2), (1, 2, 3))
    assert dyn == (1, 3)
    assert f.call_wrapped(10, 30) == 10 + 2 * 30
    f, dyn = api_util.argnums_partial(wrapped, -2, (1, 2, 3))  # negative indices resolve
    assert dyn == (2,) and f.call_wrapped(5) == 1 + 5 * 3


def test_argnums_partial_static_arguments_key_by_type_and_value():
    wrapped = lu.wrap_init(lambda a, b: a * b)
    same1, _ = api_util.argnums_partial(wrapped, 0, (1.0, 2))
    same2, _ = api_util.argnums_partial(wrapped, 0, (5.0, 2))
    other, _ = api_util.argnums_partial(wrapped, 0, (1.0, 2.0))
    assert same1 == same2 and hash(same1) == hash(same2)
    assert same1 != other  # 2 == 2.0, but JAX keys static arguments by type too


def test_argnums_partial_unhashable_static_arguments():
    wrapped = lu.wrap_init(lambda a, b: a + len(b))
    with pytest.raises(ValueError, match=r"Non-hashable static arguments.*index 1.*list"):
        api_util.argnums_partial(wrapped, 0, (1, [2, 3]))
    f, dyn = api_util.argnums_partial(wrapped, 0, (1, [2, 3]), require_static_args_hashable=False)
    assert f.call_wrapped(*dyn) == 3
    with pytest.raises(ValueError, match="got value 3 for len.args. == 2"):
        api_util.argnums_partial(wrapped, 3, (1, 2))


# ---------------------------------------------------------------------------------- debug_info


def test_debug_info_names_the_dynamic_inputs_and_the_source():
    def f(a, b, c, **kw):
        return a

    info = api_util.debug_info("jit", f, (1, {"w": 2, "b": 3}, 4), {"k": 5}, static_argnums=(2,))
    assert info.traced_for == "jit"
    assert info.arg_names == ("a", "b['b']", "b['w']", "kw['k']")
    assert info.func_src_info.startswith("f at ") and __file__ in info.func_src_info
    assert api_util.debug_info("x", f, (1,), {}, sourceinfo="f at here:1").func_src_info == "f at here:1"
    # What flax does: the argument is a treedef, and the result goes to wrap_init.
    in_tree = tree_structure(((1, 2), {}))
    info = api_util.debug_info("lazy_init", f, (in_tree,), {})
    assert lu.wrap_init(f, debug_info=info).debug_info is info


def test_debug_info_reaches_trace_errors():
    def needs_concrete(x):
        return jnp.sin(x) if x > 0 else x

    info = api_util.debug_info("my_transform", needs_concrete, (1.0,), {})
    flat, _ = api_util.flatten_fun_nokwargs(
        lu.wrap_init(needs_concrete, debug_info=info), tree_structure((1.0,))
    )
    with pytest.raises(Exception, match="needs_concrete"):
        pe.trace_to_jaxpr_dynamic(flat, [api_util.shaped_abstractify(1.0)])


# ------------------------------------------------------------------------------------ donation


def test_donation_vector():
    assert api_util.donation_vector((0, 2), ("y",), tree_structure(((1, 2, 3), {"y": 4}))) == (
        True,
        False,
        True,
        True,
    )
    assert api_util.donation_vector((0,), (), tree_structure((((1, 2), 3), {}))) == (True, True, False)
    assert api_util.donation_vector((0,), (), tree_structure(((1, 2), 3)), kws=False) == (True, True, False)
    assert api_util.donation_vector((), ("b",), tree_structure(((), {"a": 1, "b": (2, 3)}))) == (
        False,
        True,
        True,
    )


def test_rebase_donate_argnums():
    assert api_util.rebase_donate_argnums((1, 3), (0, 2)) == (0, 1)
    assert api_util.rebase_donate_argnums((), (0,)) == ()
    assert api_util.rebase_donate_argnums((4, 1), ()) == (1, 4)
    with pytest.raises(ValueError, match="cannot intersect"):
        api_util.rebase_donate_argnums((0,), (0,))


# ---------------------------------------------------------------------------------------- axes


def test_flatten_axes_broadcasts_a_prefix_with_none_as_a_leaf():
    assert api_util.flatten_axes("in_axes", tree_structure((1, (2, 3))), (0, None)) == [0, None, None]
    assert api_util.flatten_axes("x", tree_structure([1, {"a": 2}]), [0, {"a": None}]) == [0, None]
    assert api_util.flatten_axes("x", tree_structure([1, {"a": 2}]), None) == [None, None]
    assert api_util.flatten_axes("x", tree_structure([1, {"a": 2}]), 1) == [1, 1]


def test_flatten_axes_mismatch_names_the_spec():
    with pytest.raises(ValueError, match="vmap in_axes specification must be a tree prefix"):
        api_util.flatten_axes("vmap in_axes", tree_structure((1, (2, 3))), (0, 1, 2))
    with pytest.raises(ValueError, match="singleton tuple"):
        api_util.flatten_axes(
            "in_axes", tree_structure(({"a": 1, "b": 2},)), {"a": 0, "b": 1}, tupled_args=True
        )


def test_flatten_axes_matches_vmap():
    x = {"a": jnp.ones((2, 3)), "b": jnp.arange(3.0)}
    in_tree = tree_structure((x,))
    axes = api_util.flatten_axes("vmap in_axes", in_tree, ({"a": 1, "b": 0},))
    assert axes == [1, 0]
    out = morphax.vmap(lambda t: t["a"].sum(0) + t["b"], in_axes=({"a": 1, "b": 0},))(x)
    np.testing.assert_allclose(np.asarray(out), 2.0 + np.arange(3.0))


# ------------------------------------------------------------------------------------ the rest


def test_safe_map():
    assert api_util.safe_map(lambda a, b: a + b, [1, 2], (3, 4)) == [4, 6]
    with pytest.raises(ValueError, match="length mismatch"):
        api_util.safe_map(lambda a, b: a + b, [1, 2], [3])


def test_shaped_abstractify():
    cases = [
        (1.0, (), np.float32, True),
        (3, (), np.int32, True),
        (True, (), np.bool_, False),
        (np.ones((2, 3)), (2, 3), np.float32, False),
        (jnp.ones(3, jnp.int8), (3,), np.int8, False),
        (morphax.ShapeDtypeStruct((4,), jnp.float16), (4,), np.float16, False),
    ]
    for value, shape, dtype, weak in cases:
        aval = api_util.shaped_abstractify(value)
        assert (aval.shape, np.dtype(aval.dtype), aval.weak_type) == (shape, np.dtype(dtype), weak), value
    with morphax.enable_x64():
        assert api_util.shaped_abstractify(np.ones(2)).dtype == np.float64
        assert api_util.shaped_abstractify(1.0).dtype == np.float64
    with pytest.raises(TypeError, match="shaped_abstractify.*str"):
        api_util.shaped_abstractify("s")


def test_shaped_abstractify_of_tracers_under_jit_and_vmap():
    seen = []

    def record(x):
        seen.append(api_util.shaped_abstractify(x))
        return x * 2

    morphax.jit(record)(jnp.ones((2, 3)))
    morphax.vmap(record)(jnp.ones((4, 5), jnp.int32))
    assert [(a.shape, np.dtype(a.dtype)) for a in seen] == [((2, 3), np.float32), ((5,), np.int32)]


# ------------------------------------------------------------------- flax's partial evaluation


def test_lazy_init_pattern_computes_known_outputs_and_stages_the_rest():
    # As flax.core.partial_eval.lazy: known inputs are computed now, unknown ones are staged.
    w = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)

    def f(params, x):
        scaled = {"w": params["w"] * 2.0}
        return scaled, jnp.tanh(x @ scaled["w"])

    x_spec = morphax.ShapeDtypeStruct((5, 4), jnp.float32)
    leaves, in_tree = tree_flatten((({"w": jnp.asarray(w)}, x_spec), {}))
    info = api_util.debug_info("lazy_init", f, (in_tree,), {})
    flat, out_tree = api_util.flatten_fun(lu.wrap_init(f, debug_info=info), in_tree)
    in_pvals = [
        pe.PartialVal.unknown(api_util.shaped_abstractify(v))
        if isinstance(v, morphax.ShapeDtypeStruct)
        else pe.PartialVal.known(v)
        for v in leaves
    ]
    _, out_pvals, _ = pe.trace_to_jaxpr_nounits(flat, in_pvals)
    (w_pv, w_const), (y_pv, _) = out_pvals
    assert w_pv is None
    np.testing.assert_allclose(np.asarray(w_const, np.float64), w.astype(np.float64) * 2.0)
    assert y_pv is not None and y_pv.shape == (5, 3)
    assert out_tree() == tree_structure(({"w": 0}, 0))
