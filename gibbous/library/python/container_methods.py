"""Methods of lists and dicts, and the constructors ``list``, ``tuple``, ``dict``, ``sorted``.

``l.clear()``, ``l.remove(v)``, ``l *= n``, ``d.copy()``, ``d.clear()``, ``d.setdefault(...)``,
``d.popitem()``, ``d | e`` and ``d |= e`` too.

The conventions are those of ``containers``: stored items put their tangent into the
container's tangent, mutations keep what they remove or reorder (by reference) and their
pullbacks put it back, with the tangents the items hold *now* (they may have collected
cotangents since), so containers end as they were, order included.
"""

from __future__ import annotations

import builtins
import operator
import types
import typing as t

from gibbous.infer.implementations import register_twin
from gibbous.library.common import ANY, CD, DICT, LIST, NT, RuleResult, nothing, zero_for
from gibbous.library.items import (
    Items,
    ListItems,
    collapse,
    dict_tangent,
    dict_view_fdata,
    full_tangent,
    list_tangent,
    rdata_tangent,
)
from gibbous.library.python.containers import dict_getitem_rrule
from gibbous.library.python.iteration import consume
from gibbous.rules.registry import primitive, zero_derivative
from gibbous.tangents.model import CoDual, fdata_of, increment, rdata_of, zero_rdata
from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.rules import frules
from gibbous.rules.emit import Emit, item_tangent, like, zero
from gibbous.rules import structure
from gibbous.rules import list_writes
from gibbous.rules.frules import Emit, Tangent, register
from gibbous.rules.emit import ForwardModeError, like

_MISSING = object()


# --------------------------------------------------------------------------------------------
# List methods


@primitive(list.append, LIST, ANY)
def append_rrule(f: CD, x: CD, v: CD) -> RuleResult:
    lst, tangent = x.primal, list_tangent(x)
    f.primal(lst, v.primal)
    tangent.append(full_tangent(v.primal, v.fdata))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        lst.pop()
        return NT, NT, rdata_of(tangent.pop())

    return CoDual(None, NT), pullback


def _extend(x: CD, v: CD) -> tuple[Items, t.Callable[[], None]]:
    """Extend list ``x`` by the items of ``v``; returns v's items and the undo."""
    lst, tangent = x.primal, list_tangent(x)
    items = consume(v)
    values = [items.item(j) for j in range(len(items))]  # before: v may be lst itself
    fdatas = [items.fdata(j) for j in range(len(items))]
    n = len(lst)
    lst.extend(values)
    tangent.extend(full_tangent(value, fd) for value, fd in zip(values, fdatas))

    def undo() -> None:
        for j in range(len(values)):
            items.send_rdata(j, rdata_of(tangent[n + j]))
        del lst[n:], tangent[n:]

    return items, undo


@primitive(list.extend, LIST, ANY)
def extend_rrule(f: CD, x: CD, v: CD) -> RuleResult:
    items, undo = _extend(x, v)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        undo()
        return NT, NT, items.rdata()

    return CoDual(None, NT), pullback


@primitive(operator.iadd, LIST, ANY)
def list_iadd_rrule(f: CD, x: CD, v: CD) -> RuleResult:
    """``l += values``: extends ``l`` in place and returns it."""
    items, undo = _extend(x, v)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        undo()
        return NT, NT, items.rdata()

    return x, pullback


def _insert_position(i: int, n: int) -> int:
    if i < 0:
        i += n
    return min(max(i, 0), n)


@primitive(list.insert, LIST, ANY, ANY)
def insert_rrule(f: CD, x: CD, index: CD, v: CD) -> RuleResult:
    lst, tangent = x.primal, list_tangent(x)
    p = _insert_position(operator.index(index.primal), len(lst))
    f.primal(lst, index.primal, v.primal)
    tangent.insert(p, full_tangent(v.primal, v.fdata))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        del lst[p]
        return NT, NT, NT, rdata_of(tangent.pop(p))

    return CoDual(None, NT), pullback


@primitive(list.pop, LIST, ...)
def pop_rrule(f: CD, x: CD, *index: CD) -> RuleResult:
    lst, tangent = x.primal, list_tangent(x)
    i = operator.index(index[0].primal) if index else -1
    p = i + len(lst) if i < 0 else i
    y = f.primal(lst, *(c.primal for c in index))
    yt = tangent.pop(p)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        lst.insert(p, y)
        tangent.insert(p, increment(yt, rdata_tangent(y, dy)))
        return (NT, NT, *nothing(len(index)))

    return CoDual(y, fdata_of(yt)), pullback


