"""The type lattice of the IR.

A type describes the set of runtime values an SSA value may hold. Types are frozen attrs
classes, compared structurally, and form a lattice:

    Bottom  <=  Const(v)  <=  typeof(v)  <=  ...  <=  Any

``join`` is the least upper bound, ``is_subtype`` the order. ``Any`` is always legal: it is
the dynamic path. Precise types are what lets later stages pick fast rules.

Decisions (see docs/ir.md):

* Scalars carry their NumPy dtype name: ``Float("float64")`` is a Python ``float`` or an
  ``np.float64``; ``Float("float32")`` an ``np.float32`` scalar.  Python ``int`` is ``Int("int64")``.
* ``Bool`` and ``Int`` are distinct types; ``Bool <= Int("int64")`` (``bool`` is a subclass of
  Python's ``int``), but a bool is no ``np.int32``.  Joins across other kinds are ``Any``.
* Containers are covariant: a type describes the values at one program point.  Passes that
  mutate containers must widen element types themselves.
* ``Const(v)`` holds hashable values only (numbers, strings, callables, classes, modules, tuples
  of those); they compare by type and value, so ``Const(1)`` and ``Const(True)`` differ.
"""

from __future__ import annotations

import builtins
import numbers
import types as pytypes
import typing as t

import attrs
import numpy as np

from gibbous.ir.literals import UnprintableError, format_constant, format_dtype, format_path
from gibbous.ir.names import import_path


class Type:
    """Base of all IR types."""

    __slots__ = ()

    def __str__(self) -> str:
        return format_type(self, lenient=True)


@attrs.frozen
class Any(Type):
    """Every value: the dynamic path."""


@attrs.frozen
class Bottom(Type):
    """No value: the type of code that never produces one (the join's identity)."""


@attrs.frozen
class Bool(Type):
    pass


@attrs.frozen
class Int(Type):
    dtype: str = "int64"


@attrs.frozen
class Float(Type):
    dtype: str = "float64"


@attrs.frozen
class Complex(Type):
    dtype: str = "complex128"


@attrs.frozen
class Str(Type):
    pass


@attrs.frozen
class NoneType(Type):
    pass


@attrs.frozen
class Array(Type):
    """An ``np.ndarray``; ``dtype`` or ``ndim`` may be unknown (``None``)."""

    dtype: str | None
    ndim: int | None


@attrs.frozen
class Tuple(Type):
    """A tuple of known length; ``cls`` names a tuple subclass such as a NamedTuple."""

    items: tuple[Type, ...]
    cls: type = tuple


@attrs.frozen
class List(Type):
    item: Type


@attrs.frozen
class Set(Type):
    item: Type


@attrs.frozen
class Dict(Type):
    key: Type
    value: Type


@attrs.frozen
class Object(Type):
    """Any instance of ``cls`` (or of a subclass)."""

    cls: type


def _const_key(value: object) -> tuple[object, ...]:
    # Type and value both count: 1 == 1.0 == True in Python, but they are different constants.
    if isinstance(value, tuple):  # by class too: a NamedTuple is not the plain tuple
        return (type(value), tuple(_const_key(v) for v in value))
    if isinstance(value, slice):  # unhashable before Python 3.12, yet immutable
        return (slice, _const_key(value.start), _const_key(value.stop), _const_key(value.step))
    if isinstance(value, (float, np.floating, complex, np.complexfloating)):
        # By repr, within the type: nan equals itself as a constant; -0.0 and 0.0 differ (1/x
        # tells them apart); and no NumPy scalar is compared with a key of another shape (a
        # NumPy scalar == a tuple broadcasts: an array, whose truth is an error).
        return (type(value), repr(value))
    try:
        hash(value)
    except TypeError:
        return (type(value), id(value))
    return (type(value), value)


@attrs.frozen(eq=False)
class Const(Type):
    """Exactly the one value ``value``."""

    value: object

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Const) and _const_key(self.value) == _const_key(other.value)

    def __hash__(self) -> int:
        return hash((Const, _const_key(self.value)))


ANY = Any()
BOTTOM = Bottom()
BOOL = Bool()
INT = Int()
FLOAT = Float()
COMPLEX = Complex()
STR = Str()
NONE = NoneType()

