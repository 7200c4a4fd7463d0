/* FFI targets for tests/ffi/test_ffi.py, written against morphax_ffi.h. */
#include "morphax_ffi.h"

/* rets[0] = args[0] * factor (float32, any shape); factor is an F64 attribute. */
int32_t scale(const MxFfiCall *call) {
  const MxFfiAttr *factor = mx_ffi_attr(call, "factor");
  if (factor == NULL || factor->kind != MX_FFI_ATTR_F64) return mx_ffi_fail(call, "scale: needs a float attribute 'factor'");
  if (call->args[0].dtype != MX_FFI_F32) return mx_ffi_fail(call, "scale: expects float32");
  const float *x = (const float *)call->args[0].data;
  float *y = (float *)call->rets[0].data;
  int64_t n = mx_ffi_size(&call->args[0]);
  for (int64_t i = 0; i < n; i++) y[i] = (float)(x[i] * factor->f64);
  return 0;
}

/* Row-wise: rets[0][..., i] = sum_j args[0][..., i, j] * args[1][..., j] (float64), where args[1]
 * may have fewer leading axes of size 1 (expand_dims) or the same (broadcast_all). */
int32_t matvec(const MxFfiCall *call) {
  const MxFfiBuffer *a = &call->args[0], *v = &call->args[1];
  int64_t rows = a->dims[a->rank - 2], cols = a->dims[a->rank - 1];
  int64_t batch = mx_ffi_size(a) / (rows * cols), vbatch = mx_ffi_size(v) / cols;
  const double *ad = (const double *)a->data, *vd = (const double *)v->data;
  double *out = (double *)call->rets[0].data;
  for (int64_t b = 0; b < batch; b++) {
    const double *vb = vd + (vbatch == 1 ? 0 : b) * cols;
    for (int64_t i = 0; i < rows; i++) {
      double acc = 0;
      for (int64_t j = 0; j < cols; j++) acc += ad[(b * rows + i) * cols + j] * vb[j];
      out[b * rows + i] = acc;
    }
  }
  return 0;
}

/* Two results: the sum and the product of two int32 arrays; an array attribute 'offset' of
 * int32 is added to the sum (broadcast from its first element). */
int32_t sum_and_product(const MxFfiCall *call) {
  const int32_t *x = (const int32_t *)call->args[0].data, *y = (const int32_t *)call->args[1].data;
  const MxFfiAttr *offset = mx_ffi_attr(call, "offset");
  int32_t add = (offset != NULL && offset->kind == MX_FFI_ATTR_ARRAY) ? ((const int32_t *)offset->array.data)[0] : 0;
  int64_t n = mx_ffi_size(&call->args[0]);
  for (int64_t i = 0; i < n; i++) {
    ((int32_t *)call->rets[0].data)[i] = x[i] + y[i] + add;
    ((int32_t *)call->rets[1].data)[i] = x[i] * y[i];
  }
  return 0;
}

/* In place (input_output_aliases {0: 0}): rets[0] += 1; checks the buffer is shared. */
int32_t add_one_in_place(const MxFfiCall *call) {
  if (call->args[0].data != call->rets[0].data) return mx_ffi_fail(call, "add_one_in_place: buffers are not aliased");
  float *y = (float *)call->rets[0].data;
  for (int64_t i = 0; i < mx_ffi_size(&call->rets[0]); i++) y[i] += 1.0f;
  return 0;
}

/* Always fails, with the 'what' string attribute in its message. */
int32_t always_fails(const MxFfiCall *call) {
  const MxFfiAttr *what = mx_ffi_attr(call, "what");
  return mx_ffi_fail(call, what != NULL && what->kind == MX_FFI_ATTR_STR ? what->str : "failed");
}

/* Counts its calls (a side effect); rets[0] = the count so far (int32 scalar). */
static int32_t calls_so_far = 0;
int32_t count_calls(const MxFfiCall *call) {
  calls_so_far++;
  *(int32_t *)call->rets[0].data = calls_so_far;
  return 0;
}
int32_t read_count(void) { return calls_so_far; }