def _permute(lst: list[t.Any], order: t.Sequence[int]) -> None:
    lst[:] = [lst[i] for i in order]


def _unpermute(lst: list[t.Any], order: t.Sequence[int]) -> None:
    restored = list(lst)
    for j, i in enumerate(order):
        restored[i] = lst[j]
    lst[:] = restored


def _sort_order(values: list[t.Any], key: t.Any, reverse: t.Any) -> list[int]:
    """The permutation ``sorted`` applies (stable, as Python's sort): positions, new order."""
    if key is None:
        return sorted(range(len(values)), key=values.__getitem__, reverse=bool(reverse))
    keys = [key(v) for v in values]
    return sorted(range(len(values)), key=keys.__getitem__, reverse=bool(reverse))


def _sort_options(kwargs: t.Mapping[str, CD]) -> tuple[t.Any, t.Any]:
    if set(kwargs) - {"key", "reverse"}:
        raise TypeError(f"sort: unexpected arguments {sorted(kwargs)}")
    none = CoDual(None, NT)
    return kwargs.get("key", none).primal, kwargs.get("reverse", CoDual(False, NT)).primal


@primitive(list.sort, LIST, ...)
def sort_rrule(f: CD, x: CD, **kwargs: CD) -> RuleResult:
    """``l.sort(key=..., reverse=...)``: the items and their tangents move together; the
    ordering is locally constant, so ``key`` gets no gradient."""
    lst, tangent = x.primal, list_tangent(x)
    order = _sort_order(lst, *_sort_options(kwargs))
    _permute(lst, order)
    _permute(tangent, order)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        _unpermute(lst, order)
        _unpermute(tangent, order)
        return (NT, NT, *nothing(len(kwargs)))

    return CoDual(None, NT), pullback


@primitive(list.reverse, LIST)
def reverse_rrule(f: CD, x: CD) -> RuleResult:
    lst, tangent = x.primal, list_tangent(x)
    lst.reverse()
    tangent.reverse()

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        lst.reverse()
        tangent.reverse()
        return NT, NT

    return CoDual(None, NT), pullback


@primitive(list.clear, LIST)
def list_clear_rrule(f: CD, x: CD) -> RuleResult:
    lst, tangent = x.primal, list_tangent(x)
    saved, saved_tangent = lst[:], tangent[:]
    lst.clear()
    tangent.clear()

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        lst[:], tangent[:] = saved, saved_tangent
        return NT, NT

    return CoDual(None, NT), pullback


@primitive(list.remove, LIST, ANY)
def remove_rrule(f: CD, x: CD, v: CD) -> RuleResult:
    """``l.remove(v)``: the first item equal to ``v`` goes (and comes back in the pullback);
    ``v`` only compares, so it gets a zero gradient."""
    lst, tangent = x.primal, list_tangent(x)
    p = lst.index(v.primal)  # the position remove finds (a ValueError as remove raises it)
    item = lst[p]
    f.primal(lst, v.primal)
    item_tangent = tangent.pop(p)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        lst.insert(p, item)
        tangent.insert(p, item_tangent)
        return NT, NT, zero_for(v)

    return CoDual(None, NT), pullback


@primitive(operator.imul, LIST, ANY)
def list_imul_rrule(f: CD, x: CD, n: CD) -> RuleResult:
    """``l *= n``: ``l`` repeated in place (emptied for ``n <= 0``) and returned; each copy of
    an item carries the item's fdata, and its rdata goes back to the item."""
    lst, tangent = x.primal, list_tangent(x)
    k = len(lst)
    saved, saved_tangent = lst[:], tangent[:]
    f.primal(lst, n.primal)
    emptied = len(lst) < k
    items = ListItems(lst, tangent)
    if emptied:
        tangent.clear()
    else:
        tangent.extend(full_tangent(lst[j], items.fdata(j % k)) for j in range(k, len(lst)))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if emptied:
            lst[:], tangent[:] = saved, saved_tangent
            return NT, NT, NT
        for j in range(k, len(lst)):
            items.send_rdata(j % k, rdata_of(tangent[j]))
        del lst[k:], tangent[k:]
        return NT, NT, NT

    return x, pullback


