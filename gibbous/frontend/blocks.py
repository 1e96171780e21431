"""Basic blocks of neutral operations, and the facts SSA construction needs about them.

``split`` cuts the operations into blocks and finds those reachable from the first; for those,
``analyse`` computes (graph algorithms from networkx):

* the stack at each block's entry: its depth, which slots hold CPython's NULL marker (they
  carry no value) and which may hold an unbound local (pushed by LoadFastAndClear); a stack
  that differs between two predecessors is a bug (ours, or CPython's) and raises;
* which local reads need a check that the local is bound: a forward "definitely bound"
  analysis, the same one CPython uses to choose LOAD_FAST_CHECK;
* the locals live at each block's entry (pruned SSA: only those become block arguments).

Exception handlers (``decode.exception_table``) add edges: every operation an entry covers may
raise, so its block has an edge to the handler's block, whose entry stack is the stack before
that operation cut to the entry's depth, then ``lasti`` (if the entry pushes it) and the
exception.  A local is live into a block that may raise if it is live into its handler (the
exception may come before any assignment in the block).
"""

from __future__ import annotations

import enum
import types
import typing as t

import attrs
import networkx as nx

from gibbous.frontend import ops as O
from gibbous.frontend.decode import Decoded, Handler


class Slot(enum.Enum):
    """What a stack slot holds at a block's entry."""

    NULL = "NULL"
    VALUE = "value"
    MAYBE_UNBOUND = "maybe unbound"
    HANDLED = "handled"  # the exception a handler handles (PushExcInfo): what `raise` re-raises


Stack = tuple[Slot, ...]


@attrs.define(eq=False)
class Block:
    """Operations ``ops[start:stop]``; the last one decides the successors."""

    index: int
    start: int
    stop: int
    # (successor, stack on entry to it) per outgoing edge, in terminator order
    edges: list[tuple[int, Stack]] = attrs.field(factory=list)
    handlers: list[int] = attrs.field(factory=list)  # blocks its exceptions may go to
    entry_stack: Stack | None = None  # None: not reached (yet)
    entry_bound: frozenset[str] = frozenset()
    live_in: frozenset[str] = frozenset()


@attrs.define
class Analysis:
    ops: list[Decoded]
    blocks: list[Block]  # every block, reachable or not, in bytecode order
    reachable: list[Block]  # in bytecode order
    graph: nx.DiGraph  # block index -> block index, reachable blocks only
    block_index: dict[int, int]  # bytecode offset -> index of the block it starts
    cover: dict[int, Handler] = attrs.field(factory=dict)  # op position -> its handler
    handler_of: dict[int, Handler] = attrs.field(factory=dict)  # block index -> entry it starts
    needs_check: set[int] = attrs.field(factory=set)  # LoadFast/DeleteFast positions that
    # may meet an unbound local
    handled: dict[int, int] = attrs.field(factory=dict)  # bare `raise` position -> the stack
    # slot holding the exception it re-raises

    def block_at(self, offset: int) -> Block:
        """The block starting at the first operation of bytecode ``offset``."""
        return self.blocks[self.block_index[offset]]


def _split(
    ops: list[Decoded], table: t.Sequence[Handler]
) -> tuple[list[Block], dict[int, int]]:
    first_at: dict[int, int] = {}
    for k, d in enumerate(ops):
        first_at.setdefault(d.offset, k)
    leaders = {0} | {first_at[h.target] for h in table}
    for k, d in enumerate(ops):
        if d.target is not None:
            leaders.add(first_at[d.target])
        if isinstance(d.op, O.JUMPS + O.ENDS + (O.Yield,)):  # a yield is where a resume begins
            leaders.add(k + 1)
    starts = sorted(k for k in leaders if k < len(ops))
    blocks = [Block(n, s, e) for n, (s, e) in enumerate(zip(starts, starts[1:] + [len(ops)]))]
    by_start = {b.start: b.index for b in blocks}
    return blocks, {off: by_start[k] for off, k in first_at.items() if k in by_start}


def _successors(ops: list[Decoded], block: Block, at: dict[int, int]) -> list[int]:
    """Successor block indices in terminator order (fall-through last, ForIter's body first)."""
    last = ops[block.stop - 1]
    fall = block.index + 1
    match last.op:
        case O.Return() | O.Raise() | O.Reraise() | O.Unsupported():
            return []
        case O.Jump(target=target):
            return [at[target]]
        case O.ForIter(exit=exit):
            return [fall, at[exit]]
        case O.PopJumpIf(target=target) | O.JumpIfOrPop(target=target):
            return [at[target], fall]
    return [fall]


