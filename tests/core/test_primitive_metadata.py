"""Kernel metadata on every primitive (kind, kernel_op, index_map, param_defaults) and the index
expressions the index maps are written in: the contract the compiler reads instead of names."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import morphax
import morphax.numpy as jnp
from morphax import lax, make_jaxpr
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.index_expr import IndexExpr, const, var
from morphax._src.core.primitive import Kind, registry
from morphax._src.passes.cse import cse
from morphax._src.passes.pipeline import optimize


def _import_everything():
    # Some primitives are defined in modules imported on first use (custom_call): import every
    # module but the compiler's (which reads the metadata and defines no primitive).
    for mod in pkgutil.walk_packages(morphax.__path__, "morphax."):
        if mod.name.startswith(("morphax._src.compiler", "morphax.examples")):
            continue
        importlib.import_module(mod.name)


_import_everything()
PRIMS = sorted(registry)


# -------------------------------------------------------------------------------------- kinds


@pytest.mark.parametrize("name", PRIMS)
def test_every_primitive_declares_its_kernel_metadata(name):
    p = registry[name]
    assert isinstance(p.kind, Kind), f"{name} declares no kind"
    if p.kind in (Kind.ELEMENTWISE, Kind.REDUCE):
        assert p.kernel_op == name, f"{name}: kernel_op {p.kernel_op!r}, expected its own name"
    else:
        assert p.kernel_op is None, f"{name} is {p.kind} but declares kernel_op {p.kernel_op!r}"
    if p.index_map is not None:
        assert p.kind is Kind.LAYOUT
    if p.call_jaxpr_param is not None:
        assert p.kind is Kind.CALL
    if p.has_side_effects or p.calls_host:
        assert p.kind is Kind.EFFECT
    assert isinstance(p.param_defaults, dict)
    # `elementwise` was replaced by `kind`; nothing may set it again.
    assert not hasattr(p, "elementwise")


def test_kernel_ops_are_unique():
    ops = [p.kernel_op for p in registry.values() if p.kernel_op is not None]
    assert len(ops) == len(set(ops))


def test_kinds_of_representative_primitives():
    expect = {
        "sin": Kind.ELEMENTWISE,
        "add": Kind.ELEMENTWISE,
        "select_n": Kind.ELEMENTWISE,
        "convert_element_type": Kind.ELEMENTWISE,
        "iota": Kind.ELEMENTWISE,
        "threefry2x32": Kind.ELEMENTWISE,
        "reduce_sum": Kind.REDUCE,
        "argmax": Kind.REDUCE,
        "reshape": Kind.LAYOUT,
        "pad": Kind.LAYOUT,
        "gather": Kind.GATHER,
        "scatter-add": Kind.SCATTER,
        "dynamic_update_slice": Kind.SCATTER,
        "dot_general": Kind.OPAQUE,
        "cumsum": Kind.OPAQUE,
        "jit": Kind.CALL,
        "custom_jvp_call": Kind.CALL,
        "scan": Kind.LOOP,
        "reduce": Kind.LOOP,
        "debug_callback": Kind.EFFECT,
    }
    assert {n: registry[n].kind for n in expect} == expect


def test_kind_of_refines_per_equation():
    bitcast = registry["bitcast_convert_type"]
    f32 = ShapedArray((3,), np.dtype("float32"))
    assert bitcast.kind_of(f32, new_dtype=np.dtype("int32")) is Kind.ELEMENTWISE
    assert bitcast.kind_of(f32, new_dtype=np.dtype("uint8")) is Kind.OPAQUE
    assert registry["sin"].kind_of(f32, accuracy=None) is Kind.ELEMENTWISE
    for p in registry.values():
        if p.kind_rule is None:
            assert p.kind_of() is p.kind


# ----------------------------------------------------------------------------- param defaults


@pytest.mark.parametrize("name", PRIMS)
def test_defaulted_rule_params_are_param_defaults(name):
    # A rule that gives a param a default says some binder may leave it out: bind must then fill
    # it in, or equal programs get unequal params.
    p = registry[name]
    for slot in ("impl", "abstract_eval"):
        fn = getattr(p, slot)
        if not inspect.isfunction(fn):
            continue
        for param in inspect.signature(fn).parameters.values():
            if param.kind is param.KEYWORD_ONLY and param.default is not param.empty:
                assert param.name in p.param_defaults, f"{name}.{slot} defaults {param.name!r}"


@pytest.mark.parametrize("name", sorted(n for n, p in registry.items() if p.param_defaults))
def test_bind_fills_in_param_defaults(name):
    p = registry[name]
    with np.errstate(all="ignore"):  # special values cast to narrow floats overflow
        case = p.test_spec.cases(np.random.default_rng(0))[0]
    given_params = {k: v for k, v in case.params.items() if k not in p.param_defaults}
    jaxpr = make_jaxpr(lambda *xs: p.bind(*xs, **given_params))(*case.args).jaxpr
    (eqn,) = jaxpr.eqns
    assert eqn.params == {**p.param_defaults, **given_params}
    assert make_jaxpr(lambda *xs: p.bind(*xs, **case.params))(*case.args).jaxpr.eqns[0].params == eqn.params


def test_jnp_and_lax_sin_are_the_same_equation():
    x = np.arange(3, dtype=np.float32)
    a = make_jaxpr(jnp.sin)(x)
    b = make_jaxpr(lax.sin)(x)
    assert a.jaxpr.eqns[0].params == b.jaxpr.eqns[0].params == {"accuracy": None}
    # JAX hides accuracy=None: the printed jaxprs are unchanged and identical.
    assert str(a) == str(b) and "b:f32[3] = sin a in (b,)" in str(a) and "accuracy" not in str(a)


@pytest.mark.parametrize("opt", [cse, optimize])
def test_cse_merges_jnp_and_lax_sin(opt):
    x = np.arange(3, dtype=np.float32)
    closed = make_jaxpr(lambda x: jnp.sin(x) + lax.sin(x) + jnp.exp(x) * lax.exp(x))(x)
    out = opt(closed)
    names = [e.primitive.name for e in out.jaxpr.eqns]
    assert names.count("sin") == 1 and names.count("exp") == 1, names
    np.testing.assert_allclose(
        np.asarray(morphax.jit(lambda x: jnp.sin(x) + lax.sin(x))(x)), 2 * np.sin(x), rtol=1e-6
    )


# ---------------------------------------------------------------------------- IndexExpr basics


def test_index_expr_simplifies_obvious_cases():
    i, j = var("i"), var("j")
    assert i * 1 == i and i + 0 == i and 0 + i == i and i - 0 == i and 1 * i == i
    assert i * 0 == 0 and i - i == 0 and (i + 2) - i == 2
    assert const(3) * 4 + 1 == 13 and (const(3) * 4 + 1).is_const
    assert (i * 4) // 4 == i and (i * 4) % 4 == 0 and i // 1 == i and i % 1 == 0
    assert (i * 6 + 3) // 3 == i * 2 + 1
    assert (i * 4 + 3) // 4 == i and (i * 4 + 3) % 4 == 3
    assert (i * 4 + j) // 4 == i + j // 4  # j may be large: kept
    assert (i // 2) // 3 == i // 6 and (i % 12) % 4 == i % 4
    assert i + j == j + i and 2 * i + 3 * i == 5 * i
    # With extents, ranges decide: (4i + j) // 4 == i and (4i + j) % 4 == j when j < 4.
    i4, j4 = var("i", 5), var("j", 4)
    assert (i4 * 4 + j4) // 4 == i4 and (i4 * 4 + j4) % 4 == j4
    assert j4 // 4 == 0 and j4 % 4 == j4 and (i4 * 4 + j4).range() == (0, 19)
    assert hash(i * 2 + 1) == hash(2 * i + 1)


def test_index_expr_rejects_what_it_cannot_express():
    i = var("i")
    with pytest.raises(ValueError):
        i // 0
    with pytest.raises(ValueError):
        i % -2
    with pytest.raises(TypeError):
        i // var("j")
    with pytest.raises(TypeError):
        3 // i
    with pytest.raises(TypeError):
        i + 1.5
    with pytest.raises(TypeError):
        bool(i)
    with pytest.raises(TypeError):
        _ = (i + 1).value
    assert const(7).value == 7 and (i - i).value == 0


def test_index_expr_to_c():
    i, j, k = var("i", 4), var("j", 2), var("k", 3)
    names = {"i": "i0", "j": "i1", "k": "i2"}
    assert (i * 6 + j * 3 + k).to_c(names) == "6 * i0 + 3 * i1 + i2"
    assert ((i * 6 + j * 3 + k) // 4).to_c(names) == "(6 * i0 + 3 * i1 + i2) / 4"
    assert ((i * 6 + j * 3 + k) % 4).to_c(names) == "(6 * i0 + 3 * i1 + i2) % 4"
    assert (3 - i).to_c(names) == "3 - i0"
    assert (2 * (var("u") // 3) + 1).to_c({"u": "u"}) == "2 * (u / 3) + 1"
    assert (var("u") // 3 * var("v")).to_c({"u": "a", "v": "b"}) == "(a / 3) * b"
    assert const(-2).to_c({}) == "-2" and const(0).to_c({}) == "0"
    # C truncates where Python floors: a dividend that may be negative is refused, not miscompiled.
    with pytest.raises(ValueError, match="negative"):
        ((3 - var("u")) % 4).to_c({"u": "u"})
    assert ((3 - i) % 4).to_c(names) == "3 - i0"  # in range: no modulo at all


def _c_to_python(src: str) -> str:
    # For non-negative operands C's `/` is Python's `//`; precedence and associativity agree.
    return src.replace(" / ", " // ")


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.data())
def test_index_expr_evaluates_like_python_ints(data):
    # Build the same expression on IndexExprs and on Python ints, with one op trace.
    ops = data.draw(
        st.lists(
            st.tuples(
                st.sampled_from(["+", "-", "*k", "*e", "//", "%"]), st.integers(0, 2), st.integers(1, 6)
            ),
            min_size=1,
            max_size=8,
        )
    )
    extents = {"a": 7, "b": 3, "c": 1}

    def build(vals):
        stack = [vals["a"], vals["b"], vals["c"]]
        for op, src, k in ops:
            x, y = stack[-1], stack[src]
            if op == "+":
                r = x + y
            elif op == "-":
                r = x - y + 20  # keep dividends non-negative for the C check
            elif op == "*k":
                r = x * k
            elif op == "*e":
                r = x * (y % 4)  # (bounded, so no int64 overflow)
            elif op == "//":
                r = x // k
            else:
                r = x % k
            stack.append(r)
        return stack[-1]

    sym = {n: var(n, e) for n, e in extents.items()}
    expr = build(sym)
    grids = np.indices(tuple(extents.values()))
    env = dict(zip(extents, grids))
    want = np.vectorize(lambda a, b, c: build({"a": int(a), "b": int(b), "c": int(c)}))(*grids)
    got = expr.evaluate(env) if isinstance(expr, IndexExpr) else expr
    np.testing.assert_array_equal(np.broadcast_to(got, want.shape), want)
    # Scalars evaluate to exact Python ints; IndexExpr values substitute symbolically.
    assert expr.evaluate({"a": 2, "b": 1, "c": 0}) == build({"a": 2, "b": 1, "c": 0})
    assert expr.evaluate(sym) == expr
    lo, hi = expr.range()
    assert lo <= want.min() and want.max() <= hi
    if lo >= 0:
        src = expr.to_c({"a": "a", "b": "b", "c": "c"})
        c_val = eval(_c_to_python(src), {}, env)  # noqa: S307 - our own generated arithmetic
        np.testing.assert_array_equal(np.broadcast_to(c_val, want.shape), want)


# ------------------------------------------------------------------------------- index maps

INDEX_MAPPED = sorted(n for n, p in registry.items() if p.index_map is not None)


def test_index_maps_provided():
    assert set(INDEX_MAPPED) >= {"broadcast_in_dim", "reshape", "squeeze", "transpose", "slice", "rev"}
    assert set(INDEX_MAPPED) <= set(_STRATEGIES)  # every index map has a property test below


def check_index_map(name, x, params, *, extents=True):
    """Evaluate `name`'s index map over every output index and gather from `x`: it must equal the
    primitive's reference output exactly (and its C rendering must compute the same indices)."""
    p = registry[name]
    out_aval = p.abstract_eval(get_aval(x), **params)
    out_shape = out_aval.shape
    names = [f"i{d}" for d in range(len(out_shape))]
    out_index = tuple(var(n, s if extents else None) for n, s in zip(names, out_shape))
    (in_index,) = p.index_map(out_index, get_aval(x), **params)
    assert len(in_index) == x.ndim and all(isinstance(e, IndexExpr) for e in in_index)
    assert all(e.variables() <= set(names) for e in in_index)
    grids = np.indices(out_shape, dtype=np.int64)
    env = dict(zip(names, grids))
    idx = tuple(np.broadcast_to(np.asarray(e.evaluate(env), dtype=np.int64), out_shape) for e in in_index)
    want = p.impl(x, **params)
    if 0 in out_shape:
        assert want.shape == out_shape
        return in_index
    for d, ix in enumerate(idx):
        assert ix.min() >= 0 and ix.max() < x.shape[d], (name, params, in_index)
    got = x[idx] if x.ndim else np.broadcast_to(x, out_shape)
    np.testing.assert_array_equal(got, want)
    if extents:
        for e, ix in zip(in_index, idx):
            c_val = eval(_c_to_python(e.to_c({n: n for n in names})), {}, dict(env))  # noqa: S307
            np.testing.assert_array_equal(np.broadcast_to(c_val, out_shape), ix)
    return in_index


