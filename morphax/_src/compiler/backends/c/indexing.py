"""Gather and the scatter family as generated C loops: the C backend's `opaque` implementation of
the GATHER and SCATTER equations that stay out of the fused kernels.

Semantics are those of the primitives' NumPy references (prims/indexing.py, prims/scatter.py), bit
for bit:
- index vectors are converted to int64 first (a uint64 index above INT64_MAX reads as INT64_MAX, so
  it is out of bounds, never negative);
- gather clamps every start so its whole slice is in bounds (CLIP, PROMISE_IN_BOUNDS and
  FILL_OR_DROP alike); FILL_OR_DROP then writes `fill_value` (cast to the operand dtype as the
  reference casts it) over each slice whose unclamped start was out of bounds;
- scatter clamps the starts under CLIP and otherwise drops every window that is not fully in
  bounds; updates are applied one at a time in the row-major order of `updates` (as `ufunc.at`),
  so duplicates accumulate in the reference's order and, for plain `scatter`, the last one wins.

The loops are shape-generic: one C function per (operation, element type, index type), with the
shapes, strides and clamp bounds of an equation passed at run time in an int64 descriptor (so
one library serves every shape, and is built once per machine through build.py's disk cache).
Size-1 axes are dropped and adjacent axes that are contiguous in every array involved are merged
first, so an embedding lookup `table[ids]` is one loop over the ids copying rows with memcpy and
its gradient one loop adding rows. Gathers run on OpenMP threads above PARALLEL_ELEMENTS output
elements; scatters run sequentially (their order is part of the result).

Supported (anything else returns None, and the primitive's reference runs):
- gather: any dimension numbers and mode, every dtype of size 1, 2, 4, 8 or 16 bytes (a bit copy:
  bool, ints, float16/bfloat16/float32/float64, complex);
- scatter (set): the same dtypes; scatter-add: every real dtype in render.DTYPES (bool: or;
  float16/bfloat16 computed in float32 and rounded after every add, as NumPy/ml_dtypes do) and
  complex64/128; scatter-mul: real dtypes (bool: and); scatter-min/max: real dtypes with NumPy's
  NaN propagation and choice between equal values (signed zeros);
- indices of every integer dtype (int8..int64, uint8..uint64).
Not supported: a scatter into an empty operand with non-empty updates (the reference's own
behaviour there is an error), update_jaxpr combiners other than the primitive's own.
"""

from __future__ import annotations

import ctypes

import numpy as np

from morphax._src.compiler.backends.c import build, render
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.primitive import Kind

# Gathers with at least this many output elements run on OpenMP threads.
PARALLEL_ELEMENTS = 1 << 17

_INDEX_DTYPES = frozenset(
    np.dtype(d) for d in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
)
_BITS_TYPE = {1: "uint8_t", 2: "uint16_t", 4: "uint32_t", 8: "uint64_t", 16: "mx_bits128"}

stats = {"calls": 0}  # native gather/scatter calls (tests assert that the hook ran)


# ------------------------------------------------------------------------------------------ C


_HEADER = """\
#include <stdint.h>
#include <string.h>
typedef struct { uint64_t lo, hi; } mx_bits128;
"""


def _index_conversion(idx_dtype) -> str:
    """C function `mx_index` converting one index to int64 exactly as the reference does."""
    ct = render.ctype(idx_dtype)
    if np.dtype(idx_dtype) == np.uint64:
        body = "return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;"
    else:
        body = "return (int64_t)v;"
    return f"static inline int64_t mx_index({ct} v) {{ {body} }}\n"


