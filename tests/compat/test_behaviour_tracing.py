"""JAX 0.10.2's behaviour in tracing details: how `make_jaxpr` prints (layout, variable names,
`jit` and `remat2` equations, shared jaxprs), `jit`'s trace cache keyed on the function, and
pytree details (treedef printing, unhashable aux data, dict keys that cannot be sorted).

Every expected text here is what JAX 0.10.2 prints for the same program.
"""

import collections
import dataclasses
import functools

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax import tree_util as tu


def _jaxpr(f, *args):
    return str(morphax.make_jaxpr(f)(*args))


X = np.ones(3, np.float32)


# --------------------------------------------------------------------------------- printing


def test_short_jaxprs_print_on_one_line():
    assert _jaxpr(jnp.sin, X) == "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }"
    assert _jaxpr(lambda a: jnp.sin(jnp.sin(a)), X) == (
        "{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = sin b in (c,) }"
    )
    assert _jaxpr(lambda a: a, X) == "{ lambda ; a:f32[3]. let  in (a,) }"


def test_jaxpr_width_is_80_columns_and_pretty_print_takes_a_width():
    closed = morphax.make_jaxpr(lambda a: jnp.sin(jnp.sin(a)))(X)
    assert closed.pretty_print(width=69) == (
        "{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = sin b in (c,) }"
    )
    assert closed.pretty_print(width=68) == (
        "{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n    c:f32[3] = sin b\n  in (c,) }"
    )


def test_long_binder_lists_wrap_as_in_jax():
    text = _jaxpr(lambda *a: sum(a), *([np.ones((2, 3, 4), np.float32)] * 12))
    assert text.startswith(
        "{ lambda ; a:f32[2,3,4] b:f32[2,3,4] c:f32[2,3,4] d:f32[2,3,4] e:f32[2,3,4] f:f32[2,3,4]\n"
        "    g:f32[2,3,4] h:f32[2,3,4] i:f32[2,3,4] j:f32[2,3,4] k:f32[2,3,4] l:f32[2,3,4]. let\n"
        "    m:f32[2,3,4] = add 0.0:f32[] a\n"
    )
    assert text.endswith("    x:f32[2,3,4] = add w l\n  in (x,) }")


@morphax.jit
def inner(a):
    return jnp.sin(a) * 2.0


def test_nested_jit_prints_as_jit_with_the_callers_names():
    assert _jaxpr(lambda a: inner(a) + 1.0, X) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = jit[\n"
        "      name=inner\n"
        "      jaxpr={ lambda ; a:f32[3]. let\n"
        "          c:f32[3] = sin a\n"
        "          b:f32[3] = mul c 2.0:f32[]\n"
        "        in (b,) }\n"
        "    ] a\n"
        "    d:f32[3] = add b 1.0:f32[]\n"
        "  in (d,) }"
    )


def test_jit_in_jit_names_each_operand_once():
    def f(a):
        return morphax.jit(lambda b: morphax.jit(jnp.cos)(b) + a)(a)

    assert _jaxpr(f, X) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = jit[\n"
        "      name=<lambda>\n"
        "      jaxpr={ lambda ; a:f32[3] c:f32[3]. let\n"
        "          d:f32[3] = jit[\n"
        "            name=cos\n"
        "            jaxpr={ lambda ; c:f32[3]. let d:f32[3] = cos c in (d,) }\n"
        "          ] c\n"
        "          b:f32[3] = add d a\n"
        "        in (b,) }\n"
        "    ] a a\n"
        "  in (b,) }"
    )


def test_a_jaxpr_called_twice_is_printed_once_up_front():
    assert _jaxpr(lambda a: inner(a) + inner(a + 1.0), X) == (
        "let inner = { lambda ; a:f32[3]. let\n"
        "    b:f32[3] = sin a\n"
        "    c:f32[3] = mul b 2.0:f32[]\n"
        "  in (c,) } in\n"
        "{ lambda ; d:f32[3]. let\n"
        "    e:f32[3] = jit[name=inner jaxpr=inner] d\n"
        "    f:f32[3] = add d 1.0:f32[]\n"
        "    g:f32[3] = jit[name=inner jaxpr=inner] f\n"
        "    h:f32[3] = add e g\n"
        "  in (h,) }"
    )


