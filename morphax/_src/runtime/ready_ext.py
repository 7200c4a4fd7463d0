"""The C form of ready_ops.py's shortcuts: `x + y` and `jnp.sin(x)` on ready Arrays, checked and
computed without a Python frame.

The Python shortcut spends most of its microsecond in the interpreter: reading the slots of two
Arrays, comparing dtypes, calling NumPy, building the result. `ReadyOp` does the same checks in
the same order in C (runtime/ready_ops.py is the specification: exact Array operands, the
shortcut switch on, nothing tracing, NumPy buffers of one allowed dtype, rank and weak type,
unplaced) and calls the fallback, the operator's general path, for anything else. It is a method
descriptor, so `Array.__add__` stored as one is called without building a bound method.

Built once per machine with the system C compiler (compiler/backends/c/extension.py) and kept in
the disk cache; where it cannot be built, the Python shortcut stays.
"""

from __future__ import annotations

SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <Python.h>
#include <structmember.h>
#include <numpy/arrayobject.h>

/* What every ReadyOp reads, set once by configure(). */
static PyTypeObject *array_type;   /* morphax's Array */
static PyObject *shortcut;         /* eager.READY_SHORTCUT: [bool] */
static PyObject *trace_ctx;        /* core.trace.ctx: its .trace is the current trace */
static PyObject *base_holder;      /* [the base trace] */
static PyObject *trace_name;       /* "trace", interned */
static Py_ssize_t buf_at, weak_at, place_at; /* slot offsets of Array's _buf, weak_type, _place */

typedef struct {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject *ready;     /* the primitive's NumPy function */
  PyObject *fallback;  /* the general path */
  PyObject *name, *qualname, *module, *doc; /* the fallback's, for help() and repr */
  char kinds[8];       /* dtype kinds the shortcut takes ("fc", "fiuc") */
  int arity;           /* 1: a jnp function, 2: a binary operator of Array */
} ReadyOp;

#define SLOT(obj, at) (*(PyObject **)((char *)(obj) + (at)))

/* Whether the shortcut may run: the switch on and the base trace current. */
static int shortcut_open(void) {
  if (PyList_GET_ITEM(shortcut, 0) != Py_True) return 0;
  PyObject *current = PyObject_GetAttr(trace_ctx, trace_name);
  if (current == NULL) {
    PyErr_Clear();
    return 0;
  }
  int open = current == PyList_GET_ITEM(base_holder, 0);
  Py_DECREF(current);
  return open;
}

/* A ready, unplaced NumPy buffer of an allowed kind, or NULL. */
static PyArrayObject *ready_buffer(ReadyOp *op, PyObject *x) {
  if (Py_TYPE(x) != array_type || SLOT(x, place_at) != Py_None) return NULL;
  PyObject *buf = SLOT(x, buf_at);
  if (buf == NULL || Py_TYPE(buf) != &PyArray_Type) return NULL;
  if (strchr(op->kinds, PyArray_DESCR((PyArrayObject *)buf)->kind) == NULL) return NULL;
  return (PyArrayObject *)buf;
}

/* The Array wrapping `out` (a new reference, stolen) with the operand's weak type. */
static PyObject *wrap(PyObject *out, PyObject *like) {
  PyObject *result = array_type->tp_alloc(array_type, 0);
  if (result == NULL) {
    Py_DECREF(out);
    return NULL;
  }
  PyObject *weak = SLOT(like, weak_at);
  Py_XINCREF(weak);
  Py_INCREF(Py_None);
  SLOT(result, buf_at) = out;
  SLOT(result, weak_at) = weak;
  SLOT(result, place_at) = Py_None;
  return result;
}

/* Errors that send the call to the general path: NumPy warnings raised as errors, and shapes
 * NumPy cannot broadcast (the general path raises jnp's error). */
static int recoverable(void) {
  return PyErr_ExceptionMatches(PyExc_RuntimeWarning) || PyErr_ExceptionMatches(PyExc_FloatingPointError) ||
         PyErr_ExceptionMatches(PyExc_ValueError);
}

static PyObject *ready_call(PyObject *self_obj, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  ReadyOp *op = (ReadyOp *)self_obj;
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (kwnames == NULL && nargs == op->arity && shortcut_open()) {
    PyArrayObject *a = ready_buffer(op, args[0]);
    PyArrayObject *b = op->arity == 2 ? ready_buffer(op, args[1]) : a;
    int same = a != NULL && b != NULL;
    if (same && op->arity == 2) {
      same = PyArray_DESCR(a) == PyArray_DESCR(b) && PyArray_NDIM(a) == PyArray_NDIM(b) &&
             SLOT(args[0], weak_at) == SLOT(args[1], weak_at);
    }
    if (same) {
      PyObject *operands[2] = {(PyObject *)a, (PyObject *)b};
      PyObject *out = PyObject_Vectorcall(op->ready, operands, op->arity, NULL);
      if (out == NULL) {
        if (!recoverable()) return NULL;
        PyErr_Clear();
      } else if (Py_TYPE(out) == &PyArray_Type && PyArray_DESCR((PyArrayObject *)out) == PyArray_DESCR(a)) {
        return wrap(out, args[0]);
      } else {
        Py_DECREF(out);
      }
    }
  }
  return PyObject_Vectorcall(op->fallback, args, nargsf, kwnames);
}

