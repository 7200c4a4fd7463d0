"""Dtype conversion primitives: convert_element_type, bitcast_convert_type, iota, copy and
stop_gradient, plus the lax helpers built on them (full, full_like). The value-selection
primitives (select_n, clamp) live in `selection`.

Conversions follow XLA's CPU semantics explicitly rather than NumPy's undefined casts: float -> int
truncates toward zero, saturates to the integer range and maps NaN to 0. Imports the core only.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core.ad_util import Zero, aval_of, is_zero, tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.trace import Tracer
from morphax._src.core.values import is_concrete_array, make_array
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._ad import defjvp_zero, deflinear
from morphax._src.prims._batching import vectorized_batcher
from morphax._src.prims._spec import DTYPES_FOR_CLASS, Case, TestSpec, random_array

# select_n and clamp used to live here; importers of this module still find them.
from morphax._src.prims.selection import clamp, clamp_p, select, select_n, select_n_p  # noqa: F401

__all__ = [
    "bitcast_convert_type",
    "bitcast_convert_type_p",
    "broadcasted_iota",
    "convert_element_type",
    "convert_element_type_p",
    "copy_p",
    "full",
    "full_like",
    "iota",
    "iota_p",
    "stop_gradient",
    "stop_gradient_p",
    "zeros_like_array",
]


def _is_array(x) -> bool:
    """A morphax Array or tracer (duck-typed: prims may not import the runtime)."""
    return isinstance(x, Tracer) or is_concrete_array(x)


def _is_weak(x) -> bool:
    if _dtypes.is_python_scalar(x):
        return type(x) is not bool
    return get_aval(x).weak_type


def _user_dtype(dtype, name: str) -> np.dtype:
    """A dtype argument of a lax wrapper, canonicalized (int64 -> int32 under x32)."""
    try:
        dt = _dtypes.canonicalize_dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{name}: {e}. Pass a NumPy dtype such as jnp.float32.") from None
    if dt not in _dtypes._JAX_DTYPES or dt == _dtypes.float0:
        raise TypeError(f"{name}: dtype {dt} is not a valid array dtype; use a numeric or bool dtype.")
    return dt


# ------------------------------------------------------------------------------- convert_element_type


def _int_info(dt):
    # np.iinfo where numpy has it, so that converting to int32 does not import ml_dtypes.
    if dt in _dtypes._INTN or dt in _dtypes._UINTN:
        return _dtypes._load_ml_dtypes().iinfo(dt)
    return np.iinfo(dt)


def _float_to_int(x, dt):
    """Truncate toward zero; NaN -> 0; out-of-range values saturate (XLA CPU)."""
    t = np.trunc(x.astype(np.float64))  # exact for every float dtype of 64 bits or fewer
    info = _int_info(dt)
    lo = float(int(info.min))  # 0 or -2**(bits-1): exact in float64
    hi = float(int(info.max) + 1)  # 2**bits or 2**(bits-1): exact
    over = t >= hi
    under = t < lo
    safe = np.where(np.isnan(t) | over | under, 0.0, t)
    out = safe.astype(dt)
    out = np.where(over, np.array(info.max, dt), out)
    return np.where(under, np.array(info.min, dt), out).astype(dt)


def _convert(x: np.ndarray, new_dtype) -> np.ndarray:
    new = np.dtype(new_dtype)
    old = x.dtype
    if old == new:
        return np.array(x, copy=True)
    if _dtypes.is_bool(new):
        return np.asarray(x != 0)  # complex: nonzero if either part is; NaN is nonzero
    if _dtypes.is_complex(old) and not _dtypes.is_complex(new):
        x = np.real(x)  # JAX warns here; we take the real part silently
        old = x.dtype
    if _dtypes.is_integer(new):
        if _dtypes.is_inexact(old):
            return _float_to_int(x, new)
        return x.astype(new)  # int -> int wraps modulo 2**bits; bool -> 0/1
    # Floating or complex target. ml_dtypes floats go through float64, which holds them (and every
    # int of 32 bits or fewer) exactly, so each conversion rounds once.
    if old in _dtypes._CUSTOM_FLOATS or new in _dtypes._CUSTOM_FLOATS:
        return x.astype(np.float64).astype(new)
    return x.astype(new)


def _convert_impl(x, *, new_dtype, weak_type, sharding):
    with np.errstate(all="ignore"):
        return _convert(np.asarray(x), new_dtype)


def _convert_abstract_eval(x, *, new_dtype, weak_type, sharding):
    dt = np.dtype(new_dtype)
    if dt not in _dtypes._JAX_DTYPES or dt == _dtypes.float0:
        raise TypeError(
            f"convert_element_type: new_dtype {dt} is not a valid array dtype (operand {x.str_short()}); "
            "use a numeric or bool dtype."
        )
    return ShapedArray(x.shape, dt, bool(weak_type))


convert_element_type_p = Primitive("convert_element_type")
convert_element_type_p.stablehlo = hlo.convert_element_type
convert_element_type_p.kind = Kind.ELEMENTWISE
convert_element_type_p.kernel_op = "convert_element_type"
convert_element_type_p.impl = _convert_impl
convert_element_type_p.abstract_eval = _convert_abstract_eval
# JAX leaves sharding=None out of the printed jaxpr (implied by the result's type).
convert_element_type_p.print_hidden_defaults = {"sharding": None}
convert_element_type_p.is_identity = lambda aval, *, new_dtype, weak_type, sharding: (
    new_dtype == aval.dtype and weak_type == aval.weak_type
)

_CONVERT_DTYPES = (
    "float32",
    "float16",
    "bfloat16",
    "int32",
    "int8",
    "int16",
    "uint8",
    "uint32",
    "bool",
    "complex64",
)
_CONVERT_SPECIALS = (
    np.nan,
    np.inf,
    -np.inf,
    0.0,
    -0.0,
    0.5,
    -0.5,
    1.5,
    -1.5,
    2.5,
    -2.7,
    127.9,
    128.0,
    -128.5,
    -129.0,
    255.5,
    256.0,
    65535.9,
    65536.0,
    1e10,
    -1e10,
    2147483520.0,
    2147483648.0,
    -2147483904.0,
    3e38,
)


def _convert_cases(rng):
    out = []
    for src in _CONVERT_DTYPES:
        for dst in _CONVERT_DTYPES:
            p = dict(
                new_dtype=np.dtype(dst) if dst != "bfloat16" else _dtypes.bfloat16,
                weak_type=False,
                sharding=None,
            )
            out.append(Case((random_array(rng, (2, 3), src, (-300, 300)),), p, f"{src}->{dst}[2,3]"))
            if _dtypes.is_inexact(np.dtype(src) if src != "bfloat16" else _dtypes.bfloat16):
                sp = np.array(_CONVERT_SPECIALS, np.float64)
                if src.startswith("complex"):
                    sp = sp + 1j * sp[::-1]
                with np.errstate(all="ignore"):
                    arr = sp.astype(src if src != "bfloat16" else _dtypes.bfloat16)
                out.append(Case((arr,), p, f"{src}->{dst}-specials"))
            elif src != "bool":
                info = np.iinfo(src)
                lo, hi = int(info.min), int(info.max)
                edges = sorted({v for v in (lo, lo + 1, -1, 0, 1, 127, 128, 255, 256, hi) if lo <= v <= hi})
                out.append(Case((np.array(edges).astype(src),), p, f"{src}->{dst}-edges"))
    for shape in ((), (0,), (1, 4), (2, 0, 3)):
        for weak in (False, True):
            p = dict(new_dtype=np.dtype("int32"), weak_type=weak, sharding=None)
            out.append(Case((random_array(rng, shape, "float32"),), p, f"f32->i32{list(shape)}weak={weak}"))
    # The inexact pairs that finite differences can check come first: the derivative matrix takes
    # the first float cases of a spec, and narrow-float or integer targets say little there.
    out.sort(key=lambda c: c.name.split("[")[0] not in _AD_FRIENDLY_PAIRS)
    return out


_AD_FRIENDLY_PAIRS = {"float32->float32", "float32->complex64", "complex64->float32", "complex64->complex64"}


convert_element_type_p.test_spec = TestSpec(cases=_convert_cases)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type, sharding):
    # Linear between inexact dtypes (complex -> real keeps the real part of the tangent too); an
    # integer or bool on either side means no derivative (float0 tangents).
    ans = convert_element_type_p.bind(*primals, new_dtype=new_dtype, weak_type=weak_type, sharding=sharding)
    out_t = tangent_aval(aval_of(ans))
    (t,) = tangents
    if is_zero(t) or out_t.dtype == _dtypes.float0 or aval_of(t).dtype == _dtypes.float0:
        return ans, Zero(out_t)
    return ans, convert_element_type_p.bind(t, new_dtype=out_t.dtype, weak_type=weak_type, sharding=sharding)


def _convert_transpose(ct, operand, *, new_dtype, weak_type, sharding):
    # Convert back: real -> complex transposes to the real part, complex -> real to complex(ct, 0).
    aval = operand.aval
    if is_zero(ct):
        return [Zero(aval)]
    if tangent_aval(aval).dtype == _dtypes.float0:
        return [Zero(tangent_aval(aval))]
    return [
        convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type, sharding=sharding)
    ]


convert_element_type_p.jvp = _convert_jvp
convert_element_type_p.transpose = _convert_transpose
vectorized_batcher(convert_element_type_p)


def _python_int_to(value: int, dt: np.dtype):
    """A Python int (any size) in `dt`: integers wrap modulo 2**bits, as NumPy's astype does."""
    if _dtypes.is_bool(dt):
        return np.array(value != 0)
    if _dtypes.is_integer(dt):
        info = _int_info(dt)
        span = int(info.max) - int(info.min) + 1
        return np.array((value - int(info.min)) % span + int(info.min)).astype(dt)
    try:
        as_float = float(value)
    except OverflowError:
        as_float = float("inf") if value > 0 else float("-inf")
    with np.errstate(all="ignore"):
        return np.array(as_float).astype(dt)


