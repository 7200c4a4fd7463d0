"""`while_loop` as a native loop when each iteration is one fused kernel.

`control_flow/while_loop.py` runs a loop as one compiled *step* program per iteration (the body,
then the predicate on its result). When that program is a single native segment (its kernels and
matmuls, compiler/segments.py), the whole loop runs in C (`mx_while` below, built once per
machine and cached like every library): the segment is called back to back, the new carry copied
over the carry buffers between iterations, without returning to Python and without the GIL.
Anything else keeps the Python loop.
"""

from __future__ import annotations

import ctypes

import numpy as np

from morphax._src.compiler.backends.c import build
from morphax._src.compiler.backends.c.program import _arena

_SOURCE = r"""
#include <stdint.h>
#include <string.h>

typedef void (*mx_kernel_fn)(void *const *);

/* Run `kernel` (a segment) on `buf` until its predicate output is false. After each call the new carry
 * (outputs carry_out[c]) is copied over the carry inputs (slots carry_in[c]), which are scratch
 * buffers the caller owns; the final carry is left in the outputs. */
void mx_while(mx_kernel_fn kernel, void *const *buf, int64_t n_in, int64_t pred,
              int64_t n_carry, const int64_t *carry_in, const int64_t *carry_out,
              const int64_t *carry_bytes) {
  for (;;) {
    kernel(buf);
    if (!*(const uint8_t *)buf[n_in + pred]) return;
    for (int64_t c = 0; c < n_carry; c++)
      memcpy(buf[carry_in[c]], buf[n_in + carry_out[c]], (size_t)carry_bytes[c]);
  }
}
"""

_helper: list = []


def _mx_while():
    if not _helper:
        fn = build.load(_SOURCE, "mx_while").mx_while
        fn.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int64] * 3 + [ctypes.c_void_p] * 3
        fn.restype = None
        _helper.append(fn)
    return _helper[0]


def native_while(executable, n_consts: int, n_carry: int):
    """A callable running the whole loop natively, `(consts..., carry...) -> final carry`, for
    a step `executable` whose program is one native segment reading only the step's inputs and
    returning every output once (new carry, then the predicate); else None."""
    segment = getattr(executable, "single_segment", None)
    if segment is None or not build.probe()[0]:
        return None
    c_fn, in_pos, out_pos, in_dtypes, out_specs, scratch_bytes = segment
    n_out = len(out_specs)
    if sorted(out_pos) != list(range(n_carry + 1)):
        return None
    pred_store = out_pos.index(n_carry)
    if out_specs[pred_store] != ((), np.dtype(np.bool_)):
        return None
    slot_of = {p: k for k, p in enumerate(in_pos)}
    carries = []  # (input slot or None when the kernel does not read it, store index, bytes)
    for c in range(n_carry):
        store = out_pos.index(c)
        shape, dtype = out_specs[store]
        slot = slot_of.get(n_consts + c)
        if slot is not None and (in_dtypes[slot] != dtype):
            return None
        carries.append((slot, store, int(np.prod(shape, dtype=np.int64)) * dtype.itemsize))
    read = [(slot, store, size) for slot, store, size in carries if slot is not None]
    c_in = (ctypes.c_int64 * max(len(read), 1))(*[s for s, _, _ in read])
    c_out = (ctypes.c_int64 * max(len(read), 1))(*[o for _, o, _ in read])
    c_bytes = (ctypes.c_int64 * max(len(read), 1))(*[b for _, _, b in read])
    n = len(in_pos) + n_out + 1  # then the scratch arena
    kernel_address = ctypes.cast(c_fn, ctypes.c_void_p)
    helper = _mx_while()

    def run(args) -> list:
        ins = []
        for k, p in enumerate(in_pos):
            # Carry inputs are private copies: the loop overwrites them.
            if p >= n_consts:
                ins.append(np.array(args[p], dtype=in_dtypes[k], order="C"))
            else:
                ins.append(np.ascontiguousarray(args[p], dtype=in_dtypes[k]))
        outs = [np.empty(shape, dtype) for shape, dtype in out_specs]
        arena = _arena(scratch_bytes) if scratch_bytes else (None, None)  # kept alive to the end
        ptrs = (ctypes.c_void_p * n)(*[a.ctypes.data for a in ins], *[a.ctypes.data for a in outs], arena[1])
        helper(kernel_address, ptrs, len(in_pos), pred_store, len(read), c_in, c_out, c_bytes)
        return [outs[store] for _, store, _ in carries]

    return run
