"""Every command a doc shows with its output still prints that output.

A fenced block whose first line starts with ``$ `` is a console session: each ``$ command``
line is followed by what it printed (stdout and stderr, as a terminal shows them).  The test
runs each command from the repository root with this interpreter as ``python`` and compares,
after the same normalisation on both sides: the checkout's path dropped (so locations read
``examples/...``) and timings masked.  To bring the docs up to date after a change that
alters an output, run ``python -m tests.test_doc_outputs --write``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import typing as t
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md"])
FENCE = re.compile(r"^```[a-z]*\n(\$ .*?)^```$", re.MULTILINE | re.DOTALL)
TIMING = re.compile(r" *\b\d+(?:\.\d+)?(?= (?:us|ms|s)\b)")


class Session(t.NamedTuple):
    doc: Path
    command: str
    shown: str


def sessions() -> list[Session]:
    found = []
    for doc in DOCS:
        for block in FENCE.findall(doc.read_text()):
            for command, shown in _split(block):
                found.append(Session(doc, command, shown))
    return found


def _split(block: str) -> list[tuple[str, str]]:
    parts = re.split(r"^\$ (.*)\n", block, flags=re.MULTILINE)
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]


def run(command: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    python = shutil.which("python") or ""
    if Path(python).resolve() != Path(sys.executable).resolve():
        command = re.sub(r"^python\b", sys.executable.replace("\\", "/"), command)
    done = subprocess.run(
        command, shell=True, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    return done.stdout + done.stderr


def shortened(text: str) -> str:
    """As the docs show it: paths relative to the checkout, the interpreter as ``python``."""
    text = text.replace(f"{ROOT}/", "").replace(sys.executable, "python").rstrip()
    return text + "\n" if text else ""


def normalise(text: str) -> str:
    return TIMING.sub(" <t>", shortened(text))


def _id(s: Session) -> str:
    return f"{s.doc.name}: {s.command[:60]}"


@pytest.mark.parametrize("session", sessions(), ids=_id)
def test_the_output_a_doc_shows_is_what_the_command_prints(session: Session) -> None:
    if "--format svg" in session.command or "--format png" in session.command:
        if shutil.which("dot") is None:
            pytest.skip("Graphviz is not installed")
    printed = normalise(run(session.command))
    assert printed == normalise(session.shown), (
        f"{session.doc.name}: `{session.command}` now prints:\n{printed}\n"
        "(python -m tests.test_doc_outputs --write updates the docs)"
    )


def write() -> None:
    """Replace every shown output by what its command prints now."""
    for doc in DOCS:
        text = doc.read_text()

        def fresh(match: re.Match[str]) -> str:
            lines = []
            for command, _ in _split(match.group(1)):
                lines.append(f"$ {command}\n{shortened(run(command))}")
            fence = match.group(0).split("\n", 1)[0]
            return fence + "\n" + "".join(lines) + "```"

        new = FENCE.sub(fresh, text)
        if new != text:
            doc.write_text(new)
            print(f"updated {doc.relative_to(ROOT)}")


if __name__ == "__main__" and "--write" in sys.argv:
    write()
