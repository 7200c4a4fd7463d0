"""Fusion (issue 13, part 2): how many kernels known programs compile to, and a hypothesis test
that builds random fusible graphs and compares the C backend with the NumPy reference."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.compiler.backends import get_backend

pytestmark = pytest.mark.skipif(not get_backend("c").available(), reason="no working C compiler")

RNG = np.random.default_rng(0)


def _compiled(f, *args):
    return morphax.jit(f, backend="c").lower(*args).compile()


def _kernels(f, *args) -> int:
    return _compiled(f, *args).num_kernels


def _same_as_reference(f, *args, rtol=1e-5, atol=1e-6):
    got = morphax.jit(f, backend="c")(*args)
    want = morphax.jit(f, backend="numpy")(*args)
    for g, w in zip(morphax.tree_util.tree_leaves(got), morphax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


X = RNG.standard_normal((64, 48)).astype(np.float32)
B = RNG.standard_normal((48,)).astype(np.float32)


def _chain10(x):
    y = jnp.sin(x)
    y = y * 2.0
    y = y + 1.0
    y = jnp.exp(y)
    y = y - 3.0
    y = jnp.tanh(y)
    y = y / 4.0
    y = jnp.abs(y)
    y = y * y
    return jnp.cos(y)


def test_elementwise_chain_is_one_kernel():
    assert _kernels(_chain10, X) == 1
    _same_as_reference(_chain10, X)


def _softmax(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def test_softmax_is_at_most_three_kernels():
    assert _kernels(_softmax, X) <= 3
    _same_as_reference(_softmax, X)


def test_bias_broadcast_is_an_index_map():
    f = lambda x, b: jnp.maximum(x + b, 0.0)  # noqa: E731
    c = _compiled(f, X, B)
    assert c.num_kernels == 1  # no copy kernel materializing the broadcast
    _same_as_reference(f, X, B)
    g = lambda x, b: x * lax.broadcast_in_dim(b, (64, 48), (1,)) + 1.0  # noqa: E731
    assert _kernels(g, X, B) == 1
    _same_as_reference(g, X, B)


@pytest.mark.parametrize(
    "f",
    [
        pytest.param(lambda x: x.T + 1.0, id="transpose"),
        pytest.param(lambda x: x[::2] * 2.0, id="strided_slice"),
        pytest.param(lambda x: x.reshape(48, 64) + 1.0, id="reshape"),
        pytest.param(lambda x: x[3:40, 1:-1] - x[3:40, 1:-1].T.T, id="slices"),
        pytest.param(lambda x: jnp.flip(x, 0) * x, id="rev"),
    ],
)
def test_views_cost_no_copy(f):
    assert _kernels(f, X) == 1
    _same_as_reference(f, X)


def test_dot_general_splits_the_kernels_around_it():
    W = RNG.standard_normal((48, 16)).astype(np.float32)

    def f(x, w, b):
        h = jnp.sin(x) * 2.0 + b  # kernel before
        y = jnp.dot(h, w)  # BLAS
        return jnp.tanh(y + 1.0) * 0.5  # kernel after (the epilogue)

    c = _compiled(f, X, W, B)
    assert c.num_kernels == 2
    _same_as_reference(f, X, W, B, rtol=1e-4, atol=1e-5)


def _xent(logits, labels):
    return -jnp.mean(jnp.sum(morphax.nn.log_softmax(logits) * labels, axis=-1))


def test_softmax_cross_entropy_value_and_grad_kernel_count():
    logits = RNG.standard_normal((4096, 1000)).astype(np.float32)
    labels = np.eye(1000, dtype=np.float32)[RNG.integers(0, 1000, 4096)]
    vg = morphax.value_and_grad(_xent)
    # 5 kernels: max (+ its epilogue), sub-exp-sum (+ log), the loss's mul-sum together with the
    # gradient's row sums (+ their epilogue; both read the labels: compiler/sibling_merge.py), the
    # mean, and the gradient's final elementwise pass. Was 11 before reductions got epilogues and
    # unit-dim reshapes became free, 6 before sibling kernels merged.
    assert _kernels(vg, logits, labels) <= 5
    _same_as_reference(vg, logits, labels, rtol=1e-4, atol=1e-7)


def test_independent_kernels_over_one_buffer_merge_across_a_step_between_them(monkeypatch):
    """Two row sums of the same matrix, with a step between them that took the fusion tail (a
    scalar reduction of the first): one kernel reads the matrix once for both; the same bits as
    two kernels. A kernel that reads the in-between step's result stays apart."""
    from morphax._src.compiler import compile as compile_mod
    from morphax._src.compiler import fusion

    x = RNG.standard_normal((300, 200)).astype(np.float32)
    w = RNG.standard_normal((300,)).astype(np.float32)

    def independent(x, w):
        a = jnp.sum(jnp.sin(x), axis=1)
        total = jnp.sum(a * w)
        b = jnp.sum(x * x, axis=1)
        return total, b

    def dependent(x, w):
        a = jnp.sum(jnp.sin(x), axis=1)
        total = jnp.sum(a * w)
        b = jnp.sum(x * total, axis=1)  # needs the scalar: cannot run with the first sum
        return total, b

    merged = _compiled(independent, x, w)
    got = merged(x, w)
    monkeypatch.setattr(fusion, "merge_siblings", lambda steps: steps)
    monkeypatch.setattr(compile_mod, "_generation", compile_mod._generation + 1)
    apart = _compiled(independent, x, w)
    assert merged.num_kernels == apart.num_kernels - 1, merged.as_text()
    for g, a in zip(got, apart(x, w)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(a))
    monkeypatch.undo()
    monkeypatch.setattr(compile_mod, "_generation", compile_mod._generation + 1)
    dep_merged = _compiled(dependent, x, w).num_kernels
    monkeypatch.setattr(fusion, "merge_siblings", lambda steps: steps)
    monkeypatch.setattr(compile_mod, "_generation", compile_mod._generation + 1)
    assert dep_merged == _compiled(dependent, x, w).num_kernels
    _same_as_reference(independent, x, w, rtol=1e-5, atol=1e-4)
    _same_as_reference(dependent, x, w, rtol=1e-5, atol=1e-3)


