"""Calls of well-known callables written as Python syntax: the one table of them.

``operator.add(a, b)`` and ``a + b`` do the same thing, but the syntax skips a call: the
interpreter's ``BINARY_OP`` goes straight to the type's slot.  Each entry maps a callable to a
``Form`` that writes a call of it; a form applies only to the exact arity it writes, without
keywords, so that any other call (which would raise) stays a call and raises the same error.

Forms are expressions (``a + b``, ``o.name``) or statements.  Statement forms write their own
lines: ``operator.iadd(a, b)`` is ``r = a`` then ``r += b``, which calls ``__iadd__`` (mutating
an array in place) or falls back to ``+`` and rebinds ``r`` only, exactly as ``operator.iadd``;
``operator.setitem(a, k, v)`` is ``a[k] = v`` and its result is ``None``.
"""

from __future__ import annotations

import builtins
import keyword
import operator
import typing
import typing as t
import unicodedata

import attrs

from gibbous.ir.core import Call, Constant, Value


class Operands(t.Protocol):
    """How the code generator writes an operand in each syntactic position."""

    def atom(self, v: Value) -> str:
        """A name or literal that binds tighter than any operator (``(-1)``, not ``-1``)."""

    def receiver(self, v: Value) -> str:
        """The object of a subscript, attribute or call: a name, never a literal."""

    def identity(self, v: Value) -> str:
        """An operand of ``is``: a literal only for singletons, whose identity is exact."""

    def index(self, v: Value) -> str:
        """What goes between ``[`` and ``]``: slices as ``1:n``, tuples without parentheses."""

    def expr(self, v: Value) -> str:
        """A whole expression, as on the right of ``=``."""


class Form:
    """How to write a call of one callable with ``arity`` positional arguments."""

    arity: int = 0
    statement: bool = False  # writes lines rather than an expression
    result_is_none: bool = False  # a statement whose call returns None (setitem, ...)

    def applies(self, op: Call) -> bool:
        return len(op.args) == self.arity and not op.kwnames

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        raise NotImplementedError

    def statements(self, args: t.Sequence[Value], r: Operands, target: str) -> list[str]:
        raise NotImplementedError


@attrs.frozen
class Binary(Form):
    symbol: str
    arity: int = 2

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        return f"{r.atom(args[0])} {self.symbol} {r.atom(args[1])}"


@attrs.frozen
class Identity(Form):
    """``is`` / ``is not``: compares objects, so constants other than singletons stay bound."""

    symbol: str
    arity: int = 2

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        return f"{r.identity(args[0])} {self.symbol} {r.identity(args[1])}"


@attrs.frozen
class Contains(Form):
    """``operator.contains(a, b)`` is ``b in a``: the operands swap."""

    arity: int = 2

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        return f"{r.atom(args[1])} in {r.atom(args[0])}"


@attrs.frozen
class Unary(Form):
    symbol: str
    arity: int = 1

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        return f"{self.symbol}{r.atom(args[0])}"


@attrs.frozen
class Cast(Form):
    """``typing.cast(T, v)`` is ``v``: type inference narrows with it; at run time it is free."""

    arity: int = 2

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        return r.expr(args[1])


@attrs.frozen
class Subscript(Form):
    arity: int = 2

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        return f"{r.receiver(args[0])}[{r.index(args[1])}]"


@attrs.frozen
class StoreSubscript(Form):
    arity: int = 3
    statement: bool = True
    result_is_none: bool = True

    def statements(self, args: t.Sequence[Value], r: Operands, target: str) -> list[str]:
        return [f"{r.receiver(args[0])}[{r.index(args[1])}] = {r.expr(args[2])}"]


@attrs.frozen
class DeleteSubscript(Form):
    arity: int = 2
    statement: bool = True
    result_is_none: bool = True

    def statements(self, args: t.Sequence[Value], r: Operands, target: str) -> list[str]:
        return [f"del {r.receiver(args[0])}[{r.index(args[1])}]"]


@attrs.frozen
class InPlace(Form):
    symbol: str
    arity: int = 2
    statement: bool = True

    def statements(self, args: t.Sequence[Value], r: Operands, target: str) -> list[str]:
        return [f"{target} = {r.expr(args[0])}", f"{target} {self.symbol}= {r.expr(args[1])}"]


