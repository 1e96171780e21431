"""Running the audit: every case through ``test_rule(..., perf="allocs")``, and every
registration with the cases that cover it.

The audit fails on three things, each a ``Failure``:

* ``"failed"``: a case fails a check of ``test_rule`` (or ``test_rule`` refuses it);
* ``"unmatched"``: a case covers no registration (``lookup_rule`` raises for its types);
* ``"uncovered"``: a registration has no case.

A case is run on its own (``run_case``) and its result depends on nothing else, so the cases
could be run in parallel; they are run one after the other for now.
"""

from __future__ import annotations

import re
import time
import typing as t

import attrs

from gibbous.audit import cases_by_module, covered_by, registrations
from gibbous.rules.registry import Context, DefaultContext, Registration
from gibbous.testing.cases import RuleCase
from gibbous.testing.checks import RuleTestReport, exception_text
from gibbous.testing.errors import CHECKS, RuleTestError
from gibbous.testing.forward import ForwardCheck, check_forward
from gibbous.testing.harness import test_rule

#: What went wrong with a case: a check of ``test_rule``; ``"error"``, an exception outside
#: the checks (``f`` fails on the case's arguments, an option is refused); ``"no rule"``,
#: the case covers no registration.
Problem = t.Literal[
    "correctness", "interface", "reuse", "mutation", "state", "allocations", "error", "no rule",
    "forward",
]

# test_rule's report states these as text: "passed (6 direction(s); largest relative error
# 4.6e-14)", and an allocations failure "allocated: 96 bytes of NumPy memory".  Tests of the
# audit (tests/test_audit.py) fail if the wording changes.
_CORRECTNESS = re.compile(r"(\d+) direction\(s\); largest relative error ([-+.e\d]+|nan|inf)")
_ALLOCATED = re.compile(r"allocated: (\d+) bytes")


@attrs.frozen(eq=False)
class CaseResult:
    """One case: what it covers, whether it passed, and what it measured."""

    case: RuleCase
    module: str  # the case module that defined it ("" for cases handed to run_audit)
    registration: Registration | None  # what it covers; None: nothing (problem "no rule")
    problem: Problem | None  # None: every check passed
    message: str  # the failure, as test_rule (or lookup_rule) words it; "" when passed
    primal_bytes: int | None  # NumPy memory a warm call of the primal allocated
    rule_bytes: int | None  # NumPy memory a warm forward + reverse of the rule allocated
    fd_error: float | None  # largest relative error against finite differences
    seconds: float  # CPU time of the process: what the case costs, however busy the machine
    # A check the case declares it fails, and why (``case(..., deviation=(check, why))``): the
    # audit reports it instead of failing, and fails if the check passes after all.
    deviation: str | None = None
    # What forward mode does with the call (``gibbous.testing.forward``); None: not run.
    forward: ForwardCheck | None = None

    @property
    def passed(self) -> bool:
        return self.problem is None

    @property
    def id(self) -> str:
        return self.case.id

    def describe_problem(self) -> str:
        """``(f) allocations``: the check that failed, with its letter."""
        if self.problem is None:
            return "passed"
        if self.problem == "error":
            return "test_rule raised"
        letter = CHECKS.get(t.cast(t.Any, self.problem))
        return f"{letter} {self.problem}" if letter is not None else self.problem


@attrs.frozen(eq=False)
class RegistrationResult:
    """One registration and the results of the cases that cover it (none: uncovered)."""

    registration: Registration
    cases: tuple[CaseResult, ...]

    @property
    def signature(self) -> str:
        """``numpy.matmul(f64[:,:], f64[:,:], out=f64[:,:])``."""
        return signature(self.registration)

    @property
    def passed(self) -> bool:
        return bool(self.cases) and all(c.passed for c in self.cases)

    @property
    def forward(self) -> str:
        """What forward mode does with the registration's calls: ``checked`` if a case's
        forward rule passed the checks, else what its cases say (``reverse-only: why``)."""
        checks = [c.forward for c in self.cases if c.forward is not None]
        if any(f.status == "checked" for f in checks):
            return "checked"
        failed = [f for f in checks if f.status == "failed"]
        if failed:
            return str(failed[0])
        reverse_only = [f for f in checks if f.status == "reverse-only"]
        if reverse_only:
            return str(reverse_only[0])
        return str(checks[0]) if checks else "—"


FailureKind = t.Literal["failed", "unmatched", "uncovered"]


