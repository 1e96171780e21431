"""What every type rule builds on: three rule-level types, their lattice, and rule tables.

Type rules compute the type of a call's result from the types of its arguments.  They speak the
IR's types (``gibbous.ir.types``) plus three that never appear in printed IR; ``core_type`` turns
them into IR types, and type inference does so before it builds its typed copy:

* ``ExactInt(dtype)``: an integer of that dtype that is not a bool.  The IR lattice puts
  ``Bool <= Int("int64")`` (a bool is a Python int), so a value typed ``i64`` may be ``True``, and NumPy treats a
  bool index as a mask (``x[True]`` adds an axis) where an int index removes one.  Integer
  arithmetic, ``len`` and ``range`` never give bools; saying so keeps ``x[i]`` precise.
* ``BoundMethod(self_type, function)``: ``x.sum`` for a receiver whose class is known, so that
  ``x.sum(axis=0)`` is typed by the rule for ``numpy.ndarray.sum`` with ``x`` prepended.
* ``Iter(item, cls)``: an iterator or dict view whose elements have type ``item``.

Soundness is the contract: a rule's answer must contain every value the call can return.  A
rule that cannot decide returns ``Any``.

Abstract sampling, which most numeric rules use, is ``sampling``.
"""

from __future__ import annotations

import builtins
import collections.abc
import functools
import types as pytypes
import typing as t

import attrs
import numpy as np

from gibbous.ir import types as T
from gibbous.ir.printer import format_constant, format_type

# --------------------------------------------------------------------------------------------
# Rule-level types


@attrs.frozen
class ExactInt(T.Type):
    """An integer scalar of ``dtype`` that is not a bool (``Int(dtype)`` in the IR)."""

    dtype: str = "int64"

    def __str__(self) -> str:
        return format_rule_type(self)


@attrs.frozen
class BoundMethod(T.Type):
    """``getattr(x, name)`` where ``type(x).name`` is the plain method ``function``.

    Calling it is calling ``function`` with ``x`` first.  In the IR the bound method object is
    typed ``Any``; type inference rewrites its calls into calls of ``function``.
    """

    self_type: T.Type
    function: object

    def __str__(self) -> str:
        return format_rule_type(self)


@attrs.frozen
class Iter(T.Type):
    """An iterator (or dict view, when ``cls`` is a view ABC) whose elements are ``item``s.

    ``source`` is what it iterates over, for type inference to know which containers an
    iterator keeps alive and reachable; rules leave it ``Bottom``.
    """

    item: T.Type
    cls: type = collections.abc.Iterator
    source: T.Type = T.BOTTOM

    def __str__(self) -> str:
        return format_rule_type(self)


VIEW_CLASSES: tuple[type, ...] = (
    collections.abc.KeysView,
    collections.abc.ValuesView,
    collections.abc.ItemsView,
)


def format_rule_type(ty: T.Type) -> str:
    """Text for any type rules use, the rule-level ones included (for messages and tests)."""
    match ty:
        case ExactInt(dtype=dtype):
            return f"exact {format_type(T.Int(dtype))}"
        case BoundMethod(self_type=self_type, function=function):
            return f"bound<{_describe(function)}>[{format_rule_type(self_type)}]"
        case Iter(item=item, cls=cls):
            return f"iter<{cls.__name__}>[{format_rule_type(item)}]"
        case T.Tuple(items=items, cls=cls) if any(_is_rule_level(i) for i in items):
            head = "tuple" if cls is tuple else f"tuple<{cls.__name__}>"
            return head + "[" + ", ".join(map(format_rule_type, items)) + "]"
        case T.List(item=item) | T.Set(item=item) if _is_rule_level(item):
            return f"{'list' if isinstance(ty, T.List) else 'set'}[{format_rule_type(item)}]"
        case T.Dict(key=key, value=value) if _is_rule_level(key) or _is_rule_level(value):
            return f"dict[{format_rule_type(key)}, {format_rule_type(value)}]"
    try:
        return format_type(ty)
    except Exception:
        return repr(ty)


def _is_rule_level(ty: T.Type) -> bool:
    match ty:
        case ExactInt() | BoundMethod() | Iter():
            return True
        case T.Tuple(items=items):
            return any(map(_is_rule_level, items))
        case T.List(item=item) | T.Set(item=item):
            return _is_rule_level(item)
        case T.Dict(key=key, value=value):
            return _is_rule_level(key) or _is_rule_level(value)
    return False