def _convert_element_type(operand, new_dtype=None, weak_type=False, sharding=None):
    """The conversion behind every wrapper; returns `operand` itself when nothing changes."""
    aval = get_aval(operand)
    new = aval.dtype if new_dtype is None else _user_dtype(new_dtype, "convert_element_type")
    weak_type = bool(weak_type)
    if type(operand) is int:
        # Convert big Python ints exactly, before they would be squeezed into the default int dtype.
        operand = _python_int_to(operand, new)
        old, old_weak = new, False
    else:
        old, old_weak = aval.dtype, aval.weak_type
    if (old, old_weak) == (new, weak_type) and _is_array(operand) and sharding is None:
        return operand
    if not isinstance(operand, Tracer) and not aval.shape and sharding is None:
        # A scalar constant is converted on the host, as JAX's constant folding does, so jaxprs show
        # a literal rather than a conversion of one.
        value = np.asarray(operand, dtype=old)
        with np.errstate(all="ignore"):
            return make_array(_convert(value, new), new, weak_type=weak_type)
    return convert_element_type_p.bind(operand, new_dtype=new, weak_type=weak_type, sharding=sharding)


def convert_element_type(operand, new_dtype):
    """Elementwise cast to `new_dtype` (canonicalized); the result is not weakly typed.

    Float -> int truncates toward zero, saturates out-of-range values and maps NaN to 0;
    conversion to bool is ``x != 0``; complex -> real keeps the real part; int -> int wraps.
    """
    return _convert_element_type(operand, new_dtype, weak_type=False)


