"""Dead-code elimination: delete pure calls and block arguments whose values nobody needs.

The pass marks what is live and deletes the rest, which reaches the fixed point in one go
(deleting a dead call can make its operands' definitions dead, and so on, as a backwards walk
repeated until nothing changes would find too):

* live roots: the result of every impure call (it runs for its effects), the value a
  ``return`` or ``raise`` uses, a branch's condition, a guarded call (whether it raises
  decides where control goes), and the entry block's arguments;
* the operands of a call with a live result are live, and so is every value a jump or branch
  passes to a live block argument.

A pure call whose result is not live is deleted, even if it might raise: see
``gibbous.ir.purity`` for that trade-off.  A non-entry block argument that is not live is
deleted together with the value every jump and branch passes for it.  Marking rather than
counting uses also removes values that only feed themselves around a loop (``%i`` in
``^loop(%i): ... jump ^loop(%i + 1)`` when nothing else reads ``%i``).
"""

from __future__ import annotations

import typing as t

import attrs

from gibbous.ir.core import (
    Block,
    BlockArgument,
    Branch,
    Call,
    Constant,
    Function,
    Guard,
    Raise,
    Result,
    Return,
    Value,
    edge_args,
)
from gibbous.ir.purity import is_pure_call
from gibbous.passes.manager import register_pass
from gibbous.passes.cfg_edit import Edge, edges_of, incoming_edges, set_edges


@register_pass
@attrs.frozen
class DeadCodeElimination:
    name: t.ClassVar[str] = "dce"
    description: t.ClassVar[str] = (
        "delete unused pure calls and unused block arguments (with the values passed to them)"
    )

    def run(self, f: Function) -> bool:
        incoming = incoming_edges(f)
        live = _live_values(f, incoming)
        dead_calls = [op for op in f.calls() if op.result not in live]
        # Dead values may use each other, around loops too: first every dead call forgets its
        # operands, then the dead block arguments (and the edge values passed to them) go,
        # and only then are the dead calls, now unused, erased.
        for op in dead_calls:
            op.drop_operands()
        changed = _drop_dead_block_arguments(f, live, incoming)
        for op in dead_calls:
            op.erase()
        return changed or bool(dead_calls)


def _live_values(f: Function, incoming: dict[Block, list[Edge]]) -> set[Value]:
    live: set[Value] = set()
    work: list[Value] = []

    def mark(v: Value) -> None:
        if not isinstance(v, Constant) and v not in live:
            live.add(v)
            work.append(v)

    for arg in f.entry.args:
        mark(arg)
    for op in f.operations():
        if isinstance(op, Call) and not is_pure_call(op):
            mark(op.result)  # kept for its effects; marking it marks its operands
        elif isinstance(op, (Return, Raise)):
            mark(op.operands[0])
        elif isinstance(op, Branch):
            mark(op.cond)
        elif isinstance(op, Guard):
            mark(op.guarded)  # whether it raises decides the way on

    while work:
        v = work.pop()
        if isinstance(v, Result):
            for operand in v.op.operands:
                mark(operand)
        elif isinstance(v, BlockArgument):
            for term, k in incoming.get(v.block, ()):
                mark(edge_args(term, k)[v.index])
    return live


def _drop_dead_block_arguments(
    f: Function, live: set[Value], incoming: dict[Block, list[Edge]]
) -> bool:
    dead: dict[Block, set[int]] = {}
    for b in f.blocks[1:]:  # the entry's arguments are the function's: never dropped
        indices = {a.index for a in b.args if a not in live}
        if indices:
            dead[b] = indices
    if not dead:
        return False
    # Each terminator is rebuilt once, with every edge of it trimmed.
    terminators = {term: None for b in dead for term, _ in incoming.get(b, ())}
    for term in terminators:
        trimmed = [
            (target, [v for j, v in enumerate(args) if j not in dead.get(target, ())])
            for target, args in edges_of(term)
        ]
        set_edges(term, trimmed)
    for b, indices in dead.items():
        for index in sorted(indices, reverse=True):  # later indices first: erasing renumbers
            b.erase_arg(index)
    return True


__all__ = ["DeadCodeElimination"]
