"""Forward mode through the linear algebra of ``np.linalg`` and ``scipy.linalg`` (real
operands): jvp against central finite differences, of losses and of the factors themselves;
the refusals, by name; Hessian-vector products through the rules written into the forward
program."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

import gibbous
from tests.forward.test_second_order import _fd_hvp
from gibbous.forward import ForwardModeError, build_frule, jvp

sla = pytest.importorskip("scipy.linalg")

RNG = np.random.default_rng(21)


def _flat(v: t.Any) -> np.ndarray:
    if isinstance(v, (tuple, list)):
        return np.concatenate([_flat(i) for i in v])
    v = np.asarray(v)
    if np.iscomplexobj(v):  # (NumPy 2.5's eig: complex whatever the spectrum; real here)
        assert np.all(v.imag == 0), v
        v = v.real
    return np.ravel(np.asarray(v, dtype=float))


def _fd(f: t.Callable[..., t.Any], args: tuple[t.Any, ...], tangents: tuple[t.Any, ...]) -> t.Any:
    h = 1e-6

    def at(s: float) -> np.ndarray:
        return _flat(f(*[a if d is None else a + s * d for a, d in zip(args, tangents)]))

    return (at(h) - at(-h)) / (2 * h)


def _tangent(a: t.Any) -> t.Any:
    return RNG.standard_normal(a.shape) if isinstance(a, np.ndarray) else None


def check(f: t.Callable[..., t.Any], *args: t.Any) -> None:
    rule = build_frule(f, *args)
    tangents = tuple(map(_tangent, args))
    for _ in range(2):  # a rule is called again and again
        y, dy = jvp(rule, f, args, tangents)
        np.testing.assert_array_equal(_flat(y), _flat(f(*args)))  # the primal's, bit for bit
        np.testing.assert_allclose(_flat(dy), _fd(f, args, tangents), rtol=1e-5, atol=1e-7)


def _well(n: int, *batch: int) -> np.ndarray:
    return RNG.standard_normal((*batch, n, n)) + n * np.eye(n)


def _spd(n: int, *batch: int) -> np.ndarray:
    """Symmetric positive definite, with distinct eigenvalues."""
    q, _ = np.linalg.qr(RNG.standard_normal((*batch, n, n)))
    w = np.arange(1.0, n + 1.0) + 0.3 * RNG.uniform(size=n)
    return t.cast(np.ndarray, (q * w) @ np.swapaxes(q, -1, -2))


def _tall(m: int, n: int) -> np.ndarray:
    """Full column rank, with distinct singular values."""
    u, _ = np.linalg.qr(RNG.standard_normal((m, n)))
    v, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    return t.cast(np.ndarray, (u * (np.arange(n, 0, -1.0) + 0.5)) @ v)


def _real_spectrum(n: int) -> np.ndarray:
    """Not symmetric, with distinct real eigenvalues."""
    p = _well(n)
    return t.cast(np.ndarray, (p * (np.arange(1.0, n + 1.0) + 0.2)) @ np.linalg.inv(p))


A3, S3, T43 = _well(3), _spd(3), _tall(4, 3)
B23, S23 = _well(3, 2), _spd(3, 2)
V3, M32 = RNG.standard_normal(3), RNG.standard_normal((3, 2))

# --- np.linalg: losses and the results themselves ---------------------------------------------


def det_squared(a: np.ndarray) -> t.Any:
    return np.linalg.det(a) ** 2 + np.sum(np.linalg.det(a * 0.5))


def log_det(a: np.ndarray) -> t.Any:
    sign, logdet = np.linalg.slogdet(a)
    return sign * logdet


def slogdet_parts(a: np.ndarray) -> t.Any:
    return np.linalg.slogdet(a)


def inverse_loss(a: np.ndarray) -> t.Any:
    return np.sum(np.sin(np.linalg.inv(a)))


def solve_loss(a: np.ndarray, b: np.ndarray) -> t.Any:
    return np.sum(np.linalg.solve(a, b) ** 2)


def solve_result(a: np.ndarray, b: np.ndarray) -> t.Any:
    return np.linalg.solve(a, b)


def pinv_result(a: np.ndarray) -> t.Any:
    return np.linalg.pinv(a) + np.linalg.pinv(a, 1e-10)


def cholesky_loss(s: np.ndarray) -> t.Any:
    return np.sum(np.linalg.cholesky(s) ** 3)


def svd_parts(a: np.ndarray) -> t.Any:
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return u, s, vh


def svd_square(a: np.ndarray) -> t.Any:
    return np.linalg.svd(a)


def singular_values(a: np.ndarray) -> t.Any:
    return np.sum(np.linalg.svd(a, compute_uv=False) ** 2)


def qr_parts(a: np.ndarray) -> t.Any:
    q, r = np.linalg.qr(a)
    return q, r


def eigh_parts(s: np.ndarray) -> t.Any:
    w, v = np.linalg.eigh(s)
    return w, v * v  # (squares: a loss blind to the eigenvectors' signs)


def eigh_upper(s: np.ndarray) -> t.Any:
    return np.linalg.eigh(s, "U")


def eigvalsh_loss(s: np.ndarray) -> t.Any:
    return np.sum(np.linalg.eigvalsh(s, UPLO="U") ** 2) + np.linalg.eigvalsh(s)[0]


def diagflat_result(v: np.ndarray, m: np.ndarray) -> t.Any:
    return np.diagflat(v, 1)[1:, :-1] + np.diagflat(m)[:3, :3]


NP_CASES: list[tuple[t.Callable[..., t.Any], tuple[t.Any, ...]]] = [
    (det_squared, (A3,)),
    (det_squared, (B23,)),
    (log_det, (A3,)),
    (log_det, (-B23,)),
    (slogdet_parts, (A3,)),
    (slogdet_parts, (B23,)),
    (inverse_loss, (A3,)),
    (inverse_loss, (B23,)),
    (solve_loss, (A3, V3)),
    (solve_result, (A3, M32)),
    (solve_result, (B23, RNG.standard_normal((2, 3, 2)))),
    (solve_result, (B23, V3)),  # (a vector against each matrix of the stack)
    (pinv_result, (T43,)),
    (pinv_result, (T43.T.copy(),)),
    (cholesky_loss, (S3,)),
    (cholesky_loss, (S23,)),
    (svd_parts, (T43,)),
    (svd_parts, (T43.T.copy(),)),
    (svd_square, (_tall(3, 3),)),
    (singular_values, (T43,)),
    (qr_parts, (T43,)),
    (qr_parts, (_well(3, 2),)),
    (eigh_parts, (S3,)),
    (eigh_parts, (S23,)),
    (eigh_upper, (S3 + np.triu(RNG.standard_normal((3, 3)), 1) * 0.1,)),
    (eigvalsh_loss, (S3,)),
    (diagflat_result, (V3, RNG.standard_normal((2, 2)))),
]


@pytest.mark.parametrize(("f", "args"), NP_CASES, ids=[f.__name__ for f, _ in NP_CASES])
def test_numpy_linalg_matches_finite_differences(
    f: t.Callable[..., t.Any], args: tuple[t.Any, ...]
) -> None:
    check(f, *args)


def test_cholesky_reads_the_lower_triangle() -> None:
    """The strictly upper triangle is not read: its tangent changes nothing."""
    upper = np.triu(RNG.standard_normal((3, 3)), 1)
    rule = build_frule(cholesky_loss, S3)
    _, d = jvp(rule, cholesky_loss, (S3,), (upper,))
    assert d == 0.0


def test_det_of_a_singular_matrix() -> None:
    """The adjugate, as the reverse rule takes it: ``det`` is a polynomial, smooth there."""
    singular = A3.copy()
    singular[2] = singular[0] + 2 * singular[1]
    check(det_squared, singular)
    check(lambda a: np.linalg.det(a), singular)


@pytest.mark.parametrize("fn", [np.linalg.eig, np.linalg.eigvals])
def test_eig_of_a_real_spectrum(fn: t.Callable[..., t.Any]) -> None:
    """``eig`` and ``eigvals`` themselves (a Python function calling them is refused by the
    transform: the type of their results, real or complex, is known only at run time)."""
    for a in (_real_spectrum(3), np.stack([_real_spectrum(3), _real_spectrum(3)])):
        check(fn, a)


# --- scipy.linalg ---------------------------------------------------------------------------


def triangular_solves(a: np.ndarray, b: np.ndarray) -> t.Any:
    return (
        sla.solve_triangular(a, b)
        + sla.solve_triangular(a, b, lower=True, trans=1)
        + sla.solve_triangular(a, b, trans="T", unit_diagonal=True)
    )


def scipy_cholesky(s: np.ndarray) -> t.Any:
    return sla.cholesky(s) + sla.cholesky(s, lower=True).T


def factor_and_solve(s: np.ndarray, b: np.ndarray) -> t.Any:
    return sla.cho_solve(sla.cho_factor(s), b) + sla.cho_solve(sla.cho_factor(s, lower=True), b)


def factored(s: np.ndarray) -> t.Any:
    return sla.cho_factor(s, lower=True)


SCIPY_CASES: list[tuple[t.Callable[..., t.Any], tuple[t.Any, ...]]] = [
    (triangular_solves, (_well(3), V3)),
    (triangular_solves, (_well(3), M32)),
    (scipy_cholesky, (S3,)),
    (factor_and_solve, (S3, V3)),
    (factor_and_solve, (S3, M32)),
    (factored, (S3,)),
]


@pytest.mark.parametrize(("f", "args"), SCIPY_CASES, ids=[f.__name__ for f, _ in SCIPY_CASES])
def test_scipy_linalg_matches_finite_differences(
    f: t.Callable[..., t.Any], args: tuple[t.Any, ...]
) -> None:
    check(f, *args)


def test_tangents_of_tuples_are_tuples() -> None:
    """A factorization's tangent is the tuple of its parts' tangents: zeros for a real sign,
    0.0 for cho_factor's flag."""
    da = RNG.standard_normal((3, 3))
    (_, _), (dsign, dlog) = jvp(build_frule(slogdet_parts, A3), slogdet_parts, (A3,), (da,))
    assert dsign == 0.0 and dlog == pytest.approx(np.trace(np.linalg.solve(A3, da)))
    _, (dc, dlower) = jvp(build_frule(factored, S3), factored, (S3,), (da,))
    assert dc.shape == (3, 3) and dlower == 0.0