# ------------------------------------------------------------------------------- bitcast_convert_type


def _bitcast_shape(x: ShapedArray, new: np.dtype):
    old_bits, new_bits = _dtypes.itemsize_bits(x.dtype), _dtypes.itemsize_bits(new)
    if old_bits == new_bits:
        return x.shape
    if old_bits > new_bits:
        if old_bits % new_bits:
            raise TypeError(
                f"bitcast_convert_type: {x.dtype.name} ({old_bits} bits) is not a multiple of "
                f"{new.name} ({new_bits} bits)."
            )
        return (*x.shape, old_bits // new_bits)
    ratio = new_bits // old_bits
    if new_bits % old_bits or not x.shape or x.shape[-1] != ratio:
        raise ValueError(
            f"bitcast_convert_type: converting {x.str_short()} to the wider dtype {new.name} requires the "
            f"operand's last dimension to be {new_bits}/{old_bits} = {ratio}, got shape {x.shape}. Reshape "
            f"the operand so its trailing axis has size {ratio}."
        )
    return x.shape[:-1]


def _bitcast_abstract_eval(x, *, new_dtype):
    new = np.dtype(new_dtype)
    if new not in _dtypes._JAX_DTYPES or new == _dtypes.float0:
        raise TypeError(f"bitcast_convert_type: new_dtype {new} is not a valid array dtype.")
    odd = (_dtypes.is_bool, _dtypes.is_complex)
    if x.dtype != new and any(f(d) for f in odd for d in (x.dtype, new)):
        raise TypeError(
            "bitcast_convert_type does not support bool or complex values unless the operand and "
            f"destination types match; got operand {x.str_short()} and new_dtype={new.name}. "
            "Use the arr.view() method instead."
        )
    if any(d in _dtypes._INTN or d in _dtypes._UINTN for d in (x.dtype, new)) and x.dtype != new:
        raise TypeError(
            f"bitcast_convert_type: sub-byte dtypes are not supported (got {x.dtype.name} -> {new.name})."
        )
    return ShapedArray(_bitcast_shape(x, new), new, False)


def _bitcast_impl(x, *, new_dtype):
    new = np.dtype(new_dtype)
    x = np.array(x, order="C")  # (ascontiguousarray would turn 0-d into 1-d)
    old_size, new_size = x.dtype.itemsize, new.itemsize
    if old_size == new_size:
        return x.view(new).copy()
    if old_size > new_size:
        # Each element becomes a trailing run of narrower ones, in memory (little-endian) order.
        return x.reshape(*x.shape, 1).view(new).copy()
    return x.view(new).reshape(x.shape[:-1]).copy()


def _bitcast_kind(x, *, new_dtype):
    # Same width: each element's bits reinterpreted in place. Another width regroups the bytes of
    # neighbouring elements along a trailing axis: not elementwise, run as its reference.
    return Kind.ELEMENTWISE if x.dtype.itemsize == np.dtype(new_dtype).itemsize else Kind.OPAQUE


bitcast_convert_type_p = Primitive("bitcast_convert_type")
bitcast_convert_type_p.stablehlo = hlo.bitcast_convert_type
bitcast_convert_type_p.impl = _bitcast_impl
bitcast_convert_type_p.abstract_eval = _bitcast_abstract_eval
bitcast_convert_type_p.kind = Kind.ELEMENTWISE
bitcast_convert_type_p.kernel_op = "bitcast_convert_type"
bitcast_convert_type_p.kind_rule = _bitcast_kind

_BITCAST_PAIRS = (
    ("float32", "int32"),
    ("int32", "float32"),
    ("float32", "uint32"),
    ("uint32", "float32"),
    ("int8", "uint8"),
    ("bfloat16", "int16"),
    ("uint16", "bfloat16"),
    ("float16", "uint16"),
    ("float32", "uint8"),
    ("float32", "bfloat16"),
    ("int32", "int16"),
    ("float16", "int8"),
    ("uint8", "float32"),
    ("uint8", "uint32"),
    ("int16", "int32"),
    ("bfloat16", "float32"),
    ("complex64", "complex64"),
    ("bool", "bool"),
)


def _bitcast_cases(rng):
    out = []
    for src, dst in _BITCAST_PAIRS:
        s, d = np.dtype(_canon_name(src)), np.dtype(_canon_name(dst))
        ratio = d.itemsize // s.itemsize
        shapes = (
            ((), (3,), (2, 3), (0,), (1, 4))
            if ratio <= 1
            else ((ratio,), (2, ratio), (0, ratio), (1, 3, ratio))
        )
        for shape in shapes:
            if s.kind in "iu":
                x = rng.integers(
                    int(np.iinfo(s).min), int(np.iinfo(s).max), size=shape, endpoint=True
                ).astype(s)
            else:
                x = random_array(rng, shape, s)
            out.append(Case((x,), dict(new_dtype=d), f"{src}->{dst}{list(shape)}"))
    return out


def _canon_name(name):
    return _dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)


