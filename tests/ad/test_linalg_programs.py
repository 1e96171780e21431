"""Whole programs calling eigen-decompositions, complex SVD and QR, and matrix norms: their
gradients by ``gibbous.grad`` and by ``value_and_gradient(build_rrule(f, x), f, x)`` agree
with each other and with central finite differences."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

import gibbous
from tests.ad.conftest import check

WEIGHTS = np.linspace(0.5, 2.0, 9).reshape(3, 3)


def eig_loss(a: np.ndarray) -> float:
    w, v = np.linalg.eig(a)
    return float(np.sum(np.abs(w)) + np.sum(np.abs(v) ** 2 * WEIGHTS))


def eig_fields(a: np.ndarray) -> float:
    result = np.linalg.eig(a)
    w = result.eigenvalues
    return float(np.sum(np.real(w * w)) + np.sum(np.imag(result.eigenvectors) ** 2))


def eigvals_loss(a: np.ndarray) -> float:
    w = np.linalg.eigvals(a)
    return float(np.sum(np.real(w) ** 2) - np.prod(np.abs(w)))


def svd_loss(a: np.ndarray) -> float:
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    low_rank = (u[:, :2] * s[:2]) @ vh[:2]
    return float(np.sum(s**3) + np.sum(np.abs(u) ** 2) * s[0] + np.sum(np.abs(low_rank)))


def singular_values(a: np.ndarray) -> float:
    s = np.linalg.svd(a, compute_uv=False)
    return float(np.sum(np.log(s)))


def qr_loss(a: np.ndarray) -> float:
    q, r = np.linalg.qr(a)
    return float(np.sum(np.real(q) * np.imag(q)) + np.sum(np.real(r * r)))


def eigh_upper(a: np.ndarray) -> float:
    w, v = np.linalg.eigh(a, UPLO="U")
    return float(np.sum(w * w) + np.sum(np.abs(v) ** 2 * WEIGHTS))


def eigvalsh_upper(a: np.ndarray) -> float:
    return float(np.sum(np.exp(np.linalg.eigvalsh(a, "U"))))


def matrix_norms(a: np.ndarray) -> float:
    fro = np.linalg.norm(a, axis=(0, 1))
    spectral = np.linalg.norm(a, 2) - np.linalg.norm(a, -2)
    return float(fro + spectral + np.linalg.norm(a, "nuc") + np.linalg.norm(a, np.inf))


def stacked_norms(x: np.ndarray) -> float:
    fro = np.linalg.norm(x, axis=(-2, -1))
    nuc = np.linalg.norm(x, ord="nuc", axis=(-2, -1), keepdims=True)
    ones = np.linalg.norm(x, ord=1, axis=(-1, -2))
    return float(np.sum(fro * fro) + np.sum(nuc) + np.sum(ones))


def _complex(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


PROGRAMS: list[tuple[t.Callable[[np.ndarray], float], t.Callable[[np.random.Generator], t.Any]]]
PROGRAMS = [
    (eig_loss, lambda rng: rng.standard_normal((3, 3))),
    (eig_loss, lambda rng: _complex(rng, 3, 3)),
    (eig_fields, lambda rng: _complex(rng, 3, 3)),
    (eigvals_loss, lambda rng: rng.standard_normal((3, 3))),
    (eigvals_loss, lambda rng: _complex(rng, 4, 4)),
    (svd_loss, lambda rng: _complex(rng, 4, 3)),
    (svd_loss, lambda rng: _complex(rng, 3, 4)),
    (singular_values, lambda rng: _complex(rng, 3, 5)),
    (qr_loss, lambda rng: _complex(rng, 4, 3)),
    (eigh_upper, lambda rng: rng.standard_normal((3, 3))),
    (eigh_upper, lambda rng: _complex(rng, 3, 3)),
    (eigvalsh_upper, lambda rng: _complex(rng, 3, 3)),
    (matrix_norms, lambda rng: rng.standard_normal((3, 4))),
    (matrix_norms, lambda rng: _complex(rng, 4, 3)),
    (stacked_norms, lambda rng: rng.standard_normal((2, 3, 4))),
    (stacked_norms, lambda rng: _complex(rng, 2, 4, 3)),
]


@pytest.mark.parametrize(
    "f, make", PROGRAMS, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(PROGRAMS)]
)
def test_program(
    f: t.Callable[[np.ndarray], float],
    make: t.Callable[[np.random.Generator], t.Any],
    rng: np.random.Generator,
) -> None:
    x = make(rng)
    _, y, (_, dx) = check(f, x, rng=rng)
    assert isinstance(dx, np.ndarray) and dx.dtype == x.dtype and dx.shape == x.shape
    np.testing.assert_allclose(gibbous.grad(f)(x), dx, rtol=1e-10, atol=1e-12)


def test_the_triangle_not_read_gets_nothing(rng: np.random.Generator) -> None:
    a = rng.standard_normal((3, 3))
    for f in (eigh_upper, eigvalsh_upper):
        g = gibbous.grad(f)(a)
        assert np.all(np.tril(g, -1) == 0) and np.all(g[np.triu_indices(3, 1)] != 0)
