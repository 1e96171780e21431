"""Library code differentiated through its own source or its registered rule, called directly
and wrapped, against the library's own derivatives and closed forms."""

from __future__ import annotations

import functools

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
