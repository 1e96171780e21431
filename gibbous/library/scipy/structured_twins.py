"""SciPy's solvers and eigensolvers of structured matrices (Toeplitz, tridiagonal, banded) as
twins (``gibbous.infer.implementations``) building the dense matrix and calling the functions
with rules: ``solve_toeplitz`` (Levinson's ``O(n^2)`` becomes an ``O(n^3)`` solve),
``matmul_toeplitz`` (SciPy's FFT product becomes an ``O(n^2)`` one), ``eigh_tridiagonal``,
``eigvalsh_tridiagonal``, ``eig_banded``, ``eigvals_banded``, ``cholesky_banded`` and
``cho_solve_banded`` (``O(n^2)`` memory, ``O(n^3)`` time, where SciPy's LAPACK calls are
linear in ``n`` for a fixed band): the same values, for the matrices small enough to make
dense; and ``solve_circulant``, SciPy's FFT steps without writes into arrays.
Eigenvectors take SciPy's signs (``decomp_twins.signs``).  The eigensolvers take
``select="a"`` and ``"i"`` (an index range) and, for the values alone, ``"v"``.
"""

from __future__ import annotations

import types
import typing as t

import numpy as np
import scipy.linalg as sla

from gibbous.infer.implementations import register_twin, twin_helper
from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.library.scipy.decomp_twins import signs
from gibbous.library.scipy.linalg_twins import finite, toeplitz
from gibbous.rules.registry import zero_derivative
from gibbous.infer.typerules.table import register_type_rule
from gibbous.ir import types as T


@twin_helper
def _toeplitz_of(c_or_cr: t.Any) -> t.Any:
    if isinstance(c_or_cr, tuple):
        c, r = c_or_cr
        return toeplitz(np.asarray(c), np.asarray(r))
    return toeplitz(np.asarray(c_or_cr))


def solve_toeplitz(c_or_cr: t.Any, b: t.Any, check_finite: bool = True) -> t.Any:
    """``scipy.linalg.solve_toeplitz``."""
    if check_finite:
        finite(*(c_or_cr if isinstance(c_or_cr, tuple) else (c_or_cr,)), b)
    m = _toeplitz_of(c_or_cr)
    b = np.asarray(b)
    if m.shape[0] != m.shape[1] or b.shape[0] != m.shape[0]:
        raise ValueError("Incompatible dimensions.")
    return np.linalg.solve(m, b[:, None])[:, 0] if b.ndim == 1 else np.linalg.solve(m, b)


def matmul_toeplitz(
    c_or_cr: t.Any, x: t.Any, check_finite: bool = False, workers: t.Any = None
) -> t.Any:
    """``scipy.linalg.matmul_toeplitz``."""
    if check_finite:
        finite(*(c_or_cr if isinstance(c_or_cr, tuple) else (c_or_cr,)), x)
    m = _toeplitz_of(c_or_cr)
    x = np.asarray(x)
    if x.shape[0] != m.shape[1]:
        raise ValueError("Incompatible dimensions.")
    return m @ x


@twin_helper
def _selected(what: str, select: t.Any, select_range: t.Any, vectors: bool) -> t.Any:
    """The slice of the ascending eigenvalues ``select`` keeps (``"v"``: None, by value)."""
    if select in ("a", "all", 0):
        return slice(None)
    if select in ("i", "index", 2):
        lo, hi = select_range
        return slice(int(lo), int(hi) + 1)
    if select in ("v", "value", 1) and not vectors:
        return None
    _refuse(what, f"with select={select!r}")
    return None


@twin_helper
def _refuse(what: str, why: str) -> None:
    raise UnsupportedArgumentError(f"scipy.linalg.{what} {why}: no rule")


@twin_helper
def _eigh_of(
    what: str, m: t.Any, vectors: bool, select: t.Any, select_range: t.Any, theirs: t.Any,
    *given: t.Any,
) -> t.Any:
    """The eigenvalues (and eigenvectors, with SciPy's signs, ``theirs(v, *given)``: a
    module-level function, not a closure, which a Hessian-vector product would have to
    follow over its cells) of the Hermitian ``m``."""
    kept = _selected(what, select, select_range, vectors)
    if not vectors:
        w = np.linalg.eigvalsh(m)
        if kept is None:
            lo, hi = select_range
            return w[int(np.sum(w <= lo)) : int(np.sum(w <= hi))]
        return w[kept]
    w, v = np.linalg.eigh(m)
    w, v = w[kept], v[:, kept]
    return w, v * theirs(v, *given)


@twin_helper
def _tridiagonal(d: t.Any, e: t.Any) -> t.Any:
    d, e = np.asarray(d), np.asarray(e)
    return np.diag(d) + np.diag(e, 1) + np.diag(np.conj(e), -1)


def vector_signs(v: t.Any, fn: t.Any, *args: t.Any, **kwargs: t.Any) -> t.Any:
    """``signs`` of ``v`` against the eigenvectors SciPy's ``fn`` gives (no derivative)."""
    return signs(v, fn(*args, **kwargs)[1])


