"""CPython 3.13's opcodes as neutral operations (see ``common`` for the shared ones).

3.13 specifics: CALL and CALL_KW (keyword names on the stack), LOAD_GLOBAL pushing NULL after
the global, TO_BOOL, FOR_ITER whose exhaustion skips END_FOR and POP_TOP, MAKE_FUNCTION plus
SET_FUNCTION_ATTRIBUTE, CONVERT_VALUE/FORMAT_SIMPLE/FORMAT_WITH_SPEC, the fused
LOAD_FAST_LOAD_FAST family, COMPARE_OP's index in the bits above the low five.
"""

from __future__ import annotations

import dis
import typing as t

from gibbous.frontend import common
from gibbous.frontend import ops


def load_global(i: dis.Instruction, _state: common.DecodeState) -> list[ops.Op]:
    load = ops.LoadGlobal(t.cast(str, i.argval))
    return [load, ops.PushNull()] if t.cast(int, i.arg) & 1 else [load]  # NULL goes second


def compare_op(i: dis.Instruction, _state: common.DecodeState) -> list[ops.Op]:
    # Bit 4 asks for the result as a bool; the jump or `not` that follows makes it one anyway.
    return [ops.Compare(common.COMPARISONS[t.cast(int, i.arg) >> 5])]


def for_iter(i: dis.Instruction, state: common.DecodeState) -> list[ops.Op]:
    # On exhaustion CPython pops the iterator and jumps past END_FOR and POP_TOP.
    return [ops.ForIter(state.after(t.cast(int, i.argval), "END_FOR", "POP_TOP"))]


def _names(i: dis.Instruction) -> tuple[str, str]:
    return t.cast(tuple[str, str], i.argval)


TABLE: dict[str, common.Handler] = {
    **common.SHARED,
    **common.SINCE_312,
    "CALL": lambda i, _s: [ops.Call(t.cast(int, i.arg))],
    "CALL_KW": lambda i, _s: [ops.Call(t.cast(int, i.arg), kw=True)],
    "LOAD_ATTR": common.load_attr_method_bit,
    "LOAD_SUPER_ATTR": common.load_super_attr,
    "LOAD_GLOBAL": load_global,
    "COMPARE_OP": compare_op,
    "TO_BOOL": lambda _i, _s: [ops.Nop()],  # every consumer of TO_BOOL tests truth itself
    "FOR_ITER": for_iter,
    "END_FOR": lambda _i, _s: [ops.Pop()],  # never reached: FOR_ITER skips it
    "CONVERT_VALUE": lambda i, _s: [ops.ConvertValue(common.CONVERSIONS[t.cast(int, i.arg)])],
    "FORMAT_SIMPLE": lambda _i, _s: [ops.FormatValue(False)],
    "FORMAT_WITH_SPEC": lambda _i, _s: [ops.FormatValue(True)],
    "MAKE_FUNCTION": lambda _i, _s: [ops.MakeFunction()],
    "SET_FUNCTION_ATTRIBUTE": lambda i, _s: [ops.SetFunctionAttribute(t.cast(int, i.arg))],
    "LOAD_FAST_LOAD_FAST": lambda i, _s: [ops.LoadFast(n) for n in _names(i)],
    "STORE_FAST_STORE_FAST": lambda i, _s: [ops.StoreFast(n) for n in _names(i)],
    "STORE_FAST_LOAD_FAST": lambda i, _s: [
        ops.StoreFast(_names(i)[0]),
        ops.LoadFast(_names(i)[1]),
    ],
}
