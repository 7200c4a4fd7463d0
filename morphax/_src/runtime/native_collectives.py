"""The native half of the in-process all-reduce: a small C library that reduces one rank's share
of a large float32/float64 all-reduce and then waits for the other ranks at a barrier, all with
the GIL released (ctypes releases it around every call).

`ThreadCommunicator` (communicators.py) still meets in Python first, where the signatures are
checked and the result arrays are allocated; then each rank calls `reduce_share_and_wait`: it
reduces elements [n*rank/size, n*(rank+1)/size) of every operand, in rank order (the same bits
as one rank reducing everything with NumPy: sum adds pairwise left to right, max/min propagate
NaN as np.maximum/np.minimum do), writes them straight into every rank's result, and publishes
its arrival in a shared array of counters (`Arrivals`). The wait spins briefly, then yields,
then sleeps in short steps; it polls the communicator's abort flag and a deadline, and returns
a code (`DONE`, `ABORTED`, `TIMED_OUT`) for the caller to raise.

The library is built once per machine with the C backend's compiler and disk cache (build.py);
without a working compiler `library()` is None and the communicator keeps its NumPy path.
"""

from __future__ import annotations

import ctypes
import logging
import threading

import numpy as np

logger = logging.getLogger("morphax")

OPS = {"sum": 0, "max": 1, "min": 2}
# Element kinds the library reduces; an operand of any other dtype is reduced with NumPy.
KINDS = {np.dtype(np.float32): 1, np.dtype(np.float64): 2}
SKIP = 0
DONE, ABORTED, TIMED_OUT = 0, 1, 2
# Each rank's arrival counter sits in its own 64-byte cache line (8 int64s).
SLOT_STRIDE = 8

# native_all_reduces: collective calls whose floating operands the library reduced (one per
# call, counted by the rank that combines the meeting).
stats = {"native_all_reduces": 0}

