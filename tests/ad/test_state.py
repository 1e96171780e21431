"""Rules keep their state across calls: reuse, pending calls, exceptions, caching."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.api import build_rrule, value_and_gradient
from gibbous.reverse.derived import DerivedRule, LazyDerivedRule
from gibbous.rules.stateful import PullbackOrderError
from gibbous.rules.registry import Context, DefaultContext, primitive
from gibbous.tangents.model import NO_TANGENT, CoDual, zero_fdatas
from tests.ad.conftest import check


def loss(W: np.ndarray, x: np.ndarray) -> float:
    h = np.tanh(W @ x)
    return float(np.sum(h * h))


def expected_loss_gradient(W: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = np.tanh(W @ x)
    g = 2 * h * (1 - h * h)
    return np.outer(g, x), W.T @ g


def test_many_calls_with_other_values_and_shapes(rng: np.random.Generator) -> None:
    rule = build_rrule(loss, rng.standard_normal((2, 2)), rng.standard_normal(2))
    for m, n in [(2, 2), (5, 3), (1, 7), (5, 3), (2, 2)]:
        W, x = rng.standard_normal((m, n)), rng.standard_normal(n)
        _, (_, dW, dx) = value_and_gradient(rule, loss, W, x)
        eW, ex = expected_loss_gradient(W, x)
        assert np.allclose(dW, eW) and np.allclose(dx, ex)


def accumulate_in_place(a: np.ndarray, b: np.ndarray, n: int) -> float:
    for _ in range(n):
        a += b  # a stateful rule, run n times before its pullbacks
        a *= 0.5
    return float(np.sum(a * b))


def test_stateful_rules_in_a_loop_across_calls_and_shapes(rng: np.random.Generator) -> None:
    rules: dict[int, DerivedRule] = {}
    for shape, n in [((3,), 2), ((3,), 5), ((2, 4), 3), ((7,), 1), ((2, 2), 2)]:
        a, b = rng.standard_normal(shape), rng.standard_normal(shape)
        rules[a.ndim] = check(accumulate_in_place, a, b, n, rule=rules.get(a.ndim), rng=rng)[0]


def _forward(rule: DerivedRule, f: t.Any, *args: object) -> tuple[t.Any, t.Any, tuple[t.Any, ...]]:
    fdatas = zero_fdatas(f, *args)
    y, pullback = rule(CoDual(f, fdatas[0]), *map(CoDual, args, fdatas[1:]))
    return y, pullback, fdatas


def test_forward_forward_pullback_pullback(rng: np.random.Generator) -> None:
    W1, x1 = rng.standard_normal((3, 2)), rng.standard_normal(2)
    W2, x2 = rng.standard_normal((4, 5)), rng.standard_normal(5)
    rule = build_rrule(loss, W1, x1)
    y1, pb1, fd1 = _forward(rule, loss, W1, x1)
    y2, pb2, fd2 = _forward(rule, loss, W2, x2)
    assert rule.depth == 2
    with pytest.raises(PullbackOrderError):
        pb1(1.0)  # the second call's pullback must run first
    pb2(1.0)
    pb1(1.0)
    assert rule.depth == 0
    for (W, x), fd in [((W1, x1), fd1), ((W2, x2), fd2)]:
        eW, ex = expected_loss_gradient(W, x)
        assert np.allclose(fd[1], eW) and np.allclose(fd[2], ex)


def power(x: float, n: int) -> float:
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


def test_recursion_builds_one_instance_per_level_once() -> None:
    rule = build_rrule(power, 1.5, 3)
    value_and_gradient(rule, power, 1.5, 3)

    def levels(r: DerivedRule) -> int:
        lazy = [c for c in r.children if isinstance(c, LazyDerivedRule)]
        inner = lazy[0].instance if lazy else None
        return 1 + (levels(inner) if inner is not None else 0)

    assert levels(rule) == 4
    instances = []
    r: DerivedRule | None = rule
    while r is not None:
        instances.append(r)
        lazy = [c for c in r.children if isinstance(c, LazyDerivedRule)]
        r = lazy[0].instance if lazy else None
    value_and_gradient(rule, power, 2.0, 3)
    r = rule
    for previous in instances:  # the same objects serve the next call
        assert r is previous
        lazy = [c for c in r.children if isinstance(c, LazyDerivedRule)]
        r = lazy[0].instance if lazy else None
    # programs are shared between levels: one compilation
    assert len({id(i.program) for i in instances}) == 1


def guarded(a: np.ndarray, b: np.ndarray, limit: float) -> float:
    total = 0.0
    for i in range(4):
        a += b
        total = total + float(np.sum(a * a))
        if total > limit:
            raise ValueError("too large")
    return total


def test_exception_in_the_forward_pass_leaves_the_rule_usable(rng: np.random.Generator) -> None:
    a, b = rng.standard_normal(3), rng.standard_normal(3)
    rule = check(guarded, a, b, 1e9, rng=rng)[0]
    with pytest.raises(ValueError, match="too large"):
        value_and_gradient(rule, guarded, a.copy(), b, 0.0)  # raises in the first iteration
    for _ in range(2):
        check(guarded, a, b, 1e9, rule=rule, rng=rng)
    # A pending pullback of a call made before the failure refuses to run on stale stacks.
    y, pullback, _ = _forward(rule, guarded, a.copy(), b, 1e9)
    with pytest.raises(ValueError):
        _forward(rule, guarded, a.copy(), b, 0.0)
    with pytest.raises(PullbackOrderError):
        pullback(1.0)
    check(guarded, a, b, 1e9, rule=rule, rng=rng)


def fragile(x: float) -> float:
    return x * 2.0


FAIL = {"reverse": False}
CTX = Context("fragile-tests", parent=DefaultContext)


@primitive(fragile, "f64", ctx=CTX)
def _fragile_rrule(f: CoDual[t.Any, t.Any], x: CoDual[t.Any, t.Any]) -> t.Any:
    def pullback(dy: float) -> tuple[t.Any, ...]:
        if FAIL["reverse"]:
            raise RuntimeError("pullback failed")
        return NO_TANGENT, 2.0 * dy

    return CoDual(fragile(x.primal), NO_TANGENT), pullback


def uses_fragile(x: float, n: int) -> float:
    acc = x
    for _ in range(n):
        acc = fragile(acc) * x
    return acc


def test_exception_in_the_reverse_pass_leaves_the_rule_usable() -> None:
    rule = build_rrule(uses_fragile, 0.5, 3, ctx=CTX)
    _, (_, good, _) = value_and_gradient(rule, uses_fragile, 0.5, 3)
    FAIL["reverse"] = True
    try:
        with pytest.raises(RuntimeError, match="pullback failed"):
            value_and_gradient(rule, uses_fragile, 0.5, 3)
    finally:
        FAIL["reverse"] = False
    _, (_, again, _) = value_and_gradient(rule, uses_fragile, 0.5, 3)
    assert again == good
    assert len(rule.tape) == 0


def test_grad_caches_one_rule_per_signature(rng: np.random.Generator) -> None:
    g = gibbous.grad(loss, argnums=(0, 1))
    W, x = rng.standard_normal((3, 2)), rng.standard_normal(2)
    dW, dx = g(W, x)
    eW, ex = expected_loss_gradient(W, x)
    assert np.allclose(dW, eW) and np.allclose(dx, ex)
    g(rng.standard_normal((4, 4)), rng.standard_normal(4))
    assert len(g.rules) == 1  # type: ignore[attr-defined]
    g(rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal(2).astype(np.float32))
    assert len(g.rules) == 2  # type: ignore[attr-defined]
    assert np.allclose(gibbous.grad(power)(2.0, 3), 12.0)


def test_warm_calls_reuse_their_tape(rng: np.random.Generator) -> None:
    def looped(x: float, n: int) -> float:
        acc = 0.0
        for i in range(n):
            acc = acc * x + i
        return acc

    rule = build_rrule(looped, 0.5, 10)
    value_and_gradient(rule, looped, 0.5, 10)
    items = rule.tape.items
    size = len(items)
    for _ in range(3):
        value_and_gradient(rule, looped, 0.3, 10)
    assert rule.tape.items is items and len(items) == size
    # Nothing pending holds the last call's data.
    assert all(v is None for v in items)


def _superseding(rule: t.Any, f: t.Any, *args: t.Any) -> None:
    """Forward 1, pullback 1, forward 2, pullback 1 again: refused before it touches anything."""
    fdatas = zero_fdatas(f, *args)
    _, first = rule(CoDual(f, fdatas[0]), *map(CoDual, args, fdatas[1:]))
    first(1.0)
    before = [np.copy(a) for a in args if isinstance(a, np.ndarray)]
    _, second = rule(CoDual(f, fdatas[0]), *map(CoDual, args, fdatas[1:]))
    after_forward = [np.copy(a) for a in args if isinstance(a, np.ndarray)]
    with pytest.raises(PullbackOrderError, match="took its place"):
        first(1.0)
    now = [a for a in args if isinstance(a, np.ndarray)]
    assert all(np.array_equal(a, b) for a, b in zip(now, after_forward))
    second(1.0)  # the pending one still runs, and restores what its forward changed
    assert all(np.array_equal(a, b) for a, b in zip(now, before))


def matmul_into(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> float:
    np.matmul(A, B, out=C)
    return float(np.sum(C))


def test_a_superseded_pullback_is_refused(rng: np.random.Generator) -> None:
    # Regression: it ran on the later call's tape and state (and wrote into the user's C).
    A, B = rng.standard_normal((3, 2)), rng.standard_normal((2, 4))
    C = rng.standard_normal((3, 4))
    _superseding(build_rrule(matmul_into, A, B, C), matmul_into, A, B, C)
    W, x = rng.standard_normal((2, 3)), rng.standard_normal(3)
    _superseding(build_rrule(loss, W, x), loss, W, x)
    # The stateful rule itself, as an entry point (a LibraryRule around a StatefulRRule).
    library = build_rrule(np.matmul, A, B, out=C)
    fd = zero_fdatas(np.matmul, A, B, C)

    def call() -> t.Any:
        operands = (CoDual(A, fd[1]), CoDual(B, fd[2]))
        return library(CoDual(np.matmul, fd[0]), *operands, out=CoDual(C, fd[3]))

    _, first = call()
    first(NO_TANGENT)
    _, second = call()
    with pytest.raises(PullbackOrderError, match="took its place"):
        first(NO_TANGENT)
    second(NO_TANGENT)
