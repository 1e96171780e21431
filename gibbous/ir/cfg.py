"""Control-flow analyses of a function: its graph, orders, dominators, frontiers and loops.

Every algorithm here is networkx's; this module only turns a ``Function`` into a
``networkx.DiGraph`` of its blocks and the answers back into IR terms.

Conventions shared by all analyses:

* Blocks are graph nodes as themselves.  ``Block`` compares and hashes by identity, so two
  blocks with the same name are still two nodes.
* Dominance is about the blocks reachable from the entry.  Unreachable blocks are in the graph
  (``graph``, ``predecessors``) but in no order, tree, frontier or loop.
* The graph has an edge ``a -> b`` for every block ``b`` that ``a``'s terminator names.  A
  terminator naming a block that is not in the function is broken IR (the verifier reports it);
  such edges are left out so that the analyses still describe the rest of the function.
"""

from __future__ import annotations

import attrs
import networkx as nx

from gibbous.ir.core import Block, Function


def graph(f: Function) -> nx.DiGraph:
    """The control-flow graph: every block of ``f`` a node, an edge per distinct successor.

    A branch whose two targets are the same block gives one edge whose ``"count"`` attribute
    is 2; every other edge has count 1.  Each block's out-edges are added in terminator order,
    and networkx iterates successors in insertion order, so traversals are deterministic.
    """
    g = nx.DiGraph()
    g.add_nodes_from(f.blocks)
    members = set(f.blocks)
    for block in f.blocks:
        for target in block.successors:
            if target not in members:
                continue
            if g.has_edge(block, target):
                g.edges[block, target]["count"] += 1
            else:
                g.add_edge(block, target, count=1)
    return g


def predecessors(f: Function) -> dict[Block, list[Block]]:
    """Each block's predecessors, each once, in block order (unreachable ones included)."""
    g = graph(f)
    position = {b: i for i, b in enumerate(f.blocks)}
    return {b: sorted(g.predecessors(b), key=position.__getitem__) for b in f.blocks}


def reachable(f: Function) -> set[Block]:
    """The blocks reachable from the entry, the entry included."""
    found: set[Block] = nx.descendants(graph(f), f.entry)
    return found | {f.entry}


def reverse_postorder(f: Function) -> list[Block]:
    """Reachable blocks in reverse postorder of a depth-first search from the entry.

    The search visits successors in terminator order (a branch's true target first), so the
    order is deterministic; for a diamond it is ``entry, else, then, join``.  Every block comes
    after all of its dominators, and before its successors except along back edges.
    """
    return _reverse_postorder(graph(f), f.entry)


def _reverse_postorder(g: nx.DiGraph, entry: Block) -> list[Block]:
    order: list[Block] = list(nx.dfs_postorder_nodes(g, entry))
    order.reverse()
    return order


# --------------------------------------------------------------------------------------------
# Dominators


@attrs.frozen(eq=False)
class DominatorTree:
    """Immediate dominators of the reachable blocks, and queries on the tree they form.

    ``idom`` maps the entry to itself.  (networkx up to 3.4 does so too; later versions leave
    the entry out, and ``dominator_tree`` puts it back so the shape does not depend on the
    version.)  Unreachable blocks are not in the tree: they dominate nothing and nothing
    dominates them, not even themselves, which is the conservative answer to "may a value
    defined in ``a`` be used in ``b``?".

    The tree compares by identity (``eq=False``): its fields hold mutable dicts, and two trees
    are best compared through their ``idom`` mappings.
    """

    entry: Block
    idom: dict[Block, Block]
    _children: dict[Block, list[Block]] = attrs.field(init=False, factory=dict, repr=False)

    def __attrs_post_init__(self) -> None:
        # Children in the order their blocks appear in ``idom`` (reverse postorder when built
        # by ``dominator_tree``), so that walking the tree is deterministic.
        for block, parent in self.idom.items():
            self._children.setdefault(block, [])
            if block is not self.entry:
                self._children.setdefault(parent, []).append(block)

    def dominates(self, a: Block, b: Block) -> bool:
        """Every path from the entry to ``b`` passes through ``a`` (so ``a`` dominates itself)."""
        if a not in self.idom or b not in self.idom:
            return False
        while b is not a:
            if b is self.entry:
                return False
            b = self.idom[b]
        return True

    def strictly_dominates(self, a: Block, b: Block) -> bool:
        return a is not b and self.dominates(a, b)

    def children(self, b: Block) -> list[Block]:
        """The blocks ``b`` immediately dominates (none for unreachable blocks)."""
        return list(self._children.get(b, ()))

    def depth(self, b: Block) -> int:
        """The number of strict dominators of ``b``: 0 for the entry."""
        if b not in self.idom:
            raise KeyError(f"block {b.name!r} is unreachable: it is not in the dominator tree")
        n = 0
        while b is not self.entry:
            b = self.idom[b]
            n += 1
        return n


