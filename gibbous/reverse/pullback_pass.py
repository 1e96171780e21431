"""The reverse program of a derived rule: adjoints as block arguments, blocks backwards.

See ``gibbous.reverse.transform`` for the whole transformation.  ``Reverse`` makes one block per
primal block, each taking every adjoint as an argument (the IR stays SSA; the backend turns
the arguments into locals assigned at jumps).  Reversing a block pops and calls the pullbacks
of its active calls, last first, resets each result's adjoint and adds the rdata returned into
the operands' adjoints; then the block arguments' adjoints move to the values passed on the
edge taken, and control goes to the predecessor's reverse block.  The clean-ups after it drop
what dead-code elimination cannot: arguments that are one constant on every edge, and sums
with a constant zero.
"""

from __future__ import annotations

import operator
import typing as t

import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import (
    Block,
    Branch,
    Call,
    Constant,
    Function,
    Guard,
    JUMPING,
    Jump,
    Return,
    Terminator,
    Value,
    edge_args,
    replace_terminator,
    with_edge_args,
)
from gibbous.reverse.activity import carries_rdata
from gibbous.reverse.primal_pass import COTANGENT, Forward, identity_operand
from gibbous.passes.rewrite import Match, Rewriter, apply_patterns, pattern
from gibbous.rules import buffers, outer_sums
from gibbous.tangents import pool
from gibbous.tangents.model import accum
from gibbous.rules.inline import InlineRule
from gibbous.tangents.types import rdata_type
from gibbous.tangents.model import NO_TANGENT, zero_rdata

_SELF = object()  # the slot of the differentiated callable itself
_C = t.TypeVar("_C")


def _slot_type(ty: T.Type) -> T.Type:
    r = rdata_type(ty)
    return r if _precise(r) else T.ANY


def _precise(ty: T.Type) -> bool:
    if isinstance(ty, T.Any):
        return False
    if isinstance(ty, T.Tuple):
        return all(map(_precise, ty.items))
    return True


def _zero(ty: T.Type) -> object:
    """The zero rdata of a slot of type ``ty`` (``NoTangent()`` where the type is vague)."""
    if isinstance(ty, T.Float):
        return 0.0 if ty.dtype == "float64" else np.dtype(ty.dtype).type(0)
    if isinstance(ty, T.Complex):
        return 0j if ty.dtype == "complex128" else np.dtype(ty.dtype).type(0)
    if isinstance(ty, T.Tuple):
        return tuple(_zero(item) for item in ty.items)
    if isinstance(ty, T.Const):
        return zero_rdata(ty.value)
    return NO_TANGENT


