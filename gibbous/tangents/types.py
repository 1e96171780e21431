"""Tangents on IR types: which tangent, fdata and rdata the values of a type have.

The AD pass decides by these which values carry fdata and which pullbacks return rdata.  Each
row mirrors a kind of ``gibbous.tangents.model``'s table of values, for the IR types whose every
value is of that kind; where the type does not decide the kind, the answer is ``Any``.  "No
tangent" is ``Object(NoTangent)``.  The answers are sound: ``typeof(zero_tangent(x))`` is a
subtype of ``tangent_type(typeof(x))`` for every ``x``, and likewise for fdata and rdata
(tests/rules/test_tangents.py checks this row by row, which keeps the two tables in step).
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.tangents.classes import NEVER_DIFFERENTIABLE
from gibbous.tangents.model import NoTangent, fdata_of, rdata_of, zero_tangent

__all__ = ["NO_TANGENT_TYPE", "fdata_type", "rdata_type", "tangent_type"]

NO_TANGENT_TYPE: T.Type = T.Object(NoTangent)

# The (tangent, fdata, rdata) types of the values of one IR type.
_Split = tuple[T.Type, T.Type, T.Type]
_NOTHING: _Split = (NO_TANGENT_TYPE, NO_TANGENT_TYPE, NO_TANGENT_TYPE)
_UNKNOWN: _Split = (T.ANY, T.ANY, T.ANY)


def _may_be_nothing(ty: T.Type) -> bool:
    return ty == NO_TANGENT_TYPE or isinstance(ty, T.Any)


def _collapse_types(items: tuple[T.Type, ...]) -> T.Type:
    # Mirrors tangents.values._collapse, which decides per value: only certain when no item is
    # Any.
    if all(ty == NO_TANGENT_TYPE for ty in items):
        return NO_TANGENT_TYPE
    if all(_may_be_nothing(ty) for ty in items):
        return T.ANY
    return T.Tuple(items)


# --------------------------------------------------------------------------------------------
# One function per kind of tangents.py, for an IR type whose values are all of that kind


def _non_differentiable(ty: T.Type) -> _Split:
    return _NOTHING


def _scalar(ty: T.Type) -> _Split:
    return (ty, NO_TANGENT_TYPE, ty)


def _float_array(ty: T.Type) -> _Split:
    assert isinstance(ty, T.Array)
    if ty.dtype is None:  # a float or an int array: the rdata is NoTangent either way
        return (T.ANY, T.ANY, NO_TANGENT_TYPE)
    if np.dtype(ty.dtype).kind not in "fc":
        return _NOTHING  # an array of another kind, as tangents._array_kind tells values
    return (ty, ty, NO_TANGENT_TYPE)


def _tuple(ty: T.Type) -> _Split:
    assert isinstance(ty, T.Tuple)
    parts = [_split_type(item) for item in ty.items]
    return (
        _collapse_types(tuple(p[0] for p in parts)),
        _collapse_types(tuple(p[1] for p in parts)),
        _collapse_types(tuple(p[2] for p in parts)),
    )


def _list(ty: T.Type) -> _Split:
    assert isinstance(ty, T.List)
    tangent = T.List(tangent_type(ty.item))
    return (tangent, tangent, NO_TANGENT_TYPE)


def _dict(ty: T.Type) -> _Split:
    assert isinstance(ty, T.Dict)
    tangent = T.Dict(ty.key, tangent_type(ty.value))
    return (tangent, tangent, NO_TANGENT_TYPE)


# The type-level counterpart of tangents._BY_CLASS: every value of a type of one of these
# classes is of one kind, and the function of that kind gives the types of its tangents.
_KIND_OF_TYPE: dict[type, t.Callable[[T.Type], _Split]] = {
    T.Bool: _non_differentiable,
    T.Int: _non_differentiable,
    T.Str: _non_differentiable,
    T.NoneType: _non_differentiable,
    T.Set: _non_differentiable,
    T.Float: _scalar,
    T.Complex: _scalar,
    T.Array: _float_array,
    T.Tuple: _tuple,
    T.List: _list,
    T.Dict: _dict,
}


def _split_type(ty: T.Type) -> _Split:
    kind = _KIND_OF_TYPE.get(type(ty))
    if kind is not None:
        return kind(ty)
    if type(ty) is T.Const:
        # Constants are immutable and hashable (no arrays): their tangents are cheap to make.
        assert isinstance(ty, T.Const)
        tangent = zero_tangent(ty.value)
        return (T.typeof(tangent), T.typeof(fdata_of(tangent)), T.typeof(rdata_of(tangent)))
    if type(ty) is T.Object:
        # Object(cls) admits subclasses, which may be of another kind: only classes whose every
        # subclass has no tangent give a definite answer.
        assert isinstance(ty, T.Object)
        return _NOTHING if issubclass(ty.cls, NEVER_DIFFERENTIABLE) else _UNKNOWN
    if type(ty) is T.Bottom:
        return (ty, ty, ty)
    return _UNKNOWN  # Any, and the types only inference uses


def tangent_type(ty: T.Type) -> T.Type:
    """The type of the tangents of values of type ``ty``."""
    return _split_type(ty)[0]


def fdata_type(ty: T.Type) -> T.Type:
    """The type of the fdata of values of type ``ty`` (``Object(NoTangent)``: none)."""
    return _split_type(ty)[1]


def rdata_type(ty: T.Type) -> T.Type:
    """The type of the rdata of values of type ``ty`` (``Object(NoTangent)``: none)."""
    return _split_type(ty)[2]
