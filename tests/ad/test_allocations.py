"""Warm calls allocate nothing for bookkeeping (tracemalloc, NumPy's domain)."""

from __future__ import annotations

import gc
import tracemalloc
import typing as t

import numpy as np

from gibbous.api import build_rrule
from gibbous.reverse.derived import DerivedRule
from gibbous.tangents.model import CoDual, zero_fdatas

NUMPY_DOMAIN = np.lib.tracemalloc_domain


def stateful_only(A: np.ndarray, B: np.ndarray, C: np.ndarray, D: np.ndarray) -> float:
    np.matmul(A, B, out=C)
    C += D
    C *= D
    np.add(C, D, out=C)
    return float(C.sum())


def numpy_bytes() -> int:
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.DomainFilter(inclusive=True, domain=NUMPY_DOMAIN)]
    )
    return sum(stat.size for stat in snapshot.statistics("filename"))


def held_between_forward_and_reverse(
    rule: DerivedRule, f: t.Callable[..., t.Any], args: tuple[t.Any, ...]
) -> int:
    fdatas = zero_fdatas(f, *args)
    coduals = [CoDual(x, d) for x, d in zip((f, *args), fdatas)]
    for _ in range(3):  # warm up: states and stacks reach their size
        _, pullback = rule(*coduals)
        pullback(1.0)
    gc.collect()
    tracemalloc.start()
    try:
        before = numpy_bytes()
        _, pullback = rule(*coduals)
        between = numpy_bytes()
        pullback(1.0)
    finally:
        tracemalloc.stop()
    return between - before


def primal_held(f: t.Callable[..., t.Any], args: tuple[t.Any, ...]) -> int:
    f(*args)
    gc.collect()
    tracemalloc.start()
    try:
        before = numpy_bytes()
        result = f(*args)
        after = numpy_bytes()
    finally:
        tracemalloc.stop()
    del result
    return after - before


def test_warm_stateful_program_holds_no_numpy_memory_between_passes() -> None:
    rng = np.random.default_rng(0)
    args = tuple(rng.standard_normal(s) for s in [(16, 8), (8, 12), (16, 12), (16, 12)])
    rule = build_rrule(stateful_only, *args)
    saved = [a.copy() for a in args]
    assert held_between_forward_and_reverse(rule, stateful_only, args) <= primal_held(
        stateful_only, tuple(a.copy() for a in args)
    )
    assert all(np.array_equal(a, s) for a, s in zip(args, saved))


def test_warm_tape_list_does_not_grow() -> None:
    def looped(x: np.ndarray, n: int) -> None:
        for _ in range(n):
            x *= 1.5

    x = np.ones(3)
    rule = build_rrule(looped, x, 5)
    fdatas = zero_fdatas(looped, x, 5)
    coduals = [CoDual(v, d) for v, d in zip((looped, x, 5), fdatas)]
    _, pullback = rule(*coduals)
    pullback(None)
    items = rule.tape.items
    size = len(items)
    for _ in range(3):
        _, pullback = rule(*coduals)
        pullback(None)
    assert rule.tape.items is items and len(items) == size
