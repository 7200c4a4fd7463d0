"""`morphax.ffi` (JAX's `jax.ffi`): call C functions of your own from morphax programs.

A target is a C function following morphax's calling convention, declared in the header under
`include_dir()` (morphax_ffi.h): it takes one `MxFfiCall` (argument and result buffers, keyword
attributes) and returns 0 on success. Build it into a shared library, load that with ctypes, and
register the symbol::

    lib = ctypes.CDLL("./libscale.so")
    morphax.ffi.register_ffi_target("scale", morphax.ffi.pycapsule(lib.scale))
    y = morphax.ffi.ffi_call("scale", morphax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="expand_dims")(x, factor=2.0)

NB: JAX's targets follow XLA's FFI (C++ handlers declared with XLA_FFI_DEFINE_HANDLER); morphax's
convention is a plain C struct instead, so a target written for JAX needs a small C adapter. In a
C-backend program the generated code calls the target directly; elsewhere the call is a host step
(between device programs on the xla backend, or eagerly). `ffi_lowering` and `build_ffi_lowering_function`
build MLIR lowering rules in JAX; morphax lowers `ffi_call` itself, and they raise
NotImplementedError when their rule is used.
"""

from __future__ import annotations

from morphax._src.higher_order import ffi_call as _ffi
from morphax._src.higher_order.ffi_call import VMAP_METHODS as _VMAP_METHODS
from morphax._src.higher_order.ffi_call import ffi_call_p

_registered_types: dict = {}
_batch_partitionable: set = set()


def register_ffi_target(name: str, fn, platform: str = "cpu", api_version: int = 1, **kwargs) -> None:
    """Register `fn` (a PyCapsule from `pycapsule`, a ctypes function, or a dict with an
    "execute" entry) as the target `name`. morphax runs targets on the host: platform "cpu"."""
    del api_version, kwargs  # one calling convention (morphax_ffi.h)
    _ffi.register_target(name, fn, platform)


def register_ffi_type_id(name: str, obj, platform: str = "cpu") -> None:
    """Recorded for compatibility: morphax's convention has no user-defined FFI types."""
    _registered_types[(name, platform)] = obj


def register_ffi_type(name: str, type_info, platform: str = "cpu") -> None:
    """Recorded for compatibility: morphax's convention has no user-defined FFI types."""
    _registered_types[(name, platform)] = type_info


def register_ffi_target_as_batch_partitionable(name: str) -> None:
    """Recorded for compatibility: morphax does not partition ffi_call across devices."""
    _batch_partitionable.add(name)


def pycapsule(funcptr):
    """A PyCapsule wrapping a ctypes function pointer (what register_ffi_target takes)."""
    import ctypes

    destructor = ctypes.CFUNCTYPE(None, ctypes.py_object)
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, destructor)
    return new(ctypes.cast(funcptr, ctypes.c_void_p).value, None, destructor(0))


def include_dir() -> str:
    """The directory holding morphax_ffi.h, the calling convention of targets."""
    return _ffi.INCLUDE_DIR


def _no_mlir(what: str):
    def rule(*args, **kwargs):
        raise NotImplementedError(
            f"morphax.ffi.{what}: morphax lowers ffi_call itself (a host call); MLIR lowering rules "
            "for custom primitives are not supported. Call morphax.ffi.ffi_call from the primitive's "
            "implementation instead."
        )

    return rule


def build_ffi_lowering_function(call_target_name, *, operand_layouts=None, result_layouts=None, backend_config=None, skip_ffi_layout_processing=False, **lowering_args):  # fmt: skip
    """JAX's builder of an MLIR lowering for a custom call; its rule raises in morphax (above)."""
    return _no_mlir("build_ffi_lowering_function")


def ffi_lowering(call_target_name, *, operand_layouts=None, result_layouts=None, backend_config=None, skip_ffi_layout_processing=False, **lowering_args):  # fmt: skip
    """JAX's MLIR lowering rule for a custom call; raises in morphax when used (above)."""
    return _no_mlir("ffi_lowering")


