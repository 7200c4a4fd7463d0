"""ctypes mirrors of the PJRT C API (`xla/pjrt/c/pjrt_c_api.h`, laid out as of API 0.114): the
argument structs this package passes, the enums it reads and the `PJRT_Api` function table in header
order. Facts about the ABI only, no behaviour; `plugin.py` binds the table. The pjrt package imports
nothing else of morphax."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_bool, c_char_p, c_float, c_int, c_int64, c_size_t, c_void_p

# The function table was reordered in API 0.57; everything here follows the later order.
MIN_MINOR_VERSION = 57
MAJOR_VERSION = 0
HEADER_MINOR_VERSION = 114

_c_enum = c_int  # C enums are ints on every ABI PJRT plugins ship for


def _struct(name: str, *fields, prefix: bool = True):
    """A ctypes Structure for a PJRT args struct. `STRUCT_SIZE` is the header's PJRT_STRUCT_SIZE:
    the end of the last field, without the trailing padding `sizeof` would add."""
    head = [("struct_size", c_size_t), ("extension_start", c_void_p)] if prefix else []
    cls = type(name, (ctypes.Structure,), {"_fields_": head + list(fields)})
    last = getattr(cls, cls._fields_[-1][0])
    cls.STRUCT_SIZE = last.offset + last.size
    return cls


def new(cls, **values):
    """An instance of a PJRT struct with `struct_size` filled in (the rest zeroed: ctypes clears
    new structures, so optional pointers start as NULL)."""
    return cls(struct_size=cls.STRUCT_SIZE, **values)


# ---------------------------------------------------------------- enums

ERROR_CODES = (
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)

# PJRT_Buffer_Type, by value (index 0 is INVALID).
BUFFER_TYPES = (
    "INVALID",
    "PRED",
    "S8",
    "S16",
    "S32",
    "S64",
    "U8",
    "U16",
    "U32",
    "U64",
    "F16",
    "F32",
    "F64",
    "BF16",
    "C64",
    "C128",
    "F8E5M2",
    "F8E4M3FN",
    "F8E4M3B11FNUZ",
    "F8E5M2FNUZ",
    "F8E4M3FNUZ",
    "S4",
    "U4",
    "TOKEN",
    "S2",
    "U2",
    "F8E4M3",
    "F8E3M4",
    "F8E8M0FNU",
    "F4E2M1FN",
    "S1",
    "U1",
    "F6E2M3FN",
    "F6E3M2FN",
)

# PJRT_NamedValue_Type
NAMED_STRING, NAMED_INT64, NAMED_INT64_LIST, NAMED_FLOAT, NAMED_BOOL = range(5)

# PJRT_HostBufferSemantics
HOST_IMMUTABLE_ONLY_DURING_CALL = 0
HOST_IMMUTABLE_UNTIL_TRANSFER_COMPLETES = 1
HOST_IMMUTABLE_ZERO_COPY = 2
HOST_MUTABLE_ZERO_COPY = 3

# PJRT_Buffer_MemoryLayout_Type
LAYOUT_TILED, LAYOUT_STRIDES = 0, 1

# ---------------------------------------------------------------- version, errors, named values

Api_Version = _struct("PJRT_Api_Version", ("major_version", c_int), ("minor_version", c_int))

Error_Destroy_Args = _struct("PJRT_Error_Destroy_Args", ("error", c_void_p))
Error_Message_Args = _struct(
    "PJRT_Error_Message_Args", ("error", c_void_p), ("message", c_void_p), ("message_size", c_size_t)
)
Error_GetCode_Args = _struct("PJRT_Error_GetCode_Args", ("error", c_void_p), ("code", _c_enum))


class _NamedValueUnion(ctypes.Union):
    _fields_ = [
        ("string_value", c_void_p),
        ("int64_value", c_int64),
        ("int64_array_value", POINTER(c_int64)),
        ("float_value", c_float),
        ("bool_value", c_bool),
    ]


NamedValue = _struct(
    "PJRT_NamedValue",
    ("name", c_void_p),
    ("name_size", c_size_t),
    ("type", _c_enum),
    ("value", _NamedValueUnion),
    ("value_size", c_size_t),
)

# ---------------------------------------------------------------- plugin, events

Plugin_Initialize_Args = _struct("PJRT_Plugin_Initialize_Args")
Plugin_Attributes_Args = _struct(
    "PJRT_Plugin_Attributes_Args", ("attributes", POINTER(NamedValue)), ("num_attributes", c_size_t)
)

Event_Destroy_Args = _struct("PJRT_Event_Destroy_Args", ("event", c_void_p))
Event_IsReady_Args = _struct("PJRT_Event_IsReady_Args", ("event", c_void_p), ("is_ready", c_bool))
Event_Error_Args = _struct("PJRT_Event_Error_Args", ("event", c_void_p))
Event_Await_Args = _struct("PJRT_Event_Await_Args", ("event", c_void_p))

# ---------------------------------------------------------------- client

Client_Create_Args = _struct(
    "PJRT_Client_Create_Args",
    ("create_options", POINTER(NamedValue)),
    ("num_options", c_size_t),
    ("kv_get_callback", c_void_p),
    ("kv_get_user_arg", c_void_p),
    ("kv_put_callback", c_void_p),
    ("kv_put_user_arg", c_void_p),
    ("client", c_void_p),
    ("kv_try_get_callback", c_void_p),
    ("kv_try_get_user_arg", c_void_p),
)
Client_Destroy_Args = _struct("PJRT_Client_Destroy_Args", ("client", c_void_p))
Client_PlatformName_Args = _struct(
    "PJRT_Client_PlatformName_Args",
    ("client", c_void_p),
    ("platform_name", c_void_p),
    ("platform_name_size", c_size_t),
)
Client_ProcessIndex_Args = _struct(
    "PJRT_Client_ProcessIndex_Args", ("client", c_void_p), ("process_index", c_int)
)
Client_PlatformVersion_Args = _struct(
    "PJRT_Client_PlatformVersion_Args",
    ("client", c_void_p),
    ("platform_version", c_void_p),
    ("platform_version_size", c_size_t),
)
Client_Devices_Args = _struct(
    "PJRT_Client_Devices_Args",
    ("client", c_void_p),
    ("devices", POINTER(c_void_p)),
    ("num_devices", c_size_t),
)
Client_AddressableDevices_Args = _struct(
    "PJRT_Client_AddressableDevices_Args",
    ("client", c_void_p),
    ("addressable_devices", POINTER(c_void_p)),
    ("num_addressable_devices", c_size_t),
)
Program = _struct(
    "PJRT_Program",
    ("code", c_void_p),
    ("code_size", c_size_t),
    ("format", c_char_p),
    ("format_size", c_size_t),
)
Client_Compile_Args = _struct(
    "PJRT_Client_Compile_Args",
    ("client", c_void_p),
    ("program", POINTER(Program)),
    ("compile_options", c_void_p),
    ("compile_options_size", c_size_t),
    ("executable", c_void_p),
)
Client_BufferFromHostBuffer_Args = _struct(
    "PJRT_Client_BufferFromHostBuffer_Args",
    ("client", c_void_p),
    ("data", c_void_p),
    ("type", _c_enum),
    ("dims", POINTER(c_int64)),
    ("num_dims", c_size_t),
    ("byte_strides", POINTER(c_int64)),
    ("num_byte_strides", c_size_t),
    ("host_buffer_semantics", _c_enum),
    ("device", c_void_p),
    ("memory", c_void_p),
    ("device_layout", c_void_p),
    ("done_with_host_buffer", c_void_p),
    ("buffer", c_void_p),
)

# ---------------------------------------------------------------- devices

DeviceDescription_Id_Args = _struct(
    "PJRT_DeviceDescription_Id_Args", ("device_description", c_void_p), ("id", c_int)
)
DeviceDescription_ProcessIndex_Args = _struct(
    "PJRT_DeviceDescription_ProcessIndex_Args", ("device_description", c_void_p), ("process_index", c_int)
)
# NB: the count comes before the pointer here, unlike PJRT_Plugin_Attributes_Args.
DeviceDescription_Attributes_Args = _struct(
    "PJRT_DeviceDescription_Attributes_Args",
    ("device_description", c_void_p),
    ("num_attributes", c_size_t),
    ("attributes", POINTER(NamedValue)),
)


def _string_args(name: str, field: str):
    return _struct(name, ("device_description", c_void_p), (field, c_void_p), (field + "_size", c_size_t))


DeviceDescription_Kind_Args = _string_args("PJRT_DeviceDescription_Kind_Args", "device_kind")
DeviceDescription_DebugString_Args = _string_args("PJRT_DeviceDescription_DebugString_Args", "debug_string")
DeviceDescription_ToString_Args = _string_args("PJRT_DeviceDescription_ToString_Args", "to_string")

Device_GetDescription_Args = _struct(
    "PJRT_Device_GetDescription_Args", ("device", c_void_p), ("device_description", c_void_p)
)
Device_IsAddressable_Args = _struct(
    "PJRT_Device_IsAddressable_Args", ("device", c_void_p), ("is_addressable", c_bool)
)
Device_LocalHardwareId_Args = _struct(
    "PJRT_Device_LocalHardwareId_Args", ("device", c_void_p), ("local_hardware_id", c_int)
)

# ---------------------------------------------------------------- executables

Executable_Destroy_Args = _struct("PJRT_Executable_Destroy_Args", ("executable", c_void_p))
Executable_Name_Args = _struct(
    "PJRT_Executable_Name_Args",
    ("executable", c_void_p),
    ("executable_name", c_void_p),
    ("executable_name_size", c_size_t),
)
Executable_NumReplicas_Args = _struct(
    "PJRT_Executable_NumReplicas_Args", ("executable", c_void_p), ("num_replicas", c_size_t)
)
Executable_NumPartitions_Args = _struct(
    "PJRT_Executable_NumPartitions_Args", ("executable", c_void_p), ("num_partitions", c_size_t)
)
Executable_NumOutputs_Args = _struct(
    "PJRT_Executable_NumOutputs_Args", ("executable", c_void_p), ("num_outputs", c_size_t)
)
Executable_Serialize_Args = _struct(
    "PJRT_Executable_Serialize_Args",
    ("executable", c_void_p),
    ("serialized_bytes", c_void_p),
    ("serialized_bytes_size", c_size_t),
    ("serialized_executable", c_void_p),
    ("serialized_executable_deleter", c_void_p),
)
SerializedExecutableDeleter = ctypes.CFUNCTYPE(None, c_void_p)
Executable_DeserializeAndLoad_Args = _struct(
    "PJRT_Executable_DeserializeAndLoad_Args",
    ("client", c_void_p),
    ("serialized_executable", c_void_p),
    ("serialized_executable_size", c_size_t),
    ("loaded_executable", c_void_p),
    ("overridden_serialized_compile_options", c_void_p),
    ("overridden_serialized_compile_options_size", c_size_t),
    ("load_options", c_void_p),
)
Executable_OutputElementTypes_Args = _struct(
    "PJRT_Executable_OutputElementTypes_Args",
    ("executable", c_void_p),
    ("output_types", POINTER(_c_enum)),
    ("num_output_types", c_size_t),
)
Executable_OutputDimensions_Args = _struct(
    "PJRT_Executable_OutputDimensions_Args",
    ("executable", c_void_p),
    ("num_outputs", c_size_t),
    ("dims", POINTER(c_int64)),
    ("dim_sizes", POINTER(c_size_t)),
)
Executable_Fingerprint_Args = _struct(
    "PJRT_Executable_Fingerprint_Args",
    ("executable", c_void_p),
    ("executable_fingerprint", c_void_p),
    ("executable_fingerprint_size", c_size_t),
)

LoadedExecutable_Destroy_Args = _struct("PJRT_LoadedExecutable_Destroy_Args", ("executable", c_void_p))
LoadedExecutable_GetExecutable_Args = _struct(
    "PJRT_LoadedExecutable_GetExecutable_Args", ("loaded_executable", c_void_p), ("executable", c_void_p)
)
LoadedExecutable_AddressableDevices_Args = _struct(
    "PJRT_LoadedExecutable_AddressableDevices_Args",
    ("executable", c_void_p),
    ("addressable_devices", POINTER(c_void_p)),
    ("num_addressable_devices", c_size_t),
)
ExecuteOptions = _struct(
    "PJRT_ExecuteOptions",
    ("send_callbacks", c_void_p),
    ("recv_callbacks", c_void_p),
    ("num_send_ops", c_size_t),
    ("num_recv_ops", c_size_t),
    ("launch_id", c_int),
    ("non_donatable_input_indices", POINTER(c_int64)),
    ("num_non_donatable_input_indices", c_size_t),
    ("context", c_void_p),
    ("call_location", c_char_p),
    ("num_tasks", c_size_t),
    ("task_ids", c_void_p),
    ("incarnation_ids", c_void_p),
    ("multi_slice_config", c_void_p),
    ("use_major_to_minor_data_layout_for_callbacks", c_bool),
    ("hlo_output_callbacks", c_void_p),
    ("num_hlo_output_callbacks", c_size_t),
)
LoadedExecutable_Execute_Args = _struct(
    "PJRT_LoadedExecutable_Execute_Args",
    ("executable", c_void_p),
    ("options", POINTER(ExecuteOptions)),
    ("argument_lists", POINTER(POINTER(c_void_p))),
    ("num_devices", c_size_t),
    ("num_args", c_size_t),
    ("output_lists", POINTER(POINTER(c_void_p))),
    ("device_complete_events", POINTER(c_void_p)),
    ("execute_device", c_void_p),
)

# ---------------------------------------------------------------- buffers


def _buffer_args(name: str, *fields):
    return _struct(name, ("buffer", c_void_p), *fields)


Buffer_Destroy_Args = _buffer_args("PJRT_Buffer_Destroy_Args")
Buffer_ElementType_Args = _buffer_args("PJRT_Buffer_ElementType_Args", ("type", _c_enum))
Buffer_Dimensions_Args = _buffer_args(
    "PJRT_Buffer_Dimensions_Args", ("dims", POINTER(c_int64)), ("num_dims", c_size_t)
)
Buffer_OnDeviceSizeInBytes_Args = _buffer_args(
    "PJRT_Buffer_OnDeviceSizeInBytes_Args", ("on_device_size_in_bytes", c_size_t)
)
Buffer_Device_Args = _buffer_args("PJRT_Buffer_Device_Args", ("device", c_void_p))
Buffer_Delete_Args = _buffer_args("PJRT_Buffer_Delete_Args")
Buffer_IsDeleted_Args = _buffer_args("PJRT_Buffer_IsDeleted_Args", ("is_deleted", c_bool))
Buffer_ReadyEvent_Args = _buffer_args("PJRT_Buffer_ReadyEvent_Args", ("event", c_void_p))
# The buffer's address on its device (host memory on a CPU plugin); uintptr_t out.
Buffer_UnsafePointer_Args = _buffer_args("PJRT_Buffer_UnsafePointer_Args", ("buffer_pointer", c_size_t))

Buffer_MemoryLayout_Tiled = _struct(
    "PJRT_Buffer_MemoryLayout_Tiled",
    ("minor_to_major", POINTER(c_int64)),
    ("minor_to_major_size", c_size_t),
    ("tile_dims", POINTER(c_int64)),
    ("tile_dim_sizes", POINTER(c_size_t)),
    ("num_tiles", c_size_t),
)
Buffer_MemoryLayout_Strides = _struct(
    "PJRT_Buffer_MemoryLayout_Strides", ("byte_strides", POINTER(c_int64)), ("num_byte_strides", c_size_t)
)


class _LayoutUnion(ctypes.Union):
    _fields_ = [("tiled", Buffer_MemoryLayout_Tiled), ("strides", Buffer_MemoryLayout_Strides)]


Buffer_MemoryLayout = _struct("PJRT_Buffer_MemoryLayout", ("layout", _LayoutUnion), ("type", _c_enum))
Buffer_ToHostBuffer_Args = _struct(
    "PJRT_Buffer_ToHostBuffer_Args",
    ("src", c_void_p),
    ("host_layout", POINTER(Buffer_MemoryLayout)),
    ("dst", c_void_p),
    ("dst_size", c_size_t),
    ("event", c_void_p),
)

# ---------------------------------------------------------------- the function table

# Every entry of PJRT_Api in header order, up to the last one this package binds (the rest of the
# table is never read). The value is the args struct of the entries we call, None otherwise.
FUNCTIONS = (
    ("Error_Destroy", Error_Destroy_Args),
    ("Error_Message", Error_Message_Args),
    ("Error_GetCode", Error_GetCode_Args),
    ("Plugin_Initialize", Plugin_Initialize_Args),
    ("Plugin_Attributes", Plugin_Attributes_Args),
    ("Event_Destroy", Event_Destroy_Args),
    ("Event_IsReady", Event_IsReady_Args),
    ("Event_Error", Event_Error_Args),
    ("Event_Await", Event_Await_Args),
    ("Event_OnReady", None),
    ("Client_Create", Client_Create_Args),
    ("Client_Destroy", Client_Destroy_Args),
    ("Client_PlatformName", Client_PlatformName_Args),
    ("Client_ProcessIndex", Client_ProcessIndex_Args),
    ("Client_PlatformVersion", Client_PlatformVersion_Args),
    ("Client_Devices", Client_Devices_Args),
    ("Client_AddressableDevices", Client_AddressableDevices_Args),
    ("Client_LookupDevice", None),
    ("Client_LookupAddressableDevice", None),
    ("Client_AddressableMemories", None),
    ("Client_Compile", Client_Compile_Args),
    ("Client_DefaultDeviceAssignment", None),
    ("Client_BufferFromHostBuffer", Client_BufferFromHostBuffer_Args),
    ("DeviceDescription_Id", DeviceDescription_Id_Args),
    ("DeviceDescription_ProcessIndex", DeviceDescription_ProcessIndex_Args),
    ("DeviceDescription_Attributes", DeviceDescription_Attributes_Args),
    ("DeviceDescription_Kind", DeviceDescription_Kind_Args),
    ("DeviceDescription_DebugString", DeviceDescription_DebugString_Args),
    ("DeviceDescription_ToString", DeviceDescription_ToString_Args),
    ("Device_GetDescription", Device_GetDescription_Args),
    ("Device_IsAddressable", Device_IsAddressable_Args),
    ("Device_LocalHardwareId", Device_LocalHardwareId_Args),
    ("Device_AddressableMemories", None),
    ("Device_DefaultMemory", None),
    ("Device_MemoryStats", None),
    ("Memory_Id", None),
    ("Memory_Kind", None),
    ("Memory_DebugString", None),
    ("Memory_ToString", None),
    ("Memory_AddressableByDevices", None),
    ("Executable_Destroy", Executable_Destroy_Args),
    ("Executable_Name", Executable_Name_Args),
    ("Executable_NumReplicas", Executable_NumReplicas_Args),
    ("Executable_NumPartitions", Executable_NumPartitions_Args),
    ("Executable_NumOutputs", Executable_NumOutputs_Args),
    ("Executable_SizeOfGeneratedCodeInBytes", None),
    ("Executable_GetCostAnalysis", None),
    ("Executable_OutputMemoryKinds", None),
    ("Executable_OptimizedProgram", None),
    ("Executable_Serialize", Executable_Serialize_Args),
    ("LoadedExecutable_Destroy", LoadedExecutable_Destroy_Args),
    ("LoadedExecutable_GetExecutable", LoadedExecutable_GetExecutable_Args),
    ("LoadedExecutable_AddressableDevices", LoadedExecutable_AddressableDevices_Args),
    ("LoadedExecutable_Delete", None),
    ("LoadedExecutable_IsDeleted", None),
    ("LoadedExecutable_Execute", LoadedExecutable_Execute_Args),
    ("Executable_DeserializeAndLoad", Executable_DeserializeAndLoad_Args),
    ("LoadedExecutable_Fingerprint", None),
    ("Buffer_Destroy", Buffer_Destroy_Args),
    ("Buffer_ElementType", Buffer_ElementType_Args),
    ("Buffer_Dimensions", Buffer_Dimensions_Args),
    ("Buffer_UnpaddedDimensions", None),
    ("Buffer_DynamicDimensionIndices", None),
    ("Buffer_GetMemoryLayout", None),
    ("Buffer_OnDeviceSizeInBytes", Buffer_OnDeviceSizeInBytes_Args),
    ("Buffer_Device", Buffer_Device_Args),
    ("Buffer_Memory", None),
    ("Buffer_Delete", Buffer_Delete_Args),
    ("Buffer_IsDeleted", Buffer_IsDeleted_Args),
    ("Buffer_CopyToDevice", None),
    ("Buffer_ToHostBuffer", Buffer_ToHostBuffer_Args),
    ("Buffer_IsOnCpu", None),
    ("Buffer_ReadyEvent", Buffer_ReadyEvent_Args),
    ("Buffer_UnsafePointer", Buffer_UnsafePointer_Args),
    ("Buffer_IncreaseExternalReferenceCount", None),
    ("Buffer_DecreaseExternalReferenceCount", None),
    ("Buffer_OpaqueDeviceMemoryDataPointer", None),
    ("CopyToDeviceStream_Destroy", None),
    ("CopyToDeviceStream_AddChunk", None),
    ("CopyToDeviceStream_TotalBytes", None),
    ("CopyToDeviceStream_GranuleSize", None),
    ("CopyToDeviceStream_CurrentBytes", None),
    ("TopologyDescription_Create", None),
    ("TopologyDescription_Destroy", None),
    ("TopologyDescription_PlatformName", None),
    ("TopologyDescription_PlatformVersion", None),
    ("TopologyDescription_GetDeviceDescriptions", None),
    ("TopologyDescription_Serialize", None),
    ("TopologyDescription_Attributes", None),
    ("Compile", None),
    ("Executable_OutputElementTypes", Executable_OutputElementTypes_Args),
    ("Executable_OutputDimensions", Executable_OutputDimensions_Args),
    ("Buffer_CopyToMemory", None),
    ("Client_CreateViewOfDeviceBuffer", None),
    ("Executable_Fingerprint", Executable_Fingerprint_Args),
)

# Error_Destroy and Error_Message return void; every other entry returns a PJRT_Error* (NULL = ok).
VOID_FUNCTIONS = frozenset({"Error_Destroy", "Error_Message"})

Api = _struct(
    "PJRT_Api",
    ("pjrt_api_version", Api_Version),
    *[(name, c_void_p) for name, _ in FUNCTIONS],
)


def table_offset(name: str) -> int:
    """Byte offset of an entry of PJRT_Api (a plugin whose `struct_size` ends before it lacks it)."""
    return getattr(Api, name).offset


def prototype(name: str, args_struct):
    """The ctypes function type of a table entry: one pointer to its args struct in, a
    PJRT_Error* (or nothing) out. Calls through it release the GIL."""
    restype = None if name in VOID_FUNCTIONS else c_void_p
    return ctypes.CFUNCTYPE(restype, POINTER(args_struct))