SOURCE = r"""
#include <stdint.h>
#include <string.h>
#include <sched.h>
#include <time.h>

enum { OP_SUM = 0, OP_MAX = 1, OP_MIN = 2 };
enum { KIND_SKIP = 0, KIND_F32 = 1, KIND_F64 = 2 };
enum { WAIT_DONE = 0, WAIT_ABORTED = 1, WAIT_TIMED_OUT = 2 };

#define SLOT_STRIDE 8
/* Elements reduced at a time (8 KiB of float32): the block of the first result stays in L1/L2
 * while the later ranks are added into it and it is copied into the other results. */
#define BLOCK 2048
/* Polls of a missing rank before yielding the CPU, and yields before sleeping. */
#define SPIN_POLLS 2000
#define YIELD_POLLS 200
#define SLEEP_NS 50000

/* Pause inside a spin loop (lets the sibling hyperthread run; no-op elsewhere). */
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Seconds on the monotonic clock. */
static double monotonic_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* max and min as NumPy's np.maximum / np.minimum: the left operand when it is NaN or strictly
 * greater (smaller), else the right one (signed zeros and NaN payloads as NumPy gives them). */
#define MAX_OF(a, b) ((((a) != (a)) | ((a) > (b))) ? (a) : (b))
#define MIN_OF(a, b) ((((a) != (a)) | ((a) < (b))) ? (a) : (b))

/* reduce_f32 / reduce_f64: elements [lo, hi) of one operand, where inputs[r] is rank r's array
 * and outputs[r] rank r's result. Block by block: rank 0's and rank 1's values are combined
 * into result 0, each later rank's folded in, in rank order (NumPy's rounding), and the block is
 * copied into every other result. */
#define DEFINE_REDUCE(T, SUFFIX)                                                              \
  static void reduce_##SUFFIX(int op, int nranks, int64_t lo, int64_t hi,                    \
                              void *const *inputs, void *const *outputs) {                   \
    for (int64_t start = lo; start < hi; start += BLOCK) {                                    \
      int64_t len = hi - start < BLOCK ? hi - start : BLOCK;                                  \
      T *restrict acc = (T *)outputs[0] + start;                                              \
      const T *first = (const T *)inputs[0] + start;                                          \
      if (nranks == 1) {                                                                      \
        memcpy(acc, first, (size_t)len * sizeof(T));                                          \
        continue;                                                                             \
      }                                                                                       \
      const T *second = (const T *)inputs[1] + start;                                         \
      if (op == OP_SUM) {                                                                     \
        for (int64_t i = 0; i < len; i++) acc[i] = first[i] + second[i];                      \
      } else if (op == OP_MAX) {                                                              \
        for (int64_t i = 0; i < len; i++) acc[i] = MAX_OF(first[i], second[i]);               \
      } else {                                                                                \
        for (int64_t i = 0; i < len; i++) acc[i] = MIN_OF(first[i], second[i]);               \
      }                                                                                       \
      for (int r = 2; r < nranks; r++) {                                                      \
        const T *x = (const T *)inputs[r] + start;                                            \
        if (op == OP_SUM) {                                                                   \
          for (int64_t i = 0; i < len; i++) acc[i] = acc[i] + x[i];                           \
        } else if (op == OP_MAX) {                                                            \
          for (int64_t i = 0; i < len; i++) acc[i] = MAX_OF(acc[i], x[i]);                    \
        } else {                                                                              \
          for (int64_t i = 0; i < len; i++) acc[i] = MIN_OF(acc[i], x[i]);                    \
        }                                                                                     \
      }                                                                                       \
      for (int r = 1; r < nranks; r++)                                                        \
        memcpy((T *)outputs[r] + start, acc, (size_t)len * sizeof(T));                       \
    }                                                                                         \
  }

DEFINE_REDUCE(float, f32)
DEFINE_REDUCE(double, f64)

/* Publish this rank's arrival at barrier number `ticket` (1, 2, ...) and wait until every rank
 * has arrived at it: spin, then yield, then sleep in short steps. Returns WAIT_ABORTED when
 * *abort_flag is set (on arrival or while waiting), WAIT_TIMED_OUT after timeout_s seconds, else WAIT_DONE. The release
 * store and acquire loads order each rank's writes into the results before the others return. */
int mx_wait_all(int64_t *arrivals, int nranks, int rank, int64_t ticket, const int32_t *abort_flag,
                double timeout_s) {
  __atomic_store_n(&arrivals[(int64_t)rank * SLOT_STRIDE], ticket, __ATOMIC_RELEASE);
  /* A communicator that failed fails every later wait, as its Python meetings do. */
  if (__atomic_load_n(abort_flag, __ATOMIC_RELAXED)) return WAIT_ABORTED;
  double deadline = monotonic_seconds() + timeout_s;
  long polls = 0;
  for (int r = 0; r < nranks; r++) {
    while (__atomic_load_n(&arrivals[(int64_t)r * SLOT_STRIDE], __ATOMIC_ACQUIRE) < ticket) {
      if (__atomic_load_n(abort_flag, __ATOMIC_RELAXED)) return WAIT_ABORTED;
      polls++;
      if (polls < SPIN_POLLS) {
        cpu_relax();
        continue;
      }
      if (monotonic_seconds() > deadline) return WAIT_TIMED_OUT;
      if (polls < SPIN_POLLS + YIELD_POLLS) {
        sched_yield();
      } else {
        struct timespec pause = {0, SLEEP_NS};
        nanosleep(&pause, NULL);
      }
    }
  }
  return WAIT_DONE;
}

/* This rank's share of an all-reduce of `nops` operands over `nranks` ranks, then the barrier.
 * Operand j has sizes[j] elements of kinds[j] (KIND_SKIP: reduced elsewhere); rank r's input and
 * result are inputs[j * nranks + r] and outputs[j * nranks + r]. Returns mx_wait_all's code. */
int mx_reduce_share_and_wait(int op, int nranks, int rank, int nops, const int64_t *sizes,
                             const int32_t *kinds, void *const *inputs, void *const *outputs,
                             int64_t *arrivals, int64_t ticket, const int32_t *abort_flag,
                             double timeout_s) {
  for (int j = 0; j < nops; j++) {
    int64_t n = sizes[j];
    int64_t lo = n * rank / nranks, hi = n * (rank + 1) / nranks;
    void *const *in = inputs + (int64_t)j * nranks;
    void *const *out = outputs + (int64_t)j * nranks;
    if (kinds[j] == KIND_F32)
      reduce_f32(op, nranks, lo, hi, in, out);
    else if (kinds[j] == KIND_F64)
      reduce_f64(op, nranks, lo, hi, in, out);
  }
  return mx_wait_all(arrivals, nranks, rank, ticket, abort_flag, timeout_s);
}
"""

