"""`morphax.export`, checked against JAX 0.10.2's `jax.export`: the Exported's attributes and
module, `call` (eagerly, under jit/grad/vmap, JAX's error messages for mismatched arguments),
`vjp` against `morphax.vjp`, symbolic shapes (parsing, arithmetic, a symbolic batch called at
several sizes, JAX's shape-assertion errors), serialization through bytes into a fresh process
(bit-identical results on the C and xla backends), and pytree serialization registrations. Results
are compared against NumPy."""

from __future__ import annotations

import collections
import json
import struct

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import export, lax
from morphax._src.compiler.backends import get_backend

XLA = get_backend("xla").available()
BACKENDS = ["c", pytest.param("xla", marks=pytest.mark.skipif(not XLA, reason="no PJRT plugin"))]
RNG = np.random.default_rng(0)
X = RNG.normal(size=(5, 3)).astype(np.float32)
W = RNG.normal(size=(3, 4)).astype(np.float32)
F32 = np.float32


def _f(x, y):
    return jnp.sin(x) + y


def _scan_cond(x, w):
    """A scan over the rows of x, then a cond on the scanned sums."""

    def body(c, xi):
        c = c + jnp.tanh(xi @ w)
        return c, jnp.sum(c)

    c, ys = lax.scan(body, jnp.zeros(w.shape[1], x.dtype), x)
    r = lax.cond(jnp.sum(ys) > 0, lambda: c * 2, lambda: c - 1)
    return {"m": jnp.mean(r) + jnp.mean(x), "r": morphax.nn.relu(x - 0.5).reshape(-1)}


def _scan_cond_numpy(x, w):
    c, ys = np.zeros(w.shape[1], np.float64), []
    for xi in x.astype(np.float64):
        c = c + np.tanh(xi @ w)
        ys.append(c.sum())
    r = c * 2 if sum(ys) > 0 else c - 1
    return {"m": r.mean() + x.mean(), "r": np.maximum(x - 0.5, 0).reshape(-1)}


def _int_program(x, k):
    """Integer arithmetic with a scan and a cond: exact on every backend."""

    def body(c, xi):
        return c * 3 + xi, c % 7

    c, ys = lax.scan(body, jnp.zeros(x.shape[1], jnp.int32), x)
    return lax.cond(k > 0, lambda: c + ys.sum(0), lambda: c - ys.sum(0))


def _int_program_numpy(x, k):
    c, ys = np.zeros(x.shape[1], np.int64), []
    for xi in x:
        ys.append(c % 7)
        c = c * 3 + xi
    s = np.sum(ys, axis=0)
    return (c + s if k > 0 else c - s).astype(np.int32)


# ------------------------------------------------------------------------------ the Exported
def test_public_names_are_jaxs():
    assert sorted(export.__all__) == sorted(
        "DisabledSafetyCheck Exported SymbolicScope default_export_platform deserialize export "
        "is_symbolic_dim maximum_supported_calling_convention_version "
        "minimum_supported_calling_convention_version register_namedtuple_serialization "
        "register_pytree_node_serialization symbolic_args_specs symbolic_shape".split()
    )
    assert all(hasattr(export, name) for name in export.__all__)
    assert export.default_export_platform() == "cpu"
    assert (export.minimum_supported_calling_convention_version, export.maximum_supported_calling_convention_version) == (9, 10)  # fmt: skip
    assert str(export.DisabledSafetyCheck.platform()) == "platform"
    assert export.DisabledSafetyCheck.custom_call("t").is_custom_call() == "t"


