"""The layers hold: what importing a layer loads, and the import contract of pyproject.toml.

Each import runs in a fresh interpreter: this one has loaded everything already.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import pytest

import gibbous

ROOT = pathlib.Path(__file__).resolve().parent.parent


def loaded_by(statement: str) -> list[str]:
    """The gibbous modules a fresh interpreter has loaded after ``statement``."""
    probe = (
        f"{statement}\nimport json, sys\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'gibbous')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return list(json.loads(done.stdout))


def test_the_ir_loads_nothing_above_it() -> None:
    outside = [m for m in loaded_by("import gibbous.ir") if m != "gibbous"]
    assert [m for m in outside if not m.startswith("gibbous.ir")] == []
    assert "gibbous.ir.verify" in outside  # the probe did load the IR


def test_the_runtime_helpers_are_part_of_the_ir() -> None:
    loaded = loaded_by("import gibbous.ir.runtime, gibbous.ir.purity")
    assert all(m == "gibbous" or m.startswith("gibbous.ir") for m in loaded)


def test_the_generic_passes_load_no_rules() -> None:
    loaded = loaded_by("import gibbous.passes")
    assert not [m for m in loaded if m.startswith(("gibbous.rules", "gibbous.frontend"))]


def test_the_rule_sdk_loads_only_what_is_below_it() -> None:
    loaded = loaded_by("import gibbous.rules.registry, gibbous.rules.frules, gibbous.rules.stateful")
    below = ("gibbous.ir", "gibbous.rules", "gibbous.tangents", "gibbous.infer", "gibbous.optional")
    assert [m for m in loaded if m != "gibbous" and not m.startswith(below)] == []
    # The SDK registers nothing: the library is the one list of the rules loaded.
    assert not [m for m in loaded if m.startswith("gibbous.library")]


def test_the_library_registers_every_rule_and_loads_nothing_above_it() -> None:
    loaded = loaded_by("import gibbous.library")
    below = ("gibbous.ir", "gibbous.rules", "gibbous.tangents", "gibbous.infer", "gibbous.optional")
    assert [m for m in loaded if m != "gibbous" and not m.startswith((*below, "gibbous.library"))] == []
    assert {"gibbous.library.python.objects", "gibbous.library.linalg.products"} <= set(loaded)


def test_import_gibbous_is_lazy() -> None:
    assert loaded_by("import gibbous") == ["gibbous"]
    assert "gibbous.api" in loaded_by("import gibbous; gibbous.grad")


@pytest.mark.parametrize("name", [n for n in gibbous.__all__ if n != "__version__"])
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(gibbous, name) is not None
    assert name in dir(gibbous)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        getattr(gibbous, "nonexistent")


def test_the_import_contract_is_kept() -> None:
    lint = shutil.which("lint-imports", path=str(pathlib.Path(sys.executable).parent))
    if lint is None:
        pytest.skip("import-linter is not installed (the test extra installs it)")
    done = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_imports_form_a_dag() -> None:
    """No import cycle between modules through imports at module level or inside functions
    (deferred imports count); imports for type checking alone, and package faces (whose
    ``__init__`` re-exports what lies below them), are left out."""
    grimp = pytest.importorskip("grimp")
    networkx = pytest.importorskip("networkx")
    graph = grimp.build_graph("gibbous", exclude_type_checking_imports=True)
    faces = {m for m in graph.modules if any(o.startswith(m + ".") for o in graph.modules)}
    edges = networkx.DiGraph()
    for module in graph.modules - faces:
        for imported in graph.find_modules_directly_imported_by(module) - faces:
            edges.add_edge(module, imported)
    cycles = [sorted(c) for c in networkx.strongly_connected_components(edges) if len(c) > 1]
    assert cycles == []
    assert edges.number_of_edges() > 500  # (the graph was read)
