/* morphax_ffi.h: how morphax calls a foreign function (morphax.ffi.ffi_call).
 *
 * A target is one C function taking one MxFfiCall and returning 0 on success. It reads its
 * arguments and writes its results through the buffers (row-major, contiguous, the dtypes and
 * shapes ffi_call declared), and finds the keyword attributes of the call by name. On failure it
 * writes a message into `error` (at most error_size bytes, NUL included) and returns nonzero:
 * the call then raises JaxRuntimeError with that message.
 *
 * Register it from Python with morphax.ffi.register_ffi_target(name, morphax.ffi.pycapsule(
 * ctypes.CDLL(path).symbol)) (or the ctypes function itself). Results aliased to an argument
 * (input_output_aliases) share its buffer, which holds the argument's values on entry.
 */
#ifndef MORPHAX_FFI_H_
#define MORPHAX_FFI_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MORPHAX_FFI_VERSION 1

typedef enum {
  MX_FFI_BOOL = 1, /* one byte, 0 or 1 */
  MX_FFI_S8, MX_FFI_S16, MX_FFI_S32, MX_FFI_S64,
  MX_FFI_U8, MX_FFI_U16, MX_FFI_U32, MX_FFI_U64,
  MX_FFI_F16, MX_FFI_BF16, MX_FFI_F32, MX_FFI_F64,
  MX_FFI_C64, MX_FFI_C128 /* interleaved (real, imaginary) pairs */
} MxFfiDtype;

typedef struct {
  void *data;          /* rank-dimensional row-major array; NULL only when it has no elements */
  const int64_t *dims; /* `rank` extents */
  int64_t rank;
  int32_t dtype;       /* an MxFfiDtype */
} MxFfiBuffer;

typedef enum {
  MX_FFI_ATTR_I64 = 1, /* Python int or bool (and NumPy integer scalars) */
  MX_FFI_ATTR_F64,     /* Python float (and NumPy floating scalars) */
  MX_FFI_ATTR_STR,     /* str */
  MX_FFI_ATTR_ARRAY    /* a NumPy array */
} MxFfiAttrKind;

typedef struct {
  const char *name;
  int32_t kind; /* an MxFfiAttrKind: which field below holds the value */
  int64_t i64;
  double f64;
  const char *str;   /* NUL-terminated */
  MxFfiBuffer array;
} MxFfiAttr;

typedef struct {
  int32_t version; /* MORPHAX_FFI_VERSION */
  const MxFfiBuffer *args;
  int64_t num_args;
  MxFfiBuffer *rets;
  int64_t num_rets;
  const MxFfiAttr *attrs; /* sorted by name */
  int64_t num_attrs;
  char *error;
  int64_t error_size;
} MxFfiCall;

typedef int32_t (*MxFfiHandler)(const MxFfiCall *call);

/* The attribute named `name`, or NULL. */
static inline const MxFfiAttr *mx_ffi_attr(const MxFfiCall *call, const char *name) {
  for (int64_t i = 0; i < call->num_attrs; i++) {
    if (strcmp(call->attrs[i].name, name) == 0) return &call->attrs[i];
  }
  return NULL;
}

/* The number of elements of a buffer. */
static inline int64_t mx_ffi_size(const MxFfiBuffer *b) {
  int64_t n = 1;
  for (int64_t i = 0; i < b->rank; i++) n *= b->dims[i];
  return n;
}

/* Report a failure: copy `message` into the call's error buffer and return 1. */
static inline int32_t mx_ffi_fail(const MxFfiCall *call, const char *message) {
  if (call->error_size > 0) {
    strncpy(call->error, message, (size_t)(call->error_size - 1));
    call->error[call->error_size - 1] = '\0';
  }
  return 1;
}

#endif /* MORPHAX_FFI_H_ */
