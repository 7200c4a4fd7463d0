"""`PartitionSpec` (`P`): for each array dimension, the mesh axis (or tuple of axes, or None) it is
split over."""

from __future__ import annotations


class _Unconstrained:
    """`P.UNCONSTRAINED`: a dimension whose sharding the compiler may choose."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "UNCONSTRAINED"

    def __reduce__(self):
        return (_Unconstrained, ())


UNCONSTRAINED = _Unconstrained()


def _canonical_entry(entry, where):
    if entry is None or entry is UNCONSTRAINED or isinstance(entry, str):
        return entry
    if isinstance(entry, (tuple, list)):
        if not all(isinstance(a, str) for a in entry):
            raise TypeError(f"PartitionSpec: {where} must hold mesh axis names (str), got {entry!r}")
        return entry[0] if len(entry) == 1 else tuple(entry)
    raise TypeError(
        f"PartitionSpec: {where} must be a mesh axis name (str), a tuple of names, None or "
        f"P.UNCONSTRAINED, got {entry!r} of type {type(entry).__name__}"
    )


class PartitionSpec(tuple):
    """How each dimension of an array is split over mesh axes: ``P('x', None)`` splits dimension 0
    over mesh axis 'x' and keeps dimension 1 whole. Dimensions past the spec's length are whole,
    so ``P('x')`` and ``P('x', None)`` describe the same layout (though, as in JAX, they compare
    unequal: shardings' ``is_equivalent_to`` compares layouts)."""

    UNCONSTRAINED = UNCONSTRAINED

    def __new__(cls, *partitions, unreduced=frozenset(), reduced=frozenset()):
        parts = tuple(_canonical_entry(p, f"entry {i}") for i, p in enumerate(partitions))
        obj = super().__new__(cls, parts)
        obj.unreduced = frozenset(unreduced)
        obj.reduced = frozenset(reduced)
        return obj

    def __repr__(self):
        parts = ", ".join("None" if p is None else repr(p) for p in self)
        extra = ""
        if self.unreduced:
            extra += f", unreduced={set(sorted(self.unreduced))!r}"
        if self.reduced:
            extra += f", reduced={set(sorted(self.reduced))!r}"
        if len(self) == 1 and not extra:
            parts += ","
        return f"P({parts}{extra})"

    __str__ = __repr__

    def __eq__(self, other):
        if not isinstance(other, PartitionSpec):
            return False  # as JAX: never equal to a plain tuple
        return (
            tuple(self) == tuple(other)
            and self.unreduced == other.unreduced
            and self.reduced == other.reduced
        )

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash((tuple(self), self.unreduced, self.reduced))

    def __reduce__(self):
        return (_rebuild, (tuple(self), self.unreduced, self.reduced))

    def _axes_of(self, dim) -> tuple:
        """The mesh axes dimension `dim` is split over, in order (() when whole)."""
        if dim >= len(self):
            return ()
        p = self[dim]
        if p is None or p is UNCONSTRAINED:
            return ()
        return (p,) if isinstance(p, str) else p

    def _normalized_spec(self, ndim) -> PartitionSpec:
        """This spec padded with None to `ndim` entries."""
        return PartitionSpec(*self, *([None] * (ndim - len(self))))


def _rebuild(parts, unreduced, reduced):
    return PartitionSpec(*parts, unreduced=unreduced, reduced=reduced)


def flat_axes(spec) -> list:
    """Every mesh axis name `spec` uses, in order."""
    out = []
    for d in range(len(spec)):
        out.extend(spec._axes_of(d))
    return out


def layout_key(spec, ndim=None) -> tuple:
    """The layout `spec` describes, trailing whole dimensions dropped: equal keys, equal layouts."""
    parts = [spec._axes_of(d) for d in range(len(spec) if ndim is None else ndim)]
    while parts and not parts[-1]:
        parts.pop()
    return tuple(parts)
