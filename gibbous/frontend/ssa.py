"""Block arguments that carry nothing: removed after construction, to a fixpoint.

The builder gives every block an argument for each stack slot and local live at its entry
(pruned SSA).  Many of them receive the same value from every predecessor (or themselves, around
a loop): those are Braun et al.'s trivial phis, replaced by the one value they always hold.
"""

from __future__ import annotations

from gibbous.ir.core import Block, Branch, Constant, Function, Jump, Terminator, Value, edge_args
from gibbous.ir.types import Const


def _incoming(func: Function) -> dict[int, list[tuple[Terminator, int]]]:
    """For each block (by id), the terminators jumping to it and the successor index."""
    into: dict[int, list[tuple[Terminator, int]]] = {id(b): [] for b in func.blocks}
    for block in func.blocks:
        term = block.terminator
        if term is None:
            continue
        for s, succ in enumerate(term.successors):
            into[id(succ)].append((term, s))
    return into


def _drop_argument(block: Block, index: int, edges: list[tuple[Terminator, int]]) -> None:
    for term in dict.fromkeys(term for term, _ in edges):
        parent = term.parent
        assert parent is not None
        if isinstance(term, Jump):
            args = list(term.args)
            del args[index]
            new: Terminator = Jump(term.target, args, loc=term.loc)
        else:
            assert isinstance(term, Branch)
            true_args, false_args = list(term.true_args), list(term.false_args)
            if term.if_true is block:
                del true_args[index]
            if term.if_false is block:
                del false_args[index]
            new = Branch(term.cond, term.if_true, true_args, term.if_false, false_args,
                         loc=term.loc)
        term.erase()
        parent.append(new)
    block.erase_arg(index)


def _key(v: Value) -> object:
    # Equal constants count as one value (the builder makes a new Constant per use).
    if isinstance(v, Constant) and isinstance(v.type, Const):
        return v.type
    return id(v)


def remove_trivial_arguments(func: Function, protected: set[int]) -> None:
    """Replace block arguments that always receive the same value by that value, to a fixpoint
    (Braun et al.'s trivial phis)."""
    changed = True
    while changed:
        changed = False
        for block in func.blocks[1:]:
            for arg in reversed(block.args):
                if id(arg) in protected:
                    continue
                edges = _incoming(func)[id(block)]
                passed = [edge_args(term, s)[arg.index] for term, s in edges]
                incoming = {_key(v): v for v in passed}
                incoming.pop(_key(arg), None)
                if len(incoming) != 1:
                    continue
                (only,) = incoming.values()
                arg.replace_all_uses_with(only)
                _drop_argument(block, arg.index, _incoming(func)[id(block)])
                changed = True
