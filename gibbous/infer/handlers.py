"""Container-aware handlers: calls whose type depends on the containers' sites.

A type rule sees values; for a call that stores into a list, reads a dict or makes a new set,
inference needs more: which sites the container may come from and what they hold.  A handler
is tried before the type rule of the functions it is registered for, and returns None to leave
the call to that rule.
"""

from __future__ import annotations

import operator
import types as pytypes
import typing as t

from gibbous.ir import types as T
from gibbous.ir.core import Call, Constant, Result, Value
from gibbous.ir.names import CallableTable
from gibbous.infer.abstract import (
    SLOTS,
    OrStop,
    Ref,
    _int_like,
    _plain_items,
    _ref,
    _slice_like,
)
from gibbous.infer.typerules import runtime
from gibbous.infer.typerules.table import BoundMethod, Iter, result_type
from gibbous.infer.typerules.base import VIEW_CLASSES, is_data_value, is_inert
from gibbous.infer.typerules.containers import attribute_type

if t.TYPE_CHECKING:
    from gibbous.infer.interpreter import Inference

R = runtime.runtime  # the frontend's helpers, reached through their rules


Handler = t.Callable[["Inference", Call, object, list[T.Type], dict[str, T.Type]], T.Type | None]
_HANDLERS: CallableTable[object, Handler] = CallableTable()


def _handles(*callables: object) -> t.Callable[[Handler], Handler]:
    """Register a container-aware handler, tried before the type rule of ``callables``."""

    def register(handler: Handler) -> Handler:
        for fn in callables:
            _HANDLERS[fn] = handler
        return handler

    return register


def _handler(fn: object) -> Handler | None:
    return _HANDLERS.get(fn)


def has_handler(fn: object) -> bool:
    """Whether inference has a container-aware handler for calls of ``fn``."""
    return fn in _HANDLERS


# --------------------------------------------------------------------------------------------
# Container-aware handlers: where a rule's view of values is not enough.  Each returns None to
# leave the call to its type rule.