@primitive(builtins.sorted, ANY, ...)
def sorted_rrule(f: CD, x: CD, **kwargs: CD) -> RuleResult:
    items = consume(x)
    values = [items.item(j) for j in range(len(items))]
    order = _sort_order(values, *_sort_options(kwargs))
    tangent = [full_tangent(values[i], items.fdata(i)) for i in order]

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        for i, vt in zip(order, tangent):
            items.send_rdata(i, rdata_of(vt))
        return (NT, items.rdata(), *nothing(len(kwargs)))

    return CoDual([values[i] for i in order], tangent), pullback


def _new_list(f: CD, x: CD) -> RuleResult:
    """``list(x)``, ``l.copy()``: a new list whose tangent holds the items' fdata."""
    items = consume(x)
    values = [items.item(j) for j in range(len(items))]
    tangent = [full_tangent(v, items.fdata(j)) for j, v in enumerate(values)]

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        for j, vt in enumerate(tangent):
            items.send_rdata(j, rdata_of(vt))
        return NT, items.rdata()

    return CoDual(values, tangent), pullback


primitive(builtins.list, ANY)(_new_list)
primitive(list.copy, LIST)(_new_list)


@primitive(builtins.tuple, ANY)
def tuple_rrule(f: CD, x: CD) -> RuleResult:
    if type(x.primal) is tuple:
        return x, lambda dy: (NT, dy)
    items = consume(x)
    y = tuple(items.item(j) for j in range(len(items)))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if dy is not NT:
            for j, d in enumerate(dy):
                items.send_rdata(j, d)
        return NT, items.rdata()

    return CoDual(y, collapse(items.fdata(j) for j in range(len(y)))), pullback
structure.register_structural([builtins.list, builtins.tuple], arrays=True)


# --------------------------------------------------------------------------------------------
# Dicts


@primitive(dict.get, DICT, ANY, ...)
def dict_get_rrule(f: CD, d: CD, key: CD, *default: CD) -> RuleResult:
    k = key.primal
    rest = tuple(zero_for(c) for c in default)  # an unused default gets a zero gradient
    if k in d.primal:
        y, pullback = dict_getitem_rrule(CoDual(operator.getitem, NT), d, key)
        return y, lambda dy: (*pullback(dy), *rest)
    if default:
        return default[0], lambda dy: (NT, NT, NT, dy)
    return CoDual(None, NT), lambda dy: (NT, NT, NT)


@primitive(dict.pop, DICT, ANY, ...)
def dict_pop_rrule(f: CD, d: CD, key: CD, *default: CD) -> RuleResult:
    """``d.pop(k[, default])``; the pullback puts the item back in its place."""
    mapping, tangent, k = d.primal, dict_tangent(d), key.primal
    if k not in mapping:
        f.primal(mapping, k, *(c.primal for c in default))  # gives the default, or KeyError
        return default[0], lambda dy: (NT, NT, NT, dy)
    order = list(mapping)
    y = f.primal(mapping, k)
    yt = tangent.pop(k)
    rest = tuple(zero_for(c) for c in default)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        mapping[k], tangent[k] = y, increment(yt, rdata_tangent(y, dy))
        for table in (mapping, tangent):
            current = [(key_, table[key_]) for key_ in order]
            table.clear()
            table.update(current)
        return (NT, NT, NT, *rest)

    return CoDual(y, fdata_of(yt)), pullback


# --------------------------------------------------------------------------------------------
# Dict views and the dict constructor



@primitive(dict.values, DICT)
@primitive(dict.items, DICT)
def view_rrule(f: CD, d: CD) -> RuleResult:
    """``d.values()``, ``d.items()``: a live view of ``d``, whose fdata is the dict's tangent
    (what the tangent model gives a view, so that items stored later are seen too)."""
    view = f.primal(d.primal)
    return CoDual(view, dict_view_fdata(dict_tangent(d))), lambda dy: (NT, NT)


@primitive(dict.keys, DICT)
def keys_rrule(f: CD, d: CD) -> RuleResult:
    """``d.keys()``: keys carry no tangent (a dict's tangent is keyed by them)."""
    return CoDual(f.primal(d.primal), NT), lambda dy: (NT, NT)


