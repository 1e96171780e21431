"""What makes a forward program quicker without changing a primal value: rewrites of the
program ``gibbous.forward.transform`` wrote.

* ``quicker_sums``: ``np.sum(x)`` of a whole float array as the reverse programs compute it;
* ``fold_scales``: numbers multiplied into a tangent one after another, into one number (a pass
  over the array fewer each; tangents only);
* ``reuse_temporaries``: arithmetic into an operand no one reads afterwards, at run time where
  it fits (``rules.emit.reuse``), as NumPy's elision of an expression's temporaries does.

``primal`` is always the set of calls that compute the primal's values, which stay the primal's
bit for bit (``reuse`` runs the same ufunc loop; the folds touch tangents only).
"""

from __future__ import annotations

import operator
import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Call, Constant, Function, Operation, Result, Value
from gibbous.forward.activity import tangent_carrying
from gibbous.rules import frules
from gibbous.rules.inline import SUM


_MUL = (operator.mul, np.multiply)


def _number_times(op: Operation | None) -> tuple[float, Value] | None:
    """``op`` as ``k * w`` (or ``w * k``), ``k`` a number."""
    if not isinstance(op, Call) or op.kwargs or len(op.args) != 2:
        return None
    if not (isinstance(op.callee, Constant) and op.callee.value in _MUL):
        return None
    a, b = op.args
    for k, w in ((a, b), (b, a)):
        if isinstance(k, Constant) and type(k.value) in (int, float):
            return float(t.cast(float, k.value)), w
    return None


def _tangent_product(v: Value, primal: set[Call]) -> Call | None:
    """The product that made ``v``, a tangent's value used once (so it may change)."""
    op = v.op if isinstance(v, Result) else None
    if not isinstance(op, Call) or op in primal or len(v.uses) != 1 or op.kwargs:
        return None
    if isinstance(op.callee, Constant) and op.callee.value in _MUL and len(op.args) == 2:
        return op
    return None


def fold_scales(f: Function, primal: set[Call]) -> None:
    """Numbers multiplied into a tangent one after another, into one: ``(dx * (2 * x)) * 100``
    is ``dx * (200 * x)``, ``(-dx) * (2 * x)`` is ``dx * (-2 * x)``: a pass over the array
    fewer each.  Tangents only: the primal's values stay the primal's, bit for bit."""
    for op in list(f.calls()):
        scaled = None if op in primal else _number_times(op)
        inner = None if scaled is None else _tangent_product(scaled[1], primal)
        if scaled is None or inner is None:
            continue
        for m in inner.args:
            factor = _tangent_product(m, primal)
            if factor is not None and _number_times(factor) is not None:
                _rescale(f, factor, scaled[0])
                op.result.replace_all_uses_with(inner.result)
                op.erase()
                break
    for op in list(f.calls()):  # ``(-a) * (k * w)``
        if op in primal or _number_times(op) is not None or not (
            isinstance(op.callee, Constant) and op.callee.value in _MUL and len(op.args) == 2
        ):
            continue
        a, b = op.args
        for n, m in ((a, b), (b, a)):
            neg = n.op if isinstance(n, Result) else None
            factor = _tangent_product(m, primal)
            if not _is_neg(neg, primal) or len(n.uses) != 1 or factor is None:
                continue
            if _number_times(factor) is None:
                continue
            assert isinstance(neg, Call)
            scaled_m = _rescale(f, factor, -1.0)
            new = Builder(f).before(op).call(
                op.callee.value, neg.args[0], scaled_m, type=op.type, loc=op.loc
            )
            op.result.replace_all_uses_with(new)
            op.erase()
            neg.erase()
            break


#: the arithmetic of arrays whose result is new memory, as the ufunc that can write it into an
#: operand
_ARITHMETIC: dict[object, np.ufunc] = {
    operator.mul: np.multiply, np.multiply: np.multiply,
    operator.add: np.add, np.add: np.add,
    operator.sub: np.subtract, np.subtract: np.subtract,
    operator.truediv: np.divide, np.divide: np.divide,
    operator.pow: np.power, np.power: np.power,
}  # fmt: skip


