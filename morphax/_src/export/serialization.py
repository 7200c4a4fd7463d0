"""morphax's serialized Exported: a magic string, the format version, a JSON header (the
Exported's metadata, its StableHLO version and calling convention, pytrees, avals with dimension
expressions as text, symbolic constraints), then the module text, the pickled jaxpr and the
serialized VJPs (`vjp_order` of them), each a length-prefixed section.
"""

from __future__ import annotations

import json
import struct

import numpy as np

from morphax._src.core import effects as _effects
from morphax._src.core.avals import ShapedArray
from morphax._src.core.dtypes import float0
from morphax._src.export import jaxpr_pickle
from morphax._src.export.conventions import (
    DisabledSafetyCheck,
    maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version,
)
from morphax._src.export.dim_expr import is_symbolic_dim
from morphax._src.export.shape_specs import SymbolicScope, parse_expr
from morphax._src.export.tree_serialization import deserialize_treedef, serialize_treedef

MAGIC = b"MORPHAX-EXPORTED\n"
# The format's version: 1, the first. A reader refuses a newer one.
FORMAT_VERSION = 1
_EFFECTS = {"DebugEffect": _effects.debug_effect, "OrderedDebugEffect": _effects.ordered_debug_effect}


def _aval_to_json(aval) -> dict:
    dims = [str(d) if is_symbolic_dim(d) else int(d) for d in aval.shape]
    dtype = "float0" if aval.dtype == float0 else np.dtype(aval.dtype).name
    return {"shape": dims, "dtype": dtype, "weak_type": bool(aval.weak_type)}


def _aval_from_json(data: dict, scope) -> ShapedArray:
    shape = tuple(parse_expr(d, scope) if isinstance(d, str) else d for d in data["shape"])
    dtype = float0 if data["dtype"] == "float0" else np.dtype(data["dtype"])
    return ShapedArray(shape, dtype, data["weak_type"])


def _check_to_json(check) -> str:
    if check.is_custom_call() is None and str(check) != "platform":
        raise NotImplementedError(f"serializing DisabledSafetyCheck: {check}")
    return str(check)


def _scope_of(exp):
    for aval in (*exp.in_avals, *exp.out_avals):
        for d in aval.shape:
            if is_symbolic_dim(d):
                return d.scope
    return None


def _section(data: bytes) -> bytes:
    return struct.pack("<Q", len(data)) + data


def serialize(exp, vjp_order: int = 0) -> bytearray:
    """The bytes of `exp` (see the module docstring), with `vjp_order` orders of VJPs."""
    vjp = b""
    if vjp_order > 0:
        if not exp.has_vjp():
            raise ValueError("serialization of an Exported that does not have vjps of high-enough order")
        vjp = bytes(serialize(exp.vjp(), vjp_order - 1))
    scope = _scope_of(exp)
    header = {
        "format_version": FORMAT_VERSION,
        "stablehlo_version": list(exp._stablehlo_version),
        "calling_convention_version": exp.calling_convention_version,
        "fun_name": exp.fun_name,
        "in_tree": serialize_treedef(exp.in_tree),
        "out_tree": serialize_treedef(exp.out_tree),
        "in_avals": [_aval_to_json(a) for a in exp.in_avals],
        "out_avals": [_aval_to_json(a) for a in exp.out_avals],
        "symbolic_constraints": list(scope.constraints) if scope is not None else [],
        "nr_devices": exp.nr_devices,
        "platforms": list(exp.platforms),
        "ordered_effects": [type(e).__name__ for e in exp.ordered_effects],
        "unordered_effects": [type(e).__name__ for e in exp.unordered_effects],
        "disabled_safety_checks": [_check_to_json(c) for c in exp.disabled_safety_checks],
        "module_kept_var_idx": list(exp.module_kept_var_idx),
        "uses_global_constants": bool(exp.uses_global_constants),
        "backend": exp._backend,
        "lowering_error": exp._lowering_error,
        "vjp_order": vjp_order,
    }
    jaxpr = jaxpr_pickle.dumps(exp._jaxpr, exp.fun_name)
    head = json.dumps(header, sort_keys=True).encode("utf-8")
    parts = [MAGIC, struct.pack("<I", FORMAT_VERSION), _section(head)]
    parts += [_section(bytes(exp.mlir_module_serialized)), _section(jaxpr), _section(vjp)]
    return bytearray(b"".join(parts))


def _sections(blob: bytes, start: int, count: int) -> list:
    out, pos = [], start
    for _ in range(count):
        if pos + 8 > len(blob):
            raise ValueError("Cannot deserialize an Exported: the bytes are truncated.")
        (n,) = struct.unpack_from("<Q", blob, pos)
        out.append(blob[pos + 8 : pos + 8 + n])
        if len(out[-1]) != n:
            raise ValueError("Cannot deserialize an Exported: the bytes are truncated.")
        pos += 8 + n
    return out


def deserialize(blob, make, get_vjp):
    """The Exported in `blob`, built with `make` (Exported.unsharded); its `vjp` is the serialized
    one when there is one, else `get_vjp` (computed from the jaxpr)."""
    blob = bytes(blob)
    if not blob.startswith(MAGIC):
        raise ValueError(
            "Cannot deserialize an Exported: these bytes were not written by morphax's Exported.serialize."
        )
    (version,) = struct.unpack_from("<I", blob, len(MAGIC))
    if version > FORMAT_VERSION:
        raise ValueError(
            f"Cannot deserialize an Exported in format version {version}; this morphax reads versions up to "
            f"{FORMAT_VERSION}."
        )
    head, module, jaxpr, vjp = _sections(blob, len(MAGIC) + 4, 4)
    h = json.loads(head.decode("utf-8"))
    ccv = h["calling_convention_version"]
    if (
        not minimum_supported_calling_convention_version
        <= ccv
        <= maximum_supported_calling_convention_version
    ):
        raise ValueError(
            f"The exported function uses calling convention version {ccv}, outside the range of supported "
            f"versions [{minimum_supported_calling_convention_version}..{maximum_supported_calling_convention_version}]"
        )
    scope = SymbolicScope(h["symbolic_constraints"])
    in_avals = tuple(_aval_from_json(a, scope) for a in h["in_avals"])
    out_avals = tuple(_aval_from_json(a, scope) for a in h["out_avals"])
    checks = tuple(
        DisabledSafetyCheck.platform()
        if c == "platform"
        else DisabledSafetyCheck.custom_call(c.split(":", 1)[1])
        for c in h["disabled_safety_checks"]
    )
    stored_vjp = deserialize(vjp, make, get_vjp) if vjp else None
    return make(
        fun_name=h["fun_name"],
        in_tree=deserialize_treedef(h["in_tree"]),
        in_avals=in_avals,
        out_tree=deserialize_treedef(h["out_tree"]),
        out_avals=out_avals,
        nr_devices=h["nr_devices"],
        platforms=tuple(h["platforms"]),
        ordered_effects=tuple(_EFFECTS[e] for e in h["ordered_effects"]),
        unordered_effects=tuple(_EFFECTS[e] for e in h["unordered_effects"]),
        disabled_safety_checks=checks,
        mlir_module_serialized=module,
        calling_convention_version=ccv,
        module_kept_var_idx=tuple(h["module_kept_var_idx"]),
        uses_global_constants=h["uses_global_constants"],
        _get_vjp=(lambda _: stored_vjp) if stored_vjp is not None else get_vjp,
        _jaxpr=jaxpr_pickle.loads(jaxpr, scope),
        _backend=h["backend"],
        _lowering_error=h["lowering_error"],
        _stablehlo_version=tuple(h["stablehlo_version"]),
    )
