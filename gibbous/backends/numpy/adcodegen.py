"""A derived rule's forward and reverse functions, compiled once into one factory.

Both functions go into one ``Factory``, so they share its closure variables; the AD pass's
placeholders (each site's rule, the push and pop of each stack) become closure variables too,
and every rule instance calls the compiled factory again with its own values for them.  So a
recursive function compiles once and instantiates once per recursion level it reaches.
"""

from __future__ import annotations

import typing as t

import attrs

import operator

from gibbous.backends.numpy.codegen import Factory, FunctionEmitter
from gibbous.backends.numpy.source import ClosurePool, Scope, SourceWriter, identifier
from gibbous.ir import types as T
from gibbous.ir.core import Call, Constant, Function, Value
from gibbous.passes.ad import ADFunctions
from gibbous.rules.derived import Program
from gibbous.rules.tangents import NO_TANGENT


@attrs.frozen(eq=False)
class Stages:
    """What a program was made from, for inspection."""

    typed: Function  # the typed, optimised primal
    forward: Function
    reverse: Function
    source: str  # the generated Python of both


def compile_program(
    fn: object, arg_types: t.Sequence[T.Type], ad: ADFunctions, typed: Function
) -> Program:
    factory = Factory(ad.forward.name.removesuffix(".forward"))
    factory.bind(NO_TANGENT, "NoTangent")
    for value, hint in ad.constants:
        factory.bind(value, identifier(hint))
    factory.add(ad.forward, _Emitter)
    factory.add(ad.reverse, _Emitter)
    compiled = factory.compile()
    positions = {id(v): i for i, v in enumerate(compiled.values)}
    slots = tuple(
        (positions[id(p)], p.kind, p.what) for p in ad.placeholders if id(p) in positions
    )

    def make_functions(replace: t.Mapping[int, object]) -> tuple[t.Callable[..., object], ...]:
        return compiled.instantiate(replace)

    return Program(
        fn,
        tuple(arg_types),
        ad.n_stacks,
        slots,
        make_functions,
        ad.seed,
        Stages(typed, ad.forward, ad.reverse, compiled.source),
    )


class _Emitter(FunctionEmitter):
    """Writes ``y, pb = rule(...)`` for a rule call whose two results are taken apart right
    after it, instead of three lines."""

    def __init__(self, f: Function, pool: ClosurePool, scope: Scope, name: str) -> None:
        super().__init__(f, pool, scope, name)
        self.unpacked: dict[Call, tuple[Value, Value]] = {}
        self.skipped: set[Call] = set()
        for b in self.layout.blocks:
            ops = b.ops
            for i, op in enumerate(ops[:-2]):
                if isinstance(op, Call) and _splits(op, ops[i + 1], ops[i + 2]):
                    first, second = t.cast(Call, ops[i + 1]), t.cast(Call, ops[i + 2])
                    if first.result in self.folded or second.result in self.folded:
                        continue
                    self.unpacked[op] = (first.result, second.result)
                    self.skipped.update((first, second))

    def emit_call(self, op: Call, out: SourceWriter) -> None:
        if op in self.skipped:
            return
        pair = self.unpacked.get(op)
        if pair is None:
            super().emit_call(op, out)
            return
        targets = ", ".join(self.name(v) if v.has_uses() else "_" for v in pair)
        out.line(f"{targets} = {self.call_expression(op)}", op.loc)


def _splits(op: Call, first: object, second: object) -> bool:
    """``op``'s result is used exactly by ``first = r[0]`` and ``second = r[1]``."""
    uses = op.result.uses
    if len(uses) != 2:
        return False
    for index, user in enumerate((first, second)):
        if not (
            isinstance(user, Call)
            and isinstance(user.callee, Constant)
            and user.callee.value is operator.getitem
            and len(user.operands) == 3
            and user.operands[1] is op.result
            and isinstance(user.operands[2], Constant)
            and user.operands[2].value == index
            and type(user.operands[2].value) is int
        ):
            return False
    return True
