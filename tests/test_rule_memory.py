"""``rule.memory()``: the NumPy memory a rule holds between calls, counted from its state."""

from __future__ import annotations

import numpy as np

import gibbous
from gibbous.tangents import pool
from gibbous.reverse.memory import held_bytes
from gibbous.tangents.model import NO_TANGENT, CoDual

A, B = np.ones((16, 32)), np.ones((32, 8))


def seed(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> float:
    np.matmul(A, B, out=C)
    return float(np.sum(C))


def seeds_in_a_loop(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> float:
    s = 0.0
    for k in range(3):  # three calls of one site pending at once: a state for each
        np.matmul(A * (k + 1.0), B, out=C)
        s += float(np.sum(C))
    return s


def test_a_stateful_site_reports_its_saved_copies_and_buffers() -> None:
    C = np.zeros((16, 8))
    rule = gibbous.build_rrule(seed, C, A, B)
    assert rule.memory().total == 0  # nothing until the first call
    gibbous.value_and_gradient(rule, seed, C, A, B)
    report = rule.memory()
    # C's primal and fdata saved, and the gradients' buffers of A and B
    assert report.states == 2 * C.nbytes + A.nbytes + B.nbytes
    assert report.tape == 0 and report.total == report.states
    assert report.pool == pool.held()
    assert "bytes held" in str(report)
    gibbous.value_and_gradient(rule, seed, C, A, B)  # warm: the same buffers, no more
    assert rule.memory() == report


def test_one_state_per_pending_depth() -> None:
    C = np.zeros((16, 8))
    rule = gibbous.build_rrule(seeds_in_a_loop, C, A, B)
    gibbous.value_and_gradient(rule, seeds_in_a_loop, C, A, B)
    assert rule.memory().states == 3 * (2 * C.nbytes + A.nbytes + B.nbytes)


def test_a_pending_call_is_counted_on_the_tape() -> None:
    x = np.ones(1000)

    def f(x: np.ndarray) -> float:
        y = np.sin(x) * x
        return float(np.sum(y * y))

    rule = gibbous.build_rrule(f, x)
    y, pullback = rule(CoDual(f, NO_TANGENT), CoDual(x, np.zeros_like(x)))
    assert rule.memory().tape >= 2 * x.nbytes  # what the reverse pass will read, at least
    pullback(1.0)
    assert rule.memory().tape == 0  # the pullback ran: the tape dropped what it held


def test_views_count_their_base_once() -> None:
    a = np.zeros(100)
    seen: set[int] = set()
    assert held_bytes([a, a[10:], (a[::2], {"k": a})], seen) == a.nbytes
    assert held_bytes(a, seen) == 0  # counted already in this report


def test_each_thread_reports_its_own_state() -> None:
    import threading

    C = np.zeros((16, 8))
    rule = gibbous.build_rrule(seed, C, A, B)
    gibbous.value_and_gradient(rule, seed, C, A, B)  # this thread: the rule's own state
    reports = []

    def other() -> None:
        reports.append(rule.memory().states)  # not called here yet: the rule's own state
        C2, A2, B2 = np.zeros((16, 8)), np.ones((16, 4)), np.ones((4, 8))
        gibbous.value_and_gradient(rule, seed, C2, A2, B2)
        reports.append(rule.memory().states)  # its own instance, its own buffers

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    one = 2 * C.nbytes + A.nbytes + B.nbytes
    assert reports == [one, 2 * C.nbytes + 16 * 4 * 8 + 4 * 8 * 8]
    assert rule.memory().states == one  # this thread's, untouched by the other's call
