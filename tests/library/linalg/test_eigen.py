"""np.linalg.eig, eigvals, eigh and eigvalsh (gibbous/library/linalg/eigen.py) against central
finite differences: real and complex, several sizes, batched; the eigenvectors' normalisation
(unit norm, largest entry real) is differentiated, so random cotangents of the eigenvectors
check it too; losses blind to the phases; what degenerate eigenvalues give."""

from __future__ import annotations

import operator
import typing as t

import numpy as np
import pytest

from gibbous import testing
from tests.library.harness import call, check, check_call, gradient, shape_of

LA = np.linalg


def _complex(rng: np.random.Generator, *shape: int) -> t.Any:
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _real_spectrum(rng: np.random.Generator, n: int, *batch: int) -> t.Any:
    """A non-symmetric real matrix with distinct real eigenvalues."""
    p = rng.standard_normal((*batch, n, n)) + n * np.eye(n)
    w = np.arange(1.0, n + 1.0) + 0.3 * rng.uniform(-1, 1, n)
    return (p * w[..., None, :]) @ np.linalg.inv(p)


def _matrices(rng: np.random.Generator) -> list[t.Any]:
    """Real (complex pairs and a real spectrum) and complex matrices, one and a stack."""
    return [
        rng.standard_normal((2, 2)),
        rng.standard_normal((3, 3)),
        rng.standard_normal((5, 5)),
        _real_spectrum(rng, 4),
        _complex(rng, 3, 3),
        _complex(rng, 4, 4),
        rng.standard_normal((2, 3, 3)),
        _complex(rng, 2, 3, 3),
    ]


def _continuous(rng: np.random.Generator) -> list[t.Any]:
    """Matrices whose eigenvectors NumPy gives as continuous functions of the matrix: complex
    ones (largest entry real and positive) and real ones with real eigenvalues.  A complex
    pair of a real matrix gets its largest entry real but of either sign, which flips under
    perturbations of rounding size (``test_sign_of_complex_pairs_of_real_matrices``)."""
    return [
        _real_spectrum(rng, 2),
        _real_spectrum(rng, 3),
        _real_spectrum(rng, 5),
        _real_spectrum(rng, 3, 2),
        _complex(rng, 2, 2),
        _complex(rng, 3, 3),
        _complex(rng, 5, 5),
        _complex(rng, 2, 3, 3),
    ]


def test_eig_with_every_cotangent(rng: np.random.Generator) -> None:
    """Random cotangents of w and V, phases included: the rule differentiates NumPy's choice."""
    for a in _continuous(rng):
        check_call(LA.eig, a, rng=rng)


def test_sign_of_complex_pairs_of_real_matrices() -> None:
    """Why the test above leaves them out: the sign NumPy gives such an eigenvector jumps
    between nearby matrices.  Not near every matrix: this stream's first one with a complex
    pair is near such a jump (most random matrices are not).  Losses blind to it are checked
    below."""
    rng = np.random.default_rng(1514760491)
    a = rng.standard_normal((3, 3))
    while np.all(np.isreal(LA.eigvals(a))):
        a = rng.standard_normal((3, 3))
    _, v = LA.eig(a)
    pair = np.flatnonzero(np.imag(LA.eigvals(a)) != 0)[0]
    signs = set()
    for _ in range(200):
        _, v1 = LA.eig(a + 1e-9 * rng.standard_normal(a.shape))
        signs.add(int(np.sign(np.real(np.vdot(v[:, pair], v1[:, pair])))))
    assert signs == {-1, 1}


def test_eigvals(rng: np.random.Generator) -> None:
    for a in _matrices(rng):
        check_call(LA.eigvals, a, rng=rng)


def _eig_loss(kind: str) -> t.Any:
    """A program of ``eig``: losses that do not depend on the eigenvectors' phases or scales."""

    def program(tape: t.Any, a: t.Any) -> t.Any:
        pair = tape.call(LA.eig, a)
        w = tape.call(operator.getitem, pair, 0)
        v = tape.call(operator.getitem, pair, 1)
        if kind == "abs w":
            return tape.call(np.sum, tape.call(np.abs, w))
        if kind == "real w":
            return tape.call(np.sum, tape.call(np.real, w))
        weights = tape.const(np.arange(1.0, 1.0 + shape_of(v)[-1]))
        if kind == "real v squared":  # blind to signs, not to phases
            squares = tape.call(np.real, tape.call(operator.mul, v, v))
        else:
            magnitudes = tape.call(np.abs, v)
            squares = tape.call(operator.mul, magnitudes, magnitudes)
        return tape.call(np.sum, tape.call(operator.mul, squares, weights))

    return program


@pytest.mark.parametrize("kind", ["abs w", "real w", "abs v squared", "real v squared"])
def test_eig_losses_blind_to_phases(kind: str, rng: np.random.Generator) -> None:
    for a in _matrices(rng):
        check(_eig_loss(kind), a, rng=rng)


