"""`dot_general`: XLA's general tensor contraction with batch and contracting dimensions.

Output layout is (batch dims, lhs free dims, rhs free dims). Mixed operand dtypes resolve to
the "higher precision" one as in JAX/XLA; integers wrap, bool is or-of-ands, and float16/bfloat16
accumulate in float32 (XLA CPU's behaviour) before rounding once. Imports the core only.
"""

from __future__ import annotations

import enum
import math

import numpy as np

from morphax._src.config import config
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import Zero, is_undefined_primal, is_zero
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._ad import defbilinear
from morphax._src.prims._spec import Case, TestSpec, random_array
from morphax._src.prims.complex_parts import real
from morphax._src.prims.conversion import convert_element_type
from morphax._src.prims.dot_algorithm import as_dot_algorithm
from morphax._src.prims.shape import transpose

__all__ = ["Precision", "dot", "dot_general", "dot_general_p"]


class Precision(enum.Enum):
    """Matmul precision hint; recorded in the jaxpr, it never changes the NumPy reference."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        # JAX's string spellings (including the dtype-named aliases).
        return {
            "bfloat16": cls.DEFAULT,
            "tensorfloat32": cls.HIGH,
            "float32": cls.HIGHEST,
            "fastest": cls.DEFAULT,
            "default": cls.DEFAULT,
            "high": cls.HIGH,
            "highest": cls.HIGHEST,
        }.get(value)

    def __repr__(self):
        return f"{type(self).__name__}.{self.name}"

    def __str__(self):
        return self.name


def canonicalize_precision(precision):
    """None / a Precision or string / a pair of them -> None or a (Precision, Precision) pair;
    a DotAlgorithm, DotAlgorithmPreset or preset name is kept as it is."""
    algorithm = as_dot_algorithm(precision)
    if algorithm is not None:
        return algorithm
    if precision is None:
        default = config.default_matmul_precision
        return None if default is None else canonicalize_precision(default)
    if isinstance(precision, (Precision, str)):
        p = _one_precision(precision)
        return (p, p)
    if isinstance(precision, (list, tuple)) and len(precision) == 2:
        return (_one_precision(precision[0]), _one_precision(precision[1]))
    raise ValueError(
        "Precision argument must be one of None, a lax.Precision, a string such as 'highest', or a "
        f"pair of them (one per operand); got {precision!r}."
    )


def _one_precision(p):
    if isinstance(p, Precision):
        return p
    try:
        return Precision(p)
    except ValueError:
        raise ValueError(
            f"Unknown precision {p!r}: use lax.Precision.DEFAULT/HIGH/HIGHEST or one of 'default', "
            "'high', 'highest', 'bfloat16', 'tensorfloat32', 'float32'."
        ) from None


# ------------------------------------------------------------------------------------------------
# Dtype rule.


def _bit_width(dt) -> int:
    return 1 if _dtypes.is_bool(dt) else _dtypes.itemsize_bits(dt)


def _type_properties(dt):
    # XLA's HigherPrecisionType ordering: complex > range (maxexp) > mantissa > width > signedness.
    comp = _dtypes.real_dtype(dt)
    is_float = _dtypes.is_floating(comp)
    fi = _dtypes.finfo(comp) if is_float else None
    return (
        _dtypes.is_complex(dt),
        int(fi.maxexp) if is_float else -1,
        int(fi.nmant) if is_float else -1,
        _bit_width(comp),
        not _dtypes.is_unsigned(comp),
    )


def _result_dtype(lhs_dt, rhs_dt, preferred):
    lp, rp = _type_properties(lhs_dt), _type_properties(rhs_dt)
    if lp > rp:
        out = lhs_dt
    elif rp > lp:
        out = rhs_dt
    else:
        if lhs_dt != rhs_dt:
            raise TypeError(
                f"dot_general argument type error: lhs dtype {lhs_dt.name} and rhs dtype {rhs_dt.name} "
                "have no common higher-precision type; cast one operand with lax.convert_element_type."
            )
        out = lhs_dt
    if preferred is None or np.dtype(preferred) == out:
        return out
    preferred = np.dtype(preferred)
    if not _dtypes.is_floating(out) and _bit_width(preferred) < _bit_width(out):
        raise TypeError(
            "dot_general: `preferred_element_type` must not be narrower than the original type, got "
            f"preferred_element_type of {preferred.name} for result type of {out.name}."
        )
    return preferred


# ------------------------------------------------------------------------------------------------
# Shape rule.


def _check_dims(which: str, kind: str, dims, aval: ShapedArray, lhs, rhs):
    if not isinstance(dims, tuple) or not all(isinstance(d, (int, np.integer)) for d in dims):
        raise TypeError(f"dot_general: {which} {kind} dimensions must be a tuple of ints, got {dims!r}")
    if len(set(dims)) != len(dims):
        raise TypeError(f"dot_general requires {which} {kind} dimensions to be distinct, got {dims}.")
    for d in dims:
        if not 0 <= d < aval.ndim:
            raise TypeError(
                f"dot_general requires {which} {kind} dimensions to be in range [0, {aval.ndim}) for "
                f"{which} of shape {aval.shape}, got {dims} (lhs {lhs.str_short()}, rhs {rhs.str_short()})."
            )


def _unpack_dnums(dimension_numbers):
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError(
            "dot_general: dimension_numbers must be ((lhs_contracting, rhs_contracting), (lhs_batch, "
            f"rhs_batch)), got {dimension_numbers!r}"
        ) from None
    return lc, rc, lb, rb


def _shape_rule(lhs, rhs, dimension_numbers):
    lc, rc, lb, rb = _unpack_dnums(dimension_numbers)
    for which, kind, dims, aval in (
        ("lhs", "contracting", lc, lhs),
        ("rhs", "contracting", rc, rhs),
        ("lhs", "batch", lb, lhs),
        ("rhs", "batch", rb, rhs),
    ):
        _check_dims(which, kind, dims, aval, lhs, rhs)
    if len(lb) != len(rb):
        raise TypeError(
            "dot_general requires lhs batch dimensions and rhs batch dimensions to have the same length, "
            f"got {lb} and {rb}."
        )
    for which, c, b in (("lhs", lc, lb), ("rhs", rc, rb)):
        if set(c) & set(b):
            raise TypeError(
                f"dot_general requires {which} batch dimensions to be disjoint from its contracting "
                f"dimensions, got batch {b} and contracting {c}."
            )
    lbs = tuple(lhs.shape[d] for d in lb)
    rbs = tuple(rhs.shape[d] for d in rb)
    if lbs != rbs:
        raise TypeError(
            "dot_general requires lhs batch dimensions and rhs batch dimensions to have the same shape, "
            f"got {lbs} and {rbs} (lhs shape {lhs.shape}, rhs shape {rhs.shape}, batch dims {lb} and {rb})."
        )
    if len(lc) != len(rc):
        raise TypeError(
            "dot_general requires equal numbers of lhs and rhs contracting dimensions, got "
            f"{lc} and {rc} (lhs shape {lhs.shape}, rhs shape {rhs.shape})."
        )
    lcs = tuple(lhs.shape[d] for d in lc)
    rcs = tuple(rhs.shape[d] for d in rc)
    if lcs != rcs:
        raise TypeError(
            "dot_general requires contracting dimensions to have the same shape, got "
            f"{lcs} and {rcs} (lhs shape {lhs.shape} contracting {lc}, rhs shape {rhs.shape} contracting {rc})."
        )
    lfree = tuple(d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb)
    rfree = tuple(d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb)
    return lbs + lfree + rfree


# ------------------------------------------------------------------------------------------------
# The primitive.

dot_general_p = Primitive("dot_general")
dot_general_p.stablehlo = hlo.dot_general
dot_general_p.kind = Kind.OPAQUE


def _dot_general_pp_params(eqn, params):
    # Printed as JAX prints it: dimension numbers as lists; None-valued options and the sharding
    # (implied by the result's type) left out.
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    out = {k: v for k, v in params.items() if v is not None and k != "out_sharding"}
    out["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
    return out


dot_general_p.pp_params = _dot_general_pp_params


def _dot_general_abstract_eval(
    lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding
):
    shape = _shape_rule(lhs, rhs, dimension_numbers)
    dtype = _result_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


def _float_accumulator(*dts) -> np.dtype:
    # float16/bfloat16 accumulate in float32 (XLA CPU); 64-bit anywhere keeps 64 bits.
    wide = any(d in (_dtypes.float64, _dtypes.complex128) for d in dts)
    if any(_dtypes.is_complex(d) for d in dts):
        return np.dtype(np.complex128 if wide else np.complex64)
    return np.dtype(np.float64 if wide else np.float32)


def _matmul_form(a, b, dimension_numbers):
    """dot_general as one batched matmul (BLAS): lhs to (batch, free, contract), rhs to
    (batch, contract, free). The result's axis order (batch, lhs free, rhs free) is XLA's.
    Plain Python arithmetic on the shapes: np.prod costs microseconds per call, which adds up
    on the small matmuls of a training step."""
    (lc, rc), (lb, rb) = dimension_numbers
    if not lb and a.ndim == 2 and b.ndim == 2 and lc == (1,) and rc == (0,):
        return np.matmul(a, b)  # the common x @ W, no reshaping
    lf = [d for d in range(a.ndim) if d not in lc and d not in lb]
    rf = [d for d in range(b.ndim) if d not in rc and d not in rb]
    batch_shape = [a.shape[d] for d in lb]
    m = math.prod(a.shape[d] for d in lf)
    n = math.prod(b.shape[d] for d in rf)
    k = math.prod(a.shape[d] for d in lc)
    a_t = np.transpose(a, list(lb) + lf + list(lc))
    b_t = np.transpose(b, list(rb) + list(rc) + rf)
    if not lb:
        # No batch dims: one plain 2-D GEMM (a batch-1 3-D matmul takes a slower path; np.dot
        # is slower than np.matmul on transposed operands, 0.45 vs 0.38 ms for (512,128)x(128,784)).
        out = np.matmul(a_t.reshape(m, k), b_t.reshape(k, n))
    else:
        nb = math.prod(batch_shape)
        out = np.matmul(a_t.reshape(nb, m, k), b_t.reshape(nb, k, n))
    return out.reshape(batch_shape + [a.shape[d] for d in lf] + [b.shape[d] for d in rf])


_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _dot_general_impl(lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding):
    dt = lhs.dtype
    if (
        dt == rhs.dtype
        and dt in _BLAS_FLOATS
        and (preferred_element_type is None or preferred_element_type == dt)
    ):
        # The common case (float32 @ float32): straight to BLAS, outside np.errstate (which costs
        # a (128,784)x(784,512) matmul about 30 us) and without the dtype rules (about 6 us).
        return _matmul_form(lhs, rhs, dimension_numbers)
    out_dt = _result_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    common = _result_dtype(lhs.dtype, rhs.dtype, None)
    # Both paths go through one (batched) matmul, never np.einsum: einsum subscripts run out
    # (52 letters, 32 operand dims) long before array ranks do; JAX handles 60-index einsums.
    if _dtypes.is_bool(out_dt) or _dtypes.is_integer(out_dt):
        # Operands take the result type (wrapping if narrower), then accumulate exactly in 64
        # bits: wrapping arithmetic is a ring map mod 2^bits, so one final wrap equals XLA's
        # step-by-step wrapping. bool is or-of-ands: a nonzero count of true products.
        with np.errstate(all="ignore"):
            a = lhs.astype(out_dt).astype(np.int64)
            b = rhs.astype(out_dt).astype(np.int64)
            out = _matmul_form(a, b, dimension_numbers)
            return np.asarray(out != 0) if _dtypes.is_bool(out_dt) else np.asarray(out).astype(out_dt)
    # Inexact result: inputs meet at their common type (or the result type when the common
    # type is integral), are widened exactly to the accumulator, and round once at the end.
    src = common if _dtypes.is_inexact(common) else out_dt
    acc = _float_accumulator(src, out_dt)
    with np.errstate(all="ignore"):
        # copy=False: operands already of the accumulator type go to BLAS without copies.
        a = lhs.astype(src, copy=False).astype(acc, copy=False)
        b = rhs.astype(src, copy=False).astype(acc, copy=False)
        out = _matmul_form(a, b, dimension_numbers)
        if _dtypes.is_complex(out.dtype) and not _dtypes.is_complex(out_dt):
            out = out.real
        return out.astype(out_dt, copy=False)


dot_general_p.impl = _dot_general_impl


def _dot_general_elementwise_form(
    lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding
):
    """Without contracting dims (the outer products vmap(grad) produces) each output element is
    one product: a broadcast multiply the compiler fuses, not a BLAS call. Output axes are
    (batch, lhs free, rhs free), as XLA orders them."""
    (lc, rc), (lb, rb) = dimension_numbers
    if (
        lc
        or rc
        or _result_dtype(lhs.dtype, rhs.dtype, preferred_element_type) != lhs.dtype
        or lhs.dtype != rhs.dtype
    ):
        return None
    lf = [d for d in range(len(lhs.shape)) if d not in lb]
    rf = [d for d in range(len(rhs.shape)) if d not in rb]
    nb = len(lb)

    def lhs_map(out_index):
        idx = [None] * len(lhs.shape)
        for k, d in enumerate(lb):
            idx[d] = out_index[k]
        for k, d in enumerate(lf):
            idx[d] = out_index[nb + k]
        return tuple(idx)

    def rhs_map(out_index):
        idx = [None] * len(rhs.shape)
        for k, d in enumerate(rb):
            idx[d] = out_index[k]
        for k, d in enumerate(rf):
            idx[d] = out_index[nb + len(lf) + k]
        return tuple(idx)

    return "mul", [lhs_map, rhs_map]


dot_general_p.elementwise_form = _dot_general_elementwise_form


def _dot_general_permuted_form(
    perm, lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding
):
    """A transpose that swaps the lhs-free and rhs-free axis groups of a dot_general's result
    (batch axes staying first) is the dot_general of the swapped operands: BLAS computes
    (A B)^T as B^T A^T by reading its operands transposed, for free. Autodiff's weight gradients
    have this form; folding the transpose saves a strided copy of the result."""
    (lc, rc), (lb, rb) = dimension_numbers
    nb = len(lb)
    n_lf = len(lhs.shape) - len(lc) - nb
    n_rf = len(rhs.shape) - len(rc) - nb
    swapped = [*range(nb), *range(nb + n_lf, nb + n_lf + n_rf), *range(nb, nb + n_lf)]
    if tuple(perm) != tuple(swapped) or not n_lf or not n_rf:
        return None
    if isinstance(precision, (tuple, list)) and len(precision) == 2:
        precision = (precision[1], precision[0])
    params = dict(
        dimension_numbers=((rc, lc), (rb, lb)),
        precision=precision,
        preferred_element_type=preferred_element_type,
        out_sharding=out_sharding,
    )
    return (1, 0), params


dot_general_p.permuted_form = _dot_general_permuted_form


def _dot_general_cost(lhs, rhs, *, dimension_numbers, **_):
    """Two flops (a multiply and an add) per product summed: 2 * batch * m * n * k."""
    (lc, _), (lb, _) = dimension_numbers
    k = math.prod(lhs.shape[d] for d in lc)
    out = math.prod(_shape_rule(lhs, rhs, dimension_numbers))
    return {"flops": 2 * out * k}


dot_general_p.cost_rule = _dot_general_cost


def _dot_general_permuted_operand_form(
    k, perm, lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding
):
    """dot_general of a transposed operand is dot_general of the operand itself with its
    contracting and batch dims renumbered, as long as its free dims keep their relative order
    (the result lists them in operand order): `x.T @ y` reads x transposed inside BLAS."""
    (lc, rc), (lb, rb) = dimension_numbers
    contract, batch = (lc, lb) if k == 0 else (rc, rb)
    rank = len(perm)
    free = [perm[d] for d in range(rank) if d not in contract and d not in batch]
    if free != sorted(free):
        return None
    contract = tuple(perm[d] for d in contract)
    batch = tuple(perm[d] for d in batch)
    if k == 0:
        numbers = ((contract, rc), (batch, rb))
    else:
        numbers = ((lc, contract), (lb, batch))
    return dict(
        dimension_numbers=numbers,
        precision=precision,
        preferred_element_type=preferred_element_type,
        out_sharding=out_sharding,
    )


dot_general_p.permuted_operand_form = _dot_general_permuted_operand_form
dot_general_p.abstract_eval = _dot_general_abstract_eval


def _dot_cases(rng):
    out = []
    i32 = np.dtype("int32")
    f32 = np.dtype("float32")
    configs = (
        ("vv", (3,), (3,), (((0,), (0,)), ((), ()))),
        ("mv", (2, 3), (3,), (((1,), (0,)), ((), ()))),
        ("vm", (3,), (3, 4), (((0,), (0,)), ((), ()))),
        ("mm", (2, 3), (3, 4), (((1,), (0,)), ((), ()))),
        ("mTm", (3, 2), (3, 4), (((0,), (0,)), ((), ()))),
        ("outer", (2,), (3,), (((), ()), ((), ()))),
        ("scalar", (), (2, 3), (((), ()), ((), ()))),
        ("bmm", (5, 2, 3), (5, 3, 4), (((2,), (1,)), ((0,), (0,)))),
        ("bmm-moved-batch", (2, 5, 3), (3, 4, 5), (((2,), (0,)), ((1,), (2,)))),
        ("two-contract", (2, 3, 4), (4, 3, 5), (((1, 2), (1, 0)), ((), ()))),
        ("batch-only", (4, 3), (4, 3), (((), ()), ((0, 1), (0, 1)))),
        ("zero-contract", (2, 0), (0, 3), (((1,), (0,)), ((), ()))),
        ("zero-free", (0, 3), (3, 4), (((1,), (0,)), ((), ()))),
        ("size1", (1, 1), (1, 1), (((1,), (0,)), ((), ()))),
    )
    base = {"precision": None, "preferred_element_type": None, "out_sharding": None}
    for dt in ("float32", "float16", "bfloat16", "int32", "int8", "uint8", "bool", "complex64"):
        for name, ls, rs, dn in configs:
            x = random_array(rng, ls, dt)
            y = random_array(rng, rs, dt)
            out.append(Case((x, y), dict(base, dimension_numbers=dn), f"{dt}-{name}"))
    mm = (((1,), (0,)), ((), ()))
    extra = (
        ("int8", "int8", i32),
        ("int8", "int8", f32),
        ("bfloat16", "bfloat16", f32),
        ("float32", "float32", np.dtype("bfloat16")),
        ("int8", "float32", None),
        ("float16", "bfloat16", None),
        ("uint8", "int8", None),
        ("float32", "complex64", None),
        ("bool", "bool", i32),
    )
    for ldt, rdt, pref in extra:
        x = random_array(rng, (2, 3), ldt)
        y = random_array(rng, (3, 4), rdt)
        params = dict(base, dimension_numbers=mm, preferred_element_type=pref)
        out.append(Case((x, y), params, f"{ldt}x{rdt}->{pref}"))
    big = np.full((2, 8), 100, np.int8), np.full((8, 3), 100, np.int8)
    out.append(Case(big, dict(base, dimension_numbers=mm), "int8-wraps"))
    prec = (Precision.HIGHEST, Precision.HIGHEST)
    x, y = random_array(rng, (2, 3), "float32"), random_array(rng, (3, 4), "float32")
    out.append(Case((x, y), dict(base, dimension_numbers=mm, precision=prec), "float32-highest"))
    sp = np.array([[np.inf, 1.0, 0.0], [np.nan, 1.0, 2.0]], np.float32)
    out.append(Case((sp, sp.T.copy()), dict(base, dimension_numbers=mm), "float32-specials"))
    return out


dot_general_p.test_spec = TestSpec(cases=_dot_cases)


# ------------------------------------------------------------------------------------------------
# Derivatives: bilinear, so the JVP is dot(t_lhs, rhs) + dot(lhs, t_rhs) and each operand's
# transpose contracts the cotangent with the other operand.


def _free_dims(ndim, contracting, batch):
    return tuple(i for i in range(ndim) if i not in contracting and i not in batch)


def _dot_transpose_operand(ct, other, aval, own_c, other_c, own_b, other_b, ct_free_of_other, params):
    """Cotangent of one operand (aval, contracting own_c, batch own_b) of a dot_general whose other
    operand is `other`: contract the cotangent's axes that came from `other` with other's free
    axes, then permute the result (batch, own free, own contracting in other's order) into the
    operand's axis order and cast to its dtype (the result may be wider or complex)."""
    nb = len(own_b)
    other_free = _free_dims(len(get_aval(other).shape), other_c, other_b)
    dims = ((ct_free_of_other, other_free), (tuple(range(nb)), tuple(other_b)))
    res = dot_general_p.bind(
        ct,
        other,
        dimension_numbers=dims,
        precision=params["precision"],
        preferred_element_type=None,
        out_sharding=None,
    )
    own_free = _free_dims(len(aval.shape), own_c, own_b)
    # other's contracting axes come out in increasing order; each pairs with one of ours.
    own_c_by_other = tuple(c for _, c in sorted(zip(other_c, own_c)))
    src = tuple(own_b) + own_free + own_c_by_other
    perm = tuple(int(i) for i in np.argsort(src))
    if perm != tuple(range(len(perm))):
        res = transpose(res, perm)
    if get_aval(res).dtype != aval.dtype:
        if _dtypes.is_complex(get_aval(res).dtype) and not _dtypes.is_complex(aval.dtype):
            res = real(res)
        res = convert_element_type(res, aval.dtype)
    return res


def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers, **params):
    (lc, rc), (lb, rb) = dimension_numbers
    undef_l, undef_r = is_undefined_primal(lhs), is_undefined_primal(rhs)
    if undef_l and undef_r:
        raise ValueError("dot_general: cannot transpose with respect to both operands (it is bilinear)")
    if is_zero(ct):
        return [Zero(lhs.aval) if undef_l else None, Zero(rhs.aval) if undef_r else None]
    # The cotangent's axes: batch, then lhs free, then rhs free.
    nb = len(lb)
    n_lfree = len(_free_dims(len(_aval(lhs).shape), lc, lb))
    n_rfree = len(_free_dims(len(_aval(rhs).shape), rc, rb))
    lhs_ct = rhs_ct = None
    if undef_l:
        ct_rfree = tuple(range(nb + n_lfree, nb + n_lfree + n_rfree))
        lhs_ct = _dot_transpose_operand(ct, rhs, lhs.aval, lc, rc, lb, rb, ct_rfree, params)
    if undef_r:
        ct_lfree = tuple(range(nb, nb + n_lfree))
        rhs_ct = _dot_transpose_operand(ct, lhs, rhs.aval, rc, lc, rb, lb, ct_lfree, params)
    return [lhs_ct, rhs_ct]


