"""Bytecode to neutral operations: the only place that asks which Python is running.

``decode_ops(code)`` lists the neutral operations of a code object, each with its bytecode offset
and source line; one instruction may give several operations (they share its offset), and a
jump's target is the offset of an instruction.  ``exception_table(code)`` gives the entries of
the exception table whose handlers can be observed (``try``, ``with``, and the clean-ups
between them).
"""

from __future__ import annotations

import dis
import sys
import types

import attrs

from gibbous.frontend import common
from gibbous.frontend import ops as O


def _table() -> dict[str, common.Handler]:
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


def _state(code: types.CodeType) -> common.DecodeState:
    instructions = list(dis.get_instructions(code))
    return common.DecodeState(code, instructions, {ins.offset: k for k, ins in enumerate(instructions)})


def decode_ops(code: types.CodeType) -> list[Decoded]:
    """The neutral operations of ``code``, in bytecode order."""
    state = _state(code)
    line = code.co_firstlineno
    out: list[Decoded] = []
    for ins in state.instructions:
        if ins.positions is not None and ins.positions.lineno is not None:
            line = ins.positions.lineno
        handler = TABLE.get(ins.opname)
        ops = handler(ins, state) if handler is not None else [common.unsupported(ins.opname)]
        # Every instruction gives at least one op, so that any offset can be jumped to.
        out.extend(Decoded(op, ins.offset, line) for op in ops or [O.Nop()])
    return out


# Handler code that only cleans up (puts saved locals back, restores the handled exception, turns
# StopIteration into RuntimeError) before re-raising.
_CLEANUP_OPS = {
    "SWAP", "POP_TOP", "STORE_FAST", "STORE_FAST_MAYBE_NULL", "NOP", "COPY", "POP_EXCEPT",
    "LOAD_CONST", "DELETE_FAST",
}


@attrs.frozen
class Handler:
    """An exception-table entry: an exception raised by an instruction at an offset in
    ``[start, end)`` cuts the stack to ``depth``, pushes the offset it was raised at if
    ``lasti``, then the exception, and jumps to ``target``."""

    start: int
    end: int
    target: int
    depth: int
    lasti: bool


def _reraise_at(state: common.DecodeState, target: int) -> int | None:
    """The offset of the RERAISE ending cleanup-only handler code at ``target``, else None."""
    for ins in state.instructions[state.index[target] :]:
        if ins.opname == "RERAISE":
            return ins.offset
        intrinsic = ins.opname == "CALL_INTRINSIC_1" and ins.argrepr == (
            "INTRINSIC_STOPITERATION_ERROR"
        )
        if ins.opname not in _CLEANUP_OPS and not intrinsic:
            return None
    return None


def exception_table(code: types.CodeType) -> list[Handler]:
    """The exception-table entries whose handlers can be observed.

    A handler that only cleans up and re-raises where nothing catches the exception again
    (CPython adds them to inlined comprehensions, generator expressions and ``except``
    bodies) is left out, with every entry leading to it: in our IR the exception then simply
    propagates out of the function, which is unobservable the same way.  Handlers inside a
    ``try`` that catches again stay.
    """
    state = _state(code)
    entries = [
        Handler(e.start, e.end, e.target, e.depth, e.lasti)
        for e in getattr(dis.Bytecode(code), "exception_entries")  # 3.11+, not in typeshed
    ]

    def covering(offset: int) -> Handler | None:
        return next((e for e in entries if e.start <= offset < e.end), None)

    def transparent(target: int, seen: frozenset[int]) -> bool:
        reraise = _reraise_at(state, target)
        if reraise is None or target in seen:
            return False
        outer = covering(reraise)
        return outer is None or transparent(outer.target, seen | {target})

    return [e for e in entries if not transparent(e.target, frozenset())]