def _describe(obj: object) -> str:
    try:
        return format_constant(obj)
    except Exception:  # no import path (or the path lookup fails): still worth a message
        return repr(obj)


EXACT_INT = ExactInt()


# --------------------------------------------------------------------------------------------
# From rule-level types to IR types


def core_type(ty: T.Type) -> T.Type:
    """``ty`` in IR types only: what the printer can print and later passes understand."""
    match ty:
        case ExactInt(dtype=dtype):
            return T.Int(dtype)
        case BoundMethod():
            return T.ANY  # a builtin or bound method object: no printable class
        case Iter(cls=cls):
            return T.Object(cls)
        case T.Tuple(items=items, cls=cls):
            return _printable(T.Tuple(tuple(core_type(i) for i in items), cls))
        case T.List(item=item):
            return T.List(core_type(item))
        case T.Set(item=item):
            return T.Set(core_type(item))
        case T.Dict(key=key, value=value):
            return T.Dict(core_type(key), core_type(value))
        case T.Const(value=value):
            return ty if _printable_constant(value) else core_type(type_of_value(value))
        case T.Object():
            return _printable(ty)
    return ty


def _printable(ty: T.Type) -> T.Type:
    """``ty``, or the nearest supertype that the text form can print (a class with a path)."""
    try:
        format_type(ty)
        return ty
    except Exception:  # UnprintableError, or a failing path lookup: widen instead
        pass
    match ty:
        case T.Tuple(items=items, cls=cls) if cls is not tuple:
            return _printable(T.Tuple(items))  # a tuple subclass without a path
        case T.Object(cls=cls):
            for base in cls.__mro__[1:]:
                if base is object and issubclass(cls, collections.abc.Iterator):
                    return T.Object(collections.abc.Iterator)  # (``list_iterator``: still an iterator)
                if _printable_class(base):
                    return T.Object(base)
    return T.ANY


def _printable_class(cls: type) -> bool:
    try:
        format_type(T.Object(cls))
        return True
    except Exception:
        return False


def _printable_constant(value: object) -> bool:
    try:
        format_constant(value)
        return True
    except Exception:
        return False


# --------------------------------------------------------------------------------------------
# The lattice, extended to the rule-level types


def exact_int_dtype(ty: T.Type) -> str | None:
    """The dtype if ``ty`` is a non-bool integer type: ``ExactInt`` or an integer constant."""
    if isinstance(ty, ExactInt):
        return ty.dtype
    if isinstance(ty, T.Const):
        v = ty.value
        if type(v) is builtins.int:
            return "int64"
        if isinstance(v, np.integer):
            return v.dtype.name
    return None


def join(a: T.Type, b: T.Type) -> T.Type:
    """Least upper bound, knowing ``ExactInt``, ``BoundMethod`` and ``Iter``."""
    if a == b or isinstance(b, T.Bottom):
        return a
    if isinstance(a, T.Bottom):
        return b
    if isinstance(a, T.Any) or isinstance(b, T.Any):
        return T.ANY
    da, db = exact_int_dtype(a), exact_int_dtype(b)
    if da is not None and da == db:
        return ExactInt(da)
    match a, b:
        case T.Tuple(), T.Tuple() if len(a.items) == len(b.items):
            cls = a.cls if issubclass(b.cls, a.cls) else b.cls if issubclass(a.cls, b.cls) else tuple
            return T.Tuple(tuple(join(x, y) for x, y in zip(a.items, b.items)), cls)
        case T.Const(value=tuple() as va), T.Tuple() if type(va) is tuple:
            return join(T.Tuple(tuple(T.Const(v) for v in va)), b)
        case T.Tuple(), T.Const(value=tuple() as vb) if type(vb) is tuple:
            return join(a, T.Tuple(tuple(T.Const(v) for v in vb)))
        case T.List(), T.List():
            return T.List(join(a.item, b.item))
        case T.Set(), T.Set():
            return T.Set(join(a.item, b.item))
        case T.Dict(), T.Dict():
            return T.Dict(join(a.key, b.key), join(a.value, b.value))
        case Iter(), Iter() if a.cls is b.cls:
            return Iter(join(a.item, b.item), a.cls)
        case BoundMethod(), BoundMethod() if a.function is b.function:
            return BoundMethod(join(a.self_type, b.self_type), a.function)
    return T.join(core_type(a), core_type(b))