_SCALAR_BY_KIND: dict[str, t.Callable[[str], Type]] = {
    "b": lambda _dtype: BOOL,
    "i": Int,
    "u": Int,
    "f": Float,
    "c": Complex,
}

# Values whose identity nobody can observe through mutation: safe to share, fold and merge.
_IMMUTABLE_LEAVES = (
    builtins.bool,
    builtins.int,
    builtins.float,
    builtins.complex,
    builtins.str,
    builtins.bytes,
    type(None),
    type(Ellipsis),
    builtins.slice,
    builtins.range,
    np.generic,
    type,
    pytypes.BuiltinFunctionType,
    pytypes.FunctionType,
    pytypes.MethodDescriptorType,  # numpy.ndarray.sum, list.append
    pytypes.WrapperDescriptorType,  # float.__add__
    pytypes.ClassMethodDescriptorType,  # dict.fromkeys
    type(np.sum),  # NumPy 2's public functions are dispatchers, not FunctionType
    pytypes.ModuleType,
    np.ufunc,
    np.dtype,
    # NumPy's "not given" sentinel (``keepdims=np._NoValue``, ``initial=np._NoValue``): one
    # object, compared by identity, a default all over NumPy's own Python
    type(getattr(np, "_NoValue", None)),
)


def is_immutable_value(value: object) -> bool:
    """True for values that can be shared freely: scalars, strings, tuples of such, callables."""
    if isinstance(value, (tuple, frozenset)):
        return all(is_immutable_value(v) for v in value)
    return isinstance(value, _IMMUTABLE_LEAVES)


def typeof(value: object, *, const: bool = False) -> Type:
    """The most precise type of ``value``.

    With ``const=False`` (the default, used to specialise on argument values) the result never
    mentions the value itself; with ``const=True`` hashable immutable values give ``Const(value)``.
    """
    if const and value is not None and is_immutable_value(value):
        return Const(value)
    if value is None:
        return NONE
    # Exact classes only: a subclass (np.matrix, a list or str subclass, an IntEnum) may
    # redefine every operation, so it is an Object of its own class.
    if type(value) is np.ndarray:
        return Array(value.dtype.name, value.ndim)
    if isinstance(value, np.generic):
        make = _SCALAR_BY_KIND.get(value.dtype.kind)
        return make(value.dtype.name) if make is not None else Object(type(value))
    if isinstance(value, builtins.bool):
        return BOOL
    if type(value) is builtins.int:
        return INT
    if type(value) is builtins.float:
        return FLOAT
    if type(value) is builtins.complex:
        return COMPLEX
    if type(value) is builtins.str:
        return STR
    if isinstance(value, tuple):
        return Tuple(tuple(typeof(v) for v in value), type(value))
    if type(value) is list:
        return List(join_all(typeof(v) for v in value))
    if isinstance(value, (set, frozenset)) and type(value) in (set, frozenset):
        return Set(join_all(typeof(v) for v in value)) if type(value) is set else Object(frozenset)
    if isinstance(value, dict) and type(value) is dict:
        return Dict(
            join_all(typeof(k) for k in value.keys()), join_all(typeof(v) for v in value.values())
        )
    return Object(type(value))


def widen(ty: Type) -> Type:
    """Forget constants: ``Const(v)`` becomes ``typeof(v)``, recursively through tuples."""
    if isinstance(ty, Const):
        return typeof(ty.value)
    if isinstance(ty, Tuple):
        return Tuple(tuple(widen(i) for i in ty.items), ty.cls)
    return ty


def python_class(ty: Type) -> type | None:
    """The Python class every value of ``ty`` is an instance of, where there is one."""
    match ty:
        case Const(value=value):
            return type(value)
        case Bool():
            return builtins.bool
        case Str():
            return builtins.str
        case NoneType():
            return type(None)
        case Array():
            return np.ndarray
        case Tuple(cls=cls):
            return cls
        case List():
            return list
        case Set():
            return set
        case Dict():
            return dict
        case Object(cls=cls):
            return cls
    return None  # Int/Float/Complex cover both a Python and a NumPy class; Any and Bottom none


