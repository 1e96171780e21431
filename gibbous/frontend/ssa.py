"""Block arguments that carry nothing: removed after construction, to a fixpoint.

The builder gives every block an argument for each stack slot and local live at its entry
(pruned SSA).  Many of them receive the same value from every predecessor (or themselves, around
a loop): those are Braun et al.'s trivial phis, replaced by the one value they always hold.
"""

from __future__ import annotations

from gibbous.ir.core import (
    Block,
    Constant,
    Function,
    Terminator,
    Value,
    edge_args,
    replace_terminator,
    with_edge_args,
)
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


def _drop_arguments(
    block: Block, indices: list[int], edges: list[tuple[Terminator, int]]
) -> list[tuple[Terminator, Terminator]]:
    """Drop the block's arguments at ``indices`` and the values jumps pass to them; the
    terminators replaced, as ``(old, new)`` pairs."""
    drop = set(indices)

    def kept(args: tuple[Value, ...]) -> list[Value]:
        return [v for i, v in enumerate(args) if i not in drop]

    replaced: list[tuple[Terminator, Terminator]] = []
    for term in dict.fromkeys(term for term, _ in edges):
        successors = term.successors
        new = with_edge_args(
            term, lambda i, args: kept(args) if successors[i] is block else list(args)
        )
        replace_terminator(term, new)
        replaced.append((term, new))
    for index in sorted(drop, reverse=True):
        block.erase_arg(index)
    return replaced


def _key(v: Value) -> object:
    # Equal constants count as one value (the builder makes a new Constant per use).
    if isinstance(v, Constant) and isinstance(v.type, Const):
        return v.type
    return id(v)


def remove_trivial_arguments(func: Function, protected: set[int]) -> None:
    """Replace block arguments that always receive the same value by that value, to a fixpoint
    (Braun et al.'s trivial phis)."""
    # The edges into each block, computed once and kept up to date as terminators are replaced
    # (recomputing them per argument made this quadratic in the function's size).
    into = _incoming(func)
    changed = True
    while changed:
        changed = False
        for block in func.blocks[1:]:
            edges = into[id(block)]
            trivial: list[int] = []
            for arg in reversed(block.args):
                if id(arg) in protected:
                    continue
                passed = [edge_args(term, s)[arg.index] for term, s in edges]
                incoming = {_key(v): v for v in passed}
                incoming.pop(_key(arg), None)
                if len(incoming) != 1:
                    continue
                (only,) = incoming.values()
                arg.replace_all_uses_with(only)  # the jumps into the block too
                trivial.append(arg.index)
            if not trivial:
                continue
            # One rebuild of each jump into the block for all its trivial arguments.
            for old, new in _drop_arguments(block, trivial, edges):
                for succ in dict.fromkeys(new.successors):
                    into[id(succ)] = [(new if t is old else t, s) for t, s in into[id(succ)]]
            changed = True