class Reverse:
    """Builds the reverse function of the primal ``fwd`` was built from, into ``self.g``."""

    def __init__(self, fwd: Forward) -> None:
        self.fwd, self.f, self.act = fwd, fwd.f, fwd.act
        self.slots: dict[object, T.Type] = {}  # slot key -> adjoint type
        self.self_type = T.typeof(self.act.self_value, const=True)
        if carries_rdata(self.self_type):
            self.slots[_SELF] = _slot_type(self.self_type)
        for b in fwd.blocks:
            for v in (*b.args, *(op.result for op in b.calls)):
                if v in self.act.values and carries_rdata(v.type):
                    self.slots[v] = _slot_type(v.type)
        self.keys = list(self.slots)
        seeded = {self.key(t.cast(Return, b.terminator).value) for b in fwd.returns} - {None}
        self.seed = "fill" if seeded else "none"
        # With one type of seed the argument has that type; else each return casts it.
        seed_types = {self.slots[k] for k in seeded}
        self.dy_type = seed_types.pop() if len(seed_types) == 1 else T.ANY
        self.g = Function(f"{self.f.name}.reverse", [("dy", self.dy_type)], loc=self.f.loc)
        self.pops = {p.what: p for p in fwd.placeholders if p.kind == "pop"}

    def key(self, v: Value) -> object | None:
        if isinstance(v, Constant):
            return _SELF if self.act.is_self(v) and _SELF in self.slots else None
        return v if v in self.slots else None

    def name(self, key: object) -> str | None:
        if key is _SELF:
            return "dself"
        name = t.cast(Value, key).name
        return None if name is None else f"d{name}"

    def zero(self, key: object) -> Constant:
        return Constant(_zero(self.slots[key]))

    def build(self) -> None:
        self.rblocks: dict[Block, Block] = {}
        self.raised: dict[Block, Block] = {}
        for b in self.fwd.blocks:
            rb = self.g.add_block(f"r.{b.name}" if b.name else None)
            for k in self.keys:
                rb.add_arg(self.slots[k], self.name(k))
            self.rblocks[b] = rb
        start = Builder(self.g, self.g.entry)
        start.loc = self.f.loc
        cur: dict[object, Value] = {k: self.zero(k) for k in self.keys}

        def arm(b: Builder, block: Block) -> None:
            state = dict(cur)
            term = t.cast(Return, block.terminator)
            k = self.key(term.value)
            if k is not None:
                dy: Value = self.g.args[0]
                if self.slots[k] != self.dy_type:
                    dy = b.call(t.cast, object, dy, type=self.slots[k], name="dy")
                state[k] = dy
            b.jump(self.rblocks[block], *(state[key] for key in self.keys))

        if self.fwd.returns:
            self.dispatch(start, self.fwd.ret_stack, self.fwd.returns, arm)
        else:  # it always raises: no forward call ever leaves a pullback to run
            start.raise_(start.call(RuntimeError, "this function never returns"))
        for b in self.fwd.blocks:
            self.block(b)

    def dispatch(
        self,
        b: Builder,
        stack: int | None,
        cases: t.Sequence[_C],
        run: t.Callable[[Builder, _C], None],
    ) -> None:
        """``run(case k)`` for the number ``k`` popped from ``stack`` (no stack: one case)."""
        if stack is None:
            run(b, cases[0])
            return
        k = b.call(self.pops[stack], type=T.INT, name="edge")
        for i, case in enumerate(cases[:-1]):
            here, rest = self.g.add_block(None), self.g.add_block(None)
            b.branch(b.call(operator.eq, k, i, type=T.BOOL), here, [], rest, [])
            run(Builder(self.g, here), case)
            loc, b = b.loc, Builder(self.g, rest)
            b.loc = loc
        run(b, cases[-1])

    def raised_block(self, block: Block) -> Block:
        """The reverse of ``block`` when its guarded call raised: none of its calls completed
        (the guarded one is its last), so only its arguments' adjoints move on."""
        rb = self.raised.get(block)
        if rb is None:
            rb = self.raised[block] = self.g.add_block(None)
            for k in self.keys:
                rb.add_arg(self.slots[k], self.name(k))
            b = Builder(self.g, rb)
            self.leave(b, dict(zip(self.keys, rb.args)), block)
        return rb

    def block(self, block: Block) -> None:
        rb = self.rblocks[block]
        b = Builder(self.g, rb)
        cur: dict[object, Value] = dict(zip(self.keys, rb.args))
        saved = self.unpack_record(b, block)
        self.by_value: dict[Value, Value] = {}  # the cotangents passed as values in the block
        for op in reversed(block.calls):
            if op not in self.act.calls or op in self.fwd.primal_only:
                continue
            b.loc = op.loc
            rk = self.key(op.result)
            rule = self.fwd.inline.get(op)
            if rule is not None:
                self.inline(b, cur, op, rule, saved)
                into = self.fwd.buffered.get(op)
                if into is not None:  # its derivative has read the result: the depth is free
                    b.call(buffers.give_back, into[0], type=T.NONE)
                continue
            identity = identity_operand(op)
            if identity is not None:
                ok = self.key(op.operands[identity])
                if rk is not None:
                    moved, cur[rk] = cur[rk], self.zero(rk)
                    if ok is not None:
                        cur[ok] = self.add(b, cur, ok, moved)
                continue
            pb = b.call(self.pops[self.fwd.site_stack[op]], name="pb")
            dy = cur[rk] if rk is not None else Constant(NO_TANGENT)
            r = b.call(pb, dy)
            if rk is not None:
                cur[rk] = self.zero(rk)
            for i, v in enumerate(op.operands):
                k = self.key(v)
                if k is not None:
                    cur[k] = self.add(b, cur, k, b.call(operator.getitem, r, i))
        self.leave(b, cur, block)

    def leave(self, b: Builder, cur: dict[object, Value], block: Block) -> None:
        """Return the gradients at the entry; elsewhere move the arguments' adjoints to the
        values the edge taken into ``block`` passed, and reverse its predecessor."""
        b.loc = None
        if block is self.f.entry:
            for sums in self.fwd.sums.values():  # nothing reads those fdata any more
                b.call(outer_sums.flush, Constant(sums), type=T.NONE)
            keys = [_SELF, *block.args]
            result = [cur[k] if k in self.slots else Constant(NO_TANGENT) for k in keys]
            b.ret(b.call(runtime.make_tuple, *result, type=T.Tuple((T.ANY,) * len(result))))
            return
        self.dispatch(
            b,
            self.fwd.pred_stack.get(block),
            self.fwd.edges[block],
            lambda b, edge: self.route(b, cur, block, edge),
        )

    def unpack_record(self, b: Builder, block: Block) -> dict[Value, Value]:
        """The values the block's inline sites saved, popped from the block's record stack."""
        stack = self.fwd.record_stack.get(block)
        if stack is None:
            return {}
        values = self.fwd.records[block]
        if len(values) == 1:  # the value itself, not a tuple of one
            return {values[0]: b.call(self.pops[stack], type=values[0].type, name="rec")}
        record = b.call(
            self.pops[stack], type=T.Tuple(tuple(v.type for v in values)), name="rec"
        )
        return {
            v: b.call(operator.getitem, record, i, type=v.type, name=v.name)
            for i, v in enumerate(values)
        }

    def inline(
        self,
        b: Builder,
        cur: dict[object, Value],
        op: Call,
        rule: InlineRule,
        saved: dict[Value, Value],
    ) -> None:
        """The derivative of an inline site, written out (``gibbous.rules.inline``)."""
        rk = self.key(op.result)
        if rule.array:  # the cotangent is in the result's fdata, which the form reads
            dy: Value = Constant(NO_TANGENT)
        elif rk is None:
            return
        else:
            dy = cur[rk]
            if isinstance(dy, Constant) and dy.value == 0:
                return  # nothing flows back: no arithmetic, and no write into fdata
            cur[rk] = self.zero(rk)
        values: list[Value] = []
        for v in self.fwd.site_saves[op]:
            if v is COTANGENT:
                given = self.by_value.pop(op.result, None)
                if given is None:
                    return  # its one use gave it no cotangent: nothing flows back
                values.append(given)
            else:
                values.append(v if isinstance(v, Constant) else saved[t.cast(Value, v)])
        by_value = self.fwd.by_value
        for arg, adjoint in zip(op.args, rule.adjoint(b, values, dy)):
            if arg in by_value:  # its one use: the whole cotangent, assigned
                if adjoint is not None:
                    self.by_value[arg] = adjoint
                continue
            k = self.key(arg)
            if adjoint is not None and k is not None:
                old = cur[k]
                if isinstance(old, Constant) and old.value == 0:
                    cur[k] = adjoint
                elif isinstance(self.slots[k], (T.Float, T.Complex)):
                    cur[k] = b.call(operator.add, old, adjoint, type=self.slots[k])
                else:
                    cur[k] = self.add(b, cur, k, adjoint)
        if rule.array and rule.fdata is None and op.result not in by_value:
            # The result's new fdata is consumed: recycled (``gibbous.tangents.pool``), unless
            # an operand's cotangent, passed on as a value, may be that very array, or it is
            # the site's own buffer (``buffers.zeros``).
            passed = [self.by_value[a] for a in op.args if a in self.by_value]
            into = self.fwd.buffered.get(op)
            for save, value in zip(rule.saves, values):
                if save[0] == "result_fdata" and into is not None:
                    b.call(buffers.release, into[0], value, *passed, type=T.NONE)
                elif save[0] == "result_fdata" and passed:
                    b.call(pool.release_unless_passed, value, *passed, type=T.NONE)
                elif save[0] == "result_fdata":
                    b.call(pool.release, value, type=T.NONE)

    def add(self, b: Builder, cur: dict[object, Value], key: object, rdata: Value) -> Value:
        return b.call(accum, cur[key], rdata, type=self.slots[key], name=self.name(key))

    def route(
        self, b: Builder, cur: dict[object, Value], block: Block, edge: tuple[Block, int]
    ) -> None:
        """Block ``block`` was entered along ``edge``: its arguments' adjoints flow to the
        values passed on that edge; then reverse the predecessor."""
        pred, index = edge
        term = pred.terminator
        assert isinstance(term, JUMPING)
        state = dict(cur)
        moved = []
        for p, v in zip(block.args, edge_args(term, index)):
            k = self.key(p)
            if k is not None:
                moved.append((state[k], v))
                state[k] = self.zero(k)
        for adjoint, v in moved:
            k = self.key(v)
            if k is not None:
                state[k] = self.add(b, state, k, adjoint)
        raised = isinstance(term, Guard) and index == 1
        target = self.raised_block(pred) if raised else self.rblocks[pred]
        b.jump(target, *(state[k] for k in self.keys))


