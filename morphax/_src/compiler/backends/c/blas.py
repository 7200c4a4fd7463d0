"""Matrix products from C: `dot_general` equations inside native segments call BLAS's sgemm/dgemm
through function pointers handed to each generated library once it is loaded.

Where the pointers come from (`gemm_pointers`): NumPy's own OpenBLAS when NumPy ships one (the
wheels' `scipy_openblas64_`, 64-bit integers), else SciPy's `scipy.linalg.cython_blas` (32-bit
integers). NumPy's comes first because it is already loaded by every process that imports
morphax, so compiled programs and NumPy share one BLAS thread pool instead of two competing ones,
and because its build was the faster one here (the MLP step's five GEMMs, one thread: 5.4 ms vs
6.1 ms with SciPy's OpenBLAS 0.3.30). `set_threads` sizes the pool of the BLAS in use.

`matmul_form` decides, at compile time, whether an equation is a (batched) row-major GEMM over
the buffers as they lie in memory: per batch index, lhs is an (m, k) matrix and rhs a (k, n) one,
each with one unit stride (read as-is or transposed by BLAS). Batch dimensions become C loops
with constant strides. Anything else (other dtypes, groups of dimensions that are not contiguous)
stays a Python step between segments.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from morphax._src.compiler.backends.c.render import _strides
from morphax._src.core.jaxpr import Literal

GEMM_DTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
INT_MAX = 2**31 - 1
_pointers: list = []  # [sgemm address, dgemm address, 1 if their integers are 64-bit else 0]
_libraries: list = []  # the ctypes handle of the BLAS library the pointers come from, if any

# (sgemm, dgemm, thread-count setter, 64-bit integers) symbol names of the OpenBLAS builds NumPy's
# wheels bundle: the current ILP64 one, then the LP64 one older NumPy 1.x wheels shipped.
_NUMPY_OPENBLAS_SYMBOLS = (
    ("scipy_sgemm_64_", "scipy_dgemm_64_", "scipy_openblas_set_num_threads64_", True),
    ("sgemm_64_", "dgemm_64_", "openblas_set_num_threads64_", True),
    ("sgemm_", "dgemm_", "openblas_set_num_threads", False),
)


def _numpy_openblas():
    """(sgemm, dgemm, 64-bit ints, library) from the OpenBLAS inside NumPy's wheel, or None."""
    import glob
    import os

    root = os.path.dirname(os.path.dirname(np.__file__))
    candidates = []
    for folder in ("numpy.libs", os.path.join("numpy", ".dylibs")):
        candidates += sorted(glob.glob(os.path.join(root, folder, "*openblas*")))
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)  # already loaded by NumPy: the same copy, not a second one
        except OSError:
            continue
        for sgemm, dgemm, _, wide in _NUMPY_OPENBLAS_SYMBOLS:
            try:
                s, d = getattr(lib, sgemm), getattr(lib, dgemm)
            except AttributeError:
                continue
            address = ctypes.cast
            return address(s, ctypes.c_void_p).value, address(d, ctypes.c_void_p).value, wide, lib
    return None


def _scipy_blas() -> tuple[int, int]:
    """Addresses of sgemm and dgemm (Fortran calling convention, 32-bit ints) from SciPy."""
    from scipy.linalg import cython_blas

    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    capsules = cython_blas.__pyx_capi__
    return tuple(get_pointer(capsules[fn], get_name(capsules[fn])) for fn in ("sgemm", "dgemm"))


def gemm_pointers() -> tuple[int, int, int]:
    """(sgemm address, dgemm address, 1 if they take 64-bit integers else 0): Fortran calling
    convention, from NumPy's OpenBLAS where found, else from SciPy."""
    if not _pointers:
        found = _numpy_openblas()
        if found is not None:
            sgemm, dgemm, wide, lib = found
            _pointers.extend([sgemm, dgemm, int(wide)])
            _libraries.append(lib)
        else:
            _pointers.extend([*_scipy_blas(), 0])
    return _pointers[0], _pointers[1], _pointers[2]


