"""Iteration: ``iter``, ``next``, ``zip``, ``enumerate``, ``reversed`` and the frontend's
``next_or_stop``/``is_stop``.

**The fdata of an iterator** is an ``IterTangent``: it knows the container being iterated (as an
``Items``, with the container's fdata) and how many items were taken.  ``next_or_stop`` takes
the next primal item and asks the ``IterTangent`` for that item's fdata: for ``for row in A``
over a 2-D array, the row view of A's fdata; for a list, the fdata of the list's tangent item;
for a tuple, the item's fdata.  Its pullback sends the item's rdata back to the same place: a
float item of a list into the list's tangent, a scalar item of a 1-D array into the array's
fdata, an item of a tuple into an accumulator the ``iter`` call's pullback returns as the
tuple's rdata (a tuple is a value: its rdata must flow back through the call that received it).
``zip`` and ``enumerate`` combine the ``IterTangent`` of their arguments.

An iterator over values that can never carry a tangent (a range, a string, a tuple of ints)
gets no ``IterTangent``: its fdata is ``NoTangent()``, as the tangent model has it.  An iterator
made outside the differentiated code has none either; taking an item with a tangent from it is
an error rather than a silently lost gradient.  Iterators cannot be rewound: the pullbacks
restore tangents, not positions.
"""

from __future__ import annotations

import builtins
import collections.abc
import types
import typing as t

import attrs
import numpy as np

from gibbous.ir import runtime
from gibbous.infer.implementations import register_twin
from gibbous.library.common import ANY, CD, NT, RuleResult, nothing, zero_for
from gibbous.library.items import Items, PlainItems, TupleItems, collapse, items_of
from gibbous.rules.registry import primitive, zero_derivative
from gibbous.rules import structure
from gibbous.tangents.model import CoDual, is_differentiable, zero_fdata
import itertools
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules.frules import Emit, Keywords, Tangent, Tangents, Values, register
from gibbous.rules.emit import ForwardModeError


class IterTangent:
    """The fdata of an iterator (see the module docstring)."""

    def take(self, item: t.Any) -> tuple[t.Any, t.Any]:
        """The fdata of ``item``, just taken from the iterator, and a token for ``give``."""
        raise NotImplementedError

    def give(self, token: t.Any, item: t.Any, dy: t.Any) -> None:
        """Send the rdata ``dy`` of a taken item back to where the item came from."""
        raise NotImplementedError

    def rdata(self) -> t.Any:
        """The rdata of the iterated container (a tuple's; ``NoTangent()`` for others)."""
        return NT


@attrs.define(eq=False)
class SeqIterTangent(IterTangent):
    """Over the items of a container, in order or reversed."""

    items: Items
    reverse: bool = False
    count: int = 0
    length: int = 0  # for reversed iteration: the length when it started

    def take(self, item: t.Any) -> tuple[t.Any, t.Any]:
        k = self.count
        self.count = k + 1
        i = self.length - 1 - k if self.reverse else k
        return self.items.fdata(i), i

    def give(self, token: t.Any, item: t.Any, dy: t.Any) -> None:
        if dy is not NT:
            self.items.send_rdata(token, dy)

    def rdata(self) -> t.Any:
        return self.items.rdata()


@attrs.define(eq=False)
class OpaqueIterTangent(IterTangent):
    """An iterator whose items cannot carry tangents here (made outside, or over a set)."""

    def take(self, item: t.Any) -> tuple[t.Any, t.Any]:
        if is_differentiable(item):
            raise TypeError(
                f"gibbous cannot differentiate through an item of class {type(item).__qualname__}"
                " taken from an iterator made outside the differentiated code; pass the "
                "container instead"
            )
        return zero_fdata(item), None

    def give(self, token: t.Any, item: t.Any, dy: t.Any) -> None:
        pass


OPAQUE = OpaqueIterTangent()


@attrs.define(eq=False)
class ZipIterTangent(IterTangent):
    parts: list[IterTangent]

    def take(self, item: t.Any) -> tuple[t.Any, t.Any]:
        taken = [p.take(v) for p, v in zip(self.parts, item)]
        return collapse(f for f, _ in taken), tuple(token for _, token in taken)

    def give(self, token: t.Any, item: t.Any, dy: t.Any) -> None:
        for i, (p, v) in enumerate(zip(self.parts, item)):
            p.give(token[i], v, NT if dy is NT else dy[i])


@attrs.define(eq=False)
class EnumerateIterTangent(IterTangent):
    part: IterTangent

    def take(self, item: t.Any) -> tuple[t.Any, t.Any]:
        fd, token = self.part.take(item[1])
        return collapse((NT, fd)), token

    def give(self, token: t.Any, item: t.Any, dy: t.Any) -> None:
        self.part.give(token, item[1], NT if dy is NT else dy[1])


