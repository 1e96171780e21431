"""``python -m gibbous facts NAME``: what the library knows about one callable, run in-process."""

from __future__ import annotations

import operator
import typing as t

import numpy as np
import pytest

from gibbous.__main__ import EXIT_ERROR, main
from gibbous.inspect.facts import CallableFacts, facts, format_facts
from gibbous.rules.registry import DefaultContext


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["facts", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_numpy_sin(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "numpy.sin")
    assert code == 0
    assert out.startswith("numpy.sin\n")
    assert "numpy.sin(object<numbers.Number>) [primitive in DefaultContext]" in out
    assert "x: g * conj(cos(x))" in out
    assert "type rule: yes (folds constants)" in out
    assert "purity: pure when" in out
    assert len(out.splitlines()) < 25  # one screen


def test_operator_mul_shows_both_operands_and_its_inline_form(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run(capsys, "operator.mul")
    assert "x: g * conj(y)" in out and "y: g * conj(x)" in out
    assert "inline forms: mul, of 2 operand(s)" in out
    assert "type inference: a container-aware handler" in out


def test_bound_builtin_method_and_method_descriptor(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "numpy.add.reduce")
    assert out.startswith("numpy.add.reduce\n") and "type rule: yes" in out
    _, out, _ = run(capsys, "numpy.ndarray.sum")
    assert "numpy.ndarray.sum(?[...], ...) [primitive in DefaultContext]" in out
    assert "inline forms: sum, of 1 operand(s)" in out


def test_math_hypot_and_identities(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "math.hypot")
    assert "math.hypot(object<numbers.Number>, ...)" in out
    _, out, _ = run(capsys, "typing.cast")
    assert "identity: returns its argument 2" in out
    _, out, _ = run(capsys, "len")
    assert "writes nothing (whatever its arguments): yes" in out


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("numpy.nosuch", "no callable named 'numpy.nosuch': 'numpy' has no attribute 'nosuch'"),
        ("nosuchmodule.f", "no callable named 'nosuchmodule.f'"),
        ("math.pi", "math.pi is not callable but float"),
    ],
)
def test_unknown_names_are_one_clear_line(
    capsys: pytest.CaptureFixture[str], name: str, message: str
) -> None:
    code, out, err = run(capsys, name)
    assert code == EXIT_ERROR and out == ""
    assert err.startswith("gibbous facts: error: ") and message in err
    assert len(err.splitlines()) == 1


def test_a_function_without_facts() -> None:
    def mine(x: float) -> float:
        return x

    f = facts(mine)
    assert f == CallableFacts(
        name=f.name, rules=(), type_rule=False, folds=False, stores=False,
        inference_handler=False, purity="unregistered", purity_condition=None, inline=(),
        writes_nothing=False, identity_operand=None, formulas=(),
    )  # fmt: skip
    assert "rules: none registered" in format_facts(f)


def test_a_variant_is_shown_where_registrations_have_one() -> None:
    """Registrations may name their variant; the record takes it where it exists."""
    (reg, *_) = DefaultContext.registrations(operator.neg)
    f = facts(operator.neg, ctx=t.cast(t.Any, _OneRule(_Named(reg))))
    assert [r.variant for r in f.rules] == ["scalar"]
    assert "variant scalar" in format_facts(f)
    assert all(r.variant is None for r in facts(operator.neg).rules)


class _Named:
    """A registration with a variant, standing in for one."""

    def __init__(self, registration: object) -> None:
        self._r = registration
        self.variant = "scalar"

    def __getattr__(self, name: str) -> object:
        return getattr(self._r, name)


class _OneRule:
    """A context of one registration."""

    def __init__(self, registration: object) -> None:
        self.registration = registration

    def chain(self) -> list[_OneRule]:
        return [self]

    def registrations(self, fn: object) -> tuple[object, ...]:
        return (self.registration,)


def test_the_record_of_a_numpy_function_through_the_api() -> None:
    f = facts(np.sin)
    assert f.purity == "conditional" and f.type_rule and f.folds
    assert any(r.kind == "stateful" for r in f.rules)
