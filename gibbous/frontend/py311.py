"""CPython 3.11's opcodes as neutral operations (see ``common`` for the shared ones).

3.11 specifics: PRECALL before CALL, LOAD_METHOD, forward/backward POP_JUMP families,
JUMP_IF_*_OR_POP, FOR_ITER that pops the iterator and jumps straight to the loop exit,
MAKE_FUNCTION and FORMAT_VALUE with flag arguments, COMPARE_OP's plain index.
"""

from __future__ import annotations

import dis
import operator
import typing as t

from gibbous.frontend import common as C
from gibbous.frontend import ops as O


def load_global(i: dis.Instruction, _state: C.DecodeState) -> list[O.Op]:
    load = O.LoadGlobal(t.cast(str, i.argval))
    return [O.PushNull(), load] if t.cast(int, i.arg) & 1 else [load]  # NULL goes first


def compare_op(i: dis.Instruction, _state: C.DecodeState) -> list[O.Op]:
    return [O.Compare(C.COMPARISONS[t.cast(int, i.arg)])]


def jump_if_or_pop(value: bool) -> C.Handler:
    return lambda i, _state: [O.JumpIfOrPop(value, t.cast(int, i.argval))]


TABLE: dict[str, C.Handler] = {
    **C.SHARED,
    "PRECALL": lambda _i, _s: [O.Nop()],
    "KW_NAMES": C.kw_names,
    "CALL": C.call_after_kw_names,
    "LOAD_METHOD": lambda i, _s: [O.LoadAttr(t.cast(str, i.argval)), O.PushNull()],
    "LOAD_ATTR": lambda i, _s: [O.LoadAttr(t.cast(str, i.argval))],
    "LOAD_GLOBAL": load_global,
    "COMPARE_OP": compare_op,
    "POP_JUMP_FORWARD_IF_TRUE": C.pop_jump_if(True),
    "POP_JUMP_BACKWARD_IF_TRUE": C.pop_jump_if(True),
    "POP_JUMP_FORWARD_IF_FALSE": C.pop_jump_if(False),
    "POP_JUMP_BACKWARD_IF_FALSE": C.pop_jump_if(False),
    "POP_JUMP_FORWARD_IF_NONE": C.pop_jump_if(True, none_check=True),
    "POP_JUMP_BACKWARD_IF_NONE": C.pop_jump_if(True, none_check=True),
    "POP_JUMP_FORWARD_IF_NOT_NONE": C.pop_jump_if(False, none_check=True),
    "POP_JUMP_BACKWARD_IF_NOT_NONE": C.pop_jump_if(False, none_check=True),
    "JUMP_IF_TRUE_OR_POP": jump_if_or_pop(True),
    "JUMP_IF_FALSE_OR_POP": jump_if_or_pop(False),
    "FOR_ITER": lambda i, _s: [O.ForIter(t.cast(int, i.argval))],
    "LIST_TO_TUPLE": lambda _i, _s: [O.ListToTuple()],
    "UNARY_POSITIVE": lambda _i, _s: [O.UnaryOp(operator.pos)],
    "FORMAT_VALUE": C.format_value_with_flags,
    "MAKE_FUNCTION": C.make_function_with_flags,
}
