"""`morphax.monitoring` (`jax.monitoring`): named events that code can record and listeners can
observe. Libraries record events (flax's checkpointing records saves and their durations); a
listener registered here is called with each one, in registration order.

Four kinds of record, each with its listeners: an event (``record_event(name, **tags)``), a
duration in seconds, a time span (start and end times) and a scalar value.
"""

from __future__ import annotations

from collections.abc import Callable

_listeners: dict[str, list[Callable]] = {"event": [], "duration": [], "time_span": [], "scalar": []}


def _notify(kind: str, *args, **tags) -> None:
    for listener in list(_listeners[kind]):
        listener(*args, **tags)


def record_event(event: str, **kwargs) -> None:
    """Record that `event` happened; listeners get ``(event, **kwargs)``."""
    _notify("event", event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs) -> None:
    """Record how long `event` took; listeners get ``(event, duration, **kwargs)``."""
    _notify("duration", event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs) -> None:
    """Record when `event` started and ended; listeners get ``(event, start, end, **kwargs)``."""
    _notify("time_span", event, start_time, end_time, **kwargs)


def record_scalar(event: str, value, **kwargs) -> None:
    """Record a value for `event`; listeners get ``(event, value, **kwargs)``."""
    _notify("scalar", event, value, **kwargs)


def register_event_listener(callback) -> None:
    _listeners["event"].append(callback)


def register_event_duration_secs_listener(callback) -> None:
    _listeners["duration"].append(callback)


def register_event_time_span_listener(callback) -> None:
    _listeners["time_span"].append(callback)


def register_scalar_listener(callback) -> None:
    _listeners["scalar"].append(callback)


def _unregister(kind: str, callback) -> None:
    if callback not in _listeners[kind]:  # NB: JAX fails an assert here; a ValueError says why
        raise ValueError(f"unregister: {callback!r} is not a registered {kind} listener")
    _listeners[kind].remove(callback)


def unregister_event_listener(callback) -> None:
    _unregister("event", callback)


def unregister_event_duration_listener(callback) -> None:
    _unregister("duration", callback)


def unregister_event_time_span_listener(callback) -> None:
    _unregister("time_span", callback)


def unregister_scalar_listener(callback) -> None:
    _unregister("scalar", callback)


def get_event_listeners() -> list:
    return list(_listeners["event"])


def get_event_duration_listeners() -> list:
    return list(_listeners["duration"])


def get_event_time_span_listeners() -> list:
    return list(_listeners["time_span"])


def get_scalar_listeners() -> list:
    return list(_listeners["scalar"])


def clear_event_listeners() -> None:
    """Remove every listener of every kind."""
    for listeners in _listeners.values():
        listeners.clear()


__all__ = [
    "clear_event_listeners",
    "record_event",
    "record_event_duration_secs",
    "record_event_time_span",
    "record_scalar",
    "register_event_duration_secs_listener",
    "register_event_listener",
    "register_event_time_span_listener",
    "register_scalar_listener",
    "unregister_event_duration_listener",
    "unregister_event_listener",
    "unregister_event_time_span_listener",
    "unregister_scalar_listener",
]