def dominator_tree(f: Function) -> DominatorTree:
    return _dominator_tree(graph(f), f.entry)


def _dominator_tree(g: nx.DiGraph, entry: Block) -> DominatorTree:
    found: dict[Block, Block] = nx.immediate_dominators(g, entry)
    # Keyed in reverse postorder, entry first, whatever order networkx returns them in.
    idom = {b: found.get(b, entry) for b in _reverse_postorder(g, entry)}
    return DominatorTree(entry, idom)


def dominance_frontiers(f: Function) -> dict[Block, set[Block]]:
    """For each reachable block ``b``, the blocks where ``b``'s dominance ends.

    A block ``y`` is in the frontier of ``b`` when ``b`` dominates a predecessor of ``y`` but
    does not strictly dominate ``y``: where a value defined in ``b`` meets other definitions,
    so where SSA construction gives a block an argument.  Keys are the reachable blocks.
    """
    found: dict[Block, set[Block]] = nx.dominance_frontiers(graph(f), f.entry)
    return {b: set(found[b]) for b in found}


# --------------------------------------------------------------------------------------------
# Loops


@attrs.frozen
class Loop:
    """A natural loop: a header that dominates the sources of the back edges into it.

    ``blocks`` holds the header and every block that reaches a latch without passing through
    the header; ``latches`` are the sources of the back edges, in block order; ``parent`` is
    the innermost loop strictly containing this one; ``depth`` is 1 for an outermost loop.

    Loops compare by value, and their values are blocks, which compare by identity: two
    ``Loop`` objects are equal exactly when they describe the same blocks of the same function.
    """

    header: Block
    blocks: frozenset[Block]
    latches: tuple[Block, ...]
    parent: Loop | None
    depth: int

    def __contains__(self, block: object) -> bool:
        return block in self.blocks


def natural_loops(f: Function) -> list[Loop]:
    """The natural loops of ``f``: outermost first, then by the position of their header.

    A back edge is an edge ``u -> h`` whose target ``h`` dominates its source ``u``.  All back
    edges into one header make one loop.  Loops with different headers are disjoint or nested;
    ``parent`` records the nesting.

    Only reducible cycles are natural loops.  A cycle that can be entered at two blocks (an
    irreducible cycle, such as ``entry -> a, entry -> b, a <-> b``) has no header dominating
    the rest, hence no back edge, and is not reported; nor are cycles among unreachable blocks.
    """
    g = graph(f)
    dom = _dominator_tree(g, f.entry)
    position = {b: i for i, b in enumerate(f.blocks)}
    alive = g.subgraph(dom.idom)  # unreachable blocks could reach a latch, but are not in loops

    latches_of: dict[Block, list[Block]] = {}
    for u in sorted(dom.idom, key=position.__getitem__):
        for h in g.successors(u):
            if dom.dominates(h, u):
                latches_of.setdefault(h, []).append(u)

    bodies: dict[Block, frozenset[Block]] = {}
    for header, latches in latches_of.items():
        without_header = alive.subgraph(n for n in alive if n is not header)
        body = {header}
        for latch in latches:
            if latch is not header:
                body |= {latch} | nx.ancestors(without_header, latch)
        bodies[header] = frozenset(body)

    def enclosing(header: Block) -> list[Block]:
        return [h for h, body in bodies.items() if h is not header and body > bodies[header]]

    # Nesting is containment; an enclosing loop is always larger, so building the loops from
    # the largest down creates every parent before its children.
    loops: dict[Block, Loop] = {}
    for header in sorted(bodies, key=lambda h: -len(bodies[h])):
        outer = enclosing(header)
        parent = loops[min(outer, key=lambda h: len(bodies[h]))] if outer else None
        loops[header] = Loop(
            header=header,
            blocks=bodies[header],
            latches=tuple(latches_of[header]),
            parent=parent,
            depth=1 if parent is None else parent.depth + 1,
        )
    return sorted(loops.values(), key=lambda loop: (loop.depth, position[loop.header]))


def loop_depth(f: Function) -> dict[Block, int]:
    """How many natural loops contain each block: 0 outside loops and for unreachable blocks."""
    depth = dict.fromkeys(f.blocks, 0)
    for loop in natural_loops(f):
        for b in loop.blocks:
            depth[b] = max(depth[b], loop.depth)
    return depth


__all__ = [
    "DominatorTree",
    "Loop",
    "dominance_frontiers",
    "dominator_tree",
    "graph",
    "loop_depth",
    "natural_loops",
    "predecessors",
    "reachable",
    "reverse_postorder",
]
