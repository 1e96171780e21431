"""The verifier: one broken function per invariant, and the message it must produce.

Broken IR cannot be built through the API (that is the point of core's methods), so these tests
break it by writing private fields directly, the way a buggy pass would.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

from gibbous.ir import cfg
from gibbous.ir.builder import Builder
from gibbous.ir.core import (
    Block,
    Call,
    Constant,
    Function,
    Location,
    Result,
    Terminator,
    Use,
    Value,
)
from gibbous.ir.types import BOOL, FLOAT, INT, NONE, Array, Object
from gibbous.ir.verify import VerificationError, verify

_write = object.__setattr__


def at(line: int) -> Location:
    return Location("f.py", line)


def problems(f: Function) -> list[str]:
    with pytest.raises(VerificationError) as info:
        verify(f)
    return info.value.problems


def only_problem(f: Function) -> str:
    (problem,) = problems(f)
    return problem


def assert_parts(message: str, *parts: str) -> None:
    for part in parts:
        assert part in message, f"{part!r} not in {message!r}"


def terminator(block: Block) -> Terminator:
    term = block.terminator
    assert term is not None
    return term


def defining(v: Value) -> Call:
    assert isinstance(v, Result)
    return v.op


def nested_sum() -> Function:
    """``total = sum(i * j for i in range(n) for j in range(i))``, as blocks with arguments."""
    f = Function("nested_sum", [("n", INT)], loc=at(1))
    b = Builder(f)
    outer = b.add_block("outer", [("i", INT), ("total", INT)])
    inner = b.add_block("inner", [("j", INT), ("acc", INT)])
    inner_body = b.add_block("inner_body")
    outer_next = b.add_block("outer_next")
    done = b.add_block("done")
    n = f.args[0]

    b.jump(outer, 0, 0, loc=at(2))
    b.at_end(outer)
    i, total = outer.args
    more = b.call(operator.lt, i, n, type=BOOL, name="more", loc=at(2))
    b.branch(more, inner, [0, total], done, [], loc=at(2))

    b.at_end(inner)
    j, acc = inner.args
    inner_more = b.call(operator.lt, j, i, type=BOOL, name="inner_more", loc=at(3))
    b.branch(inner_more, inner_body, [], outer_next, [], loc=at(3))

    b.at_end(inner_body)
    prod = b.call(operator.mul, i, j, type=INT, name="prod", loc=at(4))
    acc2 = b.call(operator.add, acc, prod, type=INT, name="acc", loc=at(4))
    j2 = b.call(operator.add, j, 1, type=INT, name="j", loc=at(3))
    b.jump(inner, j2, acc2, loc=at(3))

    b.at_end(outer_next)
    i2 = b.call(operator.add, i, 1, type=INT, name="i", loc=at(2))
    b.jump(outer, i2, acc, loc=at(2))

    b.at_end(done)
    b.ret(total, loc=at(5))
    return f


# --------------------------------------------------------------------------------------------
# Valid IR passes


def test_valid_function_with_nested_loops_passes() -> None:
    f = nested_sum()
    assert [loop.depth for loop in cfg.natural_loops(f)] == [1, 2]
    verify(f)


def test_valid_ir_with_unprintable_constants_and_subtypes_along_edges_passes() -> None:
    f = Function("g", [("x", FLOAT)])
    b = Builder(f)
    join = b.add_block("join", [("k", INT), ("a", Array("float64", 1))])
    local = lambda v: v  # noqa: E731 - a constant with no import path
    y = b.call(local, f.args[0], type=FLOAT, name="y")
    b.jump(join, True, np.zeros(3))
    b.at_end(join).ret(y)
    verify(f)


def test_uses_in_unreachable_blocks_are_not_checked_for_dominance() -> None:
    f = Function("g", [("x", FLOAT)])
    b = Builder(f)
    dead, exit_ = b.add_block("dead"), b.add_block("exit")
    b.jump(exit_)
    b.at_end(exit_)
    y = b.call(operator.neg, f.args[0], type=FLOAT, name="y")
    b.ret(y)
    b.at_end(dead).ret(y)  # y is defined in exit, which does not dominate dead
    verify(f)


# --------------------------------------------------------------------------------------------
# Blocks


def test_every_block_belongs_to_the_function() -> None:
    f = nested_sum()
    other = Function("other")
    done = f.blocks[-1]
    _write(done, "_parent", other)
    assert_parts(
        only_problem(f),
        "@nested_sum, ^done:",
        "the block's parent is function @other",
        "expected its parent to be function @nested_sum",
    )


def test_a_block_is_never_empty() -> None:
    f = nested_sum()
    f.add_block("empty")
    assert_parts(
        only_problem(f),
        "@nested_sum, ^empty:",
        "the block is empty",
        "expected operations ending in a terminator",
    )


def test_a_block_ends_in_a_terminator() -> None:
    f = nested_sum()
    done = f.blocks[-1]
    terminator(done).erase()
    Builder(f).at_end(done).call(print, f.args[0], type=NONE, loc=at(7))
    assert_parts(
        only_problem(f),
        "@nested_sum, ^done, '%0 = call builtins.print(%n) : none' at f.py:7:",
        "the block's last operation is not a terminator",
        "expected every block to end in a jump, branch, return or raise",
    )


def test_a_terminator_is_only_ever_last() -> None:
    f = nested_sum()
    done = f.blocks[-1]
    Builder(f).before(done.ops[0]).ret(f.args[0], loc=at(6))
    assert_parts(
        only_problem(f),
        "@nested_sum, ^done, 'return %n' at f.py:6:",
        "a terminator in the middle of the block",
        "expected terminators only as the last operation of a block",
    )


# --------------------------------------------------------------------------------------------
# Operations


def test_an_operations_parent_is_its_block() -> None:
    f = nested_sum()
    inner_body = f.blocks[3]
    prod = inner_body.ops[0]
    _write(prod, "_parent", f.blocks[1])
    assert_parts(
        only_problem(f),
        "@nested_sum, ^inner_body, '%prod = call operator.mul(%i, %j) : i64' at f.py:4:",
        "the operation's parent is ^outer",
        "expected its parent to be ^inner_body, which contains it",
    )


# --------------------------------------------------------------------------------------------
# Edges


def test_nothing_jumps_to_the_entry_block() -> None:
    f = nested_sum()
    outer_next = f.blocks[4]
    jump = outer_next.terminator
    assert jump is not None
    i2 = outer_next.ops[0]
    jump.erase()
    Builder(f).at_end(outer_next).jump(f.entry, f.args[0], loc=at(8))
    assert isinstance(i2, Call)
    i2.erase()
    assert_parts(
        only_problem(f),
        "@nested_sum, ^outer_next, 'jump ^entry(%n)' at f.py:8:",
        "it jumps to the entry block ^entry",
        "expected no edges into the entry block, whose arguments are the function's",
    )


def test_targets_are_blocks_of_the_function() -> None:
    f = Function("g")
    other = Function("other", entry_name="elsewhere")
    Builder(f).jump(other.entry, loc=at(3))
    assert_parts(
        only_problem(f),
        "@g, ^entry, 'jump ^<block not in function",
        "' at f.py:3:",
        "it targets a block of function @other named 'elsewhere'",
        "expected targets among the blocks of function @g",
    )


def test_a_jump_passes_one_value_per_block_argument() -> None:
    f = nested_sum()
    entry_jump = f.entry.terminator
    assert entry_jump is not None
    entry_jump.erase()
    Builder(f).jump(f.blocks[1], 0, loc=at(2))
    assert_parts(
        only_problem(f),
        "@nested_sum, ^entry, 'jump ^outer(0)' at f.py:2:",
        "it passes 1 value to ^outer, which takes 2",
        "expected one value per argument of the target block",
    )


def test_a_branch_passes_one_value_per_block_argument_on_each_edge() -> None:
    f = Function("g", [("c", BOOL)])
    b = Builder(f)
    yes, no = b.add_block("yes", [("a", INT)]), b.add_block("no")
    b.branch(f.args[0], yes, [1], no, [2, 3], loc=at(4))
    b.at_end(yes).ret(None)
    b.at_end(no).ret(None)
    assert_parts(
        only_problem(f),
        "@g, ^entry, 'branch %c, ^yes(1), ^no(2, 3)' at f.py:4:",
        "it passes 2 values to ^no, which takes 0",
    )


def test_values_passed_to_block_arguments_have_subtypes_of_their_types() -> None:
    f = Function("g", [("x", FLOAT)])
    b = Builder(f)
    join = b.add_block("join", [("k", INT)])
    b.jump(join, f.args[0], loc=at(5))
    b.at_end(join).ret(join.args[0])
    assert_parts(
        only_problem(f),
        "@g, ^entry, 'jump ^join(%x)' at f.py:5:",
        "the value %x : f64 passed to argument 0 (%k : i64) of ^join is not of the argument's type",
        "expected a subtype of i64",
    )


# --------------------------------------------------------------------------------------------
# Operands and use lists


def test_operands_are_not_values_of_another_function() -> None:
    f = Function("f", [("x", FLOAT)])
    g = Function("g", [("z", FLOAT)])
    b = Builder(f)
    y = b.call(operator.add, f.args[0], g.args[0], type=FLOAT, name="y", loc=at(2))
    b.ret(y, loc=at(3))
    assert_parts(
        only_problem(f),
        "@f, ^entry, '%y = call operator.add(%x, %<undefined BlockArgument",
        "' at f.py:2:",
        "operand 2 (argument 1 %z) is an argument of a block of function @g",
        "expected a constant or a value defined in function @f",
    )


def test_operands_are_not_erased_block_arguments() -> None:
    f = Function("f", [("x", FLOAT)])
    b = Builder(f)
    body = b.add_block("body", [("stale", FLOAT)])
    b.jump(body, f.args[0])
    stale = body.args[0]
    terminator(f.entry).erase()
    body.erase_arg(0)
    b.jump(body)
    b.at_end(body).ret(stale, loc=at(9))
    assert_parts(
        only_problem(f),
        "@f, ^body, 'return %<undefined BlockArgument",
        "' at f.py:9:",
        "operand 0 (the returned value %stale) is an argument that its block no longer has",
    )


def test_operands_are_not_results_of_detached_operations() -> None:
    f = nested_sum()
    inner_body = f.blocks[3]
    prod = inner_body.ops[0]
    # Detaching keeps the operation's operands, so its own operands still list it as a user.
    prod.detach()
    found = problems(f)
    assert_parts(
        found[0],
        "@nested_sum, ^inner_body, '%acc.1 = call operator.add(%acc, %<undefined Result",
        "at f.py:4:",
        "operand 2 (argument 1 %prod) is the result of an operation that is in no block",
    )
    assert len(found) == 3  # and i, j record uses by the detached operation


def test_each_operand_is_recorded_in_the_values_uses() -> None:
    f = nested_sum()
    prod = f.blocks[3].ops[0]
    i = prod.operands[1]
    del i._uses[Use(prod, 1)]
    assert_parts(
        only_problem(f),
        "@nested_sum, ^inner_body, '%prod = call operator.mul(%i, %j) : i64' at f.py:4:",
        "operand 1 (argument 0 %i) does not list this operation among its uses",
        "expected the value's uses to include this operand",
    )


def test_recorded_uses_are_operations_of_the_function() -> None:
    f = Function("f", [("x", FLOAT)])
    b = Builder(f)
    dead = b.call(operator.neg, f.args[0], type=FLOAT, name="dead", loc=at(2))
    b.ret(f.args[0], loc=at(3))
    defining(dead).detach()  # a buggy pass forgot to erase it
    assert_parts(
        only_problem(f),
        "@f, ^entry:",
        "block argument %x records a use as operand 1 of '%dead = call operator.neg(%x) : f64' "
        "at f.py:2, which is not in the function",
        "expected its uses to be exactly the operands that refer to it",
    )


def test_recorded_uses_have_the_value_at_that_operand() -> None:
    f = Function("f", [("x", FLOAT)])
    b = Builder(f)
    y = b.call(operator.neg, f.args[0], type=FLOAT, name="y", loc=at(2))
    z = b.call(operator.mul, 2.0, 3.0, type=FLOAT, name="z", loc=at(3))
    b.ret(z, loc=at(4))
    y._uses[Use(defining(z), 1)] = None
    assert_parts(
        only_problem(f),
        "@f, ^entry, '%y = call operator.neg(%x) : f64' at f.py:2:",
        "result %y records a use as operand 1 of '%z = call operator.mul(2.0, 3.0) : f64' "
        "at f.py:3, which has another value there",
    )


def test_constants_have_the_type_of_their_value() -> None:
    f = Function("f", [("x", FLOAT)])
    b = Builder(f)
    y = b.call(operator.mul, f.args[0], 2.0, type=FLOAT, name="y", loc=at(2))
    b.ret(y)
    two = defining(y).operands[2]
    assert isinstance(two, Constant)
    _write(two, "type", FLOAT)
    assert_parts(
        only_problem(f),
        "@f, ^entry, '%y = call operator.mul(%x, 2.0) : f64' at f.py:2:",
        "operand 2 (argument 1 2.0) has type f64",
        "expected const<2.0>, the type of a constant holding that value",
    )


# --------------------------------------------------------------------------------------------
# Dominance


def diamond() -> tuple[Function, Block, Block, Block]:
    f = Function("f", [("x", FLOAT), ("c", BOOL)])
    b = Builder(f)
    then, else_, join = b.add_block("then"), b.add_block("else"), b.add_block("join")
    b.branch(f.args[1], then, [], else_, [], loc=at(2))
    return f, then, else_, join


def test_a_result_is_used_after_its_definition_in_the_same_block() -> None:
    f = Function("f", [("x", FLOAT)])
    b = Builder(f)
    y = b.call(operator.neg, f.args[0], type=FLOAT, name="y", loc=at(3))
    b.ret(y, loc=at(4))
    b.before(defining(y)).call(operator.abs, y, type=FLOAT, name="early", loc=at(2))
    assert_parts(
        only_problem(f),
        "@f, ^entry, '%early = call operator.abs(%y) : f64' at f.py:2:",
        "operand 1 (argument 0 %y) is defined later in ^entry",
        "expected every use to be dominated by its definition",
    )


def test_a_result_is_not_its_own_operand() -> None:
    f = Function("f", [("x", FLOAT)])
    b = Builder(f)
    y = b.call(operator.neg, f.args[0], type=FLOAT, name="y", loc=at(2))
    b.ret(y)
    defining(y).set_operand(1, y)
    assert_parts(
        only_problem(f),
        "@f, ^entry, '%y = call operator.neg(%y) : f64' at f.py:2:",
        "operand 1 (argument 0 %y) is this operation's own result",
    )


def test_a_result_defined_in_one_arm_is_not_used_after_the_join() -> None:
    f, then, else_, join = diamond()
    b = Builder(f, then)
    y = b.call(operator.neg, f.args[0], type=FLOAT, name="y", loc=at(3))
    b.jump(join)
    b.at_end(else_).jump(join)
    b.at_end(join).ret(y, loc=at(5))
    assert_parts(
        only_problem(f),
        "@f, ^join, 'return %y' at f.py:5:",
        "operand 0 (the returned value %y) is defined in ^then, which does not dominate ^join",
        "expected every use to be dominated by its definition",
    )


def test_jump_arguments_are_uses_in_the_jumping_block() -> None:
    f, then, else_, join = diamond()
    join.add_arg(FLOAT, "r")
    b = Builder(f, then)
    y = b.call(operator.neg, f.args[0], type=FLOAT, name="y", loc=at(3))
    b.jump(join, y, loc=at(3))
    b.at_end(else_).jump(join, y, loc=at(4))
    b.at_end(join).ret(join.args[0])
    assert_parts(
        only_problem(f),
        "@f, ^else, 'jump ^join(%y)' at f.py:4:",
        "operand 0 (argument 0 to the target %y) is defined in ^then, "
        "which does not dominate ^else",
    )


def test_a_block_argument_is_used_only_where_its_block_dominates() -> None:
    f, then, else_, join = diamond()
    then.add_arg(FLOAT, "t")
    b = Builder(f)
    terminator(f.entry).erase()
    b.branch(f.args[1], then, [f.args[0]], else_, [], loc=at(2))
    b.at_end(then).jump(join)
    b.at_end(else_).ret(then.args[0], loc=at(4))
    b.at_end(join).ret(None)
    assert_parts(
        only_problem(f),
        "@f, ^else, 'return %t' at f.py:4:",
        "operand 0 (the returned value %t) is an argument of ^then, which does not dominate ^else",
    )


def test_values_of_unreachable_blocks_are_not_used_in_reachable_ones() -> None:
    f = Function("f", [("x", FLOAT)])
    b = Builder(f)
    dead = b.add_block("dead")
    b.at_end(dead)
    y = b.call(operator.neg, f.args[0], type=FLOAT, name="y", loc=at(3))
    b.ret(y)
    b.at_end(f.entry).ret(y, loc=at(2))
    assert_parts(
        only_problem(f),
        "@f, ^entry, 'return %y' at f.py:2:",
        "is defined in ^dead (unreachable), which does not dominate ^entry",
    )


# --------------------------------------------------------------------------------------------
# The report


def test_all_problems_are_collected_and_listed() -> None:
    f = Function("f", [("x", FLOAT)])
    b = Builder(f)
    join = b.add_block("join", [("k", INT)])
    b.jump(join, f.args[0], 1, loc=at(2))
    f.add_block("empty")
    with pytest.raises(VerificationError) as info:
        verify(f)
    error = info.value
    assert len(error.problems) == 4  # ^join is empty too
    text = str(error)
    assert text.startswith("IR verification failed with 4 problems:\n")
    for problem in error.problems:
        assert f"\n  - {problem}" in text


def test_names_in_messages_are_the_printed_names() -> None:
    f = Function("f", [("x", FLOAT)])
    b = Builder(f)
    first, second = b.add_block("x"), b.add_block("x")
    b.jump(first)
    b.at_end(first)
    u = b.call(operator.neg, f.args[0], type=FLOAT)
    b.jump(second)
    b.at_end(second)
    v = b.call(operator.neg, u, type=FLOAT)
    b.ret(v, loc=at(7))
    b.at_end(first).call(print, v, type=NONE)  # after the terminator, and before v's definition
    printed = str(f)
    found = problems(f)
    # The jump is mid-block, so ^x has no out-edge and ^x.1 is unreachable.
    assert found == [
        "@f, ^x, 'jump ^x.1': a terminator in the middle of the block; "
        "expected terminators only as the last operation of a block",
        "@f, ^x, '%1 = call builtins.print(%2) : none': the block's last operation is not a "
        "terminator; expected every block to end in a jump, branch, return or raise",
        "@f, ^x, '%1 = call builtins.print(%2) : none': operand 1 (argument 0 %2) is defined in "
        "^x.1 (unreachable), which does not dominate ^x; "
        "expected every use to be dominated by its definition",
    ]
    for text in ["^x:", "^x.1:", "  jump ^x.1\n", "  %1 = call builtins.print(%2) : none\n"]:
        assert text in printed


def test_operations_with_unprintable_types_are_still_reported() -> None:
    class Local:
        pass

    f = Function("f", [("x", FLOAT)])
    b = Builder(f)
    b.call(Local, type=Object(Local), loc=at(2))
    assert_parts(
        only_problem(f),
        "@f, ^entry, '<Call with an unprintable type>' at f.py:2:",
        "the block's last operation is not a terminator",
    )
