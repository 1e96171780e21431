"""Attributes of objects: ``getattr``, ``setattr``, ``delattr``.

* A **mutable object**'s fdata is a ``MutableTangent`` (field name -> the field's tangent).
  Reading a field gives the field's fdata; the pullback adds the value's rdata into the field's
  tangent.  ``setattr`` keeps the old value and tangent (by reference) and its pullback returns
  the new value's rdata (what collected in the field's tangent) and puts both back; a field
  that did not exist is deleted again.
* A **frozen dataclass / attrs class**'s fdata is a ``Tangent`` of its fields' fdata (or
  ``NoTangent()``); its rdata, which the pullback of a read returns, is a ``Tangent`` with the
  cotangent at the field read and zeros elsewhere.  A **NamedTuple** field is a tuple item.
* ``x.method`` is a bound method, whose tangent is its receiver's (``__self__``).
* An object without a tangent (an inactive value: the AD pass gives those ``NoTangent()``
  fdata) is read as a constant and written with a throwaway tangent; its primal is still
  restored.
* Attributes computed by code (properties, ``__getattr__``) are not differentiated: reading one
  that has a tangent is an error, not a silent zero.  Class attributes (constants) have no
  derivative.
* ``getattr(x, name, default)`` is the two-argument rule where the attribute exists (the
  default gets a zero gradient) and the default itself where it does not (an AttributeError,
  as ``getattr`` catches it): the result then *is* the default, with its fdata, and the
  pullback returns its cotangent as the default's rdata.
"""

from __future__ import annotations

import builtins
import inspect
import types as pytypes
import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.ir.exceptions import GibbousError
from gibbous.library.common import ANY, ARRAY, CD, NT, NUMBER, STR, RuleResult
from gibbous.library.items import (
    Throwaway,
    TupleItems,
    full_tangent,
    rdata_tangent,
    throwaway_state,
)
from gibbous.library.arrays.views_copies import array_getattr_rrule, number_getattr_rrule
from gibbous.rules.registry import Pullback, primitive, stateful_primitive, zero_derivative
from gibbous.tangents.model import (
    CoDual,
    MutableTangent,
    Tangent,
    fdata_of,
    increment,
    is_differentiable,
    rdata_of,
    zero_fdata,
    zero_rdata,
)
import operator
from gibbous.ir import runtime
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules import frules
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

OBJECT = T.Object(object)
_MISSING = object()


def _is_slot(cls: type, name: str) -> bool:
    return isinstance(inspect.getattr_static(cls, name, None), pytypes.MemberDescriptorType)


def _instance_value(obj: object, name: str) -> object:
    """The value of ``name`` stored on ``obj`` itself (its ``__dict__`` or a slot)."""
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict) and name in d:
        return d[name]
    if _is_slot(type(obj), name):
        try:
            return object.__getattribute__(obj, name)
        except AttributeError:
            return _MISSING
    return _MISSING


def _is_computed(cls: type, name: str) -> bool:
    """A data descriptor other than a slot (a property): code runs to get or set it."""
    attr = inspect.getattr_static(cls, name, None)
    return (
        attr is not None
        and hasattr(type(attr), "__set__")
        and not isinstance(attr, pytypes.MemberDescriptorType)
    )


class ComputedAttributeError(GibbousError, NotImplementedError):
    """An attribute whose reading or setting runs code (a property, a descriptor): not
    differentiated yet (issue 32), a gibbous refusal, which the code it runs does not catch."""


def _not_differentiated(obj: object, name: str, why: str) -> ComputedAttributeError:
    return ComputedAttributeError(
        f"gibbous cannot differentiate {type(obj).__qualname__}.{name}: {why}; read a plain "
        "field or call a method instead"
    )


def _frozen_fields(obj: object) -> tuple[str, ...]:
    import dataclasses

    import attrs

    cls = type(obj)
    if dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls))
    if attrs.has(cls):
        return tuple(a.name for a in attrs.fields(cls))
    return ()


