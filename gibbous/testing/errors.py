"""``RuleTestError``: a rule failed one of the checks of ``test_rule``."""

from __future__ import annotations

import os
import typing as t

Check = t.Literal[
    "correctness", "interface", "reuse", "mutation", "state", "allocations", "forward"
]

#: The checks in the order of the specification, with their letters.
CHECKS: dict[Check, str] = {
    "correctness": "(a)",
    "interface": "(b)",
    "reuse": "(c)",
    "mutation": "(d)",
    "state": "(e)",
    "allocations": "(f)",
    "forward": "(g)",
}


class RuleTestError(AssertionError):
    """A rule failed a check.  ``check`` names it (``"correctness"``, ``"interface"``,
    ``"reuse"``, ``"mutation"``, ``"state"``, ``"allocations"`` or ``"forward"``); ``subject`` is the call
    tested; ``lines`` say what went wrong, with the numbers."""

    def __init__(self, check: Check, subject: str, lines: t.Sequence[str]) -> None:
        self.check: Check = check
        self.subject = subject
        self.lines = tuple(part for line in lines for part in line.split("\n"))
        super().__init__(self.message)

    @property
    def message(self) -> str:
        head = f"{CHECKS[self.check]} {self.check} check failed for {self.subject}"
        return "\n".join([head, *(f"  {line}" if line else "" for line in self.lines)])

    def __str__(self) -> str:
        return self.message


def short_path(path: str) -> str:
    """A file's path relative to the working directory, if it is below it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative
