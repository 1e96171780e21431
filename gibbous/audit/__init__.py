"""The rule audit: every registered primitive rule has test cases, and ``test_rule`` with
``perf="allocs"`` passes on all of them (docs/rules.md, "The audit").

* ``registrations(ctx)``: every registration ``ctx`` sees, in a stable order;
* ``all_cases()``: the cases of every module in ``CASE_MODULES`` (each defines
  ``CASES: list[RuleCase]``, built with ``gibbous.testing.case``);
* ``covered_by(case, ctx)``: the registration a case exercises (looked up exactly as
  ``test_rule`` does: by ``typeof`` of its arguments);
* ``uncovered(ctx, origin=None)``: registrations without a case;
* ``run_audit(ctx, cases=None)``: every case through ``test_rule(..., perf="allocs")``, as an
  ``AuditReport`` (``gibbous.audit.runner``), which ``gibbous.audit.report`` writes into
  docs/rules.md between its marker lines.

``python -m gibbous.audit`` runs the audit (``--help``: its options); ``--uncovered [--origin
MODULE]`` lists what still needs a case.
"""

from __future__ import annotations

import importlib
import typing as t

from gibbous.ir.names import callable_key
from gibbous.ir.types import typeof
from gibbous import optional
from gibbous.rules.registry import Context, DefaultContext, Registration, lookup_rule
from gibbous.testing.cases import RuleCase

#: One module of cases per area of the rule library.
CASE_MODULES: tuple[str, ...] = (
    "gibbous.audit.cases.elementwise.scalars",
    "gibbous.audit.cases.elementwise.ufuncs",
    "gibbous.audit.cases.reductions",
    "gibbous.audit.cases.linalg",
    "gibbous.audit.cases.arrays.arrays",
    "gibbous.audit.cases.arrays.array_tools",
    "gibbous.audit.cases.python.containers",
    "gibbous.audit.cases.python.classes",
    "gibbous.audit.cases.inplace",
    "gibbous.audit.cases.statistics",
    "gibbous.audit.cases.transforms",
    "gibbous.audit.cases.scipy",
    "gibbous.audit.cases.scipy_special",
    "gibbous.audit.cases.scipy_linalg",
)


def registrations(ctx: Context = DefaultContext) -> list[Registration]:
    """Every registration visible from ``ctx`` (a nearer context's equal pattern hides a
    farther one's), ordered by origin module, callable name and pattern text."""
    optional.load()  # the rules of optional libraries imported so far
    seen: dict[tuple[object, ...], Registration] = {}
    for c in ctx.chain():
        for regs in c._rules.values():
            for r in regs:
                seen.setdefault((callable_key(r.fn), r.pattern), r)
    return sorted(seen.values(), key=lambda r: (r.origin, r.pattern.format(r.fn)))


def cases_by_module() -> list[tuple[str, RuleCase]]:
    """Every case of every module in ``CASE_MODULES`` that exists yet, with its module's name."""
    cases: list[tuple[str, RuleCase]] = []
    for name in CASE_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            continue
        cases.extend((name, c) for c in t.cast(list[RuleCase], getattr(module, "CASES")))
    return cases


def all_cases() -> list[RuleCase]:
    """The cases of every module in ``CASE_MODULES`` that exists yet."""
    return [c for _, c in cases_by_module()]


def covered_by(case: RuleCase, ctx: Context = DefaultContext) -> Registration:
    """The registration ``case`` exercises (raises what ``lookup_rule`` raises)."""
    operands = [*case.args, *case.kwargs.values()]
    context = t.cast(Context, case.options.get("ctx", ctx))
    constants = case.options.get("constants", ())
    types = [typeof(x, const=i in constants) for i, x in enumerate(operands)]
    return lookup_rule(context, case.f, types, tuple(case.kwargs))


def uncovered(
    ctx: Context = DefaultContext,
    origin: str | None = None,
    cases: t.Sequence[RuleCase] | None = None,
) -> list[Registration]:
    """Registrations (of module ``origin``, if given) that no case (of ``CASE_MODULES``, unless
    ``cases`` are given) exercises."""
    hit = set()
    for c in all_cases() if cases is None else cases:
        try:
            hit.add(id(covered_by(c, ctx)))
        except LookupError:
            pass
    return [
        r
        for r in registrations(ctx)
        if id(r) not in hit and (origin is None or r.origin == origin)
    ]


# The runner needs the functions above.
from gibbous.audit.runner import AuditReport as AuditReport  # noqa: E402
from gibbous.audit.runner import CaseResult as CaseResult  # noqa: E402
from gibbous.audit.runner import Failure as Failure  # noqa: E402
from gibbous.audit.runner import RegistrationResult as RegistrationResult  # noqa: E402
from gibbous.audit.runner import run_audit as run_audit  # noqa: E402
