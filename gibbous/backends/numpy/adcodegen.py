"""A derived rule's forward and reverse functions, compiled once into one factory.

Both functions go into one ``Factory``, so they share its closure variables; the AD pass's
placeholders (each site's rule, the push and pop of each stack) become closure variables too,
and every rule instance calls the compiled factory again with its own values for them.  So a
recursive function compiles once and instantiates once per recursion level it reaches.
"""

from __future__ import annotations

import functools
import operator
import typing as t

import attrs

from gibbous.backends.numpy.codegen import Factory, FunctionEmitter
from gibbous.backends.numpy.operators import TOP, Form, Operands
from gibbous.backends.numpy.source import ClosurePool, Scope, SourceWriter, identifier
from gibbous.ir import types as T
from gibbous.ir.core import Call, Constant, Function, Value
from gibbous.reverse.transform import ADFunctions, Placeholder
from gibbous.rules import buffers
from gibbous.reverse.derived import Program
from gibbous.tangents.model import NO_TANGENT


@attrs.frozen(eq=False)
class Stages:
    """What a program was made from, for inspection."""

    typed: Function  # the typed, optimised primal
    forward: Function
    reverse: Function
    source: str  # the generated Python of both


class _Slot:
    """Stands for a closure variable each instance binds anew (the tape, its count)."""


def compile_program(
    fn: object,
    arg_types: t.Sequence[T.Type],
    ad: ADFunctions,
    typed: Function,
    lost: dict[int, list[str]] | None = None,
    frozen: list[tuple[dict[str, object], str, object]] | None = None,
) -> Program:
    factory = Factory(ad.forward.name.removesuffix(".forward"))
    factory.bind(NO_TANGENT, "NoTangent")
    for value, hint in ad.constants:
        factory.bind(value, identifier(hint))
    tape_slot, count_slot = _Slot(), _Slot()
    tape, count = factory.bind(tape_slot, "tape"), factory.bind(count_slot, "tape_n")
    emitter = functools.partial(_Emitter, tape=tape, count=count)
    factory.add(ad.forward, emitter)
    factory.add(ad.reverse, emitter)
    compiled = factory.compile()
    positions = {id(v): i for i, v in enumerate(compiled.values)}
    slots = tuple(
        (positions[id(p)], p.kind, p.what)
        for p in ad.placeholders
        if id(p) in positions and p.kind in ("rule", "buffers")
    ) + ((positions[id(tape_slot)], "tape", None), (positions[id(count_slot)], "count", count))

    def make_functions(replace: t.Mapping[int, object]) -> tuple[t.Callable[..., object], ...]:
        return compiled.instantiate(replace)

    return Program(
        fn,
        tuple(arg_types),
        slots,
        make_functions,
        ad.seed,
        Stages(typed, ad.forward, ad.reverse, compiled.source),
        {} if lost is None else lost,
        [] if frozen is None else frozen,
    )


@attrs.frozen
class _Push(Form):
    """A push onto the tape: store at the count, append past the end of the list."""

    tape: str
    count: str
    arity: int = 1
    statement: bool = True
    result_is_none: bool = True

    def order(self) -> tuple[int, ...]:
        return ()  # the value gets a name of its own: the except arm uses it again

    def write(self, value: str, out: SourceWriter, loc: str | None) -> None:
        T, n = self.tape, self.count
        out.line("try:", loc)
        with out.indented():
            out.line(f"{T}[{n}] = {value}")
        out.line("except IndexError:")
        with out.indented():
            out.line(f"{T}.append({value})")
        out.line(f"{n} += 1")


@attrs.frozen
class _Pop(Form):
    """A pop from the tape: the count moves back, the reference goes."""

    tape: str
    count: str
    statement: bool = True

    def statements(self, args: t.Sequence[Value], r: Operands, target: str) -> list[str]:
        return self.lines(target)

    def lines(self, targets: str) -> list[str]:
        """Into ``targets`` (a name, or names to unpack the popped record into)."""
        T, n = self.tape, self.count
        return [f"{n} -= 1", f"{targets} = {T}[{n}]", f"{T}[{n}] = None"]


# A site uses its buffers only while its rule instance keeps them (``SiteBuffers.keep``,
# switched between calls: ``gibbous.rules.buffers``): the forward program tests the flag and
# otherwise calls the function as the primal does, at the cost of that test.


@attrs.frozen
class _GiveBack(Form):
    """``buffers.give_back(site)`` written out: the site's depth moves back."""

    arity: int = 1
    statement: bool = True
    result_is_none: bool = True

    def statements(self, args: t.Sequence[Value], r: Operands, target: str) -> list[str]:
        site = r.receiver(args[0])
        return [f"if {site}.keep: {site}.depth -= 1"]


_GIVE_BACK = _GiveBack()
_CONDITIONAL = 1  # ``a if c else b``: below every operator