def join_all(tys: t.Iterable[T.Type]) -> T.Type:
    result: T.Type = T.BOTTOM
    for ty in tys:
        result = join(result, ty)
    return result


def is_subtype(a: T.Type, b: T.Type) -> bool:
    """``a <= b``, knowing the rule-level types (conservatively: may say no to a true ``<=``)."""
    if a == b or isinstance(b, T.Any) or isinstance(a, T.Bottom):
        return True
    if isinstance(a, T.Any) or isinstance(b, T.Bottom):
        return False
    if isinstance(b, ExactInt):
        return exact_int_dtype(a) == b.dtype
    match a, b:
        case T.Tuple(), T.Tuple():
            return (
                len(a.items) == len(b.items)
                and issubclass(a.cls, b.cls)
                and all(is_subtype(x, y) for x, y in zip(a.items, b.items))
            )
        case T.Const(value=tuple() as va), T.Tuple() if type(va) is tuple:
            return is_subtype(T.Tuple(tuple(T.Const(v) for v in va)), b)
        case T.List(), T.List():
            return is_subtype(a.item, b.item)
        case T.Set(), T.Set():
            return is_subtype(a.item, b.item)
        case T.Dict(), T.Dict():
            return is_subtype(a.key, b.key) and is_subtype(a.value, b.value)
        case Iter(), Iter():
            return a.cls is b.cls and is_subtype(a.item, b.item)
        case BoundMethod(), BoundMethod():
            return a.function is b.function and is_subtype(a.self_type, b.self_type)
        case (BoundMethod() | Iter()), _:
            return T.is_subtype(core_type(a), core_type(b))
        case _, (BoundMethod() | Iter()):
            return False
    return T.is_subtype(core_type(a), core_type(b))


def widen(ty: T.Type) -> T.Type:
    """Forget constants (keeping that an integer constant is not a bool)."""
    match ty:
        case T.Const(value=value):
            dtype = exact_int_dtype(ty)
            if dtype is not None:
                return ExactInt(dtype)
            if type(value) is tuple:
                return T.Tuple(tuple(widen(T.Const(v)) for v in value))
            return T.widen(ty)
        case T.Tuple(items=items, cls=cls):
            return T.Tuple(tuple(widen(i) for i in items), cls)
        case Iter(item=item, cls=cls):
            return Iter(widen(item), cls)
    return ty


# --------------------------------------------------------------------------------------------
# Types of values


NUMERIC_KINDS = "biufc"


def dtype_name(dtype: np.dtype[t.Any]) -> str | None:
    """The name an ``Array`` type records, or ``None`` for dtypes rules do not reason about.

    Only fixed-size numeric dtypes: a string dtype's name records its length ('<U3'), which
    depends on the values, and object arrays run arbitrary ``__add__``s.
    """
    return dtype.name if dtype.kind in NUMERIC_KINDS else None


def scalar_type(dtype: str | None) -> T.Type:
    """The type of a NumPy scalar of ``dtype`` (what indexing or reducing an array gives)."""
    if dtype is None:
        return T.ANY
    kind = np.dtype(dtype).kind
    if kind == "b":
        return T.BOOL
    if kind in "iu":
        return ExactInt(dtype)
    if kind == "f":
        return T.Float(dtype)
    if kind == "c":
        return T.Complex(dtype)
    return T.ANY


def type_of_value(value: object) -> T.Type:
    """The most precise non-constant type of ``value``: ``typeof`` with ``ExactInt``."""
    if type(value) is builtins.int:
        return EXACT_INT
    if isinstance(value, np.integer):
        return ExactInt(value.dtype.name)
    if type(value) is np.ndarray:
        return T.Array(dtype_name(value.dtype), value.ndim)
    if isinstance(value, tuple):
        return T.Tuple(tuple(type_of_value(v) for v in value), type(value))
    if type(value) is list:
        return T.List(join_all(type_of_value(v) for v in value))
    if type(value) is set:
        return T.Set(join_all(type_of_value(v) for v in value))
    if type(value) is dict:
        return T.Dict(
            join_all(type_of_value(k) for k in value), join_all(type_of_value(v) for v in value.values())
        )
    return T.typeof(value)