@stateful_primitive(builtins.getattr, OBJECT, STR, state_type=Throwaway)
def getattr_rrule(
    state: Throwaway | None, f: CD, x: CD, name: CD
) -> tuple[CD, Pullback, Throwaway]:
    """Stateful only for constants: their throwaway fdata is kept in the state."""
    state = throwaway_state(state)
    return (*_getattr(state, f, x, name), state)


def _getattr(state: Throwaway, f: CD, x: CD, name: CD) -> RuleResult:
    obj, n, fd = x.primal, name.primal, x.fdata
    y = f.primal(obj, n)
    if isinstance(obj, np.ndarray):
        raise NotImplementedError(f"no rule for the attribute {n!r} of an array")

    if isinstance(fd, MutableTangent) and _instance_value(obj, n) is not _MISSING:
        if n not in fd.fields:
            raise ValueError(
                f"the tangent of a {type(obj).__qualname__} has no field {n!r}: the attribute "
                "was set without a rule"
            )
        fields = fd.fields

        def pullback_mutable(dy: t.Any) -> tuple[t.Any, ...]:
            if dy is not NT:
                fields[n] = increment(fields[n], rdata_tangent(y, dy))
            return NT, NT, NT

        return CoDual(y, fdata_of(fields[n])), pullback_mutable

    if isinstance(obj, tuple) and n in getattr(type(obj), "_fields", ()):  # a NamedTuple
        i = type(obj)._fields.index(n)  # type: ignore[attr-defined]
        items = TupleItems(obj, fd)

        def pullback_item(dy: t.Any) -> tuple[t.Any, ...]:
            items.send_rdata(i, dy)
            return NT, items.rdata(), NT

        return CoDual(y, items.fdata(i)), pullback_item

    if n in _frozen_fields(obj) and not isinstance(fd, MutableTangent):

        def pullback_frozen(dy: t.Any) -> tuple[t.Any, ...]:
            zero = zero_rdata(obj)
            if dy is NT or zero is NT:
                return NT, zero, NT
            fields = dict(zero.fields)
            fields[n] = increment(fields[n], dy)
            return NT, Tangent(fields), NT

        return CoDual(y, NT if fd is NT else fd.fields[n]), pullback_frozen

    if n == "__self__" and isinstance(obj, (pytypes.MethodType, pytypes.BuiltinMethodType)):
        # (a bound method's receiver, whose tangent the method carries: ``method_binder``'s)
        receiver_fd = fd.fields.get("__self__", NT) if isinstance(fd, Tangent) else NT

        def pullback_receiver(dy: t.Any) -> tuple[t.Any, ...]:
            if dy is NT:
                return NT, zero_rdata(obj), NT
            parts = {"__self__": dy}
            if isinstance(obj, pytypes.MethodType):
                parts["__func__"] = zero_rdata(obj.__func__)
            return NT, Tangent(parts), NT

        return CoDual(y, receiver_fd), pullback_receiver

    if getattr(y, "__self__", None) is obj:  # a bound method: its tangent is its receiver's
        func = getattr(y, "__func__", None)
        parts = {"__self__": fd} | ({} if func is None else {"__func__": zero_fdata(func)})
        method_fd = NT if all(p is NT for p in parts.values()) else Tangent(parts)

        def pullback_method(dy: t.Any) -> tuple[t.Any, ...]:
            r = dy.fields.get("__self__", NT) if isinstance(dy, Tangent) else NT
            return NT, zero_rdata(obj) if r is NT else r, NT

        return CoDual(y, method_fd), pullback_method

    if is_differentiable(y) and fd is not NT:
        if _is_computed(type(obj), n) or _instance_value(obj, n) is _MISSING and not hasattr(
            type(obj), n
        ):
            raise _not_differentiated(obj, n, "its value is computed by code")
    # A class attribute, or an attribute of something without a tangent: a constant.
    return CoDual(y, state.fdata("value", y)), lambda dy: (NT, zero_rdata(obj), NT)