def _transfer(
    op: O.Op, stack: list[Slot], bound: set[str], code: types.CodeType
) -> bool:
    """Apply one non-terminating op to the abstract state; True if it reads a maybe-unbound
    local (so needs a check)."""
    match op:
        case O.LoadFast(name=name):
            check = name not in bound
            bound.add(name)  # past the check, it is bound
            stack.append(Slot.VALUE)
            return check
        case O.LoadFastAndClear(name=name):
            stack.append(Slot.VALUE if name in bound else Slot.MAYBE_UNBOUND)
            bound.discard(name)
        case O.StoreFast(name=name):
            if stack.pop() is Slot.VALUE:
                bound.add(name)
            else:
                bound.discard(name)
        case O.DeleteFast(name=name):
            check = name not in bound
            bound.discard(name)
            return check
        case O.MakeCell(name=name):
            bound.add(name)
        case O.CopyFreeVars():
            bound.update(code.co_freevars)
        case O.PushNull():
            stack.append(Slot.NULL)
        case O.PushExcInfo():
            stack.append(Slot.HANDLED)
            stack[-1], stack[-2] = stack[-2], stack[-1]
        case O.Copy(i=i):
            stack.append(stack[-i])
        case O.Swap(i=i):
            stack[-1], stack[-i] = stack[-i], stack[-1]
        case _:
            pops, pushes = O.stack_effect(op)
            if pops > len(stack):
                raise AssertionError(f"{op!r} pops {pops} from a stack of {len(stack)}")
            del stack[len(stack) - pops :]
            stack.extend([Slot.VALUE] * pushes)
    return False


def _edge_stacks(op: O.Op, stack: list[Slot], n_succ: int) -> list[Stack]:
    """The stack on each outgoing edge, given the stack before the last op ``op``."""
    match op:
        case O.ForIter():
            return [(*stack, Slot.VALUE), tuple(stack[:-1])]
        case O.JumpIfOrPop():
            return [tuple(stack), tuple(stack[:-1])]
        case O.PopJumpIf():
            return [tuple(stack[:-1])] * 2
        case O.Jump():
            return [tuple(stack)]
    return [tuple(stack)] * n_succ


def _merge(old: Stack, new: Stack, where: Decoded) -> Stack:
    if len(old) != len(new) or any((a is Slot.NULL) != (b is Slot.NULL) for a, b in zip(old, new)):
        raise AssertionError(
            f"the stack at offset {where.offset} differs between predecessors: "
            f"{[s.value for s in old]} vs {[s.value for s in new]}"
        )
    return tuple(_merge_slot(a, b) for a, b in zip(old, new))


def _merge_slot(a: Slot, b: Slot) -> Slot:
    if Slot.MAYBE_UNBOUND in (a, b):
        return Slot.MAYBE_UNBOUND
    return a if a is b else Slot.VALUE


Raising = t.Callable[[int, list[Slot], set[str]], None]


def _run_block(
    ops: list[Decoded],
    block: Block,
    code: types.CodeType,
    checks: set[int] | None,
    raising: Raising | None = None,
) -> tuple[list[Slot], set[str]]:
    """Run the block's ops but the last jump; record needed checks into ``checks``; tell
    ``raising`` the state before each op (which a handler may see, if it covers the op)."""
    assert block.entry_stack is not None
    stack, bound = list(block.entry_stack), set(block.entry_bound)
    last = block.stop - 1
    for k in range(block.start, block.stop):
        op = ops[k].op
        if raising is not None:
            raising(k, stack, bound)
        if k == last and isinstance(op, O.JUMPS):
            break
        if _transfer(op, stack, bound, code) and checks is not None:
            checks.add(k)
    if isinstance(ops[last].op, (O.PopJumpIf, O.JumpIfOrPop, O.ForIter)) and not stack:
        raise AssertionError(f"{ops[last].op!r} at offset {ops[last].offset} on an empty stack")
    return stack, bound


