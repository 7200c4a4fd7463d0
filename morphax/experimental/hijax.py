"""`morphax.experimental.hijax` (`jax.experimental.hijax`): the names of JAX's experimental
high-level types, so that libraries defining optional features with them load.

NB: morphax does not implement high-level types (values whose abstract type carries mutable
quasi-dynamic data through transformations). The classes here can be subclassed and registered,
as libraries do at import (flax.nnx defines its optional "hijax variables" this way), but binding
a `HiPrimitive` raises NotImplementedError. Code paths that leave them unused (flax.nnx's default
variables) work.
"""

from __future__ import annotations

from morphax._src.core.ad_util import Zero, instantiate, is_undefined_primal
from morphax.core import AbstractValue


class _EffectTypeSet:
    """A set of effect types (JAX's `effects.control_flow_allowed_effects` and friends)."""

    def __init__(self):
        self._types: set = set()

    def add_type(self, effect_type) -> None:
        self._types.add(effect_type)

    def contains(self, effect) -> bool:
        return any(isinstance(effect, t) for t in self._types)


control_flow_allowed_effects = _EffectTypeSet()


def instantiate_zeros(x):
    """A dense value for a tangent that may be a symbolic `Zero`."""
    return instantiate(x)


class HiType:
    """The base of a high-level abstract type."""

    __slots__ = ()
    mutable = False


class MutableHiType(HiType):
    """The base of a high-level abstract type with mutable quasi-dynamic data."""

    __slots__ = ()
    mutable = True


class AvalQDD:
    """An abstract value with its quasi-dynamic data."""

    __slots__ = ("aval", "qdd")

    def __init__(self, aval, qdd):
        self.aval = aval
        self.qdd = qdd


class AvalMutableQDD(AvalQDD):
    __slots__ = ()


_hitypes: dict = {}


def register_hitype(value_type, to_aval) -> None:
    """Record that values of `value_type` have the high-level type `to_aval(value)`."""
    _hitypes[value_type] = to_aval


class aval_method:  # noqa: N801 - JAX's spelling
    """A method of a value type made available on its high-level abstract type."""

    def __init__(self, fun):
        self.fun = fun

    def __get__(self, instance, owner=None):
        return self.fun if instance is None else self.fun.__get__(instance, owner)


class aval_property(property):  # noqa: N801 - JAX's spelling
    """A property of a value type made available on its high-level abstract type."""


class HiPrimitive:
    """The base of a primitive on high-level types (subclasses define impl/abstract_eval...)."""

    multiple_results = False

    def __init__(self, name: str):
        self.name = name

    def is_high(self, *args, **params) -> bool:
        return True

    def bind(self, *args, **params):
        raise NotImplementedError(
            f"{self.name}: morphax does not implement JAX's experimental high-level types "
            "(jax.experimental.hijax), so a HiPrimitive cannot be applied. Use the library's "
            "default (non-hijax) code path."
        )

    def __repr__(self):
        return self.name


__all__ = [
    "AbstractValue",
    "AvalMutableQDD",
    "AvalQDD",
    "HiPrimitive",
    "HiType",
    "MutableHiType",
    "Zero",
    "aval_method",
    "aval_property",
    "control_flow_allowed_effects",
    "instantiate_zeros",
    "is_undefined_primal",
    "register_hitype",
]