_state: dict = {}
_lock = threading.Lock()


def library():
    """The loaded library, or None where it cannot be built (no working C compiler): tried once
    per process."""
    lib = _state.get("lib", False)
    if lib is False:
        with _lock:
            if "lib" not in _state:
                _state["lib"] = _build()
            lib = _state["lib"]
    return lib


def _build():
    from morphax._src.compiler.backends.c import build

    try:
        ok, why = build.probe()
        if not ok:
            logger.info("morphax: no native all-reduce (%s); reducing with NumPy.", why)
            return None
        lib = build.load(SOURCE, "native_collectives")
    except (build.CompileError, OSError) as e:
        logger.info("morphax: the native all-reduce did not build (%s); reducing with NumPy.", e)
        return None
    i64p, i32p, vpp = ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int32), ctypes.c_void_p
    wait = lib.mx_wait_all
    wait.argtypes = [i64p, ctypes.c_int, ctypes.c_int, ctypes.c_int64, i32p, ctypes.c_double]
    wait.restype = ctypes.c_int
    share = lib.mx_reduce_share_and_wait
    share.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, i64p, i32p, vpp, vpp]
    share.argtypes += [i64p, ctypes.c_int64, i32p, ctypes.c_double]
    share.restype = ctypes.c_int
    return lib


def new_arrivals(size: int):
    """The barrier's shared counters for `size` ranks (zeros: nobody has arrived anywhere)."""
    return (ctypes.c_int64 * (size * SLOT_STRIDE))()


def arrived(arrivals, rank: int) -> int:
    """The last barrier number `rank` arrived at."""
    return arrivals[rank * SLOT_STRIDE]


def new_abort_flag():
    """A flag every native wait polls: set it (`.value = 1`) to make them return ABORTED."""
    return ctypes.c_int32(0)


def addresses(inputs, outputs) -> tuple:
    """The data addresses of one rank's operands and results (each rank takes its own before
    the meeting, so the rank that combines it only gathers them)."""
    return [x.ctypes.data for x in inputs], [o.ctypes.data for o in outputs]


class Plan:
    """One all-reduce call's operands as the library takes them (built once per call by the rank
    that combines the meeting, shared by all): element counts, kinds, and every rank's input and
    result addresses. `entries[r]` is rank r's (inputs, results, addresses(inputs, results));
    the inputs must be C-contiguous and aligned."""

    __slots__ = ("op", "size", "n_ops", "sizes", "kinds", "inputs", "outputs", "numpy_operands", "entries")

    def __init__(self, op: str, entries):
        size, first = len(entries), entries[0][0]
        n_ops = len(first)
        self.op, self.size, self.n_ops = OPS[op], size, n_ops
        kinds = [KINDS.get(np.dtype(x.dtype), SKIP) for x in first]
        self.numpy_operands = [j for j, k in enumerate(kinds) if k == SKIP]
        self.sizes = (ctypes.c_int64 * n_ops)(*[x.size for x in first])
        self.kinds = (ctypes.c_int32 * n_ops)(*kinds)
        pointers = ctypes.c_void_p * (n_ops * size)
        self.inputs = pointers(*[e[2][0][j] for j in range(n_ops) for e in entries])
        self.outputs = pointers(*[e[2][1][j] for j in range(n_ops) for e in entries])
        self.entries = entries  # the addresses stay valid while the plan lives


def reduce_share_and_wait(lib, plan: Plan, rank: int, arrivals, ticket: int, abort_flag, timeout: float):
    """Rank `rank`'s share of every floating operand of `plan`, written into every rank's result,
    then the barrier number `ticket`: DONE, ABORTED or TIMED_OUT. The GIL is released throughout."""
    return lib.mx_reduce_share_and_wait(
        plan.op,
        plan.size,
        rank,
        plan.n_ops,
        plan.sizes,
        plan.kinds,
        plan.inputs,
        plan.outputs,
        arrivals,
        ticket,
        ctypes.byref(abort_flag),
        timeout,
    )
