"""`morphax.experimental.layout` (`jax.experimental.layout`): memory layouts of arrays.

`Layout` names the order of an array's dimensions in memory (major to minor) and `Format` pairs a
layout with a sharding, as in JAX. morphax stores every array in row-major (C) order, so a
layout constraint is satisfied by any value: `with_layout_constraint` checks the layout against
the value's rank and returns the value.
"""

from __future__ import annotations

from typing import Union

from morphax._src.sharding.shardings import Sharding


class _AutoLayout:
    """`Layout.AUTO`: let the compiler choose."""

    def __repr__(self):
        return "AUTO"


AutoLayout = _AutoLayout()


class Layout:
    """The order of an array's dimensions in memory, major to minor (row-major: 0, 1, ...)."""

    AUTO = AutoLayout

    def __init__(self, major_to_minor, tiling=None, sub_byte_element_size_in_bits: int = 0):
        self.major_to_minor = tuple(major_to_minor)
        self.tiling = None if tiling is None else tuple(map(tuple, tiling))
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    def update(self, **kwargs) -> Layout:
        return Layout(
            kwargs.get("major_to_minor", self.major_to_minor),
            kwargs.get("tiling", self.tiling),
            kwargs.get("sub_byte_element_size_in_bits", self.sub_byte_element_size_in_bits),
        )

    def check_compatible_aval(self, aval_shape) -> None:
        if len(self.major_to_minor) != len(aval_shape):
            raise ValueError(
                "Length of major_to_minor and the rank of the value should match. Got "
                f"major_to_minor={self.major_to_minor} and shape={tuple(aval_shape)}"
            )

    def __repr__(self):
        return (
            f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
            f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})"
        )

    def __hash__(self):
        return hash((self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits))

    def __eq__(self, other):
        return isinstance(other, Layout) and (
            (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)
            == (other.major_to_minor, other.tiling, other.sub_byte_element_size_in_bits)
        )


LayoutOptions = Union[Layout, None, _AutoLayout]  # noqa: UP007


class Format:
    """A layout and a sharding together (what `jit`'s in/out shardings may also be given as)."""

    __slots__ = ("layout", "sharding")

    def __init__(self, layout: LayoutOptions = None, sharding: Sharding | None = None):
        if isinstance(layout, Layout) and sharding is None:
            raise ValueError(
                f"Format: a concrete layout ({layout}) needs a concrete sharding; pass a "
                "NamedSharding or SingleDeviceSharding as the sharding argument."
            )
        if not isinstance(layout, (Layout, type(None), _AutoLayout)):
            raise TypeError(
                "Format: the layout must be None, Layout.AUTO or a Layout; got "
                f"{layout!r} of type {type(layout).__name__}"
            )
        if not isinstance(sharding, (Sharding, type(None))):
            raise TypeError(
                "Format: the sharding must be None or a morphax.sharding.Sharding; got "
                f"{sharding!r} of type {type(sharding).__name__}"
            )
        self.layout = layout
        self.sharding = sharding

    def __repr__(self):
        return f"Format(layout={self.layout}, sharding={self.sharding})"

    def __hash__(self):
        return hash((self.layout, self.sharding))

    def __eq__(self, other):
        return isinstance(other, Format) and (self.layout, self.sharding) == (other.layout, other.sharding)


def with_layout_constraint(x, layout):
    """`x` itself: morphax keeps every array row-major, which satisfies any layout. The layout's
    rank must match `x`'s."""
    # NB: JAX asks XLA for the layout; morphax has one layout, so nothing moves.
    import morphax.tree_util as tree_util  # noqa: PLC0415

    def check(leaf, lay):
        if isinstance(lay, Format):
            lay = lay.layout
        if isinstance(lay, Layout):
            lay.check_compatible_aval(leaf.shape)
        return leaf

    if isinstance(layout, (Layout, Format, _AutoLayout)) or layout is None:
        return tree_util.tree_map(lambda leaf: check(leaf, layout), x)
    return tree_util.tree_map(check, x, layout)


__all__ = ["Format", "Layout", "with_layout_constraint"]
