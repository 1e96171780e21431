"""Audit cases for ``gibbous.library.linalg.products``, ``gibbous.library.linalg.norms``,
``gibbous.library.arrays.diagonals``, ``gibbous.library.linalg.decompositions`` (inverse, solve,
determinants, factorizations) and ``gibbous.library.linalg.eigen`` (eigen-decompositions):
float64, float32 and complex128 operands of every rank the rules handle, scalars mixed in, and
well-conditioned matrices (positive definite for cholesky, distinct eigenvalues for eig and
eigh, distinct singular values for svd)."""

from __future__ import annotations

import operator
import typing as t

import numpy as np

from gibbous.testing import case
from gibbous.testing.cases import RuleCase

rng = np.random.default_rng(7)


def _r(*shape: int, dtype: type = np.float64) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, shape).astype(dtype)


def _c(*shape: int) -> np.ndarray:
    return _r(*shape) + 1j * _r(*shape)


def _fresh(fn: object, *args: object, kwargs: dict[str, object] | None = None) -> RuleCase:
    """A case whose call with other shapes (the state check) gets new random values: the
    default grows arrays by repeating rows and columns, which makes matrices singular."""
    others = tuple(
        _grown(a) if isinstance(a, np.ndarray) else a for a in args
    )
    return case(fn, *args, kwargs=kwargs, other_args=others, other_kwargs=dict(kwargs or {}))


def _grown(a: np.ndarray) -> np.ndarray:
    shape = tuple(n + 1 if n > 1 else n for n in a.shape)
    if a.dtype.kind == "c":
        return _c(*shape).astype(a.dtype)
    return _r(*shape, dtype=a.dtype.type)


V3, W3, V4 = _r(3), _r(3), _r(4)
A34, B45, A33 = _r(3, 4), _r(4, 5), _r(3, 3)
T234, T245 = _r(2, 3, 4), _r(2, 4, 5)
F3, F34, F45 = _r(3, dtype=np.float32), _r(3, 4, dtype=np.float32), _r(4, 5, dtype=np.float32)
Z3, ZW3, Z34, Z45 = _c(3), _c(3), _c(3, 4), _c(4, 5)

CASES: list[RuleCase] = []
fn: t.Any

# matmul and @: vectors, matrices, batches with broadcasting, every dtype
for fn in (np.matmul, operator.matmul):
    CASES += [
        case(fn, A34, B45),
        case(fn, A34, V4),
        case(fn, V3, A34),
        case(fn, F3, F34),
        case(fn, V3, W3),
        case(fn, T234, T245),
        case(fn, T234, B45),
        case(fn, _r(3, 1, 2, 4), _r(2, 4, 3)),
        case(fn, F34, F45),
        case(fn, Z34, Z45),
        case(fn, Z34, B45),
    ]

# dot (and the method): scalars, vectors, matrices (float64: ``products_f64``), N-D
CASES += [
    case(np.dot, V3, W3),
    case(np.dot, F3, F3 + 0.5),
    case(np.dot, Z3, ZW3),
    case(np.dot, A34, B45),
    case(np.dot, A34, V4),
    case(np.dot, V3, A34),
    case(np.dot, F34, F45),
    case(np.dot, F3, F34),
    case(np.dot, T234, _r(3, 4, 2)),
    case(np.dot, A34, 1.5),
    case(np.dot, -0.5, V3),
    case(np.dot, 1.5, 2.5),
    case(np.dot, 1.5 + 0.5j, 2.0),
    case(np.ndarray.dot, A34, B45),
    case(np.ndarray.dot, A34, V4),
    case(np.ndarray.dot, V3, A34),
    case(np.ndarray.dot, V3, W3),
    case(np.ndarray.dot, Z34, 2.0),
]

# inner and outer
for fn in (np.inner, np.outer):
    CASES += [
        case(fn, V3, W3),
        case(fn, F3, F3 + 0.5),
        case(fn, Z3, ZW3),
        case(fn, V3, 2.0),
        case(fn, 1.5, V3),
        case(fn, 1.5, -2.0),
    ]
