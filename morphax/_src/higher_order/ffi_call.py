"""Foreign functions: `ffi_call`, a primitive that calls a C function the user registered
(`register_ffi_target`), under morphax's own calling convention (ffi_include/morphax_ffi.h: one
MxFfiCall struct of argument and result buffers and keyword attributes; 0 on success).

The call runs on the host, on the arrays' host buffers: inside a C-backend program the generated
code calls the target itself (compiler/backends/c/ffi.py); elsewhere `impl` calls it through
ctypes: a host step between device programs on the xla backend (backends/xla/host_steps.py), a
step of a NumPy-backend program, or an eager call. It is not
differentiable (wrap it in custom_jvp/custom_vjp, as in JAX), and under vmap it does what its
`vmap_method` says, as JAX defines the methods.
"""

from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.effects import Effect
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.values import make_array
from morphax._src.errors import JaxRuntimeError
from morphax._src.higher_order.callbacks import vectorized_operands

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ffi_include")
VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized")
_ERROR_BYTES = 1024


# ------------------------------------------------------------------ the convention, in ctypes


class _Buffer(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dims", ctypes.POINTER(ctypes.c_int64)),
        ("rank", ctypes.c_int64),
        ("dtype", ctypes.c_int32),
    ]


class _Attr(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("kind", ctypes.c_int32),
        ("i64", ctypes.c_int64),
        ("f64", ctypes.c_double),
        ("str", ctypes.c_char_p),
        ("array", _Buffer),
    ]


class _Call(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_int32),
        ("args", ctypes.POINTER(_Buffer)),
        ("num_args", ctypes.c_int64),
        ("rets", ctypes.POINTER(_Buffer)),
        ("num_rets", ctypes.c_int64),
        ("attrs", ctypes.POINTER(_Attr)),
        ("num_attrs", ctypes.c_int64),
        ("error", ctypes.c_char_p),
        ("error_size", ctypes.c_int64),
    ]


_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(_Call))
_DTYPE_CODES = {
    "bool": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "uint8": 6, "uint16": 7,
    "uint32": 8, "uint64": 9, "float16": 10, "bfloat16": 11, "float32": 12, "float64": 13,
    "complex64": 14, "complex128": 15,
}  # fmt: skip
_ATTR_I64, _ATTR_F64, _ATTR_STR, _ATTR_ARRAY = 1, 2, 3, 4


def _buffer(array: np.ndarray, keep: list) -> _Buffer:
    code = _DTYPE_CODES.get(array.dtype.name)
    if code is None:
        raise TypeError(f"ffi_call: arrays of dtype {array.dtype} cannot be passed to a foreign function")
    dims = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
    keep.append(dims)
    return _Buffer(array.ctypes.data if array.size else None, dims, array.ndim, code)


# ------------------------------------------------------------------------------ the registry

_targets: dict = {}  # (name, platform) -> (address, the object keeping it alive)
_lock = threading.Lock()
_PLATFORM_ALIASES = {"cpu": "cpu", "host": "cpu"}


def _address(fn) -> int:
    if isinstance(fn, dict):  # JAX's staged handlers: morphax calls the "execute" stage
        if "execute" not in fn:
            raise ValueError(
                f"register_ffi_target: a dict of handlers needs an 'execute' entry, got {sorted(fn)}"
            )
        fn = fn["execute"]
    if isinstance(fn, int):
        return fn
    if type(fn).__name__ == "PyCapsule":
        get_name = ctypes.pythonapi.PyCapsule_GetName
        get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
        get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
        get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        return get_pointer(fn, get_name(fn))
    if isinstance(fn, ctypes._CFuncPtr):
        return ctypes.cast(fn, ctypes.c_void_p).value
    raise TypeError(
        f"register_ffi_target: fn must be a PyCapsule (morphax.ffi.pycapsule(lib.symbol)), a ctypes "
        f"function or an address, got {type(fn).__name__}"
    )


