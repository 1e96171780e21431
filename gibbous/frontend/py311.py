"""CPython 3.11's opcodes as neutral operations (see ``common`` for the shared ones).

3.11 specifics: PRECALL before CALL, LOAD_METHOD, forward/backward POP_JUMP families,
JUMP_IF_*_OR_POP, FOR_ITER that pops the iterator and jumps straight to the loop exit,
MAKE_FUNCTION and FORMAT_VALUE with flag arguments, COMPARE_OP's plain index.
"""

from __future__ import annotations

import dis
import operator
import typing as t

from gibbous.frontend import common
from gibbous.frontend import ops


def load_global(i: dis.Instruction, _state: common.DecodeState) -> list[ops.Op]:
    load = ops.LoadGlobal(t.cast(str, i.argval))
    return [ops.PushNull(), load] if t.cast(int, i.arg) & 1 else [load]  # NULL goes first


def compare_op(i: dis.Instruction, _state: common.DecodeState) -> list[ops.Op]:
    return [ops.Compare(common.COMPARISONS[t.cast(int, i.arg)])]


def jump_if_or_pop(value: bool) -> common.Handler:
    return lambda i, _state: [ops.JumpIfOrPop(value, t.cast(int, i.argval))]


TABLE: dict[str, common.Handler] = {
    **common.SHARED,
    "PRECALL": lambda _i, _s: [ops.Nop()],
    "KW_NAMES": common.kw_names,
    "CALL": common.call_after_kw_names,
    "LOAD_METHOD": lambda i, _s: [ops.LoadAttr(t.cast(str, i.argval)), ops.PushNull()],
    "LOAD_ATTR": lambda i, _s: [ops.LoadAttr(t.cast(str, i.argval))],
    "LOAD_GLOBAL": load_global,
    "COMPARE_OP": compare_op,
    "POP_JUMP_FORWARD_IF_TRUE": common.pop_jump_if(True),
    "POP_JUMP_BACKWARD_IF_TRUE": common.pop_jump_if(True),
    "POP_JUMP_FORWARD_IF_FALSE": common.pop_jump_if(False),
    "POP_JUMP_BACKWARD_IF_FALSE": common.pop_jump_if(False),
    "POP_JUMP_FORWARD_IF_NONE": common.pop_jump_if(True, none_check=True),
    "POP_JUMP_BACKWARD_IF_NONE": common.pop_jump_if(True, none_check=True),
    "POP_JUMP_FORWARD_IF_NOT_NONE": common.pop_jump_if(False, none_check=True),
    "POP_JUMP_BACKWARD_IF_NOT_NONE": common.pop_jump_if(False, none_check=True),
    "JUMP_IF_TRUE_OR_POP": jump_if_or_pop(True),
    "JUMP_IF_FALSE_OR_POP": jump_if_or_pop(False),
    "FOR_ITER": lambda i, _s: [ops.ForIter(t.cast(int, i.argval))],
    "LIST_TO_TUPLE": lambda _i, _s: [ops.ListToTuple()],
    "UNARY_POSITIVE": lambda _i, _s: [ops.UnaryOp(operator.pos)],
    "FORMAT_VALUE": common.format_value_with_flags,
    "MAKE_FUNCTION": common.make_function_with_flags,
}
