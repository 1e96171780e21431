"""Inline forms of scalar rules: what the AD pass writes in place of a rule call.

A rule call costs a ``CoDual`` for the result, a pullback closure, a tuple, a stack push and,
on the way back, a call of the pullback and a tuple of rdata: a dozen Python objects for one
``a * b`` on floats.  For the primitives that dominate scalar loops (operators, ``math``
functions and ``x[i]`` on float arrays), the AD pass instead writes the primal call itself
into the forward program, saves the few values the derivative needs, and writes the
derivative's arithmetic into the reverse program.  The numbers are those of the registered
rule: the derivatives are the same formulas (``gibbous.rules.formulas``), written out as
expressions, or called as their float rendering where they branch.  ``float(x)`` and whole
float64 arrays summed or averaged to a float (``np.sum(x)``, ``x.mean()``) are written out too:
the array's fdata takes the adjoint in place (``dx += dy``).

An inline form applies only where the registered rule the call resolves to is the library's
own (a rule a user registers for ``math.sin`` is called as a rule), on ``float64`` scalars, ints
and bools, so every adjoint is a plain float.

``InlineRule.saves`` names what the reverse needs, by operand: ``("primal", i)`` (argument
``i``), ``("fdata", i)`` or ``("result", -1)``; ``adjoint(b, saved, dy)`` writes the reverse
arithmetic with the builder ``b`` and returns one adjoint per argument (``None``: none).
"""

from __future__ import annotations

import functools
import operator
import typing as t

import attrs
import numpy as np

from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Value
from gibbous.ir.names import CallableTable
from gibbous.rules import render as R
from gibbous.rules.prims import elementwise as E
from gibbous.rules.prims import scalars as S

F64 = T.Float("float64")
Save = tuple[str, int]  # ("primal", i), ("fdata", i) or ("result", -1)
Adjoint = t.Callable[[Builder, t.Sequence[Value], Value], t.Sequence[Value | None]]


@attrs.frozen
class InlineRule:
    name: str
    saves: tuple[Save, ...]
    adjoint: Adjoint
    arity: int = 1  # of the calls it applies to (``math.log`` has another rule for two)


def _call(b: Builder, fn: object, *args: object) -> Value:
    return b.call(fn, *args, type=F64)


# --------------------------------------------------------------------------------------------
# Derivatives written out: the registered rule's formula (``gibbous.rules.formulas``), saving
# the operands and result it reads; a formula that branches is its float rendering, called.

_SAVES: dict[str, Save] = {"x": ("primal", 0), "y": ("primal", 1), "z": ("result", -1)}


def _inline(name: str, grads: t.Sequence[E.UnaryGrad | E.BinaryGrad]) -> InlineRule:
    arity = len(grads)
    formulas = [E.FORMULA[grad] for grad in grads]
    if all(map(R.inline_expressible, formulas)):
        used = set().union(*[f.variables() for f in formulas])
        names = [n for n in "xyz" if n in used]

        def written(b: Builder, saved: t.Sequence[Value], dy: Value) -> t.Sequence[Value]:
            env = {"g": dy, **dict(zip(names, saved))}
            call = functools.partial(_call, b)
            return [R.inline_adjoint(f, call, env) for f in formulas]

        return InlineRule(name, tuple(_SAVES[n] for n in names), written, arity)
    floats = [(E.FLOAT_UNARY, E.FLOAT_BINARY)[arity - 1][grad] for grad in grads]
    saves = (_SAVES["x"], _SAVES["z"]) if arity == 1 else tuple(_SAVES.values())

    def called(b: Builder, saved: t.Sequence[Value], dy: Value) -> t.Sequence[Value]:
        return [_call(b, fn, dy, *saved) for fn in floats]

    return InlineRule(name, saves, called, arity)