def is_iterator(x: object) -> bool:
    return isinstance(x, collections.abc.Iterator)


def iter_tangent(x: CD, reverse: bool = False) -> IterTangent:
    """The ``IterTangent`` for iterating over ``x`` (an iterator keeps its own).  ``OPAQUE``
    when no item can carry a tangent (a range, a string, a tuple of ints, an iterator without
    an ``IterTangent``)."""
    if is_iterator(x.primal) and not reverse:
        return x.fdata if isinstance(x.fdata, IterTangent) else OPAQUE
    items = items_of(x.primal, x.fdata)
    if isinstance(items, PlainItems) or (
        isinstance(items, TupleItems) and not is_differentiable(x.primal)
    ):
        return OPAQUE
    return SeqIterTangent(items, reverse, 0, len(items) if reverse else 0)


def iterator_fdata(it: IterTangent) -> t.Any:
    """The fdata of an iterator: ``NoTangent()`` (the tangent model's) when its items carry
    none, so an iterator over plain values is the plain value the model says it is."""
    return NT if it is OPAQUE else it


def _rdata_of(it: IterTangent) -> t.Any:
    return it.rdata()


@primitive(builtins.iter, ANY)
def iter_rrule(f: CD, x: CD) -> RuleResult:
    it = f.primal(x.primal)
    if it is x.primal:  # an iterator is its own iterator
        return x, lambda dy: (NT, NT)
    fd = iter_tangent(x)
    return CoDual(it, iterator_fdata(fd)), lambda dy: (NT, fd.rdata())


@primitive(builtins.reversed, ANY)
def reversed_rrule(f: CD, x: CD) -> RuleResult:
    it = f.primal(x.primal)
    fd = iter_tangent(x, reverse=True)
    return CoDual(it, iterator_fdata(fd)), lambda dy: (NT, fd.rdata())


@primitive(builtins.zip, ...)
def zip_rrule(f: CD, *xs: CD, **kwargs: CD) -> RuleResult:
    parts = [iter_tangent(x) for x in xs]
    it = f.primal(*(x.primal for x in xs), **{k: v.primal for k, v in kwargs.items()})
    rest = nothing(len(kwargs))
    fd = OPAQUE if all(p is OPAQUE for p in parts) else ZipIterTangent(parts)
    return CoDual(it, iterator_fdata(fd)), lambda dy: (NT, *map(_rdata_of, parts), *rest)


@primitive(builtins.enumerate, ANY, ...)
def enumerate_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    part = iter_tangent(x)
    it = f.primal(x.primal, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    rest = nothing(len(args) + len(kwargs))
    fd = OPAQUE if part is OPAQUE else EnumerateIterTangent(part)
    return CoDual(it, iterator_fdata(fd)), lambda dy: (NT, part.rdata(), *rest)


def _take(it: CD, item: t.Any) -> RuleResult:
    """The CoDual of an item just taken from ``it`` and the pullback of taking it."""
    fd_it = it.fdata if isinstance(it.fdata, IterTangent) else OPAQUE
    fd, token = fd_it.take(item)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        fd_it.give(token, item, dy)
        return NT, NT

    return CoDual(item, fd), pullback


@primitive(runtime.next_or_stop, ANY)
def next_or_stop_rrule(f: CD, it: CD) -> RuleResult:
    item = f.primal(it.primal)
    if item is runtime.STOP:
        return CoDual(item, NT), lambda dy: (NT, NT)
    return _take(it, item)


zero_derivative(runtime.is_stop, ANY)


@primitive(builtins.next, ANY, ...)
def next_rrule(f: CD, it: CD, *default: CD) -> RuleResult:
    """``next(it)`` and ``next(it, default)``."""
    item = runtime.next_or_stop(it.primal)
    if item is not runtime.STOP:
        y, pullback = _take(it, item)
        unused = tuple(zero_for(d) for d in default)
        return y, (lambda dy: (*pullback(dy), *unused))
    if not default:
        raise StopIteration
    return default[0], lambda dy: (NT, NT, dy)
structure.register_structural(
    [builtins.iter, builtins.next, builtins.reversed, runtime.next_or_stop], arrays=True
)


class DrainedItems(Items):
    """The items an iterator gave when a rule consumed it (``list(it)``, ``sum(it)``...)."""

    def __init__(
        self, values: list[t.Any], fdatas: list[t.Any], tokens: list[t.Any], it: IterTangent
    ) -> None:
        self.values, self.fdatas, self.tokens, self.it = values, fdatas, tokens, it

    def __len__(self) -> int:
        return len(self.values)

    def item(self, i: int) -> t.Any:
        return self.values[i]

    def fdata(self, i: int) -> t.Any:
        return self.fdatas[i]

    def send_rdata(self, i: int, r: t.Any) -> None:
        self.it.give(self.tokens[i], self.values[i], r)


def consume(x: CD) -> Items:
    """The items of an iterable operand, for a rule that consumes it as the primal would: a
    container's ``Items``, or the items an iterator gives (the iterator is exhausted)."""
    if not is_iterator(x.primal):
        return items_of(x.primal, x.fdata)
    fd_it = x.fdata if isinstance(x.fdata, IterTangent) else OPAQUE
    values: list[t.Any] = []
    fdatas: list[t.Any] = []
    tokens: list[t.Any] = []
    for v in t.cast(t.Iterator[t.Any], x.primal):
        fd, token = fd_it.take(v)
        values.append(v)
        fdatas.append(fd)
        tokens.append(token)
    if fd_it is OPAQUE:
        return PlainItems(values, values)
    return DrainedItems(values, fdatas, tokens, fd_it)


# --------------------------------------------------------------------------------------------
# Forward mode: enumerate and zip
#
# Forward mode: ``enumerate`` and ``zip`` carry their items' tangents in step.


def enumerate_tangents(d: t.Any, start: int = 0) -> t.Any:
    """The tangent of ``enumerate(x, start)``: pairs of no tangent (the index's) and the
    items' tangents (None for an ``x`` without one)."""
    return None if d is None else zip(itertools.repeat(None), d)


def _enumerate_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> Tangent | Emit | None:
    if not set(kwnames) <= {"start"} or not 1 <= len(types) - len(kwnames) <= 2:
        return None
    if not varied[0] or any(varied[1:]):
        return None

    def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords) -> Value:
        d = tangents[0]
        assert d is not None
        return b.call(enumerate_tangents, d, type=T.ANY)

    return Emit(emit)


