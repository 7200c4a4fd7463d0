"""PJRT clients and their devices: `get_client()` creates one client per plugin per process (the
plugin's own worker threads are its streams), lists its devices with their descriptions, and is where
buffers are made and programs compiled. Part of morphax._src.pjrt, which imports nothing else of
morphax."""

from __future__ import annotations

import ctypes
import sys
import threading

from . import c_api
from .buffer import Buffer
from .executable import Executable
from .plugin import Plugin, count, load, make_named_values, named_values


class Device:
    """One device of a Client, described once when the client is made."""

    __slots__ = (
        "client",
        "_ptr",
        "id",
        "process_index",
        "kind",
        "attributes",
        "local_hardware_id",
        "debug_string",
        "to_string",
        "is_addressable",
    )

    def __init__(self, client, ptr: int):
        self.client = client
        self._ptr = ptr
        plugin = client.plugin
        desc_args = c_api.new(c_api.Device_GetDescription_Args, device=ptr)
        plugin.call("Device_GetDescription", desc_args)
        desc = desc_args.device_description

        def described(entry, struct, field):
            args = c_api.new(struct, device_description=desc)
            plugin.call(entry, args)
            return getattr(args, field)

        def text(entry, struct, field):
            if not plugin.has(entry):
                return None
            args = c_api.new(struct, device_description=desc)
            plugin.call(entry, args)
            return ctypes.string_at(getattr(args, field), getattr(args, field + "_size")).decode(
                "utf-8", "replace"
            )

        self.id = int(described("DeviceDescription_Id", c_api.DeviceDescription_Id_Args, "id"))
        self.process_index = int(
            described(
                "DeviceDescription_ProcessIndex", c_api.DeviceDescription_ProcessIndex_Args, "process_index"
            )
        )
        self.kind = text("DeviceDescription_Kind", c_api.DeviceDescription_Kind_Args, "device_kind")
        self.debug_string = text(
            "DeviceDescription_DebugString", c_api.DeviceDescription_DebugString_Args, "debug_string"
        )
        self.to_string = text(
            "DeviceDescription_ToString", c_api.DeviceDescription_ToString_Args, "to_string"
        )
        attrs = c_api.new(c_api.DeviceDescription_Attributes_Args, device_description=desc)
        plugin.call("DeviceDescription_Attributes", attrs)
        self.attributes = named_values(attrs.attributes, attrs.num_attributes) if attrs.attributes else {}
        addressable = c_api.new(c_api.Device_IsAddressable_Args, device=ptr)
        plugin.call("Device_IsAddressable", addressable)
        self.is_addressable = bool(addressable.is_addressable)
        self.local_hardware_id = None
        if self.is_addressable:
            hw = c_api.new(c_api.Device_LocalHardwareId_Args, device=ptr)
            plugin.call("Device_LocalHardwareId", hw)
            self.local_hardware_id = int(hw.local_hardware_id)

    @property
    def platform(self) -> str:
        return self.client.platform_name

    def __repr__(self):
        return self.to_string or f"{self.client.platform_name}:{self.id}"


def _string(plugin, entry, struct, client_ptr, field) -> str:
    args = c_api.new(struct, client=client_ptr)
    plugin.call(entry, args)
    return ctypes.string_at(getattr(args, field), getattr(args, field + "_size")).decode("utf-8", "replace")


