"""User annotations on the profiler's timeline: `TraceAnnotation`, `StepTraceAnnotation` and the
`annotate_function` decorator. Outside a trace they cost one flag read on entry."""

from __future__ import annotations

import functools
from collections.abc import Callable

from morphax._src import events

_JSON_SCALARS = (str, int, float, bool, type(None))


def _json_args(kwargs: dict) -> dict | None:
    # Anything the trace file cannot hold as a JSON value is shown as its str().
    if not kwargs:
        return None
    return {k: v if isinstance(v, _JSON_SCALARS) else str(v) for k, v in kwargs.items()}


class TraceAnnotation:
    """Context manager that puts a span named `name` on the trace timeline for the code it
    encloses, on the thread running it; keyword arguments appear as the span's arguments.

    >>> with morphax.profiler.TraceAnnotation("my_label", batch=3):  # doctest: +SKIP
    ...     result = jnp.dot(x, x.T).block_until_ready()
    """

    __slots__ = ("name", "_kwargs", "_start")
    _category = "annotation"

    def __init__(self, name: str, **kwargs):
        if not isinstance(name, str):
            raise TypeError(
                f"{type(self).__name__}: name must be a string, got {name!r} of type {type(name).__name__}."
            )
        self.name = name
        self._kwargs = kwargs
        self._start = 0

    def __enter__(self):
        self._start = events.now() if events.on else 0
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._start and events.on:
            events.complete(self.name, self._category, self._start, None, _json_args(self._kwargs))
        self._start = 0

    def set_metadata(self, **kwargs) -> None:
        """Add (or replace) arguments of the span, e.g. values known only inside the block."""
        self._kwargs.update(kwargs)

    @staticmethod
    def is_enabled() -> bool:
        """Whether a trace is being collected (spans are recorded)."""
        return events.on


class StepTraceAnnotation(TraceAnnotation):
    """A `TraceAnnotation` marking one step of a loop (a training step); pass `step_num=` so
    the step's number shows with it on the timeline.

    >>> for step in range(num_steps):  # doctest: +SKIP
    ...     with morphax.profiler.StepTraceAnnotation("train", step_num=step):
    ...         state = train_step(state)
    """

    __slots__ = ()
    _category = "step"


def annotate_function(func: Callable, name: str | None = None, **decorator_kwargs):
    """Decorator putting a span on the timeline for each call of `func`, named `name` (default:
    its qualified name), with `decorator_kwargs` as the span's arguments. Pass options with
    ``functools.partial(annotate_function, name="...")``."""
    if not callable(func):
        raise TypeError(f"annotate_function: expected a callable, got {func!r}")
    name = name or getattr(func, "__qualname__", None) or func.__name__

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with TraceAnnotation(name, **decorator_kwargs):
            return func(*args, **kwargs)

    return wrapper
