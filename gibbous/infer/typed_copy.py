"""The typed copy: what inference found, written into a copy of the function.

Every value gets the type inference found for it; a branch on a constant condition becomes a
jump, blocks never reached are left out, and a method call is a call of the method's function
with the receiver first.
"""

from __future__ import annotations

import typing as t

from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import (
    Block,
    Branch,
    Guard,
    Call,
    Constant,
    Function,
    Jump,
    Raise,
    Result,
    Return,
    Value,
)
from gibbous.infer.handlers import super_call
from gibbous.infer.typerules.table import BoundMethod

if t.TYPE_CHECKING:
    from gibbous.infer.interpreter import Inference


def typed_copy(inf: Inference) -> Function:
    """The copy of ``inf``'s function with the types found, leaving out blocks never reached."""
    f = inf.f
    arg_types = [(a.name, inf.materialize(t_)) for a, t_ in zip(f.args, inf.inputs[f.entry])]
    g = Function(f.name, arg_types, loc=f.loc, entry_name=f.entry.name)
    blocks: dict[Block, Block] = {f.entry: g.entry}
    mapped: dict[Value, Value] = dict(zip(f.args, g.args))
    narrowed: dict[Block, list[tuple[Value, T.Type]]] = {}
    incoming = _incoming_types(inf)
    for block in f.blocks[1:]:
        if block not in inf.visited:
            continue
        copy = blocks[block] = g.add_block(block.name)
        for arg, flowing in zip(block.args, incoming[block]):
            want = inf.materialize(inf.values[arg])
            if T.is_subtype(flowing, want):
                mapped[arg] = copy.add_arg(want, arg.name)
            else:
                # Inference narrowed the argument (is_stop(v) was false on this edge): the
                # argument takes what flows in and a cast at the top of the block narrows it.
                mapped[arg] = copy.add_arg(flowing, arg.name)
                narrowed.setdefault(block, []).append((arg, want))

    def operand(v: Value) -> Value:
        return Constant(v.value) if isinstance(v, Constant) else mapped[v]

    build = Builder(g)
    # Dominators first (reverse postorder), so every operand is copied before its uses.
    for block in inf.order:
        if block not in inf.visited:
            continue
        build.at_end(blocks[block])
        for param, want in narrowed.get(block, []):
            loc = block.ops[0].loc if block.ops else None
            cast = build.call(t.cast, object, mapped[param], type=want, name=param.name, loc=loc)
            mapped[param] = cast
        for op in block.ops:
            if isinstance(op, Call):
                callee, args = _method_call(inf, op)
                new = Call(
                    operand(callee),
                    [operand(a) for a in args],
                    {k: operand(v) for k, v in op.kwargs.items()},
                    type=inf.materialize(inf.values[op.result]),
                    name=op.result.name,
                    loc=op.loc,
                )
                build.insert(new)
                mapped[op.result] = new.result
            elif isinstance(op, Jump):
                build.insert(Jump(blocks[op.target], [operand(a) for a in op.args], loc=op.loc))
            elif isinstance(op, Branch):
                build.insert(_copy_branch(inf, op, blocks, operand))
            elif isinstance(op, Guard):
                build.insert(
                    Guard(
                        operand(op.guarded),
                        blocks[op.normal],
                        [operand(a) for a in op.normal_args],
                        blocks[op.handler],
                        [operand(a) for a in op.handler_args],
                        loc=op.loc,
                    )
                )
            elif isinstance(op, Return):
                build.insert(Return(operand(op.value), loc=op.loc))
            elif isinstance(op, Raise):
                build.insert(Raise(operand(op.exc), loc=op.loc))
    return g

def _incoming_types(inf: Inference) -> dict[Block, list[T.Type]]:
    """For each block, the IR types of the values its taken in-edges pass, joined."""
    found: dict[Block, list[T.Type]] = {b: [T.BOTTOM] * len(b.args) for b in inf.visited}
    for block in inf.visited:
        term = block.terminator
        edges: list[tuple[Block, tuple[Value, ...]]] = []
        if isinstance(term, Jump):
            edges = [(term.target, term.args)]
        elif isinstance(term, Guard):
            edges = [(term.normal, term.normal_args), (term.handler, term.handler_args)]
        elif isinstance(term, Branch):
            taken = inf.condition(term)
            edges = [
                (target, term.args_for(i))
                for i, target in enumerate(term.successors)
                if taken is None or taken == (i == 0)
            ]
        for target, args in edges:
            if target in found and len(args) == len(target.args):
                joined = found[target]
                for i, v in enumerate(args):
                    joined[i] = T.join(joined[i], inf.materialize(inf.value(v)))
    return found

def _method_call(inf: Inference, op: Call) -> tuple[Value, tuple[Value, ...]]:
    """``%m = getattr(%x, "sum"); call %m(...)`` calls ``numpy.ndarray.sum(%x, ...)``."""
    method = inf.values.get(op.callee) if not isinstance(op.callee, Constant) else None
    getter = op.callee.op if isinstance(op.callee, Result) else None
    if (
        isinstance(method, BoundMethod)
        and getter is not None
        and isinstance(getter.callee, Constant)
        and getter.callee.value is getattr
        and getter.args
    ):
        receiver = getter.args[0]
        made = super_call(receiver)
        if made is not None:  # (``super(C, obj).m(...)`` is ``m(obj, ...)``)
            receiver = made.args[1]
        return Constant(method.function), (receiver, *op.args)
    return op.callee, op.args

def _copy_branch(
    inf: Inference, op: Branch, blocks: dict[Block, Block], operand: t.Callable[[Value], Value]
) -> Jump | Branch:
    taken = inf.condition(op)
    if taken is not None:
        index = 0 if taken else 1
        target = op.successors[index]
        return Jump(blocks[target], [operand(a) for a in op.args_for(index)], loc=op.loc)
    return Branch(
        operand(op.cond),
        blocks[op.if_true],
        [operand(a) for a in op.true_args],
        blocks[op.if_false],
        [operand(a) for a in op.false_args],
        loc=op.loc,
    )
