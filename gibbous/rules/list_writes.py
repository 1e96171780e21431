"""Forward mode through the list methods that write: ``append``, ``extend``, ``insert``,
``pop`` run on the list's tangent too, with the item's tangent; ``sort``, ``remove``,
``reverse``, ``clear`` move or drop the tangents as they move or drop the items (one call
doing both, so a key is called once per item).  ``gibbous.rules.inplace_forward`` chooses
these for a call that writes into a list with a tangent."""

from __future__ import annotations

import typing as t

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Value
from gibbous.rules.emit import WriteEmit, item_tangent, item_zeros


#: list methods that write into the list, with the position of the item they put in (None:
#: ``pop`` takes one out)
LIST_WRITES: dict[object, int | None] = {
    list.append: 1,
    list.extend: 1,
    list.insert: 2,
    list.pop: None,
}


def list_write(fn: t.Callable[..., t.Any], item: int | None) -> WriteEmit:
    """``lst.append(x)``, ``lst[i] = x``, ``lst.pop()``... (and a dict's ``d[k] = v``,
    ``d.pop(k)``, ``del d[k]``): the same call on the list's tangent, with the item's tangent
    (zeros where it has none); ``pop`` returns the tangent it took out."""

    def emit(
        b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
    ) -> tuple[Value, Value | None]:
        dl = d[0]
        assert dl is not None  # (the transform gives every written list a tangent)
        targs = [dl, *args[1:]]
        if item is not None and item < len(args):
            if fn is list.extend and d[item] is None:  # (items: zeros, or None for an int)
                targs[item] = b.call(item_zeros, args[item], type=T.List(T.ANY))
            else:
                targs[item] = item_tangent(b, args[item], d[item])
        z = b.call(fn, *args, type=T.ANY)
        dz = b.call(fn, *targs, type=T.ANY)
        return z, dz if fn is list.pop or fn is dict.pop else None

    return emit


def sort_both(xs: list[t.Any], dxs: list[t.Any], key: t.Any = None, reverse: bool = False) -> None:
    """``xs.sort(key=key, reverse=reverse)``, and the tangents put in the order the values
    take: the same stable sort of the positions, by the same key."""
    order = sort_order(xs, key, reverse)
    xs[:] = [xs[i] for i in order]  # (what ``xs.sort`` leaves, the key called once per item)
    dxs[:] = [dxs[i] for i in order]


def sort_order(items: t.Sequence[t.Any], key: t.Any, reverse: bool) -> list[int]:
    """The positions of ``items`` in the order a stable sort by ``key`` puts them (``sorted``,
    ``list.sort``: the same comparisons, so the same permutation)."""
    by = items.__getitem__ if key is None else (lambda i: key(items[i]))
    return sorted(range(len(items)), key=by, reverse=reverse)


def remove_both(xs: list[t.Any], dxs: list[t.Any], value: t.Any) -> None:
    """``xs.remove(value)`` (the first item equal to it) and its tangent, at that position."""
    k = xs.index(value)  # (ValueError, as ``remove`` raises it)
    del xs[k]
    del dxs[k]


def reverse_both(xs: list[t.Any], dxs: list[t.Any]) -> None:
    xs.reverse()
    dxs.reverse()


def clear_both(xs: list[t.Any], dxs: list[t.Any]) -> None:
    xs.clear()
    dxs.clear()


#: list methods that reorder or drop items, and the call doing it on the list and its tangent
LIST_ORDERS: dict[object, t.Callable[..., None]] = {
    list.sort: sort_both, list.remove: remove_both, list.reverse: reverse_both,
    list.clear: clear_both,
}  # fmt: skip
for _both in LIST_ORDERS.values():
    runtime.register_object(_both, f"forward_writes.{_both.__name__}")


def list_order(both: t.Callable[..., None]) -> WriteEmit:
    """``xs.sort()``, ``xs.remove(v)``, ...: one call doing it to the list and its tangent."""

    def emit(
        b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
    ) -> tuple[Value, Value | None]:
        dl = d[0]
        assert dl is not None  # (the transform gives every written list a tangent)
        z = b.call(both, args[0], dl, *args[1:], kwargs=kwargs, type=T.NONE)
        return z, None

    return emit