CASES += [
    case(np.inner, A34, _r(2, 4)),
    case(np.inner, T234, V4),
    case(np.outer, A34, V3),
]

# cross: 3-vectors along the last axis, broadcast; the state check's other shapes keep 3
CASES += [
    case(np.cross, _r(3), _r(3), other_args=(_r(2, 3), _r(3))),
    case(np.cross, _r(4, 3), _r(3), other_args=(_r(5, 3), _r(3))),
    case(np.cross, _r(2, 1, 3), _r(4, 3), other_args=(_r(3, 1, 3), _r(2, 3))),
    case(np.cross, _c(3), _c(3), other_args=(_c(2, 3), _c(2, 3))),
    case(np.cross, _r(3, dtype=np.float32), _r(3, dtype=np.float32)),
]

# norms: vectors (ord None, 1, 2, inf, -inf, p), matrices (fro, nuc, 1, inf), along axes
CASES += [
    case(np.linalg.norm, V3),
    case(np.linalg.norm, F3),
    case(np.linalg.norm, Z3),
    case(np.linalg.norm, A34),
    case(np.linalg.norm, T234),
    case(np.linalg.norm, A34, kwargs={"axis": 1}),
    case(np.linalg.norm, A34, kwargs={"axis": 0, "keepdims": True}),
    case(np.linalg.norm, V4, 2),
    case(np.linalg.norm, A34, "fro"),
    case(np.linalg.norm, 2.5),
    case(np.linalg.norm, -1.5 + 2.0j),
]
CASES += [
    case(np.linalg.norm, V4, 1),
    case(np.linalg.norm, V4, np.inf),
    case(np.linalg.norm, V4, -np.inf),
    case(np.linalg.norm, V4, 3),
    case(np.linalg.norm, V4, 0.5),
    case(np.linalg.norm, Z3, np.inf),
    case(np.linalg.norm, A34, kwargs={"ord": 1, "axis": 1}),
    case(np.linalg.norm, T234, kwargs={"ord": np.inf, "axis": -1, "keepdims": True}),
    _fresh(np.linalg.norm, A34, "nuc"),
    _fresh(np.linalg.norm, A34, 2),
    _fresh(np.linalg.norm, A34, -2),
    case(np.linalg.norm, A34, 1),
    case(np.linalg.norm, A34, -1),
    case(np.linalg.norm, A34, np.inf),
    case(np.linalg.norm, A34, -np.inf),
    _fresh(np.linalg.norm, Z34, "nuc"),
    case(np.linalg.norm, T234, kwargs={"ord": "fro", "axis": (2, 1)}),
    case(np.linalg.norm, T234, kwargs={"ord": 1, "axis": (2, 0), "keepdims": True}),
    # ord=None with two axes is the Frobenius norm; stacks of matrices; keepdims; complex
    case(np.linalg.norm, A34, kwargs={"axis": (0, 1)}),
    case(np.linalg.norm, T234, kwargs={"axis": (-2, -1)}),
    case(np.linalg.norm, T234, kwargs={"ord": None, "axis": (-1, -2), "keepdims": True}),
    _fresh(np.linalg.norm, T234, kwargs={"ord": "nuc", "axis": (-2, -1)}),
    _fresh(np.linalg.norm, A34, kwargs={"ord": "nuc", "keepdims": True}),
    _fresh(np.linalg.norm, T234, kwargs={"ord": -2, "axis": (-2, -1), "keepdims": True}),
    _fresh(np.linalg.norm, Z34, 2),
    _fresh(np.linalg.norm, Z34, -2),
    case(np.linalg.norm, Z34, 1),
    case(np.linalg.norm, Z34, -np.inf),
    case(np.linalg.norm, _c(2, 3, 4), kwargs={"ord": np.inf, "axis": (-2, -1)}),
]

