"""Bytecode to neutral operations: the only place that asks which Python is running.

``decode_ops(code)`` lists the neutral operations of a code object, each with its bytecode offset
and source line; one instruction may give several operations (they share its offset), and a
jump's target is the offset of an instruction.  ``exception_handlers(code)`` reports the
exception-table handlers that are user ``try``/``with`` blocks; the handlers CPython 3.12+
adds to restore the locals of inlined comprehensions (and the one of a generator expression)
are not user code, and are left out: in our IR an exception simply propagates.
"""

from __future__ import annotations

import dis
import sys
import types

import attrs

from gibbous.frontend import common as C
from gibbous.frontend import ops as O


def _table() -> dict[str, C.Handler]:
    # The one version check of the frontend.
    if sys.version_info[:2] == (3, 11):
        from gibbous.frontend.py311 import TABLE
    elif sys.version_info[:2] == (3, 12):
        from gibbous.frontend.py312 import TABLE
    elif sys.version_info[:2] == (3, 13):
        from gibbous.frontend.py313 import TABLE
    else:  # pragma: no cover - guarded by requires-python and CI
        raise RuntimeError(f"gibbous supports CPython 3.11 to 3.13, not {sys.version}")
    return TABLE


TABLE = _table()


@attrs.frozen
class Decoded:
    """A neutral operation at bytecode ``offset``, from source ``line``."""

    op: O.Op
    offset: int
    line: int

    @property
    def target(self) -> int | None:
        """The offset a jump may go to (``None`` for other operations)."""
        return O.jump_target(self.op)


def _state(code: types.CodeType) -> C.DecodeState:
    instructions = list(dis.get_instructions(code))
    return C.DecodeState(code, instructions, {ins.offset: k for k, ins in enumerate(instructions)})


def decode_ops(code: types.CodeType) -> list[Decoded]:
    """The neutral operations of ``code``, in bytecode order."""
    state = _state(code)
    line = code.co_firstlineno
    out: list[Decoded] = []
    for ins in state.instructions:
        if ins.positions is not None and ins.positions.lineno is not None:
            line = ins.positions.lineno
        handler = TABLE.get(ins.opname)
        ops = handler(ins, state) if handler is not None else [C.unsupported(ins.opname)]
        # Every instruction gives at least one op, so that any offset can be jumped to.
        out.extend(Decoded(op, ins.offset, line) for op in ops or [O.Nop()])
    return out


# What a comprehension's or generator expression's cleanup handler is made of: put the saved
# locals back (or turn StopIteration into RuntimeError), then re-raise.
_CLEANUP_OPS = {"SWAP", "POP_TOP", "STORE_FAST", "STORE_FAST_MAYBE_NULL", "NOP", "COPY"}


def _is_cleanup(state: C.DecodeState, target: int) -> bool:
    for ins in state.instructions[state.index[target] :]:
        if ins.opname == "RERAISE":
            return True
        intrinsic = ins.opname == "CALL_INTRINSIC_1" and ins.argrepr == (
            "INTRINSIC_STOPITERATION_ERROR"
        )
        if ins.opname not in _CLEANUP_OPS and not intrinsic:
            return False
    return False


def _handler_construct(state: C.DecodeState, target: int) -> str:
    for ins in state.instructions[state.index[target] :]:
        if ins.opname == "WITH_EXCEPT_START":
            return "BEFORE_WITH"
        if ins.opname == "RERAISE":
            break
    return "PUSH_EXC_INFO"


def exception_handlers(code: types.CodeType) -> list[Decoded]:
    """An ``Unsupported`` op for each user ``try``/``with`` region, at the region's start.

    The reported line is the ``try:`` line when CPython marks it with a NOP just before the
    protected range (it does, for line tracing), else the first protected line.
    """
    state = _state(code)
    problems: list[Decoded] = []
    seen: set[int] = set()
    entries = getattr(dis.Bytecode(code), "exception_entries")  # 3.11+, not in typeshed
    for entry in entries:
        if entry.target in seen or _is_cleanup(state, entry.target):
            continue
        seen.add(entry.target)
        at = state.index[entry.start]
        if at > 0 and state.instructions[at - 1].opname == "NOP":
            at -= 1
        ins = state.instructions[at]
        line = ins.positions.lineno if ins.positions is not None else None
        op = C.unsupported(_handler_construct(state, entry.target))
        problems.append(Decoded(op, ins.offset, line or code.co_firstlineno))
    return problems