@_handles(getattr)
def _getattr(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 2 or kwargs or not isinstance(args[1], T.Const):
        return None
    name = args[1].value
    if type(name) is not str:
        return None
    made = super_call(op.args[0])
    if made is not None:  # ``super(C, obj).name``: the method after C in obj's class's MRO
        obj = inf.value(made.args[1])
        function = super_attribute(made.args[0], T.python_class(inf.resolve(obj)), name)
        return None if function is None else BoundMethod(obj, function)
    found = attribute_type(inf.resolve(args[0]), name)
    if isinstance(found, BoundMethod):
        return BoundMethod(args[0], found.function)  # keep the receiver's sites
    return None


def super_call(v: Value) -> Call | None:
    """The call ``super(C, obj)`` that made ``v``, with ``C`` known when the IR was built (the
    frontend's ``super()``: the ``__class__`` cell)."""
    if not (isinstance(v, Result) and isinstance(v.op, Call)):
        return None
    op = v.op
    ok = isinstance(op.callee, Constant) and op.callee.value is super and len(op.args) == 2
    return op if ok and isinstance(op.args[0], Constant) and not op.kwargs else None


def super_attribute(cls: Value, own: type | None, name: str) -> object | None:
    """The plain function (or slot of a builtin class) ``super(cls, obj).name`` binds, for
    ``obj`` of class ``own``: from the first class after ``cls`` in ``own``'s MRO whose
    namespace has ``name``."""
    start = t.cast(Constant, cls).value
    if own is None or not isinstance(start, type) or start not in own.__mro__:
        return None
    mro = own.__mro__
    for k in mro[mro.index(start) + 1 :]:
        if name in vars(k):
            found = vars(k)[name]
            plain = (pytypes.FunctionType, pytypes.WrapperDescriptorType, pytypes.MethodDescriptorType)
            return found if isinstance(found, plain) else None  # (``object.__init__`` too)
    return None


@_handles(super)
def _super(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    """A super object keeps ``obj`` for the methods it binds, and runs no code of its own."""
    return T.Object(super) if super_call(op.result) is not None else None


@_handles(operator.getitem)
def _getitem(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 2 or kwargs:
        return None
    x, index = args
    items = _plain_items(x)
    if items is not None:
        if isinstance(index, T.Const) and is_data_value(index.value):
            try:
                picked = items[t.cast(t.Any, index.value)]
            except (IndexError, TypeError):
                return T.ANY
            return T.Tuple(picked) if isinstance(picked, tuple) else picked
        return inf.join_all(items) if _int_like(index) and items else None
    if (lst := _ref(x, list)) is not None:
        if _int_like(index):
            return inf.slot(lst, 0)
        if _slice_like(index):
            return inf.fresh(op, list, [inf.slot(lst, 0)])
        return None
    if (d := _ref(x, dict)) is not None:
        return inf.slot(d, 1)
    return None


@_handles(operator.setitem)
def _setitem(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 3 or kwargs:
        return None
    x, index, value = args
    if (lst := _ref(x, list)) is not None and (_int_like(index) or _slice_like(index)):
        stored = value if _int_like(index) else inf.element_or_escape(value)
        for s in lst.sites:
            inf.store(s, 0, stored)
        return T.NONE
    if (d := _ref(x, dict)) is not None:
        for s in d.sites:
            inf.store(s, 0, index)
            inf.store(s, 1, value)
        return T.NONE
    if isinstance(x, T.Array) and is_inert(x):
        return T.NONE  # a numeric array copies the values: it keeps no reference
    return None


@_handles(operator.delitem)
def _delitem(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) == 2 and (_ref(args[0], list) or _ref(args[0], dict)):
        return T.NONE  # removing elements never widens a type
    return None


@_handles(operator.iadd, operator.iconcat, list.extend)
def _extend(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 2 or kwargs or (lst := _ref(args[0], list)) is None:
        return None
    stored = inf.element_or_escape(args[1])
    for s in lst.sites:
        inf.store(s, 0, stored)
    return T.NONE if fn is list.extend else lst


@_handles(operator.imul)
def _repeat_in_place(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) == 2 and _ref(args[0], list) and _int_like(args[1]):
        return args[0]
    return None


@_handles(operator.add, operator.concat)
def _concatenate(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 2 or kwargs:
        return None
    a, b = args
    if (la := _ref(a, list)) is not None and (lb := _ref(b, list)) is not None:
        return inf.fresh(op, list, [inf.join(inf.slot(la, 0), inf.slot(lb, 0))])
    ia, ib = _plain_items(a), _plain_items(b)
    if ia is not None and ib is not None and inf.reach(a, b):
        return T.Tuple(ia + ib)  # keep the containers inside (without them the rule does it)
    return None


@_handles(operator.mul)
def _repeat(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 2 or kwargs:
        return None
    for seq, count in (args, args[::-1]):
        if (lst := _ref(seq, list)) is not None and _int_like(count):
            return inf.fresh(op, list, [inf.slot(lst, 0)])
    return None


def _collection(kind: type) -> Handler:
    def handler(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
        if kwargs or len(args) > 1:
            return None
        return inf.fresh(op, kind, [inf.element_or_escape(args[0]) if args else T.BOTTOM])

    return handler


_handles(list)(_collection(list))
_handles(set)(_collection(set))


def _literal(kind: type) -> Handler:
    def handler(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
        if kwargs:
            return None
        if kind is tuple:
            return T.Tuple(tuple(args))
        if kind is dict:
            if len(args) % 2:
                return None
            return inf.fresh(op, dict, [inf.join_all(args[0::2]), inf.join_all(args[1::2])])
        return inf.fresh(op, kind, [inf.join_all(args)])

    return handler


_handles(R.make_tuple)(_literal(tuple))
_handles(R.make_list)(_literal(list))
_handles(R.make_set)(_literal(set))
_handles(R.make_dict)(_literal(dict))


@_handles(R.make_locals)
def _make_locals(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    unbound = T.Const(R.UNBOUND)
    values = [v for v in args[1::2] if v != unbound]
    return inf.fresh(op, dict, [T.STR, inf.join_all(values) if values else T.BOTTOM])


@_handles(tuple)
def _tuple(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) == 1 and not kwargs and isinstance(args[0], T.Tuple):
        items = _plain_items(args[0])
        return None if items is None else T.Tuple(items)
    return None


def _pairs(inf: Inference, source: T.Type) -> tuple[T.Type, T.Type]:
    """Key and value types of what ``dict(source)`` or ``d.update(source)`` stores."""
    if (d := _ref(source, dict)) is not None:
        return inf.slot(d, 0), inf.slot(d, 1)
    item = inf.element_or_escape(source)
    match item:
        case T.Tuple(items=(key, value)):
            return key, value
        case Ref(kind=k) if k is list:
            return inf.slot(item, 0), inf.slot(item, 0)
        case T.Bottom():
            return T.BOTTOM, T.BOTTOM
    inf.escape(item)
    return T.ANY, T.ANY


def _merged(inf: Inference, args: list[T.Type], kwargs: dict[str, T.Type]) -> tuple[T.Type, T.Type]:
    key: T.Type = T.BOTTOM
    value: T.Type = T.BOTTOM
    for source in args:
        k, v = _pairs(inf, source)
        key, value = inf.join(key, k), inf.join(value, v)
    if kwargs:
        key, value = inf.join(key, T.STR), inf.join(value, inf.join_all(kwargs.values()))
    return key, value


@_handles(dict)
def _dict(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) > 1:
        return None
    return inf.fresh(op, dict, list(_merged(inf, args, kwargs)))


@_handles(dict.update, R.dict_merge)
def _update(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if not args or (d := _ref(args[0], dict)) is None or len(args) > 2:
        return None
    key, value = _merged(inf, args[1:], kwargs)
    for s in d.sites:
        inf.store(s, 0, key)
        inf.store(s, 1, value)
    return T.NONE


@_handles(R.unpack)
def _unpack(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 2 or kwargs or not isinstance(args[1], T.Const):
        return None
    n = t.cast(int, args[1].value)
    items = _plain_items(args[0])
    if items is not None:
        return T.Tuple(items) if len(items) == n else T.ANY  # another length raises
    found = inf.element(args[0])
    return None if found is None else T.Tuple((found,) * n)


@_handles(R.unpack_ex)
def _unpack_ex(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 3 or kwargs or not all(isinstance(a, T.Const) for a in args[1:]):
        return None
    before, after = (t.cast(int, t.cast(T.Const, a).value) for a in args[1:])
    found = inf.element(args[0])
    if found is None:
        return None
    return T.Tuple((found,) * before + (inf.fresh(op, list, [found]),) + (found,) * after)


_FRAME = T.Object(R.GeneratorFrame)


@_handles(iter)
def _iter(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 1 or kwargs:
        return None
    x = args[0]
    if x == _FRAME:  # a generator is its own iterator
        return x
    if isinstance(x, Iter):
        return Iter(x.item, source=x.source) if x.cls in VIEW_CLASSES else x
    found = inf.element(x)
    return None if found is None else Iter(found, source=x)


def _iterator_item(x: T.Type) -> T.Type | None:
    return x.item if isinstance(x, Iter) and x.cls not in VIEW_CLASSES else None


@_handles(next)
def _next(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if kwargs or not args or len(args) > 2 or (item := _iterator_item(args[0])) is None:
        return None
    return item if len(args) == 1 else inf.join(item, args[1])


@_handles(R.next_or_stop)
def _next_or_stop(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 1 or kwargs or (item := _iterator_item(args[0])) is None:
        return None
    return OrStop(item)


@_handles(R.is_stop)
def _is_stop(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) == 1 and isinstance(args[0], OrStop):
        # An iterator over nothing (an empty tuple, a list nothing is ever put in) stops at once.
        return T.Const(True) if isinstance(args[0].item, T.Bottom) else T.BOOL
    return None


@_handles(R.check_bound, t.cast)
def _check_bound(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if fn is t.cast:
        return args[1] if len(args) == 2 and not kwargs else None
    if args and args[0] == T.Const(R.UNBOUND):
        return T.BOTTOM  # always raises: 3.12+ copies code after a `with` onto the path
        # where `__exit__` swallowed the exception, where a local may be certainly unbound
    return args[0] if args else None


@_handles(enumerate)
def _enumerate(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 1 or set(kwargs) - {"start"}:
        return None
    start = kwargs.get("start", T.Const(0))
    count = result_type(T.Const(enumerate), (T.Tuple(()), inf.resolve(start)), {})
    found = inf.element(args[0])
    if found is None or not isinstance(count, Iter) or not isinstance(count.item, T.Tuple):
        return None
    return Iter(T.Tuple((count.item.items[0], found)), enumerate, args[0])


@_handles(zip)
def _zip(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if set(kwargs) - {"strict"}:
        return None
    return Iter(T.Tuple(tuple(inf.element_or_escape(a) for a in args)), zip, T.Tuple(tuple(args)))


@_handles(reversed)
def _reversed(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 1 or kwargs:
        return None
    x = args[0]
    if _ref(x, list) is not None or _plain_items(x) is not None:
        found = inf.element(x)
        return None if found is None else Iter(found, source=x)
    return None


@_handles(sorted)
def _sorted(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 1 or set(kwargs) - {"key", "reverse"}:
        return None
    if not all(is_inert(inf.resolve(v)) for v in kwargs.values()):
        inf.unknown_code(args[0], *kwargs.values())  # a key function sees every element
    return inf.fresh(op, list, [inf.element_or_escape(args[0])])


@_handles(list.append, list.insert, set.add)
def _add_one(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    kind = set if fn is set.add else list
    if kwargs or not args or (c := _ref(args[0], kind)) is None or len(args) != (3 if fn is list.insert else 2):
        return None
    for s in c.sites:
        inf.store(s, 0, args[-1])
    return T.NONE


@_handles(set.update)
def _set_update(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if kwargs or not args or (s_ref := _ref(args[0], set)) is None:
        return None
    for source in args[1:]:
        stored = inf.element_or_escape(source)
        for s in s_ref.sites:
            inf.store(s, 0, stored)
    return T.NONE


@_handles(list.pop, set.pop)
def _pop(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    c = _ref(args[0], list) or _ref(args[0], set) if args else None
    return None if c is None or kwargs else inf.slot(c, 0)


@_handles(list.copy, set.copy, dict.copy)
def _copy(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 1 or kwargs or not isinstance(args[0], Ref):
        return None
    c = args[0]
    return inf.fresh(op, c.kind, [inf.slot(c, i) for i in range(SLOTS[c.kind])])


@_handles(dict.get, dict.pop)
def _dict_get(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if kwargs or not 2 <= len(args) <= 3 or (d := _ref(args[0], dict)) is None:
        return None
    default = args[2] if len(args) == 3 else (T.NONE if fn is dict.get else T.BOTTOM)
    return inf.join(inf.slot(d, 1), default)


@_handles(dict.setdefault)
def _setdefault(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if kwargs or not 2 <= len(args) <= 3 or (d := _ref(args[0], dict)) is None:
        return None
    default = args[2] if len(args) == 3 else T.NONE
    for s in d.sites:
        inf.store(s, 0, args[1])
        inf.store(s, 1, default)
    return inf.slot(d, 1)


@_handles(dict.popitem)
def _popitem(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 1 or kwargs or (d := _ref(args[0], dict)) is None:
        return None
    return T.Tuple((inf.slot(d, 0), inf.slot(d, 1)))


def _view(index: int | None, cls: type) -> Handler:
    def handler(
    inf: Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
        if len(args) != 1 or kwargs or (d := _ref(args[0], dict)) is None:
            return None
        item = T.Tuple((inf.slot(d, 0), inf.slot(d, 1))) if index is None else inf.slot(d, index)
        return Iter(item, cls, d)

    return handler


_handles(dict.keys)(_view(0, VIEW_CLASSES[0]))
_handles(dict.values)(_view(1, VIEW_CLASSES[1]))
_handles(dict.items)(_view(None, VIEW_CLASSES[2]))
