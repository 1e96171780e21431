"""Room on the stack for recursion through derived rules.

A recursive function differentiated by gibbous runs one derived rule instance per level it
reaches, and each level costs more Python frames than the primal's one: the rule's
``__call__`` and the forward program going down, the pullback and the reverse program coming
back (and on 3.11 a call of an object with ``__call__`` counts twice).  With Python's
recursion limit as it is, only a fraction of the primal's depth would be reachable.

So every ``STRIDE``-th level of nesting is a *boundary*: its instance runs its forward and
reverse programs with the recursion limit raised by ``STEP`` (``headroom``), and lowered back
when they return.  Shallow code never meets a boundary and pays nothing; deep code pays a
lock and two ``sys.setrecursionlimit`` calls per boundary crossed.  The headroom is counted
across threads (the limit is the interpreter's): it is raised by ``STEP`` for every boundary
active in any thread and comes back to where it was when the last one returns.

The headroom stops where the primal would: a boundary deeper than the recursion limit found
when the first boundary was entered raises ``RecursionError`` instead of raising the limit
further, so unbounded recursion ends in the same error as in Python, not in a crash of the C
stack.
"""

from __future__ import annotations

import sys
import threading
import types
import typing as t

#: Levels of nesting between boundaries.
STRIDE = 50

#: Recursion-limit units a boundary adds: enough for ``STRIDE`` levels at the most any level
#: costs (two frames down, two back, each counted twice on 3.11 for a call through
#: ``__call__``, and the adapters a call may pass through).
STEP = STRIDE * 8

_lock = threading.Lock()
_active = 0  # boundaries entered and not left, in all threads
_base = 0  # the limit before the first of them raised it


def boundary(level: int) -> bool:
    """Whether an instance at this level of nesting (0: called by the user) is a boundary."""
    return level > 0 and level % STRIDE == 0


def enter(level: int) -> None:
    """Raise the recursion limit by ``STEP`` for the boundary at ``level``."""
    global _active, _base
    with _lock:
        base = _base if _active else sys.getrecursionlimit()
        if level >= base:
            raise RecursionError(
                f"maximum recursion depth exceeded: differentiated code nested {level} levels "
                f"deep, more than the recursion limit ({base}) would let the primal go"
            )
        _base = base
        _active += 1
        sys.setrecursionlimit(base + _active * STEP)


def leave() -> None:
    global _active
    with _lock:
        _active -= 1
        try:
            sys.setrecursionlimit(_base + _active * STEP)
        except RecursionError:  # another thread is still deeper than that: it lowers it
            pass


def with_headroom(fn: t.Callable[..., object], level: int) -> t.Callable[..., object]:
    """``fn`` run with the headroom of the boundary at ``level``."""

    def deeper(*args: object) -> object:
        enter(level)
        try:
            return fn(*args)
        finally:
            leave()

    deeper.__qualname__ = getattr(fn, "__qualname__", "deeper")
    deeper.__wrapped__ = fn  # type: ignore[attr-defined]  # (its code, for error notes)
    return deeper


def caller_level(*codes: t.Any) -> int:
    """The level of nesting of the instance whose forward call (running one of ``codes``) is
    nearest up the stack, plus one: the level of a rule it is about to instantiate.  0 if
    there is none near (a rule the user calls).  Looked up once per instance, when it is
    made."""
    frame: types.FrameType | None = sys._getframe(1)
    for _ in range(32):  # the caller's frame is a few adapters up
        if frame is None:
            break
        if any(frame.f_code is code for code in codes):
            return int(getattr(frame.f_locals["self"], "level", 0)) + 1
        frame = frame.f_back
    return 0
