"""CPython 3.13's opcodes as neutral operations (see ``common`` for the shared ones).

3.13 specifics: CALL and CALL_KW (keyword names on the stack), LOAD_GLOBAL pushing NULL after
the global, TO_BOOL, FOR_ITER whose exhaustion skips END_FOR and POP_TOP, MAKE_FUNCTION plus
SET_FUNCTION_ATTRIBUTE, CONVERT_VALUE/FORMAT_SIMPLE/FORMAT_WITH_SPEC, the fused
LOAD_FAST_LOAD_FAST family, COMPARE_OP's index in the bits above the low five.
"""

from __future__ import annotations

import dis
import typing as t

from gibbous.frontend import common as C
from gibbous.frontend import ops as O


def load_global(i: dis.Instruction, _state: C.DecodeState) -> list[O.Op]:
    load = O.LoadGlobal(t.cast(str, i.argval))
    return [load, O.PushNull()] if t.cast(int, i.arg) & 1 else [load]  # NULL goes second


def compare_op(i: dis.Instruction, _state: C.DecodeState) -> list[O.Op]:
    # Bit 4 asks for the result as a bool; the jump or `not` that follows makes it one anyway.
    return [O.Compare(C.COMPARISONS[t.cast(int, i.arg) >> 5])]


def for_iter(i: dis.Instruction, state: C.DecodeState) -> list[O.Op]:
    # On exhaustion CPython pops the iterator and jumps past END_FOR and POP_TOP.
    return [O.ForIter(state.after(t.cast(int, i.argval), "END_FOR", "POP_TOP"))]


def _names(i: dis.Instruction) -> tuple[str, str]:
    return t.cast(tuple[str, str], i.argval)


TABLE: dict[str, C.Handler] = {
    **C.SHARED,
    **C.SINCE_312,
    "CALL": lambda i, _s: [O.Call(t.cast(int, i.arg))],
    "CALL_KW": lambda i, _s: [O.Call(t.cast(int, i.arg), kw=True)],
    "LOAD_ATTR": C.load_attr_method_bit,
    "LOAD_GLOBAL": load_global,
    "COMPARE_OP": compare_op,
    "TO_BOOL": lambda _i, _s: [O.Nop()],  # every consumer of TO_BOOL tests truth itself
    "FOR_ITER": for_iter,
    "END_FOR": lambda _i, _s: [O.Pop()],  # never reached: FOR_ITER skips it
    "CONVERT_VALUE": lambda i, _s: [O.ConvertValue(C.CONVERSIONS[t.cast(int, i.arg)])],
    "FORMAT_SIMPLE": lambda _i, _s: [O.FormatValue(False)],
    "FORMAT_WITH_SPEC": lambda _i, _s: [O.FormatValue(True)],
    "MAKE_FUNCTION": lambda _i, _s: [O.MakeFunction()],
    "SET_FUNCTION_ATTRIBUTE": lambda i, _s: [O.SetFunctionAttribute(t.cast(int, i.arg))],
    "LOAD_FAST_LOAD_FAST": lambda i, _s: [O.LoadFast(n) for n in _names(i)],
    "STORE_FAST_STORE_FAST": lambda i, _s: [O.StoreFast(n) for n in _names(i)],
    "STORE_FAST_LOAD_FAST": lambda i, _s: [
        O.StoreFast(_names(i)[0]),
        O.LoadFast(_names(i)[1]),
    ],
}
