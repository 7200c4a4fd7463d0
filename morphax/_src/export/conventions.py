"""The conventions an Exported is written under: JAX's calling-convention versions, the
StableHLO version of the module text, the default export platform, and `DisabledSafetyCheck`.
"""

from __future__ import annotations

import re

# The calling conventions JAX 0.10.2 reads and writes (morphax writes JAX's latest).
minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10
CALLING_CONVENTION_VERSION = 10
# The StableHLO version the module text targets: XLA's CPU plugin's `stablehlo_current_version`.
STABLEHLO_VERSION = (1, 20, 0)


class DisabledSafetyCheck:
    """A safety check that should be skipped on (de)serialization: `platform()` lets the calling
    platform differ from the export platforms; `custom_call(target)` allows a custom call target."""

    @classmethod
    def platform(cls) -> DisabledSafetyCheck:
        return DisabledSafetyCheck("platform")

    @classmethod
    def custom_call(cls, target_name: str) -> DisabledSafetyCheck:
        return DisabledSafetyCheck(f"custom_call:{target_name}")

    def is_custom_call(self) -> str | None:
        """The custom call target allowed by this directive, or None."""
        m = re.match(r"custom_call:(.+)$", self._impl)
        return m.group(1) if m else None

    def __init__(self, _impl: str):
        self._impl = _impl  # use the builders `platform`, `custom_call`

    def __str__(self):
        return self._impl

    __repr__ = __str__

    def __eq__(self, other) -> bool:
        return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

    def __hash__(self) -> int:
        return hash(self._impl)


def default_export_platform() -> str:
    """The default export platform: the platform of morphax's default backend ("cpu")."""
    from morphax._src.api.jit import default_backend

    return default_backend()