def is_subtype(a: Type, b: Type) -> bool:
    """``a <= b``: every value of ``a`` is a value of ``b``."""
    if a == b or isinstance(b, Any) or isinstance(a, Bottom):
        return True
    if isinstance(a, Any) or isinstance(b, Bottom):
        return False
    if isinstance(a, Const):
        if isinstance(b, Const):
            return False
        return is_subtype(typeof(a.value), b)
    match a, b:
        case Bool(), Int():
            # A Python bool is a Python int (i64); it is no np.int32, so i32 + i32 stays i32.
            return b.dtype == "int64"
        case Array(), Array():
            return (b.dtype is None or a.dtype == b.dtype) and (b.ndim is None or a.ndim == b.ndim)
        case Tuple(), Tuple():
            return (
                len(a.items) == len(b.items)
                and issubclass(a.cls, b.cls)
                and all(is_subtype(x, y) for x, y in zip(a.items, b.items))
            )
        case List(), List():
            return is_subtype(a.item, b.item)
        case Set(), Set():
            return is_subtype(a.item, b.item)
        case Dict(), Dict():
            return is_subtype(a.key, b.key) and is_subtype(a.value, b.value)
        case _, Object(cls=cls):
            pycls = python_class(a)
            if pycls is not None:
                return issubclass(pycls, cls)
            return cls is object or (
                cls is numbers.Number and isinstance(a, (Int, Float, Complex))
            )
    return False


def join(a: Type, b: Type) -> Type:
    """The least upper bound of ``a`` and ``b`` in the lattice."""
    if is_subtype(a, b):
        return b
    if is_subtype(b, a):
        return a
    a, b = widen(a), widen(b)
    if is_subtype(a, b):
        return b
    if is_subtype(b, a):
        return a
    match a, b:
        case Array(), Array():
            return Array(
                a.dtype if a.dtype == b.dtype else None, a.ndim if a.ndim == b.ndim else None
            )
        case Tuple(), Tuple() if len(a.items) == len(b.items):
            cls = a.cls if issubclass(b.cls, a.cls) else b.cls if issubclass(a.cls, b.cls) else tuple
            return Tuple(tuple(join(x, y) for x, y in zip(a.items, b.items)), cls)
        case List(), List():
            return List(join(a.item, b.item))
        case Set(), Set():
            return Set(join(a.item, b.item))
        case Dict(), Dict():
            return Dict(join(a.key, b.key), join(a.value, b.value))
    ca, cb = python_class(a), python_class(b)
    if ca is not None and cb is not None:
        common = next(c for c in ca.__mro__ if issubclass(cb, c))
        if common is not object:
            return Object(common)
    return ANY


def join_all(tys: t.Iterable[Type]) -> Type:
    """Join of many types; ``Bottom`` for none."""
    result: Type = BOTTOM
    for ty in tys:
        result = join(result, ty)
    return result


# --------------------------------------------------------------------------------------------
# Text


def format_type(ty: Type, *, lenient: bool = False) -> str:
    """The text of ``ty``.  ``lenient`` is for messages: a class or constant without an import
    path prints by its module and qualified name (or repr) instead of raising."""

    def path(obj: object) -> str:
        if not lenient:
            return format_path(obj)
        found = import_path(obj)
        if found is not None:
            return found
        return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"

    def sub(item: Type) -> str:
        return format_type(item, lenient=lenient)

    match ty:
        case Any():
            return "any"
        case Bottom():
            return "never"
        case Bool():
            return "bool"
        case Int(dtype=d) | Float(dtype=d) | Complex(dtype=d):
            return format_dtype(d)
        case Str():
            return "str"
        case NoneType():
            return "none"
        case Array(dtype=dtype, ndim=ndim):
            dims = "..." if ndim is None else ",".join(":" * ndim)
            return ("?" if dtype is None else format_dtype(dtype)) + f"[{dims}]"
        case Tuple(items=items, cls=cls):
            head = "tuple" if cls is tuple else f"tuple<{path(cls)}>"
            return head + "[" + ", ".join(map(sub, items)) + "]"
        case List(item=item):
            return f"list[{sub(item)}]"
        case Set(item=item):
            return f"set[{sub(item)}]"
        case Dict(key=key, value=value):
            return f"dict[{sub(key)}, {sub(value)}]"
        case Object(cls=cls):
            return f"object<{path(cls)}>"
        case Const(value=value):
            try:
                return f"const<{format_constant(value)}>"
            except UnprintableError:
                if not lenient:
                    raise
                return f"const<{value!r}>"
    raise TypeError(f"not an IR type: {ty!r}")
