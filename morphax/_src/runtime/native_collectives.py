"""The native half of the in-process all-reduce: a small C library that reduces the float32 and
float64 operands of a large all-reduce, with the GIL released (ctypes releases it around every
call), and waits until every element is reduced.

`ThreadCommunicator` (communicators.py) still meets in Python first, where the signatures are
checked and every rank shows its operands and its (freshly allocated) results; then every rank
calls `reduce_and_wait`. The elements are cut into chunks (`CHUNK_ELEMENTS` of one operand),
which the ranks claim from a shared counter, so a rank that starts late (descheduled, or waiting
for the GIL) finds its work done by the others instead of holding them up. A chunk is reduced in
rank order (the same bits as one rank reducing everything with NumPy: sum adds left to right,
max/min propagate NaN as np.maximum/np.minimum do) and written straight into every rank's
result. A rank returns once every chunk is complete; its wait spins briefly, then yields, then
sleeps in short steps, polling the communicator's abort flag and a deadline, and it returns a
code (`DONE`, `ABORTED`, `TIMED_OUT`) for the caller to raise.

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
# Elements of one operand reduced per claim: large enough that claiming (one atomic
# compare-and-swap) costs nothing, small enough that two ranks share a 2.7 MB reduce evenly.
CHUNK_ELEMENTS = 1 << 14
# The shared counters (int64 words, each in its own 64-byte cache line): chunks claimed and
# chunks completed over all calls, then the last call each rank arrived at.
CLAIMED, COMPLETED, FIRST_ARRIVAL, STRIDE = 0, 8, 16, 8

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

/* The shared counters of one communicator (see the Python constants of the same names). */
#define CLAIMED 0
#define COMPLETED 8
#define ARRIVED(rank) (16 + (int64_t)(rank)*8)

/* Chunks of `chunk` elements that cover n elements. */
static int64_t chunks_of(int64_t n, int64_t chunk) { return (n + chunk - 1) / chunk; }

/* Reduce chunk `index` of a call (chunks numbered operand by operand, skipping the operands of
 * kind KIND_SKIP) into every rank's result. */
static void reduce_chunk(int op, int nranks, int nops, const int64_t *sizes, const int32_t *kinds,
                         void *const *inputs, void *const *outputs, int64_t chunk, int64_t index) {
  for (int j = 0; j < nops; j++) {
    if (kinds[j] == KIND_SKIP) continue;
    int64_t count = chunks_of(sizes[j], chunk);
    if (index < count) {
      int64_t lo = index * chunk;
      int64_t hi = sizes[j] - lo < chunk ? sizes[j] : lo + chunk;
      void *const *in = inputs + (int64_t)j * nranks;
      void *const *out = outputs + (int64_t)j * nranks;
      if (kinds[j] == KIND_F32)
        reduce_f32(op, nranks, lo, hi, in, out);
      else
        reduce_f64(op, nranks, lo, hi, in, out);
      return;
    }
    index -= count;
  }
}

/* Wait until the shared count of completed chunks reaches `target`: spin, then yield, then sleep
 * in short steps. Returns WAIT_ABORTED when *abort_flag is set (on entry or while waiting),
 * WAIT_TIMED_OUT after timeout_s seconds, else WAIT_DONE. Every completion is a release and
 * this load an acquire, so the results written by the other ranks are visible on return. */
int mx_wait_completed(int64_t *shared, int64_t target, const int32_t *abort_flag, double timeout_s) {
  if (__atomic_load_n(abort_flag, __ATOMIC_RELAXED)) return WAIT_ABORTED;
  double deadline = -1.0;
  long polls = 0;
  while (__atomic_load_n(&shared[COMPLETED], __ATOMIC_ACQUIRE) < target) {
    if (__atomic_load_n(abort_flag, __ATOMIC_RELAXED)) return WAIT_ABORTED;
    polls++;
    if (polls < SPIN_POLLS) {
      cpu_relax();
      continue;
    }
    double now = monotonic_seconds();
    if (deadline < 0.0) deadline = now + timeout_s;
    if (now > deadline) return WAIT_TIMED_OUT;
    if (polls < SPIN_POLLS + YIELD_POLLS) {
      sched_yield();
    } else {
      struct timespec pause = {0, SLEEP_NS};
      nanosleep(&pause, NULL);
    }
  }
  return WAIT_DONE;
}

/* One rank's part of an all-reduce of `nops` operands over `nranks` ranks. Operand j has
 * sizes[j] elements of kinds[j] (KIND_SKIP: reduced by the caller, with NumPy); rank r's input
 * and result are inputs[j * nranks + r] and outputs[j * nranks + r]. The rank records its
 * arrival at call number `call`, counts its NumPy share as one completed chunk if
 * `numpy_share_done`, claims and reduces chunks first_chunk .. first_chunk + n_chunks - 1
 * until none is left, then waits until `completed_target` chunks are complete. Returns
 * mx_wait_completed's code. */
int mx_all_reduce(int op, int nranks, int rank, int nops, const int64_t *sizes,
                  const int32_t *kinds, void *const *inputs, void *const *outputs, int64_t chunk,
                  int64_t *shared, int64_t call, int64_t first_chunk, int64_t n_chunks,
                  int64_t completed_target, int numpy_share_done, const int32_t *abort_flag,
                  double timeout_s) {
  __atomic_store_n(&shared[ARRIVED(rank)], call, __ATOMIC_RELEASE);
  if (numpy_share_done) __atomic_fetch_add(&shared[COMPLETED], 1, __ATOMIC_RELEASE);
  int64_t end = first_chunk + n_chunks;
  int64_t next = __atomic_load_n(&shared[CLAIMED], __ATOMIC_RELAXED);
  while (next < end && !__atomic_load_n(abort_flag, __ATOMIC_RELAXED)) {
    /* On failure `next` becomes the counter's current value: try again with it. */
    if (__atomic_compare_exchange_n(&shared[CLAIMED], &next, next + 1, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED)) {
      reduce_chunk(op, nranks, nops, sizes, kinds, inputs, outputs, chunk, next - first_chunk);
      __atomic_fetch_add(&shared[COMPLETED], 1, __ATOMIC_RELEASE);
      next = __atomic_load_n(&shared[CLAIMED], __ATOMIC_RELAXED);
    }
  }
  return mx_wait_completed(shared, completed_target, abort_flag, timeout_s);
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
    global _address
    _address = _address_checked()
    i64p, i32p, vpp = ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int32), ctypes.c_void_p
    wait = lib.mx_wait_completed
    wait.argtypes = [i64p, ctypes.c_int64, i32p, ctypes.c_double]
    wait.restype = ctypes.c_int
    reduce = lib.mx_all_reduce
    reduce.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, i64p, i32p, vpp, vpp]
    reduce.argtypes += [ctypes.c_int64, i64p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
    reduce.argtypes += [ctypes.c_int64, ctypes.c_int, i32p, ctypes.c_double]
    reduce.restype = ctypes.c_int
    return lib


class Counters:
    """The counters one communicator's ranks share (made by the rank that combines its first
    native all-reduce), and the totals every call adds to them: a call's chunks are numbered
    after all earlier calls' chunks, so a rank still looking for work in an earlier call never
    claims a later call's chunk."""

    def __init__(self, size: int):
        self.words = (ctypes.c_int64 * (FIRST_ARRIVAL + size * STRIDE))()
        self.calls = 0
        self.claimed = 0  # chunks of all calls so far
        self.completed = 0  # completions of all calls so far (chunks, and ranks' NumPy shares)

    def arrived(self, rank: int) -> int:
        """The last call number `rank` arrived at."""
        return self.words[FIRST_ARRIVAL + rank * STRIDE]