def test_exported_attributes_as_jax():
    exp = export.export(morphax.jit(_f))(np.ones((2, 3), F32), np.ones((2, 3), F32))
    # JAX 0.10.2 prints these for the same export
    assert str(exp.in_avals) == "(ShapedArray(float32[2,3]), ShapedArray(float32[2,3]))"
    assert str(exp.out_avals) == "(ShapedArray(float32[2,3]),)"
    assert (exp.fun_name, str(exp.in_tree), str(exp.out_tree)) == (
        "_f",
        "PyTreeDef(((*, *), {}))",
        "PyTreeDef(*)",
    )
    assert (exp.platforms, exp.calling_convention_version, exp.module_kept_var_idx) == (("cpu",), 10, (0, 1))
    assert (exp.nr_devices, exp.uses_global_constants, exp.ordered_effects, exp.unordered_effects) == (
        1,
        False,
        (),
        (),
    )
    assert exp.in_shardings_hlo == (None, None) and exp.out_shardings_hlo == (None,)
    assert exp.in_shardings_jax(None) == (None, None) and exp.out_shardings_jax(None) == (None,)
    assert str(exp) == "Exported(fun_name=_f, ...)" and exp.disabled_safety_checks == ()
    text = exp.mlir_module()
    assert text.startswith(
        "module @jit__f attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions"
    )
    assert '(tensor<2x3xf32> {jax.result_info = "result"})' in text and '"stablehlo.sine"' in text
    assert exp.mlir_module_serialized == text.encode() and str(exp.mlir_module(serialized=False)) == text
    # the kept jaxpr; unused arguments are left out of the module (JAX's module_kept_var_idx)
    assert "sin" in str(exp._jaxpr)
    partial = export.export(morphax.jit(lambda x, y, z: x * z))(*[np.ones(2, F32)] * 3)
    assert partial.module_kept_var_idx == (0, 2) and "%arg2" not in partial.mlir_module()


def test_export_requires_jit():
    with pytest.raises(
        ValueError, match="Function to be exported must be the result of `jit` but is: <function"
    ):
        export.export(_f)


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((np.ones((2, 4), F32), np.ones((2, 3), F32)), {},
         "Shape mismatch for args[0].shape[1] (expected same constant): expected (2, 3) and called with (2, 4)"),
        ((np.ones((2, 3), np.int32), np.ones((2, 3), F32)), {},
         "Dtype mismatch for args[0]: expected float32 and called with int32"),
        ((np.ones((2, 3, 1), F32), np.ones((2, 3), F32)), {},
         "Rank mismatch for args[0]: expected (2, 3) and called with (2, 3, 1)"),
        (((np.ones((2, 3), F32),), np.ones((2, 3), F32)), {},
         "The invocation args and kwargs must have the same pytree structure as when the function '_f' was "
         "exported, but they have the following structural differences:\n   - args[0] is a <class 'tuple'> in "
         "the invocation and a <class 'int'> when exported, so their Python types differ.\n"),
        ((np.ones((2, 3), F32),), {"y": np.ones((2, 3), F32)},
         "The invocation args and kwargs must have the same pytree structure as when the function '_f' was "
         "exported, but they have the following structural differences:\n   - args is a tuple of length 1 in "
         "the invocation and a tuple of length 2 when exported, so the lengths do not match.\n\n   - kwargs is a "
         "<class 'dict'> with 1 child in the invocation and a <class 'dict'> with 0 child when exported, so the "
         "numbers of children do not match, with the symmetric difference of key sets: {'y'}.\n"),
    ],
)  # fmt: skip
def test_call_errors_worded_as_jax(args, kwargs, message):
    exp = export.export(morphax.jit(_f))(np.ones((2, 3), F32), np.ones((2, 3), F32))
    with pytest.raises(ValueError) as info:
        exp.call(*args, **kwargs)
    assert str(info.value) == message


def test_platform_check():
    exp = export.export(morphax.jit(jnp.sin), platforms=("tpu",))(np.ones(3, F32))
    assert exp.platforms == ("tpu",)
    with pytest.raises(ValueError) as info:
        exp.call(np.ones(3, F32))
    assert (
        str(info.value)
        == "Function 'sin' was exported for platforms '('tpu',)' but it is used on '('cpu',)'."
    )
    checks = [export.DisabledSafetyCheck.platform()]
    exp = export.export(morphax.jit(jnp.sin), platforms=("tpu",), disabled_checks=checks)(np.ones(3, F32))
    np.testing.assert_allclose(exp.call(np.ones(3, F32)), np.sin(np.ones(3)), rtol=1e-6)


