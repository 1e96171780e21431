"""What a stack slot of the SSA builder holds: a value, CPython's NULL marker, or a function
being made."""

from __future__ import annotations

import typing as t

import attrs

from gibbous.ir.core import Constant, Location, Value


class Null:
    """CPython's NULL stack marker: a slot that holds no value."""

    def __repr__(self) -> str:
        return "NULL"


NULL = Null()


@attrs.define(eq=False)
class Pending:
    """A function being made: MakeFunction, then its SetFunctionAttributes (flag -> value)."""

    code: Value
    loc: Location
    attributes: dict[int, Value] = attrs.field(factory=dict)


Entry = t.Union[Value, Null, Pending]


def constant_value(v: Value) -> object:
    if not isinstance(v, Constant):
        raise AssertionError(f"expected a constant, got {v!r}")
    return v.value
