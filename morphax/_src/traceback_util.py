"""Traceback filtering: hide morphax's own frames from errors that reach the user.

`api_boundary` wraps the entry points users call (a jitted function, `grad(f)`, `vmap(f)`,
`make_jaxpr(f)`, ...). When an exception propagates out of the outermost boundary, the frames
whose code lives under the installed ``morphax/_src`` directory are removed from its traceback
and a note says so; the user's frames (their function, their call site) stay. Boundaries nest:
an inner boundary that finds an outer one on the stack leaves the exception alone, so it is
filtered exactly once, by the outermost.

Filtering is off when ``config.traceback_filtering == "off"`` (``config.update(
"jax_traceback_filtering", "off")``) or the environment variable
``MORPHAX_TRACEBACK_FILTERING=off`` (``JAX_TRACEBACK_FILTERING`` is read too). Nothing runs on
the success path beyond the try block; the stack is inspected only when an exception passes.

Imports only the config (it sits with the lowest layers).
"""

from __future__ import annotations

import functools
import os
import sys
import types

from morphax._src.config import config
from morphax._src.wrapping import wraps

_SRC_DIR = os.path.dirname(os.path.abspath(__file__))
_SRC_PREFIX = _SRC_DIR + os.sep

FILTER_NOTE = (
    "--------------------\n"
    "For simplicity, morphax has removed its internal frames from the traceback of this exception. "
    "Set MORPHAX_TRACEBACK_FILTERING=off, or call "
    "morphax.config.update('jax_traceback_filtering', 'off'), to include them."
)

_internal_cache: dict[str, bool] = {}


def is_internal_filename(filename: str) -> bool:
    """True for source files of morphax's implementation (under ``morphax/_src``)."""
    hit = _internal_cache.get(filename)
    if hit is None:
        hit = _internal_cache[filename] = os.path.abspath(filename).startswith(_SRC_PREFIX)
    return hit


# Files of libraries built on the JAX API (flax, equinox, jaxtyping) that asked, through
# `register_exclusion` (JAX's `jax._src.traceback_util` names), to be hidden like morphax's own.
_exclude_paths: list[str] = []


def register_exclusion(path: str) -> None:
    """Hide frames of files under `path` from filtered tracebacks, as morphax's own frames."""
    if path not in _exclude_paths:
        _exclude_paths.append(path)


def include_frame(frame: types.FrameType) -> bool:
    """Whether a filtered traceback keeps `frame` (it is neither morphax's nor excluded)."""
    return not _is_hidden(frame.f_code.co_filename)


def _is_hidden(filename: str) -> bool:
    if is_internal_filename(filename):
        return True
    return any(filename.startswith(path) for path in _exclude_paths)


def filtering_mode() -> str:
    """ "off" or "remove_frames"."""
    mode = getattr(config, "traceback_filtering", "auto")
    if mode in (None, "auto"):
        mode = (
            os.environ.get("MORPHAX_TRACEBACK_FILTERING")
            or os.environ.get("JAX_TRACEBACK_FILTERING")
            or "auto"
        )
    return "off" if str(mode).strip().lower() == "off" else "remove_frames"


def filter_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """A traceback chain holding only the non-internal entries of `tb`, in order (`tb` itself
    when it has no internal entries)."""
    entries, kept = 0, []
    while tb is not None:
        entries += 1
        if not _is_hidden(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    if len(kept) == entries:
        return kept[0] if kept else None
    out = None
    for entry in reversed(kept):
        out = types.TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out


def _under_outer_boundary(frame: types.FrameType | None) -> bool:
    """True when a boundary wrapper is running in `frame` or any of its callers."""
    while frame is not None:
        if frame.f_code in _BOUNDARY_CODES:
            return True
        frame = frame.f_back
    return False


class SimplifiedTraceback(Exception):
    """Stands in for the note on Pythons without ``add_note`` (< 3.11): chained as the cause
    of the filtered exception, it prints the note above it."""

    def __str__(self):
        return FILTER_NOTE


def _add_note(e: BaseException, note: str) -> None:
    if hasattr(e, "add_note"):  # Python >= 3.11 prints notes after the message
        if note not in getattr(e, "__notes__", ()):
            e.add_note(note)
        return
    if isinstance(e.__cause__, SimplifiedTraceback):
        return
    marker = SimplifiedTraceback()
    marker.__cause__, marker.__context__ = e.__cause__, e.__context__
    marker.__suppress_context__ = e.__suppress_context__
    e.__cause__ = marker


def api_boundary(fun):
    """Wrap `fun` so exceptions leaving it have morphax-internal frames removed (see module doc)."""

    @wraps(fun)
    def reraise_with_filtered_traceback(*args, **kwargs):
        try:
            return fun(*args, **kwargs)
        except Exception as e:
            filter_leaving_boundary(e, sys._getframe().f_back)
            raise  # a bare raise re-raises without adding this frame back

    return reraise_with_filtered_traceback


def filter_leaving_boundary(e: BaseException, caller) -> None:
    """What a boundary does to an exception leaving it, called from its except block (whose
    bare `raise` then re-raises it): the outermost boundary filters the traceback; inner ones
    (a boundary running in `caller` or above it) leave it alone."""
    if _under_outer_boundary(caller) or filtering_mode() == "off":
        return
    tb, filtered = e.__traceback__, None
    try:
        filtered = filter_traceback(tb)
        if filtered is not tb:
            e.with_traceback(filtered)
            _add_note(e, FILTER_NOTE)
    finally:
        del tb, filtered  # frames and tracebacks would otherwise form cycles


def register_boundary(function):
    """Mark `function`, which handles exceptions with `filter_leaving_boundary` itself, as a
    boundary (a jitted function's `__call__`, whose fast path has no wrapper frame to spare)."""
    _BOUNDARY_CODES.add(function.__code__)
    return function


_BOUNDARY_CODES = {api_boundary(lambda: None).__code__}


def transformation_boundary(transform):
    """For transformations that return a function (`grad`, `vmap`, ...): a boundary both around
    building the function and around every call of the function it returns."""
    transform_b = api_boundary(transform)

    @functools.wraps(transform)
    def wrapped_transform(*args, **kwargs):
        out = transform_b(*args, **kwargs)
        return api_boundary(out) if callable(out) and not isinstance(out, type) else out

    return wrapped_transform
