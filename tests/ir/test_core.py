"""Values, uses and the rewrite API: nothing may be left dangling."""

from __future__ import annotations

import operator

import numpy as np
import pytest

from gibbous.ir.builder import Builder
from gibbous.ir.core import (
    Branch,
    Call,
    Constant,
    Function,
    IRError,
    Jump,
    Location,
    Use,
    structurally_equal,
)
from gibbous.ir.types import BOOL, FLOAT, INT, Array, Const


def _square_plus_one() -> tuple[Function, Call, Call]:
    f = Function("f", [("x", FLOAT)])
    b = Builder(f)
    sq = b.call(operator.mul, f.args[0], f.args[0], type=FLOAT, name="sq")
    y = b.call(operator.add, sq, 1.0, type=FLOAT, name="y")
    b.ret(y)
    assert isinstance(sq.op, Call) and isinstance(y.op, Call)
    return f, sq.op, y.op


def test_uses_are_recorded_per_operand() -> None:
    f, sq, y = _square_plus_one()
    x = f.args[0]
    assert set(x.uses) == {Use(sq, 1), Use(sq, 2)}
    assert sq.result.users == (y,)
    assert sq.callee.type == Const(operator.mul)
    assert sq.args == (x, x)


def test_replace_all_uses_with_moves_every_use() -> None:
    f, sq, y = _square_plus_one()
    x = f.args[0]
    sq.result.replace_all_uses_with(x)
    assert not sq.result.has_uses()
    assert y.args[0] is x
    assert Use(y, 1) in x.uses
    sq.erase()
    assert sq.parent is None and not any(u.user is sq for u in x.uses)
    assert [type(op).__name__ for op in f.entry.ops] == ["Call", "Return"]


def test_erase_refuses_a_used_result() -> None:
    _, sq, _ = _square_plus_one()
    with pytest.raises(IRError, match="still used"):
        sq.erase()


def test_move_an_operation() -> None:
    f, sq, y = _square_plus_one()
    other = f.add_block("other")
    y.detach()
    other.append(y)
    assert y.parent is other and y.args[0] is sq.result  # operands survive a move
    with pytest.raises(IRError, match="already in a block"):
        other.append(y)


def test_kwargs_and_accessors() -> None:
    f = Function("g", [("a", Array("float64", 2))])
    b = Builder(f)
    s = b.call(np.sum, f.args[0], kwargs={"axis": 0, "keepdims": True}, type=Array("float64", 2))
    op = s.op
    assert isinstance(op, Call)
    assert op.args == (f.args[0],)
    assert list(op.kwargs) == ["axis", "keepdims"]
    assert isinstance(op.kwargs["axis"], Constant) and op.kwargs["axis"].value == 0
    op.set_operand(2, Constant(1))
    axis = op.kwargs["axis"]
    assert isinstance(axis, Constant) and axis.value == 1


def test_branch_accessors_and_successors() -> None:
    f = Function("h", [("c", BOOL), ("x", INT)])
    b = Builder(f)
    t_ = b.add_block("t", [("v", INT)])
    e = b.add_block("e")
    br = b.branch(f.args[0], t_, [f.args[1]], e, [])
    assert isinstance(br, Branch)
    assert br.cond is f.args[0] and br.true_args == (f.args[1],) and br.false_args == ()
    assert f.entry.successors == (t_, e)
    b.at_end(t_).ret(t_.args[0])
    b.at_end(e).ret(0)
    assert isinstance(f.entry.terminator, Branch)


def test_erase_block_checks_outside_uses() -> None:
    f = Function("k", [("x", INT)])
    b = Builder(f)
    nxt = b.add_block("next", [("v", INT)])
    j = b.jump(nxt, f.args[0])
    b.at_end(nxt)
    w = b.call(operator.neg, nxt.args[0], type=INT)
    b.ret(w)
    assert isinstance(j, Jump)
    f.erase_block(nxt)
    assert nxt not in f.blocks
    assert not nxt.args[0].has_uses()
    # The entry's jump still names the erased block: that is the verifier's to report.
    assert f.entry.terminator is j


def test_erase_block_refuses_when_values_escape() -> None:
    f = Function("k", [("x", INT)])
    b = Builder(f)
    mid = b.add_block("mid")
    end = b.add_block("end")
    b.jump(mid)
    b.at_end(mid)
    v = b.call(operator.neg, f.args[0], type=INT)
    b.jump(end)
    b.at_end(end).ret(v)
    with pytest.raises(IRError, match="uses one of its values"):
        f.erase_block(mid)


def test_erase_block_arg() -> None:
    f = Function("k")
    blk = f.add_block("b")
    blk.add_arg(INT, "u")
    w = blk.add_arg(INT, "w")
    blk.erase_arg(0)
    assert blk.args == (w,) and w.index == 0


def test_structural_equality() -> None:
    f1, _, _ = _square_plus_one()
    f2, _, y2 = _square_plus_one()
    assert structurally_equal(f1, f2)
    y2.set_operand(2, Constant(2.0))
    assert not structurally_equal(f1, f2)
    f3, sq3, _ = _square_plus_one()
    sq3.set_operand(2, Constant(1.0))  # x * 1.0 instead of x * x
    assert not structurally_equal(f1, f3)
    assert not structurally_equal(f1, Function("f", [("x", FLOAT)], loc=Location("a.py", 1)))


def test_describe_names_the_location() -> None:
    f = Function("f", [("x", FLOAT)])
    b = Builder(f)
    b.loc = Location("model.py", 12)
    y = b.call(np.sin, f.args[0], type=FLOAT, name="y")
    assert y.op.describe() == "'%y = call numpy.sin(%x) : f64' at model.py:12"


def test_builder_refuses_ir_values_inside_a_constant() -> None:
    f = Function("p", [("x", FLOAT)])
    b = Builder(f)
    with pytest.raises(TypeError, match="build it with a call"):
        b.call(operator.getitem, f.args[0], (slice(None), f.args[0]))
    assert f.entry.ops == ()  # nothing half-built was left behind