@attrs.frozen
class Failure:
    """A failure of the audit: ``subject`` is a case's id or a registration's signature."""

    kind: FailureKind
    origin: str  # the case module, or the module that registered the rule
    subject: str
    message: str

    def __str__(self) -> str:
        heads = {
            "failed": "case fails",
            "unmatched": "case covers no registration",
            "uncovered": "registration has no case",
        }
        where = f"{self.origin}: " if self.origin else ""
        if self.kind == "uncovered":  # one line each: there may be many
            return f"{heads[self.kind]}: {where}{self.subject} [{self.message}]"
        body = "".join(f"\n    {line}" if line else "\n" for line in self.message.splitlines())
        return f"{heads[self.kind]}: {where}{self.subject}{body}"


@attrs.frozen(eq=False)
class AuditReport:
    """What ``run_audit`` found.  ``complete`` is False when it ran a selection (``origin``,
    ``match``): such a report must not be written as the whole audit."""

    context: str
    registrations: tuple[RegistrationResult, ...]
    unmatched: tuple[CaseResult, ...]  # cases that cover no registration
    complete: bool
    seconds: float  # wall-clock time of the whole run
    cpu_seconds: float

    @property
    def cases(self) -> list[CaseResult]:
        """Every case result: those of each registration in order, then the unmatched."""
        return [c for r in self.registrations for c in r.cases] + list(self.unmatched)

    @property
    def failures(self) -> list[Failure]:
        """Failing cases, then cases that cover nothing, then registrations without a case."""
        failed = [
            Failure("failed", c.module, c.id, c.message)
            for r in self.registrations
            for c in r.cases
            if c.problem
        ]
        unmatched = [Failure("unmatched", c.module, c.id, c.message) for c in self.unmatched]
        uncovered = [
            Failure("uncovered", r.registration.origin, r.signature, describe(r.registration))
            for r in self.registrations
            if not r.cases
        ]
        return failed + unmatched + uncovered

    def counts(self) -> dict[str, int]:
        """The numbers of the summary line."""
        kinds = [r.registration.kind for r in self.registrations]
        cases = self.cases
        return {
            "registrations": len(self.registrations),
            "primitive": kinds.count("primitive"),
            "stateful": kinds.count("stateful"),
            "zero_derivative": kinds.count("zero_derivative"),
            "cases": len(cases),
            "failed": sum(1 for r in self.registrations for c in r.cases if c.problem),
            "unmatched": len(self.unmatched),
            "uncovered": sum(1 for r in self.registrations if not r.cases),
            "forward checked": sum(1 for r in self.registrations if r.forward == "checked"),
            "reverse-only": sum(
                1 for r in self.registrations if r.forward.startswith("reverse-only")
            ),
        }

    def summary(self) -> str:
        """Two lines: what was audited, and what failed."""
        n = self.counts()
        failures = (
            f"{n['failed']} case(s) fail, {n['unmatched']} case(s) cover no registration, "
            f"{n['uncovered']} registration(s) have no case"
        )
        return (
            f"{n['registrations']} registration(s) in {self.context} ({n['primitive']} plain, "
            f"{n['stateful']} stateful, {n['zero_derivative']} zero-derivative), "
            f"{n['cases']} case(s), {self.seconds:.1f} s ({self.cpu_seconds:.1f} s CPU)\n"
            + ("the audit passes" if not self.failures else f"the audit fails: {failures}")
        )


def signature(registration: Registration) -> str:
    """``numpy.matmul(f64[:,:], f64[:,:], out=f64[:,:])``: a registration's callable and
    pattern, as the audit names it."""
    return registration.pattern.format(registration.fn)


def describe(registration: Registration) -> str:
    """``stateful, ElementwiseState, in DefaultContext``: what kind of rule a registration
    is."""
    state = [registration.state_type.__qualname__] if registration.state_type else []
    return ", ".join([registration.kind, *state, f"in {registration.context.name}"])


# --------------------------------------------------------------------------------------------
# Running