def _forward(analysis: Analysis, code: types.CodeType, args: frozenset[str]) -> set[int]:
    ops, blocks, graph = analysis.ops, analysis.blocks, analysis.graph
    blocks[0].entry_stack, blocks[0].entry_bound = (), args
    order = list(reversed(list(nx.dfs_postorder_nodes(graph, 0))))
    rank = {b: n for n, b in enumerate(order)}
    work = {0}

    def enter(succ: int, succ_stack: Stack, bound: t.AbstractSet[str]) -> None:
        target = blocks[succ]
        if target.entry_stack is None:
            target.entry_stack, target.entry_bound = succ_stack, frozenset(bound)
            work.add(succ)
            return
        merged = _merge(target.entry_stack, succ_stack, ops[target.start])
        merged_bound = target.entry_bound & bound
        if merged != target.entry_stack or merged_bound != target.entry_bound:
            target.entry_stack, target.entry_bound = merged, merged_bound
            work.add(succ)

    def raising(k: int, stack: list[Slot], bound: set[str]) -> None:
        handler = analysis.cover.get(k)
        if handler is not None:
            pushed = [Slot.VALUE] * (1 + handler.lasti)  # lasti, the exception
            enter(analysis.block_index[handler.target], (*stack[: handler.depth], *pushed), bound)

    while work:
        block = blocks[min(work, key=rank.__getitem__)]
        work.discard(block.index)
        stack, bound = _run_block(ops, block, code, None, raising)
        succs = [s for s, _ in block.edges]
        stacks = _edge_stacks(ops[block.stop - 1].op, stack, len(succs))
        for succ, succ_stack in zip(succs, stacks):
            enter(succ, succ_stack, bound)
        block.edges = list(zip(succs, stacks))
    checks: set[int] = set()

    def handled(k: int, stack: list[Slot], bound: set[str]) -> None:
        op = ops[k].op
        if isinstance(op, O.Raise) and op.argc == 0 and Slot.HANDLED in stack:
            analysis.handled[k] = max(i for i, s in enumerate(stack) if s is Slot.HANDLED)

    for b in blocks:
        if b.entry_stack is not None:
            _run_block(ops, b, code, checks, handled)
    return checks


def _uses_defs(
    ops: list[Decoded], block: Block, checks: set[int], code: types.CodeType
) -> tuple[set[str], set[str]]:
    uses: set[str] = set()
    defs: set[str] = set()

    def use(name: str) -> None:
        if name not in defs:
            uses.add(name)

    for k in range(block.start, block.stop):
        match ops[k].op:
            case O.LoadGlobal(name="locals"):  # locals() reads every local (conservatively:
                for name in code.co_varnames:  # whatever the global named locals is)
                    use(name)
            case O.LoadFast(name=name) | O.LoadDeref(name=name) | O.StoreDeref(name=name):
                use(name)
            case O.DeleteDeref(name=name) | O.MakeCell(name=name):
                use(name)
                defs.add(name)
            case O.LoadFastAndClear(name=name):
                use(name)
                defs.add(name)
            case O.DeleteFast(name=name):
                if k in checks:
                    use(name)
                defs.add(name)
            case O.StoreFast(name=name):
                defs.add(name)
            case O.CopyFreeVars():
                defs.update(code.co_freevars)
    return uses, defs


def _liveness(ops: list[Decoded], reachable: list[Block], graph: nx.DiGraph, checks: set[int],
              code: types.CodeType) -> None:
    facts = {b.index: _uses_defs(ops, b, checks, code) for b in reachable}
    by_index = {b.index: b for b in reachable}
    order = list(nx.dfs_postorder_nodes(graph, 0))  # successors first: few rounds
    changed = True
    while changed:
        changed = False
        for n in order:
            block = by_index[n]
            uses, defs = facts[n]
            out: set[str] = set()
            for succ, _ in block.edges:
                out |= by_index[succ].live_in
            caught: set[str] = set()  # the exception may come before the block's assignments
            for handler in block.handlers:
                caught |= by_index[handler].live_in
            live = frozenset(uses | (out - defs) | caught)
            if live != block.live_in:
                block.live_in, changed = live, True


def split(ops: list[Decoded], table: t.Sequence[Handler] = ()) -> Analysis:
    """The blocks of ``ops`` and which are reachable from the first; no facts yet.  ``table``
    is the exception table (``decode.exception_table``)."""
    blocks, at = _split(ops, table)
    cover: dict[int, Handler] = {}
    for k, d in enumerate(ops):
        handler = next((h for h in table if h.start <= d.offset < h.end), None)
        if handler is not None:
            cover[k] = handler
    graph = nx.DiGraph()
    graph.add_nodes_from(b.index for b in blocks)
    for b in blocks:
        succs = _successors(ops, b, at)
        if any(s >= len(blocks) for s in succs):
            raise AssertionError(
                f"control falls off the end of the code at offset {ops[b.stop - 1].offset}"
            )
        b.edges = [(s, ()) for s in succs]
        b.handlers = sorted({at[cover[k].target] for k in range(b.start, b.stop) if k in cover})
        graph.add_edges_from((b.index, s) for s in (*succs, *b.handlers))
    reach = nx.descendants(graph, 0) | {0}
    reachable = [b for b in blocks if b.index in reach]
    handler_of = {at[h.target]: h for h in table}
    return Analysis(ops, blocks, reachable, graph.subgraph(reach).copy(), at, cover, handler_of)


def analyse(analysis: Analysis, code: types.CodeType, args: t.Iterable[str]) -> None:
    """Fill in entry stacks, needed checks and live locals (see the module docstring).

    Only for code without ``Unsupported`` ops: their stack effects are unknown.
    """
    analysis.needs_check = _forward(analysis, code, frozenset(args))
    _liveness(analysis.ops, analysis.reachable, analysis.graph, analysis.needs_check, code)