zero_derivative(vector_signs, ...)


def eigh_tridiagonal(
    d: t.Any,
    e: t.Any,
    eigvals_only: bool = False,
    select: t.Any = "a",
    select_range: t.Any = None,
    check_finite: bool = True,
    tol: float = 0.0,
    lapack_driver: str = "auto",
) -> t.Any:
    """``scipy.linalg.eigh_tridiagonal``: of the real symmetric tridiagonal matrix."""
    if check_finite:
        finite(d, e)
    m = _tridiagonal(d, e)

    return _eigh_of(
        "eigh_tridiagonal", m, not eigvals_only, select, select_range, _tridiagonal_signs,
        d, e, select, select_range, tol, lapack_driver,
    )  # fmt: skip


@twin_helper
def _tridiagonal_signs(
    v: t.Any, d: t.Any, e: t.Any, select: t.Any, select_range: t.Any, tol: t.Any, driver: t.Any
) -> t.Any:
    return vector_signs(
        v, sla.eigh_tridiagonal, d, e, select=select, select_range=select_range,
        check_finite=False, tol=tol, lapack_driver=driver,
    )  # fmt: skip


def eigvalsh_tridiagonal(
    d: t.Any,
    e: t.Any,
    select: t.Any = "a",
    select_range: t.Any = None,
    check_finite: bool = True,
    tol: float = 0.0,
    lapack_driver: str = "auto",
) -> t.Any:
    """``scipy.linalg.eigvalsh_tridiagonal``."""
    return eigh_tridiagonal(d, e, True, select, select_range, check_finite, tol, lapack_driver)


def band_index(shape: tuple[int, int], lower: bool) -> tuple[t.Any, t.Any, t.Any]:
    """Where band storage of ``shape`` holds each entry of the ``n`` by ``n`` matrix (row and
    column into the storage) and which entries it holds: indices, no derivative."""
    k, n = shape[0] - 1, shape[1]
    offset = np.subtract.outer(np.arange(n), np.arange(n)) + (0 if lower else k)
    cols = np.broadcast_to(np.arange(n), (n, n))
    return np.clip(offset, 0, k), cols, (offset >= 0) & (offset <= k)


def matrix_index(shape: tuple[int, int], lower: bool) -> tuple[t.Any, t.Any, t.Any]:
    """Where each entry of band storage of ``shape`` is in the matrix (row, column) and which
    entries stand for one: indices, no derivative."""
    k, n = shape[0] - 1, shape[1]
    cols = np.broadcast_to(np.arange(n), (k + 1, n))
    d = np.arange(k + 1)[:, None]
    rows = cols + d if lower else cols - (k - d)
    return np.clip(rows, 0, n - 1), cols, (rows >= 0) & (rows < n)


