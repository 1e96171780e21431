"""scipy.linalg's decompositions, matrix functions and the functions SciPy writes with them
(gibbous.library.scipy: decomp_twins, matfuncs, lu, subspace_twins, batched), and the
np.linalg rules they reach, in the modes listed, against central differences; the values
the twins give are SciPy's."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest
import scipy.linalg as sla

import gibbous
from gibbous.ir.exceptions import GibbousError
from gibbous.rules.emit import ForwardModeError
from gibbous.library.scipy import decomp_twins as dt
from gibbous.library.scipy import structured_twins as structured
from gibbous.library.scipy import subspace_twins as st
from tests.library.programs import at_least, check_mode, check_program

RNG = np.random.default_rng(3)
A = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
S = A @ A.T + np.eye(3)  # symmetric positive definite
N = -S  # negative eigenvalues: logm and sqrtm are complex
W = RNG.standard_normal((3, 3))
T = RNG.standard_normal((5, 2))  # tall
X = RNG.standard_normal(9)
BAND = RNG.standard_normal((4, 3)) + np.array([[0.0], [4.0], [0.0], [0.0]])  # l=2, u=1
HBAND = np.vstack([0.3 * RNG.standard_normal((2, 3)), 3 + RNG.random((1, 3))])  # upper form

TC, TR = np.array([4.0, 1.0, 0.5]), np.array([4.0, -1.0, 0.3])  # a Toeplitz matrix
TD, TE = np.array([1.0, 2.5, 4.0]), np.array([0.3, -0.4])  # a tridiagonal one
V = RNG.standard_normal((3, 3)) + 2 * np.eye(3)
REAL_SPECTRUM = V @ np.diag([1.0, 2.5, 4.0]) @ np.linalg.inv(V)  # distinct real eigenvalues
ROTATION = np.array([[0.5, -2.0, 0.3], [2.0, 0.5, 0.1], [0.2, 0.0, -1.0]])  # a complex pair

F = t.Callable[[np.ndarray], t.Any]


def _m(x: np.ndarray) -> t.Any:
    return x.reshape(3, 3) * 0.1


def _sym(x: np.ndarray) -> t.Any:
    return S + _m(x) + _m(x).T


def _tall(x: np.ndarray) -> t.Any:
    return np.vstack([A, W[:2]]) + 0.1 * np.outer(np.ones(5), x[:3])


CASES: list[tuple[str, F, str]] = [
    # eigen-decompositions (twins onto np.linalg; SciPy's eigenvector signs)
    ("eigvalsh", lambda x: np.sum(W[0] * sla.eigvalsh(S + _m(x))), "rfh"),
    ("eigvalsh upper", lambda x: np.sum(W[0] * sla.eigvalsh(S + _m(x), lower=False)), "rfh"),
    ("eigh vectors", lambda x: np.sum(W * sla.eigh(_sym(x))[1]), "rfh"),
    ("eigh driver evd", lambda x: np.sum(W * sla.eigh(_sym(x), driver="evd")[1]), "rfh"),
    ("eigh eigvals_only", lambda x: np.sum(W[0] * sla.eigh(S + _m(x), eigvals_only=True)), "rfh"),
    ("eigh subset_by_index", lambda x: np.sum(W[:, 1:] * sla.eigh(_sym(x), subset_by_index=[1, 2])[1]), "rfh"),
    ("eigh subset_by_value", lambda x: np.sum(sla.eigh(_sym(x), subset_by_value=(-np.inf, 10.0))[0]), "rfh"),
    ("eigh generalized", lambda x: np.sum(W * sla.eigh(A + A.T + _m(x), S)[1]), "rfh"),
    ("eigh generalized b", lambda x: np.sum(W * sla.eigh(A + A.T, _sym(x), lower=False)[1]), "rfh"),
    ("eigh type 2", lambda x: np.sum(W * sla.eigh(A + A.T + _m(x), _sym(x), type=2)[1]), "rfh"),
    ("eigh type 3", lambda x: np.sum(sla.eigh(A + A.T, _sym(x), type=3)[0]), "rfh"),
    ("eigvalsh generalized", lambda x: np.sum(W[0] * sla.eigvalsh(A + A.T + _m(x), S)), "rfh"),
    ("eig", lambda x: np.real(np.sum(W[0] * sla.eig(A + _m(x))[0])), "rfh"),
    ("eig vectors", lambda x: np.real(np.sum(W * sla.eig(S + _m(x))[1])), "rfh"),
    ("eig homogeneous", lambda x: np.real(np.sum(sla.eig(A + _m(x), homogeneous_eigvals=True)[0])), "rfh"),
    ("eigvals", lambda x: np.real(np.sum(W[0] * sla.eigvals(A + _m(x)))), "rfh"),
    # singular values, QR, norms
    ("svd", lambda x: np.sum(W * sla.svd(A + _m(x))[0]), "rfh"),
    ("svd gesvd", lambda x: np.sum(W * sla.svd(A + _m(x), lapack_driver="gesvd")[2]), "rfh"),
    ("svd economic tall", lambda x: np.sum(sla.svd(_tall(x), full_matrices=False)[0][:3] * W), "rfh"),
    ("svd compute_uv=False", lambda x: np.sum(W[0] * sla.svd(_tall(x), compute_uv=False)), "rfh"),
    ("svdvals", lambda x: np.sum(W[0] * sla.svdvals(A + _m(x))), "rfh"),
    ("qr", lambda x: np.sum(W * sla.qr(A + _m(x))[0]) + np.sum(W.T * sla.qr(A + _m(x))[1]), "rfh"),
    ("qr economic tall", lambda x: np.sum(sla.qr(_tall(x), mode="economic")[0][:3] * W), "rfh"),
    ("qr r tall", lambda x: np.sum(sla.qr(_tall(x), mode="r")[0][:3] * W), "rfh"),
    ("qr wide", lambda x: np.sum(sla.qr(_tall(x).T)[1] * np.arange(15.0).reshape(3, 5)), "rfh"),
    ("qr wide q", lambda x: np.sum(sla.qr(_tall(x).T)[0] * W), "rfh"),
    ("qr_multiply", lambda x: np.sum(W[:2] * sla.qr_multiply(_tall(x), W[:2, :] @ np.ones((3, 5)) + 0.1 * x[:5])[0]), "rfh"),
    ("qr_multiply left R", lambda x: np.sum(W * sla.qr_multiply(A + _m(x), W, mode="left")[1]), "rfh"),
    ("rq", lambda x: np.sum(W * sla.rq(A + _m(x))[0]) + np.sum(W.T * sla.rq(A + _m(x))[1]), "rfh"),
    ("rq r", lambda x: np.sum(W * sla.rq(A + _m(x), mode="r")), "rfh"),
    ("rq economic wide", lambda x: np.sum(sla.rq(_tall(x).T, mode="economic")[1] * np.arange(15.0).reshape(3, 5)), "rfh"),
    ("np qr r", lambda x: np.sum(W * np.linalg.qr(A + _m(x), mode="r")), "rfh"),
    ("np qr complete square", lambda x: np.sum(W * np.linalg.qr(A + _m(x), mode="complete")[0]), "rfh"),
    ("norm", lambda x: sla.norm(A + _m(x)), "rfh"),
    ("norm vector 3", lambda x: sla.norm(x, 3), "rfh"),
    ("norm 2 (matrix)", lambda x: sla.norm(A + _m(x), 2), "rfh"),
    ("norm axis keepdims", lambda x: np.sum(W[:, :1] * sla.norm(A + _m(x), axis=1, keepdims=True)), "rfh"),
    ("norm nuc", lambda x: sla.norm(A + _m(x), "nuc"), "rfh"),
    # LU (rules), lu_solve (a twin through lu_factor's factors)
    ("lu", lambda x: np.sum(W * sla.lu(A + _m(x))[1]) + np.sum(W.T * sla.lu(A + _m(x))[2]), "rfh"),
    ("lu permute_l", lambda x: np.sum(W * sla.lu(A + _m(x), permute_l=True)[0]), "rfh"),
    ("lu p_indices", lambda x: np.sum(W.T * sla.lu(A.T + _m(x), p_indices=True)[2]), "rf"),
    ("lu batched", lambda x: np.sum(W * sla.lu(np.stack([A + _m(x), A.T - _m(x)]))[1]), "rfh"),
    ("lu_factor", lambda x: np.sum(W * sla.lu_factor(A.T + _m(x))[0]), "rfh"),
    ("lu_solve", lambda x: np.sum(W[0] * sla.lu_solve(sla.lu_factor(A.T + _m(x)), x[:3])), "rfh"),
    ("lu_solve trans=1", lambda x: np.sum(W[0] * sla.lu_solve(sla.lu_factor(A.T + _m(x)), x[:3], trans=1)), "rfh"),
    ("lu_solve trans=2 matrix", lambda x: np.sum(W * sla.lu_solve(sla.lu_factor(A + _m(x)), W + _m(x), trans=2)), "rfh"),
    ("lu_solve of b only", lambda x: np.sum(W[0] * sla.lu_solve(sla.lu_factor(A.T), x[:3])), "rfh"),
    ("cho_factor + cho_solve", lambda x: np.sum(W[0] * sla.cho_solve(sla.cho_factor(_sym(x)), x[:3])), "rfh"),
    # banded solvers (rules: derivatives by banded solves)
    ("solve_banded", lambda x: np.sum(W[0] * sla.solve_banded((2, 1), BAND + 0.1 * np.vstack([_m(x), x[:3]]), x[:3])), "rfh"),
    ("solve_banded matrix b, list l_and_u", lambda x: np.sum(W * sla.solve_banded([2, 1], BAND, _m(x) + W)), "r"),  # (a list of unknown items: no formula operand)
    ("solveh_banded", lambda x: np.sum(W[0] * sla.solveh_banded(HBAND + 0.05 * _m(x), x[:3])), "rfh"),
    ("solveh_banded lower", lambda x: np.sum(W * sla.solveh_banded(HBAND[::-1] + 0.05 * _m(x), W + _m(x), lower=True)), "rfh"),
    ("solve_banded complex", lambda x: np.real(np.sum(W[0] * sla.solve_banded((2, 1), BAND + 0.1j * np.vstack([_m(x), x[:3]]), x[:3]))), "r"),
    # Toeplitz, tridiagonal and banded matrices made dense (structured_twins)
    ("solve_toeplitz", lambda x: np.sum(W[0] * sla.solve_toeplitz((TC + 0.1 * x[:3], TR + 0.1 * x[3:6]), x[6:9])), "rfh"),
    ("solve_toeplitz c, matrix b", lambda x: np.sum(W * sla.solve_toeplitz(TC + 0.1 * x[:3], W + _m(x))), "rfh"),
    ("matmul_toeplitz", lambda x: np.sum(W[0] * sla.matmul_toeplitz((TC + 0.1 * x[:3], TR + 0.1 * x[3:6]), x[6:9])), "rfh"),
    ("eigh_tridiagonal", lambda x: np.sum(W * sla.eigh_tridiagonal(TD + 0.1 * x[:3], TE + 0.1 * x[3:5])[1]), "rfh"),
    ("eigh_tridiagonal select i", lambda x: np.sum(W[:, :2] * sla.eigh_tridiagonal(TD + 0.1 * x[:3], TE, select="i", select_range=(1, 2))[1]), "rfh"),
    ("eigvalsh_tridiagonal select v", lambda x: np.sum(sla.eigvalsh_tridiagonal(TD + 0.1 * x[:3], TE + 0.1 * x[3:5], select="v", select_range=(2.0, 10.0))), "rfh"),
    ("eig_banded", lambda x: np.sum(W * sla.eig_banded(HBAND + 0.05 * _m(x))[1]), "rfh"),
    ("eig_banded lower", lambda x: np.sum(W * sla.eig_banded(HBAND[::-1] + 0.05 * _m(x), lower=True)[1]), "rfh"),
    ("eigvals_banded", lambda x: np.sum(W[0] * sla.eigvals_banded(HBAND + 0.05 * _m(x))), "rfh"),
    ("cholesky_banded", lambda x: np.sum(W * sla.cholesky_banded(HBAND + 0.05 * _m(x))), "rfh"),
    ("cholesky_banded lower", lambda x: np.sum(W * sla.cholesky_banded(HBAND[::-1] + 0.05 * _m(x), lower=True)), "rfh"),
    ("cho_solve_banded", lambda x: np.sum(W[0] * sla.cho_solve_banded((sla.cholesky_banded(HBAND + 0.05 * _m(x)), False), x[:3])), "rf"),
    ("cho_solve_banded lower", lambda x: np.sum(W * sla.cho_solve_banded((sla.cholesky_banded(HBAND[::-1] + 0.05 * _m(x), lower=True), True), W + _m(x))), "rf"),
    ("solve_circulant", lambda x: np.sum(W[0] * sla.solve_circulant(TC + 0.1 * x[:3], x[3:6])), "rfh"),
    ("solve_circulant matrix b", lambda x: np.sum(W * sla.solve_circulant(TC, W + _m(x))), "rfh"),
    # matrix functions
    ("expm", lambda x: np.sum(W * sla.expm(A * 0.3 + _m(x))), "rfh"),
    ("expm batched", lambda x: np.sum(W * sla.expm(np.stack([A * 0.3 + _m(x), -_m(x)]))), "rfh"),
    ("expm complex", lambda x: np.real(np.sum(W * sla.expm(A * 0.3 + 1j * _m(x)))), "rfh"),
    ("logm", lambda x: np.sum(W * sla.logm(S + _m(x))), "rf"),
    ("logm complex result", lambda x: np.real(np.sum(W * sla.logm(N + _m(x)))), "r"),
    ("sqrtm", lambda x: np.sum(W * sla.sqrtm(S + _m(x))), "rf"),
    ("sqrtm complex result", lambda x: np.imag(np.sum(W * sla.sqrtm(N + _m(x)))), "r"),
    ("cosm", lambda x: np.sum(W * sla.cosm(A * 0.3 + _m(x))), "rfh"),
    ("sinm", lambda x: np.sum(W * sla.sinm(A * 0.3 + _m(x))), "rfh"),
    ("tanm", lambda x: np.sum(W * sla.tanm(A * 0.1 + _m(x))), "rfh"),
    ("coshm", lambda x: np.sum(W * sla.coshm(A * 0.3 + _m(x))), "rfh"),
    ("sinhm", lambda x: np.sum(W * sla.sinhm(A * 0.3 + _m(x))), "rfh"),
    ("tanhm", lambda x: np.sum(W * sla.tanhm(A * 0.3 + _m(x))), "rfh"),
    ("expm_frechet", lambda x: np.sum(W * sla.expm_frechet(A * 0.3 + _m(x), W, compute_expm=False)), "rf"),
    ("expm_cond", lambda x: sla.expm_cond(A * 0.3 + _m(x)), "rf"),
    ("signm", lambda x: np.sum(W * sla.signm(A - 2 * np.eye(3) + _m(x))), "rf"),
    # Schur, Sylvester, Lyapunov
    ("schur T", lambda x: np.sum(W * sla.schur(REAL_SPECTRUM + _m(x))[0]), "rfh"),
    ("schur Z", lambda x: np.sum(W * sla.schur(REAL_SPECTRUM + _m(x))[1]), "rfh"),
    ("schur complex |Z|", lambda x: np.sum(W * np.abs(sla.schur(ROTATION + _m(x), output="complex")[1])), "r"),
    ("schur complex diagonal", lambda x: np.real(np.sum(W[0] * np.diagonal(sla.schur(ROTATION + _m(x), output="complex")[0]))), "r"),
    ("rsf2csf", lambda x: np.real(np.sum(W * sla.rsf2csf(*sla.schur(REAL_SPECTRUM + _m(x)))[0])), "r"),
    ("solve_sylvester", lambda x: np.sum(W * sla.solve_sylvester(A + _m(x), S - _m(x).T, W + _m(x))), "rfh"),
    ("solve_sylvester complex", lambda x: np.real(np.sum(W * sla.solve_sylvester(A + 1j * _m(x), S, W))), "rfh"),
    ("solve_continuous_lyapunov", lambda x: np.sum(W * sla.solve_continuous_lyapunov(A + _m(x), W + W.T)), "rfh"),
    ("solve_lyapunov", lambda x: np.sum(W * sla.solve_lyapunov(A, _m(x))), "rfh"),
    ("solve_discrete_lyapunov", lambda x: np.sum(W * sla.solve_discrete_lyapunov(0.2 * A + _m(x), W)), "rfh"),
    ("hessenberg", lambda x: np.sum(W * sla.hessenberg(A + _m(x))), "rfh"),
    ("hessenberg calc_q", lambda x: np.sum(W * sla.hessenberg(A + _m(x), calc_q=True)[1]), "rfh"),
    # SciPy's Python through the twins
    ("orth", lambda x: np.sum(np.abs(sla.orth(_tall(x)))), "rfh"),
    ("polar", lambda x: np.sum(W * sla.polar(A + _m(x))[0]), "rfh"),
    ("polar left", lambda x: np.sum(W * sla.polar(A + _m(x), side="left")[1]), "rfh"),
    ("pinvh", lambda x: np.sum(W * sla.pinvh(_sym(x))), "rfh"),
    ("pinvh return_rank", lambda x: np.sum(W * sla.pinvh(_sym(x), return_rank=True)[0]), "rfh"),
    ("subspace_angles", lambda x: np.sum(sla.subspace_angles(_tall(x)[:, :2], np.vstack([W, A[:2]])[:, 1:])), "rfh"),
    ("orthogonal_procrustes", lambda x: np.sum(W * sla.orthogonal_procrustes(A + _m(x), W)[0]), "rfh"),
    ("polar batched", lambda x: np.sum(W * sla.polar(np.stack([A + _m(x), A.T - _m(x)]))[1]), "r"),
    ("solve_discrete_lyapunov batched a", lambda x: np.sum(W * sla.solve_discrete_lyapunov(np.stack([0.2 * A + _m(x), -0.1 * A]), W)), "r"),
    ("khatri_rao keywords", lambda x: np.sum(sla.khatri_rao(a=A + _m(x), b=W) * np.arange(27.0).reshape(9, 3)), "r"),
    ("khatri_rao", lambda x: np.sum(sla.khatri_rao(A + _m(x), W) * np.arange(27.0).reshape(9, 3)), "rfh"),
    ("hankel", lambda x: np.sum(sla.hankel(x[:3], x[2:6]) * np.arange(12.0).reshape(3, 4)), "rfh"),
    ("fiedler", lambda x: np.sum(sla.fiedler(x[:3]) * W), "rfh"),
    # np.linalg
    ("np cholesky upper", lambda x: np.sum(W * np.linalg.cholesky(S + np.triu(_m(x)), upper=True)), "rfh"),
    ("np multi_dot", lambda x: np.sum(np.linalg.multi_dot([A, _m(x), W, _m(x)])), "rfh"),
    ("np multi_dot vectors", lambda x: np.linalg.multi_dot([x[:3], A, _m(x), x[3:6]]), "rfh"),
    ("np tensorsolve", lambda x: np.sum(W[0] * np.linalg.tensorsolve(A + _m(x), x[:3])), "rfh"),
]  # fmt: skip
# Known problems, each an xfail that fails when it starts passing (strict): the hvp of SciPy's
# batching twin raises an internal error on NumPy 2.4, and at X SciPy's eigh signs flip within
# the central-difference step of the gradient (the hvp itself agrees with second differences of
# f; the check of it against differences of the gradient cannot).
_SIGNS_FLIP = "SciPy's eigenvector signs flip within the difference step at X"
_BATCH = "hvp of SciPy's batching twin: internal TypeError (batched.py over_batch_jvp; NumPy 2.4)"
KNOWN = {
    ("eigh vectors", "h"): _SIGNS_FLIP,
    ("polar batched", "h"): _BATCH,
    ("solve_discrete_lyapunov batched a", "h"): _BATCH,
}
_NUMPY_25 = at_least("numpy", "2.5.0")  # (where the batched hvp works)
MODES = [
    pytest.param(
        name, f, m, m in modes, id=f"{name}-{m}",
        marks=[
            pytest.mark.xfail(not (KNOWN[name, m] is _BATCH and _NUMPY_25), reason=KNOWN[name, m], strict=True)
        ] if (name, m) in KNOWN else [],
    )
    for name, f, modes in CASES
    for m in "rfh"
]  # fmt: skip


@pytest.mark.parametrize("name, f, mode, works", MODES)
def test_derivatives(name: str, f: F, mode: str, works: bool) -> None:
    check_mode(name, f, X, mode, works)


def test_forward_mode_refuses_a_complex_logm_of_a_real_matrix() -> None:
    f = lambda x: np.real(np.sum(sla.logm(N + _m(x))))  # noqa: E731
    with pytest.raises(ForwardModeError, match="complex result"):
        gibbous.jvp(gibbous.build_frule(f, X), f, (X,), (X,))


@pytest.mark.parametrize(
    "f",
    [
        lambda a: np.real(np.sum(np.linalg.eigvals(a))),
        lambda a: np.real(np.sum(sla.eigvals(a))),
        lambda a: np.sum(np.linalg.eigvalsh(a)),
        lambda a: np.sum(sla.eigh(a)[0]),
        lambda a: np.sum(np.linalg.svd(a)[1]),
    ],
)
def test_symmetric_functions_of_repeated_eigenvalues(f: F) -> None:
    """The gradient of the eigenvalues' sum at ``2 I`` (a triple eigenvalue) is ``I``."""
    np.testing.assert_allclose(gibbous.grad(f)(2 * np.eye(3)), np.eye(3), atol=1e-12)