def new_abort_flag():
    """A flag every native wait polls: set it (`.value = 1`) to make them return ABORTED."""
    return ctypes.c_int32(0)


def addresses(inputs, outputs) -> tuple:
    """The data addresses of one rank's operands and results (each rank takes its own before
    the meeting, so the rank that combines it only gathers them)."""
    return [_address(x) for x in inputs], [_address(o) for o in outputs]


def _address_by_header(x) -> int:
    """The data address of NumPy array `x`, read where NumPy's C API reads it (PyArray_DATA:
    the first field after the object header): 0.2 us instead of 2 us for `x.ctypes.data`, which
    the 14 addresses of a 7-operand call on each rank, under the GIL, turn into 30 us."""
    return _from_address(id(x) + _HEADER).value


def _address_checked():
    """`_address_by_header` where it agrees with `ndarray.ctypes` on a few arrays (views at an
    offset, read-only, 0-d, empty) on this interpreter and NumPy, else `x.ctypes.data`."""
    base = np.arange(64, dtype=np.float64)
    probes = [base, base[5:], base[::3], np.zeros((), np.float32), np.empty(0)]
    probes.append(np.frombuffer(b"\0" * 16, np.uint8))  # read-only
    try:
        if all(_address_by_header(x) == x.ctypes.data for x in probes):
            return _address_by_header
    except (ValueError, OverflowError):  # pragma: no cover - an unexpected object layout
        pass
    return lambda x: x.ctypes.data


_HEADER = object.__basicsize__
_from_address = ctypes.c_void_p.from_address
_address = None  # chosen with the library (`_build`)


class Plan:
    """One all-reduce call as the library takes it, built by the rank that combines the meeting
    and shared by all: element counts, kinds, every rank's input and result addresses, and the
    call's place in the counters. `entries[r]` is rank r's (inputs, results,
    addresses(inputs, results)); the inputs must be C-contiguous and aligned."""

    __slots__ = (
        "op",
        "size",
        "n_ops",
        "sizes",
        "kinds",
        "inputs",
        "outputs",
        "numpy_operands",
        "entries",
        "counters",
        "call",
        "first_chunk",
        "n_chunks",
        "completed_target",
    )

    def __init__(self, op: str, entries, counters: Counters):
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
        self.counters = counters
        counters.calls += 1
        self.call = counters.calls
        self.first_chunk = counters.claimed
        self.n_chunks = sum(-(-x.size // CHUNK_ELEMENTS) for x, k in zip(first, kinds) if k != SKIP)
        counters.claimed += self.n_chunks
        counters.completed += self.n_chunks + (size if self.numpy_operands else 0)
        self.completed_target = counters.completed


def reduce_and_wait(lib, plan: Plan, rank: int, abort_flag, timeout: float) -> int:
    """Rank `rank`'s part of `plan` (its NumPy share, if any, already written): claim and reduce
    chunks while any is left, then wait until all are complete. DONE, ABORTED or TIMED_OUT; the
    GIL is released throughout."""
    return lib.mx_all_reduce(
        plan.op,
        plan.size,
        rank,
        plan.n_ops,
        plan.sizes,
        plan.kinds,
        plan.inputs,
        plan.outputs,
        CHUNK_ELEMENTS,
        plan.counters.words,
        plan.call,
        plan.first_chunk,
        plan.n_chunks,
        plan.completed_target,
        1 if plan.numpy_operands else 0,
        ctypes.byref(abort_flag),
        timeout,
    )