def _index_type(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    index = T.Array(np.dtype(np.intp).name, 2)
    return T.Tuple((index, index, T.Array("bool", 2)))


for _index in (band_index, matrix_index):
    zero_derivative(_index, ...)
    register_type_rule(_index)(_index_type)


@twin_helper
def dense_of_band(a_band: t.Any, lower: bool) -> t.Any:
    """The triangle that band storage holds as a matrix (``lower``: ``a_band[i - j, j] =
    a[i, j]``; upper: ``a_band[k + i - j, j] = a[i, j]``), zero elsewhere."""
    a_band = np.asarray(a_band)
    rows, cols, inside = band_index(np.shape(a_band), lower)
    return np.where(inside, a_band[rows, cols], 0)


@twin_helper
def hermitian_of_band(a_band: t.Any, lower: bool) -> t.Any:
    """The Hermitian matrix that one triangle in band storage stands for (the diagonal read
    as real)."""
    part = dense_of_band(a_band, lower)
    strict = part - np.diag(np.diagonal(part))
    diagonal = np.real(np.diagonal(part)) if np.iscomplexobj(part) else np.diagonal(part)
    return strict + np.conj(strict.T) + np.diag(diagonal)


def eig_banded(
    a_band: t.Any,
    lower: bool = False,
    eigvals_only: bool = False,
    overwrite_a_band: bool = False,
    select: t.Any = "a",
    select_range: t.Any = None,
    max_ev: int = 0,
    check_finite: bool = True,
) -> t.Any:
    """``scipy.linalg.eig_banded``."""
    if check_finite:
        finite(a_band)
    m = hermitian_of_band(a_band, lower)

    return _eigh_of(
        "eig_banded", m, not eigvals_only, select, select_range, _banded_signs,
        a_band, lower, select, select_range, max_ev,
    )  # fmt: skip


@twin_helper
def _banded_signs(
    v: t.Any, a_band: t.Any, lower: t.Any, select: t.Any, select_range: t.Any, max_ev: t.Any
) -> t.Any:
    return vector_signs(
        v, sla.eig_banded, a_band, lower=lower, select=select, select_range=select_range,
        max_ev=max_ev, check_finite=False,
    )  # fmt: skip


def eigvals_banded(
    a_band: t.Any,
    lower: bool = False,
    overwrite_a_band: bool = False,
    select: t.Any = "a",
    select_range: t.Any = None,
    check_finite: bool = True,
) -> t.Any:
    """``scipy.linalg.eigvals_banded``."""
    if check_finite:
        finite(a_band)
    m = hermitian_of_band(a_band, lower)
    return _eigh_of("eigvals_banded", m, False, select, select_range, None)


@twin_helper
def band_of(m: t.Any, ab: t.Any, lower: bool) -> t.Any:
    """The band storage of a triangular ``m``'s triangle, shaped like ``ab``, whose entries
    that stand for no entry of ``m`` (the corners) it keeps, as LAPACK does."""
    rows, cols, inside = matrix_index(np.shape(ab), lower)
    return np.where(inside, m[rows, cols], ab)


def cholesky_banded(
    ab: t.Any, overwrite_ab: bool = False, lower: bool = False, check_finite: bool = True
) -> t.Any:
    """``scipy.linalg.cholesky_banded``: the factor in the same band storage."""
    ab = np.asarray(ab)
    if check_finite:
        finite(ab)
    if ab.ndim != 2:
        _refuse("cholesky_banded", "of a band storage of other than 2 axes")
    low = np.linalg.cholesky(hermitian_of_band(ab, lower))
    factor = low if lower else np.conj(low.T)
    return band_of(factor, ab, lower)


def cho_solve_banded(
    cb_and_lower: t.Any, b: t.Any, overwrite_b: bool = False, check_finite: bool = True
) -> t.Any:
    """``scipy.linalg.cho_solve_banded``: ``A x = b`` for ``A = U^H U`` (``L L^H``)."""
    cb, lower = cb_and_lower
    cb, b = np.asarray(cb), np.asarray(b)
    if check_finite:
        finite(cb, b)
    factor = dense_of_band(cb, lower)
    rhs = b[:, None] if b.ndim == 1 else b
    if lower:
        y = sla.solve_triangular(factor, rhs, lower=True)
        x = sla.solve_triangular(factor, y, lower=True, trans=2)
    else:
        y = sla.solve_triangular(factor, rhs, lower=False, trans=2)
        x = sla.solve_triangular(factor, y, lower=False)
    return x[:, 0] if b.ndim == 1 else x


def circulant_near_zeros(fc: t.Any, n: int, tol: t.Any) -> t.Any:
    """Where ``|fft(c)|`` is below SciPy's cutoff (``solve_circulant``'s test, on values: no
    derivative)."""
    size = np.abs(fc)
    if tol is None:
        tol = size.max(axis=-1) * n * np.finfo(np.float64).eps
        tol = tol.reshape(tol.shape + (1,)) if tol.shape != () else np.atleast_1d(tol)
    return size <= tol


zero_derivative(circulant_near_zeros, ...)
register_type_rule(circulant_near_zeros)(
    lambda args, kwargs: T.Array("bool", args[0].ndim) if isinstance(args[0], T.Array) else T.ANY
)


def solve_circulant(
    c: t.Any,
    b: t.Any,
    singular: str = "raise",
    tol: t.Any = None,
    caxis: int = -1,
    baxis: int = 0,
    outaxis: int = 0,
) -> t.Any:
    """``scipy.linalg.solve_circulant``: SciPy's steps, by the FFT, without writing into
    arrays (the near-zero coefficients masked by ``np.where``)."""
    c, b = np.atleast_1d(np.asarray(c)), np.atleast_1d(np.asarray(b))
    nc, nb = c.shape[caxis], b.shape[baxis]
    if nc != nb:
        raise ValueError(f"Shapes of c {c.shape} and b {b.shape} are incompatible")
    if b.size == 0:
        _refuse("solve_circulant", "of an empty b")
    fc = np.fft.fft(np.moveaxis(c, caxis, -1), axis=-1)
    near = circulant_near_zeros(fc, nc, tol)
    if np.any(near):
        if singular == "raise":
            raise np.linalg.LinAlgError("near singular circulant matrix.")
        fc = np.where(near, 1, fc)
    fb = np.fft.fft(np.moveaxis(b, baxis, -1), axis=-1)
    q = np.where(near, 0, fb / fc)
    x = np.fft.ifft(q, axis=-1)
    if not (np.iscomplexobj(c) or np.iscomplexobj(b)):
        x = np.real(x)
    return x if outaxis == -1 else np.moveaxis(x, -1, outaxis)


for _fn, _twin in [
    (sla.solve_toeplitz, solve_toeplitz),
    (sla.matmul_toeplitz, matmul_toeplitz),
    (sla.eigh_tridiagonal, eigh_tridiagonal),
    (sla.eigvalsh_tridiagonal, eigvalsh_tridiagonal),
    (sla.eig_banded, eig_banded),
    (sla.eigvals_banded, eigvals_banded),
    (sla.cholesky_banded, cholesky_banded),
    (sla.cho_solve_banded, cho_solve_banded),
    (sla.solve_circulant, solve_circulant),
]:
    register_twin(_fn, t.cast(types.FunctionType, _twin))
