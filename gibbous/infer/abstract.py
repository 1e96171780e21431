"""The abstract values of inference beyond the IR's types, and helpers on types.

Containers that mutate are typed by where they are made (``Site``), and a value that may be one
of them by a ``Ref`` to those sites; the interpreter reads a ``Ref`` off its sites' element
types when it needs an IR type.
"""

from __future__ import annotations

import typing as t

import attrs

from gibbous.ir import types as T
from gibbous.infer.typerules import runtime
from gibbous.infer.typerules.table import BoundMethod, Iter
from gibbous.infer.typerules.base import (
    const_type,
    exact_int_dtype,
    is_inert,
    tuple_method,
)
from gibbous.infer.typerules.base import join as rule_join

# --------------------------------------------------------------------------------------------
# Abstract types private to inference


@attrs.frozen
class Ref(T.Type):
    """A ``kind`` (list, set or dict) made at one of ``sites``, and typed by them."""

    kind: type
    sites: frozenset[int]


@attrs.frozen
class OrStop(T.Type):
    """What ``next_or_stop`` returns: an ``item``, or the frontend's ``STOP`` when exhausted."""

    item: T.Type


SLOTS: dict[type, int] = {list: 1, set: 1, dict: 2}
STOP = runtime.STOP


@attrs.define
class Site:
    """Where containers are made; ``slots`` join the element types stored into any of them.

    A list or set has one slot (its items), a dict two (keys, values).
    """

    kind: type
    slots: list[T.Type]
    origin: object
    changes: int = 0


# --------------------------------------------------------------------------------------------
# Helpers on types


def _kind_of(ty: T.Type) -> type:
    return list if isinstance(ty, T.List) else set if isinstance(ty, T.Set) else dict


def _slot_types(ty: T.Type) -> list[T.Type]:
    match ty:
        case T.List(item=item) | T.Set(item=item):
            return [item]
        case T.Dict(key=key, value=value):
            return [key, value]
    return []


def _container(kind: type, slots: list[T.Type]) -> T.Type:
    if kind is list:
        return T.List(slots[0])
    if kind is set:
        return T.Set(slots[0])
    return T.Dict(slots[0], slots[1])


def _join_rule_types(tys: t.Iterable[T.Type]) -> T.Type:
    result: T.Type = T.BOTTOM
    for ty in tys:
        result = rule_join(result, ty)
    return result


def _has_containers(ty: T.Type) -> bool:
    match ty:
        case T.List() | T.Set() | T.Dict():
            return True
        case T.Tuple(items=items):
            return any(map(_has_containers, items))
        case Iter(item=item):
            return _has_containers(item)
        case BoundMethod(self_type=receiver):
            return _has_containers(receiver)
    return False


def _opaque(ty: T.Type) -> bool:
    """Whether a value of ``ty`` could hold a container where no site would record it."""
    match ty:
        case T.Any():
            return True
        case T.Object(cls=cls):
            return cls not in (range, slice)
        case T.Array(dtype=dtype):
            return not is_inert(ty)
        case T.Tuple(items=items):
            return any(map(_opaque, items))
        case T.List(item=item) | T.Set(item=item) | Iter(item=item):
            return _opaque(item)
        case T.Dict(key=key, value=value):
            return _opaque(key) or _opaque(value)
        case BoundMethod(self_type=receiver):
            return _opaque(receiver)
    return False


def _occurrences(
    ty: T.Type,
    path: tuple[object, ...],
    exact: bool,
    out: list[tuple[tuple[object, ...], type, T.Type, bool]],
) -> None:
    """The containers in a type, by path; ``exact`` while the path is through tuples only."""
    match ty:
        case T.List() | T.Set() | T.Dict():
            out.append((path, _kind_of(ty), ty, exact))
            for i, slot in enumerate(_slot_types(ty)):
                _occurrences(slot, path + (i,), False, out)
        case T.Tuple(items=items):
            for i, item in enumerate(items):
                _occurrences(item, path + (i,), exact, out)
        case Iter(item=item):
            _occurrences(item, path + ("iter",), False, out)
        case BoundMethod(self_type=receiver):
            _occurrences(receiver, path + ("self",), exact, out)


def _int_like(ty: T.Type) -> bool:
    return exact_int_dtype(ty) is not None or isinstance(ty, (T.Int, T.Bool)) or (
        isinstance(ty, T.Const) and isinstance(ty.value, bool)
    )


def _slice_like(ty: T.Type) -> bool:
    return (isinstance(ty, T.Const) and type(ty.value) is slice) or (
        isinstance(ty, T.Object) and ty.cls is slice
    )


def _plain_items(ty: T.Type) -> tuple[T.Type, ...] | None:
    match ty:
        case T.Tuple(items=items, cls=cls) if tuple_method(cls, "__getitem__"):
            return items
        case T.Const(value=value) if type(value) is tuple:
            return tuple(const_type(v) for v in value)
    return None


def _ref(ty: T.Type, kind: type) -> Ref | None:
    return ty if isinstance(ty, Ref) and ty.kind is kind else None
