"""The items of a container, with their tangents: one interface for tuples, lists, arrays and
dict views, used by every rule that takes a container apart (iteration, unpacking, ``sum``,
``np.array`` of nested lists, ``concatenate``...).

``items_of(primal, fdata)`` gives an ``Items``:

* ``item(i)`` and ``fdata(i)``: the i-th item and its fdata (for an array of two or more axes,
  the row view of the array's fdata; for a list, the fdata part of the list's tangent item);
* ``send(i, g)``: give item i the gradient ``g`` (shaped like the item): added into an array's
  fdata, or accumulated as the rdata of a scalar or tuple item;
* ``send_rdata(i, r)``: accumulate rdata ``r`` for item i;
* ``rdata()``: the container's own rdata after the sends: for a tuple, the tuple of its items'
  accumulated rdata; ``NoTangent()`` for the others (their tangents live in their fdata, where
  the sends went).

``send_to_value(x, g)`` gives a gradient shaped like ``np.asarray(x)`` to a scalar or (nested)
list/tuple operand ``x``, and ``as_array(x)`` makes that array with its own fdata: NumPy
functions that take "array-likes" convert them so, and their rules convert them the same way
and run the array's rule (``np.sum([a * a, b])``, ``np.average(x, weights=[u, v])``).
"""

from __future__ import annotations

import collections.abc
import typing as t

import attrs
import numpy as np

from gibbous.library.common import (
    CD,
    NT,
    Array,
    add_into,
    is_inexact_scalar,
    needs,
    new_fdata,
    scalar_rdata,
    send,
    zero_for,
)
from gibbous.tangents.model import (
    CoDual,
    NoTangent,
    Tangent,
    fdata_of,
    increment,
    is_differentiable,
    tangent_from,
    zero_fdata,
    zero_rdata,
)


def list_tangent(x: CoDual[t.Any, t.Any]) -> list[t.Any]:
    """The tangent of a list operand.

    The AD pass gives values that are not active (constants nothing is written into, values no
    derivative flows through) ``NoTangent()`` fdata.  For those a throwaway tangent of zero
    rdata stands in, so that a rule runs the same way; what reaches it is dropped, and by
    activity nothing that matters does.
    """
    fd = x.fdata
    return fd if isinstance(fd, list) else [zero_rdata(v) for v in x.primal]


def dict_tangent(d: CoDual[t.Any, t.Any]) -> dict[t.Any, t.Any]:
    """The tangent of a dict operand (a throwaway for an inactive one, as ``list_tangent``)."""
    fd = d.fdata
    return fd if isinstance(fd, dict) else {k: zero_rdata(v) for k, v in d.primal.items()}


def collapse(parts: t.Iterable[t.Any]) -> t.Any:
    """A tuple of tangent parts, or ``NoTangent()`` if every part is (as tangents.py does)."""
    parts = tuple(parts)
    return NT if all(p is NT for p in parts) else parts


def rdata_tangent(x: object, r: t.Any) -> t.Any:
    """The tangent of ``x`` that is ``r`` in its rdata and zero (nothing) in its fdata."""
    return NT if r is NT else tangent_from(x, NT, r)


def full_tangent(x: object, fdata: t.Any) -> t.Any:
    """The tangent of ``x`` a container holds for it: its fdata and zero rdata (a float stored
    in a list starts with a zero tangent of its own there)."""
    return tangent_from(x, fdata, zero_rdata(x))


@attrs.frozen
class Throwaway:
    """The state of a rule that gives a constant (a class attribute, what an inactive object or
    cell holds) a throwaway fdata of the tangent model's kind: a float array's zero buffer is
    kept here per slot and zeroed again on each call, so a warm call allocates no array
    (docs/rules.md: a rule whose primal allocates none allocates none).  Other values get
    ``zero_fdata`` (arrays inside containers are not kept)."""

    buffers: dict[t.Hashable, Array] = attrs.field(factory=dict)

    def fdata(self, slot: t.Hashable, value: object) -> t.Any:
        if not (isinstance(value, np.ndarray) and value.dtype.kind in "fc"):
            return zero_fdata(value)
        buffer = self.buffers.get(slot)
        if buffer is not None and (buffer.shape, buffer.dtype, buffer.strides) == (
            value.shape,
            value.dtype,
            value.strides,
        ):
            buffer.fill(0)  # a pullback of the last call may have added into it
            return buffer
        buffer = self.buffers[slot] = zero_fdata(value)  # laid out as the value
        return buffer


