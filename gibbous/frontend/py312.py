"""CPython 3.12's opcodes as neutral operations (see ``common`` for the shared ones).

3.12 specifics: KW_NAMES before CALL (no PRECALL), LOAD_ATTR's method bit, LOAD_GLOBAL pushing
NULL first, FOR_ITER whose exhaustion skips the END_FOR at its target, MAKE_FUNCTION and
FORMAT_VALUE with flag arguments, COMPARE_OP's index in the bits above the low four.
"""

from __future__ import annotations

import dis
import typing as t

from gibbous.frontend import common
from gibbous.frontend import ops


def load_global(i: dis.Instruction, _state: common.DecodeState) -> list[ops.Op]:
    load = ops.LoadGlobal(t.cast(str, i.argval))
    return [ops.PushNull(), load] if t.cast(int, i.arg) & 1 else [load]  # NULL goes first


def compare_op(i: dis.Instruction, _state: common.DecodeState) -> list[ops.Op]:
    return [ops.Compare(common.COMPARISONS[t.cast(int, i.arg) >> 4])]


def for_iter(i: dis.Instruction, state: common.DecodeState) -> list[ops.Op]:
    # On exhaustion CPython pops the iterator and jumps past the END_FOR at the target.
    return [ops.ForIter(state.after(t.cast(int, i.argval), "END_FOR"))]


TABLE: dict[str, common.Handler] = {
    **common.SHARED,
    **common.SINCE_312,
    "KW_NAMES": common.kw_names,
    "CALL": common.call_after_kw_names,
    "LOAD_ATTR": common.load_attr_method_bit,
    "LOAD_SUPER_ATTR": common.load_super_attr,
    "LOAD_GLOBAL": load_global,
    "COMPARE_OP": compare_op,
    "FOR_ITER": for_iter,
    "END_FOR": lambda _i, _s: [ops.Pop(), ops.Pop()],  # never reached: FOR_ITER skips it
    "FORMAT_VALUE": common.format_value_with_flags,
    "MAKE_FUNCTION": common.make_function_with_flags,
}
