"""scipy.linalg's solvers and matrix builders, and numpy.linalg.lstsq, as twins of the NumPy
functions they compute (gibbous.library.scipy.linalg_twins, gibbous.library.linalg.
least_squares), in the modes listed, against central differences; the values SciPy gives."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest
import scipy.linalg as sla

import gibbous
from gibbous.ir.exceptions import GibbousError
from gibbous.library.linalg import twins as least_squares
from gibbous.library.scipy import linalg_twins as tw
from tests.library.programs import check_mode

RNG = np.random.default_rng(1)
A = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
S = A + A.T + 6 * np.eye(3)
B = RNG.standard_normal((5, 3))
W = RNG.standard_normal((3, 3))
X = RNG.standard_normal(9)

F = t.Callable[[np.ndarray], t.Any]


def _m(x: np.ndarray) -> t.Any:
    return x.reshape(3, 3) * 0.1


def _tall(x: np.ndarray) -> t.Any:
    return B + 0.1 * np.outer(np.ones(5), x[:3])


CASES: list[tuple[str, F, str]] = [
    ("solve", lambda x: np.sum(sla.solve(A + _m(x), x[:3])), "rfh"),
    ("solve sym (upper triangle)", lambda x: np.sum(sla.solve(S + _m(x), x[:3], assume_a="sym")), "rfh"),
    ("solve pos lower", lambda x: np.sum(sla.solve(S + _m(x), x[:3], assume_a="pos", lower=True)), "rfh"),
    ("solve transposed", lambda x: np.sum(sla.solve(A + _m(x), x[:3], transposed=True)), "rfh"),
    ("solve matrix b", lambda x: np.sum(sla.solve(A, x.reshape(3, 3)) * W), "rfh"),
    ("inv", lambda x: np.sum(sla.inv(A + _m(x)) * W), "rfh"),
    ("det", lambda x: sla.det(A + _m(x)), "rfh"),
    ("lstsq", lambda x: np.sum(sla.lstsq(_tall(x), np.arange(5.0))[0] * W[0]), "rfh"),
    ("lstsq residues", lambda x: sla.lstsq(_tall(x), np.arange(5.0))[1], "rfh"),
    ("numpy lstsq", lambda x: np.sum(np.linalg.lstsq(_tall(x), np.arange(5.0))[0] * W[0]), "rfh"),
    ("pinv", lambda x: np.sum(sla.pinv(_tall(x)) * np.arange(15.0).reshape(3, 5)), "rfh"),
    ("block_diag", lambda x: np.sum(sla.block_diag(x.reshape(3, 3), x[:2], 2.0) * np.arange(30.0).reshape(5, 6)), "rfh"),
    ("toeplitz", lambda x: np.sum(sla.toeplitz(x[:3], x[3:7]) * np.arange(12.0).reshape(3, 4)), "rfh"),
    ("toeplitz of c", lambda x: np.sum(sla.toeplitz(x[:3]) * W), "rfh"),
    ("circulant", lambda x: np.sum(sla.circulant(x[:3]) * W), "rfh"),
]  # fmt: skip
MODES = [(name, f, m, m in modes) for name, f, modes in CASES for m in "rfh"]


@pytest.mark.parametrize("name, f, mode, works", MODES, ids=[f"{n}-{m}" for n, _, m, _ in MODES])
def test_derivatives(name: str, f: F, mode: str, works: bool) -> None:
    check_mode(name, f, X, mode, works)


@pytest.mark.parametrize(
    "twin, real, args, kwargs",
    [
        (tw.solve, sla.solve, (A, X[:3]), {}),
        (tw.solve, sla.solve, (S, X[:3]), {"assume_a": "sym"}),
        (tw.solve, sla.solve, (S + np.tril(W, -1), X[:3]), {"assume_a": "sym", "lower": True}),
        (tw.solve, sla.solve, (np.triu(A) + np.tril(W, -1), X[:3]), {"assume_a": "upper triangular"}),
        (tw.solve, sla.solve, (A, W), {"transposed": True}),
        (tw.inv, sla.inv, (A,), {}),
        (tw.det, sla.det, (A,), {}),
        (tw.pinv, sla.pinv, (B,), {}),
        (tw.block_diag, sla.block_diag, (A, X[:2], 2.0), {}),
        (tw.toeplitz, sla.toeplitz, (X[:3], X[3:7]), {}),
        (tw.toeplitz, sla.toeplitz, (X[:4],), {}),
        (tw.circulant, sla.circulant, (X[:4],), {}),
    ],
)
def test_twins_give_scipys_values(twin: t.Any, real: t.Any, args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> None:
    np.testing.assert_allclose(twin(*args, **kwargs), real(*args, **kwargs), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("b", [np.arange(5.0), np.arange(10.0).reshape(5, 2)], ids=["1-d", "2-d"])
@pytest.mark.parametrize("a", [B, B[:2]], ids=["tall", "wide"])
def test_lstsq_gives_lapacks_solution_and_residues(a: np.ndarray, b: np.ndarray) -> None:
    b = b[: a.shape[0]]
    for twin, real in [(tw.lstsq, sla.lstsq), (least_squares.numpy_lstsq, np.linalg.lstsq)]:
        got, expected = twin(a, b), real(a, b)
        for g, e in zip(got, expected):
            assert np.shape(g) == np.shape(e)
            np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_check_finite_raises_as_scipy_does() -> None:
    bad = A.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        gibbous.grad(lambda x: sla.det(bad + x[0]))(X)


def test_pinv_with_atol_is_refused_by_name() -> None:
    with pytest.raises(GibbousError, match="atol"):
        gibbous.grad(lambda x: np.sum(sla.pinv(_tall(x), atol=1e-3)))(X)
