"""Operands a callable has no derivative in that gibbous can compute, refused by name.

Some functions are differentiable in one operand and not, in closed form, in another: SciPy's
``jv(v, x)`` in ``x`` (``jvp``) but not in its order ``v``; ``gammainc(a, x)`` in ``x`` but not
in ``a``; ``expn(n, x)`` only on integers ``n``.  Their rules give such an operand no gradient,
which is right only where it carries no derivative (a constant, an int, an array without a
tangent), so a call whose refused operand may carry one is refused, by the operand's name,
where its rule is chosen:

* reverse mode, at a call whose operand types are known: where activity analysis finds the
  operand active (an argument, or computed from one), so ``jv(0.5, x)``, ``jv(2, x)`` and
  ``jv(v, x)`` for ``v`` of a loop over constants are not refused;
* reverse mode, at a call resolved at run time (a callee or an operand typed ``Any``): where
  the operand is a float or complex number or array, which may carry a derivative there (a
  float a closure captured does: its gradient lands in the closure's tangent);
* forward mode: where the operand has a tangent.

The rules themselves (``build_primitive_rrule``) take such an operand as a constant.
"""

from __future__ import annotations

import typing as t

import attrs

from gibbous.ir import types as T
from gibbous.ir.core import Location
from gibbous.ir.exceptions import GibbousError
from gibbous.ir.names import CallableTable
from gibbous.rules.public_names import callable_name


class NoDerivativeError(GibbousError, NotImplementedError):
    """A call whose operand carries a derivative gibbous cannot compute (``refuse``).  A
    gibbous error: raised inside a program, it passes through the user's ``except`` clauses."""


@attrs.frozen
class Refused:
    """An operand without a derivative: the parameter's ``name`` and ``why``."""

    name: str
    why: str


#: callable -> its refused operands, by position and by keyword
_REFUSED: CallableTable[object, dict[int | str, Refused]] = CallableTable()


def refuse(fn: object, position: int, name: str, why: str, keyword: bool = False) -> None:
    """``fn``'s operand ``position`` (and, with ``keyword``, its keyword ``name``) has no
    derivative gibbous computes: a call in which it carries one is refused."""
    table = _REFUSED.get(fn)
    if table is None:
        table = _REFUSED[fn] = {}
    table[position] = Refused(name, why)
    if keyword:
        table[name] = Refused(name, why)


def refused_operands(fn: object) -> dict[int | str, Refused]:
    """``fn``'s refused operands (by position and keyword; empty for most callables)."""
    return dict(_REFUSED.get(fn, {}))


def check(
    fn: object,
    carries: t.Sequence[bool],
    kwnames: t.Sequence[str],
    loc: Location | None,
    mode: str = "reverse",
) -> None:
    """Raise ``NoDerivativeError`` if an operand of this call of ``fn`` that carries a
    derivative (``carries``, one per operand, the last ``len(kwnames)`` by keyword) is one of
    ``fn``'s refused operands."""
    table = _REFUSED.get(fn)
    if table is None:
        return
    n = len(carries) - len(kwnames)
    for i, carried in enumerate(carries):
        hit = table.get(i if i < n else kwnames[i - n])
        if carried and hit is not None:
            name, where = callable_name(fn), f" at {loc}" if loc is not None else ""
            carrying = _CARRYING[mode]
            raise NoDerivativeError(
                f"{mode} mode: {name}{where}: its argument {hit.name} carries a derivative, and "
                f"{hit.why}.  gibbous differentiates {name} where {hit.name} is a constant (a "
                f"literal, a global, an int, a value computed from those), not {carrying}"
            )


_CARRYING = {
    "reverse": "an argument of the function differentiated (a rule takes the derivative in "
    "every argument, whatever argnums picks) or a value computed from one, nor a float a "
    "closure captured",
    "forward": "an argument with a tangent or a value computed from one",
}


def may_carry(ty: T.Type) -> bool:
    """Whether an operand of runtime type ``ty`` may carry a derivative: a float or complex
    number or array (a call resolved at run time cannot tell whether it does)."""
    if isinstance(ty, T.Const):
        return may_carry(T.typeof(ty.value))
    if isinstance(ty, T.Array):
        return ty.dtype is None or ty.dtype[0] in "fc"
    return isinstance(ty, (T.Float, T.Complex, T.Any))