@attrs.frozen
class _Into(Form):
    """``into*(site, fn, *operands)``: into the site's buffer while it keeps them, else
    ``fn(*operands)`` (``into_a``'s last operand, the array again, is the helper's alone)."""

    helper: Value  # the callee: the helper, a constant
    arity: int
    drop_last: bool
    precedence: int = _CONDITIONAL

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        site, fn = r.receiver(args[0]), r.receiver(args[1])
        operands = [r.operand(a, TOP) for a in args[2:]]
        plain = operands[:-1] if self.drop_last else operands
        return (
            f"{r.receiver(self.helper)}({site}, {fn}, {', '.join(operands)}) if {site}.keep "
            f"else {fn}({', '.join(plain)})"
        )


@attrs.frozen
class _Zeros(Form):
    """``zeros(site, z, make)``: the site's fdata buffer while it keeps them, else
    ``make(z)``."""

    helper: Value
    arity: int = 3
    precedence: int = _CONDITIONAL

    def expression(self, args: t.Sequence[Value], r: Operands) -> str:
        site, z, make = r.receiver(args[0]), r.operand(args[1], TOP), r.receiver(args[2])
        helper = r.receiver(self.helper)
        return f"{helper}({site}, {z}, {make}) if {site}.keep else {make}({z})"


_INTO = (buffers.into1, buffers.into_a, buffers.into_aa)


class _Emitter(FunctionEmitter):
    """Writes the tape's pushes and pops in place, and ``y, pb = rule(...)`` for a rule call
    whose two results are taken apart right after it, instead of three lines."""

    def __init__(
        self, f: Function, pool: ClosurePool, scope: Scope, name: str, *, tape: str, count: str
    ) -> None:
        self.push, self.pop = _Push(tape, count), _Pop(tape, count)
        self.count = count
        super().__init__(f, pool, scope, name)
        self.unpacked: dict[Call, tuple[Value, ...]] = {}
        self.skipped: set[Call] = set()
        for b in self.layout.blocks:
            ops = b.ops
            for i, op in enumerate(ops):
                if not isinstance(op, Call):
                    continue
                parts = _parts(op, ops[i + 1 :])
                if parts and not any(p.result in self.folded for p in parts):
                    self.unpacked[op] = tuple(p.result for p in parts)
                    self.skipped.update(parts)

    def form(self, op: Call) -> Form | None:
        callee = op.callee
        if isinstance(callee, Constant) and isinstance(callee.value, Placeholder):
            kind = callee.value.kind
            if kind == "push":
                return self.push
            if kind == "pop":
                return self.pop
        if isinstance(callee, Constant):
            fn = callee.value
            if fn is buffers.give_back:
                return _GIVE_BACK
            if fn in _INTO:
                return _Into(callee, len(op.args), fn is buffers.into_a)
            if fn is buffers.zeros:
                return _Zeros(callee)
        return super().form(op)

    def prologue(self, out: SourceWriter) -> None:
        if any(self.form(op) in (self.push, self.pop) for op in self.f.calls()):
            out.line(f"nonlocal {self.count}")

    def emit_call(self, op: Call, out: SourceWriter) -> None:
        if self.form(op) is self.push:
            self.push.write(self.expr(op.args[0]), out, None if op.loc is None else str(op.loc))
            return
        if op in self.skipped:
            return
        parts = self.unpacked.get(op)
        if parts is None:
            super().emit_call(op, out)
            return
        targets = ", ".join(self.name(v) if v.has_uses() else "_" for v in parts)
        if self.form(op) is self.pop:
            for line in self.pop.lines(targets):
                out.line(line)
        else:
            out.line(f"{targets} = {self.call_expression(op)}", op.loc)


def _parts(op: Call, after: t.Sequence[object]) -> list[Call] | None:
    """The calls right after ``op`` that take its result apart, ``r[0]``, ``r[1]``, ... in
    order, if they are all its uses (then ``a, b, ... = op``)."""
    uses = op.result.uses
    if len(uses) < 2 or len(after) < len(uses):
        return None
    ty, callee = op.result.type, op.callee
    rule = isinstance(callee, Constant) and getattr(callee.value, "kind", None) == "rule"
    if not (rule and len(uses) == 2) and not (
        isinstance(ty, T.Tuple) and len(ty.items) == len(uses)
    ):
        return None  # the parts must be the whole tuple
    parts = list(after[: len(uses)])
    for index, user in enumerate(parts):
        if not (
            isinstance(user, Call)
            and isinstance(user.callee, Constant)
            and user.callee.value is operator.getitem
            and len(user.operands) == 3
            and user.operands[1] is op.result
            and isinstance(user.operands[2], Constant)
            and type(user.operands[2].value) is int
            and user.operands[2].value == index
        ):
            return None
    return t.cast(list[Call], parts)
