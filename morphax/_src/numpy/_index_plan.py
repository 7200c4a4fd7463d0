"""Index analysis shared by `x[idx]`, `x.at[idx]` and `take`: turns a NumPy index expression into
entries per operand dimension, then into one gather/scatter plan (dimension numbers, slice sizes,
start-index array) whose output layout is NumPy's result layout minus `None` axes. Host-side,
except for assembling the start-index array from traced index pieces."""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.core.promotion import result_type
from morphax._src.core.trace import Tracer
from morphax._src.core.values import make_array
from morphax._src.errors import NonConcreteBooleanIndexError
from morphax._src.numpy import util
from morphax._src.prims import lax_api as L
from morphax._src.runtime.array import Array

# Entry kinds, one per index component after expansion (Ellipsis and masks are gone by then).
NONE, SLICE, INT, DYNINT, ARRAY = "none", "slice", "int", "dynint", "array"
_ADVANCED = (INT, DYNINT, ARRAY)


def _describe(x) -> str:
    try:
        return get_aval(x).str_short()
    except Exception:  # noqa: BLE001 - descriptions must never fail
        return type(x).__name__


class Entry:
    """One component of an expanded index, acting on operand dimension `dim` (None for NONE).

    SLICE: `start`, `step`, `count` are static (`count` elements). INT: `value` is a Python int.
    DYNINT: `value` is a 0-d integer array. ARRAY: `value` is an integer np.ndarray or array.
    """

    __slots__ = ("kind", "dim", "value", "start", "step", "count")

    def __init__(self, kind, dim=None, value=None, start=0, step=1, count=0):
        self.kind, self.dim, self.value = kind, dim, value
        self.start, self.step, self.count = start, step, count

    def __repr__(self):
        return f"Entry({self.kind}, dim={self.dim}, start={self.start}, step={self.step}, count={self.count})"


class ParsedIndex:
    """`inserted`: operand positions where a size-1 axis is inserted first (0-d boolean indices).
    `shape`: the operand shape after those insertions. `entries`: cover every operand dim."""

    def __init__(self, inserted, shape, entries):
        self.inserted, self.shape, self.entries = tuple(inserted), tuple(shape), entries

    @property
    def has_array(self) -> bool:
        return any(e.kind == ARRAY for e in self.entries)

    @property
    def has_int(self) -> bool:
        return any(e.kind in (INT, DYNINT) for e in self.entries)


# ------------------------------------------------------------------------------- classification


def _index_dtype():
    return _dtypes.default_int_dtype()


def _bad_type(pos, item):
    if isinstance(item, (Array, Tracer, np.ndarray, np.generic, float, complex)):
        if isinstance(item, (np.ndarray, np.generic)):
            dt = item.dtype.name
        else:
            dt = type(item).__name__ if isinstance(item, (float, complex)) else get_aval(item).dtype.name
        return TypeError(
            f"Indexer must have integer or boolean type, got indexer with type {dt} at position {pos}, "
            f"indexer value {item!r}."
            + (" Convert float indices with .astype(int) first." if "float" in dt else "")
        )
    return TypeError(
        f"Indexer must be an int, slice, None, Ellipsis, or an integer/boolean array, got {type(item).__name__} "
        f"at position {pos}: {item!r}"
    )


def _has_array_leaf(seq) -> bool:
    for x in seq:
        if isinstance(x, (Array, Tracer)):
            return True
        if isinstance(x, (list, tuple)) and _has_array_leaf(x):
            return True
    return False


def _stack_sequence(seq):
    """A (nested) list holding morphax arrays becomes one array, built with primitives."""
    leaves = [_stack_sequence(x) if isinstance(x, (list, tuple)) else util.asarray_like(x) for x in seq]
    if not leaves:
        return np.zeros((0,), _index_dtype())
    dtype = result_type(*leaves)
    parts = []
    for leaf in leaves:
        leaf = util.convert_element_type(leaf, dtype)
        shape = get_aval(leaf).shape
        parts.append(L.broadcast_in_dim(leaf, (1,) + shape, tuple(range(1, len(shape) + 1))))
    shapes = {get_aval(p).shape for p in parts}
    if len(shapes) != 1:
        raise IndexError(f"Index sequence has elements of different shapes: {sorted(shapes)}")
    return parts[0] if len(parts) == 1 else L.concatenate(parts, 0)


