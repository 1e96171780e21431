"""Tangent values, and what is done to them by their own class, with no primal needed.

``NoTangent``, ``CoDual``, ``Tangent`` and ``MutableTangent`` are what rules receive and return;
``fdata_of`` and ``rdata_of`` split a tangent into its two parts and ``increment`` adds into
one.  Array fdata is carved out of one buffer per memory owner, so that aliases share memory.
Which tangent a primal value has is ``gibbous.tangents.model``'s table of kinds.
"""

from __future__ import annotations

import builtins
import typing as t

import attrs
import numpy as np

from gibbous.tangents import pool

P = t.TypeVar("P")
F = t.TypeVar("F")

# --------------------------------------------------------------------------------------------
# Tangent values


@attrs.frozen
class NoTangent:
    """The tangent, fdata and rdata of what has no derivative.  All instances are one object."""

    def __new__(cls) -> NoTangent:
        return NO_TANGENT

    def __reduce__(self) -> tuple[type[NoTangent], tuple[()]]:
        return (NoTangent, ())


NO_TANGENT: NoTangent = object.__new__(NoTangent)


@attrs.frozen(eq=False, init=False)
class CoDual(t.Generic[P, F]):
    """A primal value and its fdata, as rules receive and return them."""

    primal: P
    fdata: F

    def __init__(self, primal: P, fdata: F) -> None:
        # Through the slots' own setters: a CoDual is made at every call of a rule, and attrs'
        # frozen ``__init__`` binds ``object.__setattr__`` and calls it per field, which costs
        # it half as much again.
        _set_primal(self, primal)
        _set_fdata(self, fdata)


_set_primal = CoDual.__dict__["primal"].__set__
_set_fdata = CoDual.__dict__["fdata"].__set__


@attrs.frozen
class Tangent:
    """The tangent of an immutable object other than a tuple: field name -> tangent.

    Compares by value, like a tuple; unhashable, like the dict it holds.
    """

    fields: dict[str, t.Any]

    __hash__ = None  # type: ignore[assignment]


@attrs.frozen(eq=False)
class MutableTangent:
    """The tangent of a mutable object (or closure): its fdata, updated in place."""

    fields: dict[str, t.Any]


@attrs.frozen(eq=False)
class _Region:
    """One zeroed byte buffer shadowing the memory of one owner (the end of a ``.base`` chain)."""

    owner: object  # kept alive, so that its id stays unique while the memo lives
    low: int  # address of the owner's first byte
    buffer: np.ndarray[t.Any, np.dtype[np.uint8]]


@attrs.frozen(eq=False)
class TangentMemo:
    """Tangents made so far, by object identity, and the memory regions their arrays live in.

    Pass one memo to every call that makes tangents of values that may alias each other.
    """

    objects: dict[int, tuple[object, t.Any]] = attrs.field(factory=dict)
    regions: dict[int, _Region] = attrs.field(factory=dict)

    def get(self, x: object) -> t.Any:
        hit = self.objects.get(id(x))
        return hit[1] if hit is not None and hit[0] is x else None

    def put(self, x: object, tangent: object) -> None:
        self.objects[id(x)] = (x, tangent)


# Printed IR (``object<gibbous.tangents.model.CoDual>``) and pickles name these classes by the
# tangent model's public module, which re-exports them.
for _cls in (NoTangent, CoDual, Tangent, MutableTangent, TangentMemo):
    _cls.__module__ = "gibbous.tangents.model"


# --------------------------------------------------------------------------------------------
# Array fdata: carved out of one buffer per memory owner, so that aliases share memory


def _address_bounds(a: np.ndarray[t.Any, t.Any]) -> tuple[int, int]:
    """The first and one-past-last byte an array's elements touch."""
    low = high = a.ctypes.data
    for n, stride in zip(a.shape, a.strides):
        if stride < 0:
            low += (n - 1) * stride
        else:
            high += (n - 1) * stride
    return low, high + a.itemsize


def _memory_owner(a: np.ndarray[t.Any, t.Any]) -> object:
    owner: object = a
    while isinstance(owner, np.ndarray) and owner.base is not None:
        owner = owner.base
    return owner


def zeros_like(x: np.ndarray[t.Any, t.Any]) -> np.ndarray[t.Any, t.Any]:
    """New zeros of ``x``'s shape and dtype, C-contiguous, to be accumulated into (fdata):
    large ones are filled rather than calloc'd (see ``gibbous.tangents.pool.LARGE_BYTES``).
    (Fdata that goes back to its maker after use comes from ``pool.zeros`` instead.)"""
    return pool.fresh_zeros(x.shape, x.dtype, x.nbytes)


