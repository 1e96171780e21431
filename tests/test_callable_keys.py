"""Every table of facts about callables is looked up through ``callable_key``: a callee that
says it equals everything, or hashes like ``operator.mul``, borrows no fact, and an
unhashable one crashes no lookup (issue 13)."""

from __future__ import annotations

import math
import operator
import typing as t

import numpy as np
import pytest

from gibbous.api import build_rrule, value_and_gradient
from gibbous.frontend import checks
from gibbous.ir.core import Call, Constant
from gibbous.ir.names import CallableTable, callable_key
from gibbous.ir.purity import is_pure, returns_fresh
from gibbous.ir.types import FLOAT
from gibbous.reverse import activity, primal_pass
from gibbous.infer.handlers import _handler
from gibbous.reverse.higher_order import rule_factory
from gibbous.rules.inline import F64, InlineRule
from gibbous.infer.implementations import implementation
from gibbous.rules.registry import DefaultContext, MissingRuleError, lookup_rule
from gibbous.infer.typerules.table import lookup_type_rule


class Scale:
    """Multiplies by its factor; equal to everything, hashed like ``like``."""

    def __init__(self, factor: float, like: object = operator.mul) -> None:
        self.factor = factor
        self.like = like

    def __call__(self, x: float, y: float) -> float:
        return self.factor * x * y

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return hash(self.like)


class Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __call__(self, x: float) -> float:
        return 2.0 * x


SCALE = Scale(3.0)
# Hashed like the AD pass's identities (t.cast returns its operand 2, here y): to borrow that
# fact would pass y through as the result.
LIKE_CAST = Scale(3.0, like=t.cast)
LIKE_TRUTH = Scale(3.0, like=operator.truth)
IMPOSTORS = [SCALE, LIKE_CAST, LIKE_TRUTH]


def test_the_impostor_really_is_equal() -> None:
    """The premise of the tests below: equality and hashing would confuse it."""
    assert SCALE == operator.mul and hash(SCALE) == hash(operator.mul)
    assert SCALE in {operator.mul: 1} and SCALE in (t.cast, operator.truth)


# The impostors are globals, so that the frontend makes each callee a constant the tables see.
def f_mul(x: float, y: float) -> float:
    return SCALE(x, y) + math.sin(x)


def f_cast(x: float, y: float) -> float:
    return LIKE_CAST(x, y) + math.sin(x)


def f_truth(x: float, y: float) -> float:
    return LIKE_TRUTH(x, y) + math.sin(x)


@pytest.mark.parametrize("f", [f_mul, f_cast, f_truth])
def test_impostor_gets_its_own_derived_rule_and_the_right_gradient(
    f: t.Callable[[float, float], float],
) -> None:
    x, y = 0.7, -1.3
    _, grads = value_and_gradient(build_rrule(f, x, y), f, x, y)
    h = 1e-6
    fd_x = (f(x + h, y) - f(x - h, y)) / (2 * h)
    fd_y = (f(x, y + h) - f(x, y - h)) / (2 * h)
    assert grads[1] == pytest.approx(fd_x, rel=1e-7)
    assert grads[2] == pytest.approx(fd_y, rel=1e-7)
    assert grads[1] == pytest.approx(3.0 * y + math.cos(x))


def inline_form(fn: object, types: tuple[t.Any, ...]) -> InlineRule | None:
    """The inline form of the registration a call of ``fn`` with these types resolves to."""
    try:
        return lookup_rule(DefaultContext, fn, types).inline
    except MissingRuleError:
        return None


def test_impostor_borrows_no_fact() -> None:
    for fn in (*IMPOSTORS, Unhashable()):
        assert inline_form(fn, (F64, F64)) is None
        assert inline_form(fn, (F64,)) is None
        assert fn not in activity.WRITE_NOTHING
        call = Call(Constant(fn), [Constant(1.0), Constant(2.0)], type=FLOAT)
        assert primal_pass.identity_operand(call) is None
        assert not returns_fresh(call)
        assert not is_pure(fn)
        assert _handler(fn) is None
        assert lookup_type_rule(fn) is None
        assert not DefaultContext.registrations(fn)
        assert rule_factory(fn) is None
        assert implementation(fn) is None
        checks.check_callee(t.cast(t.Any, f_for_checks), 1, fn, 0)  # no frame builtin


def f_for_checks() -> None:
    pass


def test_tables_find_their_own_callables() -> None:
    assert inline_form(operator.mul, (F64, F64)) is not None
    assert inline_form(math.sin, (F64,)) is not None
    assert operator.truth in activity.WRITE_NOTHING
    call = Call(Constant(t.cast), [Constant(float), Constant(1.0)], type=FLOAT)
    assert primal_pass.identity_operand(call) == 2  # operand 0 is the callee


def test_bound_builtin_methods_are_found_afresh() -> None:
    """``np.add.reduce`` is a new object on each access: found by owner and name."""
    first = np.add.reduce
    table: CallableTable[object, str] = CallableTable([(first, "reduce")])
    again = np.add.reduce
    assert again is not first
    assert again in table and table[again] == "reduce" and table.get(again) == "reduce"
    assert np.multiply.reduce not in table and np.add.accumulate not in table
    assert callable_key(again) == callable_key(first)
    assert lookup_type_rule(np.add.reduce) is not None  # the type rules' table


def test_table_is_a_small_mapping() -> None:
    table: CallableTable[object, int] = CallableTable([(operator.mul, 1)])
    table[Unhashable] = 2
    assert list(table) == [operator.mul, Unhashable] and len(table) == 2
    assert dict(table.items()) == {operator.mul: 1, Unhashable: 2}
    assert table.get(SCALE) is None and table.get(SCALE, 0) == 0
    assert table.pop(operator.mul) == 1 and operator.mul not in table
    with pytest.raises(KeyError):
        table[SCALE]
