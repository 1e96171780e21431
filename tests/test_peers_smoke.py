"""benchmarks/peers.py's workloads are right: gibbous's gradient and the hand-written floor's
match central finite differences on every workload (nothing is timed).  The peers are checked
only where they are installed (CI does not install them); a missing one is reported as such.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
import typing as t

import pytest

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")


def _load() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("peers", os.path.join(BENCHMARKS, "peers.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["peers"] = module
    spec.loader.exec_module(module)
    return module


peers = _load()
KEYS = [w.key for w in peers.WORKLOADS]


def _checked(tool: t.Any, key: str) -> str:
    w = next(w for w in peers.WORKLOADS if w.key == key)
    args = w.make_args()
    prepared = tool.prepare(w, args)
    probes = peers.finite_differences(w, args)
    return str(peers.check(w, args, probes, prepared.result(prepared.run())))


@pytest.mark.parametrize("key", KEYS)
def test_gibbous_matches_finite_differences(key: str) -> None:
    assert _checked(peers.GIBBOUS, key) == ""


@pytest.mark.parametrize("key", KEYS)
def test_floor_matches_finite_differences(key: str) -> None:
    assert _checked(peers.FLOOR, key) == ""


def test_a_wrong_gradient_is_caught() -> None:
    w = next(w for w in peers.WORKLOADS if w.key == "2 (n=100)")
    args = w.make_args()
    value, (g,) = w.hand(args)()
    g = g.copy()
    g[7] *= 1.0001
    probes = peers.finite_differences(w, args)
    assert "WRONG GRADIENT" in peers.check(w, args, probes, (value, (g,)))


def test_every_workload_number_is_selectable() -> None:
    assert {w.number for w in peers.selected("1,2,3,4,5,6,7,8")} == set(range(1, 9))
    assert [w.key for w in peers.selected("2")] == ["2 (n=100)", "2 (n=10^6)"]


def test_a_missing_package_is_reported_not_dropped() -> None:
    absent = peers.Tool("absent", "no-such-distribution-gibbous-test", peers.prepare_floor)
    assert peers.cannot(absent, peers.WORKLOADS[0]) == "not installed"


PEERS = [tool for tool in peers.TOOLS if tool.package is not None]


@pytest.mark.parametrize("tool", PEERS, ids=[tool.name for tool in PEERS])
def test_installed_peers_match_on_a_small_workload(tool: t.Any) -> None:
    if not peers.installed(tool.package):
        pytest.skip(f"{tool.package} is not installed")
    assert _checked(tool, "3") == ""


def test_write_section_replaces_only_its_own(tmp_path: t.Any) -> None:
    doc = tmp_path / "b.md"
    doc.write_text("# B\n\n## One\n\ntext\n\n## Two\n\nmore\n")
    section = peers.markdown([{"workload": "1", "tool": "primal (NumPy)"}], "facts")
    peers.write_section(str(doc), section)
    with doc.open("a") as f:
        f.write("\n### Notes\n\nkept\n")
    peers.write_section(str(doc), section.replace("facts", "new facts"))
    text = doc.read_text()
    assert text.count(peers.HEADING) == 1 and "new facts" in text and "| 1: scalar loop" in text
    assert text.startswith("# B\n\n## One\n\ntext\n\n## Two\n\nmore\n")
    assert text.endswith("\n### Notes\n\nkept\n")
