"""Products: `dot`, `matmul`, `matvec`, `vecmat`, `vdot`, `inner`, `outer`, `tensordot`, `kron` and
`einsum`.

Every contraction is one `dot_general`, found by labelling operand axes: labels shared by both
operands and kept in the output are batch dimensions, shared ones not kept are contracted.
`einsum` takes its pairwise contraction order from `opt_einsum.contract_path`.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.numpy import (
    products,
    ufuncs,
    util,
)
from morphax._src.numpy.manipulation import ravel, reshape
from morphax._src.prims import lax_api as L

__all__ = [
    "dot",
    "matmul",
    "vdot",
    "vecdot",
    "inner",
    "outer",
    "tensordot",
    "kron",
    "einsum",
    "einsum_path",
    "matvec",
    "vecmat",
]


def _shape(x):
    return get_aval(x).shape


def _promote(name, args, preferred_element_type):
    """Common dtype of the operands, the dtype and weakness of the result, and the dot_general
    `preferred_element_type` to pass."""
    util.check_arraylike(name, *args)
    args = util.promote_dtypes(*args)
    aval = get_aval(args[0])
    if preferred_element_type is None:
        weak = all(get_aval(a).weak_type for a in args)
        return args, aval.dtype, weak, None
    pref = _dtypes.canonicalize_dtype(_dtypes.dtype(preferred_element_type))
    return args, pref, False, pref


def _finish(x, dtype, weak):
    return util.convert_element_type(x, dtype, weak)


def _sum_axes(x, axes):
    """Sum over `axes` (logical or for bools: a bool einsum is an or of ands, as in NumPy)."""
    if not axes:
        return x
    if _dtypes.is_bool(get_aval(x).dtype):
        return L.reduce_or(x, tuple(axes))
    return L.reduce_sum(x, tuple(axes))


def _dot_general(lhs, rhs, dims, precision, pref):
    return L.dot_general(lhs, rhs, dims, precision=precision, preferred_element_type=pref)


# ---------------------------------------------------------------------- labelled contraction


def _take_diagonals(x, labels):
    """Resolve repeated labels within one operand ('ii' -> 'i') by masking off-diagonal entries
    and summing out all but one of the repeated axes."""
    labels = list(labels)
    while True:
        repeated = next((lab for lab in labels if labels.count(lab) > 1), None)
        if repeated is None:
            return x, labels
        pos = [i for i, lab in enumerate(labels) if lab == repeated]
        shape = _shape(x)
        first = L.broadcasted_iota(_dtypes.int32, shape, pos[0])
        mask = None
        for p in pos[1:]:
            eq = ufuncs.equal(first, L.broadcasted_iota(_dtypes.int32, shape, p))
            mask = eq if mask is None else ufuncs.logical_and(mask, eq)
        zero = util.convert_element_type(0, get_aval(x).dtype)
        x = _sum_axes(ufuncs.where(mask, x, zero), pos[1:])
        labels = [lab for i, lab in enumerate(labels) if i not in pos[1:]]


def _transpose_to(x, labels, out_labels):
    perm = tuple(labels.index(lab) for lab in out_labels)
    return x if perm == tuple(range(len(perm))) else L.transpose(x, perm)


def _contract_one(x, labels, out_labels):
    x, labels = _take_diagonals(x, labels)
    drop = [i for i, lab in enumerate(labels) if lab not in out_labels]
    x = _sum_axes(x, drop)
    labels = [lab for lab in labels if lab in out_labels]
    return _transpose_to(x, labels, list(out_labels))


def _squeeze_labels(x, labels, drop):
    if not drop:
        return x, labels
    return L.squeeze(x, tuple(drop)), [lab for i, lab in enumerate(labels) if i not in drop]


def _contract_two(lhs, lhs_labels, rhs, rhs_labels, out_labels, precision, pref, dot_general=None):
    """einsum of two operands into `out_labels` with one dot_general."""
    out_labels = list(out_labels)
    lhs, lhs_labels = _take_diagonals(lhs, lhs_labels)
    rhs, rhs_labels = _take_diagonals(rhs, rhs_labels)
    # A size-1 axis facing a larger one broadcasts: drop it, the label then lives on one side only.
    ls, rs = _shape(lhs), _shape(rhs)
    lsq = [
        i
        for i, lab in enumerate(lhs_labels)
        if lab in rhs_labels and ls[i] == 1 and rs[rhs_labels.index(lab)] != 1
    ]
    rsq = [
        i
        for i, lab in enumerate(rhs_labels)
        if lab in lhs_labels and rs[i] == 1 and ls[lhs_labels.index(lab)] != 1
    ]
    lhs, lhs_labels = _squeeze_labels(lhs, lhs_labels, lsq)
    rhs, rhs_labels = _squeeze_labels(rhs, rhs_labels, rsq)
    # Labels on one side only that the output does not keep are summed before the product.
    for side in (0, 1):
        x, labels, other = (lhs, lhs_labels, rhs_labels) if side == 0 else (rhs, rhs_labels, lhs_labels)
        drop = [i for i, lab in enumerate(labels) if lab not in other and lab not in out_labels]
        x = _sum_axes(x, drop)
        labels = [lab for i, lab in enumerate(labels) if i not in drop]
        if side == 0:
            lhs, lhs_labels = x, labels
        else:
            rhs, rhs_labels = x, labels
    common = [lab for lab in lhs_labels if lab in rhs_labels]
    batch = [lab for lab in common if lab in out_labels]
    contract = [lab for lab in common if lab not in out_labels]
    dims = (
        (tuple(lhs_labels.index(c) for c in contract), tuple(rhs_labels.index(c) for c in contract)),
        (tuple(lhs_labels.index(b) for b in batch), tuple(rhs_labels.index(b) for b in batch)),
    )
    if dot_general is None:
        out = _dot_general(lhs, rhs, dims, precision, pref)
    else:  # einsum's `_dot_general` (flax passes its own, e.g. for quantized matmuls)
        out = dot_general(lhs, rhs, dims, precision=precision, preferred_element_type=pref)
    got = (
        batch
        + [lab for lab in lhs_labels if lab not in common]
        + [lab for lab in rhs_labels if lab not in common]
    )
    return _transpose_to(out, got, out_labels)


# --------------------------------------------------------------------------------- products


def dot(a, b, *, precision=None, preferred_element_type=None):
    """NumPy's dot: scalars multiply, 1-D·1-D is an inner product, otherwise the last axis of `a`
    contracts with the second-to-last of `b` (the only one when `b` is 1-D)."""
    (a, b), dtype, weak, pref = _promote("dot", (a, b), preferred_element_type)
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        contract = ((), ())
    else:
        ib = 0 if len(sb) == 1 else len(sb) - 2
        if sa[-1] != sb[ib]:
            raise TypeError(
                f"dot: shapes {sa} and {sb} are not aligned: size {sa[-1]} of axis {len(sa) - 1} of the first "
                f"operand differs from size {sb[ib]} of axis {ib} of the second"
            )
        contract = ((len(sa) - 1,), (ib,))
    out = _dot_general(a, b, (contract, ((), ())), precision, pref)
    return _finish(out, dtype, weak)


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """Matrix product with NumPy's rules: 1-D operands act as a row/column vector (the axis is
    removed afterwards) and leading batch dimensions broadcast."""
    util.check_arraylike("matmul", a, b)
    for i, x in enumerate((a, b)):
        if np.ndim(x) < 1:
            raise ValueError(
                f"matmul: input operand {i} must have ndim at least 1, but it has ndim {np.ndim(x)}"
            )
    (a, b), dtype, weak, pref = _promote("matmul", (a, b), preferred_element_type)
    sa, sb = _shape(a), _shape(b)
    a_vec, b_vec = len(sa) == 1, len(sb) == 1
    ka, kb = sa[-1], sb[0] if b_vec else sb[-2]
    if ka != kb:
        raise TypeError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0 (size {kb} is different from "
            f"{ka}): operand shapes are {sa} and {sb}"
        )
    ba, bb = (() if a_vec else sa[:-2]), (() if b_vec else sb[:-2])
    try:
        np.broadcast_shapes(ba, bb)
    except ValueError:
        raise ValueError(f"matmul: incompatible batch dimensions in operand shapes {sa} and {sb}") from None
    nb = max(len(ba), len(bb))
    # Batch axis i (counted in the broadcast result) gets label i; rows 'm', columns 'n', core 'k'.
    a_labels = list(range(nb - len(ba), nb)) + ([] if a_vec else ["m"]) + ["k"]
    b_labels = list(range(nb - len(bb), nb)) + ["k"] + ([] if b_vec else ["n"])
    out_labels = list(range(nb)) + ([] if a_vec else ["m"]) + ([] if b_vec else ["n"])
    out = _contract_two(a, a_labels, b, b_labels, out_labels, precision, pref)
    return _finish(out, dtype, weak)


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """Flattened dot product, conjugating `a` first."""
    util.check_arraylike("vdot", a, b)
    a = util.asarray_like(a)
    if _dtypes.is_complex(get_aval(a).dtype):
        a = ufuncs.conjugate(a)
    return dot(ravel(a), ravel(b), precision=precision, preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """Array-API vector dot product along `axis` (conjugating `x1`), broadcasting the rest."""
    util.check_arraylike("vecdot", x1, x2)
    x1 = util.asarray_like(x1)
    if _dtypes.is_complex(get_aval(x1).dtype):
        x1 = ufuncs.conjugate(x1)
    from morphax._src.numpy.manipulation import moveaxis

    s1, s2 = np.shape(x1), np.shape(x2)
    a1 = util.canonicalize_axis(axis, len(s1), "vecdot")
    a2 = util.canonicalize_axis(axis, len(s2), "vecdot")
    if s1[a1] != s2[a2]:
        raise ValueError(
            f"vecdot: axis {axis} has size {s1[a1]} in x1 (shape {s1}) but {s2[a2]} in x2 (shape {s2})"
        )
    x1, x2 = moveaxis(x1, a1, -1), moveaxis(x2, a2, -1)
    res = matmul(
        reshape(x1, (*_shape(x1)[:-1], 1, s1[a1])),
        reshape(x2, (*np.shape(x2)[:-1], s2[a2], 1)),
        precision=precision,
        preferred_element_type=preferred_element_type,
    )
    return reshape(res, _shape(res)[:-2])


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Contract the last axes of `a` and `b` (scalars multiply)."""
    (a, b), dtype, weak, pref = _promote("inner", (a, b), preferred_element_type)
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return _finish(ufuncs.multiply(a, b), dtype, weak)
    if sa[-1] != sb[-1]:
        raise TypeError(f"inner: the last dimensions of shapes {sa} and {sb} differ ({sa[-1]} != {sb[-1]})")
    out = _dot_general(a, b, (((len(sa) - 1,), (len(sb) - 1,)), ((), ())), precision, pref)
    return _finish(out, dtype, weak)