def slot_type_is_precise(ty: T.Type) -> bool:
    """Whether the rdata of values of ``ty`` has a type known without running the code."""
    return _precise(rdata_type(ty))


def fold_constant_arguments(f: Function) -> None:
    """Replace block arguments that receive one constant on every edge by that constant: the
    adjoints that are zero whenever control crosses a block boundary.

    Sweeps over the blocks, folding every such argument of a block at once, until a sweep
    folds none (a folded argument passed on makes its successor's constant too).  (Folding
    one argument per pass over the whole function was quadratic: 150 s of a 180 s build for
    a derived ``scipy.stats`` function of 7000 folds.)"""
    incoming: dict[Block, list[tuple[Block, int]]] = {}
    for b in f.blocks:
        term = b.terminator
        if isinstance(term, JUMPING):
            for i, s in enumerate(term.successors):
                incoming.setdefault(s, []).append((b, i))
    while any([_fold_constant_arguments_of(b, edges) for b, edges in incoming.items()]):
        pass


def _fold_constant_arguments_of(b: Block, edges: list[tuple[Block, int]]) -> bool:
    """Fold ``b``'s arguments that get one constant along all ``edges`` (predecessor, index
    of ``b`` among its successors); whether there were any."""
    arguments = [edge_args(t.cast(Terminator, pred.terminator), i) for pred, i in edges]
    folded = []
    for index, arg in enumerate(b.args):
        first = arguments[0][index]
        if isinstance(first, Constant) and all(
            isinstance(a[index], Constant) and a[index].type == first.type for a in arguments
        ):
            arg.replace_all_uses_with(Constant(first.value))
            folded.append(index)
    for index in reversed(folded):
        b.erase_arg(index)
    if folded:
        for pred in dict.fromkeys(pred for pred, _ in edges):  # a branch reaching b twice: once
            _drop_arguments(t.cast(Terminator, pred.terminator), b, frozenset(folded))
    return bool(folded)


