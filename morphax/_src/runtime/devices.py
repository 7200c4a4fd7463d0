"""The devices known to the runtime: N CPU devices in one process (``jax_num_cpu_devices`` or
``XLA_FLAGS=--xla_force_host_platform_device_count=N``; one by default), and, once
``morphax.distributed.initialize`` has registered the processes of a run, the global list of every
process's devices."""

from __future__ import annotations

import enum
import threading

from morphax._src.compiler.backends import platform as _platform
from morphax._src.config import config, requested_cpu_devices


class MemorySpace(enum.Enum):
    """Where a buffer lives (``jax.memory.Space``). NB: on morphax's CPU device all three are host
    memory; the names are accepted where JAX takes a memory space."""

    Device = 1
    Host = 2
    Any = 3


class Device:
    """A device computations run on (``jax.Device``): here a CPU device, each with its own stream
    (runtime/dispatch.py), all in host memory."""

    def __init__(self, platform: str, id: int, process_index: int = 0, local_hardware_id: int | None = None):
        self.platform = platform
        self.id = id
        self.device_kind = platform
        self.process_index = process_index
        self.host_id = process_index
        self.local_hardware_id = id if local_hardware_id is None else local_hardware_id

    def __repr__(self):
        return f"CpuDevice(id={self.id})" if self.platform == "cpu" else f"Device({self.platform}, {self.id})"

    def __str__(self):
        return f"{self.platform}:{self.id}"


class PjrtDevice(Device):
    """A device of a PJRT plugin (a TPU core; XLA's CPU plugin as "xla_cpu"): arrays on it hold
    the plugin's buffers (runtime/buffers.py's DeviceBuffer). Described as the plugin describes
    it, as JAX shows it: ``TpuDevice(id=0, process_index=0, coords=(0,0,0), core_on_chip=0)``."""

    def __init__(self, pjrt_device, platform: str):
        super().__init__(platform, pjrt_device.id, pjrt_device.process_index, pjrt_device.local_hardware_id)
        self.pjrt = pjrt_device
        self.device_kind = pjrt_device.kind or platform
        for name, value in pjrt_device.attributes.items():
            if name in ("coords", "core_on_chip", "num_cores"):
                setattr(self, name, value)

    def __repr__(self):
        text = self.pjrt.to_string
        if text and self.platform == "tpu":
            return text
        return f"{self.platform.capitalize().replace('_', '')}Device(id={self.id})"


# Created on first use, as JAX's backends: the count may be set (config or XLA_FLAGS) after
# `import morphax` and before the first computation.
_devices: list[Device] | None = None
# Set by register_processes (morphax.distributed): every process's devices, and this process's index.
_global_devices: list[Device] | None = None
_process_index = 0
_process_count = 1
_lock = threading.Lock()
# JAX numbers a CPU device of a multi-process run process_index * 2048 + its local index.
CPU_IDS_PER_PROCESS = 2048


def _all() -> list[Device]:
    global _devices
    if _devices is None:
        with _lock:
            if _devices is None:
                _devices = [Device("cpu", i) for i in range(requested_cpu_devices())]
                made = len(_devices)
            else:
                made = 0
        if made > 1:
            from morphax._src.runtime import thread_pools

            thread_pools.share_cores(made)
    return _devices


def initialized() -> bool:
    """Whether the devices exist yet (jax_num_cpu_devices may change only before)."""
    return _devices is not None


def requested_local_count() -> int:
    """How many CPU devices this process will make (its config, read now)."""
    return len(_devices) if _devices is not None else requested_cpu_devices()


