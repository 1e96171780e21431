"""Declaring structure instead of writing a forward rule: a call that takes its result out of
its operand's structure (``t[i]``, ``iter(t)``, ``next(it)``, ``a, b = t``), builds a tuple or
list of its operands, takes a part of a value of unknown type, or has a string operand.

Each is one line under the callable's reverse registration, in the library file of its area,
as ``frules.register_linear`` is (JAX's ``deflinear``, autograd's ``def_linear``): the tangent
is the same call on the tangent, the tuple of the operands' tangents, the same part of the
tangent, none.  These are rules for a particular kind of value (``frules.register``): tried
before the rules for numbers and arrays of the same callable.
"""

from __future__ import annotations

import typing as t
from collections import abc

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Value
from gibbous.rules.emit import Emit, Keywords, Tangents, Values, item_tangent, like, static_types
from gibbous.rules.emit import zero
from gibbous.rules.frules import Maker, Tangent, register
from gibbous.rules.registry import registers_for_caller

registers_for_caller(__name__)  # (the library module calling ``register_structural`` registers)


def structure_type(ty: T.Type) -> bool:
    """A tuple, an iterator or a value of unknown type: its tangent has its shape (a tuple of
    the items' tangents, an iterator over the tangent)."""
    if isinstance(ty, T.Object):  # (a dict's views: their tangents are lists, in step)
        return issubclass(ty.cls, (abc.Iterator, abc.ItemsView, abc.ValuesView, tuple, list))
    return isinstance(ty, (T.Tuple, T.List, T.Any))


def register_structural(
    fns: t.Iterable[t.Callable[..., t.Any]], *, arrays: bool, keywords: frozenset[str] = frozenset()
) -> None:
    """``fn(x, *rest)`` takes its result out of ``x``'s structure: its tangent is the same call
    on ``x``'s tangent (an array's rows too, where ``arrays``), with the same ``keywords``
    (constants)."""
    for fn in fns:
        register(fn, _structural_make(fn, arrays, keywords))


def _structural_make(fn: t.Callable[..., t.Any], arrays: bool, keywords: frozenset[str]) -> Maker:
    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> Tangent | Emit | None:
        if not set(kwnames) <= keywords or not types or not varied[0]:
            return None
        if any(varied[len(types) - len(kwnames) :]):
            return None
        if any(v and not isinstance(ty, T.Any) for ty, v in zip(types[1:], varied[1:])):
            return None  # (an index of a type unknown may carry a tangent: an int's, none)
        if not (structure_type(types[0]) or arrays and isinstance(types[0], T.Array)):
            return None
        # (a value of unknown type may have no tangent, None: a ``range`` iterator that a
        # generator keeps in its frame, a string in a tuple; so may a list whose items have
        # none, ``item_tangent``'s: ``iter`` of ``map_over_containers``'s list of ints)
        call = safe if isinstance(types[0], (T.Any, T.Object, T.List)) else fn

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


def register_made_of(makers: t.Iterable[t.Callable[..., t.Any]]) -> None:
    """``make_tuple(*items)``, ``make_list(*items)``: the same of the items' tangents."""
    for maker in makers:
        register(maker, _made_of(maker))


def _made_of(maker: t.Callable[..., t.Any]) -> Maker:
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


def register_part(parts: t.Iterable[t.Callable[..., t.Any]]) -> None:
    """``np.real(z)`` / ``np.imag(z)`` of a value of a type the build could not tell, real or
    complex (eig's eigenvalues): the same part of the tangent (both are real-linear)."""
    for part in parts:
        register(part, _part_make(part))


def _part_make(part: t.Callable[..., t.Any]) -> Maker:
    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> Tangent | Emit | None:
        if kwnames or len(types) != 1 or static_types(types):
            return None

        def tangent(z: t.Any, x: t.Any, dx: t.Any) -> t.Any:
            return like(z, None if dx is None else part(dx))

        return tangent

    return make


def register_text_operands(operators: t.Iterable[t.Callable[..., t.Any]]) -> None:
    """An arithmetic operator with a string operand: its result, when it has one, is a string
    (``"ab" * 2``, ``"%.2f" % x``) without a tangent; with a float the call raises, as Python
    raises."""
    for op in operators:
        register(op, _with_text)


def _with_text(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> Tangent | Emit | None:
    if kwnames or not any(isinstance(ty, T.Str) for ty in types):
        return None
    return Emit(lambda b, z, args, tangents, kw: zero(b, z))