def throwaway_state(state: Throwaway | None) -> Throwaway:
    return Throwaway() if state is None else state


class Items:
    """See the module docstring."""

    def __len__(self) -> int:
        raise NotImplementedError

    def item(self, i: int) -> t.Any:
        raise NotImplementedError

    def fdata(self, i: int) -> t.Any:
        return NT

    def send_rdata(self, i: int, r: t.Any) -> None:
        pass

    def rdata(self) -> t.Any:
        return NT

    def send(self, i: int, g: t.Any) -> None:
        if g is None:
            return
        v = self.item(i)
        if isinstance(v, np.ndarray):
            fd = self.fdata(i)
            if isinstance(fd, np.ndarray):
                add_into(fd, g)
        elif isinstance(v, (tuple, list)):
            sub = items_of(v, self.fdata(i))
            for j in range(len(sub)):
                sub.send(j, g[j])
            self.send_rdata(i, sub.rdata())
        elif is_inexact_scalar(v):
            self.send_rdata(i, scalar_rdata(v, g))


@attrs.define(eq=False)
class TupleItems(Items):
    primal: tuple[t.Any, ...]
    fd: t.Any
    acc: list[t.Any] | None = None  # the items' rdata, made on the first send

    def __len__(self) -> int:
        return len(self.primal)

    def item(self, i: int) -> t.Any:
        return self.primal[i]

    def fdata(self, i: int) -> t.Any:
        return NT if self.fd is NT else self.fd[i]

    def send_rdata(self, i: int, r: t.Any) -> None:
        if r is NT:
            return
        if self.acc is None:
            self.acc = [zero_rdata(v) for v in self.primal]
        self.acc[i] = increment(self.acc[i], r)

    def rdata(self) -> t.Any:
        return zero_rdata(self.primal) if self.acc is None else collapse(self.acc)


@attrs.define(eq=False)
class ListItems(Items):
    primal: list[t.Any]
    tangent: list[t.Any]  # see list_tangent

    def __len__(self) -> int:
        return len(self.primal)

    def item(self, i: int) -> t.Any:
        return self.primal[i]

    def fdata(self, i: int) -> t.Any:
        return fdata_of(self.tangent[i])

    def send_rdata(self, i: int, r: t.Any) -> None:
        if r is not NT:
            self.tangent[i] = increment(self.tangent[i], rdata_tangent(self.primal[i], r))


@attrs.define(eq=False)
class ArrayItems(Items):
    """Items along the first axis: row views (two or more axes) or scalars (one axis)."""

    primal: Array
    fd: t.Any

    def __len__(self) -> int:
        return len(self.primal)

    def item(self, i: int) -> t.Any:
        return self.primal[i]

    def fdata(self, i: int) -> t.Any:
        return self.fd[i] if self.primal.ndim >= 2 and isinstance(self.fd, np.ndarray) else NT

    def send_rdata(self, i: int, r: t.Any) -> None:
        if r is not NT and isinstance(self.fd, np.ndarray):
            self.fd[i] += r

    def send(self, i: int, g: t.Any) -> None:
        if g is None or not isinstance(self.fd, np.ndarray):
            return
        if self.primal.ndim >= 2:
            add_into(self.fd[i], g)
        else:
            self.fd[i] += np.sum(g) if self.fd.dtype.kind == "c" else np.sum(np.real(g))


def dict_view_fdata(tangent: dict[t.Any, t.Any]) -> Tangent:
    """The fdata of ``d.values()`` or ``d.items()``, for ``d`` of tangent ``tangent``: the
    dict's tangent itself, as the tangent model has it (``d.keys()`` has none)."""
    return Tangent({"mapping": tangent})


