"""Programs that call strided views, np.r_/np.c_, nan_to_num, np.gradient, partition,
rollaxis, append, insert, delete and unique, differentiated end to end: ``gibbous.grad`` and
``value_and_gradient(build_rrule(f, ...))`` against central finite differences."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided, sliding_window_view

import gibbous
from gibbous.api import build_rrule, value_and_gradient
from tests.ad.conftest import check


def convolve(x: np.ndarray, w: np.ndarray) -> float:
    step = x.strides[0]
    windows = as_strided(x, (x.shape[0] - w.shape[0] + 1, w.shape[0]), (step, step))
    return float(np.sum(np.tanh(windows @ w)))


def strided_rows(x: np.ndarray) -> float:
    rows = as_strided(x, (3, 2), (2 * x.strides[0], x.strides[0]))  # distinct elements
    return float(np.sum(rows[:, 0] * rows[:, 1]))


def pooled(image: np.ndarray) -> float:
    means = sliding_window_view(image, (2, 2)).mean(axis=(-1, -2))
    return float(np.sum(means**3) + np.max(sliding_window_view(image[0], 3), axis=-1).sum())


def joined(a: np.ndarray, b: np.ndarray) -> float:
    y = np.r_[a, 0.5, b * 2.0]
    z = np.c_[a, b]
    rows = np.r_["0,2", a, b]
    return float(np.sum(y**2) + np.sum(z[:, 0] * z[:, 1] ** 2) + np.sum(rows[1] * np.r_[0:3]))


def slopes(f: np.ndarray, x: np.ndarray) -> float:
    g = np.gradient(f, x, edge_order=2)
    gx, gy = np.gradient(np.outer(f, f), 0.5)
    return float(np.sum(g**2) + np.sum(gx * gy) + np.sum(np.gradient(f) ** 3))


def partitioned(x: np.ndarray) -> float:
    smallest = np.partition(x, 2)[:3]
    moved = np.rollaxis(np.reshape(x, (2, 3, 1)), 1)
    return float(np.sum(smallest**2) + np.sum(moved[0] * np.arange(2.0)[:, None]))


def edited(x: np.ndarray) -> float:
    longer = np.append(x, x[0] * 2.0)
    inserted = np.insert(longer, [1, 3], 0.5 * x[1])
    shorter = np.delete(inserted, 2)
    rows = np.insert(np.reshape(x[:4], (2, 2)), 1, x[4], axis=0)
    return float(np.sum(shorter**2) + np.sum(np.delete(rows, 0, axis=1) ** 3))


def uniques(x: np.ndarray) -> float:
    # x[:2] appears twice: whichever occurrence gets the cotangent, x does
    values, counts = np.unique(np.r_[x, x[:2]], return_counts=True)
    return float(np.sum(values**3 * counts))


def cleaned(x: np.ndarray) -> float:
    return float(np.sum(np.nan_to_num(x * 2.0, nan=0.5) ** 2))


Draw = t.Callable[[np.random.Generator], tuple[t.Any, ...]]
PROGRAMS: list[tuple[t.Callable[..., float], Draw]] = [
    (convolve, lambda r: (r.standard_normal(7), r.standard_normal(3))),
    (strided_rows, lambda r: (r.standard_normal(6),)),
    (pooled, lambda r: (r.standard_normal((3, 4)),)),
    (joined, lambda r: (r.standard_normal(3), r.standard_normal(3))),
    (slopes, lambda r: (r.standard_normal(5), np.cumsum(r.uniform(0.5, 1.5, 5)))),
    (partitioned, lambda r: ((r.permutation(6) - 2.5) * 0.3,)),
    (edited, lambda r: (r.standard_normal(5),)),
    (uniques, lambda r: ((r.permutation(5) - 2.0) * 0.4,)),
    (cleaned, lambda r: (r.standard_normal(4),)),
]


@pytest.mark.parametrize("f, draw", PROGRAMS, ids=[f.__name__ for f, _ in PROGRAMS])
def test_programs_match_finite_differences(
    f: t.Callable[..., float], draw: Draw, rng: np.random.Generator
) -> None:
    args = draw(rng)
    rule, _, grads = check(f, *args, rng=rng, rtol=1e-5, atol=1e-7)
    by_grad = gibbous.grad(f, argnums=tuple(range(len(args))))(*args)
    for g, h in zip(grads[1:], by_grad, strict=True):
        np.testing.assert_allclose(h, g, rtol=1e-12, atol=1e-12)
    _, again = value_and_gradient(rule, f, *args)  # a warm second call of the same rule
    for g, h in zip(grads, again):
        if isinstance(g, np.ndarray):
            np.testing.assert_allclose(h, g, rtol=1e-12, atol=1e-12)


def with_fills(x: np.ndarray, fill: float) -> float:
    y = np.nan_to_num(x, nan=fill, posinf=2.0 * fill, neginf=-fill)
    return float(np.sum(y**2 * np.arange(1.0, 1.0 + y.size)))


def test_nan_to_num_of_data_with_nan_and_inf() -> None:
    """The finite entries and the fill value against central differences (the others have
    none: moving a nan or an inf changes nothing)."""
    x, fill = np.array([0.5, np.nan, -1.5, np.inf, 2.0, -np.inf]), 0.75
    rule = build_rrule(with_fills, x, fill)
    value, (_, gx, gfill) = value_and_gradient(rule, with_fills, x, fill)
    assert value == with_fills(x, fill)
    h = 1e-6
    for i in np.flatnonzero(np.isfinite(x)):
        e = np.zeros_like(x)
        e[i] = h
        expected = (with_fills(x + e, fill) - with_fills(x - e, fill)) / (2 * h)
        np.testing.assert_allclose(gx[i], expected, rtol=1e-6)
    assert not np.any(gx[~np.isfinite(x)])
    expected = (with_fills(x, fill + h) - with_fills(x, fill - h)) / (2 * h)
    np.testing.assert_allclose(gfill, expected, rtol=1e-6)
    np.testing.assert_allclose(gibbous.grad(with_fills, argnums=1)(x, fill), gfill, rtol=1e-12)


def test_a_strided_view_reaching_outside_its_array_is_refused() -> None:
    def outside(x: np.ndarray) -> float:
        return float(np.sum(as_strided(x, (4, 3), (16, 8))))

    with pytest.raises(TypeError, match="outside x's elements"):
        gibbous.grad(outside)(np.ones(6))