def test_large_cheap_intermediates_are_recomputed_not_stored(monkeypatch):
    """Over 4 MB domains the cross-entropy gradient's last kernel computes exp(logits - max) and
    the scaled labels again instead of loading stored copies, so neither 16 MB intermediate is
    kept; the results are the same bits as with the copies stored."""
    from morphax._src.compiler import compile as compile_mod
    from morphax._src.compiler import fusion

    def fuse_again(limit):  # compiled programs are memoized per jaxpr: forget them
        monkeypatch.setattr(fusion, "RECOMPUTE_MAX_OPERATIONS", limit)
        monkeypatch.setattr(compile_mod, "_generation", compile_mod._generation + 1)

    logits = RNG.standard_normal((4096, 1000)).astype(np.float32)
    labels = np.eye(1000, dtype=np.float32)[RNG.integers(0, 1000, 4096)]
    vg = morphax.value_and_grad(_xent)
    recomputed = _compiled(vg, logits, labels)
    assert recomputed.memory_analysis().temp_size_in_bytes < 1 << 20
    got = recomputed(logits, labels)
    fuse_again(0)
    stored = _compiled(vg, logits, labels)
    assert stored.memory_analysis().temp_size_in_bytes >= 2 * logits.nbytes
    for g, w in zip(
        morphax.tree_util.tree_leaves(got), morphax.tree_util.tree_leaves(stored(logits, labels))
    ):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    # Small domains keep the store: the copy stays in cache, a second exp would cost more.
    small = _compiled(vg, logits[:64], labels[:64])
    fuse_again(3)
    assert _compiled(vg, logits[:64], labels[:64]).memory_analysis().temp_size_in_bytes == (
        small.memory_analysis().temp_size_in_bytes
    )