def _helpers(f: t.Callable[..., t.Any], *args: t.Any) -> set[str]:
    """The callables a forward program calls (its maker's parameters)."""
    head = build_frule(f, *args).run.__gibbous_source__.splitlines()[0]
    assert head.startswith("def __make(")
    return set(head[len("def __make(") : -2].split(", "))


def test_rules_with_a_written_form_are_written_out() -> None:
    """Where the types are known, the tangent is plain NumPy calls in the forward program
    (reverse mode differentiates them again); ``det``'s is a tangent function, called (a
    singular matrix takes another formula)."""
    assert _helpers(log_det, A3) == {"slogdet", "solve", "trace", "unpack"}
    assert _helpers(triangular_solves, _well(3), V3) <= {
        "solve_triangular", "tril", "triu", "swapaxes", "add", "forward_reuse",
    }  # fmt: skip
    assert _helpers(lambda a: np.linalg.det(a), A3) == {"det", "det_"}


# --- refusals -------------------------------------------------------------------------------


def test_complex_eigenvalues_are_refused_by_name() -> None:
    rotation = np.array([[0.0, -1.0, 0.2], [1.0, 0.0, 0.1], [0.0, 0.3, 2.0]])
    da = RNG.standard_normal((3, 3))
    for fn in (np.linalg.eig, np.linalg.eigvals):
        rule = build_frule(fn, rotation)
        with pytest.raises(ForwardModeError, match=f"numpy.linalg.{fn.__name__} of a real "
                           "matrix with complex eigenvalues"):  # fmt: skip
            jvp(rule, fn, (rotation,), (da,))


