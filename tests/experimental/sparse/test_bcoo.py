"""experimental.sparse.BCOO: every operation against the same computation on the dense array
(values, and gradients with respect to the stored data), eagerly, under jit and under vmap;
batch and dense dimensions; padding and duplicate entries."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax.experimental import sparse

RNG = np.random.default_rng(0)


def _rand(shape, density=0.4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape).astype(np.float32)
    return x * (rng.random(shape) < density)


LAYOUTS = [((4, 5), 0, 0), ((3, 4, 5), 1, 0), ((4, 5, 2), 0, 1), ((2, 3, 4, 2), 1, 1), ((6,), 0, 0)]


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS)
def test_fromdense_todense_roundtrip(shape, n_batch, n_dense):
    M = _rand(shape)
    s = sparse.BCOO.fromdense(M, n_batch=n_batch, n_dense=n_dense)
    assert (s.n_batch, s.n_dense, s.n_sparse) == (n_batch, n_dense, len(shape) - n_batch - n_dense)
    assert s.shape == shape and s.dtype == np.float32
    np.testing.assert_array_equal(s.todense(), M)
    np.testing.assert_array_equal(sparse.todense(s), M)
    # A larger nse pads with out-of-bounds indices and zero data; the dense array is unchanged.
    padded = sparse.bcoo_fromdense(M, nse=s.nse + 3, n_batch=n_batch, n_dense=n_dense)
    np.testing.assert_array_equal(padded.todense(), M)
    np.testing.assert_array_equal(
        morphax.jit(
            lambda m: sparse.bcoo_fromdense(m, nse=s.nse + 3, n_batch=n_batch, n_dense=n_dense).todense()
        )(M),
        M,
    )


def test_nse_and_indices_match_jax():
    # JAX 0.10.2: BCOO.fromdense([[0,1,0],[2,0,3]]) has nse=3, indices [[0,1],[1,0],[1,2]],
    # data [1,2,3]; with nse=5 the padding indices are [2,3] (the shape) and data 0.
    M = np.array([[0, 1, 0], [2, 0, 3]], np.float32)
    s = sparse.BCOO.fromdense(M)
    assert s.nse == 3
    np.testing.assert_array_equal(s.indices, [[0, 1], [1, 0], [1, 2]])
    np.testing.assert_array_equal(s.data, [1, 2, 3])
    p = sparse.bcoo_fromdense(M, nse=5)
    np.testing.assert_array_equal(p.indices[3:], [[2, 3], [2, 3]])
    np.testing.assert_array_equal(p.data[3:], [0, 0])
    assert repr(s) == "BCOO(float32[2, 3], nse=3)"


def test_fromdense_without_nse_under_jit_is_an_error():
    with pytest.raises(Exception, match="nse"):
        morphax.jit(lambda m: sparse.BCOO.fromdense(m).data)(np.eye(3, dtype=np.float32))


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS[:4])
def test_matmul_dense(shape, n_batch, n_dense):
    M = _rand(shape)
    s = sparse.BCOO.fromdense(M, n_batch=n_batch, n_dense=n_dense)
    if n_dense:
        return  # contracting a dense dimension is not supported; covered by the error test
    v = RNG.normal(size=(shape[-1], 3)).astype(np.float32)
    np.testing.assert_allclose(s @ v, M @ v, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(morphax.jit(lambda a, b: a @ b)(s, v), M @ v, rtol=1e-5, atol=1e-5)
    w = RNG.normal(size=(2, shape[-2])).astype(np.float32)
    if len(shape) == 2:
        np.testing.assert_allclose(w @ s, w @ M, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(s @ v[:, 0], M @ v[:, 0], rtol=1e-5, atol=1e-5)


def test_dot_general_batch_and_contracting_batch_dims():
    M = _rand((3, 4, 5))
    s = sparse.BCOO.fromdense(M, n_batch=1)
    R = RNG.normal(size=(3, 5, 2)).astype(np.float32)
    dn = (((2,), (1,)), ((0,), (0,)))
    want = morphax.lax.dot_general(M, R, dn)
    np.testing.assert_allclose(
        sparse.bcoo_dot_general(s, R, dimension_numbers=dn), want, rtol=1e-5, atol=1e-5
    )
    # contracting over the batch dimension and a sparse one
    R2 = RNG.normal(size=(3, 4, 2)).astype(np.float32)
    dn2 = (((0, 1), (0, 1)), ((), ()))
    want2 = morphax.lax.dot_general(M, R2, dn2)
    np.testing.assert_allclose(
        sparse.bcoo_dot_general(s, R2, dimension_numbers=dn2), want2, rtol=1e-5, atol=1e-5
    )


def test_dot_general_dense_contraction_is_a_clear_error():
    s = sparse.BCOO.fromdense(_rand((4, 5)), n_dense=1)
    with pytest.raises(NotImplementedError, match="dense dimensions"):
        s @ np.ones((5, 2), np.float32)


def test_sparse_sparse_matmul():
    A, B = _rand((4, 5), seed=1), _rand((5, 3), seed=2)
    out = sparse.BCOO.fromdense(A) @ sparse.BCOO.fromdense(B)
    assert isinstance(out, sparse.BCOO)
    np.testing.assert_allclose(out.todense(), A @ B, rtol=1e-5, atol=1e-6)


def test_grad_of_matmul_wrt_data_and_dense():
    M = _rand((4, 5))
    s = sparse.BCOO.fromdense(M)
    v = RNG.normal(size=(5, 3)).astype(np.float32)

    def f(data, x):
        return jnp.sum(jnp.sin(sparse.BCOO((data, s.indices), shape=s.shape) @ x))

    def f_dense(m, x):
        return jnp.sum(jnp.sin(m @ x))

    gd, gx = morphax.grad(f, argnums=(0, 1))(s.data, v)
    Gm, Gx = morphax.grad(f_dense, argnums=(0, 1))(M, v)
    rows, cols = np.asarray(s.indices).T
    np.testing.assert_allclose(gd, np.asarray(Gm)[rows, cols], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx, Gx, rtol=1e-5, atol=1e-5)
    gd_jit = morphax.jit(morphax.grad(f))(s.data, v)
    np.testing.assert_allclose(gd_jit, gd, rtol=1e-5, atol=1e-6)
    # forward mode agrees with reverse mode
    t = RNG.normal(size=s.data.shape).astype(np.float32)
    _, jv = morphax.jvp(lambda d: f(d, v), (s.data,), (t,))
    np.testing.assert_allclose(jv, np.dot(gd, t), rtol=1e-4, atol=1e-5)


def test_grad_of_todense_and_extract():
    M = _rand((3, 4, 2))
    s = sparse.BCOO.fromdense(M, n_dense=1)
    W = RNG.normal(size=M.shape).astype(np.float32)
    g = morphax.grad(lambda d: jnp.sum(sparse.BCOO((d, s.indices), shape=s.shape).todense() * W))(s.data)
    rows, cols = np.asarray(s.indices).T
    np.testing.assert_allclose(g, W[rows, cols])
    g2 = morphax.grad(lambda m: jnp.sum(sparse.bcoo_extract(s, m).data ** 2))(W)
    want = np.zeros_like(W)
    want[rows, cols] = 2 * W[rows, cols]
    np.testing.assert_allclose(g2, want, rtol=1e-6)
    # fromdense: the data's derivative is the dense derivative at the stored positions
    g3 = morphax.grad(lambda m: jnp.sum(sparse.bcoo_fromdense(m, nse=s.nse, n_dense=1).data ** 2))(M)
    np.testing.assert_allclose(g3, 2 * M, rtol=1e-6)


def test_vmap_over_sparse_operations():
    Ms = np.stack([_rand((4, 5), seed=k) for k in range(3)])
    v = RNG.normal(size=(5,)).astype(np.float32)
    out = morphax.vmap(lambda m: sparse.bcoo_fromdense(m, nse=12) @ v)(Ms)
    np.testing.assert_allclose(out, Ms @ v, rtol=1e-5, atol=1e-5)
    s = sparse.BCOO.fromdense(Ms[0])
    datas = np.stack([s.data, 2 * s.data, -s.data])
    out2 = morphax.vmap(lambda d: sparse.BCOO((d, s.indices), shape=s.shape).todense())(datas)
    np.testing.assert_allclose(out2, [Ms[0], 2 * Ms[0], -Ms[0]])
    vs = RNG.normal(size=(3, 5)).astype(np.float32)
    out3 = morphax.vmap(lambda x: s @ x)(vs)
    np.testing.assert_allclose(out3, vs @ Ms[0].T, rtol=1e-5, atol=1e-5)
    out4 = morphax.vmap(lambda m: sparse.bcoo_extract(s, m).data)(Ms)
    rows, cols = np.asarray(s.indices).T
    np.testing.assert_allclose(out4, Ms[:, rows, cols])


def test_batched_bcoo_from_vmap_matches_n_batch():
    Ms = np.stack([_rand((4, 5), seed=k) for k in range(3)])
    sb = sparse.BCOO.fromdense(Ms, n_batch=1)
    np.testing.assert_array_equal(sb.todense(), Ms)
    np.testing.assert_allclose(sb @ np.ones((5, 2), np.float32), Ms @ np.ones((5, 2)), rtol=1e-5, atol=1e-5)


def test_sum_duplicates_and_sort_indices():
    data = np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    indices = np.array([[1, 2], [0, 0], [1, 2], [3, 3], [0, 0]], np.int32)  # [3,3] is out of bounds
    s = sparse.BCOO((data, indices), shape=(2, 3))
    want = np.zeros((2, 3), np.float32)
    want[1, 2], want[0, 0] = 4, 7
    np.testing.assert_array_equal(s.todense(), want)
    d = s.sum_duplicates()
    # JAX 0.10.2: nse=2, indices [[0,0],[1,2]], data [7,4]
    assert d.nse == 2 and d.unique_indices and d.indices_sorted
    np.testing.assert_array_equal(d.indices, [[0, 0], [1, 2]])
    np.testing.assert_array_equal(d.data, [7, 4])
    j = morphax.jit(lambda x: x.sum_duplicates(nse=4))(s)
    np.testing.assert_array_equal(j.todense(), want)
    np.testing.assert_array_equal(j.indices[2:], [[2, 3], [2, 3]])
    srt = s.sort_indices()
    np.testing.assert_array_equal(srt.todense(), want)
    np.testing.assert_array_equal(srt.indices[:4], [[0, 0], [0, 0], [1, 2], [1, 2]])
    g = morphax.grad(
        lambda x: jnp.sum(sparse.BCOO((x, indices), shape=(2, 3)).sum_duplicates(nse=3).data ** 2)
    )(data)
    np.testing.assert_allclose(g, [8, 14, 8, 0, 14])


@pytest.mark.parametrize(
    "shape,n_batch,n_dense,perm",
    [((4, 5), 0, 0, (1, 0)), ((2, 3, 4, 5), 1, 1, (0, 2, 1, 3)), ((3, 4, 5), 0, 0, (2, 0, 1))],
)
def test_transpose(shape, n_batch, n_dense, perm):
    M = _rand(shape)
    s = sparse.BCOO.fromdense(M, n_batch=n_batch, n_dense=n_dense)
    np.testing.assert_array_equal(s.transpose(perm).todense(), M.transpose(perm))
    np.testing.assert_array_equal(morphax.jit(lambda x: x.transpose(perm).todense())(s), M.transpose(perm))
    g = morphax.grad(
        lambda d: jnp.sum(
            sparse.BCOO((d, s.indices), shape=shape).transpose(perm).todense()
            * np.arange(M.size).reshape(M.transpose(perm).shape)
        )
    )(s.data)
    assert g.shape == s.data.shape


def test_transpose_across_groups_is_an_error():
    s = sparse.BCOO.fromdense(_rand((3, 4, 5)), n_batch=1)
    with pytest.raises(NotImplementedError, match="groups"):
        s.transpose((1, 0, 2))
    np.testing.assert_array_equal(s.update_layout(n_batch=0).T.todense(), np.asarray(s.todense()).T)


@pytest.mark.parametrize(
    "idx",
    [
        (1,),
        (slice(1, 3),),
        (slice(None), slice(None, None, 2)),
        (slice(None, None, -1),),
        (2, slice(1, 4)),
        (Ellipsis, 1),
        (None, 1),
    ],
)
def test_indexing(idx):
    M = _rand((4, 5))
    s = sparse.BCOO.fromdense(M)
    np.testing.assert_array_equal(s[idx].todense(), M[idx])


def test_slicing_batch_and_dense():
    M = _rand((3, 4, 5, 2))
    s = sparse.BCOO.fromdense(M, n_batch=1, n_dense=1)
    np.testing.assert_array_equal(s[1:, 1:3, ::2, 1].todense(), M[1:, 1:3, ::2, 1])
    out = sparse.bcoo_dynamic_slice(s, (1, 1, 2, 0), (2, 2, 3, 2))
    np.testing.assert_array_equal(out.todense(), M[1:3, 1:3, 2:5, 0:2])
    out2 = morphax.jit(lambda x, i: sparse.bcoo_dynamic_slice(x, (0, i, 0, 0), (3, 2, 5, 2)).todense())(s, 3)
    np.testing.assert_array_equal(out2, M[:, 2:4])  # start clamped as lax.dynamic_slice clamps


@pytest.mark.parametrize(
    "shape,n_batch,n_dense,new",
    [
        ((4, 6), 0, 0, (3, 8)),
        ((4, 6), 0, 0, (24,)),
        ((2, 4, 6), 1, 0, (2, 24)),
        ((4, 6, 2), 0, 1, (2, 12, 2)),
    ],
)
def test_reshape(shape, n_batch, n_dense, new):
    M = _rand(shape)
    s = sparse.BCOO.fromdense(M, n_batch=n_batch, n_dense=n_dense)
    np.testing.assert_array_equal(s.reshape(new).todense(), M.reshape(new))


@pytest.mark.parametrize("dim", [0, 1])
def test_concatenate(dim):
    A, B = _rand((3, 4), seed=1), _rand((3, 4), seed=2)
    out = sparse.bcoo_concatenate([sparse.BCOO.fromdense(A), sparse.BCOO.fromdense(B)], dimension=dim)
    np.testing.assert_array_equal(out.todense(), np.concatenate([A, B], dim))
    Ab = sparse.BCOO.fromdense(np.stack([A, B]), n_batch=1)
    out2 = sparse.bcoo_concatenate([Ab, Ab], dimension=0)
    np.testing.assert_array_equal(out2.todense(), np.concatenate([np.stack([A, B])] * 2))


def test_elementwise_ops():
    A, B = _rand((4, 5), seed=1), _rand((4, 5), seed=2)
    a, b = sparse.BCOO.fromdense(A), sparse.BCOO.fromdense(B)
    v = RNG.normal(size=(5,)).astype(np.float32)
    np.testing.assert_allclose((a * b).todense(), A * B)
    np.testing.assert_allclose((a * v).todense(), A * v)
    np.testing.assert_allclose((a * v[None]).todense(), A * v)
    np.testing.assert_allclose((a * 3).todense(), A * 3)
    np.testing.assert_allclose((2 * a).todense(), A * 2)
    np.testing.assert_allclose((a / 2).todense(), A / 2)
    np.testing.assert_allclose((-a).todense(), -A)
    np.testing.assert_allclose((a + b).todense(), A + B)
    np.testing.assert_allclose((a - b).todense(), A - B, atol=1e-7)
    np.testing.assert_allclose(a + B, A + B)
    out = morphax.jit(lambda x, y: (x * y).todense())(a, b)
    np.testing.assert_allclose(out, A * B)
    # product with duplicates on either side: the sum at an index multiplies
    dup = sparse.BCOO(
        (np.concatenate([a.data, a.data]), np.concatenate([a.indices, a.indices])), shape=a.shape
    )
    np.testing.assert_allclose((dup * dup).todense(), (2 * A) * (2 * A), rtol=1e-6)


def test_reductions_and_layout():
    M = _rand((3, 4, 5, 2))
    s = sparse.BCOO.fromdense(M, n_batch=1, n_dense=1)
    for axes in [(0,), (1,), (3,), (1, 2), (0, 2, 3)]:
        np.testing.assert_allclose(
            sparse.bcoo_reduce_sum(s, axes=axes).todense(), M.sum(axes), rtol=1e-5, atol=1e-6
        )
    np.testing.assert_allclose(s.sum(), M.sum(), rtol=1e-5)
    for nb, nd in [(0, 0), (2, 0), (0, 2), (1, 0), (3, 1)]:
        u = s.update_layout(n_batch=nb, n_dense=nd, on_inefficient=None)
        assert (u.n_batch, u.n_dense) == (nb, nd)
        np.testing.assert_array_equal(u.todense(), M)


def test_squeeze_rev_broadcast():
    M = _rand((1, 4, 1, 5))
    s = sparse.BCOO.fromdense(M, n_batch=1)
    np.testing.assert_array_equal(sparse.bcoo_squeeze(s, dimensions=(0, 2)).todense(), M.squeeze((0, 2)))
    N = _rand((4, 5))
    n = sparse.BCOO.fromdense(N)
    np.testing.assert_array_equal(sparse.bcoo_rev(n, (0, 1)).todense(), N[::-1, ::-1])
    b = sparse.bcoo_broadcast_in_dim(n, shape=(3, 4, 5), broadcast_dimensions=(1, 2))
    assert b.n_batch == 1
    np.testing.assert_array_equal(b.todense(), np.broadcast_to(N, (3, 4, 5)))


def test_empty_eye_random():
    e = sparse.empty((3, 4))
    assert e.nse == 0
    np.testing.assert_array_equal(e.todense(), np.zeros((3, 4)))
    for k in (-1, 0, 2):
        np.testing.assert_array_equal(sparse.eye(4, 5, k).todense(), np.eye(4, 5, k))
    np.testing.assert_array_equal(sparse.eye(3, sparse_format="bcsr").todense(), np.eye(3))
    r = sparse.random_bcoo(morphax.random.key(0), (10, 8), nse=0.25, dtype=np.float32)
    assert r.nse == 20
    d = np.asarray(r.todense())
    assert (d != 0).sum() == 20  # unique indices: every stored element lands on its own position
    rb = sparse.random_bcoo(morphax.random.key(1), (2, 6, 5), nse=7, n_batch=1, dtype=np.float32)
    assert rb.n_batch == 1 and rb.data.shape == (2, 7)


def test_under_jit_one_program_reads_buffers():
    M = _rand((5, 6))
    s = sparse.BCOO.fromdense(M)
    f = morphax.jit(lambda x, v: (x.T @ v, (x * 2).todense()))
    a, b = f(s, np.ones(5, np.float32))
    np.testing.assert_allclose(a, M.T @ np.ones(5), rtol=1e-5)
    np.testing.assert_allclose(b, 2 * M)


def test_dot_general_sampled_and_its_gradients():
    A = RNG.normal(size=(4, 3)).astype(np.float32)
    B = RNG.normal(size=(3, 5)).astype(np.float32)
    s = sparse.BCOO.fromdense(_rand((4, 5)))
    dn = (((1,), (0,)), ((), ()))
    out = sparse.bcoo_dot_general_sampled(A, B, s.indices, dimension_numbers=dn)
    rows, cols = np.asarray(s.indices).T
    np.testing.assert_allclose(out, (A @ B)[rows, cols], rtol=1e-5, atol=1e-6)
    gA = morphax.grad(
        lambda a: jnp.sum(sparse.bcoo_dot_general_sampled(a, B, s.indices, dimension_numbers=dn))
    )(A)
    mask = np.zeros((4, 5), np.float32)
    np.add.at(mask, (rows, cols), 1)
    np.testing.assert_allclose(gA, mask @ B.T, rtol=1e-5, atol=1e-6)


def test_gather_and_conv():
    M = _rand((4, 5))
    s = sparse.BCOO.fromdense(M)
    idx = np.array([[0], [2]], np.int32)
    dnums = morphax.lax.GatherDimensionNumbers(
        offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)
    )
    out = sparse.bcoo_gather(s, idx, dnums, (1, 5))
    np.testing.assert_array_equal(out.todense(), M[[0, 2]])
    img = _rand((1, 1, 6, 6))
    ker = RNG.normal(size=(1, 1, 3, 3)).astype(np.float32)
    got = sparse.bcoo_conv_general_dilated(
        sparse.BCOO.fromdense(img), ker, window_strides=(1, 1), padding="SAME"
    )
    want = morphax.lax.conv_general_dilated(img, ker, window_strides=(1, 1), padding="SAME")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_indices_with_size_one_batch_dimension_broadcast():
    # JAX allows indices of batch size 1 shared by every batch element of the data.
    M = _rand((4, 5))
    s = sparse.BCOO.fromdense(M)
    data = np.stack([s.data, 3 * s.data])
    b = sparse.BCOO((data, s.indices[None]), shape=(2, 4, 5))
    np.testing.assert_allclose(b.todense(), [M, 3 * M])
    np.testing.assert_allclose(b @ np.ones(5, np.float32), [M.sum(1), 3 * M.sum(1)], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.complex64, np.float16])
def test_other_dtypes(dtype):
    M = (np.arange(20).reshape(4, 5) % 3).astype(dtype)
    if dtype == np.complex64:
        M = M * (1 + 2j)
    s = sparse.BCOO.fromdense(M)
    assert s.dtype == dtype
    np.testing.assert_array_equal(s.todense(), M)
    v = np.ones(5, dtype)
    np.testing.assert_allclose(np.asarray(s @ v), M @ v, rtol=1e-2)
    np.testing.assert_array_equal((s * 2).todense(), M * 2)


def test_result_nse_matches_jax():
    # nse of each result for these operands, as JAX 0.10.2 computes them (operands: two 4x6
    # matrices with 9 and 2 nonzeros, and their stack with n_batch=1). Slicing to fewer
    # positions than stored elements merges them (int_index: 6), sparse @ sparse keeps at most
    # one entry per output position (16 = 4 x 4).
    rng = np.random.default_rng(0)
    M = (rng.normal(size=(4, 6)) * (rng.random((4, 6)) < 0.4)).astype(np.float32)
    N = (rng.normal(size=(4, 6)) * (rng.random((4, 6)) < 0.4)).astype(np.float32)
    s, t = sparse.BCOO.fromdense(M), sparse.BCOO.fromdense(N)
    B = sparse.BCOO.fromdense(np.stack([M, N]), n_batch=1)
    got = {
        "nse": s.nse,
        "slice": s[1:3].nse,
        "slice_step": s[:, ::2].nse,
        "int_index": s[2].nse,
        "reshape": s.reshape(6, 4).nse,
        "T": s.T.nse,
        "concat0": sparse.bcoo_concatenate([s, t], dimension=0).nse,
        "concat_batch": sparse.bcoo_concatenate([B, B], dimension=0).nse,
        "sum0": sparse.bcoo_reduce_sum(s, axes=(0,)).nse,
        "sum_batch": sparse.bcoo_reduce_sum(B, axes=(0,)).nse,
        "mul_dense": (s * N).nse,
        "add": sparse.sparsify(lambda a, b: a + b)(s, t).nse,
        "update_layout_b1": s.update_layout(n_batch=1, on_inefficient=None).nse,
        "update_layout_d1": s.update_layout(n_dense=1, on_inefficient=None).nse,
        "B_update_b0": B.update_layout(n_batch=0).nse,
        "spmm": (s @ t.T).nse,
        "rev": sparse.bcoo_rev(s, (0,)).nse,
    }
    jax = {"nse": 9, "slice": 9, "slice_step": 9, "int_index": 6, "reshape": 9, "T": 9, "concat0": 11,
           "concat_batch": 9, "sum0": 9, "sum_batch": 18, "mul_dense": 9, "add": 11, "update_layout_b1": 9,
           "update_layout_d1": 9, "B_update_b0": 18, "spmm": 16, "rev": 9}  # fmt: skip
    assert got == jax
    np.testing.assert_array_equal(s[2].todense(), M[2])
    np.testing.assert_allclose((s @ t.T).todense(), M @ N.T, rtol=1e-5, atol=1e-6)


def test_update_layout_inefficiency():
    s = sparse.BCOO.fromdense(_rand((4, 6)))
    with pytest.raises(sparse.SparseEfficiencyError, match="increasing n_batch from 0 to 1"):
        s.update_layout(n_batch=1)
    with pytest.warns(sparse.SparseEfficiencyWarning, match="increasing n_dense from 0 to 1"):
        s.update_layout(n_dense=1, on_inefficient="warn")


def test_python_operators_as_jax():
    # JAX 0.10.2: abs and ** keep the pattern; s.sum() is a dense scalar (6.0); iterating gives
    # the rows as BCOOs; dividing by a sparse array raises NotImplementedError.
    M = np.array([[0, 1, 0], [-2, 0, 3]], np.float32)
    s = sparse.BCOO.fromdense(M)
    np.testing.assert_array_equal(abs(s).todense(), abs(M))
    np.testing.assert_array_equal((s**2).todense(), M**2)
    total = s.sum()
    assert not isinstance(total, sparse.JAXSparse) and float(total) == 2.0
    rows = list(s)
    assert len(rows) == 2 and all(isinstance(r, sparse.BCOO) for r in rows)
    np.testing.assert_array_equal(rows[1].todense(), M[1])
    with pytest.raises(NotImplementedError, match="Division by a sparse array"):
        s / s
    with pytest.raises(NotImplementedError, match="Division by a sparse array"):
        1 / s
    with pytest.raises(NotImplementedError, match="non-positive exponent"):
        s**0
    # duplicates are merged before a nonlinear elementwise function
    dup = sparse.BCOO((np.array([1.0, -3.0], np.float32), np.array([[0, 0], [0, 0]], np.int32)), shape=(2, 2))
    np.testing.assert_array_equal(abs(dup).todense(), [[2, 0], [0, 0]])
    np.testing.assert_array_equal((dup**2).todense(), [[4, 0], [0, 0]])


def test_vmap_maps_batch_dimensions_of_sparse_arguments_and_results():
    # JAX 0.10.2 (batching.register_vmappable): vmap over a BCOO maps one of its batch
    # dimensions; a BCOO result gains the mapped axis as a batch dimension.
    Ms = np.array([[[0, 1, 0], [2, 0, 3]], [[1, 0, 0], [0, 0, 4]]], np.float32)
    sb = sparse.BCOO.fromdense(Ms, n_batch=1)
    np.testing.assert_allclose(morphax.vmap(lambda x: x @ jnp.ones(3))(sb), [[1, 5], [1, 4]])
    np.testing.assert_array_equal(morphax.vmap(lambda x: x.todense())(sb), Ms)
    out = morphax.vmap(lambda x: x * 2.0)(sb)
    assert isinstance(out, sparse.BCOO) and out.shape == (2, 2, 3) and out.n_batch == 1
    np.testing.assert_array_equal(out.todense(), 2 * Ms)
    made = morphax.vmap(lambda m: sparse.bcoo_fromdense(m, nse=3))(Ms)
    assert made.shape == (2, 2, 3) and made.n_batch == 1
    np.testing.assert_array_equal(made.todense(), Ms)
    g = morphax.vmap(sparse.grad(lambda X, y: (X @ y).sum()), in_axes=(None, 0))(
        sparse.BCOO.fromdense(Ms[0]), jnp.ones((2, 3))
    )
    assert g.shape == (2, 2, 3) and g.n_batch == 1 and g.data.shape == (2, 3)
    bc = sparse.BCSR.fromdense(Ms, n_batch=1)
    np.testing.assert_allclose(morphax.vmap(lambda x: x @ jnp.ones(3))(bc), [[1, 5], [1, 4]])
    with pytest.raises(ValueError, match="must correspond to a batch dimension"):
        morphax.vmap(lambda x: x.todense())(sparse.BCOO.fromdense(Ms[0]))


def test_multiply_dense_and_extract_as_jax():
    # JAX 0.10.2: bcoo_multiply_dense returns the product's data (shape (nse,)); broadcasting
    # beyond the sparse shape raises NotImplementedError; bcoo_extract needs a BCOO; with
    # assume_unique=False a repeated index reads its value once (JAX has no transpose for that
    # case; the gradient here is the derivative of the values read).
    M = np.array([[0, 1, 0], [2, 0, 3]], np.float32)
    s = sparse.BCOO.fromdense(M)
    d = sparse.bcoo_multiply_dense(s, np.arange(3, dtype=np.float32))
    assert not isinstance(d, sparse.JAXSparse)
    np.testing.assert_array_equal(d, [1, 0, 6])
    with pytest.raises(NotImplementedError, match="output shape matches the sparse matrix shape"):
        s * np.ones((4, 2, 3), np.float32)
    with pytest.raises(TypeError, match="should be a BCOO"):
        sparse.bcoo_extract(s.indices, M)
    dup = sparse.BCOO((np.ones(3, np.float32), np.array([[0, 1], [0, 1], [1, 2]], np.int32)), shape=(2, 3))
    W = np.arange(6, dtype=np.float32).reshape(2, 3)
    e = sparse.bcoo_extract(dup, W, assume_unique=False)
    np.testing.assert_array_equal(e.data, [1, 0, 5])
    np.testing.assert_array_equal(e.todense(), W * (np.asarray(dup.todense()) != 0))
    g = morphax.grad(lambda w: jnp.sum(sparse.bcoo_extract(dup, w, assume_unique=False).data))(W)
    np.testing.assert_array_equal(g, [[0, 1, 0], [0, 0, 1]])


def test_higher_order_and_composed_transformations():
    M = _rand((4, 5), density=0.5)
    s = sparse.BCOO.fromdense(M)
    x = RNG.normal(size=(5,)).astype(np.float32)
    rows, cols = np.asarray(s.indices).T

    def f(d, x):
        return jnp.sum(jnp.tanh(sparse.BCOO((d, s.indices), shape=s.shape) @ x) ** 2)

    def fd(m, x):
        return jnp.sum(jnp.tanh(m @ x) ** 2)

    H = morphax.hessian(f)(s.data, x)
    Hd = np.asarray(morphax.hessian(fd)(M, x))
    np.testing.assert_allclose(H, Hd[rows, cols][:, rows, cols], atol=1e-5)
    np.testing.assert_allclose(
        morphax.hessian(f, argnums=1)(s.data, x), morphax.hessian(fd, argnums=1)(M, x), atol=1e-5
    )
    xs = RNG.normal(size=(3, 5)).astype(np.float32)
    g = morphax.jit(morphax.vmap(morphax.grad(f), in_axes=(None, 0)))(s.data, xs)
    gd = np.asarray(morphax.vmap(morphax.grad(fd), in_axes=(None, 0))(M, xs))
    np.testing.assert_allclose(g, gd[:, rows, cols], atol=1e-5)
    J = morphax.jacfwd(lambda d: sparse.BCOO((d, s.indices), shape=s.shape) @ x)(s.data)
    np.testing.assert_allclose(J, np.asarray(morphax.jacfwd(lambda m: m @ x)(M))[:, rows, cols], atol=1e-6)


@pytest.mark.parametrize("n_batch", [0, 1])
@pytest.mark.parametrize("rhs_shape", [(5,), (5, 3), (2, 5, 3), (1, 5, 3)])
def test_matmul_broadcasting_as_jax(n_batch, rhs_shape):
    # JAX 0.10.2: every case gives M @ rhs except a (2, 5, 3) rhs with n_batch=0 (the product's
    # batch dimension must be a batch dimension of the sparse operand: NotImplementedError).
    M = _rand((2, 4, 5), density=0.5)
    s = sparse.BCOO.fromdense(M, n_batch=n_batch)
    rhs = RNG.normal(size=rhs_shape).astype(np.float32)
    if n_batch == 0 and rhs_shape == (2, 5, 3):
        with pytest.raises(NotImplementedError, match="batch dimensions"):
            s @ rhs
        return
    np.testing.assert_allclose(s @ rhs, M @ rhs, rtol=1e-5, atol=1e-5)


def test_batched_sparse_sparse_matmul():
    # JAX 0.10.2: (2, 4, 5) @ (2, 5, 3) BCOOs with n_batch=1 give BCOO(float32[2, 4, 3], nse=12,
    # n_batch=1) for these operands.
    rng = np.random.default_rng(0)
    A = (rng.normal(size=(2, 4, 5)) * (rng.random((2, 4, 5)) < 0.5)).astype(np.float32)
    B = (rng.normal(size=(2, 5, 3)) * (rng.random((2, 5, 3)) < 0.5)).astype(np.float32)
    a, b = sparse.BCOO.fromdense(A, n_batch=1), sparse.BCOO.fromdense(B, n_batch=1)
    out = a @ b
    assert isinstance(out, sparse.BCOO) and out.n_batch == 1 and out.nse == 12
    np.testing.assert_allclose(out.todense(), A @ B, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(morphax.jit(lambda x, y: (x @ y).todense())(a, b), A @ B, rtol=1e-5, atol=1e-5)
    g = morphax.grad(lambda d: jnp.sum((sparse.BCOO((d, a.indices), shape=a.shape) @ b).todense()))(a.data)
    want = morphax.grad(lambda m: jnp.sum(m @ B))(A)
    np.testing.assert_allclose(
        sparse.BCOO((g, a.indices), shape=a.shape).todense(),
        np.asarray(want) * (A != 0),
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize(
    "case,jax_layout",
    [
        # (result shape, nse, n_batch) of JAX 0.10.2 for each index of this 5 x 6 operand
        ("rows", ((3, 6), 6, 1)),
        ("rows_slice", ((2, 6), 6, 1)),
        ("cols", ((5, 3), 15, 0)),
        ("points", ((2,), 1, 1)),
        ("mask", ((3, 6), 6, 1)),
    ],
)
def test_array_indexing_as_jax(case, jax_layout):
    rng = np.random.default_rng(0)
    M = (rng.normal(size=(5, 6)) * (rng.random((5, 6)) < 0.5)).astype(np.float32)
    idx = {
        "rows": np.array([0, 2, 4]),
        "rows_slice": (np.array([1, 3]), slice(None)),
        "cols": (slice(None), np.array([0, 5, 5])),
        "points": (np.array([1, 2]), np.array([3, 4])),
        "mask": M[:, 0] > 0,
    }[case]
    s = sparse.BCOO.fromdense(M)
    out = s[idx]
    assert (out.shape, out.nse, out.n_batch) == jax_layout
    np.testing.assert_array_equal(out.todense(), M[idx])
    if case != "mask":  # a boolean mask needs a concrete value
        np.testing.assert_array_equal(morphax.jit(lambda x: x[idx].todense())(s), M[idx])


def test_update_layout_every_transition():
    # Every (n_batch, n_dense) -> (n_batch', n_dense') of a rank-3 array, with padding entries,
    # keeps the dense array; nse as JAX 0.10.2 gives it (checked for all 225 transitions of a
    # rank-4 array while developing; a few are stated here).
    import itertools

    M = _rand((3, 4, 2), density=0.4, seed=5)
    for nb0, nd0 in itertools.product(range(4), range(4)):
        if nb0 + nd0 > 3:
            continue
        base = sparse.BCOO.fromdense(M, n_batch=nb0, n_dense=nd0)
        s = sparse.bcoo_fromdense(M, n_batch=nb0, n_dense=nd0, nse=base.nse + 1)
        for nb, nd in itertools.product(range(4), range(4)):
            if nb + nd > 3:
                continue
            u = s.update_layout(n_batch=nb, n_dense=nd, on_inefficient=None)
            assert (u.n_batch, u.n_dense) == (nb, nd)
            np.testing.assert_array_equal(u.todense(), M)
    N = _rand((3, 4, 5, 2), density=0.4)
    s = sparse.BCOO.fromdense(N)
    for nb, nd in [(1, 0), (0, 1), (2, 1), (3, 1)]:  # moving dimensions out of the sparse group keeps nse
        assert s.update_layout(n_batch=nb, n_dense=nd, on_inefficient=None).nse == s.nse
    b = sparse.BCOO.fromdense(N, n_batch=2, n_dense=1)
    # into the sparse group: times the batch size (3 * 4) and the dense size (2)
    assert b.update_layout(n_batch=0, n_dense=0).nse == b.nse * 12 * 2