def test_call_composes_with_jit_grad_vmap():
    exp = export.export(morphax.jit(_f))(X, X)
    want = np.sin(X) + X
    np.testing.assert_allclose(exp.call(X, X), want, rtol=1e-6)
    np.testing.assert_allclose(morphax.jit(exp.call)(X, X), want, rtol=1e-6)
    g = morphax.grad(lambda x: jnp.sum(exp.call(x, x) ** 2))(X)
    np.testing.assert_allclose(g, 2 * want * (np.cos(X) + 1), rtol=1e-5)
    batched = morphax.vmap(exp.call)(np.stack([X, 2 * X]), np.stack([X, X]))
    np.testing.assert_allclose(batched, np.stack([want, np.sin(2 * X) + X]), rtol=1e-6)
    assert "jit[" in str(morphax.make_jaxpr(exp.call)(X, X))  # bound as a jit call


@pytest.mark.parametrize("backend", BACKENDS)
def test_scan_and_cond_against_numpy(backend):
    exp = export.export(morphax.jit(_scan_cond, backend=backend))(X, W)
    assert exp._backend == backend and str(exp.out_tree) == "PyTreeDef({'m': *, 'r': *})"
    assert '"stablehlo.while"' in exp.mlir_module() and '"stablehlo.case"' in exp.mlir_module()
    got, want = exp.call(X, W), _scan_cond_numpy(X, W)
    for k in ("m", "r"):
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=1e-5, atol=1e-6)


def test_c_and_xla_give_identical_results():
    x = np.arange(12, dtype=np.int32).reshape(4, 3) - 5
    for k in (1, -1):
        want = _int_program_numpy(x, k)
        exp = export.export(morphax.jit(_int_program))(x, k)
        np.testing.assert_array_equal(morphax.jit(exp.call, backend="c")(x, k), want)
        if XLA:
            np.testing.assert_array_equal(morphax.jit(exp.call, backend="xla")(x, k), want)


# ------------------------------------------------------------------------------------ vjp
def test_vjp_matches_morphax_vjp():
    exp = export.export(morphax.jit(_scan_cond))(X, W)
    ct = {"m": np.float32(0.7), "r": RNG.normal(size=15).astype(F32)}
    want = morphax.vjp(_scan_cond, X, W)[1](ct)
    vjp = exp.vjp()
    # JAX's convention: flat primals, then one cotangent per flat output
    assert vjp.fun_name == "fun_vjp_jax" and str(vjp.in_tree) == "PyTreeDef(((*, *, *, *), {}))"
    assert [a.shape for a in vjp.in_avals] == [(5, 3), (3, 4), (), (15,)]
    assert str(vjp.out_tree) == "PyTreeDef((*, *))" and [a.shape for a in vjp.out_avals] == [(5, 3), (3, 4)]
    got = vjp.call(X, W, ct["m"], ct["r"])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    # grad through call differentiates the same function
    grad = morphax.grad(lambda x, w: exp.call(x, w)["m"], argnums=(0, 1))(X, W)
    want_grad = morphax.grad(lambda x, w: _scan_cond(x, w)["m"], argnums=(0, 1))(X, W)
    for g, w in zip(grad, want_grad):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    # the VJP of the VJP (what vjp_order=2 serializes)
    assert len(vjp.vjp().in_avals) == len(vjp.in_avals) + len(vjp.out_avals)


# ----------------------------------------------------------------------------- serialization
def _header(blob):
    magic = b"MORPHAX-EXPORTED\n"
    assert bytes(blob[: len(magic)]) == magic
    (version,) = struct.unpack_from("<I", blob, len(magic))
    (n,) = struct.unpack_from("<Q", blob, len(magic) + 4)
    start = len(magic) + 12
    return version, json.loads(bytes(blob[start : start + n]))


def test_serialized_format_names_its_versions():
    blob = export.export(morphax.jit(_f))(X, X).serialize()
    assert isinstance(blob, bytearray)
    version, header = _header(blob)
    assert version == 1 and header["format_version"] == 1
    assert header["stablehlo_version"] == [1, 20, 0] and header["calling_convention_version"] == 10
    if XLA:
        assert tuple(header["stablehlo_version"]) == get_backend("xla").client().plugin.attributes["stablehlo_current_version"]  # fmt: skip
    with pytest.raises(ValueError, match="not written by morphax"):
        export.deserialize(b"not an export")
    with pytest.raises(ValueError, match="truncated"):
        export.deserialize(blob[:-5])


