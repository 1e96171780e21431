"""One rule, or one ``gibbous.grad(f)``, used from several threads at once gives every thread
the gradient it would get alone (each thread gets its own rule state; docs/ad.md, "Threads")."""

from __future__ import annotations

import gc
import math
import sys
import threading
import typing as t
import weakref

import numpy as np
import pytest

import gibbous
from gibbous.api import build_rrule, value_and_gradient, value_and_pullback
from gibbous.tangents import pool
from gibbous.rules.stateful import PullbackOrderError
from gibbous.tangents.model import NO_TANGENT, CoDual, zero_fdatas

THREADS = 4
CALLS = 150


def scalar_loop(x: np.ndarray) -> float:
    s = 0.0
    for i in range(len(x)):
        s += math.sin(x[i]) * x[i]
    return s


def in_place(a: np.ndarray, b: np.ndarray) -> float:
    a += b  # written into the caller's array, and restored by the reverse pass
    a *= np.tanh(b)
    return float(np.sum(a * a))


def matmul_into(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> float:
    np.matmul(A, B, out=C)
    return float(np.sum(C * C))


def large(x: np.ndarray) -> float:
    # Results of 160 KB: their fdata comes from the shared pool and goes back to it.
    return float(np.sum(np.tanh(x) * x))


def cube(x: float) -> float:
    return x * x * x


def sine_times(x: float) -> float:
    return math.sin(x) * x


HELPERS = [cube, sine_times, scalar_loop]


def dynamic(x: float, k: int) -> float:
    # The callee is known only at run time: its program is built while the rule runs.
    return HELPERS[k](x) + x


@pytest.fixture
def contention() -> t.Iterator[None]:
    """Thread switches as often as the interpreter allows: races show within a few calls."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _run_threads(work: t.Callable[[int], None], n: int = THREADS) -> None:
    """``work(k)`` on ``n`` threads started together; re-raises the first failure."""
    start = threading.Barrier(n)
    failures: list[BaseException] = []

    def run(k: int) -> None:
        try:
            start.wait()
            work(k)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            failures.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


def _alone(rule: t.Any, f: t.Any, args: tuple[t.Any, ...]) -> tuple[t.Any, t.Any]:
    copies = tuple(np.copy(a) for a in args)
    return value_and_gradient(rule, f, *copies)


def _same(got: tuple[t.Any, t.Any], want: tuple[t.Any, t.Any]) -> bool:
    (y, grads), (y0, grads0) = got, want
    pairs = [(y, y0)] + [(g, h) for g, h in zip(grads[1:], grads0[1:])]
    return all(np.allclose(a, b, rtol=1e-12, atol=1e-12) for a, b in pairs)


@pytest.mark.parametrize(
    "f, make",
    [
        (scalar_loop, lambda rng: (rng.standard_normal(12),)),
        (in_place, lambda rng: (rng.standard_normal(5), rng.standard_normal(5))),
        (
            matmul_into,
            lambda rng: (
                rng.standard_normal((3, 4)),
                rng.standard_normal((4, 2)),
                rng.standard_normal((3, 2)),
            ),
        ),
        (large, lambda rng: (rng.standard_normal(20_000),)),
    ],
    ids=["scalar_loop", "in_place", "matmul_into", "large"],
)
def test_one_rule_shared_by_threads(f: t.Any, make: t.Any, contention: None) -> None:
    rng = np.random.default_rng(7)
    cases = [make(rng) for _ in range(THREADS * 3)]
    want = [_alone(build_rrule(f, *args), f, args) for args in cases]
    rule = build_rrule(f, *cases[0])
    wrong: list[int] = []

    def work(k: int) -> None:
        for i in range(CALLS):
            j = (k + THREADS * i) % len(cases)
            if not _same(_alone(rule, f, cases[j]), want[j]):
                wrong.append(j)

    _run_threads(work)
    assert not wrong, f"{len(wrong)} wrong gradients out of {THREADS * CALLS}"


def test_one_grad_shared_by_threads_from_its_first_call(contention: None) -> None:
    rng = np.random.default_rng(8)
    xs = [rng.standard_normal(9) for _ in range(THREADS * 3)]
    want = [gibbous.grad(scalar_loop)(x) for x in xs]
    g = gibbous.grad(scalar_loop)  # built by whichever thread comes first
    wrong: list[int] = []

    def work(k: int) -> None:
        for i in range(CALLS):
            j = (k + THREADS * i) % len(xs)
            if not np.allclose(g(xs[j]), want[j], rtol=1e-12, atol=1e-12):
                wrong.append(j)

    _run_threads(work)
    assert not wrong, f"{len(wrong)} wrong gradients out of {THREADS * CALLS}"
    assert len(g.rules) == 1  # type: ignore[attr-defined]


def test_programs_built_at_run_time_by_threads_at_once(contention: None) -> None:
    want = [3 * 0.7**2 + 1, math.cos(0.7) * 0.7 + math.sin(0.7) + 1]
    for _ in range(3):  # a new rule each round: every thread's first calls build at once
        rule = build_rrule(dynamic, 0.7, 0)
        wrong: list[int] = []

        def work(k: int) -> None:
            for i in range(20):
                j = (k + i) % 2
                _, grads = value_and_gradient(rule, dynamic, 0.7, j)
                if not math.isclose(grads[1], want[j], rel_tol=1e-12):
                    wrong.append(j)

        _run_threads(work)
        assert not wrong


def test_a_stateful_library_rule_shared_by_threads(contention: None) -> None:
    rng = np.random.default_rng(9)
    cases = [
        (rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal((3, 2)))
        for _ in range(THREADS * 3)
    ]
    ybars = [rng.standard_normal((3, 2)) for _ in cases]

    def once(rule: t.Any, j: int) -> tuple[t.Any, ...]:
        A, B, C = (np.copy(a) for a in cases[j])
        value, grads = value_and_pullback(rule, ybars[j], np.matmul, A, B, out=C)
        return value, grads[1], grads[2]

    want = [once(build_rrule(np.matmul, *cases[j][:2], out=cases[j][2]), j) for j in range(12)]
    A, B, C = cases[0]
    rule = build_rrule(np.matmul, A, B, out=C)
    wrong: list[int] = []

    def work(k: int) -> None:
        for i in range(CALLS):
            j = (k + THREADS * i) % len(cases)
            got = once(rule, j)
            if not all(np.allclose(a, b, rtol=1e-12) for a, b in zip(got, want[j])):
                wrong.append(j)

    _run_threads(work)
    assert not wrong, f"{len(wrong)} wrong results out of {THREADS * CALLS}"


def _forward(rule: t.Any, f: t.Any, args: tuple[t.Any, ...], kw: dict[str, t.Any]) -> t.Any:
    fdatas = zero_fdatas(f, *args, *kw.values())
    n = len(args)
    coduals = list(map(CoDual, (*args, *kw.values()), fdatas[1:]))
    named = dict(zip(kw, coduals[n:]))
    y, pullback = rule(CoDual(f, fdatas[0]), *coduals[:n], **named)
    return y, pullback, fdatas


def test_the_pool_gives_a_buffer_to_one_thread_at_a_time(contention: None) -> None:
    pool.clear()
    shape, dtype = (20_000,), np.dtype(np.float64)
    nbytes = 20_000 * 8

    def work(k: int) -> None:
        for _ in range(300):
            a = pool.zeros(shape, dtype, nbytes)
            assert not a.any()
            a[:] = k
            assert (a == k).all()  # no other thread wrote into it meanwhile
            pool.release(a)

    try:
        _run_threads(work)
        assert pool.held() == nbytes * sum(map(len, pool._free.values())) <= pool.LIMIT_BYTES
    finally:
        pool.clear()


class _Turns:
    """Runs steps of several threads in one given order: ``turn(k)`` waits for step ``k``."""

    def __init__(self) -> None:
        self.done = 0
        self.cond = threading.Condition()

    def turn(self, k: int) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: self.done >= k, timeout=10):
                raise TimeoutError(f"step {k} never came")

    def next(self) -> None:
        with self.cond:
            self.done += 1
            self.cond.notify_all()


@pytest.mark.parametrize("library", [False, True], ids=["derived", "library"])
@pytest.mark.parametrize("b_first", [True, False], ids=["pullback_b_first", "pullback_a_first"])
def test_forward_a_forward_b_then_both_pullbacks(library: bool, b_first: bool) -> None:
    """The low-level API across threads: A forward, B forward, then B's pullback and A's (or
    A's and B's): each thread's calls pair up with its own pullbacks."""
    rng = np.random.default_rng(10)
    inputs = [
        (rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal((3, 2)))
        for _ in range(2)
    ]
    ybar = rng.standard_normal((3, 2))

    def build(args: tuple[t.Any, ...]) -> t.Any:
        if library:
            return build_rrule(np.matmul, *args[:2], out=args[2])
        return build_rrule(matmul_into, *args)

    def call(rule: t.Any, args: tuple[t.Any, ...]) -> t.Any:
        A, B, C = args
        if library:
            return _forward(rule, np.matmul, (A, B), {"out": C})
        return _forward(rule, matmul_into, (A, B, C), {})

    def finish(y: t.Any, pullback: t.Any, fdatas: t.Any) -> list[np.ndarray]:
        if library:
            np.add(y.fdata, ybar, out=y.fdata)
            pullback(NO_TANGENT)
        else:
            pullback(1.0)
        return [np.copy(fd) for fd in fdatas[1:3]]

    want = []
    for args in inputs:
        copies = tuple(np.copy(a) for a in args)
        want.append(finish(*call(build(copies), copies)))
    rule = build(inputs[0])
    turns = _Turns()
    pullback_at = {"a": 3 if b_first else 2, "b": 2 if b_first else 3}
    got: dict[str, list[np.ndarray]] = {}

    def thread(name: str, forward_at: int, args: tuple[t.Any, ...]) -> t.Callable[[int], None]:
        def work(_: int) -> None:
            turns.turn(forward_at)
            pending = call(rule, args)
            turns.next()
            turns.turn(pullback_at[name])
            try:
                got[name] = finish(*pending)
            finally:
                turns.next()

        return work

    works = [thread("a", 0, inputs[0]), thread("b", 1, inputs[1])]
    _run_threads(lambda k: works[k](k), n=2)
    for name, expected in zip("ab", want):
        assert all(np.allclose(g, e, rtol=1e-12) for g, e in zip(got[name], expected)), name


def test_a_thread_state_goes_with_its_thread() -> None:
    rule = build_rrule(scalar_loop, np.ones(3))
    rule(*_coduals(scalar_loop, np.ones(3)))  # this thread's: the rule's own state
    made: list[t.Any] = []

    def work(_: int) -> None:
        _, pullback = rule(*_coduals(scalar_loop, np.ones(3)))
        made.append(weakref.ref(pullback.rule.forward))  # of the instance made for it
        assert rule.depth == 1 and pullback.rule is not rule

    _run_threads(work, n=1)
    gc.collect()
    assert made[0]() is None
    assert rule.depth == 1  # this thread's pending call, untouched


def test_the_state_of_a_finished_first_thread_passes_on_reset() -> None:
    rule = build_rrule(scalar_loop, np.ones(3))
    pending: list[t.Any] = []

    def first(_: int) -> None:
        pending.append(rule(*_coduals(scalar_loop, np.ones(3)))[1])
        assert pending[0].rule is rule  # the first thread to call uses the rule's own state

    _run_threads(first, n=1)
    assert rule.depth == 0  # this thread has no call pending
    x = np.array([0.5, 1.0, 2.0])
    _, grads = value_and_gradient(rule, scalar_loop, x)
    assert np.allclose(grads[1], np.sin(x) + x * np.cos(x))
    with pytest.raises(PullbackOrderError):
        pending[0](1.0)  # the abandoned call of the finished thread refuses to run


def _coduals(f: t.Any, *args: t.Any) -> tuple[t.Any, ...]:
    fdatas = zero_fdatas(f, *args)
    return (CoDual(f, fdatas[0]), *map(CoDual, args, fdatas[1:]))
