"""The execution and transfer guards: ``jax_no_execution`` and ``jax_transfer_guard*``.

Hot paths read one module global, `active`, kept up to date by a config listener: it is True
while any thread (or the global setting) asks for a guard, and only then do they call in here,
where the calling thread's own flags decide.

Transfers, as JAX counts them on a CPU: host-to-device is a host value (NumPy array, Python or
NumPy scalar, list) becoming an Array. Implicit ones are an operand of an eager operation or an
argument of a jitted call, and `jnp.array`/`jnp.asarray` of host data; `device_put` is the
explicit one. NB: device-to-host and device-to-device guards never fire: morphax's buffers live
in host memory and there is one device, so no such transfer happens (JAX's CPU backend allows
them too).
"""

from __future__ import annotations

import logging

from morphax._src import errors
from morphax._src.config import config
from morphax._src.core.avals import get_aval
from morphax._src.core.trace import Tracer
from morphax._src.runtime.array import Array

logger = logging.getLogger("morphax")

active = False

_GUARD_FLAGS = (
    "jax_no_execution",
    "jax_transfer_guard",
    "jax_transfer_guard_host_to_device",
)


def _on_flag(name, value):
    global active
    if name in _GUARD_FLAGS:
        # A level of "allow" counts as set too; the checks then pass.
        active = any(config.set_anywhere(flag) for flag in _GUARD_FLAGS)


def check_execution(name: str) -> None:
    """Raise if this thread forbids executing computations (``jax_no_execution``)."""
    if config.no_execution:
        raise RuntimeError(
            f"morphax tried to execute {name}, but the no_execution config option is set. "
            "Leave the `with morphax.no_execution(True):` block (or set the option to False) to run it."
        )


def _host_to_device_level() -> str:
    return config.transfer_guard_host_to_device or config.transfer_guard or "allow"


def host_to_device(value, *, explicit: bool, what: str) -> None:
    """Apply the host-to-device guard to `value` (host data about to become an Array)."""
    level = _host_to_device_level()
    if level == "allow" or (explicit and level in ("log", "disallow")):
        return
    aval = get_aval(value)
    message = f"host-to-device transfer ({what}): aval={aval.str_short()}"
    if level.startswith("log"):
        logger.warning(message)
        return
    raise errors.JaxRuntimeError(
        f"Disallowed {message}. Put host data on the device explicitly with morphax.device_put "
        "before the guarded code, or relax the guard (jax_transfer_guard='allow' or 'log')."
    )


def before_eager(prim_name: str, args) -> None:
    """The guards of one eager operation on `args`."""
    check_execution(prim_name)
    for x in args:
        if is_host_value(x):
            host_to_device(x, explicit=False, what=f"operand of {prim_name}")


def before_call(name: str, leaves) -> None:
    """The guards of one jitted call on flattened arguments `leaves`."""
    check_execution(f"jit({name})")
    for x in leaves:
        if is_host_value(x):
            host_to_device(x, explicit=False, what=f"argument of jit({name})")


def is_host_value(x) -> bool:
    return not isinstance(x, (Array, Tracer))


config.add_listener(_on_flag)