register(builtins.enumerate, _enumerate_make)
runtime.register_object(enumerate_tangents, "forward.enumerate_tangents")


def zip_tangents(*operands: t.Any) -> t.Iterator[tuple[t.Any, ...]]:
    """The tangent of ``zip(*values)``, given each value and its tangent (None: none): the
    zip of the tangents, None in place of an item's where a value has none."""
    n = len(operands) // 2
    for v in operands[:n]:
        if type(v) is runtime.GeneratorFrame:  # (zip would step it unrecorded)
            raise ForwardModeError(
                f"forward mode: builtins.zip of the generator {v.fn.__qualname__}(): a generator "
                "is stepped by a for loop or next() in the differentiated code (zip lists of "
                "its values instead)"
            )
    # (a list, not a generator expression: a Hessian-vector product derives this function)
    return zip(*[itertools.repeat(None) if d is None else d for d in operands[n:]])


def _zip_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> Tangent | Emit | None:
    """``zip(a, b, ...[, strict=...])``: the tangents zipped in step (the primal's zip stops
    first, or with ``strict`` raises first, so the tangents' zip need not check)."""
    if not set(kwnames) <= {"strict"} or len(types) == len(kwnames) or any(varied[len(types) - len(kwnames) :]):
        return None

    def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords) -> Value:
        ds = [Constant(None) if d is None else d for d in tangents[: len(args)]]
        return b.call(zip_tangents, *args, *ds, type=T.ANY)

    return Emit(emit)


register(builtins.zip, _zip_make)
runtime.register_object(zip_tangents, "forward.zip_tangents")



def finite_iterables(iterables: tuple[t.Any, ...]) -> None:
    """Refuse, at run time, an iterable ``map_over_containers`` must not take eagerly: an
    iterator (another consumer may take its items between the calls) or an endless one."""
    for it in iterables:
        if not isinstance(it, (tuple, list, np.ndarray, range, str, dict)):
            raise ForwardModeError(
                f"forward mode: builtins.map over {type(it).__name__!r}, an iterator: forward "
                "mode maps tuples, lists, arrays, ranges, strings and dicts (make a list of its "
                "items first)"
            )


def map_over_containers(fn: t.Any, *iterables: t.Any) -> t.Any:
    """``builtins.map``'s twin in forward mode (reverse mode has its lazy rule,
    ``reverse.higher_order``): the calls made when the map is, over finite containers only
    (``finite_iterables``), docs/decisions.md, "map in forward mode"."""
    finite_iterables(iterables)
    return iter([fn(*items) for items in zip(*iterables)])


def _containers(types: tuple[T.Type, ...], kwnames: tuple[str, ...]) -> bool:
    """Whether ``map(fn, *iterables)`` may have finite containers (checked again at run time
    where a type is ``any``) as iterables."""
    finite = (T.Tuple, T.List, T.Array, T.Any)
    return not kwnames and len(types) >= 2 and all(
        isinstance(ty, finite) or isinstance(ty, T.Const) and isinstance(ty.value, (tuple, str))
        for ty in types[1:]
    )


zero_derivative(finite_iterables, ANY)
register_twin(builtins.map, t.cast(types.FunctionType, map_over_containers), forward=_containers)
