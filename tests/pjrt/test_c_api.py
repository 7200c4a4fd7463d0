"""The PJRT binding's pieces that need no plugin (so CI checks them everywhere): the ctypes mirrors
against the sizes and offsets of `xla/pjrt/c/pjrt_c_api.h` (API 0.114, measured by compiling the
header with gcc on x86-64 Linux), the hand-encoded CompileOptionsProto, the `@main` signature
reader, plugin discovery, and the refusal of libraries that are not usable plugins (small fake
plugins built with the system C compiler)."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

from morphax._src.pjrt import c_api, executable, plugin
from morphax._src.pjrt.buffer import buffer_type, numpy_dtype

# PJRT_STRUCT_SIZE(struct, last field) for every struct mirrored, printed by a C program including
# the 0.114 header.
HEADER_STRUCT_SIZES = {
    "Api_Version": 24,
    "Buffer_Delete_Args": 24,
    "Buffer_Destroy_Args": 24,
    "Buffer_Device_Args": 32,
    "Buffer_Dimensions_Args": 40,
    "Buffer_ElementType_Args": 28,
    "Buffer_IsDeleted_Args": 25,
    "Buffer_MemoryLayout": 76,
    "Buffer_MemoryLayout_Strides": 32,
    "Buffer_MemoryLayout_Tiled": 56,
    "Buffer_OnDeviceSizeInBytes_Args": 32,
    "Buffer_ReadyEvent_Args": 32,
    "Buffer_ToHostBuffer_Args": 56,
    "Buffer_UnsafePointer_Args": 32,
    "Client_AddressableDevices_Args": 40,
    "Client_BufferFromHostBuffer_Args": 120,
    "Client_Compile_Args": 56,
    "Client_Create_Args": 88,
    "Client_Destroy_Args": 24,
    "Client_Devices_Args": 40,
    "Client_PlatformName_Args": 40,
    "Client_PlatformVersion_Args": 40,
    "Client_ProcessIndex_Args": 28,
    "DeviceDescription_Attributes_Args": 40,
    "DeviceDescription_DebugString_Args": 40,
    "DeviceDescription_Id_Args": 28,
    "DeviceDescription_Kind_Args": 40,
    "DeviceDescription_ProcessIndex_Args": 28,
    "DeviceDescription_ToString_Args": 40,
    "Device_GetDescription_Args": 32,
    "Device_IsAddressable_Args": 25,
    "Device_LocalHardwareId_Args": 28,
    "Error_Destroy_Args": 24,
    "Executable_DeserializeAndLoad_Args": 72,
    "Error_GetCode_Args": 28,
    "Error_Message_Args": 40,
    "Event_Await_Args": 24,
    "Event_Destroy_Args": 24,
    "Event_Error_Args": 24,
    "Event_IsReady_Args": 25,
    "Executable_Destroy_Args": 24,
    "Executable_Fingerprint_Args": 40,
    "Executable_Name_Args": 40,
    "Executable_NumOutputs_Args": 32,
    "Executable_NumPartitions_Args": 32,
    "Executable_NumReplicas_Args": 32,
    "Executable_OutputDimensions_Args": 48,
    "Executable_OutputElementTypes_Args": 40,
    "Executable_Serialize_Args": 56,
    "ExecuteOptions": 144,
    "LoadedExecutable_AddressableDevices_Args": 40,
    "LoadedExecutable_Destroy_Args": 24,
    "LoadedExecutable_Execute_Args": 80,
    "LoadedExecutable_GetExecutable_Args": 32,
    "NamedValue": 56,
    "Plugin_Attributes_Args": 32,
    "Plugin_Initialize_Args": 16,
    "Program": 48,
}
# offsetof(PJRT_Api, PJRT_<name>) in the same header (the full table is 1144 bytes, 138 entries).
HEADER_TABLE_OFFSETS = {
    "Error_Destroy": 40,
    "Client_Create": 120,
    "Client_Compile": 200,
    "Client_BufferFromHostBuffer": 216,
    "Executable_Destroy": 360,
    "LoadedExecutable_Execute": 480,
    "Buffer_Destroy": 504,
    "Buffer_ToHostBuffer": 600,
    "Buffer_ReadyEvent": 616,
    "Executable_OutputElementTypes": 760,
    "Executable_OutputDimensions": 768,
    "Executable_Fingerprint": 792,
}

needs_64_bit = pytest.mark.skipif(
    ctypes.sizeof(ctypes.c_void_p) != 8, reason="sizes measured on a 64-bit ABI"
)


@needs_64_bit
def test_struct_sizes_match_the_header():
    mirrored = {
        name: getattr(c_api, name).STRUCT_SIZE
        for name in dir(c_api)
        if isinstance(getattr(c_api, name), type)
        and hasattr(getattr(c_api, name), "STRUCT_SIZE")
        and name != "Api"
    }
    assert mirrored == HEADER_STRUCT_SIZES


@needs_64_bit
def test_function_table_offsets_match_the_header():
    assert {name: c_api.table_offset(name) for name in HEADER_TABLE_OFFSETS} == HEADER_TABLE_OFFSETS
    # Header order, one pointer each, right after the three header fields.
    names = [name for name, _ in c_api.FUNCTIONS]
    assert [c_api.table_offset(n) for n in names] == [40 + 8 * i for i in range(len(names))]


def test_new_fills_struct_size():
    args = c_api.new(c_api.Buffer_IsDeleted_Args, buffer=1234)
    assert args.struct_size == c_api.Buffer_IsDeleted_Args.STRUCT_SIZE
    assert (args.buffer, args.extension_start, args.is_deleted) == (1234, None, False)


# ---------------------------------------------------------------- compile options


def _read_varint(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        shift += 7
        if not byte & 0x80:
            return value, at


def _fields(data):
    """(field number, wire type, value) of a protobuf message: a tiny independent decoder."""
    out, at = [], 0
    while at < len(data):
        key, at = _read_varint(data, at)
        if key & 7 == 0:
            value, at = _read_varint(data, at)
        else:
            assert key & 7 == 2
            size, at = _read_varint(data, at)
            value, at = data[at : at + size], at + size
        out.append((key >> 3, key & 7, value))
    return out


def test_compile_options_encoding():
    assert executable.compile_options() == bytes.fromhex("1a0420012801")
    ((field, wire, build),) = _fields(executable.compile_options(300, 2))
    assert (field, wire) == (3, 2)
    assert _fields(build) == [(4, 0, 300), (5, 0, 2), (6, 0, 1)]  # spmd on for several partitions
    ((_, _, build),) = _fields(executable.compile_options(2, 1, device_assignment=[[3], [1]]))
    fields = _fields(build)
    assert fields[:2] == [(4, 0, 2), (5, 0, 1)]
    assert fields[2][:2] == (9, 2)
    assignment = _fields(fields[2][2])
    assert assignment[:2] == [(1, 0, 2), (2, 0, 1)]
    assert _fields(assignment[2][2]) == [(1, 0, 3), (1, 0, 1)]
    with pytest.raises(ValueError, match="2 replicas x 1 partitions"):
        executable.compile_options(2, 1, device_assignment=[[0]])


def test_varint_of_negative_int64_is_ten_bytes():
    assert executable._varint(-1) == b"\xff" * 9 + b"\x01"
    assert executable._varint(127) == b"\x7f" and executable._varint(128) == b"\x80\x01"


# ---------------------------------------------------------------- the @main signature


def test_main_signature_pretty_form():
    text = """module @m { func.func public @main(%arg0: tensor<2x3xf32> {tf.aliasing_output = 0 : i32},
        %arg1: tensor<i1>, %arg2: tensor<4xcomplex<f64>>, %arg3: tensor<?x3xf32>, %arg4: !stablehlo.token,
        %arg5: tensor<0x7xui16>, %arg6: tensor<5xbf16>) -> (tensor<2x3xf32>) { } }"""
    assert executable.main_signature(text) == [
        ((2, 3), "float32"),
        ((), "bool"),
        ((4,), "complex128"),
        None,
        None,
        ((0, 7), "uint16"),
        ((5,), "bfloat16"),
    ]


def test_main_signature_generic_form():
    text = """"builtin.module"() ({
      "func.func"() <{function_type = (tensor<2xi32>) -> tensor<2xi32>, sym_name = "helper"}> ({}) : () -> ()
      "func.func"() <{function_type = (tensor<2xi64>, tensor<f16>) -> tensor<2xi64>, sym_name = "main"}> ({
      }) : () -> ()
    }) : () -> ()"""
    assert executable.main_signature(text) == [((2,), "int64"), ((), "float16")]
    assert executable.main_signature("module { }") is None
    assert executable.main_signature("module { func.func @main() -> () { } }") == []


# ---------------------------------------------------------------- dtypes


@pytest.mark.parametrize(
    "dtype, name",
    [("bool", "PRED"), ("int8", "S8"), ("uint64", "U64"), ("float16", "F16"), ("complex128", "C128")],
)
def test_dtype_table(dtype, name):
    kind = buffer_type(dtype)
    assert c_api.BUFFER_TYPES[kind] == name
    assert numpy_dtype(kind) == np.dtype(dtype)


def test_unsupported_dtypes():
    for dtype in (object, "U3", "datetime64[s]", "V4"):
        with pytest.raises(TypeError, match="no PJRT buffer type"):
            buffer_type(dtype)
    with pytest.raises(TypeError, match="TOKEN"):
        numpy_dtype(c_api.BUFFER_TYPES.index("TOKEN"))


# ---------------------------------------------------------------- discovery and refusal


def test_env_var_names_the_plugin(monkeypatch, tmp_path):
    monkeypatch.setenv(plugin.ENV_VAR, str(tmp_path / "nowhere.so"))
    assert plugin.find_plugin() == str(tmp_path / "nowhere.so")
    with pytest.raises(plugin.PluginError, match="does not exist"):
        plugin.load()


def test_without_env_var_the_cpu_package_or_nothing(monkeypatch):
    monkeypatch.delenv(plugin.ENV_VAR, raising=False)
    found = plugin.find_plugin()
    assert found is None or found.endswith(plugin.CPU_LIBRARY)
    monkeypatch.setattr(plugin, "CPU_PACKAGE", "morphax_no_such_package_here")
    assert plugin.find_plugin() is None
    with pytest.raises(plugin.PluginError, match="no PJRT plugin found"):
        plugin.load()


def test_libtpu_is_found_as_jax_finds_it_without_opening_it(monkeypatch, tmp_path):
    monkeypatch.setenv(plugin.TPU_ENV_VAR, str(tmp_path / "elsewhere" / "libtpu.so"))
    assert plugin.find_tpu_plugin() == str(tmp_path / "elsewhere" / "libtpu.so")
    monkeypatch.delenv(plugin.TPU_ENV_VAR)
    package = tmp_path / "site" / "fake_libtpu_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('finding the library must not import it')\n")
    (package / plugin.TPU_LIBRARY).write_bytes(b"")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(plugin, "TPU_PACKAGE", "fake_libtpu_pkg")
    assert plugin.find_tpu_plugin() == str(package / plugin.TPU_LIBRARY)
    monkeypatch.setattr(plugin, "TPU_PACKAGE", "morphax_no_such_package_here")
    assert plugin.find_tpu_plugin() is None


def test_a_library_without_get_pjrt_api_is_refused():
    import numpy.random._common as some_extension  # any loaded shared object that is not a plugin

    with pytest.raises(plugin.PluginError, match="exports no GetPjrtApi"):
        plugin.load(some_extension.__file__)


_FAKE_PLUGIN = r"""
#include <stddef.h>
struct version { size_t struct_size; void* ext; int major; int minor; };
static struct { size_t struct_size; void* ext; struct version v; void* fns[138]; } api;
void* GetPjrtApi(void) {
  api.struct_size = TABLE_SIZE;
  api.v.struct_size = sizeof(struct version);
  api.v.major = MAJOR;
  api.v.minor = MINOR;
  return &api;
}
"""


def _fake_plugin(tmp_path, major, minor, table_size):
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    source = tmp_path / "fake.c"
    source.write_text(_FAKE_PLUGIN)
    library = tmp_path / f"fake_{major}_{minor}_{table_size}.so"
    subprocess.run(
        [
            compiler,
            "-shared",
            "-fPIC",
            f"-DMAJOR={major}",
            f"-DMINOR={minor}",
            f"-DTABLE_SIZE={table_size}",
            str(source),
            "-o",
            str(library),
        ],
        check=True,
    )
    return os.fspath(library)


@pytest.mark.parametrize("major, minor", [(0, 56), (0, 33), (1, 0)])
def test_plugins_of_another_api_version_are_refused(tmp_path, major, minor):
    path = _fake_plugin(tmp_path, major, minor, 1144)
    with pytest.raises(
        plugin.PluginError, match=rf"speaks API {major}\.{minor}; morphax needs 0\.57 or newer"
    ):
        plugin.load(path)


def test_a_table_missing_entries_is_refused(tmp_path):
    path = _fake_plugin(tmp_path, 0, 115, 40 + 8 * 30)  # new version, short table of NULLs
    with pytest.raises(
        plugin.PluginError, match=r"lacks PJRT_Error_Destroy, .*PJRT_LoadedExecutable_Execute"
    ):
        plugin.load(path)


def test_the_package_imports_nothing_else_of_morphax():
    """pjrt/ sits beside core/ (DESIGN.md section 5): stdlib, NumPy (and ml_dtypes) only."""
    import ast
    import pathlib

    folder = pathlib.Path(plugin.__file__).parent
    offenders = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = ["." * node.level + (node.module or "")]
                if node.level > 1:
                    offenders.append(f"{path.name}: {names[0]}")
            else:
                continue
            for name in names:
                if name.split(".")[0] in ("morphax", "jax", "jaxlib"):
                    offenders.append(f"{path.name}: {name}")
    assert not offenders, offenders


def test_pjrt_error_carries_code_and_message_and_pickles():
    import pickle

    from morphax._src.pjrt import PjrtError

    err = PjrtError("INVALID_ARGUMENT", "bad shape", "PJRT_Client_Compile")
    assert isinstance(err, RuntimeError)
    assert str(err) == "PJRT_Client_Compile: INVALID_ARGUMENT: bad shape"
    back = pickle.loads(pickle.dumps(err))
    assert (back.code, back.message, back.where, str(back)) == (err.code, err.message, err.where, str(err))
