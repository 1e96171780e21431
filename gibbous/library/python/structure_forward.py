"""Forward-mode rules of Python's structure: tuples, lists and iterators carry their items'
tangents (``t[i]``, ``iter``, ``next``, unpacking, ``enumerate``, ``zip``, ``sorted``), the
real and imaginary parts of a value of unknown type, arithmetic on strings and
``typing.cast``.

Registered after ``gibbous.rules.frules``'s own rules and before the primitives' (the
package imports this module first): the latest registration that takes a call's types wins,
so a primitive's rule for arrays is tried before these.
"""

from __future__ import annotations

import builtins
import itertools
import operator
import typing
import typing as t
from collections import abc

import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules import inplace_forward as FW
from gibbous.rules.frules import Emit, Keywords, Maker, Tangent, Tangents, Values, register
from gibbous.rules.emit import ForwardModeError, item_tangent, like, static_types, zero




def _structure(ty: T.Type) -> bool:
    """A tuple, an iterator or a value of unknown type: its tangent has its shape (a tuple of
    the items' tangents, an iterator over the tangent)."""
    if isinstance(ty, T.Object):  # (a dict's views: their tangents are lists, in step)
        return issubclass(ty.cls, (abc.Iterator, abc.ItemsView, abc.ValuesView, tuple, list))
    return isinstance(ty, (T.Tuple, T.List, T.Any))


def _structural_make(
    fn: t.Callable[..., t.Any], arrays: bool, keywords: frozenset[str] = frozenset()
) -> Maker:
    """``fn(x, *rest)`` takes its result out of ``x``'s structure: ``t[i]``, ``iter(t)``,
    ``next(it)``, ``a, b = t``; its tangent is the same call on ``x``'s tangent (an array's
    rows too, where ``arrays``), with the same ``keywords`` (constants)."""

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> Tangent | Emit | None:
        if not set(kwnames) <= keywords or not types or not varied[0]:
            return None
        if any(varied[len(types) - len(kwnames) :]):
            return None
        if any(v and not isinstance(ty, T.Any) for ty, v in zip(types[1:], varied[1:])):
            return None  # (an index of a type unknown may carry a tangent: an int's, none)
        if not (_structure(types[0]) or arrays and isinstance(types[0], T.Array)):
            return None
        # (a value of unknown type may have no tangent, None: a ``range`` iterator that a
        # generator keeps in its frame, a string in a tuple)
        call = safe if isinstance(types[0], (T.Any, T.Object)) else fn

        def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords) -> Value:
            d = tangents[0]
            assert d is not None
            return b.call(call, d, *args[1:], kwargs=kw, type=z.type)

        return Emit(emit)

    safe = on_tangent(fn)
    return make


def on_tangent(fn: t.Callable[..., t.Any]) -> t.Callable[..., t.Any]:
    """``fn(d, *rest)`` on a tangent ``d`` that may be None, where the result's is None too."""

    def call(d: t.Any, *rest: t.Any, **kwargs: t.Any) -> t.Any:
        return None if d is None else fn(d, *rest, **kwargs)

    name = getattr(fn, "__name__", "call")
    call.__qualname__ = call.__name__ = f"{name}_on_tangent"
    runtime.register_object(call, f"forward.{name}_on_tangent")  # a path for the IR's text
    ON_TANGENT[call] = fn
    return call


#: ``on_tangent``'s functions, and the function each calls: a program reverse mode
#: differentiates (a Hessian-vector product's) calls the function itself, which has a rule
ON_TANGENT: dict[t.Callable[..., t.Any], t.Callable[..., t.Any]] = {}


def _made_of(maker: t.Callable[..., t.Any]) -> Maker:
    """``make_tuple(*items)``, ``make_list(*items)``: the same of the items' tangents."""

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> Tangent | Emit | None:
        if kwnames:
            return None

        def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords) -> Value:
            items = [item_tangent(b, a, d) for a, d in zip(args, tangents)]
            return b.call(maker, *items, type=z.type)

        return Emit(emit)

    return make




register(operator.getitem, _structural_make(operator.getitem, arrays=False))  # (arrays: linear)
for _fn in (
    builtins.iter, builtins.next, builtins.list, builtins.tuple, builtins.reversed,
    runtime.next_or_stop, runtime.unpack,
):  # fmt: skip
    register(_fn, _structural_make(_fn, arrays=True))


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
    return zip(*(
        itertools.repeat(None) if d is None else d for d in operands[n:]
    ))  # fmt: skip


def _zip_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> Tangent | Emit | None:
    """``zip(a, b, ...)``: the tangents zipped in step (the primal's zip stops first)."""
    if kwnames or not types:
        return None

    def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords) -> Value:
        ds = [Constant(None) if d is None else d for d in tangents]
        return b.call(zip_tangents, *args, *ds, type=T.ANY)

    return Emit(emit)


register(builtins.zip, _zip_make)
runtime.register_object(zip_tangents, "forward.zip_tangents")


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
        return [d[i] for i in FW.sort_order(items, key, reverse)]

    return tangent


register(builtins.sorted, _sorted_make)


def _part_make(part: t.Callable[..., t.Any]) -> Maker:
    """``np.real(z)`` / ``np.imag(z)`` of a value of a type the build could not tell, real or
    complex (eig's eigenvalues): the same part of the tangent (both are real-linear)."""

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> Tangent | Emit | None:
        if kwnames or len(types) != 1 or static_types(types):
            return None

        def tangent(z: t.Any, x: t.Any, dx: t.Any) -> t.Any:
            return like(z, None if dx is None else part(dx))

        return tangent

    return make


def _with_text(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> Tangent | Emit | None:
    """An arithmetic operator with a string operand: its result, when it has one, is a string
    (``"ab" * 2``, ``"%.2f" % x``); with a float the call raises, as Python raises."""
    if kwnames or not any(isinstance(ty, T.Str) for ty in types):
        return None
    return Emit(lambda b, z, args, tangents, kw: zero(b, z))


for _op in (
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
    operator.mod, operator.pow, operator.iadd, operator.imul, operator.imod,
):  # fmt: skip
    register(_op, _with_text)

register(np.real, _part_make(np.real))
register(np.imag, _part_make(np.imag))
register(runtime.make_tuple, _made_of(runtime.make_tuple))
register(runtime.make_list, _made_of(runtime.make_list))


def _cast_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> Tangent | Emit | None:
    """``typing.cast(cls, x)`` (type inference's narrowing) is ``x``: so is its tangent."""
    if kwnames or len(types) != 2 or varied[0] or not varied[1]:
        return None

    def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords) -> Value:
        d = tangents[1]
        assert d is not None
        return b.call(typing.cast, args[0], d, type=z.type)

    return Emit(emit)


register(typing.cast, _cast_make)


