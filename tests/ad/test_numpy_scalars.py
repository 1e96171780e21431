"""NumPy ufuncs on NumPy scalars (``np.sin(x[i])``) are written out in place, as ``math.sin``
is, with NumPy's values at singular points (issue 14, point 4)."""

from __future__ import annotations

import math
import typing as t
import warnings

import numpy as np
import pytest

import gibbous
from gibbous.inspect import rule_table


def loop(x: np.ndarray) -> float:
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sin(x[i]) * x[i] + np.arctan2(x[i], 2.0) - np.exp(-x[i])
    return s


def roots(x: np.ndarray) -> float:
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sqrt(x[i]) + np.log1p(x[i]) + np.power(x[i], 2)
    return s


def of_scalar(a: float) -> float:
    return float(np.tanh(a) * np.cos(a) + np.hypot(a, 3.0))


def central(f: t.Callable[[np.ndarray], float], x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)])


@pytest.mark.parametrize("f", [loop, roots])
def test_gradient_matches_finite_differences(f: t.Callable[[np.ndarray], float]) -> None:
    x = np.random.default_rng(3).uniform(0.2, 1.5, 6)
    rule = gibbous.build_rrule(f, x)
    for _ in range(2):  # warm too
        y, grads = gibbous.value_and_gradient(rule, f, x)
        assert y == pytest.approx(f(x))
        np.testing.assert_allclose(grads[1], central(f, x), rtol=1e-6, atol=1e-8)


def test_ufunc_sites_on_numpy_scalars_are_inline() -> None:
    rows = rule_table(loop, np.ones(3))
    kinds = {(r.callee, r.kind) for r in rows if r.callee.startswith("numpy.")}
    assert ("numpy.sin", "inline") in kinds
    assert ("numpy.arctan2", "inline") in kinds
    assert ("numpy.exp", "inline") in kinds
    assert all(kind == "inline" for _, kind in kinds)


def test_singular_point_gives_numpy_values_without_warnings() -> None:
    """``sqrt`` at 0: the primal is 0, the derivative inf, as the general rule gives."""
    x = np.array([0.0, 1.0])
    rule = gibbous.build_rrule(roots, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, grads = gibbous.value_and_gradient(rule, roots, x)
    assert grads[1][0] == math.inf
    assert grads[1][1] == pytest.approx(0.5 + 0.5 + 2.0)


@pytest.mark.parametrize("a", [0.7, np.float64(0.7)])
def test_a_scalar_argument_keeps_its_class(a: float) -> None:
    rule = gibbous.build_rrule(of_scalar, a)
    _, grads = gibbous.value_and_gradient(rule, of_scalar, a)
    h = 1e-6
    assert grads[1] == pytest.approx((of_scalar(a + h) - of_scalar(a - h)) / (2 * h), rel=1e-7)
    assert type(grads[1]) in (float, np.float64)


def signs(x: np.ndarray) -> float:
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:  # an element read for a comparison only: no derivative flows back
            s += x[i] ** 2
        elif int(x[i] * 10) % 2:  # through int(): none either
            s -= np.exp(x[i])
    return s


def test_an_element_read_only_for_a_comparison_saves_nothing() -> None:
    """``x[i] > 0``: the read runs as the primal runs it, with no record and no reverse
    arithmetic (the loop's reverse has no ``+ 0.0`` into the fdata); the gradient is right."""
    x = np.random.default_rng(5).uniform(-1, 1, 12)
    rule = gibbous.build_rrule(signs, x)
    source = rule.program.description.source
    assert "+ 0.0" not in source
    _, g = gibbous.value_and_gradient(rule, signs, x)
    h = 1e-6
    fd = np.array([(signs(x + h * e) - signs(x - h * e)) / (2 * h) for e in np.eye(12)])
    np.testing.assert_allclose(g[1], fd, rtol=1e-6, atol=1e-8)