def _gather_source(name: str, itemsize: int, idx_dtype) -> str:
    t = _BITS_TYPE[itemsize]
    it = render.ctype(idx_dtype)
    return (
        _HEADER
        + _index_conversion(idx_dtype)
        + f"""
/* gather: out[batch, window] = operand[clamped start(batch) + window], or the fill value where
 * filling and the start was out of bounds. Descriptor d (int64):
 *   nb, K, nw, filling, bshape[nb], bop[nb], bout[nb], kstride[K], kupper[K],
 *   wshape[nw], wop[nw], wout[nw]  (strides in elements) */
void {name}(const {t} *restrict op, const {it} *restrict idx, {t} *restrict out,
            const {t} *restrict fill, const int64_t *restrict d) {{
  const int64_t nb = d[0], K = d[1], nw = d[2], filling = d[3];
  const int64_t *bsh = d + 4, *bop = bsh + nb, *bout = bop + nb;
  const int64_t *kst = bout + nb, *kup = kst + K;
  const int64_t *wsh = kup + K, *wop = wsh + nw, *wout = wop + nw;
  int64_t nbatch = 1, nouter = 1;
  for (int64_t i = 0; i < nb; i++) nbatch *= bsh[i];
  for (int64_t i = 0; i + 1 < nw; i++) nouter *= wsh[i];
  const int64_t ninner = nw ? wsh[nw - 1] : 1;
  const int64_t sop = nw ? wop[nw - 1] : 0, sout = nw ? wout[nw - 1] : 0;
  if (nbatch == 0 || nouter == 0 || ninner == 0) return;
  const {t} fv = *fill;
  const int par = nbatch > 1 && nbatch * nouter * ninner >= {PARALLEL_ELEMENTS};
  #pragma omp parallel for schedule(static) if (par)
  for (int64_t b = 0; b < nbatch; b++) {{
    int64_t rest = b, po = 0, oo = 0;
    for (int64_t i = nb - 1; i >= 0; i--) {{
      const int64_t c = rest % bsh[i];
      rest /= bsh[i];
      po += c * bop[i];
      oo += c * bout[i];
    }}
    int ok = 1;
    const {it} *iv = idx + b * K;
    for (int64_t k = 0; k < K; k++) {{
      int64_t s = mx_index(iv[k]);
      if (s < 0) {{ s = 0; ok = 0; }}
      else if (s > kup[k]) {{ s = kup[k]; ok = 0; }}
      po += s * kst[k];
    }}
    const int use_fill = filling && !ok;
    for (int64_t w = 0; w < nouter; w++) {{
      int64_t r2 = w, p = po, o = oo;
      for (int64_t i = nw - 2; i >= 0; i--) {{
        const int64_t c = r2 % wsh[i];
        r2 /= wsh[i];
        p += c * wop[i];
        o += c * wout[i];
      }}
      {t} *dst = out + o;
      const {t} *src = op + p;
      if (use_fill) {{
        for (int64_t j = 0; j < ninner; j++) dst[j * sout] = fv;
      }} else if (sop == 1 && sout == 1) {{
        memcpy(dst, src, (size_t)ninner * sizeof({t}));
      }} else {{
        for (int64_t j = 0; j < ninner; j++) dst[j * sout] = src[j * sop];
      }}
    }}
  }}
}}
"""
    )


def _combine(op: str, dtype) -> tuple[str, str, bool] | None:
    """(C storage type, body of `mx_combine(a, b)` returning the new value, needs the prelude)
    for scatter `op` on `dtype`, or None where not supported."""
    dtype = np.dtype(dtype)
    if op == "set":
        if dtype.itemsize not in _BITS_TYPE:
            return None
        return _BITS_TYPE[dtype.itemsize], "return b;", False
    if dtype.kind == "c":
        if op != "add" or dtype.itemsize not in (8, 16):
            return None
        part = "float" if dtype.itemsize == 8 else "double"
        # NumPy adds complex numbers componentwise (no contraction: -ffp-contract=off).
        return f"struct {{ {part} re, im; }}", "a.re = a.re + b.re; a.im = a.im + b.im; return a;", False
    if dtype not in render.DTYPES:
        return None
    ct = render.ctype(dtype)
    if dtype == np.bool_:
        body = {"add": "a | b", "mul": "a & b", "min": "a & b", "max": "a | b"}[op]
        return ct, f"return ({ct})({body});", False
    if _dtypes.is_integer(dtype):
        if op == "add":
            return ct, f"return ({ct})((uint64_t)a + (uint64_t)b);", False  # wraps, never UB
        if op == "mul":
            return ct, f"return ({ct})((uint64_t)a * (uint64_t)b);", False
        return ct, f"return {'a < b' if op == 'min' else 'a > b'} ? a : b;", False
    narrow = dtype.itemsize == 2
    if narrow:
        # float16 / bfloat16 bits: computed in float32 and rounded back after every update, as
        # NumPy and ml_dtypes do per ufunc call (a product of two such values is exact in float32,
        # and rounding a float32 sum again to 11 or 8 bits gives the correctly rounded sum).
        widen = "mx_f16_to_f32" if dtype == np.float16 else "mx_bf16_to_f32"
        back = "mx_f32_to_f16" if dtype == np.float16 else "mx_f32_to_bf16"
        x, y = f"{widen}(a)", f"{widen}(b)"
    else:
        x, y = "a", "b"
    if op in ("add", "mul"):
        expr = f"{x} {'+' if op == 'add' else '*'} {y}"
        return ct, f"return {back}({expr});" if narrow else f"return {expr};", narrow
    # NaN propagates (the first operand's NaN first). Between equal values (signed zeros) NumPy
    # keeps the second operand for float32/float64 (and ml_dtypes for bfloat16), the first for
    # float16.
    keep_first_on_tie = dtype == np.float16
    cmp = {"min": "<", "max": ">"}[op]
    if keep_first_on_tie:
        cmp += "="
    pre = f"const float fa = {x}, fb = {y}; " if narrow else f"const {ct} fa = a, fb = b; "
    return ct, pre + f"if (fa != fa) return a; if (fb != fb) return b; return fa {cmp} fb ? a : b;", narrow