# vdot: the first operand conjugated, any shapes of equal size
CASES += [
    case(np.vdot, V3, W3),
    case(np.vdot, Z3, ZW3),
    case(np.vdot, A34, _r(4, 3)),
    case(np.vdot, F3, F3 + 0.5),
    case(np.vdot, Z3, W3),
    case(np.vdot, 1.5 + 1.0j, 2.0 - 0.5j),
    case(np.vdot, _r(1), 2.0),
    case(np.vdot, 2.0, _r(1)),
]

# tensordot with every way of giving axes
CASES += [
    case(np.tensordot, T234, _r(3, 4, 5)),
    case(np.tensordot, T234, _r(4, 2), kwargs={"axes": 1}),
    case(np.tensordot, T234, _r(4, 3), kwargs={"axes": ([1, 2], [1, 0])}),
    case(np.tensordot, A34, _r(2, 3), ((0,), (1,))),
    case(np.tensordot, Z34, Z45, 1),
    case(np.tensordot, F34, F45, 1),
    case(np.tensordot, V3, W3, 1),
]

# einsum: products, contractions, transposes, traces and diagonals, ellipses, implicit output
CASES += [
    case(np.einsum, "ij,jk->ik", A34, B45),
    case(np.einsum, "i,i->", V3, W3),
    case(np.einsum, "i,i", Z3, ZW3),
    case(np.einsum, "ij->ji", A34),
    case(np.einsum, "ij->i", A34),
    case(np.einsum, "ii->", A33),
    case(np.einsum, "ii->i", A33),
    case(np.einsum, "bij,bjk->bik", T234, T245),
    case(np.einsum, "...j,jk->...k", T234, B45),
    case(np.einsum, "ij,ij,i->j", A34, _r(3, 4), V3),
    case(np.einsum, "ij,jk", F34, F45),
    case(np.einsum, "ij,jk->ik", Z34, B45),
    case(np.einsum, "i,j->ij", V3, V4),
    case(np.einsum, "...ij,...jk", _r(2, 1, 2, 3), _r(4, 3, 2)),  # broadcast ellipses
]

# kron: equal and unequal ranks, a scalar
CASES += [
    case(np.kron, _r(2, 3), _r(3, 2)),
    case(np.kron, V3, _r(2)),
    case(np.kron, _r(2, 2), V3),
    case(np.kron, _c(2, 2), _c(2, 3)),
    case(np.kron, F3, _r(2, dtype=np.float32)),
    case(np.kron, A34, 2.5),
    case(np.kron, 1.5, V3),
]

# diagonals (views of the fdata), traces (into the fdata's diagonal)
CASES += [
    case(np.diagonal, A34),
    case(np.diagonal, A34, 1),
    case(np.diagonal, T234, kwargs={"offset": -1, "axis1": 1, "axis2": 2}),
    case(np.diagonal, Z34),
    case(np.ndarray.diagonal, A34, -1),
    case(np.ndarray.diagonal, F34),
    case(np.diag, A34),
    case(np.diag, A34, 1),
    case(np.diag, V3),
    case(np.diag, Z3, kwargs={"k": -1}),
    case(np.diagflat, A34),
    case(np.diagflat, V3, 2),
    case(np.trace, A33),
    case(np.trace, A34, 1),
    case(np.trace, T234, kwargs={"axis1": 1, "axis2": 2}),
    case(np.trace, Z34),
    case(np.trace, F34),
    case(np.ndarray.trace, A33),
    case(np.ndarray.trace, T234, 0, 0, 2),
]

# --------------------------------------------------------------------------------------------
# decompositions: well-conditioned matrices, and as well-conditioned ones for the state check


def _well(n: int, *batch: int, dtype: type = np.float64, complex_: bool = False) -> np.ndarray:
    """A well-conditioned square matrix (or stack): the identity times n plus noise."""
    m = _r(*batch, n, n) + (1j * _r(*batch, n, n) if complex_ else 0)
    return (m + n * np.eye(n)).astype(np.complex128 if complex_ else dtype)