bitcast_convert_type_p.test_spec = TestSpec(cases=_bitcast_cases, differentiable=False, grad_order=0)
defjvp_zero(bitcast_convert_type_p)


def _bitcast_batch(vals, dims, *, axis_data, new_dtype):
    # Elementwise except that a wider `new_dtype` consumes the trailing axis (and a narrower one
    # appends one, which leaves the batch axis where it is): a trailing batch axis moves left of it.
    (x,), (d,) = vals, dims
    aval = get_aval(x)
    nd = len(aval.shape)
    if d == nd - 1 and _dtypes.itemsize_bits(np.dtype(new_dtype)) > _dtypes.itemsize_bits(aval.dtype):
        x, d = moveaxis(x, d, nd - 2), nd - 2
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


bitcast_convert_type_p.batch = _bitcast_batch


def bitcast_convert_type(operand, new_dtype):
    """Reinterpret the bits of `operand` as `new_dtype`.

    Same width: same shape. Narrower `new_dtype`: a trailing axis of size old_bits/new_bits is added.
    Wider: the trailing axis, which must have size new_bits/old_bits, is consumed.
    """
    return bitcast_convert_type_p.bind(operand, new_dtype=_user_dtype(new_dtype, "bitcast_convert_type"))


# ---------------------------------------------------------------------------------------------- iota