def test_round_trip_in_process_keeps_attributes():
    exp = export.export(morphax.jit(_scan_cond))(X, W)
    back = export.deserialize(exp.serialize())
    for name in ("fun_name", "in_tree", "out_tree", "platforms", "module_kept_var_idx", "nr_devices",
                 "calling_convention_version", "uses_global_constants", "mlir_module_serialized"):  # fmt: skip
        assert getattr(back, name) == getattr(exp, name), name
    assert [str(a) for a in back.in_avals + back.out_avals] == [str(a) for a in exp.in_avals + exp.out_avals]
    got, want = back.call(X, W), exp.call(X, W)
    for k in ("m", "r"):
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]))
    assert back.has_vjp()  # NB: JAX's needs serialize(vjp_order>=1); morphax differentiates the jaxpr


_CHILD = """
import json, numpy as np, morphax
from morphax import export
from morphax._src.compiler.backends import get_backend
out = {}
for backend in BACKENDS:
    exp = export.deserialize(open(TMP + "/exp_" + backend + ".bin", "rb").read())
    x, w = np.load(TMP + "/x.npy"), np.load(TMP + "/w.npy")
    got = exp.call(x, w)
    flat = np.concatenate([np.ravel(got["m"]), np.ravel(got["r"])]).astype(np.float32)
    ct = np.load(TMP + "/ct.npy")
    vjp = exp.vjp().call(x, w, ct[0], ct[1:])
    on_c = morphax.jit(exp.call, backend="c")(x, w)
    out[backend] = dict(
        bits=flat.view(np.uint32).tolist(), fun_name=exp.fun_name, backend=exp._backend,
        in_avals=str(exp.in_avals), out_tree=str(exp.out_tree), version=list(exp._stablehlo_version),
        vjp=[np.asarray(v).tolist() for v in vjp], on_c=np.asarray(on_c["r"]).tolist(),
    )
print(json.dumps(out))
"""


def test_round_trip_through_bytes_in_a_fresh_process(tmp_path, python_child):
    backends = ["c", "xla"] if XLA else ["c"]
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "w.npy", W)
    ct = RNG.normal(size=16).astype(F32)
    np.save(tmp_path / "ct.npy", ct)
    before = {}
    for backend in backends:
        exp = export.export(morphax.jit(_scan_cond, backend=backend))(X, W)
        (tmp_path / f"exp_{backend}.bin").write_bytes(exp.serialize(vjp_order=1))
        got = exp.call(X, W)
        before[backend] = (
            np.concatenate([np.ravel(got["m"]), np.ravel(got["r"])]).astype(F32).view(np.uint32).tolist(),
            exp.vjp().call(X, W, ct[0], ct[1:]),
        )
    res = python_child(f"BACKENDS = {backends!r}\nTMP = {str(tmp_path)!r}\n" + _CHILD)
    after = json.loads(res.stdout)
    want = _scan_cond_numpy(X, W)
    for backend in backends:
        a = after[backend]
        assert a["bits"] == before[backend][0]  # the same bits as before serialization
        assert (a["fun_name"], a["backend"], a["out_tree"]) == (
            "_scan_cond",
            backend,
            "PyTreeDef({'m': *, 'r': *})",
        )
        assert a["in_avals"] == "(ShapedArray(float32[5,3]), ShapedArray(float32[3,4]))"
        assert a["version"] == [1, 20, 0]
        np.testing.assert_allclose(a["on_c"], want["r"], rtol=1e-6)  # and on the C backend
        for g, w in zip(a["vjp"], before[backend][1]):
            np.testing.assert_allclose(g, np.asarray(w), rtol=1e-6, atol=1e-7)


def test_unserializable_callback_is_named():
    def f(x):
        y = morphax.pure_callback(lambda v: np.asarray(v) * 2, morphax.ShapeDtypeStruct(x.shape, x.dtype), x)
        return y + 1

    exp = export.export(morphax.jit(f))(np.ones(3, F32))
    np.testing.assert_array_equal(exp.call(np.ones(3, F32)), [3, 3, 3])  # runs in process
    with pytest.raises(ValueError, match="parameter 'callback' of its primitive 'pure_callback' holds"):
        exp.serialize()
    # a custom_jvp rule (relu's) is a Python function too: its call serializes as a plain call
    relu = export.export(morphax.jit(morphax.nn.relu))(np.ones(3, F32))
    assert "custom_jvp_call" in str(relu._jaxpr)
    back = export.deserialize(relu.serialize())
    assert "custom_jvp_call" not in str(back._jaxpr)
    np.testing.assert_array_equal(back.call(np.array([-1, 0, 2], F32)), [0, 0, 2])