def _aval(x):
    return x.aval if is_undefined_primal(x) else get_aval(x)


defbilinear(dot_general_p, _dot_general_transpose)


def _dot_general_batch(vals, dims, *, axis_data, dimension_numbers, **params):
    # Both batched: the batch axes pair up as one more (leading) dot_general batch dimension. One
    # batched: its batch axis is one more free axis of that side; the output holds the batch dims,
    # then lhs's free axes, then rhs's, each in axis order, which places it.
    lhs, rhs = vals
    dl, dr = dims
    lc, rc, lb, rb = _unpack_dnums(dimension_numbers)

    def shift(ds, d):
        return tuple(i + (i >= d) for i in ds)

    if dl is not None and dr is not None:
        dn = ((shift(lc, dl), shift(rc, dr)), ((dl,) + shift(lb, dl), (dr,) + shift(rb, dr)))
        return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), 0
    if dl is not None:
        lc, lb = shift(lc, dl), shift(lb, dl)
        out_dim = len(lb) + sum(1 for i in range(dl) if i not in lc and i not in lb)
    else:
        rc, rb = shift(rc, dr), shift(rb, dr)
        n_lfree = len(get_aval(lhs).shape) - len(lc) - len(lb)
        out_dim = len(rb) + n_lfree + sum(1 for i in range(dr) if i not in rc and i not in rb)
    dn = ((lc, rc), (lb, rb))
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), out_dim