def test_an_inner_jaxpr_of_more_than_10_equations_is_printed_up_front():
    @morphax.jit
    def big(a):
        for _ in range(4):
            a = jnp.sin(a) + jnp.cos(a)
        return a

    text = _jaxpr(lambda a: big(a) * 2.0, X)
    assert text.startswith("let big = { lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n")
    assert text.endswith(
        "  in (m,) } in\n"
        "{ lambda ; n:f32[3]. let\n"
        "    o:f32[3] = jit[name=big jaxpr=big] n\n"
        "    p:f32[3] = mul o 2.0:f32[]\n"
        "  in (p,) }"
    )


def test_checkpoint_prints_as_remat2():
    f = lambda a: morphax.checkpoint(lambda b: jnp.sin(jnp.sin(b)))(a)  # noqa: E731
    assert _jaxpr(f, X) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = remat2[\n"
        "      differentiated=False\n"
        "      jaxpr={ lambda ; c:f32[3]. let\n"
        "          d:f32[3] = sin c\n"
        "          e:f32[3] = sin d\n"
        "        in (e,) }\n"
        "      policy=None\n"
        "      prevent_cse=True\n"
        "    ] a\n"
        "  in (b,) }"
    )


def test_unread_results_print_as_underscore_at_the_top_level():
    text = _jaxpr(morphax.grad(lambda a: morphax.checkpoint(lambda b: jnp.sin(jnp.sin(b)))(a).sum()), X)
    assert "    _:f32[] = reduce_sum[axes=(0,)" in text
    # inner jaxprs keep their names for unread results
    text = _jaxpr(lambda a: lax.fori_loop(0, 3, lambda i, c: c + i, a), X)
    assert text.startswith("{ lambda ; a:f32[3]. let\n    _:i32[] b:f32[3] = scan[\n")
    assert "jaxpr={ lambda ; c:i32[] d:f32[3]. let\n          e:i32[] = add c 1:i32[]\n" in text


def test_control_flow_names_continue_the_sequence():
    text = _jaxpr(lambda p, a: lax.cond(p, lambda z: z + 1.0, lambda z: z * 2.0, a), True, X)
    assert text.endswith(
        "    d:f32[3] = cond[\n"
        "      branches=(\n"
        "        { lambda ; e:f32[3]. let f:f32[3] = mul e 2.0:f32[] in (f,) }\n"
        "        { lambda ; g:f32[3]. let h:f32[3] = add g 1.0:f32[] in (h,) }\n"
        "      )\n"
        "    ] c b\n"
        "  in (d,) }"
    )
    text = _jaxpr(lambda a: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, a)), X)
    assert text == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:i32[] c:f32[3] = while[\n"
        "      body_jaxpr={ lambda ; d:i32[] e:f32[3]. let\n"
        "          f:i32[] = add d 1:i32[]\n"
        "          g:f32[3] = mul e 2.0:f32[]\n"
        "        in (f, g) }\n"
        "      body_nconsts=0\n"
        "      cond_jaxpr={ lambda ; h:i32[] i:f32[3]. let\n"
        "          j:bool[] = lt h 10:i32[]\n"
        "        in (j,) }\n"
        "      cond_nconsts=0\n"
        "    ] 0:i32[] a\n"
        "  in (b, c) }"
    )


def test_dot_general_prints_as_in_jax():
    text = _jaxpr(lambda a: lax.dot(a, np.ones((3, 4), np.float32)), np.ones((2, 3), np.float32))
    assert "c:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] b a" in text


