"""The generated forward and reverse programs: what they record, what they leave out."""

from __future__ import annotations

import re

import traceback

import numpy as np
import pytest

from gibbous.api import build_rrule, value_and_gradient
from gibbous.ir.verify import verify
from gibbous.reverse.derived import DerivedRule
from tests.ad.conftest import check


def source(rule: DerivedRule) -> str:
    return str(rule.program.description.source)  # type: ignore[attr-defined]


def forward_ir(rule: DerivedRule) -> str:
    return str(rule.program.description.forward)  # type: ignore[attr-defined]


def straight(x: float, y: float) -> float:
    return x * y + y


def diamond(x: float, y: float) -> float:
    if x > y:
        z = x * y
    else:
        z = x + y
    return z * z


def loop(x: float, n: int) -> float:
    acc = 0.0
    for i in range(n):
        acc = acc * x + i
    return acc


def two_returns(x: float) -> float:
    if x > 0:
        return x * 2.0
    return x * x


def test_predecessors_are_recorded_only_at_joins() -> None:
    assert "pred_" not in forward_ir(build_rrule(straight, 1.0, 2.0))
    for f, args in [(diamond, (1.0, 2.0)), (loop, (0.5, 3))]:
        text = forward_ir(build_rrule(f, *args))
        joins = len(set(re.findall(r"ad\.push_pred_\w+", text)))
        # CPython 3.12+ copies the diamond's ``return`` into both arms: no join, two returns.
        assert joins == 1 or (f is diamond and "push_return" in text), text


def test_the_returning_block_is_recorded_only_where_there_are_several() -> None:
    assert "push_return" not in str(build_rrule(loop, 0.5, 3).program.description.forward)
    rule = build_rrule(two_returns, 1.0)
    assert "push_return" in str(rule.program.description.forward)
    for x in (1.5, -0.5):
        check(two_returns, x, rule=rule)


def test_inactive_code_runs_as_plain_primal_code() -> None:
    rule = build_rrule(loop, 0.5, 3)
    text = source(rule)
    forward = text.split("def loop_reverse")[0]
    assert "range(" in forward and "next_or_stop(" in forward  # plain calls, no rules
    # mul and add on floats are written inline: no rule objects, no pullbacks
    assert not [s for s in rule.program.slots if s[1] == "rule"]
    forward_ir = str(rule.program.description.forward)
    assert forward_ir.count("push_") == 3  # the loop header's two edges, the body's record


def test_float_adjoints_flow_through_block_arguments() -> None:
    rule = build_rrule(loop, 0.5, 3)
    reverse = source(rule).split("def loop_reverse")[1]
    assert "dacc" in reverse
    for n in (0, 1, 4):
        check(loop, 0.7, n, rule=rule)


def test_forward_and_reverse_are_valid_ir() -> None:
    rule = build_rrule(diamond, 1.0, 2.0)
    stages = rule.program.description  # type: ignore[attr-defined]
    verify(stages.forward)
    verify(stages.reverse)
    assert stages.forward.name == "diamond.forward"
    assert len(stages.reverse.entry.args) == 1


def fails(x: np.ndarray) -> float:
    y = x * 2.0
    if float(np.sum(y)) > 0:
        raise ValueError("positive")
    return float(np.sum(y * y))


def test_tracebacks_show_generated_lines() -> None:
    rule = build_rrule(fails, -np.ones(2))
    with pytest.raises(ValueError) as info:
        value_and_gradient(rule, fails, np.ones(2))
    frames = traceback.extract_tb(info.value.__traceback__)
    generated = [fr for fr in frames if fr.filename.startswith("<gibbous:fails")]
    assert generated and "raise" in (generated[-1].line or "")
    assert value_and_gradient(rule, fails, -np.ones(2))[0] == 8.0


def test_passes_can_be_replaced_and_debug_verifies() -> None:
    from gibbous.passes.dce import DeadCodeElimination

    for passes in ([], "dce", ["fold", DeadCodeElimination()]):
        rule = build_rrule(loop, 0.5, 3, passes=passes, debug=True)
        check(loop, 0.5, 3, rule=rule)
    with pytest.raises(Exception, match="no pass named"):
        build_rrule(loop, 0.5, 3, passes="no-such-pass")


def test_a_compiled_factory_is_instantiated_with_other_closure_values() -> None:
    from gibbous.backends.numpy.codegen import Factory
    from gibbous.ir.builder import Builder
    from gibbous.ir.core import Function
    from gibbous.ir.types import ANY

    class Box:
        def __init__(self, v: int) -> None:
            self.v = v

        def __call__(self) -> int:
            return self.v

    box = Box(1)
    f = Function("get", [])
    b = Builder(f)
    b.ret(b.call(box, type=ANY))
    factory = Factory("get")
    factory.add(f)
    compiled = factory.compile()
    index = compiled.values.index(box)
    (one,) = compiled.instantiate()
    (two,) = compiled.instantiate({index: Box(2)})
    assert (one(), two()) == (1, 2)
    assert getattr(one, "__gibbous_source__") is getattr(two, "__gibbous_source__")


MATRIX = np.linspace(-1.0, 1.0, 12).reshape(3, 4)


def constant_times(w: np.ndarray) -> float:
    return float(np.sum(np.tanh(MATRIX @ w) * MATRIX.sum()))


def test_constant_operands_of_fresh_results_carry_no_fdata() -> None:
    # ``MATRIX @ w`` is a new array: the global needs no fdata, and its gradient (which
    # nobody asked for) is not computed.  Only values a call may alias get fdata.
    from gibbous.tangents.model import NO_TANGENT, CoDual

    # The product is an array form (``matmul_f64``): the reverse passes the global's fdata to
    # its adjoint as a constant, NO_TANGENT, and the adjoint skips that operand.
    w = np.linspace(0.5, 1.5, 8).reshape(4, 2)
    rule = build_rrule(constant_times, w)
    cells = [
        c.cell_contents
        for program in (rule.forward, rule.reverse)
        for c in program.__closure__ or ()  # type: ignore[attr-defined]
    ]
    constants = [c for c in cells if isinstance(c, CoDual) and c.primal is MATRIX]
    assert all(c.fdata is NO_TANGENT for c in constants)
    assert any(c is NO_TANGENT for c in cells)
    assert not any(isinstance(c, np.ndarray) and c.shape == MATRIX.shape and c is not MATRIX
                   for c in cells)  # no fdata made for the global  # fmt: skip
    check(constant_times, w, rule=rule)
