"""The scan of NumPy's and SciPy's public callables (gibbous.audit.scan) and the page written
from it, docs/supported.md (gibbous.audit.supported).

The scan of every module is audit-marked: CI runs it once, on the audit's Python (.ci/run),
one test per module (so that pytest-xdist shares them out); it fails on any ``internal`` or
``wrong`` verdict, and, where NumPy's and SciPy's versions are the page's, on any row that
differs from the page.  The rest runs everywhere, on numpy.fft (a few seconds)."""

from __future__ import annotations

import pathlib
import typing as t

import numpy as np
import pytest

from gibbous.__main__ import main
from gibbous.audit import scan, supported
from gibbous.audit.scan import Row

PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "supported.md"


def _bugs(rows: list[Row]) -> list[str]:
    return [
        f"{r.name} ({r.how}): {r.reverse}/{r.forward}/{r.hvp}: {r.why}"
        for r in rows
        if {"internal", "wrong"} & {r.reverse, r.forward, r.hvp}
    ]


def test_the_cli_prints_a_modules_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--supported", "numpy.fft"]) == 0
    out = capsys.readouterr().out
    assert "| numpy.fft | 18 |" in out.replace(" 19 |", " 18 |")  # (NumPy 2.5 may add one)
    rows = supported.parse(out)
    assert {r.name for r in rows} >= {"numpy.fft.fft", "numpy.fft.irfft2", "numpy.fft.fftshift"}
    assert _bugs(rows) == []
    fft = next(r for r in rows if r.name == "numpy.fft.rfft")
    assert (fft.how, fft.reverse, fft.forward) == ("f(x)", "yes", "yes")


def test_the_cli_refuses_what_it_does_not_scan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--supported", "os.path"]) == 2
    assert "the scanned modules are numpy" in capsys.readouterr().err
    assert main(["rules", "mod:f", "--supported"]) == 2
    assert "takes a module" in capsys.readouterr().err


def test_a_page_reads_back_as_its_rows() -> None:
    rows = [
        Row("numpy.sin", "f(x)", "yes", "yes", "yes"),
        Row("numpy.floor", "f(x)", "zero", "zero", "skipped"),
        Row("numpy.frexp", "f(x)", "refused", "bare", "skipped", "reverse: MissingRuleError: a | b"),
        Row("numpy.fftfreq", "no sample call", "skipped", "skipped", "skipped"),
    ]
    text = supported.page(rows)
    assert supported.recorded_versions(text) == supported.versions()
    back = supported.parse(text)
    assert [r.name for r in back] == [r.name for r in rows]
    assert back[2].forward == "refused" and back[2].why == "reverse: MissingRuleError: a / b"
    assert supported.differences(text, rows, "numpy") == []


def test_a_changed_row_is_a_difference_a_time_out_is_not() -> None:
    old = [Row("numpy.sin", "f(x)", "yes", "yes", "yes"), Row("numpy.cos", "f(x)", "yes", "yes", "yes")]
    text = supported.page(old)
    new = [
        Row("numpy.sin", "f(x)", "yes", "refused", "skipped", "forward: ForwardModeError: no"),
        Row("numpy.tan", "f(x)", "yes", "yes", "yes"),
    ]
    assert supported.differences(text, new, "numpy") == [
        "changed: numpy.sin: yes/yes/yes () -> yes/refused/skipped (forward: ForwardModeError: no)",
        "gone: numpy.cos",
        "missing: numpy.tan",
    ]
    slow = [Row("numpy.sin", "f(x)", "skipped", "yes", "skipped", "reverse: over 20 s"), old[1]]
    assert supported.differences(text, slow, "numpy") == []


def test_a_time_out_behind_a_refusal_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    """CI's scan once found ``hvp`` of scipy.stats.boxcox_llf over the limit on a busy machine,
    after forward mode's refusal: the row must say so, or the page's ``refused`` looks changed."""
    import time

    from gibbous.ir.exceptions import GibbousError

    def modes(loss: t.Any, x: t.Any, v: t.Any, expected: float) -> dict[str, t.Callable[[], str]]:
        def refuse() -> str:
            raise GibbousError("no forward rule")

        return {"reverse": lambda: "yes", "forward": refuse, "hvp": lambda: time.sleep(5) or "yes"}

    monkeypatch.setattr(scan, "_modes", modes)
    monkeypatch.setattr(scan, "_TIMEOUT", 1)
    row = scan.scan_one("numpy.sin", np.sin)
    assert (row.reverse, row.forward, row.hvp) == ("yes", "refused", "skipped")
    assert row.why == "forward: GibbousError: no forward rule; hvp: over 1 s"
    page = supported.page([Row("numpy.sin", row.how, "yes", "refused", "refused", "forward: GibbousError: x")])
    assert supported.differences(page, [row], "numpy") == []


