"""The rule audit (gibbous.audit): first the audit itself, on a private context of tiny rules
whose failures are known; then the real audit, one test per case of ``CASE_MODULES`` and one
for the registrations without a case."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import typing as t

import numpy as np
import pytest

from gibbous import testing
from gibbous.audit import cases_by_module, covered_by, registrations, uncovered
from gibbous.audit import report as doc
from gibbous.audit.__main__ import main as audit_main
from gibbous.audit.runner import AuditReport, CaseResult, run_audit, run_case, signature
from gibbous.rules.registry import Context, primitive, zero_derivative
from gibbous.tangents.model import NO_TANGENT, CoDual, NoTangent

ROOT = pathlib.Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------------------------
# Tiny rules with known faults, in contexts of their own

AUDIT = Context("AuditTest", parent=None)
GOOD = Context("AuditGood", parent=None)  # only rules that pass, each with a case


def first_two(x: t.Any) -> float:
    return float(x[0] + x[1])


def last_two(x: t.Any) -> float:
    return float(x[-1] + x[-2])


def doubled(x: t.Any) -> t.Any:
    return 2.0 * x


def tripled(x: t.Any) -> t.Any:
    return 3.0 * x


def halved(x: t.Any) -> t.Any:
    return 0.5 * x


def count(x: t.Any) -> int:
    return len(x)


def _cotangent(dy: t.Any) -> float:
    return 0.0 if isinstance(dy, NoTangent) else float(dy)


def first_two_rule(f: CoDual[t.Any, t.Any], x: CoDual[t.Any, t.Any]) -> t.Any:
    """Good: its primal allocates nothing, neither does it."""
    dx = x.fdata

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = _cotangent(dy)
        dx[0] += g
        dx[1] += g
        return NO_TANGENT, NO_TANGENT

    return CoDual(first_two(x.primal), NO_TANGENT), pullback


primitive(first_two, "f64[:]", ctx=AUDIT)(first_two_rule)
primitive(first_two, "f64[:]", ctx=GOOD)(first_two_rule)


@primitive(last_two, "f64[:]", ctx=AUDIT)
def last_two_rule(f: CoDual[t.Any, t.Any], x: CoDual[t.Any, t.Any]) -> t.Any:
    """Right, but allocates a 2-element array in every pullback where its primal allocates
    nothing: the allocation check fails."""
    dx = x.fdata

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        np.add(dx[-2:], np.full(2, _cotangent(dy)), out=dx[-2:])
        return NO_TANGENT, NO_TANGENT

    return CoDual(last_two(x.primal), NO_TANGENT), pullback


def scaling_rule(factor: float, claimed: float) -> t.Callable[..., t.Any]:
    """``factor * x``, whose pullback multiplies by ``claimed``; allocates like its primal."""

    def rule(f: CoDual[t.Any, t.Any], x: CoDual[t.Any, t.Any]) -> t.Any:
        y = factor * x.primal
        dy, dx = np.zeros_like(y), x.fdata

        def pullback(_: t.Any) -> tuple[t.Any, ...]:
            np.add(dx, claimed * dy, out=dx)
            return NO_TANGENT, NO_TANGENT

        return CoDual(y, dy), pullback

    return rule


primitive(doubled, "f64[:]", ctx=AUDIT)(scaling_rule(2.0, 2.0))
primitive(tripled, "f64[:]", ctx=AUDIT)(scaling_rule(3.0, 2.0))  # a wrong gradient
primitive(halved, "f64[:]", ctx=AUDIT)(scaling_rule(0.5, 0.5))  # no case
zero_derivative(count, "f64[:]", ctx=AUDIT)

X = np.array([0.5, -1.25, 2.0, 0.75])
CASES = [
    testing.case(first_two, X),
    testing.case(last_two, X),
    testing.case(doubled, X),
    testing.case(tripled, X),
    testing.case(count, X),
    testing.case(np.sin, X),  # no rule for it in AUDIT
]


@pytest.fixture(scope="module")
def audited() -> AuditReport:
    return run_audit(AUDIT, CASES)


def _result(report: AuditReport, f: object) -> CaseResult:
    (found,) = [c for c in report.cases if c.case.f is f]
    return found


def test_the_audit_reports_exactly_the_faults(audited: AuditReport) -> None:
    found = [(f.kind, f.subject) for f in audited.failures]
    assert found == [
        ("failed", "tests.test_audit.last_two(f64[4])"),
        ("failed", "tests.test_audit.tripled(f64[4])"),
        ("unmatched", "numpy.sin(f64[4])"),
        ("uncovered", "tests.test_audit.halved(f64[:])"),
    ]
    assert _result(audited, last_two).problem == "allocations"
    assert _result(audited, tripled).problem == "correctness"
    assert "disagrees with central finite differences" in _result(audited, tripled).message
    no_rule = "no rule to differentiate numpy.sin(f64[:]) in AuditTest"
    assert no_rule in _result(audited, np.sin).message
    assert audited.counts() == {
        "registrations": 6,
        "primitive": 5,
        "stateful": 0,
        "zero_derivative": 1,
        "cases": 6,
        "failed": 2,
        "unmatched": 1,
        "uncovered": 1,
        "forward checked": 0,  # (these functions have no forward rules)
        "reverse-only": 2,
    }
    assert audited.complete


def test_the_audit_records_what_each_case_measured(audited: AuditReport) -> None:
    good, bad, twice = (_result(audited, f) for f in (first_two, last_two, doubled))
    assert good.passed and good.primal_bytes == 0 and good.rule_bytes == 0
    assert good.fd_error is not None and 0 <= good.fd_error < 1e-6
    assert bad.primal_bytes == 0 and bad.fd_error is None
    assert bad.rule_bytes is not None and bad.rule_bytes >= 16  # np.full(2, g), and more
    assert twice.passed and twice.primal_bytes == X.nbytes
    assert twice.rule_bytes is not None and twice.rule_bytes >= X.nbytes
    assert twice.fd_error is not None and twice.fd_error < 1e-6
    assert all(c.seconds > 0 for c in audited.cases if c.registration is not None)
    rows = {r.signature: [c.case.f for c in r.cases] for r in audited.registrations}
    assert rows["tests.test_audit.first_two(f64[:])"] == [first_two]
    assert rows["tests.test_audit.halved(f64[:])"] == []


def test_selections_run_only_what_they_select() -> None:
    by_name = run_audit(AUDIT, CASES, match="doubled")
    assert [r.signature for r in by_name.registrations] == ["tests.test_audit.doubled(f64[:])"]
    assert [c.case.f for c in by_name.cases] == [doubled]
    assert not by_name.failures and not by_name.complete
    by_origin = run_audit(AUDIT, CASES, origin="numpy")
    assert not by_origin.registrations and not by_origin.cases
    with pytest.raises(ValueError, match="selection"):
        doc.render(by_name)


def test_the_section_lists_every_registration_with_its_cases(audited: AuditReport) -> None:
    body = doc.render(audited)
    assert "**6 callable/signature pairs**: 5 plain (`primitive`), 0 stateful, 1 zero" in body
    assert "The audit fails: 2 case(s) fail, 1 case(s) cover no registration, 1 " in body
    assert "### `tests.test_audit`: 6 registration(s), 5 case(s)" in body
    lines = body.splitlines()

    def row(start: str) -> list[str]:
        (line,) = [line for line in lines if line.startswith(start)]
        return [cell.strip() for cell in line.strip("|").split(" | ")]

    assert row("| `tests.test_audit.last_two(f64[:])`") == [
        "`tests.test_audit.last_two(f64[:])`",
        "primitive",
        "—",
        "`tests.test_audit.last_two(f64[4])`",
        "0",
        str(_result(audited, last_two).rule_bytes),
        "—",
        "—",  # (a failing case is not run through forward mode)
        "**FAIL** (f) allocations",
    ]
    assert row("| `tests.test_audit.halved(f64[:])`")[3:] == ["—"] * 5 + ["**no case**"]
    assert row("| `tests.test_audit.first_two(f64[:])`")[-2] == "reverse-only: no forward rule yet"
    assert "**Forward mode**: 0 registrations have a forward rule checked" in body
    assert row("| `tests.test_audit.count(f64[:])`")[1] == "zero_derivative"
    assert row("| `tests.test_audit.first_two(f64[:])`")[-1] == "ok"
    unmatched = (
        "| — | `numpy.sin(f64[4])` | no rule to differentiate numpy.sin(f64[:]) in AuditTest |"
    )
    assert unmatched in lines
    assert doc.render(run_audit(AUDIT, CASES)) == body  # deterministic


def test_fd_errors_are_shown_as_a_power_of_ten_above_them() -> None:
    assert doc.fd_bound(3.2e-10) == "< 1e-9"
    assert doc.fd_bound(1e-10) == "< 1e-9"
    assert doc.fd_bound(0.0) == "0"
    assert doc.fd_bound(None) == "—"


def test_write_appends_the_section_then_replaces_it_and_check_ignores_fd_errors(
    audited: AuditReport, tmp_path: pathlib.Path
) -> None:
    guide = "# Rules\n\nHand-written text.\n"
    path = tmp_path / "rules.md"
    path.write_text(guide)
    assert doc.write(path, audited)
    text = path.read_text()
    assert text.startswith(guide + "\n## The audit\n\n" + doc.BEGIN + "\n")
    assert text.endswith(doc.END + "\n")
    assert not doc.write(path, audited)  # nothing changed
    assert doc.stale(path, audited) == []

    fd = text.replace("| < 1e-", "| < 1e-1", 1)  # an FD error moved by powers of ten
    assert fd != text
    path.write_text(fd)
    assert doc.stale(path, audited) == []

    rule_bytes = f"| {_result(audited, last_two).rule_bytes} |"
    path.write_text(text.replace(rule_bytes, "| 1000 |"))
    diff = doc.stale(path, audited)
    assert any(line.startswith("-") and "| 1000 |" in line for line in diff)
    assert any(line.startswith("+") and rule_bytes in line for line in diff)

    path.write_text(text.replace(rule_bytes, "| 1000 |") + "\nMore hand-written text.\n")
    assert doc.write(path, audited)
    assert path.read_text() == text + "\nMore hand-written text.\n"

    path.write_text(guide)
    assert doc.stale(path, audited) == [f"{path} has no audit section (no line {doc.BEGIN})"]
    path.write_text(guide + doc.END + "\n" + doc.BEGIN + "\n")
    with pytest.raises(ValueError, match="markers are broken"):
        doc.write(path, audited)


def test_the_command_line(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert audit_main([], ctx=AUDIT, cases=CASES) == 1
    out = capsys.readouterr().out
    assert "case fails: tests.test_audit.last_two(f64[4])" in out
    assert "(f) allocations check failed" in out
    assert "registration has no case: tests.test_audit: tests.test_audit.halved(f64[:])" in out
    assert "the audit fails: 2 case(s) fail, 1 case(s) cover no registration" in out

    good = [CASES[0]]
    path = tmp_path / "rules.md"
    assert audit_main(["--write", str(path)], ctx=GOOD, cases=good) == 0
    assert audit_main(["--check", str(path)], ctx=GOOD, cases=good) == 0
    assert "is up to date" in capsys.readouterr().out
    path.write_text(path.read_text().replace("| ok |", "| fine |"))
    assert audit_main(["--check", str(path)], ctx=GOOD, cases=good) == 1
    assert "is stale" in capsys.readouterr().out

    assert audit_main(["-v", "-k", "first_two"], ctx=AUDIT, cases=CASES) == 0
    assert " ms CPU  ok " in capsys.readouterr().out
    assert audit_main(["--uncovered"], ctx=AUDIT, cases=CASES) == 0
    captured = capsys.readouterr()
    halved_line = "tests.test_audit: tests.test_audit.halved(f64[:]) [primitive in AuditTest]\n"
    assert captured.out == halved_line
    with pytest.raises(SystemExit):
        audit_main(["--write", str(path), "-k", "x"], ctx=AUDIT, cases=CASES)


def test_python_m_gibbous_audit_runs_the_audit_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gibbous", "audit", "--uncovered", "--origin", "no.such.module"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "0 of 0 registration(s) have no case" in done.stderr


# --------------------------------------------------------------------------------------------
# The real audit


REAL = cases_by_module()


@pytest.mark.audit
@pytest.mark.parametrize(
    ("module", "case"), REAL, ids=[f"{m.rsplit('.', 1)[-1]}:{c.id}" for m, c in REAL]
)
def test_case(module: str, case: testing.RuleCase) -> None:
    """Each case covers a registration and passes ``test_rule(..., perf="allocs")``."""
    try:
        registration = covered_by(case)
    except LookupError as e:
        pytest.fail(f"{module}: the case covers no registration:\n{e}")
    result = run_case(case, module, registration)
    assert result.passed, f"{module}: {signature(registration)}\n{result.message}"


def test_every_registration_has_a_case() -> None:
    # The library's rules: other tests register rules of their own in DefaultContext.
    missing = [r for r in uncovered() if r.origin.startswith("gibbous.")]
    lines = [f"{r.origin}: {r.describe()}" for r in missing]
    assert not missing, f"{len(missing)} registration(s) have no case:\n" + "\n".join(lines)


def test_the_rules_doc_lists_every_registration() -> None:
    """docs/rules.md's audit section names every registration (the numbers may differ from one
    machine to another; ``python -m gibbous audit --check docs/rules.md`` compares them)."""
    body = doc.section((ROOT / "docs" / "rules.md").read_text(encoding="utf-8"))
    assert body is not None, "docs/rules.md has no audit section: run --write docs/rules.md"
    # (SciPy 1.18 moved array_api_compat from scipy._lib to scipy._external: one name for both)
    def same(name: str) -> str:
        return name.replace("scipy._external.array_api_compat", "scipy._lib.array_api_compat")

    listed = {same(line.split(" | ")[0].strip("| `").replace("\\|", "|")) for line in body.splitlines()}
    # In a fresh process: other tests register rules, and names for objects, of their own.
    script = (
        "import importlib.util, gibbous\n"
        "if importlib.util.find_spec('scipy'): import scipy\n"
        "from gibbous.audit import all_cases, registrations\n"
        "from gibbous.audit.runner import signature\n"
        "all_cases()\n"
        "print('\\n'.join(signature(r) for r in registrations()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True
    )
    missing = [line for line in done.stdout.splitlines() if same(line) not in listed]
    assert not missing, (
        "docs/rules.md's audit section is stale (python -m gibbous audit --write "
        "docs/rules.md); it lacks:\n" + "\n".join(missing)
    )
