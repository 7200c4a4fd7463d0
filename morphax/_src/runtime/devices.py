"""Devices known to the runtime. For now one CPU device; the GPU backend adds more later."""

from __future__ import annotations


class Device:
    def __init__(self, platform: str, id: int):
        self.platform = platform
        self.id = id
        self.device_kind = platform

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