def register_target(name: str, fn, platform: str = "cpu") -> None:
    address = _address(fn)
    if not address:
        raise ValueError(f"register_ffi_target: the function for {name!r} is a null pointer")
    key = (name, _PLATFORM_ALIASES.get(platform.lower(), platform.lower()))
    with _lock:
        _targets[key] = (address, fn)


def registered_address(name: str) -> int | None:
    """The address of the CPU target `name`, or None when none is registered."""
    with _lock:
        found = _targets.get((name, "cpu"))
    return None if found is None else found[0]


def _handler(name: str):
    with _lock:
        found = _targets.get((name, "cpu"))
    if found is None:
        known = sorted(n for n, p in _targets if p == "cpu")
        raise JaxRuntimeError(
            f"ffi_call: no FFI target named {name!r} is registered for the CPU (registered: {known}); "
            "register it with morphax.ffi.register_ffi_target(name, morphax.ffi.pycapsule(lib.symbol))."
        )
    return _HANDLER(found[0])


# ---------------------------------------------------------------------------- the primitive


class FfiEffect(Effect):
    """An ffi_call with has_side_effect=True: it runs even when its results are unused."""


ffi_effect = FfiEffect()

ffi_call_p = Primitive("ffi_call", multiple_results=True)
ffi_call_p.kind = Kind.EFFECT
# As the callbacks: `impl` gets the original arrays, and the primitive stays out of the
# per-primitive NumPy matrices (what it computes is the user's C).
ffi_call_p.higher_order = True
ffi_call_p.calls_host = True
ffi_call_p.effect_rule = lambda *, has_side_effect, **_: {ffi_effect} if has_side_effect else set()
ffi_call_p.differentiable = False


def _attribute(name: str, value, keep: list) -> _Attr:
    attr = _Attr()
    attr.name = name.encode()
    if isinstance(value, HashableArray):
        array = np.ascontiguousarray(value.val)
        keep.append(array)
        attr.kind, attr.array = _ATTR_ARRAY, _buffer(array, keep)
    elif isinstance(value, (bool, int, np.integer, np.bool_)):
        attr.kind, attr.i64 = _ATTR_I64, int(value)
    elif isinstance(value, (float, np.floating)):
        attr.kind, attr.f64 = _ATTR_F64, float(value)
    elif isinstance(value, str):
        encoded = value.encode()
        keep.append(encoded)
        attr.kind, attr.str = _ATTR_STR, encoded
    else:
        raise TypeError(
            f"ffi_call: the attribute {name}={value!r} has no C form; attributes are ints, floats, "
            "strings and NumPy arrays."
        )
    return attr


def _ffi_call_impl(*args, target_name, result_avals, attributes, input_output_aliases, **_):
    handler = _handler(target_name)
    ins = [np.ascontiguousarray(np.asarray(x)) for x in args]
    outs = [np.empty(a.shape, a.dtype) for a in result_avals]
    arg_arrays = list(ins)
    for i, o in input_output_aliases:
        # The aliased result starts as the argument's values, and the target sees one buffer.
        outs[o] = ins[i].copy()
        arg_arrays[i] = outs[o]
    keep: list = []
    arg_bufs = (_Buffer * max(len(ins), 1))(*[_buffer(a, keep) for a in arg_arrays])
    ret_bufs = (_Buffer * max(len(outs), 1))(*[_buffer(o, keep) for o in outs])
    attrs = (_Attr * max(len(attributes), 1))(*[_attribute(k, v, keep) for k, v in attributes])
    error = ctypes.create_string_buffer(_ERROR_BYTES)
    call = _Call(
        1,
        arg_bufs,
        len(ins),
        ret_bufs,
        len(outs),
        attrs,
        len(attributes),
        ctypes.cast(error, ctypes.c_char_p),
        _ERROR_BYTES,
    )
    status = handler(ctypes.byref(call))
    if status != 0:
        message = error.value.decode(errors="replace") or "(no message)"
        raise JaxRuntimeError(f"ffi_call to {target_name!r} failed (status {status}): {message}")
    return [make_array(o, a.dtype, weak_type=False) for o, a in zip(outs, result_avals)]


