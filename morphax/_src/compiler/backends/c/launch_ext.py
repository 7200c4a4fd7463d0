"""A CPython extension that launches native segments: the C side of a call's fast path.

Calling a segment through ctypes costs, per call, an address lookup per array, a pointer-array
object, NumPy allocations from Python and ctypes' own argument conversion: a few microseconds,
more than a small program takes. This module builds (once, with the system C compiler, cached on
disk beside the generated libraries) a tiny extension type, `Launcher`, that does the same in
C: it checks each input is an aligned, C-contiguous NumPy array of the expected dtype, allocates
the outputs, takes a scratch arena from its own pool, and calls the segment with the GIL
released. An input it cannot pass as is makes it return None, and the ctypes launcher
(program.py) handles the call. Without Python or NumPy headers, or a compiler, nothing is built
and every call takes the ctypes path.
"""

from __future__ import annotations

import ctypes
import sysconfig  # noqa: F401 - tests replace its get_paths to hide Python's headers
import threading

SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <Python.h>
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <stdlib.h>

#define MAX_ARENAS 8
#define ALIGNMENT 64

typedef void (*segment_fn)(void *const *);

typedef struct {
  PyObject_HEAD
  segment_fn fn;
  Py_ssize_t n_in, n_out;
  int *in_types;            /* NumPy type numbers of the inputs */
  int *out_types;
  int *out_ndim;
  npy_intp **out_dims;
  size_t scratch;           /* bytes of the scratch arena */
  void *params;             /* shape parameters of a generic library, or NULL */
  PyObject *owner;          /* holds what fn and params point into (their library, the array) */
  void *arenas[MAX_ARENAS]; /* free arenas (taken and returned with the GIL held) */
  int n_arenas;
} Launcher;

