"""The debug wrapper of call sites' rules: each result's fdata and pullback's rdata checked
against the tangent model (``build_rrule(..., debug=True)``)."""

from __future__ import annotations

import typing as t

import attrs

from gibbous.ir.core import Location
from gibbous.ir.exceptions import GibbousError
from gibbous.rules.call_adapters import delegate_reset
from gibbous.rules.registry import Pullback
from gibbous.tangents.kinds import fdata_problem, rdata_problem
from gibbous.tangents.model import NO_TANGENT, CoDual, is_differentiable

_CoDual = CoDual[t.Any, t.Any]


class RuleCheckError(GibbousError, TypeError):
    """A rule returned fdata or rdata of the wrong kind (``build_rrule(..., debug=True)``)."""


@attrs.frozen(eq=False)
class CheckedRule:
    """A call site's rule, checked (``build_rrule(..., debug=True)`` installs one around each
    call site's rule; without ``debug`` there is none): the result's fdata and the pullback's
    rdata must have the kinds the tangent model gives the primal values
    (``gibbous.tangents.kinds``).  ``RuleCheckError`` names the rule and the call's line."""

    rule: t.Any
    name: str  # the rule, as messages name it
    call: str  # the call, as messages name it
    loc: Location | None

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        y, pullback = self.rule(f, *args, **kwargs)
        if not isinstance(y, CoDual):
            self._fail(f"its result is {type(y).__name__}, not a CoDual")
        # Values the model gives no tangent (iterators, cells) may carry a rule's own fdata.
        problem = None
        if is_differentiable(y.primal):
            problem = fdata_problem(y.primal, y.fdata, "the result's fdata")
        if problem is not None:
            self._fail(problem)
        operands = (f, *args, *kwargs.values())
        primals = [cd.primal for cd in operands]
        names = ["the callee", *(f"argument {i}" for i in range(len(args))), *kwargs]

        def checked(dy: t.Any) -> tuple[t.Any, ...]:
            rdata = pullback(dy)
            if not isinstance(rdata, tuple) or len(rdata) != len(operands):
                self._fail(
                    f"its pullback returned {type(rdata).__name__} "
                    f"{'of ' + str(len(rdata)) if isinstance(rdata, tuple) else ''}, not a tuple "
                    f"of {len(operands)} rdata (the callee's and each argument's)"
                )
            for x, r, name in zip(primals, rdata, names):
                # NoTangent() stands for a zero anywhere (``accum``).
                found = None if r is NO_TANGENT else rdata_problem(x, r, f"the rdata of {name}")
                if found is not None:
                    self._fail(found)
            return rdata

        return y, checked

    def _fail(self, problem: str) -> t.NoReturn:
        where = f" at {self.loc}" if self.loc is not None else ""
        raise RuleCheckError(f"rule {self.name} of the call {self.call}{where}: {problem}")

    def reset(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()


def rule_name(rule: object) -> str:
    """How a ``RuleCheckError`` names a rule: its function and where it is defined."""
    inner = getattr(rule, "rule", rule)  # StatefulRRule, FillSeed, adapters
    inner = getattr(inner, "rule", inner)
    code = getattr(inner, "__code__", None)
    name = getattr(inner, "__qualname__", None) or type(inner).__qualname__
    module = getattr(inner, "__module__", None)
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    return f"{module}.{name}{where}" if module else f"{name}{where}"


delegate_reset(CheckedRule)