dims = st.integers(0, 4)
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


@st.composite
def _broadcast_in_dim(draw):
    xs = draw(st.lists(st.sampled_from([0, 1, 1, 2, 3]), max_size=3).map(tuple))
    extra = draw(st.integers(0, 2))
    out_rank = len(xs) + extra
    bd = tuple(sorted(draw(st.permutations(range(out_rank)))[: len(xs)]))
    shape = [draw(dims) for _ in range(out_rank)]
    for n, d in zip(xs, bd):
        shape[d] = n if n != 1 else draw(st.integers(0, 3))
    return xs, dict(shape=tuple(shape), broadcast_dimensions=bd, sharding=None)


@st.composite
def _reshape(draw):
    # Fine factors, grouped two ways: the operand (maybe transposed) and the new shape.
    fine = draw(st.lists(st.sampled_from([0, 1, 2, 2, 3, 4]), max_size=5))
    if 0 in fine and draw(st.booleans()):
        fine = [n or 2 for n in fine]

    def group(f):
        out, acc = [], 1
        for n in f:
            acc *= n
            if draw(st.booleans()):
                out.append(acc)
                acc = 1
        out.append(acc)
        ones = draw(st.integers(0, 1))
        for _ in range(ones):
            out.insert(draw(st.integers(0, len(out))), 1)
        return tuple(out)

    t_shape, new = group(fine), group(fine)
    if draw(st.booleans()):
        perm = tuple(draw(st.permutations(range(len(t_shape)))))
        xs = [0] * len(t_shape)
        for j, d in enumerate(perm):
            xs[d] = t_shape[j]
        return tuple(xs), dict(new_sizes=new, dimensions=perm, sharding=None)
    return t_shape, dict(new_sizes=new, dimensions=None, sharding=None)