@primitive(builtins.dict, ...)
def dict_rrule(f: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``dict()``, ``dict(mapping)``, ``dict(pairs)``, with keywords: a new dict whose tangent
    holds the values' tangents; the pullback sends their rdata back where they came from."""
    tangent: dict[t.Any, t.Any] = {}
    origin: dict[t.Any, tuple[str, t.Any]] = {}  # key -> where its value came from (the last)
    items: Items | None = None
    source_tangent: dict[t.Any, t.Any] = {}
    pairs: t.Any = ()
    if args:
        source = args[0]
        pairs = source.primal
        if isinstance(source.primal, dict):
            source_tangent = dict_tangent(source)
            for k, v in source.primal.items():
                tangent[k] = full_tangent(v, fdata_of(source_tangent[k]))
                origin[k] = ("mapping", k)
        else:
            items = consume(source)  # before the call: an iterator is consumed once
            pairs = [items.item(i) for i in range(len(items))]
            for i in range(len(items)):
                k, v = items.item(i)
                pair_fdata = items.fdata(i)
                tangent[k] = full_tangent(v, NT if pair_fdata is NT else pair_fdata[1])
                origin[k] = ("pair", i)
    for name, c in kwargs.items():
        tangent[name] = full_tangent(c.primal, c.fdata)
        origin[name] = ("keyword", name)
    y = f.primal(*((pairs,) if args else ()), **{k: v.primal for k, v in kwargs.items()})

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        kw_rdata = {name: zero_rdata(c.primal) for name, c in kwargs.items()}
        for k, (how, where) in origin.items():
            r = rdata_of(tangent[k])
            if r is NT:
                continue
            if how == "mapping":
                source_tangent[where] = increment(source_tangent[where], r)
            elif how == "pair" and items is not None:
                items.send_rdata(where, (NT, r))
            else:
                kw_rdata[where] = r
        first = () if not args else (NT if items is None else items.rdata(),)
        return (NT, *first, *kw_rdata.values())

    return CoDual(y, tangent), pullback


@primitive(dict.update, DICT, ...)
def dict_update_rrule(f: CD, d: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``d.update(other, **kw)`` with a dict or pairs: what it overwrites is kept and put back
    (keys it adds are removed again), and the values' rdata go back where they came from."""
    mapping, tangent = d.primal, dict_tangent(d)
    made, pullback_made = dict_rrule(CoDual(dict, NT), *args, **kwargs)  # the new items
    new, new_tangent = made.primal, made.fdata
    saved = {k: (mapping.get(k, _MISSING), tangent.get(k, _MISSING)) for k in new}
    order = list(mapping)
    f.primal(mapping, new)
    tangent.update(new_tangent)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        for k, (old, old_t) in saved.items():
            new_tangent[k] = tangent[k]  # what the stored values collected goes to their source
            if old is _MISSING:
                del mapping[k], tangent[k]
            else:
                mapping[k], tangent[k] = old, old_t
        for table in (mapping, tangent):  # the keys' order too
            current = [(key_, table[key_]) for key_ in order]
            table.clear()
            table.update(current)
        return (NT, NT, *pullback_made(NT)[1:])

    return CoDual(None, NT), pullback



def _restore_order(order: list[t.Any], *tables: dict[t.Any, t.Any]) -> None:
    """Put the keys of each dict back in ``order`` (they hold the same keys again)."""
    for table in tables:
        current = [(k, table[k]) for k in order]
        table.clear()
        table.update(current)


@primitive(operator.ior, DICT, ANY)
def dict_ior_rrule(f: CD, d: CD, other: CD) -> RuleResult:
    """``d |= other``: ``d.update(other)``, returning ``d``."""
    _, pullback = dict_update_rrule(CoDual(dict.update, NT), d, other)
    return d, pullback


@primitive(operator.or_, DICT, DICT)
def dict_or_rrule(f: CD, a: CD, b: CD) -> RuleResult:
    """``a | b``: a new dict, ``a``'s items updated by ``b``'s."""
    made, pullback_made = dict_rrule(CoDual(dict, NT), a)
    _, pullback_update = dict_update_rrule(CoDual(dict.update, NT), made, b)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        rb = pullback_update(NT)[2]  # b's values' rdata; a's shadowed ones come back as zeros
        return NT, pullback_made(NT)[1], rb

    return made, pullback


@primitive(dict.copy, DICT)
def dict_copy_rrule(f: CD, d: CD) -> RuleResult:
    """``d.copy()``: ``dict(d)``."""
    return dict_rrule(CoDual(dict, NT), d)


@primitive(dict.clear, DICT)
def dict_clear_rrule(f: CD, d: CD) -> RuleResult:
    mapping, tangent = d.primal, dict_tangent(d)
    saved, saved_tangent = dict(mapping), dict(tangent)
    mapping.clear()
    tangent.clear()

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        mapping.update(saved)  # empty again here: the order comes back as it was
        tangent.update(saved_tangent)
        return NT, NT

    return CoDual(None, NT), pullback


@primitive(dict.setdefault, DICT, ANY, ...)
def setdefault_rrule(f: CD, d: CD, key: CD, *default: CD) -> RuleResult:
    """``d.setdefault(k[, default])``: ``d[k]`` if present (then the default gets a zero
    gradient); else stores the default (None without one) and returns it, the stored object
    itself: its gradient is the result's cotangent plus what reached the stored item."""
    mapping, tangent, k = d.primal, dict_tangent(d), key.primal
    if k in mapping:
        y, pullback_get = dict_getitem_rrule(CoDual(operator.getitem, NT), d, key)
        unused = tuple(zero_for(c) for c in default)
        return y, lambda dy: (*pullback_get(dy), *unused)
    value = default[0] if default else CoDual(None, NT)
    y = f.primal(mapping, k, *(c.primal for c in default))
    tangent[k] = full_tangent(y, value.fdata)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        stored = tangent.pop(k)
        del mapping[k]  # the last key: the order is as it was
        if not default:
            return NT, NT, NT
        return NT, NT, NT, rdata_of(increment(stored, rdata_tangent(y, dy)))

    return CoDual(y, value.fdata), pullback


@primitive(dict.popitem, DICT)
def popitem_rrule(f: CD, d: CD) -> RuleResult:
    """``d.popitem()``: the last ``(key, value)``; the pullback puts it back at the end."""
    mapping, tangent = d.primal, dict_tangent(d)
    y = f.primal(mapping)  # KeyError on an empty dict
    k, value = y
    value_tangent = tangent.pop(k)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        r = NT if dy is NT else dy[1]
        mapping[k], tangent[k] = value, increment(value_tangent, rdata_tangent(value, r))
        return NT, NT

    return CoDual(y, collapse((NT, fdata_of(value_tangent)))), pullback


# --------------------------------------------------------------------------------------------
# Forward mode: dicts' methods
#
# Forward rules of dicts' methods: ``d.get(k[, default])``, ``d.items()`` and ``d.values()``
# read the tangent dict at the same keys, in the dict's own order.


def _get(z: t.Any, d: t.Any, k: t.Any, *rest: t.Any) -> t.Any:
    """``d.get(k[, default])``: the tangent at ``k``, else the default's."""
    n = (len(rest) + 2) // 2  # (operands d, k[, default], then their tangents)
    tangents = (d, k, *rest)[n:]
    dd = tangents[0]
    if k in d:
        return like(z, None if dd is None else dd[k])
    return like(z, tangents[2] if n == 3 else None)


def _items(z: t.Any, d: t.Any, dd: t.Any) -> list[tuple[None, t.Any]]:
    """``d.items()``: pairs of no tangent (the key) and the value's, in the dict's order."""
    return [(None, like(v, None if dd is None else dd[k])) for k, v in d.items()]


def _values(z: t.Any, d: t.Any, dd: t.Any) -> list[t.Any]:
    """``d.values()``: the values' tangents, in the dict's order."""
    return [like(v, None if dd is None else dd[k]) for k, v in d.items()]


def _on_dicts(tangent: t.Callable[..., t.Any], most: int) -> frules.Maker:
    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> frules.Tangent | None:
        ok = not kwnames and 0 < len(types) <= most and isinstance(types[0], T.Dict)
        return tangent if ok else None

    return make


frules.register(dict.get, _on_dicts(_get, 3))
frules.register(dict.items, _on_dicts(_items, 1))
frules.register(dict.values, _on_dicts(_values, 1))
for _helper in (_get, _items, _values):
    runtime.register_object(_helper, f"forward_dicts.{_helper.__name__.lstrip('_')}")


# Forward mode runs ``dict(...)`` and ``d.update(...)`` as the Python below (their twins):
# the items stored one at a time, each value with its tangent, as CPython stores them (a
# repeated key keeps its first place and its last value; a source with ``keys()`` is a
# mapping, anything else an iterable of pairs).  Reverse mode keeps its rules.


def pairs_only(source: object) -> None:
    """Refuses, at run time, a mapping other than a dict as the source of ``dict_update``'s
    items (Python reads its ``keys()``; the twin would take its keys for pairs)."""
    if hasattr(type(source), "keys"):
        raise ForwardModeError(
            f"forward mode: dict or dict.update of a {type(source).__name__}, a mapping that "
            "is not a dict: forward mode takes a dict or pairs (pass dict(...) of it)"
        )


zero_derivative(pairs_only, ANY)


def update_from_dict(d: t.Any, source: t.Any, /, **kwargs: t.Any) -> None:
    """``d.update(source, **kwargs)``'s twin in forward mode, ``source`` a dict."""
    for k, v in source.items():
        d[k] = v
    for name, v in kwargs.items():
        d[name] = v


def update_from_pairs(d: t.Any, source: t.Any, /, **kwargs: t.Any) -> None:
    """``d.update(pairs, **kwargs)``'s twin in forward mode (``zip(keys, values)``)."""
    pairs_only(source)
    for k, v in source:
        d[k] = v
    for name, v in kwargs.items():
        d[name] = v


def update_from_keywords(d: t.Any, /, **kwargs: t.Any) -> None:
    """``d.update(**kwargs)``'s twin in forward mode."""
    for name, v in kwargs.items():
        d[name] = v


def dict_of_dict(source: t.Any, /, **kwargs: t.Any) -> dict[t.Any, t.Any]:
    """``dict(mapping, **kwargs)``'s twin in forward mode, the mapping a dict."""
    d: dict[t.Any, t.Any] = {}  # (written here: a callee's write would find it without tangent)
    for k, v in source.items():
        d[k] = v
    for name, v in kwargs.items():
        d[name] = v
    return d


def dict_of_pairs(source: t.Any, /, **kwargs: t.Any) -> dict[t.Any, t.Any]:
    """``dict(pairs, **kwargs)``'s twin in forward mode."""
    pairs_only(source)
    d: dict[t.Any, t.Any] = {}
    for k, v in source:
        d[k] = v
    for name, v in kwargs.items():
        d[name] = v
    return d


def _positional(n: int, dicts: bool | None) -> t.Callable[[tuple[T.Type, ...], tuple[str, ...]], bool]:
    """A twin's choice: ``n`` operands by position (the last a dict, or not one, or either:
    ``dicts``); the rest by keyword."""

    def takes(types: tuple[T.Type, ...], kwnames: tuple[str, ...]) -> bool:
        if len(types) - len(kwnames) != n:
            return False
        return dicts is None or isinstance(types[n - 1], T.Dict) is dicts

    return takes


for _fn, _twin, _takes in [
    (dict.update, update_from_dict, _positional(2, True)),
    (dict.update, update_from_pairs, _positional(2, False)),
    (dict.update, update_from_keywords, _positional(1, None)),
    (builtins.dict, dict_of_dict, _positional(1, True)),
    (builtins.dict, dict_of_pairs, _positional(1, False)),
]:
    register_twin(_fn, t.cast(types.FunctionType, _twin), forward=_takes)


# --------------------------------------------------------------------------------------------
# Forward mode: sorted
#
# Forward mode: ``sorted`` moves the tangents as it moves the values.


def _sorted_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> Tangent | Emit | None:
    """``sorted(xs, key=..., reverse=...)``: the tangents in the order the values took (the
    same stable sort of the positions, by the same key), of a list or tuple."""
    if len(types) - len(kwnames) != 1 or not set(kwnames) <= {"key", "reverse"}:
        return None
    if any(varied[1:]):
        return None

    def tangent(z: t.Any, xs: t.Any, *rest: t.Any, key: t.Any = None, reverse: bool = False) -> t.Any:
        if not isinstance(xs, (list, tuple)):
            raise ForwardModeError(
                f"forward mode: sorted() of a {type(xs).__name__}: its tangent is followed for "
                "a list or a tuple (sort list(...) of it)"
            )
        items = list(xs)
        d = like(items, None if rest[0] is None else list(rest[0]))
        return [d[i] for i in list_writes.sort_order(items, key, reverse)]

    return tangent


register(builtins.sorted, _sorted_make)