def qr_with(a: np.ndarray, mode: str) -> t.Any:
    return np.linalg.qr(a, mode=mode)


def raw_qr(a: np.ndarray) -> t.Any:
    return np.linalg.qr(a, mode="raw")


def hermitian_svd(a: np.ndarray) -> t.Any:
    return np.linalg.svd(a, hermitian=True)


def overwriting_solve(a: np.ndarray, b: np.ndarray) -> t.Any:
    return sla.solve_triangular(a, b, overwrite_b=True)


@pytest.mark.parametrize(
    ("f", "args", "name"),
    [
        (raw_qr, (T43,), "numpy.linalg.qr"),
        (hermitian_svd, (S3,), "numpy.linalg.svd"),
        (overwriting_solve, (_well(3), V3), "scipy.linalg.solve_triangular"),
    ],
)
def test_options_without_a_rule_are_refused_by_name(
    f: t.Callable[..., t.Any], args: tuple[t.Any, ...], name: str
) -> None:
    with pytest.raises(ForwardModeError, match=name.replace(".", r"\.")):
        build_frule(f, *args)


def test_options_known_at_run_time_are_refused_there() -> None:
    rule = build_frule(qr_with, T43, "complete")
    with pytest.raises(ForwardModeError, match=r"numpy\.linalg\.qr with mode='complete' of a non-sq"):
        jvp(rule, qr_with, (T43, "complete"), (np.ones((4, 3)), None))  # (square ones: taken)
    check(qr_with, T43, "reduced")
    rule = build_frule(svd_square, T43)  # (full_matrices=True: a non-square matrix's
    with pytest.raises(ForwardModeError, match=r"numpy\.linalg\.svd with full_matrices=True"):
        jvp(rule, svd_square, (T43,), (np.ones((4, 3)),))  # extra vectors are not unique)