def _scatter_source(name: str, t: str, combine_body: str, prelude: bool, idx_dtype, is_set: bool) -> str:
    it = render.ctype(idx_dtype)
    head = (render.PRELUDE + "\n" if prelude else "") + _HEADER + _index_conversion(idx_dtype)
    typedef = f"typedef {t} mx_elem;\n"
    contiguous = (
        "memcpy(dst, src, (size_t)ninner * sizeof(mx_elem));"
        if is_set
        else "for (int64_t j = 0; j < ninner; j++) dst[j] = mx_combine(dst[j], src[j]);"
    )
    return (
        head
        + typedef
        + f"static inline mx_elem mx_combine(mx_elem a, mx_elem b) {{ {combine_body} }}\n"
        + f"""
/* scatter: out (a copy of the operand) combined with every update in the row-major order of
 * `updates`; a window out of bounds is clamped (clip) or dropped. Descriptor d (int64):
 *   nb, K, clip, R, bshape[nb], bop[nb], kstride[K], kupper[K],
 *   ushape[R], ub[R] (flat batch strides), uw[R] (operand strides)
 * pos: scratch of one int64 per batch position (operand offset of its window, -1: dropped). */
void {name}(mx_elem *restrict out, const {it} *restrict idx, const mx_elem *restrict upd,
            int64_t *restrict pos, const int64_t *restrict d) {{
  const int64_t nb = d[0], K = d[1], clip = d[2], R = d[3];
  const int64_t *bsh = d + 4, *bop = bsh + nb, *kst = bop + nb, *kup = kst + K;
  const int64_t *ush = kup + K, *ub = ush + R, *uw = ub + R;
  int64_t nbatch = 1, nouter = 1;
  for (int64_t i = 0; i < nb; i++) nbatch *= bsh[i];
  for (int64_t i = 0; i + 1 < R; i++) nouter *= ush[i];
  const int64_t ninner = R ? ush[R - 1] : 1, sb = R ? ub[R - 1] : 0, sw = R ? uw[R - 1] : 0;
  if (nbatch == 0 || nouter == 0 || ninner == 0) return;
  for (int64_t b = 0; b < nbatch; b++) {{
    int64_t rest = b, po = 0;
    for (int64_t i = nb - 1; i >= 0; i--) {{
      const int64_t c = rest % bsh[i];
      rest /= bsh[i];
      po += c * bop[i];
    }}
    const {it} *iv = idx + b * K;
    for (int64_t k = 0; k < K; k++) {{
      int64_t s = mx_index(iv[k]);
      if (s < 0 || s > kup[k]) {{
        if (!clip) {{ po = -1; break; }}
        s = s < 0 ? 0 : kup[k];
      }}
      po += s * kst[k];
    }}
    pos[b] = po;
  }}
  for (int64_t w = 0; w < nouter; w++) {{
    int64_t r2 = w, bb = 0, ww = 0;
    for (int64_t i = R - 2; i >= 0; i--) {{
      const int64_t c = r2 % ush[i];
      r2 /= ush[i];
      bb += c * ub[i];
      ww += c * uw[i];
    }}
    const mx_elem *src = upd + w * ninner;
    if (sb == 0) {{
      const int64_t p = pos[bb];
      if (p < 0) continue;
      mx_elem *dst = out + p + ww;
      if (sw == 1) {{
        {contiguous}
      }} else {{
        for (int64_t j = 0; j < ninner; j++) dst[j * sw] = mx_combine(dst[j * sw], src[j]);
      }}
    }} else {{
      for (int64_t j = 0; j < ninner; j++) {{
        const int64_t p = pos[bb + j * sb];
        if (p >= 0) {{
          mx_elem *dst = out + p + ww + j * sw;
          *dst = mx_combine(*dst, src[j]);
        }}
      }}
    }}
  }}
}}
"""
    )


_functions: dict = {}