def _iota_abstract_eval(*, dtype, shape, dimension, sharding):
    dt = np.dtype(dtype)
    if dt not in _dtypes._JAX_DTYPES or _dtypes.is_bool(dt) or dt == _dtypes.float0:
        raise TypeError(f"iota: dtype must be numeric (integer, floating or complex), got {dt}.")
    if not all(isinstance(d, (int, np.integer)) and d >= 0 for d in shape):
        raise TypeError(f"iota: shape must be a tuple of non-negative integers, got shape={shape}.")
    if not 0 <= dimension < len(shape):
        raise ValueError(
            f"iota: dimension must be in range [0, {len(shape)}) for shape {tuple(shape)}, "
            f"got dimension={dimension}."
        )
    return ShapedArray(tuple(int(d) for d in shape), dt, False)


def _iota_impl(*, dtype, shape, dimension, sharding):
    dt = np.dtype(dtype)
    n = shape[dimension]
    # Counting in int64 then casting wraps narrow ints the way XLA's iota does.
    line = np.arange(n, dtype=np.int64)
    line = line.astype(dt) if not _dtypes.is_inexact(dt) else line.astype(np.float64).astype(dt)
    view = line.reshape([n if i == dimension else 1 for i in range(len(shape))])
    return np.array(np.broadcast_to(view, shape), order="C")


iota_p = Primitive("iota")
iota_p.stablehlo = hlo.iota
# No operands: each element's value is computed from its own index.
iota_p.kind = Kind.ELEMENTWISE
iota_p.kernel_op = "iota"
iota_p.impl = _iota_impl
iota_p.abstract_eval = _iota_abstract_eval


def _iota_cases(rng):
    out = []
    for dt in ("int32", "float32", "uint8", "int8", "bfloat16", "complex64", "uint32"):
        for shape, dim in (
            ((5,), 0),
            ((0,), 0),
            ((1,), 0),
            ((2, 3), 0),
            ((2, 3), 1),
            ((2, 0, 4), 2),
            ((300,), 0),
        ):
            p = dict(dtype=_canon_name(dt), shape=shape, dimension=dim, sharding=None)
            out.append(Case((), p, f"{dt}{list(shape)}dim{dim}"))
    return out


iota_p.test_spec = TestSpec(cases=_iota_cases, differentiable=False, grad_order=0)
defjvp_zero(iota_p)
# No batching rule: iota has no operands, so vmap never sees it batched.


def _shape_tuple(shape, name):
    try:
        return tuple(int(d.__index__()) for d in shape)
    except (TypeError, AttributeError):
        raise TypeError(f"{name}: shapes must be sequences of integers, got {shape!r}.") from None