def _region_for(a: np.ndarray[t.Any, t.Any], memo: TangentMemo) -> _Region:
    owner = _memory_owner(a)
    region = memo.regions.get(id(owner))
    if region is not None and region.owner is owner:
        return region
    if isinstance(owner, np.ndarray):
        low, high = _address_bounds(owner)
    else:
        try:  # bytes, mmap, ...: their whole buffer
            raw = np.frombuffer(t.cast(t.Any, owner), dtype=np.uint8)
            low, high = raw.ctypes.data, raw.ctypes.data + raw.nbytes
        except (TypeError, ValueError):  # no buffer to inspect: the array alone
            owner = a
            low, high = _address_bounds(a)
    region = _Region(owner, low, np.zeros(high - low, dtype=np.uint8))
    memo.regions[id(owner)] = region
    return region


def _array_fdata(a: np.ndarray[t.Any, t.Any], memo: TangentMemo) -> np.ndarray[t.Any, t.Any]:
    if a.size == 0:
        return np.zeros(a.shape, a.dtype)
    region = _region_for(a, memo)
    low, high = _address_bounds(a)
    if low < region.low or high > region.low + region.buffer.nbytes:
        # Outside its owner (np.lib.stride_tricks can do that): it aliases nothing we know.
        region = _Region(a, low, np.zeros(high - low, dtype=np.uint8))
    return np.ndarray(
        a.shape,
        a.dtype,
        buffer=region.buffer,
        offset=a.ctypes.data - region.low,
        strides=a.strides,
    )


def _collapse(parts: tuple[t.Any, ...]) -> t.Any:
    return NO_TANGENT if all(p is NO_TANGENT for p in parts) else parts


def _collapse_fields(fields: dict[str, t.Any]) -> t.Any:
    return NO_TANGENT if all(v is NO_TANGENT for v in fields.values()) else Tangent(fields)


# --------------------------------------------------------------------------------------------
# Splitting and adding tangents: by the tangent's own class, no primal needed


def _fdata_of_tuple(tangent: tuple[t.Any, ...]) -> t.Any:
    return _collapse(tuple(fdata_of(v) for v in tangent))


def _rdata_of_tuple(tangent: tuple[t.Any, ...]) -> t.Any:
    return _collapse(tuple(rdata_of(v) for v in tangent))


def _fdata_of_fields(tangent: Tangent) -> t.Any:
    return _collapse_fields({n: fdata_of(v) for n, v in tangent.fields.items()})


def _rdata_of_fields(tangent: Tangent) -> t.Any:
    return _collapse_fields({n: rdata_of(v) for n, v in tangent.fields.items()})


def _itself(tangent: t.Any) -> t.Any:
    return tangent


def _nothing(tangent: t.Any) -> t.Any:
    return NO_TANGENT


_SPLIT: dict[type, tuple[t.Callable[[t.Any], t.Any], t.Callable[[t.Any], t.Any]]] = {
    NoTangent: (_nothing, _nothing),
    builtins.float: (_nothing, _itself),
    builtins.complex: (_nothing, _itself),
    np.ndarray: (_itself, _nothing),
    builtins.list: (_itself, _nothing),
    builtins.dict: (_itself, _nothing),
    MutableTangent: (_itself, _nothing),
    builtins.tuple: (_fdata_of_tuple, _rdata_of_tuple),
    Tangent: (_fdata_of_fields, _rdata_of_fields),
}


def _split(tangent: object) -> tuple[t.Callable[[t.Any], t.Any], t.Callable[[t.Any], t.Any]]:
    split = _SPLIT.get(type(tangent))
    if split is None:
        if not isinstance(tangent, (np.floating, np.complexfloating)):
            raise TypeError(f"not a tangent: {tangent!r}")
        split = _SPLIT[type(tangent)] = _SPLIT[builtins.float]
    return split


def fdata_of(tangent: object) -> t.Any:
    """The part of a tangent that is carried forward and updated in place."""
    return _split(tangent)[0](tangent)


def rdata_of(tangent: object) -> t.Any:
    """The part of a tangent that pullbacks return."""
    return _split(tangent)[1](tangent)


def _is_nothing(s: object) -> bool:
    if s is NO_TANGENT:
        return True
    if isinstance(s, tuple):
        return all(_is_nothing(v) for v in s)
    return isinstance(s, Tangent) and all(_is_nothing(v) for v in s.fields.values())