def _function(name: str, make_source, argc: int):
    """The C function `name` (its library built once, through build.py's caches)."""
    fn = _functions.get(name)
    if fn is None:
        lib = build.load(make_source, name)
        fn = getattr(lib, name)
        fn.argtypes = [ctypes.c_void_p] * argc
        fn.restype = None
        _functions[name] = fn
    return fn


# ----------------------------------------------------------------------------- descriptors


def _strides(shape) -> list:
    out, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        out[i] = acc
        acc *= int(shape[i])
    return out


def _simplify(shape, *strides):
    """Drop size-1 axes and merge adjacent axes that are contiguous in every stride list (the
    row-major order of the positions is unchanged)."""
    dims = [(int(n), *(int(s[i]) for s in strides)) for i, n in enumerate(shape) if int(n) != 1]
    merged: list = []
    for d in dims:
        if merged and all(prev == cur * d[0] for prev, cur in zip(merged[-1][1:], d[1:])):
            last = merged[-1]
            merged[-1] = (last[0] * d[0], *d[1:])
        else:
            merged.append(d)
    return [list(col) for col in zip(*merged)] if merged else [[] for _ in range(1 + len(strides))]


def _batch_operand_strides(nbatch_dims, op_strides, op_bdims, idx_bdims) -> list:
    bop = [0] * nbatch_dims
    for od, idim in zip(op_bdims, idx_bdims):
        bop[idim] += op_strides[od]
    return bop


def _as_pointer(a: np.ndarray) -> int:
    return a.ctypes.data


# --------------------------------------------------------------------------------- gather


def _gather(eqn):
    from morphax._src.prims.gather_scatter_add import _default_fill, gather_p
    from morphax._src.prims.gather_scatter_dims import GatherScatterMode

    if eqn.primitive is not gather_p:
        return None
    operand, indices = (v.aval for v in eqn.invars)
    p = eqn.params
    dtype, idx_dtype = np.dtype(operand.dtype), np.dtype(indices.dtype)
    if dtype.itemsize not in _BITS_TYPE or idx_dtype not in _INDEX_DTYPES:
        return None
    dn, slice_sizes = p["dimension_numbers"], tuple(p["slice_sizes"])
    op_shape, idx_shape = tuple(operand.shape), tuple(indices.shape)
    out_aval = eqn.outvars[0].aval
    out_shape = tuple(out_aval.shape)
    nb = len(idx_shape) - 1
    op_st, out_st = _strides(op_shape), _strides(out_shape)
    window_axes = [
        d
        for d in range(len(op_shape))
        if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims
    ]
    batch_out_axes = [i for i in range(len(out_shape)) if i not in dn.offset_dims]
    bsh = list(idx_shape[:-1])
    bop = _batch_operand_strides(nb, op_st, dn.operand_batching_dims, dn.start_indices_batching_dims)
    bout = [out_st[a] for a in batch_out_axes]
    kst = [op_st[d] for d in dn.start_index_map]
    kup = [op_shape[d] - slice_sizes[d] for d in dn.start_index_map]
    wsh = [slice_sizes[d] for d in window_axes]
    wop = [op_st[d] for d in window_axes]
    wout = [out_st[a] for a in dn.offset_dims]
    if min(kup, default=0) < 0:
        return None
    bsh, bop, bout = _simplify(bsh, bop, bout)
    wsh, wop, wout = _simplify(wsh, wop, wout)
    filling = p["mode"] == GatherScatterMode.FILL_OR_DROP
    desc = np.array(
        [len(bsh), len(kst), len(wsh), int(filling), *bsh, *bop, *bout, *kst, *kup, *wsh, *wop, *wout],
        np.int64,
    )
    fill = np.zeros(1, dtype)
    if filling:
        value = _default_fill(dtype) if p["fill_value"] is None else p["fill_value"]
        with np.errstate(all="ignore"):
            fill = np.array(value).astype(dtype).reshape(1)  # as the reference casts it
    empty = int(np.prod(out_shape, dtype=np.int64)) == 0
    name = f"mx_gather_b{dtype.itemsize}_{idx_dtype.name}"
    fn = _function(name, lambda: _gather_source(name, dtype.itemsize, idx_dtype), 5)
    desc_ptr, fill_ptr = _as_pointer(desc), _as_pointer(fill)
    asarray = np.ascontiguousarray

    def gather(x, i):
        out = np.empty(out_shape, dtype)
        if not empty:
            x = asarray(x, dtype)
            i = asarray(i, idx_dtype)
            fn(x.ctypes.data, i.ctypes.data, out.ctypes.data, fill_ptr, desc_ptr)
        stats["calls"] += 1
        return [out]

    gather._keep = (desc, fill)  # the descriptor and fill value outlive every call
    return gather