def test_custom_rule_calls_print_as_in_jax():
    @morphax.custom_jvp
    def g(a):
        return jnp.sin(a)

    @g.defjvp
    def g_jvp(p, t):
        return g(p[0]), jnp.cos(p[0]) * t[0]

    assert _jaxpr(lambda a: g(a) * 3.0, X) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = custom_jvp_call[\n"
        "      name=g\n"
        "      call_jaxpr={ lambda ; c:f32[3]. let d:f32[3] = sin c in (d,) }\n"
        "      jvp=g_jvp\n"
        "      symbolic_zeros=False\n"
        "    ] a\n"
        "    e:f32[3] = mul b 3.0:f32[]\n"
        "  in (e,) }"
    )

    @morphax.custom_vjp
    def h(a):
        return jnp.sin(a)

    def h_fwd(a):
        return jnp.sin(a), a

    def h_bwd(r, ct):
        return (ct * jnp.cos(r),)

    h.defvjp(h_fwd, h_bwd)
    assert _jaxpr(lambda a: h(a) + 1.0, X) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = custom_vjp_call[\n"
        "      name=h\n"
        "      bwd=h_bwd\n"
        "      call_jaxpr={ lambda ; c:f32[3]. let d:f32[3] = sin c in (d,) }\n"
        "      fwd=h_fwd\n"
        "      symbolic_zeros=False\n"
        "    ] a\n"
        "    e:f32[3] = add b 1.0:f32[]\n"
        "  in (e,) }"
    )


def test_broadcast_in_dim_prints_as_in_jax():
    assert _jaxpr(lambda a: jnp.broadcast_to(a, (2, 3)) + jnp.zeros((4, 1, 1)), X) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,)] a\n"
        "    c:f32[4,1,1] = broadcast_in_dim 0.0:f32[]\n"
        "    d:f32[1,2,3] = broadcast_in_dim[broadcast_dimensions=(1, 2)] b\n"
        "    e:f32[4,2,3] = add d c\n"
        "  in (e,) }"
    )


def test_a_jitted_partial_is_named_after_its_function():
    f = morphax.jit(functools.partial(lambda a, b: a + b, b=2.0))
    assert "      name=<lambda>\n" in _jaxpr(f, X)


def test_the_jit_primitive_is_named_jit():
    closed = morphax.make_jaxpr(lambda a: inner(a))(X)
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["jit"]
    closed = morphax.make_jaxpr(morphax.checkpoint(jnp.sin))(X)
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["remat2"]


# ------------------------------------------------------------------------------- jit's cache


class _Counted:
    def __init__(self):
        self.n = 0

    def __call__(self, x):
        self.n += 1
        return x * 2


def _counted():
    calls = [0]

    def f(x):
        calls[0] += 1
        return x * 2

    return f, calls


def test_a_fresh_jit_of_the_same_function_reuses_its_trace():
    from morphax._src.compiler.compile import counters

    f, calls = _counted()
    x = jnp.ones(3)
    morphax.jit(f)(x)
    compiles = counters.compiles
    morphax.jit(f)(x)
    morphax.jit(f)(x + 1.0)
    assert counters.compiles == compiles  # and its compiled program
    morphax.jit(f).lower(x)
    morphax.jit(f).trace(x)
    assert calls[0] == 1


def test_the_cache_is_shared_across_transformations():
    # Traced inside another jit, then called eagerly (and the other way round): one trace, as
    # JAX's cache keys on avals whatever the caller.
    f, calls = _counted()
    morphax.jit(lambda y: morphax.jit(f)(y) + 1)(jnp.ones(2))
    morphax.jit(f)(jnp.ones(2))
    assert calls[0] == 1
    g, calls = _counted()
    morphax.jit(g)(jnp.ones(4))
    morphax.jit(morphax.jit(g))(jnp.ones(4))
    morphax.grad(lambda y: morphax.jit(g)(y).sum())(jnp.ones(4))
    morphax.vmap(morphax.jit(g))(jnp.ones((2, 4)))
    assert calls[0] == 1  # vmap batches the traced jaxpr: no new trace