dot_general_p.batch = _dot_general_batch


def _canon_dims(dims, ndim):
    out = []
    for d in dims:
        d = int(d)
        out.append(d + ndim if -ndim <= d < 0 else d)
    return tuple(out)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, out_sharding=None):
    """General contraction: ``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``.

    The result holds the batch dims, then lhs's remaining dims, then rhs's remaining dims.
    """
    (lc, rc), (lb, rb) = dimension_numbers
    ln, rn = len(get_aval(lhs).shape), len(get_aval(rhs).shape)
    dn = (
        (_canon_dims(_as_tuple(lc), ln), _canon_dims(_as_tuple(rc), rn)),
        (_canon_dims(_as_tuple(lb), ln), _canon_dims(_as_tuple(rb), rn)),
    )
    pref = None if preferred_element_type is None else _dtypes.canonicalize_dtype(preferred_element_type)
    return dot_general_p.bind(
        lhs,
        rhs,
        dimension_numbers=dn,
        precision=canonicalize_precision(precision),
        preferred_element_type=pref,
        out_sharding=out_sharding,
    )


def _as_tuple(dims):
    if isinstance(dims, (int, np.integer)):
        return (int(dims),)
    return tuple(int(d) for d in dims)


def dot(lhs, rhs, precision=None, preferred_element_type=None, *, out_sharding=None):
    """Vector/matrix product: contracts the last dim of `lhs` (rank 1 or 2) with the first of `rhs`."""
    ls, rs = get_aval(lhs).shape, get_aval(rhs).shape
    if 1 <= len(ls) <= 2 and 1 <= len(rs) <= 2 and ls[-1] == rs[0]:
        dn = (((len(ls) - 1,), (0,)), ((), ()))
        return dot_general(
            lhs,
            rhs,
            dn,
            precision=precision,
            preferred_element_type=preferred_element_type,
            out_sharding=out_sharding,
        )
    raise TypeError(
        f"Incompatible shapes for dot: got {ls} and {rs}. lax.dot takes vectors or matrices whose inner "
        "dimensions match; use lax.dot_general for other contractions."
    )