def _check_layouts(what: str, layouts) -> None:
    """Only row-major layouts (None, or minor-to-major (n-1, ..., 0)) exist in morphax."""
    if layouts is None:
        return
    one = isinstance(layouts, tuple) and all(isinstance(d, int) for d in layouts)
    for layout in [layouts] if one else list(layouts):
        if layout is not None and tuple(layout) != tuple(range(len(layout)))[::-1]:
            raise NotImplementedError(
                f"ffi_call: {what}={layouts!r}: morphax passes row-major buffers only (layout None or "
                "(rank-1, ..., 0))."
            )


def ffi_call(
    target_name: str,
    result_shape_dtypes,
    *,
    has_side_effect: bool = False,
    vmap_method: str | None = None,
    input_layouts=None,
    output_layouts=None,
    input_output_aliases: dict | None = None,
    custom_call_api_version: int = 4,
    legacy_backend_config: str | None = None,
):
    """A function calling the target `target_name` on its positional array arguments, with its
    keyword arguments as attributes (ints, floats, strings, NumPy arrays). `result_shape_dtypes`:
    one ShapeDtypeStruct-like object (one result) or a sequence of them (a list or tuple of
    results). `vmap_method` says what vmap does: None (vmap raises), "sequential" (one call per
    element), "sequential_unrolled", "expand_dims" (unbatched arguments get a size-1 leading
    axis) or "broadcast_all" (every argument gets the batch axis). `input_output_aliases`
    ({input: output}) lets a result start as an argument's values, in the same buffer."""
    del custom_call_api_version, legacy_backend_config
    if vmap_method not in (*_VMAP_METHODS, None):
        raise ValueError(
            f"vmap_method must be on of the allowed methods {[*_VMAP_METHODS, None]}, but got: {vmap_method}"
        )
    _check_layouts("input_layouts", input_layouts)
    _check_layouts("output_layouts", output_layouts)
    multiple = isinstance(result_shape_dtypes, (list, tuple))
    results = list(result_shape_dtypes) if multiple else [result_shape_dtypes]
    result_avals = tuple(_ffi.result_aval("ffi_call", r) for r in results)

    def call(*args, **kwargs):
        from morphax._src.core.avals import get_aval

        in_avals = [get_aval(x) for x in args]
        aliases = []
        for i, o in sorted((input_output_aliases or {}).items()):
            i, o = int(i), int(o)
            if i >= len(args):
                raise ValueError(
                    f"input_output_aliases contains the mapping '{i}:{o}' with input index {i} outside the "
                    f"range [0, {len(args)})."
                )
            if o >= len(result_avals):
                raise ValueError(
                    f"input_output_aliases contains the mapping '{i}:{o}' with output index {o} outside the "
                    f"range [0, {len(result_avals)})."
                )
            a, r = in_avals[i], result_avals[o]
            if (a.shape, a.dtype) != (r.shape, r.dtype):
                raise ValueError(
                    f"input_output_aliases contains the mapping '{i}:{o}' referring to an input with abstract "
                    f"value {a.str_short()} and an output with a different abstract value {r.str_short()}."
                )
            aliases.append((i, o))
        outs = ffi_call_p.bind(
            *args,
            target_name=target_name,
            result_avals=result_avals,
            vmap_method=vmap_method,
            has_side_effect=bool(has_side_effect),
            input_output_aliases=tuple(aliases),
            attributes=_ffi.hashable_attributes(kwargs),
        )
        if multiple:
            return tuple(outs) if isinstance(result_shape_dtypes, tuple) else list(outs)
        return outs[0]

    return call


__all__ = [
    "build_ffi_lowering_function",
    "ffi_call",
    "ffi_lowering",
    "include_dir",
    "pycapsule",
    "register_ffi_target",
    "register_ffi_target_as_batch_partitionable",
    "register_ffi_type",
    "register_ffi_type_id",
]
