"""Errors: missing rules, unsupported constructs, rules called with the wrong arguments."""

from __future__ import annotations

import math
import os
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.tangents.model import MutableTangent
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


# A context without rules: every callable in it is one without a rule, whatever the library has.
EMPTY = Context("Empty", parent=None)


def _without(fn: object) -> Context:
    """DefaultContext's rules but those of ``fn``: a callable without a rule, for sure."""
    ctx = Context("WithoutLgamma", parent=gibbous.DefaultContext.parent)
    for registrations in gibbous.DefaultContext._rules.values():
        for r in registrations:
            if r.fn is not fn:
                ctx.register(r)
    return ctx


NO_LGAMMA = _without(math.lgamma)


def uses_unregistered(x: float) -> float:
    return math.lgamma(x) * x


def test_missing_rule_for_a_c_function_names_the_call_and_its_line() -> None:
    with pytest.raises(MissingRuleError) as info:
        build_rrule(uses_unregistered, 0.5, ctx=NO_LGAMMA)
    message = str(info.value)
    line = line_of(uses_unregistered, "math.lgamma(x) * x")
    assert f"no rule to differentiate math.lgamma(f64) at {__file__}:{line} in Without" in message
    assert "@gibbous.primitive(math.lgamma, 'f64')" in message
    assert "def rrule(f, x0):" in message


def test_missing_rule_at_a_dynamic_call_site_is_raised_when_called() -> None:
    table: dict[str, t.Callable[..., t.Any]] = {"f": math.lgamma}

    def dynamic(x: float) -> float:
        g = table["f"]  # the callee is only known at run time
        return g(x) + x

    rule = build_rrule(dynamic, 0.5, ctx=NO_LGAMMA)
    with pytest.raises(MissingRuleError) as info:
        value_and_gradient(rule, dynamic, 0.5)
    assert f"math.lgamma(f64) at {__file__}:{line_of(dynamic, 'g(x) + x')}" in str(
        info.value
    )
    # A call that no derivative can flow through runs without a rule.
    table["f"] = len

    def counts(x: list[float]) -> float:
        g = table["f"]
        return g(x) * 1.0

    rule = build_rrule(counts, [1.0, 2.0], ctx=NO_LGAMMA)
    assert value_and_gradient(rule, counts, [1.0, 2.0])[0] == 2.0


def with_try(x: float) -> float:
    try:
        return x * 2.0
    except ValueError:
        return 0.0


def with_match(x: float) -> float:
    match x:
        case complex(real=r):
            return r
        case _:
            return x * 2.0


def test_unsupported_constructs_pass_through() -> None:
    with pytest.raises(gibbous.UnsupportedConstructError, match="a match statement"):
        build_rrule(with_match, 1.0)


def test_arguments_must_match_the_rules_signature() -> None:
    rule = build_rrule(scaled, 1.5)
    with pytest.raises(TypeError, match=r"built for arguments \(f64\), called with \(f64\[:\]\)"):
        value_and_gradient(rule, scaled, np.ones(2))
    with pytest.raises(TypeError, match=r"scaled\(x\): too many positional arguments"):
        value_and_gradient(rule, scaled, 1.0, 2.0)
    with pytest.raises(TypeError, match="this rule was built for"):
        value_and_gradient(rule, with_try, 1.0)


def test_value_and_gradient_needs_a_scalar_result() -> None:
    def vector(x: np.ndarray) -> np.ndarray:
        return x * 2.0

    rule = build_rrule(vector, np.ones(2))
    with pytest.raises(TypeError, match="use value_and_pullback"):
        value_and_gradient(rule, vector, np.ones(2))


def test_numpy_python_without_a_rule_is_derived_and_refused_at_the_users_call() -> None:
    # Without its rule, slogdet is derived from NumPy's source, which calls into LAPACK
    # (a ufunc without a rule in EMPTY): the error names the function the user called, at
    # the user's line, and what inside NumPy stopped it.
    def uses_numpy(x: np.ndarray) -> float:
        return float(np.linalg.slogdet(x)[1])

    with pytest.raises(MissingRuleError, match="numpy.linalg.slogdet") as caught:
        build_rrule(uses_numpy, np.eye(2), ctx=EMPTY)
    message = str(caught.value)
    assert f"{__file__}:" in message.splitlines()[0]
    assert "NumPy's own Python" in message and caught.value.inside is not None