def test_numpy_and_array_arguments_of_one_type_share_a_trace():
    # JAX keys on avals: a NumPy array, the Array device_put makes of it and a computed Array
    # are one signature (a training loop feeding NumPy batches, then device-resident ones).
    f, calls = _counted()
    w = np.arange(6, dtype=np.int32).reshape(2, 3)
    jitted = morphax.jit(f)
    jitted(w)
    jitted(morphax.device_put(w))
    jitted(jnp.asarray(w) + 1)
    assert calls[0] == 1
    jitted(w.astype(np.float32))  # another dtype: another trace
    assert calls[0] == 2


def test_new_function_objects_retrace_as_in_jax():
    calls = [0]

    def bump(y):
        calls[0] += 1
        return y * 2

    for _ in range(3):  # a new lambda each time: a new cache entry (JAX retraces too)
        morphax.jit(lambda y: bump(y))(jnp.ones(3))
    assert calls[0] == 3
    calls[0] = 0
    m = _Counted()
    morphax.jit(m)(jnp.ones(3))
    morphax.jit(m)(jnp.ones(3))
    assert m.n == 1
    p = functools.partial(lambda x, k: bump(x) * k, k=2)
    morphax.jit(p)(jnp.ones(3))
    morphax.jit(p)(jnp.ones(3))
    morphax.jit(functools.partial(lambda x, k: bump(x) * k, k=2))(jnp.ones(3))
    assert calls[0] == 2


def test_static_arguments_and_options_in_the_key():
    calls = [0]

    def g(x, k):
        calls[0] += 1
        return x * k

    x = jnp.ones(3)
    morphax.jit(g, static_argnums=1)(x, 2)
    morphax.jit(g, static_argnums=1)(x, 2)
    morphax.jit(g, static_argnums=1)(x, 3)
    assert calls[0] == 2
    f, calls = _counted()
    morphax.jit(f)(x)
    morphax.jit(f, donate_argnums=())(x)
    morphax.jit(f, inline=True)(x)
    assert calls[0] == 1
    with morphax.enable_x64():
        morphax.jit(f)(x)
    assert calls[0] == 2


_SCALE = 2.0


def _scaled(x):
    return x * _SCALE


def test_changed_globals_are_not_detected_as_in_jax():
    global _SCALE
    x = jnp.ones(2)
    np.testing.assert_array_equal(np.asarray(morphax.jit(_scaled)(x)), [2.0, 2.0])
    _SCALE = 3.0
    try:
        # JAX reuses the trace: the global was read when the function was traced.
        np.testing.assert_array_equal(np.asarray(morphax.jit(_scaled)(x)), [2.0, 2.0])
    finally:
        _SCALE = 2.0


# ---------------------------------------------------------------------------------- pytrees


Params = collections.namedtuple("Params", ["w", "b"])


@tu.register_pytree_node_class
class _Reg:
    def __init__(self, x, aux):
        self.x, self.aux = x, aux

    def tree_flatten(self):
        return (self.x,), self.aux

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], aux)


@dataclasses.dataclass
class _DC:
    a: object
    b: object


tu.register_dataclass(_DC, data_fields=["a", "b"], meta_fields=[])


@pytest.mark.parametrize(
    "tree, text",
    [
        (Params(1, 2), "PyTreeDef(CustomNode(namedtuple[Params], [*, *]))"),
        (
            Params([1, (2, None)], {"a": 1, "b": Params(1, 2)}),
            "PyTreeDef(CustomNode(namedtuple[Params], [[*, (*, None)], "
            "{'a': *, 'b': CustomNode(namedtuple[Params], [*, *])}]))",
        ),
        ({"b": 1, "a": [2, 3]}, "PyTreeDef({'a': [*, *], 'b': *})"),
        ([1, [2, 3], {"x": None}], "PyTreeDef([*, [*, *], {'x': None}])"),
        ((1,), "PyTreeDef((*,))"),
        ((), "PyTreeDef(())"),
        (None, "PyTreeDef(None)"),
        (1, "PyTreeDef(*)"),
        (collections.OrderedDict(b=1, a=2), "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))"),
        (
            collections.defaultdict(list, b=1, a=2),
            "PyTreeDef(CustomNode(defaultdict[(<class 'list'>, ('a', 'b'))], [*, *]))",
        ),
        (_Reg(1, "hi"), "PyTreeDef(CustomNode(_Reg[hi], [*]))"),
        (_Reg([1, 2], {"k": 1}), "PyTreeDef(CustomNode(_Reg[{'k': 1}], [[*, *]]))"),
        (_DC(1, [2]), "PyTreeDef(CustomNode(_DC[()], [*, [*]]))"),
    ],
)
def test_treedef_prints_as_in_jax(tree, text):
    assert str(tu.tree_structure(tree)) == text
    assert repr(tu.tree_structure(tree)) == text


