"""Edits of control flow shared by the passes: who jumps where, and re-pointing those jumps.

Terminators are immutable in their targets, so re-pointing an edge means building a new
terminator of the same kind (same condition, same location) and putting it in the old one's
place.  Every helper here keeps use lists exact by going through ``core``'s methods.
"""

from __future__ import annotations

import typing as t

from gibbous.ir.core import (
    Block,
    Branch,
    Function,
    Guard,
    IRError,
    Jump,
    Terminator,
    Value,
    edge_args,
    replace_terminator,
)

#: One control-flow edge: the terminator and the index of the successor it goes to.
Edge = tuple[Terminator, int]


def incoming_edges(f: Function) -> dict[Block, list[Edge]]:
    """For every block of ``f``, the edges into it, from reachable blocks or not, in order.

    A branch whose two targets are the same block contributes two edges to it.
    """
    incoming: dict[Block, list[Edge]] = {b: [] for b in f.blocks}
    for b in f.blocks:
        term = b.terminator
        if term is None:
            continue
        for k, target in enumerate(term.successors):
            incoming.setdefault(target, []).append((term, k))
    return incoming


def edges_of(term: Terminator) -> list[tuple[Block, tuple[Value, ...]]]:
    """Each successor of ``term`` with the values passed to it."""
    return [(target, edge_args(term, k)) for k, target in enumerate(term.successors)]


def set_edges(term: Terminator, edges: t.Sequence[tuple[Block, t.Sequence[Value]]]) -> Terminator:
    """Replace ``term`` by the same kind of terminator with these (target, args) edges."""
    new: Terminator
    if isinstance(term, Jump) and len(edges) == 1:
        [(target, args)] = edges
        new = Jump(target, args, loc=term.loc)
    elif isinstance(term, Branch) and len(edges) == 2:
        [(if_true, true_args), (if_false, false_args)] = edges
        new = Branch(term.cond, if_true, true_args, if_false, false_args, loc=term.loc)
    elif isinstance(term, Guard) and len(edges) == 2:
        [(normal, normal_args), (handler, handler_args)] = edges
        new = Guard(term.guarded, normal, normal_args, handler, handler_args, loc=term.loc)
    else:
        raise IRError(f"{type(term).__name__} cannot take {len(edges)} edge(s)")
    replace_terminator(term, new)
    return new


def set_edge(term: Terminator, index: int, target: Block, args: t.Sequence[Value]) -> Terminator:
    """Replace ``term`` by one whose ``index``-th edge goes to ``target`` with ``args``."""
    edges: list[tuple[Block, t.Sequence[Value]]] = list(edges_of(term))
    edges[index] = (target, args)
    return set_edges(term, edges)


def jump_instead(term: Terminator, target: Block, args: t.Sequence[Value]) -> Jump:
    """Replace ``term`` (a branch, usually) by an unconditional jump."""
    new = Jump(target, args, loc=term.loc)
    replace_terminator(term, new)
    return new


__all__ = [
    "Edge",
    "edges_of",
    "incoming_edges",
    "jump_instead",
    "replace_terminator",
    "set_edge",
    "set_edges",
]
