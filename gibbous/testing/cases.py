"""Running ``test_rule`` over many calls: ``case`` describes one, ``test_rules_for`` runs a list
of them and reports every failure at once, ``parametrize`` turns them into pytest cases."""

from __future__ import annotations

import typing as t

import attrs

from gibbous.testing.errors import RuleTestError
from gibbous.testing.checks import RuleTestReport
from gibbous.testing.harness import test_rule
from gibbous.testing.rounds import Call


@attrs.frozen(eq=False)
class RuleCase:
    """One call to test: ``test_rule(f, *args, kwargs=kwargs, **options)``."""

    f: t.Any
    args: tuple[t.Any, ...]
    kwargs: dict[str, t.Any] = attrs.field(factory=dict)
    options: dict[str, t.Any] = attrs.field(factory=dict)

    @property
    def id(self) -> str:
        """``numpy.matmul(f64[3,4], f64[4,5], out=f64[3,5])``: a readable pytest id."""
        call = Call(self.f, len(self.args), tuple(self.kwargs))
        return call.describe((self.f, *self.args, *self.kwargs.values()))

    def run(self, **defaults: t.Any) -> RuleTestReport:
        """Test the rule; the case's own options override ``defaults``."""
        return test_rule(self.f, *self.args, kwargs=self.kwargs, **{**defaults, **self.options})

    def __repr__(self) -> str:
        return f"<RuleCase {self.id}>"


def case(
    f: t.Any, *args: t.Any, kwargs: t.Mapping[str, t.Any] | None = None, **options: t.Any
) -> RuleCase:
    """A call to test, with ``test_rule``'s options: ``case(np.matmul, A, B, kwargs={"out": C},
    perf="allocs")``."""
    return RuleCase(f, args, dict(kwargs or {}), options)


class RuleTestErrors(AssertionError):
    """Several rule cases failed: ``errors`` holds each case with its ``RuleTestError``."""

    def __init__(self, errors: t.Sequence[tuple[RuleCase, RuleTestError]], total: int) -> None:
        self.errors = list(errors)
        lines = [f"{len(errors)} of {total} rule case(s) failed"]
        for c, e in errors:
            lines += ["", f"{c.id}:", e.message]
        super().__init__("\n".join(lines))


def test_rules_for(
    cases: t.Iterable[RuleCase | tuple[t.Any, ...]], **defaults: t.Any
) -> list[RuleTestReport]:
    """Run ``test_rule`` on every case (a ``RuleCase``, or a tuple ``(f, *args)``) with
    ``defaults`` for the options; raise ``RuleTestErrors`` listing all failures."""
    reports: list[RuleTestReport] = []
    errors: list[tuple[RuleCase, RuleTestError]] = []
    all_cases = [c if isinstance(c, RuleCase) else case(*c) for c in cases]
    for c in all_cases:
        try:
            reports.append(c.run(**defaults))
        except RuleTestError as e:
            errors.append((c, e))
    if errors:
        raise RuleTestErrors(errors, len(all_cases))
    return reports


test_rules_for.__test__ = False  # type: ignore[attr-defined]  # not a test for pytest to collect


_Test = t.TypeVar("_Test", bound=t.Callable[..., t.Any])


def parametrize(cases: t.Sequence[RuleCase], argname: str = "case") -> t.Callable[[_Test], _Test]:
    """``@parametrize(CASES)`` on ``def test_x(case): case.run()``: one pytest test per case,
    named by the call (imports pytest, which only tests need)."""
    import pytest

    mark = pytest.mark.parametrize(argname, cases, ids=[c.id for c in cases])
    return t.cast(t.Callable[[_Test], _Test], mark)
