"""The C source of the PJRT launcher extension (launch.py builds it): the `Launcher` type, which
runs one compiled program from NumPy arrays or device buffers, and `HeldBuffer`, which owns a PJRT
buffer for the Python object holding it. `@STRUCTS@` is replaced by the PJRT argument structs,
written from their ctypes mirrors with every field offset asserted (launch.c_struct)."""

SOURCE_TEMPLATE = r"""
#define PY_SSIZE_T_CLEAN
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <Python.h>
#include <numpy/arrayobject.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* PJRT argument structs, from their ctypes mirrors (morphax._src.pjrt.c_api). */
@STRUCTS@

/* Every PJRT entry takes a pointer to its args struct; all but Error_Destroy and Error_Message
 * return a PJRT_Error* (NULL: success). */
typedef void *(*pjrt_fn)(void *);
enum { FROM_HOST, EXECUTE, EVENT_AWAIT, EVENT_DESTROY, READY_EVENT, BUFFER_DESTROY, UNSAFE_POINTER,
       TO_HOST, ERROR_MESSAGE, ERROR_CODE, ERROR_DESTROY, N_ENTRIES };

#define SMALL 16  /* inputs and outputs handled without a heap allocation */

/* The first failure of a call: the PJRT_Error and the entry that returned it. */
typedef struct {
  void *error;
  const char *where;
} Failure;

static void note(Failure *f, void *error, const char *where, pjrt_fn destroy) {
  if (error == NULL) return;
  if (f->error == NULL) {
    f->error = error;
    f->where = where;
  } else {
    PJRT_Error_Destroy_Args d = {PJRT_Error_Destroy_Args_SIZE, NULL, error};
    destroy(&d);
  }
}

/* Waits for an event (may be NULL) and destroys it. */
static void await_event(pjrt_fn *fn, void *event, Failure *f, const char *where) {
  if (event == NULL) return;
  PJRT_Event_Await_Args a = {PJRT_Event_Await_Args_SIZE, NULL, event};
  note(f, fn[EVENT_AWAIT](&a), where, fn[ERROR_DESTROY]);
  PJRT_Event_Destroy_Args d = {PJRT_Event_Destroy_Args_SIZE, NULL, event};
  note(f, fn[EVENT_DESTROY](&d), "PJRT_Event_Destroy", fn[ERROR_DESTROY]);
}

/* Waits for `buffer`'s value (its ready event); a failed computation's error goes to `f`. */
static void await_buffer(pjrt_fn *fn, void *buffer, Failure *f, const char *where) {
  PJRT_Buffer_ReadyEvent_Args r = {PJRT_Buffer_ReadyEvent_Args_SIZE, NULL, buffer, NULL};
  void *error = fn[READY_EVENT](&r);
  note(f, error, "PJRT_Buffer_ReadyEvent", fn[ERROR_DESTROY]);
  if (error == NULL) await_event(fn, r.event, f, where);
}

static void destroy_buffer(pjrt_fn *fn, void *buffer, Failure *f) {
  if (buffer == NULL) return;
  PJRT_Buffer_Destroy_Args d = {PJRT_Buffer_Destroy_Args_SIZE, NULL, buffer};
  note(f, fn[BUFFER_DESTROY](&d), "PJRT_Buffer_Destroy", fn[ERROR_DESTROY]);
}

/* ------------------------------------------------------------------ HeldBuffer */

/* A PJRT buffer in host memory that a NumPy array views (its base): destroyed with the array.
 * What it holds is recorded, so that the array passed back to a program of the same client and
 * device goes in as this buffer, uncopied (`plugin_buffer`). */
#define HELD_MAX_DIMS 32
typedef struct {
  PyObject_HEAD
  pjrt_fn destroy, error_destroy;
  void *buffer;
  void *client, *device, *data;
  Py_ssize_t nbytes;
  int type_num, ndim;
  npy_intp dims[HELD_MAX_DIMS];
} HeldBuffer;

static Py_ssize_t live_held = 0;
static long long inputs_passed_uncopied = 0;  /* counted with the GIL held */

static void held_dealloc(HeldBuffer *self) {
  if (self->buffer != NULL) {
    PJRT_Buffer_Destroy_Args d = {PJRT_Buffer_Destroy_Args_SIZE, NULL, self->buffer};
    void *error = self->destroy(&d);
    if (error != NULL) {  /* nothing to report it to from a deallocator */
      PJRT_Error_Destroy_Args e = {PJRT_Error_Destroy_Args_SIZE, NULL, error};
      self->error_destroy(&e);
    }
    live_held--;
  }
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *held_address(HeldBuffer *self, void *closure) {
  return PyLong_FromVoidPtr(self->buffer);
}

static PyGetSetDef held_getset[] = {
  {"address", (getter)held_address, NULL, "The PJRT_Buffer* it owns.", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject HeldBufferType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "mx_pjrt_launch.HeldBuffer",
  .tp_basicsize = sizeof(HeldBuffer),
  .tp_dealloc = (destructor)held_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A PJRT buffer owned by a Python object (the NumPy array viewing its host memory, or "
            "a device array): destroyed with it.",
  .tp_getset = held_getset,
};



/* ------------------------------------------------------------------ Launcher */

typedef struct {
  PyObject_HEAD
  pjrt_fn fn[N_ENTRIES];
  void *client, *device, *executable;
  Py_ssize_t n_in, n_out;
  int *in_pjrt_type;
  int *in_ndim;
  int64_t **in_dims;           /* PJRT's dims of each input */
  npy_intp **in_np_dims;       /* the same, as NumPy's */
  int64_t *non_donatable;      /* 0 .. n_in-1: no input is ever donated */
  PyArray_Descr **in_descr, **out_descr;
  int *out_ndim;
  npy_intp **out_dims;
  void **out_layout;           /* a dense PJRT_Buffer_MemoryLayout per output (ToHostBuffer) */
  int host_memory;             /* outputs live in host memory: view them, copy nothing */
  int device_outputs;          /* outputs stay on the device: their PJRT buffers, not awaited */
  Py_ssize_t zero_copy_bytes;  /* inputs this large are lent to the plugin, not copied */
  PyObject *make_error;        /* (code, message, where) -> the exception to raise */
  PyObject *owner;             /* keeps the plugin, client, executable and layouts alive */
} Launcher;

static void launcher_dealloc(Launcher *self) {
  for (Py_ssize_t k = 0; k < self->n_in; k++) {
    if (self->in_dims) PyMem_Free(self->in_dims[k]);
    if (self->in_np_dims) PyMem_Free(self->in_np_dims[k]);
    if (self->in_descr) Py_XDECREF(self->in_descr[k]);
  }
  for (Py_ssize_t k = 0; k < self->n_out; k++) {
    if (self->out_dims) PyMem_Free(self->out_dims[k]);
    if (self->out_descr) Py_XDECREF(self->out_descr[k]);
  }
  PyMem_Free(self->in_pjrt_type);
  PyMem_Free(self->in_ndim);
  PyMem_Free(self->in_dims);
  PyMem_Free(self->in_np_dims);
  PyMem_Free(self->non_donatable);
  PyMem_Free(self->in_descr);
  PyMem_Free(self->out_descr);
  PyMem_Free(self->out_ndim);
  PyMem_Free(self->out_dims);
  PyMem_Free(self->out_layout);
  Py_XDECREF(self->make_error);
  Py_XDECREF(self->owner);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int read_shape(PyObject *shape, int *ndim, int64_t **dims, npy_intp **np_dims) {
  Py_ssize_t nd = PyTuple_GET_SIZE(shape);
  *ndim = (int)nd;
  *dims = PyMem_Calloc(nd + 1, sizeof(int64_t));
  *np_dims = PyMem_Calloc(nd + 1, sizeof(npy_intp));
  if (*dims == NULL || *np_dims == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t d = 0; d < nd; d++) {
    (*np_dims)[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
    (*dims)[d] = (int64_t)(*np_dims)[d];
  }
  return PyErr_Occurred() ? -1 : 0;
}

/* Launcher(entry addresses, client, device, executable,
 *          ((pjrt type, dtype, shape), ...) of the inputs, ((dtype, shape, layout address), ...)
 *          of the outputs, host_memory, device_outputs, zero_copy_bytes, make_error, owner) */
static int launcher_init(Launcher *self, PyObject *args, PyObject *kwds) {
  PyObject *entries, *ins, *outs, *make_error, *owner;
  unsigned long long client, device, executable;
  int host_memory, device_outputs;
  if (self->in_ndim != NULL) {
    PyErr_SetString(PyExc_TypeError, "a Launcher is initialized once");
    return -1;
  }
  if (!PyArg_ParseTuple(args, "O!KKKO!O!ppnOO", &PyTuple_Type, &entries, &client, &device, &executable,
                        &PyTuple_Type, &ins, &PyTuple_Type, &outs, &host_memory, &device_outputs,
                        &self->zero_copy_bytes, &make_error, &owner))
    return -1;
  if (PyTuple_GET_SIZE(entries) != N_ENTRIES) {
    PyErr_SetString(PyExc_ValueError, "Launcher: wrong number of PJRT entries");
    return -1;
  }
  for (int k = 0; k < N_ENTRIES; k++)
    self->fn[k] = (pjrt_fn)(uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(entries, k));
  if (PyErr_Occurred()) return -1;
  self->client = (void *)(uintptr_t)client;
  self->device = (void *)(uintptr_t)device;
  self->executable = (void *)(uintptr_t)executable;
  self->device_outputs = device_outputs;
  self->host_memory = !device_outputs && host_memory && self->fn[UNSAFE_POINTER] != NULL;
  Py_INCREF(make_error);
  self->make_error = make_error;
  Py_INCREF(owner);
  self->owner = owner;
  Py_ssize_t n_in = self->n_in = PyTuple_GET_SIZE(ins);
  Py_ssize_t n_out = self->n_out = PyTuple_GET_SIZE(outs);
  self->in_pjrt_type = PyMem_Calloc(n_in + 1, sizeof(int));
  self->in_ndim = PyMem_Calloc(n_in + 1, sizeof(int));
  self->in_dims = PyMem_Calloc(n_in + 1, sizeof(int64_t *));
  self->in_np_dims = PyMem_Calloc(n_in + 1, sizeof(npy_intp *));
  self->non_donatable = PyMem_Calloc(n_in + 1, sizeof(int64_t));
  self->in_descr = PyMem_Calloc(n_in + 1, sizeof(PyArray_Descr *));
  self->out_descr = PyMem_Calloc(n_out + 1, sizeof(PyArray_Descr *));
  self->out_ndim = PyMem_Calloc(n_out + 1, sizeof(int));
  self->out_dims = PyMem_Calloc(n_out + 1, sizeof(npy_intp *));
  self->out_layout = PyMem_Calloc(n_out + 1, sizeof(void *));
  if (!self->in_pjrt_type || !self->in_ndim || !self->in_dims || !self->in_np_dims ||
      !self->non_donatable || !self->in_descr || !self->out_descr || !self->out_ndim ||
      !self->out_dims || !self->out_layout) {
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t k = 0; k < n_in; k++) {
    PyObject *spec = PyTuple_GET_ITEM(ins, k);
    self->non_donatable[k] = k;
    self->in_pjrt_type[k] = (int)PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
    if (!PyArray_DescrConverter(PyTuple_GET_ITEM(spec, 1), &self->in_descr[k])) return -1;
    if (read_shape(PyTuple_GET_ITEM(spec, 2), &self->in_ndim[k], &self->in_dims[k], &self->in_np_dims[k]) < 0)
      return -1;
  }
  for (Py_ssize_t k = 0; k < n_out; k++) {
    PyObject *spec = PyTuple_GET_ITEM(outs, k);
    int64_t *unused = NULL;
    if (!PyArray_DescrConverter(PyTuple_GET_ITEM(spec, 0), &self->out_descr[k])) return -1;
    int failed = read_shape(PyTuple_GET_ITEM(spec, 1), &self->out_ndim[k], &unused, &self->out_dims[k]);
    PyMem_Free(unused);
    if (failed < 0) return -1;
    self->out_layout[k] = (void *)(uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(spec, 2));
  }
  return PyErr_Occurred() ? -1 : 0;
}

/* Raises the failure's PJRT_Error as make_error(code, message, where) says; destroys it. */
static PyObject *raise_failure(Launcher *self, Failure *f) {
  PJRT_Error_Message_Args m = {PJRT_Error_Message_Args_SIZE, NULL, f->error, NULL, 0};
  self->fn[ERROR_MESSAGE](&m);
  PJRT_Error_GetCode_Args c = {PJRT_Error_GetCode_Args_SIZE, NULL, f->error, 0};
  void *code_error = self->fn[ERROR_CODE](&c);
  PyObject *exc = PyObject_CallFunction(self->make_error, "iy#s", code_error ? 2 : c.code,
                                        m.message ? (const char *)m.message : "",
                                        (Py_ssize_t)m.message_size, f->where);
  PJRT_Error_Destroy_Args d = {PJRT_Error_Destroy_Args_SIZE, NULL, f->error};
  self->fn[ERROR_DESTROY](&d);
  if (code_error) {
    PJRT_Error_Destroy_Args d2 = {PJRT_Error_Destroy_Args_SIZE, NULL, code_error};
    self->fn[ERROR_DESTROY](&d2);
  }
  if (exc != NULL) {
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
  return NULL;
}

/* A new NumPy array with output k's value, copied from `buffer` (waiting for it without the GIL);
 * NULL with PyErr set if the array cannot be made. A PJRT failure goes to `f`. */
static PyObject *copy_output(Launcher *self, Py_ssize_t k, void *buffer, Failure *f) {
  Py_INCREF(self->out_descr[k]);
  PyObject *o = PyArray_NewFromDescr(&PyArray_Type, self->out_descr[k], self->out_ndim[k], self->out_dims[k],
                                     NULL, NULL, 0, NULL);
  if (o == NULL || PyArray_NBYTES((PyArrayObject *)o) == 0) return o;
  pjrt_fn *fn = self->fn;
  PJRT_Buffer_ToHostBuffer_Args t;
  memset(&t, 0, sizeof t);
  t.struct_size = PJRT_Buffer_ToHostBuffer_Args_SIZE;
  t.src = buffer;
  t.host_layout = self->out_layout[k];
  t.dst = PyArray_DATA((PyArrayObject *)o);
  t.dst_size = (size_t)PyArray_NBYTES((PyArrayObject *)o);
  Py_BEGIN_ALLOW_THREADS
  void *error = fn[TO_HOST](&t);
  note(f, error, "PJRT_Buffer_ToHostBuffer", fn[ERROR_DESTROY]);
  if (error == NULL) await_event(fn, t.event, f, "PJRT_Buffer_ToHostBuffer");
  Py_END_ALLOW_THREADS
  return o;
}

/* A HeldBuffer owning a device output (no host memory to view), or NULL with PyErr set. */
static PyObject *hold_device_buffer(Launcher *self, void *buffer) {
  HeldBuffer *held = PyObject_New(HeldBuffer, &HeldBufferType);
  if (held == NULL) return NULL;
  held->destroy = self->fn[BUFFER_DESTROY];
  held->error_destroy = self->fn[ERROR_DESTROY];
  held->buffer = buffer;
  held->client = self->client;
  held->device = self->device;
  held->data = NULL;
  held->nbytes = -1;  /* never taken for an array's buffer (plugin_buffer) */
  held->type_num = -1;
  held->ndim = -1;
  live_held++;
  return (PyObject *)held;
}

/* The output buffer as a NumPy array viewing its memory (host_memory), owned by a HeldBuffer. */
static PyObject *view_output(Launcher *self, Py_ssize_t k, void *buffer, Failure *f) {
  PJRT_Buffer_UnsafePointer_Args p = {PJRT_Buffer_UnsafePointer_Args_SIZE, NULL, buffer, 0};
  void *error = self->fn[UNSAFE_POINTER](&p);
  if (error != NULL) {
    note(f, error, "PJRT_Buffer_UnsafePointer", self->fn[ERROR_DESTROY]);
    destroy_buffer(self->fn, buffer, f);
    return NULL;
  }
  HeldBuffer *held = PyObject_New(HeldBuffer, &HeldBufferType);
  if (held == NULL) {
    destroy_buffer(self->fn, buffer, f);
    return NULL;
  }
  void *data = (void *)p.buffer_pointer;
  held->destroy = self->fn[BUFFER_DESTROY];
  held->error_destroy = self->fn[ERROR_DESTROY];
  held->buffer = buffer;
  held->client = self->client;
  held->device = self->device;
  held->data = data;
  held->type_num = self->out_descr[k]->type_num;
  held->ndim = self->out_ndim[k] <= HELD_MAX_DIMS ? self->out_ndim[k] : -1;
  held->nbytes = -1;  /* set from the array below */
  for (int d = 0; d < self->out_ndim[k] && d < HELD_MAX_DIMS; d++) held->dims[d] = self->out_dims[k][d];
  live_held++;
  Py_INCREF(self->out_descr[k]);
  PyObject *array;
  if (data == NULL) {  /* a zero-size buffer may have no memory: an empty array of its own */
    array = PyArray_NewFromDescr(&PyArray_Type, self->out_descr[k], self->out_ndim[k],
                                 self->out_dims[k], NULL, NULL, 0, NULL);
    Py_DECREF(held);
    return array;
  }
  array = PyArray_NewFromDescr(&PyArray_Type, self->out_descr[k], self->out_ndim[k], self->out_dims[k],
                               NULL, data, NPY_ARRAY_CARRAY, NULL);
  if (array == NULL) {
    Py_DECREF(held);
    return NULL;
  }
  held->nbytes = PyArray_NBYTES((PyArrayObject *)array);
  if (PyArray_SetBaseObject((PyArrayObject *)array, (PyObject *)held) < 0) {
    Py_DECREF(array);
    return NULL;
  }
  return array;
}

/* The PJRT buffer an input array *is* (the whole of an output of a program of this client and
 * device, with its shape and dtype), or NULL: it goes into the program without a copy. */
static void *plugin_buffer(Launcher *self, PyArrayObject *a) {
  PyObject *base = PyArray_BASE(a);
  while (base != NULL && PyArray_Check(base)) base = PyArray_BASE((PyArrayObject *)base);  /* views */
  if (base == NULL || Py_TYPE(base) != &HeldBufferType) return NULL;
  HeldBuffer *h = (HeldBuffer *)base;
  if (h->buffer == NULL || h->client != self->client || h->device != self->device ||
      h->data != PyArray_DATA(a) || h->nbytes != PyArray_NBYTES(a) ||
      h->type_num != PyArray_DESCR(a)->type_num || h->ndim != PyArray_NDIM(a) ||
      !PyArray_CompareLists(h->dims, PyArray_DIMS(a), h->ndim))
    return NULL;
  return h->buffer;
}

/* launcher(*inputs) -> [outputs], or None when an input is not a C-contiguous NumPy array of its
 * expected dtype and shape (the caller takes the ctypes path). With device_outputs, an input may
 * also be the address of a PJRT buffer of this client and device (an int: the caller checked it
 * and holds the buffer through the call), and the outputs are HeldBuffers owning their new PJRT
 * buffers (`address`), returned without waiting for the computation. */
static PyObject *launcher_call(Launcher *self, PyObject *args, PyObject *kwds) {
  Py_ssize_t n_in = self->n_in, n_out = self->n_out;
  if (kwds != NULL || PyTuple_GET_SIZE(args) != n_in) Py_RETURN_NONE;
  void *stack_data[SMALL], *stack_in[SMALL], *stack_out[SMALL], *stack_lent[SMALL], *stack_held[SMALL];
  Py_ssize_t stack_nbytes[SMALL];
  int small = n_in <= SMALL && n_out <= SMALL;
  void **data = small ? stack_data : PyMem_Calloc(n_in + 1, sizeof(void *));
  void **in_buffers = small ? stack_in : PyMem_Calloc(n_in + 1, sizeof(void *));
  void **lent = small ? stack_lent : PyMem_Calloc(n_in + 1, sizeof(void *));
  void **held = small ? stack_held : PyMem_Calloc(n_in + 1, sizeof(void *));
  Py_ssize_t *nbytes = small ? stack_nbytes : PyMem_Calloc(n_in + 1, sizeof(Py_ssize_t));
  void **out_buffers = small ? stack_out : PyMem_Calloc(n_out + 1, sizeof(void *));
  PyObject *result = NULL;
  if (data == NULL || in_buffers == NULL || lent == NULL || held == NULL || nbytes == NULL ||
      out_buffers == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t k = 0; k < n_in; k++) {
    PyObject *x = PyTuple_GET_ITEM(args, k);
    if (self->device_outputs && PyLong_CheckExact(x)) {  /* a device buffer: goes in as it is */
      data[k] = NULL;
      nbytes[k] = 0;
      lent[k] = NULL;
      in_buffers[k] = held[k] = PyLong_AsVoidPtr(x);
      if (held[k] == NULL) goto decline;
      continue;
    }
    if (!PyArray_CheckExact(x)) goto decline;
    PyArrayObject *a = (PyArrayObject *)x;
    if (!PyArray_EquivTypes(PyArray_DESCR(a), self->in_descr[k]) || !PyArray_IS_C_CONTIGUOUS(a) ||
        !PyArray_ISNOTSWAPPED(a) || !PyArray_CompareLists(PyArray_DIMS(a), self->in_np_dims[k], self->in_ndim[k]) ||
        PyArray_NDIM(a) != self->in_ndim[k])
      goto decline;
    data[k] = PyArray_DATA(a);
    nbytes[k] = PyArray_NBYTES(a);
    lent[k] = NULL;
    in_buffers[k] = held[k] = plugin_buffer(self, a);
    if (held[k] != NULL) inputs_passed_uncopied++;
  }
  for (Py_ssize_t k = 0; k < n_out; k++) out_buffers[k] = NULL;
  Failure f = {NULL, NULL};
  pjrt_fn *fn = self->fn;
  Py_BEGIN_ALLOW_THREADS
  /* The inputs: small ones copied into new device buffers; large ones, on a plugin whose device
   * memory is host memory, lent to it (zero copy) until their buffers are destroyed below. */
  for (Py_ssize_t k = 0; k < n_in && f.error == NULL; k++) {
    if (held[k] != NULL) continue;  /* already the plugin's buffer */
    PJRT_Client_BufferFromHostBuffer_Args h;
    memset(&h, 0, sizeof h);
    h.struct_size = PJRT_Client_BufferFromHostBuffer_Args_SIZE;
    h.client = self->client;
    h.data = data[k];
    h.type = self->in_pjrt_type[k];
    h.dims = self->in_dims[k];
    h.num_dims = (size_t)self->in_ndim[k];
    h.host_buffer_semantics = nbytes[k] >= self->zero_copy_bytes ? 2 /* kImmutableZeroCopy */
                                                                 : 0 /* kImmutableOnlyDuringCall */;
    h.device = self->device;
    note(&f, fn[FROM_HOST](&h), "PJRT_Client_BufferFromHostBuffer", fn[ERROR_DESTROY]);
    if (f.error == NULL) {
      in_buffers[k] = h.buffer;
      if (h.host_buffer_semantics == 0)
        await_event(fn, h.done_with_host_buffer, &f, "PJRT_Client_BufferFromHostBuffer");
      else
        lent[k] = h.done_with_host_buffer;
    }
  }
  if (f.error == NULL) {
    PJRT_ExecuteOptions options;
    memset(&options, 0, sizeof options);
    options.struct_size = PJRT_ExecuteOptions_SIZE;
    options.non_donatable_input_indices = self->non_donatable;
    options.num_non_donatable_input_indices = (size_t)n_in;
    void **argument_list = in_buffers, **output_list = out_buffers;
    PJRT_LoadedExecutable_Execute_Args e;
    memset(&e, 0, sizeof e);
    e.struct_size = PJRT_LoadedExecutable_Execute_Args_SIZE;
    e.executable = self->executable;
    e.options = &options;
    e.argument_lists = &argument_list;
    e.num_devices = 1;
    e.num_args = (size_t)n_in;
    e.output_lists = &output_list;
    note(&f, fn[EXECUTE](&e), "PJRT_LoadedExecutable_Execute", fn[ERROR_DESTROY]);
  }
  /* Every output computed (or its computation's error) before anything is read; device outputs
   * are not read here, and their errors surface where they are awaited. (Input buffers made
   * above may be destroyed while the program still runs: PJRT frees their memory after.) */
  for (Py_ssize_t k = 0; k < n_out && !self->device_outputs; k++) {
    if (out_buffers[k] != NULL) await_buffer(fn, out_buffers[k], &f, "PJRT_LoadedExecutable_Execute");
  }
  for (Py_ssize_t k = 0; k < n_in; k++)
    if (held[k] == NULL) destroy_buffer(fn, in_buffers[k], &f);
  /* The lent arrays are the plugin's until it says it is done with them. */
  for (Py_ssize_t k = 0; k < n_in; k++) await_event(fn, lent[k], &f, "PJRT_Client_BufferFromHostBuffer");
  Py_END_ALLOW_THREADS
  PyObject *outs = f.error == NULL ? PyList_New(n_out) : NULL;
  for (Py_ssize_t k = 0; k < n_out; k++) {
    void *buffer = out_buffers[k];
    out_buffers[k] = NULL;
    if (outs == NULL || PyErr_Occurred()) {
      destroy_buffer(fn, buffer, &f);
      continue;
    }
    PyObject *o;
    if (self->device_outputs) {
      o = hold_device_buffer(self, buffer);
      if (o == NULL) destroy_buffer(fn, buffer, &f);
    } else if (self->host_memory) {
      o = view_output(self, k, buffer, &f);
    } else {
      o = copy_output(self, k, buffer, &f);
      destroy_buffer(fn, buffer, &f);
    }
    if (o == NULL) continue;  /* PyErr is set: the rest are destroyed above */
    PyList_SET_ITEM(outs, k, o);
  }
  if (f.error != NULL) {
    Py_XDECREF(outs);
    if (!PyErr_Occurred()) raise_failure(self, &f);
    else {
      PJRT_Error_Destroy_Args d = {PJRT_Error_Destroy_Args_SIZE, NULL, f.error};
      fn[ERROR_DESTROY](&d);
    }
  } else if (PyErr_Occurred()) {
    Py_XDECREF(outs);
  } else {
    result = outs;
  }
  goto done;
decline:
  Py_INCREF(Py_None);
  result = Py_None;
done:
  if (!small) {
    PyMem_Free(data);
    PyMem_Free(in_buffers);
    PyMem_Free(lent);
    PyMem_Free(held);
    PyMem_Free(nbytes);
    PyMem_Free(out_buffers);
  }
  return result;
}

/* The PJRT_Buffer* a Python int holds, or NULL with PyErr set. */
static void *buffer_address(PyObject *address, const char *who) {
  void *buffer = PyLong_AsVoidPtr(address);
  if (buffer == NULL && !PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "%s: a NULL buffer", who);
  return buffer;
}

/* wait(address): blocks (without the GIL) until the PJRT buffer at `address`, an output of this
 * program, is computed; raises its computation's error. The C twin of Buffer.block_until_ready,
 * without the ctypes calls (a device array's wait is part of every synchronous step). */
static PyObject *launcher_wait(Launcher *self, PyObject *arg) {
  void *buffer = buffer_address(arg, "wait");
  if (buffer == NULL) return NULL;
  Failure f = {NULL, NULL};
  Py_BEGIN_ALLOW_THREADS
  await_buffer(self->fn, buffer, &f, "PJRT_Buffer_ReadyEvent");
  Py_END_ALLOW_THREADS
  if (f.error != NULL) return raise_failure(self, &f);
  Py_RETURN_NONE;
}

/* to_host(address, k): a new NumPy array holding the value of the PJRT buffer at `address`, this
 * program's output `k` (its dtype, shape and dense layout); waits for it without the GIL. */
static PyObject *launcher_to_host(Launcher *self, PyObject *args) {
  PyObject *address;
  Py_ssize_t k;
  if (!PyArg_ParseTuple(args, "On", &address, &k)) return NULL;
  if (k < 0 || k >= self->n_out) {
    PyErr_Format(PyExc_IndexError, "to_host: output %zd of a program with %zd", k, self->n_out);
    return NULL;
  }
  void *buffer = buffer_address(address, "to_host");
  if (buffer == NULL) return NULL;
  Failure f = {NULL, NULL};
  PyObject *o = copy_output(self, k, buffer, &f);
  if (f.error != NULL) {
    Py_XDECREF(o);
    return raise_failure(self, &f);
  }
  return o;
}

static PyMethodDef launcher_methods[] = {
  {"wait", (PyCFunction)launcher_wait, METH_O, "Wait for an output buffer (its address) to be computed."},
  {"to_host", (PyCFunction)launcher_to_host, METH_VARARGS,
   "A new NumPy array with output k's value, copied from the buffer at the address."},
  {NULL, NULL, 0, NULL},
};

static PyTypeObject LauncherType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "mx_pjrt_launch.Launcher",
  .tp_basicsize = sizeof(Launcher),
  .tp_dealloc = (destructor)launcher_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "Runs one compiled PJRT program: NumPy inputs -> NumPy outputs, or device buffers in "
            "and out (device_outputs).",
  .tp_init = (initproc)launcher_init,
  .tp_new = PyType_GenericNew,
  .tp_call = (ternaryfunc)launcher_call,
  .tp_methods = launcher_methods,
};

static PyObject *live_held_buffers(PyObject *module, PyObject *unused) {
  return PyLong_FromSsize_t(live_held);
}

static PyObject *uncopied_inputs(PyObject *module, PyObject *unused) {
  return PyLong_FromLongLong(inputs_passed_uncopied);
}

static PyMethodDef methods[] = {
  {"live_held_buffers", live_held_buffers, METH_NOARGS,
   "How many output buffers NumPy arrays view right now."},
  {"uncopied_inputs", uncopied_inputs, METH_NOARGS,
   "How many inputs went into programs as the plugin's own buffers (outputs passed back)."},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "mx_pjrt_launch", NULL, -1, methods};

PyMODINIT_FUNC PyInit_mx_pjrt_launch(void) {
  import_array();
  if (PyType_Ready(&LauncherType) < 0 || PyType_Ready(&HeldBufferType) < 0) return NULL;
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
