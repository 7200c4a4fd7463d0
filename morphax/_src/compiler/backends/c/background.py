"""Background builds: one worker thread runs the C compiler for programs whose libraries no cache
holds yet, while those programs run their kernels with NumPy (see `CBackend.build`).

One worker, because the compiler competes for the same cores as the program it builds for: on a
small machine two parallel builds would slow the running program down more than they gain.
`wait()` blocks until every build submitted so far has finished (tests, benchmarks, and a
process that wants its native kernels before timing them).
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading

from morphax._src.config import config

logger = logging.getLogger("morphax")

_jobs: queue.Queue = queue.Queue()
_worker: list = []
_start_lock = threading.Lock()
_idle = threading.Condition()
_pending = 0


def submit(job) -> None:
    """Run `job()` on the build thread (started on first use; a daemon, so a build still running
    at exit does not hold the interpreter: the disk cache only ever publishes whole entries)."""
    global _pending
    with _idle:
        _pending += 1
    with _start_lock:
        if not _worker:
            thread = threading.Thread(target=_run, name="morphax-c-build", daemon=True)
            thread.start()
            _worker.append(thread)
    flags = config.snapshot()  # build under the flags of the thread that asked (x64, ...)

    def job_with_flags():
        with config.adopted(flags):
            job()

    _jobs.put(job_with_flags)


def _run() -> None:
    global _pending
    while True:
        job = _jobs.get()
        try:
            job()
        except Exception:  # never kill the worker: later builds still need it
            logger.exception("morphax: a background C build failed; the program keeps its NumPy kernels")
        finally:
            with _idle:
                _pending -= 1
                _idle.notify_all()


@atexit.register
def _finish_at_exit() -> None:
    # A short script would otherwise exit before its builds finish, and never find its native
    # kernels in the disk cache: the builds it started complete (once) before the process ends.
    wait()


def pending() -> int:
    """Builds submitted and not yet finished."""
    return _pending


def wait(timeout: float | None = None) -> bool:
    """Block until every build submitted so far has finished; False if `timeout` ran out first."""
    with _idle:
        return _idle.wait_for(lambda: _pending == 0, timeout)