def set_threads(count: int) -> bool:
    """Size the thread pool of the BLAS compiled programs call (and NumPy's, when it is the same
    library). True when a setter was found; False leaves the pool as the environment made it."""
    gemm_pointers()
    libraries = list(_libraries)
    if not libraries:  # SciPy's OpenBLAS: its library is the one scipy.libs holds
        import glob
        import os

        import scipy

        folder = os.path.join(os.path.dirname(scipy.__file__), os.pardir, "scipy.libs")
        libraries = [ctypes.CDLL(p) for p in sorted(glob.glob(os.path.join(folder, "*openblas*")))]
    done = False
    setters = [names[2] for names in _NUMPY_OPENBLAS_SYMBOLS] + ["scipy_openblas_set_num_threads"]
    for lib in libraries:
        for name in setters:
            setter = getattr(lib, name, None)
            if setter is not None:
                setter.argtypes = [ctypes.c_int]
                setter(int(count))
                done = True
                break
    return done


def thread_count() -> int | None:
    """The size of the thread pool of the BLAS compiled programs call, or None when its library
    has no getter (SciPy's OpenBLAS is not asked: it is not the one `set_threads` found first)."""
    gemm_pointers()
    getters = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads")
    for lib in _libraries:
        for name in getters:
            getter = getattr(lib, name, None)
            if getter is not None:
                getter.restype = ctypes.c_int
                return int(getter())
    return None


def available() -> bool:
    try:
        gemm_pointers()
    except Exception:  # noqa: BLE001 -- no BLAS found (no NumPy OpenBLAS, no SciPy): Python steps
        return False
    return True


def _groups(shape, dims, strides):
    """(extent, stride) of `dims` read as one axis, or None when they are not one strided axis.
    Size-1 dimensions are skipped (their stride never matters)."""
    dims = [d for d in dims if shape[d] != 1]
    extent = math.prod(shape[d] for d in dims)
    if not dims:
        return extent, 1
    for a, b in zip(dims, dims[1:]):
        if strides[a] != strides[b] * shape[b]:
            return None
    return extent, strides[dims[-1]]


def gemm_operands(eqn, primitive: str) -> tuple | None:
    """(lhs aval, rhs aval, out aval, dtype) of a two-operand `primitive` equation that BLAS can
    compute (buffer operands, all three float32 or all float64), else None."""
    if eqn.primitive.name != primitive or any(type(v) is Literal for v in eqn.invars):
        return None
    lhs, rhs = (v.aval for v in eqn.invars)
    out = eqn.outvars[0].aval
    dtype = np.dtype(lhs.dtype)
    if dtype not in GEMM_DTYPES or np.dtype(rhs.dtype) != dtype or np.dtype(out.dtype) != dtype:
        return None
    return lhs, rhs, out, dtype