# ------------------------------------------------------------------------------------------------
# Random fusible graphs.
#
# A program is a list of steps over a pool of values; each value is (shape, dtype, exact):
# `exact` means both backends must agree bit for bit (ints, bools, and floats computed only by
# exact operations: loads, neg, abs, max/min, select, int->float). Comparisons and float->int
# conversions read only exact values (otherwise a 1-ulp difference in sin could flip a bool).
# Reductions make float results approximate with a looser tolerance (summation order differs).

FLOAT_UNARY = {
    "sin": jnp.sin,
    "tanh": jnp.tanh,
    "exp": lambda x: jnp.exp(jnp.clip(x, -5.0, 5.0)),
    "log1p_abs": lambda x: jnp.log1p(jnp.abs(x)),
    "sqrt_abs": lambda x: jnp.sqrt(jnp.abs(x)),
}
FLOAT_EXACT_UNARY = {"neg": lambda x: -x, "abs": jnp.abs}
FLOAT_BINARY = {
    "add": jnp.add,
    "sub": jnp.subtract,
    "mul": jnp.multiply,
    "div": lambda a, b: a / (jnp.abs(b) + 1.0),
}
EXACT_BINARY = {"max": jnp.maximum, "min": jnp.minimum}
INT_BINARY = {
    "add": jnp.add,
    "sub": jnp.subtract,
    "mul": jnp.multiply,
    "and": jnp.bitwise_and,
    "or": jnp.bitwise_or,
    "xor": jnp.bitwise_xor,
    "div": lax.div,  # by zero too: JAX semantics, never a trap
    "rem": lax.rem,
    "shl": lax.shift_left,  # counts outside [0, 32) too
    "shr_a": lax.shift_right_arithmetic,
    "shr_l": lax.shift_right_logical,
}
COMPARE = {"lt": jnp.less, "eq": jnp.equal, "ge": jnp.greater_equal, "ne": jnp.not_equal}


def _broadcastable(shape, draw):
    """`shape` with some dims replaced by 1 (or rank 0)."""
    if not shape or draw(st.booleans()):
        return ()
    return tuple(1 if draw(st.booleans()) else d for d in shape)