def test_eigvals_of_a_defective_matrix_raise() -> None:
    a = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    with pytest.raises(np.linalg.LinAlgError, match="not diagonalizable"):
        gibbous.grad(lambda a: np.real(np.sum(np.linalg.eigvals(a) ** 2)))(a)


@pytest.mark.parametrize(
    "call, refused",
    [
        (lambda x: sla.qr(_tall(x))[0], "mode='full'"),
        (lambda x: sla.qr(A + _m(x), pivoting=True)[0], "pivoting"),
        (lambda x: sla.eig(A + _m(x), S)[0], "generalized"),
        (lambda x: sla.eig(A + _m(x), left=True)[0], "left"),
        (lambda x: sla.lu(_tall(x))[1], "non-square"),
        (lambda x: sla.cholesky_banded(x), "2 axes"),
        (lambda x: sla.schur(ROTATION + _m(x))[0], "output='complex'"),
        (lambda x: sla.schur(A + _m(x), sort="lhp")[0], "sort"),
    ],
)
def test_refusals(call: F, refused: str) -> None:
    with pytest.raises(GibbousError, match=refused):
        gibbous.grad(lambda x: np.real(np.sum(call(x))))(X)


@pytest.mark.parametrize(
    "twin, real, args, kwargs",
    [
        (dt.eigh, sla.eigh, (S,), {}),
        (dt.eigh, sla.eigh, (S,), {"lower": False, "subset_by_index": [0, 1]}),
        (dt.eigh, sla.eigh, (S,), {"subset_by_value": (0.5, 30.0)}),
        (dt.eigh, sla.eigh, (A + A.T, S), {}),
        (dt.eigh, sla.eigh, (A + A.T, S), {"type": 2}),
        (dt.eigh, sla.eigh, (A + A.T, S), {"type": 3, "lower": False}),
        (dt.eigvalsh, sla.eigvalsh, (S,), {}),
        (dt.eig, sla.eig, (A,), {}),
        (dt.eig, sla.eig, (A,), {"homogeneous_eigvals": True}),
        (dt.eigvals, sla.eigvals, (A,), {}),
        (dt.svd, sla.svd, (T,), {}),
        (dt.svd, sla.svd, (A,), {"lapack_driver": "gesvd"}),
        (dt.svd, sla.svd, (T,), {"full_matrices": False, "lapack_driver": "gesvd"}),
        (dt.svdvals, sla.svdvals, (T,), {}),
        (dt.qr, sla.qr, (A,), {}),
        (dt.qr, sla.qr, (T,), {"mode": "economic"}),
        (dt.qr, sla.qr, (T,), {"mode": "r"}),
        (dt.qr, sla.qr, (T.T,), {}),
        (dt.qr, sla.qr, (T.T,), {"mode": "r"}),
        (dt.qr_multiply, sla.qr_multiply, (T, W[:2, :2] @ np.ones((2, 5))), {}),
        (dt.qr_multiply, sla.qr_multiply, (A, W), {"mode": "left", "conjugate": True}),
        (dt.rq, sla.rq, (A,), {}),
        (dt.rq, sla.rq, (A,), {"mode": "r"}),
        (dt.rq, sla.rq, (T.T,), {"mode": "economic"}),
        (dt.norm, sla.norm, (A,), {"ord": 2}),
        (dt.norm, sla.norm, (X,), {}),
        (dt.lu_solve, sla.lu_solve, (sla.lu_factor(A), W), {"trans": 1}),
        (dt.lu_solve, sla.lu_solve, (sla.lu_factor(A), X[:3]), {"trans": 2}),
        (st.orth, sla.orth, (T,), {}),
        (st.subspace_angles, sla.subspace_angles, (T, np.vstack([W, A[:2]])), {}),
        (st.orthogonal_procrustes, sla.orthogonal_procrustes, (A, W), {}),
        (st.pinvh, sla.pinvh, (S,), {"return_rank": True}),
        (structured.solve_toeplitz, sla.solve_toeplitz, ((TC, TR), X[:3]), {}),
        (structured.solve_circulant, sla.solve_circulant, (TC, W), {}),
        (structured.matmul_toeplitz, sla.matmul_toeplitz, ((TC, TR), W), {}),
        (structured.eigh_tridiagonal, sla.eigh_tridiagonal, (TD, TE), {}),
        (structured.eig_banded, sla.eig_banded, (HBAND,), {}),
        (structured.eig_banded, sla.eig_banded, (HBAND[::-1],), {"lower": True}),
        (structured.cholesky_banded, sla.cholesky_banded, (HBAND,), {}),
        (structured.cholesky_banded, sla.cholesky_banded, (HBAND[::-1],), {"lower": True}),
        (structured.cho_solve_banded, sla.cho_solve_banded, ((sla.cholesky_banded(HBAND), False), X[:3]), {}),
    ],
)
def test_twins_give_scipys_values(twin: t.Any, real: t.Any, args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> None:
    got, expected = twin(*args, **kwargs), real(*args, **kwargs)
    for g, e in zip(*(((v,) if not isinstance(v, (tuple, list)) else v) for v in (got, expected))):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_solve_banded_with_overwrite_flags_keeps_its_inputs() -> None:
    """``overwrite_ab=True`` / ``overwrite_b=True`` in reverse mode: the gradient against
    central differences, and the user's band and right-hand side as they were."""
    band = BAND.copy()
    rhs = W.copy()

    def f(x: np.ndarray) -> t.Any:
        return np.sum(W * sla.solve_banded((2, 1), band + 0.05 * x[:1], rhs * x[1], overwrite_ab=True, overwrite_b=True))

    check_program(f, X, modes="r")
    np.testing.assert_array_equal(band, BAND)
    np.testing.assert_array_equal(rhs, W)