def test_a_refusal_is_compared_by_mode_and_exception_not_its_words() -> None:
    old = [Row("numpy.sin", "f(x)", "yes", "refused", "skipped", "forward: ForwardModeError: a x")]
    new = [Row("numpy.sin", "f(x)", "yes", "refused", "skipped", "forward: ForwardModeError: b")]
    assert supported.differences(supported.page(old), new, "numpy") == []
    other = [Row("numpy.sin", "f(x)", "yes", "refused", "skipped", "hvp: ForwardModeError: a x")]
    assert len(supported.differences(supported.page(old), other, "numpy")) == 1


def test_writing_one_module_updates_its_rows_of_the_page(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "supported.md"
    old = [
        Row("numpy.sin", "f(x)", "yes", "yes", "yes"),
        Row("numpy.fft.fft", "f(x)", "yes", "refused", "skipped", "forward: ForwardModeError: x"),
        Row("scipy.special.erf", "f(x)", "yes", "yes", "yes"),
    ]
    path.write_text(supported.page(old), encoding="utf-8")
    text = supported.write(str(path), ["numpy.fft"])
    rows = supported.parse(text)
    assert [r.name for r in rows if not r.name.startswith("numpy.fft.")] == ["numpy.sin", "scipy.special.erf"]
    fft = next(r for r in rows if r.name == "numpy.fft.fft")
    assert (fft.reverse, fft.forward) == ("yes", "yes")  # (scanned now)
    assert rows.index(fft) == 1 and len(rows) > 10  # (numpy.fft's rows in its place)
    path.write_text(supported.page(old).replace(supported.versions(), "NumPy 0.1, SciPy 0.1, Python 3.0"), encoding="utf-8")
    with pytest.raises(ValueError, match="write every module"):
        supported.write(str(path), ["numpy.fft"])


def test_a_row_over_the_time_limit_keeps_the_pages_verdicts(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "supported.md"
    path.write_text(supported.page([Row("numpy.fft.fft", "f(x)", "yes", "yes", "yes")]), encoding="utf-8")
    slow = [
        Row("numpy.fft.fft", "f(x)", "skipped", "yes", "skipped", "reverse: over 10 s"),
        Row("numpy.fft.ifft", "f(x)", "skipped", "skipped", "skipped", "reverse: over 10 s"),
    ]
    merged = supported._merged(str(path), ["numpy.fft"], slow)
    assert merged == [Row("numpy.fft.fft", "f(x)", "yes", "yes", "yes"), slow[1]]


def test_refusals_are_shown_without_machine_paths() -> None:
    text = (
        "MissingRuleError: no rule to differentiate numpy.broadcast(f64[:]) at "
        "/opt/venv/lib/python3.12/site-packages/numpy/lib/_stride_tricks_impl.py:540 (from "
        "/home/me/gibbous/gibbous/library/arrays/shapes.py:12) at "
        "/home/me/gibbous/gibbous/audit/scan.py:134 in DefaultContext"
    )
    assert scan.clean(text) == (
        "MissingRuleError: no rule to differentiate numpy.broadcast(f64[:]) at "
        "numpy/lib/_stride_tricks_impl.py:540 (from gibbous/library/arrays/shapes.py:12)"
    )


def test_the_page_exists_and_names_its_versions() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert supported.recorded_versions(text) is not None
    modules = {scan.module_of(r.name) for r in supported.parse(text)}
    assert modules == set(scan.MODULES)


@pytest.mark.audit
@pytest.mark.parametrize("module", scan.MODULES)
def test_scan(module: str) -> None:
    """Every public callable of ``module`` differentiates or is refused by a gibbous
    exception, never an internal error or a wrong value, except those the page records (with
    these versions: the known ones, each to fix; a new one fails); the page is current."""
    rows = scan.scan([module])
    text = PAGE.read_text(encoding="utf-8")
    current = supported.recorded_versions(text) == supported.versions()
    known = {r.name for r in supported.parse(text) if _bugs([r])} if current else set()
    assert _bugs([r for r in rows if r.name not in known]) == []
    if not current:
        pytest.skip(f"docs/supported.md is of {supported.recorded_versions(text)}, not {supported.versions()}")
    stale = supported.differences(text, rows, module)
    assert stale == [], (
        "docs/supported.md is stale (python -m gibbous rules --supported --write "
        "docs/supported.md, with the versions it names):\n" + "\n".join(stale)
    )
