"""``python -m gibbous`` as a user runs it."""

from __future__ import annotations

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
    assert out.count("finite diff ") == 4  # four gradient entries checked by the demo itself
    assert "0 bytes of NumPy memory held" in out  # the stateful in-place matmul
    assert "C is restored: True" in out
    assert "step 40" in out and "demo finished" in out


def test_passes_lists_the_registered_passes() -> None:
    done = run("passes")
    assert done.returncode == 0, done.stderr
    names = [line.split()[0] for line in done.stdout.splitlines()]
    assert {"cse", "dce", "fold", "simplify-cfg"} <= set(names)


def test_unknown_command_is_a_clear_error() -> None:
    done = run("frobnicate")
    assert done.returncode != 0
    assert "invalid choice" in done.stderr