def test_parameters_left_out_take_their_defaults() -> None:
    def with_default(x: float, scale: float = 2.0, *rest: float, **named: float) -> float:
        return x * scale + sum(rest) + sum(named.values())

    rule = build_rrule(with_default, 1.5)
    value, (df, dx) = gibbous.value_and_gradient(rule, with_default, 1.5)
    assert (value, dx) == (3.0, 2.0)
    # The function's own tangent holds its float default's, untouched: the call passed it.
    assert isinstance(df, MutableTangent) and df.fields == {"__defaults__": (0.0,)}
    assert gibbous.grad(with_default)(1.5) == 2.0
    value, (_, dx, dscale) = gibbous.value_and_gradient(
        build_rrule(with_default, 1.5, 3.0), with_default, 1.5, 3.0
    )
    assert (value, dx, dscale) == (4.5, 3.0, 1.5)

    def needs_two(x: float, y: float) -> float:
        return x * y

    with pytest.raises(TypeError, match=r"needs_two\(x, y\): missing a required argument: 'y'"):
        build_rrule(needs_two, 1.0)


# --------------------------------------------------------------------------------------------
# Messages name the user's code and the callable's public name, never gibbous's insides


def _message(f: t.Callable[..., t.Any], *args: object) -> str:
    with pytest.raises(gibbous.ir.exceptions.GibbousError) as info:
        gibbous.grad(f)(*args)
    return str(info.value)


def _inner_kolmogi(x: np.ndarray) -> float:
    return float(np.sum(scipy_special.kolmogi(x)))


def _calls_kolmogi(x: np.ndarray) -> float:
    return _inner_kolmogi(x) * 2.0


_VECTORIZED_ABS = np.frompyfunc(abs, 1, 1)  # (a ufunc made at run time: no rule, no source)


def _dynamic_ufunc(x: np.ndarray, fns: list[t.Any]) -> float:
    return float(np.sum(fns[0](x)))


def _zipped(x: np.ndarray) -> float:
    def gen() -> t.Any:
        yield from_one(x)

    return float(sum(a * b for a, b in zip(gen(), gen())))


def from_one(x: np.ndarray) -> float:
    return float(x[0])


def _half_done(v: list[float]) -> float:
    acc: list[float] = []

    def work(x: float) -> float:
        acc.append(x * 2.0)
        if x < 0:
            raise ValueError("late")
        return x

    s = 0.0
    for x in v:
        try:
            s += work(x)
        except ValueError:
            s -= 1.0
    return s + sum(acc)


scipy_special = pytest.importorskip("scipy.special")


@pytest.mark.parametrize(
    ("f", "args", "says"),
    [
        (_calls_kolmogi, (np.full(2, 0.5),), ["scipy.special.kolmogi(f64[:])", "gibbous.primitive("]),
        (_dynamic_ufunc, (np.ones(2), [_VECTORIZED_ABS]), ["<ufunc 'abs (vectorized)'>(f64[:])"]),
        (_zipped, (np.ones(2),), ["generator", "gen()", "for loop"]),
        (_half_done, ([1.0, -2.0],), ["work raised (ValueError: late)", "caught"]),
    ],
    ids=["missing-rule", "dynamic-missing-rule", "generator-in-zip", "partial-call"],
)
def test_messages_name_user_code(
    f: t.Callable[..., t.Any], args: tuple[object, ...], says: list[str]
) -> None:
    message = _message(f, *args)
    for text in says:
        assert text in message, message
    # (no file of gibbous's own: the package's folder, wherever the checkout is and whatever
    # its name; a clone named ``gibbous`` has the user's file under a ``gibbous/`` too)
    package = os.path.dirname(gibbous.__file__) + os.sep
    assert "runtime.registered" not in message and package not in message, message
    if f is not _half_done:
        assert __file__ in message  # the user's code that made the call, or the generator