def const_type(value: object) -> T.Type:
    """``Const(value)`` where a constant can hold it (immutable, printable), else its type."""
    if value is not None and T.is_immutable_value(value) and _printable_constant(value):
        return T.Const(value)
    return type_of_value(value)


# --------------------------------------------------------------------------------------------
# Classes a type admits, truthiness, inertness


@functools.cache
def _numpy_classes(dtype: str) -> frozenset[type]:
    # Several scalar classes can share a dtype name (np.int64 and np.longlong are both 'int64').
    found = {c for c in set(np.sctypeDict.values()) if np.dtype(c).name == dtype}
    return frozenset(found or {np.dtype(dtype).type})


_BOOLS = frozenset({builtins.bool, np.bool_})


def classes_of(ty: T.Type) -> tuple[frozenset[type], bool] | None:
    """The classes whose instances ``ty`` admits, and whether their subclasses are admitted too.

    ``None`` when unknown (``Any``, bound methods, iterators of unknown class).
    """
    match ty:
        case T.Const(value=value):
            return frozenset({type(value)}), False
        case T.Bool():
            return _BOOLS, False
        case ExactInt(dtype=d):
            return _numpy_classes(d) | ({builtins.int} if d == "int64" else set()), False
        case T.Int(dtype=d):
            if d != "int64":  # Bool <= Int("int64") only: a bool is a Python int, no np.int32
                return _numpy_classes(d), False
            return _numpy_classes(d) | _BOOLS | {builtins.int}, False
        case T.Float(dtype=d):
            return _numpy_classes(d) | ({builtins.float} if d == "float64" else set()), False
        case T.Complex(dtype=d):
            return _numpy_classes(d) | ({builtins.complex} if d == "complex128" else set()), False
        case T.Str():
            return frozenset({builtins.str}), False
        case T.NoneType():
            return frozenset({type(None)}), False
        case T.Array():
            return frozenset({np.ndarray}), False
        case T.List():
            return frozenset({list}), False
        case T.Set():
            return frozenset({set}), False
        case T.Dict():
            return frozenset({dict}), False
        case T.Tuple(cls=cls) | T.Object(cls=cls):
            return frozenset({cls}), True
        case T.Bottom():
            return frozenset(), False
        case Iter(cls=cls) if cls in (zip, enumerate):
            return frozenset({cls}), False
    return None


def isinstance_of(ty: T.Type, cls: type | tuple[type, ...]) -> bool | None:
    """Whether every (``True``) or no (``False``) value of ``ty`` is an instance of ``cls``."""
    found = classes_of(ty)
    if found is None:
        return None
    classes, open_ = found
    answers = {issubclass(c, cls) for c in classes}
    if answers == {True}:
        return True  # subclasses of an instance's class are instances too
    if answers == {False} and not open_:
        return False
    return None


def may_share_values(a: T.Type, b: T.Type) -> bool:
    """Whether a value could be of both types (``False`` only when provably disjoint)."""
    fa, fb = classes_of(a), classes_of(b)
    if fa is None or fb is None:
        return True
    (ca, open_a), (cb, open_b) = fa, fb
    for x in ca:
        for y in cb:
            if x is y or (open_a and issubclass(y, x)) or (open_b and issubclass(x, y)):
                return True
            if open_a and open_b:
                return True  # a class could inherit from both
    return False


_SINGLETONS = (type(None), builtins.bool, type(Ellipsis), type(NotImplemented))


def truthiness(ty: T.Type) -> bool | None:
    """``bool(v)`` for every value ``v`` of ``ty``, when it is the same for all of them."""
    match ty:
        case T.Const(value=value) if is_data_value(value) or _is_standard_callable(value):
            return bool(value)
        case T.NoneType():
            return False
        case T.Tuple(items=items, cls=cls) if _plain_tuple_class(cls):
            return len(items) > 0
        case BoundMethod():
            return True
        case Iter(cls=cls) if cls not in VIEW_CLASSES:
            return True  # iterators have no __len__ or __bool__
    return None


def _plain_tuple_class(cls: type) -> bool:
    return cls is tuple or (
        tuple_method(cls, "__len__") and getattr(cls, "__bool__", None) is None
    )