def register_processes(process_index: int, local_ids: list[list[int]]) -> None:
    """Make this process's devices as process `process_index` of ``len(local_ids)`` processes,
    where process p drives the CPU devices of local indices ``local_ids[p]`` (global ids
    ``p * 2048 + i``, as JAX numbers them). Called by morphax.distributed.initialize before any
    computation (the devices of a process are made once)."""
    global _devices, _global_devices, _process_index, _process_count
    with _lock:
        everyone = [
            Device("cpu", p * CPU_IDS_PER_PROCESS + i, process_index=p, local_hardware_id=i)
            for p, ids in enumerate(local_ids)
            for i in ids
        ]
        mine = [d for d in everyone if d.process_index == process_index]
        if _devices is not None and [d.id for d in _devices] != [d.id for d in mine]:
            raise RuntimeError(
                "morphax.distributed.initialize() must be called before any computation is executed: "
                f"this process's devices exist already ({_devices}). Call it right after `import morphax`."
            )
        if _devices is None:
            _devices = mine
        # Keep the Device objects this process already uses (arrays and contexts hold them).
        by_id = {d.id: d for d in _devices}
        _global_devices = [by_id.get(d.id, d) for d in everyone]
        _process_index, _process_count = process_index, len(local_ids)


def process_index() -> int:
    """This process's index among the registered processes (0 in a one-process run)."""
    return _process_index


def process_count() -> int:
    """How many processes the registered devices span (1 in a one-process run)."""
    return _process_count


def _check_count_update(name, value):
    if name == "jax_num_cpu_devices" and _devices is not None and value not in (-1, len(_devices)):
        raise RuntimeError(
            "jax_num_cpu_devices config should be updated before backends are initialized i.e. "
            f"before any computation is executed ({len(_devices)} devices exist already). Set it "
            "right after `import morphax`, or set XLA_FLAGS=--xla_force_host_platform_device_count=N."
        )


config.add_validator(_check_count_update)


def default_device() -> Device:
    """Where new arrays go: the `default_device` context's device, else the first device."""
    chosen = config.default_device
    return chosen if chosen is not None else devices()[0]


_plugin_devices: list = []  # the device platform's PjrtDevices, made once


def platform() -> str:
    """The platform holding arrays by default: "cpu", or a device platform ("tpu", "xla_cpu")."""
    return _platform.chosen()


def plugin_devices() -> list[Device]:
    """The devices of the device platform (empty on the CPU platform)."""
    if not _plugin_devices:
        name = platform()
        if name == "cpu":
            return []
        from morphax._src.compiler.backends import get_backend

        client = get_backend("xla").client()
        found = client.addressable_devices
        if name == "xla_cpu":  # XLA's CPU plugin opens at least 4: as many as CPU devices are asked
            found = found[: requested_local_count()]
        with _lock:
            if not _plugin_devices:
                _plugin_devices.extend(PjrtDevice(d, name) for d in found)
    return _plugin_devices


def _of_backend(backend):
    """The devices `backend` names (None: the default platform's), or None for the CPU's."""
    current = platform()
    name = current if backend is None else getattr(backend, "platform", backend)
    if name in (None, "cpu"):
        return None
    if name == current:
        return list(plugin_devices())
    raise RuntimeError(
        f"Unknown backend {name}: this process runs on {current!r} "
        "(jax_platforms / JAX_PLATFORMS choose the platform before the first computation)"
    )


def devices(backend=None) -> list[Device]:
    """Every device of the run (of `backend`: "cpu", "tpu"; default the default platform's):
    this process's, and after morphax.distributed.initialize every other process's too."""
    plugin = _of_backend(backend)
    if plugin is not None:
        return plugin
    _all()
    return list(_global_devices if _global_devices is not None else _devices)


def local_devices(process_index=None, backend=None) -> list[Device]:
    """The devices of process `process_index` (this process by default)."""
    plugin = _of_backend(backend)
    if plugin is not None:
        return plugin
    if process_index is None or (_global_devices is None and process_index == _process_index):
        return list(_all())
    return [d for d in devices("cpu") if d.process_index == process_index]


def device_count(backend=None) -> int:
    return len(devices(backend))


def local_device_count(backend=None) -> int:
    plugin = _of_backend(backend)
    return len(plugin) if plugin is not None else len(_all())
