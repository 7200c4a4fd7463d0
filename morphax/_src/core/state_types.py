"""Mutable array references: the `AbstractRef` type, the eager `Ref` value and Ref indexers.

A `Ref` is a mutable box holding one array; programs read and write it through the state
primitives of `prims/state.py` (which install the indexing methods here), and the discharge pass
(`higher_order/state_discharge.py`) turns programs that use refs into functional ones before they
reach the compiler. Core layer: imports only avals, dtypes and NumPy.
"""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core.avals import ShapedArray, pytype_aval_mappings

# [True] once any ref was created or a state primitive was bound in this process: the passes that
# look for refs (jit, the compiler, the eager trace) skip their checks entirely while it is False.
state_used = [False]

# The state primitives (filled in by prims/state.py): the eager trace runs these itself and
# discharges every other primitive that receives a Ref.
STATE_PRIMS: set = set()
# The primitives that create refs (new_ref, empty_ref): JVP and vmap apply their rules even to
# non-differentiated, unbatched operands, so the new ref can take differentiated or batched writes.
REF_CREATORS: set = set()


class AbstractRef:
    """The type of a mutable array reference: a box holding a value of type `inner_aval`."""

    __slots__ = ("inner_aval",)

    # The methods reading and writing a traced ref (`tracer[idx]`, `tracer[idx] = v`,
    # `tracer.addupdate(v)`), installed by prims/state.py, which owns the primitives they bind.
    _getitem = None
    _setitem = None
    _addupdate = None

    def __init__(self, inner_aval: ShapedArray):
        self.inner_aval = inner_aval

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    weak_type = property(lambda self: self.inner_aval.weak_type)
    ndim = property(lambda self: self.inner_aval.ndim)
    size = property(lambda self: self.inner_aval.size)

    def update(self, **_):
        # Code that reshapes avals (scanning over an input, broadcasting) expects an array type.
        raise TypeError(
            f"{self} is the type of a mutable array reference, not of an array: it cannot be scanned "
            "over, batched or returned. Close over the ref instead, or pass its value (ref[...])."
        )

    def __eq__(self, other):
        return type(other) is AbstractRef and self.inner_aval == other.inner_aval

    def __hash__(self):
        return hash((AbstractRef, self.inner_aval))

    def str_short(self):
        """The jaxpr spelling, e.g. ``Ref{f32[3]}``."""
        return f"Ref{{{self.inner_aval.str_short()}}}"

    def __repr__(self):
        a = self.inner_aval
        return f"Ref{{{a.dtype.name}[{','.join(str(d) for d in a.shape)}]}}"

    __str__ = __repr__


def is_ref_aval(aval) -> bool:
    return type(aval) is AbstractRef


class InvalidRefError(ValueError):
    """A ref used after `freeze` or `free_ref` invalidated it."""


class Ref:
    """A mutable array reference (what `morphax.new_ref` returns eagerly).

    ``ref[idx]`` reads, ``ref[idx] = v`` writes and ``ref.addupdate(v, idx)`` adds in place.
    The value lives either in `_array` (an immutable morphax Array, maybe still being computed:
    what jitted calls read and write) or in `_np` (a NumPy buffer this ref owns and mutates in
    place: what eager writes use). Switching between them copies at most once.
    """

    __slots__ = ("_aval", "_array", "_np", "_invalid", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, array, aval: AbstractRef):
        self._aval = aval
        self._array = array
        self._np = None
        self._invalid = None  # None while usable, else "freeze" or "free_ref"

    @property
    def aval(self) -> AbstractRef:
        return self._aval

    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    ndim = property(lambda self: self._aval.ndim)
    size = property(lambda self: self._aval.size)
    weak_type = property(lambda self: self._aval.weak_type)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d Ref)")
        return self.shape[0]

    def __getitem__(self, idx):
        return AbstractRef._getitem(self, idx)

    def __setitem__(self, idx, value):
        AbstractRef._setitem(self, idx, value)

    def addupdate(self, x, idx=()):
        """``ref[idx] += x`` as one primitive (``idx`` defaults to the whole ref)."""
        AbstractRef._addupdate(self, idx, x)

    def __iter__(self):
        raise TypeError(
            "A Ref is not iterable: read its value with ref[...] (an array) and iterate over that."
        )

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            f"A Ref ({self._aval}) cannot be converted to a NumPy array directly: read its value "
            "with ref[...] first (np.asarray(ref[...]))."
        )

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    # -- storage (used by the state primitives, the eager trace and jit) ----------------------
    def check_valid(self, what: str) -> None:
        if self._invalid is not None:
            raise InvalidRefError(
                f"{what}: this Ref ({self._aval}) was invalidated by {self._invalid}() and can no "
                "longer be read or written. Use the value freeze() returned, or create a new ref "
                "with new_ref."
            )

    def current_array(self):
        """The value as an Array (the ref gives its NumPy buffer away; a later write copies)."""
        if self._array is None:
            from morphax._src.core.values import make_array

            buf, self._np = self._np, None
            self._array = make_array(buf, dtype=buf.dtype, weak_type=self._aval.weak_type)
        return self._array

    def host_buffer(self) -> np.ndarray:
        """The value as a NumPy buffer this ref owns (safe to mutate in place)."""
        if self._np is None:
            self._np = np.array(self._array, dtype=self._aval.dtype, copy=True)
            self._array = None
        return self._np

    def store(self, array) -> None:
        """Replace the value by `array` (an Array of the ref's shape and dtype, maybe pending)."""
        self._array = array
        self._np = None

    def invalidate(self, by: str) -> None:
        self._invalid = by
        self._array = self._np = None

    def __repr__(self):
        if self._invalid is not None:
            return f"Ref(<invalidated by {self._invalid}>, {self._aval})"
        # JAX prints a ref as the array it holds, under the name Ref.
        text = repr(self.current_array())
        return "Ref" + text[len("Array") :] if text.startswith("Array") else f"Ref({text})"

    __str__ = __repr__