def test_serialize_vjp_order():
    exp = export.export(morphax.jit(_f))(X, X)
    back = export.deserialize(exp.serialize(vjp_order=2))
    assert back.vjp().fun_name == "fun_vjp_jax" and back.vjp().vjp().fun_name == "fun_vjp_jax"
    _, header = _header(exp.serialize(vjp_order=2))
    assert header["vjp_order"] == 2
    ct = np.ones_like(X)
    np.testing.assert_allclose(back.vjp().call(X, X, ct)[0], np.cos(X), rtol=1e-6)


# -------------------------------------------------------------------------- pytree registries
NT = collections.namedtuple("NT", "a b")
export.register_namedtuple_serialization(NT, serialized_name="tests.export.NT")


class Box:
    def __init__(self, v, tag):
        self.v, self.tag = v, tag


morphax.tree_util.register_pytree_node(Box, lambda b: ((b.v,), b.tag), lambda tag, ch: Box(ch[0], tag))
export.register_pytree_node_serialization(
    Box, serialized_name="tests.export.Box", serialize_auxdata=str.encode, deserialize_auxdata=bytes.decode
)


def test_pytree_serialization_registrations():
    exp = export.export(morphax.jit(lambda p, box: (NT(p.b, p.a), Box(box.v * 2, box.tag))))(
        NT(np.ones(2, F32), np.zeros(3, F32)), Box(np.ones(2, F32), "t")
    )
    back = export.deserialize(exp.serialize())
    assert back.in_tree == exp.in_tree and back.out_tree == exp.out_tree
    nt, box = back.call(NT(np.ones(2, F32), np.zeros(3, F32)), Box(np.ones(2, F32), "t"))
    assert isinstance(nt, NT) and nt.a.shape == (3,) and box.tag == "t"
    np.testing.assert_array_equal(box.v, [2, 2])
    other = collections.namedtuple("Other", "x")
    unregistered = export.export(morphax.jit(lambda t: t.x))(other(np.ones(2, F32)))
    with pytest.raises(ValueError, match="Cannot serialize PyTreeDef containing an unregistered type"):
        unregistered.serialize()
    with pytest.raises(ValueError, match="Duplicate serialization registration for type"):
        export.register_namedtuple_serialization(NT, serialized_name="again")
    with pytest.raises(ValueError, match="for types other than `collections.namedtuple`"):
        export.register_namedtuple_serialization(Box, serialized_name="box2")
    int_keys = export.export(morphax.jit(lambda d: d[1]))({1: np.ones(2, F32)})
    with pytest.raises(TypeError, match="Serialization is supported only for dictionaries with string keys"):
        int_keys.serialize()
    ordered = export.export(morphax.jit(lambda d: d))(
        collections.OrderedDict(b=np.ones(1, F32), a=np.ones(2, F32))
    )
    assert export.deserialize(ordered.serialize()).in_tree == ordered.in_tree


