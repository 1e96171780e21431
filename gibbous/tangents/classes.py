"""Python classes as the tangent model sees them: which never have a tangent, which are frozen,
and what fields an instance has.

These are facts about classes and objects alone, with no tangent in them.
``gibbous.tangents.model`` decides each class's kind by them, and ``gibbous.testing`` by the
same facts which values a check may share between calls, so that the two cannot disagree.
"""

from __future__ import annotations

import builtins
import dataclasses
import enum
import functools
import importlib
import types as pytypes
import typing as t

import attrs
import numpy as np

from gibbous.tangents.values import NoTangent

__all__ = ["NEVER_DIFFERENTIABLE", "Machinery", "field_names", "has_fields", "instance_fields", "is_frozen"]

class Machinery:
    """A base of gibbous's own run-time objects that a program it differentiates may hold as
    a constant (``forward.DynamicCalls``, whose caches must not be read as tangent state)."""

    __slots__ = ()


# Classes whose instances, and whose subclasses' instances, never have a tangent.
NEVER_DIFFERENTIABLE: tuple[type, ...] = (
    Machinery,
    # Exceptions carry no derivative: what is passed into one and read back in a handler is a
    # constant there (docs/decisions.md).
    BaseException,
    type(functools.lru_cache(lambda: None)),  # a memoised function: its cache is no state
    builtins.int,  # and bool
    builtins.str,
    builtins.bytes,
    builtins.bytearray,
    type(None),
    type(Ellipsis),
    type(NotImplemented),
    builtins.slice,
    builtins.range,
    builtins.type,
    builtins.set,
    builtins.frozenset,
    pytypes.ModuleType,
    pytypes.CodeType,
    pytypes.MethodDescriptorType,
    pytypes.WrapperDescriptorType,
    pytypes.ClassMethodDescriptorType,
    pytypes.GetSetDescriptorType,
    pytypes.MemberDescriptorType,
    enum.Enum,
    np.integer,
    np.bool_,
    np.flexible,
    np.datetime64,
    np.timedelta64,
    np.dtype,
    np.ufunc,
    type(np.sum),  # NumPy's array-function dispatchers
    np.random.Generator,  # a random number generator's state is integers
    np.random.BitGenerator,
    np.random.RandomState,
    type(np.random.Generator.standard_normal),  # Cython's compiled functions, as builtins
    NoTangent,
)

_ATTRS_FROZEN_SETATTR = getattr(importlib.import_module("attr._make"), "_frozen_setattrs", None)


def _is_frozen_class(cls: type) -> bool:
    if dataclasses.is_dataclass(cls):
        return bool(getattr(cls, "__dataclass_params__").frozen)
    return attrs.has(cls) and getattr(cls, "__setattr__", None) is _ATTRS_FROZEN_SETATTR


def _holds_no_state(cls: type) -> bool:
    # Mixins such as typing.Generic and abc.ABC declare empty slots and add no fields.
    return cls is object or cls.__dict__.get("__slots__", None) == ()


def is_frozen(cls: type) -> bool:
    """Whether instances of ``cls`` are immutable objects with named fields: a frozen
    dataclass or attrs class, with nothing up the hierarchy that can hold mutable state (a
    frozen subclass of a mutable class keeps its base's attributes re-bindable)."""
    return _is_frozen_class(cls) and all(
        _holds_no_state(base) or _is_frozen_class(base) for base in cls.__mro__[1:]
    )


@functools.cache
def field_names(cls: type) -> tuple[str, ...]:
    """The fields of a dataclass or attrs class, in declaration order."""
    if dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls))
    return tuple(a.name for a in attrs.fields(cls))


def _slot_names(cls: type) -> tuple[str, ...]:
    names: list[str] = []
    for base in cls.__mro__:
        slots = base.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    return tuple(n for n in names if n not in ("__dict__", "__weakref__"))


def has_fields(cls: type) -> bool:
    """Whether instances of ``cls`` have attributes Python code can see: a ``__dict__`` or
    slots (extension types such as ``np.random.Generator`` have neither)."""
    return any("__dict__" in vars(base) for base in cls.__mro__) or bool(_slot_names(cls))


def instance_fields(x: object) -> dict[str, t.Any]:
    """An object's fields as tangents see them: its set slots, then its ``__dict__``."""
    fields: dict[str, t.Any] = {}
    for name in _slot_names(type(x)):
        try:
            fields[name] = object.__getattribute__(x, name)
        except AttributeError:  # an unset slot
            pass
    fields.update(getattr(x, "__dict__", {}))
    return fields
