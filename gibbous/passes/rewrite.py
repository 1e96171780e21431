"""Rewrite patterns: say which calls a rewrite is about, write the replacement with a builder,
and let a worklist driver run a set of them to a fixed point.

A ``Match`` picks calls by callee (by identity, or by a test of the callee for a family such
as every ufunc) and, optionally, by the types of the positional arguments (each a subtype of
the type given).  A pattern pairs a match with ``rewrite(call, rw)``, which either leaves the
call alone and returns ``False`` or builds new calls through ``rw`` (a ``Builder`` placed
before the call, with its location) and hands over the value that replaces the call's result.

``apply_patterns(f, patterns)`` visits every call of ``f``; a call that a pattern rewrote
brings its replacement's calls and the users of the replaced value back to the worklist, so
a rewrite that enables another is found (the matched call itself is not visited again: a
pattern replaces it, it does not edit it).  Patterns are tried in the order given; the driver
stops with an error after ``limit`` rewrites (a set of patterns that undo each other would
never end), and verifies ``f`` when it is done.  ``PatternPass`` makes a set of patterns a
pass for the pass manager.

    @pattern(Match(callees=(operator.sub,), args=(T.FLOAT, T.FLOAT)))
    def minus_zero(call: Call, rw: Rewriter) -> bool:   # x - 0.0 -> x
        if getattr(call.args[1], "value", None) != 0.0:
            return False
        rw.replace(call.args[0])
        return True
"""

from __future__ import annotations

import collections
import typing as t

import attrs

from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Call, Constant, Function, IRError, Operation, Value
from gibbous.ir.verify import verify

__all__ = [
    "FunctionPattern",
    "Match",
    "Pattern",
    "PatternPass",
    "RewriteError",
    "Rewriter",
    "apply_patterns",
    "pattern",
]


class RewriteError(IRError):
    """A set of patterns kept rewriting past the driver's limit."""


@attrs.frozen
class Match:
    """Which calls a pattern is about.  ``callees`` by identity (the fast path: the driver
    indexes patterns by them); ``where`` tests the callee value instead (``isinstance(fn,
    np.ufunc)``); ``args``, when given, the number of positional arguments and a type each
    must be a subtype of (constants count by their value's type)."""

    callees: tuple[object, ...] = ()
    where: t.Callable[[object], bool] | None = None
    args: tuple[T.Type, ...] | None = None

    def __call__(self, call: Call) -> bool:
        callee = call.callee
        if not isinstance(callee, Constant):
            return False
        fn = callee.value
        if self.callees and not any(fn is c for c in self.callees):
            return False
        if self.where is not None and not self.where(fn):
            return False
        if self.args is None:
            return True
        args = call.args
        return len(args) == len(self.args) and all(
            T.is_subtype(T.widen(a.type), ty) for a, ty in zip(args, self.args)
        )


class Pattern(t.Protocol):
    @property
    def match(self) -> Match: ...

    def rewrite(self, call: Call, rw: Rewriter) -> bool: ...


@attrs.frozen
class FunctionPattern:
    """A pattern made of a match and a function (``@pattern``)."""

    match: Match
    function: t.Callable[[Call, Rewriter], bool]

    @property
    def name(self) -> str:
        return str(getattr(self.function, "__name__", "pattern"))

    def rewrite(self, call: Call, rw: Rewriter) -> bool:
        return self.function(call, rw)


def pattern(match: Match) -> t.Callable[[t.Callable[[Call, Rewriter], bool]], FunctionPattern]:
    """Decorator: the function ``rewrite(call, rw) -> bool`` as a pattern for ``match``."""

    def make(function: t.Callable[[Call, Rewriter], bool]) -> FunctionPattern:
        return FunctionPattern(match, function)

    return make


class Rewriter(Builder):
    """The builder a pattern rewrites with: it inserts before the matched call, at its source
    location, and remembers what the rewrite touched for the driver."""

    def __init__(self, f: Function, call: Call) -> None:
        super().__init__(f)
        self.before(call)
        self.loc = call.loc
        self.matched = call
        self.added: list[Operation] = []
        self.touched: list[Operation] = []

    def insert(self, op: Operation) -> Operation:
        self.added.append(op)
        return super().insert(op)

    def replace(self, value: Value) -> None:
        """Every use of the matched call's result reads ``value`` instead, and the call is
        erased: its result is all it did (the pattern's promise)."""
        self.replace_uses(value)
        self.matched.erase()

    def replace_uses(self, value: Value) -> None:
        """Every use of the matched call's result reads ``value``; the call stays (dead-code
        elimination removes it if nothing else needs it)."""
        result = self.matched.result
        self.touched += result.users
        result.replace_all_uses_with(value)


def apply_patterns(
    f: Function, patterns: t.Sequence[Pattern], *, limit: int = 100_000, check: bool = True
) -> bool:
    """Run ``patterns`` on ``f`` until none applies; whether anything changed."""
    by_callee: dict[int, list[Pattern]] = collections.defaultdict(list)
    anywhere: list[Pattern] = []
    for p in patterns:
        if p.match.callees:
            for c in p.match.callees:
                by_callee[id(c)].append(p)
        else:
            anywhere.append(p)
    order = {id(p): i for i, p in enumerate(patterns)}
    work: collections.deque[Call] = collections.deque(f.calls())
    queued = set(map(id, work))
    rewrites = 0
    while work:
        call = work.popleft()
        queued.discard(id(call))
        if call.parent is None:
            continue  # erased by an earlier rewrite
        callee = call.callee
        key = id(callee.value) if isinstance(callee, Constant) else None
        candidates = [*by_callee.get(key, ()), *anywhere] if key is not None else anywhere
        candidates.sort(key=lambda p: order[id(p)])
        for p in candidates:
            if not p.match(call):
                continue
            rw = Rewriter(f, call)
            if not p.rewrite(call, rw):
                if rw.added or rw.touched:
                    raise RewriteError(
                        f"pattern {getattr(p, 'name', p)!r} changed the IR but returned False"
                    )
                continue
            rewrites += 1
            if rewrites > limit:
                raise RewriteError(f"patterns still rewriting after {limit} rewrites")
            for op in [*rw.added, *rw.touched]:  # (not the call: it is gone, or dead)
                if isinstance(op, Call) and id(op) not in queued:
                    work.append(op)
                    queued.add(id(op))
            break
    if rewrites and check:
        verify(f)
    return rewrites > 0


class PatternPass:
    """A pass that runs a set of patterns: subclass it with the class attributes ``name``,
    ``description`` and ``patterns``, and ``register_pass`` it like any pass."""

    name: t.ClassVar[str]
    description: t.ClassVar[str]
    patterns: t.ClassVar[tuple[Pattern, ...]]

    def run(self, f: Function) -> bool:
        return apply_patterns(f, self.patterns)
