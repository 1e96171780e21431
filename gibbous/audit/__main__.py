"""``python -m gibbous.audit`` (also ``python -m gibbous audit``): run the rule audit.

    python -m gibbous.audit                          # summary and failures; status 1 on any
    python -m gibbous.audit --write docs/rules.md    # also regenerate the audit section
    python -m gibbous.audit --check docs/rules.md    # status 1 also when the section is stale
    python -m gibbous.audit --origin gibbous.library.linalg.products -k matmul -v
    python -m gibbous.audit --uncovered [--origin MODULE]   # rules without a case (no run)
"""

from __future__ import annotations

import argparse
import sys
import typing as t

from gibbous.audit import registrations, uncovered
from gibbous.audit import report as doc
from gibbous.audit.runner import CaseResult, run_audit, signature
from gibbous.rules.registry import Context, DefaultContext
from gibbous.testing.cases import RuleCase

EXIT_FAILED = 1
EXIT_USAGE = 2


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Run every rule case with test_rule(..., perf='allocs') and check that "
        "every registered rule has a case (docs/rules.md, 'The audit').",
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--write", metavar="FILE", help="write the audit section of FILE")
    out.add_argument(
        "--check",
        metavar="FILE",
        help="exit with status 1 if FILE's audit section is stale (FD errors aside)",
    )
    parser.add_argument("--origin", metavar="MODULE", help="only the rules MODULE registers")
    parser.add_argument(
        "-k", dest="match", metavar="SUBSTRING", help="only cases and rules whose name has it"
    )
    parser.add_argument(
        "--uncovered", action="store_true", help="list the rules without a case; run nothing"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case's result")
    parser.add_argument(
        "--durations", type=int, default=0, metavar="N", help="print the N slowest cases"
    )
    return parser


def _case_line(c: CaseResult) -> str:
    status = "ok" if c.passed else f"FAIL {c.describe_problem()}"
    allocs = f"primal {c.primal_bytes} B, rule {c.rule_bytes} B"
    fd = doc.fd_bound(c.fd_error)
    return f"{c.seconds * 1e3:7.1f} ms CPU  {status:18} {c.id}  ({allocs}, fd {fd})"


def _uncovered(
    ctx: Context, cases: t.Sequence[RuleCase] | None, origin: str | None, match: str | None
) -> int:
    missing = [r for r in uncovered(ctx, origin, cases) if match is None or match in signature(r)]
    for r in missing:
        print(f"{r.origin}: {r.describe()}")
    total = [
        r
        for r in registrations(ctx)
        if origin in (None, r.origin) and (match is None or match in signature(r))
    ]
    print(f"{len(missing)} of {len(total)} registration(s) have no case", file=sys.stderr)
    return 0


def main(
    argv: list[str] | None = None,
    *,
    prog: str = "python -m gibbous.audit",
    ctx: Context = DefaultContext,
    cases: t.Sequence[RuleCase] | None = None,
) -> int:
    """The command line; ``ctx`` and ``cases`` replace the real rules and cases (for tests)."""
    parser = _parser(prog)
    ns = parser.parse_args(argv)
    selecting = ns.origin is not None or ns.match is not None
    if selecting and (ns.write or ns.check):
        parser.error("--write and --check need the whole audit: leave out --origin and -k")
    if ns.uncovered:
        return _uncovered(ctx, cases, ns.origin, ns.match)

    on_case = (lambda c: print(_case_line(c), flush=True)) if ns.verbose else None
    report = run_audit(ctx, cases, origin=ns.origin, match=ns.match, on_case=on_case)
    failures = report.failures
    for failure in failures:
        print(str(failure) if failure.kind == "uncovered" else f"\n{failure}\n")
    if ns.durations > 0:
        slowest = sorted(report.cases, key=lambda c: -c.seconds)[: ns.durations]
        print(f"\nslowest {len(slowest)} case(s):")
        for c in slowest:
            print(_case_line(c))
    status = EXIT_FAILED if failures else 0
    if ns.write:
        changed = doc.write(ns.write, report)
        print(f"{'wrote' if changed else 'unchanged:'} the audit section of {ns.write}")
    if ns.check:
        diff = doc.stale(ns.check, report)
        if diff:
            print(f"\nthe audit section of {ns.check} is stale; regenerate it with --write:")
            print("\n".join(diff))
            status = EXIT_FAILED
        else:
            print(f"the audit section of {ns.check} is up to date")
    print(f"\n{report.summary()}")
    return status


if __name__ == "__main__":
    sys.exit(main())