def outer(a, b, out=None):
    """The outer product of the flattened inputs."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.outer is not supported.")
    util.check_arraylike("outer", a, b)
    a, b = ravel(a), ravel(b)
    return ufuncs.multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Contract the last `axes` axes of `a` with the first of `b`, or the listed axis pairs."""
    (a, b), dtype, weak, pref = _promote("tensordot", (a, b), preferred_element_type)
    sa, sb = _shape(a), _shape(b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(len(sa), len(sb)):
            raise TypeError(
                f"tensordot: number of contracted axes must be between 0 and the operands' ranks, got axes={n} "
                f"for shapes {sa} and {sb}"
            )
        ca, cb = tuple(range(len(sa) - n, len(sa))), tuple(range(n))
    elif isinstance(axes, (list, tuple)) and len(axes) == 2:
        ax_a, ax_b = axes
        ax_a = (ax_a,) if isinstance(ax_a, (int, np.integer)) else tuple(ax_a)
        ax_b = (ax_b,) if isinstance(ax_b, (int, np.integer)) else tuple(ax_b)
        if len(ax_a) != len(ax_b):
            raise TypeError(f"tensordot requires axes lists to have equal length, got {ax_a} and {ax_b}.")
        ca = tuple(util.canonicalize_axis(i, len(sa), "tensordot", "axes") for i in ax_a)
        cb = tuple(util.canonicalize_axis(i, len(sb), "tensordot", "axes") for i in ax_b)
    else:
        raise TypeError(f"tensordot: axes must be an int or a pair of axis sequences, got {axes!r}")
    for i, j in zip(ca, cb):
        if sa[i] != sb[j]:
            raise TypeError(
                f"tensordot: shape mismatch for contracted axes: axis {i} of shape {sa} has size {sa[i]} but "
                f"axis {j} of shape {sb} has size {sb[j]}"
            )
    out = _dot_general(a, b, ((ca, cb), ((), ())), precision, pref)
    return _finish(out, dtype, weak)


def kron(a, b):
    """Kronecker product: blocks a[i, j] * b."""
    util.check_arraylike("kron", a, b)
    a, b = util.promote_dtypes(a, b)
    sa, sb = _shape(a), _shape(b)
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    # Interleave the axes (a0, b0, a1, b1, ...) so that merging each pair gives the block layout.
    a_r = reshape(a, tuple(v for d in sa for v in (d, 1)))
    b_r = reshape(b, tuple(v for d in sb for v in (1, d)))
    return reshape(ufuncs.multiply(a_r, b_r), tuple(x * y for x, y in zip(sa, sb)))


# ------------------------------------------------------------------------------------ einsum


def _einsum_operands(subscripts, operands):
    """Operands converted to arrays (opt_einsum reads `.shape`); keeps the interleaved form."""
    if isinstance(subscripts, str):
        util.check_arraylike("einsum", *operands)
        return [subscripts, *(util.asarray_like(x) for x in operands)]
    # Interleaved form: einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]).
    args = [subscripts, *operands]
    out = []
    for i, x in enumerate(args):
        if i % 2 == 0 and not (i == len(args) - 1 and isinstance(x, (list, tuple))):
            util.check_arraylike("einsum", x)
            out.append(util.asarray_like(x))
        else:
            out.append(x)
    return out


def _contraction_plan(args, optimize):
    if optimize is True:
        optimize = "optimal"
    elif optimize is False or optimize is None:
        n_ops = sum(1 for a in args if hasattr(a, "shape"))
        optimize = [(0, 1)] * (n_ops - 1) if n_ops > 1 else [(0,)]
    import opt_einsum  # here, not at the top: `import morphax` does not load it

    try:
        return opt_einsum.contract_path(*args, einsum_call=True, use_blas=True, optimize=optimize)
    except ValueError as e:
        raise ValueError(f"einsum: {e}") from None


def einsum(
    subscripts,
    /,
    *operands,
    out=None,
    optimize="auto",
    precision=None,
    preferred_element_type=None,
    _dot_general=None,
    out_sharding=None,
):
    """Einstein summation, evaluated as a sequence of pairwise dot_generals in the order chosen
    by opt_einsum. Supports ellipses, implicit output, repeated indices (traces, diagonals) and
    size-1 broadcasting. `_dot_general` (JAX's private hook) replaces lax.dot_general for the
    pairwise products."""
    if out_sharding is not None:
        # NB: JAX places the result by `out_sharding`; morphax's einsum accepts only the default.
        raise NotImplementedError(f"einsum: out_sharding={out_sharding!r} is not supported; leave it None.")
    dot_general = None if _dot_general is None or _dot_general is L.dot_general else _dot_general
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.einsum is not supported.")
    args = _einsum_operands(subscripts, operands)
    ops, contractions = _contraction_plan(args, optimize)
    ops = list(ops)
    if not ops:
        raise ValueError("einsum: at least one operand is required")
    ops, dtype, weak, pref = _promote("einsum", ops, preferred_element_type)
    ops = list(ops)
    for contraction in contractions:
        inds, einsum_str = contraction[0], contraction[2]
        in_str, out_str = einsum_str.split("->")
        in_labels = [list(s) for s in in_str.split(",")]
        picked = [ops.pop(i) for i in inds]
        if len(picked) == 1:
            res = _contract_one(picked[0], in_labels[0], list(out_str))
        else:
            res = picked[0]
            labels = in_labels[0]
            for k in range(1, len(picked)):
                # Folding several operands: keep labels still needed by later operands or the output.
                later = set(out_str).union(*in_labels[k + 1 :])
                target = [lab for lab in dict.fromkeys(labels + in_labels[k]) if lab in later]
                if k == len(picked) - 1:
                    target = list(out_str)
                res = _contract_two(
                    res, labels, picked[k], in_labels[k], target, precision, pref, dot_general
                )
                labels = target
        ops.append(res)
    return _finish(ops[0], dtype, weak)


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """The contraction order and its cost report, as opt_einsum computes them."""
    args = _einsum_operands(subscripts, operands)
    if optimize is True:
        optimize = "optimal"
    import opt_einsum

    return opt_einsum.contract_path(*args, optimize=optimize)


def matvec(x1, x2, /):
    """Batched matrix-vector product over the last axes."""
    x1, x2 = util.checked_array("matvec", x1), util.checked_array("matvec", x2)
    return products.matmul(x1, x2[..., None])[..., 0]


def vecmat(x1, x2, /):
    """Batched (conjugated) vector-matrix product over the last axes."""
    x1, x2 = util.checked_array("vecmat", x1), util.checked_array("vecmat", x2)
    return products.matmul(ufuncs.conjugate(x1)[..., None, :], x2)[..., 0, :]