@pattern(Match(callees=(accum, operator.add)))
def _zero_plus(call: Call, rw: Rewriter) -> bool:
    """``accum(0.0, a)`` and ``0.0 + a`` are ``a`` where ``a`` is an adjoint of a scalar type
    (never ``NoTangent()``, unlike the rdata a pullback returns, which are typed ``any``)."""
    if len(call.args) != 2 or call.kwargs:
        return False
    zero, a = call.args
    if not (isinstance(zero, Constant) and type(zero.value) in (float, complex)):
        return False
    if zero.value != 0 or not isinstance(a.type, (T.Float, T.Complex)) or a.type != call.type:
        return False
    rw.replace_uses(a)  # the call is pure: dead-code elimination drops it
    return True


def fold_zero_sums(f: Function) -> None:
    apply_patterns(f, (_zero_plus,), check=False)  # (the AD pass verifies when asked to)


def _drop_arguments(term: Terminator, target: Block, indices: frozenset[int]) -> None:
    """Rebuild ``term`` without the arguments ``indices`` on its edges to ``target``."""
    successors = term.successors

    def kept(i: int, args: tuple[Value, ...]) -> list[Value]:
        return [a for j, a in enumerate(args) if j not in indices or successors[i] is not target]

    replace_terminator(term, with_edge_args(term, kept))