@st.composite
def _squeeze(draw):
    xs = draw(st.lists(st.sampled_from([0, 1, 1, 2, 3]), max_size=4).map(tuple))
    ones = [d for d, n in enumerate(xs) if n == 1]
    chosen = tuple(sorted(d for d in ones if draw(st.booleans())))
    return xs, dict(dimensions=chosen)


@st.composite
def _transpose(draw):
    xs = draw(shapes)
    return xs, dict(permutation=tuple(draw(st.permutations(range(len(xs))))))


@st.composite
def _slice(draw):
    xs = draw(shapes)
    start, limit, strides = [], [], []
    for n in xs:
        s = draw(st.integers(0, n))
        start.append(s)
        limit.append(draw(st.integers(s, n)))
        strides.append(draw(st.integers(1, 4)))
    strides = tuple(strides) if draw(st.booleans()) else None
    return xs, dict(start_indices=tuple(start), limit_indices=tuple(limit), strides=strides)


@st.composite
def _rev(draw):
    xs = draw(shapes)
    return xs, dict(dimensions=tuple(d for d in range(len(xs)) if draw(st.booleans())))


_STRATEGIES = {
    "broadcast_in_dim": _broadcast_in_dim(),
    "reshape": _reshape(),
    "squeeze": _squeeze(),
    "transpose": _transpose(),
    "slice": _slice(),
    "rev": _rev(),
}


