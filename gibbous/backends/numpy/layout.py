"""Where each block's code goes: inline at its one jump site, after another, or under a label.

A block reached along exactly one edge is *inline*: it is written where that edge leaves its
source, so a jump becomes "fall into the next lines" and a branch becomes ``if``/``else``.
Inline blocks form trees hanging from the other blocks: a block with one incoming edge cannot
be on a cycle of such blocks unless that cycle is unreachable, so writing them always ends.
A block with its inline tree is its *region*.

The other blocks are *roots*: the entry, whose code runs first, and *labelled* blocks, written
under an integer label in a ``while True:`` loop that dispatches on the label (``codegen``
writes the dispatch; inside the loop a jump to a labelled block is ``continue``).

A join whose every incoming edge comes from one root's code can be written right after that
code, as a *follower*: jumps to it fall out of the ``if``/``else`` into it, so an ``if`` whose
arms meet again costs nothing, inside the loop as before it.  Code before the loop has no
``continue``, so every jump out of it falls through; there a follower must also be the one
place every such jump goes.
"""

from __future__ import annotations

import attrs

from gibbous.ir.cfg import reachable, reverse_postorder
from gibbous.ir.core import Block, Function


@attrs.frozen
class Layout:
    blocks: tuple[Block, ...]  # the reachable blocks, in function order
    inline: frozenset[Block]
    followers: dict[Block, tuple[Block, ...]]  # per root: blocks written after its region
    labels: dict[Block, int]  # the roots other than the entry
    # Per region: the operations written in it, and whether control can fall out of its end
    # (a jump to a follower; before the loop, any jump out of it).
    sizes: dict[Block, int]
    falls: dict[Block, bool]

    @property
    def needs_loop(self) -> bool:
        return bool(self.labels)

    @property
    def labelled(self) -> tuple[Block, ...]:
        return tuple(self.labels)


def plan(f: Function) -> Layout:
    alive = reachable(f)
    blocks = tuple(b for b in f.blocks if b in alive)
    # Edges, not predecessor blocks: a branch with both arms to one block is two jump sites.
    sources: dict[Block, list[Block]] = {b: [] for b in blocks}
    for b in blocks:
        for s in b.successors:
            sources[s].append(b)
    inline = frozenset(
        b for b in blocks if b is not f.entry and len(sources[b]) == 1 and sources[b][0] is not b
    )

    # A root comes before the blocks it dominates in reverse postorder, and a follower is
    # dominated by its root (every way in passes through the root's code): visiting in that
    # order claims each follower for its root before it could become a root itself.
    followers: dict[Block, tuple[Block, ...]] = {}
    context: dict[Block, Block] = {}  # each block: the root whose code it is written in
    for b in reverse_postorder(f):
        if b in inline or b in context:
            continue
        found = _followers(b, inline, sources, before_loop=b is f.entry)
        followers[b] = tuple(found)
        for head in (b, *found):
            for member in _tree(head, inline):
                context[member] = b

    labelled = [b for b in blocks if b in followers and b is not f.entry]
    targets = {r: None if r is f.entry else frozenset(found) for r, found in followers.items()}
    falls_to = {b: targets[context[b]] for b in blocks}
    sizes, falls = _regions(blocks, inline, falls_to)
    return Layout(
        blocks=blocks,
        inline=inline,
        followers=followers,
        labels={b: i for i, b in enumerate(labelled)},
        sizes=sizes,
        falls=falls,
    )


def _tree(head: Block, inline: frozenset[Block]) -> list[Block]:
    tree = [head]
    for b in tree:  # grows while iterated
        tree.extend(s for s in b.successors if s in inline)
    return tree


def _followers(
    root: Block, inline: frozenset[Block], sources: dict[Block, list[Block]], before_loop: bool
) -> list[Block]:
    """The blocks that can follow ``root``'s region, one after another.

    A block can follow once every edge into it comes from code already written, which also
    rules out a cycle through it.  Jumps to it then fall out of that code into it, so no other
    block targeted from the same code can follow later: falling out would run this one first.
    Before the loop every jump out falls through, so there the follower must be the one block
    the code jumps out to.
    """
    written: set[Block] = set()
    passed_over: set[Block] = set()
    result: list[Block] = []
    head = root
    while True:
        tree = _tree(head, inline)
        written.update(tree)
        # Jumps out of earlier code went to head, or to blocks passed over, now labelled.
        exits = {s: None for b in tree for s in b.successors if s not in inline}
        exits = {s: None for s in exits if s not in written}
        candidates = [s for s in exits if s not in passed_over]
        ready = [s for s in candidates if all(p in written for p in sources[s])]
        if not ready or (before_loop and len(exits) != 1):
            return result
        head = ready[0]
        result.append(head)
        passed_over.update(candidates)


def _regions(
    blocks: tuple[Block, ...],
    inline: frozenset[Block],
    falls_to: dict[Block, frozenset[Block] | None],
) -> tuple[dict[Block, int], dict[Block, bool]]:
    """Size of every region, and whether control can fall out of it.

    ``falls_to[b]`` names the blocks a jump from ``b`` falls through to (its root's
    followers), or is None before the loop, where every jump out falls through.  Regions nest
    along the inline forest; a post-order walk without recursion finishes children first.
    """
    sizes: dict[Block, int] = {}
    falls: dict[Block, bool] = {}
    for root in (b for b in blocks if b not in inline):
        stack: list[tuple[Block, bool]] = [(root, False)]
        while stack:
            b, children_done = stack.pop()
            kids = [s for s in b.successors if s in inline]
            if not children_done:
                stack.append((b, True))
                stack.extend((s, False) for s in kids)
                continue
            targets = falls_to[b]
            jumps_out = [s for s in b.successors if s not in inline]
            sizes[b] = len(b.ops) + sum(sizes[s] for s in kids)
            falls[b] = any(falls[s] for s in kids) or any(
                targets is None or s in targets for s in jumps_out
            )
    return sizes, falls
