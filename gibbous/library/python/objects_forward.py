"""Forward rules of objects: instances of Python classes, and NamedTuples' fields by name.

An instance of a class written in Python (with a ``__dict__`` or slots, not frozen) has the
tangent ``ObjectTangent``: the tangents of its attributes, by name, written as the attributes
are, so every name of the object sees one tangent (the reverse mode's ``MutableTangent``,
forward).  ``cls(*args)`` makes the object as Python does (``object.__new__``) with an empty
tangent, then runs ``__init__``'s forward program on both (``Construct``, ``gibbous.forward.programs``);
``obj.a = v`` (``setattr``) stores v's tangent; ``obj.a`` reads it (zeros for an attribute set
from a constant: an array's zeros are kept in the tangent, so a later write into that array
through any name meets one tangent array); ``obj.method`` is a bound method whose tangent is
the object's, so calling it runs the method's forward program with the object's tangent.

A NamedTuple's tangent is that of the tuple of its items: ``p.k`` is item ``k``'s.
"""

from __future__ import annotations

import builtins
import operator
import types as pytypes
import typing as t

import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Value
from gibbous.rules import frules as FR
from gibbous.rules.emit import (
    Emit,
    ForwardModeError,
    Keywords,
    ObjectTangent,
    Tangents,
    Values,
    like,
    refuse_computed,
    user_class,
    zero,
)


def _attribute(z: t.Any, obj: t.Any, name: t.Any, dobj: t.Any, dname: t.Any) -> t.Any:
    """``obj.name``: a method bound to ``obj`` carries the object's tangent; a data attribute
    its own, zeros where it has none (an array's zeros kept: its one tangent from now on)."""
    if type(dobj) is not ObjectTangent:
        return like(z, None)
    if type(z) is pytypes.MethodType and z.__self__ is obj:
        return dobj
    refuse_computed(obj, name, reading=True)
    d = dobj.fields.get(name)
    if d is None:
        d = like(z, None)
        if isinstance(z, (np.ndarray, list)):
            dobj.fields[name] = d
    return like(z, d)


#: attributes whose tangent the array rule of ``getattr`` gives (``gibbous.rules.frules``)
_ARRAY_ATTRIBUTES = frozenset({"T", "mT", "real", "imag"})


def _attribute_of_any(z: t.Any, obj: t.Any, name: t.Any, dobj: t.Any, dname: t.Any) -> t.Any:
    """``obj.name`` of a value whose type the build could not tell: an object's attribute, a
    NamedTuple's field; anything else with a tangent is refused here."""
    if type(dobj) is ObjectTangent:
        return _attribute(z, obj, name, dobj, dname)
    if type(obj) is list and type(dobj) is list and isinstance(z, pytypes.BuiltinMethodType):
        return getattr(dobj, name)  # (``xs.append``: the same method of the tangent list)
    if dobj is not None and _method_of(z, obj):
        # (``S.transpose`` of an array: the object's tangent, as a user object's method has;
        # the call runs the method's own rule with it, ``DynamicCalls.call``)
        return dobj
    if dobj is None or isinstance(z, pytypes.BuiltinMethodType) or _no_number(z):
        # (``xs.append`` of a list: a method of a builtin; ``x.size``, ``x.shape``: ints)
        return like(z, None)
    fields = getattr(type(obj), "_fields", None)
    if isinstance(obj, tuple) and fields and name in fields and isinstance(dobj, tuple):
        return like(z, dobj[fields.index(name)])
    if isinstance(obj, tuple) and fields and name == "_replace" and isinstance(dobj, tuple):
        named: t.Any = dobj if type(dobj) is type(obj) else type(obj)(*dobj)
        return named._replace
    raise ForwardModeError(
        f"forward mode: the attribute {name!r} of a {type(obj).__name__} (a value whose type "
        "the build could not tell) has no forward rule"
    )


def _method_of(z: object, obj: object) -> bool:
    """Whether ``z`` is a method of a builtin type (``ndarray.transpose``, ``dict.get``)
    bound to ``obj``."""
    return isinstance(z, pytypes.BuiltinMethodType) and getattr(z, "__self__", None) is obj


def _no_number(z: object) -> bool:
    """A value without a derivative: an int, a bool, a string, None, a dtype, a shape."""
    if isinstance(z, tuple):
        return all(map(_no_number, z))
    kinds = (bool, int, str, bytes, type(None), np.integer, np.bool_, np.dtype)
    return isinstance(z, kinds)


def _getattr_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> FR.Tangent | Emit | None:
    if kwnames or len(types) != 2 or not isinstance(types[1], T.Const):
        return None
    owner, name = types[0], types[1].value
    if isinstance(owner, T.Object) and user_class(owner.cls):
        return _attribute
    if isinstance(owner, T.Any) and name not in _ARRAY_ATTRIBUTES:
        return _attribute_of_any
    fields = getattr(owner.cls, "_fields", None) if isinstance(owner, T.Tuple) else None
    if fields and name == "_replace":  # (``p._replace(a=x)``: the same of the tangent)

        def replace(
            b: Builder, z: Value, args: Values, tangents: Tangents, kwargs: Keywords
        ) -> Value:
            d = tangents[0]
            return b.call(getattr, zero(b, args[0]) if d is None else d, name, type=T.ANY)

        return Emit(replace)
    if fields and name in fields:
        index = fields.index(name)

        def item(b: Builder, z: Value, args: Values, tangents: Tangents, kwargs: Keywords) -> Value:
            d = tangents[0]
            return zero(b, z) if d is None else b.call(operator.getitem, d, index, type=z.type)

        return Emit(item)
    return None


FR.register(builtins.getattr, _getattr_make)
for _helper in (_attribute, _attribute_of_any):
    runtime.register_object(_helper, f"forward_objects.{_helper.__name__.lstrip('_')}")