def tuple_method(cls: type, name: str) -> bool:
    """Whether the tuple class ``cls`` inherits ``name`` from ``tuple`` unchanged."""
    return bool(getattr(cls, name, None) is getattr(tuple, name))


def _is_standard_callable(value: object) -> bool:
    return isinstance(
        value, (pytypes.FunctionType, pytypes.BuiltinFunctionType, np.ufunc, pytypes.ModuleType)
    ) or (isinstance(value, type) and type(value) is type)


_DATA_LEAVES: tuple[type, ...] = (
    builtins.bool,
    builtins.int,
    builtins.float,
    builtins.complex,
    builtins.str,
    builtins.bytes,
    type(None),
    type(Ellipsis),
    builtins.slice,
    np.bool_,
    np.number,
)


def is_data_value(value: object) -> bool:
    """Plain immutable data: operations on it run no user code and have no side effects."""
    if type(value) is tuple:
        return all(is_data_value(v) for v in value)
    if type(value) is slice:
        return all(is_data_value(v) for v in (value.start, value.stop, value.step))
    return type(value) in _DATA_LEAVES or (
        isinstance(value, (np.bool_, np.number)) and type(value).__module__ == "numpy"
    )


def _is_inert_class(value: object) -> bool:
    # Builtin and NumPy classes passed as arguments (dtype=np.float32) are used as data.
    return isinstance(value, np.dtype) or (
        isinstance(value, type) and type(value).__module__ in ("builtins", "numpy", "numpy._core")
        and value.__module__ in ("builtins", "numpy")
    )


_INERT_OBJECT_CLASSES: tuple[type, ...] = (range, slice, np.dtype, type(None))


def is_inert(ty: T.Type) -> bool:
    """Whether handing a value of ``ty`` to a builtin or NumPy callable can run no user code.

    User code (a ``__radd__``, a key function, an object array's elements) could do anything
    with the other arguments, such as appending to a list; type inference must then forget
    what it knew about containers passed alongside.
    """
    match ty:
        case T.Bool() | T.Int() | ExactInt() | T.Float() | T.Complex() | T.Str() | T.NoneType():
            return True
        case T.Bottom():
            return True
        case T.Const(value=value):
            return is_data_value(value) or _is_inert_class(value)
        case T.Array(dtype=dtype):
            return dtype is not None and np.dtype(dtype).kind in NUMERIC_KINDS
        case T.Tuple(items=items):
            return all(map(is_inert, items))
        case T.List(item=item) | T.Set(item=item) | Iter(item=item):
            return is_inert(item)
        case T.Dict(key=key, value=value):
            return is_inert(key) and is_inert(value)
        case T.Object(cls=cls):
            return cls in _INERT_OBJECT_CLASSES
    return False


# --------------------------------------------------------------------------------------------
# Rule tables


TypeRule = t.Callable[[tuple[T.Type, ...], dict[str, T.Type]], T.Type]


@attrs.frozen
class RuleSpec:
    """One rule for some callables.

    ``fold``: the callable is pure on immutable data, so a call whose arguments are all
    constants is evaluated and typed ``Const(result)``.  ``stores``: the callable may store an
    argument into a container argument (``list.append``); type inference must model that.
    """

    callables: tuple[object, ...]
    rule: TypeRule
    fold: bool = False
    stores: bool = False


class RuleList:
    """A module's rules, collected by decorating them; ``typerules`` merges all modules' lists."""

    def __init__(self) -> None:
        self.specs: list[RuleSpec] = []

    def __call__(
        self, *callables: object, fold: bool = False, stores: bool = False
    ) -> t.Callable[[TypeRule], TypeRule]:
        def register(rule: TypeRule) -> TypeRule:
            self.specs.append(RuleSpec(callables, rule, fold, stores))
            return rule

        return register

    def add(self, callables: t.Iterable[object], rule: TypeRule, **flags: bool) -> None:
        self.specs.append(RuleSpec(tuple(callables), rule, **flags))


def positional(
    args: tuple[T.Type, ...], kwargs: dict[str, T.Type], names: t.Sequence[str]
) -> dict[str, T.Type] | None:
    """Arguments by parameter name (``names`` in order), or ``None`` if they do not fit."""
    if len(args) > len(names):
        return None
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in bound:
            return None
        bound[k] = v
    return bound