@pytest.mark.parametrize("name", INDEX_MAPPED)
def test_index_map_reproduces_reference(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))

    @settings(max_examples=200, deadline=None, derandomize=True)
    @given(_STRATEGIES[name], st.booleans())
    def check(problem, extents):
        xs, params = problem
        x = rng.integers(-1000, 1000, size=xs).astype(np.int32)
        check_index_map(name, x, params, extents=extents)

    check()


@pytest.mark.parametrize("name", INDEX_MAPPED)
def test_index_map_on_the_matrix_cases(name):
    # The primitive's own test cases (every dtype and the configs its author chose) as well.
    with np.errstate(all="ignore"):
        cases = registry[name].test_spec.cases(np.random.default_rng(0))
    for case in cases:
        (x,) = case.args
        check_index_map(name, np.asarray(x), case.params)


def test_index_maps_stay_simple():
    i = lambda shape: tuple(var(f"i{d}", n) for d, n in enumerate(shape))
    f32 = lambda shape: ShapedArray(shape, np.dtype("float32"))
    reshape = registry["reshape"].index_map
    # Shared leading axes map one to one; a split axis is linear in the new ones.
    (m,) = reshape(i((4, 2, 3)), f32((4, 6)), new_sizes=(4, 2, 3), dimensions=None, sharding=None)
    assert [repr(e) for e in m] == ["i0", "3 * i1 + i2"]
    (m,) = reshape(i((4, 6)), f32((4, 2, 3)), new_sizes=(4, 6), dimensions=None, sharding=None)
    assert [repr(e) for e in m] == ["i0", "i1 // 3", "i1 % 3"]
    (m,) = reshape(i((6,)), f32((2, 1, 3)), new_sizes=(6,), dimensions=None, sharding=None)
    assert [repr(e) for e in m] == ["i0 // 3", "0", "i0 % 3"]
    (m,) = reshape(
        tuple(var(f"i{d}") for d in range(2)), f32((6,)), new_sizes=(2, 3), dimensions=None, sharding=None
    )
    assert [repr(e) for e in m] == ["3 * i0 + i1"]
    (m,) = registry["broadcast_in_dim"].index_map(
        i((2, 5, 3)), f32((1, 3)), shape=(2, 5, 3), broadcast_dimensions=(1, 2), sharding=None
    )
    assert [repr(e) for e in m] == ["0", "i2"]
    (m,) = registry["rev"].index_map(i((2, 5)), f32((2, 5)), dimensions=(1,))
    assert [repr(e) for e in m] == ["i0", "4 - i1"]
    (m,) = registry["slice"].index_map(
        i((2, 2)), f32((5, 5)), start_indices=(1, 0), limit_indices=(3, 4), strides=(1, 2)
    )
    assert [repr(e) for e in m] == ["i0 + 1", "2 * i1"]


def test_index_map_composes_symbolically():
    # transpose then reshape: feed one map's operand index into the next map as its output index.
    f32 = lambda shape: ShapedArray(shape, np.dtype("float32"))
    out = tuple(var(f"i{d}", n) for d, n in enumerate((6, 2)))
    (t_index,) = registry["reshape"].index_map(
        out, f32((3, 4)), new_sizes=(6, 2), dimensions=None, sharding=None
    )
    (x_index,) = registry["transpose"].index_map(t_index, f32((4, 3)), permutation=(1, 0))
    x = np.arange(12).reshape(4, 3)
    grids = np.indices((6, 2))
    env = {"i0": grids[0], "i1": grids[1]}
    got = x[tuple(np.broadcast_to(e.evaluate(env), (6, 2)) for e in x_index)]
    np.testing.assert_array_equal(got, x.T.reshape(6, 2))
    assert re.fullmatch(r"[\w\s+*/%()-]+", x_index[0].to_c({"i0": "a", "i1": "b"}))
