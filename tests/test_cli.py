"""``python -m gibbous`` as a user runs it."""

from __future__ import annotations

import re
import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gibbous", *args], capture_output=True, text=True, timeout=120
    )


def test_demo_tells_the_story() -> None:
    done = run("demo")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "func @loss(%W: f64[:,:], %x: f64[:])" in out  # typed IR
    assert "line  callee" in out  # the rule table, with a row per call site
    assert re.search(r"^ +\d+  numpy\.tanh +\(f64\[:\]\) +[a-z-]+ +numpy\.tanh\(", out, re.M)
    assert out.count("finite diff ") == 4  # four gradient entries checked by the demo itself
    assert len(re.findall(r"^warm, per call: .* ratio \d+\.\dx$", out, re.M)) == 2  # loss, MLP
    allocated = re.search(
        r"^NumPy allocated: +primal +(\d+) B +value_and_gradient +(\d+) B$", out, re.M
    )
    assert allocated is not None and 0 < int(allocated[1]) < int(allocated[2])
    assert "0 bytes of NumPy memory held" in out  # the stateful in-place matmul
    assert "C is restored: True" in out
    assert "step 40" in out
    finished = re.search(r"^demo finished in (\d+\.\d+) s$", out, re.M)
    assert finished is not None and float(finished[1]) < 10


def test_passes_lists_the_registered_passes() -> None:
    done = run("passes")
    assert done.returncode == 0, done.stderr
    names = [line.split()[0] for line in done.stdout.splitlines()]
    assert {"cse", "dce", "fold", "simplify-cfg"} <= set(names)


def test_unknown_command_is_a_clear_error() -> None:
    done = run("frobnicate")
    assert done.returncode != 0
    assert "invalid choice" in done.stderr
