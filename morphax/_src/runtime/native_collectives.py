"""The native half of the in-process all-reduce: a small C library that meets the other ranks,
reduces the float32/float64 operands of a large all-reduce and waits until every element is
reduced, all with the GIL released (ctypes releases it around every call).

Each rank first records its call in the communicator's Python round (communicators.py): no
waiting there, but the last to record checks that every rank called the same collective on the
same shapes and dtypes, and marks a mismatch for the native side. Then each rank calls
`meet_and_reduce`: it publishes its call number and a table of its operand and result addresses
in the communicator's shared words (`Words`), waits until every rank has published (or the
mismatch mark, the abort flag or the deadline says to stop), and claims chunks of the elements
(`CHUNK_ELEMENTS` of one operand) from a shared counter until none is left, so a rank that
starts late (descheduled) finds its work done by the others. A chunk is reduced in rank order
(the same bits as one rank reducing everything with NumPy: sum adds left to right, max/min
propagate NaN as np.maximum/np.minimum do) and written straight into every rank's result. The
rank returns once every chunk is complete. Waits spin briefly, then yield, then sleep in short
steps; the codes (`DONE`, `ABORTED`, `TIMED_OUT`, `MISMATCH`) tell the caller what to raise.

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
# Element kinds the library reduces; a call with an operand of any other dtype is NumPy's.
KINDS = {np.dtype(np.float32): 1, np.dtype(np.float64): 2}
DONE, ABORTED, TIMED_OUT, MISMATCH = 0, 1, 2, 3
# The most ranks the library meets (its per-chunk pointer arrays live on the stack).
MAX_RANKS = 256
# Elements of one operand reduced per claim: large enough that claiming (one atomic
# compare-and-swap) costs nothing, small enough that two ranks share a 2.7 MB reduce evenly.
CHUNK_ELEMENTS = 1 << 14
# The shared words (int64, each group in its own 64-byte cache line): chunks claimed and chunks
# completed over all calls, the call whose signatures disagree, then per rank the last call it
# published and the address of its address table.
CLAIMED, COMPLETED, MISMATCHED, FIRST_RECORD, STRIDE = 0, 8, 16, 24, 8

# native_all_reduces: collective calls the library reduced (counted by rank 0).
stats = {"native_all_reduces": 0}

SOURCE = r"""
#include <stdint.h>
#include <string.h>
#include <sched.h>
#include <time.h>

enum { OP_SUM = 0, OP_MAX = 1, OP_MIN = 2 };
enum { KIND_F32 = 1, KIND_F64 = 2 };
enum { WAIT_DONE = 0, WAIT_ABORTED = 1, WAIT_TIMED_OUT = 2, WAIT_MISMATCH = 3 };

#define MAX_RANKS 256

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

/* The shared words of one communicator (see the Python constants of the same names). */
#define CLAIMED 0
#define COMPLETED 8
#define MISMATCHED 16
#define RECORD_CALL(rank) (24 + (int64_t)(rank)*8)
#define RECORD_TABLE(rank) (24 + (int64_t)(rank)*8 + 1)

/* Rank r's address table: its nops input addresses, then its nops result addresses. */
static void *const *table_of(int64_t *shared, int rank) {
  return (void *const *)(uintptr_t)__atomic_load_n(&shared[RECORD_TABLE(rank)], __ATOMIC_RELAXED);
}

/* Chunks of `chunk` elements that cover n elements. */
static int64_t chunks_of(int64_t n, int64_t chunk) { return (n + chunk - 1) / chunk; }

/* Reduce chunk `index` of a call (chunks numbered operand by operand) into every rank's result,
 * reading the ranks' addresses from their published tables. */
static void reduce_chunk(int op, int nranks, int nops, const int64_t *sizes, const int32_t *kinds,
                         int64_t *shared, int64_t chunk, int64_t index) {
  for (int j = 0; j < nops; j++) {
    int64_t count = chunks_of(sizes[j], chunk);
    if (index >= count) {
      index -= count;
      continue;
    }
    void *in[MAX_RANKS], *out[MAX_RANKS];
    for (int r = 0; r < nranks; r++) {
      void *const *table = table_of(shared, r);
      in[r] = table[j];
      out[r] = table[nops + j];
    }
    int64_t lo = index * chunk;
    int64_t hi = sizes[j] - lo < chunk ? sizes[j] : lo + chunk;
    if (kinds[j] == KIND_F32)
      reduce_f32(op, nranks, lo, hi, in, out);
    else
      reduce_f64(op, nranks, lo, hi, in, out);
    return;
  }
}

