"""Devices known to the runtime. For now one CPU device; the GPU backend adds more later."""

from __future__ import annotations

import enum


class MemorySpace(enum.Enum):
    """Where a buffer lives (``jax.memory.Space``). NB: on morphax's CPU device all three are host
    memory; the names are accepted where JAX takes a memory space."""

    Device = 1
    Host = 2
    Any = 3


class Device:
    """A device computations run on (``jax.Device``); morphax has one, the CPU."""

    def __init__(self, platform: str, id: int):
        self.platform = platform
        self.id = id
        self.device_kind = platform
        self.process_index = 0  # single process
        self.host_id = 0
        self.local_hardware_id = id

    def __repr__(self):
        return f"CpuDevice(id={self.id})" if self.platform == "cpu" else f"Device({self.platform}, {self.id})"


_CPU = Device("cpu", 0)


def default_device() -> Device:
    return _CPU


def devices(backend=None):
    return [_CPU]


def local_devices(backend=None):
    return [_CPU]


def device_count(backend=None) -> int:
    return 1