def _ref_aval(x):
    return x._aval


pytype_aval_mappings[Ref] = _ref_aval


# ----------------------------------------------------------------------------------- indexers
#
# A ref index is kept as a static `tree` (one entry per axis of the ref, Ellipsis expanded and
# trailing axes filled with full slices) plus its dynamic parts, which are operands:
#   ("int", i)                     a static index, 0 <= i < dim
#   ("dyn",)                       the next operand, an integer scalar
#   ("arr", shape)                 the next operand, an integer array of `shape` (advanced)
#   ("slice", start, size, step)   a static slice: `size` elements from `start`, `step` apart
# Without "arr" entries a dynamic scalar is wrapped if negative, then clamped into range (as
# dynamic_slice does). With them the index follows NumPy's advanced indexing, integer entries
# included, with jnp's out-of-bounds rule: reads clamp, writes drop (negatives wrap first).


def _is_int_scalar(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def encode_index(shape, idx, what: str, int_array_shape):
    """(tree, dynamic operands) for indexing a ref of `shape` with `idx`.

    `int_array_shape(x)` is the shape of `x` when it is an integer array or tracer, else None.
    """
    if not isinstance(idx, tuple):
        idx = (idx,)
    if sum(1 for i in idx if i is Ellipsis) > 1:
        raise IndexError(f"{what}: an index can only have a single ellipsis ('...'), got {idx!r}")
    n_real = sum(1 for i in idx if i is not Ellipsis)
    if n_real > len(shape):
        raise IndexError(f"{what}: too many indices for a Ref of shape {tuple(shape)}: {n_real} were given.")
    expanded = []
    for i in idx:
        if i is Ellipsis:
            expanded.extend([slice(None)] * (len(shape) - n_real))
        else:
            expanded.append(i)
    expanded.extend([slice(None)] * (len(shape) - len(expanded)))
    tree, dyn = [], []
    for axis, (i, dim) in enumerate(zip(expanded, shape)):
        if i is None:
            raise TypeError(
                f"{what}: None (np.newaxis) is not supported in a Ref index; read the value with "
                "ref[...] and add the axis to the array."
            )
        if isinstance(i, (bool, np.bool_)):
            raise TypeError(
                f"{what}: boolean indices are not supported on a Ref; read the value with ref[...] "
                "and use jnp.where on it."
            )
        if _is_int_scalar(i):
            k = operator.index(i)
            if not -dim <= k < dim:
                raise ValueError(f"Out of bound indexer: idx={k}, dim={dim}.")
            tree.append(("int", k % dim))
            continue
        if isinstance(i, slice):
            for part in (i.start, i.stop, i.step):
                if part is not None and not _is_int_scalar(part):
                    raise TypeError(
                        f"{what}: slice bounds of a Ref index must be static Python integers, got "
                        f"{i!r} on axis {axis}. For a traced start use lax.dynamic_slice on ref[...], "
                        "or index with a traced integer scalar."
                    )
            start, stop, step = i.indices(dim)
            if step <= 0:
                raise NotImplementedError(
                    f"{what}: negative slice steps are not supported on a Ref (axis {axis}: {i!r}); "
                    "read the value with ref[...] and reverse it with lax.rev."
                )
            tree.append(("slice", start, len(range(start, stop, step)), step))
            continue
        shp = int_array_shape(i)
        if shp is None:
            raise TypeError(
                f"{what}: a Ref index must be made of integers, integer arrays, slices and '...', got "
                f"{i!r} of type {type(i).__name__} on axis {axis}."
            )
        tree.append(("arr", tuple(shp)) if shp else ("dyn",))
        dyn.append(i)
    tree = tuple(tree)
    if any(e[0] == "arr" for e in tree):
        try:
            np.broadcast_shapes(*[e[1] for e in tree if e[0] == "arr"])
        except ValueError:
            shapes = [e[1] for e in tree if e[0] == "arr"]
            raise IndexError(
                f"{what}: the integer-array indices have shapes {shapes} that do not broadcast together."
            ) from None
    return tree, dyn


def is_advanced(tree) -> bool:
    return any(e[0] == "arr" for e in tree)


def advanced_layout(tree):
    """(broadcast shape of the advanced indices, whether they keep their place): NumPy puts the
    broadcast dims where the advanced entries are when those are adjacent, else first."""
    adv = [k for k, e in enumerate(tree) if e[0] != "slice"]
    shape = np.broadcast_shapes(*[e[1] if e[0] == "arr" else () for e in tree if e[0] != "slice"])
    return tuple(shape), adv == list(range(adv[0], adv[-1] + 1))


def indexed_shape(shape, tree) -> tuple:
    """The shape of ``ref[idx]``: integer entries drop their axis; NumPy's rule for arrays."""
    sliced = [e[2] if e[0] == "slice" else None for e in tree]
    if not is_advanced(tree):
        return tuple(n for n in sliced if n is not None)
    bshape, in_place = advanced_layout(tree)
    if not in_place:
        return bshape + tuple(n for n in sliced if n is not None)
    first = next(k for k, e in enumerate(tree) if e[0] != "slice")
    before = tuple(n for n in sliced[:first] if n is not None)
    after = tuple(n for n in sliced[first:] if n is not None)
    return before + bshape + after


def is_full_index(shape, tree) -> bool:
    return all(e[0] == "slice" and e[1] == 0 and e[2] == d and e[3] == 1 for e, d in zip(tree, shape))


def full_index(shape) -> tuple:
    return tuple(("slice", 0, d, 1) for d in shape)


def format_index(shape, tree, dyn_names) -> str:
    """JAX's spelling of an indexer: ``[...]`` for the whole ref, else ``[1:3,:]``, ``[b,0]``."""
    if is_full_index(shape, tree):
        return "[...]"
    names = iter(dyn_names)
    parts = []
    for e, d in zip(tree, shape):
        if e[0] == "int":
            parts.append(str(e[1]))
        elif e[0] in ("dyn", "arr"):
            parts.append(next(names))
        else:
            _, start, size, step = e
            stop = start + size * step
            text = ("" if start == 0 else str(start)) + ":" + ("" if stop >= d else str(stop))
            parts.append(text + (f":{step}" if step != 1 else ""))
    return "[" + ",".join(parts) + "]"


def numpy_index(shape, tree, dyn_values, *, for_write=False) -> tuple:
    """The NumPy index for `tree` on NumPy operands. Basic: dynamic scalars wrapped and clamped.
    Advanced: negatives wrapped, then reads clamp and writes map out-of-bounds entries to `dim`
    (one past the end, for the caller to drop)."""
    advanced = is_advanced(tree)
    vals = iter(dyn_values)
    out = []
    for e, d in zip(tree, shape):
        if e[0] == "int":
            out.append(e[1])
        elif e[0] in ("dyn", "arr"):
            k = np.asarray(next(vals)).astype(np.int64)
            k = np.where(k < 0, k + d, k)
            if not advanced:
                out.append(int(min(max(int(k), 0), d - 1)))
            elif for_write:
                out.append(np.where((k < 0) | (k >= d), d, k))
            else:
                out.append(np.clip(k, 0, d - 1))
        else:
            _, start, size, step = e
            out.append(slice(start, start + size * step, step) if size else slice(start, start))
    return tuple(out)
