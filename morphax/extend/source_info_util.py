"""`morphax.extend.source_info_util` (`jax.extend.source_info_util`): where traced operations come
from. morphax records no source locations in its jaxprs, so these are the names with their
neutral values: an empty name stack, no user frame, and exclusions that are remembered (a file
registered here is hidden from filtered tracebacks, as by `jax._src.traceback_util`)."""

from __future__ import annotations

import contextlib
import dataclasses

from morphax._src import traceback_util as _traceback_util


@dataclasses.dataclass(frozen=True)
class NameStack:
    """The scope names around an operation (``outer/inner``)."""

    stack: tuple = ()

    def extend(self, name) -> NameStack:
        names = name if isinstance(name, tuple) else (name,)
        return NameStack(self.stack + tuple(names))

    def __str__(self):
        return "/".join(map(str, self.stack))


@dataclasses.dataclass(frozen=True)
class SourceInfo:
    traceback: object = None
    name_stack: NameStack = NameStack()


_exclusions: list[str] = []


def register_exclusion(path: str) -> None:
    """Treat frames from files under `path` as library frames, not the user's."""
    _exclusions.append(path)
    register = getattr(_traceback_util, "register_exclusion", None)
    if register is not None:
        register(path)


def new_name_stack(name: str = "") -> NameStack:
    return NameStack((name,) if name else ())


def current() -> SourceInfo:
    return SourceInfo()


def new_source_info() -> SourceInfo:
    return SourceInfo()


def current_name_stack() -> NameStack:
    return NameStack()


@contextlib.contextmanager
def extend_name_stack(name):
    yield NameStack((name,))


@contextlib.contextmanager
def set_name_stack(name_stack):
    yield name_stack


@contextlib.contextmanager
def reset_name_stack():
    yield NameStack()


@contextlib.contextmanager
def transform_name_stack(name):
    yield NameStack()


@contextlib.contextmanager
def user_context(c, *, name_stack=None):
    yield


def summarize(source_info, num_frames=1) -> str:
    return "unknown"


__all__ = [
    "NameStack",
    "SourceInfo",
    "current",
    "current_name_stack",
    "extend_name_stack",
    "new_name_stack",
    "new_source_info",
    "register_exclusion",
    "reset_name_stack",
    "set_name_stack",
    "summarize",
    "transform_name_stack",
    "user_context",
]