static PyObject *ready_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyObject *ready, *fallback, *name, *qualname, *module, *doc;
  const char *kinds;
  int arity;
  if (!PyArg_ParseTuple(args, "OOsiOOOO", &ready, &fallback, &kinds, &arity, &name, &qualname, &module, &doc))
    return NULL;
  if (strlen(kinds) >= sizeof(((ReadyOp *)0)->kinds) || (arity != 1 && arity != 2)) {
    PyErr_SetString(PyExc_ValueError, "ReadyOp: kinds too long or arity not 1 or 2");
    return NULL;
  }
  ReadyOp *op = (ReadyOp *)type->tp_alloc(type, 0);
  if (op == NULL) return NULL;
  op->vectorcall = ready_call;
  Py_INCREF(ready);
  Py_INCREF(fallback);
  Py_INCREF(name);
  Py_INCREF(qualname);
  Py_INCREF(module);
  Py_INCREF(doc);
  op->ready = ready;
  op->fallback = fallback;
  op->name = name;
  op->qualname = qualname;
  op->module = module;
  op->doc = doc;
  strcpy(op->kinds, kinds);
  op->arity = arity;
  return (PyObject *)op;
}

static void ready_dealloc(ReadyOp *op) {
  Py_XDECREF(op->ready);
  Py_XDECREF(op->fallback);
  Py_XDECREF(op->name);
  Py_XDECREF(op->qualname);
  Py_XDECREF(op->module);
  Py_XDECREF(op->doc);
  Py_TYPE(op)->tp_free((PyObject *)op);
}

/* As a class attribute read from an instance (x.__add__): bound, as a function would be. */
static PyObject *ready_get(PyObject *self, PyObject *obj, PyObject *type) {
  if (obj == NULL || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

static PyObject *ready_repr(ReadyOp *op) { return PyObject_Repr(op->fallback); }

static PyMemberDef ready_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(ReadyOp, fallback), READONLY, "the general path"},
    {"__name__", T_OBJECT, offsetof(ReadyOp, name), READONLY, NULL},
    {"__qualname__", T_OBJECT, offsetof(ReadyOp, qualname), READONLY, NULL},
    {"__module__", T_OBJECT, offsetof(ReadyOp, module), READONLY, NULL},
    {"__doc__", T_OBJECT, offsetof(ReadyOp, doc), READONLY, NULL},
    {NULL},
};

static PyTypeObject ReadyOpType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mx_ready.ReadyOp",
    .tp_basicsize = sizeof(ReadyOp),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(ReadyOp, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = ready_get,
    .tp_new = ready_new,
    .tp_dealloc = (destructor)ready_dealloc,
    .tp_repr = (reprfunc)ready_repr,
    .tp_members = ready_members,
};

/* The offset of the slot a member descriptor (Array.__dict__["_buf"]) reads, or -1. */
static Py_ssize_t slot_offset(PyObject *descr) {
  if (Py_TYPE(descr) != &PyMemberDescr_Type) {
    PyErr_SetString(PyExc_TypeError, "configure: expected the member descriptor of a __slots__ entry");
    return -1;
  }
  PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
  if (member->type != T_OBJECT_EX && member->type != T_OBJECT) {
    PyErr_SetString(PyExc_TypeError, "configure: the slot does not hold an object");
    return -1;
  }
  return member->offset;
}

/* configure(Array, READY_SHORTCUT, ctx, base holder, the member descriptors of _buf, weak_type
 * and _place) */
static PyObject *configure(PyObject *module, PyObject *args) {
  PyObject *type, *flag, *ctx, *holder, *b, *w, *p;
  if (!PyArg_ParseTuple(args, "O!O!OO!OOO", &PyType_Type, &type, &PyList_Type, &flag, &ctx, &PyList_Type,
                        &holder, &b, &w, &p))
    return NULL;
  if (PyList_GET_SIZE(flag) < 1 || PyList_GET_SIZE(holder) < 1) {
    PyErr_SetString(PyExc_ValueError, "configure: the shortcut switch and base holder need one item");
    return NULL;
  }
  Py_ssize_t at_b = slot_offset(b), at_w = slot_offset(w), at_p = slot_offset(p);
  if (at_b < 0 || at_w < 0 || at_p < 0) return NULL;
  Py_INCREF(type);
  Py_INCREF(flag);
  Py_INCREF(ctx);
  Py_INCREF(holder);
  array_type = (PyTypeObject *)type;
  shortcut = flag;
  trace_ctx = ctx;
  base_holder = holder;
  buf_at = at_b;
  weak_at = at_w;
  place_at = at_p;
  Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS, "Bind the Array type and the eager switches."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "mx_ready", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit_mx_ready(void) {
  import_array();
  if (PyType_Ready(&ReadyOpType) < 0) return NULL;
  trace_name = PyUnicode_InternFromString("trace");
  PyObject *m = PyModule_Create(&module_def);
  if (m == NULL) return NULL;
  Py_INCREF(&ReadyOpType);
  PyModule_AddObject(m, "ReadyOp", (PyObject *)&ReadyOpType);
  return m;
}
"""


def build():
    """The extension module, or None where it cannot be built."""
    from morphax._src.compiler.backends.c import extension

    return extension.build("mx_ready", SOURCE, "eager ready-op extension")