# --- Hessian-vector products ----------------------------------------------------------------




def gaussian_terms(s: np.ndarray, b: np.ndarray) -> t.Any:
    return np.linalg.slogdet(s)[1] + np.sum(b * np.linalg.solve(s, b))


def through_the_factor(s: np.ndarray, b: np.ndarray) -> t.Any:
    low = np.linalg.cholesky(s)
    return np.sum(sla.solve_triangular(low, b, lower=True) ** 2) + np.sum(np.linalg.inv(s))


@pytest.mark.parametrize("f", [gaussian_terms, through_the_factor])
def test_hvp_matches_finite_differences_of_gradients(f: t.Callable[..., t.Any]) -> None:
    v = RNG.standard_normal((3, 3))
    got = gibbous.hvp(f, S3, v, V3)
    np.testing.assert_allclose(got, _fd_hvp(f, S3, v, V3), rtol=1e-5, atol=1e-6)


def test_hvp_through_a_called_rule() -> None:
    """``det``'s tangent is a function called at run time (it branches on the matrix: the
    adjugate at a singular one), which the product's reverse pass derives again."""
    v = RNG.standard_normal((3, 3))
    got = gibbous.hvp(det_squared, A3, v)
    np.testing.assert_allclose(got, _fd_hvp(det_squared, A3, v), rtol=1e-5, atol=1e-6)


_NORMS = [
    ((5,), {}), ((5,), {"ord": np.inf}), ((5,), {"ord": -np.inf}), ((5,), {"ord": 1}),
    ((5,), {"ord": 3.0}), ((5,), {"ord": 0}), ((3, 4), {}), ((3, 4), {"ord": "nuc"}),
    ((3, 4), {"ord": 2}), ((3, 4), {"ord": -2}), ((3, 4), {"ord": 1}), ((3, 4), {"ord": np.inf}),
    ((3, 4), {"axis": 1}), ((3, 4), {"axis": 0, "ord": 1, "keepdims": True}),
    ((2, 3, 4), {"axis": (0, 2), "ord": "nuc"}), ((2, 3, 4), {"axis": (2, 1), "ord": 1}),
]  # fmt: skip


@pytest.mark.parametrize(("shape", "options"), _NORMS, ids=str)
def test_norms_of_every_order(shape: tuple[int, ...], options: dict[str, t.Any]) -> None:
    def norm(a: np.ndarray) -> t.Any:
        return np.linalg.norm(a, **options)

    check(norm, RNG.standard_normal(shape))


def _eigen_inside(a: np.ndarray) -> t.Any:
    w = np.linalg.eigvals(a)  # (complex under NumPy 2.5, real under 2.4: the dtype unknown)
    u, v = np.linalg.eig(a)
    return float(np.sum(np.real(w) ** 2) + np.sum(np.abs(v.real)) + np.sum(u.imag))


def test_eig_inside_a_function_of_the_user() -> None:
    a = np.array([[2.0, 0.5, 0.1], [0.3, 1.0, 0.2], [0.0, 0.4, 3.0]])  # (a real spectrum)
    check(_eigen_inside, a)