def test_eig_gradient_of_the_eigenvalues_alone(rng: np.random.Generator) -> None:
    """d w_i / dA = conj(u_i v_i^T) / (u_i^T v_i) with u_i a left eigenvector: the trace's
    gradient is the identity, and eig agrees with eigvals."""
    a = rng.standard_normal((4, 4))
    (g,) = gradient(_eig_loss("real w"), a)
    np.testing.assert_allclose(g, np.eye(4), atol=1e-10)
    seed = _complex(rng, 4)
    (from_eigvals,) = gradient(call(LA.eigvals), a, seed=seed)

    def values(tape: t.Any, a: t.Any) -> t.Any:
        return tape.call(operator.getitem, tape.call(LA.eig, a), 0)

    (from_eig,) = gradient(values, a, seed=seed)
    np.testing.assert_allclose(from_eig, from_eigvals, atol=1e-10)


def test_real_spectrum_keeps_real_results(rng: np.random.Generator) -> None:
    """A real matrix with real eigenvalues: NumPy before 2.5 returns real arrays (the
    eigenvalues a view into a complex buffer), 2.5 on always complex ones; the rule returns
    what the installed NumPy does, and its fdata mirrors that layout."""
    a = _real_spectrum(rng, 3)
    w = LA.eigvals(a)
    if np.lib.NumpyVersion(np.__version__) < "2.5.0":
        assert w.dtype == np.float64 and w.strides == (16,)
    else:
        assert w.dtype == np.complex128
    check_call(LA.eigvals, a, rng=rng)
    testing.test_rule(LA.eigvals, a)  # checks the fdata's layout too
    check_call(LA.eig, a, rng=rng)


def test_eig_at_repeated_eigenvalues() -> None:
    """The eigenvectors' gradient divides by differences of eigenvalues: at a tie it is not
    finite (documented); the eigenvalues' sum still has its gradient."""
    a = np.diag([1.0, 1.0, 2.0])
    (g,) = gradient(_eig_loss("real w"), a)
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)

    def vectors(tape: t.Any, a: t.Any) -> t.Any:
        return tape.call(operator.getitem, tape.call(LA.eig, a), 1)

    with np.errstate(divide="ignore", invalid="ignore"):
        (g,) = gradient(vectors, a, seed=np.ones((3, 3)))
    assert not np.all(np.isfinite(g))


# --------------------------------------------------------------------------------------------
# eigh, eigvalsh: one triangle read


def _hermitian_losses(tape: t.Any, a: t.Any, uplo: str) -> t.Any:
    pair = tape.call(LA.eigh, a, UPLO=uplo)
    w = tape.call(operator.getitem, pair, 0)
    v = tape.call(operator.getitem, pair, 1)
    magnitudes = tape.call(np.abs, v)  # |V|: the phases drop out
    squares = tape.call(operator.mul, magnitudes, magnitudes)
    shape = shape_of(v)
    weights = tape.const(np.linspace(0.5, 2.0, int(np.prod(shape))).reshape(shape))
    weighted = tape.call(np.sum, tape.call(operator.mul, squares, weights))
    return tape.call(operator.add, weighted, tape.call(np.sum, tape.call(operator.mul, w, w)))


@pytest.mark.parametrize("uplo", ["L", "U", "u"])
@pytest.mark.parametrize("shape", [(2, 2), (3, 3), (5, 5), (2, 3, 3)], ids=str)
def test_eigh_reads_one_triangle(uplo: str, shape: t.Any, rng: np.random.Generator) -> None:
    """Any matrix, symmetric or not: the triangle read decides the eigenvalues, so finite
    differences over every entry check the gradient, zeros in the other triangle included."""
    a = rng.standard_normal(shape)
    check_call(LA.eigh, a, uplo, rng=rng)
    check(call(LA.eigh, UPLO=uplo), a, rng=rng)
    check(call(LA.eigvalsh, UPLO=uplo), a, rng=rng)
    z = _complex(rng, *shape)
    check(lambda tape, a: _hermitian_losses(tape, a, uplo), z, rng=rng)
    check(call(LA.eigvalsh, uplo), z, rng=rng)
    (g,) = gradient(call(LA.eigvalsh, UPLO=uplo), a, seed=rng.standard_normal(shape[:-1]))
    other = np.triu(g, 1) if uplo == "L" else np.tril(g, -1)
    assert np.all(other == 0) and np.any(g != 0)


def test_eigvalsh_is_eigh_without_vectors(rng: np.random.Generator) -> None:
    a = rng.standard_normal((4, 4))
    seed = rng.standard_normal(4)

    def values(tape: t.Any, a: t.Any) -> t.Any:
        return tape.call(operator.getitem, tape.call(LA.eigh, a, "U"), 0)

    (g_eigh,) = gradient(values, a, seed=seed)
    (g_eigvalsh,) = gradient(call(LA.eigvalsh, "U"), a, seed=seed)
    np.testing.assert_allclose(g_eigh, g_eigvalsh, atol=1e-12)


def test_eigh_refuses_a_bad_uplo(rng: np.random.Generator) -> None:
    with pytest.raises(ValueError, match="UPLO"):
        gradient(call(LA.eigh, UPLO="X"), np.eye(2), seed=None)


def test_eigenvalues_of_a_defective_matrix_raise() -> None:
    """A Jordan block's eigenvalues are not differentiable (they move like a square root):
    its eigenvectors are parallel, and the rule says so rather than return numbers."""
    with pytest.raises(np.linalg.LinAlgError):
        gradient(call(LA.eigvals), np.array([[1.0, 1.0], [0.0, 1.0]]), seed=np.ones(2))