# --------------------------------------------------------------------------- symbolic shapes
def test_symbolic_shape_api_as_jax():
    assert str(export.symbolic_shape("b, 4")) == "(b, 4)"
    shape = export.symbolic_shape("(b, 2*b + 1, mod(b, 3), floordiv(b,2), max(b, 4), b^2, b*b*2)")
    assert str(shape) == "(b, 2*b + 1, mod(b, 3), floordiv(b, 2), max(b, 4), b^2, 2*b^2)"
    a, b, c = export.symbolic_shape("a, b, c")
    assert [str(e) for e in (a + 2 * b - c, b * a, (a + 1) * (b - 1), 3 - a, -a)] == [
        "- c + 2*b + a", "a*b", "a*b + b - a - 1", "- a + 3", "- a"]  # fmt: skip
    assert (
        a * 0 == 0
        and a - a == 0
        and str(divmod(2 * b + 3, 2)) == "(b + 1, 1)"
        and str(b // 2) == "floordiv(b, 2)"
    )
    assert b >= 1 and b > 0 and b == b and b != 2 and not (b == 2)
    assert export.is_symbolic_dim(b) and not export.is_symbolic_dim(3)
    with pytest.raises(morphax.errors.InconclusiveDimensionOperation, match="Symbolic dimension comparison 'b' >= '2' is inconclusive"):  # fmt: skip
        b >= 2  # noqa: B015
    with pytest.raises(morphax.errors.InconclusiveDimensionOperation, match="used in a context that requires a constant"):  # fmt: skip
        int(b)
    with pytest.raises(ValueError) as info:
        export.symbolic_shape("b, 3x")
    assert str(info.value) == (
        "syntax error in symbolic shape 'b, 3x' in dimension 1: expecting one of {STAR} but found NAME. "
        "Parsed 'b, 3', remaining 'x'."
    )
    scope = export.SymbolicScope(["b >= 4", "b <= 10"])
    (b2,) = export.symbolic_shape("b", scope=scope)
    assert b2 >= 4 and b2 > 3 and b2 <= 10 and "with constraints:\n  b >= 4\n  b <= 10" in str(scope)
    with pytest.raises(ValueError, match="Invalid mixing of symbolic scopes for linear combination"):
        b2 + b  # noqa: B018
    specs = export.symbolic_args_specs((np.ones((3, 4), F32), np.ones((3,), np.int32)), ("b, _", "b"))
    assert (
        str(specs)
        == "(ShapeDtypeStruct(shape=(b, 4), dtype=float32), ShapeDtypeStruct(shape=(b,), dtype=int32))"
    )
    assert str(export.symbolic_shape("b, ...", like=(3, 4, 5))) == "(b, 4, 5)"


def _batched(x, y):
    return jnp.sum(jnp.tanh(x), axis=1) * y, jnp.concatenate([x, x]).reshape(-1), x.mean(0)


def _batched_numpy(x, y):
    return np.tanh(x).sum(1) * y, np.concatenate([x, x]).reshape(-1), x.mean(0)


def _check_batched(exp, sizes=(1, 4, 9)):
    for n in sizes:
        x = RNG.normal(size=(n, 4)).astype(F32)
        y = RNG.normal(size=n).astype(F32)
        for got, want in zip(exp.call(x, y), _batched_numpy(x, y)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_symbolic_batch_dimension_called_at_three_sizes():
    specs = export.symbolic_args_specs((np.ones((3, 4), F32), np.ones((3,), F32)), ("b, 4", "b"))
    exp = export.export(morphax.jit(_batched))(*specs)
    assert str(exp.in_avals) == "(ShapedArray(float32[b,4]), ShapedArray(float32[b]))"
    assert (
        str(exp.out_avals) == "(ShapedArray(float32[b]), ShapedArray(float32[8*b]), ShapedArray(float32[4]))"
    )
    assert exp.uses_global_constants and exp.module_kept_var_idx == (0, 1)
    assert "jax.uses_shape_polymorphism = true" in exp.mlir_module()
    assert "f32[2*b,4]" in str(exp._jaxpr)  # the kept jaxpr is symbolic
    _check_batched(exp)
    _check_batched(export.deserialize(exp.serialize()))  # and after a round trip
    # the VJP is symbolic too
    vjp = exp.vjp()
    assert (
        str(vjp.in_avals[2:])
        == "(ShapedArray(float32[b]), ShapedArray(float32[8*b]), ShapedArray(float32[4]))"
    )
    for n in (2, 6):
        x, y = RNG.normal(size=(n, 4)).astype(F32), RNG.normal(size=n).astype(F32)
        cts = [np.ones(n, F32), np.ones(8 * n, F32), np.ones(4, F32)]
        want = morphax.vjp(_batched, x, y)[1](tuple(cts))
        for g, w in zip(vjp.call(x, y, *cts), want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    # two variables and their product
    specs = export.symbolic_args_specs((np.ones((3, 4), F32), np.ones((4, 5), F32)), ("b, n", "n, m"))
    mm = export.export(morphax.jit(lambda x, y: (x @ y).reshape(-1)))(*specs)
    assert str(mm.out_avals) == "(ShapedArray(float32[b*m]),)"
    x, y = RNG.normal(size=(2, 3)).astype(F32), RNG.normal(size=(3, 6)).astype(F32)
    np.testing.assert_allclose(mm.call(x, y), (x @ y).reshape(-1), rtol=1e-5)


@pytest.mark.skipif(not XLA, reason="no PJRT plugin")
def test_symbolic_batch_on_xla():
    specs = export.symbolic_args_specs((np.ones((3, 4), F32), np.ones((3,), F32)), ("b, 4", "b"))
    _check_batched(export.export(morphax.jit(_batched, backend="xla"))(*specs))


_ASSERT = ". Please see https://docs.jax.dev/en/latest/export/shape_poly.html#shape-assertion-errors for more details."
_SPECS = (
    " Using the following polymorphic shapes specifications: args[0].shape = (b, 4),args[1].shape = (b,)."
)


@pytest.mark.parametrize(
    "x_shape, y_shape, message",
    [
        ((5, 4), (6,), "Input shapes do not match the polymorphic shapes specification. Found inconsistency "
         "between dimension size args[1].shape[0] (= 6) and the specification 'b' (= 5)." + _SPECS +
         " Obtained dimension variables: 'b' = 5 from specification 'b' for dimension args[0].shape[0] (= 5), " + _ASSERT),
        ((0, 4), (0,), "Input shapes do not match the polymorphic shapes specification. Expected value >= 1 for "
         "dimension variable 'b'." + _SPECS + " Obtained dimension variables: 'b' = 0 from specification 'b' for "
         "dimension args[0].shape[0] (= 0), " + _ASSERT),
        ((5, 3), (5,), "Shape mismatch for args[0].shape[1] (expected same constant): expected (b, 4) and called "
         "with (5, 3)"),
    ],
)  # fmt: skip
def test_symbolic_errors_worded_as_jax(x_shape, y_shape, message):
    specs = export.symbolic_args_specs((np.ones((3, 4), F32), np.ones((3,), F32)), ("b, 4", "b"))
    exp = export.export(morphax.jit(_batched))(*specs)
    with pytest.raises(ValueError) as info:
        exp.call(np.ones(x_shape, F32), np.ones(y_shape, F32))
    assert str(info.value) == message


def test_symbolic_remainder_constraint_and_branch_errors():
    specs = export.symbolic_args_specs((np.ones((4, 4), F32),), ("2*b, 4",))
    exp = export.export(morphax.jit(lambda x: x * 2))(*specs)
    with pytest.raises(ValueError) as info:
        exp.call(np.ones((5, 4), F32))
    assert str(info.value) == (
        "Input shapes do not match the polymorphic shapes specification. Division had remainder 1 when computing "
        "the value of 'b'. Using the following polymorphic shapes specifications: args[0].shape = (2*b, 4). "
        "Obtained dimension variables: " + _ASSERT
    )
    assert exp.call(np.ones((6, 4), F32)).shape == (6, 4)
    scoped = export.symbolic_args_specs((np.ones((4, 4), F32),), ("b, 4",), constraints=["b >= 4"])
    exp = export.export(morphax.jit(lambda x: x))(*scoped)
    with pytest.raises(ValueError, match=r"symbolic shape constraint b >= 4. Expected 'b - 4' to be greater or equal to 0, but found -2\."):  # fmt: skip
        exp.call(np.ones((2, 4), F32))

    def branches_on_size(x):
        return x if x.shape[0] > 5 else x * 2

    with pytest.raises(morphax.errors.InconclusiveDimensionOperation, match="Symbolic dimension comparison is inconclusive"):  # fmt: skip
        export.export(morphax.jit(branches_on_size))(*export.symbolic_args_specs((np.ones(3, F32),), "b"))
    with pytest.raises(ValueError, match="Invalid mixing of symbolic scopes when exporting"):
        export.export(morphax.jit(lambda x, y: x))(
            *export.symbolic_args_specs((np.ones(3, F32),), "b"),
            *export.symbolic_args_specs((np.ones(3, F32),), "b"),
        )
