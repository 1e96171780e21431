"""Type rules for containers, iteration, attributes and the remaining builtins.

Tuples are tracked item by item (``Tuple`` types), lists, sets and dicts by one element type
(``List``, ``Set``, ``Dict``).  These rules see containers as values; that a list's element
type must also cover every later ``append`` through any alias is type inference's business
(rules marked ``stores=True`` are the ones that write into a container argument).
"""

from __future__ import annotations

import builtins
import inspect
import operator
import types as pytypes
import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.infer.typerules.base import (
    EXACT_INT,
    VIEW_CLASSES,
    BoundMethod,
    ExactInt,
    Iter,
    RuleList,
    classes_of,
    const_type,
    exact_int_dtype,
    is_data_value,
    is_inert,
    isinstance_of,
    join,
    join_all,
    positional,
    tuple_method,
    type_of_value,
)
from gibbous.infer.typerules.sampling import evaluate_on_samples
from gibbous.infer.typerules.numbers import OPERATOR_RULES, sequence_item
from gibbous.infer.typerules.numpy import (
    ARRAY_ATTRIBUTES,
    CONCATENATORS,
    array_getitem,
    concatenator_getitem,
)

RULES = RuleList()

Rule = t.Callable[[tuple[T.Type, ...], dict[str, T.Type]], T.Type]

# --------------------------------------------------------------------------------------------
# Iteration


def iter_item(ty: T.Type) -> T.Type | None:
    """The type of the elements ``for v in x`` gives, or ``None`` if unknown."""
    found = sequence_item(ty)
    if found is not None:
        return found
    match ty:
        case T.Array(ndim=ndim) if ndim != 0:
            return array_getitem(ty, EXACT_INT)
        case T.Object(cls=cls) if cls is range:
            return EXACT_INT
    return None