def with_default(read: t.Callable[[], RuleResult], x: CD, default: CD) -> RuleResult:
    """``getattr(x, name, default)`` from ``read()``, the rule of ``getattr(x, name)``."""
    try:
        y, pullback = read()
    except AttributeError:  # what getattr catches to return the default

        def pullback_default(dy: t.Any) -> tuple[t.Any, ...]:
            return NT, zero_rdata(x.primal), NT, zero_rdata(default.primal) if dy is NT else dy

        return default, pullback_default
    zero = zero_rdata(default.primal)
    return y, lambda dy: (*pullback(dy), zero)


@stateful_primitive(builtins.getattr, OBJECT, STR, ANY, state_type=Throwaway)
def getattr_default_rrule(
    state: Throwaway | None, f: CD, x: CD, name: CD, default: CD
) -> tuple[CD, Pullback, Throwaway]:
    kept = throwaway_state(state)
    return (*with_default(lambda: _getattr(kept, f, x, name), x, default), kept)


@primitive(builtins.getattr, ARRAY, STR, ANY)
def array_getattr_default_rrule(f: CD, x: CD, name: CD, default: CD) -> RuleResult:
    return with_default(lambda: array_getattr_rrule(f, x, name), x, default)


@primitive(builtins.getattr, NUMBER, STR, ANY)
def number_getattr_default_rrule(f: CD, x: CD, name: CD, default: CD) -> RuleResult:
    return with_default(lambda: number_getattr_rrule(f, x, name), x, default)


@primitive(builtins.setattr, OBJECT, STR, ANY)
def setattr_rrule(f: CD, x: CD, name: CD, v: CD) -> RuleResult:
    obj, n, fd = x.primal, name.primal, x.fdata
    if isinstance(obj, np.ndarray) or _is_computed(type(obj), n):
        raise _not_differentiated(obj, n, "setting it runs code")
    # An object without a tangent is inactive (the AD pass gives such values ``NoTangent()``):
    # a throwaway tangent stands in, and the primal is restored all the same.
    fields = fd.fields if isinstance(fd, MutableTangent) else {}
    old = _instance_value(obj, n)
    old_t = fields.get(n, _MISSING)
    f.primal(obj, n, v.primal)
    fields[n] = full_tangent(v.primal, v.fdata)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        r = rdata_of(fields[n])
        if old is _MISSING:
            delattr(obj, n)
        else:
            setattr(obj, n, old)
        if old_t is _MISSING:
            del fields[n]
        else:
            fields[n] = old_t
        return NT, NT, NT, r

    return CoDual(None, NT), pullback


@primitive(builtins.delattr, OBJECT, STR)
def delattr_rrule(f: CD, x: CD, name: CD) -> RuleResult:
    obj, n, fd = x.primal, name.primal, x.fdata
    old = _instance_value(obj, n)
    f.primal(obj, n)
    fields = fd.fields if isinstance(fd, MutableTangent) else None
    old_t = _MISSING if fields is None else fields.pop(n, _MISSING)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if old is not _MISSING:
            setattr(obj, n, old)
        if fields is not None and old_t is not _MISSING:
            fields[n] = old_t
        return NT, NT, NT

    return CoDual(None, NT), pullback