def _spd(n: int, *batch: int) -> np.ndarray:
    """Symmetric positive definite with distinct eigenvalues."""
    q, _ = np.linalg.qr(_r(*batch, n, n))
    w = np.arange(1.0, n + 1.0) + _r(n) * 0.3
    return t.cast(np.ndarray, (q * w[..., None, :]) @ np.swapaxes(q, -1, -2))


def _hpd(n: int) -> np.ndarray:
    m = _c(n, n)
    return t.cast(np.ndarray, m @ m.conj().T + n * np.eye(n))


def _tall(m: int, n: int, *batch: int) -> np.ndarray:
    """Full column rank with distinct singular values."""
    u, _ = np.linalg.qr(_r(*batch, m, n))
    v, _ = np.linalg.qr(_r(*batch, n, n))
    s = np.arange(n, 0, -1.0) + 0.5
    return t.cast(np.ndarray, (u * s[..., None, :]) @ v)


def _decomposition(
    fn: object, *args: object, others: tuple[object, ...], kwargs: dict[str, t.Any] | None = None
) -> RuleCase:
    return case(fn, *args, kwargs=kwargs, other_args=others, other_kwargs=dict(kwargs or {}))


LA = np.linalg
CASES += [
    _decomposition(LA.inv, _well(3), others=(_well(4),)),
    _decomposition(LA.inv, _well(2, 3), others=(_well(3, 3),)),
    _decomposition(LA.inv, _well(3, complex_=True), others=(_well(4, complex_=True),)),
    _decomposition(LA.inv, _well(3, dtype=np.float32), others=(_well(4, dtype=np.float32),)),
    _decomposition(LA.solve, _well(3), V3, others=(_well(4), V4)),
    _decomposition(LA.solve, _well(3), _r(3, 2), others=(_well(4), _r(4, 3))),
    _decomposition(LA.solve, _well(3, 2), _r(2, 3, 2), others=(_well(4, 3), _r(3, 4, 3))),
    _decomposition(LA.solve, _well(3, complex_=True), Z3, others=(_well(4, complex_=True), _c(4))),
    _decomposition(LA.det, _well(3), others=(_well(4),)),
    _decomposition(LA.det, _well(3, 2), others=(_well(4, 2),)),
    _decomposition(LA.det, _well(3, complex_=True), others=(_well(4, complex_=True),)),
    _decomposition(LA.det, _well(2, dtype=np.float32), others=(_well(3, dtype=np.float32),)),
    _decomposition(LA.slogdet, _well(3), others=(_well(4),)),
    _decomposition(LA.slogdet, -_well(3, 2), others=(_well(4, 2),)),
    _decomposition(LA.slogdet, _well(3, complex_=True), others=(_well(4, complex_=True),)),
    _decomposition(LA.pinv, _tall(4, 3), others=(_tall(5, 4),)),
    _decomposition(LA.pinv, np.swapaxes(_tall(4, 3), 0, 1).copy(), others=(_tall(5, 4).T.copy(),)),
    _decomposition(LA.pinv, _well(3, complex_=True), others=(_well(4, complex_=True),)),
    _decomposition(LA.pinv, _tall(4, 2, 2), others=(_tall(5, 3, 2),)),
    _decomposition(LA.cholesky, _spd(3), others=(_spd(4),)),
    _decomposition(LA.cholesky, _spd(3, 2), others=(_spd(4, 2),)),
    _decomposition(LA.cholesky, _hpd(3), others=(_hpd(4),)),
    _decomposition(LA.svd, _tall(4, 3), kwargs={"full_matrices": False}, others=(_tall(5, 4),)),
    _decomposition(LA.svd, _tall(4, 3).T.copy(), False, others=(_tall(5, 4).T.copy(), False)),
    _decomposition(LA.svd, _tall(3, 3), others=(_tall(4, 4),)),
    _decomposition(LA.svd, _tall(4, 2, 2), kwargs={"compute_uv": False}, others=(_tall(5, 3, 2),)),
    _decomposition(LA.qr, _tall(4, 3), others=(_tall(5, 4),)),
    _decomposition(LA.qr, _tall(3, 3, 2), others=(_tall(4, 4, 2),)),
    _decomposition(LA.qr, _c(4, 3), others=(_c(5, 4),)),
    _decomposition(LA.qr, _c(2, 3, 3), kwargs={"mode": "reduced"}, others=(_c(2, 4, 4),)),
    # complex factors: only the singular values (random cotangents of U and Vh depend on the
    # phases LAPACK picks; tests/library/linalg/test_linalg.py checks losses blind to them)
    _decomposition(LA.svd, _c(4, 3), kwargs={"compute_uv": False}, others=(_c(5, 4),)),
    _decomposition(LA.svd, _c(2, 3, 4), False, False, others=(_c(2, 4, 5), False, False)),
]


