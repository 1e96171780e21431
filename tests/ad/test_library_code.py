"""Library code differentiated through its own source or its registered rule, called directly
and wrapped, against the library's own derivatives and closed forms."""

from __future__ import annotations

import functools
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.api import build_rrule, value_and_gradient
from tests.rules.fd import check_gradient

optimize = pytest.importorskip("scipy.optimize")
special = pytest.importorskip("scipy.special")

X = np.array([0.5, 1.5, -0.3, 2.0, 1.1])


def wrapped_rosen(x: np.ndarray) -> float:
    return float(optimize.rosen(x))


def bound(*args: object, **kwargs: object) -> float:
    return float(optimize.rosen(*args, **kwargs))


@pytest.mark.parametrize(
    "f", [optimize.rosen, wrapped_rosen, bound], ids=["direct", "wrapped", "varargs"]
)
def test_rosen_against_rosen_der(f: object) -> None:
    # SciPy's rosen runs its array-API dispatch (a try, lru_cache'd helpers) before the sum.
    rule = build_rrule(f, X)
    for x in (X, X[::-1].copy()):
        y, (_, dx) = value_and_gradient(rule, f, x)
        assert y == pytest.approx(optimize.rosen(x))
        np.testing.assert_allclose(dx, optimize.rosen_der(x), rtol=1e-12)


@pytest.mark.parametrize("wrap", [False, True])
def test_logsumexp_direct_and_wrapped(wrap: bool) -> None:
    b = np.array([1.0, 2.0, 0.5, 1.0, 3.0])

    def wrapped(x: np.ndarray, b: np.ndarray) -> float:
        return float(special.logsumexp(x, b=b))

    if wrap:
        y, (_, dx, db) = value_and_gradient(build_rrule(wrapped, X, b), wrapped, X, b)
        check_gradient(wrapped, (X, b), (dx, db), np.random.default_rng(0))
    else:  # the keyword's gradient through a partial
        p = functools.partial(special.logsumexp, b=b)
        y, (dp, dx) = value_and_gradient(build_rrule(p, X), p, X)
        db = dp.fields["keywords"].fields["b"]
    w = b * np.exp(X)
    assert y == pytest.approx(np.log(np.sum(w)))
    np.testing.assert_allclose(dx, w / np.sum(w))
    np.testing.assert_allclose(db, np.exp(X) / np.sum(w))


@functools.lru_cache(maxsize=None)
def _scale(n: int) -> float:
    return 1.0 / n


@functools.cache
def _cubed(x: float) -> float:
    return x * x * x


def test_memoised_functions_are_the_functions_they_wrap() -> None:
    def f(x: float) -> float:
        return _cubed(x) * _scale(4)

    assert gibbous.grad(f)(2.0) == pytest.approx(3.0)
    assert gibbous.grad(_cubed)(1.5) == pytest.approx(3 * 1.5**2)


stats = pytest.importorskip("scipy.stats")
_X = np.array([-0.7, 0.2, 1.3])
_PHI = np.exp(-0.5 * _X**2) / np.sqrt(2 * np.pi)  # the standard normal density at _X
_CDF = special.ndtr(_X)


def _closed_forms() -> list[t.Any]:
    nu = 3.0
    return [
        ("norm.logpdf", stats.norm.logpdf, -_X),
        ("norm.pdf", stats.norm.pdf, -_X * _PHI),
        ("norm.cdf", stats.norm.cdf, _PHI),
        ("norm.logcdf", stats.norm.logcdf, _PHI / _CDF),
        ("t.logpdf", functools.partial(stats.t.logpdf, df=nu), -(nu + 1) * _X / (nu + _X**2)),
    ]


@pytest.mark.parametrize(
    ("name", "method", "derivative"), _closed_forms(), ids=[c[0] for c in _closed_forms()]
)
@pytest.mark.parametrize("wrap", [False, True], ids=["direct", "wrapped"])
def test_distribution_methods_direct_and_wrapped(
    name: str, method: t.Any, derivative: np.ndarray, wrap: bool
) -> None:
    def wrapped(x: np.ndarray) -> float:
        return float(np.sum(method(x)))

    if wrap:
        dx = gibbous.grad(wrapped)(_X)
    else:  # the method itself: its result is an array, pulled back with ones
        rule = build_rrule(method, _X)
        _, (_, dx) = gibbous.value_and_pullback(rule, np.ones(3), method, _X)
    np.testing.assert_allclose(dx, derivative, rtol=1e-10)


def test_multivariate_normal_logpdf_direct_and_wrapped() -> None:
    mean = np.array([0.1, -0.2, 0.3])
    cov = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])
    expected = -np.linalg.solve(cov, _X - mean)

    def wrapped(x: np.ndarray) -> float:
        return float(stats.multivariate_normal.logpdf(x, mean, cov))

    np.testing.assert_allclose(gibbous.grad(wrapped)(_X), expected, rtol=1e-10)
    f = stats.multivariate_normal.logpdf
    _, (_, dx, dmean, dcov) = value_and_gradient(build_rrule(f, _X, mean, cov), f, _X, mean, cov)
    np.testing.assert_allclose(dx, expected, rtol=1e-10)
    np.testing.assert_allclose(dmean, -expected, rtol=1e-10)
