"""``python -m gibbous facts NAME``: what the library knows about one callable, run in-process."""

from __future__ import annotations

import operator

import numpy as np
import pytest

from gibbous.__main__ import EXIT_ERROR, main
from gibbous.inspect.facts import CallableFacts, facts, format_facts


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
    assert len(out.splitlines()) < 30  # one screen (15 rules: out=, where=, dtype= forms)


def test_operator_mul_shows_both_operands_and_its_inline_form(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run(capsys, "operator.mul")
    assert "x: g * conj(y)" in out and "y: g * conj(x)" in out
    assert "operator.mul(f64, f64): mul" in out and "operator.mul(f64[...], f64[...]): mul" in out
    assert "type inference: a container-aware handler" in out


def test_bound_builtin_method_and_method_descriptor(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "numpy.add.reduce")
    assert out.startswith("numpy.add.reduce\n") and "type rule: yes" in out
    _, out, _ = run(capsys, "numpy.ndarray.sum")
    assert "numpy.ndarray.sum(?[...], ...) [primitive in DefaultContext]" in out
    assert "inline forms: numpy.ndarray.sum(f64[...]): sum" in out


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


def test_variants_and_their_inline_forms_are_shown() -> None:
    """The rules of a callable name their variants; the inline forms name their patterns."""
    f = facts(operator.mul)
    variants = {r.variant for r in f.rules}
    assert {None, "float_binary", "real_array_binary"} <= variants
    text = format_facts(f)
    assert "operator.mul(f64, f64) [primitive float_binary in DefaultContext]" in text
    assert "operator.mul(f64, f64): mul" in text and "operator.mul(f64[...], i64): mul" in text
    assert all(r.variant is None for r in facts(len).rules)


def test_the_record_of_a_numpy_function_through_the_api() -> None:
    f = facts(np.sin)
    assert f.purity == "conditional" and f.type_rule and f.folds
    assert any(r.kind == "stateful" for r in f.rules)