def _ffi_call_abstract_eval(*avals, result_avals, **_):
    return list(result_avals)


def _not_differentiable(*_, target_name, **__):
    raise ValueError(
        f"The FFI call to `{target_name}` cannot be differentiated. "
        "You can use `jax.custom_jvp` or `jax.custom_vjp` to add support."
    )


def _ffi_call_jvp(primals, tangents, *, target_name, **_):
    _not_differentiable(target_name=target_name)


def _ffi_call_batch(vals, dims, *, axis_data, vmap_method, result_avals, **params):
    size = axis_data.size
    batched_avals = tuple(a.update(shape=(size,) + a.shape) for a in result_avals)
    if vmap_method in ("sequential", "sequential_unrolled"):
        from morphax._src.higher_order.loops import scan

        batched = [d is not None for d in dims]
        vals = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
        fixed = [v for v, b in zip(vals, batched) if not b]
        mapped = [v for v, b in zip(vals, batched) if b]

        def one(_, row):
            fixed_it, row_it = iter(fixed), iter(row)
            merged = [next(row_it) if b else next(fixed_it) for b in batched]
            out = ffi_call_p.bind(*merged, vmap_method=vmap_method, result_avals=result_avals, **params)
            return (), list(out)

        unroll = size if vmap_method == "sequential_unrolled" else 1
        _, outs = scan(one, (), mapped, length=size, unroll=max(unroll, 1))
        return list(outs), [0] * len(outs)
    vals = vectorized_operands("ffi_call", vals, dims, size, vmap_method)
    outs = ffi_call_p.bind(*vals, vmap_method=vmap_method, result_avals=batched_avals, **params)
    return list(outs), [0] * len(outs)


ffi_call_p.impl = _ffi_call_impl
ffi_call_p.abstract_eval = _ffi_call_abstract_eval
ffi_call_p.jvp = _ffi_call_jvp
ffi_call_p.transpose = lambda cts, *args, target_name, **_: _not_differentiable(target_name=target_name)
ffi_call_p.batch = _ffi_call_batch


# ------------------------------------------------------------------------ attributes as params


class HashableArray:
    """A NumPy array attribute, compared and hashed by value (equation params must hash)."""

    __slots__ = ("val",)

    def __init__(self, val):
        self.val = np.array(val, copy=True)
        self.val.setflags(write=False)

    def __hash__(self):
        return hash((self.val.shape, self.val.dtype.str, self.val.tobytes()))

    def __eq__(self, other):
        return (
            type(other) is HashableArray
            and self.val.shape == other.val.shape
            and self.val.dtype == other.val.dtype
            and bool(np.array_equal(self.val, other.val))
        )

    def __repr__(self):
        return repr(self.val)


def hashable_attributes(kwargs: dict) -> tuple:
    """The keyword attributes of a call, sorted by name, as hashable params."""
    out = []
    for name, value in sorted(kwargs.items()):
        if isinstance(value, np.ndarray):
            out.append((name, HashableArray(value)))
            continue
        try:
            hash(value)
        except TypeError as e:
            raise TypeError(f"Non-hashable keyword argument to ffi_call {name}: {value}") from e
        out.append((name, value))
    return tuple(out)


def result_aval(what: str, x):
    from morphax._src.core.avals import ShapedArray

    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(
            f"{what}: result_shape_dtypes must be objects with .shape and .dtype (e.g. "
            f"ShapeDtypeStruct), got {x!r} of type {type(x).__name__}"
        )
    return ShapedArray(tuple(int(d) for d in shape), _dtypes.canonicalize_dtype(dtype))


__all__ = [
    "INCLUDE_DIR",
    "VMAP_METHODS",
    "ffi_call_p",
    "ffi_effect",
    "hashable_attributes",
    "register_target",
    "result_aval",
]
