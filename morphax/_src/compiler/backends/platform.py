"""Which platform holds morphax's arrays and runs its programs: the host CPU (morphax's own c and
numpy backends, arrays in NumPy memory), or the devices of a PJRT plugin -- a TPU through libtpu,
or XLA's CPU plugin as "xla_cpu" (device-resident arrays, one-equation eager programs and the
rest, exercised without a chip) -- where arrays hold the plugin's buffers and every computation
is an XLA program.

Chosen once, at the first computation, as JAX chooses its backends: `jax_platforms` (or
JAX_PLATFORMS) lists the platforms to try in order ("cpu", "tpu", "tpu,cpu", "xla_cpu"); a platform
named alone must open, or the first computation raises saying why. Unset, a TPU is used when
libtpu is installed and opens, with a warning and the CPU otherwise. Finding libtpu opens
nothing (a chip admits one process at a time), and nothing here runs at import."""

from __future__ import annotations

import logging
import threading

from morphax._src.config import config

logger = logging.getLogger("morphax")

PLATFORMS = ("cpu", "tpu", "xla_cpu")
# The plugin platforms: their devices hold the arrays, their programs run every computation.
DEVICE_PLATFORMS = ("tpu", "xla_cpu")

_chosen: list = []  # [the platform], once decided
_failures: dict = {}  # platform -> why it did not open (print_environment_info shows it)
_lock = threading.Lock()
_listeners: list = []


def requested() -> list[str] | None:
    """The platforms `jax_platforms` names, in order (None: unset, choose automatically)."""
    value = config.platforms
    if not value:
        return None
    names = [n.strip().lower() for n in str(value).split(",") if n.strip()]
    unknown = [n for n in names if n not in PLATFORMS]
    if unknown:
        raise RuntimeError(
            f"jax_platforms={value!r}: unknown platform {unknown[0]!r}; morphax knows "
            f"{', '.join(PLATFORMS)} (xla_cpu: XLA's CPU plugin holding device arrays, for tests)."
        )
    return names


def chosen() -> str:
    """The platform of this process ("cpu", "tpu" or "xla_cpu"), decided at the first call."""
    if _chosen:
        return _chosen[0]
    with _lock:
        if not _chosen:
            _chosen.append(_decide())
            if _chosen[0] != "cpu":
                logger.info("morphax: arrays and programs on the %s platform", _chosen[0])
    for fn in _listeners:
        fn(_chosen[0])
    return _chosen[0]


def on_chosen(fn) -> None:
    """Call `fn(platform)` once the platform is decided (at once if it is)."""
    _listeners.append(fn)
    if _chosen:
        fn(_chosen[0])


def failures() -> dict:
    """platform -> why it could not be opened, for the platforms tried and not used."""
    return dict(_failures)


def _decide() -> str:
    from morphax._src.pjrt import plugin as pjrt_plugin

    names = requested()
    explicit = names is not None
    if names is None:
        if pjrt_plugin.find_tpu_plugin() is None:
            return "cpu"
        names = ["tpu", "cpu"]
    for k, name in enumerate(names):
        if name == "cpu":
            return "cpu"
        try:
            _open(name)
            return name
        except Exception as e:  # noqa: BLE001 - reported below, or the next platform is tried
            _failures[name] = f"{type(e).__name__}: {e}"
            if k == len(names) - 1:
                if explicit:
                    raise RuntimeError(
                        f"Unable to initialize backend '{name}': {_failures[name]} (jax_platforms="
                        f"{config.platforms!r}; set JAX_PLATFORMS=cpu to run on the CPU, or add ',cpu' "
                        "to fall back to it)"
                    ) from e
                break
            logger.warning(
                "morphax: unable to initialize backend '%s' (%s); falling back to %s",
                name,
                _failures[name],
                names[k + 1],
            )
    return "cpu"


def _open(name: str) -> None:
    """Open the xla backend on the plugin of platform `name`, its devices holding the arrays."""
    from morphax._src.compiler.backends import get_backend
    from morphax._src.pjrt import plugin as pjrt_plugin

    if name == "tpu":
        path = pjrt_plugin.find_tpu_plugin()
        if path is None:
            raise RuntimeError(
                "libtpu was not found: `pip install libtpu`, or set TPU_LIBRARY_PATH to libtpu.so"
            )
    else:
        path = pjrt_plugin.find_plugin()
        if path is None:
            raise RuntimeError("XLA's CPU plugin was not found: `pip install --no-deps lammps-jax-pjrt-cpu`")
    backend = get_backend("xla")
    try:
        backend.open_for_devices(path, name)
    except Exception as e:
        if name == "tpu":
            raise RuntimeError(f"{type(e).__name__}: {e} ({tpu_lock_hint()})") from e
        raise


def tpu_lock_hint() -> str:
    """What to say when libtpu does not open: the chip admits one process at a time."""
    return (
        "a TPU admits one process at a time: another process holding it (see /tmp/libtpu_lockfile "
        "and `lsof -w /dev/accel*`) must exit first"
    )
