"""Drawing an IR function's control-flow graph: DOT text, and SVG or PNG through Graphviz.

    >>> print(to_dot(code_ir(loss, W, x)))          # DOT: a node per block, an edge per successor
    >>> render(code_ir(loss, W, x), format="svg")   # needs Graphviz's ``dot`` on PATH

The graph is ``gibbous.ir.cfg.graph(f)``; each node's label is its block exactly as the IR
prints it (``gibbous.ir.printer``), locations left out unless asked for.  The DOT text is
written here, so only ``dot`` itself (for SVG and PNG) is needed beyond networkx.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import typing as t

from gibbous.ir.cfg import graph
from gibbous.ir.core import Block, Branch, Function, Return

FORMATS = ("dot", "svg", "png")


class GraphvizNotFoundError(RuntimeError):
    """SVG or PNG was asked for, and Graphviz's ``dot`` program is not on PATH."""


_LOC = re.compile(r' loc\("(?:[^"\\]|\\.)*":\d+\)$')


def block_texts(f: Function, *, locations: bool = False) -> list[list[str]]:
    """Each block's printed lines (its label first), cut from the function's printed text."""
    lines = str(f).splitlines()[1:-1]  # between "func @f(...) {" and "}"
    blocks: list[list[str]] = []
    for line in lines:
        if not line.startswith(" "):
            blocks.append([line])
        else:
            blocks[-1].append(line if locations else _LOC.sub("", line))
    assert len(blocks) == len(f.blocks), "a block label the printer did not start a line with"
    return blocks


def _quote(text: str) -> str:
    """A DOT double-quoted string (a label's lines end with ``\\l``: left-justified)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label(lines: t.Sequence[str]) -> str:
    escaped = [line.replace("\\", "\\\\").replace('"', '\\"') for line in lines]
    return '"' + "".join(f"{line}\\l" for line in escaped) + '"'


def to_dot(f: Function, *, locations: bool = False) -> str:
    """The control-flow graph of ``f`` in Graphviz's DOT language."""
    g = graph(f)
    ids = {b: f"b{i}" for i, b in enumerate(f.blocks)}
    texts = dict(zip(f.blocks, block_texts(f, locations=locations)))
    out = [
        f"digraph {_quote(f.name)} {{",
        '  node [shape=box, fontname="monospace", fontsize=10];',
        '  edge [fontname="monospace", fontsize=9];',
    ]
    for b in g.nodes:
        style = ""
        if b is f.entry:
            style = ", penwidth=2"
        elif isinstance(b.terminator, Return):
            style = ", style=rounded"
        out.append(f"  {ids[b]} [label={_label(texts[b])}{style}];")
    for a, b in g.edges:  # one DOT edge per successor: a branch to one block twice gives two
        for label in _edge_labels(a, b):
            attrs = f" [label={_quote(label)}]" if label else ""
            out.append(f"  {ids[a]} -> {ids[b]}{attrs};")
    out.append("}")
    return "\n".join(out) + "\n"


def _edge_labels(a: Block, b: Block) -> list[str]:
    term = a.terminator
    if not isinstance(term, Branch):
        return [""]
    return [n for n, s in zip(("true", "false"), term.successors) if s is b]


@t.overload
def render(f: Function, format: t.Literal["dot", "svg"] = ..., *, locations: bool = ...) -> str:
    ...


@t.overload
def render(f: Function, format: t.Literal["png"], *, locations: bool = ...) -> bytes:
    ...


@t.overload
def render(f: Function, format: str, *, locations: bool = ...) -> str | bytes:
    ...


def render(f: Function, format: str = "dot", *, locations: bool = False) -> str | bytes:
    """The CFG of ``f`` as DOT text, SVG text or PNG bytes (SVG and PNG run Graphviz)."""
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; the formats are {', '.join(FORMATS)}")
    dot = to_dot(f, locations=locations)
    if format == "dot":
        return dot
    made = run_dot(dot, format)
    return made.decode() if format == "svg" else made


def graphviz_available() -> bool:
    return shutil.which("dot") is not None


def run_dot(dot: str, format: str) -> bytes:
    """``dot -T<format>`` on the DOT text."""
    program = shutil.which("dot")
    if program is None:
        raise GraphvizNotFoundError(
            f"rendering {format} needs Graphviz's `dot` program, which is not on PATH; install "
            "Graphviz (apt-get install graphviz, brew install graphviz, conda install graphviz) "
            "or ask for the DOT text (format 'dot')"
        )
    done = subprocess.run(
        [program, f"-T{format}"], input=dot.encode(), capture_output=True, timeout=60
    )
    if done.returncode != 0:
        raise RuntimeError(f"dot -T{format} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


__all__ = ["FORMATS", "GraphvizNotFoundError", "block_texts", "render", "run_dot", "to_dot"]
