"""Deferred outer products (``gibbous.rules.outer_sums``, ``gibbous.reverse.defer``): a
loop's ``dW += g hᵀ`` into a parameter's fdata added as one matrix product before the reverse
program returns; checked against finite differences and a hand-written gradient, and refused
wherever something could read that fdata in between."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.rules import outer_sums
from gibbous.reverse.memory import memory
from gibbous.testing.allocations import measure
from tests.test_prepared import central

Array = np.ndarray[t.Any, t.Any]

rng = np.random.default_rng(23)
STEPS = rng.standard_normal((7, 3))  # a global: inputs, no derivative


def deferred(rule: t.Any) -> int:
    """How many sites of the rule's reverse program defer (flushes before its return)."""
    return str(rule.program.description.source).count("outer_sums_flush(")


def check(f: t.Callable[..., float], args: list[Array], sites: int) -> None:
    """The gradient of ``f`` against finite differences, on three calls (nothing stale left in
    a stack), with ``sites`` deferring sites."""
    rule = gibbous.build_rrule(f, *args)
    assert deferred(rule) == sites
    for _ in range(3):
        y, grads = gibbous.value_and_gradient(rule, f, *args)
        assert y == pytest.approx(f(*args), rel=1e-13)
        for k in range(len(args)):
            np.testing.assert_allclose(grads[k + 1], central(f, args, k), rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------------------------
# The stacks


def test_a_stack_adds_the_sum_of_its_outer_products() -> None:
    sums = outer_sums.OuterSums()
    acc = rng.standard_normal((4, 3))
    want = acc.copy()
    for _ in range(20):  # past the first stacks' 8 rows: they grow
        left, right = rng.standard_normal(4), rng.standard_normal(3)
        outer_sums.add(sums, acc, left, right)
        want += np.outer(left, right)
    assert sums.n == 20 and sums.left is not None and sums.left.shape[0] >= 20
    outer_sums.flush(sums)
    np.testing.assert_allclose(acc, want, rtol=1e-13)
    assert sums.n == 0 and sums.target is None  # the caller's fdata is not held
    outer_sums.flush(sums)  # nothing pending: nothing added
    np.testing.assert_allclose(acc, want, rtol=1e-13)


def test_a_full_stack_is_added_at_once_and_memory_stays_bounded() -> None:
    m = k = 300  # a capacity of 65536 // 600 = 109 rows
    cap = outer_sums.ELEMENTS // (m + k)
    sums = outer_sums.OuterSums()
    acc = np.zeros((m, k))
    want = np.zeros((m, k))
    for _ in range(2 * cap + 5):
        left, right = rng.standard_normal(m), rng.standard_normal(k)
        outer_sums.add(sums, acc, left, right)
        want += np.outer(left, right)
    assert sums.n == 5
    assert sums.left is not None and sums.left.shape[0] == cap
    outer_sums.flush(sums)
    np.testing.assert_allclose(acc, want, rtol=1e-12, atol=1e-12)


def test_another_target_flushes_the_first() -> None:
    sums = outer_sums.OuterSums()
    a, b = np.zeros((2, 2)), np.zeros((2, 2))
    one = np.ones(2)
    outer_sums.add(sums, a, one, one)
    outer_sums.add(sums, b, one, 2 * one)
    np.testing.assert_array_equal(a, np.ones((2, 2)))  # flushed when b came
    np.testing.assert_array_equal(b, 0)
    outer_sums.flush(sums)
    np.testing.assert_array_equal(b, 2 * np.ones((2, 2)))


def test_a_target_it_cannot_stack_is_added_into_at_once() -> None:
    sums = outer_sums.OuterSums()
    acc = np.zeros((2, 2), dtype=np.float32)
    outer_sums.add(sums, acc, np.ones(2), np.ones(2))
    np.testing.assert_array_equal(acc, 1)
    assert sums.n == 0


def test_reset_forgets_what_is_pending() -> None:
    sums = outer_sums.OuterSums()
    acc = np.zeros((2, 2))
    outer_sums.add(sums, acc, np.ones(2), np.ones(2))
    sums.reset()
    outer_sums.flush(sums)
    np.testing.assert_array_equal(acc, 0)


# --------------------------------------------------------------------------------------------
# Derived rules: where the AD pass defers, the gradients are right


def rnn(W: Array, U: Array) -> float:
    h = np.zeros(W.shape[0])
    for t_ in range(STEPS.shape[0]):
        h = np.tanh(W @ h + U @ STEPS[t_])
    return float(np.sum(h**2))


def row_rnn(W: Array, U: Array) -> float:
    h = np.zeros(W.shape[0])
    for t_ in range(STEPS.shape[0]):
        h = np.tanh(h @ W + STEPS[t_] @ U + 0.1)  # v @ A
    return float(np.sum(h**2))


def same_matrix_twice(W: Array, x: Array) -> float:
    h = x
    for _ in range(4):
        h = np.sin(W @ h) + np.cos(W @ x)  # two sites into one fdata
    return float(np.sum(h))


def nested_loops(W: Array, x: Array) -> float:
    s = 0.0
    for i in range(3):
        h = x * (i + 1)
        for _ in range(2):
            h = np.tanh(W @ h)
        s += float(np.sum(h))
    return s


def test_loops_over_a_parameter_defer_and_are_right() -> None:
    W, U = rng.uniform(-0.6, 0.6, (4, 4)), rng.uniform(-0.6, 0.6, (4, 3))
    check(rnn, [W, U], 2)
    check(row_rnn, [W, rng.uniform(-0.6, 0.6, (3, 4))], 2)
    x = rng.standard_normal(4)
    check(same_matrix_twice, [W, x], 2)
    check(nested_loops, [W, x], 1)


def rnn_hand(W: Array, U: Array, steps: Array) -> tuple[Array, Array]:
    hs = [np.zeros(W.shape[0])]
    for x in steps:
        hs.append(np.tanh(W @ hs[-1] + U @ x))
    dW, dU, dh = np.zeros_like(W), np.zeros_like(U), 2.0 * hs[-1]
    for k in range(len(steps) - 1, -1, -1):
        da = dh * (1 - hs[k + 1] ** 2)
        dW += np.outer(da, hs[k])
        dU += np.outer(da, steps[k])
        dh = W.T @ da
    return dW, dU


def long_rnn(W: Array, U: Array, steps: Array) -> float:
    h = np.zeros(W.shape[0])
    for k in range(steps.shape[0]):
        h = np.tanh(W @ h + U @ steps[k])
    return float(np.sum(h**2))


def test_a_loop_longer_than_a_stack_is_right() -> None:
    """Hidden 150 and input 120: stacks of 218 and 242 rows, filled twice over by 500 steps."""
    W, U = rng.standard_normal((150, 150)) / 15, rng.standard_normal((150, 120)) / 12
    steps = rng.standard_normal((500, 120))
    rule = gibbous.build_rrule(long_rnn, W, U, steps)
    assert deferred(rule) == 2
    want = rnn_hand(W, U, steps)
    for _ in range(2):
        _, grads = gibbous.value_and_gradient(rule, long_rnn, W, U, steps)
        np.testing.assert_allclose(grads[1], want[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(grads[2], want[1], rtol=1e-10, atol=1e-12)


def twice(W: Array, U: Array) -> float:
    return rnn(W, U) + rnn(0.5 * W, U)  # the child's reverse flushes before each return


def test_a_deferring_child_called_twice() -> None:
    W, U = rng.uniform(-0.6, 0.6, (3, 3)), rng.uniform(-0.6, 0.6, (3, 3))
    check(twice, [W, U], 0)


def test_the_stacks_are_reported_and_a_warm_call_allocates_none() -> None:
    W, U = rng.uniform(-0.6, 0.6, (5, 5)), rng.uniform(-0.6, 0.6, (5, 3))
    prepared = gibbous.prepare_gradient(rnn, W, U)
    prepared(W, U)
    held = measure(lambda mark: prepared(W, U))
    assert held.allocated  # (the loop's h: new arrays, as in the primal)
    assert not [site for site in held.sites if "outer_sums" in site], held.describe()
    rule = gibbous.build_rrule(rnn, W, U)
    before = memory(rule).scratch
    gibbous.value_and_gradient(rule, rnn, W, U)
    assert memory(rule).scratch >= before + 2 * 8 * 8 * (5 + 5) // 2  # rows of h and of g


# --------------------------------------------------------------------------------------------
# Where something could read the fdata before the return, nothing is deferred


def made_inside(W: Array, x: Array) -> float:
    V = W * 2.0  # its producer's adjoint reads V's cotangent
    h = x
    for _ in range(3):
        h = np.tanh(V @ h)
    return float(np.sum(h))


def writes(W: Array, x: Array) -> float:
    h = x.copy()
    for _ in range(3):
        h[0] = 0.5  # a write: its reverse reads and resets fdata
        h = np.tanh(W @ h)
    return float(np.sum(h))


def step(W: Array, h: Array) -> Array:
    return np.tanh(W @ h)


def calls_a_function(W: Array, x: Array) -> float:
    h = x
    for _ in range(3):
        h = step(W, h) + np.sin(W @ h)  # a derived child: its pullback holds W's fdata
    return float(np.sum(h))


def through_a_view(W: Array, x: Array) -> float:
    h = x
    for _ in range(3):
        h = np.tanh(h @ W.T)  # W.T: a rule called (its pullback could hold W's fdata)
    return float(np.sum(h))


def no_loop(W: Array, x: Array) -> float:
    return float(np.sum(np.tanh(W @ x)))


@pytest.mark.parametrize("f", [made_inside, writes, calls_a_function, through_a_view, no_loop])
def test_nothing_is_deferred_where_it_could_be_read(f: t.Callable[..., float]) -> None:
    W, x = rng.uniform(-0.6, 0.6, (3, 3)), rng.standard_normal(3)
    check(f, [W, x], 0)
