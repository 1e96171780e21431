"""Errors: missing rules, unsupported constructs, rules called with the wrong arguments."""

from __future__ import annotations

import math
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.api import build_rrule, value_and_gradient
from gibbous.ir.types import FLOAT, Array
from gibbous.rules.registry import Context, MissingRuleError, is_primitive


def line_of(f: t.Callable[..., t.Any], text: str) -> int:
    """The line of ``f``'s source file where ``text`` first appears after ``def``."""
    code = f.__code__
    with open(code.co_filename) as file:
        lines = file.read().splitlines()
    start = code.co_firstlineno
    return next(i for i in range(start, len(lines) + 1) if text in lines[i - 1])


def scaled(x: float) -> float:
    y = x * 2.0
    return y + 1.0


def test_missing_rule_in_an_empty_context() -> None:
    bare = Context("bare")  # no rules at all, not even operator.mul
    with pytest.raises(MissingRuleError) as info:
        build_rrule(scaled, 1.5, ctx=bare)
    message = str(info.value)
    where = f"{__file__}:{line_of(scaled, 'x * 2.0')}"
    assert f"no rule to differentiate operator.mul(f64, const<2.0>) at {where}" in message
    assert "in bare" in message
    assert "@gibbous.primitive(operator.mul," in message and "def rrule(f, x0, x1):" in message


def _pick() -> t.Callable[[float], float] | None:
    """A C function of one float that has no rule (math has several special functions)."""
    for fn in (math.lgamma, math.erfc, math.gamma, math.erf, math.expm1, math.cbrt):
        if not is_primitive(gibbous.DefaultContext, fn, [FLOAT]):
            return t.cast(t.Callable[[float], float], fn)
    return None


UNREGISTERED = _pick()


def _unregistered() -> t.Callable[[float], float]:
    if UNREGISTERED is None:
        pytest.skip("every candidate C function has a rule now")
    return UNREGISTERED


def uses_unregistered(x: float) -> float:
    return UNREGISTERED(x) * x  # type: ignore[misc]


def test_missing_rule_for_a_c_function_names_the_call_and_its_line() -> None:
    fn = _unregistered()
    with pytest.raises(MissingRuleError) as info:
        build_rrule(uses_unregistered, 0.5)
    message = str(info.value)
    line = line_of(uses_unregistered, "UNREGISTERED(x) * x")
    assert f"no rule to differentiate math.{fn.__name__}(f64) at {__file__}:{line} " in message
    assert f"@gibbous.primitive(math.{fn.__name__}, 'f64')" in message
    assert "def rrule(f, x0):" in message


def test_missing_rule_at_a_dynamic_call_site_is_raised_when_called() -> None:
    fn = _unregistered()
    table = {"f": fn}

    def dynamic(x: float) -> float:
        g = table["f"]  # the callee is only known at run time
        return g(x) + x

    rule = build_rrule(dynamic, 0.5)
    with pytest.raises(MissingRuleError) as info:
        value_and_gradient(rule, dynamic, 0.5)
    assert f"math.{fn.__name__}(f64) at {__file__}:{line_of(dynamic, 'g(x) + x')}" in str(
        info.value
    )
    # A call that no derivative can flow through runs without a rule.
    table["f"] = len

    def counts(x: list[float]) -> float:
        g = table["f"]
        return g(x) * 1.0

    rule = build_rrule(counts, [1.0, 2.0])
    assert value_and_gradient(rule, counts, [1.0, 2.0])[0] == 2.0


def with_try(x: float) -> float:
    try:
        return x * 2.0
    except ValueError:
        return 0.0


def test_unsupported_constructs_pass_through() -> None:
    with pytest.raises(gibbous.UnsupportedConstructError, match="'try' statement"):
        build_rrule(with_try, 1.0)


def test_arguments_must_match_the_rules_signature() -> None:
    rule = build_rrule(scaled, 1.5)
    with pytest.raises(TypeError, match=r"built for arguments \(f64\), called with \(f64\[:\]\)"):
        value_and_gradient(rule, scaled, np.ones(2))
    with pytest.raises(TypeError, match="built for"):
        value_and_gradient(rule, scaled, 1.0, 2.0)
    with pytest.raises(TypeError, match="this rule was built for"):
        value_and_gradient(rule, with_try, 1.0)


def test_value_and_gradient_needs_a_scalar_result() -> None:
    def vector(x: np.ndarray) -> np.ndarray:
        return x * 2.0

    rule = build_rrule(vector, np.ones(2))
    with pytest.raises(TypeError, match="use value_and_pullback"):
        value_and_gradient(rule, vector, np.ones(2))


def test_numpy_functions_are_primitives_not_derived() -> None:
    def uses_numpy(x: np.ndarray) -> float:
        return float(np.linalg.slogdet(x)[1])

    if is_primitive(gibbous.DefaultContext, np.linalg.slogdet, [Array("float64", 2)]):
        pytest.skip("slogdet has a rule now")
    with pytest.raises(MissingRuleError, match="numpy.linalg.slogdet"):
        build_rrule(uses_numpy, np.eye(2))



def test_build_rrule_needs_every_argument() -> None:
    def with_default(x: float, scale: float = 2.0) -> float:
        return x * scale

    with pytest.raises(TypeError, match=r"with_default\(x, scale\) takes 2 arguments, 1 given"):
        build_rrule(with_default, 1.0)
    with pytest.raises(TypeError, match="derives rules of Python functions"):
        build_rrule(np.sin, 1.0)