def test_unhashable_aux_data_works_under_jit():
    # JAX hashes a treedef without its aux data's value and compares aux data with ==.
    a, b = tu.tree_structure(_Reg([1, 2], {"k": 1})), tu.tree_structure(_Reg([3, 4], {"k": 1}))
    assert a == b and hash(a) == hash(b)
    assert a != tu.tree_structure(_Reg([1, 2], {"k": 2}))
    calls = [0]

    def f(r):
        calls[0] += 1
        return _Reg(r.x * 2, r.aux)

    jf = morphax.jit(f)
    out = jf(_Reg(jnp.ones(2), {"k": 1}))
    assert out.aux == {"k": 1}
    np.testing.assert_array_equal(np.asarray(out.x), [2.0, 2.0])
    jf(_Reg(jnp.ones(2), {"k": 1}))
    assert calls[0] == 1  # equal aux data: the same trace
    jf(_Reg(jnp.ones(2), {"k": 2}))
    assert calls[0] == 2
    np.testing.assert_array_equal(
        np.asarray(morphax.jit(lambda r: r.x * 2)(_Reg(jnp.ones(2), [1]))), [2.0, 2.0]
    )


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: morphax.tree.map(lambda v: v, t),
        lambda t: tu.tree_map(lambda v: v, t),
        tu.tree_flatten,
        tu.tree_leaves,
        tu.tree_structure,
        tu.tree_flatten_with_path,
        lambda t: tu.tree_flatten(t, is_leaf=lambda x: False),
    ],
)
def test_dict_keys_that_cannot_be_sorted_raise_as_in_jax(fn):
    for tree in ({1: 1, "a": 2}, {None: 1, "a": 2}, {"b": {1: 1, "a": 2}}):
        with pytest.raises(
            ValueError, match="Comparator raised exception while sorting pytree dictionary keys"
        ) as e:
            fn(tree)
        assert isinstance(e.value.__cause__, TypeError)


def test_dict_keys_of_mixed_but_comparable_types_sort():
    assert tu.tree_flatten({1: "one", 0.5: "half"}) == (["half", "one"], tu.tree_structure({0.5: 0, 1: 0}))
    assert str(tu.tree_structure({(1, 2): 1, (2, "a"): 2})) == "PyTreeDef({(1, 2): *, (2, 'a'): *})"
    # an OrderedDict keeps its insertion order, whatever its keys
    leaves, td = tu.tree_flatten(collections.OrderedDict([(1, 1), ("a", 2)]))
    assert leaves == [1, 2] and str(td) == "PyTreeDef(CustomNode(OrderedDict[(1, 'a')], [*, *]))"
    # a defaultdict's keys are sorted by its flatten function: the comparison's TypeError
    with pytest.raises(TypeError, match="not supported between instances"):
        tu.tree_flatten(collections.defaultdict(int, {1: 1, "a": 2}))
    # a dict of mixed keys held as a leaf is fine
    assert tu.tree_flatten({1: 1, "a": 2}, is_leaf=lambda x: isinstance(x, dict))[0] == [{1: 1, "a": 2}]


def test_convert_element_type_hides_an_unset_sharding():
    text = _jaxpr(lambda a: a.astype(jnp.int32), X)
    assert text == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:i32[3] = convert_element_type[new_dtype=int32 weak_type=False] a\n"
        "  in (b,) }"
    )


