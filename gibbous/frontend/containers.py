"""Container literals and unpacking in the SSA builder."""

from __future__ import annotations

import operator
import typing as t

from gibbous.frontend import ops as O
from gibbous.ir import runtime
from gibbous.ir.core import Constant, Result, Value

if t.TYPE_CHECKING:
    from gibbous.frontend.build import FunctionBuilder


def extend(fb: FunctionBuilder, k: int, op: O.ListExtend | O.SetUpdate, i: int) -> None:
    items = fb.pop_value()
    target = fb.peek_value(i)
    # [1, 2, 3] compiles to BUILD_LIST 0; LOAD_CONST (1, 2, 3); LIST_EXTEND 1 (and sets
    # alike): give type inference the literal's items instead.
    ops = fb.analysis.ops
    empty = O.BuildList(0) if isinstance(op, O.ListExtend) else O.BuildSet(0)
    literal = (
        k >= 2
        and i == 1
        and ops[k - 2].op == empty
        and isinstance(ops[k - 1].op, O.LoadConst)
        and isinstance(items, Constant)
        and isinstance(items.value, (tuple, frozenset))
        and isinstance(target, Result)
        and not target.has_uses()
    )
    if literal:
        assert isinstance(target, Result) and isinstance(items, Constant)
        make = runtime.make_list if isinstance(op, O.ListExtend) else runtime.make_set
        elements = [fb.const(x) for x in t.cast(tuple[object, ...], items.value)]
        target.op.erase()
        fb.stack[-1] = fb.call(make, *elements, name=fb.hint)
    else:
        fb.call(list.extend if isinstance(op, O.ListExtend) else set.update, target, items)


def unpack(fb: FunctionBuilder, k: int, packed: Value, n: int) -> None:
    ops = fb.analysis.ops
    names: list[str | None] = []
    for j in range(n):
        nxt = ops[k + 1 + j].op if k + 1 + j < len(ops) else None
        names.append(nxt.name if isinstance(nxt, (O.StoreFast, O.StoreDeref)) else None)
    items = [fb.call(operator.getitem, packed, j, name=names[j]) for j in range(n)]
    fb.stack.extend(reversed(items))  # the first item ends on top