class Client:
    """A PJRT client: the devices of one plugin in this process. Use `get_client()`; a Client made
    directly (for other create options) is destroyed when it and everything made on it are gone."""

    def __init__(self, plugin: Plugin | None = None, options: dict | None = None, *, _persistent=False):
        self.plugin = plugin if plugin is not None else load()
        self.options = dict(options or {})
        self._persistent = _persistent
        self._ptr = 0
        values, keep = make_named_values(self.options)
        args = c_api.new(c_api.Client_Create_Args, create_options=values, num_options=len(self.options))
        self.plugin.call("Client_Create", args)
        del keep
        self._ptr = args.client
        count("clients", 1)
        p = self.plugin
        self.platform_name = _string(
            p, "Client_PlatformName", c_api.Client_PlatformName_Args, self._ptr, "platform_name"
        )
        self.platform_version = _string(
            p, "Client_PlatformVersion", c_api.Client_PlatformVersion_Args, self._ptr, "platform_version"
        )
        index = c_api.new(c_api.Client_ProcessIndex_Args, client=self._ptr)
        p.call("Client_ProcessIndex", index)
        self.process_index = int(index.process_index)
        all_args = c_api.new(c_api.Client_Devices_Args, client=self._ptr)
        p.call("Client_Devices", all_args)
        self._by_ptr = {}
        self.devices = tuple(self._device_of(all_args.devices[i]) for i in range(all_args.num_devices))
        mine = c_api.new(c_api.Client_AddressableDevices_Args, client=self._ptr)
        p.call("Client_AddressableDevices", mine)
        self.addressable_devices = tuple(
            self._device_of(mine.addressable_devices[i]) for i in range(mine.num_addressable_devices)
        )

    @classmethod
    def for_plugin(cls, plugin: Plugin | str | None = None, options: dict | None = None) -> Client:
        """The process's client of `plugin`: the same as `get_client(plugin, options)`."""
        return get_client(plugin, options)

    def _device_of(self, ptr: int) -> Device:
        device = self._by_ptr.get(ptr)
        if device is None:
            device = self._by_ptr[ptr] = Device(self, ptr)
        return device

    def __repr__(self):
        return f"<pjrt Client {self.platform_name} ({len(self.devices)} devices)>"

    def _target(self, device) -> Device:
        if device is None:
            if not self.addressable_devices:
                raise RuntimeError("this client has no addressable device")
            return self.addressable_devices[0]
        if not isinstance(device, Device) or device.client is not self:
            raise ValueError(f"{device!r} is not a device of this client")
        if not device.is_addressable:
            raise ValueError(f"{device!r} is not addressable from this process")
        return device

    def buffer_from_host(self, array, device: Device | None = None) -> Buffer:
        """Copies a NumPy array (any strides, any supported dtype, 0-d and size 0 included) to
        `device` (default: the first addressable one)."""
        return Buffer.from_host(self, array, self._target(device))

    def compile(
        self,
        program,
        num_replicas: int = 1,
        num_partitions: int = 1,
        *,
        device: Device | None = None,
        device_assignment=None,
        use_spmd_partitioning=None,
    ) -> Executable:
        """Compiles a StableHLO module (MLIR text, or bytecode as bytes) to an Executable. `device`
        places a one-device program; `device_assignment` ([replica][partition] -> Device or id)
        places a multi-device one; by default the plugin picks (device 0 first)."""
        if device is not None:
            if device_assignment is not None or num_replicas * num_partitions != 1:
                raise ValueError("device= is for one-device programs; use device_assignment=")
            device_assignment = [[self._target(device)]]
        if device_assignment is not None:
            device_assignment = [
                [d.id if isinstance(d, Device) else int(d) for d in row] for row in device_assignment
            ]
        return Executable.compile(
            self, program, num_replicas, num_partitions, use_spmd_partitioning, device_assignment
        )

    def __del__(self):
        if self._ptr and not self._persistent and not sys.is_finalizing():
            ptr, self._ptr = self._ptr, 0
            error = self.plugin.fn["Client_Destroy"](
                ctypes.byref(c_api.new(c_api.Client_Destroy_Args, client=ptr))
            )
            count("clients", -1)
            if error:
                raise self.plugin.error(error, "PJRT_Client_Destroy")


_clients: dict = {}
_clients_lock = threading.Lock()


def get_client(plugin: Plugin | str | None = None, options: dict | None = None) -> Client:
    """The process's client of `plugin` (a Plugin, a path, or None for `find_plugin()`), made on first
    use with `options` (PJRT create options, e.g. {"cpu_device_count": 4} for the CPU plugin) and
    kept for the life of the process. Asking again with other options is an error."""
    if not isinstance(plugin, Plugin):
        plugin = load(plugin)
    with _clients_lock:
        client = _clients.get(plugin.path)
        if client is None:
            client = _clients[plugin.path] = Client(plugin, options, _persistent=True)
        elif options is not None and dict(options) != client.options:
            raise ValueError(
                f"the {client.platform_name} client was already made with options {client.options}; "
                f"make a separate Client(plugin, options) for {dict(options)}"
            )
        return client