# --------------------------------------------------------------------------------------------
# Forward mode: objects' attributes, NamedTuples' fields
#
# Forward rules of objects: instances of Python classes, and NamedTuples' fields by name.
#
# An instance of a class written in Python (with a ``__dict__`` or slots, not frozen) has the
# tangent ``ObjectTangent``: the tangents of its attributes, by name, written as the attributes
# are, so every name of the object sees one tangent (the reverse mode's ``MutableTangent``,
# forward).  ``cls(*args)`` makes the object as Python does (``object.__new__``) with an empty
# tangent, then runs ``__init__``'s forward program on both (``Construct``, ``gibbous.forward.programs``);
# ``obj.a = v`` (``setattr``) stores v's tangent; ``obj.a`` reads it (zeros for an attribute set
# from a constant: an array's zeros are kept in the tangent, so a later write into that array
# through any name meets one tangent array); ``obj.method`` is a bound method whose tangent is
# the object's, so calling it runs the method's forward program with the object's tangent.
#
# A NamedTuple's tangent is that of the tuple of its items: ``p.k`` is item ``k``'s.


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


zero_derivative(_method_of, ANY, ANY)  # (a test: hvp derives ``_attribute_of_any``, not it)


def _no_number(z: object) -> bool:
    """A value without a derivative: an int, a bool, a string, None, a dtype, a shape."""
    if isinstance(z, tuple):
        return all(map(_no_number, z))
    kinds = (bool, int, str, bytes, type(None), np.integer, np.bool_, np.dtype)
    return isinstance(z, kinds)


#: an array's (or a NumPy scalar's) attributes without a derivative: ints, a dtype, flags
_ARRAY_METADATA = frozenset("dtype shape ndim size itemsize nbytes strides flags".split())


def _attribute_or(
    z: t.Any, obj: t.Any, name: t.Any, default: t.Any, dobj: t.Any, dname: t.Any, dd: t.Any
) -> t.Any:
    """``getattr(obj, name, None)`` (NumPy's ``_wrapfunc``): as ``obj.name``; the default's
    tangent is none (it is None)."""
    return _attribute_of_any(z, obj, name, dobj, dname)


def _array_attribute(
    b: Builder, z: Value, args: Values, tangents: Tangents, kwargs: Keywords
) -> Value:
    """A method of an array (``x.round``): bound to x, it carries x's tangent, which the call
    takes (``DynamicCalls.call``), as a user object's method carries the object's."""
    d = tangents[0]
    return Constant(None) if d is None else d


def _getattr_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | Emit | None:
    if not kwnames and len(types) == 3 and isinstance(types[1], T.Const):
        return _attribute_or_default  # (``getattr(x, "dtype", x)``: SciPy's array API)
    if not kwnames and len(types) == 2 and isinstance(types[0], T.Any) and types[1] == T.STR:
        # (a name made at run time, ``getattr(xp, f"atleast_{ndim}d")``: checked there, an
        # array's ``T`` or ``real`` refused, as what has a tangent and is no object's field)
        return _attribute_of_any
    if kwnames or len(types) != 2 or not isinstance(types[1], T.Const):
        return None
    owner, name = types[0], types[1].value
    if isinstance(owner, (T.Array, T.Float)) and isinstance(name, str):
        if name in _ARRAY_METADATA:
            return Emit(lambda b, z, args, tangents, kwargs: zero(b, z))
        if callable(getattr(np.ndarray, name, None)) and not name.startswith("_"):
            return Emit(_array_attribute)
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


frules.register(builtins.getattr, _getattr_make)
def _attribute_or_default(
    z: t.Any, obj: t.Any, name: t.Any, default: t.Any, dobj: t.Any, dname: t.Any, ddefault: t.Any
) -> t.Any:
    """``getattr(obj, name, default)``: the attribute's tangent where ``obj`` has it (as
    ``obj.name``'s), else the default's."""
    if not hasattr(obj, name):
        return like(z, ddefault)
    if isinstance(obj, np.ndarray) and name in _ARRAY_ATTRIBUTES:
        return like(z, None if dobj is None else getattr(dobj, name))
    return _attribute_of_any(z, obj, name, dobj, dname)


for _helper in (_attribute, _attribute_of_any, _attribute_or_default):
    runtime.register_object(_helper, f"forward_objects.{_helper.__name__.lstrip('_')}")
