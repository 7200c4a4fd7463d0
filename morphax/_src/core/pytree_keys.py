"""Key-path entries (SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey) and ``keystr``.

Owns only the key classes and their string forms; imports only the standard library
(it sits below ``pytree.py``, which re-exports everything here).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from typing import Any, TypeVar

__all__ = [
    "SequenceKey",
    "DictKey",
    "GetAttrKey",
    "FlattenedIndexKey",
    "KeyEntry",
    "KeyPath",
    "keystr",
]


# Frozen + slots: key entries are hashable values that can sit in dicts and sets, and
# slots keep the per-leaf cost of building key paths small.
@dataclasses.dataclass(frozen=True, slots=True)
class SequenceKey:
    """Key of a child of a tuple or list: ``[idx]``."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class DictKey:
    """Key of a child of a dict-like node: ``[key]`` with the key's repr."""

    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class GetAttrKey:
    """Key of an attribute child (namedtuple fields, dataclass fields): ``.name``."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True, slots=True)
class FlattenedIndexKey:
    """Position among the flattened children of a node registered without keys."""

    key: int

    def __str__(self) -> str:
        # Same spelling as JAX: the index is a position in the flattened children, not a
        # subscript that would work on the object itself.
        return f"[<flat index {self.key}>]"


KeyEntry = TypeVar("KeyEntry", bound=Hashable)
KeyPath = tuple[Any, ...]


def _simple_entry_str(entry: Any) -> str:
    # The "simple" form drops brackets, quotes and dots, leaving only the bare key.
    if isinstance(entry, SequenceKey):
        return str(entry.idx)
    if isinstance(entry, DictKey):
        return str(entry.key)
    if isinstance(entry, GetAttrKey):
        return str(entry.name)
    if isinstance(entry, FlattenedIndexKey):
        return str(entry.key)
    return str(entry)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """Renders a key path: ``"[0]['a'].x"``, or ``"0/a/x"`` with ``simple=True, separator='/'``."""
    to_str = _simple_entry_str if simple else str
    return separator.join([to_str(k) for k in keys])
