"""Memory stays bounded under misuse: forward calls whose pullbacks are dropped, rules built
and dropped, ``grad`` re-created in a loop, a ``grad`` fed many signatures, and recursion as
deep as the primal goes.

Each loop runs 10 000 times and compares what is held after 1 000 iterations with what is held
after 10 000: a leak of even a few bytes per iteration shows as kilobytes.  Nothing is timed.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.cache import ENTRIES
from gibbous.rules.stateful import PullbackOrderError
from gibbous.tangents.model import CoDual, NoTangent

ITERATIONS = 10_000
CHECKPOINT = 1_000


def held_bytes(step: t.Callable[[], object]) -> tuple[int, int]:
    """Bytes traced as held after ``CHECKPOINT`` and after ``ITERATIONS`` calls of ``step``."""
    tracemalloc.start()
    try:
        marks = []
        for i in range(1, ITERATIONS + 1):
            step()
            if i in (CHECKPOINT, ITERATIONS):
                gc.collect()
                marks.append(tracemalloc.get_traced_memory()[0])
        return marks[0], marks[1]
    finally:
        tracemalloc.stop()


def loss(x: np.ndarray) -> float:
    return float(np.sum(np.sin(x) * x))


def product(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> float:
    np.matmul(a, b, out=c)  # a stateful rule: saved copies and buffers per pending call
    return float(np.sum(c * c))


def test_forward_calls_whose_pullbacks_are_dropped_hold_constant_memory() -> None:
    x = np.linspace(0.0, 1.0, 50)
    rule = gibbous.build_rrule(loss, x)

    def forward_only() -> None:
        rule(CoDual(loss, NoTangent()), CoDual(x, np.zeros_like(x)))

    first, last = held_bytes(forward_only)
    assert last - first < 16 * 1024, f"held {last - first} more bytes after {ITERATIONS} calls"
    assert len(rule.tape.items) < 1_000  # a call's worth or two, not 10 000 calls' worth
    # And the rule still gives the right gradient.
    _, (_, dx) = gibbous.value_and_gradient(rule, loss, x)
    np.testing.assert_allclose(dx, np.cos(x) * x + np.sin(x))


def test_a_stateful_rule_frees_the_states_of_dropped_calls() -> None:
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(3, 20, 20))
    rule = gibbous.build_rrule(product, a, b, c)
    tangents = [np.zeros_like(v) for v in (a, b, c)]

    def forward_only() -> None:
        rule(CoDual(product, NoTangent()), *map(CoDual, (a, b, c), tangents))

    first, last = held_bytes(forward_only)
    # A leak here is a 20x20 matrix (3.2 KB) or more per call: 29 MB over the run.
    assert last - first < 64 * 1024, f"held {last - first} more bytes after {ITERATIONS} calls"
    _, (_, da, db, _) = gibbous.value_and_gradient(rule, product, a, b, c)
    np.testing.assert_allclose(da, 2 * (a @ b) @ b.T)
    np.testing.assert_allclose(db, 2 * a.T @ (a @ b))


def test_reset_frees_the_tape_and_the_states() -> None:
    rng = np.random.default_rng(1)
    a, b, c = rng.normal(size=(3, 4, 4))
    rule = gibbous.build_rrule(product, a, b, c)
    tangents = [np.zeros_like(v) for v in (a, b, c)]
    pullbacks = [rule(CoDual(product, NoTangent()), *map(CoDual, (a, b, c), tangents))[1]]
    pullbacks.append(rule(CoDual(product, NoTangent()), *map(CoDual, (a, b, c), tangents))[1])
    assert rule.depth == 2
    rule.reset()
    assert rule.depth == 0 and len(rule.tape) == 0 and rule.tape.items == []
    with pytest.raises(PullbackOrderError):
        pullbacks[-1](NoTangent())


def f_to_rebuild(x: float) -> float:
    return x * x + 2.0 * x


# Run in a process of its own: blocks are counted process-wide, and a thread another test left
# running in this one (a Dask worker's) allocates as it pleases between the two counts.
_REBUILD = """
import gc, linecache, sys
import gibbous
from gibbous.ir import runtime
from tests.test_memory import f_to_rebuild, ITERATIONS, CHECKPOINT