def run_case(
    case: RuleCase, module: str, registration: Registration, ctx: Context = DefaultContext
) -> CaseResult:
    """Run one case that covers ``registration`` with ``test_rule(..., perf="allocs")`` (in
    ``ctx``, unless the case names its own)."""
    start = time.process_time()
    options: dict[str, t.Any] = {"ctx": ctx, **case.options, "perf": "allocs"}
    declared: tuple[str, str] | None = options.pop("deviation", None)
    primal_bytes = rule_bytes = None
    fd_error = None
    problem: Problem | None = None
    message = ""
    deviation: str | None = None
    try:
        report = test_rule(case.f, *case.args, kwargs=case.kwargs, **options)
    except RuleTestError as e:
        problem, message = e.check, e.message
        if e.check == "allocations":  # raised only when the primal allocates nothing
            primal_bytes, rule_bytes = 0, _allocated(e)
        if declared is not None and e.check == declared[0]:
            problem, deviation = None, f"{e.check}: {declared[1]}"
    except Exception as e:
        problem, message = "error", f"test_rule raised {exception_text(e)}"
        if declared is not None and declared[0] == "error":
            problem, deviation = None, f"error: {declared[1]}"
    else:
        primal_bytes, rule_bytes = _bytes(report, "primal"), _bytes(report, "rule")
        fd_error = fd_error_of(report)
        if declared is not None and declared[0] != "forward":
            problem = "error"
            message = f"the declared deviation ({declared[0]}) no longer happens: remove it"
    forward = None
    if problem is None:
        forward = _forward(case, options.get("ctx", ctx))
        if forward.status == "failed" and declared is not None and declared[0] == "forward":
            # (not strict: the one forward deviation declared fails in some orders of the
            # cases only, see gibbous.audit.cases.python.containers)
            deviation = f"forward: {declared[1]}"
        elif forward.status == "failed":
            problem, message = "forward", f"forward rule: {forward.message}"
    seconds = time.process_time() - start
    return CaseResult(
        case,
        module,
        registration,
        problem,
        message,
        primal_bytes,
        rule_bytes,
        fd_error,
        seconds,
        deviation,
        forward,
    )


def _forward(case: RuleCase, ctx: Context) -> ForwardCheck:
    try:
        return check_forward(case.f, *case.args, kwargs=case.kwargs, ctx=ctx)
    except Exception as e:
        return ForwardCheck("failed", f"the check raised {exception_text(e)}")


def fd_error_of(report: RuleTestReport) -> float | None:
    """The largest relative error of the correctness check; None if no direction was checked
    (nothing in the call is differentiable)."""
    found = _CORRECTNESS.search(report.results.get("correctness", ""))
    if found is None:
        raise ValueError(f"no error in the correctness result of {report.subject}: {report}")
    return float(found.group(2)) if int(found.group(1)) else None


def _bytes(report: RuleTestReport, which: str) -> int | None:
    measured = report.allocations.get(which)
    return None if measured is None else measured.allocated


def _allocated(e: RuleTestError) -> int | None:
    found = _ALLOCATED.search(e.message)
    return int(found.group(1)) if found else None


def run_audit(
    ctx: Context = DefaultContext,
    cases: t.Sequence[RuleCase] | None = None,
    *,
    origin: str | None = None,
    match: str | None = None,
    on_case: t.Callable[[CaseResult], None] | None = None,
) -> AuditReport:
    """Run every case (default: those of ``CASE_MODULES``) and match them with the
    registrations ``ctx`` sees.

    ``origin`` selects the registrations of one module and the cases that cover them;
    ``match`` the cases whose id contains it and the registrations whose signature does (with
    all their cases).  ``on_case`` is called with each result as it comes.
    """
    start, cpu = time.perf_counter(), time.process_time()
    sourced = cases_by_module() if cases is None else [("", c) for c in cases]
    resolved: list[tuple[str, RuleCase, Registration | LookupError]] = []
    for module, c in sourced:
        try:
            resolved.append((module, c, covered_by(c, ctx)))
        except LookupError as e:
            resolved.append((module, c, e))

    def chosen(c: RuleCase, found: Registration | LookupError) -> bool:
        registration = found if isinstance(found, Registration) else None
        if origin is not None and (registration is None or registration.origin != origin):
            return False
        if match is None or match in c.id:
            return True
        return registration is not None and match in signature(registration)

    selected = [(m, c, found) for m, c, found in resolved if chosen(c, found)]
    hit = {id(found): found for _, _, found in selected if isinstance(found, Registration)}
    rows = [
        r
        for r in registrations(ctx)
        if origin in (None, r.origin) and (match is None or match in signature(r) or id(r) in hit)
    ]
    # A case with a context of its own may cover a registration ctx does not see.
    known = {id(r) for r in rows}
    rows += [r for key, r in hit.items() if key not in known]
    rows.sort(key=lambda r: (r.origin, signature(r)))

    results: dict[int, list[CaseResult]] = {id(r): [] for r in rows}
    unmatched: list[CaseResult] = []
    for module, c, found in selected:
        if isinstance(found, Registration):
            result = run_case(c, module, found, ctx)
            results[id(found)].append(result)
        else:
            result = CaseResult(c, module, None, "no rule", str(found), None, None, None, 0.0)
            unmatched.append(result)
        if on_case is not None:
            on_case(result)
    return AuditReport(
        ctx.name,
        tuple(RegistrationResult(r, tuple(results[id(r)])) for r in rows),
        tuple(unmatched),
        origin is None and match is None,
        time.perf_counter() - start,
        time.process_time() - cpu,
    )
