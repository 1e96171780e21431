"""``build_rrule(..., debug=True)`` checks the fdata and rdata of every call site's rule."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

from gibbous.api import build_rrule, value_and_gradient
from gibbous.reverse.debug_checks import CheckedRule, RuleCheckError
from gibbous.rules.registry import Context, DefaultContext, primitive
from gibbous.tangents.model import NO_TANGENT, CoDual
from tests.ad.test_errors import line_of

CD = CoDual[t.Any, t.Any]


def halve(x: np.ndarray) -> np.ndarray:
    return x / 2.0


def scale(x: float) -> float:
    return x * 3.0


CTX = Context("debug-checks", parent=DefaultContext)


@primitive(halve, "f64[:]", ctx=CTX)
def halve_float32_fdata(f: CD, x: CD) -> tuple[CD, t.Any]:
    y = halve(x.primal)
    fdata = np.zeros(y.shape, np.float32)  # wrong: a float64 array's fdata is float64

    def pullback(dy: object) -> tuple[t.Any, ...]:
        x.fdata[...] += fdata / 2.0
        return NO_TANGENT, NO_TANGENT

    return CoDual(y, fdata), pullback


@primitive(scale, "f64", ctx=CTX)
def scale_list_rdata(f: CD, x: CD) -> tuple[CD, t.Any]:
    def pullback(dy: float) -> tuple[t.Any, ...]:
        return NO_TANGENT, [3.0 * dy]  # wrong: a float's rdata is a float

    return CoDual(scale(x.primal), NO_TANGENT), pullback


def uses_halve(x: np.ndarray) -> float:
    return float(np.sum(halve(x)))


def uses_scale(x: float) -> float:
    return scale(x) + 1.0


def test_wrong_fdata_is_reported_with_the_rule_and_the_line() -> None:
    x = np.ones(3)
    rule = build_rrule(uses_halve, x, ctx=CTX, debug=True)
    with pytest.raises(RuleCheckError) as info:
        value_and_gradient(rule, uses_halve, x)
    message = str(info.value)
    assert "halve_float32_fdata" in message
    assert f"({__file__}:{halve_float32_fdata.__code__.co_firstlineno})" in message
    assert f"at {__file__}:{line_of(uses_halve, 'halve(x)')}" in message
    assert "float32" in message and "float64" in message


def test_wrong_rdata_is_reported_with_the_rule_and_the_line() -> None:
    rule = build_rrule(uses_scale, 2.0, ctx=CTX, debug=True)
    with pytest.raises(RuleCheckError) as info:
        value_and_gradient(rule, uses_scale, 2.0)
    message = str(info.value)
    assert "scale_list_rdata" in message
    assert f"at {__file__}:{line_of(uses_scale, 'scale(x) + 1.0')}" in message
    assert "the rdata of argument 0 is list" in message


def test_checks_cost_nothing_without_debug() -> None:
    rule = build_rrule(uses_scale, 2.0, ctx=CTX)
    assert not any(isinstance(c, CheckedRule) for c in rule.children)


def good(x: np.ndarray, y: float) -> float:
    z = np.sin(x) * y
    acc = 0.0
    for v in z:
        acc = acc + v * v
    return float(acc + np.sum(z))


def test_correct_rules_pass_the_checks() -> None:
    x = np.linspace(0.0, 1.0, 4)
    rule = build_rrule(good, x, 0.5, debug=True)
    assert any(isinstance(c, CheckedRule) for c in rule.children)
    plain = value_and_gradient(build_rrule(good, x, 0.5), good, x, 0.5)
    checked = value_and_gradient(rule, good, x, 0.5)
    assert checked[0] == plain[0]
    assert np.allclose(checked[1][1], plain[1][1]) and checked[1][2] == plain[1][2]