lines_before = sum(name.startswith("<gibbous:") for name in linecache.cache)
blocks = []
for i in range(1, ITERATIONS + 1):
    if i % 2:
        gibbous.build_rrule(f_to_rebuild, 1.5)
    else:
        assert abs(gibbous.grad(f_to_rebuild)(1.5) - 5.0) < 1e-12
    if i in (CHECKPOINT, ITERATIONS):
        gc.collect()
        blocks.append(sys.getallocatedblocks())
gc.collect()
lines_after = sum(name.startswith("<gibbous:") for name in linecache.cache)
print(blocks[1] - blocks[0], lines_after - lines_before, len(runtime._paths))
"""


def test_rules_built_and_dropped_and_grad_recreated_hold_constant_memory() -> None:
    """Each iteration builds a rule (and, through ``grad``, a rule and a cache): the generated
    source's ``linecache`` entry, the names the IR registered, the placeholders of the AD pass
    must all go with the rule.  Counted in allocated blocks (tracemalloc would make 10 000
    builds slow); a leak of one object per build is 9 000 blocks."""
    import os
    import subprocess
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", _REBUILD], capture_output=True, text=True, check=True, env=env,
        cwd=root,
    )  # fmt: skip
    grown, lines, paths = map(int, out.stdout.split())
    assert grown < 2_000, f"{grown} more blocks held"
    assert lines <= 2
    assert paths < 1_000


def test_grad_keeps_a_bounded_number_of_rules_and_the_buffers_of_one() -> None:
    def total(x: t.Any) -> float:
        return float(np.sum(x * x))

    g = gibbous.grad(total)
    # Signatures differ in dtype and number of dimensions: one rule each.
    inputs = [np.ones((2,) * n, dtype=d) for n in range(1, 5) for d in (np.float64, np.float32)]
    inputs += [np.ones((2,) * n) for n in range(5, 9)]
    for x in inputs:
        np.testing.assert_allclose(g(x), 2 * x, rtol=1e-6)
    assert len(inputs) > ENTRIES and len(g.rules) == ENTRIES
    # Only the rule used last keeps its tape: the others were reset when another took over.
    last = list(g.rules.values())
    assert all(len(rule.tape.items) == 0 for rule in last[:-1])
    assert len(last[-1].tape.items) > 0  # (so the check above is not vacuous)


def countdown(x: float, n: int) -> float:
    if n == 0:
        return x
    return 1.0 + countdown(x, n - 1) * 1.0


def test_recursion_reaches_half_the_recursion_limit() -> None:
    depth = sys.getrecursionlimit() // 2
    value, (_, dx, _) = gibbous.value_and_gradient(
        gibbous.build_rrule(countdown, 1.5, depth), countdown, 1.5, depth
    )
    assert value == pytest.approx(1.5 + depth) and dx == pytest.approx(1.0)


def test_recursion_deeper_than_the_primal_goes_is_a_recursion_error() -> None:
    limit = sys.getrecursionlimit()
    with pytest.raises(RecursionError):
        countdown(1.5, limit)  # the primal cannot either
    rule = gibbous.build_rrule(countdown, 1.5, 3)
    with pytest.raises(RecursionError) as info:
        gibbous.value_and_gradient(rule, countdown, 1.5, limit)
    notes = getattr(info.value, "__notes__", [])  # repeats collapsed, as Python's tracebacks do
    assert len(notes) <= 3 and "repeated" in notes[-1], notes
    assert sys.getrecursionlimit() == limit  # the headroom given back
    _, (_, dx, _) = gibbous.value_and_gradient(rule, countdown, 1.5, 30)  # still usable
    assert dx == pytest.approx(1.0)
