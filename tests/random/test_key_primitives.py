"""Typed keys inside traced programs: ``key<fry>`` avals and the ``random_*`` primitives
(prims/random_keys.py), printed as JAX 0.10.2 prints them (its texts stated below as literals),
with values equal to the raw ``uint32`` key path's (itself checked against JAX's golden values in
test_prng_golden.py), eagerly, under jit, vmap, jvp/grad and inside scan, cond and while."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax, random
from morphax._src.compiler.physicalize import physicalize
from morphax._src.core.jaxpr import check_jaxpr, eval_jaxpr
from morphax._src.prims import random_keys as rk

K = random.key(0)
R = random.PRNGKey(0)
KS = random.split(K, 4)
RS = random.split(R, 4)
kd = random.key_data


def text(f, *args):
    return str(morphax.make_jaxpr(f)(*args))


def same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# ------------------------------------------------------------------------ JAX's printed jaxprs

JAX_TEXTS = {
    "split": (
        lambda k: random.split(k),
        (K,),
        "{ lambda ; a:key<fry>[]. let\n    b:key<fry>[2] = random_split[shape=(2,)] a\n  in (b,) }",
    ),
    "split23": (
        lambda k: random.split(k, (2, 3)),
        (K,),
        "{ lambda ; a:key<fry>[]. let\n    b:key<fry>[2,3] = random_split[shape=(2, 3)] a\n  in (b,) }",
    ),
    "seed": (
        lambda s: random.key(s),
        (0,),
        "{ lambda ; a:i32[]. let b:key<fry>[] = random_seed[impl=fry] a in (b,) }",
    ),
    "seed_u32": (
        lambda s: random.key(s),
        (jnp.uint32(0),),
        "{ lambda ; a:u32[]. let b:key<fry>[] = random_seed[impl=fry] a in (b,) }",
    ),
    "wrap": (
        lambda d: random.wrap_key_data(d),
        (R,),
        "{ lambda ; a:u32[2]. let b:key<fry>[] = random_wrap[impl=fry] a in (b,) }",
    ),
    "unwrap": (
        lambda k: random.key_data(k),
        (K,),
        "{ lambda ; a:key<fry>[]. let b:u32[2] = random_unwrap a in (b,) }",
    ),
    "fold_in": (
        lambda k: random.fold_in(k, 3),
        (K,),
        "{ lambda ; a:key<fry>[]. let b:key<fry>[] = random_fold_in a 3:u32[] in (b,) }",
    ),
    "fold_in_array": (
        lambda k, d: random.fold_in(k, d),
        (K, 3),
        "{ lambda ; a:key<fry>[] b:i32[]. let\n"
        "    c:u32[] = convert_element_type[new_dtype=uint32 weak_type=False] b\n"
        "    d:key<fry>[] = random_fold_in a c\n"
        "  in (d,) }",
    ),
    "bits": (
        lambda k: random.bits(k, (3,)),
        (K,),
        "{ lambda ; a:key<fry>[]. let\n    b:u32[3] = random_bits[bit_width=32 shape=(3,)] a\n  in (b,) }",
    ),
    "bits8": (
        lambda k: random.bits(k, (3,), jnp.uint8),
        (K,),
        "{ lambda ; a:key<fry>[]. let\n    b:u8[3] = random_bits[bit_width=8 shape=(3,)] a\n  in (b,) }",
    ),
    "jit": (
        morphax.jit(lambda k: random.split(k)),
        (K,),
        "{ lambda ; a:key<fry>[]. let\n"
        "    b:key<fry>[2] = jit[\n"
        "      name=<lambda>\n"
        "      jaxpr={ lambda ; a:key<fry>[]. let\n"
        "          b:key<fry>[2] = random_split[shape=(2,)] a\n"
        "        in (b,) }\n"
        "    ] a\n"
        "  in (b,) }",
    ),
    "vmap_split": (
        morphax.vmap(lambda k: random.split(k)),
        (KS,),
        "{ lambda ; a:key<fry>[4]. let\n    b:key<fry>[4,2] = random_split[shape=(2,)] a\n  in (b,) }",
    ),
    "cond": (
        lambda p, k: lax.cond(p, lambda k: random.split(k), lambda k: random.split(random.fold_in(k, 1)), k),
        (True, K),
        "{ lambda ; a:bool[] b:key<fry>[]. let\n"
        "    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a\n"
        "    d:key<fry>[2] = cond[\n"
        "      branches=(\n"
        "        { lambda ; e:key<fry>[]. let\n"
        "            f:key<fry>[] = random_fold_in e 1:u32[]\n"
        "            g:key<fry>[2] = random_split[shape=(2,)] f\n"
        "          in (g,) }\n"
        "        { lambda ; h:key<fry>[]. let\n"
        "            i:key<fry>[2] = random_split[shape=(2,)] h\n"
        "          in (i,) }\n"
        "      )\n"
        "    ] c b\n"
        "  in (d,) }",
    ),
    "while": (
        lambda k: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, random.split(c[1])[0]), (0, k)),
        (K,),
        "{ lambda ; a:key<fry>[]. let\n"
        "    b:i32[] c:key<fry>[] = while[\n"
        "      body_jaxpr={ lambda ; d:i32[] e:key<fry>[]. let\n"
        "          f:i32[] = add d 1:i32[]\n"
        "          g:key<fry>[2] = random_split[shape=(2,)] e\n"
        "          h:key<fry>[1] = slice[\n"
        "            limit_indices=(1,)\n"
        "            start_indices=(0,)\n"
        "            strides=None\n"
        "          ] g\n"
        "          i:key<fry>[] = squeeze[dimensions=(0,)] h\n"
        "        in (f, i) }\n"
        "      body_nconsts=0\n"
        "      cond_jaxpr={ lambda ; j:i32[] k:key<fry>[]. let\n"
        "          l:bool[] = lt j 3:i32[]\n"
        "        in (l,) }\n"
        "      cond_nconsts=0\n"
        "    ] 0:i32[] a\n"
        "  in (b, c) }",
    ),
    "identity": (lambda k: k, (K,), "{ lambda ; a:key<fry>[]. let  in (a,) }"),
    "clone": (
        lambda k: random.clone(k),
        (K,),
        "{ lambda ; a:key<fry>[]. let b:key<fry>[] = random_clone a in (b,) }",
    ),
    "new_axis": (
        lambda k: k[None, 1:3],
        (KS,),
        "{ lambda ; a:key<fry>[4]. let\n"
        "    b:key<fry>[2] = slice[limit_indices=(3,) start_indices=(1,) strides=None] a\n"
        "    c:key<fry>[1,2] = broadcast_in_dim[broadcast_dimensions=(1,)] b\n"
        "  in (c,) }",
    ),
    "index": (
        lambda k: k[0],
        (random.split(K),),
        "{ lambda ; a:key<fry>[2]. let\n"
        "    b:key<fry>[1] = slice[limit_indices=(1,) start_indices=(0,) strides=None] a\n"
        "    c:key<fry>[] = squeeze[dimensions=(0,)] b\n"
        "  in (c,) }",
    ),
    "reshape": (
        lambda k: k.reshape(2, 2),
        (KS,),
        "{ lambda ; a:key<fry>[4]. let\n"
        "    b:key<fry>[2,2] = reshape[dimensions=None new_sizes=(2, 2) sharding=None] a\n"
        "  in (b,) }",
    ),
}


@pytest.mark.parametrize("name", sorted(JAX_TEXTS))
def test_jaxpr_text_matches_jax(name):
    f, args, want = JAX_TEXTS[name]
    assert text(f, *args) == want


def test_scan_body_unstacks_keys_as_jax():
    # JAX 0.10.2's scan body (the sampler there is a nested jit call in JAX; morphax inlines it).
    def f(k):
        def body(c, _):
            c, s = random.split(c)
            return c, random.bits(s)

        return lax.scan(body, k, None, length=3)

    closed = morphax.make_jaxpr(f)(K)
    assert str(closed).startswith("{ lambda ; a:key<fry>[]. let\n    b:key<fry>[] c:u32[3] = scan[")
    body = str(closed.jaxpr.eqns[0].params["jaxpr"])
    assert body == (
        "{ lambda ; a:key<fry>[]. let\n"
        "    b:key<fry>[2] = random_split[shape=(2,)] a\n"
        "    c:key<fry>[1] = slice[limit_indices=(1,) start_indices=(0,) strides=(1,)] b\n"
        "    d:key<fry>[] = squeeze[dimensions=(0,)] c\n"
        "    e:key<fry>[1] = slice[limit_indices=(2,) start_indices=(1,) strides=(1,)] b\n"
        "    f:key<fry>[] = squeeze[dimensions=(0,)] e\n"
        "    g:u32[] = random_bits[bit_width=32 shape=()] f\n"
        "  in (d, g) }"
    )


def test_samplers_bind_random_bits_on_the_key():
    # JAX: h:u32[3] = random_bits[bit_width=32 shape=(3,)] a, then the float construction.
    got = text(lambda k: random.uniform(k, (3,)), K)
    assert got.startswith(
        "{ lambda ; a:key<fry>[]. let\n    b:u32[3] = random_bits[bit_width=32 shape=(3,)] a\n"
    )
    # normal's bits are drawn in its nested _uniform, hoisted as JAX prints it.
    got = text(lambda k: random.normal(k, (3,)), K)
    assert got.startswith("let _uniform = { lambda ; a:key<fry>[] b:f32[] c:f32[]. let\n")
    assert "    f:u32[3] = random_bits[bit_width=32 shape=(3,)] a\n" in got
    got = text(lambda k: random.randint(k, (3,), 0, 10), K)
    assert "key<fry>[2] = random_split[shape=(2,)] a" in got
    assert got.count("u32[3] = random_bits[bit_width=32 shape=(3,)]") == 2


def test_key_closed_over_under_grad_is_a_constant():
    # JAX 0.10.2: the key is a constant of the jaxpr, given to normal's nested jit.
    got = text(morphax.grad(lambda x: (x * random.normal(K, (3,))).sum()), 1.0)
    assert "{ lambda o:key<fry>[]; p:f32[]. let\n    q:f32[3] = jit[\n      name=_normal\n" in got


def test_raw_keys_keep_their_threefry_jaxprs():
    got = text(lambda k: random.split(k), R)
    assert got.startswith("{ lambda ; a:u32[2]. let")
    assert "threefry2x32" in got and "random_" not in got


# ---------------------------------------------------------------------- values, every path


def _programs():
    return {
        "split": (lambda k: kd(random.split(k)), lambda r: random.split(r)),
        "split23": (lambda k: kd(random.split(k, (2, 3))), lambda r: random.split(r, (2, 3))),
        "fold_in": (lambda k: kd(random.fold_in(k, 7)), lambda r: random.fold_in(r, 7)),
        "bits32": (lambda k: random.bits(k, (5,)), lambda r: random.bits(r, (5,))),
        "bits8": (lambda k: random.bits(k, (5,), jnp.uint8), lambda r: random.bits(r, (5,), jnp.uint8)),
        "bits16": (
            lambda k: random.bits(k, (2, 3), jnp.uint16),
            lambda r: random.bits(r, (2, 3), jnp.uint16),
        ),
        "uniform": (lambda k: random.uniform(k, (4,)), lambda r: random.uniform(r, (4,))),
        "normal": (lambda k: random.normal(k, (4,)), lambda r: random.normal(r, (4,))),
        "randint": (lambda k: random.randint(k, (4,), 0, 9), lambda r: random.randint(r, (4,), 0, 9)),
        "permutation": (lambda k: random.permutation(k, 6), lambda r: random.permutation(r, 6)),
        "gamma": (lambda k: random.gamma(k, 2.0, (3,)), lambda r: random.gamma(r, 2.0, (3,))),
        "unwrap": (lambda k: kd(k), lambda r: r),
    }


@pytest.mark.parametrize("partitionable", [True, False])
@pytest.mark.parametrize("name", sorted(_programs()))
def test_values_equal_raw_key_path(name, partitionable):
    typed, raw = _programs()[name]
    with morphax.threefry_partitionable(partitionable):
        # Like with like: eager, jitted and vmapped (backends may round floats differently
        # between an eager operation and a fused program).
        same(typed(K), raw(R))
        same(morphax.jit(typed)(K), morphax.jit(raw)(R))
        same(morphax.vmap(typed)(KS), morphax.vmap(raw)(RS))


def test_indexing_and_clone_values():
    words = np.asarray(RS).reshape(2, 2, 2)
    k22 = KS.reshape(2, 2)
    for idx in ((1,), (slice(0, 1),), (None, 1), (slice(None), None, 1), (Ellipsis, 0), (-1, -2)):
        same(kd(morphax.jit(lambda k, idx=idx: k[idx])(k22)), words[(*idx, slice(None))])
    same(kd(morphax.jit(lambda k: k[jnp.array([1, 0])])(k22)), words[[1, 0]])
    same(kd(morphax.jit(random.clone)(K)), R)
    same(kd(morphax.vmap(random.clone)(KS)), RS)


def test_seed_and_wrap_values():
    same(kd(morphax.jit(random.key)(7)), random.PRNGKey(7))
    same(kd(morphax.vmap(random.key)(jnp.arange(3))), morphax.vmap(random.PRNGKey)(jnp.arange(3)))
    same(kd(morphax.jit(random.wrap_key_data)(RS)), RS)
    same(kd(morphax.vmap(random.wrap_key_data)(RS)), RS)
    same(kd(morphax.vmap(random.wrap_key_data, in_axes=1, out_axes=0)(RS.T)), RS)
    seeds = jnp.array([0, 1, -1, 2**31 - 1], dtype=jnp.int32)
    same(kd(morphax.jit(morphax.vmap(random.key))(seeds)), morphax.vmap(random.PRNGKey)(seeds))


def test_batched_keys_and_fold_in():
    data = jnp.arange(4)
    same(
        kd(morphax.vmap(random.fold_in)(KS, data)),
        morphax.vmap(random.fold_in)(RS, data),
    )
    # An unbatched key with batched data, and batched keys with one message.
    same(
        kd(morphax.vmap(lambda d: random.fold_in(K, d))(data)),
        morphax.vmap(lambda d: random.fold_in(R, d))(data),
    )
    same(
        kd(morphax.vmap(lambda k: random.fold_in(k, 5))(KS)), morphax.vmap(lambda r: random.fold_in(r, 5))(RS)
    )
    # vmap twice (keys of shape (2, 2) in the primitives).
    k22, r22 = KS.reshape(2, 2), RS.reshape(2, 2, 2)
    inner = morphax.vmap(morphax.vmap(lambda k: random.bits(k, (3,))))
    same(morphax.jit(inner)(k22), morphax.vmap(morphax.vmap(lambda r: random.bits(r, (3,))))(r22))


def test_control_flow_values():
    def scan_f(k):
        def body(c, _):
            c, s = random.split(c)
            return c, random.uniform(s)

        return lax.scan(body, k, None, length=3)

    (kc, ys), (rc, want) = scan_f(K), scan_f(R)
    same(kd(kc), rc)
    same(ys, want)
    kc, ys = morphax.jit(scan_f)(K)
    same(kd(kc), rc)
    same(ys, want)
    # Keys scanned over (xs) and stacked out (ys).
    ks_out = lax.scan(lambda c, k: (c, random.split(k)[1]), 0, KS)[1]
    rs_out = lax.scan(lambda c, r: (c, random.split(r)[1]), 0, RS)[1]
    same(kd(ks_out), rs_out)

    def cond_f(p, k):
        return lax.cond(p, lambda k: random.split(k), lambda k: random.split(random.fold_in(k, 1)), k)

    for p in (True, False):
        same(kd(cond_f(p, K)), cond_f(p, R))
        same(kd(morphax.jit(cond_f)(p, K)), cond_f(p, R))

    def while_f(k):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, random.split(c[1])[0]), (0, k))

    same(kd(while_f(K)[1]), while_f(R)[1])
    same(kd(morphax.jit(while_f)(K)[1]), while_f(R)[1])


def test_grad_and_jvp_with_keys():
    want = random.normal(R, (3,)).sum()
    same(morphax.grad(lambda x: (x * random.normal(K, (3,))).sum())(1.0), want)
    g = morphax.jit(morphax.grad(lambda x, k: (x * random.normal(k, (3,))).sum()))(1.0, K)
    np.testing.assert_allclose(g, want, rtol=1e-6)
    # A key primal takes a float0 tangent of its shape, as in JAX; key outputs get float0 ones.
    f0 = np.zeros((), morphax.dtypes.float0)
    out, tan = morphax.jvp(lambda k: random.split(k), (K,), (f0,))
    same(kd(out), random.split(R))
    assert tan.dtype == morphax.dtypes.float0 and tan.shape == (2,)
    y, t = morphax.jvp(lambda k, x: random.normal(k) * x, (K, 2.0), (f0, 1.0))
    same(t, random.normal(R))
    with pytest.raises(TypeError, match="float0"):
        morphax.jvp(lambda k: k, (K,), (1.0,))
    out, tan = morphax.jvp(lambda x: (random.split(K), x), (1.0,), (1.0,))
    same(kd(out[0]), random.split(R))
    assert tan[0].dtype == morphax.dtypes.float0 and tan[0].shape == (2,)
    y, t = morphax.jvp(lambda x: x * random.uniform(K), (2.0,), (1.0,))
    same(t, random.uniform(R))


def test_physicalized_jaxpr_is_threefry_on_words():
    closed = morphax.make_jaxpr(lambda k: random.uniform(random.split(k)[1], (3,)))(K)
    phys = physicalize(closed)
    check_jaxpr(phys.jaxpr)
    assert [a.str_short() for a in phys.in_avals] == ["u32[2]"]
    assert "key<fry>" not in str(phys) and "random_" not in str(phys) and "threefry2x32" in str(phys)
    same(eval_jaxpr(phys.jaxpr, phys.consts, R)[0], random.uniform(random.split(R)[1], (3,)))
    # The logical jaxpr evaluates too (eager key operations), given key values.
    same(eval_jaxpr(closed.jaxpr, closed.consts, K._value())[0], random.uniform(random.split(R)[1], (3,)))


def test_numpy_references_agree():
    words = np.asarray(RS)
    same(rk.random_split_p.impl(words, shape=(3,)), morphax.vmap(lambda r: random.split(r, 3))(RS))
    same(
        rk.random_bits_p.impl(words, bit_width=32, shape=(2,)),
        morphax.vmap(lambda r: random.bits(r, (2,)))(RS),
    )
    same(rk.random_fold_in_p.impl(words, np.uint32(9)), morphax.vmap(lambda r: random.fold_in(r, 9))(RS))
    same(
        rk.random_seed_p.impl(np.arange(3, dtype=np.int32), impl="fry"),
        morphax.vmap(random.PRNGKey)(jnp.arange(3)),
    )
    same(rk.random_unwrap_p.impl(words), words)
    same(rk.random_wrap_p.impl(words, impl="fry"), words)
    same(rk.random_clone_p.impl(words), words)


def test_abstract_eval_errors():
    with pytest.raises(TypeError, match="key<fry>"):
        morphax.make_jaxpr(lambda x: rk.random_split(x, (2,)))(jnp.zeros(2, jnp.uint32))
    with pytest.raises(TypeError, match="uint32"):
        morphax.make_jaxpr(lambda x: rk.random_wrap(x))(jnp.zeros(3, jnp.uint32))
    with pytest.raises(TypeError, match="field width"):
        morphax.make_jaxpr(lambda k: rk.random_bits(k._value(), 12, (2,)))(K)


def test_jit_returns_typed_keys_through_every_backend_path():
    out = morphax.jit(lambda k: (k, random.split(k, 3), random.fold_in(k, 1)))(K)
    assert all(isinstance(o, random.KeyArray if hasattr(random, "KeyArray") else object) for o in out)
    assert out[1].shape == (3,) and out[1].dtype == K.dtype
    same(kd(out[0]), R)
    same(kd(out[1]), random.split(R, 3))
    same(kd(out[2]), random.fold_in(R, 1))