def _static_slice_part(x, pos):
    if x is None or isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return None if x is None else int(x)
    if isinstance(x, Tracer):
        raise IndexError(
            f"Array slice indices must have static start/stop/step to be used with NumPy indexing syntax; "
            f"found a traced slice bound ({_describe(x)}) at position {pos}. To index a statically sized "
            "array at a dynamic position use lax.dynamic_slice / lax.dynamic_update_slice (or "
            "jnp.take); shapes cannot depend on traced values."
        )
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(
            f"Slice entries must be integers or None, got {type(x).__name__} {x!r} at position {pos}"
        ) from None


def _classify(item, pos):
    """(kind, payload) for one user index component, before Ellipsis/mask expansion."""
    if item is None:
        return ("none", None)
    if item is Ellipsis:
        return ("ellipsis", None)
    if isinstance(item, slice):
        parts = tuple(_static_slice_part(p, pos) for p in (item.start, item.stop, item.step))
        if parts[2] == 0:
            raise ValueError("slice step cannot be zero")
        return ("slice", slice(*parts))
    if isinstance(item, (bool, np.bool_)):
        return ("bool0", bool(item))
    if isinstance(item, (int, np.integer)):
        return ("int", int(item))
    if isinstance(item, (list, tuple)):
        if _has_array_leaf(item):
            item = _stack_sequence(item)
        else:
            try:
                arr = np.asarray(item)
            except ValueError:
                raise IndexError(f"Ragged index sequence at position {pos}: {item!r}") from None
            # An empty list is an empty integer index (np.asarray would make it float64).
            item = arr.astype(np.intp) if arr.size == 0 and arr.dtype == np.float64 else arr
            if arr.dtype == object:
                raise _bad_type(pos, item)
    if isinstance(item, (np.ndarray, np.generic)):
        dt = item.dtype
        if dt == np.bool_:
            return ("bool0", bool(item)) if item.ndim == 0 else ("mask", np.asarray(item))
        if not np.issubdtype(dt, np.integer):
            raise _bad_type(pos, item)
        return ("int", int(item)) if item.ndim == 0 else ("array", np.asarray(item))
    if isinstance(item, (Array, Tracer)):
        aval = get_aval(item)
        if _dtypes.is_bool(aval.dtype):
            if isinstance(item, Tracer):
                raise NonConcreteBooleanIndexError(item)
            value = np.asarray(item)
            return ("bool0", bool(value)) if value.ndim == 0 else ("mask", value)
        if not _dtypes.is_integer(aval.dtype):
            raise _bad_type(pos, item)
        return ("dynint", item) if aval.ndim == 0 else ("array", item)
    raise _bad_type(pos, item)


def _slice_entry(dim, s: slice, n: int) -> Entry:
    start, stop, step = s.indices(n)
    count = len(range(start, stop, step))
    if count == 0:
        start, step = 0, 1
    elif count == 1:
        step = 1
    return Entry(SLICE, dim, start=start, step=step, count=count)


def parse_index(
    shape, idx, *, clip_ints: bool = False, check_ints: bool = False, wrap_ints: bool = True
) -> ParsedIndex:
    """Expand `idx` against `shape` (NumPy rules; a list is an advanced index).

    NB: JAX raises TypeError for a bare list as the whole index (``x[[1, 2]]``, "non-tuple
    sequence"); morphax keeps NumPy's meaning, an integer array index.

    In-bounds negative static ints are normalized. Out-of-bounds ones raise IndexError only with
    `check_ints` (the jax_check_static_indices option); otherwise (JAX's default policy) with
    `clip_ints` they clamp, else they are left as given, for the dynamic_slice, gather or scatter
    they end up in to handle under its mode (normalizing once, as JAX does). Without `wrap_ints`
    (`wrap_negative_indices=False`) a negative static int is out of bounds like any other.
    """
    items = idx if isinstance(idx, tuple) else (idx,)
    comps = [_classify(item, pos) for pos, item in enumerate(items)]
    if sum(k == "ellipsis" for k, _ in comps) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(
        v.ndim if k == "mask" else 1 for k, v in comps if k in ("slice", "int", "dynint", "array", "mask")
    )
    ndim = len(shape)
    if consumed > ndim:
        raise IndexError(
            f"Too many indices: array of shape {tuple(shape)} is {ndim}-dimensional, but {consumed} "
            f"were indexed (index {idx!r})."
        )
    if not any(k == "ellipsis" for k, _ in comps):
        comps.append(("ellipsis", None))
    entries, inserted, new_shape = [], [], []
    dim = 0  # dimension of the original operand
    for kind, value in comps:
        pos = dim + len(inserted)  # dimension of the operand after insertions
        if kind == "none":
            entries.append(Entry(NONE))
        elif kind == "ellipsis":
            for _ in range(ndim - consumed):
                entries.append(_slice_entry(pos, slice(None), shape[dim]))
                new_shape.append(shape[dim])
                dim, pos = dim + 1, pos + 1
        elif kind == "slice":
            entries.append(_slice_entry(pos, value, shape[dim]))
            new_shape.append(shape[dim])
            dim += 1
        elif kind == "int":
            n = shape[dim]
            i = value + n if value < 0 and wrap_ints else value
            if not 0 <= i < n:
                if check_ints:
                    raise IndexError(f"index {value} out of bounds for axis {dim} with size {n}")
                # Clamped now, or left as given for the slice/gather/scatter mode (which normalizes once).
                i = (min(max(i, 0), n - 1) if n else 0) if clip_ints else value
            entries.append(Entry(INT, pos, value=i))
            new_shape.append(n)
            dim += 1
        elif kind in ("dynint", "array"):
            entries.append(Entry(DYNINT if kind == "dynint" else ARRAY, pos, value=value))
            new_shape.append(shape[dim])
            dim += 1
        elif kind == "mask":
            k = value.ndim
            if value.shape != tuple(shape[dim : dim + k]):
                raise IndexError(
                    f"boolean index did not match shape of indexed array in index {dim}: got mask of "
                    f"shape {value.shape}, expected {tuple(shape[dim : dim + k])} (array shape {tuple(shape)})"
                )
            for j, nz in enumerate(np.nonzero(value)):
                entries.append(Entry(ARRAY, pos + j, value=nz))
                new_shape.append(shape[dim + j])
            dim += k
        elif kind == "bool0":
            # NumPy: a scalar boolean adds an axis of length 1 (True) or 0 (False) and counts as an
            # advanced index; modelled as a size-1 operand axis indexed by [0] or [].
            inserted.append(pos)
            new_shape.append(1)
            entries.append(Entry(ARRAY, pos, value=np.zeros((1 if value else 0,), np.intp)))
    return ParsedIndex(inserted, new_shape, entries)


