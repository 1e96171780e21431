"""``gibbous.prepare_gradient``: gradients written into arrays the prepared gradient keeps, so
that a warm call of an allocation-free rule allocates no NumPy memory (issue 14, point 6)."""

from __future__ import annotations

import threading
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.testing.allocations import measure

Array = np.ndarray[t.Any, t.Any]


def seed(A: Array, B: Array, C: Array) -> float:
    np.matmul(A, B, out=C)
    return float(np.sum(C))


def mlp(W1: Array, b1: Array, W2: Array, X: Array) -> float:
    return float(np.sum(np.tanh(X @ W1 + b1) @ W2) ** 2)


def central(f: t.Callable[..., float], args: list[Array], k: int, h: float = 1e-6) -> Array:
    out = np.zeros_like(args[k])
    for i in np.ndindex(out.shape):
        up = [a.copy() for a in args]
        down = [a.copy() for a in args]
        up[k][i] += h
        down[k][i] -= h
        out[i] = (f(*up) - f(*down)) / (2 * h)
    return out


def seed_args(rng: np.random.Generator) -> list[Array]:
    return [rng.standard_normal((4, 6)), rng.standard_normal((6, 3)), np.zeros((4, 3))]


def test_gradients_match_value_and_gradient_and_finite_differences() -> None:
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((5, 8)), rng.standard_normal(8), rng.standard_normal((8, 2)),
            rng.standard_normal((3, 5))]  # fmt: skip
    prepared = gibbous.prepare_gradient(mlp, *args)
    rule = gibbous.build_rrule(mlp, *args)
    for _ in range(3):
        y, grads = prepared(*args)
        y2, grads2 = gibbous.value_and_gradient(rule, mlp, *args)
        assert y == y2
        for got, want in zip(grads[1:], grads2[1:]):
            np.testing.assert_array_equal(got, want)
    for k in range(3):
        np.testing.assert_allclose(grads[1 + k], central(mlp, args, k), rtol=1e-6, atol=1e-9)


def test_the_arrays_are_its_own_and_the_next_call_overwrites_them() -> None:
    rng = np.random.default_rng(1)
    A, B, C = seed_args(rng)
    prepared = gibbous.prepare_gradient(seed, A, B, C)
    _, first = prepared(A, B, C)
    dA = first[1].copy()
    _, second = prepared(2 * A, B, C)
    assert second[1] is first[1]  # the same array, written again
    np.testing.assert_allclose(second[2], central(seed, [2 * A, B, C], 1))
    np.testing.assert_allclose(dA, central(seed, [A, B, C], 0))
    assert prepared.held() == A.nbytes + B.nbytes + C.nbytes


def test_new_shapes_get_new_arrays() -> None:
    rng = np.random.default_rng(2)
    A, B, C = seed_args(rng)
    prepared = gibbous.prepare_gradient(seed, A, B, C)
    _, first = prepared(A, B, C)
    A2, B2, C2 = rng.standard_normal((2, 5)), rng.standard_normal((5, 3)), np.zeros((2, 3))
    _, second = prepared(A2, B2, C2)
    assert second[1] is not first[1] and second[1].shape == (2, 5)
    np.testing.assert_allclose(second[1], central(seed, [A2, B2, C2], 0))


def test_a_warm_call_of_an_allocation_free_rule_allocates_nothing() -> None:
    rng = np.random.default_rng(3)
    A, B, C = seed_args(rng)
    prepared = gibbous.prepare_gradient(seed, A, B, C)
    rule = gibbous.build_rrule(seed, A, B, C)
    held = measure(lambda mark: prepared(A, B, C))
    fresh = measure(lambda mark: gibbous.value_and_gradient(rule, seed, A, B, C))
    assert held.allocated == 0, held.describe()
    assert fresh.allocated >= A.nbytes + B.nbytes + C.nbytes  # what the prepared one saves


