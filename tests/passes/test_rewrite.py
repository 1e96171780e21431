"""The rewrite-pattern driver: matching by callee and types, chains of rewrites, the limit,
and the checks on what a pattern may do."""

from __future__ import annotations

import operator

import numpy as np
import pytest

from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Call, Constant, Function
from gibbous.passes import PassManager
from gibbous.passes.rewrite import (
    Match,
    PatternPass,
    RewriteError,
    Rewriter,
    apply_patterns,
    pattern,
)


def _callees(f: Function) -> list[object]:
    return [op.callee.value for op in f.calls() if isinstance(op.callee, Constant)]


def _program(ty: T.Type = T.FLOAT) -> Function:
    """``neg(neg(x)) * 1.0``."""
    f = Function("f", [("x", ty)])
    b = Builder(f)
    x = f.args[0]
    once = b.call(operator.neg, x, type=ty)
    twice = b.call(operator.neg, once, type=ty)
    b.ret(b.call(operator.mul, twice, 1.0, type=ty))
    return f


@pattern(Match(callees=(operator.mul,), args=(T.FLOAT, T.FLOAT)))
def times_one(call: Call, rw: Rewriter) -> bool:
    x, y = call.args
    if not (isinstance(y, Constant) and y.value == 1.0):
        return False
    rw.replace(x)
    return True


@pattern(Match(callees=(operator.neg,)))
def double_negation(call: Call, rw: Rewriter) -> bool:
    (inner,) = call.args
    op = getattr(inner, "op", None)
    if not (isinstance(op, Call) and isinstance(op.callee, Constant)):
        return False
    if op.callee.value is not operator.neg:
        return False
    rw.replace(op.args[0])
    return True


def test_a_rewrite_enables_the_next_and_the_result_is_verified() -> None:
    f = _program()
    assert apply_patterns(f, [times_one, double_negation])
    # mul(neg(neg(x)), 1.0) -> neg(neg(x)) -> x; the first neg is left to dce
    assert operator.mul not in _callees(f)
    assert _callees(f).count(operator.neg) == 1
    ret = f.blocks[0].terminator
    assert ret is not None and ret.operands[0] is f.args[0]
    assert not apply_patterns(f, [times_one, double_negation])  # a fixed point


def test_argument_types_decide_the_match() -> None:
    f = _program(T.Array("float64", 1))
    apply_patterns(f, [times_one])
    assert operator.mul in _callees(f)  # an array times 1.0 is not the float pattern's


def test_a_match_by_a_test_of_the_callee() -> None:
    seen: list[object] = []

    @pattern(Match(where=lambda fn: isinstance(fn, np.ufunc)))
    def note(call: Call, rw: Rewriter) -> bool:
        seen.append(getattr(call.callee, "value", None))
        return False

    f = Function("g", [("x", T.FLOAT)])
    b = Builder(f)
    b.ret(b.call(np.sin, b.call(operator.neg, f.args[0], type=T.FLOAT), type=T.FLOAT))
    assert not apply_patterns(f, [note])
    assert seen == [np.sin]


def test_the_rewriter_builds_before_the_call_at_its_location() -> None:
    @pattern(Match(callees=(operator.pow,)))
    def square(call: Call, rw: Rewriter) -> bool:
        x, _ = call.args
        rw.replace(rw.call(operator.mul, x, x, type=call.type))
        return True

    f = Function("h", [("x", T.FLOAT)])
    b = Builder(f)
    from gibbous.ir.core import Location

    b.loc = Location("user.py", 7)
    b.ret(b.call(operator.pow, f.args[0], 2, type=T.FLOAT))
    assert apply_patterns(f, [square])
    (mul,) = f.calls()
    assert mul.callee.value is operator.mul and mul.loc == Location("user.py", 7)  # type: ignore[attr-defined]


def test_patterns_that_undo_each_other_stop_at_the_limit() -> None:
    @pattern(Match(callees=(operator.add,)))
    def to_sub(call: Call, rw: Rewriter) -> bool:
        rw.replace(rw.call(operator.sub, *call.args, type=call.type))
        return True

    @pattern(Match(callees=(operator.sub,)))
    def to_add(call: Call, rw: Rewriter) -> bool:
        rw.replace(rw.call(operator.add, *call.args, type=call.type))
        return True

    f = Function("k", [("x", T.FLOAT)])
    b = Builder(f)
    b.ret(b.call(operator.add, f.args[0], 1.0, type=T.FLOAT))
    with pytest.raises(RewriteError, match="still rewriting after 50"):
        apply_patterns(f, [to_sub, to_add], limit=50)


def test_a_pattern_that_declines_must_not_have_changed_anything() -> None:
    @pattern(Match(callees=(operator.mul,)))
    def sloppy(call: Call, rw: Rewriter) -> bool:
        rw.call(operator.add, *call.args, type=call.type)
        return False

    with pytest.raises(RewriteError, match="changed the IR but returned False"):
        apply_patterns(_program(), [sloppy])


class TimesOne(PatternPass):
    name = "times-one"
    description = "x * 1.0 -> x on floats"
    patterns = (times_one, double_negation)


def test_a_pattern_pass_runs_under_the_pass_manager() -> None:
    f = _program()
    PassManager([TimesOne(), "dce"], verify=True).run(f)
    assert _callees(f) == []