def _arithmetic(op: Operation | None) -> np.ufunc | None:
    if not isinstance(op, Call) or op.kwargs or len(op.args) != 2:
        return None
    callee = op.callee
    if not isinstance(callee, Constant):
        return None
    try:
        return _ARITHMETIC.get(callee.value)
    except TypeError:  # (unhashable)
        return None


def reuse_temporaries(f: Function, primal: set[Call]) -> None:
    """Arithmetic on arrays whose operand is a temporary no one reads afterwards (the result
    of arithmetic, used by this call alone) writes into it at run time when it fits
    (``rules.emit.reuse``): a large array allocated fewer per operation, as NumPy's own
    elision of an expression's temporaries does.  A tangent's ``t * (k * w)``, ``t`` such a
    temporary, is ``(t * k) * w``: both into ``t``, no ``k * w`` made."""
    for op in list(f.calls()):
        if op in primal or _arithmetic(op) is not np.multiply or not _dead_temporary(op.args[0]):
            continue
        factor = _tangent_product(op.args[1], primal)
        scaled = None if factor is None else _number_times(factor)
        if factor is None or scaled is None:
            continue
        at = Builder(f).before(op)
        into = at.call(operator.mul, op.args[0], Constant(scaled[0]), type=op.type, loc=op.loc)
        new = at.call(operator.mul, into, scaled[1], type=op.type, name=op.result.name, loc=op.loc)
        op.result.replace_all_uses_with(new)
        op.erase()
        factor.erase()
    for op in list(f.calls()):
        ufunc = _arithmetic(op)
        if ufunc is None or not isinstance(op.type, T.Array):
            continue
        a, b = op.args
        for helper, temp in ((frules.reuse, a), (frules.reuse_right, b)):
            if not _dead_temporary(temp) or t.cast(Result, temp).op.parent is not op.parent:
                continue
            new = Builder(f).before(op).call(
                helper, ufunc, a, b, type=op.type, name=op.result.name, loc=op.loc
            )
            op.result.replace_all_uses_with(new)
            op.erase()
            break


def _dead_temporary(v: Value) -> bool:
    """A float64 array made by arithmetic (new memory) and read by one call alone."""
    if not isinstance(v, Result) or len(v.uses) != 1:
        return False
    if not (isinstance(v.type, T.Array) and v.type.dtype == "float64"):
        return False
    made = v.op
    return _arithmetic(made) is not None or (
        isinstance(made, Call)
        and isinstance(made.callee, Constant)
        and made.callee.value in (frules.reuse, frules.reuse_right)
    )


def _is_neg(op: Operation | None, primal: set[Call]) -> bool:
    return (
        isinstance(op, Call)
        and op not in primal
        and isinstance(op.callee, Constant)
        and op.callee.value in (operator.neg, np.negative)
        and len(op.args) == 1
        and not op.kwargs
    )


def _rescale(f: Function, op: Call, factor: float) -> Value:
    """``k * w`` becomes ``(factor k) * w``, where it was."""
    found = _number_times(op)
    assert found is not None
    k, w = found
    callee = t.cast(Constant, op.callee).value
    new = Builder(f).before(op).call(callee, Constant(factor * k), w, type=op.type, loc=op.loc)
    op.result.replace_all_uses_with(new)
    op.erase()
    return new


def quicker_sums(f: Function) -> None:
    """``np.sum(x)`` of a whole float array as the reverse programs compute it: NumPy's own
    call once it has looked at the keywords (``gibbous.rules.inline.SUM.primal``)."""
    assert SUM.primal is not None
    quicker, constants = SUM.primal
    for op in list(f.calls()):
        callee = op.callee
        if not (isinstance(callee, Constant) and callee.value is np.sum) or op.kwargs:
            continue
        if len(op.args) != 1 or not tangent_carrying(op.args[0].type):
            continue
        if not isinstance(op.args[0].type, T.Array):
            continue
        new = Builder(f).before(op).call(
            quicker, op.args[0], *constants, type=op.type, name=op.result.name, loc=op.loc
        )
        op.result.replace_all_uses_with(new)
        op.erase()
