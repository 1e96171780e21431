"""Writing IR from Python.

    f = Function("poly", [("x", FLOAT)])
    b = Builder(f)
    y = b.call(operator.mul, f.args[0], 2.0, type=FLOAT)
    b.ret(y)

Operands that are not IR values become ``Constant``s.  The builder inserts at the end of its
current block (or before a chosen operation) and stamps every operation with its current
location unless one is given.
"""

from __future__ import annotations

import typing as t

from gibbous.ir.core import (
    Block,
    Branch,
    Guard,
    Call,
    Constant,
    Function,
    Jump,
    Location,
    Operation,
    Raise,
    Result,
    Return,
    Value,
)
from gibbous.ir.types import ANY, Type


def as_value(x: object) -> Value:
    """``x`` itself if it is an IR value, else a new constant holding it."""
    if isinstance(x, Value):
        return x
    if _holds_value(x):
        # (x, y) with IR values inside is not a constant: it must be built by a call.
        raise TypeError(f"{x!r} holds IR values; build it with a call, not as a constant")
    return Constant(x)


def _holds_value(x: object) -> bool:
    if isinstance(x, (tuple, list, set, frozenset)):
        return any(isinstance(i, Value) or _holds_value(i) for i in x)
    if isinstance(x, dict):
        return _holds_value(tuple(x.keys())) or _holds_value(tuple(x.values()))
    return False


class Builder:
    def __init__(self, func: Function, block: Block | None = None) -> None:
        self.func = func
        self.block = block if block is not None else func.entry
        self._before: Operation | None = None
        self.loc: Location | None = None

    def at_end(self, block: Block) -> Builder:
        self.block, self._before = block, None
        return self

    def before(self, op: Operation) -> Builder:
        if op.parent is None:
            raise ValueError("cannot insert before an operation that is in no block")
        self.block, self._before = op.parent, op
        return self

    def add_block(
        self, name: str | None = None, args: t.Sequence[tuple[str | None, Type]] = ()
    ) -> Block:
        """A new block at the end of the function (the insertion point does not move)."""
        block = self.func.add_block(name)
        for arg_name, ty in args:
            block.add_arg(ty, arg_name)
        return block

    def insert(self, op: Operation) -> Operation:
        if self._before is not None:
            return self.block.insert_before(self._before, op)
        return self.block.append(op)

    def call(
        self,
        callee: object,
        *args: object,
        kwargs: t.Mapping[str, object] | None = None,
        type: Type = ANY,
        name: str | None = None,
        loc: Location | None = None,
    ) -> Result:
        kw = {k: as_value(v) for k, v in (kwargs or {}).items()}
        op = Call(
            as_value(callee),
            [as_value(a) for a in args],
            kw,
            type=type,
            name=name,
            loc=loc or self.loc,
        )
        self.insert(op)
        return op.result

    def jump(self, target: Block, *args: object, loc: Location | None = None) -> Jump:
        op = Jump(target, [as_value(a) for a in args], loc=loc or self.loc)
        self.insert(op)
        return op

    def branch(
        self,
        cond: object,
        if_true: Block,
        true_args: t.Sequence[object],
        if_false: Block,
        false_args: t.Sequence[object],
        *,
        loc: Location | None = None,
    ) -> Branch:
        op = Branch(
            as_value(cond),
            if_true,
            [as_value(a) for a in true_args],
            if_false,
            [as_value(a) for a in false_args],
            loc=loc or self.loc,
        )
        self.insert(op)
        return op

    def guard(
        self,
        result: object,
        normal: Block,
        normal_args: t.Sequence[object],
        handler: Block,
        handler_args: t.Sequence[object],
        *,
        loc: Location | None = None,
    ) -> Guard:
        op = Guard(
            as_value(result),
            normal,
            [as_value(a) for a in normal_args],
            handler,
            [as_value(a) for a in handler_args],
            loc=loc or self.loc,
        )
        self.insert(op)
        return op

    def ret(self, value: object, *, loc: Location | None = None) -> Return:
        op = Return(as_value(value), loc=loc or self.loc)
        self.insert(op)
        return op

    def raise_(self, exc: object, *, loc: Location | None = None) -> Raise:
        op = Raise(as_value(exc), loc=loc or self.loc)
        self.insert(op)
        return op