def rosenbrock(x: Array) -> float:
    return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def mlp_bias(W1: Array, b1: Array, W2: Array, b2: Array, X: Array) -> float:
    return float(np.sum((np.tanh(X @ W1 + b1) @ W2 + b2) ** 2))


@pytest.mark.parametrize("n", [50, 40_000])  # small arrays, and large ones (the pool's size)
def test_array_programs_allocate_nothing_warm(n: int) -> None:
    """Issue 14's zero-byte targets: Rosenbrock and a tanh MLP with biases, through
    ``prepare_gradient``.  Every primal result goes into its site's buffer, every temporary of
    the reverse pass into its site's scratch, the gradients into the prepared arrays; the
    values stay those of finite differences."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n)
    prepared = gibbous.prepare_gradient(rosenbrock, x)
    held = measure(lambda mark: prepared(x))
    assert held.allocated == 0, held.describe()
    if n < 100:
        y = rng.standard_normal(n)
        np.testing.assert_allclose(prepared(y)[1][1], central(rosenbrock, [y], 0), rtol=1e-6)
    args = [rng.standard_normal(s) for s in ((8, 16), (16,), (16, 3), (3,), (5, 8))]
    prepared = gibbous.prepare_gradient(mlp_bias, *args)
    held = measure(lambda mark: prepared(*args))
    assert held.allocated == 0, held.describe()
    _, grads = prepared(*args)
    for k in range(4):
        np.testing.assert_allclose(grads[k + 1], central(mlp_bias, args, k), rtol=1e-6, atol=1e-8)


def test_threads_get_arrays_of_their_own() -> None:
    rng = np.random.default_rng(4)
    A, B, C = seed_args(rng)
    prepared = gibbous.prepare_gradient(seed, A, B, C)
    _, mine = prepared(A, B, C)
    theirs: list[t.Any] = []
    thread = threading.Thread(target=lambda: theirs.append(prepared(A, B, C)[1]))
    thread.start()
    thread.join()
    assert theirs[0][1] is not mine[1]
    np.testing.assert_array_equal(theirs[0][1], mine[1])


def test_a_non_scalar_result_is_refused_clearly() -> None:
    def vector(x: Array) -> Array:
        return x * 2.0

    x = np.ones(3)
    prepared = gibbous.prepare_gradient(vector, x)
    with pytest.raises(TypeError, match="returned ndarray; use value_and_pullback"):
        prepared(x)


def test_a_gradient_passed_back_as_an_argument_is_not_zeroed() -> None:
    """``step(A, dA_previous)``: the array the last call returned is an argument now; it must
    keep its values and get a gradient right by finite differences."""

    def bilinear(A: Array, B: Array) -> float:
        return float(np.sum(np.sin(A) * B))

    rng = np.random.default_rng(5)
    A, B = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    prepared = gibbous.prepare_gradient(bilinear, A, B)
    _, (_, dA, _) = prepared(A, B)
    kept = dA.copy()
    for args in ([A, dA], [dA, A]):
        before = [a.copy() for a in args]
        y, grads = prepared(*args)
        np.testing.assert_array_equal(args[0], before[0])  # the arguments are as they were
        np.testing.assert_array_equal(args[1], before[1])
        assert y == pytest.approx(bilinear(*before))
        for k in range(2):
            np.testing.assert_allclose(grads[1 + k], central(bilinear, before, k), rtol=1e-6)
    np.testing.assert_array_equal(kept, np.cos(A) * B)  # what the first call returned
    # Aliased arguments (a gradient and a view of it) share fdata, as value_and_gradient's do.
    aliased = [dA, dA.view()]
    before = [a.copy() for a in aliased]
    _, grads = prepared(*aliased)
    np.testing.assert_array_equal(dA, before[0])
    rule = gibbous.build_rrule(bilinear, *before)
    _, expected = gibbous.value_and_gradient(rule, bilinear, before[0], before[0].view())
    np.testing.assert_allclose(grads[1], expected[1], rtol=1e-14)
