"""CFG analyses on small hand-drawn graphs, checked against answers derived by hand.

Each test draws its graph in the docstring.  Reverse postorder comes from a depth-first search
that takes a branch's true target first, so false targets come earlier in the order.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import pytest

from gibbous.ir import cfg
from gibbous.ir.builder import Builder
from gibbous.ir.core import Block, Function
from gibbous.ir.types import BOOL, INT


class CFG:
    """Builds functions whose blocks do nothing but branch: only the graph matters here."""

    def __init__(self, *names: str) -> None:
        self.f = Function("g", [("n", INT)], entry_name=names[0])
        self.b = Builder(self.f)
        self.blocks = {names[0]: self.f.entry}
        for name in names[1:]:
            self.blocks[name] = self.b.add_block(name)

    def __getitem__(self, name: str) -> Block:
        return self.blocks[name]

    def jump(self, src: str, dst: str) -> None:
        self.b.at_end(self[src]).jump(self[dst])

    def branch(self, src: str, if_true: str, if_false: str) -> None:
        b = self.b.at_end(self[src])
        cond = b.call(operator.lt, self.f.args[0], 10, type=BOOL)
        b.branch(cond, self[if_true], [], self[if_false], [])

    def ret(self, src: str) -> None:
        self.b.at_end(self[src]).ret(0)

    def names(self, blocks: object) -> object:
        """The answer with blocks replaced by their names (other leaves kept), for readable
        comparisons."""
        if isinstance(blocks, Block):
            assert blocks.name is not None
            return blocks.name
        if isinstance(blocks, dict):
            return {self.names(k): self.names(v) for k, v in blocks.items()}
        if isinstance(blocks, (set, frozenset)):
            return {self.names(b) for b in blocks}
        if isinstance(blocks, (list, tuple)):
            return [self.names(b) for b in blocks]
        return blocks


def diamond() -> CFG:
    """entry -> then, else; then, else -> join"""
    g = CFG("entry", "then", "else", "join")
    g.branch("entry", "then", "else")
    g.jump("then", "join")
    g.jump("else", "join")
    g.ret("join")
    return g


def while_loop() -> CFG:
    """entry -> head; head -> body, exit; body -> head"""
    g = CFG("entry", "head", "body", "exit")
    g.jump("entry", "head")
    g.branch("head", "body", "exit")
    g.jump("body", "head")
    g.ret("exit")
    return g


def nested_loops() -> CFG:
    """entry -> outer; outer -> inner, exit; inner -> ibody, olatch; ibody -> inner;
    olatch -> outer"""
    g = CFG("entry", "outer", "inner", "ibody", "olatch", "exit")
    g.jump("entry", "outer")
    g.branch("outer", "inner", "exit")
    g.branch("inner", "ibody", "olatch")
    g.jump("ibody", "inner")
    g.jump("olatch", "outer")
    g.ret("exit")
    return g


def two_latches() -> CFG:
    """entry -> head; head -> a, exit; a -> head, b; b -> head (`continue` and loop end)"""
    g = CFG("entry", "head", "a", "b", "exit")
    g.jump("entry", "head")
    g.branch("head", "a", "exit")
    g.branch("a", "head", "b")
    g.jump("b", "head")
    g.ret("exit")
    return g


def with_unreachable() -> CFG:
    """entry -> exit; dead -> dead, exit (dead is unreachable, with a cycle of its own)"""
    g = CFG("entry", "dead", "exit")
    g.jump("entry", "exit")
    g.branch("dead", "dead", "exit")
    g.ret("exit")
    return g


def irreducible() -> CFG:
    """entry -> a, b; a -> b; b -> a, exit: the cycle a <-> b has two entries"""
    g = CFG("entry", "a", "b", "exit")
    g.branch("entry", "a", "b")
    g.jump("a", "b")
    g.branch("b", "a", "exit")
    g.ret("exit")
    return g


def self_loop() -> CFG:
    """entry -> s; s -> s, exit"""
    g = CFG("entry", "s", "exit")
    g.jump("entry", "s")
    g.branch("s", "s", "exit")
    g.ret("exit")
    return g


# --------------------------------------------------------------------------------------------
# graph, predecessors, reachable


def test_graph_has_every_block_and_one_edge_per_successor() -> None:
    g = with_unreachable()
    graph = cfg.graph(g.f)
    assert list(graph.nodes) == list(g.f.blocks)
    assert {(g.names(a), g.names(b)) for a, b in graph.edges} == {
        ("entry", "exit"),
        ("dead", "dead"),
        ("dead", "exit"),
    }
    assert all(graph.edges[e]["count"] == 1 for e in graph.edges)


def test_branch_to_one_block_twice_is_one_edge_counted_twice() -> None:
    g = CFG("entry", "x")
    g.branch("entry", "x", "x")
    g.ret("x")
    graph = cfg.graph(g.f)
    assert list(graph.edges) == [(g["entry"], g["x"])]
    assert graph.edges[g["entry"], g["x"]]["count"] == 2
    assert cfg.predecessors(g.f)[g["x"]] == [g["entry"]]


def test_blocks_with_equal_names_are_distinct_nodes() -> None:
    f = Function("g")
    b = Builder(f)
    x1, x2 = b.add_block("x"), b.add_block("x")
    b.jump(x1)
    b.at_end(x1).jump(x2)
    b.at_end(x2).ret(None)
    assert cfg.reverse_postorder(f) == [f.entry, x1, x2]


def test_edges_to_blocks_of_other_functions_are_left_out() -> None:
    other = Function("other")
    f = Function("g")
    Builder(f).jump(other.entry)
    assert list(cfg.graph(f).edges) == []
    assert cfg.reachable(f) == {f.entry}


def test_predecessors_are_in_block_order_and_include_unreachable_blocks() -> None:
    g = with_unreachable()
    preds = cfg.predecessors(g.f)
    assert g.names(preds) == {"entry": [], "dead": ["dead"], "exit": ["entry", "dead"]}


def test_predecessors_of_a_loop_header() -> None:
    g = two_latches()
    assert g.names(cfg.predecessors(g.f)[g["head"]]) == ["entry", "a", "b"]


def test_reachable() -> None:
    g = with_unreachable()
    assert g.names(cfg.reachable(g.f)) == {"entry", "exit"}
    g = nested_loops()
    assert cfg.reachable(g.f) == set(g.f.blocks)


# --------------------------------------------------------------------------------------------
# reverse postorder


@pytest.mark.parametrize(
    ("make", "order"),
    [
        (diamond, ["entry", "else", "then", "join"]),
        (while_loop, ["entry", "head", "exit", "body"]),
        (nested_loops, ["entry", "outer", "exit", "inner", "olatch", "ibody"]),
        (two_latches, ["entry", "head", "exit", "a", "b"]),
        (with_unreachable, ["entry", "exit"]),
        (irreducible, ["entry", "a", "b", "exit"]),
        (self_loop, ["entry", "s", "exit"]),
    ],
)
def test_reverse_postorder(make: Callable[[], CFG], order: list[str]) -> None:
    g = make()
    assert g.names(cfg.reverse_postorder(g.f)) == order


# --------------------------------------------------------------------------------------------
# dominators


@pytest.mark.parametrize(
    ("make", "idom"),
    [
        (diamond, {"entry": "entry", "then": "entry", "else": "entry", "join": "entry"}),
        (while_loop, {"entry": "entry", "head": "entry", "body": "head", "exit": "head"}),
        (
            nested_loops,
            {
                "entry": "entry",
                "outer": "entry",
                "inner": "outer",
                "ibody": "inner",
                "olatch": "inner",
                "exit": "outer",
            },
        ),
        (two_latches, {"entry": "entry", "head": "entry", "a": "head", "b": "a", "exit": "head"}),
        (with_unreachable, {"entry": "entry", "exit": "entry"}),
        (irreducible, {"entry": "entry", "a": "entry", "b": "entry", "exit": "b"}),
        (self_loop, {"entry": "entry", "s": "entry", "exit": "s"}),
    ],
)
def test_immediate_dominators(make: Callable[[], CFG], idom: dict[str, str]) -> None:
    g = make()
    tree = cfg.dominator_tree(g.f)
    assert tree.entry is g.f.entry
    assert g.names(tree.idom) == idom


def test_dominator_tree_queries() -> None:
    g = nested_loops()
    tree = cfg.dominator_tree(g.f)
    assert tree.dominates(g["outer"], g["ibody"])
    assert tree.dominates(g["inner"], g["inner"])
    assert not tree.strictly_dominates(g["inner"], g["inner"])
    assert tree.strictly_dominates(g["entry"], g["exit"])
    assert not tree.dominates(g["inner"], g["exit"])
    assert not tree.dominates(g["ibody"], g["olatch"])
    assert g.names(tree.children(g["outer"])) == ["exit", "inner"]
    assert g.names(tree.children(g["inner"])) == ["olatch", "ibody"]
    assert tree.children(g["ibody"]) == []
    assert [tree.depth(g[n]) for n in ["entry", "outer", "inner", "ibody", "olatch", "exit"]] == [
        0,
        1,
        2,
        3,
        3,
        2,
    ]


def test_unreachable_blocks_are_not_in_the_dominator_tree() -> None:
    g = with_unreachable()
    tree = cfg.dominator_tree(g.f)
    dead = g["dead"]
    assert dead not in tree.idom
    assert not tree.dominates(g["entry"], dead)
    assert not tree.dominates(dead, dead)
    assert not tree.dominates(dead, g["exit"])
    assert tree.children(dead) == []
    with pytest.raises(KeyError, match="unreachable"):
        tree.depth(dead)


# --------------------------------------------------------------------------------------------
# dominance frontiers


@pytest.mark.parametrize(
    ("make", "frontiers"),
    [
        (diamond, {"entry": set(), "then": {"join"}, "else": {"join"}, "join": set()}),
        (while_loop, {"entry": set(), "head": {"head"}, "body": {"head"}, "exit": set()}),
        (
            nested_loops,
            {
                "entry": set(),
                "outer": {"outer"},
                "inner": {"inner", "outer"},
                "ibody": {"inner"},
                "olatch": {"outer"},
                "exit": set(),
            },
        ),
        (
            two_latches,
            {"entry": set(), "head": {"head"}, "a": {"head"}, "b": {"head"}, "exit": set()},
        ),
        (with_unreachable, {"entry": set(), "exit": set()}),
        (irreducible, {"entry": set(), "a": {"b"}, "b": {"a"}, "exit": set()}),
        (self_loop, {"entry": set(), "s": {"s"}, "exit": set()}),
    ],
)
def test_dominance_frontiers(make: Callable[[], CFG], frontiers: dict[str, set[str]]) -> None:
    g = make()
    assert g.names(cfg.dominance_frontiers(g.f)) == frontiers


# --------------------------------------------------------------------------------------------
# loops


def test_while_loop() -> None:
    g = while_loop()
    (loop,) = cfg.natural_loops(g.f)
    assert loop.header is g["head"]
    assert loop.blocks == {g["head"], g["body"]}
    assert loop.latches == (g["body"],)
    assert loop.parent is None and loop.depth == 1
    assert g["body"] in loop and g["exit"] not in loop
    assert g.names(cfg.loop_depth(g.f)) == {"entry": 0, "head": 1, "body": 1, "exit": 0}


def test_nested_loops() -> None:
    g = nested_loops()
    outer, inner = cfg.natural_loops(g.f)
    assert outer.header is g["outer"]
    assert g.names(outer.blocks) == {"outer", "inner", "ibody", "olatch"}
    assert outer.latches == (g["olatch"],)
    assert (outer.parent, outer.depth) == (None, 1)
    assert inner.header is g["inner"]
    assert g.names(inner.blocks) == {"inner", "ibody"}
    assert inner.latches == (g["ibody"],)
    assert inner.parent is outer and inner.depth == 2
    assert g.names(cfg.loop_depth(g.f)) == {
        "entry": 0,
        "outer": 1,
        "inner": 2,
        "ibody": 2,
        "olatch": 1,
        "exit": 0,
    }


def test_loops_are_listed_outermost_first_then_by_header_position() -> None:
    """entry -> l1; l1 -> l1, l2; l2 -> m, exit; m -> n, l2; n -> n, m: loops at l1 (alone),
    l2 (containing m's loop, containing n's self-loop)"""
    g = CFG("entry", "l1", "l2", "m", "n", "exit")
    g.jump("entry", "l1")
    g.branch("l1", "l1", "l2")
    g.branch("l2", "m", "exit")
    g.branch("m", "n", "l2")
    g.branch("n", "n", "m")
    g.ret("exit")
    loops = cfg.natural_loops(g.f)
    assert [(g.names(lp.header), lp.depth) for lp in loops] == [
        ("l1", 1),
        ("l2", 1),
        ("m", 2),
        ("n", 3),
    ]
    l1, l2, m, n = loops
    assert l1.parent is None and l2.parent is None
    assert m.parent is l2 and n.parent is m
    assert g.names(l2.blocks) == {"l2", "m", "n"}
    assert g.names(m.blocks) == {"m", "n"}
    assert cfg.loop_depth(g.f)[g["n"]] == 3


def test_loop_with_two_latches_is_one_loop() -> None:
    g = two_latches()
    (loop,) = cfg.natural_loops(g.f)
    assert loop.header is g["head"]
    assert g.names(loop.blocks) == {"head", "a", "b"}
    assert loop.latches == (g["a"], g["b"])
    assert loop.depth == 1


def test_self_loop() -> None:
    g = self_loop()
    (loop,) = cfg.natural_loops(g.f)
    assert loop.header is g["s"]
    assert loop.blocks == {g["s"]}
    assert loop.latches == (g["s"],)
    assert g.names(cfg.loop_depth(g.f)) == {"entry": 0, "s": 1, "exit": 0}


def test_irreducible_cycle_is_not_a_natural_loop() -> None:
    g = irreducible()
    assert cfg.natural_loops(g.f) == []
    assert set(cfg.loop_depth(g.f).values()) == {0}


def test_cycles_among_unreachable_blocks_are_not_loops() -> None:
    g = with_unreachable()
    assert cfg.natural_loops(g.f) == []
    assert cfg.loop_depth(g.f)[g["dead"]] == 0


def test_unreachable_block_jumping_into_a_loop_is_not_part_of_it() -> None:
    g = CFG("entry", "head", "body", "dead", "exit")
    g.jump("entry", "head")
    g.branch("head", "body", "exit")
    g.jump("body", "head")
    g.jump("dead", "body")
    g.ret("exit")
    (loop,) = cfg.natural_loops(g.f)
    assert g.names(loop.blocks) == {"head", "body"}


def test_loops_compare_by_the_identity_of_their_blocks() -> None:
    g = nested_loops()
    assert cfg.natural_loops(g.f) == cfg.natural_loops(g.f)
    assert len(set(cfg.natural_loops(g.f)) | set(cfg.natural_loops(g.f))) == 2
    assert cfg.natural_loops(nested_loops().f) != cfg.natural_loops(g.f)