def _table() -> CallableTable[object, InlineRule]:
    rules: CallableTable[object, InlineRule] = CallableTable()
    rules[float] = InlineRule("float", (), lambda b, saved, dy: (dy,))
    for fn, g in [*S.OPERATOR_UNARY.items(), *S.MATH_UNARY.items()]:
        if g is not E.g_abs and g in E.FLOAT_UNARY:  # abs: the rule's own tie convention
            rules[fn] = _inline(getattr(fn, "__name__", "?"), (g,))
    binary = dict(S.OPERATOR_BINARY)
    binary.update({i: S.OPERATOR_BINARY[op] for i, op in S.IN_PLACE.items()})
    binary.update(S.MATH_BINARY)
    for fn, (gx, gy) in binary.items():
        if gx in E.FLOAT_BINARY and gy in E.FLOAT_BINARY:
            rules[fn] = _inline(getattr(fn, "__name__", "?"), (gx, gy))
    return rules


_SCALAR_RULES = _table()


def _add_at(b: Builder, saved: t.Sequence[Value], dy: Value) -> t.Sequence[Value | None]:
    """``dx[i] += dy``: an element's adjoint goes into its array's fdata."""
    fdata, index = saved
    old = _call(b, operator.getitem, fdata, index)
    b.call(operator.setitem, fdata, index, _call(b, operator.add, old, dy), type=T.NONE)
    return (None, None)


_GETITEM = InlineRule("getitem", (("fdata", 0), ("primal", 1)), _add_at, 2)


def _add_all(b: Builder, saved: t.Sequence[Value], dy: Value) -> t.Sequence[Value | None]:
    """``dx += dy``: every element of a summed array gets the sum's adjoint, in place."""
    (fdata,) = saved
    b.call(operator.iadd, fdata, dy, type=fdata.type)
    return (None,)


def _add_mean(b: Builder, saved: t.Sequence[Value], dy: Value) -> t.Sequence[Value | None]:
    fdata, x = saved
    size = b.call(getattr, x, "size", type=T.INT)
    b.call(operator.iadd, fdata, _call(b, operator.truediv, dy, size), type=fdata.type)
    return (None,)


# Whole float64 arrays reduced to a float: the adjoint goes into the array's fdata in place.
_REDUCTIONS: CallableTable[object, InlineRule] = CallableTable([
    (np.sum, InlineRule("sum", (("fdata", 0),), _add_all)),
    (np.ndarray.sum, InlineRule("sum", (("fdata", 0),), _add_all)),
    (np.mean, InlineRule("mean", (("fdata", 0), ("primal", 0)), _add_mean)),
    (np.ndarray.mean, InlineRule("mean", (("fdata", 0), ("primal", 0)), _add_mean)),
])

# --------------------------------------------------------------------------------------------
# Lookup


def _scalar(ty: T.Type) -> bool:
    if isinstance(ty, T.Const):
        return type(ty.value) in (float, int, bool)
    return ty == F64 or isinstance(ty, (T.Int, T.Bool))


def _index(ty: T.Type, ndim: int) -> bool:
    if isinstance(ty, T.Tuple):
        return len(ty.items) == ndim and all(_integer(item) for item in ty.items)
    return ndim == 1 and _integer(ty)


def _integer(ty: T.Type) -> bool:
    if isinstance(ty, T.Const):
        return type(ty.value) in (int, np.int64)
    return isinstance(ty, T.Int) and not isinstance(ty, T.Bool)


def inline_forms(fn: object) -> tuple[InlineRule, ...]:
    """Every inline form of ``fn``, whatever the call's types."""
    forms = [table[fn] for table in (_REDUCTIONS, _SCALAR_RULES) if fn in table]
    return (*forms, _GETITEM) if fn is operator.getitem else tuple(forms)


def find_inline(
    fn: object, arg_types: t.Sequence[T.Type], kwnames: t.Sequence[str], result: T.Type
) -> InlineRule | None:
    """The inline form of the library's rule for this call, if it has one."""
    if kwnames or result != F64:
        return None
    if len(arg_types) == 1 and fn in _REDUCTIONS:
        (array,) = arg_types
        if isinstance(array, T.Array) and array.dtype == "float64":
            return _REDUCTIONS[fn]
        return None
    if fn is operator.getitem and len(arg_types) == 2:
        array, index = arg_types
        if isinstance(array, T.Array) and array.dtype == "float64" and array.ndim is not None:
            return _GETITEM if _index(index, array.ndim) else None
        return None
    if fn not in _SCALAR_RULES or not all(map(_scalar, arg_types)):
        return None
    rule = _SCALAR_RULES[fn]
    return rule if len(arg_types) == rule.arity else None