/* The state of one wait: spin SPIN_POLLS times, then yield YIELD_POLLS times, then sleep
 * SLEEP_NS at a time, until the deadline. */
typedef struct {
  long polls;
  double deadline;
} backoff;

/* Wait a little; nonzero once the deadline has passed. */
static int backoff_wait(backoff *b) {
  b->polls++;
  if (b->polls < SPIN_POLLS) {
    cpu_relax();
    return 0;
  }
  if (monotonic_seconds() > b->deadline) return 1;
  if (b->polls < SPIN_POLLS + YIELD_POLLS) {
    sched_yield();
  } else {
    struct timespec pause = {0, SLEEP_NS};
    nanosleep(&pause, NULL);
  }
  return 0;
}

/* Wait until the shared count of completed chunks reaches `target`. Returns WAIT_ABORTED when
 * *abort_flag is set (on entry or while waiting), WAIT_TIMED_OUT after the deadline, else
 * WAIT_DONE. Every completion is a release and this load an acquire, so the results written by
 * the other ranks are visible on return. */
static int wait_completed(int64_t *shared, int64_t target, const int32_t *abort_flag, backoff *b) {
  if (__atomic_load_n(abort_flag, __ATOMIC_RELAXED)) return WAIT_ABORTED;
  while (__atomic_load_n(&shared[COMPLETED], __ATOMIC_ACQUIRE) < target) {
    if (__atomic_load_n(abort_flag, __ATOMIC_RELAXED)) return WAIT_ABORTED;
    if (backoff_wait(b)) return WAIT_TIMED_OUT;
  }
  return WAIT_DONE;
}

/* mx_wait_completed: wait_completed with a deadline timeout_s seconds away (for tests). */
int mx_wait_completed(int64_t *shared, int64_t target, const int32_t *abort_flag, double timeout_s) {
  backoff b = {0, monotonic_seconds() + timeout_s};
  return wait_completed(shared, target, abort_flag, &b);
}

/* One rank's all-reduce call number `call` (1, 2, ...) of `nops` operands over `nranks` ranks:
 * operand j has sizes[j] elements of kinds[j]; `table` holds this rank's input addresses, then
 * its result addresses. Publishes the table and the call number, waits until every rank has
 * published this call, claims and reduces chunks first_chunk .. first_chunk + n_chunks - 1 until
 * none is left, then waits until all of them are complete. Returns WAIT_MISMATCH (before
 * touching any array) when shared[MISMATCHED] names this call, WAIT_ABORTED when *abort_flag is
 * set, WAIT_TIMED_OUT timeout_s seconds after the call began, else WAIT_DONE. */
int mx_meet_and_reduce(int op, int nranks, int rank, int nops, const int64_t *sizes,
                       const int32_t *kinds, int64_t chunk, int64_t *shared, int64_t call,
                       void *const *table, int64_t first_chunk, int64_t n_chunks,
                       const int32_t *abort_flag, double timeout_s) {
  backoff b = {0, monotonic_seconds() + timeout_s};
  __atomic_store_n(&shared[RECORD_TABLE(rank)], (int64_t)(uintptr_t)table, __ATOMIC_RELAXED);
  __atomic_store_n(&shared[RECORD_CALL(rank)], call, __ATOMIC_RELEASE);
  for (int r = 0; r < nranks; r++) {
    while (__atomic_load_n(&shared[RECORD_CALL(r)], __ATOMIC_ACQUIRE) < call) {
      if (__atomic_load_n(&shared[MISMATCHED], __ATOMIC_RELAXED) == call) return WAIT_MISMATCH;
      if (__atomic_load_n(abort_flag, __ATOMIC_RELAXED)) return WAIT_ABORTED;
      if (backoff_wait(&b)) return WAIT_TIMED_OUT;
    }
  }
  /* The last rank to record the call in Python marked any mismatch before it published here. */
  if (__atomic_load_n(&shared[MISMATCHED], __ATOMIC_RELAXED) == call) return WAIT_MISMATCH;
  int64_t end = first_chunk + n_chunks;
  int64_t next = __atomic_load_n(&shared[CLAIMED], __ATOMIC_RELAXED);
  while (next < end && !__atomic_load_n(abort_flag, __ATOMIC_RELAXED)) {
    /* On failure `next` becomes the counter's current value: try again with it. */
    if (__atomic_compare_exchange_n(&shared[CLAIMED], &next, next + 1, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED)) {
      reduce_chunk(op, nranks, nops, sizes, kinds, shared, chunk, next - first_chunk);
      __atomic_fetch_add(&shared[COMPLETED], 1, __ATOMIC_RELEASE);
      next = __atomic_load_n(&shared[CLAIMED], __ATOMIC_RELAXED);
    }
  }
  return wait_completed(shared, end, abort_flag, &b);
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
    meet = lib.mx_meet_and_reduce
    meet.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, i64p, i32p, ctypes.c_int64]
    meet.argtypes += [i64p, ctypes.c_int64, vpp, ctypes.c_int64, ctypes.c_int64, i32p, ctypes.c_double]
    meet.restype = ctypes.c_int
    return lib


class Words:
    """The words one communicator's ranks share with the library (see CLAIMED ... STRIDE)."""

    def __init__(self, size: int):
        self.words = (ctypes.c_int64 * (FIRST_RECORD + size * STRIDE))()

    def published(self, rank: int) -> int:
        """The last call number `rank` published."""
        return self.words[FIRST_RECORD + rank * STRIDE]

    def mark_mismatch(self, number: int) -> None:
        """Tell the ranks meeting natively at call `number` that their signatures disagree."""
        self.words[MISMATCHED] = number


def new_abort_flag():
    """A flag every native wait polls: set it (`.value = 1`) to make them return ABORTED."""
    return ctypes.c_int32(0)


def native_dtypes(xs) -> bool:
    """Whether the library reduces every one of `xs` (float32 and float64, native byte order)."""
    return all(np.dtype(x.dtype) in KINDS for x in xs)


class Call:
    """One rank's all-reduce call as the library takes it: element counts and kinds, the rank's
    address table (its inputs' addresses, then its results'), and how many chunks it has. The
    inputs must be C-contiguous and aligned; the call keeps them and the results alive."""

    __slots__ = ("op", "n_ops", "sizes", "kinds", "table", "n_chunks", "arrays")

    def __init__(self, op: str, inputs, outputs):
        n_ops = len(inputs)
        self.op, self.n_ops = OPS[op], n_ops
        self.sizes = (ctypes.c_int64 * n_ops)(*[x.size for x in inputs])
        self.kinds = (ctypes.c_int32 * n_ops)(*[KINDS[np.dtype(x.dtype)] for x in inputs])
        addresses = [_address(x) for x in inputs] + [_address(o) for o in outputs]
        self.table = (ctypes.c_void_p * (2 * n_ops))(*addresses)
        self.n_chunks = sum(-(-x.size // CHUNK_ELEMENTS) for x in inputs)
        self.arrays = (inputs, outputs)


def meet_and_reduce(
    lib,
    call: Call,
    size: int,
    rank: int,
    words: Words,
    number: int,
    first_chunk: int,
    abort_flag,
    timeout: float,
) -> int:
    """Rank `rank`'s part of all-reduce call `number` (1, 2, ...), whose chunks come after the
    `first_chunk` chunks of the earlier calls: DONE, ABORTED, TIMED_OUT or MISMATCH. The GIL is
    released throughout."""
    return lib.mx_meet_and_reduce(
        call.op,
        size,
        rank,
        call.n_ops,
        call.sizes,
        call.kinds,
        CHUNK_ELEMENTS,
        words.words,
        number,
        call.table,
        first_chunk,
        call.n_chunks,
        ctypes.byref(abort_flag),
        timeout,
    )


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