def broadcasted_iota(dtype, shape, dimension, *, out_sharding=None):
    """Array of `shape` whose values count 0, 1, ... along `dimension`."""
    shape = _shape_tuple(shape, "broadcasted_iota")
    dimension = int(dimension)
    if -len(shape) <= dimension < 0:
        dimension += len(shape)
    return iota_p.bind(
        dtype=_user_dtype(dtype, "iota"), shape=shape, dimension=dimension, sharding=out_sharding
    )


def iota(dtype, size):
    """1-D array ``[0, 1, ..., size - 1]`` of `dtype`."""
    return broadcasted_iota(dtype, (int(size),), 0)


# ------------------------------------------------------------------------------------------------ copy


copy_p = Primitive("copy")
copy_p.stablehlo = hlo.same_as_operand
copy_p.kind = Kind.ELEMENTWISE
copy_p.kernel_op = "copy"
copy_p.impl = lambda x: np.array(x, copy=True)
copy_p.abstract_eval = lambda x: x
copy_p.is_identity = lambda aval: True
copy_p.test_spec = TestSpec(
    cases=lambda rng: [
        Case((random_array(rng, shape, dt),), {}, f"{dt}{list(shape)}")
        for dt in DTYPES_FOR_CLASS["any"] + ("bfloat16",)
        for shape in ((), (3,), (2, 0), (1, 4))
    ]
)


def _copy_transpose(ct, operand):
    return [Zero(operand.aval) if is_zero(ct) else copy_p.bind(ct)]


deflinear(copy_p, _copy_transpose)
vectorized_batcher(copy_p)


def copy(x):
    """A fresh copy of `x` (JAX exposes only `copy_p`; `jnp.array(x, copy=True)` uses it)."""
    return copy_p.bind(x)


# --------------------------------------------------------------------------------------- stop_gradient


stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.stablehlo = hlo.same_as_operand
# The identity when evaluated: only differentiation treats it specially.
stop_gradient_p.kind = Kind.ELEMENTWISE
stop_gradient_p.kernel_op = "stop_gradient"
stop_gradient_p.impl = lambda x: np.array(x, copy=True)
stop_gradient_p.abstract_eval = lambda x: x
stop_gradient_p.test_spec = TestSpec(
    cases=lambda rng: [
        Case((random_array(rng, shape, dt),), {}, f"{dt}{list(shape)}")
        for dt in DTYPES_FOR_CLASS["inexact"]
        for shape in ((), (3,), (2, 0), (1, 4))
    ],
    differentiable=False,
    grad_order=0,
)
defjvp_zero(stop_gradient_p)
vectorized_batcher(stop_gradient_p)


def stop_gradient(x):
    """The value of `x` (any pytree) with no derivative: its tangent is zero and no cotangent flows
    back through it. Only inexact leaves are touched; integer and bool leaves are returned as they are."""

    def stop(leaf):
        if _dtypes.is_inexact(get_aval(leaf).dtype):
            return stop_gradient_p.bind(leaf)
        return leaf

    return pytree.tree_map(stop, x)


# ------------------------------------------------------------------------------------ full, full_like


def full(shape, fill_value, dtype=None, *, sharding=None):
    """An array of `shape` filled with the scalar `fill_value` (weakly typed iff `dtype` is None and
    `fill_value` is a Python scalar or weak array)."""
    from morphax._src.prims.shape import broadcast

    shape = _shape_tuple(shape, "full")
    fill_shape = get_aval(fill_value).shape
    if fill_shape:
        raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape {fill_shape}.")
    weak = dtype is None and _is_weak(fill_value)
    dt = get_aval(fill_value).dtype if dtype is None else _user_dtype(dtype, "full")
    value = _convert_element_type(fill_value, dt, weak)
    return broadcast(value, shape, out_sharding=sharding)


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """An array like `x` (its shape and dtype unless given) filled with `fill_value`."""
    aval = get_aval(x)
    weak = dtype is None and _is_weak(x)
    dt = aval.dtype if dtype is None else _user_dtype(dtype, "full_like")
    fill_shape = aval.shape if shape is None else _shape_tuple(shape, "full_like")
    return full(fill_shape, _convert_element_type(fill_value, dt, weak), sharding=sharding)


def zeros_like_array(x):
    """Zeros with the shape, dtype and weak type of `x`."""
    return full_like(x, 0)