def attribute_name(v: Value) -> str | None:
    """The attribute ``v`` names, if ``o.<name>`` would look up exactly that attribute."""
    if not isinstance(v, Constant) or type(v.value) is not str:
        return None
    name = v.value
    # The parser NFKC-normalises identifiers: o.ﬁ would read attribute "fi", not "ﬁ".
    ok = name.isidentifier() and not keyword.iskeyword(name)
    return name if ok and unicodedata.normalize("NFKC", name) == name else None


@attrs.frozen
class Attribute(Form):
    """``getattr(o, "name")`` with a constant name; the three-argument form stays a call."""

    arity: int = 2

    def applies(self, op: Call) -> bool:
        return super().applies(op) and attribute_name(op.args[1]) is not None

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        return f"{r.receiver(args[0])}.{attribute_name(args[1])}"


@attrs.frozen
class StoreAttribute(Form):
    arity: int = 3
    statement: bool = True
    result_is_none: bool = True

    def applies(self, op: Call) -> bool:
        return super().applies(op) and attribute_name(op.args[1]) is not None

    def statements(self, args: t.Sequence[Value], r: Operands, target: str) -> list[str]:
        return [f"{r.receiver(args[0])}.{attribute_name(args[1])} = {r.expr(args[2])}"]


@attrs.frozen
class DeleteAttribute(Form):
    arity: int = 2
    statement: bool = True
    result_is_none: bool = True

    def applies(self, op: Call) -> bool:
        return super().applies(op) and attribute_name(op.args[1]) is not None

    def statements(self, args: t.Sequence[Value], r: Operands, target: str) -> list[str]:
        return [f"del {r.receiver(args[0])}.{attribute_name(args[1])}"]


_FORMS: tuple[tuple[object, Form], ...] = (
    (operator.add, Binary("+")),
    (operator.sub, Binary("-")),
    (operator.mul, Binary("*")),
    (operator.truediv, Binary("/")),
    (operator.floordiv, Binary("//")),
    (operator.mod, Binary("%")),
    (operator.pow, Binary("**")),
    (operator.matmul, Binary("@")),
    (operator.lshift, Binary("<<")),
    (operator.rshift, Binary(">>")),
    (operator.and_, Binary("&")),
    (operator.or_, Binary("|")),
    (operator.xor, Binary("^")),
    (operator.lt, Binary("<")),
    (operator.le, Binary("<=")),
    (operator.eq, Binary("==")),
    (operator.ne, Binary("!=")),
    (operator.gt, Binary(">")),
    (operator.ge, Binary(">=")),
    (operator.is_, Identity("is")),
    (operator.is_not, Identity("is not")),
    (operator.contains, Contains()),
    (operator.neg, Unary("-")),
    (operator.pos, Unary("+")),
    (operator.invert, Unary("~")),
    (operator.inv, Unary("~")),
    (operator.not_, Unary("not ")),
    (operator.getitem, Subscript()),
    (operator.setitem, StoreSubscript()),
    (operator.delitem, DeleteSubscript()),
    (operator.iadd, InPlace("+")),
    (operator.isub, InPlace("-")),
    (operator.imul, InPlace("*")),
    (operator.itruediv, InPlace("/")),
    (operator.ifloordiv, InPlace("//")),
    (operator.imod, InPlace("%")),
    (operator.ipow, InPlace("**")),
    (operator.imatmul, InPlace("@")),
    (operator.ilshift, InPlace("<<")),
    (operator.irshift, InPlace(">>")),
    (operator.iand, InPlace("&")),
    (operator.ior, InPlace("|")),
    (operator.ixor, InPlace("^")),
    (builtins.getattr, Attribute()),
    (builtins.setattr, StoreAttribute()),
    (builtins.delattr, DeleteAttribute()),
    (typing.cast, Cast()),
)

# By identity: a callable constant may be unhashable, and equal is not the same callable.
_BY_ID: dict[int, tuple[object, Form]] = {id(f): (f, form) for f, form in _FORMS}


def inline_form(op: Call) -> Form | None:
    """The syntax for ``op``, or None if it is written as a plain call."""
    callee = op.callee
    if not isinstance(callee, Constant):
        return None
    hit = _BY_ID.get(id(callee.value))
    if hit is None or hit[0] is not callee.value or not hit[1].applies(op):
        return None
    return hit[1]