# -------------------------------------------------------------------------------- scatter


def _scatter_op(prim) -> str | None:
    from morphax._src.prims import scatter as s

    return {
        s.scatter_p: "set",
        s.scatter_add_p: "add",
        s.scatter_mul_p: "mul",
        s.scatter_min_p: "min",
        s.scatter_max_p: "max",
    }.get(prim)


def _scatter(eqn):
    op = _scatter_op(eqn.primitive)
    if op is None:
        return None
    operand, indices, updates = (v.aval for v in eqn.invars)
    p = eqn.params
    if p.get("update_jaxpr") is not None:
        return None
    dtype, idx_dtype = np.dtype(operand.dtype), np.dtype(indices.dtype)
    if idx_dtype not in _INDEX_DTYPES or np.dtype(updates.dtype) != dtype:
        return None
    comb = _combine(op, dtype)
    if comb is None:
        return None
    from morphax._src.prims.gather_scatter_dims import GatherScatterMode

    ctype_, body, prelude = comb
    dn = p["dimension_numbers"]
    op_shape, idx_shape, up_shape = tuple(operand.shape), tuple(indices.shape), tuple(updates.shape)
    op_size = int(np.prod(op_shape, dtype=np.int64))
    up_size = int(np.prod(up_shape, dtype=np.int64))
    if op_size == 0 and up_size > 0:
        return None  # nothing fits in an empty operand: leave that edge to the reference
    nb = len(idx_shape) - 1
    op_st = _strides(op_shape)
    window_axes = [
        d
        for d in range(len(op_shape))
        if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims
    ]
    window = [1] * len(op_shape)
    for ud, d in zip(dn.update_window_dims, window_axes):
        window[d] = up_shape[ud]
    bsh = list(idx_shape[:-1])
    bop = _batch_operand_strides(nb, op_st, dn.operand_batching_dims, dn.scatter_indices_batching_dims)
    kst = [op_st[d] for d in dn.scatter_dims_to_operand_dims]
    kup = [op_shape[d] - window[d] for d in dn.scatter_dims_to_operand_dims]
    clip = p["mode"] == GatherScatterMode.CLIP
    if clip and min(kup, default=0) < 0:
        return None
    flat_b = _strides(bsh)
    ub, uw, bi, wi = [], [], 0, 0
    for d in range(len(up_shape)):
        if d in dn.update_window_dims:
            ub.append(0)
            uw.append(op_st[window_axes[wi]])
            wi += 1
        else:
            ub.append(flat_b[bi])
            uw.append(0)
            bi += 1
    ush, ub, uw = _simplify(up_shape, ub, uw)
    nbatch = int(np.prod(bsh, dtype=np.int64))
    bsh, bop = _simplify(bsh, bop)
    desc = np.array(
        [len(bsh), len(kst), int(clip), len(ush), *bsh, *bop, *kst, *kup, *ush, *ub, *uw], np.int64
    )
    kind = "c" if dtype.kind == "c" else ("b" if op == "set" else dtype.name)
    # The name is the function's cache key: it must tell complex64 from complex128 (c8, c16).
    width = dtype.itemsize if op == "set" or dtype.kind == "c" else ""
    name = f"mx_scatter_{op}_{kind}{width}_{idx_dtype.name}"
    fn = _function(name, lambda: _scatter_source(name, ctype_, body, prelude, idx_dtype, op == "set"), 5)
    desc_ptr = _as_pointer(desc)
    asarray = np.ascontiguousarray
    nothing = up_size == 0 or op_size == 0

    def scatter(x, i, u):
        out = np.array(x, dtype=dtype, copy=True, order="C")
        if not nothing:
            i = asarray(i, idx_dtype)
            u = asarray(u, dtype)
            pos = np.empty(max(nbatch, 1), np.int64)
            fn(out.ctypes.data, i.ctypes.data, u.ctypes.data, pos.ctypes.data, desc_ptr)
        stats["calls"] += 1
        return [out]

    scatter._keep = desc
    return scatter


# ------------------------------------------------------------------------------------ hook


def opaque(eqn):
    """A callable running `eqn` (a gather or scatter) as a C loop, or None (the reference runs)."""
    kind = eqn.primitive.kind
    if kind is not Kind.GATHER and kind is not Kind.SCATTER:
        return None
    try:
        return _gather(eqn) if kind is Kind.GATHER else _scatter(eqn)
    except build.CompileError:
        return None
