"""docs/passes.md's worked examples quote examples/ verbatim, and show the command lines the
tests run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SECTION = "## Writing a pass: two worked examples"


def section() -> str:
    text = (ROOT / "docs" / "passes.md").read_text()
    assert SECTION in text
    return text[text.index(SECTION) :]


def blocks(language: str) -> list[str]:
    fenced = re.findall(r"^```(\w*)\n(.*?)^```$", section(), re.MULTILINE | re.DOTALL)
    return [text for lang, text in fenced if lang == language]


def test_code_excerpts_are_the_examples_code() -> None:
    sources = "".join(p.read_text() for p in sorted((ROOT / "examples").glob("*.py")))
    excerpts = blocks("python")
    assert len(excerpts) >= 5
    for excerpt in excerpts:
        assert excerpt in sources, f"docs/passes.md quotes code not in examples/:\n{excerpt}"


def test_fixture_excerpt_is_a_fixture() -> None:
    fixtures = [p.read_text() for p in (ROOT / "tests" / "examples" / "fixtures").rglob("*.ir")]
    quoted = [b for b in blocks("") if "# expect:" in b]
    assert quoted and all(q in fixtures for q in quoted)
