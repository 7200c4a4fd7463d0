"""Compiled programs: StableHLO (MLIR text or bytecode) compiled through PJRT_Client_Compile with a
hand-encoded CompileOptionsProto, argument checks against the module's `@main` signature, execution
with donation, and the PJRT executables freed when the Python object goes. Part of
morphax._src.pjrt, which imports nothing else of morphax."""

from __future__ import annotations

import ctypes
import re
import sys

from . import c_api
from .buffer import Buffer, numpy_dtype
from .plugin import count

# ---------------------------------------------------------------- CompileOptionsProto


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int64 fields: negative values are ten-byte two's complement
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field_varint(number: int, value: int) -> bytes:
    return _varint(number << 3 | 0) + _varint(value)


def _field_bytes(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _device_assignment(assignment) -> bytes:
    """An xla.DeviceAssignmentProto (xla/xla_data.proto): 1 replica_count, 2 computation_count,
    3 repeated ComputationDevice {1 repeated replica_device_ids}, one per partition. `assignment`
    is [replica][partition] -> device id."""
    replicas, partitions = len(assignment), len(assignment[0])
    out = _field_varint(1, replicas) + _field_varint(2, partitions)
    for p in range(partitions):
        ids = b"".join(_field_varint(1, int(assignment[r][p])) for r in range(replicas))
        out += _field_bytes(3, ids)
    return out


def compile_options(
    num_replicas: int = 1, num_partitions: int = 1, use_spmd_partitioning=None, device_assignment=None
) -> bytes:
    """A serialized xla.CompileOptionsProto (xla/pjrt/proto/compile_options.proto) holding only
    field 3, `executable_build_options` (an ExecutableBuildOptionsProto), whose fields 4
    `num_replicas` and 5 `num_partitions` are always written (int64 varints), 6
    `use_spmd_partitioning` (bool) when asked or when there are several partitions, and 9
    `device_assignment` when given ([replica][partition] -> device id). Never empty: an empty
    options message aborts the XLA CPU plugin's process. (1, 1) gives 1a 04 20 01 28 01."""
    build = _field_varint(4, num_replicas) + _field_varint(5, num_partitions)
    if use_spmd_partitioning is None:
        use_spmd_partitioning = num_partitions > 1
    if use_spmd_partitioning:
        build += _field_varint(6, 1)
    if device_assignment is not None:
        if len(device_assignment) != num_replicas or any(
            len(row) != num_partitions for row in device_assignment
        ):
            raise ValueError(
                f"device_assignment must be {num_replicas} replicas x {num_partitions} partitions of device ids"
            )
        build += _field_bytes(9, _device_assignment(device_assignment))
    return _field_bytes(3, build)


# ---------------------------------------------------------------- the @main signature

# MLIR element type -> NumPy dtype name.
_DTYPE_OF_MLIR = {
    "i1": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "ui8": "uint8",
    "ui16": "uint16",
    "ui32": "uint32",
    "ui64": "uint64",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "complex<f32>": "complex64",
    "complex<f64>": "complex128",
    "f8E5M2": "float8_e5m2",
    "f8E4M3FN": "float8_e4m3fn",
    "f8E4M3B11FNUZ": "float8_e4m3b11fnuz",
    "f8E5M2FNUZ": "float8_e5m2fnuz",
    "f8E4M3FNUZ": "float8_e4m3fnuz",
    "f8E4M3": "float8_e4m3",
    "f8E3M4": "float8_e3m4",
    "f8E8M0FNU": "float8_e8m0fnu",
}
_OPEN, _CLOSE = "(<[{", ")>]}"


def _matching(text: str, start: int) -> int:
    """Index just past the bracket that closes the one at `start` (-1 if unbalanced). `->` is not
    a bracket."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE and not (c == ">" and text[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _split_top(text: str) -> list:
    parts, depth, begin = [], 0, 0
    for i, c in enumerate(text):
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE and not (c == ">" and text[i - 1] == "-"):
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[begin:i])
            begin = i + 1
    parts.append(text[begin:])
    return [p.strip() for p in parts if p.strip()]


def _tensor_aval(text: str):
    """(shape, dtype name) of a static `tensor<...>` type at the start of `text`, else None."""
    if not text.startswith("tensor<"):
        return None
    end = _matching(text, len("tensor"))
    if end < 0:
        return None
    body = _split_top(text[len("tensor<") : end - 1])[0]  # drop an encoding after a comma
    dims = []
    while True:
        m = re.match(r"(\d+)x", body)
        if not m:
            break
        dims.append(int(m.group(1)))
        body = body[m.end() :]
    dtype = _DTYPE_OF_MLIR.get(body.strip())
    return None if dtype is None else (tuple(dims), dtype)  # a dynamic `?` dim leaves body unknown


def _argument_types(text: str):
    """The argument type strings of the module's `main` function, or None if not found. Reads the
    pretty form `func.func public @main(%arg0: tensor<...> {attrs}, ...)` and the generic form's
    `function_type = (tensor<...>, ...) -> ...` next to `sym_name = "main"`."""
    m = re.search(r"@main\s*\(", text)
    if m:
        end = _matching(text, m.end() - 1)
        if end < 0:
            return None
        types = []
        for arg in _split_top(text[m.end() : end - 1]):
            _, colon, rest = arg.partition(":")
            types.append(rest.strip() if colon else arg)
        return types
    for m in re.finditer(r"function_type\s*=\s*\(", text):
        start = text.rfind("<{", 0, m.start())
        close = _matching(text, start) if start >= 0 else -1
        if close < 0 or not re.search(r'sym_name\s*=\s*"main"', text[start:close]):
            continue
        end = _matching(text, m.end() - 1)
        return _split_top(text[m.end() : end - 1]) if end > 0 else None
    return None


def main_signature(text: str):
    """One (shape, dtype name) per argument of `main` (None for an argument that is not a static
    tensor of a known element type), or None when the signature cannot be read."""
    types = _argument_types(text)
    return None if types is None else [_tensor_aval(t) for t in types]


# ---------------------------------------------------------------- executables


class Executable:
    """A program compiled for a Client's devices. `execute(buffers)` runs it on one device and
    returns its outputs as Buffers (possibly still being computed: reading one waits)."""

    def __init__(self, client, loaded: int, signature=None):
        self.client = client
        self._loaded = loaded
        self._executable = 0
        count("loaded_executables", 1)
        self.in_avals = signature  # [(shape, dtype name) | None] or None
        plugin = client.plugin
        get = c_api.new(c_api.LoadedExecutable_GetExecutable_Args, loaded_executable=loaded)
        plugin.call("LoadedExecutable_GetExecutable", get)
        self._executable = get.executable
        count("executables", 1)
        n = c_api.new(c_api.Executable_NumOutputs_Args, executable=self._executable)
        plugin.call("Executable_NumOutputs", n)
        self.num_outputs = int(n.num_outputs)
        self.out_shapes, self.out_dtypes = self._output_avals()
        self.addressable_devices = self._addressable_devices()

    @classmethod
    def compile(
        cls,
        client,
        program,
        num_replicas=1,
        num_partitions=1,
        use_spmd_partitioning=None,
        device_assignment=None,
    ):
        text = program if isinstance(program, str) else None
        code = program.encode() if isinstance(program, str) else bytes(program)
        fmt = b"mlir"
        program_struct = c_api.new(
            c_api.Program,
            code=ctypes.cast(ctypes.c_char_p(code), ctypes.c_void_p),
            code_size=len(code),
            format=fmt,
            format_size=len(fmt),
        )
        options = compile_options(num_replicas, num_partitions, use_spmd_partitioning, device_assignment)
        args = c_api.new(
            c_api.Client_Compile_Args,
            client=client._ptr,
            program=ctypes.pointer(program_struct),
            compile_options=ctypes.cast(ctypes.c_char_p(options), ctypes.c_void_p),
            compile_options_size=len(options),
        )
        client.plugin.call("Client_Compile", args)
        return cls(client, args.executable, None if text is None else main_signature(text))

    @classmethod
    def deserialize(cls, client, data: bytes, text: str | None = None):
        """The executable `serialize()` gave, loaded on `client` (a plugin of the same platform and
        version). `text`, the module it was compiled from, gives the argument checks `compile`
        has."""
        if not client.plugin.has("Executable_DeserializeAndLoad"):
            raise NotImplementedError(f"the {client.platform_name} plugin cannot load serialized executables")
        data = bytes(data)
        args = c_api.new(
            c_api.Executable_DeserializeAndLoad_Args,
            client=client._ptr,
            serialized_executable=ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p),
            serialized_executable_size=len(data),
        )
        client.plugin.call("Executable_DeserializeAndLoad", args)
        return cls(client, args.loaded_executable, None if text is None else main_signature(text))

    # -- metadata

    def _output_avals(self):
        plugin = self.client.plugin
        shapes = dtypes = None
        if plugin.has("Executable_OutputDimensions"):
            args = c_api.new(c_api.Executable_OutputDimensions_Args, executable=self._executable)
            plugin.call("Executable_OutputDimensions", args)
            shapes, at = [], 0
            for i in range(args.num_outputs):
                rank = args.dim_sizes[i]
                shapes.append(tuple(args.dims[at + j] for j in range(rank)))
                at += rank
            shapes = tuple(shapes)
        if plugin.has("Executable_OutputElementTypes"):
            args = c_api.new(c_api.Executable_OutputElementTypes_Args, executable=self._executable)
            plugin.call("Executable_OutputElementTypes", args)
            try:
                dtypes = tuple(numpy_dtype(args.output_types[i]) for i in range(args.num_output_types))
            except TypeError:
                dtypes = None  # a token or sub-byte output: read each buffer's own type instead
        return shapes, dtypes

    def _addressable_devices(self):
        plugin = self.client.plugin
        if not plugin.has("LoadedExecutable_AddressableDevices"):
            return None
        args = c_api.new(c_api.LoadedExecutable_AddressableDevices_Args, executable=self._loaded)
        plugin.call("LoadedExecutable_AddressableDevices", args)
        return tuple(
            self.client._device_of(args.addressable_devices[i]) for i in range(args.num_addressable_devices)
        )

    def _string(self, entry: str, struct, field: str) -> str | None:
        plugin = self.client.plugin
        if not plugin.has(entry):
            return None
        args = c_api.new(struct, executable=self._executable)
        plugin.call(entry, args)
        return ctypes.string_at(getattr(args, field), getattr(args, field + "_size")).decode(
            "utf-8", "replace"
        )

    @property
    def name(self) -> str | None:
        return self._string("Executable_Name", c_api.Executable_Name_Args, "executable_name")

    @property
    def fingerprint(self) -> str | None:
        try:
            return self._string(
                "Executable_Fingerprint", c_api.Executable_Fingerprint_Args, "executable_fingerprint"
            )
        except RuntimeError:
            return None  # "may not be implemented by all platforms"

    def _count_of(self, entry: str, struct, field: str) -> int | None:
        plugin = self.client.plugin
        if not plugin.has(entry):
            return None
        args = c_api.new(struct, executable=self._executable)
        plugin.call(entry, args)
        return int(getattr(args, field))

    @property
    def num_replicas(self) -> int | None:
        return self._count_of("Executable_NumReplicas", c_api.Executable_NumReplicas_Args, "num_replicas")

    @property
    def num_partitions(self) -> int | None:
        return self._count_of(
            "Executable_NumPartitions", c_api.Executable_NumPartitions_Args, "num_partitions"
        )

    def serialize(self) -> bytes:
        """The plugin's own serialization of the compiled program (not stable across versions)."""
        args = c_api.new(c_api.Executable_Serialize_Args, executable=self._executable)
        self.client.plugin.call("Executable_Serialize", args)
        try:
            return ctypes.string_at(args.serialized_bytes, args.serialized_bytes_size)
        finally:
            if args.serialized_executable_deleter:
                c_api.SerializedExecutableDeleter(args.serialized_executable_deleter)(
                    args.serialized_executable
                )

    # -- running

    def _check(self, arg_lists, donate) -> frozenset:
        donate = frozenset(int(i) for i in donate)
        for args in arg_lists:
            for i, b in enumerate(args):
                if not isinstance(b, Buffer):
                    raise TypeError(f"argument {i} is a {type(b).__name__}, not a pjrt Buffer")
                if b.client is not self.client:
                    raise ValueError(f"argument {i} lives on another client")
                if b.is_deleted():
                    raise ValueError(f"argument {i} was deleted (or donated to an earlier call)")
            if self.in_avals is not None:
                if len(args) != len(self.in_avals):
                    raise TypeError(f"the program takes {len(self.in_avals)} arguments, got {len(args)}")
                for i, (b, aval) in enumerate(zip(args, self.in_avals)):
                    if aval is not None and (b.shape != aval[0] or b.dtype.name != aval[1]):
                        raise ValueError(
                            f"argument {i}: the program expects {aval[1]}{list(aval[0])}, "
                            f"got a buffer of {b.dtype.name}{list(b.shape)}"
                        )
            bad = [i for i in donate if not 0 <= i < len(args)]
            if bad:
                raise ValueError(f"donate: no argument {bad[0]} among {len(args)}")
            for i in donate:
                if sum(b is args[i] for b in args) > 1:
                    raise ValueError(f"argument {i} is donated but passed more than once")
        return donate

    def _run(self, arg_lists, donate, device=None):
        donate = self._check(arg_lists, donate)
        num_devices, num_args = len(arg_lists), len(arg_lists[0])
        pointer_list = ctypes.POINTER(ctypes.c_void_p)
        inputs = [(ctypes.c_void_p * max(num_args, 1))(*[b._ptr for b in args]) for args in arg_lists]
        outputs = [(ctypes.c_void_p * max(self.num_outputs, 1))() for _ in arg_lists]
        input_lists = (pointer_list * num_devices)(*[ctypes.cast(a, pointer_list) for a in inputs])
        output_lists = (pointer_list * num_devices)(*[ctypes.cast(a, pointer_list) for a in outputs])
        kept = [i for i in range(num_args) if i not in donate]
        non_donatable = (ctypes.c_int64 * max(len(kept), 1))(*kept)
        options = c_api.new(
            c_api.ExecuteOptions,
            non_donatable_input_indices=ctypes.cast(non_donatable, ctypes.POINTER(ctypes.c_int64)),
            num_non_donatable_input_indices=len(kept),
        )
        args = c_api.new(
            c_api.LoadedExecutable_Execute_Args,
            executable=self._handle(),
            options=ctypes.pointer(options),
            argument_lists=input_lists,
            num_devices=num_devices,
            num_args=num_args,
            output_lists=output_lists,
            execute_device=device._ptr if device is not None else None,
        )
        self.client.plugin.call("LoadedExecutable_Execute", args)
        shapes, dtypes = self.out_shapes, self.out_dtypes
        results = []
        for out in outputs:
            results.append(
                [
                    Buffer(
                        self.client,
                        out[k],
                        shapes[k] if shapes is not None and num_devices == 1 else None,
                        dtypes[k] if dtypes is not None else None,
                    )
                    for k in range(self.num_outputs)
                ]
            )
        return results

    def execute(self, buffers, donate=(), device=None) -> list:
        """Runs the program once on one device and returns its outputs (a list of Buffers).
        `donate` lists argument indices whose buffers the program may consume (they read as deleted
        afterwards if it did); all others are marked non-donatable. `device` launches a
        multi-device program on one of its devices only (where the plugin supports that); a
        one-device program runs where it was compiled for (`Client.compile(device=...)`)."""
        devices = self.addressable_devices
        if device is not None and devices is not None and device not in devices:
            raise ValueError(f"{device!r} is not among this executable's devices {devices}")
        if device is None and devices is not None and len(devices) > 1:
            raise ValueError(
                f"this executable runs on {len(devices)} devices: use execute_replicated (or pass device=)"
            )
        return self._run([list(buffers)], donate, device)[0]

    def execute_replicated(self, per_device_buffers, donate=()) -> list:
        """Runs a multi-device program: one argument list per addressable device (in the order of
        `addressable_devices`), one output list per device back."""
        arg_lists = [list(args) for args in per_device_buffers]
        devices = self.addressable_devices
        if devices is not None and len(arg_lists) != len(devices):
            raise ValueError(
                f"this executable runs on {len(devices)} devices, got {len(arg_lists)} argument lists"
            )
        if len({len(args) for args in arg_lists}) > 1:
            raise ValueError("every device needs the same number of arguments")
        return self._run(arg_lists, donate)

    # -- lifetime

    def _handle(self) -> int:
        if not self._loaded:
            raise RuntimeError("the executable was destroyed")
        return self._loaded

    def _destroy(self) -> None:
        plugin = self.client.plugin
        exe, self._executable = self._executable, 0
        loaded, self._loaded = self._loaded, 0
        errors = []
        if exe:
            errors.append(
                plugin.fn["Executable_Destroy"](
                    ctypes.byref(c_api.new(c_api.Executable_Destroy_Args, executable=exe))
                )
            )
            count("executables", -1)
        if loaded:
            errors.append(
                plugin.fn["LoadedExecutable_Destroy"](
                    ctypes.byref(c_api.new(c_api.LoadedExecutable_Destroy_Args, executable=loaded))
                )
            )
            count("loaded_executables", -1)
        raised = [plugin.error(e, "PJRT_Executable_Destroy") for e in errors if e]
        if raised:
            raise raised[0]

    def __del__(self):
        if (self._loaded or self._executable) and not sys.is_finalizing():
            self._destroy()

    def __repr__(self):
        return f"<pjrt Executable {self.name or ''} in={self.in_avals} outputs={self.num_outputs}>"
