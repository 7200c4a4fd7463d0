"""The devices known to the runtime: N CPU devices in one process (``jax_num_cpu_devices`` or
``XLA_FLAGS=--xla_force_host_platform_device_count=N``; one by default)."""

from __future__ import annotations

import enum
import os
import re
import threading

from morphax._src.config import config


class MemorySpace(enum.Enum):
    """Where a buffer lives (``jax.memory.Space``). NB: on morphax's CPU device all three are host
    memory; the names are accepted where JAX takes a memory space."""

    Device = 1
    Host = 2
    Any = 3


class Device:
    """A device computations run on (``jax.Device``): here a CPU device, each with its own stream
    (runtime/dispatch.py), all in host memory."""

    def __init__(self, platform: str, id: int, process_index: int = 0):
        self.platform = platform
        self.id = id
        self.device_kind = platform
        self.process_index = process_index
        self.host_id = process_index
        self.local_hardware_id = id

    def __repr__(self):
        return f"CpuDevice(id={self.id})" if self.platform == "cpu" else f"Device({self.platform}, {self.id})"

    def __str__(self):
        return f"{self.platform}:{self.id}"


# Created on first use, as JAX's backends: the count may be set (config or XLA_FLAGS) after
# `import morphax` and before the first computation.
_devices: list[Device] | None = None
_lock = threading.Lock()
_XLA_COUNT = re.compile(r"--xla_force_host_platform_device_count=(\d+)")


def _requested_count() -> int:
    n = config.num_cpu_devices
    if n is not None and n > 0:
        return int(n)
    found = _XLA_COUNT.findall(os.environ.get("XLA_FLAGS", ""))
    return int(found[-1]) if found else 1


def _all() -> list[Device]:
    global _devices
    if _devices is None:
        with _lock:
            if _devices is None:
                _devices = [Device("cpu", i) for i in range(_requested_count())]
    return _devices


def initialized() -> bool:
    """Whether the devices exist yet (jax_num_cpu_devices may change only before)."""
    return _devices is not None


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
    return chosen if chosen is not None else _all()[0]


def devices(backend=None) -> list[Device]:
    return list(_all())


def local_devices(process_index=None, backend=None) -> list[Device]:
    return list(_all())


def device_count(backend=None) -> int:
    return len(_all())


def local_device_count(backend=None) -> int:
    return len(_all())
