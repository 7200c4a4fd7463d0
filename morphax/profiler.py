"""`morphax.profiler`: traces for ui.perfetto.dev and chrome://tracing, user
annotations, reading traces back, and memory profiles of live arrays, mirroring ``jax.profiler``.
See docs/profiling.md."""

from morphax._src.profiler.annotations import (  # noqa: F401
    StepTraceAnnotation,
    TraceAnnotation,
    annotate_function,
)
from morphax._src.profiler.memory import device_memory_profile, save_device_memory_profile  # noqa: F401
from morphax._src.profiler.profile_data import ProfileData, ProfileEvent, ProfilePlane  # noqa: F401
from morphax._src.profiler.session import (  # noqa: F401
    ProfileOptions,
    register_subprocess,
    start_server,
    start_trace,
    stop_server,
    stop_trace,
    trace,
)

__all__ = [
    "ProfileData",
    "ProfileEvent",
    "ProfileOptions",
    "ProfilePlane",
    "StepTraceAnnotation",
    "TraceAnnotation",
    "annotate_function",
    "device_memory_profile",
    "register_subprocess",
    "save_device_memory_profile",
    "start_server",
    "start_trace",
    "stop_server",
    "stop_trace",
    "trace",
]