@st.composite
def graphs(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from([1, 2, 3, 5, 8])) for _ in range(rank))
    inputs = []  # (shape, dtype)
    inputs.append((shape, np.float32))
    inputs.append((shape, np.int32))
    inputs.append((_broadcastable(shape, draw), np.float32))
    if draw(st.booleans()):
        inputs.append((_broadcastable(shape, draw), np.int32))
    # pool entries: (shape, dtype, exact, approx_level) ; approx_level 2 = after a reduction
    pool = [(s, np.dtype(d), True, 0) for s, d in inputs]
    steps = []
    n_steps = draw(st.integers(3, 14))

    def pick(pred):
        cands = [i for i, v in enumerate(pool) if pred(v)]
        return draw(st.sampled_from(cands)) if cands else None

    def partner(i, pred=lambda v: True):
        """An operand broadcastable against value i: same shape, rank 0, or size-1 dims."""
        s = pool[i][0]

        def fits(v):
            vs = v[0]
            return pred(v) and (vs == () or (len(vs) == len(s) and all(a in (1, b) for a, b in zip(vs, s))))

        return pick(fits)

    for _ in range(n_steps):
        kind = draw(
            st.sampled_from(
                [
                    "funary",
                    "fexact",
                    "fbinary",
                    "exact_bin",
                    "ibinary",
                    "compare",
                    "where",
                    "convert",
                    "reduce",
                    "view",
                ]
            )
        )
        if kind in ("funary", "fexact"):
            i = pick(lambda v: v[1] == np.float32)
            table = FLOAT_UNARY if kind == "funary" else FLOAT_EXACT_UNARY
            op = draw(st.sampled_from(sorted(table)))
            v = pool[i]
            steps.append(("unary", table[op], (i,), op))
            pool.append((v[0], v[1], v[2] and kind == "fexact", v[3]))
        elif kind in ("fbinary", "exact_bin"):
            i = pick(lambda v: v[1] == np.float32)
            j = partner(i, lambda v: v[1] == np.float32)
            if j is None:
                continue
            table = FLOAT_BINARY if kind == "fbinary" else EXACT_BINARY
            op = draw(st.sampled_from(sorted(table)))
            a, b = pool[i], pool[j]
            steps.append(("binary", table[op], (i, j), op))
            pool.append((a[0], a[1], a[2] and b[2] and kind == "exact_bin", max(a[3], b[3])))
        elif kind == "ibinary":
            i = pick(lambda v: v[1] == np.int32)
            j = partner(i, lambda v: v[1] == np.int32)
            if i is None or j is None:
                continue
            op = draw(st.sampled_from(sorted(INT_BINARY)))
            steps.append(("binary", INT_BINARY[op], (i, j), "i" + op))
            pool.append((pool[i][0], np.dtype(np.int32), True, 0))
        elif kind == "compare":
            i = pick(lambda v: v[2] and v[1] != np.bool_)
            j = partner(i, lambda v, d=pool[i][1]: v[2] and v[1] == d)
            if j is None:
                continue
            op = draw(st.sampled_from(sorted(COMPARE)))
            steps.append(("binary", COMPARE[op], (i, j), op))
            pool.append((pool[i][0], np.dtype(np.bool_), True, 0))
        elif kind == "where":
            c = pick(lambda v: v[1] == np.bool_)
            if c is None:
                continue
            a = partner(c, lambda v: v[1] != np.bool_)
            if a is None:
                continue
            b = partner(c, lambda v, d=pool[a][1]: v[1] == d)
            if b is None:
                continue
            steps.append(("where", None, (c, a, b), "where"))
            pool.append((pool[c][0], pool[a][1], pool[a][2] and pool[b][2], max(pool[a][3], pool[b][3])))
        elif kind == "convert":
            i = pick(lambda v: v[2])
            v = pool[i]
            to = draw(st.sampled_from([np.float32, np.int32, np.bool_]))
            if v[1] == np.float32 and to == np.int32:
                steps.append(("unary", lambda x: jnp.clip(x, -1e6, 1e6).astype(jnp.int32), (i,), "f2i"))
            else:
                steps.append(
                    (
                        "unary",
                        lambda x, to=to: lax.convert_element_type(x, to),
                        (i,),
                        f"to_{np.dtype(to).name}",
                    )
                )
            pool.append((v[0], np.dtype(to), True, v[3]))
        elif kind == "reduce":
            i = pick(lambda v: len(v[0]) >= 1)
            if i is None:
                continue
            v = pool[i]
            axes = tuple(sorted(draw(st.sets(st.integers(0, len(v[0]) - 1), min_size=1))))
            keep = draw(st.booleans())
            if v[1] == np.bool_:
                op = draw(st.sampled_from(["any", "all"]))
            else:
                op = draw(st.sampled_from(["sum", "max", "min"]))
            fn = {"sum": jnp.sum, "max": jnp.max, "min": jnp.min, "any": jnp.any, "all": jnp.all}[op]
            steps.append(
                (
                    "unary",
                    lambda x, fn=fn, axes=axes, keep=keep: fn(x, axis=axes, keepdims=keep),
                    (i,),
                    f"{op}{axes}{'k' * keep}",
                )
            )
            out_shape = tuple(1 if k in axes else d for k, d in enumerate(v[0]) if keep or k not in axes)
            exact = v[1] != np.float32 or (v[2] and op != "sum")
            pool.append((out_shape, v[1], exact, 2 if v[1] == np.float32 else 0))
        else:  # a view: transpose, flip, strided slice, reshape
            i = pick(lambda v: len(v[0]) >= 1)
            if i is None:
                continue
            v = pool[i]
            s = v[0]
            which = draw(st.sampled_from(["transpose", "flip", "slice", "reshape"]))
            if which == "transpose":
                perm = tuple(draw(st.permutations(range(len(s)))))
                fn, new = (lambda x, p=perm: jnp.transpose(x, p)), tuple(s[p] for p in perm)
            elif which == "flip":
                ax = draw(st.integers(0, len(s) - 1))
                fn, new = (lambda x, a=ax: jnp.flip(x, a)), s
            elif which == "slice":
                ax = draw(st.integers(0, len(s) - 1))
                start, step = draw(st.integers(0, max(0, s[ax] - 1))), draw(st.integers(1, 3))
                idx = tuple(slice(start, None, step) if k == ax else slice(None) for k in range(len(s)))
                fn = lambda x, idx=idx: x[idx]  # noqa: E731
                new = tuple(len(range(start, d, step)) if k == ax else d for k, d in enumerate(s))
            else:
                new = (int(np.prod(s)),) if len(s) > 1 else (1, s[0])
                fn = lambda x, new=new: x.reshape(new)  # noqa: E731
            steps.append(("unary", fn, (i,), f"{which}->{new}"))
            pool.append((new, v[1], v[2], v[3]))
    n_in = len(inputs)
    computed = list(range(n_in, len(pool)))
    if not computed:
        outs = [0]
    else:
        extra = draw(st.lists(st.sampled_from(computed), max_size=2, unique=True))
        outs = sorted({computed[-1], *extra})
    seed = draw(st.integers(0, 2**16))
    return inputs, steps, outs, [pool[k] for k in outs], seed


