"""The Python the AD pass writes for a loop, for docs/ad.md ("An example").

Run it: ``python examples/generated_code.py`` derives the rule of ``horner`` for a float and an
int, prints the source of its forward and reverse programs (one factory, compiled once) and
calls the rule once.  ``python -m gibbous ir examples.generated_code:horner --args "0.5, 4"``
shows the same function's IR at each stage (``--stage optimized|forward|reverse``).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a checkout: import gibbous from it
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gibbous  # noqa: E402


def horner(x: float, n: int) -> float:
    acc = 0.0
    for i in range(n):
        acc = acc * x + i
    return acc


if __name__ == "__main__":
    rule = gibbous.build_rrule(horner, 0.5, 4)
    print(rule.program.description.source)
    print(gibbous.value_and_gradient(rule, horner, 0.5, 4))