def matmul_form(eqn) -> dict | None:
    """The GEMM description of a `dot_general` equation over row-major buffers, or None."""
    operands = gemm_operands(eqn, "dot_general")
    if operands is None:
        return None
    lhs, rhs, out, dtype = operands
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    ls, rs = _strides(lhs.shape), _strides(rhs.shape)
    lf = [d for d in range(len(lhs.shape)) if d not in lc and d not in lb]
    rf = [d for d in range(len(rhs.shape)) if d not in rc and d not in rb]
    m_axis, k_axis = _groups(lhs.shape, lf, ls), _groups(lhs.shape, lc, ls)
    k_axis_r, n_axis = _groups(rhs.shape, rc, rs), _groups(rhs.shape, rf, rs)
    if None in (m_axis, k_axis, k_axis_r, n_axis):
        return None
    (m, sam), (k, sak) = m_axis, k_axis
    (_, sbk), (n, sbn) = k_axis_r, n_axis
    # The contracting dims pair up in order; dropping size-1 dims on one side drops them on the
    # other (equal extents), so both sides agree on k.
    if m <= 1:
        sam = 1 if sak != 1 else max(k, 1)
    if k <= 1:
        sak = 1
        sbk = max(n, 1) if sbn == 1 else 1
    if n <= 1:
        sbn = 1 if sbk != 1 else max(k, 1)
    if 1 not in (sam, sak) or 1 not in (sbk, sbn):
        return None
    batch = [(lhs.shape[a], ls[a], rs[b]) for a, b in zip(lb, rb) if lhs.shape[a] != 1]
    if max(m, n, k, sam, sak, sbk, sbn) > INT_MAX:
        return None
    return {
        "ctype": GEMM_DTYPES[dtype],
        "m": m,
        "n": n,
        "k": k,
        "a": (sam, sak),
        "b": (sbk, sbn),
        "batch": batch,  # (extent, lhs stride, rhs stride) per batch dimension, output row-major
        "scratch": 0,  # BLAS needs no working memory of ours
    }


# The C helpers every library with a matmul includes. The pointers are set by `mx_set_blas`
# right after the library is loaded (build.py's loaders call `bind`).
SOURCE = r"""
/* Fortran sgemm/dgemm with 32-bit (SciPy's BLAS) or 64-bit (NumPy's OpenBLAS) integers. */
#define MX_GEMM_TYPE(NAME, T, I)                                                              \
  typedef void (*NAME)(const char *, const char *, const I *, const I *, const I *, const T *, \
                       const T *, const I *, const T *, const I *, const T *, T *, const I *);
MX_GEMM_TYPE(mx_sgemm32_fn, float, int32_t)
MX_GEMM_TYPE(mx_dgemm32_fn, double, int32_t)
MX_GEMM_TYPE(mx_sgemm64_fn, float, int64_t)
MX_GEMM_TYPE(mx_dgemm64_fn, double, int64_t)
static void *mx_sgemm_ptr, *mx_dgemm_ptr;
static int mx_blas_ilp64;

void mx_set_blas(void *sgemm, void *dgemm, int ilp64) {
  mx_sgemm_ptr = sgemm;
  mx_dgemm_ptr = dgemm;
  mx_blas_ilp64 = ilp64;
}

/* One column-major GEMM call, with the integer width of the BLAS in use. */
#define MX_GEMM_CALL(NAME, T, PTR, FN32, FN64)                                                \
  static void NAME(char ta, char tb, int64_t m, int64_t n, int64_t k, const T *a, int64_t lda, \
                   const T *b, int64_t ldb, T *c, int64_t ldc) {                              \
    const T one = 1, zero = 0;                                                                \
    if (mx_blas_ilp64) {                                                                      \
      ((FN64)PTR)(&ta, &tb, &m, &n, &k, &one, a, &lda, b, &ldb, &zero, c, &ldc);              \
    } else {                                                                                  \
      const int32_t m32 = (int32_t)m, n32 = (int32_t)n, k32 = (int32_t)k;                     \
      const int32_t lda32 = (int32_t)lda, ldb32 = (int32_t)ldb, ldc32 = (int32_t)ldc;         \
      ((FN32)PTR)(&ta, &tb, &m32, &n32, &k32, &one, a, &lda32, b, &ldb32, &zero, c, &ldc32);  \
    }                                                                                         \
  }
MX_GEMM_CALL(mx_sgemm, float, mx_sgemm_ptr, mx_sgemm32_fn, mx_sgemm64_fn)
MX_GEMM_CALL(mx_dgemm, double, mx_dgemm_ptr, mx_dgemm32_fn, mx_dgemm64_fn)

/* Row-major c (m x n, contiguous) = a (m x k) . b (k x n), where a(i, l) lies at
 * a[i * sam + l * sak] and b(l, j) at b[l * sbk + j * sbn], with one unit stride per operand.
 * Column-major BLAS computes c^T = b^T a^T: b is its first operand, a its second. */
#define MX_MATMUL(NAME, T, GEMM)                                                              \
  static void NAME(const T *a, int64_t sam, int64_t sak, const T *b, int64_t sbk,             \
                   int64_t sbn, T *c, int64_t m, int64_t n, int64_t k) {                      \
    if (m == 0 || n == 0) return;                                                             \
    if (k == 0) {                                                                             \
      memset(c, 0, (size_t)(m * n) * sizeof(T));                                              \
      return;                                                                                 \
    }                                                                                         \
    const char ta = sbn == 1 ? 'N' : 'T', tb = sak == 1 ? 'N' : 'T';                          \
    const int64_t lda = sbn == 1 ? (sbk > n ? sbk : n) : (sbn > k ? sbn : k);                 \
    const int64_t ldb = sak == 1 ? (sam > k ? sam : k) : (sak > m ? sak : m);                 \
    GEMM(ta, tb, n, m, k, b, lda, a, ldb, c, n);                                              \
  }
MX_MATMUL(mx_matmul_float, float, mx_sgemm)
MX_MATMUL(mx_matmul_double, double, mx_dgemm)

/* c(r, j) = sum_l a[r * k + l] * w[l * n + j] (a row-major m x k, w row-major k x n), stored
 * at c[r * ldr + j * ldj] where ldj == 1 (row-major, ldr >= n) or ldr == 1 (column-major,
 * ldj >= m): the convolutions' GEMMs (convolution.py), written into the output in place. */
#define MX_GEMM_ROWS(NAME, T, GEMM)                                                           \
  static void NAME(const T *a, const T *w, T *c, int64_t m, int64_t n, int64_t k, int64_t ldr, \
                   int64_t ldj) {                                                             \
    if (ldj == 1) {                                                                           \
      GEMM('N', 'N', n, m, k, w, n, a, k, c, ldr);                                            \
    } else {                                                                                  \
      GEMM('T', 'T', m, n, k, a, k, w, n, c, ldj);                                            \
    }                                                                                         \
  }
MX_GEMM_ROWS(mx_gemm_rows_float, float, mx_sgemm)
MX_GEMM_ROWS(mx_gemm_rows_double, double, mx_dgemm)
"""