@pytest.mark.parametrize(
    "f, literal",
    [
        (lambda a: a * 0.1, "0.10000000149011612:f32[]"),  # the float32 value, as a Python float
        (lambda a: a * np.float32(0.1), "0.10000000149011612:f32[]"),
        (lambda a: a + 1e-8, "9.99999993922529e-09:f32[]"),
        (lambda a: a * 2.0, "2.0:f32[]"),
        (lambda a: a * float("inf"), "inf:f32[]"),
        (lambda a: a.astype(jnp.float16) * 0.1, "0.0999755859375:f16[]"),
        (lambda a: a.astype(jnp.int32) * 3, "3:i32[]"),
        (lambda a: (a > 0) & True, "True:bool[]"),
        (lambda a: a * (1 + 2j), "(1+2j):c64[]"),
    ],
)
def test_literals_print_as_in_jax(f, literal):
    assert literal in _jaxpr(f, X).split()


def test_pretty_print_options():
    closed = morphax.make_jaxpr(lambda a: inner(a).astype(jnp.int32) + 1)(X)
    assert closed.pretty_print(print_shapes=False) == (
        "{ lambda ; a. let\n"
        "    b = jit[\n"
        "      name=inner\n"
        "      jaxpr={ lambda ; a. let c = sin a; b = mul c 2.0:f32[] in (b,) }\n"
        "    ] a\n"
        "    d = convert_element_type[new_dtype=int32 weak_type=False] b\n"
        "    e = add d 1:i32[]\n"
        "  in (e,) }"
    )
    # without the primitives' printing rules: every parameter, sorted, and no shared names
    # (NB: JAX's jit equation holds more parameters than morphax's: jaxpr and name only).
    raw = closed.jaxpr.pretty_print(custom_pp_eqn_rules=False)
    assert "      jaxpr={ lambda ; c:f32[3]. let\n          d:f32[3] = sin[accuracy=None] c\n" in raw
    assert "    f:i32[3] = convert_element_type[\n      new_dtype=int32\n      sharding=None\n" in raw
    assert str(closed.jaxpr.eqns[0]) == (
        "b:f32[3] = jit[\n"
        "  name=inner\n"
        "  jaxpr={ lambda ; a:f32[3]. let\n"
        "      c:f32[3] = sin a\n"
        "      b:f32[3] = mul c 2.0:f32[]\n"
        "    in (b,) }\n"
        "] a"
    )
    assert str(closed.jaxpr.eqns[1]) == "a:i32[3] = convert_element_type[new_dtype=int32 weak_type=False] b"


def test_grad_of_a_square_prints_as_in_jax():
    # (JAX's reduce_sum also holds out_sharding=None: compared without it.)
    text = _jaxpr(morphax.grad(lambda a: jnp.sum(jnp.sin(a) ** 2)), X)
    assert text.replace(" out_sharding=None", "") == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = sin a\n"
        "    c:f32[3] = cos a\n"
        "    d:f32[3] = integer_pow[y=2] b\n"
        "    e:f32[3] = mul 2.0:f32[] b\n"
        "    _:f32[] = reduce_sum[axes=(0,)] d\n"
        "    f:f32[3] = broadcast_in_dim 1.0:f32[]\n"
        "    g:f32[3] = mul f e\n"
        "    h:f32[3] = mul g c\n"
        "  in (h,) }"
    )


def test_a_large_custom_jvp_body_is_shared_as_jaxpr():
    @morphax.custom_jvp
    def g(a):
        for _ in range(6):
            a = jnp.sin(a) * 2.0
        return a

    g.defjvp(lambda p, t: (g(p[0]), t[0]))
    text = _jaxpr(lambda a: g(a) + 1.0, X)
    assert text.startswith("let jaxpr = { lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n")
    assert "    g:f32[3] = mul f 2.0:f32[]\n" in text  # "g" is free: no jaxpr is named g
    assert text.endswith(
        "  in (m,) } in\n"
        "{ lambda ; n:f32[3]. let\n"
        "    o:f32[3] = custom_jvp_call[\n"
        "      name=g\n"
        "      call_jaxpr=jaxpr\n"
        "      jvp=<lambda>\n"
        "      symbolic_zeros=False\n"
        "    ] n\n"
        "    p:f32[3] = add o 1.0:f32[]\n"
        "  in (p,) }"
    )