# ------------------------------------------------------------------------------- static slicing


def apply_static_slices(y, entries, shape, ints: bool = False):
    """Apply SLICE entries with `lax.rev` + `lax.slice` (and static INT entries, as width-1
    slices, when `ints`); returns (y, new_shape). SLICE entries become full step-1 slices."""
    starts, limits, strides, rev = [0] * len(shape), list(shape), [1] * len(shape), []
    for e in entries:
        if ints and e.kind == INT:
            starts[e.dim], limits[e.dim] = e.value, e.value + 1
        if e.kind != SLICE:
            continue
        d, n = e.dim, shape[e.dim]
        if e.count == 0:
            starts[d], limits[d] = 0, 0
        elif e.step > 0:
            starts[d], limits[d], strides[d] = e.start, e.start + (e.count - 1) * e.step + 1, e.step
        else:
            rev.append(d)
            s = n - 1 - e.start
            starts[d], limits[d], strides[d] = s, s + (e.count - 1) * -e.step + 1, -e.step
    if rev:
        y = L.rev(y, tuple(rev))
    if starts != [0] * len(shape) or limits != list(shape) or any(s != 1 for s in strides):
        y = L.slice(y, tuple(starts), tuple(limits), None if all(s == 1 for s in strides) else tuple(strides))
    for e in entries:
        if e.kind == SLICE:
            e.start, e.step = 0, 1
        elif ints and e.kind == INT:
            e.value = 0
    return y, tuple(get_aval(y).shape)


# ------------------------------------------------------------------------------- gather/scatter plan


def normalize_dynamic(i, n):
    """Negative traced indices wrap: where(i < 0, i + n, i) (unsigned indices are never negative)."""
    dt = get_aval(i).dtype
    if _dtypes.is_unsigned(dt):
        return i
    zero = make_array(0, dt, False)
    size = make_array(n, dt, False)
    return L.select_n(L.lt(i, zero), i, L.add(i, size))


def _as_index_dtype(v):
    dt = _index_dtype()
    if isinstance(v, np.ndarray):
        return v.astype(dt)
    return util.convert_element_type(v, dt, get_aval(v).weak_type)  # no-op when already int