@RULES(builtins.iter)
def _iter(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if kwargs or len(args) != 1:
        return T.ANY  # iter(callable, sentinel)
    x = args[0]
    if isinstance(x, Iter) and x.cls not in VIEW_CLASSES:
        return x  # an iterator is its own iterator
    item = iter_item(x)
    return T.ANY if item is None else Iter(item)


@RULES(builtins.next)
def _next(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if kwargs or not args or len(args) > 2 or not isinstance(args[0], Iter):
        return T.ANY
    if args[0].cls in VIEW_CLASSES:
        return T.ANY  # views are not iterators: TypeError
    return args[0].item if len(args) == 1 else join(args[0].item, args[1])


@RULES(builtins.zip)
def _zip(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if set(kwargs) - {"strict"}:
        return T.ANY
    items = [iter_item(a) for a in args]
    return Iter(T.Tuple(tuple(T.ANY if i is None else i for i in items)), zip)


@RULES(builtins.enumerate)
def _enumerate(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    bound = positional(args, kwargs, ("iterable", "start"))
    if bound is None or "iterable" not in bound:
        return T.ANY
    item = iter_item(bound["iterable"])
    start = bound.get("start", T.Const(0))
    count = EXACT_INT if exact_int_dtype(start) == "int64" else T.INT
    return Iter(T.Tuple((count, T.ANY if item is None else item)), enumerate)


@RULES(builtins.reversed)
def _reversed(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if kwargs or len(args) != 1:
        return T.ANY
    x = args[0]
    reversible = isinstance(x, (T.Tuple, T.List, T.Str, T.Dict, T.Array)) or (
        isinstance(x, T.Object) and x.cls is range
    ) or (isinstance(x, T.Const) and type(x.value) in (tuple, str))
    item = iter_item(x) if reversible else None
    return T.ANY if item is None else Iter(item)


@RULES(builtins.range, fold=True)
def _range(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.Object(range)


@RULES(builtins.slice, fold=True)
def _slice(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.Object(slice)


@RULES(builtins.sorted)
def _sorted(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if len(args) != 1 or set(kwargs) - {"key", "reverse"}:
        return T.ANY
    item = iter_item(args[0])
    return T.List(T.ANY if item is None else item)


# --------------------------------------------------------------------------------------------
# Constructors


@RULES(builtins.tuple, fold=True)
def _tuple(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if kwargs or len(args) > 1:
        return T.ANY
    if not args:
        return T.Const(())
    x = args[0]
    match x:
        case T.Tuple(items=items, cls=cls) if tuple_method(cls, "__iter__"):
            return T.Tuple(items)
        case T.Const(value=value) if type(value) is tuple:
            return x
    return T.Object(tuple)  # a length we do not know


def _collection(make: t.Callable[[T.Type], T.Type]) -> Rule:
    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        if kwargs or len(args) > 1:
            return T.ANY
        if not args:
            return make(T.BOTTOM)
        item = iter_item(args[0])
        return make(T.ANY if item is None else item)

    return rule


RULES.add([builtins.list], _collection(T.List))
RULES.add([builtins.set], _collection(T.Set))


@RULES(builtins.frozenset)
def _frozenset(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.Object(frozenset)


def pair_types(item: T.Type) -> tuple[T.Type, T.Type]:
    """Key and value types of the pairs ``dict(iterable)`` reads."""
    match item:
        case T.Tuple(items=(k, v)):
            return k, v
        case T.Const(value=(k, v)):
            return const_type(k), const_type(v)
        case T.List(item=kv):
            return kv, kv
        case T.Bottom():
            return T.BOTTOM, T.BOTTOM
    return T.ANY, T.ANY


@RULES(builtins.dict)
def _dict(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if len(args) > 1:
        return T.ANY
    key: T.Type = T.BOTTOM
    value: T.Type = T.BOTTOM
    if args:
        x = args[0]
        if isinstance(x, T.Dict):
            key, value = x.key, x.value
        else:
            item = iter_item(x)
            key, value = pair_types(T.ANY if item is None else item)
    if kwargs:
        key, value = join(key, T.STR), join(value, join_all(kwargs.values()))
    return T.Dict(key, value)


def literal_rule(kind: type) -> Rule:
    """The rule for a helper that builds a ``kind`` literal from its positional arguments.

    For ``dict`` the arguments alternate keys and values.  The frontend's literal helpers
    register with ``register_type_rule(helper)(literal_rule(list))``.
    """

    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        if kwargs:
            return T.ANY
        if kind is tuple:
            return T.Tuple(args)
        if kind is list:
            return T.List(join_all(args))
        if kind is set:
            return T.Set(join_all(args))
        if kind is dict and len(args) % 2 == 0:
            return T.Dict(join_all(args[0::2]), join_all(args[1::2]))
        return T.ANY

    return rule


# --------------------------------------------------------------------------------------------
# Items


def _int_like(ty: T.Type) -> bool:
    return exact_int_dtype(ty) is not None or isinstance(ty, (T.Int, T.Bool)) or (
        isinstance(ty, T.Const) and isinstance(ty.value, (builtins.bool, np.bool_))
    )


def _slice_like(ty: T.Type) -> bool:
    return (isinstance(ty, T.Const) and type(ty.value) is slice) or (
        isinstance(ty, T.Object) and ty.cls is slice
    )


def tuple_getitem(items: tuple[T.Type, ...], index: T.Type) -> T.Type:
    if isinstance(index, T.Const) and is_data_value(index.value):
        try:
            picked = items[t.cast(t.Any, index.value)]
        except (IndexError, TypeError):
            return T.ANY
        return T.Tuple(picked) if isinstance(picked, tuple) else picked
    if _int_like(index) and items:
        return join_all(items)
    if _slice_like(index):
        return T.Object(tuple)
    return T.ANY


def _plain_tuple_items(ty: T.Type) -> tuple[T.Type, ...] | None:
    match ty:
        case T.Tuple(items=items, cls=cls) if tuple_method(cls, "__getitem__"):
            return items
        case T.Const(value=value) if type(value) is tuple:
            return tuple(const_type(v) for v in value)
    return None


@RULES(operator.getitem, fold=True)
def getitem(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if kwargs or len(args) != 2:
        return T.ANY
    x, index = args
    items = _plain_tuple_items(x)
    if items is not None:
        return tuple_getitem(items, index)
    match x:
        case T.Array():
            return array_getitem(x, index)
        case T.List(item=item):
            return item if _int_like(index) else x if _slice_like(index) else T.ANY
        case T.Dict(value=value):
            return value
        case T.Str():
            return T.STR if _int_like(index) or _slice_like(index) else T.ANY
        case T.Const(value=str()):
            return T.STR if _int_like(index) or _slice_like(index) else T.ANY
        case T.Object(cls=cls) if cls is range:
            return EXACT_INT if _int_like(index) else x if _slice_like(index) else T.ANY
        case T.Object(cls=cls) if cls in CONCATENATORS:
            return concatenator_getitem(cls, index)
    return T.ANY


@RULES(operator.setitem, operator.delitem, stores=True)
def _setitem(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.NONE  # operator.setitem returns None whatever __setitem__ returns


@RULES(builtins.len, fold=True)
def _len(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if len(args) == 1 and not kwargs:
        x = args[0]
        if isinstance(x, T.Tuple) and tuple_method(x.cls, "__len__"):
            return T.Const(len(x.items))
    return EXACT_INT  # len() returns an exact int whatever __len__ returns


# --------------------------------------------------------------------------------------------
# Reductions over iterables


@RULES(builtins.min, builtins.max, fold=True)
def _min_max(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    # min and max return one of the values they compare, unconverted.
    if set(kwargs) - {"key", "default"}:
        return T.ANY
    if len(args) >= 2:
        return T.ANY if "default" in kwargs else join_all(args)
    if len(args) != 1:
        return T.ANY
    item = iter_item(args[0])
    if item is None:
        return T.ANY
    return join(item, kwargs["default"]) if "default" in kwargs else item


_SUM_ROUNDS = 4


@RULES(builtins.sum, fold=True)
def _sum(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    add = OPERATOR_RULES[operator.add]
    bound = positional(args, kwargs, ("iterable", "start"))
    if bound is None or "iterable" not in bound:
        return T.ANY
    total: T.Type = bound.get("start", T.Const(0))
    items = _plain_tuple_items(bound["iterable"])
    if items is not None:  # a known number of terms: add them up in order
        for item in items:
            total = add((total, item), {})
        return total
    element = iter_item(bound["iterable"])
    if element is None:
        return T.ANY
    # Any number of terms, none included: the fixpoint of total = total | total + item.
    for _ in range(_SUM_ROUNDS):
        grown = join(total, add((total, element), {}))
        if grown == total:
            return total
        total = grown
    return T.ANY


@RULES(builtins.any, builtins.all, builtins.callable, builtins.hasattr, builtins.issubclass)
def _predicate(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.BOOL


@RULES(builtins.isinstance)
def _isinstance(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if kwargs or len(args) != 2:
        return T.ANY
    x, cls = args
    if isinstance(cls, T.Tuple) and cls.cls is tuple and all(isinstance(c, T.Const) for c in cls.items):
        # (``isinstance(z, (tuple, list))``: the frontend builds the tuple of classes)
        cls = T.Const(tuple(t.cast(T.Const, c).value for c in cls.items))
    if isinstance(cls, T.Const) and _is_class_or_classes(cls.value):
        known = isinstance_of(x, t.cast(type | tuple[type, ...], cls.value))
        if known is not None:
            return T.Const(known)
    return T.BOOL


def _is_class_or_classes(value: object) -> bool:
    if isinstance(value, tuple):
        return all(map(_is_class_or_classes, value))
    return isinstance(value, type)


@RULES(builtins.type)
def _type(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if len(args) == 1 and not kwargs:
        found = classes_of(args[0])
        if found is not None and len(found[0]) == 1 and not found[1]:
            return const_type(next(iter(found[0])))
    return T.Object(type)


@RULES(t.cast)
def _cast(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    # typing.cast returns its value unchanged; type inference uses it to narrow a value.
    return args[1] if len(args) == 2 and not kwargs else T.ANY


@RULES(builtins.print, builtins.setattr, builtins.delattr)
def _none(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.NONE


@RULES(builtins.repr, builtins.ascii, builtins.format)
def _text(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.STR if all(map(is_inert, args)) else T.Object(str)


# --------------------------------------------------------------------------------------------
# Attributes and methods


@RULES(builtins.getattr)
def _getattr(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if kwargs or len(args) not in (2, 3):
        return T.ANY
    name = args[1]
    if not isinstance(name, T.Const) or type(name.value) is not str:
        return T.ANY
    found = attribute_type(args[0], name.value)
    return join(found, args[2]) if len(args) == 3 else found


_PLAIN_METHODS = (
    pytypes.FunctionType,
    pytypes.MethodDescriptorType,
    pytypes.WrapperDescriptorType,
)


def exact_class(ty: T.Type) -> type | None:
    """The class of every value of ``ty``, subclasses excluded, where there is one."""
    found = classes_of(ty)
    if found is None:
        return None
    classes, open_ = found
    if len(classes) != 1:
        return None
    (cls,) = classes
    if open_ and cls.__flags__ & (1 << 10):  # Py_TPFLAGS_BASETYPE: subclasses may exist
        return None
    return cls


def method_of(ty: T.Type, name: str) -> object | None:
    """``type(x).name`` if it is a plain method that no instance of ``ty`` can shadow."""
    cls = exact_class(ty)
    if cls is None:
        return None
    try:
        attr = inspect.getattr_static(cls, name)
    except AttributeError:
        return None
    if not isinstance(attr, _PLAIN_METHODS):
        return None
    if isinstance(ty, T.Const) and name in getattr(ty.value, "__dict__", {}):
        return None  # an instance attribute shadows the method
    return attr


def attribute_type(obj: T.Type, name: str) -> T.Type:
    """The type of ``obj.name``."""
    if isinstance(obj, T.Const) and _frozen_namespace(obj.value):
        return _frozen_attribute(obj.value, name)
    method = method_of(obj, name)
    if method is not None:
        return BoundMethod(obj, method)
    if isinstance(obj, T.Array) and name in ARRAY_ATTRIBUTES:
        return ARRAY_ATTRIBUTES[name](obj)
    if isinstance(obj, (T.Bool, T.Int, ExactInt, T.Float, T.Complex)) and not name.startswith("__"):
        # Attributes of numbers (.real, .imag, .shape) depend on their class only.
        found = evaluate_on_samples(getattr, (obj, T.Const(name)), {})
        return T.ANY if found is None else found
    return T.ANY


def _frozen_namespace(value: object) -> bool:
    return isinstance(value, pytypes.ModuleType) or (
        isinstance(value, type) and type(value) is type
    )


_FROZEN_KINDS = (
    pytypes.ModuleType,
    type,
    pytypes.FunctionType,
    pytypes.BuiltinFunctionType,
    pytypes.MethodDescriptorType,
    pytypes.WrapperDescriptorType,
    pytypes.ClassMethodDescriptorType,
    np.ufunc,
    type(np.sum),
)


def _frozen_attribute(namespace: object, name: str) -> T.Type:
    """``namespace.name`` for a module or class: constant if it is a function, class or module.

    Like globals, these are frozen when the rule is built (numpy.sum, numpy.ndarray.sum).
    Data attributes are read at run time and may have been rebound (a counter, a setting), so
    their type is unknown.
    """
    try:
        value = inspect.getattr_static(namespace, name)
    except AttributeError:
        return T.ANY
    if isinstance(value, (staticmethod, classmethod)) or not isinstance(value, _FROZEN_KINDS):
        return T.ANY
    return const_type(getattr(namespace, name))


# Methods of builtin containers, called with the container first.


def _same_container(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return args[0] if args and isinstance(args[0], (T.List, T.Dict, T.Set)) else T.ANY


def _returns(ty: T.Type) -> Rule:
    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        return ty

    return rule


RULES.add([list.append, list.extend, list.insert, set.add, set.update, dict.update], _returns(T.NONE), stores=True)
RULES.add(
    [list.remove, list.clear, list.reverse, list.sort, set.discard, set.remove, set.clear, dict.clear],
    _returns(T.NONE),
)
RULES.add([list.index, list.count, tuple.index, tuple.count], _returns(EXACT_INT))
RULES.add([list.copy, set.copy, dict.copy], _same_container)


@RULES(list.pop, set.pop)
def _pop(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if args and isinstance(args[0], (T.List, T.Set)):
        return args[0].item
    return T.ANY


def _dict_value_or(default: T.Type) -> Rule:
    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        if kwargs or not args or not isinstance(args[0], T.Dict) or len(args) > 3:
            return T.ANY
        return join(args[0].value, args[2] if len(args) == 3 else default)

    return rule


RULES.add([dict.get], _dict_value_or(T.NONE))
RULES.add([dict.setdefault], _dict_value_or(T.NONE), stores=True)
RULES.add([dict.pop], _dict_value_or(T.BOTTOM))  # without a default a missing key raises


@RULES(dict.popitem)
def _popitem(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if args and isinstance(args[0], T.Dict):
        return T.Tuple((args[0].key, args[0].value))
    return T.ANY


def _view(pick: t.Callable[[T.Dict], T.Type], cls: type) -> Rule:
    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        if len(args) == 1 and not kwargs and isinstance(args[0], T.Dict):
            return Iter(pick(args[0]), cls)
        return T.ANY

    return rule


RULES.add([dict.keys], _view(lambda d: d.key, VIEW_CLASSES[0]))
RULES.add([dict.values], _view(lambda d: d.value, VIEW_CLASSES[1]))
RULES.add([dict.items], _view(lambda d: T.Tuple((d.key, d.value)), VIEW_CLASSES[2]))


def _set_combination(keep_others: bool) -> Rule:
    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        if kwargs or not args or not isinstance(args[0], T.Set):
            return T.ANY
        item = args[0].item
        if keep_others:
            for other in args[1:]:
                found = iter_item(other)
                item = join(item, T.ANY if found is None else found)
        return T.Set(item)

    return rule


RULES.add([set.union, set.symmetric_difference], _set_combination(True))
RULES.add([set.intersection, set.difference], _set_combination(False))
RULES.add([set.issubset, set.issuperset, set.isdisjoint], _returns(T.BOOL))

_STR_TO_STR = """
    upper lower strip lstrip rstrip replace capitalize title casefold swapcase center ljust
    rjust zfill expandtabs removeprefix removesuffix join format format_map
""".split()
_STR_TO_BOOL = """
    startswith endswith isdigit isalpha isalnum isspace isupper islower istitle isdecimal
    isnumeric isidentifier isprintable isascii
""".split()
_STR_TO_INT = "find rfind index rindex count".split()
_STR_TO_LIST = "split rsplit splitlines".split()

RULES.add([getattr(str, n) for n in _STR_TO_STR], _returns(T.STR))
RULES.add([getattr(str, n) for n in _STR_TO_BOOL], _returns(T.BOOL))
RULES.add([getattr(str, n) for n in _STR_TO_INT], _returns(EXACT_INT))
RULES.add([getattr(str, n) for n in _STR_TO_LIST], _returns(T.List(T.STR)))