@attrs.define(eq=False)
class DictViewItems(Items):
    """The items of ``d.values()`` or ``d.items()`` in the order iteration gives them (keys
    taken when made)."""

    mapping: dict[t.Any, t.Any]
    tangent: dict[t.Any, t.Any]
    pairs: bool  # items (key, value), else values
    keys: list[t.Any] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.keys = list(self.mapping)

    def __len__(self) -> int:
        return len(self.keys)

    def item(self, i: int) -> t.Any:
        k = self.keys[i]
        return (k, self.mapping[k]) if self.pairs else self.mapping[k]

    def fdata(self, i: int) -> t.Any:
        f = fdata_of(self.tangent[self.keys[i]])
        return collapse((NT, f)) if self.pairs else f

    def send_rdata(self, i: int, r: t.Any) -> None:
        if r is NT:
            return
        k = self.keys[i]
        r = r[1] if self.pairs else r
        self.tangent[k] = increment(self.tangent[k], rdata_tangent(self.mapping[k], r))


@attrs.define(eq=False)
class PlainItems(Items):
    """Items without tangents (a range, a string, a set, a dict's keys)."""

    primal: t.Any
    values: list[t.Any] | None = None

    def _values(self) -> list[t.Any]:
        if self.values is None:
            self.values = list(self.primal)
        return self.values

    def __len__(self) -> int:
        return len(self._values())

    def item(self, i: int) -> t.Any:
        return self._values()[i]


_PLAIN = (range, str, bytes, set, frozenset, dict, collections.abc.KeysView)


def items_of(primal: object, fdata: t.Any) -> Items:
    """The ``Items`` of a container with fdata ``fdata``."""
    if isinstance(primal, tuple):
        return TupleItems(primal, fdata)
    if isinstance(primal, list):
        return ListItems(primal, list_tangent(CoDual(primal, fdata)))
    if isinstance(primal, np.ndarray):
        if primal.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return ArrayItems(primal, fdata)
    if isinstance(primal, (collections.abc.ValuesView, collections.abc.ItemsView)):
        if not isinstance(fdata, Tangent):  # a view of an inactive dict: no tangents inside
            return PlainItems(primal)
        mapping = _view_mapping(primal)
        pairs = isinstance(primal, collections.abc.ItemsView)
        return DictViewItems(mapping, fdata.fields["mapping"], pairs)
    if isinstance(primal, _PLAIN) or isinstance(fdata, NoTangent) and not _any_differentiable(
        primal
    ):
        return PlainItems(primal)
    raise TypeError(
        f"gibbous cannot take the items of a {type(primal).__qualname__} apart with their "
        "tangents; use a list, a tuple or an array"
    )


def _view_mapping(view: object) -> dict[t.Any, t.Any]:
    mapping = getattr(view, "mapping", None)  # dict views expose their dict (read-only proxy)
    if mapping is None:
        raise TypeError(f"not a dict view: {view!r}")
    return t.cast(dict[t.Any, t.Any], mapping)


def _any_differentiable(primal: object) -> bool:
    # Only containers that can be iterated again without being consumed are inspected.
    if isinstance(primal, collections.abc.Iterator):
        return True  # unknown: it cannot be looked into without consuming it
    try:
        return any(is_differentiable(v) for v in t.cast(t.Iterable[object], primal))
    except TypeError:
        return False



def send_to_value(x: CD, g: t.Any) -> t.Any:
    """Give ``g`` (shaped like ``np.asarray(x.primal)``; None: nothing) to a scalar or a
    (nested) list/tuple ``x`` of scalars and arrays; x's rdata."""
    xp = x.primal
    if isinstance(xp, (list, tuple)):
        items = items_of(xp, x.fdata)
        if g is not None:
            for j in range(len(items)):
                items.send(j, g[j])
        return items.rdata()
    return send(x, g) if g is not None and needs(x) else zero_for(x)


def as_array(x: CD) -> tuple[CD, t.Callable[[], t.Any]]:
    """``np.asarray(x.primal)`` for an array-like operand ``x`` (a list or tuple), with new
    zero fdata, and ``back()``, which sends the cotangent collected in that fdata to x's items
    (after the array's pullback has run) and returns x's rdata.  What NumPy does to such an
    argument, so a rule run on the array computes what the primal computes."""
    xa = np.asarray(x.primal)
    xf = new_fdata(xa)

    def back() -> t.Any:
        return send_to_value(x, xf if isinstance(xf, np.ndarray) else None)

    return CoDual(xa, xf), back