# ``seen`` maps each fdata object already incremented (by id) to what was added to it: an
# fdata reached twice through aliases is one memory and takes the increment once.
_Seen = dict[int, object]


def _add_nothing(tangent: t.Any, s: t.Any, seen: _Seen) -> t.Any:
    if not _is_nothing(s):
        raise TypeError(f"cannot add {s!r} to NoTangent(): the value has no derivative")
    return tangent


def _add_scalar(tangent: t.Any, s: t.Any, seen: _Seen) -> t.Any:
    return type(tangent)(tangent + s)


_UNSEEN = object()


def _first_visit(tangent: object, s: object, seen: _Seen) -> bool:
    previous = seen.get(id(tangent), _UNSEEN)
    if previous is _UNSEEN:
        seen[id(tangent)] = s
        return True
    if previous is s:
        return False
    raise ValueError(
        "inconsistent aliasing: one fdata object is incremented by two different tangents"
    )


def _add_array(tangent: t.Any, s: t.Any, seen: _Seen) -> t.Any:
    if _first_visit(tangent, s, seen):
        np.add(tangent, s, out=tangent)
    return tangent


def _add_tuple(tangent: t.Any, s: t.Any, seen: _Seen) -> t.Any:
    if len(s) != len(tangent):
        raise ValueError(f"cannot add a tangent of {len(s)} items to one of {len(tangent)}")
    return tuple(_increment(a, b, seen) for a, b in zip(tangent, s))


def _add_fields(tangent: t.Any, s: t.Any, seen: _Seen) -> t.Any:
    return Tangent({n: _increment(v, s.fields[n], seen) for n, v in tangent.fields.items()})


def _add_list(tangent: t.Any, s: t.Any, seen: _Seen) -> t.Any:
    if _first_visit(tangent, s, seen):
        if len(s) != len(tangent):
            raise ValueError(f"cannot add a tangent of {len(s)} items to one of {len(tangent)}")
        for i, v in enumerate(s):
            tangent[i] = _increment(tangent[i], v, seen)
    return tangent


def _add_dict(tangent: t.Any, s: t.Any, seen: _Seen) -> t.Any:
    if _first_visit(tangent, s, seen):
        for k, v in s.items():
            tangent[k] = _increment(tangent[k], v, seen)
    return tangent


def _add_mutable(tangent: t.Any, s: t.Any, seen: _Seen) -> t.Any:
    if _first_visit(tangent, s, seen):
        fields = tangent.fields
        for k, v in s.fields.items():
            fields[k] = _increment(fields.get(k, NO_TANGENT), v, seen)
    return tangent


_ADD: dict[type, t.Callable[[t.Any, t.Any, _Seen], t.Any]] = {
    NoTangent: _add_nothing,
    builtins.float: _add_scalar,
    builtins.complex: _add_scalar,
    np.ndarray: _add_array,
    builtins.tuple: _add_tuple,
    Tangent: _add_fields,
    builtins.list: _add_list,
    builtins.dict: _add_dict,
    MutableTangent: _add_mutable,
}


def _add_opaque(tangent: t.Any, s: t.Any, seen: _Seen) -> t.Any:
    if s is not tangent:
        raise TypeError(f"cannot add {s!r} to {tangent!r}: only its own rules update it")
    return tangent


def register_opaque_fdata(cls: type) -> None:
    """Fdata that only its own rules understand (an iterator's, a generator frame's): stored
    in and read from containers and objects as it is (it is its own fdata, it has no rdata),
    and never added to."""
    _SPLIT[cls] = (_itself, _nothing)
    _ADD[cls] = _add_opaque


def _increment(tangent: t.Any, s: t.Any, seen: _Seen) -> t.Any:
    if s is NO_TANGENT:
        return tangent
    add = _ADD.get(type(tangent))
    if add is None:
        if not isinstance(tangent, (np.floating, np.complexfloating)):
            raise TypeError(f"not a tangent: {tangent!r}")
        add = _ADD[type(tangent)] = _add_scalar
    return add(tangent, s, seen)


def increment(tangent: t.Any, s: t.Any) -> t.Any:
    """``tangent + s``: fdata parts are updated in place, rdata parts returned anew.

    Always use the result: for a float it is a new float, for an array the array itself.
    """
    if type(tangent) is np.ndarray:  # the common case, without the aliasing bookkeeping
        if s is not NO_TANGENT:
            np.add(tangent, s, out=tangent)
        return tangent
    return _increment(tangent, s, {})
