"""`ffi_call` inside native segments: the generated C calls the user's registered target directly
(higher_order/ffi_call.py defines the primitive and the calling convention, morphax_ffi.h).

A library with ffi calls carries a table of target pointers, filled right after it is loaded
(`bind`: by target name, from the registry as it is then), and a thread-local error slot. A call
that fails (or finds no target registered) stops its segment, and the loops around it, at once;
the launcher then raises JaxRuntimeError with the target's message (`checked`), as the host call
does.
"""

from __future__ import annotations

import ctypes
import math
import pathlib

import numpy as np

MAX_TARGETS = 64  # distinct targets one library calls
_HEADER = (
    pathlib.Path(__file__).resolve().parents[3] / "higher_order" / "ffi_include" / "morphax_ffi.h"
).read_text()
_DTYPE_NAMES = {
    "bool": "MX_FFI_BOOL", "int8": "MX_FFI_S8", "int16": "MX_FFI_S16", "int32": "MX_FFI_S32",
    "int64": "MX_FFI_S64", "uint8": "MX_FFI_U8", "uint16": "MX_FFI_U16", "uint32": "MX_FFI_U32",
    "uint64": "MX_FFI_U64", "float16": "MX_FFI_F16", "bfloat16": "MX_FFI_BF16", "float32": "MX_FFI_F32",
    "float64": "MX_FFI_F64", "complex64": "MX_FFI_C64", "complex128": "MX_FFI_C128",
}  # fmt: skip

SOURCE = (
    _HEADER
    + f"\n#define MX_FFI_MAX_TARGETS {MAX_TARGETS}\n"
    + r"""
#include <stdio.h>

/* The targets this library calls, by index (mx_set_ffi_target, right after loading), and the
 * failure of the last call on this thread (mx_ffi_take_error). */
static void *mx_ffi_targets[MX_FFI_MAX_TARGETS];
static _Thread_local char mx_ffi_error[1024];
static _Thread_local int32_t mx_ffi_status;
static _Thread_local const char *mx_ffi_failed_target;

void mx_set_ffi_target(int64_t k, void *fn) {
  if (k >= 0 && k < (int64_t)(sizeof mx_ffi_targets / sizeof mx_ffi_targets[0])) mx_ffi_targets[k] = fn;
}

/* 0 when no call failed since the last take; else the status, with the target's name and message
 * copied into `name` and `message` (NUL-terminated, truncated to their sizes). */
int32_t mx_ffi_take_error(char *name, int64_t name_size, char *message, int64_t message_size) {
  int32_t status = mx_ffi_status;
  if (status != 0) {
    snprintf(name, (size_t)name_size, "%s", mx_ffi_failed_target ? mx_ffi_failed_target : "?");
    snprintf(message, (size_t)message_size, "%s", mx_ffi_error);
  }
  mx_ffi_status = 0;
  mx_ffi_error[0] = '\0';
  return status;
}

/* Call target k (named `name`) once; 0 when it failed (the error slot says why). */
static int mx_ffi_run(int64_t k, const char *name, const MxFfiBuffer *args, int64_t n_args, MxFfiBuffer *rets,
                      int64_t n_rets, const MxFfiAttr *attrs, int64_t n_attrs) {
  if (mx_ffi_status != 0) return 0;
  MxFfiHandler fn = (MxFfiHandler)mx_ffi_targets[k];
  mx_ffi_failed_target = name;
  if (fn == NULL) {
    snprintf(mx_ffi_error, sizeof mx_ffi_error, "no FFI target named '%s' is registered for the CPU", name);
    mx_ffi_status = -1;
    return 0;
  }
  mx_ffi_error[0] = '\0';
  MxFfiCall call = {MORPHAX_FFI_VERSION, args, n_args, rets, n_rets, attrs, n_attrs, mx_ffi_error,
                    (int64_t)sizeof mx_ffi_error};
  int32_t status = fn(&call);
  if (status != 0) {
    mx_ffi_status = status;
    return 0;
  }
  return 1;
}
"""
)


def is_ffi(eqn) -> bool:
    return eqn.primitive.name == "ffi_call"


def ffi_form(eqn) -> dict | None:
    """The native form of an ffi_call equation (no working memory), or None for a host step:
    every operand and result of a dtype the convention names, attributes it can spell in C."""
    if not is_ffi(eqn):
        return None
    avals = [v.aval for v in (*eqn.invars, *eqn.outvars)]
    if any(np.dtype(a.dtype).name not in _DTYPE_NAMES for a in avals):
        return None
    if any(_attribute_c(name, value) is None for name, value in eqn.params["attributes"]):
        return None
    return {"kind": "ffi", "scratch": 0}


def targets(segments) -> dict:
    """target name -> its index in the library's table, in order of first call."""
    table: dict = {}
    for segment in segments:
        for step in segment.steps:
            eqn = getattr(step, "eqn", None)
            if eqn is not None and is_ffi(eqn) and eqn.params["target_name"] not in table:
                table[eqn.params["target_name"]] = len(table)
    return table


