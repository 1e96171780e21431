"""IR-text fixtures for the passes: IR in, pipeline, IR out.

Each ``fixtures/*.ir`` file is

    # what the fixture checks (any number of comment lines)
    # pipeline: fold, dce
    <input IR, exactly as the printer prints it>
    # expect:
    <expected IR, exactly as the printer prints it>

The input is parsed, the pipeline runs with verification after every pass, and the result
must print exactly as expected.
"""

from __future__ import annotations

import difflib
import pathlib

import attrs
import pytest

from gibbous.ir.parser import parse
from gibbous.ir.verify import verify
from gibbous.passes import PassManager, parse_pipeline, registered_passes

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
PIPELINE = "# pipeline:"
EXPECT = "# expect:"


@attrs.frozen
class Fixture:
    name: str
    pipeline: list[str]
    input: str
    expected: str


def load(path: pathlib.Path) -> Fixture:
    lines = path.read_text().splitlines(keepends=True)
    heads = [i for i, line in enumerate(lines) if line.startswith(PIPELINE)]
    expects = [i for i, line in enumerate(lines) if line.rstrip("\n") == EXPECT]
    if len(heads) != 1 or len(expects) != 1 or not heads[0] < expects[0]:
        raise ValueError(f"{path.name}: expected one '{PIPELINE}' line, then one '{EXPECT}' line")
    start, middle = heads[0], expects[0]
    if not all(line.startswith("#") for line in lines[:start]):
        raise ValueError(f"{path.name}: only comment lines may come before '{PIPELINE}'")
    return Fixture(
        name=path.stem,
        pipeline=parse_pipeline(lines[start][len(PIPELINE) :]),
        input="".join(lines[start + 1 : middle]),
        expected="".join(lines[middle + 1 :]),
    )


FIXTURE_PATHS = sorted(FIXTURES.glob("*.ir"))


def diff(expected: str, actual: str) -> str:
    return "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            "expected",
            "actual",
        )
    )


@pytest.mark.parametrize("path", FIXTURE_PATHS, ids=lambda p: p.stem)
def test_fixture(path: pathlib.Path) -> None:
    fx = load(path)
    f = parse(fx.input)
    # The texts must be printer output, or "exactly as expected" would compare formatting.
    assert str(f) == fx.input, "the input is not what the printer prints for it"
    assert str(parse(fx.expected)) == fx.expected, "the expectation is not printer output"
    verify(f)
    PassManager(fx.pipeline, verify=True).run(f)
    actual = str(f)
    assert actual == fx.expected, f"{fx.name}: output differs from the expectation\n" + diff(
        fx.expected, actual
    )


@pytest.mark.parametrize("path", FIXTURE_PATHS, ids=lambda p: p.stem)
def test_expected_output_is_a_fixed_point(path: pathlib.Path) -> None:
    # Each pass iterates to its fixed point, so running the pipeline again changes nothing.
    fx = load(path)
    f = parse(fx.expected)
    changed = PassManager(fx.pipeline, verify=True).run(f)
    assert str(f) == fx.expected, diff(fx.expected, str(f))
    assert not changed, "a pass reported a change but the IR is the same"


def test_every_registered_pass_has_fixtures() -> None:
    covered = {name for path in FIXTURE_PATHS for name in load(path).pipeline}
    standard = {"array-items", "dce", "fold", "cse", "simplify-cfg"}
    assert standard <= set(registered_passes())
    assert standard <= covered


def test_fixture_files_exist() -> None:
    assert len(FIXTURE_PATHS) >= 20