def test_an_eager_cond_traces_each_branch_function_once():
    calls = [0]

    def branch(z):
        calls[0] += 1
        return z * 2

    x = jnp.ones(3)
    np.testing.assert_array_equal(np.asarray(lax.cond(True, branch, branch, x)), [2.0, 2.0, 2.0])
    assert calls[0] == 1  # the same function for both branches: one trace, as in JAX
    lax.cond(False, branch, branch, x)
    assert calls[0] == 1  # called again with the same types: the cached trace
    lax.cond(True, branch, branch, jnp.ones(4))
    assert calls[0] == 2


def test_debug_info_names_a_keyword_in_var_keywords_as_jax():
    # JAX 0.10.2: jit(f).trace(1., k=2.).jaxpr.jaxpr.debug_info.arg_names == ('x', "kw['k']") for
    # f(x, **kw); a keyword-only parameter keeps its own name.
    from morphax._src.transforms.staging import make_debug_info

    def f(x, **kw):
        return x + kw["k"]

    def g(x, *, k):
        return x + k

    assert make_debug_info("jit", f, (1.0,), {"k": 2.0}).arg_names == ("x", "kw['k']")
    assert make_debug_info("jit", g, (1.0,), {"k": 2.0}).arg_names == ("x", "k")


@pytest.mark.parametrize(
    "name,fun",
    [
        ("diag", lambda x: jnp.diag(x[0])),
        ("tril", jnp.tril),
        ("triu", lambda x: jnp.triu(x, 1)),
        ("tri", lambda x: jnp.tri(3) * x),
        ("at slice", lambda x: x.at[:2].multiply(-1)),
    ],
)
def test_masks_and_slices_are_built_in_the_program_as_jax_builds_them(name, fun):
    # JAX's jaxprs of these hold no constants (iotas and broadcasts instead): equinox
    # closure-converts such functions and requires the same constants in both branches of a cond.
    closed = morphax.make_jaxpr(fun)(jnp.ones((3, 3)))
    assert closed.jaxpr.constvars == [] and closed.consts == [], name


def test_an_array_made_under_jit_is_a_constvar_of_a_jaxpr_closing_over_it_as_in_jax():
    # JAX 0.10.2: under `jit`, `jnp.array(0)` is lifted into the trace (`lax.stage`), so a jaxpr
    # traced inside that closes over it holds it as a constvar, though it is a scalar; printed:
    #   { lambda a:i32[] b:f32[]; c:f32[]. let
    #       d:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a
    #       e:f32[] = add c d
    #       f:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
    #       g:f32[] = add e f
    #     in (g,) }
    # optimistix's L-BFGS closure-converts an operator over `jnp.array(0)` made in its `init`
    # and over `index + 1` in its update, and needs as many constants in both branches of a cond.
    # At the top level JAX inlines it as a literal: make_jaxpr(lambda: jnp.array(0)) prints
    # `{ lambda ; . let  in (0:i32[],) }`.
    seen = {}

    def f(x):
        a, b = jnp.array(0), jnp.array(1.5)
        seen["inner"] = morphax.make_jaxpr(lambda y: y + a + b)(x)
        return x + a

    morphax.jit(f)(jnp.float32(1))
    inner = seen["inner"]
    assert str(inner) == (
        "{ lambda a:i32[] b:f32[]; c:f32[]. let\n"
        "    d:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
        "    e:f32[] = add c d\n"
        "    f:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b\n"
        "    g:f32[] = add e f\n"
        "  in (g,) }"
    )
    assert len(inner.consts) == 2
    assert _jaxpr(lambda: jnp.array(0)) == "{ lambda ; . let  in (0:i32[],) }"