static void launcher_dealloc(Launcher *self) {
  for (int k = 0; k < self->n_arenas; k++) free(self->arenas[k]);
  if (self->out_dims)
    for (Py_ssize_t k = 0; k < self->n_out; k++) PyMem_Free(self->out_dims[k]);
  PyMem_Free(self->out_dims);
  PyMem_Free(self->in_types);
  PyMem_Free(self->out_types);
  PyMem_Free(self->out_ndim);
  Py_XDECREF(self->owner);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Launcher(fn address, input type numbers, ((shape, type number), ...), scratch bytes, params,
 *          owner): `owner` keeps the library of fn (and the params array) alive. */
static int launcher_init(Launcher *self, PyObject *args, PyObject *kwds) {
  unsigned long long fn, params;
  PyObject *in_types, *out_specs, *owner;
  Py_ssize_t scratch;
  if (self->in_types != NULL) {
    PyErr_SetString(PyExc_TypeError, "a Launcher is initialized once");
    return -1;
  }
  if (!PyArg_ParseTuple(args, "KO!O!nKO", &fn, &PyTuple_Type, &in_types, &PyTuple_Type, &out_specs,
                        &scratch, &params, &owner))
    return -1;
  Py_INCREF(owner);
  self->owner = owner;
  self->fn = (segment_fn)(uintptr_t)fn;
  self->params = (void *)(uintptr_t)params;
  self->scratch = (size_t)scratch;
  self->n_in = PyTuple_GET_SIZE(in_types);
  self->n_out = PyTuple_GET_SIZE(out_specs);
  self->in_types = PyMem_Calloc(self->n_in + 1, sizeof(int));
  self->out_types = PyMem_Calloc(self->n_out + 1, sizeof(int));
  self->out_ndim = PyMem_Calloc(self->n_out + 1, sizeof(int));
  self->out_dims = PyMem_Calloc(self->n_out + 1, sizeof(npy_intp *));
  if (!self->in_types || !self->out_types || !self->out_ndim || !self->out_dims) {
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t k = 0; k < self->n_in; k++) {
    self->in_types[k] = (int)PyLong_AsLong(PyTuple_GET_ITEM(in_types, k));
  }
  for (Py_ssize_t k = 0; k < self->n_out; k++) {
    PyObject *spec = PyTuple_GET_ITEM(out_specs, k);
    PyObject *shape = PyTuple_GET_ITEM(spec, 0);
    Py_ssize_t nd = PyTuple_GET_SIZE(shape);
    self->out_types[k] = (int)PyLong_AsLong(PyTuple_GET_ITEM(spec, 1));
    self->out_ndim[k] = (int)nd;
    self->out_dims[k] = PyMem_Calloc(nd + 1, sizeof(npy_intp));
    if (!self->out_dims[k]) {
      PyErr_NoMemory();
      return -1;
    }
    for (Py_ssize_t d = 0; d < nd; d++) self->out_dims[k][d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
  }
  return PyErr_Occurred() ? -1 : 0;
}

/* launcher(*inputs) -> [outputs], or None when an input is not an aligned, C-contiguous array
 * of its expected dtype (the caller converts it and takes the ctypes path). */
static PyObject *launcher_call(Launcher *self, PyObject *args, PyObject *kwds) {
  Py_ssize_t n_in = self->n_in, n_out = self->n_out;
  if (kwds != NULL || PyTuple_GET_SIZE(args) != n_in) Py_RETURN_NONE;
  void *stack[64];
  void **io = n_in + n_out + 2 <= 64 ? stack : PyMem_Malloc((n_in + n_out + 2) * sizeof(void *));
  if (io == NULL) return PyErr_NoMemory();
  for (Py_ssize_t k = 0; k < n_in; k++) {
    PyObject *x = PyTuple_GET_ITEM(args, k);
    if (!PyArray_CheckExact(x)) goto decline;
    PyArrayObject *a = (PyArrayObject *)x;
    if (PyArray_TYPE(a) != self->in_types[k] || !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a))
      goto decline;
    io[k] = PyArray_DATA(a);
  }
  PyObject *outs = PyList_New(n_out);
  if (outs == NULL) goto fail;
  for (Py_ssize_t k = 0; k < n_out; k++) {
    PyObject *o = PyArray_SimpleNew(self->out_ndim[k], self->out_dims[k], self->out_types[k]);
    if (o == NULL) {
      Py_DECREF(outs);
      goto fail;
    }
    PyList_SET_ITEM(outs, k, o);
    io[n_in + k] = PyArray_DATA((PyArrayObject *)o);
  }
  void *arena = NULL;
  if (self->scratch) {
    arena = self->n_arenas ? self->arenas[--self->n_arenas] : aligned_alloc(ALIGNMENT, (self->scratch + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT);
    if (arena == NULL) {
      Py_DECREF(outs);
      PyErr_NoMemory();
      goto fail;
    }
  }
  io[n_in + n_out] = arena;
  io[n_in + n_out + 1] = self->params;
  Py_BEGIN_ALLOW_THREADS
  self->fn(io);
  Py_END_ALLOW_THREADS
  if (arena != NULL) {
    if (self->n_arenas < MAX_ARENAS) self->arenas[self->n_arenas++] = arena;
    else free(arena);
  }
  if (io != stack) PyMem_Free(io);
  return outs;
decline:
  if (io != stack) PyMem_Free(io);
  Py_RETURN_NONE;
fail:
  if (io != stack) PyMem_Free(io);
  return NULL;
}

static PyTypeObject LauncherType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "mx_launch.Launcher",
  .tp_basicsize = sizeof(Launcher),
  .tp_dealloc = (destructor)launcher_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "Calls one native segment: inputs -> freshly allocated outputs.",
  .tp_init = (initproc)launcher_init,
  .tp_new = PyType_GenericNew,
  .tp_call = (ternaryfunc)launcher_call,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "mx_launch", NULL, -1, NULL};

PyMODINIT_FUNC PyInit_mx_launch(void) {
  import_array();
  if (PyType_Ready(&LauncherType) < 0) return NULL;
  PyObject *m = PyModule_Create(&module);
  if (m == NULL) return NULL;
  Py_INCREF(&LauncherType);
  if (PyModule_AddObject(m, "Launcher", (PyObject *)&LauncherType) < 0) {
    Py_DECREF(&LauncherType);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
"""

_module: list = []
_lock = threading.Lock()


def module():
    """The built extension module, or None where it cannot be built (logged once)."""
    if not _module:
        with _lock:
            if not _module:
                _module.append(_build())
    return _module[0]


def _build():
    from morphax._src.compiler.backends.c import extension

    return extension.build("mx_launch", SOURCE, "segment launcher extension")


def launcher(fn, in_dtypes, out_specs, scratch: int, params):
    """A C launcher for one segment, or None (then program.py's ctypes launcher does it all)."""
    mod = module()
    if mod is None:
        return None
    return mod.Launcher(
        ctypes_address(fn),
        tuple(d.num for d in in_dtypes),
        tuple((shape, dtype.num) for shape, dtype in out_specs),
        scratch,
        0 if params is None else params.ctypes.data,
        (fn, params),  # the library stays loaded (and the parameters allocated) while it runs
    )


def ctypes_address(fn) -> int:
    # Read from the function object's own buffer: ctypes.cast would put the function into a
    # dictionary it holds itself (a cycle that keeps its library loaded until the cyclic GC).
    return ctypes.c_void_p.from_address(ctypes.addressof(fn)).value
