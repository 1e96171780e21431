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
import functools
import keyword
import operator
import typing
import typing as t
import unicodedata

import attrs

from gibbous.ir import runtime
from gibbous.ir.core import Call, Constant, Value

# Python's operator precedence, lowest first (the language reference's table).  An operand
# written at a position that needs more than its own precedence is parenthesised.
TOP = 0  # any expression: the right of ``=``, an argument, ``return``
NOT = 4
COMPARE = 5  # ``<``, ``==``, ``in``, ``is``, ...: they chain, so neither operand may be one
BIT_OR, BIT_XOR, BIT_AND, SHIFT, ADD, MUL = 6, 7, 8, 9, 10, 11
UNARY = 12  # ``-x``, ``+x``, ``~x``
POWER = 13
PRIMARY = 15  # ``x[i]``, ``x.name``, ``f(x)``
ATOM = 16  # names, literals, parenthesised expressions

_LEVELS: dict[str, int] = {
    "|": BIT_OR,
    "^": BIT_XOR,
    "&": BIT_AND,
    "<<": SHIFT,
    ">>": SHIFT,
    "+": ADD,
    "-": ADD,
    "*": MUL,
    "/": MUL,
    "//": MUL,
    "%": MUL,
    "@": MUL,
    "**": POWER,
    **dict.fromkeys(["<", "<=", "==", "!=", ">", ">="], COMPARE),
}


class Operands(t.Protocol):
    """How the code generator writes an operand in each syntactic position."""

    def atom(self, v: Value) -> str:
        """A name or literal that binds tighter than any operator (``(-1)``, not ``-1``)."""

    def operand(self, v: Value, level: int) -> str:
        """``v`` where an expression of at least precedence ``level`` is needed: parenthesised
        if it binds less tightly (``(a + b) * c``), and a negative literal always."""

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
    precedence: int = PRIMARY  # of the expression written

    def applies(self, op: Call) -> bool:
        return len(op.args) == self.arity and not op.kwnames

    def order(self) -> tuple[int, ...]:
        """The operands (as indices into ``Call.operands``, 0 being the callee) the written
        code evaluates, in the order it evaluates them."""
        return tuple(range(1, self.arity + 1))

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        raise NotImplementedError

    def statements(self, args: t.Sequence[Value], r: Operands, target: str) -> list[str]:
        raise NotImplementedError


@attrs.frozen
class Binary(Form):
    symbol: str
    arity: int = 2

    @property
    def precedence(self) -> int:  # type: ignore[override]
        return _LEVELS[self.symbol]

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        level = self.precedence
        if self.symbol == "**":  # right-associative, and binds tighter than unary minus on
            left, right = POWER + 1, UNARY  # its left: (-a) ** b, a ** -b, a ** b ** c
        elif level == COMPARE:  # a < b < c chains: (a < b) < c keeps its parentheses
            left, right = COMPARE + 1, COMPARE + 1
        else:  # left-associative: a - b - c is (a - b) - c, a - (b - c) needs them
            left, right = level, level + 1
        return f"{r.operand(args[0], left)} {self.symbol} {r.operand(args[1], right)}"


@attrs.frozen
class Identity(Form):
    """``is`` / ``is not``: compares objects, so constants other than singletons stay bound."""

    symbol: str
    arity: int = 2
    precedence: int = COMPARE

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        return f"{r.identity(args[0])} {self.symbol} {r.identity(args[1])}"


@attrs.frozen
class Contains(Form):
    """``operator.contains(a, b)`` is ``b in a``: the operands swap."""

    arity: int = 2
    precedence: int = COMPARE

    def order(self) -> tuple[int, ...]:
        return (2, 1)

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        return f"{r.operand(args[1], COMPARE + 1)} in {r.operand(args[0], COMPARE + 1)}"


@attrs.frozen
class Unary(Form):
    symbol: str
    arity: int = 1

    @property
    def precedence(self) -> int:  # type: ignore[override]
        return NOT if self.symbol == "not " else UNARY

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        # Tighter than the syntax needs, for the reader: -(a ** b) rather than -a ** b,
        # -(-a) rather than - -a, not (a & b) rather than not a & b.
        level = UNARY if self.symbol == "not " else POWER + 1
        return f"{self.symbol}{r.operand(args[0], level)}"


@attrs.frozen
class Cast(Form):
    """``typing.cast(T, v)`` is ``v``: type inference narrows with it; at run time it is free."""

    arity: int = 2
    precedence: int = TOP  # that of its operand: the code generator looks through casts

    def order(self) -> tuple[int, ...]:
        return (2,)  # the type is not evaluated

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        return r.expr(args[1])


@attrs.frozen
class Subscript(Form):
    arity: int = 2

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        return f"{r.receiver(args[0])}[{r.index(args[1])}]"


@attrs.frozen
class TupleDisplay(Form):
    """``make_tuple(a, b)`` is ``(a, b)``: a display builds the tuple without a call."""

    arity: int = 0

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        items = ", ".join(r.expr(a) for a in args)
        return f"({items},)" if len(args) == 1 else f"({items})"


@functools.cache
def _tuple_display(arity: int) -> TupleDisplay:
    return TupleDisplay(arity)


@attrs.frozen
class StoreSubscript(Form):
    arity: int = 3
    statement: bool = True
    result_is_none: bool = True

    def order(self) -> tuple[int, ...]:
        return (3, 1, 2)  # a[k] = v evaluates v, then a, then k

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

    def order(self) -> tuple[int, ...]:
        return (1,)

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        return f"{r.receiver(args[0])}.{attribute_name(args[1])}"


@attrs.frozen
class StoreAttribute(Form):
    arity: int = 3
    statement: bool = True
    result_is_none: bool = True

    def applies(self, op: Call) -> bool:
        return super().applies(op) and attribute_name(op.args[1]) is not None

    def order(self) -> tuple[int, ...]:
        return (3, 1)  # o.name = v evaluates v, then o

    def statements(self, args: t.Sequence[Value], r: Operands, target: str) -> list[str]:
        return [f"{r.receiver(args[0])}.{attribute_name(args[1])} = {r.expr(args[2])}"]


@attrs.frozen
class DeleteAttribute(Form):
    arity: int = 2
    statement: bool = True
    result_is_none: bool = True

    def applies(self, op: Call) -> bool:
        return super().applies(op) and attribute_name(op.args[1]) is not None

    def order(self) -> tuple[int, ...]:
        return (1,)

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
    if callee.value is runtime.make_tuple and not op.kwnames:
        return _tuple_display(len(op.args))
    hit = _BY_ID.get(id(callee.value))
    if hit is None or hit[0] is not callee.value or not hit[1].applies(op):
        return None
    return hit[1]