class Plan:
    """Gather/scatter description of an expanded index over an operand of shape `shape`.

    `layout`: the NumPy result axes, each ('B', size) for the broadcast advanced-index shape,
    ('none',) for a new axis, ('offset', entry) for a step-1 slice (a window axis) or ('iota',
    entry) for a strided slice (indexed like an advanced index but with its own axis)."""

    def __init__(self, shape, entries):
        self.shape = tuple(shape)
        self.entries = entries
        adv = [e for e in entries if e.kind in _ADVANCED]
        shapes = [np.shape(e.value) if e.kind == ARRAY else () for e in adv]
        try:
            self.B = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
        except ValueError:
            raise IndexError(
                "shape mismatch: indexing arrays could not be broadcast together with shapes "
                + " ".join(str(tuple(s)) for s in shapes if s)
            ) from None
        adv_pos = [i for i, e in enumerate(entries) if e.kind in _ADVANCED]
        adjacent = not adv_pos or adv_pos == list(range(adv_pos[0], adv_pos[-1] + 1))
        layout = []
        placed = not adv
        if not adjacent:
            layout += [("B", k) for k in self.B]
            placed = True
        for e in entries:
            if e.kind == NONE:
                layout.append(("none",))
            elif e.kind == SLICE:
                layout.append(("offset" if e.step == 1 else "iota", e))
            elif not placed:
                layout += [("B", k) for k in self.B]
                placed = True
        self.layout = layout
        self.result_shape = tuple(self._size(it) for it in layout)
        self.none_dims = tuple(i for i, it in enumerate(layout) if it[0] == "none")
        gl = [it for it in layout if it[0] != "none"]
        self.gather_shape = tuple(self._size(it) for it in gl)
        self.offset_dims = tuple(i for i, it in enumerate(gl) if it[0] == "offset")
        batch = [it for it in gl if it[0] != "offset"]
        self.batch_shape = tuple(self._size(it) for it in batch)
        b_pos = [i for i, it in enumerate(batch) if it[0] == "B"]
        iota_pos = {id(it[1]): i for i, it in enumerate(batch) if it[0] == "iota"}
        # Columns of the start-index array: (operand dim, value, batch positions it spans).
        cols = []
        for e in entries:
            if e.kind == ARRAY:
                nd = np.ndim(e.value)
                cols.append((e.dim, e.value, tuple(b_pos[len(b_pos) - nd :]) if nd else ()))
            elif e.kind in (INT, DYNINT):
                cols.append((e.dim, e.value, ()))
            elif e.kind == SLICE and e.step != 1:
                cols.append((e.dim, np.arange(e.count) * e.step + e.start, (iota_pos[id(e)],)))
            elif e.kind == SLICE and e.start != 0:
                cols.append((e.dim, e.start, ()))
        self.cols = cols
        self.collapsed = tuple(
            sorted(e.dim for e in entries if e.kind in _ADVANCED or (e.kind == SLICE and e.step != 1))
        )
        sizes = list(self.shape)
        for e in entries:
            if e.kind == SLICE and e.step == 1:
                sizes[e.dim] = e.count
            elif e.kind != NONE:
                sizes[e.dim] = 1
        self.slice_sizes = tuple(sizes)

    @staticmethod
    def _size(it):
        kind = it[0]
        return it[1] if kind == "B" else 1 if kind == "none" else it[1].count

    @property
    def empty_axis_indexed(self) -> bool:
        """An axis of size 0 is indexed by a non-empty set of positions (nothing to read there)."""
        return any(self.shape[d] == 0 for d in self.collapsed) and 0 not in self.batch_shape

    def indices(self, normalize: bool = True):
        """(start-index array, start_index_map). Negative indices wrap when `normalize`; host
        pieces become one constant, traced pieces are broadcast and concatenated after it."""
        host, traced = [], []
        for dim, value, positions in self.cols:
            n = self.shape[dim]
            if isinstance(value, (int, np.ndarray)):
                v = np.asarray(value)
                if normalize and v.dtype.kind == "i":
                    v = np.where(v < 0, v + n, v)
                host.append((dim, v.astype(np.int64), positions))
            else:
                v = _as_index_dtype(value)
                if normalize:
                    v = normalize_dynamic(v, n)
                traced.append((dim, v, positions))
        bs = self.batch_shape
        parts, index_map = [], []
        if host or not traced:
            block = np.zeros(bs + (len(host),), _index_dtype())
            for k, (dim, v, positions) in enumerate(host):
                shape = [1] * len(bs)
                for p, s in zip(positions, v.shape):
                    shape[p] = s
                block[..., k] = np.broadcast_to(v.reshape(shape), bs)
                index_map.append(dim)
            if block.size:
                parts.append(make_array(block, _index_dtype(), False))
            else:  # no host index (a slice): built, not a constant, as JAX's carries none
                parts.append(L.broadcast_in_dim(np.zeros((), _index_dtype()), block.shape, ()))
        for dim, v, positions in traced:
            parts.append(L.broadcast_in_dim(v, bs + (1,), positions))
            index_map.append(dim)
        idx = parts[0] if len(parts) == 1 else L.concatenate(parts, len(bs))
        return idx, tuple(index_map)
