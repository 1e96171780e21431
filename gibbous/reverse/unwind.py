"""Undoing the rest of a forward pass when its reverse pass fails part way.

A reverse pass restores, pullback by pullback, what the forward pass wrote (arrays written in
place, lists appended to, attributes set).  When a pullback raises, the generated reverse
program stops, and the writes of the pullbacks still on the tape would stay: arguments left in
a state no run of the function produces.  ``unwind`` runs those pullbacks, last pushed first,
with a zero cotangent, for what they restore; their gradients are thrown away and their own
errors ignored, since the first error is the one the caller sees.
"""

from __future__ import annotations

import types as pytypes
import typing as t

from gibbous.tangents.model import NO_TANGENT

__all__ = ["unwind"]


class _Counted(t.Protocol):
    def __len__(self) -> int: ...


def unwind(items: list[object], start: int, tape: _Counted) -> None:
    """Run the pullbacks in ``items[start:len(tape)]``, last first, for what they undo."""
    for i in range(len(tape) - 1, start - 1, -1):
        entry = items[i]
        # (a derived rule's pullback may be its bound ``__call__``)
        abandon = getattr(getattr(entry, "__self__", entry), "abandon", None)
        if abandon is not None:  # a derived or stateful rule's pullback
            abandon()
        elif isinstance(entry, pytypes.FunctionType):  # a rule's closure; records are tuples
            try:
                entry(NO_TANGENT)
            except Exception:
                pass
