"""PjrtError: every PJRT_Error a plugin returns becomes one (its code named, its message copied, the
C error destroyed at once). Part of morphax._src.pjrt, which imports nothing else of morphax."""

from __future__ import annotations

import ctypes

from . import c_api


class PjrtError(RuntimeError):
    """An error reported by a PJRT plugin. `code` is the PJRT_Error_Code's name (for example
    "INVALID_ARGUMENT"), `message` the plugin's text."""

    def __init__(self, code: str, message: str, where: str = ""):
        self.code = code
        self.message = message
        self.where = where
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}{code}: {message}")

    def __reduce__(self):  # picklable, e.g. across a process pool
        return (type(self), (self.code, self.message, self.where))


def _code_name(value: int) -> str:
    if 0 <= value < len(c_api.ERROR_CODES):
        return c_api.ERROR_CODES[value]
    return f"CODE_{value}"


def consume(fns, error: int, where: str = "") -> PjrtError:
    """The PjrtError for the PJRT_Error* `error` (not NULL); destroys `error`. `fns` maps table
    names to bound functions (a Plugin's `fn`)."""
    try:
        message_args = c_api.new(c_api.Error_Message_Args, error=error)
        fns["Error_Message"](ctypes.byref(message_args))
        message = ""
        if message_args.message and message_args.message_size:
            raw = ctypes.string_at(message_args.message, message_args.message_size)
            message = raw.decode("utf-8", "replace")
        code_args = c_api.new(c_api.Error_GetCode_Args, error=error)
        nested = fns["Error_GetCode"](ctypes.byref(code_args))
        if nested:  # the plugin could not say; never leak that error either
            fns["Error_Destroy"](ctypes.byref(c_api.new(c_api.Error_Destroy_Args, error=nested)))
            code = "UNKNOWN"
        else:
            code = _code_name(code_args.code)
    finally:
        fns["Error_Destroy"](ctypes.byref(c_api.new(c_api.Error_Destroy_Args, error=error)))
    return PjrtError(code, message, where)
