"""``python -m gibbous ir|rules`` as a user runs them (the functions are tests/cli_examples.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOSS = ("tests.cli_examples:loss", "--args", "np.ones((3, 3)), np.ones(3)")
MIXED = ("tests.cli_examples:mixed", "--args", "np.ones((3, 3)), np.ones((3, 3)), np.ones((3, 3))")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gibbous", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def ok(*args: str) -> str:
    done = run(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- ir: each stage's text


def test_frontend_stage_is_untyped() -> None:
    out = ok("ir", *LOSS, "--stage", "frontend")
    assert out.startswith("func @loss(%W: any, %x: any)")
    assert "call numpy.tanh(%0) : any" in out


def test_typed_stage_is_the_default_and_precise() -> None:
    out = ok("ir", *LOSS)
    assert out == ok("ir", *LOSS, "--stage", "typed")
    assert out.startswith("func @loss(%W: f64[:,:], %x: f64[:])")
    assert "%h = call numpy.tanh(%0) : f64[:]" in out
    assert "%2 = call numpy.sum(%1) : f64" in out
    assert " any" not in out


def test_optimized_stage_and_passes() -> None:
    out = ok("ir", "tests.cli_examples:mixed", *MIXED[1:], "--stage", "optimized")
    assert "call builtins.len(%A) : i64" in out
    # --passes replaces the pipeline; the text still verifies, names the same calls
    only_dce = ok("ir", *LOSS, "--stage", "optimized", "--passes", "dce")
    assert "numpy.tanh" in only_dce


def test_forward_and_reverse_programs() -> None:
    forward = ok("ir", *LOSS, "--stage", "forward")
    assert forward.startswith("func @loss.forward(%self: object<gibbous.tangents.model.CoDual>")
    # W @ x and np.tanh of float64 arrays: written out, into buffers of their own (their
    # results do not escape), given new fdata (array forms), what the reverse needs pushed as
    # one record
    into = "call gibbous.ir.runtime.registered.buffers_into"
    assert f"{into}_aa(ad.buffers_0, numpy.matmul, %W.p, %x.p)" in forward
    assert f"%h = {into}1(ad.buffers_1, numpy.tanh, %0)" in forward
    assert f"%h.f = call gibbous.ir.runtime.registered.buffers_zeros(ad.buffers_1, %h," in forward
    assert "call ad.push_record_0(%rec)" in forward
    reverse = ok("ir", *LOSS, "--stage", "reverse")
    assert reverse.startswith("func @loss.reverse(")
    assert "ad.pop_record_0" in reverse
    assert "call gibbous.ir.runtime.registered.array_adjoint_tanh(" in reverse
    assert "call gibbous.ir.runtime.registered.matvec_f64_adjoint(%W.p, %W.f, %x.p" in reverse
    assert "call gibbous.ir.runtime.registered.buffers_give_back(ad.buffers_0)" in reverse


def test_output_file(tmp_path: Path) -> None:
    target = tmp_path / "loss.ir"
    assert ok("ir", *LOSS, "-o", str(target)) == ""
    assert target.read_text() == ok("ir", *LOSS)


# -- ir --format dot


def dot_of(*args: str) -> str:
    return ok("ir", *args, "--format", "dot")


def test_dot_has_a_node_per_block_and_an_edge_per_successor() -> None:
    text = ok("ir", "tests.cli_examples:labelled", "--args", "1.0", "--stage", "frontend")
    n_blocks = len(re.findall(r"^\^", text, re.M))
    dot = dot_of("tests.cli_examples:labelled", "--args", "1.0", "--stage", "frontend")
    assert dot.startswith('digraph "labelled" {') and dot.rstrip().endswith("}")
    nodes = re.findall(r"^  (b\d+) \[label=", dot, re.M)
    assert nodes == [f"b{i}" for i in range(n_blocks)] and n_blocks == 4
    edges = re.findall(r"^  (b\d+) -> (b\d+)(?: \[label=\"(\w+)\"\])?;$", dot, re.M)
    assert edges == [("b0", "b1", "true"), ("b0", "b2", "false"), ("b1", "b3", ""), ("b2", "b3", "")]


def test_dot_labels_hold_the_instructions_escaped() -> None:
    dot = dot_of("tests.cli_examples:labelled", "--args", "1.0", "--stage", "frontend")
    b3 = next(line for line in dot.splitlines() if line.startswith("  b3 "))
    assert r"^2(%note: any):\l  %2 = call builtins.len(%note) : any\l" in b3
    assert r"return %3\l" in b3
    # The string constant 'say "hi" \ {ok}' prints as "say \"hi\" \\ {ok}" in the IR; in DOT
    # every backslash and quote of that is escaped once more.
    b1 = next(line for line in dot.splitlines() if line.startswith("  b1 "))
    assert r'jump ^2(\"say \\\"hi\\\" \\\\ {ok}\")\l' in b1
    # No unescaped quote inside any label: each node line is one well-formed DOT string.
    for line in dot.splitlines():
        if "[label=" in line:
            label = line.split("[label=", 1)[1]
            assert re.match(r'^"(?:[^"\\]|\\.)*"', label), line
    assert "loc(" not in dot


def test_dot_of_a_straight_line_function_has_no_edges() -> None:
    dot = dot_of(*LOSS, "--stage", "optimized")
    assert "->" not in dot
    assert r"%h = call numpy.tanh(%0) : f64[:]\l" in dot


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_svg(tmp_path: Path) -> None:
    svg = ok("ir", "tests.cli_examples:labelled", "--args", "1.0", "--format", "svg")
    assert "<svg" in svg and "builtins.len" in svg
    target = tmp_path / "cfg.png"
    ok("ir", *LOSS, "--format", "png", "-o", str(target))
    assert target.read_bytes().startswith(b"\x89PNG")


@pytest.mark.skipif(shutil.which("dot") is not None, reason="Graphviz's dot is installed")
def test_svg_without_graphviz_says_how_to_get_it() -> None:
    done = run("ir", *LOSS, "--format", "svg")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "Graphviz" in done.stderr and "install" in done.stderr


# -- rules


def rows(*args: str) -> dict[str, list[str]]:
    """callee -> the row's cells (line, callee, types, kind, detail), by the table's columns."""
    out = ok("rules", *args).splitlines()
    header = out[0]
    starts = [header.index(h) for h in ("callee", "argument types", "rule", "resolved to")]
    table: dict[str, list[str]] = {}
    for line in out[1:]:
        cells = [line[: starts[0]].strip()]
        cells += [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None])]
        table[cells[1]] = cells
    return table


def test_rules_primitive_stateful_derived_inactive() -> None:
    table = rows(*MIXED)
    # np.tanh of a float64 array: its variant's array form, written out in place
    assert table["numpy.tanh"][2:4] == ["(f64[:,:])", "inline"]
    assert "[real_array_unary]" in table["numpy.tanh"][4]
    line, _, types, kind, detail = table["numpy.matmul"]
    assert line == "21"
    assert types == "(f64[:,:], f64[:,:], out=f64[:,:])"
    assert kind == "stateful"
    assert "numpy.matmul(f64[:,:], f64[:,:], out=f64[:,:]) in DefaultContext" in detail
    assert detail.endswith("state MatmulState")
    assert table["tests.cli_examples.square"][3] == "derived"
    assert table["builtins.len"][3] == "inactive"
    assert "builtins.len" not in rows(*MIXED, "--active-only")


def test_rules_missing_is_a_row_not_an_error() -> None:
    table = rows("tests.cli_examples:needs_dist", "--args", "2.0")
    assert table["math.dist"][3] == "missing"
    assert table["math.dist"][4].startswith("no rule to differentiate math.dist(")
    assert table["operator.mul"][3] == "inline"  # on floats: written out, not called


def test_rules_dynamic_and_zero_derivative() -> None:
    table = rows("tests.cli_examples:apply_first", "--args", "[np.sin], 1.0")
    assert table["%0"][3] == "dynamic"  # the callee is fns[0], a value
    table = rows("tests.cli_examples:rounded", "--args", "np.ones(3)")
    assert table["numpy.floor"][3] == "zero-derivative"


# -- errors: one line, exit code 2, a traceback only when asked


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("ir", "tests.no_such_module:loss", "--args", "1.0"), "no module named 'tests.no_such_module'"),
        (("rules", "tests.cli_examples:no_such", "--args", "1.0"), "has no function 'no_such'"),
        (("ir", "tests.cli_examples", "--args", "1.0"), "expected MODULE:FUNC"),
        (("ir", *LOSS[:2], "np.ones((3,"), "bad --args expression"),
        (("ir", *LOSS[:2], "np.onez(3)"), "bad --args expression 'np.onez(3)': AttributeError"),
        (("ir", "tests.cli_examples:unsupported", "--args", "1.0"), "unsupported: gibbous cannot differentiate a match statement"),
        (("ir", "tests.cli_examples:needs_dist", "--args", "1.0", "--stage", "forward"), "no rule to differentiate math.dist("),
        (("ir", *LOSS, "--stage", "optimized", "--passes", "dce,bogus"), "no pass named 'bogus'"),
    ],
)
def test_errors_are_one_line(args: tuple[str, ...], message: str) -> None:
    done = run(*args)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"gibbous {args[0]}: error: ")
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_traceback_when_asked() -> None:
    done = run("ir", "tests.cli_examples:unsupported", "--args", "1.0", "--traceback")
    assert done.returncode != 0
    assert "Traceback" in done.stderr and "UnsupportedConstructError" in done.stderr


def test_bad_stage_is_argparse_usage_error() -> None:
    done = run("ir", *LOSS, "--stage", "nonsense")
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_demo_and_passes_still_work() -> None:
    assert "simplify-cfg" in ok("passes")


# -- the same from Python


def test_rule_table_rows_and_render_api(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    import gibbous.inspect as gi
    from tests import cli_examples

    A = np.ones((3, 3))
    table = gi.rule_table(cli_examples.mixed, A, A.copy(), A.copy())
    matmul = next(r for r in table if r.callee == "numpy.matmul")
    assert (matmul.kind, matmul.state_type, matmul.line) == ("stateful", "MatmulState", 21)
    assert {r.kind for r in table} <= set(gi.rules.KINDS)
    text = gi.format_rule_table(table)
    assert text.splitlines()[0].split() == ["line", "callee", "argument", "types", "rule", "resolved", "to"]

    ir = gi.code_ir(cli_examples.loss, A, np.ones(3))
    assert gi.render(ir) == gi.to_dot(ir)
    assert "loc(" in gi.to_dot(ir, locations=True)
    with pytest.raises(ValueError, match="unknown format"):
        gi.render(ir, "jpeg")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(gi.GraphvizNotFoundError, match="install Graphviz"):
        gi.render(ir, "svg")
    html = ir._repr_html_()
    assert html is not None and html.startswith("<pre>func @loss(")
    assert "&quot;" in html  # the locations' file names, escaped


def test_dot_branch_to_one_block_twice_gives_two_edges() -> None:
    dot = dot_of("tests.cli_examples:labelled", "--args", "1.0", "--stage", "optimized")
    assert len(re.findall(r"^  b\d+ \[label=", dot, re.M)) == 2
    assert re.findall(r"^  b0 -> b1 \[label=\"(\w+)\"\];$", dot, re.M) == ["true", "false"]
