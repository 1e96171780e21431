"""Objects that several programs of one build reach as constants: globals and what closures
and defaults hold.

A function that writes a value with a derivative into a global (``G[0] = 3 * x[0]``) makes
that global active: it gets fdata, and every load of it in the function sees the write
(``gibbous.reverse.activity`` treats the loads of one object as aliases).  Across functions
two things must hold as well:

* one object, one fdata: every program of the build that differentiates through the object
  uses the same CoDual (``SharedObjects.coduals``, handed to the AD pass);
* no program reads as a plain constant an object another program differentiates through: a
  caller reading ``G[2]`` after a callee wrote ``G[2] = sin(x)`` would read the right number
  but no derivative.  Activity is decided per function, so such a pair is found when the
  second of the two is built.  If that one reads plainly, it is analysed again with the
  object active (``Rebuild``).  If it is the one that differentiates through the object,
  the programs built before must change: while the session builds its first program (and
  the callees it reaches by static calls, built with it) nothing has run yet, and the build
  starts over with the object active everywhere.  Found later (a callee resolved at run
  time), the pair is refused with an error naming both places: a wrong gradient is worse
  than none.
"""

from __future__ import annotations

import types as pytypes
import typing as t

import attrs

from gibbous.ir.exceptions import UnsupportedConstructError
from gibbous.ir.core import Call, Constant, Function, Location
from gibbous.reverse.activity import Activity, carries_fdata, may_have_tangent
from gibbous.tangents.model import CoDual

__all__ = ["Rebuild", "SharedObjects"]


class Rebuild(Exception):
    """Internal: the build found an object to make active everywhere and must start over."""


@attrs.frozen
class _Use:
    obj: object  # held, so that its id stays its own while the build lives
    function: str
    loc: Location | None


@attrs.define(eq=False)
class SharedObjects:
    """What the programs of one build know about the mutable objects they hold as constants."""

    # (id, active) -> (the object, its CoDual): one per object for the whole build
    coduals: dict[tuple[int, bool], tuple[object, CoDual[t.Any, t.Any]]] = attrs.field(
        factory=dict
    )
    # ids of the objects every program treats as active (``analyse``'s ``written``)
    written: dict[int, object] = attrs.field(factory=dict)
    # Programs have been handed out: starting over would leave them reading plain constants.
    sealed: bool = False
    _active: dict[int, _Use] = attrs.field(factory=dict)
    _plain_reads: dict[int, _Use] = attrs.field(factory=dict)

    def start_over(self) -> None:
        """Forget the programs' uses and CoDuals (they are being built again); keep
        ``written``."""
        self.coduals.clear()
        self._active.clear()
        self._plain_reads.clear()

    def note(self, f: Function, activity: Activity, fn: object) -> None:
        """Record how ``f`` (the IR of ``fn``) uses its mutable constants.

        Raises ``Rebuild`` when an object must be made active: anywhere while the first
        program is built, in ``f`` alone after that (``f`` reads plainly what a program built
        before differentiates through); refuses what cannot be mended (``f`` differentiates
        through what a program already compiled reads plainly)."""
        name = str(getattr(fn, "__qualname__", f.name))
        active: dict[int, _Use] = {}
        plain: dict[int, _Use] = {}
        for op in f.operations():
            operands = op.operands[1:] if isinstance(op, Call) else op.operands
            for v in operands:
                if not isinstance(v, Constant) or not carries_fdata(v.type):
                    continue
                if activity.is_self(v) or isinstance(v.value, (type, pytypes.ModuleType)):
                    continue
                if activity.is_active(v):
                    active.setdefault(id(v.value), _Use(v.value, name, op.loc))
                elif not isinstance(op, Call) or may_have_tangent(op.type):
                    plain.setdefault(id(v.value), _Use(v.value, name, op.loc))
        for key, use in plain.items():
            other = self._active.get(key)
            if other is not None:  # f may still change: make the object active in it
                self.written[key] = use.obj
                raise Rebuild()
        for key, use in active.items():
            other = self._plain_reads.get(key)
            if other is not None:
                if self.sealed:
                    raise _refusal(fn, use, other)
                self.written[key] = use.obj
                raise Rebuild()
        for key, use in active.items():
            self._active.setdefault(key, use)
        for key, use in plain.items():
            self._plain_reads.setdefault(key, use)


def _refusal(fn: object, active: _Use, plain: _Use) -> UnsupportedConstructError:
    where = plain.loc or active.loc
    return UnsupportedConstructError(
        f"a global or captured {type(active.obj).__name__} ({_name_of(fn, active.obj)}) "
        f"that {active.function} differentiates through (it writes into it, or passes it to "
        f"a call that may, at {active.loc or '?'}) and {plain.function} reads as a constant",
        where.file if where is not None else "?",
        where.line if where is not None else 0,
        "the reading function would see the written values without their derivative.  Pass "
        "the object as an argument to the functions that use it, or read and write it in "
        "one function",
        plain.function,
    )


def _name_of(fn: object, obj: object) -> str:
    """The global name ``obj`` has in ``fn``'s module, if any."""
    namespace = getattr(fn, "__globals__", None) or {}
    for name, value in namespace.items():
        if value is obj:
            return f"the global {name}"
    return f"at 0x{id(obj):x}"