def render_call(form: dict, a: str, b: str, c: str, comment: str) -> list:
    """C lines computing one dot_general from pointers `a`, `b` into `c` (row-major output)."""
    fn = f"mx_matmul_{form['ctype']}"
    (sam, sak), (sbk, sbn) = form["a"], form["b"]
    m, n, k = form["m"], form["n"], form["k"]
    lines = [f"  /* {comment} */"]
    if not form["batch"]:
        lines.append(f"  {fn}({a}, {sam}, {sak}, {b}, {sbk}, {sbn}, {c}, {m}, {n}, {k});")
        return lines
    lines.append("  {")
    a_off, b_off, c_off, c_stride = [], [], [], m * n
    extents = [e for e, _, _ in form["batch"]]
    for d, (extent, sa, sb) in enumerate(form["batch"]):
        lines.append(f"  {'  ' * d}for (int64_t b{d} = 0; b{d} < {extent}; b{d}++)")
        a_off.append(f"b{d} * {sa}")
        b_off.append(f"b{d} * {sb}")
    out_strides = _strides(extents)
    for d, st in enumerate(out_strides):
        c_off.append(f"b{d} * {st * c_stride}")
    pad = "  " * len(extents)
    lines.append(
        f"  {pad}{fn}({a} + {' + '.join(a_off)}, {sam}, {sak}, {b} + {' + '.join(b_off)}, {sbk}, "
        f"{sbn}, {c} + {' + '.join(c_off)}, {m}, {n}, {k});"
    )
    lines.append("  }")
    return lines
