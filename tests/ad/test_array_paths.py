"""The quick paths of the elementwise and matmul rules for real arrays (the shapes a network
uses), against central finite differences through whole functions: the same value twice
(``r * r``), a row or a column broadcast into a matrix, scalars and integer arrays mixed
with float arrays, ``tanh``, and products of matrices whose buffers are reused call after
call."""

from __future__ import annotations

import numpy as np
import pytest

from gibbous.api import build_rrule, value_and_gradient
from tests.ad.conftest import check

INTS = np.arange(12).reshape(4, 3)


def squared(x: np.ndarray) -> float:
    r = x - 1.0
    return float(np.sum(r * r)) + float(np.sum(x * x * x))


def row_and_column(x: np.ndarray, row: np.ndarray, col: np.ndarray) -> float:
    y = np.tanh(x + row) * col - row / (col + 3.0)
    return float(np.sum(y * INTS + 2.5 * y))


def scalars_and_ints(x: np.ndarray, s: float) -> float:
    y = (x * s - INTS) / (s + x * x + 1.0)
    z = s - y + INTS * s
    return float(np.sum(z * z))


def layer(w: np.ndarray, b: np.ndarray, x: np.ndarray) -> float:
    h = np.tanh(x @ w + b)
    return float(np.sum((h @ w.T) * x))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


def test_a_value_times_itself(rng: np.random.Generator) -> None:
    check(squared, rng.standard_normal((4, 3)))


def test_rows_and_columns_broadcast(rng: np.random.Generator) -> None:
    check(row_and_column, rng.standard_normal((4, 3)), rng.standard_normal(3),
          rng.uniform(0.5, 1.5, (4, 1)))  # fmt: skip


def test_scalars_and_integer_arrays(rng: np.random.Generator) -> None:
    rule, _, grads = check(scalars_and_ints, rng.standard_normal((4, 3)), 0.7)
    assert type(grads[2]) is float


def test_matrix_products_reuse_buffers_and_stay_right(rng: np.random.Generator) -> None:
    w, b, x = rng.standard_normal((3, 5)), rng.standard_normal(5), rng.standard_normal((4, 3))
    rule = build_rrule(layer, w, b, x)
    first = value_and_gradient(rule, layer, w, b, x)
    for _ in range(3):  # warm calls: the same numbers, fresh gradient arrays each time
        again = value_and_gradient(rule, layer, w, b, x)
        assert again[0] == first[0]
        for g, h in zip(again[1][1:], first[1][1:]):
            np.testing.assert_array_equal(g, h)
            assert g is not h
    check(layer, w, b, x, rule=rule)
    # Other shapes through the same rule: the buffers are made again.
    check(layer, rng.standard_normal((3, 5)), b, rng.standard_normal((6, 3)), rule=rule)


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a @ b


def products_in_a_loop(a: np.ndarray, b: np.ndarray) -> float:
    # The inner rule runs twice before either pullback: two depths, two fdata buffers.
    total = 0.0
    for k in range(2):
        total += float(np.sum(np.tanh(product(a, b * (k + 1.0)))))
    return total


def test_large_products_recycle_their_fdata_after_their_pullback(rng: np.random.Generator) -> None:
    # A 128 x 128 float64 result (128 KiB) is large: its fdata goes back to the pool after its
    # pullback, and the two pending calls of the loop must not share one.
    a, b = rng.standard_normal((128, 3)) / 4, rng.standard_normal((3, 128)) / 4
    rule, y, grads = check(products_in_a_loop, a, b)
    for _ in range(2):
        y2, grads2 = value_and_gradient(rule, products_in_a_loop, a, b)
        assert y2 == y
        for g, h in zip(grads2[1:], grads[1:]):
            np.testing.assert_array_equal(g, h)
