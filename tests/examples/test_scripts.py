"""The examples as a user runs them: ``python examples/X.py`` and ``--passes MODULE:CLASS``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
ENERGY = ("examples.square_to_mul:energy", "--args", "np.array([0.5, -1.5, 2.0]), 3")


def script(name: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT.parent,  # anywhere: the script finds gibbous by itself
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def gibbous(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gibbous", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_square_to_mul_script() -> None:
    out = script("square_to_mul.py")
    before, after = out.split("after square-to-mul (changed: True):")
    assert "%0 = call operator.pow(%x, 2) : f64[:]" in before
    assert "%0 = call operator.mul(%x, %x) : f64[:]" in after
    assert "operator.pow(%x, 2)" not in after
    assert "%1 = call operator.pow(%x, 3) : f64[:]" in after  # not a square
    difference = re.search(r"max \|difference\| (\S+)", out)
    assert difference is not None and float(difference.group(1)) < 1e-6
    assert re.search(r"operator\.mul +\(f64\[:\], f64\[:\]\) +[a-z-]+ ", out)  # rule table
    for name in ("fold", "square-to-mul", "dce", "cse", "simplify-cfg"):
        assert re.search(rf"^  {re.escape(name)} +\d+\.\d us$", out, re.MULTILINE), name


def test_flop_count_script() -> None:
    out = script("flop_count.py")
    assert "flop-count of @rnn_loss (operations per block, by kind)" in out
    assert re.search(r"^\^1 +1 +0 +2 +0 +2 +0 +0$", out, re.MULTILINE)  # the loop body
    assert re.search(r"^total +2 +3 +1 +2 +0 +0$", out, re.MULTILINE)
    gradient = re.search(r"dW\[1, 2\] gibbous (\S+), finite diff (\S+)", out)
    assert gradient is not None
    assert abs(float(gradient.group(1)) - float(gradient.group(2))) < 1e-8
    assert "the pass counted 1 function(s): @rnn_loss" in out
    assert "changed False" in out
    assert re.search(r"^  flop-count +\d+\.\d us$", out, re.MULTILINE)


def test_cli_takes_a_pass_class_by_module_and_name() -> None:
    passes = "fold,examples.square_to_mul:SquareToMul,dce"
    done = gibbous("ir", *ENERGY, "--stage", "optimized", "--passes", passes)
    assert done.returncode == 0, done.stderr
    assert "%0 = call operator.mul(%x, %x) : f64[:]" in done.stdout
    plain = gibbous("ir", *ENERGY, "--stage", "optimized", "--passes", "fold,dce")
    assert "%0 = call operator.pow(%x, 2) : f64[:]" in plain.stdout
    rules = gibbous("rules", *ENERGY, "--passes", passes)
    assert re.search(r"operator\.mul +\(f64\[:\], f64\[:\]\) +[a-z-]+ ", rules.stdout)


def test_cli_takes_a_factory_and_the_analysis_reports_on_stderr() -> None:
    args = "np.ones((4, 4)), np.ones((4, 3)), [np.ones(3)], np.zeros(4)"
    passes = "fold,dce,examples.flop_count:FlopCount.to_stderr"
    done = gibbous(
        "ir", "examples.flop_count:rnn_loss", "--args", args, "--stage", "optimized",
        "--passes", passes,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("func @rnn_loss(")
    assert "flop-count of @rnn_loss" in done.stderr
    assert re.search(r"^total +2 +3 +1 +2 +0 +0$", done.stderr, re.MULTILINE)


def test_cli_bad_pass_specs_are_one_line_errors() -> None:
    cases = {
        "examples.nope:Pass": "no module named 'examples.nope'",
        "examples.square_to_mul:Nope": "has no function 'Nope'",
        "examples.square_to_mul:energy": "calling it raised TypeError",
        "examples.square_to_mul:FLOAT_DTYPES": "is not callable",
        "bogus": "no pass named 'bogus'",
        "builtins:dict": "calling it gave a dict, not a pass",
    }
    for spec, message in cases.items():
        done = gibbous("ir", *ENERGY, "--stage", "optimized", "--passes", f"fold,{spec}")
        assert done.returncode == 2, spec
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert message in done.stderr, (spec, done.stderr)


def test_trust_ncg_script_converges() -> None:
    """SciPy's trust-region Newton-CG with gibbous's gradient and Hessian-vector product."""
    pytest.importorskip("scipy")
    out = script("trust_ncg_rosenbrock.py")
    assert "success=True" in out and "Hessian-vector products" in out
    error = float(re.search(r"max \|x - 1\| = (\S+)", out).group(1))  # type: ignore[union-attr]
    assert error < 1e-6
