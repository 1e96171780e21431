"""Rules that call back into AD: calls whose callee runs another callable the program hands it
(``f(*args, **kwargs)``, ``map(fn, *iterables)``).  Such a rule chooses the rule of each inner
call from the run-time types, through the ``Resolver`` of the session that builds the derived
rule (``gibbous.api.Session``), and keeps what it chose in a ``DynamicRule`` of its own, so a
warm call looks nothing up again.

``rule_factory(fn)`` says which callables have such a rule; a session makes one per call site
and rule instance with ``factory(resolver, ctx, loc)``.

``map(fn, *iterables)`` is lazy, as Python's: the call makes a real ``map`` object over a
wrapper of ``fn``, and each item is computed when the consumer takes it (a ``for`` loop,
``list``, ``tuple``, unpacking, ``sum``...), by the rule of ``fn`` for the items' types: a
registered primitive, or the derived rule of a Python function.  The iterator's fdata is a
``MapIterTangent``, which hands the consumer the result's fdata and, when the consumer sends
the item's rdata back, runs that call's pullback and sends what it returns on to the items of
the iterables (as ``zip`` does) and to ``fn``'s tangent.

Pullbacks of one rule must run in the reverse order of its forward calls, but consumers send
rdata back in their own order (``list`` in item order) and some send nothing for items whose
rdata is ``NoTangent()`` (the arrays ``tuple(map(...))`` gives).  So an item's pullback runs as
soon as it and every item taken after it have their rdata, and the pullback of the ``map`` call
itself runs those still pending, with a zero cotangent (an array's cotangent is in its fdata
anyway).  A consumer that mutates the iterables between the ``map`` call and taking the items
and sends nothing back for some items may so see them pulled back after the mutation's
pullback: pass a copy.
"""

from __future__ import annotations

import builtins
import typing as t

import attrs

from gibbous.ir import runtime
from gibbous.ir.core import Location
from gibbous.ir.names import CallableTable
from gibbous.tangents.model import accum
from gibbous.reverse.dynamic_calls import CallExRule, DynamicRule, Resolver
from gibbous.library.python.iteration import IterTangent, is_iterator, iter_tangent
from gibbous.rules.registry import Context, Pullback, RRule
from gibbous.tangents.model import NO_TANGENT, CoDual

_CoDual = CoDual[t.Any, t.Any]
RuleFactory = t.Callable[[Resolver, Context, Location | None], RRule]


@attrs.define(eq=False)
class _Item:
    """One call of ``fn`` by a ``map`` object: its result, pullback and where its operands
    came from; ``dy`` once the consumer has sent the result's rdata back."""

    y: _CoDual
    pullback: Pullback
    tokens: tuple[t.Any, ...]
    values: tuple[t.Any, ...]
    given: bool = False
    dy: t.Any = NO_TANGENT


@attrs.define(eq=False)
class MapIterTangent(IterTangent):
    """The fdata of a ``map`` object made in the differentiated code (module docstring)."""

    parts: list[IterTangent]
    pending: list[_Item] = attrs.field(factory=list)  # taken, pullback not yet run
    fn_rdata: t.Any = NO_TANGENT  # the rdata of fn, summed over the items pulled back

    def take(self, item: t.Any) -> tuple[t.Any, t.Any]:
        last = self.pending[-1] if self.pending else None
        if last is None or last.given or last.y.primal is not item:
            raise TypeError("an item of a map object was taken that its rule did not compute")
        return last.y.fdata, last

    def give(self, token: t.Any, item: t.Any, dy: t.Any) -> None:
        token.given, token.dy = True, dy
        while self.pending and self.pending[-1].given:
            self._pull_back(self.pending.pop())

    def flush(self) -> None:
        """Run the pullbacks of the items whose rdata never came back (with zero rdata)."""
        while self.pending:
            self._pull_back(self.pending.pop())

    def _pull_back(self, done: _Item) -> None:
        rdata = done.pullback(done.dy)
        self.fn_rdata = accum(self.fn_rdata, rdata[0])
        for part, token, value, r in zip(self.parts, done.tokens, done.values, rdata[1:]):
            part.give(token, value, r)

    def rdata(self) -> t.Any:
        return NO_TANGENT  # an iterator has none: its items' went back to the iterables


@attrs.define(eq=False)
class MapRule:
    """``map(fn, *iterables)`` (module docstring): the items' rules are chosen by the
    ``DynamicRule`` this rule keeps, one rule per signature of the items."""

    resolver: Resolver
    ctx: Context
    loc: Location | None
    _site: DynamicRule = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._site = DynamicRule(self.resolver, self.ctx, (), self.loc)

    def __call__(self, f: _CoDual, fn: _CoDual, *iterables: _CoDual) -> tuple[_CoDual, Pullback]:
        if not iterables:
            raise TypeError("map() must have at least two arguments.")
        parts = [iter_tangent(x) for x in iterables]
        fd = MapIterTangent(parts)
        site = self._site

        def call(*values: t.Any) -> t.Any:
            taken = [p.take(v) for p, v in zip(parts, values)]
            operands = (CoDual(v, fdata) for v, (fdata, _) in zip(values, taken))
            y, pullback = site(fn, *operands)
            fd.pending.append(_Item(y, pullback, tuple(tk for _, tk in taken), values))
            return y.primal

        it = f.primal(call, *(x.primal for x in iterables))

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            fd.flush()
            return (NO_TANGENT, fd.fn_rdata, *map(_rdata, iterables, parts))

        return CoDual(it, fd), pullback

    def reset(self) -> None:
        self._site.reset()


def _rdata(x: _CoDual, part: IterTangent) -> t.Any:
    """The rdata of an iterable operand: a tuple's, from its items; none for an iterator."""
    return NO_TANGENT if is_iterator(x.primal) else part.rdata()


_FACTORIES: CallableTable[object, RuleFactory] = CallableTable(
    [(runtime.call_ex, CallExRule), (builtins.map, MapRule)]
)


def rule_factory(fn: object) -> RuleFactory | None:
    """How a session makes the rule of a call of ``fn`` that calls back into AD, if it has
    one (``factory(resolver, ctx, loc)``)."""
    return _FACTORIES.get(fn)
