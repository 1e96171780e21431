"""One call of a rule, from a fresh copy of the arguments to the rdata its pullback returns.

A ``Point`` is a set of arguments, kept pristine, with what ``f`` makes of them (its result and
the arguments after the call).  A ``Round`` runs a rule once at a point, on copies:

1. copies the arguments (keeping all their sharing) and gives them *random* fdata, sharing
   memory where the arguments do, so that a pullback that overwrites fdata instead of adding
   into it loses something visible;
2. runs the forward call;
3. draws random cotangents for everything the call may have changed: the result (its rdata goes
   to the pullback, its fdata part into the result's fdata) and each argument after the call
   (into its fdata): a mutated argument is an output too;
4. runs the pullback.

The gradient the rule claims for an argument is then (its fdata after the pullback) - (its fdata
before the forward call) + (the rdata returned for it): what the pullback added, including what
it passed on from the argument's own cotangent.
"""

from __future__ import annotations

import typing as t

import attrs
import numpy as np

from gibbous.ir.printer import format_type
from gibbous.ir.types import typeof
from gibbous.rules.registry import callable_name
from gibbous.tangents.model import (
    CoDual,
    TangentMemo,
    fdata_of,
    randn_tangent,
    rdata_of,
    tangent_from,
    zero_tangent,
)
from gibbous.testing.memory import add_into, copy_values, subtract

Roots = list[tuple[str, object]]


@attrs.frozen
class Call:
    """``fn(*args, **kwargs)`` with its operands in IR order: the callee, each positional
    argument, each keyword argument's value (``kwnames`` name the last ones)."""

    fn: t.Any
    nargs: int
    kwnames: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        args = tuple(f"args[{i}]" for i in range(self.nargs))
        return ("f", *args, *(f"kwargs[{k!r}]" for k in self.kwnames))

    def split(self, operands: t.Sequence[t.Any]) -> tuple[t.Any, list[t.Any], dict[str, t.Any]]:
        fn, rest = operands[0], list(operands[1:])
        return fn, rest[: self.nargs], dict(zip(self.kwnames, rest[self.nargs :]))

    def run(self, operands: t.Sequence[t.Any]) -> t.Any:
        fn, args, kwargs = self.split(operands)
        return fn(*args, **kwargs)

    def run_rule(self, rule: t.Callable[..., t.Any], coduals: t.Sequence[t.Any]) -> t.Any:
        fn, args, kwargs = self.split(coduals)
        return rule(fn, *args, **kwargs)

    def roots(self, operands: t.Sequence[object]) -> Roots:
        return list(zip(self.names, operands))

    def describe(self, operands: t.Sequence[object]) -> str:
        """``numpy.matmul(f64[3,4], f64[4,5], out=f64[3,5])``."""
        fn, args, kwargs = self.split(operands)
        parts = [_describe_type(v) for v in args]
        parts += [f"{k}={_describe_type(v)}" for k, v in kwargs.items()]
        return f"{callable_name(self.fn)}({', '.join(parts)})"


def _describe_type(x: object) -> str:
    text = format_type(typeof(x))
    if isinstance(x, np.ndarray):
        return f"{text.split('[')[0]}[{','.join(map(str, x.shape))}]"
    return text


@attrs.frozen(eq=False)
class Point:
    """Arguments to test a rule at (never passed to anything: rounds run on copies), with the
    result of ``f`` and the arguments after ``f`` ran on a copy of them."""

    operands: tuple[t.Any, ...]
    after: tuple[t.Any, ...]  # (result, *operands after the call)

    @classmethod
    def make(cls, call: Call, operands: t.Sequence[t.Any]) -> Point:
        pristine = copy_values(operands)
        work = copy_values(pristine)
        y = call.run(work)
        return cls(pristine, (y, *work))


class Round:
    """One forward + reverse call of ``rule`` at ``point``, step by step (see the module)."""

    def __init__(
        self, call: Call, rule: t.Callable[..., t.Any], point: Point, rng: np.random.Generator
    ) -> None:
        self.call = call
        self.rule = rule
        self.point = point
        self.rng = rng
        self.work = copy_values(point.operands)
        memo = TangentMemo()
        self.fdata = tuple(fdata_of(randn_tangent(x, rng, memo=memo)) for x in self.work)
        self.start = copy_values(self.fdata)  # the fdata before the forward call
        self.y: CoDual[t.Any, t.Any] | None = None
        self.y_value: t.Any = None
        self.pullback: t.Callable[[t.Any], t.Any] | None = None
        self.cotangents: list[t.Any] = []  # of the result, then of each operand (fdata parts)
        self.dy: t.Any = None
        self.rdata: t.Any = None

    @property
    def coduals(self) -> list[CoDual[t.Any, t.Any]]:
        return [CoDual(x, d) for x, d in zip(self.work, self.fdata)]

    @property
    def roots(self) -> Roots:
        return self.call.roots(self.work)

    @property
    def output_roots(self) -> Roots:
        """The result and the arguments: everything the call may have changed."""
        assert self.y is not None
        return [("result", self.y.primal), *self.roots]

    def forward(self) -> object:
        """Run the forward call; returns what the rule returned (checked by the caller)."""
        result = self.call.run_rule(self.rule, self.coduals)
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], CoDual):
            self.y, self.pullback = result
            self.y_value = copy_values([self.y.primal])[0]  # before the pullback restores it
        return result

    def seed(self, output_tangent: t.Any = None, *, zero: bool = False) -> None:
        """Draw the cotangents of the outputs; add their fdata parts into the fdata."""
        assert self.y is not None
        memo = TangentMemo()

        def draw(x: object) -> t.Any:
            return zero_tangent(x, memo=memo) if zero else randn_tangent(x, self.rng, memo=memo)

        c_y = draw(self.y.primal) if output_tangent is None else output_tangent
        self.cotangents = [c_y, *(fdata_of(draw(x)) for x in self.work)]
        live = [self.y.fdata, *self.fdata]
        snapshot = copy_values(live)
        seen: set[int] = set()
        for now, before, c in zip(live, snapshot, [fdata_of(c_y), *self.cotangents[1:]]):
            add_into(now, before, c, seen)
        self.dy = rdata_of(c_y)

    def reverse(self) -> t.Any:
        assert self.pullback is not None
        self.rdata = self.pullback(self.dy)
        return self.rdata

    def gradients(self) -> list[t.Any]:
        """The gradient the rule claims for each operand (see the module)."""
        memo: dict[int, t.Any] = {}
        return [
            tangent_from(x, subtract(now, before, memo), r)
            for x, now, before, r in zip(self.work, self.fdata, self.start, self.rdata)
        ]

    def results(self) -> dict[str, t.Any]:
        """Everything a round produces, copied, for comparing two rounds."""
        assert self.y is not None
        names = self.call.names
        return {
            "the result": self.y_value,
            "the rdata returned": self.rdata,
            **{f"{n} after the pullback": x for n, x in zip(names, copy_values(self.work))},
            **{f"the fdata of {n}": d for n, d in zip(names, copy_values(self.fdata))},
        }