def _real_spectrum(n: int, *batch: int) -> np.ndarray:
    """Not symmetric, with distinct real eigenvalues."""
    p = _r(*batch, n, n) + n * np.eye(n)
    w = np.arange(1.0, n + 1.0) + _r(n) * 0.3
    return t.cast(np.ndarray, (p * w[..., None, :]) @ np.linalg.inv(p))


# eig: complex matrices and real ones with a real spectrum, whose eigenvectors NumPy gives as
# continuous functions (the sign of a complex pair's eigenvector of a real matrix jumps, which
# no finite difference of random cotangents survives: tests/library/linalg/test_eigen.py);
# eigvals of every kind; eigh and eigvalsh reading either triangle of any matrix
CASES += [
    _decomposition(LA.eig, _real_spectrum(3), others=(_real_spectrum(4),)),
    _decomposition(LA.eig, _real_spectrum(3, 2), others=(_real_spectrum(4, 2),)),
    _decomposition(LA.eig, _c(3, 3), others=(_c(4, 4),)),
    _decomposition(LA.eig, _c(2, 3, 3), others=(_c(2, 4, 4),)),
    _decomposition(LA.eigvals, _r(3, 3), others=(_r(4, 4),)),
    _decomposition(LA.eigvals, _real_spectrum(3), others=(_real_spectrum(4),)),
    _decomposition(LA.eigvals, _c(3, 3), others=(_c(4, 4),)),
    _decomposition(LA.eigvals, _r(2, 4, 4), others=(_r(2, 5, 5),)),
    _decomposition(LA.eigh, _spd(3), others=(_spd(4),)),
    _decomposition(LA.eigh, _spd(3, 2), others=(_spd(4, 2),)),
    _decomposition(LA.eigh, _r(3, 3), "U", others=(_r(4, 4), "U")),
    _decomposition(LA.eigh, _r(2, 3, 3), kwargs={"UPLO": "U"}, others=(_r(2, 4, 4),)),
    _decomposition(LA.eigvalsh, _spd(3), others=(_spd(4),)),
    _decomposition(LA.eigvalsh, _r(3, 3), kwargs={"UPLO": "U"}, others=(_r(4, 4),)),
    _decomposition(LA.eigvalsh, _c(3, 3), "U", others=(_c(4, 4), "U")),
    _decomposition(LA.eigvalsh, _c(2, 3, 3), kwargs={"UPLO": "L"}, others=(_c(2, 4, 4),)),
]

# np.dot(A, B, out=C): the stateful rule of np.matmul(A, B, out=C)
CASES += [
    case(np.dot, A34, B45, kwargs={"out": _r(3, 5)}),
    case(np.dot, A34, B45, _r(3, 5)),
    case(np.dot, F34, F45, kwargs={"out": _r(3, 5, dtype=np.float32)}),
    case(np.dot, F34, F45, _r(3, 5, dtype=np.float32)),
]