def _build(steps, outs):
    def f(*args):
        vals = list(args)
        for kind, fn, operands, _ in steps:
            ops = [vals[k] for k in operands]
            if kind == "where":
                vals.append(jnp.where(*ops))
            else:
                vals.append(fn(*ops))
        return [vals[k] for k in outs]

    return f


def _make_inputs(inputs, seed):
    rng = np.random.default_rng(seed)
    args = []
    for shape, dtype in inputs:
        if dtype == np.float32:
            a = rng.uniform(-3, 3, shape).astype(np.float32)
            # Some exact ties, so comparisons and max/min see equal values.
            a = np.where(rng.random(shape) < 0.2, np.float32(1.0), a).astype(np.float32)
        else:
            a = rng.integers(-40, 40, shape).astype(np.int32)
            # Zeros (division) and large values (shift counts >= 32, overflow).
            a = np.where(rng.random(shape) < 0.15, 0, a)
            a = np.where(rng.random(shape) < 0.1, np.int32(2**31 - 1), a).astype(np.int32)
        args.append(a)
    return args


def _compare(got, want, info, where):
    shape, dtype, exact, level = info
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, where
    if exact or dtype != np.float32:
        np.testing.assert_array_equal(got, want, err_msg=where)
        return
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    rtol = 1e-4 if level else 1e-5
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, err_msg=where)


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(graphs())
def test_random_fusible_graphs_match_the_reference(graph):
    inputs, steps, outs, infos, seed = graph
    f = _build(steps, outs)
    args = _make_inputs(inputs, seed)
    got = morphax.jit(f, backend="c")(*args)
    want = morphax.jit(f, backend="numpy")(*args)
    for k, (g, w, info) in enumerate(zip(got, want, infos)):
        program = [f"v{len(inputs) + n} = {name}{operands}" for n, (_, _, operands, name) in enumerate(steps)]
        _compare(g, w, info, f"output {k} (v{outs[k]}) of inputs {inputs}: {program}")


@pytest.mark.skipif(not get_backend("xla").available(), reason="no PJRT plugin")
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(graphs())
def test_random_fusible_graphs_on_xla_match_the_reference(graph):
    """The same random programs compiled by XLA (the xla backend): exact values bit for bit,
    approximate ones within the same tolerances."""
    inputs, steps, outs, infos, seed = graph
    f = _build(steps, outs)
    args = _make_inputs(inputs, seed)
    got = morphax.jit(f, backend="xla")(*args)
    want = morphax.jit(f, backend="numpy")(*args)
    for k, (g, w, info) in enumerate(zip(got, want, infos)):
        program = [f"v{len(inputs) + n} = {name}{operands}" for n, (_, _, operands, name) in enumerate(steps)]
        _compare(g, w, info, f"output {k} (v{outs[k]}) of inputs {inputs}: {program}")
