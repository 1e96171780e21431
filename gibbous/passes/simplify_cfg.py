"""CFG simplification: fewer blocks and edges, the same program.

Four rewrites, applied in rounds until a round changes nothing:

1. **Unreachable blocks** are deleted.  Their operations may use each other's values across
   blocks, so all their operands are dropped before any block is erased.  (Reachable code never
   uses their values: a definition in an unreachable block dominates nothing.)
2. **A branch with one destination**, ``branch %c, ^b(%x), ^b(%x)``, becomes ``jump ^b(%x)``
   (equal constants count as the same value) -- but only where ``bool(%c)`` is pure for the
   type of ``%c`` (``operator.truth`` in the purity table), since the jump no longer evaluates
   it: a user ``__bool__`` may have effects.  ``bool`` of an array may raise; dropping that
   follows the same trade-off as deleting a dead pure call (see ``gibbous.ir.purity``).
3. **A block with a single predecessor** that reaches it by an unconditional jump is merged
   into that predecessor: its arguments are replaced by the values the jump passed, and its
   operations move to the end of the predecessor.  Never the entry (nothing jumps to it), and
   never a block into itself.  The predecessor dominates the block, so every value it used is
   still defined before its use.
4. **Jump threading**: a forwarding block ``^e(%a..): jump ^t(v..)`` -- containing nothing but
   that jump, not the entry, not jumping to itself -- is bypassed: every edge into ``^e`` goes
   straight to ``^t``, passing ``v..`` with ``^e``'s arguments replaced by what that edge passed
   to ``^e``.  This is safe because each ``v`` is an argument of ``^e`` (replaced), a constant,
   or a value defined outside ``^e`` that dominates ``^e``, hence dominates every predecessor
   of ``^e``.  It is only done when ``^e``'s arguments are used by nothing but its own jump
   (they could otherwise be used in blocks ``^e`` dominates).  ``^e`` is then unreachable and
   the next round deletes it.

No rewrite adds a block or a branch; each deletes one, or (threading) leaves a block without
predecessors for the next round to delete.  So the rounds end.
"""

from __future__ import annotations

import operator
import typing as t

import attrs

from gibbous.ir.cfg import reachable
from gibbous.ir.core import Block, Branch, Constant, Function, Guard, Jump, Value
from gibbous.ir.purity import is_pure
from gibbous.ir.types import Const
from gibbous.passes.manager import register_pass
from gibbous.passes.cfg_edit import edges_of, incoming_edges, jump_instead, set_edges


@register_pass
@attrs.frozen
class SimplifyCFG:
    name: t.ClassVar[str] = "simplify-cfg"
    description: t.ClassVar[str] = (
        "delete unreachable blocks, merge straight-line blocks, thread jumps through empty ones"
    )

    def run(self, f: Function) -> bool:
        changed = False
        while True:
            round_changed = remove_unreachable_blocks(f)
            round_changed |= fold_single_destination_branches(f)
            round_changed |= merge_blocks_into_predecessors(f)
            round_changed |= thread_jumps(f)
            if not round_changed:
                return changed
            changed = True


def remove_unreachable_blocks(f: Function) -> bool:
    live = reachable(f)
    dead = [b for b in f.blocks if b not in live]
    for b in dead:
        for op in b.ops:
            op.drop_operands()
    for b in dead:
        f.erase_block(b)
    return bool(dead)


def fold_single_destination_branches(f: Function) -> bool:
    changed = False
    for block in f.blocks:
        term = block.terminator
        if not isinstance(term, Branch) or term.if_true is not term.if_false:
            continue
        if not _same_values(term.true_args, term.false_args):
            continue
        if not is_pure(operator.truth, [term.cond.type]):
            continue
        jump_instead(term, term.if_true, term.true_args)
        changed = True
    return changed


def _same_values(a: t.Sequence[Value], b: t.Sequence[Value]) -> bool:
    return len(a) == len(b) and all(map(_same_value, a, b))


def _same_value(a: Value, b: Value) -> bool:
    # Two constant objects holding equal values (by type and value: 1 is not 1.0) are the same.
    if isinstance(a, Constant) and isinstance(b, Constant):
        return Const(a.value) == Const(b.value)
    return a is b


def merge_blocks_into_predecessors(f: Function) -> bool:
    # Merging moves the block's terminator object into the predecessor, so the edges computed
    # here stay valid for the blocks after it (their predecessor's block changes, not the edge).
    incoming = incoming_edges(f)
    changed = False
    for block in f.blocks[1:]:
        edges = incoming.get(block, [])
        if len(edges) != 1:
            continue
        jump, _ = edges[0]
        pred = jump.parent
        if not isinstance(jump, Jump) or pred is None or pred is block:
            continue
        for arg, value in zip(block.args, jump.args):
            arg.replace_all_uses_with(value)
        jump.erase()
        for op in block.ops:
            op.detach()
            pred.append(op)
        f.erase_block(block)
        changed = True
    return changed


def thread_jumps(f: Function) -> bool:
    changed = False
    for block in f.blocks[1:]:
        if not _is_forwarding(block):
            continue
        jump = t.cast(Jump, block.terminator)
        # Recomputed per block, since threading rebuilds the predecessors' terminators; each
        # terminator is rebuilt once, even a branch with both edges into ``block``.
        predecessors = dict.fromkeys(term for term, _ in incoming_edges(f).get(block, []))
        if any(isinstance(term, Guard) for term in predecessors):
            continue  # a handler's block is entered by handler edges alone
        for term in predecessors:
            edges: list[tuple[Block, t.Sequence[Value]]] = []
            for target, args in edges_of(term):
                if target is block:
                    passed: dict[Value, Value] = dict(zip(block.args, args))
                    edges.append((jump.target, [passed.get(v, v) for v in jump.args]))
                else:
                    edges.append((target, args))
            set_edges(term, edges)
            changed = True
    return changed


def _is_forwarding(block: Block) -> bool:
    jump = block.terminator
    if len(block.ops) != 1 or not isinstance(jump, Jump) or jump.target is block:
        return False
    return all(use.user is jump for arg in block.args for use in arg.uses)


__all__ = [
    "SimplifyCFG",
    "fold_single_destination_branches",
    "merge_blocks_into_predecessors",
    "remove_unreachable_blocks",
    "thread_jumps",
]
