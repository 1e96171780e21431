"""examples/flop_count.py: IR-text fixtures whose expectation is the table, and the pass's
contract as an analysis (it changes nothing)."""

from __future__ import annotations

import io
import pathlib
import typing as t

import numpy as np
import pytest

import gibbous
from examples.flop_count import FlopCount, count_flops, rnn_loss
from gibbous.inspect import code_ir
from gibbous.ir.parser import parse
from gibbous.passes import PassManager
from tests.passes import test_fixtures as standard

FIXTURES = sorted((pathlib.Path(__file__).parent / "fixtures" / "flop_count").glob("*.ir"))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixture(path: pathlib.Path) -> None:
    # The standard fixture format, with the table where the expected IR would be.
    fx = standard.load(path)
    f = parse(fx.input)
    assert str(f) == fx.input, "the input is not what the printer prints for it"
    counter = FlopCount()
    passes = [counter if name == FlopCount.name else name for name in fx.pipeline]
    changed = PassManager(passes, verify=True).run(f)
    assert not changed
    assert str(f) == fx.input, "an analysis must not change the IR"
    [report] = counter.reports
    assert report.table() == fx.expected, standard.diff(fx.expected, report.table())


def test_there_are_fixtures() -> None:
    assert len(FIXTURES) >= 2


def test_registered_by_name_and_echoes() -> None:
    f = code_ir(rnn_loss, np.ones((4, 4)), np.ones((4, 3)), [np.ones(3)], np.zeros(4))
    assert not PassManager("flop-count", verify=True).run(f)  # the registered name works
    out = io.StringIO()
    FlopCount(echo=out).run(f)
    assert out.getvalue() == count_flops(f).table()


def test_counts_rnn_loss() -> None:
    args = (np.ones((4, 4)), np.ones((4, 3)), [np.ones(3)], np.zeros(4))
    report = count_flops(code_ir(rnn_loss, *args, stage="optimized"))
    # the loop body: two matmuls, an add and a tanh; after it: h * h, sum, 0.5 * _, _ / len(h)
    body = [b for b in report.blocks if b.matmul]
    assert [(b.loop, b.matmul, b.elementwise) for b in body] == [(1, 2, 2)]
    assert report.total() == (2, 3, 1, 2, 0, 0)


Vector = np.ndarray[t.Any, np.dtype[np.float64]]


def inner(v: Vector) -> float:
    return float(np.sum(np.sin(v)))


def outer(v: Vector) -> float:
    return inner(v * 2.0) + 1.0


def test_build_rrule_runs_it_on_every_function_it_derives() -> None:
    counter = FlopCount()
    v = np.array([0.1, 0.2])
    rule = gibbous.build_rrule(outer, v, passes=["fold", "dce", counter])
    _, (_, dv) = gibbous.value_and_gradient(rule, outer, v)
    np.testing.assert_allclose(dv, 2.0 * np.cos(2.0 * v), rtol=1e-14)
    totals = [(r.function, r.total()) for r in counter.reports]
    assert totals == [
        ("@outer", (1, 1, 0, 0, 0, 0)),  # _ + 1.0 and v * 2.0; the call of inner not followed
        ("@inner", (0, 1, 1, 0, 0, 0)),  # sin, sum
    ]