def _c_string(text: str) -> str:
    out = []
    for byte in text.encode():
        ch = chr(byte)
        out.append(ch if 32 <= byte < 127 and ch not in '"\\?' else f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _c_double(value: float) -> str:
    if math.isnan(value):
        return '__builtin_nan("")'
    if math.isinf(value):
        return "__builtin_inf()" if value > 0 else "(-__builtin_inf())"
    return float(value).hex()


def _attribute_c(name: str, value) -> str | None:
    """The MxFfiAttr initializer of one attribute (arrays: None here; see `render_call`)."""
    from morphax._src.higher_order.ffi_call import HashableArray

    head = f"{_c_string(name)}, "
    if isinstance(value, HashableArray):
        return "array" if np.dtype(value.val.dtype).name in _DTYPE_NAMES else None
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        v = int(value)
        if not -(2**63) <= v < 2**63:
            return None
        return "{" + head + f"MX_FFI_ATTR_I64, INT64_C({v}), 0.0, NULL, {{0}}" + "}"
    if isinstance(value, (float, np.floating)):
        return "{" + head + f"MX_FFI_ATTR_F64, 0, {_c_double(float(value))}, NULL, {{0}}" + "}"
    if isinstance(value, str):
        return "{" + head + f"MX_FFI_ATTR_STR, 0, 0.0, {_c_string(value)}, {{0}}" + "}"
    return None


def render_call(eqn, where: dict, table: dict, comment: str, static_bytes) -> list:
    """C lines making one ffi_call of a segment: buffers over the segment's pointers, attributes
    as constants, then the call; a failure returns from the segment function."""
    params = eqn.params
    name = params["target_name"]
    lines = [f"  /* {comment} */", "  {"]
    buffers = {"args": [], "rets": []}
    dims = 0
    for kind, variables in (("args", eqn.invars), ("rets", eqn.outvars)):
        for v in variables:
            shape = tuple(v.aval.shape)
            lines.append(f"    const int64_t d{dims}[] = {{{', '.join(map(str, shape)) or '0'}}};")
            pointer = where[id(v)]
            buffers[kind].append(
                f"{{(void *){pointer}, d{dims}, {len(shape)}, {_DTYPE_NAMES[np.dtype(v.aval.dtype).name]}}}"
            )
            dims += 1
    # An aliased result starts as its argument's values, and the target sees one buffer.
    for i, o in params["input_output_aliases"]:
        src, dst = eqn.invars[i], eqn.outvars[o]
        lines.append(f"    memcpy({where[id(dst)]}, {where[id(src)]}, {dst.aval.nbytes});")
        buffers["args"][i] = buffers["rets"][o]
    attrs = []
    for k, (attr_name, value) in enumerate(params["attributes"]):
        spelled = _attribute_c(attr_name, value)
        if spelled == "array":
            array = np.ascontiguousarray(value.val)
            lines.append(f"    {static_bytes(f'attr{k}', array)}")
            lines.append(f"    const int64_t ad{k}[] = {{{', '.join(map(str, array.shape)) or '0'}}};")
            code = _DTYPE_NAMES[array.dtype.name]
            spelled = (
                f"{{{_c_string(attr_name)}, MX_FFI_ATTR_ARRAY, 0, 0.0, NULL, "
                f"{{(void *)attr{k}, ad{k}, {array.ndim}, {code}}}}}"
            )
        attrs.append(spelled)
    lines.append(f"    const MxFfiBuffer args[] = {{{', '.join(buffers['args']) or '{0}'}}};")
    lines.append(f"    MxFfiBuffer rets[] = {{{', '.join(buffers['rets']) or '{0}'}}};")
    lines.append(f"    const MxFfiAttr attrs[] = {{{', '.join(attrs) or '{0}'}}};")
    lines.append(
        f"    if (!mx_ffi_run({table[name]}, {_c_string(name)}, args, {len(eqn.invars)}, rets, "
        f"{len(eqn.outvars)}, attrs, {len(attrs)})) return;"
    )
    lines.append("  }")
    return lines


def bind(lib, table: dict) -> None:
    """Fill the loaded library's target table from the registry (unregistered: NULL, an error
    when called)."""
    from morphax._src.compiler.backends.c import build
    from morphax._src.higher_order.ffi_call import registered_address

    if len(table) > MAX_TARGETS:
        raise ValueError(
            f"a program may call at most {MAX_TARGETS} distinct ffi targets, this one calls {len(table)}"
        )
    set_target = build.function(lib, "mx_set_ffi_target")
    set_target.argtypes = [ctypes.c_int64, ctypes.c_void_p]
    set_target.restype = None
    for name, k in table.items():
        set_target(k, registered_address(name))


def checked(run, lib):
    """`run` (a segment launcher), raising the failure of an ffi call it made."""
    from morphax._src.compiler.backends.c import build
    from morphax._src.errors import JaxRuntimeError

    take = build.function(lib, "mx_ffi_take_error")
    take.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_int64]
    take.restype = ctypes.c_int32

    def call(*inputs, **kwargs):
        out = run(*inputs, **kwargs)
        name, message = ctypes.create_string_buffer(256), ctypes.create_string_buffer(1024)
        status = take(name, 256, message, 1024)
        if status == -1:
            raise JaxRuntimeError(
                f"ffi_call: {message.value.decode(errors='replace')} (register it with "
                "morphax.ffi.register_ffi_target before calling the program)"
            )
        if status != 0:
            raise JaxRuntimeError(
                f"ffi_call to {name.value.decode(errors='replace')!r} failed (status {status}): "
                f"{message.value.decode(errors='replace') or '(no message)'}"
            )
        return out

    return call
